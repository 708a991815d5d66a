//! The hand-written schema subset (`fleetwatch_protocol::schema`) against jsonschema, draft
//! 2020-12: both must give the same verdict on every registry schema — the read and propose
//! entries of `tool_policy.yaml` and the policy fixtures — for argument objects generated
//! valid from each schema and then broken in the ways a model or an attacker would break them
//! (wrong types, extra and missing fields, counts and lengths at and past their bounds,
//! strings one character off a pattern, Unicode look-alikes, a trailing newline, numbers such
//! as `1.0`, `1e2`, `-0` and huge ones). A second property does the same for random schemas
//! inside the subset, so the validator is held to the standard beyond today's registry.
// Test code: a panic is the failure report, and fixed fixtures are indexed directly.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

#[path = "../../fuzz/src/checks.rs"]
#[allow(dead_code)]
mod checks;

use std::sync::LazyLock;

use fleetwatch_protocol::policy::Policy;
use fleetwatch_protocol::schema::Schema;
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{Map, Value, json};

const SHIPPED: &str = include_str!("../../tool_policy.yaml");
const PENDING: &str = include_str!("data/policy_pending.yaml");

/// Every schema of every registry file, named `file:section/tool`.
fn registry() -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for (file, text) in [
        ("tool_policy.yaml", SHIPPED),
        ("policy_pending.yaml", PENDING),
    ] {
        let policy = Policy::from_yaml(text).unwrap();
        for tool in policy.read_tools() {
            out.push((format!("{file}:read/{}", tool.name), tool.schema.clone()));
        }
        for entry in policy.propose_entries() {
            out.push((
                format!("{file}:propose/{}", entry.name),
                entry.schema.clone().unwrap(),
            ));
        }
    }
    out
}

struct Pair {
    name: String,
    raw: Value,
    mine: Schema,
    theirs: jsonschema::Validator,
}

static PAIRS: LazyLock<Vec<Pair>> = LazyLock::new(|| {
    registry()
        .into_iter()
        .map(|(name, raw)| Pair {
            mine: Schema::compile(&raw).unwrap_or_else(|e| panic!("{name}: {e}")),
            theirs: jsonschema::draft202012::new(&raw).unwrap(),
            name,
            raw,
        })
        .collect()
});

fn agree(pair: &Pair, value: &Value) -> Result<bool, TestCaseError> {
    let mine = pair.mine.is_valid(value);
    let theirs = pair.theirs.is_valid(value);
    prop_assert_eq!(
        mine,
        theirs,
        "{}: the subset says {} and jsonschema says {} for {}",
        pair.name,
        mine,
        theirs,
        value
    );
    Ok(mine)
}

// ---- values generated from a schema --------------------------------------------------------

fn bound(schema: &Value, key: &str) -> Option<u64> {
    schema.get(key).and_then(Value::as_u64)
}

