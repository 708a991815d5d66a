//! A fleet of any size through the model path: the offline stand-in asks the fleet tools as a
//! model would, over generated teams of 1,000 and 10,000 rooms whose offline rooms sit at the
//! end of the list (where a cut read would lose them). The counts in the answer are the truth,
//! no request to the model grows past 16 KB, and no answer was cut. Each test runs against the
//! Messages API stand-in and the Chat Completions one.

mod common;

use std::sync::{Arc, Mutex};

use fleetwatch::answer::Assistant;
use fleetwatch::grants;
use fleetwatch::model::{ApiKey, ModelConfig};
use fleetwatch::reads::Reader;
use fleetwatch::store::Store;
use fleetwatch_sim::model::{self as stand_in, Api};
use serde_json::{Value, json};

/// The most bytes one request body to the model may hold, whatever the team's size.
const MAX_REQUEST_BYTES: usize = 16 * 1024;

fn now() -> jiff::Timestamp {
    "2026-03-02T14:00:00Z".parse().unwrap()
}

/// A replay folder of `rooms` rooms, the last `offline` of them offline, devices as Epiphan
/// words them (two channels, a publisher each, a warning on every tenth). `long` names every
/// room past the length an answer keeps.
fn team(rooms: usize, offline: usize, long: bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut devices = Vec::with_capacity(rooms);
    let mut status = serde_json::Map::new();
    let mut events = serde_json::Map::new();
    for i in 0..rooms {
        let id = format!("{:010x}", 0x5000_0000_u64 + i as u64);
        let online = i < rooms - offline;
        let channels: Vec<Value> = (1..=2)
            .map(|c| {
                json!({
                    "channel_id": c.to_string(),
                    "name": format!("Room {i} channel {c}"),
                    "recording_status": {"state": if online && (i + c) % 7 == 0 { "started" } else { "stopped" }},
                    "Publishers": [{"type": "rtmp", "url": format!("rtmp://live.example.net/app/key_{i}"), "stream_key": format!("sk-{i}")}],
                })
            })
            .collect();
        let warnings = if i % 10 == 0 {
            json!([{"id": "no_signal", "label": "No signal", "message": "No video signal", "data": {"source_name": "HDMI-A"}}])
        } else {
            json!([])
        };
        devices.push(json!({
            "Id": id,
            "Name": if long {
                format!("Room {i} — East Wing Lecture Theatre, Level 2, Faculty of Engineering")
            } else {
                format!("Room {i}")
            },
            "Model": "Pearl-2",
            "GroupName": format!("Building {}", i / 100),
            "Firmware": if i % 50 == 0 { "4.23.1" } else { "4.24.3" },
            "Status": if online { "online" } else { "offline" },
            "StateTime": "2026-03-02T09:00:00Z",
            "Warnings": warnings,
            "Channels": channels,
        }));
        if online {
            status.insert(
                id.clone(),
                json!({"channels": {"1": {"recording_status": {"state": if (i + 1) % 7 == 0 { "started" } else { "stopped" }}},
                                    "2": {"recording_status": {"state": if (i + 2) % 7 == 0 { "started" } else { "stopped" }}}}}),
            );
        }
        let event = if i % 4 == 0 {
            let start = now() + jiff::SignedDuration::from_mins((i % 600) as i64);
            json!({"event": {"id": format!("evt-{i}"), "title": format!("Lecture {i}"),
                             "start": start.to_string(), "end": (start + jiff::SignedDuration::from_mins(50)).to_string()}})
        } else {
            json!({"event": null})
        };
        events.insert(id, event);
    }
    let write = |tool: &str, value: Value| {
        std::fs::write(dir.path().join(format!("{tool}.json")), value.to_string()).unwrap();
    };
    write(
        "get_devices_in_my_team",
        json!({"team_id": "team-large", "devices": devices}),
    );
    write(
        "get_recorder_status_for_devices",
        json!({ "devices": status }),
    );
    write(
        "get_current_or_next_cms_events_for_devices",
        json!({ "devices": events }),
    );
    dir
}

struct Run {
    answer: String,
    requests: Vec<Value>,
}

