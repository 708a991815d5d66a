//! The simulated Epiphan server, driven by a real rmcp client over streamable HTTP.

use std::path::PathBuf;
use std::time::Duration;

use fleetwatch_sim::{Fault, SimConfig, SimHandle, TeamConfig, TeamSource};
use rmcp::model::{CallToolRequestParams, CallToolResult, ClientConfig};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ServiceError, ServiceExt};
use serde_json::{Value, json};

/// An HTTP client, with the TLS provider the workspace's processes install (reqwest is built
/// without one of its own).
fn http() -> reqwest::Client {
    install_tls();
    reqwest::Client::new()
}

fn install_tls() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

type Client = RunningService<RoleClient, ClientConfig>;

/// Generous: the machine is shared; nothing here measures speed.
const DEADLINE: Duration = Duration::from_secs(30);

async fn connect(sim: &SimHandle, token: Option<&str>) -> Result<Client, String> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(sim.mcp_url());
    if let Some(token) = token {
        config = config.auth_header(token);
    }
    install_tls();
    let transport = StreamableHttpClientTransport::from_config(config);
    match tokio::time::timeout(DEADLINE, ClientConfig::default().serve(transport)).await {
        Ok(Ok(client)) => Ok(client),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("connect timed out".into()),
    }
}

async fn call(client: &Client, tool: &str, args: Value) -> Result<CallToolResult, ServiceError> {
    let Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    let params = CallToolRequestParams::new(tool.to_string()).with_arguments(args);
    tokio::time::timeout(DEADLINE, client.call_tool(params))
        .await
        .expect("call did not finish within the deadline")
}

fn text_of(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect()
}

fn json_of(result: &CallToolResult) -> Value {
    assert_ne!(
        result.is_error,
        Some(true),
        "error result: {}",
        text_of(result)
    );
    serde_json::from_str(&text_of(result)).expect("result text is JSON")
}

async fn read(client: &Client, tool: &str, args: Value) -> Value {
    json_of(&call(client, tool, args).await.expect("read call"))
}

fn device<'a>(list: &'a Value, id: &str) -> &'a Value {
    list["devices"]
        .as_array()
        .expect("devices list")
        .iter()
        .find(|d| d["Id"] == id)
        .unwrap_or_else(|| panic!("device {id} listed"))
}

fn device_by_name<'a>(list: &'a Value, name: &str) -> &'a Value {
    list["devices"]
        .as_array()
        .expect("devices list")
        .iter()
        .find(|d| d["Name"] == name)
        .unwrap_or_else(|| panic!("room {name} listed"))
}

fn example_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("replay/example")
}

