//! Canonical JSON: the known-answer vectors and the properties that make one function safe to
//! use for both hashing and sending.

// Test code: a panic is the failure report, and fixed-size fixtures are indexed directly.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use fleetwatch_protocol::canonical::{self, CanonicalError, MAX_DEPTH};
use proptest::prelude::*;
use serde_json::{Value, json};

const VECTORS: &str = include_str!("vectors/canonical.json");

fn kind(error: &CanonicalError) -> &'static str {
    match error {
        CanonicalError::Syntax { .. } => "syntax",
        CanonicalError::NotObject => "not_object",
        CanonicalError::DuplicateKey(_) => "duplicate_key",
        CanonicalError::NotInteger => "not_integer",
        CanonicalError::TooDeep(_) => "too_deep",
        CanonicalError::IntegerRange => "integer_range",
    }
}

#[test]
fn known_answer_vectors() {
    let file: Value = serde_json::from_str(VECTORS).expect("vector file is JSON");
    let cases = file["cases"].as_array().expect("cases array");
    assert!(cases.len() >= 45, "only {} vectors", cases.len());
    let mut failures = Vec::new();
    for case in cases {
        let name = case["name"].as_str().expect("name");
        let input = case["input"].as_str().expect("input");
        let got = canonical::from_str(input);
        match (case.get("output"), case.get("error")) {
            (Some(output), None) => {
                let output = output.as_str().expect("output string");
                match &got {
                    Ok(c) if c.as_str() == output => {
                        // The output is itself canonical.
                        let again = canonical::from_str(output).map(|c| c.into_string());
                        if again.as_deref() != Ok(output) {
                            failures.push(format!("{name}: output not a fixed point: {again:?}"));
                        }
                    }
                    other => failures.push(format!("{name}: expected {output:?}, got {other:?}")),
                }
            }
            (None, Some(error)) => {
                let error = error.as_str().expect("error string");
                match &got {
                    Err(e) if kind(e) == error => {}
                    other => failures.push(format!("{name}: expected {error}, got {other:?}")),
                }
            }
            _ => failures.push(format!("{name}: needs exactly one of output/error")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn vector_names_are_unique_and_cover_every_error_kind() {
    let file: Value = serde_json::from_str(VECTORS).expect("vector file is JSON");
    let cases = file["cases"].as_array().expect("cases array");
    let mut names = std::collections::BTreeSet::new();
    let mut kinds = std::collections::BTreeSet::new();
    for case in cases {
        assert!(
            names.insert(case["name"].as_str().expect("name")),
            "duplicate name"
        );
        if let Some(error) = case.get("error") {
            kinds.insert(error.as_str().expect("error"));
        }
    }
    let expected = [
        "duplicate_key",
        "not_integer",
        "not_object",
        "syntax",
        "too_deep",
    ];
    assert_eq!(kinds.into_iter().collect::<Vec<_>>(), expected);
}

#[test]
fn duplicate_key_error_names_the_unescaped_key() {
    assert_eq!(
        canonical::from_str(r#"{"é":1,"\u00e9":2}"#),
        Err(CanonicalError::DuplicateKey("é".to_owned()))
    );
}

#[test]
fn syntax_error_reports_the_offset() {
    match canonical::from_str(r#"{"a":1} x"#) {
        Err(CanonicalError::Syntax { offset, .. }) => assert_eq!(offset, 8),
        other => panic!("expected a syntax error, got {other:?}"),
    }
}

#[test]
fn depth_limit_applies_to_objects_and_values() {
    // MAX_DEPTH levels counting the top object are accepted; one more is not.
    let nested = |levels: usize| {
        let mut text = String::new();
        for _ in 1..levels {
            text.push_str("{\"k\":");
        }
        text.push_str("{}");
        for _ in 1..levels {
            text.push('}');
        }
        text
    };
    assert!(canonical::from_str(&nested(MAX_DEPTH)).is_ok());
    assert_eq!(
        canonical::from_str(&nested(MAX_DEPTH + 1)),
        Err(CanonicalError::TooDeep(MAX_DEPTH))
    );
    let deep: Value = serde_json::from_str(&nested(MAX_DEPTH + 1)).expect("serde_json parses it");
    assert_eq!(
        canonical::from_value(&deep),
        Err(CanonicalError::TooDeep(MAX_DEPTH))
    );
    // Far past the limit the parser still answers instead of exhausting the stack.
    let huge = "[".repeat(100_000);
    assert_eq!(
        canonical::from_str(&format!("{{\"a\":{huge}")),
        Err(CanonicalError::TooDeep(MAX_DEPTH))
    );
}

#[test]
fn from_value_refuses_floats_and_non_objects() {
    assert_eq!(
        canonical::from_value(&json!({"a": 1.5})),
        Err(CanonicalError::NotInteger)
    );
    assert_eq!(
        canonical::from_value(&json!({"a": [1, {"b": 2.0}]})),
        Err(CanonicalError::NotInteger)
    );
    assert_eq!(
        canonical::from_value(&json!([1])),
        Err(CanonicalError::NotObject)
    );
    assert_eq!(
        canonical::from_value(&json!("x")),
        Err(CanonicalError::NotObject)
    );
}

#[test]
fn from_value_keeps_64_bit_integers_exact() {
    let c =
        canonical::from_value(&json!({"u": u64::MAX, "i": i64::MIN, "z": 0})).expect("canonical");
    assert_eq!(
        c.as_str(),
        r#"{"i":-9223372036854775808,"u":18446744073709551615,"z":0}"#
    );
}

#[test]
fn to_value_refuses_integers_beyond_64_bits() {
    let big = canonical::from_str(r#"{"a":18446744073709551616}"#).expect("canonical");
    assert_eq!(big.to_value(), Err(CanonicalError::IntegerRange));
    let low = canonical::from_str(r#"{"a":-9223372036854775809}"#).expect("canonical");
    assert_eq!(low.to_value(), Err(CanonicalError::IntegerRange));
    let edge = canonical::from_str(r#"{"a":18446744073709551615,"b":-9223372036854775808}"#)
        .expect("canonical");
    assert_eq!(edge.to_value(), Ok(json!({"a": u64::MAX, "b": i64::MIN})));
}

#[test]
fn text_and_value_agree() {
    let text = "{\"name\":\"Sala B\u{00f3}veda\",\"ids\":[\"a1b2c3d4\"],\"n\":-3,\"ok\":true}";
    let value: Value = serde_json::from_str(text).expect("json");
    assert_eq!(
        canonical::from_str(text).expect("text"),
        canonical::from_value(&value).expect("value")
    );
}

// ---- properties -------------------------------------------------------------------------

fn arb_string() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z0-9 _-]{0,8}",
        any::<String>(),
        proptest::collection::vec(
            prop_oneof![
                Just('"'),
                Just('\\'),
                Just('/'),
                Just('\u{0}'),
                Just('\n'),
                Just('\u{1f}'),
                Just('\u{7f}'),
                Just('é'),
                Just('\u{2028}'),
                Just('😀'),
                Just('a'),
            ],
            0..8
        )
        .prop_map(|chars| chars.into_iter().collect()),
    ]
}

fn arb_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        arb_string().prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::btree_map(arb_string(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn arb_object() -> impl Strategy<Value = Value> {
    proptest::collection::btree_map(arb_string(), arb_value(), 0..6)
        .prop_map(|m| Value::Object(m.into_iter().collect()))
}

/// A tiny deterministic generator so one proptest seed fixes every rendering choice.
struct Choices(u64);

impl Choices {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn whitespace(c: &mut Choices, out: &mut String) {
    for _ in 0..c.pick(3) {
        out.push([' ', '\t', '\n', '\r'][c.pick(4)]);
    }
}

/// Writes a string with a random mix of raw characters and escapes.
fn render_string(s: &str, c: &mut Choices, out: &mut String) {
    out.push('"');
    for ch in s.chars() {
        let must_escape = ch == '"' || ch == '\\' || (ch as u32) < 0x20;
        if must_escape || c.pick(4) == 0 {
            match c.pick(3) {
                0 if ch == '/' => out.push_str("\\/"),
                0 if ch == '\n' => out.push_str("\\n"),
                1 if ch == '"' => out.push_str("\\\""),
                _ => {
                    let mut units = [0u16; 2];
                    for unit in ch.encode_utf16(&mut units) {
                        if c.pick(2) == 0 {
                            out.push_str(&format!("\\u{unit:04x}"));
                        } else {
                            out.push_str(&format!("\\u{unit:04X}"));
                        }
                    }
                }
            }
        } else {
            out.push(ch);
        }
    }
    out.push('"');
}

/// Renders a value as JSON text with shuffled keys, random whitespace and random escapes.
fn render(value: &Value, c: &mut Choices, out: &mut String) {
    whitespace(c, out);
    match value {
        Value::Null | Value::Bool(_) | Value::Number(_) => out.push_str(&value.to_string()),
        Value::String(s) => render_string(s, c, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                render(item, c, out);
            }
            whitespace(c, out);
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            for i in (1..entries.len()).rev() {
                entries.swap(i, c.pick(i + 1));
            }
            out.push('{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                whitespace(c, out);
                render_string(key, c, out);
                whitespace(c, out);
                out.push(':');
                render(item, c, out);
            }
            whitespace(c, out);
            out.push('}');
        }
    }
    whitespace(c, out);
}

/// An independent statement of the canonical form: keys sorted by bytes, serde_json's string
/// escaping (which is the minimal one), no whitespace.
fn reference(value: &Value) -> String {
    match value {
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(reference).collect();
            format!("[{}]", parts.join(","))
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
            let parts: Vec<String> = keys
                .into_iter()
                .map(|k| {
                    format!(
                        "{}:{}",
                        serde_json::to_string(k).expect("string"),
                        reference(&map[k])
                    )
                })
                .collect();
            format!("{{{}}}", parts.join(","))
        }
        other => serde_json::to_string(other).expect("scalar"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn canonical_matches_the_reference(value in arb_object()) {
        let c = canonical::from_value(&value).expect("canonical");
        prop_assert_eq!(c.as_str(), reference(&value));
    }

    #[test]
    fn idempotent(value in arb_object()) {
        let c = canonical::from_value(&value).expect("canonical");
        let again = canonical::from_str(c.as_str()).expect("canonical of canonical");
        prop_assert_eq!(&again, &c);
    }

    #[test]
    fn insensitive_to_key_order_whitespace_and_escapes(value in arb_object(), seed in 1u64..) {
        let mut text = String::new();
        render(&value, &mut Choices(seed), &mut text);
        let from_text = canonical::from_str(&text);
        prop_assert_eq!(from_text, canonical::from_value(&value), "text: {}", text);
    }

    #[test]
    fn round_trips_through_serde_json(value in arb_object()) {
        let c = canonical::from_value(&value).expect("canonical");
        prop_assert_eq!(&c.to_value().expect("value"), &value);
        let parsed: Value = serde_json::from_str(c.as_str()).expect("serde_json reads it");
        prop_assert_eq!(&parsed, &value);
    }

    #[test]
    fn big_integers_survive_digit_for_digit(digits in "[1-9][0-9]{0,80}", negative: bool) {
        let number = if negative { format!("-{digits}") } else { digits.clone() };
        let c = canonical::from_str(&format!("{{ \"n\" : {number} }}")).expect("canonical");
        prop_assert_eq!(c.as_str(), format!("{{\"n\":{number}}}"));
    }

    #[test]
    fn arbitrary_text_never_panics(text in any::<String>()) {
        let _ = canonical::from_str(&text);
    }

    #[test]
    fn json_like_text_never_panics(text in "[{}\\[\\]\",:0-9a-z\\\\ .eE+-]{0,40}") {
        if let Ok(c) = canonical::from_str(&text) {
            prop_assert_eq!(canonical::from_str(c.as_str()), Ok(c.clone()));
        }
    }
}
