//! Which language a question was asked in, so the answer comes back in the same one, and the
//! words of a question as every other module compares them.
//!
//! Only English and Spanish are supported. The guess is a tally of cues on both sides: a room
//! named "Sala 3" or "Salón Norte" inside an English question must not flip the answer to
//! Spanish, so Spanish has to outweigh English, and a tie stays English.

/// The operator's language.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    /// English (the default).
    En,
    /// Spanish.
    Es,
}

impl Lang {
    /// The English or the Spanish text.
    pub fn pick<'a>(self, en: &'a str, es: &'a str) -> &'a str {
        match self {
            Lang::En => en,
            Lang::Es => es,
        }
    }
}

/// Spanish words that rarely occur in English questions or requests (compared without
/// accents).
const SPANISH_WORDS: &[&str] = &[
    "que",
    "cual",
    "cuales",
    "cuando",
    "donde",
    "como",
    "cuantos",
    "cuantas",
    "hay",
    "esta",
    "estan",
    "estas",
    "son",
    "las",
    "los",
    "la",
    "el",
    "del",
    "de",
    "en",
    "para",
    "por",
    "favor",
    "su",
    "sus",
    "salas",
    "sala",
    "equipo",
    "equipos",
    "dispositivo",
    "dispositivos",
    "grabando",
    "graba",
    "graban",
    "grabar",
    "grabacion",
    "grabaciones",
    "evento",
    "eventos",
    "proximo",
    "proxima",
    "proximos",
    "proximas",
    "siguiente",
    "despues",
    "lista",
    "listo",
    "listas",
    "listos",
    "preparada",
    "preparado",
    "necesita",
    "necesitan",
    "atencion",
    "arreglar",
    "problema",
    "problemas",
    "desactualizado",
    "desactualizados",
    "desactualizada",
    "desactualizadas",
    "version",
    "ahora",
    "hoy",
    "tiene",
    "tienen",
    "algo",
    "alguna",
    "alguno",
    "ninguna",
    "conexion",
    "sin",
    "linea",
    "fuera",
    "y",
    "o",
    "pasa",
    "viene",
    "revisar",
    "apagada",
    "apagado",
    "caida",
    "caido",
    "inicia",
    "iniciar",
    "inicie",
    "empieza",
    "comienza",
    "deten",
    "detener",
    "detenga",
    "parar",
    "reinicia",
    "reiniciar",
    "reinicie",
    "confirma",
    "confirmar",
    "transmision",
    "emision",
];

/// Spanish word stems (a prefix match), for words that inflect.
const SPANISH_STEMS: &[&str] = &[
    "desconectad",
    "proxim",
    "desactualiz",
    "grabacion",
    "actualiz",
];

/// English words that rarely occur in Spanish questions or requests.
const ENGLISH_WORDS: &[&str] = &[
    "what",
    "whats",
    "which",
    "who",
    "is",
    "are",
    "the",
    "a",
    "an",
    "any",
    "anything",
    "for",
    "its",
    "it",
    "next",
    "ready",
    "offline",
    "online",
    "recording",
    "record",
    "coming",
    "up",
    "upcoming",
    "needs",
    "need",
    "attention",
    "fix",
    "outdated",
    "behind",
    "room",
    "rooms",
    "device",
    "devices",
    "down",
    "event",
    "events",
    "now",
    "today",
    "show",
    "me",
    "list",
    "of",
    "in",
    "on",
    "to",
    "have",
    "has",
    "with",
    "how",
    "does",
    "do",
    "and",
    "or",
    "there",
    "wrong",
    "problems",
    "status",
    "s",
    "start",
    "stop",
    "stream",
    "reboot",
    "restart",
    "update",
    "confirm",
    "please",
];

/// Guesses the language of `text`; English unless Spanish cues outweigh English ones.
pub fn detect(text: &str) -> Lang {
    let mut spanish = 0usize;
    let mut english = 0usize;
    for c in text.chars() {
        // Inverted marks and these letters are strong cues: weigh them like two words.
        if matches!(c, '¿' | '¡' | 'ñ' | 'Ñ') {
            spanish += 2;
        } else if matches!(c, 'á' | 'é' | 'í' | 'ó' | 'ú' | 'Á' | 'É' | 'Í' | 'Ó' | 'Ú') {
            spanish += 1;
        }
    }
    for word in words(text) {
        let is_es = SPANISH_WORDS.contains(&word.as_str())
            || SPANISH_STEMS.iter().any(|stem| word.starts_with(stem));
        let is_en = ENGLISH_WORDS.contains(&word.as_str());
        // "firmware" and friends belong to both; only one-sided words tip the balance.
        match (is_es, is_en) {
            (true, false) => spanish += 1,
            (false, true) => english += 1,
            _ => {}
        }
    }
    if spanish > english {
        Lang::Es
    } else {
        Lang::En
    }
}

