//! The executor's MCP client for Epiphan, signed in as the sandbox. Every read is bounded by a
//! timeout and redacted before anything parses it. The write is sent at most once: the
//! transport's session recovery and stream reconnection are switched off, because either may
//! re-send a request Epiphan already received.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use fleetwatch_protocol::redact;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::common::client_side_sse::NeverRetry;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::Value;

/// The sandbox bearer token. Deliberately neither `Debug` nor `Display`, so it cannot reach a
/// log line, an audit row or an error message by accident.
pub struct SandboxToken(String);

impl SandboxToken {
    /// Wraps token text (surrounding whitespace removed).
    pub fn new(text: &str) -> Option<SandboxToken> {
        let t = text.trim();
        // A header value cannot hold control characters; refuse them here, not mid-request.
        (!t.is_empty() && t.len() <= 8192 && t.bytes().all(|b| b.is_ascii_graphic()))
            .then(|| SandboxToken(t.to_string()))
    }
    /// The token bytes, for the slot file only.
    pub fn as_bytes(&self) -> &[u8] {
        self.0.as_bytes()
    }

    /// Which token a kept session was opened with, without keeping the token itself twice.
    fn digest(&self) -> [u8; 32] {
        use sha2::Digest as _;
        sha2::Sha256::digest(self.0.as_bytes()).into()
    }
}

/// Why a URL was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Epiphan URL {url:?}: {problem}")]
pub struct UrlError {
    /// The URL.
    pub url: String,
    /// What is wrong.
    pub problem: &'static str,
}

/// Only `https://` URLs, or `http://` to a loopback host when explicitly allowed (tests, demo).
pub fn check_url(url: &str, allow_loopback_http: bool) -> Result<(), UrlError> {
    let err = |problem| UrlError {
        url: url.to_string(),
        problem,
    };
    let parsed = reqwest::Url::parse(url).map_err(|_| err("not a URL"))?;
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(err("must not carry credentials"));
    }
    match parsed.scheme() {
        "https" => Ok(()),
        "http" if allow_loopback_http => {
            let host = parsed.host_str().unwrap_or_default();
            let host = host.trim_start_matches('[').trim_end_matches(']');
            let loopback = host == "localhost"
                || host
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback());
            if loopback {
                Ok(())
            } else {
                Err(err("http:// is allowed only to a loopback host"))
            }
        }
        "http" => Err(err(
            "only https:// is allowed (FLEETWATCH_ALLOW_LOOPBACK_HTTP=1 permits loopback http for tests)",
        )),
        _ => Err(err("only https:// is allowed")),
    }
}

/// Why a read gave nothing usable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadFailure {
    /// Epiphan refused the sign-in (an in-band `401 Unauthorized`).
    Unauthorized,
    /// Timed out, lost connection, error result or an answer that is not JSON. The text says
    /// which in plain words and never carries result data.
    Failed(String),
}

/// What came back from the one write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteAnswer {
    /// An empty error map: every device worked.
    Done,
    /// Per-device errors, redacted.
    Errors(BTreeMap<String, String>),
    /// Sent, but no trustworthy answer; the reason is for the log only.
    Unknown(&'static str),
}

/// The HTTP client every session shares, built once per process: building one loads the
/// system's root certificates, which cost more than the rest of an `Execute` together, and a
/// shared client keeps warm connections to Epiphan between requests. Redirects are not
/// followed: the sandbox token and the write go to the configured URL or nowhere (a 307/308
/// would re-send the write's body to another address).
pub fn http_client() -> Result<reqwest::Client, String> {
    fleetwatch_signin::tls::client_builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| format!("could not set up HTTPS: {e}"))
}

type Service = RunningService<RoleClient, ()>;

/// Keeps one MCP session open between requests, so an `Execute` does not pay for the
/// `initialize` exchange each time. The kept session is used only while it was opened with
/// the slot's current token; a renewed token opens a new one.
///
/// A kept session may have ended on Epiphan's side (expired, server restarted). Reads are safe
/// to repeat, so a read that fails to reach the session is tried once more on a new one. The
/// write never is: it goes out once on whatever session the reads used.
pub struct Sessions {
    http: reqwest::Client,
    url: String,
    read_timeout: Duration,
    kept: tokio::sync::Mutex<Option<Kept>>,
}

