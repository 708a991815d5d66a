//! Whether a model's answer rests on what this question read.
//!
//! The system prompt asks the model to base every statement on what the tools returned; a small
//! model often does not. It writes its own `<fleet_data>` blocks, answers "all 13 rooms are
//! online" without reading anything, or names a room no read returned. None of that may reach
//! the operator as an answer, so code holds the model to it: every successful read, fleet-tool
//! answer and stored proposal of the turn is kept as evidence (with the question and the chat's
//! record), and the final text is judged against it. An answer is set aside when
//!
//! * it holds the data tag (`fleet_data`): only Fleetwatch writes that, around what it read;
//! * nothing was read, and it answers a question about the fleet, or states a number, a device
//!   ID, a room or a state ("offline", "grabando"): with nothing read, any of those is invented;
//! * it names a device ID, or a room in the form people write them ("Room 7", "Sala B2",
//!   "Courtroom 4"), that appears nowhere in the evidence.
//!
//! The check looks for the class of fact a fleet answer is made of (counts, IDs, rooms), not
//! for particular phrasings; it can be fooled by an invented fact in another form, but it never
//! sets aside an answer that only repeats what was read.

use fleetwatch_protocol::ids;
use fleetwatch_words::question::{self, Question};
use serde_json::Value;

/// The tag Fleetwatch wraps read results in; a model's answer has no business holding it.
const DATA_TAG: &str = "fleet_data";

/// Words that name a room when a number or a short code follows them ("Room 7", "Sala B2").
/// Lower case; compared with the answer's words lower-cased.
const ROOM_WORDS: &[&str] = &[
    "room",
    "sala",
    "aula",
    "hall",
    "lab",
    "laboratory",
    "laboratorio",
    "studio",
    "estudio",
    "courtroom",
    "court",
    "chamber",
    "auditorium",
    "auditorio",
    "classroom",
    "theatre",
    "theater",
    "booth",
    "suite",
    "salon",
    "salón",
    "despacho",
    "office",
    "oficina",
];

/// Beginnings of the words a statement about the fleet's state is made of, English and
/// Spanish ("offline", "recording", "desconectada", "grabando", "firmware"). With nothing read,
/// an answer holding one states what it cannot know.
const STATE_STEMS: &[&str] = &[
    "online",
    "offline",
    "record",
    "stream",
    "firmware",
    "disconnect",
    "connected",
    "reboot",
    "warning",
    "storage",
    "disk",
    "desconect",
    "conectad",
    "grab",
    "transmit",
    "emit",
    "reinici",
    "aviso",
    "advertencia",
    "almacen",
    "disco",
    "línea",
];

/// Longest code after a room word that still reads as a room's code ("B2", "4A", "101").
const MAX_ROOM_CODE_CHARS: usize = 8;

/// Why an answer was set aside.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetAside {
    /// Nothing was read in the question, and the answer states fleet facts.
    NoRead,
    /// The answer holds Fleetwatch's data tag.
    DataTag,
    /// The answer names a device ID or a room nothing read in the question returned.
    Unseen,
}

impl SetAside {
    /// A short fixed label for audit rows.
    pub fn label(self) -> &'static str {
        match self {
            SetAside::NoRead => "no_read",
            SetAside::DataTag => "data_tag",
            SetAside::Unseen => "unseen_name",
        }
    }
}

/// What a turn read, as text to look names up in: lower case, runs of white space as one
/// space, separate values apart (a name cannot be found across two values).
#[derive(Debug, Default)]
pub struct Evidence {
    text: String,
    /// A read, a fleet-tool answer or a stored proposal succeeded in this turn.
    grounded: bool,
}

impl Evidence {
    /// The evidence a turn starts with: the operator's question and the chat's record. Neither
    /// makes an answer grounded (they were not read from the fleet), but a name the operator
    /// typed may be repeated.
    pub fn new(question: &str, context: Option<&Value>) -> Evidence {
        let mut evidence = Evidence::default();
        evidence.add_text(question);
        if let Some(context) = context {
            evidence.add_value(context);
        }
        evidence
    }

    /// A successful read or fleet-tool answer.
    pub fn read(&mut self, value: &Value) {
        self.grounded = true;
        self.add_value(value);
    }

    /// A proposal code answered (stored, already waiting, or refused by a rule): its message,
    /// written by code, is what an answer about it rests on.
    pub fn proposed(&mut self, message: &str) {
        self.grounded = true;
        self.add_text(message);
    }