/// Lower-cases `text`, folds Spanish (and common Latin) accents to plain letters and turns
/// everything that is not a letter or digit into a word break.
pub fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        for lower in c.to_lowercase() {
            match fold(lower) {
                Some(plain) => out.push(plain),
                None if lower.is_alphanumeric() => out.push(lower),
                None => out.push(' '),
            }
        }
    }
    out
}

/// The words of `text` after [`normalize`], apostrophes dropped so "what's" is "whats".
pub fn words(text: &str) -> Vec<String> {
    let without_apostrophes: String = text.chars().filter(|c| !matches!(c, '\'' | '’')).collect();
    normalize(&without_apostrophes)
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

/// Whether any word is on `list` or starts with one of `stems`.
pub fn has_any(words: &[String], list: &[&str], stems: &[&str]) -> bool {
    words
        .iter()
        .any(|w| list.contains(&w.as_str()) || stems.iter().any(|stem| w.starts_with(stem)))
}

/// Whether the words, joined by single spaces, hold one of `phrases` as whole words.
pub fn has_phrase(words: &[String], phrases: &[&str]) -> bool {
    let joined = format!(" {} ", words.join(" "));
    phrases.iter().any(|p| joined.contains(&format!(" {p} ")))
}

/// Accented Latin letters to their plain letter; `None` for anything else.
fn fold(c: char) -> Option<char> {
    Some(match c {
        'á' | 'à' | 'â' | 'ä' | 'ã' | 'å' => 'a',
        'é' | 'è' | 'ê' | 'ë' => 'e',
        'í' | 'ì' | 'î' | 'ï' => 'i',
        'ó' | 'ò' | 'ô' | 'ö' | 'õ' => 'o',
        'ú' | 'ù' | 'û' | 'ü' => 'u',
        'ñ' => 'n',
        'ç' => 'c',
        'a'..='z' | '0'..='9' => c,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn english_questions() {
        for q in [
            "what's offline?",
            "What needs attention?",
            "is Sala 3 ready for its next event?",
            "Is Salón Norte ready?",
            "which devices have outdated firmware?",
            "Start recording in Sala de Juntas 1",
            "Is Sala de Prensa ready?",
            "Stop the stream in Aula Magna",
            "",
            "1234",
        ] {
            assert_eq!(detect(q), Lang::En, "{q}");
        }
    }

    #[test]
    fn spanish_questions() {
        for q in [
            "¿qué salas están desconectadas?",
            "que salas estan desconectadas",
            "¿Qué está grabando?",
            "¿Cuáles son los próximos eventos?",
            "¿está lista la sala 3 para su próximo evento?",
            "equipos con firmware desactualizado",
            "¡hola!",
            "reinicia Courtroom 3",
            "Actualiza el firmware de Chapel",
            "¿qué viene después?",
        ] {
            assert_eq!(detect(q), Lang::Es, "{q}");
        }
    }

    #[test]
    fn no_cue_counts_for_both_sides() {
        // A word on both lists would be silently ignored by the one-sided tally.
        for word in ENGLISH_WORDS {
            assert!(!SPANISH_WORDS.contains(word), "{word} is on both lists");
            assert!(
                !SPANISH_STEMS.iter().any(|s| word.starts_with(s)),
                "{word} starts with a Spanish stem"
            );
        }
    }

    #[test]
    fn normalize_folds_accents_and_punctuation() {
        assert_eq!(
            normalize("¿Está LISTA la Sala-3?"),
            " esta lista la sala 3 "
        );
        assert_eq!(
            words("What's   next, Señor?"),
            vec!["whats", "next", "senor"]
        );
    }

    #[test]
    fn phrases_are_whole_words() {
        let w = words("Is it fuera de línea?");
        assert!(has_phrase(&w, &["fuera de linea"]));
        assert!(!has_phrase(&w, &["uera de"]));
    }
}
