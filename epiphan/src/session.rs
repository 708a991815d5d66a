//! One MCP session with Epiphan over streamable HTTP, and the two kinds of call made on it.
//!
//! * [`Session::open`] signs in with a bearer token over a shared HTTP client that never
//!   follows redirects ([`http_client`]), through this crate's own MCP client ([`crate::mcp`]):
//!   it has no session recovery and no stream reconnection — recovering an expired session
//!   re-sends the POST that failed, and reconnecting a broken stream can replay it, which for
//!   a write is a second write.
//! * [`Session::call_read`] is the bounded read: refused before sending unless the name is a
//!   read tool's, answered as JSON ([`ReadAnswer`]) or a [`CallError`] saying which failure
//!   it was, so the caller can decide what may be repeated.
//! * [`Session::call_write_once`] sends a write once, never retried, and reads the answer as
//!   Epiphan's error map, each device's error reduced to a closed vocabulary
//!   ([`DeviceError`]); anything else after sending is "outcome unknown".
//!
//! Nothing here redacts. Answers and error texts come back as Epiphan sent them: the
//! assistant redacts everything it takes from here before anything parses, shows, logs or
//! stores it (`assistant/src/reads.rs`), and the executor keeps and returns only codes, IDs
//! and counts — a write's per-device errors as [`DeviceError`] codes, never their text — so
//! the privileged process needs no redaction engine. A result that does not match the tool's
//! declared output schema is kept: nothing here validates against that schema, and the
//! callers' parsers are tolerant.
//!
//! Which process may call which method is not this crate's decision: the assistant's guarded
//! reader and the executor's ticket-consuming write are the only callers, which
//! `assistant/tests/source_scan.rs` and `executor/tests/one_write.rs` check.

use std::collections::BTreeMap;
use std::time::Duration;

use fleetwatch_protocol::ids;
use fleetwatch_protocol::policy::EPIPHAN_WRITE_TOOLS;
use fleetwatch_protocol::secret::Secret;
use fleetwatch_write_permit::WritePermit;
use serde_json::{Map, Value, json};

use crate::mcp::{self, Failure};
use crate::sign_in;

/// Longest error text kept from an error result.
const MAX_ERROR_CHARS: usize = 300;

/// The HTTP client sessions share, built once per process: building one loads the system's
/// root certificates, and a shared client keeps warm connections to Epiphan. Redirects are
/// not followed: the token and a write's body go to the configured URL or nowhere (a 307/308
/// would re-send the body to another address). Retries are off, explicitly: reqwest's default
/// policy re-sends a request the server refused at the protocol level, and a write is sent once.
pub fn http_client() -> Result<reqwest::Client, String> {
    crate::tls::client_builder()
        .redirect(reqwest::redirect::Policy::none())
        .retry(reqwest::retry::never())
        .build()
        .map_err(|e| format!("could not set up HTTPS: {e}"))
}

/// Why no session was opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpenError {
    /// Epiphan refused the sign-in (see [`crate::sign_in`]).
    SignInExpired,
    /// No session within the bound.
    TimedOut,
    /// Anything else, with the transport's text as it came (the caller redacts it or drops it).
    Failed(String),
}

/// What a read answered.
#[derive(Debug, Clone, PartialEq)]
pub enum ReadAnswer {
    /// The result's JSON (structured content, else the text parsed as JSON), as sent.
    Json(Value),
    /// A plain-text answer that is neither JSON nor a status report, as sent.
    Text(String),
}

/// Why a read gave no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// The name is not a read tool's; nothing was sent.
    NotARead,
    /// The call did not reach a working session (transport or protocol error, a session
    /// Epiphan no longer knows). Safe to try again on a new session: nothing was read.
    /// The transport's text, as it came.
    Unreached(String),
    /// No answer within the bound; the session may be stuck and should not be reused.
    TimedOut,
    /// Epiphan says the sign-in is missing or expired.
    SignInExpired,
    /// An error result (or a plain-text `Error: …`), its text shortened, as sent.
    ErrorResult(String),
}

