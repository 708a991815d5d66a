//! The offline demo's stand-in for a model: fixed rules that read the operator's question and
//! the tool results already in the conversation, and answer the way a cooperative model would
//! (ask for reads, then answer in text or call `propose_change`).
//!
//! It is stateless: every decision comes from the request body alone, so the assistant's real
//! HTTP loop drives it exactly as it drives the hosted API. It is not intelligent and says so in
//! every text answer, so nobody mistakes the demo for a real model's judgement.
//!
//! What it knows about language, room names, firmware, warnings, times and what needs
//! attention comes from `fleetwatch_words`, the same judgement the assistant's keyword
//! answerer uses; this module only plans: what to read, what to propose, how to relay a
//! proposal's result, and the sentences of its answers.
//!
//! Hazards:
//! * Device, channel and event names are hostile text. They are only ever quoted, stripped of
//!   control and bidirectional characters and cut short; they never choose what happens next.
//! * Room matching never crosses numbers: "room 999" must not become "Room 99", or a proposal
//!   would target the wrong device.
//! * A proposal result is relayed as it came, and the answer never claims a change happened.

use std::collections::{BTreeMap, BTreeSet};

mod with_tools;

use fleetwatch_protocol::fleet::{self, Device, DeviceList, Event, StreamEndpoint};
use fleetwatch_protocol::ids;
use fleetwatch_words::firmware::stragglers;
use fleetwatch_words::lang::{self, Lang};
use fleetwatch_words::question::{self, Question};
use fleetwatch_words::rooms::{RoomMatch, find_room};
use fleetwatch_words::shown::{quoted, quoted_label, shown, shown_capped};
use fleetwatch_words::time::{event_clause, is_on, not_ended};
use fleetwatch_words::tokens::{tokens, words_of};
use fleetwatch_words::{state, triage, warnings};
use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

/// The note every text answer opens with, per language.
pub const NOTE_EN: &str = "[offline demo model — rule-based, not AI]";
/// Spanish form of [`NOTE_EN`].
pub const NOTE_ES: &str = "[modelo de demostración sin conexión — basado en reglas, no es IA]";

const DEVICES: &str = "get_devices_in_my_team";
const RECORDER: &str = "get_recorder_status_for_devices";
const EVENTS: &str = "get_current_or_next_cms_events_for_devices";
const STREAMS: &str = "get_stream_endpoints";
const PROPOSE: &str = "propose_change";

/// The read list's own bound on `device_ids` per call.
const MAX_IDS_PER_READ: usize = 100;
/// Reasons are capped by the assistant at 300 characters; stay well inside it.
const MAX_REASON_CHARS: usize = 280;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Intent {
    Attention,
    Offline,
    Recording,
    Upcoming,
    Ready,
    Firmware,
    StartRecording,
    StopRecording,
    StartStream,
    StopStream,
    Reboot,
    UpdateFirmware,
    ConfirmEvent,
    Help,
}

impl From<Question> for Intent {
    fn from(kind: Question) -> Intent {
        match kind {
            Question::Ready => Intent::Ready,
            Question::Firmware => Intent::Firmware,
            Question::Offline => Intent::Offline,
            Question::Recording => Intent::Recording,
            Question::Upcoming => Intent::Upcoming,
            Question::Attention => Intent::Attention,
            Question::Help => Intent::Help,
        }
    }
}

impl Intent {
    fn names_a_room(self) -> bool {
        matches!(
            self,
            Intent::Ready
                | Intent::StartRecording
                | Intent::StopRecording
                | Intent::StartStream
                | Intent::StopStream
                | Intent::Reboot
                | Intent::UpdateFirmware
                | Intent::ConfirmEvent
        )
    }

    /// The reads this intent cannot do without, and those it uses when they are offered.
    fn reads(self) -> (&'static [&'static str], &'static [&'static str]) {
        match self {
            Intent::Offline | Intent::Firmware => (&[DEVICES], &[]),
            Intent::Recording | Intent::StartRecording => (&[DEVICES], &[RECORDER]),
            // Disruptive changes read the schedule too, so the reason can tell the reviewer
            // what is on in the room.
            Intent::StopRecording
            | Intent::Reboot
            | Intent::UpdateFirmware
            | Intent::Attention
            | Intent::Ready => (&[DEVICES], &[RECORDER, EVENTS]),
            Intent::Upcoming | Intent::ConfirmEvent => (&[DEVICES, EVENTS], &[]),
            Intent::StopStream => (&[DEVICES], &[]),
            Intent::StartStream => (&[DEVICES], &[STREAMS]),
            Intent::Help => (&[], &[]),
        }
    }
}

/// The grant category of each read and proposable tool, for telling the operator what to open.
fn category(tool: &str) -> &'static str {
    match tool {
        DEVICES | RECORDER | with_tools::OVERVIEW | with_tools::SEARCH | with_tools::ROOM => {
            "fleet"
        }
        EVENTS => "schedule",
        STREAMS => "streams",
        "batch_recording" => "recording",
        "start_stream_endpoint" | "stop_stream_endpoint" => "streaming",
        "confirm_cms_event_on_device" => "events",
        _ => "maintenance",
    }
}

// ---------------------------------------------------------------------------------------------
// Recognising the request

fn has(words: &[&str], list: &[&str]) -> bool {
    words.iter().any(|w| list.contains(w))
}

fn has_prefix(words: &[&str], stems: &[&str]) -> bool {
    words.iter().any(|w| stems.iter().any(|s| w.starts_with(s)))
}

