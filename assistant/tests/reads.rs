//! The guarded read client against the simulator over real HTTP/MCP: the guard refuses before
//! the network, results are redacted, in-band 401 and hangs become clear errors.

mod common;

use std::sync::Arc;
use std::time::Duration;

use fleetwatch::reads::{self, ReadError, Reader, Token};
use fleetwatch_protocol::policy::{self, Policy};
use fleetwatch_sim::{Fault, SimConfig};
use serde_json::json;

async fn live_reader(sim: &fleetwatch_sim::SimHandle, token: &str, policy: Arc<Policy>) -> Reader {
    let dir = tempfile::tempdir().unwrap();
    let config = common::config(
        dir.path(),
        &[
            ("FLEETWATCH_EPIPHAN_URL", sim.mcp_url()),
            ("FLEETWATCH_ALLOW_LOOPBACK_HTTP", "1".into()),
            ("FLEETWATCH_READ_TIMEOUT_SECS", "3".into()),
        ],
    );
    let token_path = dir.path().join(reads::TOKEN_FILE);
    std::fs::write(&token_path, token).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&token_path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let token = Token::from_file(&token_path).unwrap();
    Reader::live(&config, policy, token).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guard_refuses_write_and_unlisted_tools_before_the_network() {
    let sim = fleetwatch_sim::start(SimConfig::demo()).await.unwrap();
    let reader = live_reader(&sim, "normal-token", common::policy()).await;
    let mut refused = Vec::new();
    for tool in policy::EPIPHAN_WRITE_TOOLS
        .iter()
        .chain(policy::NEVER_READABLE)
        .chain(&[
            "factory_reset_device",
            "get_team_presets",
            "kb_search",
            "",
            "../etc/passwd",
        ])
    {
        let result = reader.read(tool, json!({})).await;
        assert!(
            matches!(result, Err(ReadError::Refused(_))),
            "{tool} was not refused: {result:?}"
        );
        refused.push(*tool);
    }
    assert!(
        sim.calls().is_empty(),
        "a refused tool reached the simulator: {:?}",
        sim.calls()
    );
    assert!(sim.writes().is_empty());
    // Positive control: an allowed read does reach it.
    reader
        .read("get_devices_in_my_team", json!({}))
        .await
        .unwrap();
    assert_eq!(sim.calls().len(), 1);
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_that_lists_a_write_tool_as_read_is_still_refused() {
    // The policy loader itself refuses such a file; the guard does not rely on that.
    let text = std::fs::read_to_string(common::policy_path()).unwrap();
    let tampered = text.replacen(
        "read:\n",
        "read:\n  batch_reboot:\n    category: fleet\n    description: \"x\"\n    schema: {type: object, properties: {}, additionalProperties: false}\n",
        1,
    );
    assert!(Policy::from_yaml(&tampered).is_err());
    let sim = fleetwatch_sim::start(SimConfig::demo()).await.unwrap();
    let reader = live_reader(&sim, "normal-token", common::policy()).await;
    for tool in policy::EPIPHAN_WRITE_TOOLS {
        assert!(reader.guard(tool).is_err());
    }
    assert!(sim.calls().is_empty());
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_endpoints_come_back_without_keys() {
    let sim = fleetwatch_sim::start(SimConfig::demo()).await.unwrap();
    let reader = live_reader(&sim, "normal-token", common::policy()).await;
    let value = reader
        .read("get_stream_endpoints", json!({}))
        .await
        .unwrap();
    let text = value.to_string();
    assert!(text.contains("stream_endpoints"), "{text}");
    for secret in ["f7k2-9xq4-mm3p-0c1d", "8e1b7c44-aa10"] {
        assert!(!text.contains(secret), "stream key leaked: {text}");
    }
    assert!(
        text.contains("a.rtmp.youtube.com"),
        "host must stay: {text}"
    );
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_band_401_is_a_clear_sign_in_message() {
    let sim = fleetwatch_sim::start(SimConfig::demo()).await.unwrap();
    let reader = live_reader(&sim, "normal-token", common::policy()).await;
    sim.set_fault("get_devices_in_my_team", Fault::Unauthorized);
    let err = reader
        .read("get_devices_in_my_team", json!({}))
        .await
        .unwrap_err();
    assert_eq!(err, ReadError::SignInExpired);
    assert!(err.to_string().contains("fleetwatch login"));
    assert!(err.to_string().contains("FLEETWATCH_EPIPHAN_TOKEN"));
    // The snapshot path says the same, without panicking.
    let err = reads::load_snapshot(&reader).await.unwrap_err();
    assert_eq!(err, ReadError::SignInExpired);
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_token_is_a_sign_in_problem() {
    let sim = fleetwatch_sim::start(SimConfig::demo()).await.unwrap();
    let reader = live_reader(&sim, "not-a-token", common::policy()).await;
    let err = reader
        .read("get_devices_in_my_team", json!({}))
        .await
        .unwrap_err();
    assert_eq!(err, ReadError::SignInExpired, "{err}");
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_error_is_an_error_not_a_crash() {
    let sim = fleetwatch_sim::start(SimConfig::demo()).await.unwrap();
    let reader = live_reader(&sim, "normal-token", common::policy()).await;
    sim.set_fault("get_devices_in_my_team", Fault::Fail);
    let err = reader
        .read("get_devices_in_my_team", json!({}))
        .await
        .unwrap_err();
    assert!(matches!(err, ReadError::Tool { .. }), "{err:?}");
    sim.set_fault("get_devices_in_my_team", Fault::Text("no JSON here".into()));
    let err = reads::load_snapshot(&reader).await.unwrap_err();
    assert!(matches!(err, ReadError::Parse(_)), "{err:?}");
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_read_ends_with_a_bounded_timeout() {
    let sim = fleetwatch_sim::start(SimConfig::demo()).await.unwrap();
    let reader = live_reader(&sim, "normal-token", common::policy())
        .await
        .with_timeout(Duration::from_secs(2));
    sim.set_fault("get_devices_in_my_team", Fault::Hang);
    let err = tokio::time::timeout(
        Duration::from_secs(60),
        reader.read("get_devices_in_my_team", json!({})),
    )
    .await
    .expect("the reader's own bound fires long before this")
    .unwrap_err();
    assert!(matches!(err, ReadError::Timeout { secs: 2, .. }), "{err:?}");
    assert!(err.to_string().contains("did not answer"));
    // The next read works once the fault is gone.
    sim.clear_faults();
    reader
        .read("get_devices_in_my_team", json!({}))
        .await
        .unwrap();
    sim.shutdown().await;
}

#[test]
fn only_https_or_allowed_loopback() {
    let dir = tempfile::tempdir().unwrap();
    let make = |pairs: &[(&str, String)]| {
        let mut map = std::collections::HashMap::new();
        for (k, v) in pairs {
            map.insert((*k).to_owned(), v.clone());
        }
        map.insert(
            "FLEETWATCH_STATE_DIR".to_owned(),
            dir.path().display().to_string(),
        );
        fleetwatch::config::Config::from_lookup(move |n| map.get(n).cloned())
    };
    assert!(make(&[("FLEETWATCH_EPIPHAN_URL", "http://127.0.0.1:1/mcp".into())]).is_err());
    assert!(
        make(&[
            ("FLEETWATCH_EPIPHAN_URL", "http://10.0.0.5/mcp".into()),
            ("FLEETWATCH_ALLOW_LOOPBACK_HTTP", "1".into())
        ])
        .is_err()
    );
    assert!(
        make(&[
            ("FLEETWATCH_EPIPHAN_URL", "http://127.0.0.1:1/mcp".into()),
            ("FLEETWATCH_ALLOW_LOOPBACK_HTTP", "1".into())
        ])
        .is_ok()
    );
}

fn replay_with(files: &[(&str, serde_json::Value)]) -> (tempfile::TempDir, Reader) {
    let dir = tempfile::tempdir().unwrap();
    for (tool, value) in files {
        std::fs::write(dir.path().join(format!("{tool}.json")), value.to_string()).unwrap();
    }
    let reader = Reader::replay(
        dir.path().to_path_buf(),
        "2026-09-24T20:00:00Z".parse().unwrap(),
        common::policy(),
    );
    (dir, reader)
}

fn device(id: &str, name: &str, status: &str) -> serde_json::Value {
    json!({"Id": id, "Name": name, "Model": "Pearl Mini", "GroupId": "3a4b5c6d-7e8f-4012-9345-6789abcdef01",
           "GroupName": "G", "Firmware": "4.24.6", "Status": status, "StateTime": "2026-09-24T19:00Z",
           "Channels": [{"channel_id": "1", "name": "Program", "recording_status": {"state": "stopped", "timestamp": "0", "description": ""}}]})
}

#[tokio::test]
async fn a_device_named_401_unauthorized_is_data_not_an_auth_error() {
    let (_dir, reader) = replay_with(&[
        (
            "get_devices_in_my_team",
            json!({"devices": [device("1000000001", "401 Unauthorized", "offline"), device("1000000002", "Error: 401 Unauthorized", "online")]}),
        ),
        ("get_recorder_status_for_devices", json!({"devices": {}})),
        (
            "get_current_or_next_cms_events_for_devices",
            json!({"devices": {}}),
        ),
    ]);
    let snapshot = reads::load_snapshot(&reader).await.unwrap();
    assert_eq!(snapshot.devices.len(), 2);
    assert_eq!(snapshot.devices[0].name, "401 Unauthorized");
}

#[tokio::test]
async fn replay_resolves_templates_tolerates_notes_and_guards_the_same() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("get_current_or_next_cms_events_for_devices.json"),
        r#"{"_note": "hand-written", "devices": {"1000000001": {"event": {"id": "e1", "title": "T", "start": "{{now+25m}}", "end": "{{now+85m}}"}}}}"#,
    )
    .unwrap();
    std::fs::write(dir.path().join("batch_reboot.json"), "{}").unwrap();
    let reader = Reader::replay(
        dir.path().to_path_buf(),
        "2026-09-24T20:00:00Z".parse().unwrap(),
        common::policy(),
    );
    let value = reader
        .read(
            "get_current_or_next_cms_events_for_devices",
            json!({"until": "2026-09-25T20:00:00Z"}),
        )
        .await
        .unwrap();
    assert!(value.get("_note").is_none());
    assert_eq!(
        value["devices"]["1000000001"]["event"]["start"],
        "2026-09-24T20:25:00Z"
    );
    // A write tool is refused even though a file for it sits in the folder.
    assert!(matches!(
        reader.read("batch_reboot", json!({})).await,
        Err(ReadError::Refused(_))
    ));
    // A missing file is a clear replay error.
    let err = reader
        .read("get_stream_endpoints", json!({}))
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("get_stream_endpoints: not in this replay"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forgotten_session_is_replaced_and_the_read_answers() {
    // Session recovery is off in the shared MCP core (for the executor's write it could
    // re-send a request); reads are safe to repeat, so the reader opens a new session once.
    let sim = fleetwatch_sim::start(SimConfig::demo()).await.unwrap();
    let reader = live_reader(&sim, "normal-token", common::policy()).await;
    reader
        .read("get_devices_in_my_team", json!({}))
        .await
        .unwrap();
    sim.end_sessions();
    let value = reader
        .read("get_devices_in_my_team", json!({}))
        .await
        .unwrap();
    assert!(value.get("devices").is_some(), "{value}");
    // The forgotten session's request was refused before a call was recorded; the read that
    // answered is the second recorded call.
    assert_eq!(sim.calls().len(), 2);
    sim.shutdown().await;
}

/// One device whose name holds a lone surrogate escape, answered live: that one string gets
/// U+FFFD and every other device is read as sent (`injection.rs` has the same from a replay).
#[tokio::test]
async fn a_lone_surrogate_in_a_live_answer_spoils_one_name_not_the_fleet() {
    let sim = fleetwatch_sim::start(fleetwatch_sim::SimConfig::demo())
        .await
        .unwrap();
    sim.set_fault(
        "get_devices_in_my_team",
        fleetwatch_sim::Fault::Text(
            r#"{"devices": [
                {"Id": "1000000001", "Name": "Room \ud800 7", "Status": "online"},
                {"Id": "1000000002", "Name": "Aula \ud83d\ude00 8", "Status": "offline"}
            ]}"#
            .to_owned(),
        ),
    );
    let reader = live_reader(&sim, "normal-token", common::policy()).await;
    let value = reader
        .read("get_devices_in_my_team", serde_json::json!({}))
        .await
        .unwrap();
    assert_eq!(value["devices"][0]["Name"], "Room \u{FFFD} 7");
    assert_eq!(value["devices"][1]["Name"], "Aula \u{1F600} 8");
    sim.shutdown().await;
}

/// A replay folder without a read's file: the error names the tool and says it is not in the
/// replay; the folder's path on this machine goes neither to the model nor to the operator.
#[tokio::test]
async fn a_read_missing_from_a_replay_names_the_tool_not_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let reader = Reader::replay(
        dir.path().to_path_buf(),
        jiff::Timestamp::now(),
        common::policy(),
    );
    let err = reader
        .read("get_stream_endpoints", json!({}))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("get_stream_endpoints: not in this replay"),
        "{err}"
    );
    let path = dir.path().display().to_string();
    assert!(!err.contains(&path) && !err.contains("/tmp"), "{err}");
}