/// Why a write's outcome is unknown. Each has a fixed wording for the log and the audit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unknown {
    /// The server asked for more input instead of answering.
    AskedForInput,
    /// The connection failed after the request was sent.
    ConnectionFailed,
    /// No answer within the bound.
    TimedOut,
    /// An in-band 401 after the request was sent: whether the change ran is not known.
    SignInExpired,
    /// Some other error result.
    ErrorResult,
    /// An answer that is not JSON.
    NotJson,
    /// JSON that is not an error map.
    NotAnErrorMap,
}

impl Unknown {
    /// The fixed wording.
    pub fn reason(self) -> &'static str {
        match self {
            Unknown::AskedForInput => "the write asked for more input",
            Unknown::ConnectionFailed => "the connection failed after sending",
            Unknown::TimedOut => "no answer in time",
            Unknown::SignInExpired => "in-band 401 after sending",
            Unknown::ErrorResult => "error result",
            Unknown::NotJson => "answer is not JSON",
            Unknown::NotAnErrorMap => "answer is not an error map",
        }
    }

    /// True when the session itself is in doubt (it should not be used again).
    pub fn session_troubled(self) -> bool {
        matches!(self, Unknown::ConnectionFailed | Unknown::TimedOut)
    }
}

/// What came back from a write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteAnswer {
    /// An empty error map: every device worked.
    Done,
    /// Per-device errors, each reduced to a [`DeviceError`]; a key that is not a device or
    /// channel ID is not kept as written (see [`error_map`]).
    Errors(BTreeMap<String, DeviceError>),
    /// Sent, but no trustworthy answer.
    Unknown(Unknown),
}

/// True for a name a read tool can have: `get_…` or `kb_…` and not one of Epiphan's write
/// tools. The callers' own guards are narrower (the policy's read list); this one keeps the
/// read call from ever carrying a write, whoever calls it.
pub fn is_read_name(tool: &str) -> bool {
    (tool.starts_with("get_") || tool.starts_with("kb_")) && !EPIPHAN_WRITE_TOOLS.contains(&tool)
}

/// A signed-in MCP session.
pub struct Session {
    // Boxed: callers keep a session in an enum beside much smaller variants.
    client: Box<mcp::Client>,
}

impl Session {
    /// Opens a session with `bearer` over `http`, bounded by `timeout`.
    pub async fn open(
        http: &reqwest::Client,
        url: &str,
        bearer: &Secret,
        timeout: Duration,
    ) -> Result<Session, OpenError> {
        let opened = mcp::Client::initialize(http, url, bearer.expose());
        match tokio::time::timeout(timeout, opened).await {
            Ok(Ok(client)) => Ok(Session {
                client: Box::new(client),
            }),
            Ok(Err(e)) if sign_in::failure_is_expired_sign_in(&e) => Err(OpenError::SignInExpired),
            Ok(Err(e)) => Err(OpenError::Failed(e.to_string())),
            Err(_) => Err(OpenError::TimedOut),
        }
    }

    /// True once the session cannot answer any more (its connection broke, Epiphan no longer
    /// knows it, or it was abandoned).
    pub fn is_closed(&self) -> bool {
        self.client.is_closed()
    }

    /// Gives the session up without waiting (a stuck call is abandoned by its own bound).
    pub fn abandon(&self) {
        self.client.abandon();
    }

    /// Ends the session.
    pub async fn close(self) {
        self.client.close().await;
    }

    /// Sends one `tools/call`, once.
    async fn call_tool(&self, tool: &str, arguments: Map<String, Value>) -> Result<Value, Failure> {
        let params = json!({"name": tool, "arguments": arguments});
        self.client.call("tools/call", params).await
    }

