//! The confirm page's words, from decoded claims alone (DESIGN §9): the tool and every argument,
//! each target's signed name and the state the effect is computed from, the effect, whether the
//! change is disruptive (then the rooms), the proposal number and the expiry. Nothing from the
//! request but the claims bytes reaches these words; a change that cannot be shown in full gets
//! no passkey button, and the reason.

use fleetwatch_protocol::claims::{ApprovalClaims, NameKind, SignedName};
use fleetwatch_protocol::fleet::Fingerprint;
use fleetwatch_protocol::policy::Policy;
use fleetwatch_protocol::shown::readable;
use serde_json::Value;

use crate::lang::Lang;

/// Longest name shown, in characters; longer ones end in `…` (the page wraps what it shows).
const NAME_CHARS: usize = 120;
/// Longest ID or argument value shown, in characters.
const VALUE_CHARS: usize = 400;
/// Marks around a name in a line, drawn as an isolating element (`<bdi>`) so a name written
/// right to left cannot move the ID beside it. Private-use code points: [`readable`] spells
/// every one out, so no name can hold them.
pub const NAME_OPEN: char = '\u{E000}';
/// See [`NAME_OPEN`].
pub const NAME_CLOSE: char = '\u{E001}';

/// A name as the page shows it: readable, capped, marked to be isolated, in the language's
/// quotation marks (“…” or «…», as the approval page's card).
fn name_shown(lang: Lang, name: &str) -> String {
    let (open, close) = match lang {
        Lang::En => ('“', '”'),
        Lang::Es => ('«', '»'),
    };
    format!(
        "{open}{NAME_OPEN}{}{NAME_CLOSE}{close}",
        readable(name, NAME_CHARS)
    )
}

/// An ID or a value from the claims as the page shows it.
fn value_shown(text: &str) -> String {
    readable(text, VALUE_CHARS)
}

/// What the page shows for one change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shown {
    /// "Proposal #N: start or stop recording".
    pub heading: String,
    /// One line per target: name, ID, signed state.
    pub targets: Vec<String>,
    /// One line per argument, in full, with the signed name of any ID it holds.
    pub arguments: Vec<String>,
    /// What changes, per target, from the signed state.
    pub effects: Vec<String>,
    /// The disruptive warning naming the rooms, when the change is disruptive.
    pub disruptive: Option<String>,
    /// The passkey button's words: the change and every target by name and ID, the one place
    /// the person confirms them (the approval page hands every change over without a step of
    /// its own); a disruptive change's begin with what it interrupts.
    pub button: String,
    /// Who asked for the change, said as the assistant's report (the executor cannot check
    /// it), when the claims name someone.
    pub asked_by: Option<String>,
    /// Why the change cannot be approved here, when it cannot be shown in full.
    pub problem: Option<String>,
}

/// The tool in words, if this page knows it.
fn tool_words(lang: Lang, tool: &str) -> Option<&'static str> {
    let (en, es) = match tool {
        "batch_recording" => ("start or stop recording", "iniciar o detener la grabación"),
        "batch_reboot" => ("reboot the recorder", "reiniciar el grabador"),
        "batch_firmware_update" => (
            "update the recorder's firmware",
            "actualizar el firmware del grabador",
        ),
        "start_stream_endpoint" => (
            "start streaming to a destination",
            "empezar a transmitir a un destino",
        ),
        "stop_stream_endpoint" => (
            "stop streaming to a destination",
            "dejar de transmitir a un destino",
        ),
        "confirm_cms_event_on_device" => (
            "confirm a scheduled event on the recorder",
            "confirmar un evento programado en el grabador",
        ),
        _ => return None,
    };
    Some(match lang {
        Lang::En => en,
        Lang::Es => es,
    })
}

/// The change in a few words for the button: a recording's action when it has one, the tool's
/// words otherwise.
fn change_words(lang: Lang, tool: &str, arguments: &Value) -> Option<&'static str> {
    let es = lang == Lang::Es;
    if tool == "batch_recording" {
        match (arguments.get("action").and_then(Value::as_str), es) {
            (Some("start"), false) => return Some("start recording"),
            (Some("start"), true) => return Some("iniciar la grabación"),
            (Some("stop"), false) => return Some("stop recording"),
            (Some("stop"), true) => return Some("detener la grabación"),
            _ => {}
        }
    }
    tool_words(lang, tool)
}

/// `text` with its first letter in capitals.
fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn yes_no(lang: Lang, value: bool) -> &'static str {
    match (lang, value) {
        (Lang::En, true) => "yes",
        (Lang::En, false) => "no",
        (Lang::Es, true) => "sí",
        (Lang::Es, false) => "no",
    }
}