fn classify(question: &str) -> Intent {
    let toks = tokens(question);
    let w = words_of(&toks);
    let phrase = format!(" {} ", w.join(" "));
    let has_phrase = |list: &[&str]| list.iter().any(|p| phrase.contains(&format!(" {p} ")));

    let start_verbs = &[
        "start", "begin", "resume", "inicia", "iniciar", "inicie", "empieza", "empezar",
        "comienza", "comenzar", "arranca", "arrancar", "activa", "activar",
    ];
    let stop_verbs = &[
        "stop",
        "end",
        "halt",
        "deten",
        "detener",
        "detenga",
        "parar",
        "pare",
        "termina",
        "terminar",
        "finaliza",
        "finalizar",
        "corta",
        "cortar",
    ];
    // "para" is also the preposition "for"; only its imperative use counts.
    let stop = has(&w, stop_verbs) || has_phrase(&["para la", "para el"]);
    let start = has(&w, start_verbs);
    let stream_word = has(
        &w,
        &[
            "stream",
            "streaming",
            "transmision",
            "emision",
            "directo",
            "livestream",
        ],
    );
    let record_word = has(
        &w,
        &["recording", "record", "grabacion", "grabar", "grabando"],
    );

    if has_prefix(&w, &["confirm"]) && has_prefix(&w, &["event"]) {
        return Intent::ConfirmEvent;
    }
    if has_phrase(&[
        "update firmware",
        "update the firmware",
        "upgrade firmware",
        "upgrade the firmware",
        "update its firmware",
        "firmware update on",
        "firmware update for",
        "firmware upgrade on",
        "actualiza el firmware",
        "actualizar el firmware",
        "actualice el firmware",
        "actualiza firmware",
        "actualizar firmware",
    ]) {
        return Intent::UpdateFirmware;
    }
    if stream_word && stop {
        return Intent::StopStream;
    }
    if stream_word && start {
        return Intent::StartStream;
    }
    if record_word && stop {
        return Intent::StopRecording;
    }
    if record_word && start || has_phrase(&["graba en", "graba la", "graba el"]) {
        return Intent::StartRecording;
    }
    if has(
        &w,
        &[
            "reboot",
            "restart",
            "reinicia",
            "reiniciar",
            "reinicie",
            "reinicio",
        ],
    ) {
        return Intent::Reboot;
    }
    // Anything else is a read question, which the one classifier the keyword answerer also
    // asks decides.
    Intent::from(question::of(question))
}

// ---------------------------------------------------------------------------------------------
// The conversation as the request shows it

/// What the request body says so far.
struct Conversation {
    question: String,
    offered: BTreeSet<String>,
    /// Tools `propose_change` may name, when it is offered.
    proposable: Option<BTreeSet<String>>,
    /// Read results by tool, in order (a read may be split over several calls).
    reads: BTreeMap<String, Vec<Value>>,
    /// Reads that came back as errors, with their text.
    failed: BTreeMap<String, String>,
    /// The last `propose_change` result: (refused or failed, text).
    proposal: Option<(bool, String)>,
}

