//! The page's two languages, chosen by the browser's `Accept-Language` (its first tag).

use fleetwatch_protocol::passkey::Fingerprint;

/// English or Spanish.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    /// English.
    En,
    /// Spanish.
    Es,
}

impl Lang {
    /// Spanish when the browser's first language is Spanish, English otherwise.
    pub fn from_accept_language(header: Option<&str>) -> Lang {
        let first = header
            .and_then(|h| h.split(',').next())
            .and_then(|tag| tag.split(';').next())
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase();
        if first == "es" || first.starts_with("es-") {
            Lang::Es
        } else {
            Lang::En
        }
    }

    /// The `lang` attribute.
    pub fn code(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Es => "es",
        }
    }

    /// A text of the enrolment or the confirm page by key (every key has both languages; a test holds it).
    pub fn t(self, key: &str) -> &'static str {
        let (en, es) = match key {
            "title" => (
                "Enrol a passkey for Fleetwatch",
                "Inscribir una passkey para Fleetwatch",
            ),
            "intro" => (
                "An administrator started this enrolment in a terminal. The passkey you make here approves changes to the recorders as this person.",
                "Un administrador inició esta inscripción en un terminal. La passkey que crees aquí aprueba cambios en los grabadores en nombre de esta persona.",
            ),
            "name" => ("Name", "Nombre"),
            "person" => ("Person ID", "ID de persona"),
            "steps" => (
                "Your browser will ask twice: once to make the passkey, once to prove it works. The line to install appears only in the administrator's terminal.",
                "El navegador te preguntará dos veces: una para crear la passkey y otra para probar que funciona. La línea que se instala aparece solo en el terminal del administrador.",
            ),
            "button" => ("Make the passkey", "Crear la passkey"),
            "working" => (
                "Follow your browser's passkey prompts…",
                "Sigue las indicaciones de passkey del navegador…",
            ),
            "cancelled" => (
                "The passkey was not made (cancelled, refused by the browser, or the authenticator cannot keep a passkey on itself, which Fleetwatch needs). You can try again.",
                "No se creó la passkey (cancelada, rechazada por el navegador, o el autenticador no puede guardar una passkey en sí mismo, lo que Fleetwatch necesita). Puedes intentarlo de nuevo.",
            ),
            "unsupported" => (
                "This browser cannot make passkeys here. Open the address in a current browser on this machine.",
                "Este navegador no puede crear passkeys aquí. Abre la dirección en un navegador actual en esta máquina.",
            ),
            "not_discoverable" => (
                "This authenticator made a passkey it does not keep on itself, and the confirm page asks without naming a passkey, so it could never approve. Nothing was enrolled. Use a security key or device that keeps passkeys (a discoverable credential).",
                "Este autenticador creó una passkey que no guarda en sí mismo, y la página de confirmación pregunta sin nombrar ninguna passkey, así que nunca podría aprobar. No se inscribió nada. Usa una llave de seguridad o un dispositivo que guarde las passkeys (una credencial detectable).",
            ),
            "used" => (
                "This enrolment page was already used. Ask the administrator to run the command again.",
                "Esta página de inscripción ya se usó. Pide al administrador que ejecute el comando de nuevo.",
            ),
            "confirm.title" => (
                "Confirm a change — Fleetwatch",
                "Confirmar un cambio — Fleetwatch",
            ),
            "confirm.explain" => (
                "This page is not the assistant's: it shows the change exactly as your passkey will sign it. Read it; if it is not what you meant to approve, close this tab.",
                "Esta página no es del asistente: muestra el cambio exactamente como lo firmará tu passkey. Léelo; si no es lo que querías aprobar, cierra esta pestaña.",
            ),
            "confirm.idle" => (
                "Nothing to confirm: the approval page sends a change here when you approve it.",
                "Nada que confirmar: la página de aprobación envía aquí un cambio cuando lo apruebas.",
            ),
            "confirm.undecodable" => (
                "The change sent here cannot be read, so it cannot be confirmed. Nothing was approved; go back to the approval page and deny it.",
                "El cambio enviado aquí no se puede leer, así que no se puede confirmar. No se aprobó nada; vuelve a la página de aprobación y deniégalo.",
            ),
            "confirm.effects" => ("What changes", "Qué cambia"),
            "confirm.targets" => (
                "Rooms, as this change signs them",
                "Salas, tal como las firma este cambio",
            ),
            "confirm.arguments" => ("Arguments, in full", "Argumentos completos"),
            "confirm.expires" => ("This approval expires at", "Esta aprobación caduca a las"),
            "confirm.expired" => (
                "This approval has expired, so it can no longer be confirmed. Nothing was approved; go back to the approval page.",
                "Esta aprobación ha caducado, así que ya no se puede confirmar. No se aprobó nada; vuelve a la página de aprobación.",
            ),
            "confirm.expired_at" => ("This approval expired at", "Esta aprobación caducó a las"),
            "confirm.wait" => (
                "The button works a moment after this page is shown and you move the pointer or press a key, so a click meant for the previous page cannot confirm.",
                "El botón funciona un momento después de mostrarse esta página y de que muevas el puntero o pulses una tecla, para que un clic pensado para la página anterior no pueda confirmar.",
            ),
            "confirm.cancelled" => (
                "Your passkey did not answer (cancelled, timed out, or not enrolled here). Nothing was approved; you can try again.",
                "Tu passkey no respondió (cancelada, agotó el tiempo o no está inscrita aquí). No se aprobó nada; puedes intentarlo de nuevo.",
            ),
            _ => ("", ""),
        };
        match self {
            Lang::En => en,
            Lang::Es => es,
        }
    }

    /// The success message, naming the fingerprint the terminal shows.
    pub fn enrolled(self, fingerprint: Fingerprint) -> String {
        match self {
            Lang::En => format!(
                "Enrolled. The administrator's terminal shows the line to install and its fingerprint, {fingerprint}. This page is closed."
            ),
            Lang::Es => format!(
                "Inscrita. El terminal del administrador muestra la línea que se instala y su huella, {fingerprint}. Esta página está cerrada."
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_has_both_languages() {
        for key in [
            "title",
            "intro",
            "name",
            "person",
            "steps",
            "button",
            "working",
            "cancelled",
            "unsupported",
            "not_discoverable",
            "used",
        ] {
            assert!(!Lang::En.t(key).is_empty(), "{key}");
            assert!(!Lang::Es.t(key).is_empty(), "{key}");
            assert_ne!(Lang::En.t(key), Lang::Es.t(key), "{key}");
        }
    }

    #[test]
    fn the_first_language_decides() {
        assert_eq!(Lang::from_accept_language(Some("es-MX,en;q=0.8")), Lang::Es);
        assert_eq!(Lang::from_accept_language(Some("en-GB,es;q=0.9")), Lang::En);
        assert_eq!(Lang::from_accept_language(None), Lang::En);
    }
}