/// Values the schema accepts (the test checks that jsonschema agrees they are valid).
fn valid(schema: &Value) -> BoxedStrategy<Value> {
    if let Some(options) = schema.get("enum").and_then(Value::as_array) {
        return proptest::sample::select(options.clone()).boxed();
    }
    if let Some(value) = schema.get("const") {
        return Just(value.clone()).boxed();
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("object") => {
            let required: Vec<String> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| {
                    r.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            let properties: Vec<(String, Value)> = schema
                .get("properties")
                .and_then(Value::as_object)
                .map(|p| p.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
                .unwrap_or_default();
            let members: Vec<BoxedStrategy<Option<(String, Value)>>> = properties
                .into_iter()
                .map(|(name, sub)| {
                    let value = valid(&sub);
                    if required.contains(&name) {
                        value.prop_map(move |v| Some((name.clone(), v))).boxed()
                    } else {
                        proptest::option::of(value)
                            .prop_map(move |v| v.map(|v| (name.clone(), v)))
                            .boxed()
                    }
                })
                .collect();
            members
                .prop_map(|members| {
                    Value::Object(members.into_iter().flatten().collect::<Map<_, _>>())
                })
                .boxed()
        }
        Some("array") => {
            let min = bound(schema, "minItems").unwrap_or(0) as usize;
            let max = bound(schema, "maxItems").map_or(min + 4, |m| (m as usize).min(min + 4));
            let items = schema.get("items").cloned().unwrap_or(json!({}));
            proptest::collection::vec(valid(&items), min..=max)
                .prop_map(Value::from)
                .boxed()
        }
        Some("string") => {
            if let Some(pattern) = schema.get("pattern").and_then(Value::as_str) {
                let body = pattern
                    .strip_prefix('^')
                    .and_then(|p| p.strip_suffix('$'))
                    .unwrap();
                return proptest::string::string_regex(body)
                    .unwrap()
                    .prop_map(Value::from)
                    .boxed();
            }
            let min = bound(schema, "minLength").unwrap_or(0) as usize;
            let max = bound(schema, "maxLength").map_or(min + 12, |m| m as usize);
            proptest::collection::vec(any::<char>(), min..=max)
                .prop_map(|c| Value::from(c.into_iter().collect::<String>()))
                .boxed()
        }
        Some("integer") => {
            let lo = schema
                .get("minimum")
                .and_then(Value::as_i64)
                .unwrap_or(-1000);
            let hi = schema
                .get("maximum")
                .and_then(Value::as_i64)
                .unwrap_or(1000);
            (lo..=hi).prop_map(Value::from).boxed()
        }
        Some("number") => prop_oneof![
            (-1000i64..1000).prop_map(Value::from),
            (-1e6f64..1e6).prop_map(Value::from),
        ]
        .boxed(),
        Some("boolean") => any::<bool>().prop_map(Value::from).boxed(),
        _ => Just(Value::Null).boxed(),
    }
}

// ---- the ways a value is broken ------------------------------------------------------------

fn number(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

/// Values of every JSON type, numbers in the spellings that trip validators up.
fn odd_values() -> Vec<Value> {
    vec![
        Value::Null,
        json!(true),
        json!(false),
        json!(0),
        json!(1),
        json!(-1),
        number("1.0"),
        number("1e2"),
        number("-0"),
        number("-0.0"),
        number("0.5"),
        number("1e300"),
        number("-1e300"),
        number("18446744073709551615"),
        number("18446744073709551616"),
        number("-9223372036854775808"),
        number("123456789012345678901234567890"),
        json!(""),
        json!("x"),
        json!("start"),
        json!("19012341234"),
        json!("19012341234-1"),
        json!("a".repeat(1000)),
        json!([]),
        json!(["19012341234"]),
        json!({}),
        json!({"a": 1}),
    ]
}

/// Characters that sit next to the registry's patterns: ID alphabets in other cases and
/// scripts, separators, line ends, and characters outside the Basic Multilingual Plane.
const CHARS: &[char] = &[
    'a', 'f', 'g', 'A', 'F', 'Z', '0', '9', '-', '_', ':', 'T', 'Z', ' ', '\n', '\r', '\t',
    '\u{0}', 'é', '\u{663}', '\u{ff10}', '\u{2028}', '\u{200b}', '😀', '$', '^', '|', '.',
];

fn paths(value: &Value, here: &mut Vec<PathStep>, out: &mut Vec<Vec<PathStep>>) {
    out.push(here.clone());
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                here.push(PathStep::Key(k.clone()));
                paths(v, here, out);
                here.pop();
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                here.push(PathStep::At(i));
                paths(v, here, out);
                here.pop();
            }
        }
        _ => {}
    }
}

#[derive(Clone, Debug)]
enum PathStep {
    Key(String),
    At(usize),
}

fn at<'a>(value: &'a mut Value, path: &[PathStep]) -> &'a mut Value {
    path.iter().fold(value, |v, step| match step {
        PathStep::Key(k) => v.get_mut(k).unwrap(),
        PathStep::At(i) => v.get_mut(*i).unwrap(),
    })
}

