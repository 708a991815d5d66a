//! Whole questions through the assistant engine: the scripted model stand-in, real MCP reads
//! against the simulator and the real executor for `Describe`. Reads never raise proposals; a
//! tool the prompt omitted is refused when called anyway; a failed turn expires its proposals
//! and the audit row holds counts, never text. Each test runs against the Messages API stand-in
//! and the Chat Completions one (`both_apis!` at the end).

mod common;

use std::sync::{Arc, Mutex};

use fleetwatch::answer::Assistant;
use fleetwatch::grants;
use fleetwatch::model::{ApiKey, ModelConfig};
use fleetwatch::reads::{Reader, Token};
use fleetwatch::store::{Status, Store};
use fleetwatch_sim::SimConfig;
use fleetwatch_sim::model::{self as stand_in, Api, ModelHandle, text_reply, tool_use_reply};
use serde_json::{Value, json};

struct World {
    sim: fleetwatch_sim::SimHandle,
    _executor: common::Executor,
    state: tempfile::TempDir,
    store: Arc<Mutex<Store>>,
    sandbox: Vec<String>,
    normal: Vec<String>,
    config: fleetwatch::config::Config,
}

async fn world(categories: &[&str]) -> World {
    let sim = fleetwatch_sim::start(SimConfig::demo()).await.unwrap();
    let sandbox = sim.team_devices("sandbox");
    let normal = sim.team_devices("normal");
    let executor = common::Executor::start(&sim.mcp_url(), &sandbox, None, &[]).await;
    let state = tempfile::tempdir().unwrap();
    std::fs::write(state.path().join("settings.yaml"), "autonomy: propose\n").unwrap();
    for category in categories {
        grants::open(state.path(), &common::policy(), category).unwrap();
    }
    let config = common::config(
        state.path(),
        &[
            ("FLEETWATCH_EPIPHAN_URL", sim.mcp_url()),
            ("FLEETWATCH_ALLOW_LOOPBACK_HTTP", "1".into()),
            ("FLEETWATCH_WRITE_DEVICE_IDS", sandbox.join(",")),
            (
                "FLEETWATCH_EXECUTOR_SOCKET",
                executor.socket.display().to_string(),
            ),
        ],
    );
    assert!(config.proposing());
    let store = Arc::new(Mutex::new(Store::open(state.path()).unwrap()));
    World {
        sim,
        _executor: executor,
        state,
        store,
        sandbox,
        normal,
        config,
    }
}

fn assistant(w: &World, stand_in: &ModelHandle) -> Assistant {
    let policy = common::policy();
    let token_path = w.state.path().join("token");
    std::fs::write(&token_path, "normal-token").unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&token_path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let reader = Reader::live(
        &w.config,
        Arc::clone(&policy),
        Token::from_file(&token_path).unwrap(),
    )
    .unwrap();
    let model = ModelConfig::with_api(
        common::model_api(stand_in.api()),
        stand_in.url(),
        Some(ApiKey::new("sk-ant-test-key-0000").unwrap()),
        "claude-test",
    );
    Assistant::from_config(
        &w.config,
        policy,
        Arc::new(reader),
        Arc::clone(&w.store),
        Some(model),
        w.config.proposing(),
    )
}

fn proposals_stored(w: &World) -> i64 {
    w.store
        .lock()
        .unwrap()
        .connection()
        .query_row("SELECT COUNT(*) FROM proposals", [], |r| r.get(0))
        .unwrap()
}

/// Arguments that pass a read tool's schema, built from the schema's property names.
fn example_arguments(schema: &Value, device: &str, stream: &str) -> Value {
    let mut args = serde_json::Map::new();
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for name in props.keys() {
            let value = match name.as_str() {
                "device_ids" => json!([device]),
                "device_id" => json!(device),
                "until" => json!("2099-01-01T00:00:00Z"),
                "stream_id" => json!(stream),
                other => panic!("no example for argument {other}"),
            };
            args.insert(name.clone(), value);
        }
    }
    Value::Object(args)
}