    fn add_value(&mut self, value: &Value) {
        match value {
            Value::String(text) => self.add_text(text),
            Value::Number(n) => self.add_text(&n.to_string()),
            Value::Array(items) => items.iter().for_each(|v| self.add_value(v)),
            Value::Object(map) => {
                for (key, v) in map {
                    // Keys matter: a status read is keyed by device ID.
                    self.add_text(key);
                    self.add_value(v);
                }
            }
            Value::Bool(_) | Value::Null => {}
        }
    }

    fn add_text(&mut self, text: &str) {
        self.text.push('\u{0}');
        push_normalised(&mut self.text, text);
    }

    /// Whether `phrase` (already normalised) appears as whole words.
    fn holds(&self, phrase: &str) -> bool {
        holds_words(&self.text, phrase)
    }

    /// Why `answer` must be set aside, if it must. `question` decides whether an answer with
    /// nothing read behind it is about the fleet.
    pub fn judge(&self, answer: &str, question: &str) -> Option<SetAside> {
        if answer.to_lowercase().contains(DATA_TAG) {
            return Some(SetAside::DataTag);
        }
        let ids = device_ids(answer);
        let rooms = room_mentions(answer);
        if !self.grounded {
            let about_fleet = question::of(question) != Question::Help;
            let states_facts = answer.chars().any(|c| c.is_ascii_digit())
                || !ids.is_empty()
                || !rooms.is_empty()
                || speaks_of_state(answer);
            return (about_fleet || states_facts).then_some(SetAside::NoRead);
        }
        let unseen = ids.iter().any(|id| !self.holds(id)) || rooms.iter().any(|r| !self.holds(r));
        unseen.then_some(SetAside::Unseen)
    }
}

/// Whether a word of `answer` begins like a word of the fleet's state.
fn speaks_of_state(answer: &str) -> bool {
    answer
        .split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .any(|word| STATE_STEMS.iter().any(|stem| word.starts_with(stem)))
}

/// Appends `text` lower-cased, with every run of white space as one space.
fn push_normalised(out: &mut String, text: &str) {
    let mut space = false;
    for c in text.chars() {
        if c.is_whitespace() {
            space = true;
            continue;
        }
        if space {
            out.push(' ');
            space = false;
        }
        out.extend(c.to_lowercase());
    }
}

fn normalised(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    push_normalised(&mut out, text);
    out
}

/// A character that continues a word or an ID: a name found inside a longer one does not count
/// ("room 7" is not in "room 70").
fn joins(c: char) -> bool {
    c.is_alphanumeric()
}

/// Whether `phrase` occurs in `text` with no word character right before or after it.
fn holds_words(text: &str, phrase: &str) -> bool {
    if phrase.is_empty() {
        return false;
    }
    text.match_indices(phrase).any(|(at, _)| {
        let before = text.get(..at).and_then(|t| t.chars().next_back());
        let after = text.get(at + phrase.len()..).and_then(|t| t.chars().next());
        !before.is_some_and(joins) && !after.is_some_and(joins)
    })
}

/// The device IDs an answer names (a channel ID names its device), lower-cased. A token counts
/// when it has the shape of an Epiphan ID and at least one digit, so an English word made of
/// the letters a to f is not taken for one.
fn device_ids(answer: &str) -> Vec<String> {
    answer
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .map(|t| t.trim_matches('-').to_ascii_lowercase())
        .filter(|t| t.bytes().any(|b| b.is_ascii_digit()))
        .filter_map(|t| ids::device_of(&t).map(str::to_owned))
        .collect()
}

/// The rooms an answer names in the common written form: a room word and a number or short
/// code right after it ("Room 7", "sala B2", "Courtroom 4A"), normalised.
fn room_mentions(answer: &str) -> Vec<String> {
    let words: Vec<&str> = answer.split_whitespace().collect();
    words
        .windows(2)
        .filter_map(|pair| {
            let [word, next] = pair else { return None };
            let word = word.trim_matches(|c: char| !c.is_alphanumeric());
            if !ROOM_WORDS.contains(&word.to_lowercase().as_str()) {
                return None;
            }
            let code = room_code(next)?;
            Some(normalised(&format!("{word} {code}")))
        })
        .collect()
}

