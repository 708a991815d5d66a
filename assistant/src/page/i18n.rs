//! The page's words in English and Spanish. Every text is fixed here; nothing the model or a
//! device supplies becomes a label. Both catalogues must hold the same keys (a test checks),
//! and placeholders are `{name}` filled by [`fill`] with already-escaped-by-template values.

/// The page's language.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    /// English (the default).
    En,
    /// Spanish.
    Es,
}

impl Lang {
    /// Spanish when the first `Accept-Language` tag is `es` or `es-…`, else English.
    pub fn from_accept_language(header: Option<&str>) -> Lang {
        let first = header
            .and_then(|h| h.split(',').next())
            .map(|tag| {
                tag.split(';')
                    .next()
                    .unwrap_or_default()
                    .trim()
                    .to_ascii_lowercase()
            })
            .unwrap_or_default();
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

    /// A text by key; a missing key shows the key itself (the catalogue test keeps that from
    /// happening).
    pub fn t(self, key: &str) -> &'static str {
        let table = match self {
            Lang::En => EN,
            Lang::Es => ES,
        };
        table
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| *v)
            .unwrap_or("?")
    }

    /// A text with its placeholders filled.
    pub fn f(self, key: &str, values: &[(&str, &str)]) -> String {
        fill(self.t(key), values)
    }
}