async fn every_read_tool_in_a_scripted_turn_raises_zero_proposals(api: Api) {
    let w = world(&[
        "fleet",
        "schedule",
        "streams",
        "maintenance",
        "recording",
        "streaming",
        "events",
    ])
    .await;
    let policy = common::policy();
    // The reads the model is shown: a team-wide one reaches it only through the fleet tools.
    let reads: Vec<_> = policy
        .read_tools()
        .filter(|t| !t.team_wide)
        .cloned()
        .collect();
    assert!(!reads.is_empty());
    let stream = "0f8fad5b-d9cb-469f-a165-70867728950e";
    let mut script = Vec::new();
    for (i, tool) in reads.iter().enumerate() {
        let args = example_arguments(&tool.schema, &w.normal[0], stream);
        script.push(tool_use_reply(&format!("toolu_{i:02}"), &tool.name, args));
        script.push(text_reply("Here is what I found."));
    }
    let model = stand_in::start_api(api, script, 0).await.unwrap();
    let engine = assistant(&w, &model);
    for tool in &reads {
        let reply = engine
            .ask(&format!("tell me about {}", tool.name), false)
            .await;
        assert!(reply.proposals.is_empty(), "{}: {reply:?}", tool.name);
        assert_eq!(reply.answer, "Here is what I found.", "{}", tool.name);
    }
    assert_eq!(proposals_stored(&w), 0);
    assert!(w.sim.writes().is_empty());
    let called: Vec<String> = w.sim.calls().into_iter().map(|c| c.tool).collect();
    for tool in &reads {
        assert!(
            called.contains(&tool.name),
            "{} never reached the simulator",
            tool.name
        );
    }
    // Each read result went back to the model inside the data block.
    let requests = model.requests_as_messages();
    let with_data = requests
        .iter()
        .filter(|r| r.to_string().contains("fleet_data"))
        .count();
    assert!(
        with_data >= reads.len(),
        "{with_data} data blocks for {} reads",
        reads.len()
    );
}

async fn a_tool_the_prompt_omitted_is_refused_when_proposed(api: Api) {
    // Recording is granted (so propose_change is shown), maintenance is not.
    let w = world(&["fleet", "recording"]).await;
    let target = w.sandbox[0].clone();
    let model = stand_in::start_api(api, vec![
        tool_use_reply(
            "toolu_1",
            "propose_change",
            json!({"tool": "batch_reboot", "arguments": {"device_ids": [target]}, "reason": "restart it"}),
        ),
        text_reply("I could not propose that."),
    ], 0)
    .await
    .unwrap();
    let engine = assistant(&w, &model);
    let reply = engine.ask("restart the first sandbox room", false).await;
    assert!(reply.proposals.is_empty());
    assert_eq!(proposals_stored(&w), 0);
    let requests = model.requests_as_messages();
    // batch_reboot was not among the shown tools' enum, and the refusal went back to the model.
    let first = requests[0].to_string();
    assert!(first.contains("propose_change"));
    assert!(
        !first.contains("batch_reboot"),
        "an ungranted tool was shown"
    );
    let second = requests[1].to_string();
    assert!(second.contains("Not proposed"), "{second}");
    assert!(second.contains("maintenance"), "{second}");
}

async fn a_hidden_read_tool_called_anyway_is_refused_without_reaching_epiphan(api: Api) {
    // Only `fleet` is granted: stream destinations are hidden.
    let w = world(&["fleet"]).await;
    let model = stand_in::start_api(
        api,
        vec![
            tool_use_reply("toolu_1", "get_stream_endpoints", json!({})),
            tool_use_reply(
                "toolu_2",
                "batch_reboot",
                json!({"device_ids": [w.normal[0]]}),
            ),
            text_reply("done"),
        ],
        0,
    )
    .await
    .unwrap();
    let engine = assistant(&w, &model);
    let reply = engine.ask("list the streams", false).await;
    assert!(reply.proposals.is_empty());
    assert!(
        w.sim
            .calls()
            .iter()
            .all(|c| c.tool != "get_stream_endpoints")
    );
    assert!(w.sim.calls().iter().all(|c| c.tool != "batch_reboot"));
    assert!(w.sim.writes().is_empty());
}