fn name_of<'a>(names: &'a [SignedName], kind: NameKind, id: &str) -> Option<&'a str> {
    names
        .iter()
        .find(|n| n.kind == kind && n.id.eq_ignore_ascii_case(id))
        .map(|n| n.name.as_str())
}

/// A value in full: strings as they are, anything else as compact JSON; any ID that a signed
/// name names gets it beside it.
fn value_words(lang: Lang, value: &Value, names: &[SignedName]) -> String {
    let one = |text: &str| match names.iter().find(|n| n.id.eq_ignore_ascii_case(text)) {
        Some(n) => format!("{} ({})", value_shown(text), name_shown(lang, &n.name)),
        None => value_shown(text),
    };
    match value {
        Value::String(s) => one(s),
        Value::Array(items) => items
            .iter()
            .map(|v| match v {
                Value::String(s) => one(s),
                other => value_shown(&other.to_string()),
            })
            .collect::<Vec<_>>()
            .join(", "),
        other => value_shown(&other.to_string()),
    }
}

/// The words for one change, or why it cannot be approved here.
pub fn show(lang: Lang, claims: &ApprovalClaims, policy: &Policy) -> Shown {
    let es = lang == Lang::Es;
    let mut problem: Option<String> = None;
    let mut fail = |en: String, es_text: String| {
        if problem.is_none() {
            problem = Some(if es { es_text } else { en });
        }
    };
    let tool = tool_words(lang, &claims.tool);
    let tool_shown = value_shown(&claims.tool);
    if tool.is_none() || policy.propose_entry(&claims.tool).is_none() {
        fail(
            format!("This page cannot show the tool “{tool_shown}” in words."),
            format!("Esta página no sabe mostrar la herramienta «{tool_shown}» en palabras."),
        );
    }
    // The words and the disruptive rule come from this page's policy file: claims checked
    // against another one could mean something else here.
    if tool.is_some() && policy.digest(&claims.tool) != Some(claims.policy_digest) {
        fail(
            "This change was checked against another tool policy than this page's, so it \
             cannot be shown as it will run. The administrator installs the same \
             tool_policy.yaml for the confirm page as for the executor."
                .into(),
            "Este cambio se comprobó con otra política de herramientas que la de esta página, \
             así que no se puede mostrar tal como se ejecutará. El administrador instala el \
             mismo tool_policy.yaml para la página de confirmación que para el ejecutor."
                .into(),
        );
    }
    let heading = if es {
        format!(
            "Propuesta n.º {}: {}",
            claims.proposal_id,
            tool.unwrap_or(&tool_shown)
        )
    } else {
        format!(
            "Proposal #{}: {}",
            claims.proposal_id,
            tool.unwrap_or(&tool_shown)
        )
    };
    let arguments: Value = serde_json::from_str(&claims.arguments).unwrap_or(Value::Null);
    let mut argument_lines = Vec::new();
    match &arguments {
        Value::Object(map) => {
            for (key, value) in map {
                argument_lines.push(format!(
                    "{}: {}",
                    value_shown(key),
                    value_words(lang, value, &claims.names)
                ));
            }
        }
        _ => fail(
            "The change's arguments are not an object this page can show.".into(),
            "Los argumentos del cambio no son un objeto que esta página pueda mostrar.".into(),
        ),
    }
    let state: Option<Fingerprint> = serde_json::from_str(&claims.fingerprint).ok();
    if state.is_none() {
        fail(
            "The state the change was approved on cannot be read.".into(),
            "No se puede leer el estado sobre el que se aprobó el cambio.".into(),
        );
    }
    let mut targets = Vec::new();
    let mut effects = Vec::new();
    let mut rooms = Vec::new();
    let mut rooms_with_ids = Vec::new();
    for raw_id in &claims.targets {
        let id = &value_shown(raw_id);
        let Some(name) = name_of(&claims.names, NameKind::Device, raw_id) else {
            fail(
                format!("Target {id} carries no name, so it cannot be shown."),
                format!("El destino {id} no lleva nombre, así que no se puede mostrar."),
            );
            continue;
        };
        let name = &name_shown(lang, name);
        rooms.push(name.clone());
        rooms_with_ids.push(format!("{name} ({id})"));
        let Some(target) = state.as_ref().and_then(|s| s.0.get(raw_id)) else {
            fail(
                format!("Target {id} has no signed state."),
                format!("El destino {id} no tiene estado firmado."),
            );
            continue;
        };
        let event = target
            .next_event_start
            .as_deref()
            .map(value_shown)
            .unwrap_or_else(|| if es { "ninguno" } else { "none" }.to_owned());
        targets.push(if es {
            format!(
                "{name} ({id}) — en línea: {}, grabando: {}, próximo evento: {event}",
                yes_no(lang, target.online),
                yes_no(lang, target.recording)
            )
        } else {
            format!(
                "{name} ({id}) — online: {}, recording: {}, next event: {event}",
                yes_no(lang, target.online),
                yes_no(lang, target.recording)
            )
        });
        if let Some(effect) = effect(lang, claims, &arguments, name, target.recording) {
            effects.push(effect);
        }
    }
    if targets.is_empty() {
        fail(
            "The change names no target.".into(),
            "El cambio no nombra ningún destino.".into(),
        );
    }
    let rooms = rooms.join(", ");
    let disruptive = policy.is_disruptive(&claims.tool, &arguments).then(|| {
        if es {
            format!("Este cambio interrumpe lo que ocurre en {rooms}.")
        } else {
            format!("This change interrupts what is happening in {rooms}.")
        }
    });
    let change = change_words(lang, &claims.tool, &arguments).unwrap_or(&claims.tool);
    let named = rooms_with_ids.join(", ");
    let button = match (&disruptive, es) {
        (None, false) => format!(
            "{} in {named}: confirm with my passkey",
            capitalised(change)
        ),
        (None, true) => format!(
            "{} en {named}: confirmar con mi passkey",
            capitalised(change)
        ),
        (Some(_), false) => format!("Interrupt {named} to {change}: confirm with my passkey"),
        (Some(_), true) => format!("Interrumpir {named} para {change}: confirmar con mi passkey"),
    };
    let asked_by = (!claims.asked_by.is_empty()).then(|| {
        let who = value_shown(&claims.asked_by);
        if es {
            format!("Lo pidió {who}, según el asistente (el ejecutor no puede comprobarlo).")
        } else {
            format!("Asked by {who}, as the assistant reports it (the executor cannot check this).")
        }
    });
    Shown {
        heading,
        targets,
        arguments: argument_lines,
        effects,
        disruptive,
        button,
        asked_by,
        problem,
    }
}

