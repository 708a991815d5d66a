//! The executor's Epiphan client, signed in as the sandbox, on the MCP core both processes
//! share (`fleetwatch-epiphan`: opening a session with redirects, session recovery and stream
//! retry off; the bounded read; results as sent; the one expired sign-in rule; the one URL
//! policy). What is executor policy lives here, on top of it:
//!
//! * the session kept between requests ([`Sessions`]), and the one retry of a *read* on a new
//!   session when a kept one does not answer;
//! * reads only by read-tool name ([`Epiphan::read`]);
//! * the write, which only [`Epiphan::write_once`] sends, and only in exchange for the
//!   [`WriteTicket`] that the last check hands out. This is the only module that names the
//!   core crate, so no other code in the executor can open a session of its own or reach the
//!   core's write call; `executor/tests/one_write.rs` keeps it that way.

use std::sync::Arc;
use std::time::Duration;

use fleetwatch_epiphan::{CallError, OpenError, ReadAnswer, Session};
use fleetwatch_protocol::secret::Secret;
use serde_json::{Map, Value};

use crate::checks::WriteTicket;

pub use fleetwatch_epiphan::{UrlRefusal, WriteAnswer, http_client};

/// Why the Epiphan URL was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the Epiphan URL (FLEETWATCH_EPIPHAN_URL) {0}")]
pub struct UrlError(pub UrlRefusal);

/// The one URL policy: `https://`, or `http://` to a loopback host when explicitly allowed
/// (tests, demo); no user info, no fragment.
pub fn check_url(url: &str, allow_loopback_http: bool) -> Result<(), UrlError> {
    fleetwatch_epiphan::check_url(url, allow_loopback_http)
        .map(|_| ())
        .map_err(UrlError)
}

/// Why a read gave nothing usable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadFailure {
    /// Epiphan refused the sign-in (an in-band `401 Unauthorized`, or HTTP 401).
    Unauthorized,
    /// Timed out, lost connection, error result or an answer that is not JSON. The text says
    /// which in plain words and never carries result data.
    Failed(String),
}

/// Which token a kept session was opened with, without keeping the token itself twice.
fn digest(token: &Secret) -> [u8; 32] {
    use sha2::Digest as _;
    sha2::Sha256::digest(token.expose().as_bytes()).into()
}

async fn open(
    http: &reqwest::Client,
    url: &str,
    token: &Secret,
    read_timeout: Duration,
) -> Result<Session, ReadFailure> {
    Session::open(http, url, token, read_timeout)
        .await
        .map_err(|e| match e {
            OpenError::SignInExpired => ReadFailure::Unauthorized,
            OpenError::TimedOut => ReadFailure::Failed("MCP session did not open in time".into()),
            // The transport's text may hold anything (an address with its query); the
            // executor keeps a fixed wording.
            OpenError::Failed(_) => ReadFailure::Failed("could not open an MCP session".into()),
        })
}

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
    session: Arc<Session>,
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
    pub async fn session(self: &Arc<Self>, token: Secret) -> Result<Epiphan, ReadFailure> {
        let digest = digest(&token);
        let mut kept = self.kept.lock().await;
        let reusable = kept
            .as_ref()
            .filter(|k| k.token == digest && !k.session.is_closed())
            .map(|k| Arc::clone(&k.session));
        let (session, renew) = match reusable {
            Some(session) => (session, Some((Arc::clone(self), token))),
            // Just opened: a failure on it is Epiphan's answer, not a stale session.
            None => {
                let session =
                    Arc::new(open(&self.http, &self.url, &token, self.read_timeout).await?);
                *kept = Some(Kept {
                    token: digest,
                    session: Arc::clone(&session),
                });
                (session, None)
            }
        };
        Ok(Epiphan {
            session: std::sync::Mutex::new(session),
            read_timeout: self.read_timeout,
            renew: std::sync::Mutex::new(renew),
            keeper: Some(Arc::clone(self)),
        })
    }

    /// Stops keeping `session` (a read on it timed out, or the write had no clean answer), so
    /// the next request opens a new session instead of waiting on a troubled one again.
    async fn forget(&self, session: &Arc<Session>) {
        let mut kept = self.kept.lock().await;
        if kept
            .as_ref()
            .is_some_and(|k| Arc::ptr_eq(&k.session, session))
        {
            *kept = None;
        }
    }

    /// Replaces `stale` with a new session, unless another request already did.
    async fn renew(
        &self,
        token: &Secret,
        stale: &Arc<Session>,
    ) -> Result<Arc<Session>, ReadFailure> {
        let digest = digest(token);
        let mut kept = self.kept.lock().await;
        if let Some(k) = kept.as_ref()
            && k.token == digest
            && !Arc::ptr_eq(&k.session, stale)
        {
            return Ok(Arc::clone(&k.session));
        }
        let session = Arc::new(open(&self.http, &self.url, token, self.read_timeout).await?);
        *kept = Some(Kept {
            token: digest,
            session: Arc::clone(&session),
        });
        Ok(session)
    }
}

