//! Fleetwatch's simulator of the outside world: an Epiphan MCP server (two or more teams chosen
//! by bearer token, every call recorded, injectable faults, replay folders) and a stand-in for
//! the Anthropic Messages API ([`model`]), scripted for tests or rule-based for the offline
//! demo.
//!
//! Nothing here is used on a production path; tests, the demo and benchmarks start it on
//! loopback and drive it through [`SimHandle`] or its `/control/*` endpoint.
//!
//! # Control endpoint
//!
//! Same port as `/mcp`; every request needs the header `x-control-token:
//! <SimHandle::control_token()>` (the binary prints it on its second line), else 401.
//! Bodies are JSON; a target that does not exist answers 404 `{"ok": false, "error": …}`,
//! success answers `{"ok": true}`.
//!
//! | route | body / query | effect |
//! | --- | --- | --- |
//! | `GET /control/calls` | | every [`CallRecord`] |
//! | `GET /control/writes` | | write calls only |
//! | `GET /control/devices?team=T` | | the team's device IDs |
//! | `POST /control/fault` | `{tool, fault}`; fault is `"fail"`, `"hang"`, `"unauthorized"`, `"drop_after_write"` or `{"text": "…"}` | [`SimHandle::set_fault`] |
//! | `POST /control/clear` | `{}` | [`SimHandle::clear_faults`] |
//! | `POST /control/recording` | `{team, channel_id, recording}` | [`SimHandle::set_recording`] |
//! | `POST /control/event` | `{team, device_id, start, end}` (RFC 3339; `end` may be null) | [`SimHandle::move_event`] |
//! | `POST /control/remove` | `{team, device_id}` | [`SimHandle::remove_device`] |
//! | `POST /control/online` | `{team, device_id, online}` | [`SimHandle::set_online`] |
//! | `GET /control/oauth` | | token endpoint call counts ([`TokenCalls`]) |
//! | `POST /control/oauth` | `{refuse_refresh?, token_lifetime_secs?, token_endpoint_unavailable?, token_delay_ms?}` | [`SimHandle::refuse_refresh`], [`SimHandle::set_token_lifetime`], … |
//!
//! # Sign-in
//!
//! Besides the static team tokens, the server is its own OAuth authorization server, found
//! the way MCP clients find one: `/mcp` without a valid token answers 401 with
//! `WWW-Authenticate: Bearer resource_metadata="…"`; `/.well-known/oauth-protected-resource`
//! and `/.well-known/oauth-authorization-server` describe it; `/register` registers clients
//! (loopback redirects only); `/authorize` consents automatically and redirects back with a
//! code for the team named by its `team` parameter (default: the first team); `/token`
//! exchanges codes (PKCE S256 checked) and refresh tokens (rotated). An expired access token
//! still opens a session, and every tool call then answers `Error: 401 Unauthorized`.
#![forbid(unsafe_code)]

use std::path::PathBuf;

pub mod chat_completions;
pub mod cli;
pub mod model;

mod demo;
mod mcp;
mod oauth;
mod offline;
mod replay;
mod server;
mod state;
mod tools;

pub use demo::{NORMAL_TEAM_ID, SANDBOX_TEAM_ID};
pub use oauth::TokenCalls;
pub use server::SimHandle;
pub use tools::is_write;

/// What the simulator serves.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// One entry per team; the bearer token selects the team.
    pub teams: Vec<TeamConfig>,
    /// The simulator clock for replay templates and event windows; `None` means the real
    /// current time, read when the server starts (templates) and at each call (windows).
    pub now: Option<jiff::Timestamp>,
    /// Serve MCP as a server with sessions (`Mcp-Session-Id`) answering each POST on an event
    /// stream, as a long-lived MCP server does, instead of one JSON answer per POST and no
    /// session. Off for the demo and most tests: a cut exchange is then a lost answer.
    pub sessions: bool,
}

