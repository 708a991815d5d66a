//! Text rule 0: JSON text inside a string. A name or a message can carry a whole JSON object
//! (`Room 4 {"stream_key": "…"}`, a settings list copied into a note): where an object that
//! starts at a `{` parses, it is redacted as JSON, so the rules that need structure (a
//! `{label, value}` pair, an object or array under a secret name, a `stream_id` that is not a
//! UUID) apply to it; the text around it is left to the text rules. An object that does not
//! parse is left to the text rules as well.
//!
//! An object that redaction leaves unchanged is kept byte for byte; one that changes is written
//! back as compact JSON, which parses to the same redacted value on every later pass.

use serde_json::Value;

use super::{MAX_TEXT_ROUNDS, RULES, at, redact_value, span, text_of};

/// Parse attempts that may fail in one text before the rest of it is left to the text rules.
/// A failed attempt can read far (an unclosed object runs to the end of the text, nested ones
/// to the parser's depth limit), so a text of many unclosed braces must not cost an attempt
/// each; an object that parses costs only its own length.
const FAILED_PARSES_MAX: usize = 64;

/// Redacts every JSON object embedded in the text.
pub(super) fn mask_embedded_json(chars: &[char]) -> Vec<char> {
    // The text once as a string, with the byte offset of every character: a parse attempt
    // reads the rest of the text in place instead of copying it (a copy per `{` would make a
    // text of many small objects quadratic).
    let text = text_of(chars);
    let offsets: Vec<usize> = text
        .char_indices()
        .map(|(byte, _)| byte)
        .chain(std::iter::once(text.len()))
        .collect();
    let mut out: Vec<char> = Vec::with_capacity(chars.len());
    let mut failed = 0_usize;
    let mut i = 0;
    while let Some(ch) = at(chars, i) {
        if ch == '{' && failed < FAILED_PARSES_MAX && opens_object(chars, i) {
            if let Some((end, redacted)) = redacted_object_at(chars, &text, &offsets, i) {
                match redacted {
                    Some(text) => out.extend(text.chars()),
                    None => out.extend_from_slice(span(chars, i, end)),
                }
                i = end;
                continue;
            }
            failed = failed.saturating_add(1);
        }
        out.push(ch);
        i = i.saturating_add(1);
    }
    out
}

/// Only `{` followed by a member name can open an object worth parsing; checking that first
/// keeps prose braces (`{{now}}`, `{x}`) from costing a parse each.
fn opens_object(chars: &[char], start: usize) -> bool {
    let after = start.saturating_add(1);
    let first = span(chars, after, chars.len())
        .iter()
        .find(|c| !c.is_whitespace());
    first == Some(&'"')
}

/// The object starting at the `{` at character `start`: the character index where it ends and,
/// when redaction changed it, its redacted text. `None` when no object parses there.
fn redacted_object_at(
    chars: &[char],
    text: &str,
    offsets: &[usize],
    start: usize,
) -> Option<(usize, Option<String>)> {
    let from = *offsets.get(start)?;
    let mut stream = serde_json::Deserializer::from_str(text.get(from..)?).into_iter::<Value>();
    let Some(Ok(mut value)) = stream.next() else {
        return None;
    };
    if !value.is_object() {
        return None;
    }
    let end_byte = from.checked_add(stream.byte_offset())?;
    let end = offsets.binary_search(&end_byte).ok()?;
    let original = value.clone();
    redact_value(&mut value);
    if value == original {
        return Some((end, None));
    }
    // When the text rules alone mask exactly what the JSON rules mask, the object keeps its
    // own layout and the text rules do the masking; only structure the text rules cannot see
    // (a pair, an object under a secret name) costs the object its formatting.
    let raw = span(chars, start, end);
    let by_text = text_of(&text_rules(raw));
    if serde_json::from_str::<Value>(&by_text).is_ok_and(|v| v == value) {
        return Some((end, None));
    }
    let redacted = serde_json::to_string(&value).ok()?;
    Some((end, Some(redacted)))
}

/// The text rules other than this one, repeated until they settle, on one object's text.
fn text_rules(chars: &[char]) -> Vec<char> {
    let mut current = chars.to_vec();
    for _ in 0..MAX_TEXT_ROUNDS {
        let next = RULES
            .iter()
            .skip(1)
            .fold(current.clone(), |text, (_, rule)| rule(&text));
        if next == current {
            break;
        }
        current = next;
    }
    current
}
