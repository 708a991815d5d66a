//! Which question about the fleet a person asked, said once for every answerer that reads
//! questions without a hosted model: the assistant's keyword answerer and the simulator's
//! rule-based stand-in. Both ask [`classify`], so a question one of them takes as "what is
//! recording" the other cannot take as "what is next".
//!
//! The most specific kind wins: "is Room 5 ready for its next event?" is about readiness, not
//! about what is next; "which rooms are recording next?" is about recording.

use crate::lang;

/// The kinds of read question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Question {
    /// Is a room ready?
    Ready,
    /// Who runs old firmware?
    Firmware,
    /// What is offline?
    Offline,
    /// What is recording?
    Recording,
    /// What is next on the schedule?
    Upcoming,
    /// What needs attention?
    Attention,
    /// None of these.
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
    "no responde",
    "no responden",
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
    "later",
    "agenda",
    "siguiente",
    "siguientes",
    "despues",
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
    "warnings",
    "alerts",
    "atencion",
    "arreglar",
    "problema",
    "problemas",
    "revisar",
    "falla",
    "fallas",
    "fallos",
    "avisos",
    "alertas",
    "mal",
    "urgente",
];

/// The kind of question `words` (from [`lang::words`]) ask.
pub fn classify(words: &[String]) -> Question {
    let joined = format!(" {} ", words.join(" "));
    if lang::has_any(words, READY_WORDS, &[]) {
        Question::Ready
    } else if lang::has_any(words, FIRMWARE_WORDS, FIRMWARE_STEMS) {
        Question::Firmware
    } else if lang::has_any(words, OFFLINE_WORDS, OFFLINE_STEMS)
        || OFFLINE_PHRASES
            .iter()
            .any(|p| joined.contains(&format!(" {p}")))
    {
        Question::Offline
    } else if lang::has_any(words, RECORDING_WORDS, &[]) {
        Question::Recording
    } else if lang::has_any(words, UPCOMING_WORDS, UPCOMING_STEMS) {
        Question::Upcoming
    } else if lang::has_any(words, ATTENTION_WORDS, &[]) {
        Question::Attention
    } else {
        Question::Help
    }
}

/// The kind of question `text` asks.
pub fn of(text: &str) -> Question {
    classify(&lang::words(text))
}

/// Read questions in both languages and the kind each asks: the table both answerers are held
/// to (the simulator's tests run its whole classifier over it).
pub const EXAMPLES: &[(&str, Question)] = &[
    ("What needs attention?", Question::Attention),
    ("¿Qué necesita atención?", Question::Attention),
    ("Any warnings?", Question::Attention),
    ("¿Hay alertas?", Question::Attention),
    ("What's offline?", Question::Offline),
    ("Which rooms are not connected?", Question::Offline),
    ("¿Qué salas están desconectadas?", Question::Offline),
    ("¿Qué sala no responde?", Question::Offline),
    ("What's recording?", Question::Recording),
    ("Which rooms are recording next?", Question::Recording),
    ("¿Qué salas están grabando?", Question::Recording),
    ("What's coming up next?", Question::Upcoming),
    ("What is scheduled later today?", Question::Upcoming),
    ("¿Qué viene después?", Question::Upcoming),
    ("¿Cuál es el próximo evento?", Question::Upcoming),
    ("Is Courtroom 1 ready?", Question::Ready),
    ("Is Room 5 ready for its next event?", Question::Ready),
    ("¿Está lista la Sala de Juntas 1?", Question::Ready),
    ("Which rooms have outdated firmware?", Question::Firmware),
    (
        "¿Qué salas tienen el firmware desactualizado?",
        Question::Firmware,
    ),
    ("Tell me a joke", Question::Help),
    ("Cuéntame un chiste", Question::Help),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_example_is_the_kind_it_says() {
        for (question, kind) in EXAMPLES {
            assert_eq!(of(question), *kind, "{question}");
        }
    }
}