    /// One bounded read of `tool`, which must be a read tool's name.
    pub async fn call_read(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
        timeout: Duration,
    ) -> Result<ReadAnswer, CallError> {
        if !is_read_name(tool) {
            return Err(CallError::NotARead);
        }
        match tokio::time::timeout(timeout, self.call_tool(tool, arguments)).await {
            Ok(Ok(result)) => match ToolResult::of(result) {
                Some(result) => extract_read(tool, result),
                None => Err(CallError::ErrorResult(
                    "the read asked for more input".to_owned(),
                )),
            },
            Ok(Err(e)) if sign_in::failure_is_expired_sign_in(&e) => Err(CallError::SignInExpired),
            Ok(Err(e)) => Err(CallError::Unreached(e.to_string())),
            Err(_) => Err(CallError::TimedOut),
        }
    }

    /// Sends `tool` once, bounded by `timeout`, consuming `permit`. Never retried, not even
    /// after a 401: a second call could apply the change twice, so anything but a readable
    /// error map is unknown. Only a crate that declares `fleetwatch-write-permit` can make the
    /// permit: the executor.
    /// (`assistant/src/reads.rs` shows, as a `compile_fail` doc test, that the assistant
    /// cannot.)
    pub async fn call_write_once(
        &self,
        permit: WritePermit,
        tool: &str,
        arguments: Map<String, Value>,
        timeout: Duration,
    ) -> WriteAnswer {
        drop(permit);
        let result = match tokio::time::timeout(timeout, self.call_tool(tool, arguments)).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => return WriteAnswer::Unknown(Unknown::ConnectionFailed),
            Err(_) => return WriteAnswer::Unknown(Unknown::TimedOut),
        };
        match ToolResult::of(result) {
            Some(result) => extract_write(result),
            None => WriteAnswer::Unknown(Unknown::AskedForInput),
        }
    }
}

/// A complete `tools/call` result, as this core reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    /// The text content blocks, joined by line breaks, as received.
    pub text: String,
    /// `structuredContent`, when present and not null.
    pub structured: Option<Value>,
    /// `isError`.
    pub is_error: bool,
}