#[tokio::test]
async fn lists_tools_and_serves_the_demo_fleet_to_the_right_token() {
    let sim = fleetwatch_sim::start(SimConfig::demo()).await.unwrap();
    let client = connect(&sim, Some("normal-token")).await.unwrap();

    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    for needed in [
        "get_devices_in_my_team",
        "get_device_info",
        "get_recorder_status_for_devices",
        "get_system_status_for_devices",
        "get_current_or_next_cms_events_for_devices",
        "get_stream_endpoints",
        "batch_recording",
        "start_stream_endpoint",
        "stop_stream_endpoint",
        "confirm_cms_event_on_device",
        "batch_reboot",
        "batch_firmware_update",
    ] {
        assert!(names.contains(&needed), "{needed} listed");
    }

    let list = read(&client, "get_devices_in_my_team", json!({})).await;
    let devices = list["devices"].as_array().unwrap();
    assert!(devices.len() >= 25, "about 30 rooms, got {}", devices.len());
    let id_ok = |id: &str| {
        (8..=32).contains(&id.len())
            && id
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    for d in devices {
        assert!(
            id_ok(d["Id"].as_str().unwrap()),
            "master ID shape: {}",
            d["Id"]
        );
        assert!(d["Model"].as_str().unwrap().starts_with("Pearl"));
    }
    for name in [
        "Courtroom 2",
        "Sala de Juntas 3",
        "Aula Magna",
        "Lecture Hall 101",
    ] {
        device_by_name(&list, name);
    }
    let recording = devices
        .iter()
        .filter(|d| {
            d["Channels"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["recording_status"]["state"] == "recording")
        })
        .count();
    assert_eq!(recording, 1, "one room recording");
    let offline = devices.iter().filter(|d| d["Status"] == "offline").count();
    assert_eq!(offline, 1, "one room offline");
    let firmwares: std::collections::BTreeSet<&str> = devices
        .iter()
        .map(|d| d["Firmware"].as_str().unwrap())
        .collect();
    assert_eq!(firmwares.len(), 2, "one firmware straggler");
    assert!(
        devices
            .iter()
            .filter(|d| d.get("Warnings").is_some())
            .count()
            >= 1
    );

    // Stream endpoints carry keys and full URLs, as the real server's do.
    let endpoints = read(&client, "get_stream_endpoints", json!({})).await;
    let first = &endpoints["stream_endpoints"][0];
    assert!(first["stream_key"].as_str().is_some_and(|k| !k.is_empty()));
    assert!(
        first["url"]
            .as_str()
            .unwrap()
            .contains(first["stream_key"].as_str().unwrap())
    );

    // Events: one soon, one later; the 26-hour one is outside a 24-hour window.
    let until = sim
        .now()
        .checked_add(jiff::SignedDuration::from_hours(24))
        .unwrap();
    let events = read(
        &client,
        "get_current_or_next_cms_events_for_devices",
        json!({"until": until.to_string()}),
    )
    .await;
    let juntas = device_by_name(&list, "Sala de Juntas 3")["Id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        events["devices"][&juntas]["event"]["title"],
        "Consejo de Dirección"
    );
    let auditorio = device_by_name(&list, "Auditorio Principal")["Id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(events["devices"][&auditorio]["event"], Value::Null);

    let info = read(&client, "get_device_info", json!({"device_id": juntas})).await;
    assert_eq!(info["Name"], "Sala de Juntas 3");

    assert!(sim.writes().is_empty());
    sim.shutdown().await;
}

#[tokio::test]
async fn wrong_or_missing_token_is_refused() {
    let sim = fleetwatch_sim::start(SimConfig::demo()).await.unwrap();
    assert!(connect(&sim, Some("not-a-team-token")).await.is_err());
    assert!(connect(&sim, None).await.is_err());
    // A raw request shows the refusal is an HTTP 401 before MCP is involved.
    let response = http()
        .post(sim.mcp_url())
        .header("authorization", "Bearer normal-token-but-longer")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    assert!(
        sim.calls().is_empty(),
        "a refused request never reaches a tool"
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn teams_see_different_devices() {
    let sim = fleetwatch_sim::start(SimConfig::demo()).await.unwrap();
    let normal = connect(&sim, Some("normal-token")).await.unwrap();
    let sandbox = connect(&sim, Some("sandbox-token")).await.unwrap();
    let ids = |list: &Value| -> std::collections::BTreeSet<String> {
        list["devices"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["Id"].as_str().unwrap().to_string())
            .collect()
    };
    let normal_list = read(&normal, "get_devices_in_my_team", json!({})).await;
    let sandbox_list = read(&sandbox, "get_devices_in_my_team", json!({})).await;
    let (n, s) = (ids(&normal_list), ids(&sandbox_list));
    assert!((4..=10).contains(&s.len()));
    assert!(n.is_disjoint(&s), "the teams share no device");
    assert_ne!(normal_list["team_id"], sandbox_list["team_id"]);
    assert_eq!(n, sim.team_devices("normal").into_iter().collect());
    assert_eq!(s, sim.team_devices("sandbox").into_iter().collect());

    // A sandbox write naming a normal-team device fails for that device only.
    let foreign = n.iter().next().unwrap().clone();
    let result = read(
        &sandbox,
        "batch_reboot",
        json!({"device_ids": [foreign.clone()]}),
    )
    .await;
    assert!(
        result[&foreign].is_string(),
        "unknown device → error entry: {result}"
    );

    let calls = sim.calls();
    assert_eq!(calls[0].team, "normal");
    assert_eq!(calls[1].team, "sandbox");
    sim.shutdown().await;
}

#[tokio::test]
async fn a_write_is_recorded_and_changes_state() {
    let sim = fleetwatch_sim::start(SimConfig::demo()).await.unwrap();
    let client = connect(&sim, Some("sandbox-token")).await.unwrap();
    let list = read(&client, "get_devices_in_my_team", json!({})).await;
    let room = device_by_name(&list, "Test Room A")["Id"]
        .as_str()
        .unwrap()
        .to_string();
    let channel = format!("{room}-1");

    let result = read(
        &client,
        "batch_recording",
        json!({"action": "start", "device_ids": [channel.clone()]}),
    )
    .await;
    assert_eq!(result, json!({}), "every device worked");

    let writes = sim.writes();
    assert_eq!(writes.len(), 1);
    let w = &writes[0];
    assert_eq!(
        (w.team.as_str(), w.tool.as_str()),
        ("sandbox", "batch_recording")
    );
    assert_eq!(
        w.arguments,
        json!({"action": "start", "device_ids": [channel.clone()]})
    );
    let answered = w.answered_ns.expect("answered");
    assert!(answered >= w.received_ns);

    let status = read(
        &client,
        "get_recorder_status_for_devices",
        json!({"device_ids": [room.clone()]}),
    )
    .await;
    assert_eq!(
        status["devices"][&room]["channels"]["1"]["recording_status"]["state"],
        "recording"
    );
    let list = read(&client, "get_devices_in_my_team", json!({})).await;
    assert_eq!(
        device(&list, &room)["Channels"][0]["recording_status"]["state"],
        "recording"
    );

    // Reboot takes the device offline; an unknown device gets its own error entry.
    let result = read(
        &client,
        "batch_reboot",
        json!({"device_ids": [room.clone(), "99999999"]}),
    )
    .await;
    assert_eq!(
        result.as_object().unwrap().keys().collect::<Vec<_>>(),
        vec!["99999999"]
    );
    let list = read(&client, "get_devices_in_my_team", json!({})).await;
    assert_eq!(device(&list, &room)["Status"], "offline");
    assert_eq!(
        device(&list, &room)["Channels"][0]["recording_status"]["state"],
        "stopped"
    );

    assert_eq!(sim.writes().len(), 2);
    assert!(sim.calls().iter().all(|c| c.answered_ns.is_some()));
    sim.shutdown().await;
}

#[tokio::test]
async fn stream_firmware_and_event_writes_behave_like_a_device() {
    let sim = fleetwatch_sim::start(SimConfig::demo()).await.unwrap();
    let client = connect(&sim, Some("sandbox-token")).await.unwrap();
    let list = read(&client, "get_devices_in_my_team", json!({})).await;
    let studio = device_by_name(&list, "Demo Studio")["Id"]
        .as_str()
        .unwrap()
        .to_string();
    let publisher = &device(&list, &studio)["Channels"][0]["Publishers"][0];
    assert_eq!(publisher["status"]["started"], true);
    let stream_id = publisher["stream_id"].as_str().unwrap().to_string();
    let endpoint = read(
        &client,
        "get_stream_endpoint",
        json!({"stream_id": stream_id}),
    )
    .await;
    assert_eq!(endpoint["id"], stream_id.as_str());

    let args = json!({"stream_id": stream_id, "device_id": studio, "channel_id": "1"});
    assert_eq!(
        read(&client, "stop_stream_endpoint", args.clone()).await,
        json!({})
    );
    let list = read(&client, "get_devices_in_my_team", json!({})).await;
    assert_eq!(
        device(&list, &studio)["Channels"][0]["Publishers"][0]["status"]["started"],
        false
    );
    assert_eq!(
        read(&client, "start_stream_endpoint", args).await,
        json!({})
    );
    let list = read(&client, "get_devices_in_my_team", json!({})).await;
    assert_eq!(
        device(&list, &studio)["Channels"][0]["Publishers"][0]["status"]["started"],
        true
    );

    // An endpoint that is not the team's is an error entry, and nothing changes.
    let bogus = json!({"stream_id": "00000000-0000-4000-8000-000000000000", "device_id": studio, "channel_id": "1"});
    let result = read(&client, "stop_stream_endpoint", bogus).await;
    assert!(result[&studio].is_string());

    // The event within 20 minutes can be confirmed; a different event ID cannot.
    let bench = device_by_name(&list, "Lab Bench 1")["Id"]
        .as_str()
        .unwrap()
        .to_string();
    let event = read(
        &client,
        "get_current_or_next_cms_event_for_device",
        json!({"device_id": bench}),
    )
    .await;
    let event_id = event["event"]["id"].as_str().unwrap().to_string();
    let start: jiff::Timestamp = event["event"]["start"].as_str().unwrap().parse().unwrap();
    assert!(
        start > sim.now()
            && start
                <= sim
                    .now()
                    .checked_add(jiff::SignedDuration::from_mins(20))
                    .unwrap()
    );
    let wrong = read(
        &client,
        "confirm_cms_event_on_device",
        json!({"device_id": bench, "event_id": "other-event"}),
    )
    .await;
    assert!(wrong[&bench].is_string());
    let ok = read(
        &client,
        "confirm_cms_event_on_device",
        json!({"device_id": bench, "event_id": event_id}),
    )
    .await;
    assert_eq!(ok, json!({}));

    let result = read(
        &client,
        "batch_firmware_update",
        json!({"device_ids": [bench.clone()]}),
    )
    .await;
    assert_eq!(result, json!({}));
    let list = read(&client, "get_devices_in_my_team", json!({})).await;
    assert_eq!(device(&list, &bench)["Status"], "offline");

    let tools: Vec<String> = sim.writes().into_iter().map(|w| w.tool).collect();
    assert_eq!(
        tools,
        [
            "stop_stream_endpoint",
            "start_stream_endpoint",
            "stop_stream_endpoint",
            "confirm_cms_event_on_device",
            "confirm_cms_event_on_device",
            "batch_firmware_update"
        ]
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn faults_fail_unauthorize_text_and_clear() {
    let sim = fleetwatch_sim::start(SimConfig::demo()).await.unwrap();
    let client = connect(&sim, Some("normal-token")).await.unwrap();

    sim.set_fault("get_devices_in_my_team", Fault::Fail);
    let r = call(&client, "get_devices_in_my_team", json!({}))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(true));
    assert_eq!(text_of(&r), "Error: 500 Internal Server Error");

    sim.set_fault("get_devices_in_my_team", Fault::Unauthorized);
    let r = call(&client, "get_devices_in_my_team", json!({}))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(true));
    assert_eq!(text_of(&r), "Error: 401 Unauthorized");

    sim.set_fault(
        "get_devices_in_my_team",
        Fault::Text("maintenance window".into()),
    );
    let r = call(&client, "get_devices_in_my_team", json!({}))
        .await
        .unwrap();
    assert_eq!(text_of(&r), "maintenance window");

    // A failed write changes nothing (on the sandbox: the demo's normal user only views).
    let writer = connect(&sim, Some("sandbox-token")).await.unwrap();
    let room = sim.team_devices("sandbox")[0].clone();
    sim.set_fault("batch_reboot", Fault::Fail);
    let r = call(
        &writer,
        "batch_reboot",
        json!({"device_ids": [room.clone()]}),
    )
    .await
    .unwrap();
    assert_eq!(r.is_error, Some(true));

    sim.clear_faults();
    let list = read(&writer, "get_devices_in_my_team", json!({})).await;
    assert_eq!(device(&list, &room)["Status"], "online");
    assert_eq!(sim.calls().len(), 5);
    sim.shutdown().await;
}

#[tokio::test]
async fn a_hung_tool_never_answers() {
    let sim = fleetwatch_sim::start(SimConfig::demo()).await.unwrap();
    let client = connect(&sim, Some("normal-token")).await.unwrap();
    sim.set_fault("get_recorder_status_for_devices", Fault::Hang);
    let params = CallToolRequestParams::new("get_recorder_status_for_devices")
        .with_arguments(json!({"device_ids": []}).as_object().unwrap().clone());
    let outcome = tokio::time::timeout(Duration::from_secs(2), client.call_tool(params)).await;
    assert!(outcome.is_err(), "the client gives up waiting");
    let calls = sim.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].answered_ns, None);
    // Other tools still answer.
    read(&client, "get_stream_endpoints", json!({})).await;
    sim.shutdown().await;
}

#[tokio::test]
async fn drop_after_write_applies_the_write_and_loses_the_answer() {
    let sim = fleetwatch_sim::start(SimConfig::demo()).await.unwrap();
    let client = connect(&sim, Some("sandbox-token")).await.unwrap();
    let room = sim.team_devices("sandbox")[0].clone();
    sim.set_fault("batch_recording", Fault::DropAfterWrite);
    let outcome = call(
        &client,
        "batch_recording",
        json!({"action": "start", "device_ids": [format!("{room}-1")]}),
    )
    .await;
    assert!(
        outcome.is_err(),
        "the client sees a lost connection, got {outcome:?}"
    );

    let writes = sim.writes();
    assert_eq!(writes.len(), 1);
    assert_eq!(writes[0].answered_ns, None);
    sim.clear_faults();
    // The write took effect even though nobody heard about it. A fresh client, since the
    // transport may have given up after the lost connection.
    let fresh = connect(&sim, Some("sandbox-token")).await.unwrap();
    let status = read(
        &fresh,
        "get_recorder_status_for_devices",
        json!({"device_ids": [room.clone()]}),
    )
    .await;
    assert_eq!(
        status["devices"][&room]["channels"]["1"]["recording_status"]["state"],
        "recording"
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn control_helpers_change_what_reads_return() {
    let sim = fleetwatch_sim::start(SimConfig::demo()).await.unwrap();
    let client = connect(&sim, Some("sandbox-token")).await.unwrap();
    let ids = sim.team_devices("sandbox");
    let (a, b) = (ids[0].clone(), ids[1].clone());

    assert!(sim.set_recording("sandbox", &format!("{a}-1"), true));
    assert!(!sim.set_recording("sandbox", &format!("{a}-9"), true));
    assert!(
        !sim.set_recording("normal", &format!("{a}-1"), true),
        "not that team's device"
    );
    let status = read(
        &client,
        "get_recorder_status_for_devices",
        json!({"device_ids": [a.clone()]}),
    )
    .await;
    assert_eq!(
        status["devices"][&a]["channels"]["1"]["recording_status"]["state"],
        "recording"
    );

    let start = sim
        .now()
        .checked_add(jiff::SignedDuration::from_mins(7))
        .unwrap();
    let end = start
        .checked_add(jiff::SignedDuration::from_mins(30))
        .unwrap();
    assert!(sim.move_event("sandbox", &b, start, Some(end)));
    let event = read(
        &client,
        "get_current_or_next_cms_event_for_device",
        json!({"device_id": b}),
    )
    .await;
    let got: jiff::Timestamp = event["event"]["start"].as_str().unwrap().parse().unwrap();
    assert_eq!(got.as_second(), start.as_second());

    assert!(sim.set_online("sandbox", &a, false));
    let list = read(&client, "get_devices_in_my_team", json!({})).await;
    assert_eq!(device(&list, &a)["Status"], "offline");

    assert!(sim.remove_device("sandbox", &b));
    assert!(!sim.remove_device("sandbox", &b));
    let list = read(&client, "get_devices_in_my_team", json!({})).await;
    assert!(
        list["devices"]
            .as_array()
            .unwrap()
            .iter()
            .all(|d| d["Id"] != b.as_str())
    );
    assert!(!sim.team_devices("sandbox").contains(&b));
    sim.shutdown().await;
}

#[tokio::test]
async fn control_endpoint_needs_its_token() {
    let sim = fleetwatch_sim::start(SimConfig::demo()).await.unwrap();
    let http = http();
    let base = sim.base_url();
    let refused = http
        .get(format!("{base}/control/calls"))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    let refused = http
        .post(format!("{base}/control/fault"))
        .header("x-control-token", "guess")
        .json(&json!({"tool": "get_devices_in_my_team", "fault": "fail"}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);

    let token = sim.control_token();
    let ok = http
        .post(format!("{base}/control/fault"))
        .header("x-control-token", &token)
        .json(&json!({"tool": "get_devices_in_my_team", "fault": {"text": "odd"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    let client = connect(&sim, Some("normal-token")).await.unwrap();
    let r = call(&client, "get_devices_in_my_team", json!({}))
        .await
        .unwrap();
    assert_eq!(text_of(&r), "odd");

    let room = sim.team_devices("normal")[0].clone();
    for (path, body) in [
        (
            "recording",
            json!({"team": "normal", "channel_id": format!("{room}-1"), "recording": true}),
        ),
        (
            "online",
            json!({"team": "normal", "device_id": room, "online": false}),
        ),
        (
            "event",
            json!({"team": "normal", "device_id": room, "start": "2030-01-01T10:00:00Z", "end": null}),
        ),
        ("clear", json!({})),
    ] {
        let response = http
            .post(format!("{base}/control/{path}"))
            .header("x-control-token", &token)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{path}");
    }
    let missing = http
        .post(format!("{base}/control/remove"))
        .header("x-control-token", &token)
        .json(&json!({"team": "normal", "device_id": "00000000"}))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);

    let list = read(&client, "get_devices_in_my_team", json!({})).await;
    assert_eq!(device(&list, &room)["Status"], "offline");
    let calls: Vec<fleetwatch_sim::CallRecord> = http
        .get(format!("{base}/control/calls"))
        .header("x-control-token", &token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(calls, sim.calls());
    assert_eq!(calls.len(), 2);
    sim.shutdown().await;
}

#[tokio::test]
async fn replay_folder_with_notes_and_templates_serves() {
    let now: jiff::Timestamp = "2026-09-24T20:08:00Z".parse().unwrap();
    let config = SimConfig {
        teams: vec![TeamConfig {
            view_only: false,
            name: "example".into(),
            token: "example-token".into(),
            source: TeamSource::Replay(example_dir()),
        }],
        now: Some(now),
        sessions: false,
    };
    let sim = fleetwatch_sim::start(config).await.unwrap();
    let client = connect(&sim, Some("example-token")).await.unwrap();

    let list = read(&client, "get_devices_in_my_team", json!({})).await;
    assert!(list.get("_note").is_none(), "notes are not served");
    let parsed = fleetwatch_protocol::fleet::parse_device_list(&list).unwrap();
    assert_eq!(parsed.devices.len(), 3);
    assert_eq!(list["team_id"], "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9");
    let room = device(&list, "18033355501");
    assert_eq!(room["StateTime"], "2026-09-22T20:08:00Z");
    assert_eq!(room["SerialNumber"], "PMN-0401", "unknown fields survive");
    // The recorder-status file is fresher than the list and wins.
    assert_eq!(
        room["Channels"][0]["recording_status"]["state"],
        "recording"
    );

    let events = read(
        &client,
        "get_current_or_next_cms_events_for_devices",
        json!({"until": "2026-09-25T20:08:00Z"}),
    )
    .await;
    assert_eq!(
        events["devices"]["18033355501"]["event"]["start"],
        "2026-09-24T20:33:00Z"
    );
    assert_eq!(
        events["devices"]["18033355502"]["event"],
        Value::Null,
        "ended events are gone"
    );

    let system = read(
        &client,
        "get_system_status_for_devices",
        json!({"device_ids": ["18033355501"]}),
    )
    .await;
    assert_eq!(
        system["devices"]["18033355501"]["up_since"],
        "2026-09-22T20:08:00Z"
    );

    let endpoints = read(&client, "get_stream_endpoints", json!({})).await;
    assert_eq!(
        endpoints["stream_endpoints"][0]["stream_key"],
        "conf-key-1234"
    );

    let presets = read(&client, "get_team_presets", json!({})).await;
    assert_eq!(
        presets,
        json!({"presets": [{"id": "preset-lecture", "name": "Lecture capture"}]})
    );

    // The offline room refuses writes with an error entry.
    let result = read(
        &client,
        "batch_reboot",
        json!({"device_ids": ["18033355503"]}),
    )
    .await;
    assert!(result["18033355503"].is_string());
    sim.shutdown().await;
}

#[tokio::test]
async fn broken_replay_folders_are_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let team = |path: PathBuf| SimConfig {
        teams: vec![TeamConfig {
            view_only: false,
            name: "t".into(),
            token: "t".into(),
            source: TeamSource::Replay(path),
        }],
        now: None,
        sessions: false,
    };
    // No device list at all.
    let err = fleetwatch_sim::start(team(dir.path().to_path_buf()))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("get_devices_in_my_team.json"),
        "{err}"
    );
    // A list whose entries have no Id.
    std::fs::write(
        dir.path().join("get_devices_in_my_team.json"),
        r#"{"devices": [{"Name": "x"}]}"#,
    )
    .unwrap();
    let err = fleetwatch_sim::start(team(dir.path().to_path_buf()))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("Id"), "{err}");
    // An unknown template.
    std::fs::write(
        dir.path().join("get_devices_in_my_team.json"),
        r#"{"devices": [{"Id": "12345678", "StateTime": "{{yesterday}}"}]}"#,
    )
    .unwrap();
    assert!(
        fleetwatch_sim::start(team(dir.path().to_path_buf()))
            .await
            .is_err()
    );
    // A bare list is accepted and served bare.
    std::fs::write(
        dir.path().join("get_devices_in_my_team.json"),
        r#"[{"Id": "12345678", "Name": "Solo", "Status": "online", "Channels": []}]"#,
    )
    .unwrap();
    let sim = fleetwatch_sim::start(team(dir.path().to_path_buf()))
        .await
        .unwrap();
    let client = connect(&sim, Some("t")).await.unwrap();
    let list = read(&client, "get_devices_in_my_team", json!({})).await;
    assert_eq!(list[0]["Name"], "Solo");
    sim.shutdown().await;
}

#[tokio::test]
async fn configuration_mistakes_are_refused() {
    let mut config = SimConfig::demo();
    config.teams[1].token = "normal-token".into();
    assert!(fleetwatch_sim::start(config).await.is_err(), "shared token");
    let mut config = SimConfig::demo();
    config.teams[1].name = "normal".into();
    assert!(fleetwatch_sim::start(config).await.is_err(), "shared name");
    let config = SimConfig {
        teams: vec![],
        now: None,
        sessions: false,
    };
    assert!(fleetwatch_sim::start(config).await.is_err(), "no team");
}

/// The reads the simulator serves must be what the shared fleet parsers understand, or every
/// test built on the simulator would be testing a different world.
#[tokio::test]
async fn demo_reads_parse_with_the_protocol_fleet_model() {
    use fleetwatch_protocol::fleet;
    let sim = fleetwatch_sim::start(SimConfig::demo()).await.unwrap();
    let now = sim.now();
    for (team, token) in [("normal", "normal-token"), ("sandbox", "sandbox-token")] {
        let client = connect(&sim, Some(token)).await.unwrap();
        let raw = read(&client, "get_devices_in_my_team", json!({})).await;
        let mut list = fleet::parse_device_list(&raw).unwrap();
        assert_eq!(list.devices.len(), sim.team_devices(team).len());
        let online: Vec<String> = list
            .devices
            .iter()
            .filter(|d| d.online)
            .map(|d| d.id.clone())
            .collect();
        let status = read(
            &client,
            "get_recorder_status_for_devices",
            json!({"device_ids": online}),
        )
        .await;
        fleet::apply_recorder_status(&mut list, &fleet::parse_recorder_status(&status).unwrap());
        assert_eq!(
            list.devices.iter().filter(|d| d.recording()).count(),
            1,
            "{team}: one recording"
        );
        assert_eq!(
            list.devices
                .iter()
                .filter(|d| d
                    .channels
                    .iter()
                    .any(|c| c.publishers.iter().any(|p| p.active)))
                .count(),
            1,
            "{team}: one streaming"
        );
        let system = read(
            &client,
            "get_system_status_for_devices",
            json!({"device_ids": online}),
        )
        .await;
        let system = fleet::parse_system_status(&system).unwrap();
        assert!(
            system
                .values()
                .all(|s| s.cpu_load.is_some() && s.up_since.is_some())
        );
        let endpoints = read(&client, "get_stream_endpoints", json!({})).await;
        assert!(
            !fleet::parse_stream_endpoints(&endpoints)
                .unwrap()
                .is_empty()
        );

        let until = now
            .checked_add(jiff::SignedDuration::from_hours(24))
            .unwrap();
        let raw_events = read(
            &client,
            "get_current_or_next_cms_events_for_devices",
            json!({"until": until.to_string()}),
        )
        .await;
        let events = fleet::parse_events(&raw_events).unwrap();
        // Some room is blocked by an event within 20 minutes.
        let soon = list.devices.iter().any(|d| {
            let event = events.get(&d.id).and_then(|e| e.as_ref());
            matches!(fleet::room_block(d, event, now, 20, false, 240), fleet::RoomBlock::Soon(m) if m <= 20)
        });
        assert!(soon, "{team}: an event starts within 20 minutes");
    }
    sim.shutdown().await;
}

#[tokio::test]
async fn a_view_only_user_is_refused_every_write_in_band_and_nothing_is_recorded() {
    let sim = fleetwatch_sim::start(SimConfig::demo()).await.unwrap();
    let viewer = connect(&sim, Some("normal-token")).await.unwrap();
    let room = sim.team_devices("normal")[0].clone();
    // Reads work.
    let list = read(&viewer, "get_devices_in_my_team", json!({})).await;
    assert_eq!(device(&list, &room)["Status"], "online");
    for (tool, arguments) in [
        ("batch_reboot", json!({"device_ids": [room.clone()]})),
        (
            "batch_recording",
            json!({"action": "start", "device_ids": [format!("{room}-1")]}),
        ),
        (
            "batch_firmware_update",
            json!({"device_ids": [room.clone()]}),
        ),
    ] {
        let r = call(&viewer, tool, arguments).await.unwrap();
        assert_eq!(r.is_error, Some(true), "{tool}");
        assert_eq!(text_of(&r), "Error: 403 Forbidden", "{tool}");
    }
    assert!(sim.writes().is_empty(), "{:?}", sim.writes());
    let list = read(&viewer, "get_devices_in_my_team", json!({})).await;
    assert_eq!(device(&list, &room)["Status"], "online");
    // The sandbox user may write.
    let writer = connect(&sim, Some("sandbox-token")).await.unwrap();
    let sandbox_room = sim.team_devices("sandbox")[0].clone();
    let r = call(
        &writer,
        "batch_reboot",
        json!({"device_ids": [sandbox_room]}),
    )
    .await
    .unwrap();
    assert_ne!(r.is_error, Some(true), "{}", text_of(&r));
    assert_eq!(sim.writes().len(), 1);
    sim.shutdown().await;
}