/// A signed-in MCP session, for one request.
pub struct Epiphan {
    session: std::sync::Mutex<Arc<Session>>,
    read_timeout: Duration,
    /// Where to get a new session when a kept one turns out dead: taken by the first read that
    /// fails to reach it, so it happens at most once per request.
    renew: std::sync::Mutex<Option<(Arc<Sessions>, Secret)>>,
    /// The keeper, told when this session should not be reused (`None` for one of its own).
    keeper: Option<Arc<Sessions>>,
}

impl Epiphan {
    /// Opens a session of its own (one-off commands: `doctor`, `login`), bounded by
    /// `read_timeout`; `close` ends it.
    pub async fn connect(
        http: &reqwest::Client,
        url: &str,
        token: &Secret,
        read_timeout: Duration,
    ) -> Result<Epiphan, ReadFailure> {
        let session = open(http, url, token, read_timeout).await?;
        Ok(Epiphan {
            session: std::sync::Mutex::new(Arc::new(session)),
            read_timeout,
            renew: std::sync::Mutex::new(None),
            keeper: None,
        })
    }

    fn current(&self) -> Arc<Session> {
        Arc::clone(&self.session.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Tells the keeper not to hand this session out again.
    async fn troubled(&self, session: &Arc<Session>) {
        if let Some(keeper) = &self.keeper {
            keeper.forget(session).await;
        }
    }

    /// A read that did not reach a kept session: a new session, at most once per request.
    async fn renewed(&self, stale: &Arc<Session>) -> Option<Arc<Session>> {
        let (sessions, token) = self
            .renew
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()?;
        tracing::info!("the kept Epiphan session did not answer; opening a new one for the read");
        let fresh = sessions.renew(&token, stale).await.ok()?;
        *self.session.lock().unwrap_or_else(|p| p.into_inner()) = Arc::clone(&fresh);
        Some(fresh)
    }

    /// Calls a read tool and returns its JSON, as sent. The name is a `'static` literal of
    /// the executor's own reads, and the core refuses any name that is not a read tool's
    /// before sending, so this cannot carry a write.
    pub async fn read(
        &self,
        tool: &'static str,
        arguments: Map<String, Value>,
    ) -> Result<Value, ReadFailure> {
        let session = self.current();
        let mut outcome = session
            .call_read(tool, arguments.clone(), self.read_timeout)
            .await;
        if matches!(outcome, Err(CallError::Unreached(_)))
            && let Some(fresh) = self.renewed(&session).await
        {
            outcome = fresh.call_read(tool, arguments, self.read_timeout).await;
        }
        match outcome {
            Ok(ReadAnswer::Json(value)) => Ok(value),
            Ok(ReadAnswer::Text(_)) => {
                Err(ReadFailure::Failed(format!("{tool}: answer is not JSON")))
            }
            Err(CallError::SignInExpired) => Err(ReadFailure::Unauthorized),
            Err(CallError::ErrorResult(_)) => {
                Err(ReadFailure::Failed(format!("{tool}: error result")))
            }
            Err(CallError::NotARead) => Err(ReadFailure::Failed(format!(
                "{tool} is not a read tool; nothing was sent"
            ))),
            Err(CallError::Unreached(_)) => {
                self.troubled(&self.current()).await;
                Err(ReadFailure::Failed(format!("{tool}: the call failed")))
            }
            Err(CallError::TimedOut) => {
                self.troubled(&self.current()).await;
                Err(ReadFailure::Failed(format!("{tool}: no answer in time")))
            }
        }
    }

    /// The single write: takes the last check's [`WriteTicket`] by value, so it cannot be
    /// reached with a check skipped and cannot be sent twice with one ticket. Sent once,
    /// bounded by `timeout`, never retried (not even after a 401): anything but a readable
    /// error map is "outcome unknown".
    pub async fn write_once(&self, ticket: WriteTicket, timeout: Duration) -> WriteAnswer {
        let (permit, tool, arguments) = ticket.into_call();
        let session = self.current();
        let answer = session
            .call_write_once(permit, &tool, arguments, timeout)
            .await;
        if let WriteAnswer::Unknown(why) = &answer
            && why.session_troubled()
        {
            self.troubled(&session).await;
        }
        answer
    }

    /// Done with the session: one opened by [`Epiphan::connect`] ends here; a kept one stays
    /// open for the next request.
    pub async fn close(self) {
        let session = self.session.into_inner().unwrap_or_else(|p| p.into_inner());
        if let Ok(session) = Arc::try_unwrap(session) {
            session.close().await;
        }
    }
}
