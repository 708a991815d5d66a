//! Fleet answers that are JSON except for a lone UTF-16 surrogate escape.
//!
//! A device name can hold `\ud800` with no low surrogate after it (a name cut between the two
//! halves of an emoji, or written by a tool that does not care). A strict parser refuses the
//! whole document for it, and one such name would hide every other device from the operator.
//! [`lone_surrogates_replaced`] turns each lone surrogate escape into `\ufffd` (the
//! replacement character, U+FFFD) in that one string, and leaves everything else — pairs
//! included — byte for byte, so the rest of the fleet is read as it was sent.
//!
//! Only fleet data goes through here. What is signed or bound (claims, canonical arguments,
//! passkey client data) stays strict.

use std::borrow::Cow;

/// The value of the four hex digits at `bytes[at..at + 4]`, if they are four hex digits.
fn hex4(bytes: &[u8], at: usize) -> Option<u16> {
    let digits = bytes.get(at..at + 4)?;
    let text = std::str::from_utf8(digits).ok()?;
    u16::from_str_radix(text, 16)
        .ok()
        .filter(|_| digits.iter().all(u8::is_ascii_hexdigit))
}

/// `text` with every lone surrogate escape replaced by `\ufffd`; borrowed when there was none.
///
/// Backslashes only occur inside JSON strings, so the scan needs no string tracking: each
/// backslash starts an escape, `\\` is skipped as a pair (so `\\ud800` is a backslash and
/// text, not an escape), and `\uXXXX` is judged by its value.
pub fn lone_surrogates_replaced(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        if bytes.get(i) != Some(&b'\\') {
            i += 1;
            continue;
        }
        if bytes.get(i + 1) != Some(&b'u') {
            i += 2;
            continue;
        }
        let Some(unit) = hex4(bytes, i + 2) else {
            i += 2;
            continue;
        };
        let lone = match unit {
            0xD800..=0xDBFF => {
                let low = (bytes.get(i + 6) == Some(&b'\\') && bytes.get(i + 7) == Some(&b'u'))
                    .then(|| hex4(bytes, i + 8))
                    .flatten();
                if low.is_some_and(|l| (0xDC00..=0xDFFF).contains(&l)) {
                    // A proper pair: keep both halves.
                    i += 12;
                    continue;
                }
                true
            }
            0xDC00..=0xDFFF => true,
            _ => false,
        };
        if lone {
            let buffer = out.get_or_insert_with(|| String::with_capacity(text.len()));
            buffer.push_str(text.get(copied..i).unwrap_or_default());
            buffer.push_str("\\ufffd");
            copied = i + 6;
        }
        i += 6;
    }
    match out {
        None => Cow::Borrowed(text),
        Some(mut buffer) => {
            buffer.push_str(text.get(copied..).unwrap_or_default());
            Cow::Owned(buffer)
        }
    }
}

/// Parses fleet JSON with [`lone_surrogates_replaced`] applied first.
pub fn parse(text: &str) -> serde_json::Result<serde_json::Value> {
    serde_json::from_str(&lone_surrogates_replaced(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_lone_surrogates_change() {
        let cases = [
            (r#""Room \ud800 7""#, r#""Room \ufffd 7""#),
            (r#""\udc00x""#, r#""\ufffdx""#),
            (r#""end \uD83D""#, r#""end \ufffd""#),
            (r#""\ud800\ud800\udc00""#, r#""\ufffd\ud800\udc00""#),
            (r#""pair \ud83d\ude00 kept""#, r#""pair \ud83d\ude00 kept""#),
            (r#""not an escape \\ud800""#, r#""not an escape \\ud800""#),
            (r#""\\\ud800""#, r#""\\\ufffd""#),
            (r#""plain \n and \u00e9""#, r#""plain \n and \u00e9""#),
            (r#""short \ud8""#, r#""short \ud8""#),
        ];
        for (input, expected) in cases {
            assert_eq!(lone_surrogates_replaced(input), expected, "{input}");
        }
        assert!(matches!(
            lone_surrogates_replaced(r#"{"a": "b"}"#),
            Cow::Borrowed(_)
        ));
        let value = parse(r#"{"devices": [{"Name": "Room \ud800 7"}, {"Name": "Ok"}]}"#)
            .unwrap_or_default();
        assert_eq!(
            value.pointer("/devices/0/Name"),
            Some(&serde_json::json!("Room \u{FFFD} 7"))
        );
        assert_eq!(
            value.pointer("/devices/1/Name"),
            Some(&serde_json::json!("Ok"))
        );
    }
}
