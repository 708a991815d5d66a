//! Answers without a model: a handful of fixed questions about the fleet, recognised by
//! keywords, answered in the question's language (English or Spanish).
//!
//! This path is read-only by construction: it gets a [`Snapshot`] and returns text, and has no
//! handle on proposals, the executor or the network. That is what makes it safe as the
//! fallback when there is no model key or a model call fails.
//!
//! Names of devices, channels and events are data written by whoever runs the fleet. They are
//! printed as-is except that characters which could rearrange a terminal line (controls, bidi
//! overrides, zero-width marks, line separators) are shown as `\u{XXXX}`, so a name can never
//! start a line of its own or pass itself off as a heading.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use fleetwatch_protocol::fleet::{self, Device, Event, Warning};

use crate::lang::{self, Lang};
use crate::snapshot::Snapshot;

/// An offline room, or a signal problem, counts as "fix first" when its event is on now or
/// starts within this many minutes: long enough to walk over and fix it before it matters.
pub const SOON_MINUTES: i64 = 120;

/// Longest name shown, in characters (ellipsis included).
pub const NAME_CAP: usize = 80;

/// Answers `question` from `snap`, in the question's language.
pub fn answer(question: &str, snap: &Snapshot) -> String {
    let lang = lang::detect(question);
    let words = lang::words(question);
    let intent = classify(&words);
    if intent == Intent::Help {
        // A bare room name ("Room 12?") is taken as "is Room 12 ready?"; anything else that
        // names no room gets the help text.
        return match find_room(question, &snap.devices) {
            RoomMatch::One(device) => readiness(device, snap, lang),
            RoomMatch::Several(devices) => ambiguous(&devices, lang),
            RoomMatch::NotNamed | RoomMatch::None(_) => help(lang),
        };
    }
    if snap.devices.is_empty() {
        return match lang {
            Lang::En => "The team has no devices.".to_owned(),
            Lang::Es => "El equipo no tiene dispositivos.".to_owned(),
        };
    }
    match intent {
        Intent::Ready => match find_room(question, &snap.devices) {
            RoomMatch::One(device) => readiness(device, snap, lang),
            RoomMatch::Several(devices) => ambiguous(&devices, lang),
            RoomMatch::None(asked) => no_room(&asked, lang),
            RoomMatch::NotNamed => match lang {
                Lang::En => {
                    "Which room? Ask for example “is Room 12 ready for its next event?”".to_owned()
                }
                Lang::Es => "¿Qué sala? Pregunta por ejemplo «¿está lista la Sala 12 para su \
                             próximo evento?»"
                    .to_owned(),
            },
        },
        Intent::Firmware => firmware(snap, lang),
        Intent::Offline => offline(snap, lang),
        Intent::Recording => recording(snap, lang),
        Intent::Upcoming => upcoming(snap, lang),
        Intent::Attention => attention(snap, lang),
        Intent::Help => help(lang),
    }
}

/// The help text: what the keyword answerer can answer.
pub fn help(lang: Lang) -> String {
    match lang {
        Lang::En => "I can answer these (read-only; nothing is changed):\n\
                     - what needs attention? (Fix first / Fix soon / When convenient)\n\
                     - what's offline?\n\
                     - what's recording?\n\
                     - what's coming up next?\n\
                     - is <room> ready for its next event?\n\
                     - which devices have outdated firmware?"
            .to_owned(),
        Lang::Es => "Puedo responder esto (solo lectura; no se cambia nada):\n\
                     - ¿qué necesita atención? (Arreglar primero / Arreglar pronto / Cuando convenga)\n\
                     - ¿qué salas están desconectadas?\n\
                     - ¿qué está grabando?\n\
                     - ¿cuáles son los próximos eventos?\n\
                     - ¿está lista <sala> para su próximo evento?\n\
                     - ¿qué equipos tienen firmware desactualizado?"
            .to_owned(),
    }
}

// ---------------------------------------------------------------------------------------------
// Recognising the question

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Intent {
    Ready,
    Firmware,
    Offline,
    Recording,
    Upcoming,
    Attention,
    Help,
}