fn text_of_content(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The JSON inside every `<fleet_data tool="…">` block of a tool result. The escaped `<`, `>`
/// and `&` are ordinary JSON string escapes, so serde_json restores them. Text that holds no
/// block is tried as bare JSON.
fn data_blocks(text: &str) -> Result<Vec<Value>, String> {
    const OPEN: &str = "<fleet_data";
    const CLOSE: &str = "</fleet_data>";
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(OPEN) {
        let after = &rest[at + OPEN.len()..];
        let Some(gt) = after.find('>') else {
            return Err("a data block has no end to its opening tag".to_owned());
        };
        let body = &after[gt + 1..];
        let Some(end) = body.find(CLOSE) else {
            return Err("a data block is not closed".to_owned());
        };
        let value = serde_json::from_str::<Value>(&body[..end])
            .map_err(|_| "a data block does not hold JSON".to_owned())?;
        out.push(value);
        rest = &body[end + CLOSE.len()..];
    }
    if out.is_empty() {
        return serde_json::from_str::<Value>(text.trim())
            .map(|v| vec![v])
            .map_err(|_| "the result holds no data block".to_owned());
    }
    Ok(out)
}

/// A user message that carries the operator's words rather than tool results.
fn question_text(message: &Value) -> Option<String> {
    if message.get("role").and_then(Value::as_str) != Some("user") {
        return None;
    }
    match message.get("content")? {
        Value::String(s) => Some(s.clone()),
        Value::Array(blocks) => {
            let has_result = blocks
                .iter()
                .any(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"));
            // The operator's words, not the data blocks Fleetwatch puts before them (the
            // chat's record): a model reads those as data, and so does this stand-in.
            let words: Vec<Value> = blocks
                .iter()
                .filter(|b| {
                    !b.get("text")
                        .and_then(Value::as_str)
                        .is_some_and(|t| t.starts_with("<fleet_data"))
                })
                .cloned()
                .collect();
            let text = text_of_content(&Value::Array(words));
            (!has_result && !text.trim().is_empty()).then_some(text)
        }
        _ => None,
    }
}

impl Conversation {
    fn from_request(body: &Value) -> Result<Conversation, &'static str> {
        let messages = body
            .get("messages")
            .and_then(Value::as_array)
            .ok_or("messages: field required")?;
        let (start, question) = messages
            .iter()
            .enumerate()
            .rev()
            .find_map(|(i, m)| question_text(m).map(|q| (i, q)))
            .ok_or("messages: no user question found")?;

        let mut offered = BTreeSet::new();
        let mut proposable = None;
        for tool in body
            .get("tools")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(name) = tool.get("name").and_then(Value::as_str) else {
                continue;
            };
            offered.insert(name.to_owned());
            if name == PROPOSE {
                let names: BTreeSet<String> = tool
                    .pointer("/input_schema/properties/tool/enum")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect();
                proposable = Some(names);
            }
        }

        // Only what followed the question belongs to it; earlier turns were other questions.
        let mut calls: BTreeMap<String, String> = BTreeMap::new();
        let mut reads: BTreeMap<String, Vec<Value>> = BTreeMap::new();
        let mut failed = BTreeMap::new();
        let mut proposal = None;
        for message in messages.iter().skip(start + 1) {
            let Some(blocks) = message.get("content").and_then(Value::as_array) else {
                continue;
            };
            for block in blocks {
                match block.get("type").and_then(Value::as_str) {
                    Some("tool_use") => {
                        if let (Some(id), Some(name)) = (
                            block.get("id").and_then(Value::as_str),
                            block.get("name").and_then(Value::as_str),
                        ) {
                            calls.insert(id.to_owned(), name.to_owned());
                        }
                    }
                    Some("tool_result") => {
                        let Some(name) = block
                            .get("tool_use_id")
                            .and_then(Value::as_str)
                            .and_then(|id| calls.get(id))
                        else {
                            continue;
                        };
                        let text = text_of_content(block.get("content").unwrap_or(&Value::Null));
                        let is_error = block.get("is_error").and_then(Value::as_bool) == Some(true);
                        if name == PROPOSE {
                            proposal = Some((is_error, text));
                        } else if is_error {
                            failed.insert(name.clone(), text);
                        } else {
                            match data_blocks(&text) {
                                Ok(values) => reads.entry(name.clone()).or_default().extend(values),
                                Err(problem) => {
                                    failed.insert(name.clone(), problem);
                                }
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        Ok(Conversation {
            question,
            offered,
            proposable,
            reads,
            failed,
            proposal,
        })
    }

    fn has(&self, tool: &str) -> bool {
        self.reads.contains_key(tool) || self.failed.contains_key(tool)
    }
}

// ---------------------------------------------------------------------------------------------
// Decisions

/// What the stand-in does next.
enum Step {
    Read(Vec<(&'static str, Value)>),
    Text(String),
    Propose {
        tool: &'static str,
        arguments: Value,
        reason: String,
    },
}

/// The fleet as read in this conversation.
struct Fleet {
    devices: Vec<Device>,
    events: BTreeMap<String, Option<Event>>,
    events_read: bool,
    endpoints: Option<Vec<StreamEndpoint>>,
    /// Why the stream destinations could not be read, when they could not.
    streams_failed: Option<String>,
    notes: Vec<String>,
    /// For one room read whole (`fleet_room`): the newest firmware of its line in the team,
    /// when it runs an older one. `None` over the device list, which shows the whole line.
    newest: Option<String>,
}

impl Fleet {
    /// The device's current or next event, unless it has already ended.
    fn event_for(&self, id: &str, now: Timestamp) -> Option<&Event> {
        self.events
            .get(id)
            .and_then(Option::as_ref)
            .filter(|e| not_ended(e, now))
    }
}

fn note(lang: Lang) -> &'static str {
    lang.pick(NOTE_EN, NOTE_ES)
}

fn with_note(lang: Lang, body: &str) -> String {
    format!("{}\n{}", note(lang), body.trim_end())
}

fn open_hint(tool: &str, lang: Lang) -> String {
    let cat = category(tool);
    match lang {
        Lang::En => format!(
            "I cannot read that here: the tool {tool} is not offered to me, so its category \
             “{cat}” is closed. The operator can open it with `fleetwatch grants open {cat}`."
        ),
        Lang::Es => format!(
            "No puedo leer eso aquí: la herramienta {tool} no se me ofrece, así que su categoría \
             «{cat}» está cerrada. El operador puede abrirla con `fleetwatch grants open {cat}`."
        ),
    }
}

fn failed_text(tool: &str, why: &str, lang: Lang) -> String {
    // The failure text came from the assistant's own code, but it is still cut and cleaned:
    // nothing in it may pose as part of this answer's structure.
    let why: String = shown_capped(&why.replace(['<', '>'], " "), 200);
    match lang {
        Lang::En => format!("I could not read {tool}: {why}. Nothing has been changed."),
        Lang::Es => format!("No pude leer {tool}: {why}. No se ha cambiado nada."),
    }
}

fn until(now: Timestamp) -> String {
    fleet::format_time(
        now.checked_add(SignedDuration::from_hours(24))
            .unwrap_or(now),
    )
}

/// First reads: nothing depends on anything yet.
fn first_reads(intent: Intent, conv: &Conversation, now: Timestamp) -> Vec<(&'static str, Value)> {
    let (required, optional) = intent.reads();
    required
        .iter()
        .chain(optional)
        .filter(|t| **t != RECORDER && !conv.has(t) && conv.offered.contains(**t))
        .map(|t| {
            let input = if *t == EVENTS {
                json!({"until": until(now)})
            } else {
                json!({})
            };
            (*t, input)
        })
        .collect()
}

fn parse_fleet(conv: &Conversation, lang: Lang) -> Result<Fleet, String> {
    let mut notes = Vec::new();
    let device_values = conv.reads.get(DEVICES).cloned().unwrap_or_default();
    let mut list = DeviceList::default();
    for value in &device_values {
        let parsed =
            fleet::parse_device_list(value).map_err(|e| failed_text(DEVICES, &e.problem, lang))?;
        list.devices.extend(parsed.devices);
    }
    for value in conv.reads.get(RECORDER).into_iter().flatten() {
        match fleet::parse_recorder_status(value) {
            Ok(status) => fleet::apply_recorder_status(&mut list, &status),
            Err(e) => notes.push(failed_text(RECORDER, &e.problem, lang)),
        }
    }
    if let Some(why) = conv.failed.get(RECORDER) {
        notes.push(match lang {
            Lang::En => format!(
                "(Recorder status could not be read, so recording states come from the device \
                 list: {}.)",
                shown(why)
            ),
            Lang::Es => format!(
                "(No se pudo leer el estado de grabación; los estados vienen de la lista de \
                 equipos: {}.)",
                shown(why)
            ),
        });
    }
    if let Some(why) = conv.failed.get(EVENTS) {
        notes.push(failed_text(EVENTS, why, lang));
    }
    let mut events = BTreeMap::new();
    let mut events_read = false;
    for value in conv.reads.get(EVENTS).into_iter().flatten() {
        match fleet::parse_events(value) {
            Ok(map) => {
                events_read = true;
                events.extend(map);
            }
            Err(e) => notes.push(failed_text(EVENTS, &e.problem, lang)),
        }
    }
    let endpoints = match conv.reads.get(STREAMS) {
        Some(values) => {
            let mut all = Vec::new();
            for value in values {
                match fleet::parse_stream_endpoints(value) {
                    Ok(list) => all.extend(list),
                    Err(e) => notes.push(failed_text(STREAMS, &e.problem, lang)),
                }
            }
            Some(all)
        }
        None => None,
    };
    Ok(Fleet {
        devices: list.devices,
        events,
        events_read,
        endpoints,
        streams_failed: conv.failed.get(STREAMS).cloned(),
        notes,
        newest: None,
    })
}

/// A room's streams that name their destination: (channel number, stream ID, active), from
/// the fleet model, so what counts as a publisher and as running is the protocol's one rule.
fn publishers(d: &Device) -> Vec<(String, String, bool)> {
    d.channels
        .iter()
        .flat_map(|channel| {
            channel.publishers.iter().filter_map(move |p| {
                p.stream_id
                    .as_ref()
                    .filter(|id| ids::is_uuid(id))
                    .map(|id| (channel.number.clone(), id.clone(), p.active))
            })
        })
        .collect()
}

/// Decides the next step for a question, given what has been read so far.
fn plan(conv: &Conversation, now: Timestamp) -> Step {
    let lang = lang::detect(&conv.question);
    let intent = classify(&conv.question);
    if intent == Intent::Help {
        return Step::Text(with_note(lang, &help(lang)));
    }
    if with_tools::offered(conv) {
        return with_tools::plan(conv, intent, now, lang);
    }
    let (required, optional) = intent.reads();
    for tool in required {
        if let Some(why) = conv.failed.get(*tool) {
            return Step::Text(with_note(lang, &failed_text(tool, why, lang)));
        }
        if !conv.offered.contains(*tool) {
            return Step::Text(with_note(lang, &open_hint(tool, lang)));
        }
    }
    let first = first_reads(intent, conv, now);
    if !first.is_empty() {
        return Step::Read(first);
    }
    let mut fleet = match parse_fleet(conv, lang) {
        Ok(fleet) => fleet,
        Err(text) => return Step::Text(with_note(lang, &text)),
    };
    for tool in optional {
        if !conv.offered.contains(*tool) && *tool != RECORDER {
            fleet.notes.push(match lang {
                Lang::En => format!(
                    "(Not checked: {tool} is not offered; open it with `fleetwatch grants open \
                     {}`.)",
                    category(tool)
                ),
                Lang::Es => format!(
                    "(Sin comprobar: {tool} no se ofrece; ábrelo con `fleetwatch grants open \
                     {}`.)",
                    category(tool)
                ),
            });
        }
    }

    let room = if intent.names_a_room() {
        match find_room(&conv.question, &fleet.devices) {
            RoomMatch::One(d) => Some(d.clone()),
            RoomMatch::Several(list) => {
                let names: Vec<String> = list.iter().map(|d| quoted_label(d, lang)).collect();
                let text = match lang {
                    Lang::En => format!(
                        "I am not sure which room you mean; which one do you mean: {}? Please \
                         name it with its number. Nothing has been proposed.",
                        names.join(", ")
                    ),
                    Lang::Es => format!(
                        "No sé con certeza qué sala quieres decir; ¿cuál de estas: {}? Dime su \
                         nombre con el número. No se ha propuesto nada.",
                        names.join(", ")
                    ),
                };
                return Step::Text(with_note(lang, &text));
            }
            RoomMatch::None(asked) => {
                let text = match lang {
                    Lang::En => format!(
                        "No room in this team matches {}. I checked {} rooms; nothing has been \
                         proposed.",
                        quoted(&asked, lang),
                        fleet.devices.len()
                    ),
                    Lang::Es => format!(
                        "Ninguna sala de este equipo coincide con {}. Revisé {} salas; no se ha \
                         propuesto nada.",
                        quoted(&asked, lang),
                        fleet.devices.len()
                    ),
                };
                return Step::Text(with_note(lang, &text));
            }
            RoomMatch::NotNamed => {
                let text = lang.pick(
                    "Which room do you mean? Please name it, for example “Courtroom 2”.",
                    "¿Qué sala? Dime su nombre, por ejemplo «Sala de Juntas 1».",
                );
                return Step::Text(with_note(lang, text));
            }
        }
    } else {
        None
    };

    // Recorder status depends on the device IDs, so it is the second round of reads.
    if optional.contains(&RECORDER) && conv.offered.contains(RECORDER) && !conv.has(RECORDER) {
        let ids: Vec<String> = match &room {
            Some(d) if d.online => vec![d.id.clone()],
            Some(_) => Vec::new(),
            None => fleet
                .devices
                .iter()
                .filter(|d| d.online)
                .map(|d| d.id.clone())
                .collect(),
        };
        if !ids.is_empty() {
            return Step::Read(
                ids.chunks(MAX_IDS_PER_READ)
                    .map(|chunk| (RECORDER, json!({"device_ids": chunk})))
                    .collect(),
            );
        }
    }

    let step = match (intent, &room) {
        (Intent::Attention, _) => Step::Text(attention(&fleet, now, lang)),
        (Intent::Offline, _) => Step::Text(offline(&fleet, lang)),
        (Intent::Recording, _) => Step::Text(recording(&fleet, lang)),
        (Intent::Upcoming, _) => Step::Text(upcoming(&fleet, now, lang)),
        (Intent::Firmware, _) => Step::Text(firmware(&fleet, lang)),
        (Intent::Ready, Some(d)) => Step::Text(ready(d, &fleet, now, lang)),
        (_, Some(d)) => change(intent, d, &fleet, now, lang),
        _ => Step::Text(help(lang)),
    };
    match step {
        Step::Text(body) => {
            let mut body = body;
            for n in &fleet.notes {
                body.push('\n');
                body.push_str(n);
            }
            Step::Text(with_note(lang, &body))
        }
        Step::Propose {
            tool,
            arguments,
            reason,
        } => propose_or_explain(conv, tool, arguments, reason, lang),
        other => other,
    }
}

/// Proposes only through `propose_change`, and only when it is offered for that tool.
fn propose_or_explain(
    conv: &Conversation,
    tool: &'static str,
    arguments: Value,
    reason: String,
    lang: Lang,
) -> Step {
    let cat = category(tool);
    let Some(proposable) = &conv.proposable else {
        let text = match lang {
            Lang::En => format!(
                "I would propose {tool} with {arguments}, but proposing is off in this session \
                 (propose_change is not offered: proposing is switched off, no fence is set up, \
                 or no proposable category is open — e.g. `fleetwatch grants open {cat}`). \
                 Nothing has been proposed and nothing has changed."
            ),
            Lang::Es => format!(
                "Propondría {tool} con {arguments}, pero proponer cambios está desactivado en \
                 esta sesión (propose_change no se ofrece: proponer está apagado, no hay valla \
                 configurada o ninguna categoría proponible está abierta — p. ej. `fleetwatch \
                 grants open {cat}`). No se ha propuesto nada y nada ha cambiado."
            ),
        };
        return Step::Text(with_note(lang, &text));
    };
    if !proposable.contains(tool) {
        let text = match lang {
            Lang::En => format!(
                "{tool} cannot be proposed right now: its category “{cat}” is closed. The \
                 operator can open it with `fleetwatch grants open {cat}`. Nothing has been \
                 proposed and nothing has changed."
            ),
            Lang::Es => format!(
                "No se puede proponer {tool} ahora: su categoría «{cat}» está cerrada. El \
                 operador puede abrirla con `fleetwatch grants open {cat}`. No se ha propuesto \
                 nada y nada ha cambiado."
            ),
        };
        return Step::Text(with_note(lang, &text));
    }
    let mut reason = reason;
    if reason.chars().count() > MAX_REASON_CHARS {
        reason = reason.chars().take(MAX_REASON_CHARS - 1).collect();
        reason.push('…');
    }
    Step::Propose {
        tool,
        arguments,
        reason,
    }
}

fn relay(is_error: bool, message: &str, lang: Lang) -> String {
    let message: String = message
        .chars()
        .filter(|c| !c.is_control() || *c == '\n')
        .take(600)
        .collect();
    let message = message.trim();
    let refused = is_error || message.starts_with("Not proposed");
    let body = match (refused, lang) {
        (false, Lang::En) => format!(
            "I passed the proposal on. Fleetwatch answered: “{message}”\nNothing has changed: \
             a person decides on the approval page whether it goes ahead."
        ),
        (false, Lang::Es) => format!(
            "He pasado la propuesta. Fleetwatch respondió: «{message}»\nNo ha cambiado nada: \
             una persona decide en la página de aprobación si se lleva a cabo."
        ),
        (true, Lang::En) => format!(
            "The change was not proposed. Fleetwatch answered: “{message}”\nNothing has \
             changed, and I will not try another way around it."
        ),
        (true, Lang::Es) => format!(
            "El cambio no se propuso. Fleetwatch respondió: «{message}»\nNo ha cambiado nada y \
             no intentaré rodearlo de otra forma."
        ),
    };
    with_note(lang, &body)
}

fn help(lang: Lang) -> String {
    lang.pick(
        "I understand a fixed set of questions: what needs attention, what's offline, what's \
         recording, what's coming up, is <room> ready, firmware stragglers; and I can propose: \
         start/stop recording in <room>, start/stop the stream in <room>, reboot <room>, \
         update firmware on <room>, confirm the event in <room>.",
        "Entiendo un conjunto fijo de preguntas: qué necesita atención, qué salas están \
         desconectadas, qué salas están grabando, qué viene después, ¿está lista <sala>?, \
         firmware desactualizado; y puedo proponer: inicia/detén la grabación en <sala>, \
         inicia/detén la transmisión en <sala>, reinicia <sala>, actualiza el firmware de \
         <sala>, confirma el evento en <sala>.",
    )
    .to_owned()
}

// ---------------------------------------------------------------------------------------------
// Read answers: the judgement is `fleetwatch_words`'s, the sentences are this stand-in's.

fn attention(fleet: &Fleet, now: Timestamp, lang: Lang) -> String {
    let findings = triage::attention(&fleet.devices, |id| fleet.event_for(id, now), now);
    if findings.is_empty() {
        return match lang {
            Lang::En => format!(
                "Nothing needs attention right now across {} rooms.",
                fleet.devices.len()
            ),
            Lang::Es => format!(
                "Nada necesita atención ahora mismo en {} salas.",
                fleet.devices.len()
            ),
        };
    }
    let mut out = String::new();
    for urgency in [
        triage::Urgency::First,
        triage::Urgency::Soon,
        triage::Urgency::Convenient,
    ] {
        let items: Vec<String> = findings
            .iter()
            .filter(|f| f.urgency == urgency)
            .map(|f| {
                format!(
                    "- {}: {}\n",
                    quoted_label(f.device, lang),
                    f.phrase(now, lang)
                )
            })
            .collect();
        if !items.is_empty() {
            out.push_str(urgency.heading(lang));
            out.push_str(":\n");
            out.push_str(&items.concat());
        }
    }
    out
}

fn offline(fleet: &Fleet, lang: Lang) -> String {
    let down: Vec<String> = fleet
        .devices
        .iter()
        .filter(|d| !d.online)
        .map(|d| {
            format!(
                "- {}, {}",
                quoted_label(d, lang),
                state::offline_since(d, lang)
            )
        })
        .collect();
    let total = fleet.devices.len();
    if down.is_empty() {
        return match lang {
            Lang::En => format!("All {total} rooms are online."),
            Lang::Es => format!("Las {total} salas están conectadas."),
        };
    }
    let head = match lang {
        Lang::En => format!("{} of {total} rooms are offline:", down.len()),
        Lang::Es => format!("{} de {total} salas están desconectadas:", down.len()),
    };
    format!("{head}\n{}", down.join("\n"))
}

fn recording(fleet: &Fleet, lang: Lang) -> String {
    let lines: Vec<String> = fleet
        .devices
        .iter()
        .filter(|d| d.recording())
        .map(|d| {
            format!(
                "- {} — {} {}",
                quoted_label(d, lang),
                state::channel(lang),
                state::recording_channels(d).join(", ")
            )
        })
        .collect();
    if lines.is_empty() {
        return lang
            .pick(
                "No room is recording right now.",
                "Ninguna sala está grabando ahora.",
            )
            .to_owned();
    }
    let head = match lang {
        Lang::En => format!("{} room(s) recording now:", lines.len()),
        Lang::Es => format!("{} sala(s) grabando ahora:", lines.len()),
    };
    format!("{head}\n{}", lines.join("\n"))
}

fn upcoming(fleet: &Fleet, now: Timestamp, lang: Lang) -> String {
    // The read asked for the next 24 hours; a server that sends more is not repeated as such.
    let horizon = now
        .checked_add(SignedDuration::from_hours(24))
        .unwrap_or(now);
    let mut list: Vec<(&Device, &Event)> = fleet
        .devices
        .iter()
        .filter_map(|d| {
            fleet
                .event_for(&d.id, now)
                .filter(|e| e.start <= horizon)
                .map(|e| (d, e))
        })
        .collect();
    list.sort_by_key(|(_, e)| e.start);
    if list.is_empty() {
        return lang
            .pick(
                "Nothing is on now or scheduled in the next 24 hours.",
                "No hay nada en curso ni programado en las próximas 24 horas.",
            )
            .to_owned();
    }
    let lines: Vec<String> = list
        .iter()
        .map(|(d, e)| {
            let offline = if d.online {
                ""
            } else {
                lang.pick(" — the room is OFFLINE", " — la sala está DESCONECTADA")
            };
            format!(
                "- {}: {}{offline}",
                quoted_label(d, lang),
                event_clause(e, now, lang)
            )
        })
        .collect();
    let head = lang.pick(
        "On now and coming up (next 24 h):",
        "En curso y próximos (24 h):",
    );
    format!("{head}\n{}", lines.join("\n"))
}

fn firmware(fleet: &Fleet, lang: Lang) -> String {
    let behind = stragglers(&fleet.devices);
    if behind.is_empty() {
        return match lang {
            Lang::En => format!(
                "Every room runs the newest firmware seen in its line ({} rooms).",
                fleet.devices.len()
            ),
            Lang::Es => format!(
                "Todas las salas tienen el firmware más reciente de su línea ({} salas).",
                fleet.devices.len()
            ),
        };
    }
    let lines: Vec<String> = behind
        .iter()
        .map(|(d, newest)| match lang {
            Lang::En => format!(
                "- {}: {} (newest seen: {})",
                quoted_label(d, lang),
                shown(&d.firmware),
                shown(newest)
            ),
            Lang::Es => format!(
                "- {}: {} (el más reciente visto: {})",
                quoted_label(d, lang),
                shown(&d.firmware),
                shown(newest)
            ),
        })
        .collect();
    let head = lang.pick(
        "Firmware behind the rest of the fleet:",
        "Firmware desactualizado respecto al resto:",
    );
    format!("{head}\n{}", lines.join("\n"))
}

fn ready(d: &Device, fleet: &Fleet, now: Timestamp, lang: Lang) -> String {
    let mut problems = Vec::new();
    let mut facts = Vec::new();
    if d.online {
        facts.push(lang.pick("online", "conectada").to_owned());
    } else {
        problems.push(lang.pick("it is offline", "está desconectada").to_owned());
    }
    let chans = state::recording_channels(d);
    if !chans.is_empty() {
        facts.push(match lang {
            Lang::En => format!("recording on channel {}", chans.join(", ")),
            Lang::Es => format!("grabando en el canal {}", chans.join(", ")),
        });
    }
    problems.extend(warnings::of_device(d).iter().map(|w| w.phrase(lang)));
    let behind = fleet.newest.clone().or_else(|| {
        stragglers(&fleet.devices)
            .into_iter()
            .find(|(x, _)| x.id == d.id)
            .map(|(_, newest)| newest)
    });
    if let Some(newest) = behind {
        facts.push(match lang {
            Lang::En => format!(
                "firmware {} is behind {}",
                shown(&d.firmware),
                shown(&newest)
            ),
            Lang::Es => format!(
                "el firmware {} está por detrás de {}",
                shown(&d.firmware),
                shown(&newest)
            ),
        });
    }
    if fleet.events_read {
        match fleet.event_for(&d.id, now) {
            Some(e) => facts.push(event_clause(e, now, lang)),
            None => facts.push(
                lang.pick(
                    "nothing scheduled in the next 24 h",
                    "nada programado en las próximas 24 h",
                )
                .to_owned(),
            ),
        }
    }
    let label = quoted_label(d, lang);
    let verdict = match (problems.is_empty(), lang) {
        (true, Lang::En) => format!("{label} looks ready."),
        (true, Lang::Es) => format!("{label} parece lista."),
        (false, Lang::En) => format!("{label} is not ready: {}.", problems.join("; ")),
        (false, Lang::Es) => format!("{label} no está lista: {}.", problems.join("; ")),
    };
    format!("{verdict}\n{}.", facts.join("; "))
}

// ---------------------------------------------------------------------------------------------
// Changes

fn text_step(body: String) -> Step {
    Step::Text(body)
}

fn change(intent: Intent, d: &Device, fleet: &Fleet, now: Timestamp, lang: Lang) -> Step {
    let label = quoted_label(d, lang);
    let name = quoted(&d.name, lang);
    if !d.online {
        return text_step(match lang {
            Lang::En => format!(
                "{label} is offline, so no change can reach it; nothing has been proposed. \
                 Check its power and network first."
            ),
            Lang::Es => format!(
                "{label} está desconectada, así que ningún cambio puede llegarle; no se ha \
                 propuesto nada. Revisa primero su alimentación y su red."
            ),
        });
    }
    // Shown numbers for the sentences; the proposal's arguments take the raw ones.
    let recording = state::recording_channels(d);
    let event = fleet.event_for(&d.id, now);
    match intent {
        Intent::StartRecording => {
            if !recording.is_empty() {
                return text_step(match lang {
                    Lang::En => format!(
                        "{label} is already recording (channel {}); nothing to propose.",
                        recording.join(", ")
                    ),
                    Lang::Es => format!(
                        "{label} ya está grabando (canal {}); no hay nada que proponer.",
                        recording.join(", ")
                    ),
                });
            }
            let Some(channel) = d.channels.first() else {
                return no_channel(&label, lang);
            };
            Step::Propose {
                tool: "batch_recording",
                arguments: json!({"action": "start", "device_ids": [format!("{}-{}", d.id, channel.number)]}),
                reason: match lang {
                    Lang::En => format!(
                        "The operator asked to start recording in {name}; it is online and not \
                         recording. Channel {} is its first channel.",
                        shown(&channel.number)
                    ),
                    Lang::Es => format!(
                        "El operador pidió iniciar la grabación en {name}; está conectada y no \
                         graba. El canal {} es su primer canal.",
                        shown(&channel.number)
                    ),
                },
            }
        }
        Intent::StopRecording => {
            let Some(channel) = d.channels.iter().find(|c| c.recording).map(|c| &c.number) else {
                return text_step(match lang {
                    Lang::En => format!("{label} is not recording; nothing to stop."),
                    Lang::Es => format!("{label} no está grabando; no hay nada que detener."),
                });
            };
            let during = event
                .filter(|e| is_on(e, now))
                .map(|e| match lang {
                    Lang::En => format!(" Note: {}.", event_clause(e, now, lang)),
                    Lang::Es => format!(" Aviso: {}.", event_clause(e, now, lang)),
                })
                .unwrap_or_default();
            Step::Propose {
                tool: "batch_recording",
                arguments: json!({"action": "stop", "device_ids": [format!("{}-{}", d.id, channel)]}),
                reason: match lang {
                    Lang::En => format!(
                        "The operator asked to stop recording in {name}; channel {} is \
                         recording.{during}",
                        shown(channel)
                    ),
                    Lang::Es => format!(
                        "El operador pidió detener la grabación en {name}; el canal {} está \
                         grabando.{during}",
                        shown(channel)
                    ),
                },
            }
        }
        Intent::StopStream => {
            let streams = publishers(d);
            let Some((channel, stream, _)) = streams.iter().find(|(_, _, active)| *active) else {
                return text_step(match lang {
                    Lang::En => format!("{label} has no stream running; nothing to stop."),
                    Lang::Es => format!(
                        "{label} no tiene ninguna transmisión en marcha; no hay nada que \
                         detener."
                    ),
                });
            };
            Step::Propose {
                tool: "stop_stream_endpoint",
                arguments: json!({"stream_id": stream, "device_id": d.id, "channel_id": channel}),
                reason: match lang {
                    Lang::En => format!(
                        "The operator asked to stop the stream in {name}; channel {} is \
                         streaming to destination {stream}.",
                        shown(channel)
                    ),
                    Lang::Es => format!(
                        "El operador pidió detener la transmisión en {name}; el canal {} \
                         transmite al destino {stream}.",
                        shown(channel)
                    ),
                },
            }
        }
        Intent::StartStream => start_stream(d, fleet, lang),
        Intent::Reboot | Intent::UpdateFirmware => {
            let (tool, what_en, what_es) = if intent == Intent::Reboot {
                ("batch_reboot", "reboot", "reiniciar")
            } else {
                (
                    "batch_firmware_update",
                    "update the firmware of",
                    "actualizar el firmware de",
                )
            };
            let mut caution = String::new();
            if !recording.is_empty() {
                caution.push_str(&match lang {
                    Lang::En => format!(" It is recording (channel {}).", recording.join(", ")),
                    Lang::Es => format!(" Está grabando (canal {}).", recording.join(", ")),
                });
            }
            if let Some(e) = event {
                caution.push_str(&match lang {
                    Lang::En => format!(" Schedule: {}.", event_clause(e, now, lang)),
                    Lang::Es => format!(" Agenda: {}.", event_clause(e, now, lang)),
                });
            }
            let firmware = if intent == Intent::UpdateFirmware {
                match lang {
                    Lang::En => format!(" Current firmware {}.", shown(&d.firmware)),
                    Lang::Es => format!(" Firmware actual {}.", shown(&d.firmware)),
                }
            } else {
                String::new()
            };
            Step::Propose {
                tool,
                arguments: json!({"device_ids": [d.id]}),
                reason: match lang {
                    Lang::En => {
                        format!("The operator asked to {what_en} {name}.{firmware}{caution}")
                    }
                    Lang::Es => format!("El operador pidió {what_es} {name}.{firmware}{caution}"),
                },
            }
        }
        Intent::ConfirmEvent => {
            let Some(e) = event else {
                return text_step(match lang {
                    Lang::En => format!(
                        "{label} has no event on now or in the next 24 hours; nothing to \
                         confirm."
                    ),
                    Lang::Es => format!(
                        "{label} no tiene ningún evento en curso ni en las próximas 24 horas; \
                         no hay nada que confirmar."
                    ),
                });
            };
            Step::Propose {
                tool: "confirm_cms_event_on_device",
                arguments: json!({"device_id": d.id, "event_id": e.id}),
                reason: match lang {
                    Lang::En => format!(
                        "The operator asked to confirm the event in {name}: {}.",
                        event_clause(e, now, lang)
                    ),
                    Lang::Es => format!(
                        "El operador pidió confirmar el evento en {name}: {}.",
                        event_clause(e, now, lang)
                    ),
                },
            }
        }
        _ => text_step(help(lang)),
    }
}

fn no_channel(label: &str, lang: Lang) -> Step {
    Step::Text(match lang {
        Lang::En => format!("{label} reports no channels, so there is nothing to record on."),
        Lang::Es => format!("{label} no informa de ningún canal; no hay dónde grabar."),
    })
}

/// A stream to start: a stopped stream already set up on one of the room's channels, else the
/// one destination whose name names the room, else the team's only destination.
fn start_stream(d: &Device, fleet: &Fleet, lang: Lang) -> Step {
    let label = quoted_label(d, lang);
    let name = quoted(&d.name, lang);
    let streams = publishers(d);
    if let Some((channel, stream, _)) = streams.iter().find(|(_, _, active)| *active) {
        return Step::Text(match lang {
            Lang::En => format!(
                "{label} is already streaming on channel {} (destination {stream}); nothing \
                 to start.",
                shown(channel)
            ),
            Lang::Es => format!(
                "{label} ya está transmitiendo en el canal {} (destino {stream}); no hay nada \
                 que iniciar.",
                shown(channel)
            ),
        });
    }
    let chosen: Option<(String, String, String)> =
        if let Some((channel, stream, _)) = streams.first() {
            Some((channel.clone(), stream.clone(), String::new()))
        } else {
            let Some(channel) = d.channels.first() else {
                return no_channel(&label, lang);
            };
            let Some(endpoints) = &fleet.endpoints else {
                return Step::Text(match &fleet.streams_failed {
                    Some(why) => failed_text(STREAMS, why, lang),
                    None => open_hint(STREAMS, lang),
                });
            };
            let room_toks = tokens(&d.name);
            // The destination's name must hold the whole room name, numbers included, so
            // "Studio 1" never picks "Studio 12"'s destination.
            let named: Vec<&StreamEndpoint> = endpoints
                .iter()
                .filter(|e| {
                    !room_toks.is_empty()
                        && tokens(&e.name)
                            .windows(room_toks.len())
                            .any(|w| w == room_toks.as_slice())
                })
                .collect();
            let pick = match (named.as_slice(), endpoints.as_slice()) {
                ([one], _) => Some(*one),
                ([], [only]) => Some(only),
                _ => None,
            };
            match pick {
                Some(e) => Some((channel.number.clone(), e.id.clone(), shown(&e.name))),
                None => {
                    let names: Vec<String> = endpoints
                        .iter()
                        .map(|e| format!("{} ({})", quoted(&e.name, lang), e.id))
                        .collect();
                    return Step::Text(match lang {
                        Lang::En => format!(
                            "{label} has no stream set up, and I cannot tell which destination \
                             to use. Destinations: {}. Nothing has been proposed.",
                            if names.is_empty() {
                                "none".to_owned()
                            } else {
                                names.join(", ")
                            }
                        ),
                        Lang::Es => format!(
                            "{label} no tiene ninguna transmisión configurada y no sé qué \
                             destino usar. Destinos: {}. No se ha propuesto nada.",
                            if names.is_empty() {
                                "ninguno".to_owned()
                            } else {
                                names.join(", ")
                            }
                        ),
                    });
                }
            }
        };
    let Some((channel, stream, destination)) = chosen else {
        return no_channel(&label, lang);
    };
    let dest = if destination.is_empty() {
        stream.clone()
    } else {
        format!("{destination} ({stream})")
    };
    Step::Propose {
        tool: "start_stream_endpoint",
        arguments: json!({"stream_id": stream, "device_id": d.id, "channel_id": channel}),
        reason: match lang {
            Lang::En => format!(
                "The operator asked to start the stream in {name}: channel {} to destination \
                 {dest}.",
                shown(&channel)
            ),
            Lang::Es => format!(
                "El operador pidió iniciar la transmisión en {name}: canal {} al destino \
                 {dest}.",
                shown(&channel)
            ),
        },
    }
}

// ---------------------------------------------------------------------------------------------
// Replies

/// Builds the content and stop reason for one request; `Err` for a body the real API would
/// refuse as an invalid request.
pub(crate) fn respond(
    body: &Value,
    now: Timestamp,
    next_id: &mut dyn FnMut() -> String,
) -> Result<(Value, &'static str), &'static str> {
    let conv = Conversation::from_request(body)?;
    let lang = lang::detect(&conv.question);
    if let Some((is_error, message)) = &conv.proposal {
        let text = relay(*is_error, message, lang);
        return Ok((json!([{"type": "text", "text": text}]), "end_turn"));
    }
    Ok(match plan(&conv, now) {
        Step::Text(text) => (json!([{"type": "text", "text": text}]), "end_turn"),
        Step::Read(calls) => (
            Value::Array(
                calls
                    .into_iter()
                    .map(|(name, input)| {
                        json!({"type": "tool_use", "id": next_id(), "name": name, "input": input})
                    })
                    .collect(),
            ),
            "tool_use",
        ),
        Step::Propose {
            tool,
            arguments,
            reason,
        } => (
            json!([{
                "type": "tool_use",
                "id": next_id(),
                "name": PROPOSE,
                "input": {"tool": tool, "arguments": arguments, "reason": reason},
            }]),
            "tool_use",
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intents_in_both_languages() {
        let cases = [
            ("What needs attention?", Intent::Attention),
            ("¿Qué necesita atención?", Intent::Attention),
            ("What's offline?", Intent::Offline),
            ("¿Qué salas están desconectadas?", Intent::Offline),
            ("What's recording?", Intent::Recording),
            ("¿Qué salas están grabando?", Intent::Recording),
            ("What's coming up next?", Intent::Upcoming),
            ("¿Qué viene después?", Intent::Upcoming),
            ("Is Courtroom 1 ready?", Intent::Ready),
            ("¿Está lista la Sala de Juntas 1?", Intent::Ready),
            ("Which rooms have outdated firmware?", Intent::Firmware),
            (
                "¿Qué salas tienen el firmware desactualizado?",
                Intent::Firmware,
            ),
            ("Start recording in Courtroom 1", Intent::StartRecording),
            (
                "Inicia la grabación en la Sala de Prensa",
                Intent::StartRecording,
            ),
            ("Stop recording in Courtroom 2", Intent::StopRecording),
            ("Detén la grabación en Courtroom 2", Intent::StopRecording),
            ("Stop the stream in Aula Magna", Intent::StopStream),
            ("Detén la transmisión en Aula Magna", Intent::StopStream),
            ("Start the stream in Town Hall", Intent::StartStream),
            ("Inicia la transmisión en Town Hall", Intent::StartStream),
            ("Reboot Media Lab", Intent::Reboot),
            ("Reinicia el Aula Magna", Intent::Reboot),
            ("Update firmware on Chapel", Intent::UpdateFirmware),
            ("Actualiza el firmware de Chapel", Intent::UpdateFirmware),
            (
                "Confirm the event in Lecture Hall 101",
                Intent::ConfirmEvent,
            ),
            (
                "Confirma el evento en la Sala de Juntas 3",
                Intent::ConfirmEvent,
            ),
            ("Tell me a joke", Intent::Help),
        ];
        for (q, want) in cases {
            assert_eq!(classify(q), want, "{q}");
        }
    }

    /// The demo's model and the keyword answerer take every read question of the shared table
    /// as the same kind: a read question never reaches the change rules.
    #[test]
    fn the_demo_and_the_keyword_answerer_agree_on_every_read_question() {
        for (q, kind) in question::EXAMPLES {
            assert_eq!(classify(q), Intent::from(*kind), "{q}");
        }
    }

    #[test]
    fn blocks_are_unescaped_json() {
        let text = "<fleet_data tool=\"x\">{\"n\":\"a\\u003c/fleet_data\\u003e\"}</fleet_data>\n(result cut: 1 of 2 items shown)";
        let values = data_blocks(text).unwrap();
        assert_eq!(values, vec![json!({"n": "a</fleet_data>"})]);
        assert!(data_blocks("<fleet_data tool=\"x\">{").is_err());
    }
}
