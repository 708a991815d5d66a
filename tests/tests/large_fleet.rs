//! A team of 1,000 and of 10,000 rooms through the programs as deployed: the simulator serves a
//! generated team whose offline rooms sit at the end of the list, `fleetwatch serve` runs with
//! the offline model stand-in (each API in turn) and `fleetwatch ask` asks. The counts the
//! answer states are the truth, every request body to the model stays under 16 KB, and no
//! answer the model read was cut.

use fleetwatch_e2e::page::{AssistantState, Page, free_port};
use fleetwatch_e2e::{Harness, Setup, printed};
use fleetwatch_sim::model::Api;
use fleetwatch_sim::{SimConfig, TeamSource};
use serde_json::{Value, json};

/// The most bytes one request body to the model may hold, whatever the team's size.
const MAX_REQUEST_BYTES: usize = 16 * 1024;

/// A replay folder of `rooms` rooms, the last `offline` of them offline.
fn team(rooms: usize, offline: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("replay folder");
    let devices: Vec<Value> = (0..rooms)
        .map(|i| {
            let online = i < rooms - offline;
            json!({
                "Id": format!("{:010x}", 0x6000_0000_u64 + i as u64),
                "Name": format!("Hall {i}"),
                "Model": "Pearl-2",
                "Firmware": "4.24.3",
                "Status": if online { "online" } else { "offline" },
                "StateTime": "2026-03-02T09:00:00Z",
                "Channels": [{"channel_id": "1", "name": "Program",
                              "recording_status": {"state": if online && i % 9 == 0 { "started" } else { "stopped" }},
                              "Publishers": [{"type": "rtmp", "stream_key": format!("sk-{i}")}]}],
            })
        })
        .collect();
    std::fs::write(
        dir.path().join("get_devices_in_my_team.json"),
        json!({"team_id": "team-large", "devices": devices}).to_string(),
    )
    .expect("device list");
    dir
}

async fn ask_offline(api: Api, rooms: usize, offline: usize) {
    let folder = team(rooms, offline);
    let mut sim = SimConfig::demo();
    if let Some(normal) = sim.teams.iter_mut().find(|t| t.name == "normal") {
        normal.source = TeamSource::Replay(folder.path().to_path_buf());
    }
    let state = AssistantState::new();
    let (h, devices) = Harness::start_fenced(Setup {
        sim,
        extra_key_lines: vec![state.key_line.clone()],
        ..Setup::default()
    })
    .await;
    let model = fleetwatch_sim::model::start_offline_api(api, None, 0)
        .await
        .expect("model stand-in");
    let page = Page::start_with_model(free_port(), &state, &h, &devices, model).await;
    printed(state.run(&["grants", "open", "fleet"], ""), "grants");

    let said = printed(state.run(&["ask", "what's offline?"], ""), "ask");
    let head = format!("{offline} of {rooms} rooms are offline:");
    assert!(said.contains(&head), "{said}");
    // The first page by name (the offline rooms are the last of the list) and what is left.
    let first = rooms - offline;
    assert!(said.contains(&format!("“Hall {first}”")), "{said}");
    let rest = offline - fleetwatch::fleet_tools::PAGE_ROOMS;
    assert!(said.contains(&format!("… and {rest} more")), "{said}");

    let requests = page.model.requests();
    assert!(!requests.is_empty());
    for (i, request) in requests.iter().enumerate() {
        let bytes = serde_json::to_vec(request).expect("json").len();
        assert!(bytes <= MAX_REQUEST_BYTES, "request {i} is {bytes} bytes");
        let messages: String = request["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|m| m["role"] != "system")
            .map(Value::to_string)
            .collect();
        assert!(
            !messages.contains("result cut"),
            "request {i} carries a cut answer"
        );
        assert!(!messages.contains("sk-"), "a stream key reached the model");
    }
    assert!(h.sim.writes().is_empty());
}

async fn a_thousand_rooms(api: Api) {
    ask_offline(api, 1_000, 99).await;
}

async fn ten_thousand_rooms(api: Api) {
    ask_offline(api, 10_000, 3_547).await;
}

fleetwatch_sim::both_apis!(a_thousand_rooms, ten_thousand_rooms);