const READY_WORDS: &[&str] = &[
    "ready",
    "prepared",
    "lista",
    "listo",
    "listas",
    "listos",
    "preparada",
    "preparado",
    "preparadas",
    "preparados",
];
const FIRMWARE_WORDS: &[&str] = &[
    "firmware",
    "outdated",
    "straggler",
    "stragglers",
    "version",
    "versions",
    "versiones",
];
const FIRMWARE_STEMS: &[&str] = &["desactualiz"];
const OFFLINE_WORDS: &[&str] = &[
    "offline",
    "disconnected",
    "unreachable",
    "down",
    "desconectado",
    "desconectada",
];
const OFFLINE_STEMS: &[&str] = &["desconectad", "apagad", "caid"];
const OFFLINE_PHRASES: &[&str] = &[
    "not online",
    "fuera de linea",
    "sin conexion",
    "no conectad",
    "not connected",
];
const RECORDING_WORDS: &[&str] = &[
    "recording",
    "recordings",
    "record",
    "records",
    "grabando",
    "graba",
    "grabar",
    "grabacion",
    "grabaciones",
    "graban",
];
const UPCOMING_WORDS: &[&str] = &[
    "next",
    "upcoming",
    "coming",
    "schedule",
    "scheduled",
    "events",
    "event",
    "soon",
    "agenda",
    "siguiente",
    "siguientes",
    "evento",
    "eventos",
    "viene",
    "vienen",
];
const UPCOMING_STEMS: &[&str] = &["proxim", "programad"];
const ATTENTION_WORDS: &[&str] = &[
    "attention",
    "fix",
    "problem",
    "problems",
    "issue",
    "issues",
    "wrong",
    "triage",
    "broken",
    "health",
    "atencion",
    "arreglar",
    "problema",
    "problemas",
    "revisar",
    "falla",
    "fallas",
    "mal",
    "urgente",
];

fn has_any(words: &[String], list: &[&str], stems: &[&str]) -> bool {
    words
        .iter()
        .any(|w| list.contains(&w.as_str()) || stems.iter().any(|stem| w.starts_with(stem)))
}

fn classify(words: &[String]) -> Intent {
    let joined = format!(" {} ", words.join(" "));
    // Most specific first: "is Room 5 ready for its next event?" is about readiness, not
    // about what is next; "which rooms are recording next?" is about recording.
    if has_any(words, READY_WORDS, &[]) {
        Intent::Ready
    } else if has_any(words, FIRMWARE_WORDS, FIRMWARE_STEMS) {
        Intent::Firmware
    } else if has_any(words, OFFLINE_WORDS, OFFLINE_STEMS)
        || OFFLINE_PHRASES
            .iter()
            .any(|p| joined.contains(&format!(" {p}")))
    {
        Intent::Offline
    } else if has_any(words, RECORDING_WORDS, &[]) {
        Intent::Recording
    } else if has_any(words, UPCOMING_WORDS, UPCOMING_STEMS) {
        Intent::Upcoming
    } else if has_any(words, ATTENTION_WORDS, &[]) {
        Intent::Attention
    } else {
        Intent::Help
    }
}

// ---------------------------------------------------------------------------------------------
// Matching a room by name

/// The outcome of looking a room up by the words of a question.
#[derive(Debug)]
pub enum RoomMatch<'a> {
    /// Exactly one device fits best.
    One(&'a Device),
    /// Several fit equally well.
    Several(Vec<&'a Device>),
    /// Nothing fits; the words that were looked for (normalised, safe to print).
    None(String),
    /// The question names no room at all.
    NotNamed,
}

/// Words that belong to the question, not to a room name.
const QUESTION_WORDS: &[&str] = &[
    "is",
    "happening",
    "at",
    "info",
    "pasa",
    "con",
    "hay",
    "sobre",
    "tal",
    "estado",
    "are",
    "the",
    "a",
    "an",
    "for",
    "its",
    "it",
    "next",
    "event",
    "events",
    "ready",
    "what",
    "whats",
    "which",
    "how",
    "about",
    "to",
    "of",
    "on",
    "my",
    "our",
    "upcoming",
    "up",
    "coming",
    "check",
    "tell",
    "me",
    "please",
    "there",
    "status",
    "with",
    "and",
    "today",
    "now",
    "prepared",
    "going",
    "be",
    "will",
    "ok",
    "okay",
    "good",
    "go",
    "esta",
    "estan",
    "lista",
    "listo",
    "listas",
    "listos",
    "la",
    "el",
    "los",
    "las",
    "su",
    "sus",
    "para",
    "de",
    "del",
    "proximo",
    "proxima",
    "evento",
    "eventos",
    "que",
    "cual",
    "como",
    "preparada",
    "preparado",
    "ya",
    "hoy",
    "ahora",
    "por",
    "favor",
    "y",
    "doing",
    "in",
    "en",
];

/// Words that say "a room" without naming one: they may match a name but need not.
const GENERIC_WORDS: &[&str] = &[
    "room",
    "rooms",
    "sala",
    "salas",
    "aula",
    "device",
    "equipo",
    "dispositivo",
];

/// Splits normalised text into words and numbers; "Room12" and "9A" are split at the switch
/// between letters and digits so the number stands on its own.
fn tokens(text: &str) -> (Vec<String>, Vec<String>) {
    let mut words = Vec::new();
    let mut numbers = Vec::new();
    for word in lang::words(text) {
        let mut current = String::new();
        let mut digits = false;
        for c in word.chars() {
            let is_digit = c.is_ascii_digit();
            if !current.is_empty() && is_digit != digits {
                push_token(
                    &mut words,
                    &mut numbers,
                    std::mem::take(&mut current),
                    digits,
                );
            }
            digits = is_digit;
            current.push(c);
        }
        if !current.is_empty() {
            push_token(&mut words, &mut numbers, current, digits);
        }
    }
    (words, numbers)
}

fn push_token(words: &mut Vec<String>, numbers: &mut Vec<String>, token: String, digits: bool) {
    if digits {
        // "09" and "9" are the same room number; "99" and "9" never are.
        let trimmed = token.trim_start_matches('0');
        numbers.push(if trimmed.is_empty() {
            "0".to_owned()
        } else {
            trimmed.to_owned()
        });
    } else {
        words.push(token);
    }
}

/// Optimal-string-alignment distance (a swap of two neighbours counts as one edit).
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        if let Some(first) = row.first_mut() {
            *first = i;
        }
    }
    if let Some(first) = rows.first_mut() {
        for (j, cell) in first.iter_mut().enumerate() {
            *cell = j;
        }
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = best;
        }
    }
    rows[a.len()][b.len()]
}

