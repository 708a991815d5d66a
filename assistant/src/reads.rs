//! The guarded read client: the only place in the assistant that calls an Epiphan tool.
//!
//! Every call passes [`Reader::guard`] first, before a connection is opened or a byte is sent:
//! a name that is a write tool (by the policy's write list or by Epiphan's own list, whatever
//! the read section says) or is not on the policy's read list is refused with an error value.
//! Every answer is redacted before anything parses, shows, logs or returns it. The same guard
//! and the same redaction run over a replay folder, so `--replay` exercises this exact path.
//!
//! The MCP session itself — no redirects, no session recovery, the bounded call, the one rule
//! for an expired sign-in — is the core the executor uses too (`fleetwatch-epiphan`), which
//! returns answers as sent; this module adds the guard, the redaction, the token and the
//! replay folder.
//!
//! This process reads and never writes, and the compiler holds it: the MCP client core's write
//! takes a `fleetwatch_write_permit::WritePermit`, a crate only the executor declares, so the
//! assistant cannot name one:
//!
//! ```compile_fail
//! async fn a_second_write_path(session: &fleetwatch_epiphan::Session) {
//!     let permit = fleetwatch_write_permit::WritePermit::new();
//!     let arguments = serde_json::Map::new();
//!     let timeout = std::time::Duration::from_secs(1);
//!     let _ = session.call_write_once(permit, "batch_reboot", arguments, timeout).await;
//! }
//! ```
//!
//! while a read compiles:
//!
//! ```no_run
//! async fn a_read(session: &fleetwatch_epiphan::Session) {
//!     let arguments = serde_json::Map::new();
//!     let timeout = std::time::Duration::from_secs(1);
//!     let _ = session.call_read("get_devices_in_my_team", arguments, timeout).await;
//! }
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use fleetwatch_epiphan::{CallError, OpenError, ReadAnswer, Session};
use fleetwatch_protocol::fleet;
use fleetwatch_protocol::policy::{self, Policy};
use fleetwatch_protocol::secret::Secret;
use fleetwatch_redact as redact;
use serde_json::{Map, Value, json};
use tokio::sync::Mutex;

use crate::config::{self, Config};
use crate::snapshot::Snapshot;

/// The normal sign-in's token file inside the state folder.
pub const TOKEN_FILE: &str = "epiphan-token";

/// What the operator must do when the sign-in is missing or expired.
pub const SIGN_IN_HINT: &str =
    "sign-in expired: run `fleetwatch login` or set FLEETWATCH_EPIPHAN_TOKEN";

/// Why a read did not produce data. Messages never carry the data itself.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    /// The guard refused the tool; nothing was sent.
    #[error("refused before sending: {0}")]
    Refused(String),
    /// Epiphan says the sign-in is missing, expired or revoked.
    #[error("{SIGN_IN_HINT}")]
    SignInExpired,
    /// No sign-in is configured at all, or its file is unusable.
    #[error("no usable sign-in: {0}")]
    NoSignIn(String),
    /// The read did not finish within the bound.
    #[error("Epiphan did not answer {tool} within {secs} s; try again later")]
    Timeout {
        /// The read tool.
        tool: String,
        /// The bound.
        secs: u64,
    },
    /// Connecting or talking to Epiphan failed.
    #[error("could not reach Epiphan: {0}")]
    Transport(String),
    /// Epiphan answered with an error result (text redacted).
    #[error("{tool} failed: {message}")]
    Tool {
        /// The read tool.
        tool: String,
        /// Redacted error text.
        message: String,
    },
    /// The answer could not be understood.
    #[error("{0}")]
    Parse(String),
    /// The replay folder could not serve the read.
    #[error("replay: {0}")]
    Replay(String),
}

/// The normal sign-in's bearer token, held in the protocol's one secret wrapper (no
/// `Debug`/`Display`, so it cannot end up in a log line or an error message by accident). A
/// token file written by `fleetwatch login`'s OAuth flow is kept as its slot instead, so each
/// connection gets a token renewed before it expires.
pub struct Token(Bearer);

enum Bearer {
    Static(Secret),
    Slot(Box<crate::login::SlotToken>),
}