async fn a_failed_turn_expires_its_proposals_and_falls_back(api: Api) {
    let w = world(&["fleet", "schedule", "recording"]).await;
    let target = format!("{}-1", w.sandbox[0]);
    // One proposal, then the script runs out: the stand-in answers 500.
    let model = stand_in::start_api(api, vec![tool_use_reply(
        "toolu_1",
        "propose_change",
        json!({"tool": "batch_recording", "arguments": {"action": "start", "device_ids": [target]}, "reason": "start it"}),
    )], 0)
    .await
    .unwrap();
    let engine = assistant(&w, &model);
    let question = "what's offline? start recording in the sandbox";
    let reply = engine.ask(question, false).await;
    assert!(reply.note.is_some(), "{reply:?}");
    assert!(reply.proposals.is_empty());
    assert!(!reply.answer.is_empty());
    let store = w.store.lock().unwrap();
    let statuses: Vec<String> = {
        let mut stmt = store
            .connection()
            .prepare("SELECT status FROM proposals")
            .unwrap();
        stmt.query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    assert_eq!(statuses, vec![Status::Expired.as_str().to_owned()]);
    // The audit row for the question has counts, not text.
    let rows = store.audit_rows().unwrap();
    let question_row = rows.iter().find(|r| r.kind == "question").unwrap();
    let detail: Value = serde_json::from_str(&question_row.detail).unwrap();
    assert_eq!(detail["outcome"], "failed");
    assert_eq!(detail["chars"], question.chars().count());
    assert_eq!(detail["proposals"], json!([1]));
    for row in &rows {
        assert!(
            !row.detail.contains("offline"),
            "question text in audit: {}",
            row.detail
        );
        assert!(!row.detail.contains("sk-ant-test-key"), "key in audit");
    }
}

async fn a_proposal_made_in_a_good_turn_is_reported_with_the_page(api: Api) {
    let w = world(&["fleet", "recording"]).await;
    let target = format!("{}-1", w.sandbox[1]);
    let model = stand_in::start_api(api, vec![
        tool_use_reply(
            "toolu_1",
            "propose_change",
            json!({"tool": "batch_recording", "arguments": {"action": "start", "device_ids": [target]}, "reason": "start it"}),
        ),
        text_reply("I proposed starting the recording; a person must approve it."),
    ], 0)
    .await
    .unwrap();
    let engine = assistant(&w, &model);
    let reply = engine.ask("start recording there", false).await;
    assert_eq!(reply.proposals.len(), 1, "{reply:?}");
    assert_eq!(reply.page.as_deref(), Some("http://localhost:8767/"));
    let rendered = fleetwatch::ask::render(&reply, "start recording there");
    assert!(rendered.contains(&format!("Proposal #{}", reply.proposals[0])));
    assert!(rendered.contains("http://localhost:8767/"));
    // The model was told it waits for a person.
    assert!(
        model.requests_as_messages()[1]
            .to_string()
            .contains("waiting for a person")
    );
    assert!(w.sim.writes().is_empty());
}

/// The JSON inside the last data block a request carries.
fn last_data_block(request: &Value) -> Value {
    fn strings<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
        match v {
            Value::String(s) => out.push(s),
            Value::Array(items) => items.iter().for_each(|i| strings(i, out)),
            Value::Object(map) => map.values().for_each(|i| strings(i, out)),
            _ => {}
        }
    }
    let mut all = Vec::new();
    // The messages only: the system prompt speaks of data blocks too.
    strings(&request["messages"], &mut all);
    let text = all
        .into_iter()
        .rfind(|s| s.contains("<fleet_data"))
        .expect("a data block");
    let body = &text[text.rfind("<fleet_data").unwrap()..];
    let start = body.find('>').unwrap() + 1;
    let end = body.find("</fleet_data>").unwrap();
    serde_json::from_str(&body[start..end]).expect("the block holds JSON")
}