/// One edit at one place in the value, chosen by the indices.
fn edit(value: &mut Value, place: Index, kind: u8, choice: Index) {
    let mut all = Vec::new();
    paths(value, &mut Vec::new(), &mut all);
    let path = all[place.index(all.len())].clone();
    let odd = odd_values();
    let target = at(value, &path);
    match (kind, &mut *target) {
        (0, _) => *target = odd[choice.index(odd.len())].clone(),
        (1, Value::String(text)) => {
            let mut chars: Vec<char> = text.chars().collect();
            let c = CHARS[choice.index(CHARS.len())];
            let i = choice.index(chars.len() + 1);
            match choice.index(5) {
                0 => chars.insert(i, c),
                1 if !chars.is_empty() => {
                    let j = i.min(chars.len() - 1);
                    chars[j] = c;
                }
                2 if !chars.is_empty() => {
                    chars.remove(i.min(chars.len() - 1));
                }
                3 => chars.push('\n'),
                _ => chars.extend(chars.clone()),
            }
            *text = chars.into_iter().collect();
        }
        (2, Value::Object(map)) => {
            let names = [
                "extra",
                "",
                "device_id",
                "device_ids",
                "action",
                "Device_ids",
                "device_ids ",
                "__proto__",
            ];
            let name = names[choice.index(names.len())];
            if map.contains_key(name) {
                map.remove(name);
            } else {
                map.insert(name.to_owned(), odd[choice.index(odd.len())].clone());
            }
        }
        (2, Value::Array(items)) => match choice.index(4) {
            0 => items.clear(),
            1 if !items.is_empty() => {
                items.pop();
            }
            2 => {
                // Past a count bound: 101 is one more than the registry's largest maxItems.
                let copy = items.first().cloned().unwrap_or(json!("19012341234"));
                items.resize(101, copy);
            }
            _ => {
                let copy = items.first().cloned().unwrap_or(Value::Null);
                items.push(copy);
            }
        },
        (2, Value::Number(n)) => {
            let shifted = n.as_i64().map_or_else(
                || number("0.5"),
                |i| Value::from(i.saturating_add(choice.index(3) as i64 - 1)),
            );
            *target = shifted;
        }
        (3, Value::Object(map)) if !map.is_empty() => {
            let key = map.keys().nth(choice.index(map.len())).cloned().unwrap();
            map.remove(&key);
        }
        _ => *target = odd[choice.index(odd.len())].clone(),
    }
}

fn broken(schema: &Value) -> BoxedStrategy<Value> {
    (
        valid(schema),
        proptest::collection::vec((any::<Index>(), 0u8..4, any::<Index>()), 1..4),
    )
        .prop_map(|(mut value, edits)| {
            for (place, kind, choice) in edits {
                edit(&mut value, place, kind, choice);
            }
            value
        })
        .boxed()
}

fn cases(default: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default);
    ProptestConfig::with_cases(cases)
}

fn each_registry_schema<S: Strategy<Value = Value> + 'static>(
    make: fn(&Value) -> S,
) -> impl Strategy<Value = (usize, Value)> {
    let arms: Vec<BoxedStrategy<(usize, Value)>> = PAIRS
        .iter()
        .enumerate()
        .map(|(i, pair)| make(&pair.raw).prop_map(move |v| (i, v)).boxed())
        .collect();
    proptest::strategy::Union::new(arms)
}

proptest! {
    #![proptest_config(cases(2000))]

    #[test]
    fn generated_valid_arguments_pass_both(case in each_registry_schema(valid)) {
        let (i, value) = case;
        let pair = &PAIRS[i];
        prop_assert!(agree(pair, &value)?, "{}: a generated valid value was refused: {}", pair.name, value);
    }

    #[test]
    fn broken_arguments_get_the_same_verdict(case in each_registry_schema(broken)) {
        let (i, value) = case;
        agree(&PAIRS[i], &value)?;
    }

    #[test]
    fn the_fuzz_property_holds_on_generated_arguments(case in each_registry_schema(broken)) {
        checks::schema(serde_json::to_string(&case.1).unwrap().as_bytes());
    }
}

// ---- fixed boundary cases -------------------------------------------------------------------