impl Token {
    /// From `FLEETWATCH_EPIPHAN_TOKEN`, else the token file in the state folder. A token file
    /// that group or others can read is refused rather than used.
    pub fn load(state_dir: &Path) -> Result<Token, ReadError> {
        if let Ok(value) = std::env::var("FLEETWATCH_EPIPHAN_TOKEN")
            && !value.trim().is_empty()
        {
            return Token::new(&value);
        }
        Token::from_file(&state_dir.join(TOKEN_FILE))
    }

    /// Reads a token file, refusing one readable by group or others.
    pub fn from_file(path: &Path) -> Result<Token, ReadError> {
        use std::os::unix::fs::PermissionsExt as _;
        let meta = std::fs::metadata(path).map_err(|e| {
            ReadError::NoSignIn(format!(
                "{} ({e}); set FLEETWATCH_EPIPHAN_TOKEN or store a token there with mode 0600",
                path.display()
            ))
        })?;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(ReadError::NoSignIn(format!(
                "{} has mode {mode:04o}; it must be 0600 (run `chmod 600` on it)",
                path.display()
            )));
        }
        let text = std::fs::read_to_string(path)
            .map_err(|e| ReadError::NoSignIn(format!("{}: {e}", path.display())))?;
        if text.trim_start().starts_with('{') {
            return crate::login::SlotToken::open(path).map(|s| Token(Bearer::Slot(Box::new(s))));
        }
        Token::new(&text)
    }

    /// The bearer to send now (an OAuth slot renews it first when it is about to expire), and
    /// whether it differs from the one used last.
    async fn bearer(&self) -> Result<(Secret, bool), ReadError> {
        match &self.0 {
            Bearer::Slot(slot) => slot.bearer().await,
            Bearer::Static(token) => Ok((token.clone(), false)),
        }
    }

    fn new(text: &str) -> Result<Token, ReadError> {
        let trimmed = text.trim();
        // The transport adds the scheme itself; tolerate a pasted "Bearer …".
        let bare = trimmed
            .strip_prefix("Bearer ")
            .or_else(|| trimmed.strip_prefix("bearer "))
            .unwrap_or(trimmed);
        Secret::new(bare)
            .map(|t| Token(Bearer::Static(t)))
            .ok_or_else(|| {
                ReadError::NoSignIn(
                    "the token is empty or holds spaces or control characters".to_owned(),
                )
            })
    }
}

enum Backend {
    Live {
        url: String,
        token: Token,
        http: reqwest::Client,
        session: Mutex<Option<Session>>,
    },
    Replay {
        dir: PathBuf,
        now: jiff::Timestamp,
    },
}

/// The guarded, redacting read client (live or replay).
pub struct Reader {
    policy: Arc<Policy>,
    backend: Backend,
    timeout: Duration,
}

impl Reader {
    /// A live reader over MCP. Nothing is sent until the first allowed read.
    pub fn live(config: &Config, policy: Arc<Policy>, token: Token) -> Result<Reader, ReadError> {
        fleetwatch_epiphan::check_url(&config.epiphan_url, config.allow_loopback_http)
            .map_err(|p| ReadError::Transport(format!("FLEETWATCH_EPIPHAN_URL {p}")))?;
        let http = fleetwatch_epiphan::http_client().map_err(ReadError::Transport)?;
        Ok(Reader {
            policy,
            backend: Backend::Live {
                url: config.epiphan_url.clone(),
                token,
                http,
                session: Mutex::new(None),
            },
            timeout: config.read_timeout,
        })
    }

    /// A reader over a replay folder; templates resolve against `now`.
    pub fn replay(dir: PathBuf, now: jiff::Timestamp, policy: Arc<Policy>) -> Reader {
        Reader {
            policy,
            backend: Backend::Replay { dir, now },
            timeout: Duration::from_secs(config::DEFAULT_READ_TIMEOUT_SECS),
        }
    }

    /// Changes the bound on each read.
    pub fn with_timeout(mut self, timeout: Duration) -> Reader {
        self.timeout = timeout;
        self
    }

    /// The clock answers are relative to: the replay clock, or the current time.
    pub fn now(&self) -> jiff::Timestamp {
        match &self.backend {
            Backend::Replay { now, .. } => *now,
            Backend::Live { .. } => jiff::Timestamp::now(),
        }
    }

