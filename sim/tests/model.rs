//! The model stand-in answers from its script in the API it speaks and records what it was
//! sent.

use fleetwatch_sim::model;
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

#[tokio::test]
async fn answers_the_script_in_order_and_records_requests() {
    let script = vec![
        model::tool_use_reply("toolu_01", "get_devices_in_my_team", json!({})),
        model::text_reply("Courtroom 2 is recording."),
    ];
    let server = model::start(script).await.unwrap();
    let http = http();
    let url = format!("{}/v1/messages", server.url());
    let first_request = json!({
        "model": "claude-sim",
        "max_tokens": 512,
        "tools": [{"name": "get_devices_in_my_team", "input_schema": {"type": "object"}}],
        "messages": [{"role": "user", "content": "Which rooms are recording?"}],
    });
    let first: Value = http
        .post(&url)
        .json(&first_request)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(first["stop_reason"], "tool_use");
    assert_eq!(first["content"][0]["type"], "tool_use");
    assert_eq!(first["content"][0]["id"], "toolu_01");
    assert_eq!(first["content"][0]["name"], "get_devices_in_my_team");
    assert!(first["usage"]["output_tokens"].is_u64());

    let second_request = json!({
        "model": "claude-sim",
        "messages": [
            {"role": "user", "content": "Which rooms are recording?"},
            {"role": "assistant", "content": first["content"].clone()},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "{\"devices\":[]}"}]},
        ],
    });
    let second: Value = http
        .post(&url)
        .json(&second_request)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(second["stop_reason"], "end_turn");
    assert_eq!(second["content"][0]["text"], "Courtroom 2 is recording.");
    assert_ne!(first["id"], second["id"]);

    // Exhausted: a JSON error with status 500.
    let third = http.post(&url).json(&second_request).send().await.unwrap();
    assert_eq!(third.status(), 500);
    let body: Value = third.json().await.unwrap();
    assert_eq!(body["type"], "error");

    // Not JSON: refused, but still recorded.
    let bad = http.post(&url).body("hello").send().await.unwrap();
    assert_eq!(bad.status(), 400);

    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(requests[0], first_request);
    assert_eq!(requests[1], second_request);
    assert_eq!(requests[3], Value::String("hello".into()));
    server.shutdown().await;
}

/// The JSON answer to `body` posted to `url`.
async fn posted(http: &reqwest::Client, url: &str, body: &Value) -> Value {
    http.post(url)
        .json(body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

#[tokio::test]
async fn the_chat_completions_stand_in_speaks_only_its_api_and_lists_its_model() {
    let script = vec![
        model::tool_use_reply("call_1", "get_devices_in_my_team", json!({})),
        model::text_reply("Courtroom 2 is recording."),
    ];
    let server = model::start_api(model::Api::OpenAi, script, 0)
        .await
        .unwrap();
    let http = http();
    // The other API's path is not there.
    let other = http
        .post(format!("{}/v1/messages", server.url()))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 404);
    let url = format!("{}/v1/chat/completions", server.url());
    let request = json!({
        "model": "m",
        "messages": [
            {"role": "system", "content": "rules"},
            {"role": "user", "content": "<fleet_data tool=\"chat_context\">{}</fleet_data>\n\nWhich rooms are recording?"},
        ],
        "tools": [{"type": "function", "function": {"name": "get_devices_in_my_team", "parameters": {"type": "object"}}}],
    });
    let first: Value = posted(&http, &url, &request).await;
    assert_eq!(first["choices"][0]["finish_reason"], "tool_calls");
    let call = &first["choices"][0]["message"]["tool_calls"][0];
    assert_eq!(call["id"], "call_1");
    assert_eq!(call["type"], "function");
    assert_eq!(call["function"]["name"], "get_devices_in_my_team");
    assert_eq!(call["function"]["arguments"], "{}");
    assert_eq!(first["usage"]["prompt_tokens"], 100);
    let second: Value = posted(&http, &url, &request).await;
    assert_eq!(second["choices"][0]["finish_reason"], "stop");
    assert_eq!(
        second["choices"][0]["message"]["content"],
        "Courtroom 2 is recording."
    );
    assert!(second["choices"][0]["message"].get("tool_calls").is_none());
    // Recorded as sent, and readable as the Messages API request it stands for.
    assert_eq!(server.requests()[0], request);
    let read = &server.requests_as_messages()[0];
    assert_eq!(read["system"], json!([{"type": "text", "text": "rules"}]));
    assert_eq!(
        read["messages"][0]["content"][1]["text"],
        "Which rooms are recording?"
    );
    assert_eq!(read["tools"][0]["name"], "get_devices_in_my_team");
    // Run dry: an error in this API's shape.
    let dry = http.post(&url).json(&request).send().await.unwrap();
    assert_eq!(dry.status(), 500);
    let body: Value = dry.json().await.unwrap();
    assert!(body["error"]["message"].is_string(), "{body}");
    let models: Value = http
        .get(format!("{}/v1/models", server.url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(models["data"][0]["id"], model::SCRIPTED_MODEL);
    server.shutdown().await;
}
