//! MCP's streamable HTTP transport, client side, as far as Fleetwatch uses it: `initialize`,
//! `notifications/initialized` and `tools/call`, each a JSON-RPC message POSTed to the one
//! MCP URL, its answer read from the POST's own response — a JSON body or an event stream.
//!
//! Written here rather than taken from a general MCP library because the executor needs so
//! little of MCP and must be sure of one thing above all: a message is sent once. There is
//! no session recovery, no stream resumption (`Last-Event-ID`), no reconnection and no
//! background task — each of which, in a general client, can re-send a POST, and for a write
//! that is a second write. Whoever reviews the executor reads the whole client in this file.
//!
//! What a server may do and what happens:
//!
//! * answer `application/json` (one message, or a batch holding ours) or `text/event-stream`
//!   (events until the one answering our request; events with no data, such as a stream's
//!   priming event, and notifications are skipped);
//! * ask the client something on the stream: `ping` is answered, any other request gets
//!   "method not found" (Fleetwatch offers no sampling, roots or elicitation);
//! * answer `initialize` with a protocol version: one this client speaks ([`SPOKEN_VERSIONS`])
//!   is sent back on every later message and the closing DELETE (`MCP-Protocol-Version`); any
//!   other is refused, in words, and nothing more is sent;
//! * give a session (`Mcp-Session-Id` on the `initialize` answer), which is then sent on every
//!   message, and ended with a DELETE on close;
//! * name its media type in any letter case (`Text/Event-Stream`): media types are
//!   case-insensitive;
//! * answer an HTTP error status: a [`Failure::Status`], its body's start kept (a 404 on a
//!   session means Epiphan no longer knows it);
//! * send more than [`MAX_ANSWER`] bytes: refused, whatever the framing.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use serde_json::{Value, json};

/// The protocol version asked for at `initialize` (the newest with that handshake).
pub const PROTOCOL_VERSION: &str = "2025-11-25";
/// The versions this client speaks: those with the streamable HTTP transport as used here.
pub const SPOKEN_VERSIONS: [&str; 3] = [PROTOCOL_VERSION, "2025-06-18", "2025-03-26"];
/// Largest answer read, in bytes, whatever its framing (a fleet's device list is far smaller).
pub const MAX_ANSWER: usize = 8 << 20;
/// Characters kept from an HTTP error's body.
const MAX_STATUS_TEXT: usize = 200;

/// Why an exchange gave no answer. The texts are the server's or the transport's, as they
/// came: the assistant redacts them, the executor does not keep them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The request did not complete, or the answer broke off.
    Connection(String),
    /// An HTTP status other than success, and the start of the body.
    Status(u16, String),
    /// A JSON-RPC error answer.
    Rpc {
        /// The error's code.
        code: i64,
        /// The error's message.
        message: String,
    },
    /// An answer that is not MCP as this client reads it.
    Protocol(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Connection(why) => write!(f, "connection failed: {why}"),
            Failure::Status(status, body) => write!(f, "HTTP {status}: {body}"),
            Failure::Rpc { code, message } => write!(f, "MCP error {code}: {message}"),
            Failure::Protocol(why) => write!(f, "not an MCP answer: {why}"),
        }
    }
}

/// The text of an error and its sources, joined (reqwest's own text says little).
fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        text.push_str(": ");
        text.push_str(&e.to_string());
        source = e.source();
    }
    text
}

/// One MCP connection: where, with which credential, and the session the server gave.
pub struct Client {
    http: reqwest::Client,
    url: String,
    bearer: HeaderValue,
    session: Option<HeaderValue>,
    version: Option<HeaderValue>,
    next_id: AtomicI64,
    closed: AtomicBool,
}