/// How well a question word fits a name word: 3 exact, 2 part of a longer name word
/// ("court" in "courtroom", never "room" asked as "courtroom"), 1 a small
/// typo, 0 no fit. Short words must be exact: "a" and "b" are different rooms.
fn word_fit(asked: &str, name: &str) -> u32 {
    if asked == name {
        return 3;
    }
    let (la, ln) = (asked.chars().count(), name.chars().count());
    if la >= 4 && ln >= 4 && name.contains(asked) {
        return 2;
    }
    let shorter = la.min(ln);
    let allowed = if shorter >= 8 {
        2
    } else if shorter >= 4 {
        1
    } else {
        0
    };
    if allowed > 0 && edit_distance(asked, name) <= allowed {
        1
    } else {
        0
    }
}

/// Finds the room a question names. Numbers must agree exactly ("room 999" never finds
/// "Room 99" or "Room 9"); words may differ in case, accents, punctuation, order and small
/// typos.
pub fn find_room<'a>(question: &str, devices: &'a [Device]) -> RoomMatch<'a> {
    let (words, numbers) = tokens(question);
    let asked: Vec<String> = words
        .into_iter()
        .filter(|w| !QUESTION_WORDS.contains(&w.as_str()))
        .collect();
    let required: Vec<&String> = asked
        .iter()
        .filter(|w| !GENERIC_WORDS.contains(&w.as_str()))
        .collect();
    if required.is_empty() && numbers.is_empty() {
        return RoomMatch::NotNamed;
    }
    let mut asked_numbers = numbers.clone();
    asked_numbers.sort();
    asked_numbers.dedup();

    let mut best: Vec<(&Device, (u32, i64))> = Vec::new();
    for device in devices {
        let Some((name_numbers, key)) = word_score(&asked, device) else {
            continue;
        };
        if name_numbers != asked_numbers {
            continue;
        }
        match best.first().map(|(_, k)| key.cmp(k)) {
            None | Some(Ordering::Equal) => best.push((device, key)),
            Some(Ordering::Greater) => best = vec![(device, key)],
            Some(Ordering::Less) => {}
        }
    }
    match best.len() {
        0 if asked_numbers.is_empty() => {
            // "is the courtroom ready?" names no number while the rooms have one: offer every
            // room whose words fit and let the operator pick, rather than choosing for them.
            let candidates: Vec<&Device> = devices
                .iter()
                .filter(|d| word_score(&asked, d).is_some())
                .collect();
            if candidates.is_empty() {
                RoomMatch::None(shown(&asked.join(" ")))
            } else {
                RoomMatch::Several(candidates)
            }
        }
        0 => {
            let mut words: Vec<String> = asked;
            words.extend(numbers);
            RoomMatch::None(shown(&words.join(" ")))
        }
        1 => RoomMatch::One(best[0].0),
        _ => RoomMatch::Several(best.into_iter().map(|(d, _)| d).collect()),
    }
}

/// How well the question's words fit a device name, ignoring numbers: `None` when a word that
/// names something is missing from the name; otherwise the name's numbers (sorted) and a sort
/// key (higher fits better: more and closer matches, fewer name words left over).
fn word_score(asked: &[String], device: &Device) -> Option<(Vec<String>, (u32, i64))> {
    let (name_words, mut name_numbers) = tokens(&device.name);
    name_numbers.sort();
    name_numbers.dedup();
    let mut score = 3 * u32::try_from(name_numbers.len()).unwrap_or(u32::MAX);
    let mut used = vec![false; name_words.len()];
    for word in asked {
        let fit = name_words
            .iter()
            .enumerate()
            .map(|(i, n)| (i, word_fit(word, n)))
            .max_by_key(|&(_, fit)| fit)
            .filter(|&(_, fit)| fit > 0);
        match fit {
            Some((i, fit)) => {
                score += fit;
                used[i] = true;
            }
            None if GENERIC_WORDS.contains(&word.as_str()) => {}
            None => return None,
        }
    }
    let unmatched = used.iter().filter(|u| !**u).count();
    Some((
        name_numbers,
        (score, -i64::try_from(unmatched).unwrap_or(i64::MAX)),
    ))
}

