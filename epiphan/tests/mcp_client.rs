//! The MCP client core against two MCP servers: the simulator (rmcp's server, with one JSON
//! answer per POST and with sessions answering on event streams), and a scripted server that
//! does what the specification allows and rmcp's server does not (priming events, questions
//! to the client on the answer's stream, batches, oversized answers, streams that stop).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use fleetwatch_epiphan::{
    CallError, OpenError, ReadAnswer, Session, Unknown, WriteAnswer, http_client,
};
use fleetwatch_protocol::secret::Secret;
use fleetwatch_sim::SimConfig;
use fleetwatch_write_permit::WritePermit;
use serde_json::{Map, Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const BOUND: Duration = Duration::from_secs(10);

fn secret(text: &str) -> Secret {
    Secret::new(text).unwrap()
}

#[tokio::test]
async fn reads_and_one_write_with_and_without_sessions() {
    for sessions in [false, true] {
        let sim = fleetwatch_sim::start(SimConfig {
            sessions,
            ..SimConfig::demo()
        })
        .await
        .unwrap();
        let http = http_client().unwrap();
        let session = Session::open(&http, &sim.mcp_url(), &secret("sandbox-token"), BOUND)
            .await
            .unwrap();
        let Ok(ReadAnswer::Json(devices)) = session
            .call_read("get_devices_in_my_team", Map::new(), BOUND)
            .await
        else {
            panic!("no device list (sessions: {sessions})")
        };
        let first = sim.team_devices("sandbox")[0].clone();
        assert!(devices.to_string().contains(&first), "{devices}");
        // The same session answers again.
        assert!(
            session
                .call_read("get_devices_in_my_team", Map::new(), BOUND)
                .await
                .is_ok()
        );
        let mut arguments = Map::new();
        arguments.insert("device_ids".into(), json!([first]));
        let answer = session
            .call_write_once(WritePermit::new(), "batch_reboot", arguments, BOUND)
            .await;
        assert_eq!(answer, WriteAnswer::Done, "sessions: {sessions}");
        assert_eq!(sim.writes().len(), 1, "one write, sent once");
        assert!(!session.is_closed());
        session.close().await;
        // An unknown token is an expired sign-in, said by the HTTP status.
        let refused = Session::open(&http, &sim.mcp_url(), &secret("no-such-token"), BOUND).await;
        assert_eq!(refused.err(), Some(OpenError::SignInExpired));
        sim.shutdown().await;
    }
}

/// What the scripted server received: each request's headers (lower-case names) and body.
type Received = Arc<Mutex<Vec<(String, Value)>>>;

/// A reply: status, content type and body; `None` closes the connection without a reply.
type Reply = Option<(u16, &'static str, String)>;

/// Serves HTTP/1.1 on loopback, one request per connection, answering with `script`.
async fn scripted(script: impl Fn(&Value) -> Reply + Send + Sync + 'static) -> (String, Received) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let received: Received = Arc::default();
    let kept = received.clone();
    let script = Arc::new(script);
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let received = kept.clone();
            let script = script.clone();
            tokio::spawn(async move {
                let mut bytes = Vec::new();
                let mut buf = [0u8; 4096];
                let (head, body) = loop {
                    let n = socket.read(&mut buf).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    bytes.extend_from_slice(&buf[..n]);
                    let text = String::from_utf8_lossy(&bytes).into_owned();
                    if let Some((head, body)) = text.split_once("\r\n\r\n") {
                        let length = head
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase()
                                    .strip_prefix("content-length:")
                                    .map(|v| v.trim().parse::<usize>().unwrap())
                            })
                            .unwrap_or(0);
                        if body.len() >= length {
                            break (head.to_ascii_lowercase(), body.to_owned());
                        }
                    }
                };
                let message: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
                received.lock().unwrap().push((head, message.clone()));
                let Some((status, kind, text)) = script(&message) else {
                    return;
                };
                let reply = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: {kind}\r\nmcp-session-id: s-1\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                    text.len()
                );
                let _ = socket.write_all(reply.as_bytes()).await;
            });
        }
    });
    (url, received)
}

fn answer(message: &Value, result: Value) -> String {
    json!({"jsonrpc": "2.0", "id": message["id"], "result": result}).to_string()
}

fn devices() -> Value {
    json!({"content": [{"type": "text", "text": "{\"devices\": []}"}]})
}

