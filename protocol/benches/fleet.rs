//! A 10,000-device team: the three reads a change needs, redacted, parsed and fingerprinted.
#![forbid(unsafe_code)]
// A benchmark harness, not shipped code: a failed setup should stop the run loudly, and
// criterion's macros generate undocumented public items.
#![allow(clippy::expect_used, missing_docs)]

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use fleetwatch_protocol::fleet;
use fleetwatch_redact as redact;
use serde_json::{Value, json};

const DEVICES: usize = 10_000;

/// The reads as the server words them: two channels a device, a publisher per channel whose
/// URL and stream key need masking, an event on every third device.
fn team(n: usize) -> (Value, Value, Value) {
    let mut devices = Vec::with_capacity(n);
    let mut status = serde_json::Map::new();
    let mut events = serde_json::Map::new();
    for i in 0..n {
        let id = format!("{:010x}", 0x5000_0000u64 + i as u64);
        let state = |c: usize| {
            if (i + c).is_multiple_of(5) {
                "started"
            } else {
                "stopped"
            }
        };
        let channels: Vec<Value> = (1..=2)
            .map(|c| {
                json!({
                    "channel_id": c.to_string(),
                    "name": format!("Room {i} channel {c}"),
                    "recording_status": {"state": state(c), "timestamp": "1700000000", "description": "Stopped"},
                    "Publishers": [{"id": format!("p{c}"), "type": "rtmp", "url": format!("rtmp://user:pass@live.example.net/app/stream_key_{i}"), "stream_key": format!("sk-{i}-{c}")}],
                })
            })
            .collect();
        devices.push(json!({
            "Id": id,
            "Name": format!("Room {i}"),
            "Model": "Pearl-2",
            "GroupId": "3f1c2d4e-0000-4000-8000-000000000001",
            "GroupName": format!("Building {}", i / 100),
            "Firmware": "4.24.3",
            "Status": if i.is_multiple_of(17) { "offline" } else { "online" },
            "StateTime": "2026-01-01T00:00:00Z",
            "Channels": channels,
        }));
        let chans: serde_json::Map<String, Value> = (1..=2)
            .map(|c| {
                (
                    c.to_string(),
                    json!({"name": format!("Room {i} channel {c}"), "recording_status": {"state": state(c)}}),
                )
            })
            .collect();
        status.insert(id.clone(), json!({ "channels": chans }));
        let event = if i.is_multiple_of(3) {
            json!({"event": {"id": format!("evt-{i}"), "title": format!("Lecture {i}"), "start": "2026-03-02T09:00:00Z", "end": "2026-03-02T09:50:00Z"}})
        } else {
            json!({ "event": null })
        };
        events.insert(id, event);
    }
    (
        json!({"team_id": "team-bench", "devices": devices}),
        json!({ "devices": status }),
        json!({ "devices": events }),
    )
}

/// The same team with secrets written as text in one name and one warning of every tenth
/// device (embedded JSON, a settings pair, a table, an escaped URL, a webhook) and prose with
/// colons, commas and braces everywhere else: the cost of the text-form rules at fleet size.
fn team_with_text_forms(n: usize) -> Value {
    let (mut list, _, _) = team(n);
    let forms = [
        r#"Aula {"name":"Stream key","value":"Kx81-main"}"#,
        "Sala 2: name=Stream key value=Kx81-main",
        "| Room | Stream key |\n|---|---|\n| A | Kx81-main |",
        r"backup rtmp:\/\/a.rtmp.example.com\/live2\/Kx81-main",
        "alerts https://hooks.chat.example/services/T0ABCDEFG/B0HIJKLMN/Kx81main",
    ];
    let devices = list
        .get_mut("devices")
        .and_then(Value::as_array_mut)
        .expect("devices");
    for (i, device) in devices.iter_mut().enumerate() {
        let (name, message) = if i.is_multiple_of(10) {
            let form = forms.get(i / 10 % forms.len()).copied().unwrap_or_default();
            (format!("Room {i} {form}"), format!("publisher: {form}"))
        } else {
            (
                format!("Room {i}: Main hall, {{level 2}}"),
                "Disk almost full: 12% left, {see the guide}".to_owned(),
            )
        };
        device["Name"] = json!(name);
        device["Warnings"] = json!([{"id": "disk_space_error", "message": message}]);
    }
    list
}

fn benches(c: &mut Criterion) {
    let (list, status, events) = team(DEVICES);
    let texts = [list.to_string(), status.to_string(), events.to_string()];
    let raw = [list, status, events];
    let mut redacted = raw.clone();
    redacted.iter_mut().for_each(redact::redact_value);
    let [list, status, events] = &redacted;

    c.bench_function("fleet 10k: JSON text to values", |b| {
        b.iter(|| {
            texts
                .iter()
                .map(|t| serde_json::from_str::<Value>(black_box(t)).expect("json"))
                .collect::<Vec<_>>()
        })
    });
    c.bench_function("fleet 10k: redact the three reads", |b| {
        b.iter_batched(
            || raw.clone(),
            |mut values| {
                values.iter_mut().for_each(redact::redact_value);
                values
            },
            BatchSize::LargeInput,
        )
    });
    let forms = team_with_text_forms(DEVICES);
    c.bench_function("fleet 10k: redact names and warnings in text forms", |b| {
        b.iter_batched(
            || forms.clone(),
            |mut value| {
                redact::redact_value(&mut value);
                value
            },
            BatchSize::LargeInput,
        )
    });
    c.bench_function("fleet 10k: parse and apply recorder status", |b| {
        b.iter(|| {
            let mut devices = fleet::parse_device_list(black_box(list)).expect("list");
            let recorder = fleet::parse_recorder_status(black_box(status)).expect("status");
            fleet::apply_recorder_status(&mut devices, &recorder);
            let events = fleet::parse_events(black_box(events)).expect("events");
            (devices, events)
        })
    });
    let mut devices = fleet::parse_device_list(list).expect("list");
    fleet::apply_recorder_status(
        &mut devices,
        &fleet::parse_recorder_status(status).expect("status"),
    );
    let events: BTreeMap<String, Option<fleet::Event>> =
        fleet::parse_events(events).expect("events");
    let targets: Vec<String> = devices.devices.iter().map(|d| d.id.clone()).collect();
    c.bench_function("fleet 10k: fingerprint every device, canonical", |b| {
        b.iter(|| {
            fleet::fingerprint(black_box(&devices), &events, &targets)
                .expect("fingerprint")
                .canonical()
                .expect("canonical")
        })
    });
}

criterion_group! {
    name = group;
    // Each step takes milliseconds at this size: few samples, and a guard against
    // order-of-magnitude regressions (a quadratic lookup, a copy per string), not percents.
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .sample_size(10);
    targets = benches
}
criterion_main!(group);