impl Client {
    /// Sends `initialize` and `notifications/initialized` with `token` as the bearer.
    pub async fn initialize(
        http: &reqwest::Client,
        url: &str,
        token: &str,
    ) -> Result<Client, Failure> {
        let mut bearer = HeaderValue::from_str(&format!("Bearer {token}"))
            .map_err(|_| Failure::Protocol("the token cannot be sent in a header".into()))?;
        bearer.set_sensitive(true);
        let mut client = Client {
            http: http.clone(),
            url: url.to_owned(),
            bearer,
            session: None,
            version: None,
            next_id: AtomicI64::new(0),
            closed: AtomicBool::new(false),
        };
        let (id, message) = client.request(
            "initialize",
            json!({
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "fleetwatch", "version": env!("CARGO_PKG_VERSION")},
            }),
        );
        let response = client.post(&message).await?;
        client.session = response.headers().get("mcp-session-id").cloned();
        let result = client.answer(response, id).await?;
        let version = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .ok_or_else(|| Failure::Protocol("initialize named no protocol version".into()))?;
        if !SPOKEN_VERSIONS.contains(&version) {
            let refused = Failure::Protocol(format!(
                "the server speaks MCP version {:?}, which this client does not (it speaks {})",
                version.chars().take(40).collect::<String>(),
                SPOKEN_VERSIONS.join(", ")
            ));
            client.close().await;
            return Err(refused);
        }
        client.version = Some(
            HeaderValue::from_str(version)
                .map_err(|_| Failure::Protocol("the protocol version is not a header".into()))?,
        );
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        client.post(&initialized).await?;
        Ok(client)
    }

    /// Sends a request once and returns its result.
    pub async fn call(&self, method: &str, params: Value) -> Result<Value, Failure> {
        let (id, message) = self.request(method, params);
        let outcome = match self.post(&message).await {
            Ok(response) => self.answer(response, id).await,
            Err(e) => Err(e),
        };
        // A session the server no longer knows, or a connection that broke, is not used again.
        if matches!(
            outcome,
            Err(Failure::Connection(_) | Failure::Status(404, _))
        ) {
            self.closed.store(true, Ordering::Relaxed);
        }
        outcome
    }

    /// True once the session is known to be unusable or was given up.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }

    /// Marks the session given up (nothing is sent).
    pub fn abandon(&self) {
        self.closed.store(true, Ordering::Relaxed);
    }

    /// Ends the session on the server, if it gave one (best effort, a short bound).
    pub async fn close(&self) {
        self.abandon();
        if let Some(session) = &self.session {
            let mut ended = self
                .http
                .delete(&self.url)
                .header(AUTHORIZATION, self.bearer.clone())
                .header("mcp-session-id", session.clone());
            if let Some(version) = &self.version {
                ended = ended.header("mcp-protocol-version", version.clone());
            }
            let ended = ended.send();
            let _ = tokio::time::timeout(std::time::Duration::from_secs(2), ended).await;
        }
    }

    fn request(&self, method: &str, params: Value) -> (i64, Value) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        (id, message)
    }

    /// POSTs one message; a status other than success is a [`Failure::Status`].
    async fn post(&self, message: &Value) -> Result<reqwest::Response, Failure> {
        let mut request = self
            .http
            .post(&self.url)
            .header(AUTHORIZATION, self.bearer.clone())
            .header(ACCEPT, "application/json, text/event-stream")
            .header(CONTENT_TYPE, "application/json")
            .body(message.to_string());
        if let Some(session) = &self.session {
            request = request.header("mcp-session-id", session.clone());
        }
        if let Some(version) = &self.version {
            request = request.header("mcp-protocol-version", version.clone());
        }
        let response = request
            .send()
            .await
            .map_err(|e| Failure::Connection(chain(&e)))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let body = bounded_body(response, MAX_STATUS_TEXT * 4).await;
        let text = String::from_utf8_lossy(&body);
        Err(Failure::Status(
            status.as_u16(),
            text.trim().chars().take(MAX_STATUS_TEXT).collect(),
        ))
    }

    /// Reads the answer to request `id` from a POST's response.
    async fn answer(&self, mut response: reqwest::Response, id: i64) -> Result<Value, Failure> {
        let stream = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| {
                v.trim_start()
                    .get(..17)
                    .is_some_and(|t| t.eq_ignore_ascii_case("text/event-stream"))
            });
        let mut events = Events::default();
        let mut body = Vec::new();
        let mut read = 0usize;
        loop {
            let chunk = match response.chunk().await {
                Ok(Some(chunk)) => chunk,
                Ok(None) => break,
                Err(e) => return Err(Failure::Connection(chain(&e))),
            };
            read = read.saturating_add(chunk.len());
            if read > MAX_ANSWER {
                return Err(Failure::Protocol(format!(
                    "the answer is larger than {MAX_ANSWER} bytes"
                )));
            }
            if !stream {
                body.extend_from_slice(&chunk);
                continue;
            }
            if let Some(answer) = self.among_events(events.push(&chunk), id).await {
                return answer;
            }
        }
        if stream {
            if let Some(answer) = self.among_events(events.finish(), id).await {
                return answer;
            }
            return Err(Failure::Connection(
                "the event stream ended without the answer".into(),
            ));
        }
        let message = parse(&body)?;
        let batch = match message {
            Value::Array(messages) => messages,
            one => vec![one],
        };
        for message in &batch {
            if let Some(answer) = self.judge(message, id).await {
                return answer;
            }
        }
        Err(Failure::Protocol(
            "the answer is not to this request".into(),
        ))
    }

    /// The answer to request `id` among events' data, read in order.
    async fn among_events(&self, events: Vec<String>, id: i64) -> Option<Result<Value, Failure>> {
        for data in events {
            let message = match parse(data.as_bytes()) {
                Ok(message) => message,
                Err(e) => return Some(Err(e)),
            };
            if let Some(answer) = self.judge(&message, id).await {
                return Some(answer);
            }
        }
        None
    }

    /// What one message means for request `id`: its answer, or `None` to read on (a
    /// notification, a request of the server's — answered here — or another answer).
    async fn judge(&self, message: &Value, id: i64) -> Option<Result<Value, Failure>> {
        if let Some(method) = message.get("method").and_then(Value::as_str) {
            if let Some(their_id) = message.get("id") {
                let reply = if method == "ping" {
                    json!({"jsonrpc": "2.0", "id": their_id, "result": {}})
                } else {
                    json!({"jsonrpc": "2.0", "id": their_id,
                           "error": {"code": -32601, "message": "method not found"}})
                };
                // The server's question is answered once; its fate does not change ours.
                let _ = self.post(&reply).await;
            }
            return None;
        }
        // An error with a null ID answers a request the server could not read: ours.
        let ours = match message.get("id") {
            Some(Value::Null) => message.get("error").is_some(),
            other => other.and_then(Value::as_i64) == Some(id),
        };
        if !ours {
            return None;
        }
        if let Some(error) = message.get("error") {
            return Some(Err(Failure::Rpc {
                code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
                message: error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
            }));
        }
        Some(match message.get("result") {
            Some(result) => Ok(result.clone()),
            None => Err(Failure::Protocol("an answer with no result".into())),
        })
    }
}