/// Every registry schema, every property: missing, replaced by every odd value, and for the
/// registry's ID and time fields the values right at and past their edges. Counts both
/// verdicts, so a generator that only ever produced refusals would be caught.
#[test]
fn boundary_cases_get_the_same_verdict_and_both_verdicts_occur() {
    let mut accepted = 0;
    let mut refused = 0;
    let edges = [
        "0123abcd",
        "0123abc",
        &"a".repeat(32),
        &"a".repeat(33),
        "0123ABCD",
        "0123abcd\n",
        "\n0123abcd",
        "0123abcd-1",
        "0123abcd-0",
        "0123abcd-999",
        "0123abcd-1000",
        "0123abcd-01",
        "6f1c2a9e-3b4d-4c5e-8f70-123456789abc",
        "6F1C2A9E-3B4D-4C5E-8F70-123456789ABC",
        "6f1c2a9e-3b4d-4c5e-8f70-123456789ab",
        "2026-09-24T20:08:00Z",
        "2026-09-24T20:08:00Z\n",
        "2026-09-24 20:08:00Z",
        "\u{663}\u{663}\u{663}\u{663}-09-24T20:08:00Z",
        "1",
        "999",
        "1000",
        "0",
        "start",
        "stop",
        "Stop",
        "evt_2026-09-24",
        &format!("e{}", "x".repeat(127)),
        &format!("e{}", "x".repeat(128)),
        "-evt",
        "évt",
        "",
    ];
    for pair in PAIRS.iter() {
        let base = proptest::strategy::ValueTree::current(
            &valid(&pair.raw)
                .new_tree(&mut proptest::test_runner::TestRunner::deterministic())
                .unwrap(),
        );
        let mut variants = vec![base.clone()];
        if let Value::Object(map) = &base {
            let properties = pair.raw["properties"].as_object().unwrap();
            for name in properties.keys() {
                let mut without = map.clone();
                without.remove(name);
                variants.push(Value::Object(without));
                for odd in odd_values()
                    .into_iter()
                    .chain(edges.iter().map(|e| json!(e)))
                    .chain(edges.iter().map(|e| json!([e])))
                {
                    let mut with = map.clone();
                    with.insert(name.clone(), odd);
                    variants.push(Value::Object(with));
                }
                for count in [0, 1, 99, 100, 101] {
                    let mut with = map.clone();
                    with.insert(name.clone(), json!(vec!["0123abcd"; count]));
                    variants.push(Value::Object(with));
                }
            }
            let mut extra = map.clone();
            extra.insert("extra".into(), json!(1));
            variants.push(Value::Object(extra));
        }
        variants.extend(odd_values());
        for value in &variants {
            let mine = pair.mine.is_valid(value);
            assert_eq!(
                mine,
                pair.theirs.is_valid(value),
                "{}: verdicts differ for {value}",
                pair.name
            );
            if mine {
                accepted += 1;
            } else {
                refused += 1;
            }
        }
    }
    assert!(
        accepted > 100 && refused > 1000,
        "{accepted} accepted, {refused} refused"
    );
}

// ---- random schemas inside the subset --------------------------------------------------------

/// Patterns in the subset's syntax over a small alphabet, so generated strings hit them.
fn pattern_body() -> impl Strategy<Value = String> {
    let atom = prop_oneof![
        Just("a".to_owned()),
        Just("b".to_owned()),
        Just("0".to_owned()),
        Just("-".to_owned()),
        Just("\\.".to_owned()),
        Just("[a-c]".to_owned()),
        Just("[0-9]".to_owned()),
        Just("[ab_-]".to_owned()),
        Just("[A-Z]".to_owned()),
    ];
    let quantified = (
        atom,
        prop_oneof![
            Just(String::new()),
            Just("?".to_owned()),
            Just("*".to_owned()),
            Just("+".to_owned()),
            Just("{2}".to_owned()),
            Just("{0,3}".to_owned()),
            Just("{1,}".to_owned()),
        ],
    )
        .prop_map(|(a, q)| format!("{a}{q}"));
    let sequence = proptest::collection::vec(quantified, 1..4).prop_map(|v| v.concat());
    sequence.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}|{b})")),
            (inner.clone(), "[?*+]?").prop_map(|(a, q)| format!("({a}){q}")),
            (inner.clone(), inner).prop_map(|(a, b)| format!("{a}{b}")),
        ]
    })
}