fn no_room(asked: &str, lang: Lang) -> String {
    match lang {
        Lang::En => format!("No room matches “{asked}”."),
        Lang::Es => format!("Ninguna sala coincide con «{asked}»."),
    }
}

fn ambiguous(devices: &[&Device], lang: Lang) -> String {
    let list: Vec<String> = devices.iter().map(|d| label(d)).collect();
    match lang {
        Lang::En => format!("Which room do you mean: {}?", list.join(", ")),
        Lang::Es => format!("¿Qué sala quieres decir: {}?", list.join(", ")),
    }
}

// ---------------------------------------------------------------------------------------------
// Showing data safely

/// True for characters that could break or disguise a terminal line.
fn hazardous(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{00AD}' | '\u{061C}' | '\u{180E}'
            | '\u{200B}'..='\u{200F}'
            | '\u{2028}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}'
            | '\u{FEFF}'
            | '\u{FFF9}'..='\u{FFFB}')
}

/// A name (or any fleet-supplied text) made safe for one terminal line: hazardous characters
/// shown as `\u{XXXX}`, at most [`NAME_CAP`] characters with an ellipsis when cut.
pub fn shown(text: &str) -> String {
    let pieces: Vec<String> = text
        .chars()
        .map(|c| {
            if hazardous(c) {
                format!("\\u{{{:04X}}}", u32::from(c))
            } else {
                c.to_string()
            }
        })
        .collect();
    let total: usize = pieces.iter().map(|p| p.chars().count()).sum();
    if total <= NAME_CAP {
        return pieces.concat();
    }
    // Cut on whole pieces so an escape is never split in half.
    let mut out = String::new();
    let mut used = 0;
    for piece in pieces {
        let len = piece.chars().count();
        if used + len > NAME_CAP - 1 {
            break;
        }
        used += len;
        out.push_str(&piece);
    }
    out.push('…');
    out
}

/// "Name (id)", or just the ID when the name is blank.
fn label(device: &Device) -> String {
    if device.name.trim().is_empty() {
        shown(&device.id)
    } else {
        format!("{} ({})", shown(&device.name), shown(&device.id))
    }
}

fn quoted(text: &str, lang: Lang) -> String {
    match lang {
        Lang::En => format!("“{}”", shown(text)),
        Lang::Es => format!("«{}»", shown(text)),
    }
}

fn warning_text(w: &Warning, lang: Lang) -> String {
    if w.label.trim().is_empty() {
        shown(&w.id)
    } else {
        format!("{} {}", shown(&w.id), quoted(&w.label, lang))
    }
}

// ---------------------------------------------------------------------------------------------
// Time

fn duration(minutes: i64) -> String {
    if minutes < 60 {
        format!("{minutes} min")
    } else if minutes < 24 * 60 {
        let (h, m) = (minutes / 60, minutes % 60);
        if m == 0 {
            format!("{h} h")
        } else {
            format!("{h} h {m} min")
        }
    } else {
        let (d, h) = (minutes / (24 * 60), minutes % (24 * 60) / 60);
        if h == 0 {
            format!("{d} d")
        } else {
            format!("{d} d {h} h")
        }
    }
}

/// "in 25 min" / "10 min ago" (rounded up for the future, so "in 0 min" never appears for
/// something that has not started).
fn relative(t: jiff::Timestamp, now: jiff::Timestamp, lang: Lang) -> String {
    let seconds = t.as_second() - now.as_second();
    if seconds > 0 {
        let minutes = (seconds + 59) / 60;
        match lang {
            Lang::En => format!("in {}", duration(minutes)),
            Lang::Es => format!("en {}", duration(minutes)),
        }
    } else {
        let minutes = -seconds / 60;
        match lang {
            Lang::En => format!("{} ago", duration(minutes)),
            Lang::Es => format!("hace {}", duration(minutes)),
        }
    }
}

/// Wall-clock time in UTC; the date is added when it is a day or more away.
fn clock(t: jiff::Timestamp, now: jiff::Timestamp) -> String {
    if (t.as_second() - now.as_second()).abs() < 24 * 3600 {
        format!("{} UTC", t.strftime("%H:%M"))
    } else {
        format!("{} UTC", t.strftime("%Y-%m-%d %H:%M"))
    }
}