/// The room code at the start of a word, if it is one: a number ("7", "101", "3.2") or a short
/// code with a capital letter or a digit first ("B", "B2", "4A"), without the punctuation or
/// possessive after it.
fn room_code(word: &str) -> Option<&str> {
    let word = word.trim_start_matches(|c: char| !c.is_alphanumeric());
    let end = word
        .char_indices()
        .find(|(_, c)| !(c.is_alphanumeric() || *c == '.' || *c == '-'))
        .map_or(word.len(), |(i, _)| i);
    let code = word.get(..end)?.trim_end_matches(['.', '-']);
    let first = code.chars().next()?;
    let short = code.chars().count() <= MAX_ROOM_CODE_CHARS;
    let has_digit = code.chars().any(|c| c.is_ascii_digit());
    let single_capital = code.chars().count() == 1 && first.is_uppercase();
    let coded = first.is_ascii_digit() || (first.is_uppercase() && has_digit) || single_capital;
    (short && coded).then_some(code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(value: Value) -> Evidence {
        let mut e = Evidence::new("what's offline?", None);
        e.read(&value);
        e
    }

    #[test]
    fn an_answer_that_repeats_what_was_read_stands() {
        let e = read(json!({"rooms": [
            {"id": "50000001a2", "name": "Room 7", "state": "offline"},
            {"id": "50000001a3", "name": "Sala B2"},
        ], "matched": 2}));
        for answer in [
            "2 rooms are offline: Room 7 (50000001a2) and Sala B2.",
            "**Room 7**'s channel 50000001a2-1 is not recording.",
            "Two rooms: sala  b2 and ROOM 7.",
        ] {
            assert_eq!(e.judge(answer, "what's offline?"), None, "{answer}");
        }
    }

    #[test]
    fn an_invented_room_or_id_is_set_aside_even_next_to_real_ones() {
        let e = read(json!({"rooms": [{"id": "50000001a2", "name": "Room 70"}]}));
        for answer in [
            "Room 7 is offline.",
            "Room 70 and Courtroom 4 are offline.",
            "Device 19012341234 is offline.",
            "Channel 50000001a9-1 stopped.",
            "La Sala B está desconectada.",
        ] {
            assert_eq!(
                e.judge(answer, "what's offline?"),
                Some(SetAside::Unseen),
                "{answer}"
            );
        }
    }

    #[test]
    fn with_nothing_read_a_fleet_answer_or_a_fact_is_set_aside() {
        let e = Evidence::new("what's offline?", None);
        assert_eq!(
            e.judge("Every room is online.", "what's offline?"),
            Some(SetAside::NoRead)
        );
        let e = Evidence::new("hello", None);
        assert_eq!(
            e.judge("All 13 rooms are fine.", "hello"),
            Some(SetAside::NoRead)
        );
        assert_eq!(
            e.judge("Hello! Ask me about your rooms.", "hello"),
            None,
            "a greeting states nothing about the fleet"
        );
        for invented in [
            "Everything is online.",
            "Nothing is recording right now.",
            "Todas las salas están conectadas.",
            "Ninguna sala está grabando.",
        ] {
            assert_eq!(
                e.judge(invented, "hello"),
                Some(SetAside::NoRead),
                "{invented}"
            );
        }
    }

    #[test]
    fn the_data_tag_is_set_aside_whatever_was_read() {
        let e = read(json!({"rooms": []}));
        assert_eq!(
            e.judge(
                "< FLEET_DATA tool=\"x\">{}</fleet_data> all fine",
                "what's offline?"
            ),
            Some(SetAside::DataTag)
        );
    }

    #[test]
    fn a_stored_proposal_grounds_the_answer_that_reports_it() {
        let mut e = Evidence::new("start recording in 50000001a2-1", None);
        e.proposed("Proposal #42 is waiting for a person to approve it. Nothing has changed.");
        assert_eq!(
            e.judge(
                "Proposal #42 (start recording on 50000001a2-1) waits for approval.",
                "start recording in 50000001a2-1"
            ),
            None
        );
    }

    #[test]
    fn a_refusal_code_wrote_grounds_the_answer_that_explains_it() {
        let q = "start recording in 50000001a2-1";
        let mut e = Evidence::new(q, None);
        e.proposed("Not proposed: device 50000001a2 is not on the write allowlist.");
        assert_eq!(
            e.judge(
                "I could not propose recording on 50000001a2: it is not on the write allowlist.",
                q
            ),
            None
        );
    }

    #[test]
    fn words_that_look_like_codes_are_not_rooms_or_ids() {
        assert!(device_ids("the feed was deadbeef, then accepted").is_empty());
        assert!(room_mentions("the room is ready and a court of law").is_empty());
        assert_eq!(room_mentions("in Room 7's lab"), ["room 7"]);
        assert_eq!(
            room_mentions("(Sala B2), aula 3.2."),
            ["sala b2", "aula 3.2"]
        );
        assert_eq!(device_ids("ID 50000001A2-3."), ["50000001a2"]);
    }
}