async fn ask(api: Api, folder: &std::path::Path, question: &str) -> Run {
    let state = tempfile::tempdir().unwrap();
    let policy = common::policy();
    for category in ["fleet", "schedule"] {
        grants::open(state.path(), &policy, category).unwrap();
    }
    let config = common::config(state.path(), &[]);
    let reader = Arc::new(Reader::replay(
        folder.to_path_buf(),
        now(),
        Arc::clone(&policy),
    ));
    let store = Arc::new(Mutex::new(Store::open(state.path()).unwrap()));
    let model = stand_in::start_offline_api(api, Some(now()), 0)
        .await
        .unwrap();
    let cfg = ModelConfig::with_api(
        common::model_api(api),
        model.url(),
        Some(ApiKey::new("sk-ant-test-key-0000").unwrap()),
        "stand-in",
    );
    let engine = Assistant::from_config(&config, policy, reader, store, Some(cfg), false);
    let reply = engine.ask(question, false).await;
    assert!(reply.note.is_none(), "the model path failed: {reply:?}");
    Run {
        answer: reply.answer,
        requests: model.requests(),
    }
}

fn assert_small(run: &Run) {
    assert!(!run.requests.is_empty());
    for (i, request) in run.requests.iter().enumerate() {
        let bytes = serde_json::to_vec(request).unwrap().len();
        assert!(
            bytes <= MAX_REQUEST_BYTES,
            "request {i} to the model is {bytes} bytes"
        );
        // The system prompt explains the cut note; the other messages must not carry one.
        let text: String = request["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|m| m["role"] != "system")
            .map(Value::to_string)
            .collect();
        assert!(!text.contains("result cut"), "a cut answer in request {i}");
        assert!(
            !text.contains("\"get_devices_in_my_team\""),
            "the team-wide read reached the model"
        );
    }
}

async fn what_is_offline_is_the_truth_at_a_thousand_rooms(api: Api) {
    let folder = team(1_000, 99, false);
    let run = ask(api, folder.path(), "what's offline?").await;
    assert!(
        run.answer.contains("99 of 1000 rooms are offline:"),
        "{}",
        run.answer
    );
    // The first page, by name, and how many more there are.
    assert!(run.answer.contains("“Room 901” ("), "{}", run.answer);
    assert!(run.answer.contains("“Room 915” ("), "{}", run.answer);
    assert!(!run.answer.contains("“Room 916”"), "{}", run.answer);
    assert!(run.answer.contains("… and 84 more"), "{}", run.answer);
    assert_small(&run);
}

async fn what_needs_attention_and_one_room_at_a_thousand_rooms(api: Api) {
    let folder = team(1_000, 99, false);
    let run = ask(api, folder.path(), "what needs attention?").await;
    // 99 offline, a no-signal warning on every tenth online room, 20 behind on firmware.
    assert!(run.answer.contains("Fix"), "{}", run.answer);
    assert_small(&run);

    let run = ask(api, folder.path(), "is Room 120 ready?").await;
    assert!(
        run.answer.contains("«Room 120»") || run.answer.contains("“Room 120”"),
        "{}",
        run.answer
    );
    assert!(run.answer.contains("not ready"), "{}", run.answer);
    assert_small(&run);
}

async fn ten_thousand_rooms_cost_what_a_thousand_do(api: Api) {
    let folder = team(10_000, 3_547, true);
    let run = ask(api, folder.path(), "what's offline?").await;
    assert!(
        run.answer.contains("3547 of 10000 rooms are offline:"),
        "{}",
        run.answer
    );
    assert_small(&run);
    let run = ask(api, folder.path(), "¿qué salas están grabando?").await;
    assert!(
        run.answer.contains("sala(s) grabando ahora:"),
        "{}",
        run.answer
    );
    assert_small(&run);
    // The longest page: rooms that need attention, each with why, names at their cap.
    let run = ask(api, folder.path(), "what needs attention?").await;
    assert!(run.answer.contains("Fix first"), "{}", run.answer);
    assert_small(&run);
}

fleetwatch_sim::both_apis!(
    what_is_offline_is_the_truth_at_a_thousand_rooms,
    what_needs_attention_and_one_room_at_a_thousand_rooms,
    ten_thousand_rooms_cost_what_a_thousand_do,
);