struct Kept {
    token: [u8; 32],
    service: Arc<Service>,
}

impl Sessions {
    /// No session yet; the first request opens one.
    pub fn new(http: reqwest::Client, url: &str, read_timeout: Duration) -> Sessions {
        Sessions {
            http,
            url: url.to_string(),
            read_timeout,
            kept: tokio::sync::Mutex::new(None),
        }
    }

    /// A session signed in with `token`: the kept one when it fits, else a new one, kept.
    pub async fn session(self: &Arc<Self>, token: SandboxToken) -> Result<Epiphan, ReadFailure> {
        let digest = token.digest();
        let mut kept = self.kept.lock().await;
        let reusable = kept
            .as_ref()
            .filter(|k| k.token == digest && !k.service.is_transport_closed())
            .map(|k| Arc::clone(&k.service));
        let (service, renew) = match reusable {
            Some(service) => (service, Some((Arc::clone(self), token))),
            // Just opened: a failure on it is Epiphan's answer, not a stale session.
            None => {
                let service =
                    Arc::new(open(&self.http, &self.url, &token, self.read_timeout).await?);
                *kept = Some(Kept {
                    token: digest,
                    service: Arc::clone(&service),
                });
                (service, None)
            }
        };
        Ok(Epiphan {
            service: std::sync::Mutex::new(service),
            read_timeout: self.read_timeout,
            renew: std::sync::Mutex::new(renew),
            keeper: Some(Arc::clone(self)),
        })
    }

    /// Stops keeping `service` (a read on it timed out, or the write had no clean answer), so
    /// the next request opens a new session instead of waiting on a troubled one again.
    async fn forget(&self, service: &Arc<Service>) {
        let mut kept = self.kept.lock().await;
        if kept
            .as_ref()
            .is_some_and(|k| Arc::ptr_eq(&k.service, service))
        {
            *kept = None;
        }
    }

    /// Replaces `stale` with a new session, unless another request already did.
    async fn renew(
        &self,
        token: &SandboxToken,
        stale: &Arc<Service>,
    ) -> Result<Arc<Service>, ReadFailure> {
        let digest = token.digest();
        let mut kept = self.kept.lock().await;
        if let Some(k) = kept.as_ref()
            && k.token == digest
            && !Arc::ptr_eq(&k.service, stale)
        {
            return Ok(Arc::clone(&k.service));
        }
        let service = Arc::new(open(&self.http, &self.url, token, self.read_timeout).await?);
        *kept = Some(Kept {
            token: digest,
            service: Arc::clone(&service),
        });
        Ok(service)
    }
}

/// A signed-in MCP session, for one request.
pub struct Epiphan {
    service: std::sync::Mutex<Arc<Service>>,
    read_timeout: Duration,
    /// Where to get a new session when a kept one turns out dead: taken by the first read that
    /// fails to reach it, so it happens at most once per request.
    renew: std::sync::Mutex<Option<(Arc<Sessions>, SandboxToken)>>,
    /// The keeper, told when this session should not be reused (`None` for one of its own).
    keeper: Option<Arc<Sessions>>,
}

/// How one read attempt ended.
enum Attempt {
    Answer(CallToolResult),
    /// The call did not reach a working session (transport or protocol error).
    Unreached,
    /// No answer within the read timeout.
    TimedOut,
}

fn is_unauthorized_text(text: &str) -> bool {
    let t = text.trim_start();
    let t = t.strip_prefix("Error:").unwrap_or(t).trim_start();
    t.starts_with("401") || t.to_ascii_lowercase().starts_with("unauthorized")
}