/// Initialize and its notification answered as a server with sessions does; everything else
/// by `call`.
fn server(call: impl Fn(&Value) -> Reply + Send + Sync + 'static) -> impl Fn(&Value) -> Reply {
    move |message| match message["method"].as_str() {
        Some("initialize") => Some((
            200,
            "application/json",
            answer(
                message,
                json!({"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "x", "version": "1"}}),
            ),
        )),
        Some("notifications/initialized") => Some((202, "application/json", String::new())),
        // The client's answer to a question of the server's.
        None => Some((202, "application/json", String::new())),
        _ => call(message),
    }
}

#[tokio::test]
async fn an_event_stream_with_a_priming_event_a_notification_and_a_question_to_the_client() {
    let (url, received) = scripted(server(|message| {
        let stream = format!(
            "id: e0\nretry: 1000\ndata:\n\n: keep-alive\n\nevent: message\ndata: {}\n\ndata: {}\r\n\r\ndata: {}\n\n",
            json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}),
            json!({"jsonrpc": "2.0", "id": "q-7", "method": "ping"}),
            answer(message, devices()),
        );
        Some((200, "text/event-stream", stream))
    }))
    .await;
    let http = http_client().unwrap();
    let session = Session::open(&http, &url, &secret("tok"), BOUND)
        .await
        .unwrap();
    let read = session
        .call_read("get_devices_in_my_team", Map::new(), BOUND)
        .await;
    assert_eq!(read, Ok(ReadAnswer::Json(json!({"devices": []}))));
    let received = received.lock().unwrap().clone();
    // initialize, initialized, the call, the answer to the ping.
    assert_eq!(received.len(), 4, "{received:?}");
    let (head, _) = &received[0];
    assert!(head.contains("authorization: bearer tok"), "{head}");
    assert!(
        head.contains("accept: application/json, text/event-stream"),
        "{head}"
    );
    assert!(!head.contains("mcp-session-id"), "{head}");
    for (head, _) in &received[1..] {
        assert!(head.contains("mcp-session-id: s-1"), "{head}");
        assert!(head.contains("mcp-protocol-version: 2025-06-18"), "{head}");
    }
    assert_eq!(received[2].1["method"], "tools/call");
    assert_eq!(received[2].1["params"]["name"], "get_devices_in_my_team");
    assert_eq!(
        received[3].1,
        json!({"jsonrpc": "2.0", "id": "q-7", "result": {}})
    );
}

#[tokio::test]
async fn a_batch_answer_other_requests_and_a_session_that_is_gone() {
    let (url, _) = scripted(server(|message| match message["params"]["name"].as_str() {
        Some("get_batch") => Some((
            200,
            "application/json",
            format!("[{},{}]", json!({"jsonrpc": "2.0", "method": "notifications/message"}), answer(message, devices())),
        )),
        Some("get_sampling") => Some((
            200,
            "text/event-stream",
            format!(
                "data: {}\n\ndata: {}\n\n",
                json!({"jsonrpc": "2.0", "id": 9, "method": "sampling/createMessage", "params": {}}),
                answer(message, devices())
            ),
        )),
        Some("get_gone") => Some((404, "text/plain", "Session not found".into())),
        Some("get_unread") => Some((
            200,
            "application/json",
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error"}}).to_string(),
        )),
        _ => Some((500, "text/plain", "no".into())),
    }))
    .await;
    let http = http_client().unwrap();
    let session = Session::open(&http, &url, &secret("tok"), BOUND)
        .await
        .unwrap();
    assert!(
        session
            .call_read("get_batch", Map::new(), BOUND)
            .await
            .is_ok()
    );
    assert!(
        session
            .call_read("get_sampling", Map::new(), BOUND)
            .await
            .is_ok()
    );
    // An error with a null ID is the answer to a request the server could not read.
    let unread = session.call_read("get_unread", Map::new(), BOUND).await;
    assert!(
        matches!(unread, Err(CallError::Unreached(ref t)) if t.contains("-32700")),
        "{unread:?}"
    );
    assert!(!session.is_closed());
    let gone = session.call_read("get_gone", Map::new(), BOUND).await;
    assert!(
        matches!(gone, Err(CallError::Unreached(ref t)) if t.contains("404")),
        "{gone:?}"
    );
    assert!(
        session.is_closed(),
        "a session Epiphan no longer knows is not used again"
    );
}

