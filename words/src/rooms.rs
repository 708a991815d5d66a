//! Which device a question names.
//!
//! Numbers must agree exactly: "room 999" never finds "Room 99" or "Room 9", because a
//! proposal for the wrong room is worse than no answer. Words may differ in case, accents,
//! punctuation, order and a small typo. A question that fits several rooms equally well, or
//! names no number while the rooms that fit carry one, gets the list to choose from; one room
//! is never picked for the operator.

use std::cmp::Ordering;

use fleetwatch_protocol::fleet::Device;

use crate::shown::shown;
use crate::tokens::{Tok, number_set, tokens, words_of};

/// The outcome of looking a room up by the words of a question.
#[derive(Debug)]
pub enum RoomMatch<'a> {
    /// Exactly one device fits best.
    One(&'a Device),
    /// Several fit equally well, in the fleet's order.
    Several(Vec<&'a Device>),
    /// Nothing fits; the words and numbers that were looked for (normalised, safe to print).
    None(String),
    /// The question names no room at all.
    NotNamed,
}

/// Words of a question or a request that are not part of a room's name. They may still fit a
/// name ("a" in "Test Room A", "de" in "Sala de Juntas") and then count for it, but a name
/// need not hold them.
const FILLER: &[&str] = &[
    // asking
    "is",
    "are",
    "be",
    "will",
    "going",
    "doing",
    "happening",
    "what",
    "whats",
    "which",
    "how",
    "about",
    "check",
    "tell",
    "me",
    "please",
    "there",
    "status",
    "info",
    "ok",
    "okay",
    "good",
    "go",
    "ready",
    "prepared",
    "today",
    "now",
    "can",
    "could",
    "you",
    "would",
    // requesting
    "start",
    "stop",
    "begin",
    "end",
    "recording",
    "record",
    "stream",
    "streaming",
    "reboot",
    "restart",
    "update",
    "upgrade",
    "firmware",
    "confirm",
    // small words
    "the",
    "a",
    "an",
    "for",
    "its",
    "it",
    "to",
    "of",
    "on",
    "in",
    "at",
    "my",
    "our",
    "with",
    "and",
    "s",
    // events
    "next",
    "event",
    "events",
    "upcoming",
    "up",
    "coming",
    // Spanish
    "que",
    "cual",
    "como",
    "pasa",
    "con",
    "hay",
    "sobre",
    "tal",
    "estado",
    "esta",
    "estan",
    "lista",
    "listo",
    "listas",
    "listos",
    "preparada",
    "preparado",
    "la",
    "el",
    "los",
    "las",
    "su",
    "sus",
    "para",
    "de",
    "del",
    "en",
    "y",
    "por",
    "favor",
    "ya",
    "hoy",
    "ahora",
    "proximo",
    "proxima",
    "evento",
    "eventos",
    "puedes",
    "podrias",
    "inicia",
    "iniciar",
    "empieza",
    "comienza",
    "deten",
    "detener",
    "parar",
    "graba",
    "grabar",
    "grabacion",
    "transmision",
    "emision",
    "reinicia",
    "reiniciar",
    "actualiza",
    "actualizar",
    "confirma",
    "confirmar",
];

/// Words that say "a room" without naming one: like [`FILLER`] a name need not hold them, but
/// they are shown when nothing matches ("No room matches “room 999”").
const GENERIC: &[&str] = &[
    "room",
    "rooms",
    "sala",
    "salas",
    "aula",
    "device",
    "equipo",
    "dispositivo",
];

/// Finds the room a question names among `devices`.
pub fn find_room<'a>(question: &str, devices: &'a [Device]) -> RoomMatch<'a> {
    let toks = tokens(question);
    let asked: Vec<&str> = words_of(&toks);
    let named = asked
        .iter()
        .any(|w| !FILLER.contains(w) && !GENERIC.contains(w));
    let asked_numbers = number_set(&toks);
    if !named && asked_numbers.is_empty() {
        return RoomMatch::NotNamed;
    }

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
    let looked_for = || {
        let words: Vec<&str> = toks
            .iter()
            .map(Tok::text)
            .filter(|w| !FILLER.contains(w))
            .collect();
        RoomMatch::None(shown(&words.join(" ")))
    };
    match best.as_slice() {
        [] if asked_numbers.is_empty() => {
            // "is the courtroom ready?" names no number while the rooms have one: offer every
            // room whose words fit and let the operator pick, rather than choosing for them.
            let candidates: Vec<&Device> = devices
                .iter()
                .filter(|d| word_score(&asked, d).is_some())
                .collect();
            if candidates.is_empty() {
                looked_for()
            } else {
                RoomMatch::Several(candidates)
            }
        }
        [] => looked_for(),
        [(one, _)] => RoomMatch::One(one),
        _ => RoomMatch::Several(best.into_iter().map(|(d, _)| d).collect()),
    }
}

/// How well the question's words fit a device name, ignoring numbers: `None` when a word that
/// names something is missing from the name; otherwise the name's numbers and a sort key
/// (higher fits better: more and closer matches, fewer name words left over).
fn word_score(asked: &[&str], device: &Device) -> Option<(Vec<String>, (u32, i64))> {
    let name = tokens(&device.name);
    let name_words = words_of(&name);
    let name_numbers: Vec<String> = number_set(&name).into_iter().map(str::to_owned).collect();
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
                if let Some(u) = used.get_mut(i) {
                    *u = true;
                }
            }
            None if FILLER.contains(word) || GENERIC.contains(word) => {}
            None => return None,
        }
    }
    let unmatched = used.iter().filter(|u| !**u).count();
    Some((
        name_numbers,
        (score, -i64::try_from(unmatched).unwrap_or(i64::MAX)),
    ))
}