/// Replaces `{name}` placeholders in one pass over the template, so a value that itself
/// contains `{…}` (a device can be named anything) is never expanded again.
pub fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find('}') {
            Some(close) => {
                let name = &after[..close];
                match values.iter().find(|(n, _)| *n == name) {
                    Some((_, value)) => out.push_str(value),
                    None => {
                        out.push('{');
                        out.push_str(name);
                        out.push('}');
                    }
                }
                rest = &after[close + 1..];
            }
            None => {
                out.push_str(&rest[open..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// Plain words for a proposable tool, or `None` when the catalogue has none (Deny only).
pub struct ToolText {
    /// What the tool is.
    pub what: &'static str,
    /// What happens when it runs.
    pub happens: &'static str,
    /// How to undo it.
    pub undo: &'static str,
}

/// The plain-words text of a tool in a language.
pub fn tool_text(lang: Lang, tool: &str) -> Option<ToolText> {
    let table = match lang {
        Lang::En => EN,
        Lang::Es => ES,
    };
    let get = |part: &str| {
        let key = format!("tool.{tool}.{part}");
        table.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
    };
    Some(ToolText {
        what: get("what")?,
        happens: get("happens")?,
        undo: get("undo")?,
    })
}

/// English.
pub const EN: &[(&str, &str)] = &[
    ("title", "Fleetwatch — approve one change"),
    ("login.heading", "Sign in to the approval page"),
    (
        "login.explain",
        "Enter the page secret. It was printed when the assistant started, or written to the file whose path it printed.",
    ),
    ("login.label", "Page secret"),
    ("login.submit", "Sign in"),
    ("login.wrong", "That is not the page secret."),
    (
        "login.other_tab",
        "Nothing was done: this tab is not the one that signed in. Sign in here to use this tab (the other tab will then ask again).",
    ),
    (
        "login.no_tab",
        "This page needs JavaScript and session storage to tie your sign-in to this tab. Turn them on for this page and sign in again.",
    ),
    (
        "login.wait",
        "Too many wrong entries. Wait {secs} seconds, then try again.",
    ),
    ("shell.text", "Loading the approval page for this tab…"),
    ("shell.button", "Show the approval page"),
    ("handoff.heading", "Confirm on the confirm page"),
    (
        "handoff.text",
        "Your passkey is asked on the confirm page, which the assistant does not serve: it shows the change exactly as the passkey will sign it. Continue there.",
    ),
    ("handoff.button", "Continue to the confirm page"),
    (
        "why.return",
        "This answer from the confirm page does not belong to an approval waiting on this page. Nothing was approved.",
    ),
    (
        "why.claims_differ",
        "The confirm page returned a passkey answer for another change than the one waiting here. Nothing was approved.",
    ),
    ("nav.passkeys", "Passkeys: who approves"),
    ("passkeys.heading", "Who approves"),
    (
        "passkeys.explain",
        "A change runs only when the people the executor asks for confirm it with their own passkey, which the executor checks itself. This page cannot enrol anyone: an administrator enrols a person in a terminal on this machine with fleetwatch-confirm enrol, and installs the line it prints on the executor.",
    ),
    ("passkeys.enrolled", "Enrolled on the executor"),
    ("passkeys.person", "Person"),
    ("passkeys.id", "ID"),
    ("passkeys.fingerprint", "Fingerprint"),
    ("passkeys.kind", "Kind"),
    (
        "passkeys.synced",
        "synced (may be copied to the person's other devices)",
    ),
    (
        "passkeys.device_bound",
        "device-bound (never leaves its authenticator)",
    ),
    (
        "passkeys.nobody",
        "Nobody is enrolled on the executor: it refuses every change until an administrator enrols a person with fleetwatch-confirm enrol.",
    ),
    (
        "passkeys.trial",
        "The executor runs in trial mode: a change is accepted on the assistant's signature alone, not bound to a person.",
    ),
    (
        "passkeys.unreachable",
        "The executor did not answer, so who is enrolled cannot be shown.",
    ),
    (
        "notice.unbound",
        "Nobody is enrolled on the executor: it refuses every change until an administrator enrols a person (see Passkeys).",
    ),
    (
        "notice.origin_not_held",
        "The confirm page's address is not held by its own service now, so the executor will refuse every passkey until an administrator starts fleetwatch-confirm.socket again (fleetwatch-executor doctor says why).",
    ),
    (
        "notice.trial",
        "The executor runs in trial mode: approvals here are not bound to a person.",
    ),
    (
        "passkey.hint",
        "This executor requires your passkey: approving takes you to the confirm page, which shows this exact change and asks your security key or device to confirm it.",
    ),
    (
        "why.passkey_missing",
        "The executor requires your passkey to approve, and this approval came without one. Nothing was approved or used up; go back and approve again with your passkey.",
    ),
    ("empty.heading", "Nothing is waiting for approval."),
    ("card.heading", "Proposal #{id}"),
    (
        "card.asked",
        "Asked by {who} · expires at {at} ({in}) if nobody decides",
    ),
    ("title.waiting", "({n}) Fleetwatch — approve one change"),
    ("card.more", "{n} more waiting after this one."),
    ("card.tool", "Tool"),
    ("card.what", "What it is"),
    ("card.happens", "What happens"),
    ("card.undo", "How to undo it"),
    ("card.targets", "Targets"),
    ("col.id", "ID"),
    ("col.name", "Current name"),
    ("col.model", "Model"),
    ("col.online", "Online"),
    ("col.recording", "Recording"),
    ("yes", "yes"),
    ("no", "no"),
    ("unknown", "unknown"),
    ("card.arguments", "Arguments, in full"),
    ("card.names", "What the IDs name"),
    ("card.effect", "What changes (from the state read just now)"),
    (
        "card.window",
        "Disruptive-window check (information; the executor checks again)",
    ),
    (
        "card.disruptive",
        "This change is disruptive: you will be asked to confirm it.",
    ),
    (
        "card.reason",
        "Reason written by the assistant — not checked by anyone",
    ),
    ("card.no_reason", "The assistant gave no reason."),
    ("card.deny_only", "Only Deny is offered, because:"),
    ("card.warnings", "Warnings on the targets now"),
    (
        "card.expires",
        "This approval expires in {minutes} minutes, at {time} UTC.",
    ),
    ("card.expires_label", "Approval expires in"),
    ("btn.deny", "Deny"),
    ("btn.approve", "Approve this change"),
    ("btn.deny_all", "Deny all pending"),
    ("btn.confirm", "Yes, change {rooms}"),
    ("notice.queue_full", "Proposal queue full ({n} waiting)."),
    (
        "notice.hourly",
        "Hourly cap reached: {n} proposals in the last hour. The assistant cannot propose more until the hour has passed.",
    ),
    (
        "notice.fatigue",
        "You have approved {n} changes in this browser session. Read each card in full before approving another.",
    ),
    (
        "device_error.offline",
        "the device is offline or could not be reached",
    ),
    (
        "device_error.busy",
        "the device is busy, or already in that state",
    ),
    (
        "device_error.not_found",
        "the device, channel or destination was not found",
    ),
    (
        "device_error.not_permitted",
        "the sign-in may not do this on the device",
    ),
    (
        "device_error.timed_out",
        "the device did not answer in time",
    ),
    (
        "device_error.rejected",
        "Epiphan refused the request as invalid",
    ),
    (
        "device_error.other",
        "Epiphan reported an error (its text is not kept)",
    ),
    ("pace.none", "Your last hour: no decisions yet."),
    (
        "pace.counts",
        "Your last hour: {approved} approved, {denied} denied.",
    ),
    (
        "pace.line",
        "Your last hour: {approved} approved, {denied} denied; a median of {median} s from seeing a card to deciding.",
    ),
    (
        "pace.slow",
        "You are deciding in a median of {median} s per card. Slow down: read what each change does, and to which rooms, before you approve.",
    ),
    ("confirm.heading", "Confirm a disruptive change"),
    (
        "confirm.text",
        "This change interrupts what is happening in {rooms}. Confirm only if nobody relies on it right now.",
    ),
    ("btn.receipt", "Download the receipt"),
    (
        "deny.reason",
        "Why not? (optional; the assistant is told, so it does not ask again for the same)",
    ),
    (
        "receipt.hint",
        "The receipt proves who approved this change and what the executor says came of it; anyone can check it with `fleetwatch-confirm verify`. Its administrator can write it again on the executor's machine with `fleetwatch-executor receipt {n}`.",
    ),
    (
        "receipt.none",
        "The executor holds no receipt for this change; `{command}` says why.",
    ),
    ("outcome.done.heading", "Done"),
    (
        "outcome.done.text",
        "The change ran once and Epiphan reported that every device accepted it.",
    ),
    ("outcome.error.heading", "Epiphan reported a problem"),
    (
        "outcome.error.text",
        "The change was sent once. Epiphan reported these errors:",
    ),
    ("outcome.refused.heading", "Nothing ran"),
    (
        "outcome.refused.text",
        "The executor refused the change, so nothing ran:",
    ),
    ("outcome.unknown.heading", "Outcome unknown"),
    (
        "outcome.unknown.text",
        "This may or may not have run — check the unit before trying again.",
    ),
    ("conflict.heading", "This can no longer be approved"),
    (
        "why.decided",
        "Proposal #{id} is no longer waiting: it was already approved, denied or has expired. Nothing ran.",
    ),
    (
        "why.approval_used",
        "This approval was already used or has expired. Nothing ran.",
    ),
    (
        "why.changed",
        "The card changed since it was shown. Nothing ran; review the new card.",
    ),
    (
        "why.deny_only",
        "The card, read again just now, no longer allows approval. Nothing ran.",
    ),
    (
        "why.store",
        "The approval store could not be used. Nothing ran.",
    ),
    (
        "card.waiting",
        "Approved by {names}, waiting for a second person. Another operator approves with their own passkey, or anyone may deny.",
    ),
    (
        "card.waiting_more",
        "Approved by {names}, waiting for {n} more people. Each approves with their own passkey, or anyone may deny.",
    ),
    ("waiting.heading", "Your approval is kept"),
    (
        "waiting.text",
        "Nothing has been sent to the executor yet: this change needs another operator's passkey. It runs when they approve it on their own page session; a denial by anyone ends it, and it expires five minutes after the first approval.",
    ),
    (
        "why.passkey_again",
        "That passkey has already approved this change, and a passkey counts once. Nothing else was used up; another operator must approve with their own passkey.",
    ),
    (
        "why.passkey_unknown",
        "This passkey was not enrolled on this page, so the page cannot tell who approved. Nothing was approved or used up; enrol it under Passkeys first.",
    ),
    (
        "why.passkey_other",
        "Your passkey confirmed something other than what this change now waits for: someone approved it first, or the card changed. Nothing was approved or used up; open the approval page again.",
    ),
    (
        "why.passkey_bad",
        "Your passkey's answer does not check out ({why}). Nothing was approved or used up.",
    ),
    (
        "why.quorum_expired",
        "The other passkeys did not approve within five minutes of the first approval, so this change expired. Nothing ran.",
    ),
    ("back", "Back to the approval page"),
    (
        "deny.arg_long",
        "Argument {key} holds text longer than 256 characters.",
    ),
    (
        "deny.arg_space",
        "Argument {key} starts or ends with white space.",
    ),
    (
        "deny.arg_hidden",
        "Argument {key} holds control, format, private-use or unassigned characters.",
    ),
    (
        "deny.arg_deep",
        "Argument {key} is nested deeper than 2 levels.",
    ),
    ("deny.arg_many", "Argument {key} holds more than 20 items."),
    (
        "deny.args_big",
        "The arguments are longer than 4,000 bytes.",
    ),
    ("deny.args_bad", "The stored arguments are not valid JSON."),
    ("deny.no_text", "This tool has no plain-words description."),
    (
        "deny.policy",
        "The arguments no longer pass the tool policy.",
    ),
    (
        "deny.device_missing",
        "Device {id} is not on the sandbox team's device list.",
    ),
    (
        "deny.cooling",
        "{device} had a disruptive change (a restart, a firmware update or a stopped recording) {ago}; the executor will refuse another until {time}.",
    ),
    (
        "deny.hourly",
        "The executor has made {n} changes in the last hour, its limit of {limit}, so it would refuse this; try again later.",
    ),
    ("follow.new", "{n} new change(s) waiting."),
    (
        "follow.gone",
        "This change was decided elsewhere, or it expired: nothing here will run it.",
    ),
    (
        "follow.second",
        "Someone approved this change; it waits for a second person.",
    ),
    ("follow.show", "Show"),
    (
        "deny.frozen",
        "Frozen until {until}: {reason} (the executor holds {holds} until then, so it would refuse this).",
    ),
    (
        "card.may_approve",
        "May approve this change (their approver lines' scope covers it): {names}.",
    ),
    (
        "deny.scope_nobody",
        "No enrolled person may approve this change: no approver line's scope covers its tool and every one of its rooms, so the executor would refuse it.",
    ),
    (
        "deny.scope_few",
        "Only {have} enrolled person(s) may approve this change and it needs {need}, so the executor would refuse it.",
    ),
    (
        "deny.not_allowlisted",
        "Device {id} is not on the write allowlist.",
    ),
    (
        "deny.channel_missing",
        "Channel {id} was not found on its device.",
    ),
    (
        "deny.stream_missing",
        "Stream destination {id} was not found.",
    ),
    (
        "deny.event_missing",
        "Event {id} is not the device's current or next event.",
    ),
    ("deny.targets", "The executor resolved different targets."),
    (
        "deny.grant_closed",
        "The {category} category was closed (fleetwatch grants close) after this was proposed, so it can no longer be approved.",
    ),
    (
        "deny.grants_unreadable",
        "The open categories cannot be read ({why}), so nothing can be approved.",
    ),
    (
        "deny.fingerprint",
        "The devices' state changed since the change was proposed.",
    ),
    (
        "deny.read_failed",
        "The current state could not be read: {why}",
    ),
    ("state.stopped", "stopped"),
    ("state.recording", "recording"),
    (
        "effect.recording",
        "Recording on {device} · {channel}: {from} → {to}",
    ),
    (
        "effect.stream_start",
        "Stream {dest} ({host}) from {device} · {channel}: {from} → sending",
    ),
    (
        "effect.stream_stop",
        "Stream {dest} ({host}) from {device} · {channel}: {from} → stopped",
    ),
    (
        "effect.confirm",
        "Event {title} ({start} – {end}) on {device}: {from} → confirmed",
    ),
    (
        "effect.reboot",
        "{device}: {from} → restarting (offline for a few minutes); recording it interrupts: {channels}",
    ),
    (
        "effect.firmware",
        "{device} ({model}): firmware {current} → Epiphan's newest for this model (the newest in this team is {newest}); {from} → restarting (unavailable for several minutes); recording it interrupts: {channels}",
    ),
    ("state.online", "online"),
    ("state.offline", "offline"),
    ("state.sending", "sending"),
    ("state.not_sending", "not sending"),
    ("state.no_publisher", "not set up on this channel"),
    ("state.not_reported", "state not reported"),
    ("state.unconfirmed", "not confirmed"),
    ("state.confirmed", "confirmed"),
    ("state.none", "none"),
    (
        "deny.offline",
        "{device} is offline, so this change cannot reach it.",
    ),
    (
        "deny.already_recording",
        "{device} · {channel} is already recording; starting it changes nothing.",
    ),
    (
        "deny.not_recording",
        "{device} · {channel} is not recording; there is nothing to stop.",
    ),
    (
        "deny.already_sending",
        "Stream {dest} from {device} · {channel} is already sending; starting it changes nothing.",
    ),
    (
        "deny.not_sending",
        "Stream {dest} from {device} · {channel} is not sending; there is nothing to stop.",
    ),
    (
        "deny.already_confirmed",
        "Event {title} on {device} is already confirmed; confirming it again changes nothing.",
    ),
    (
        "window.none",
        "{device}: nothing recording and no event in the window.",
    ),
    (
        "window.none_stop",
        "{device}: no event on now or starting soon; stopping its recording is what this change does.",
    ),
    (
        "window.recording",
        "{device} is recording, or its recorder state is not clearly stopped, so the executor would refuse this.",
    ),
    (
        "window.live",
        "{device} has {title} on now, so the executor would refuse this.",
    ),
    (
        "window.soon",
        "{device} has {title} starting in {minutes} minutes, so the executor would refuse this.",
    ),
    ("name.channel", "Channel {id}: {name}"),
    (
        "name.stream",
        "Stream destination {id}: {name} (host {host})",
    ),
    ("name.event", "Event {id}: {title}, {start} – {end}"),
    ("name.device", "Device {id}: {name}"),
    ("an_event", "an event"),
    (
        "tool.batch_recording.what",
        "Start or stop recording on one channel of a recorder.",
    ),
    (
        "tool.batch_recording.happens",
        "The channel starts a new recording file, or closes the file it is recording.",
    ),
    (
        "tool.batch_recording.undo",
        "Propose the opposite action. A stopped recording keeps its file; a started one can be stopped, but the gap before it cannot be recorded afterwards.",
    ),
    (
        "tool.start_stream_endpoint.what",
        "Start streaming one channel to a stream destination.",
    ),
    (
        "tool.start_stream_endpoint.happens",
        "The channel begins sending live video to the destination named below; viewers there can see it.",
    ),
    (
        "tool.start_stream_endpoint.undo",
        "Propose stopping the same stream.",
    ),
    (
        "tool.stop_stream_endpoint.what",
        "Stop streaming one channel to a stream destination.",
    ),
    (
        "tool.stop_stream_endpoint.happens",
        "The live stream to the destination ends; viewers there lose the picture.",
    ),
    (
        "tool.stop_stream_endpoint.undo",
        "Propose starting the same stream again; viewers will have missed the gap.",
    ),
    (
        "tool.confirm_cms_event_on_device.what",
        "Confirm a scheduled event on a recorder.",
    ),
    (
        "tool.confirm_cms_event_on_device.happens",
        "The recorder accepts the scheduled event, so it records it when it starts.",
    ),
    (
        "tool.confirm_cms_event_on_device.undo",
        "Change or cancel the event in the scheduling system.",
    ),
    ("tool.batch_reboot.what", "Restart a recorder."),
    (
        "tool.batch_reboot.happens",
        "The recorder goes offline for a few minutes; any recording or stream on it stops.",
    ),
    (
        "tool.batch_reboot.undo",
        "It cannot be undone. Recordings and streams must be started again afterwards.",
    ),
    (
        "tool.batch_firmware_update.what",
        "Update a recorder's firmware.",
    ),
    (
        "tool.batch_firmware_update.happens",
        "The recorder installs the new firmware and restarts; it is unavailable for several minutes.",
    ),
    (
        "tool.batch_firmware_update.undo",
        "It cannot be undone from here. Going back to older firmware needs a technician.",
    ),
];

/// Spanish.
pub const ES: &[(&str, &str)] = &[
    ("title", "Fleetwatch — aprobar un cambio"),
    ("login.heading", "Entrar en la página de aprobación"),
    (
        "login.explain",
        "Escribe el secreto de la página. Se mostró al arrancar el asistente o se guardó en el archivo cuya ruta mostró.",
    ),
    ("login.label", "Secreto de la página"),
    ("login.submit", "Entrar"),
    ("login.wrong", "Ese no es el secreto de la página."),
    (
        "login.other_tab",
        "No se hizo nada: esta pestaña no es la que inició la sesión. Entra aquí para usar esta pestaña (la otra volverá a pedirlo).",
    ),
    (
        "login.no_tab",
        "Esta página necesita JavaScript y el almacenamiento de sesión para atar tu entrada a esta pestaña. Actívalos para esta página y vuelve a entrar.",
    ),
    (
        "login.wait",
        "Demasiados intentos fallidos. Espera {secs} segundos y vuelve a intentarlo.",
    ),
    (
        "shell.text",
        "Cargando la página de aprobación para esta pestaña…",
    ),
    ("shell.button", "Mostrar la página de aprobación"),
    ("handoff.heading", "Confirma en la página de confirmación"),
    (
        "handoff.text",
        "La passkey se pide en la página de confirmación, que no sirve el asistente: muestra el cambio exactamente como lo firmará la passkey. Continúe allí.",
    ),
    ("handoff.button", "Continuar a la página de confirmación"),
    (
        "why.return",
        "Esta respuesta de la página de confirmación no corresponde a ninguna aprobación que espere en esta página. No se aprobó nada.",
    ),
    (
        "why.claims_differ",
        "La página de confirmación devolvió una respuesta de passkey para otro cambio distinto del que espera aquí. No se aprobó nada.",
    ),
    ("nav.passkeys", "Passkeys: quién aprueba"),
    ("passkeys.heading", "Quién aprueba"),
    (
        "passkeys.explain",
        "Un cambio solo se ejecuta cuando las personas que pide el ejecutor lo confirman con su propia passkey, que el ejecutor comprueba por sí mismo. Esta página no puede inscribir a nadie: un administrador inscribe a una persona en un terminal de esta máquina con fleetwatch-confirm enrol e instala en el ejecutor la línea que imprime.",
    ),
    ("passkeys.enrolled", "Inscritas en el ejecutor"),
    ("passkeys.person", "Persona"),
    ("passkeys.id", "ID"),
    ("passkeys.fingerprint", "Huella"),
    ("passkeys.kind", "Tipo"),
    (
        "passkeys.synced",
        "sincronizada (puede copiarse a otros dispositivos de la persona)",
    ),
    (
        "passkeys.device_bound",
        "ligada a un dispositivo (nunca sale de su autenticador)",
    ),
    (
        "passkeys.nobody",
        "No hay nadie inscrito en el ejecutor: rechaza todo cambio hasta que un administrador inscriba a una persona con fleetwatch-confirm enrol.",
    ),
    (
        "passkeys.trial",
        "El ejecutor funciona en modo de prueba: acepta un cambio con la sola firma del asistente, sin vincularlo a una persona.",
    ),
    (
        "passkeys.unreachable",
        "El ejecutor no respondió, así que no se puede mostrar quién está inscrito.",
    ),
    (
        "notice.unbound",
        "No hay nadie inscrito en el ejecutor: rechaza todo cambio hasta que un administrador inscriba a una persona (mira Passkeys).",
    ),
    (
        "notice.origin_not_held",
        "La dirección de la página de confirmación no la tiene ahora su propio servicio, así que el ejecutor rechazará toda passkey hasta que un administrador vuelva a arrancar fleetwatch-confirm.socket (fleetwatch-executor doctor dice por qué).",
    ),
    (
        "notice.trial",
        "El ejecutor funciona en modo de prueba: las aprobaciones de aquí no están vinculadas a una persona.",
    ),
    (
        "passkey.hint",
        "Este ejecutor exige tu passkey: al aprobar pasas a la página de confirmación, que muestra este cambio exacto y pide a tu llave de seguridad o dispositivo que lo confirme.",
    ),
    (
        "why.passkey_missing",
        "El ejecutor exige tu passkey para aprobar, y esta aprobación llegó sin ella. No se aprobó ni se gastó nada; vuelve atrás y aprueba de nuevo con tu passkey.",
    ),
    ("empty.heading", "No hay nada pendiente de aprobación."),
    ("card.heading", "Propuesta n.º {id}"),
    (
        "card.asked",
        "Pedido por {who} · caduca a las {at} ({in}) si nadie decide",
    ),
    ("title.waiting", "({n}) Fleetwatch — aprobar un cambio"),
    ("card.more", "{n} más en espera después de esta."),
    ("card.tool", "Herramienta"),
    ("card.what", "Qué es"),
    ("card.happens", "Qué ocurre"),
    ("card.undo", "Cómo deshacerlo"),
    ("card.targets", "Destinos"),
    ("col.id", "ID"),
    ("col.name", "Nombre actual"),
    ("col.model", "Modelo"),
    ("col.online", "En línea"),
    ("col.recording", "Grabando"),
    ("yes", "sí"),
    ("no", "no"),
    ("unknown", "desconocido"),
    ("card.arguments", "Argumentos completos"),
    ("card.names", "A qué corresponden los ID"),
    (
        "card.effect",
        "Qué cambia (según el estado leído ahora mismo)",
    ),
    (
        "card.window",
        "Comprobación de la ventana de interrupción (informativa; el ejecutor vuelve a comprobarla)",
    ),
    (
        "card.disruptive",
        "Este cambio interrumpe: se te pedirá que lo confirmes.",
    ),
    (
        "card.reason",
        "Motivo escrito por el asistente — nadie lo ha comprobado",
    ),
    ("card.no_reason", "El asistente no dio ningún motivo."),
    ("card.deny_only", "Solo se ofrece Denegar, porque:"),
    ("card.warnings", "Avisos de los destinos ahora"),
    (
        "card.expires",
        "Esta aprobación caduca en {minutes} minutos, a las {time} UTC.",
    ),
    ("card.expires_label", "La aprobación caduca en"),
    ("btn.deny", "Denegar"),
    ("btn.approve", "Aprobar este cambio"),
    ("btn.deny_all", "Denegar todas las pendientes"),
    ("btn.confirm", "Sí, cambiar {rooms}"),
    (
        "notice.queue_full",
        "Cola de propuestas llena ({n} en espera).",
    ),
    (
        "notice.hourly",
        "Límite por hora alcanzado: {n} propuestas en la última hora. El asistente no puede proponer más hasta que pase la hora.",
    ),
    (
        "notice.fatigue",
        "Has aprobado {n} cambios en esta sesión del navegador. Lee cada tarjeta completa antes de aprobar otro.",
    ),
    (
        "device_error.offline",
        "el equipo está desconectado o no se pudo alcanzar",
    ),
    (
        "device_error.busy",
        "el equipo está ocupado, o ya está en ese estado",
    ),
    (
        "device_error.not_found",
        "no se encontró el equipo, el canal o el destino",
    ),
    (
        "device_error.not_permitted",
        "la sesión no puede hacer esto en el equipo",
    ),
    ("device_error.timed_out", "el equipo no respondió a tiempo"),
    (
        "device_error.rejected",
        "Epiphan rechazó la solicitud por no válida",
    ),
    (
        "device_error.other",
        "Epiphan informó de un error (su texto no se guarda)",
    ),
    ("pace.none", "Tu última hora: ninguna decisión todavía."),
    (
        "pace.counts",
        "Tu última hora — aprobadas: {approved}, denegadas: {denied}.",
    ),
    (
        "pace.line",
        "Tu última hora — aprobadas: {approved}, denegadas: {denied}; una mediana de {median} s desde que ves una tarjeta hasta que decide.",
    ),
    (
        "pace.slow",
        "Estás decidiendo en una mediana de {median} s por tarjeta. Ve más despacio: lee qué hace cada cambio, y en qué salas, antes de aprobar.",
    ),
    ("confirm.heading", "Confirmar un cambio que interrumpe"),
    (
        "confirm.text",
        "Este cambio interrumpe lo que ocurre en {rooms}. Confirma solo si nadie depende de ello ahora mismo.",
    ),
    ("btn.receipt", "Descargar el recibo"),
    (
        "deny.reason",
        "¿Por qué no? (opcional; se le dice al asistente, para que no vuelva a pedir lo mismo)",
    ),
    (
        "receipt.hint",
        "El recibo prueba quién aprobó este cambio y qué dice el ejecutor que resultó; cualquiera puede comprobarlo con `fleetwatch-confirm verify`. Tu administrador puede volver a escribirlo en la máquina del ejecutor con `fleetwatch-executor receipt {n}`.",
    ),
    (
        "receipt.none",
        "El ejecutor no tiene recibo de este cambio; `{command}` dice por qué.",
    ),
    ("outcome.done.heading", "Hecho"),
    (
        "outcome.done.text",
        "El cambio se ejecutó una vez y Epiphan informó de que todos los equipos lo aceptaron.",
    ),
    ("outcome.error.heading", "Epiphan informó de un problema"),
    (
        "outcome.error.text",
        "El cambio se envió una vez. Epiphan informó de estos errores:",
    ),
    ("outcome.refused.heading", "No se ejecutó nada"),
    (
        "outcome.refused.text",
        "El ejecutor rechazó el cambio, así que no se ejecutó nada:",
    ),
    ("outcome.unknown.heading", "Resultado desconocido"),
    (
        "outcome.unknown.text",
        "Puede que se haya ejecutado o no — comprueba el equipo antes de volver a intentarlo.",
    ),
    ("conflict.heading", "Esto ya no se puede aprobar"),
    (
        "why.decided",
        "La propuesta n.º {id} ya no está en espera: ya se aprobó, se denegó o caducó. No se ejecutó nada.",
    ),
    (
        "why.approval_used",
        "Esta aprobación ya se usó o ha caducado. No se ejecutó nada.",
    ),
    (
        "why.changed",
        "La tarjeta cambió desde que se mostró. No se ejecutó nada; revisa la tarjeta nueva.",
    ),
    (
        "why.deny_only",
        "La tarjeta, leída de nuevo ahora mismo, ya no permite aprobar. No se ejecutó nada.",
    ),
    (
        "why.store",
        "No se pudo usar el almacén de aprobaciones. No se ejecutó nada.",
    ),
    (
        "card.waiting",
        "Aprobado por {names}, esperando a una segunda persona. Otro operador aprueba con su propia passkey, o cualquiera puede denegar.",
    ),
    (
        "card.waiting_more",
        "Aprobado por {names}, esperando a {n} personas más. Cada una aprueba con su propia passkey, o cualquiera puede denegar.",
    ),
    ("waiting.heading", "Tu aprobación queda guardada"),
    (
        "waiting.text",
        "Aún no se ha enviado nada al ejecutor: este cambio necesita la passkey de otro operador. Se ejecuta cuando lo apruebe en su propia sesión de la página; una denegación de cualquiera lo termina, y caduca cinco minutos después de la primera aprobación.",
    ),
    (
        "why.passkey_again",
        "Esa passkey ya aprobó este cambio, y una passkey cuenta una sola vez. No se gastó nada más; otro operador debe aprobar con su propia passkey.",
    ),
    (
        "why.passkey_unknown",
        "Esta passkey no se registró en esta página, así que la página no puede saber quién aprobó. No se aprobó ni se gastó nada; regístrala antes en Passkeys.",
    ),
    (
        "why.passkey_other",
        "Tu passkey confirmó algo distinto de lo que este cambio espera ahora: alguien lo aprobó antes, o la tarjeta cambió. No se aprobó ni se gastó nada; abre de nuevo la página de aprobación.",
    ),
    (
        "why.passkey_bad",
        "La respuesta de tu passkey no es válida ({why}). No se aprobó ni se gastó nada.",
    ),
    (
        "why.quorum_expired",
        "Las demás passkeys no aprobaron en los cinco minutos siguientes a la primera aprobación, así que este cambio caducó. No se ejecutó nada.",
    ),
    ("back", "Volver a la página de aprobación"),
    (
        "deny.arg_long",
        "El argumento {key} contiene un texto de más de 256 caracteres.",
    ),
    (
        "deny.arg_space",
        "El argumento {key} empieza o termina con espacios.",
    ),
    (
        "deny.arg_hidden",
        "El argumento {key} contiene caracteres de control, de formato, de uso privado o sin asignar.",
    ),
    (
        "deny.arg_deep",
        "El argumento {key} tiene más de 2 niveles de anidamiento.",
    ),
    (
        "deny.arg_many",
        "El argumento {key} contiene más de 20 elementos.",
    ),
    ("deny.args_big", "Los argumentos ocupan más de 4.000 bytes."),
    (
        "deny.args_bad",
        "Los argumentos guardados no son JSON válido.",
    ),
    (
        "deny.no_text",
        "Esta herramienta no tiene una descripción en palabras sencillas.",
    ),
    (
        "deny.policy",
        "Los argumentos ya no cumplen la política de herramientas.",
    ),
    (
        "deny.device_missing",
        "El equipo {id} no está en la lista de equipos del equipo de pruebas.",
    ),
    (
        "deny.cooling",
        "{device} tuvo un cambio disruptivo (un reinicio, una actualización de firmware o una grabación parada) {ago}; el ejecutor rechazará otro hasta las {time}.",
    ),
    (
        "deny.hourly",
        "El ejecutor ha hecho {n} cambios en la última hora, su límite de {limit}, así que rechazaría este; inténtalo más tarde.",
    ),
    ("follow.new", "{n} cambio(s) nuevo(s) en espera."),
    (
        "follow.gone",
        "Este cambio se decidió en otro sitio, o caducó: nada aquí lo ejecutará.",
    ),
    (
        "follow.second",
        "Alguien aprobó este cambio; espera a una segunda persona.",
    ),
    ("follow.show", "Mostrar"),
    (
        "deny.frozen",
        "Congelado hasta {until}: {reason} (el ejecutor retiene {holds} hasta entonces, así que lo rechazaría).",
    ),
    (
        "card.may_approve",
        "Pueden aprobar este cambio (el alcance de su línea de aprobador lo cubre): {names}.",
    ),
    (
        "deny.scope_nobody",
        "Ninguna persona inscrita puede aprobar este cambio: el alcance de ninguna línea de aprobador cubre su herramienta y todas sus salas, así que el ejecutor lo rechazaría.",
    ),
    (
        "deny.scope_few",
        "Solo {have} persona(s) inscrita(s) pueden aprobar este cambio y necesita {need}, así que el ejecutor lo rechazaría.",
    ),
    (
        "deny.not_allowlisted",
        "El equipo {id} no está en la lista de equipos autorizados para cambios.",
    ),
    (
        "deny.channel_missing",
        "No se encontró el canal {id} en su equipo.",
    ),
    (
        "deny.stream_missing",
        "No se encontró el destino de emisión {id}.",
    ),
    (
        "deny.event_missing",
        "El evento {id} no es el evento actual o siguiente del equipo.",
    ),
    ("deny.targets", "El ejecutor resolvió destinos distintos."),
    (
        "deny.grant_closed",
        "La categoría {category} se cerró (fleetwatch grants close) después de proponer esto, así que ya no se puede aprobar.",
    ),
    (
        "deny.grants_unreadable",
        "No se pueden leer las categorías abiertas ({why}), así que no se puede aprobar nada.",
    ),
    (
        "deny.fingerprint",
        "El estado de los equipos cambió desde que se propuso el cambio.",
    ),
    (
        "deny.read_failed",
        "No se pudo leer el estado actual: {why}",
    ),
    ("state.stopped", "detenida"),
    ("state.recording", "grabando"),
    (
        "effect.recording",
        "Grabación en {device} · {channel}: {from} → {to}",
    ),
    (
        "effect.stream_start",
        "Emisión {dest} ({host}) desde {device} · {channel}: {from} → emitiendo",
    ),
    (
        "effect.stream_stop",
        "Emisión {dest} ({host}) desde {device} · {channel}: {from} → detenida",
    ),
    (
        "effect.confirm",
        "Evento {title} ({start} – {end}) en {device}: {from} → confirmado",
    ),
    (
        "effect.reboot",
        "{device}: {from} → reiniciando (sin conexión unos minutos); grabación que interrumpe: {channels}",
    ),
    (
        "effect.firmware",
        "{device} ({model}): firmware {current} → la más reciente de Epiphan para este modelo (la más reciente en este equipo es {newest}); {from} → reiniciando (no disponible durante varios minutos); grabación que interrumpe: {channels}",
    ),
    ("state.online", "en línea"),
    ("state.offline", "sin conexión"),
    ("state.sending", "emitiendo"),
    ("state.not_sending", "sin emitir"),
    ("state.no_publisher", "no configurada en este canal"),
    ("state.not_reported", "estado no informado"),
    ("state.unconfirmed", "sin confirmar"),
    ("state.confirmed", "confirmado"),
    ("state.none", "ninguna"),
    (
        "deny.offline",
        "{device} está sin conexión, así que este cambio no puede llegarle.",
    ),
    (
        "deny.already_recording",
        "{device} · {channel} ya está grabando; iniciarla no cambia nada.",
    ),
    (
        "deny.not_recording",
        "{device} · {channel} no está grabando; no hay nada que detener.",
    ),
    (
        "deny.already_sending",
        "La emisión {dest} desde {device} · {channel} ya está emitiendo; iniciarla no cambia nada.",
    ),
    (
        "deny.not_sending",
        "La emisión {dest} desde {device} · {channel} no está emitiendo; no hay nada que detener.",
    ),
    (
        "deny.already_confirmed",
        "El evento {title} en {device} ya está confirmado; confirmarlo otra vez no cambia nada.",
    ),
    (
        "window.none",
        "{device}: nada grabando y ningún evento en la ventana.",
    ),
    (
        "window.none_stop",
        "{device}: ningún evento en curso ni a punto de empezar; detener su grabación es lo que hace este cambio.",
    ),
    (
        "window.recording",
        "{device} está grabando, o el estado de su grabador no es claramente parado, así que el ejecutor lo rechazaría.",
    ),
    (
        "window.live",
        "{device} tiene {title} en curso, así que el ejecutor lo rechazaría.",
    ),
    (
        "window.soon",
        "{device} tiene {title} que empieza dentro de {minutes} minutos, así que el ejecutor lo rechazaría.",
    ),
    ("name.channel", "Canal {id}: {name}"),
    (
        "name.stream",
        "Destino de emisión {id}: {name} (servidor {host})",
    ),
    ("name.event", "Evento {id}: {title}, {start} – {end}"),
    ("name.device", "Equipo {id}: {name}"),
    ("an_event", "un evento"),
    (
        "tool.batch_recording.what",
        "Iniciar o detener la grabación en un canal de un grabador.",
    ),
    (
        "tool.batch_recording.happens",
        "El canal empieza un archivo de grabación nuevo o cierra el que está grabando.",
    ),
    (
        "tool.batch_recording.undo",
        "Propón la acción contraria. Una grabación detenida conserva su archivo; una iniciada se puede detener, pero el hueco anterior no se puede grabar después.",
    ),
    (
        "tool.start_stream_endpoint.what",
        "Empezar a emitir un canal a un destino de emisión.",
    ),
    (
        "tool.start_stream_endpoint.happens",
        "El canal empieza a enviar vídeo en directo al destino indicado abajo; quien esté allí podrá verlo.",
    ),
    (
        "tool.start_stream_endpoint.undo",
        "Propón detener la misma emisión.",
    ),
    (
        "tool.stop_stream_endpoint.what",
        "Detener la emisión de un canal a un destino de emisión.",
    ),
    (
        "tool.stop_stream_endpoint.happens",
        "La emisión en directo a ese destino termina; quien esté allí pierde la imagen.",
    ),
    (
        "tool.stop_stream_endpoint.undo",
        "Propón iniciar de nuevo la misma emisión; el público se habrá perdido el hueco.",
    ),
    (
        "tool.confirm_cms_event_on_device.what",
        "Confirmar un evento programado en un grabador.",
    ),
    (
        "tool.confirm_cms_event_on_device.happens",
        "El grabador acepta el evento programado y lo grabará cuando empiece.",
    ),
    (
        "tool.confirm_cms_event_on_device.undo",
        "Cambia o cancela el evento en el sistema de programación.",
    ),
    ("tool.batch_reboot.what", "Reiniciar un grabador."),
    (
        "tool.batch_reboot.happens",
        "El grabador queda sin conexión unos minutos; se detiene cualquier grabación o emisión.",
    ),
    (
        "tool.batch_reboot.undo",
        "No se puede deshacer. Las grabaciones y emisiones deben iniciarse de nuevo después.",
    ),
    (
        "tool.batch_firmware_update.what",
        "Actualizar el firmware de un grabador.",
    ),
    (
        "tool.batch_firmware_update.happens",
        "El grabador instala el firmware nuevo y se reinicia; no está disponible durante varios minutos.",
    ),
    (
        "tool.batch_firmware_update.undo",
        "No se puede deshacer desde aquí. Volver a un firmware anterior requiere a un técnico.",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn keys(table: &[(&str, &str)]) -> BTreeSet<String> {
        table.iter().map(|(k, _)| (*k).to_owned()).collect()
    }

    /// No text the page can show tells anyone to run a command as root or to install a line:
    /// a page the assistant serves cannot be where a person is enrolled (DESIGN §9). The
    /// templates and scripts are held to the same in `tests/page_http.rs`.
    #[test]
    fn no_text_of_the_page_hands_out_an_install_command() {
        for (key, text) in EN.iter().chain(ES.iter()) {
            assert!(!text.contains("sudo"), "{key}: {text}");
            assert!(!text.contains("approvers add"), "{key}: {text}");
        }
    }

    #[test]
    fn both_catalogues_have_the_same_keys_once_each() {
        assert_eq!(keys(EN), keys(ES));
        assert_eq!(keys(EN).len(), EN.len(), "a key appears twice in English");
        assert_eq!(keys(ES).len(), ES.len(), "a key appears twice in Spanish");
    }

    #[test]
    fn placeholders_match_between_languages() {
        let names = |text: &str| -> BTreeSet<String> {
            text.split('{')
                .skip(1)
                .filter_map(|rest| rest.split_once('}').map(|(n, _)| n.to_owned()))
                .collect()
        };
        for (key, en) in EN {
            assert_eq!(names(en), names(Lang::Es.t(key)), "{key}");
        }
    }

    #[test]
    fn every_proposable_tool_has_plain_words() {
        let policy = fleetwatch_protocol::policy::Policy::from_yaml(include_str!(
            "../../../tool_policy.yaml"
        ))
        .unwrap();
        for entry in policy.propose_entries() {
            for lang in [Lang::En, Lang::Es] {
                assert!(tool_text(lang, &entry.name).is_some(), "{}", entry.name);
            }
        }
        assert!(tool_text(Lang::En, "apply_team_preset").is_none());
    }

    #[test]
    fn values_are_not_expanded_twice() {
        assert_eq!(
            fill(
                "{device} · {channel}",
                &[("device", "{channel}"), ("channel", "Program")]
            ),
            "{channel} · Program"
        );
        assert_eq!(fill("a {x} b {", &[]), "a {x} b {");
    }

    #[test]
    fn language_from_the_first_tag() {
        assert_eq!(
            Lang::from_accept_language(Some("es-ES,es;q=0.9,en;q=0.8")),
            Lang::Es
        );
        assert_eq!(Lang::from_accept_language(Some("es")), Lang::Es);
        assert_eq!(Lang::from_accept_language(Some("en-US,es;q=0.9")), Lang::En);
        assert_eq!(Lang::from_accept_language(Some("estonian")), Lang::En);
        assert_eq!(Lang::from_accept_language(None), Lang::En);
    }
}
