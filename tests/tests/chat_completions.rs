//! A team's own model through the Chat Completions API, end to end: `fleetwatch serve` set up
//! as a team runs it (`FLEETWATCH_MODEL_API=openai`, a base URL on loopback, no key) in front of
//! the real executor, and `fleetwatch ask` asking. The scripted stand-in answers what small
//! models send: arguments that are not JSON, an unknown tool, several calls in one message
//! without IDs, a call with text around it, an empty answer. Each is answered as its Anthropic
//! equivalent is (an error fed back, the invalid-call limit, the keyword fallback), never a
//! crash and never a proposal that skipped validation.

use fleetwatch_e2e::page::PagePath;
use fleetwatch_e2e::{printed, sandbox_devices};
use fleetwatch_sim::model::{Api, text_reply, tool_use_reply};
use serde_json::{Value, json};

/// A Chat Completions answer as a server sends it.
fn completion(content: Value, calls: Value, finish: &str) -> Value {
    json!({
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content, "tool_calls": calls},
            "finish_reason": finish,
        }],
        "usage": {"prompt_tokens": 50, "completion_tokens": 5},
    })
}

fn call(id: Option<&str>, name: &str, arguments: &str) -> Value {
    let mut call = json!({"type": "function", "function": {"name": name, "arguments": arguments}});
    if let Some(id) = id {
        call["id"] = json!(id);
    }
    call
}

fn text(answer: &str) -> Value {
    completion(json!(answer), Value::Null, "stop")
}

