//! Signing in to Epiphan with OAuth, shared by the assistant (the normal slot) and the executor
//! (the sandbox slot).
//!
//! * [`discovery`] finds the authorization server the way MCP clients do: the MCP URL answers
//!   401 with `WWW-Authenticate: Bearer resource_metadata="…"` (or the protected-resource
//!   metadata sits at its well-known address), and that names the authorization server, whose
//!   own metadata gives the endpoints.
//! * [`login`] runs the authorization-code flow with PKCE (S256), registering a client
//!   dynamically when the server offers it, with the browser sent back to a one-shot listener
//!   on `127.0.0.1` ([`callback`]).
//! * [`slot`] keeps the tokens in one 0600 file per sign-in, refreshes the access token before
//!   it expires, keeps refresh-token rotation safe when two processes share a slot (an exclusive
//!   lock held from re-read to write), and marks the slot dead — in the file — when the server
//!   refuses a refresh, so callers stop instead of retrying ([`SignInError::Dead`]).
//!
//! # Why no OAuth library
//!
//! The `oauth2` crate's HTTP integration is built on reqwest 0.12 while the workspace uses
//! 0.13, so it would put a second HTTP stack into the executor; rmcp's `auth` feature brings
//! `oauth2` along with a large credential-store layer the executor does not need. The requests
//! here are few and fixed — two metadata GETs, one registration POST, and form POSTs to the
//! token endpoint — so they are made with the workspace's reqwest and typed with serde. PKCE
//! is SHA-256 and base64url from crates the executor already has. The result adds no crate to
//! the executor's graph beyond this one, which a reviewer can read in one sitting.
//!
//! Tokens are held in [`Secret`], which has neither `Debug` nor `Display`: nothing here prints
//! or logs one, and no error message carries a response body.
#![forbid(unsafe_code)]

pub mod callback;
pub mod discovery;
mod http;
pub mod login;
pub mod scopes;
mod secret;
pub mod slot;
/// The TLS provider choice lives with the MCP client core; named here too so that every
/// caller that builds an HTTP client through the sign-in crate finds it.
pub use fleetwatch_epiphan::tls;

pub use fleetwatch_protocol::secret::Secret;
pub use login::{LoginDone, LoginOptions, login, login_with};
pub use scopes::Access;
pub use slot::{Slot, SlotStatus};

/// Exit code for "the sign-in is dead": `EX_CONFIG`, which the systemd units name in
/// `RestartPreventExitStatus=` so a service whose refresh was refused is not restarted into
/// the same refusal again and again.
pub const EXIT_SIGN_IN_DEAD: u8 = 78;

/// Why a refresh was refused, persisted in the slot file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignInDead {
    /// When the refusal came back.
    pub since: jiff::Timestamp,
    /// The refusal in words (status and OAuth error code, never a token or a body).
    pub reason: String,
}

impl std::fmt::Display for SignInDead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the sign-in is dead since {}: {}",
            self.since.strftime("%Y-%m-%d %H:%M:%S UTC"),
            self.reason
        )
    }
}

/// Why no usable sign-in came out. Messages never carry a token or a server's response body.
#[derive(Debug, thiserror::Error)]
pub enum SignInError {
    /// Nothing is stored in the slot.
    #[error("not signed in")]
    Missing,
    /// The authorization server refused a refresh; the slot stays dead until the next login.
    #[error("{0}")]
    Dead(SignInDead),
    /// The access token has expired and there is no refresh token to renew it.
    #[error("the access token has expired and cannot be renewed; sign in again")]
    Expired,
    /// The slot file is unsafe, unreadable or not understood.
    #[error("token slot {path}: {problem}")]
    Slot {
        /// The slot file.
        path: String,
        /// What is wrong and how to fix it.
        problem: String,
    },
    /// A URL (configured or discovered) is not allowed.
    #[error("{0}")]
    Url(String),
    /// Finding the authorization server failed.
    #[error("could not discover how to sign in: {0}")]
    Discovery(String),
    /// Registering the client failed.
    #[error("client registration failed: {0}")]
    Registration(String),
    /// The browser's answer on the loopback callback was refused or never came.
    #[error("{0}")]
    Callback(String),
    /// The token endpoint refused the authorization code.
    #[error("the authorization server refused the sign-in: {0}")]
    Refused(String),
    /// A refresh or request failed for a reason that may pass (network, 5xx, timeout).
    #[error("the sign-in could not be renewed right now ({0}); try again later")]
    Transient(String),
}

impl SignInError {
    /// True for [`SignInError::Dead`]: the caller should stop with [`EXIT_SIGN_IN_DEAD`].
    pub fn is_dead(&self) -> bool {
        matches!(self, SignInError::Dead(_))
    }
}

/// The one URL policy ([`fleetwatch_epiphan::url_policy`]), applied to the MCP URL and to
/// every endpoint that discovery returns, so a metadata document cannot send a code or a token
/// somewhere in clear text. The refusal names what was checked, never the URL itself (it
/// could hold a password).
pub(crate) fn check_url(
    what: &str,
    url: &str,
    allow_loopback_http: bool,
) -> Result<reqwest::Url, String> {
    fleetwatch_epiphan::check_url(url, allow_loopback_http).map_err(|e| format!("{what} {e}"))
}