/// Whether an event is still on or ahead. One with no end counts as on for
/// [`fleet::OPEN_EVENT_MINUTES`] after its start, the same rule the disruptive window uses, so
/// the two never disagree about whether a room is busy.
fn not_ended(e: &Event, now: jiff::Timestamp) -> bool {
    match e.end {
        Some(end) => end > now,
        None => e.start.as_second() + fleet::OPEN_EVENT_MINUTES * 60 > now.as_second(),
    }
}

/// The event of a device that has not ended yet.
fn live_or_next<'a>(snap: &'a Snapshot, id: &str) -> Option<&'a Event> {
    snap.event_for(id).filter(|e| not_ended(e, snap.now))
}

fn is_on_now(e: &Event, now: jiff::Timestamp) -> bool {
    e.start <= now
}

fn starts_soon(e: &Event, now: jiff::Timestamp) -> bool {
    e.start.as_second() - now.as_second() <= SOON_MINUTES * 60
}

/// "“Lecture” in 25 min (20:33 UTC)" or "“Lecture” on now (started 10 min ago)".
fn event_text(e: &Event, now: jiff::Timestamp, lang: Lang) -> String {
    let title = quoted(&e.title, lang);
    if is_on_now(e, now) {
        match lang {
            Lang::En => format!("{title} on now (started {})", relative(e.start, now, lang)),
            Lang::Es => format!("{title} en curso (empezó {})", relative(e.start, now, lang)),
        }
    } else {
        format!(
            "{title} {} ({})",
            relative(e.start, now, lang),
            clock(e.start, now)
        )
    }
}

// ---------------------------------------------------------------------------------------------
// Warnings and firmware

fn is_storage(id: &str) -> bool {
    matches!(id, "disk_space_error" | "no_storage_detected")
        || id.contains("storage")
        || id.contains("disk")
}

fn is_signal(id: &str) -> bool {
    matches!(id, "source_no_signal" | "channel_no_signal") || id.contains("no_signal")
}

/// Every warning of a device with the channel it is on (`None` for the device itself).
fn warnings(device: &Device) -> Vec<(Option<&str>, &Warning)> {
    let mut all: Vec<(Option<&str>, &Warning)> =
        device.warnings.iter().map(|w| (None, w)).collect();
    for channel in &device.channels {
        all.extend(
            channel
                .warnings
                .iter()
                .map(|w| (Some(channel.number.as_str()), w)),
        );
    }
    all
}

fn channel_warning_text(channel: Option<&str>, w: &Warning, lang: Lang) -> String {
    match (channel, lang) {
        (None, _) => warning_text(w, lang),
        (Some(n), Lang::En) => format!("channel {}: {}", shown(n), warning_text(w, lang)),
        (Some(n), Lang::Es) => format!("canal {}: {}", shown(n), warning_text(w, lang)),
    }
}

/// A firmware version as numbers for ordering; `None` when it has no digits at all.
fn version_key(version: &str) -> Option<Vec<u64>> {
    let parts: Vec<u64> = version
        .split(|c: char| !c.is_ascii_digit())
        .filter(|p| !p.is_empty())
        .map(|p| p.parse::<u64>().unwrap_or(u64::MAX))
        .collect();
    if parts.is_empty() { None } else { Some(parts) }
}

/// The firmware line a model belongs to. Every Pearl (Mini, Nano, Nexus, Pearl-2) runs the
/// same numbered firmware, so they are measured against each other; any other model (EC20,
/// Venue, …) has its own numbering and is only compared with itself.
fn firmware_line(model: &str) -> String {
    if lang::normalize(model).trim_start().starts_with("pearl") {
        "Pearl".to_owned()
    } else {
        model.trim().to_owned()
    }
}

/// The newest firmware seen per firmware line.
fn newest_firmware(devices: &[Device]) -> BTreeMap<String, (&str, Vec<u64>)> {
    let mut newest: BTreeMap<String, (&str, Vec<u64>)> = BTreeMap::new();
    for d in devices {
        let Some(key) = version_key(&d.firmware) else {
            continue;
        };
        let line = firmware_line(&d.model);
        match newest.get(&line) {
            Some((_, best)) if *best >= key => {}
            _ => {
                newest.insert(line, (d.firmware.as_str(), key));
            }
        }
    }
    newest
}

/// The newest version of the device's firmware line when the device is behind it.
fn firmware_behind<'a>(
    d: &Device,
    newest: &BTreeMap<String, (&'a str, Vec<u64>)>,
) -> Option<&'a str> {
    let key = version_key(&d.firmware)?;
    let (version, best) = newest.get(&firmware_line(&d.model))?;
    (key < *best).then_some(*version)
}

// ---------------------------------------------------------------------------------------------
// The answers