/// One team behind one bearer token.
#[derive(Debug, Clone)]
pub struct TeamConfig {
    /// Team name used by the control API and in call records.
    pub name: String,
    /// Bearer token that selects this team.
    pub token: String,
    /// Where the team's devices come from.
    pub source: TeamSource,
    /// The Epiphan user behind the token can only view: every write tool answers in-band
    /// `Error: 403 Forbidden` and changes nothing, as Epiphan answers a role without rights.
    pub view_only: bool,
}

/// Where a team's fleet comes from.
#[derive(Debug, Clone)]
pub enum TeamSource {
    /// A replay folder of `<tool>.json` files.
    Replay(PathBuf),
    /// The built-in demo fleet (about 30 rooms).
    DemoNormal,
    /// The built-in sandbox fleet (a few rooms, no device shared with [`TeamSource::DemoNormal`]).
    DemoSandbox,
}

impl SimConfig {
    /// The demo setup: team `normal` (token `normal-token`, a view-only user) with the large
    /// fleet and team `sandbox` (token `sandbox-token`) with the small one.
    pub fn demo() -> SimConfig {
        SimConfig {
            teams: vec![
                TeamConfig {
                    // The normal sign-in is a user whose role can only view, as it should be.
                    view_only: true,
                    name: "normal".to_string(),
                    token: "normal-token".to_string(),
                    source: TeamSource::DemoNormal,
                },
                TeamConfig {
                    view_only: false,
                    name: "sandbox".to_string(),
                    token: "sandbox-token".to_string(),
                    source: TeamSource::DemoSandbox,
                },
            ],
            now: None,
            sessions: false,
        }
    }
}

/// Why the simulator could not start.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// Binding or serving the socket failed.
    #[error("simulator I/O: {0}")]
    Io(#[from] std::io::Error),
    /// A replay folder could not be loaded.
    #[error("replay folder {path}: {problem}")]
    Replay {
        /// The folder or file.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// The configuration is inconsistent (duplicate team names or tokens, no team).
    #[error("simulator configuration: {0}")]
    Config(String),
}

/// An injected misbehaviour for one tool (all teams).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fault {
    /// Answer with an error result reading `Error: 500 Internal Server Error`; a write is not
    /// applied.
    Fail,
    /// Never answer (until the client gives up or cancels).
    Hang,
    /// Answer with an in-band error result reading `Error: 401 Unauthorized`; a write is not
    /// applied.
    Unauthorized,
    /// Apply the write, record it, then cut the HTTP connection without answering.
    DropAfterWrite,
    /// Answer with this text instead of JSON (a write is still applied).
    Text(String),
    /// Answer with an error result holding this text; a write is not applied.
    ErrorText(String),
    /// Answer as usual, this many milliseconds late (a slow device or a loaded server); the
    /// answer is computed after the wait.
    DelayMs(u64),
}

/// Ways the MCP transport can depart from the usual answer, to test clients against: they
/// apply to every MCP answer until changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Quirks {
    /// Answer `initialize` with this protocol version instead of the one negotiated.
    pub protocol_version: Option<String>,
    /// Send the `Content-Type` header in upper case (`TEXT/EVENT-STREAM`), as media types
    /// are case-insensitive.
    pub shout_content_type: bool,
}

/// One `tools/call` as the simulator saw it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CallRecord {
    /// Team selected by the bearer token.
    pub team: String,
    /// Tool name.
    pub tool: String,
    /// Arguments as sent (`{}` when none).
    pub arguments: serde_json::Value,
    /// Monotonic nanoseconds since the simulator started, when the call arrived.
    pub received_ns: u64,
    /// Monotonic nanoseconds since the simulator started, when the answer left; `None` when it
    /// was never answered (hang, dropped connection).
    pub answered_ns: Option<u64>,
}

/// Starts the MCP server on `127.0.0.1` (a free port), with `/mcp` and `/control/*`.
pub async fn start(config: SimConfig) -> Result<SimHandle, SimError> {
    server::start(config, 0).await
}

/// Like [`start`], on a chosen port (`0` picks a free one).
pub async fn start_on_port(config: SimConfig, port: u16) -> Result<SimHandle, SimError> {
    server::start(config, port).await
}