/// What changes on one target, from its signed state.
fn effect(
    lang: Lang,
    claims: &ApprovalClaims,
    arguments: &Value,
    room: &str,
    recording: bool,
) -> Option<String> {
    let es = lang == Lang::Es;
    let text = |key: &str| {
        arguments
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let named = |kind: NameKind, key: &str| match name_of(&claims.names, kind, text(key)) {
        Some(name) => name_shown(lang, name),
        None => value_shown(text(key)),
    };
    Some(match (claims.tool.as_str(), es) {
        ("batch_recording", _) => {
            let after = text("action") == "start";
            if es {
                format!(
                    "Grabación en {room}: {} → {}",
                    if recording { "grabando" } else { "detenida" },
                    if after { "grabando" } else { "detenida" }
                )
            } else {
                format!(
                    "Recording in {room}: {} → {}",
                    if recording { "recording" } else { "stopped" },
                    if after { "recording" } else { "stopped" }
                )
            }
        }
        ("batch_reboot", false) => {
            format!("{room} restarts: offline for a few minutes, any recording stops")
        }
        ("batch_reboot", true) => {
            format!("{room} se reinicia: sin conexión unos minutos, se detiene cualquier grabación")
        }
        ("batch_firmware_update", false) => {
            format!("{room} installs new firmware and restarts")
        }
        ("batch_firmware_update", true) => {
            format!("{room} instala firmware nuevo y se reinicia")
        }
        ("start_stream_endpoint", false) => format!(
            "Streaming from {room} to {}: → publishing",
            named(NameKind::Stream, "stream_id")
        ),
        ("start_stream_endpoint", true) => format!(
            "Transmisión de {room} a {}: → publicando",
            named(NameKind::Stream, "stream_id")
        ),
        ("stop_stream_endpoint", false) => format!(
            "Streaming from {room} to {}: → stopped",
            named(NameKind::Stream, "stream_id")
        ),
        ("stop_stream_endpoint", true) => format!(
            "Transmisión de {room} a {}: → detenida",
            named(NameKind::Stream, "stream_id")
        ),
        ("confirm_cms_event_on_device", false) => format!(
            "Event {} in {room}: → confirmed",
            named(NameKind::Event, "event_id")
        ),
        ("confirm_cms_event_on_device", true) => format!(
            "Evento {} en {room}: → confirmado",
            named(NameKind::Event, "event_id")
        ),
        _ => return None,
    })
}