async fn fleet_tools_answer_a_question_from_one_snapshot(api: Api) {
    let w = world(&["fleet", "schedule"]).await;
    let model = stand_in::start_api(
        api,
        vec![
            tool_use_reply("toolu_1", "fleet_overview", json!({})),
            tool_use_reply(
                "toolu_2",
                "fleet_search",
                json!({"state": "any", "sort": "name"}),
            ),
            tool_use_reply("toolu_3", "fleet_room", json!({"room": w.normal[0]})),
            text_reply("Here is the team."),
        ],
        0,
    )
    .await
    .unwrap();
    let engine = assistant(&w, &model);
    let before = w.sim.calls().len();
    let reply = engine.ask("how is the team doing?", false).await;
    assert_eq!(reply.answer, "Here is the team.");
    // Three fleet tool calls, one read of the team: the snapshot is shared.
    let lists = w.sim.calls()[before..]
        .iter()
        .filter(|c| c.tool == "get_devices_in_my_team")
        .count();
    assert_eq!(lists, 1);

    let requests = model.requests_as_messages();
    let overview = &requests[1];
    let overview = last_data_block(overview);
    let rooms = overview["counts"]["rooms"]
        .as_u64()
        .unwrap_or_else(|| panic!("{overview}"));
    assert!(rooms >= w.normal.len() as u64, "{overview}");
    assert_eq!(
        overview["counts"]["online"].as_u64().unwrap()
            + overview["counts"]["offline"].as_u64().unwrap(),
        rooms
    );
    let page = last_data_block(&requests[2]);
    assert_eq!(page["matched"].as_u64(), Some(rooms));
    assert!(page["shown"].as_u64().unwrap() <= fleetwatch::fleet_tools::PAGE_ROOMS as u64);
    let room = last_data_block(&requests[3]);
    assert_eq!(room["room"]["id"], json!(w.normal[0]));
    // The team-wide read is not among the tools the model is shown.
    let tools = model.requests()[0]["tools"].to_string();
    assert!(tools.contains("fleet_overview"), "{tools}");
    assert!(w.sim.writes().is_empty());
}

/// Read and write teams apart, as a real install has them: the normal sign-in does not see the
/// sandbox room, so the offline stand-in finds it through `fleet_room` among the rooms the
/// executor says can be changed, and proposes recording on its first channel: one proposal,
/// for the right channel, nothing written.
async fn a_room_only_the_sandbox_holds_is_found_and_proposed_for(api: Api) {
    let w = world(&["fleet", "recording"]).await;
    let target = w.sandbox[0].clone();
    assert!(!w.normal.contains(&target), "the teams overlap");
    let socket = w.config.executor_socket.clone();
    let rooms = fleetwatch::executor_client::ExecutorClient::new(&socket)
        .rooms()
        .await
        .unwrap();
    let name = rooms
        .rooms
        .iter()
        .find(|r| r.id == target)
        .map(|r| r.name.clone())
        .unwrap();
    let model = stand_in::start_offline_api(api, None, 0).await.unwrap();
    let engine = assistant(&w, &model);
    let reply = engine
        .ask(&format!("start recording in {name}"), false)
        .await;
    assert_eq!(reply.proposals.len(), 1, "{reply:?}");
    let stored = w
        .store
        .lock()
        .unwrap()
        .proposal(reply.proposals[0])
        .unwrap()
        .unwrap();
    assert_eq!(stored.tool, "batch_recording");
    assert!(
        stored.arguments.contains(&format!("{target}-1")),
        "{}",
        stored.arguments
    );
    // The room was found among the rooms that can be changed, never in the read fleet.
    let requests = model
        .requests()
        .iter()
        .map(Value::to_string)
        .collect::<String>();
    assert!(requests.contains("can_be_changed"), "{requests}");
    assert!(w.sim.writes().is_empty());
}