    /// True over a replay folder.
    pub fn is_replay(&self) -> bool {
        matches!(self.backend, Backend::Replay { .. })
    }

    /// The policy this reader guards with.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The guard: a write tool by any list, a picture tool, or anything not on the policy's
    /// read list is refused. The refusal names the tool only when it is a known name, so model
    /// or data text is never echoed back.
    pub fn guard(&self, tool: &str) -> Result<(), ReadError> {
        if self.policy.is_write_tool(tool) || policy::EPIPHAN_WRITE_TOOLS.contains(&tool) {
            return Err(ReadError::Refused(format!(
                "{tool} is a write tool; the assistant can only read"
            )));
        }
        if policy::NEVER_READABLE.contains(&tool) {
            return Err(ReadError::Refused(format!("{tool} is never read")));
        }
        if self.policy.read_tool(tool).is_none() {
            return Err(ReadError::Refused(
                "that tool is not on the read list".to_owned(),
            ));
        }
        Ok(())
    }

    /// One guarded, bounded, redacted read.
    pub async fn read(&self, tool: &str, arguments: Value) -> Result<Value, ReadError> {
        self.guard(tool)?;
        let arguments = match arguments {
            Value::Object(map) => map,
            Value::Null => Map::new(),
            _ => {
                return Err(ReadError::Refused(format!(
                    "{tool}: arguments must be a JSON object"
                )));
            }
        };
        match &self.backend {
            Backend::Replay { dir, now } => replay_read(dir, *now, tool),
            Backend::Live {
                url,
                token,
                http,
                session,
            } => {
                let secs = self.timeout.as_secs();
                let call = self.live_call(url, token, http, session, tool, arguments);
                match tokio::time::timeout(self.timeout, call).await {
                    Ok(result) => result,
                    Err(_) => {
                        // The connection may be stuck mid-answer: drop it so the next read
                        // starts clean instead of queueing behind it.
                        if let Ok(mut slot) = session.try_lock()
                            && let Some(old) = slot.take()
                        {
                            old.abandon();
                        }
                        Err(ReadError::Timeout {
                            tool: tool.to_owned(),
                            secs,
                        })
                    }
                }
            }
        }
    }