impl ToolResult {
    /// Reads a result; `None` when it is not complete (a server asking for more input, or
    /// starting a task, says so in `resultType`).
    pub fn of(result: Value) -> Option<ToolResult> {
        if let Some(kind) = result.get("resultType").and_then(Value::as_str)
            && kind != "complete"
        {
            return None;
        }
        let text = result
            .get("content")
            .and_then(Value::as_array)
            .map(|blocks| {
                blocks
                    .iter()
                    .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                    .filter_map(|b| b.get("text").and_then(Value::as_str))
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default();
        Some(ToolResult {
            text,
            structured: result
                .get("structuredContent")
                .filter(|v| !v.is_null())
                .cloned(),
            is_error: result.get("isError").and_then(Value::as_bool) == Some(true),
        })
    }
}

/// The JSON a result carries — structured content, else the text parsed as JSON; else the
/// text. (A caller that redacts does so on the parsed value: masking a value inside JSON text
/// could leave text that is not JSON.)
fn json_or_text(result: ToolResult) -> Result<Value, String> {
    match result.structured {
        Some(structured) => Ok(structured),
        // A lone surrogate in one name must not hide the rest of the fleet.
        None => fleetwatch_protocol::lenient::parse(result.text.trim()).map_err(|_| result.text),
    }
}

fn error_result(text: &str) -> CallError {
    if sign_in::error_text_is_expired_sign_in(text) {
        return CallError::SignInExpired;
    }
    CallError::ErrorResult(text.trim().chars().take(MAX_ERROR_CHARS).collect())
}

/// A read result as its caller sees it (see the module notes and [`crate::sign_in`]).
pub fn extract_read(tool: &str, result: ToolResult) -> Result<ReadAnswer, CallError> {
    if result.is_error {
        return Err(error_result(&result.text));
    }
    match json_or_text(result) {
        Ok(value) => Ok(ReadAnswer::Json(value)),
        Err(text) if sign_in::reads_as_expired_sign_in(&text) => Err(CallError::SignInExpired),
        // Epiphan sometimes reports an error as plain text without the error flag.
        Err(text) if text.trim_start().starts_with("Error:") => Err(error_result(&text)),
        Err(text) => {
            tracing::info!(tool, "read result was text, not JSON");
            Ok(ReadAnswer::Text(text))
        }
    }
}

fn extract_write(result: ToolResult) -> WriteAnswer {
    if result.is_error {
        let expired = sign_in::error_text_is_expired_sign_in(&result.text);
        return WriteAnswer::Unknown(if expired {
            Unknown::SignInExpired
        } else {
            Unknown::ErrorResult
        });
    }
    let Ok(value) = json_or_text(result) else {
        return WriteAnswer::Unknown(Unknown::NotJson);
    };
    match error_map(&value) {
        Some(map) if map.is_empty() => WriteAnswer::Done,
        Some(map) => WriteAnswer::Errors(map),
        None => WriteAnswer::Unknown(Unknown::NotAnErrorMap),
    }
}

/// A write answer: an object mapping device IDs to error strings (possibly under `errors`),
/// each error reduced to a [`DeviceError`]. A key that is not a device or channel ID (a
/// server may write anything there) is kept as `other device N`, never as written.
fn error_map(value: &Value) -> Option<BTreeMap<String, DeviceError>> {
    let obj = value.as_object()?;
    let obj = match obj.get("errors") {
        Some(Value::Object(inner)) if obj.len() == 1 => inner,
        _ => obj,
    };
    obj.iter()
        .enumerate()
        .map(|(i, (k, v))| {
            let key = if ids::is_master_id(k) || ids::is_channel_id(k) {
                k.clone()
            } else {
                format!("other device {}", i.saturating_add(1))
            };
            v.as_str().map(|text| (key, DeviceError::of(text)))
        })
        .collect()
}

/// What went wrong on one device, in a closed vocabulary: the executor keeps and returns this,
/// never Epiphan's text, which could hold anything (a stream key in a failed publisher's
/// settings, a URL with its credential).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceError {
    /// The device is offline or could not be reached.
    Offline,
    /// The device is busy with something else, or already in the asked state.
    Busy,
    /// The device, channel or destination was not found.
    NotFound,
    /// The sign-in may not do this on the device.
    NotPermitted,
    /// The device did not answer in time.
    TimedOut,
    /// Epiphan refused the request as invalid.
    Rejected,
    /// Anything else.
    Other,
}

impl DeviceError {
    /// Reads an error text by its words; the first class whose words it holds wins.
    pub fn of(text: &str) -> DeviceError {
        let lower = text.to_lowercase();
        let has = |words: &[&str]| words.iter().any(|w| lower.contains(w));
        if has(&[
            "offline",
            "not connected",
            "unreachable",
            "disconnected",
            "no connection",
        ]) {
            DeviceError::Offline
        } else if has(&["timed out", "timeout", "time out"]) {
            DeviceError::TimedOut
        } else if has(&[
            "forbidden",
            "permission",
            "not allowed",
            "unauthorized",
            "401",
            "403",
        ]) {
            DeviceError::NotPermitted
        } else if has(&["not found", "no such", "unknown", "404", "does not exist"]) {
            DeviceError::NotFound
        } else if has(&["busy", "in progress", "already", "locked"]) {
            DeviceError::Busy
        } else if has(&[
            "invalid",
            "bad request",
            "400",
            "malformed",
            "not supported",
        ]) {
            DeviceError::Rejected
        } else {
            DeviceError::Other
        }
    }

