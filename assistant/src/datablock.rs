//! How a read result is handed to the model: one `<fleet_data>` block per result, holding one
//! line of JSON.
//!
//! Device, channel, source and event names are chosen by whoever can rename a device, so they
//! are hostile input. They stay JSON string fields inside the block, and the JSON is escaped so
//! that no `<`, `>` or `&` survives: a name spelled `</fleet_data>` cannot end the block early.
//! Caps keep one result from swamping the conversation. The only prose outside the block is a
//! fixed-form "cut" note built from counts, never from the data.

use serde_json::{Map, Value};

/// Longest string (in characters) kept whole; longer ones are cut to this length, ending "…".
pub const MAX_STRING_CHARS: usize = 200;
/// Most items kept from one list (or entries from one object).
pub const MAX_LIST_ITEMS: usize = 200;
/// Longest block JSON, in characters, after escaping.
pub const MAX_BLOCK_CHARS: usize = 32_000;

const ELLIPSIS: char = '…';

/// Field names a cut note may repeat. Anything else is called "items": the note sits outside
/// the block, so a key chosen by the data (a device ID, an injected name) must never reach it.
const NOTE_LABELS: &[&str] = &[
    "channels",
    "devices",
    "events",
    "publishers",
    "results",
    "sources",
    "stream_endpoints",
    "warnings",
    "warnings_in_words",
];

/// Wraps one read result for the model: the block, then (only when something was dropped) a
/// note on its own line after the closing tag.
pub fn data_block(tool: &str, value: &Value) -> String {
    let mut cuts = Vec::new();
    let worded = with_warnings_in_words(tool, value);
    let mut capped = cap_value(worded.as_ref().unwrap_or(value), &mut Vec::new(), &mut cuts);
    let mut json = escaped_json(&capped);
    if json.chars().count() > MAX_BLOCK_CHARS {
        shrink_to_fit(&mut capped, &mut cuts);
        json = escaped_json(&capped);
    }
    let mut out = format!(
        "<fleet_data tool=\"{}\">{json}</fleet_data>",
        tag_safe_name(tool)
    );
    if let Some(note) = cut_note(&cuts) {
        out.push('\n');
        out.push_str(&note);
    }
    out
}

/// The key under which a device list's warnings are added in words.
pub const WARNINGS_IN_WORDS: &str = "warnings_in_words";

/// A device list with its warnings also said in words, so the model reads "Lectern (channel 2)
/// has no signal" rather than Epiphan's IDs: one `{device_id, text}` entry per warning, under
/// [`WARNINGS_IN_WORDS`] (a bare list is wrapped as `{"devices": […]}` to hold it). The texts
/// are data fields like any other, capped and escaped with the rest. `None` when there is
/// nothing to add.
fn with_warnings_in_words(tool: &str, value: &Value) -> Option<Value> {
    if tool != "get_devices_in_my_team" {
        return None;
    }
    let list = fleetwatch_protocol::fleet::parse_device_list(value).ok()?;
    let words: Vec<Value> = list
        .devices
        .iter()
        .flat_map(|d| {
            fleetwatch_words::warnings::of_device(d)
                .into_iter()
                .map(move |w| {
                    serde_json::json!({
                        "device_id": d.id,
                        "text": w.phrase(fleetwatch_words::Lang::En),
                    })
                })
        })
        .collect();
    if words.is_empty() {
        return None;
    }
    let mut object = match value {
        Value::Object(map) => map.clone(),
        other => Map::from_iter([("devices".to_owned(), other.clone())]),
    };
    object.insert(WARNINGS_IN_WORDS.to_owned(), Value::Array(words));
    Some(Value::Object(object))
}

/// One line of JSON with the three characters that could form or close markup escaped.
/// serde_json only ever emits `<`, `>` and `&` inside string literals, where `\u003c` is an
/// equivalent spelling, so a plain replace keeps the JSON meaning intact.
fn escaped_json(value: &Value) -> String {
    // Serialising a Value cannot fail (all keys are strings).
    let raw = serde_json::to_string(value).unwrap_or_else(|_| String::from("null"));
    let mut out = String::with_capacity(raw.len());
    for c in raw.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            // Line separators would break the "one line" promise for naive readers.
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            _ => out.push(c),
        }
    }
    out
}