    async fn live_call(
        &self,
        url: &str,
        token: &Token,
        http: &reqwest::Client,
        session: &Mutex<Option<Session>>,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> Result<Value, ReadError> {
        let mut slot = session.lock().await;
        let (bearer, renewed) = token.bearer().await?;
        if renewed && let Some(old) = slot.take() {
            // The session was opened with the previous token; open a new one.
            old.abandon();
        }
        let open = |bearer: Secret| async move {
            Session::open(http, url, &bearer, self.timeout)
                .await
                .map_err(|e| match e {
                    OpenError::SignInExpired => ReadError::SignInExpired,
                    OpenError::TimedOut => ReadError::Timeout {
                        tool: tool.to_owned(),
                        secs: self.timeout.as_secs(),
                    },
                    OpenError::Failed(why) => ReadError::Transport(redact::redact_text(&why)),
                })
        };
        let kept = slot.is_some();
        let mut current = match slot.take() {
            Some(session) => session,
            None => open(bearer.clone()).await?,
        };
        let mut outcome = current
            .call_read(tool, arguments.clone(), self.timeout)
            .await;
        if kept && matches!(outcome, Err(CallError::Unreached(_))) {
            // A kept session Epiphan no longer knows (expired, restarted). Reads are safe to
            // repeat, so this one is tried once more on a new session.
            current.abandon();
            current = open(bearer).await?;
            outcome = current.call_read(tool, arguments, self.timeout).await;
        }
        // A broken or stuck session is not reused; any other answer came from a working one.
        if matches!(outcome, Err(CallError::Unreached(_) | CallError::TimedOut)) {
            current.abandon();
        } else {
            *slot = Some(current);
        }
        // The MCP client core returns answers as Epiphan sent them; everything is redacted
        // here, before anything in this process parses, shows, logs or keeps it.
        match outcome {
            Ok(ReadAnswer::Json(mut value)) => {
                redact::redact_value(&mut value);
                Ok(value)
            }
            // Kept as text: the parsers say what they expected, without echoing it.
            Ok(ReadAnswer::Text(text)) => Ok(Value::String(redact::redact_text(&text))),
            Err(CallError::SignInExpired) => Err(ReadError::SignInExpired),
            Err(CallError::ErrorResult(message)) => Err(ReadError::Tool {
                tool: tool.to_owned(),
                message: redact::redact_text(&message),
            }),
            Err(CallError::NotARead) => Err(ReadError::Refused(format!(
                "{tool} is not a read tool's name"
            ))),
            Err(CallError::Unreached(why)) => Err(ReadError::Transport(redact::redact_text(&why))),
            Err(CallError::TimedOut) => Err(ReadError::Timeout {
                tool: tool.to_owned(),
                secs: self.timeout.as_secs(),
            }),
        }
    }
}

/// A replay file's text with its time templates resolved. `tool` passed the guard, so it is a
/// listed read name, never a path.
fn replay_text(dir: &Path, now: jiff::Timestamp, tool: &str) -> Result<String, ReadError> {
    let path = dir.join(format!("{tool}.json"));
    // The error goes to the model and on to the operator: it names the tool, never the
    // folder's path on this machine.
    let text = std::fs::read_to_string(&path).map_err(|e| {
        ReadError::Replay(match e.kind() {
            std::io::ErrorKind::NotFound => format!("{tool}: not in this replay"),
            _ => format!("{tool}: this replay's file for it cannot be read"),
        })
    })?;
    if !text.contains("{{") {
        return Ok(text);
    }
    fleet::resolve_templates(&text, now).map_err(|e| ReadError::Replay(format!("{tool}.json: {e}")))
}

fn replay_read(dir: &Path, now: jiff::Timestamp, tool: &str) -> Result<Value, ReadError> {
    let resolved = replay_text(dir, now, tool)?;
    let mut value: Value = fleetwatch_protocol::lenient::parse(&resolved)
        .map_err(|e| ReadError::Replay(format!("{tool}.json is not JSON: {e}")))?;
    redact::redact_value(&mut value);
    // Notes for humans (`_note`, …) are not fleet data.
    if let Value::Object(map) = &mut value {
        map.retain(|key, _| !key.starts_with('_'));
    }
    Ok(value)
}

/// The team's device list, guarded like every read, decoded and redacted. A replay folder's
/// file is decoded from its text one device at a time ([`fleet::decode_device_list`]): each
/// entry is redacted before it is read and only the typed devices are kept, so a team of
/// 10,000 rooms never stands in memory as a parsed tree. A live answer arrives from the MCP
/// core already parsed; it is redacted whole and read as before.
pub async fn read_device_list(reader: &Reader) -> Result<fleet::DeviceList, ReadError> {
    const TOOL: &str = "get_devices_in_my_team";
    if let Backend::Replay { dir, now } = &reader.backend {
        reader.guard(TOOL)?;
        let text = replay_text(dir, *now, TOOL)?;
        let mut redactor = redact::Redactor::default();
        return fleet::decode_device_list(&text, &mut |entry| redactor.redact(entry))
            .map_err(|e| ReadError::Parse(e.to_string()));
    }
    let value = reader.read(TOOL, json!({})).await?;
    fleet::parse_device_list(&value).map_err(|e| ReadError::Parse(e.to_string()))
}

/// Reads what one question needs and builds a [`Snapshot`], every read whatever the grants
/// (the keyword answerer's view: it shows nothing the model would be sent).
pub async fn load_snapshot(reader: &Reader) -> Result<Snapshot, ReadError> {
    load_snapshot_in(reader, &|_| true).await
}

/// The reads a snapshot is made of, in the order they are made, with the read tool's name.
/// The device list is required; each of the others is made only when its category is open.
pub const SNAPSHOT_READS: [&str; 5] = [
    "get_devices_in_my_team",
    "get_recorder_status_for_devices",
    "get_system_status_for_devices",
    "get_current_or_next_cms_events_for_devices",
    "get_stream_endpoints",
];

/// Which of [`SNAPSHOT_READS`] a question may make: those on the policy's read list whose
/// category `is_open` says is open.
pub fn snapshot_scope(policy: &Policy, is_open: &dyn Fn(&str) -> bool) -> [bool; 5] {
    SNAPSHOT_READS.map(|tool| policy.read_tool(tool).is_some_and(|t| is_open(&t.category)))
}

/// Reads what one question may read ([`snapshot_scope`]) and builds a [`Snapshot`]. The device
/// list is required (closed, it is refused like any read the guard refuses); the other reads
/// fill in what they can, and a failure of the device list fails the whole snapshot.
pub async fn load_snapshot_in(
    reader: &Reader,
    is_open: &(dyn Fn(&str) -> bool + Sync),
) -> Result<Snapshot, ReadError> {
    let [
        devices_open,
        recorder_open,
        system_open,
        events_open,
        streams_open,
    ] = snapshot_scope(reader.policy(), is_open);
    if !devices_open {
        return Err(ReadError::Refused(
            "the fleet category is closed: the device list is not read".to_owned(),
        ));
    }
    let now = reader.now();
    let list = read_device_list(reader).await?;
    let online: Vec<&str> = list
        .devices
        .iter()
        .filter(|d| d.online)
        .map(|d| d.id.as_str())
        .collect();
    let ids = Value::from(online.clone());
    let recorder = if online.is_empty() || !recorder_open {
        None
    } else {
        Some(
            reader
                .read(
                    "get_recorder_status_for_devices",
                    json!({"device_ids": ids}),
                )
                .await?,
        )
    };
    let system = if online.is_empty() || !system_open {
        None
    } else {
        optional(
            reader
                .read("get_system_status_for_devices", json!({"device_ids": ids}))
                .await,
        )?
    };
    let events = if events_open {
        let until = fleet::format_time(
            now.checked_add(jiff::SignedDuration::from_hours(24))
                .unwrap_or(now),
        );
        Some(
            reader
                .read(
                    "get_current_or_next_cms_events_for_devices",
                    json!({"until": until}),
                )
                .await?,
        )
    } else {
        None
    };
    let streams = if streams_open {
        optional(reader.read("get_stream_endpoints", json!({})).await)?
    } else {
        None
    };
    let mut snapshot = Snapshot::from_list(
        now,
        list,
        recorder.as_ref(),
        system.as_ref(),
        events.as_ref(),
        streams.as_ref(),
    )
    .map_err(|e| ReadError::Parse(e.to_string()))?;
    snapshot.not_read = SNAPSHOT_READS
        .iter()
        .zip(snapshot_scope(reader.policy(), is_open))
        .filter(|(_, open)| !open)
        .map(|(tool, _)| *tool)
        .collect();
    Ok(snapshot)
}

/// System status and stream destinations only decorate an answer: their absence (not listed,
/// a missing replay file, a tool error) leaves them out. A sign-in or timeout problem still
/// fails the question, because the next read would fail the same way.
fn optional(result: Result<Value, ReadError>) -> Result<Option<Value>, ReadError> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(ReadError::Refused(_) | ReadError::Replay(_) | ReadError::Tool { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The device IDs the normal sign-in can see, sorted, for the executor's overlap check.
pub async fn known_device_ids(reader: &Reader) -> Result<Vec<String>, ReadError> {
    let list = read_device_list(reader).await?;
    let mut ids: Vec<String> = list.devices.into_iter().map(|d| d.id).collect();
    ids.sort();
    ids.dedup();
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn static_value(token: &Token) -> &str {
        match &token.0 {
            Bearer::Static(t) => t.expose(),
            Bearer::Slot(_) => "",
        }
    }

    #[test]
    fn token_parsing() {
        assert!(Token::new("").is_err());
        assert!(Token::new("a b").is_err());
        assert!(Token::new("tok\u{7}").is_err());
        assert_eq!(static_value(&Token::new("Bearer abc\n").unwrap()), "abc");
        assert_eq!(static_value(&Token::new(" abc ").unwrap()), "abc");
    }

    #[test]
    fn token_file_modes() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(TOKEN_FILE);
        std::fs::write(&path, "secret-token\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = Token::from_file(&path).err().unwrap();
        assert!(err.to_string().contains("0644"), "{err}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        assert!(Token::from_file(&path).is_err());
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(
            static_value(&Token::from_file(&path).unwrap()),
            "secret-token"
        );
        assert!(Token::from_file(&dir.path().join("missing")).is_err());
    }
}