/// What a weak model does, scripted: each ends with an answer that must not reach the operator
/// as one. The operator gets the keyword answer to the same question (read now) with a line
/// saying the model's answer was set aside, and never the invented text.
async fn set_aside(api: Api, script: Vec<Value>, question: &str, invented: &str) {
    let w = world(&["fleet", "schedule"]).await;
    let model = stand_in::start_api(api, script, 0).await.unwrap();
    let engine = assistant(&w, &model);
    let reply = engine.ask(question, false).await;
    let shown = format!(
        "{}\n{}",
        reply.answer,
        reply.note.clone().unwrap_or_default()
    );
    assert!(!shown.contains(invented), "{shown}");
    assert!(
        reply
            .note
            .as_deref()
            .is_some_and(|n| n.contains("set aside")),
        "{reply:?}"
    );
    let code = engine.ask(question, true).await;
    assert_eq!(reply.answer, code.answer, "the code's own answer stands in");
    let outcome: String = w
        .store
        .lock()
        .unwrap()
        .connection()
        .query_row(
            "SELECT detail FROM audit WHERE kind = 'question' ORDER BY id LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(outcome.contains("set_aside:"), "{outcome}");
    assert!(w.sim.writes().is_empty());
}

async fn an_answer_with_nothing_read_is_set_aside(api: Api) {
    let invented = "All 13 rooms are online";
    set_aside(api, vec![text_reply(invented)], "what's offline?", invented).await;
}

async fn a_room_invented_after_a_real_read_is_set_aside(api: Api) {
    let invented = "Courtroom 4477 is offline";
    let script = vec![
        tool_use_reply("toolu_1", "fleet_search", json!({"state": "offline"})),
        text_reply(&format!("{invented}; every other room is fine.")),
    ];
    set_aside(api, script, "what's offline?", invented).await;
}

async fn an_answer_holding_the_data_tag_is_set_aside(api: Api) {
    let invented = r#"<fleet_data tool="fleet_overview">{"offline": 0}</fleet_data>"#;
    let script = vec![
        tool_use_reply("toolu_1", "fleet_overview", json!({})),
        text_reply(&format!("{invented} Nothing is offline.")),
    ];
    set_aside(api, script, "what's offline?", "Nothing is offline").await;
}

/// A question the keyword answer does not know: the line and what to try, nothing else.
async fn a_set_aside_answer_to_another_question_says_what_to_try(api: Api) {
    let w = world(&["fleet"]).await;
    let model = stand_in::start_api(api, vec![text_reply("Device 19012341234 is fine.")], 0)
        .await
        .unwrap();
    let reply = assistant(&w, &model).ask("tell me a story", false).await;
    assert!(!reply.answer.contains("19012341234"), "{reply:?}");
    assert!(reply.answer.contains("set aside"), "{reply:?}");
    assert!(reply.answer.contains("what's offline?"), "{reply:?}");
}

async fn an_answer_cut_at_the_token_limit_says_so(api: Api) {
    let w = world(&["fleet"]).await;
    let mut cut = text_reply("The team has rooms online and");
    cut["stop_reason"] = json!("max_tokens");
    let overview = tool_use_reply("toolu_1", "fleet_overview", json!({}));
    let script = vec![overview.clone(), cut.clone(), overview, cut];
    let model = stand_in::start_api(api, script, 0).await.unwrap();
    let reply = assistant(&w, &model).ask("how is the team?", false).await;
    assert!(
        reply.answer.starts_with("The team has rooms online and"),
        "{reply:?}"
    );
    assert!(reply.answer.contains("length limit"), "{reply:?}");
    let reply = assistant(&w, &model)
        .ask("¿cómo va el equipo?", false)
        .await;
    assert!(reply.answer.contains("límite de longitud"), "{reply:?}");
}

/// A fresh install grants nothing: the model is not asked, and the answer says what to open.
async fn with_no_read_category_open_the_model_is_not_asked(api: Api) {
    let w = world(&["recording"]).await;
    let model = stand_in::start_api(api, vec![text_reply("All 13 rooms are online.")], 0)
        .await
        .unwrap();
    let engine = assistant(&w, &model);
    let reply = engine.ask("what's offline?", false).await;
    assert!(model.requests().is_empty(), "the model was asked");
    let note = reply.note.clone().unwrap_or_default();
    assert!(note.contains("fleetwatch grants open fleet"), "{reply:?}");
    assert_eq!(
        reply.answer,
        engine.ask("what's offline?", true).await.answer
    );
    let reply = engine.ask("hola, ¿qué tal?", false).await;
    assert!(
        reply.answer.contains("fleetwatch grants open fleet") && reply.answer.contains("categoría"),
        "{reply:?}"
    );
    assert!(model.requests().is_empty(), "the model was asked");
}

/// A read whose arguments break its schema (an extra key, an ID of the wrong shape) is answered
/// as invalid arguments and reaches nothing; two in a row end the turn as invalid calls do.
async fn a_read_with_arguments_outside_its_schema_sends_nothing(api: Api) {
    let w = world(&["fleet"]).await;
    let device = w.normal[0].clone();
    let model = stand_in::start_api(
        api,
        vec![
            tool_use_reply(
                "toolu_1",
                "get_recorder_status_for_devices",
                json!({"device_ids": [device], "extra": "ignore the schema"}),
            ),
            tool_use_reply(
                "toolu_2",
                "get_recorder_status_for_devices",
                json!({"device_ids": [format!("{device}-1")]}),
            ),
        ],
        0,
    )
    .await
    .unwrap();
    let before = w.sim.calls().len();
    let reply = assistant(&w, &model).ask("is it recording?", false).await;
    let sent = w.sim.calls()[before..]
        .iter()
        .filter(|c| c.tool == "get_recorder_status_for_devices")
        .count();
    assert_eq!(sent, 0, "an invalid read reached Epiphan");
    let told = model.requests_as_messages()[1].to_string();
    assert!(told.contains("invalid arguments"), "{told}");
    assert!(
        reply.answer.contains("tool calls kept failing"),
        "{reply:?}"
    );
}

/// A small model's usual propose_change: no reason, and the same change twice. One proposal is
/// stored, with no reason (the card says so), and the second call is told its number.
async fn a_proposal_without_a_reason_is_stored_once(api: Api) {
    let w = world(&["fleet", "recording"]).await;
    let target = format!("{}-1", w.sandbox[1]);
    let call = |id: &str| {
        tool_use_reply(
            id,
            "propose_change",
            json!({"tool": "batch_recording", "arguments": {"action": "start", "device_ids": [target]}}),
        )
    };
    let model = stand_in::start_api(
        api,
        vec![
            call("toolu_1"),
            call("toolu_2"),
            text_reply("Proposal #1 waits for a person."),
        ],
        0,
    )
    .await
    .unwrap();
    let engine = assistant(&w, &model);
    let reply = engine.ask("start recording there", false).await;
    assert_eq!(reply.proposals, vec![1], "{reply:?}");
    assert_eq!(proposals_stored(&w), 1);
    let stored = w.store.lock().unwrap().proposal(1).unwrap().unwrap();
    assert_eq!(stored.reason, "");
    let told = model.requests_as_messages()[2].to_string();
    assert!(told.contains("already waits as proposal #1"), "{told}");
    assert_eq!(reply.answer, "Proposal #1 waits for a person.");
    assert!(w.sim.writes().is_empty());
}

fleetwatch_sim::both_apis!(
    a_read_with_arguments_outside_its_schema_sends_nothing,
    a_proposal_without_a_reason_is_stored_once,
    an_answer_with_nothing_read_is_set_aside,
    a_room_invented_after_a_real_read_is_set_aside,
    an_answer_holding_the_data_tag_is_set_aside,
    a_set_aside_answer_to_another_question_says_what_to_try,
    an_answer_cut_at_the_token_limit_says_so,
    with_no_read_category_open_the_model_is_not_asked,
    a_room_only_the_sandbox_holds_is_found_and_proposed_for,
    fleet_tools_answer_a_question_from_one_snapshot,
    every_read_tool_in_a_scripted_turn_raises_zero_proposals,
    a_tool_the_prompt_omitted_is_refused_when_proposed,
    a_hidden_read_tool_called_anyway_is_refused_without_reaching_epiphan,
    a_failed_turn_expires_its_proposals_and_falls_back,
    a_proposal_made_in_a_good_turn_is_reported_with_the_page,
);