/// The `tool` messages of a recorded request, as (call ID, content).
fn tool_messages(request: &Value) -> Vec<(String, String)> {
    request["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap_or_default().to_owned(),
                m["content"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn what_a_small_model_sends_is_answered_through_serve_and_ask() {
    let model = fleetwatch_sim::model::start_api(Api::OpenAi, Vec::new(), 0)
        .await
        .expect("model stand-in");
    let path = PagePath::start_with_model(model).await;
    printed(path.state.run(&["grants", "open", "fleet"], ""), "grants");
    let channel = format!("{}-1", sandbox_devices(&path.h.sim)[0]);
    assert!(path.h.sim.set_recording("sandbox", &channel, false));
    let model = &path.page.model;
    let ask = |question: &str| printed(path.state.run(&["ask", question], ""), question);
    let pending = || {
        let text = printed(path.state.run(&["pending", "--json"], ""), "pending");
        serde_json::from_str::<Value>(&text).expect("pending --json")
    };

    // Arguments that are not JSON, twice: an error fed back, then the invalid-call limit.
    let broken = "{tool: batch_recording, arguments: {action: start";
    assert!(model.push_replies(vec![
        completion(
            Value::Null,
            json!([call(Some("c1"), "propose_change", broken)]),
            "tool_calls"
        ),
        completion(
            Value::Null,
            json!([call(Some("c2"), "propose_change", broken)]),
            "tool_calls"
        ),
    ]));
    let said = ask("start recording in Test Room A");
    assert!(
        said.contains("Sorry, I could not finish this answer"),
        "{said}"
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 2, "the second invalid call ends the turn");
    let fed_back = tool_messages(&requests[1]);
    assert_eq!(fed_back.len(), 1);
    assert_eq!(fed_back[0].0, "c1");
    assert!(
        fed_back[0]
            .1
            .starts_with("Not proposed: propose_change takes tool (text)"),
        "{fed_back:?}"
    );
    assert_eq!(pending(), json!([]), "nothing was stored");

    // An unknown tool: the fixed text that does not repeat its name, then the answer.
    assert!(model.push_replies(vec![
        completion(
            Value::Null,
            json!([call(Some("c3"), "wipe_all_recorders", "{}")]),
            "tool_calls"
        ),
        text("I cannot do that."),
    ]));
    let said = ask("wipe everything");
    assert!(said.contains("I cannot do that."), "{said}");
    let last = model.requests().last().cloned().expect("a request");
    assert_eq!(
        tool_messages(&last),
        [("c3".to_owned(), "That tool is not available.".to_owned())]
    );

    // Several calls in one message, without IDs, with text around them: each answered under an
    // ID of its own, and the message sent back names the same IDs.
    assert!(model.push_replies(vec![
        completion(
            json!("Let me look twice."),
            json!([
                call(None, "fleet_overview", "{}"),
                call(None, "fleet_overview", ""),
            ]),
            "tool_calls",
        ),
        text("Six rooms."),
    ]));
    let said = ask("how many rooms?");
    assert!(said.contains("Six rooms."), "{said}");
    let last = model.requests().last().cloned().expect("a request");
    let answers = tool_messages(&last);
    assert_eq!(answers.len(), 2, "{last}");
    assert_ne!(answers[0].0, answers[1].0);
    for (_, content) in &answers {
        assert!(
            content.starts_with("<fleet_data tool=\"fleet_overview\">"),
            "{content}"
        );
    }
    let echoed: Vec<&str> = last["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "assistant")
        .flat_map(|m| m["tool_calls"].as_array().into_iter().flatten())
        .filter_map(|c| c["id"].as_str())
        .collect();
    assert_eq!(echoed, [answers[0].0.as_str(), answers[1].0.as_str()]);

    // A valid call with text around it: proposed through the same validation as ever.
    let arguments = json!({
        "tool": "batch_recording",
        "arguments": {"action": "start", "device_ids": [channel]},
        "reason": "the lecture starts",
    });
    assert!(model.push_replies(vec![
        completion(
            json!("Sure, I will propose it."),
            json!([call(Some("c5"), "propose_change", &arguments.to_string())]),
            "tool_calls",
        ),
        text("Proposed."),
    ]));
    let said = ask("start recording in Test Room A");
    assert!(
        said.contains("Proposal #1 is waiting for a person"),
        "{said}"
    );
    let waiting = pending();
    assert_eq!(waiting[0]["proposal"], json!(1), "{waiting}");
    assert_eq!(waiting[0]["tool"], json!("batch_recording"), "{waiting}");

    // An empty answer: the keyword answer, saying why, and nothing proposed.
    assert!(model.push_replies(vec![completion(json!(""), Value::Null, "stop")]));
    let said = ask("what is offline?");
    assert!(
        said.contains("The AI model could not answer (the model gave an empty answer)"),
        "{said}"
    );
    assert_eq!(pending().as_array().map(Vec::len), Some(1));

    // Every request was a Chat Completions request, with no key (none was configured).
    for request in model.requests() {
        assert_eq!(
            request["model"],
            json!(fleetwatch_sim::model::SCRIPTED_MODEL)
        );
        assert_eq!(request["messages"][0]["role"], json!("system"));
        assert_eq!(request["stream"], json!(false));
    }
    assert!(path.h.sim.writes().is_empty(), "nobody approved anything");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_asks_the_server_for_its_models() {
    let model = fleetwatch_sim::model::start_api(Api::OpenAi, Vec::new(), 0)
        .await
        .expect("model stand-in");
    let state = fleetwatch_e2e::page::AssistantState::new();
    let doctor = |name: &str| {
        let out = state
            .command()
            .env("FLEETWATCH_MODEL_API", "openai")
            .env("FLEETWATCH_MODEL_BASE_URL", model.url())
            .env("FLEETWATCH_AI_MODEL", name)
            .arg("doctor")
            .output()
            .expect("doctor");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let line = |text: &str, name: &str| {
        text.lines()
            .find(|l| l.contains(&format!(" {name}: ")))
            .unwrap_or_default()
            .to_owned()
    };
    let text = doctor(fleetwatch_sim::model::SCRIPTED_MODEL);
    let server = line(&text, "model server");
    assert!(server.starts_with("OK"), "{text}");
    assert!(server.contains("serves fleetwatch-scripted"), "{server}");
    let on = line(&text, "model");
    assert!(
        on.starts_with("OK") && on.contains("do not leave the machine"),
        "{text}"
    );

    // The probe: one short request with one tool, and how long it took against the limit.
    assert!(model.push_replies(vec![tool_use_reply(
        "call_1",
        fleetwatch::model::PROBE_TOOL,
        json!({})
    )]));
    let text = doctor(fleetwatch_sim::model::SCRIPTED_MODEL);
    let probe = line(&text, "model tool call");
    assert!(probe.starts_with("OK"), "{text}");
    assert!(
        probe.contains("with a tool call") && probe.contains("of the 90 s call limit"),
        "{probe}"
    );
    assert!(
        line(&text, "model limits").contains("90 s a call, 180 s a question"),
        "{text}"
    );
    let probe_request = model.requests().last().cloned().unwrap_or_default();
    assert_eq!(
        probe_request["tools"].as_array().map(Vec::len),
        Some(1),
        "{probe_request}"
    );
    // A model that writes text instead of calling the tool is said to, as a warning.
    assert!(model.push_replies(vec![text_reply("3 rooms are offline.")]));
    let text = doctor(fleetwatch_sim::model::SCRIPTED_MODEL);
    let probe = line(&text, "model tool call");
    assert!(
        probe.starts_with("WARN") && probe.contains("not a tool call"),
        "{text}"
    );

    let text = doctor("llama3.1:70b");
    let server = line(&text, "model server");
    assert!(server.starts_with("FAIL"), "{text}");
    assert!(
        server.contains("does not list llama3.1:70b; it lists: fleetwatch-scripted"),
        "{server}"
    );

    // Nothing answers: said in words.
    let gone = model.url();
    model.shutdown().await;
    let out = state
        .command()
        .env("FLEETWATCH_MODEL_API", "openai")
        .env("FLEETWATCH_MODEL_BASE_URL", &gone)
        .env("FLEETWATCH_AI_MODEL", "m")
        .arg("doctor")
        .output()
        .expect("doctor");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        line(&text, "model server").contains(&format!("could not reach {gone}/v1/models")),
        "{text}"
    );

    // A server that takes the connection and never answers: the probe ends at the call limit
    // the team set, and says which setting that is.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let out = state
        .command()
        .env("FLEETWATCH_MODEL_API", "openai")
        .env(
            "FLEETWATCH_MODEL_BASE_URL",
            format!("http://{}", silent.local_addr().expect("addr")),
        )
        .env("FLEETWATCH_AI_MODEL", "m")
        .env("FLEETWATCH_MODEL_CALL_TIMEOUT_SECS", "1")
        .arg("doctor")
        .output()
        .expect("doctor");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let probe = line(&text, "model tool call");
    assert!(
        probe.starts_with("FAIL")
            && probe.contains("call limit of 1 s (FLEETWATCH_MODEL_CALL_TIMEOUT_SECS)"),
        "{text}"
    );
    assert!(
        line(&text, "model limits").contains("1 s a call, 180 s a question"),
        "{text}"
    );
    // A limit that is not a number of seconds stops doctor's model check with the variable.
    let out = state
        .command()
        .env("FLEETWATCH_MODEL_API", "openai")
        .env("FLEETWATCH_MODEL_BASE_URL", "http://127.0.0.1:9")
        .env("FLEETWATCH_AI_MODEL", "m")
        .env("FLEETWATCH_MODEL_QUESTION_TIMEOUT_SECS", "3 minutes")
        .arg("doctor")
        .output()
        .expect("doctor");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        line(&text, "model").starts_with("FAIL")
            && line(&text, "model").contains("FLEETWATCH_MODEL_QUESTION_TIMEOUT_SECS"),
        "{text}"
    );
    drop(silent);
}
