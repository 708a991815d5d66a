//! Canonical JSON: the one encoding that is hashed, signed and compared on both sides.
#![forbid(unsafe_code)]
// A benchmark harness, not shipped code: a failed setup should stop the run loudly, and
// criterion's macros generate undocumented public items.
#![allow(clippy::expect_used, missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use fleetwatch_protocol::canonical;
use serde_json::{Value, json};

/// Proposal arguments as the model sends them: keys out of order, whitespace.
const ARGUMENTS: &str =
    r#"{ "device_ids" : [ "3f9a2c41d7-1" ],   "action":"start", "note": "Aula Magna, 09:00" }"#;

/// A fingerprint-sized object: `n` targets with their live state.
fn fingerprint(n: usize) -> Value {
    let mut map = serde_json::Map::new();
    for i in 0..n {
        map.insert(
            format!("{:010x}", 0x3f9a_0000u64 + i as u64),
            json!({"recording": i % 3 == 0, "online": true, "next_event_start": if i % 2 == 0 { Value::Null } else { json!("2026-03-02T09:00:00Z") }}),
        );
    }
    Value::Object(map)
}

fn benches(c: &mut Criterion) {
    c.bench_function("canonical::from_str (proposal arguments)", |b| {
        b.iter(|| canonical::from_str(black_box(ARGUMENTS)).expect("canonical"))
    });
    let big = fingerprint(100);
    let big_text = serde_json::to_string_pretty(&big).expect("text");
    c.bench_function("canonical::from_str (100-target fingerprint)", |b| {
        b.iter(|| canonical::from_str(black_box(&big_text)).expect("canonical"))
    });
    c.bench_function("canonical::from_value (100-target fingerprint)", |b| {
        b.iter(|| canonical::from_value(black_box(&big)).expect("canonical"))
    });
}

criterion_group! {
    name = group;
    // Short runs: these guard against order-of-magnitude regressions, not single percents.
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30);
    targets = benches
}
criterion_main!(group);