fn ordered<T: PartialOrd>(low: Option<T>, high: Option<T>) -> (Option<T>, Option<T>) {
    match (low, high) {
        (Some(l), Some(h)) if l > h => (Some(h), Some(l)),
        other => other,
    }
}

fn leaf_schema() -> impl Strategy<Value = Value> {
    prop_oneof![
        (
            pattern_body(),
            proptest::option::of(0u64..4),
            proptest::option::of(0u64..6)
        )
            .prop_map(|(p, min, max)| {
                // The subset refuses a minimum above the maximum (nothing could pass).
                let (min, max) = ordered(min, max);
                let mut s = json!({"type": "string", "pattern": format!("^{p}$")});
                if let Some(min) = min {
                    s["minLength"] = json!(min);
                }
                if let Some(max) = max {
                    s["maxLength"] = json!(max);
                }
                s
            }),
        (
            proptest::option::of(-3i64..3),
            proptest::option::of(-3i64..3)
        )
            .prop_map(|(lo, hi)| {
                let (lo, hi) = ordered(lo, hi);
                let mut s = json!({"type": "integer"});
                if let Some(lo) = lo {
                    s["minimum"] = json!(lo);
                }
                if let Some(hi) = hi {
                    s["maximum"] = json!(hi);
                }
                s
            }),
        Just(json!({"type": "number", "minimum": 0, "maximum": 1})),
        Just(json!({"type": "boolean"})),
        Just(json!({"enum": ["a", "b", 1, true]})),
        Just(json!({"const": 1})),
        Just(json!({"type": "string", "enum": ["a", "ab"]})),
        Just(json!(false)),
    ]
}

fn random_schema() -> impl Strategy<Value = Value> {
    leaf_schema().prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            (
                inner.clone(),
                proptest::option::of(0u64..3),
                proptest::option::of(0u64..4)
            )
                .prop_map(|(items, min, max)| {
                    let (min, max) = ordered(min, max);
                    let mut s = json!({"type": "array", "items": items});
                    if let Some(min) = min {
                        s["minItems"] = json!(min);
                    }
                    if let Some(max) = max {
                        s["maxItems"] = json!(max);
                    }
                    s
                }),
            (
                proptest::collection::btree_map("[pqr]", inner, 0..3),
                proptest::collection::vec("[pqrs]", 0..3)
            )
                .prop_map(|(props, required)| {
                    let mut required: Vec<String> = required;
                    required.sort();
                    required.dedup();
                    json!({
                        "type": "object",
                        "properties": props,
                        "required": required,
                        "additionalProperties": false
                    })
                }),
        ]
    })
}

fn random_instance() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        "[ab0_.A\\-\n]{0,6}".prop_map(Value::from),
        (-4i64..5).prop_map(Value::from),
        Just(number("1.0")),
        Just(number("0.5")),
        Just(number("-0")),
        Just(number("1e2")),
        any::<bool>().prop_map(Value::from),
        Just(Value::Null),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::from),
            proptest::collection::btree_map("[pqrs]", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(cases(3000))]

    #[test]
    fn random_subset_schemas_get_the_same_verdicts(schema in random_schema(), values in proptest::collection::vec(random_instance(), 1..6)) {
        let mine = Schema::compile(&schema);
        prop_assert!(mine.is_ok(), "a generated subset schema was refused: {schema}: {mine:?}");
        let mine = mine.unwrap();
        let theirs = jsonschema::draft202012::new(&schema);
        prop_assert!(theirs.is_ok(), "jsonschema refused {schema}");
        let theirs = theirs.unwrap();
        for value in values {
            prop_assert_eq!(mine.is_valid(&value), theirs.is_valid(&value), "{} on {}", schema, value);
        }
        // The fuzz target's other input shape: a schema and an instance in one array.
        checks::schema(json!([schema, Value::Null]).to_string().as_bytes());
    }
}