fn readiness(device: &Device, snap: &Snapshot, lang: Lang) -> String {
    let all = warnings(device);
    let storage: Vec<String> = all
        .iter()
        .filter(|(_, w)| is_storage(&w.id))
        .map(|(c, w)| channel_warning_text(*c, w, lang))
        .collect();
    let signal: Vec<String> = all
        .iter()
        .filter(|(_, w)| is_signal(&w.id))
        .map(|(c, w)| channel_warning_text(*c, w, lang))
        .collect();
    let ready = device.online && storage.is_empty() && signal.is_empty();
    let event = live_or_next(snap, &device.id);
    let recording: Vec<String> = device
        .channels
        .iter()
        .filter(|c| c.recording)
        .map(|c| shown(&c.number))
        .collect();

    let mut out = Vec::new();
    let since = device.state_time.as_deref().map(shown);
    match lang {
        Lang::En => {
            out.push(format!(
                "{}: {}",
                label(device),
                if ready { "ready." } else { "NOT ready." }
            ));
            out.push(match (device.online, since) {
                (true, _) => "- Online: yes".to_owned(),
                (false, Some(t)) => format!("- Online: no (offline since {t})"),
                (false, None) => "- Online: no".to_owned(),
            });
            out.push(if storage.is_empty() {
                "- Storage: OK".to_owned()
            } else {
                format!("- Storage: {}", storage.join("; "))
            });
            out.push(if signal.is_empty() {
                "- Signal: OK".to_owned()
            } else {
                format!("- Signal: {}", signal.join("; "))
            });
            if !recording.is_empty() {
                out.push(format!("- Recording now: channel {}", recording.join(", ")));
            }
            out.push(match event {
                Some(e) => format!("- Next event: {}", event_text(e, snap.now, lang)),
                None => "- Next event: none scheduled".to_owned(),
            });
        }
        Lang::Es => {
            out.push(format!(
                "{}: {}",
                label(device),
                if ready { "lista." } else { "NO está lista." }
            ));
            out.push(match (device.online, since) {
                (true, _) => "- En línea: sí".to_owned(),
                (false, Some(t)) => format!("- En línea: no (desconectada desde {t})"),
                (false, None) => "- En línea: no".to_owned(),
            });
            out.push(if storage.is_empty() {
                "- Almacenamiento: OK".to_owned()
            } else {
                format!("- Almacenamiento: {}", storage.join("; "))
            });
            out.push(if signal.is_empty() {
                "- Señal: OK".to_owned()
            } else {
                format!("- Señal: {}", signal.join("; "))
            });
            if !recording.is_empty() {
                out.push(format!("- Grabando ahora: canal {}", recording.join(", ")));
            }
            out.push(match event {
                Some(e) => format!("- Próximo evento: {}", event_text(e, snap.now, lang)),
                None => "- Próximo evento: ninguno programado".to_owned(),
            });
        }
    }
    out.join("\n")
}

fn offline(snap: &Snapshot, lang: Lang) -> String {
    let total = snap.devices.len();
    let down: Vec<&Device> = snap.devices.iter().filter(|d| !d.online).collect();
    if down.is_empty() {
        return match lang {
            Lang::En => format!("Nothing is offline: all {total} devices are online."),
            Lang::Es => {
                format!("Nada está desconectado: los {total} equipos están en línea.")
            }
        };
    }
    let mut out = vec![match lang {
        Lang::En => format!("Offline ({} of {total}):", down.len()),
        Lang::Es => format!("Desconectadas ({} de {total}):", down.len()),
    }];
    for d in down {
        let mut line = format!("- {}", label(d));
        if let Some(t) = d.state_time.as_deref() {
            line.push_str(&match lang {
                Lang::En => format!(", offline since {}", shown(t)),
                Lang::Es => format!(", desconectada desde {}", shown(t)),
            });
        }
        if let Some(e) = live_or_next(snap, &d.id) {
            line.push_str(&match lang {
                Lang::En => format!("; event {}", event_text(e, snap.now, lang)),
                Lang::Es => format!("; evento {}", event_text(e, snap.now, lang)),
            });
        }
        out.push(line);
    }
    out.join("\n")
}

fn recording(snap: &Snapshot, lang: Lang) -> String {
    let rec: Vec<&Device> = snap.devices.iter().filter(|d| d.recording()).collect();
    if rec.is_empty() {
        return match lang {
            Lang::En => "Nothing is recording.".to_owned(),
            Lang::Es => "Nada está grabando.".to_owned(),
        };
    }
    let mut out = vec![match lang {
        Lang::En => format!("Recording now ({}):", rec.len()),
        Lang::Es => format!("Grabando ahora ({}):", rec.len()),
    }];
    for d in rec {
        let channels: Vec<String> = d
            .channels
            .iter()
            .filter(|c| c.recording)
            .map(|c| {
                let word = match lang {
                    Lang::En => "channel",
                    Lang::Es => "canal",
                };
                if c.name.trim().is_empty() {
                    format!("{word} {}", shown(&c.number))
                } else {
                    format!("{word} {} {}", shown(&c.number), quoted(&c.name, lang))
                }
            })
            .collect();
        let mut line = format!("- {}: {}", label(d), channels.join(", "));
        if !d.online {
            // Recorder status is only read for online devices; this flag is the last known.
            line.push_str(match lang {
                Lang::En => " (offline: last known state)",
                Lang::Es => " (desconectada: último estado conocido)",
            });
        }
        out.push(line);
    }
    out.join("\n")
}