fn texts(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text())
        .map(|t| t.text.as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The JSON a result carries: structured content, else the text content parsed as JSON.
fn result_json(result: &CallToolResult) -> Option<Value> {
    if let Some(v) = &result.structured_content {
        return Some(v.clone());
    }
    serde_json::from_str(texts(result).trim()).ok()
}

/// Opens an MCP session with the sandbox token over the shared client, bounded by
/// `read_timeout`.
async fn open(
    http: &reqwest::Client,
    url: &str,
    token: &SandboxToken,
    read_timeout: Duration,
) -> Result<Service, ReadFailure> {
    let mut config =
        StreamableHttpClientTransportConfig::with_uri(url).auth_header(token.0.clone());
    // Recovering an expired session re-sends the POST that failed, and reconnecting a
    // broken stream can replay it: both would be a second write. Neither is allowed.
    config.reinit_on_expired_session = false;
    config.retry_config = std::sync::Arc::new(NeverRetry::default());
    config.max_json_response_size = 8 << 20;
    let transport = StreamableHttpClientTransport::with_client(http.clone(), config);
    match tokio::time::timeout(read_timeout, ().serve(transport)).await {
        Ok(Ok(service)) => Ok(service),
        Ok(Err(e)) => {
            let text = e.to_string();
            if text.contains("401") || text.to_ascii_lowercase().contains("unauthorized") {
                Err(ReadFailure::Unauthorized)
            } else {
                Err(ReadFailure::Failed("could not open an MCP session".into()))
            }
        }
        Err(_) => Err(ReadFailure::Failed(
            "MCP session did not open in time".into(),
        )),
    }
}

impl Epiphan {
    /// Opens a session of its own (one-off commands: `doctor`, `login`), bounded by
    /// `read_timeout`; `close` ends it.
    pub async fn connect(
        http: &reqwest::Client,
        url: &str,
        token: &SandboxToken,
        read_timeout: Duration,
    ) -> Result<Epiphan, ReadFailure> {
        let service = open(http, url, token, read_timeout).await?;
        Ok(Epiphan {
            service: std::sync::Mutex::new(Arc::new(service)),
            read_timeout,
            renew: std::sync::Mutex::new(None),
            keeper: None,
        })
    }

    fn current(&self) -> Arc<Service> {
        Arc::clone(&self.service.lock().unwrap_or_else(|p| p.into_inner()))
    }

    async fn attempt(&self, service: &Service, params: CallToolRequestParams) -> Attempt {
        match tokio::time::timeout(self.read_timeout, service.peer().call_tool(params)).await {
            Ok(Ok(result)) => Attempt::Answer(result),
            Ok(Err(_)) => Attempt::Unreached,
            Err(_) => Attempt::TimedOut,
        }
    }

    /// Tells the keeper not to hand this session out again.
    async fn troubled(&self, service: &Arc<Service>) {
        if let Some(keeper) = &self.keeper {
            keeper.forget(service).await;
        }
    }

    /// A read that did not reach a kept session: a new session, at most once per request.
    async fn renewed(&self, stale: &Arc<Service>) -> Option<Arc<Service>> {
        let (sessions, token) = self
            .renew
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()?;
        tracing::info!("the kept Epiphan session did not answer; opening a new one for the read");
        let fresh = sessions.renew(&token, stale).await.ok()?;
        *self.service.lock().unwrap_or_else(|p| p.into_inner()) = Arc::clone(&fresh);
        Some(fresh)
    }

    /// Calls a read tool and returns its JSON, redacted.
    pub async fn read(
        &self,
        tool: &'static str,
        arguments: serde_json::Map<String, Value>,
    ) -> Result<Value, ReadFailure> {
        let params = CallToolRequestParams::new(tool).with_arguments(arguments);
        let service = self.current();
        let mut outcome = self.attempt(&service, params.clone()).await;
        if matches!(outcome, Attempt::Unreached)
            && let Some(fresh) = self.renewed(&service).await
        {
            outcome = self.attempt(&fresh, params).await;
        }
        let result = match outcome {
            Attempt::Answer(r) => r,
            Attempt::Unreached => {
                self.troubled(&self.current()).await;
                return Err(ReadFailure::Failed(format!("{tool}: the call failed")));
            }
            Attempt::TimedOut => {
                self.troubled(&self.current()).await;
                return Err(ReadFailure::Failed(format!("{tool}: no answer in time")));
            }
        };
        if result.is_error == Some(true) {
            if is_unauthorized_text(&texts(&result)) {
                return Err(ReadFailure::Unauthorized);
            }
            return Err(ReadFailure::Failed(format!("{tool}: error result")));
        }
        match result_json(&result) {
            Some(mut value) => {
                redact::redact_value(&mut value);
                Ok(value)
            }
            None if is_unauthorized_text(&texts(&result)) => Err(ReadFailure::Unauthorized),
            None => Err(ReadFailure::Failed(format!("{tool}: answer is not JSON"))),
        }
    }

    /// Sends the write once, bounded by `timeout`. Never retried: a second call could apply
    /// the change twice, so anything but a readable error map is "outcome unknown".
    pub async fn write_once(
        &self,
        tool: &str,
        arguments: serde_json::Map<String, Value>,
        timeout: Duration,
    ) -> WriteAnswer {
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        let service = self.current();
        let result =
            match tokio::time::timeout(timeout, service.peer().call_tool_once(params)).await {
                Ok(Ok(CallToolResponse::Complete(r))) => r,
                Ok(Ok(_)) => return WriteAnswer::Unknown("the write asked for more input"),
                Ok(Err(_)) => {
                    self.troubled(&service).await;
                    return WriteAnswer::Unknown("the connection failed after sending");
                }
                Err(_) => {
                    self.troubled(&service).await;
                    return WriteAnswer::Unknown("no answer in time");
                }
            };
        if result.is_error == Some(true) {
            return WriteAnswer::Unknown(if is_unauthorized_text(&texts(&result)) {
                "in-band 401 after sending"
            } else {
                "error result"
            });
        }
        let Some(mut value) = result_json(&result) else {
            return WriteAnswer::Unknown("answer is not JSON");
        };
        redact::redact_value(&mut value);
        error_map(&value).map_or(WriteAnswer::Unknown("answer is not an error map"), |map| {
            if map.is_empty() {
                WriteAnswer::Done
            } else {
                WriteAnswer::Errors(map)
            }
        })
    }

    /// Done with the session: one opened by [`Epiphan::connect`] ends here; a kept one stays
    /// open for the next request.
    pub async fn close(self) {
        let service = self.service.into_inner().unwrap_or_else(|p| p.into_inner());
        if let Ok(service) = Arc::try_unwrap(service) {
            let _ = service.cancel().await;
        }
    }
}

/// A write answer: an object mapping device IDs to error strings (possibly under `errors`).
fn error_map(value: &Value) -> Option<BTreeMap<String, String>> {
    let obj = value.as_object()?;
    let obj = match obj.get("errors") {
        Some(Value::Object(inner)) if obj.len() == 1 => inner,
        _ => obj,
    };
    obj.iter()
        .map(|(k, v)| {
            v.as_str()
                .map(|s| (redact::redact_text(k), redact::redact_text(s)))
        })
        .collect()
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert!(check_url("https://go.epiphan.cloud/mcp", false).is_ok());
        assert!(check_url("http://127.0.0.1:3000/mcp", false).is_err());
        assert!(check_url("http://127.0.0.1:3000/mcp", true).is_ok());
        assert!(check_url("http://localhost:3000/mcp", true).is_ok());
        assert!(check_url("http://[::1]:3000/mcp", true).is_ok());
        assert!(check_url("http://10.0.0.1/mcp", true).is_err());
        assert!(check_url("http://localhost.evil.example/mcp", true).is_err());
        assert!(check_url("https://u:p@host/mcp", false).is_err());
        assert!(check_url("ftp://host/mcp", true).is_err());
    }

    #[test]
    fn unauthorized_text_is_recognised_only_as_a_whole_answer() {
        assert!(is_unauthorized_text("Error: 401 Unauthorized"));
        assert!(!is_unauthorized_text(
            "{\"devices\":[{\"Name\":\"401 Unauthorized\"}]}"
        ));
    }
}