    /// The stable code the executor returns and audits.
    pub fn code(self) -> &'static str {
        match self {
            DeviceError::Offline => "offline",
            DeviceError::Busy => "busy",
            DeviceError::NotFound => "not_found",
            DeviceError::NotPermitted => "not_permitted",
            DeviceError::TimedOut => "timed_out",
            DeviceError::Rejected => "rejected",
            DeviceError::Other => "other",
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(t: &str, error: bool) -> ToolResult {
        ToolResult::of(json!({"content": [{"type": "text", "text": t}], "isError": error})).unwrap()
    }

    #[test]
    fn reads_are_json_text_or_a_named_failure_as_sent() {
        let answer = extract_read(
            "get_stream_endpoints",
            text(
                r#"{"stream_endpoints":[{"name":"A","url":"rtmp://h/app"}]}"#,
                false,
            ),
        )
        .unwrap();
        assert_eq!(
            answer,
            ReadAnswer::Json(json!({"stream_endpoints":[{"name":"A","url":"rtmp://h/app"}]}))
        );
        let structured = ToolResult::of(json!({
            "content": [{"type": "text", "text": "{\"name\": \"Room 1\"}"}],
            "structuredContent": {"name": "Room 1"},
        }))
        .unwrap();
        assert_eq!(
            extract_read("get_x", structured),
            Ok(ReadAnswer::Json(json!({"name": "Room 1"})))
        );
        assert_eq!(
            extract_read("get_x", text("not json", false)),
            Ok(ReadAnswer::Text("not json".into()))
        );
        assert_eq!(
            extract_read("get_x", text("Error: 500 Internal Server Error", false)),
            Err(CallError::ErrorResult(
                "Error: 500 Internal Server Error".into()
            ))
        );
        assert_eq!(
            extract_read("get_x", text("Error: 401 Unauthorized", true)),
            Err(CallError::SignInExpired)
        );
        let long = format!("Error: {}", "x".repeat(1000));
        let Err(CallError::ErrorResult(kept)) = extract_read("get_x", text(&long, true)) else {
            panic!()
        };
        assert_eq!(kept.chars().count(), MAX_ERROR_CHARS);
    }

    #[test]
    fn writes_are_an_error_map_or_unknown() {
        assert_eq!(extract_write(text("{}", false)), WriteAnswer::Done);
        assert_eq!(
            extract_write(text(r#"{"errors": {}}"#, false)),
            WriteAnswer::Done
        );
        // Each device's error is a code; the text, and a key that is no ID, are not kept.
        let WriteAnswer::Errors(map) = extract_write(text(
            r#"{"1000000001": "failed, password=hunter2", "sk_live_9f8e": "device offline"}"#,
            false,
        )) else {
            panic!()
        };
        assert_eq!(map["1000000001"], DeviceError::Other);
        assert_eq!(map["other device 2"], DeviceError::Offline);
        assert_eq!(map.len(), 2);
        for (text, class) in [
            ("Device is offline", DeviceError::Offline),
            ("Request timed out after 30 s", DeviceError::TimedOut),
            (
                "403 Forbidden: stream key live_9f8e7d rejected",
                DeviceError::NotPermitted,
            ),
            ("Channel not found", DeviceError::NotFound),
            ("Recording already in progress", DeviceError::Busy),
            ("Invalid parameter", DeviceError::Rejected),
            (
                "publisher rtmp://h/app/live_9f8e7d failed",
                DeviceError::Other,
            ),
        ] {
            assert_eq!(DeviceError::of(text), class, "{text}");
        }
        for (result, why) in [
            (
                text("Error: 401 Unauthorized", true),
                Unknown::SignInExpired,
            ),
            (text("Error: 500", true), Unknown::ErrorResult),
            (text("ok, probably", false), Unknown::NotJson),
            (text("[1, 2]", false), Unknown::NotAnErrorMap),
            (text(r#"{"1000000001": 5}"#, false), Unknown::NotAnErrorMap),
        ] {
            assert_eq!(extract_write(result), WriteAnswer::Unknown(why));
        }
        assert!(Unknown::TimedOut.session_troubled());
        assert!(!Unknown::SignInExpired.session_troubled());
    }

    #[test]
    fn only_read_names_pass_the_read_call() {
        assert!(is_read_name("get_devices_in_my_team"));
        assert!(is_read_name("kb_search"));
        for tool in EPIPHAN_WRITE_TOOLS {
            assert!(!is_read_name(tool), "{tool}");
        }
        for tool in ["", "factory_reset_device", "Get_devices", " get_x", "getx"] {
            assert!(!is_read_name(tool), "{tool:?}");
        }
    }
}