fn upcoming(snap: &Snapshot, lang: Lang) -> String {
    let mut events: Vec<(&Event, Option<&Device>, &str)> = snap
        .events
        .iter()
        .filter_map(|(id, e)| e.as_ref().map(|e| (e, snap.device(id), id.as_str())))
        .filter(|(e, _, _)| not_ended(e, snap.now))
        .collect();
    events.sort_by(|a, b| {
        a.0.start.cmp(&b.0.start).then_with(|| {
            let name = |x: &(&Event, Option<&Device>, &str)| {
                x.1.map(|d| d.name.clone()).unwrap_or_default()
            };
            name(a).cmp(&name(b)).then_with(|| a.2.cmp(b.2))
        })
    });
    if events.is_empty() {
        return match lang {
            Lang::En => "No events are scheduled.".to_owned(),
            Lang::Es => "No hay eventos programados.".to_owned(),
        };
    }
    let mut out = vec![match lang {
        Lang::En => format!("Coming up ({}):", events.len()),
        Lang::Es => format!("Próximos eventos ({}):", events.len()),
    }];
    for (e, device, id) in events {
        let room = match device {
            Some(d) => label(d),
            None => shown(id),
        };
        let when = if is_on_now(e, snap.now) {
            let started = relative(e.start, snap.now, lang);
            match (lang, e.end) {
                (Lang::En, Some(end)) => {
                    format!("on now (started {started}, ends {})", clock(end, snap.now))
                }
                (Lang::En, None) => format!("on now (started {started})"),
                (Lang::Es, Some(end)) => {
                    format!(
                        "en curso (empezó {started}, termina {})",
                        clock(end, snap.now)
                    )
                }
                (Lang::Es, None) => format!("en curso (empezó {started})"),
            }
        } else {
            format!(
                "{} ({})",
                relative(e.start, snap.now, lang),
                clock(e.start, snap.now)
            )
        };
        let mut line = format!("- {when}: {} — {room}", quoted(&e.title, lang));
        if device.is_some_and(|d| !d.online) {
            line.push_str(match lang {
                Lang::En => ", offline",
                Lang::Es => ", desconectada",
            });
        }
        out.push(line);
    }
    out.join("\n")
}

fn firmware(snap: &Snapshot, lang: Lang) -> String {
    let newest = newest_firmware(&snap.devices);
    let behind: Vec<(&Device, &str)> = snap
        .devices
        .iter()
        .filter_map(|d| firmware_behind(d, &newest).map(|v| (d, v)))
        .collect();
    if behind.is_empty() {
        let models: Vec<String> = newest
            .iter()
            .map(|(line, (version, _))| format!("{} {}", shown(line), shown(version)))
            .collect();
        return match lang {
            Lang::En => format!(
                "Every device is on the newest firmware seen for its product line ({}).",
                models.join(", ")
            ),
            Lang::Es => format!(
                "Todos los equipos tienen el firmware más reciente visto para su línea de producto ({}).",
                models.join(", ")
            ),
        };
    }
    let mut out = vec![match lang {
        Lang::En => format!(
            "Behind the newest firmware of their product line ({}):",
            behind.len()
        ),
        Lang::Es => {
            format!(
                "Con firmware anterior al más reciente de su línea de producto ({}):",
                behind.len()
            )
        }
    }];
    for (d, version) in behind {
        out.push(match lang {
            Lang::En => format!(
                "- {}: {} on {}, newest {} is {}",
                label(d),
                shown(&d.model),
                shown(&d.firmware),
                shown(&firmware_line(&d.model)),
                shown(version)
            ),
            Lang::Es => format!(
                "- {}: {} con {}, la más reciente de {} es {}",
                label(d),
                shown(&d.model),
                shown(&d.firmware),
                shown(&firmware_line(&d.model)),
                shown(version)
            ),
        });
    }
    out.join("\n")
}

/// Triage groups, most urgent first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Urgency {
    First,
    Soon,
    Convenient,
}