#[tokio::test]
async fn what_cannot_be_trusted_after_a_write_is_unknown() {
    let (url, received) = scripted(server(|message| match message["params"]["name"].as_str() {
        Some("batch_reboot") => None,
        Some("batch_stop") => Some((
            200,
            "text/event-stream",
            format!(
                "data: {}\n\n",
                json!({"jsonrpc": "2.0", "method": "notifications/progress"})
            ),
        )),
        Some("batch_start") => Some((
            200,
            "application/json",
            answer(
                message,
                json!({"resultType": "input_required", "inputRequests": {}}),
            ),
        )),
        Some("get_big") => Some((
            200,
            "application/json",
            answer(
                message,
                json!({"content": [{"type": "text", "text": "x".repeat(9 << 20)}]}),
            ),
        )),
        _ => Some((
            200,
            "application/json",
            answer(
                message,
                json!({"content": [{"type": "text", "text": "{}"}]}),
            ),
        )),
    }))
    .await;
    let http = http_client().unwrap();
    let session = Session::open(&http, &url, &secret("tok"), BOUND)
        .await
        .unwrap();
    let write = |tool: &'static str| {
        let session = &session;
        async move {
            session
                .call_write_once(WritePermit::new(), tool, Map::new(), BOUND)
                .await
        }
    };
    assert_eq!(write("batch_other").await, WriteAnswer::Done);
    assert_eq!(
        write("batch_start").await,
        WriteAnswer::Unknown(Unknown::AskedForInput)
    );
    // A stream that ends without the answer, and a connection closed with no reply.
    assert_eq!(
        write("batch_stop").await,
        WriteAnswer::Unknown(Unknown::ConnectionFailed)
    );
    assert_eq!(
        write("batch_reboot").await,
        WriteAnswer::Unknown(Unknown::ConnectionFailed)
    );
    let sent = |tool: &str| {
        received
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, m)| m["params"]["name"] == tool)
            .count()
    };
    for tool in ["batch_other", "batch_start", "batch_stop", "batch_reboot"] {
        assert_eq!(sent(tool), 1, "{tool} was sent once");
    }
    let big = session.call_read("get_big", Map::new(), BOUND).await;
    assert!(
        matches!(big, Err(CallError::Unreached(ref t)) if t.contains("larger")),
        "{big:?}"
    );
}

/// A simulator that keeps sessions and answers on event streams, with `quirks`.
async fn quirky(quirks: fleetwatch_sim::Quirks) -> fleetwatch_sim::SimHandle {
    let sim = fleetwatch_sim::start(SimConfig {
        sessions: true,
        ..SimConfig::demo()
    })
    .await
    .unwrap();
    sim.set_quirks(quirks);
    sim
}

#[tokio::test]
async fn a_protocol_version_this_client_does_not_speak_is_refused_in_words() {
    let sim = quirky(fleetwatch_sim::Quirks {
        protocol_version: Some("2024-11-05".into()),
        ..Default::default()
    })
    .await;
    let http = http_client().unwrap();
    let opened = Session::open(&http, &sim.mcp_url(), &secret("sandbox-token"), BOUND).await;
    let Err(OpenError::Failed(why)) = opened else {
        panic!("opened: {:?}", opened.err())
    };
    assert!(
        why.contains("\"2024-11-05\"") && why.contains("2025-11-25, 2025-06-18, 2025-03-26"),
        "{why}"
    );
    assert!(sim.calls().is_empty(), "no tool was called");
    sim.shutdown().await;
}

#[tokio::test]
async fn the_negotiated_version_goes_on_every_message_and_the_closing_delete() {
    for version in ["2025-11-25", "2025-06-18"] {
        let sim = quirky(fleetwatch_sim::Quirks {
            protocol_version: (version != "2025-11-25").then(|| version.to_owned()),
            ..Default::default()
        })
        .await;
        let http = http_client().unwrap();
        let session = Session::open(&http, &sim.mcp_url(), &secret("sandbox-token"), BOUND)
            .await
            .unwrap();
        assert!(
            session
                .call_read("get_devices_in_my_team", Map::new(), BOUND)
                .await
                .is_ok()
        );
        session.close().await;
        assert_eq!(sim.deletes(), [Some(version.to_owned())], "{version}");
        sim.shutdown().await;
    }
}

#[tokio::test]
async fn an_event_stream_named_in_capitals_is_still_read_as_one() {
    let sim = quirky(fleetwatch_sim::Quirks {
        shout_content_type: true,
        ..Default::default()
    })
    .await;
    let http = http_client().unwrap();
    let session = Session::open(&http, &sim.mcp_url(), &secret("sandbox-token"), BOUND)
        .await
        .unwrap();
    let Ok(ReadAnswer::Json(devices)) = session
        .call_read("get_devices_in_my_team", Map::new(), BOUND)
        .await
    else {
        panic!("no device list from a TEXT/EVENT-STREAM answer")
    };
    assert!(
        devices
            .to_string()
            .contains(&sim.team_devices("sandbox")[0])
    );
    session.close().await;
    sim.shutdown().await;
}