/// How well a question word fits a name word: 3 exact, 2 part of a longer name word
/// ("court" in "courtroom", never "room" asked as "courtroom"), 1 a small typo, 0 no fit.
/// Short words must be exact: "a" and "b" are different rooms.
pub fn word_fit(asked: &str, name: &str) -> u32 {
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
    u32::from(allowed > 0 && edit_distance(asked, name) <= allowed)
}

/// Optimal-string-alignment distance: a swap of two neighbours counts as one edit, so
/// "lectrue" is one typo from "lecture".
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Three rows of the table: two back, one back and the current one.
    let mut before: Vec<usize> = Vec::new();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut row = Vec::with_capacity(b.len() + 1);
        row.push(i + 1);
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            let at = |r: &[usize], k: usize| r.get(k).copied().unwrap_or(usize::MAX - 1);
            let mut best = (at(&prev, j + 1) + 1)
                .min(at(&row, j) + 1)
                .min(at(&prev, j) + cost);
            let swapped = i > 0 && j > 0 && a.get(i - 1) == Some(cb) && b.get(j - 1) == Some(ca);
            if swapped {
                best = best.min(at(&before, j - 1) + 1);
            }
            row.push(best);
        }
        before = std::mem::replace(&mut prev, row);
    }
    prev.last().copied().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device(id: &str, name: &str) -> Device {
        Device {
            id: id.to_owned(),
            name: name.to_owned(),
            model: "Pearl-2".to_owned(),
            group: String::new(),
            firmware: "4.24.6".to_owned(),
            online: true,
            state_time: None,
            warnings: Vec::new(),
            channels: Vec::new(),
        }
    }

    fn found(question: &str, devices: &[Device]) -> Vec<String> {
        match find_room(question, devices) {
            RoomMatch::One(d) => vec![d.name.clone()],
            RoomMatch::Several(ds) => ds.iter().map(|d| d.name.clone()).collect(),
            RoomMatch::None(words) => vec![format!("none: {words}")],
            RoomMatch::NotNamed => vec!["not named".to_owned()],
        }
    }

    #[test]
    fn edit_distance_counts_swaps_once() {
        assert_eq!(edit_distance("room", "room"), 0);
        assert_eq!(edit_distance("room", "romo"), 1);
        assert_eq!(edit_distance("lecture", "lectrue"), 1);
        assert_eq!(edit_distance("lecture", "lectur"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("abc", ""), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn short_words_must_be_exact() {
        assert_eq!(word_fit("a", "b"), 0);
        assert_eq!(word_fit("abc", "abd"), 0);
        assert_eq!(word_fit("studio", "studoi"), 1);
        assert_eq!(word_fit("room", "courtroom"), 2);
        assert_eq!(word_fit("courtroom", "room"), 0);
    }

    #[test]
    fn a_single_letter_tells_rooms_apart() {
        let rooms = [device("1", "Test Room A"), device("2", "Test Room B")];
        assert_eq!(
            found("start recording in Test Room A", &rooms),
            ["Test Room A"]
        );
        assert_eq!(found("is test room b ready?", &rooms), ["Test Room B"]);
        assert_eq!(
            found("is the test room ready?", &rooms),
            ["Test Room A", "Test Room B"]
        );
    }

    #[test]
    fn request_words_are_not_part_of_the_name() {
        let rooms = [device("1", "Sala de Prensa"), device("2", "Salón de Actos")];
        assert_eq!(
            found("Inicia la grabación en la Sala de Prensa", &rooms),
            ["Sala de Prensa"]
        );
        assert_eq!(
            found("inicia la grabacion en el salon de actos", &rooms),
            ["Salón de Actos"]
        );
        assert_eq!(found("Start recording", &rooms), ["not named"]);
    }

    #[test]
    fn an_extra_word_that_names_something_must_fit() {
        // "north" names a room that is not there: never fall back to the nearest.
        let rooms = [
            device("1", "Lecture Hall"),
            device("2", "Lecture Hall South"),
        ];
        assert_eq!(
            found("reboot lecture hall north", &rooms),
            ["none: lecture hall north"]
        );
        assert_eq!(found("reboot lecture hall", &rooms), ["Lecture Hall"]);
    }

    #[test]
    fn exact_words_beat_a_part_of_a_word() {
        let rooms = [device("1", "Courtroom 12"), device("2", "Room 12")];
        assert_eq!(found("is room 12 ready", &rooms), ["Room 12"]);
        assert_eq!(found("is courtroom 12 ready", &rooms), ["Courtroom 12"]);
    }

    #[test]
    fn numbers_never_cross_and_are_shown_when_nothing_fits() {
        let rooms = [
            device("1", "Room 9"),
            device("2", "Room 99"),
            device("3", "Studio 1"),
        ];
        assert_eq!(found("room 999", &rooms), ["none: room 999"]);
        assert_eq!(found("room 09", &rooms), ["Room 9"]);
        assert_eq!(
            found("Stop recording in Studio 12", &rooms),
            ["none: studio 12"]
        );
        assert_eq!(found("is the room ready", &rooms), ["not named"]);
    }
}