fn attention(snap: &Snapshot, lang: Lang) -> String {
    let newest = newest_firmware(&snap.devices);
    let mut groups: BTreeMap<Urgency, Vec<String>> = BTreeMap::new();
    for d in &snap.devices {
        let event = live_or_next(snap, &d.id);
        let event_soon = event.is_some_and(|e| starts_soon(e, snap.now));
        let mut reasons: Vec<(Urgency, String)> = Vec::new();
        if !d.online {
            let text = match lang {
                Lang::En => "offline".to_owned(),
                Lang::Es => "desconectada".to_owned(),
            };
            reasons.push((
                if event_soon {
                    Urgency::First
                } else {
                    Urgency::Soon
                },
                text,
            ));
        }
        for (channel, w) in warnings(d) {
            // Storage problems lose recordings whenever they happen; a missing signal only
            // matters when something is about to be recorded.
            let urgency = if is_storage(&w.id) || (is_signal(&w.id) && event_soon) {
                Urgency::First
            } else {
                Urgency::Soon
            };
            reasons.push((urgency, channel_warning_text(channel, w, lang)));
        }
        if let Some(version) = firmware_behind(d, &newest) {
            reasons.push((
                Urgency::Convenient,
                match lang {
                    Lang::En => format!(
                        "firmware {} (newest {}: {})",
                        shown(&d.firmware),
                        shown(&firmware_line(&d.model)),
                        shown(version)
                    ),
                    Lang::Es => format!(
                        "firmware {} (más reciente {}: {})",
                        shown(&d.firmware),
                        shown(&firmware_line(&d.model)),
                        shown(version)
                    ),
                },
            ));
        }
        // One line per device, under its most urgent problem, so nothing is listed twice.
        let Some(urgency) = reasons.iter().map(|(u, _)| *u).min() else {
            continue;
        };
        if let Some(e) = event.filter(|_| event_soon && urgency == Urgency::First) {
            // Say why it is urgent: the event it would spoil.
            reasons.push((
                urgency,
                match lang {
                    Lang::En => format!("event {}", event_text(e, snap.now, lang)),
                    Lang::Es => format!("evento {}", event_text(e, snap.now, lang)),
                },
            ));
        }
        // Most urgent first, so the event note follows what endangers it.
        reasons.sort_by_key(|(u, _)| *u);
        let text: Vec<String> = reasons.into_iter().map(|(_, t)| t).collect();
        groups
            .entry(urgency)
            .or_default()
            .push(format!("- {}: {}", label(d), text.join("; ")));
    }
    if groups.is_empty() {
        let total = snap.devices.len();
        return match lang {
            Lang::En => format!(
                "Nothing needs attention: all {total} devices are online, without warnings, on \
                 the newest firmware of their product line."
            ),
            Lang::Es => format!(
                "Nada necesita atención: los {total} equipos están en línea, sin avisos y con el \
                 firmware más reciente de su línea de producto."
            ),
        };
    }
    let mut out = Vec::new();
    for (urgency, lines) in groups {
        out.push(
            match (urgency, lang) {
                (Urgency::First, Lang::En) => "Fix first:",
                (Urgency::Soon, Lang::En) => "Fix soon:",
                (Urgency::Convenient, Lang::En) => "When convenient:",
                (Urgency::First, Lang::Es) => "Arreglar primero:",
                (Urgency::Soon, Lang::Es) => "Arreglar pronto:",
                (Urgency::Convenient, Lang::Es) => "Cuando convenga:",
            }
            .to_owned(),
        );
        out.extend(lines);
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_counts_swaps_once() {
        assert_eq!(edit_distance("room", "room"), 0);
        assert_eq!(edit_distance("room", "romo"), 1);
        assert_eq!(edit_distance("lecture", "lectur"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
    }

    #[test]
    fn short_words_must_be_exact() {
        assert_eq!(word_fit("a", "b"), 0);
        assert_eq!(word_fit("abc", "abd"), 0);
        assert_eq!(word_fit("studio", "studoi"), 1);
        assert_eq!(word_fit("room", "courtroom"), 2);
    }

    #[test]
    fn numbers_split_from_words() {
        let (w, n) = tokens("Room12 / 9A, Sala 009");
        assert_eq!(w, vec!["room", "a", "sala"]);
        assert_eq!(n, vec!["12", "9", "9"]);
    }

    #[test]
    fn shown_escapes_and_caps() {
        assert_eq!(
            shown("a\nb\u{202E}c\u{200B}"),
            "a\\u{000A}b\\u{202E}c\\u{200B}"
        );
        let long = "x".repeat(200);
        let s = shown(&long);
        assert_eq!(s.chars().count(), NAME_CAP);
        assert!(s.ends_with('…'));
        // An escape near the cut is dropped whole, never split.
        let tricky = format!("{}\u{202E}tail", "y".repeat(75));
        let s = shown(&tricky);
        assert_eq!(s, format!("{}…", "y".repeat(75)));
    }

    #[test]
    fn durations() {
        assert_eq!(duration(0), "0 min");
        assert_eq!(duration(59), "59 min");
        assert_eq!(duration(60), "1 h");
        assert_eq!(duration(125), "2 h 5 min");
        assert_eq!(duration(24 * 60 + 90), "1 d 1 h");
    }
}