/// A message's JSON. A lone surrogate escape in one string (a device's name) does not spoil
/// the answer (see `fleetwatch_protocol::lenient`).
fn parse(bytes: &[u8]) -> Result<Value, Failure> {
    let text = String::from_utf8_lossy(bytes);
    fleetwatch_protocol::lenient::parse(text.trim())
        .map_err(|_| Failure::Protocol("a message that is not JSON".into()))
}

/// At most about `limit` bytes of a response's body (for an error status's text).
async fn bounded_body(mut response: reqwest::Response, limit: usize) -> Vec<u8> {
    let mut body = Vec::new();
    while body.len() < limit {
        match response.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            _ => break,
        }
    }
    body.truncate(limit);
    body
}

/// Server-sent events, read as they arrive: the data of each `message` event (the default
/// type) that has any. Lines end with LF, CRLF or CR; `data` lines join with LF; `id`,
/// `retry` and comments are read past (nothing is resumed).
#[derive(Default)]
struct Events {
    line: Vec<u8>,
    data: Option<String>,
    kind: String,
    after_cr: bool,
}

impl Events {
    /// Feeds bytes; returns the data of each event they complete.
    fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        let mut done = Vec::new();
        for &byte in bytes {
            if self.after_cr {
                self.after_cr = false;
                if byte == b'\n' {
                    continue;
                }
            }
            match byte {
                b'\n' | b'\r' => {
                    self.after_cr = byte == b'\r';
                    let line = std::mem::take(&mut self.line);
                    if let Some(data) = self.line_ended(&line) {
                        done.push(data);
                    }
                }
                _ => self.line.push(byte),
            }
        }
        done
    }

    /// The stream ended: an event cut off before its blank line still counts.
    fn finish(&mut self) -> Vec<String> {
        let line = std::mem::take(&mut self.line);
        let mut done: Vec<String> = self.line_ended(&line).into_iter().collect();
        done.extend(self.line_ended(b""));
        done
    }

    fn line_ended(&mut self, line: &[u8]) -> Option<String> {
        if line.is_empty() {
            let kind = std::mem::take(&mut self.kind);
            let data = self.data.take()?;
            return ((kind.is_empty() || kind == "message") && !data.trim().is_empty())
                .then_some(data);
        }
        let line = String::from_utf8_lossy(line);
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_ref(), ""),
        };
        match field {
            "data" => match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            },
            "event" => self.kind = value.to_owned(),
            _ => {}
        }
        None
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn all(chunks: &[&[u8]]) -> Vec<String> {
        let mut events = Events::default();
        let mut out = Vec::new();
        for chunk in chunks {
            out.extend(events.push(chunk));
        }
        out.extend(events.finish());
        out
    }

    #[test]
    fn events_are_read_across_chunks_and_line_endings() {
        assert_eq!(
            all(&[
                b"id: 1\r\nretry: 10\r\ndata: \r\n\r\n: comment\ndata: {\"a\"",
                b":\r",
                b"\ndata: 1}\n\n"
            ]),
            vec!["{\"a\":\n1}".to_owned()]
        );
        assert_eq!(
            all(&[b"event: message\rdata:{}\r\rdata: x\ndata: y\n\nevent: other\ndata: z\n\n"]),
            vec!["{}".to_owned(), "x\ny".to_owned()]
        );
        // A stream that ends without the blank line still yields its last event.
        assert_eq!(all(&[b"data: {\"id\":1}"]), vec!["{\"id\":1}".to_owned()]);
        assert!(all(&[b"data:\n\n", b": keep-alive\n\n"]).is_empty());
    }

    #[test]
    fn failures_say_what_failed() {
        assert_eq!(
            Failure::Status(401, "no".into()).to_string(),
            "HTTP 401: no"
        );
        assert_eq!(
            Failure::Rpc {
                code: -32602,
                message: "bad".into()
            }
            .to_string(),
            "MCP error -32602: bad"
        );
    }
}