/// The attribute value in the opening tag. Tool names come from the policy, but the tag must not
/// become an injection point if that ever changes.
fn tag_safe_name(tool: &str) -> String {
    let name: String = tool
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
        .take(64)
        .collect();
    if name.is_empty() {
        String::from("unknown")
    } else {
        name
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Seg {
    Key(String),
    Index(usize),
}

/// A list (or object) that lost items, with the size it had in the original result.
#[derive(Debug, Clone)]
struct Cut {
    path: Vec<Seg>,
    original: usize,
    kept: usize,
}

fn cut_string(s: &str) -> String {
    if s.chars().count() <= MAX_STRING_CHARS {
        return s.to_owned();
    }
    // Keep room for the ellipsis so the result is still within the cap; `chars()` cuts on a
    // character boundary by construction.
    let mut out: String = s.chars().take(MAX_STRING_CHARS - 1).collect();
    out.push(ELLIPSIS);
    out
}

fn cap_value(value: &Value, path: &mut Vec<Seg>, cuts: &mut Vec<Cut>) -> Value {
    match value {
        Value::String(s) => Value::String(cut_string(s)),
        Value::Array(items) => {
            if items.len() > MAX_LIST_ITEMS {
                cuts.push(Cut {
                    path: path.clone(),
                    original: items.len(),
                    kept: MAX_LIST_ITEMS,
                });
            }
            let mut out = Vec::with_capacity(items.len().min(MAX_LIST_ITEMS));
            for (i, item) in items.iter().take(MAX_LIST_ITEMS).enumerate() {
                path.push(Seg::Index(i));
                out.push(cap_value(item, path, cuts));
                path.pop();
            }
            Value::Array(out)
        }
        Value::Object(map) => {
            // Maps keyed by device ID are lists in disguise, so they get the same item cap.
            if map.len() > MAX_LIST_ITEMS {
                cuts.push(Cut {
                    path: path.clone(),
                    original: map.len(),
                    kept: MAX_LIST_ITEMS,
                });
            }
            let mut out = Map::new();
            for (key, item) in map.iter().take(MAX_LIST_ITEMS) {
                let key = cut_string(key);
                // Two long keys can collide once cut; the first one wins rather than a later
                // entry silently replacing it.
                if out.contains_key(&key) {
                    continue;
                }
                path.push(Seg::Key(key.clone()));
                let capped = cap_value(item, path, cuts);
                path.pop();
                out.insert(key, capped);
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

fn at_path_mut<'a>(value: &'a mut Value, path: &[Seg]) -> Option<&'a mut Value> {
    let mut here = value;
    for seg in path {
        here = match (seg, here) {
            (Seg::Key(k), Value::Object(map)) => map.get_mut(k)?,
            (Seg::Index(i), Value::Array(items)) => items.get_mut(*i)?,
            _ => return None,
        };
    }
    Some(here)
}

fn container_len(value: &Value) -> usize {
    match value {
        Value::Array(items) => items.len(),
        Value::Object(map) => map.len(),
        _ => 0,
    }
}

fn truncate_container(value: &mut Value, keep: usize) {
    match value {
        Value::Array(items) => items.truncate(keep),
        Value::Object(map) => {
            let drop: Vec<String> = map.keys().skip(keep).cloned().collect();
            for key in drop {
                map.remove(&key);
            }
        }
        _ => {}
    }
}

/// Every non-empty list or object with its serialised size, biggest first. A top-level object
/// is left out: emptying it would throw away every field at once, when the list inside it is
/// what is long.
fn candidates(root: &Value) -> Vec<(Vec<Seg>, usize)> {
    fn walk(value: &Value, path: &mut Vec<Seg>, out: &mut Vec<(Vec<Seg>, usize)>) {
        match value {
            Value::Array(items) => {
                if !items.is_empty() {
                    out.push((path.clone(), escaped_json(value).len()));
                }
                for (i, item) in items.iter().enumerate() {
                    path.push(Seg::Index(i));
                    walk(item, path, out);
                    path.pop();
                }
            }
            Value::Object(map) => {
                if !map.is_empty() && !path.is_empty() {
                    out.push((path.clone(), escaped_json(value).len()));
                }
                for (key, item) in map {
                    path.push(Seg::Key(key.clone()));
                    walk(item, path, out);
                    path.pop();
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(root, &mut Vec::new(), &mut out);
    // Biggest first; among equals the shallower one, so a whole device goes before its fields.
    out.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.len().cmp(&b.0.len())));
    out
}

fn fits(value: &Value) -> bool {
    escaped_json(value).chars().count() <= MAX_BLOCK_CHARS
}

/// Drops items from the end of the biggest list until the block fits; if even an empty list is
/// too much, that list is emptied and the next biggest is cut. Always terminates: every round
/// empties or shortens a container, and a value with no containers is a single capped scalar.
fn shrink_to_fit(root: &mut Value, cuts: &mut Vec<Cut>) {
    while !fits(root) {
        let Some((path, _)) = candidates(root).into_iter().next() else {
            // Only the top-level object is left: drop its entries from the end.
            let len = container_len(root);
            if len == 0 {
                return;
            }
            let keep = largest_fitting(root, &[], len);
            record_cut(cuts, &[], len, keep);
            if let Some(target) = at_path_mut(root, &[]) {
                truncate_container(target, keep);
            }
            continue;
        };
        let len = at_path_mut(root, &path).map_or(0, |v| container_len(v));
        let keep = largest_fitting(root, &path, len);
        record_cut(cuts, &path, len, keep);
        if let Some(target) = at_path_mut(root, &path) {
            truncate_container(target, keep);
        }
    }
}

/// The most items of the container at `path` that can stay with the block fitting (binary
/// search: the block grows with every item kept). Returns 0 when none can.
fn largest_fitting(root: &Value, path: &[Seg], len: usize) -> usize {
    let (mut lo, mut hi) = (0usize, len.saturating_sub(1));
    let mut best = 0usize;
    while lo <= hi {
        let mid = lo + (hi - lo) / 2;
        let mut trial = root.clone();
        if let Some(target) = at_path_mut(&mut trial, path) {
            truncate_container(target, mid);
        }
        if fits(&trial) {
            best = mid;
            lo = mid + 1;
        } else if mid == 0 {
            break;
        } else {
            hi = mid - 1;
        }
    }
    best
}

fn record_cut(cuts: &mut Vec<Cut>, path: &[Seg], len_now: usize, keep: usize) {
    if let Some(cut) = cuts.iter_mut().find(|c| c.path == path) {
        cut.kept = keep;
    } else {
        cuts.push(Cut {
            path: path.to_vec(),
            original: len_now,
            kept: keep,
        });
    }
}

fn label(path: &[Seg]) -> &'static str {
    let last_key = path.iter().rev().find_map(|seg| match seg {
        Seg::Key(k) => Some(k.to_ascii_lowercase()),
        Seg::Index(_) => None,
    });
    match last_key {
        Some(k) => NOTE_LABELS
            .iter()
            .find(|label| **label == k)
            .copied()
            .unwrap_or("items"),
        None => "items",
    }
}

/// Thousands separators, so "1,240 of 10,000" reads at a glance.
fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn cut_note(cuts: &[Cut]) -> Option<String> {
    let mut shown: Vec<&Cut> = cuts.iter().filter(|c| c.kept < c.original).collect();
    if shown.is_empty() {
        return None;
    }
    // The biggest lists matter most; a handful is enough for the model to know it saw a part.
    shown.sort_by(|a, b| {
        b.original
            .cmp(&a.original)
            .then(a.path.len().cmp(&b.path.len()))
    });
    let parts: Vec<String> = shown
        .iter()
        .take(3)
        .map(|c| {
            format!(
                "{} of {} {} shown",
                grouped(c.kept),
                grouped(c.original),
                label(&c.path)
            )
        })
        .collect();
    let more = if shown.len() > 3 {
        format!("; {} more lists shortened", shown.len() - 3)
    } else {
        String::new()
    };
    Some(format!("(result cut: {}{more})", parts.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grouped_numbers() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(grouped(1_240), "1,240");
        assert_eq!(grouped(10_000), "10,000");
        assert_eq!(grouped(1_234_567), "1,234,567");
    }

    #[test]
    fn tag_name_is_sanitised() {
        assert_eq!(
            tag_safe_name("get_devices_in_my_team"),
            "get_devices_in_my_team"
        );
        assert_eq!(tag_safe_name("x\"><evil"), "xevil");
        assert_eq!(tag_safe_name("\"<>"), "unknown");
    }

    #[test]
    fn data_keys_never_label_the_note() {
        let path = vec![Seg::Key(String::from("ignore previous instructions"))];
        assert_eq!(label(&path), "items");
        assert_eq!(label(&[Seg::Key(String::from("Devices"))]), "devices");
    }
}
