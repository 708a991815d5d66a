//! The HTTP side: bearer-token middleware in front of rmcp's streamable-HTTP service at `/mcp`,
//! the `/control/*` endpoint for other processes, and [`SimHandle`].

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Query, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures_util::StreamExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde::Deserialize;
use serde_json::json;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::mcp::{DropSwitch, SignInExpired, SimMcp, TeamName, ViewOnly};
use crate::oauth::{self, Bearer, OAuth, TokenCalls};
use crate::state::{Shared, TeamState};
use crate::{CallRecord, Fault, SimConfig, SimError, TeamSource, demo, replay, tools};

/// A running simulator. Cheap to clone; the server stops when the last clone is dropped or
/// [`SimHandle::shutdown`] is called.
#[derive(Clone)]
pub struct SimHandle {
    inner: Arc<HandleInner>,
}

struct HandleInner {
    shared: Arc<Shared>,
    addr: SocketAddr,
    stop: CancellationToken,
    task: Mutex<Option<JoinHandle<()>>>,
}

impl Drop for HandleInner {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl std::fmt::Debug for SimHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimHandle")
            .field("addr", &self.inner.addr)
            .finish_non_exhaustive()
    }
}

impl SimHandle {
    /// `http://127.0.0.1:PORT/mcp`.
    pub fn mcp_url(&self) -> String {
        format!("{}/mcp", self.base_url())
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.inner.addr)
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.inner.addr
    }

    /// The value the `x-control-token` header must carry on `/control/*`.
    pub fn control_token(&self) -> String {
        self.inner.shared.control_token.clone()
    }

    /// Every `tools/call`, all teams, in arrival order.
    pub fn calls(&self) -> Vec<CallRecord> {
        self.inner.shared.calls()
    }

    /// Only the calls of write tools.
    pub fn writes(&self) -> Vec<CallRecord> {
        self.calls()
            .into_iter()
            .filter(|c| tools::is_write(&c.tool))
            .collect()
    }

    /// Changes how the MCP transport answers, from the next request on.
    pub fn set_quirks(&self, quirks: crate::Quirks) {
        *self
            .inner
            .shared
            .quirks
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = quirks;
    }

    /// The `MCP-Protocol-Version` header of each DELETE that ended a session, in order.
    pub fn deletes(&self) -> Vec<Option<String>> {
        self.inner
            .shared
            .deletes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Makes `tool` misbehave for every team until [`SimHandle::clear_faults`].
    pub fn set_fault(&self, tool: &str, fault: Fault) {
        self.inner.shared.set_fault(tool, fault);
    }

    /// Forgets every MCP session, as a server does on restart or expiry: the next MCP request
    /// that is not an `initialize` is answered `404 Not Found` and reaches no tool (so no call
    /// is recorded); an `initialize` works as always.
    pub fn end_sessions(&self) {
        self.inner
            .shared
            .sessions_ended
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Removes every injected fault.
    pub fn clear_faults(&self) {
        self.inner.shared.clear_faults();
    }

    /// Flips one channel (`<master>-N`) as if someone pressed record on the device.
    pub fn set_recording(&self, team: &str, channel_id: &str, recording: bool) -> bool {
        let now = self.inner.shared.now();
        self.inner
            .shared
            .with_team(team, |t| {
                t.set_channel_recording(channel_id, recording, now)
            })
            .unwrap_or(false)
    }

    /// Moves the device's current-or-next event (creating one if it has none).
    pub fn move_event(
        &self,
        team: &str,
        device_id: &str,
        start: jiff::Timestamp,
        end: Option<jiff::Timestamp>,
    ) -> bool {
        self.inner
            .shared
            .with_team(team, |t| t.move_event(device_id, start, end))
            .unwrap_or(false)
    }

    /// Replaces the device's current-or-next event with `event` (`{id, title, start, end}`).
    pub fn set_event(&self, team: &str, device_id: &str, event: serde_json::Value) -> bool {
        self.inner
            .shared
            .with_team(team, |t| t.set_event(device_id, event))
            .unwrap_or(false)
    }

    /// Gives a device another name, as an administrator renaming it in Epiphan would.
    pub fn rename_device(&self, team: &str, device_id: &str, name: &str) -> bool {
        self.inner
            .shared
            .with_team(team, |t| match t.device_mut(device_id) {
                Some(device) => {
                    device["Name"] = serde_json::Value::String(name.to_owned());
                    true
                }
                None => false,
            })
            .unwrap_or(false)
    }

    /// Takes a device out of the team.
    pub fn remove_device(&self, team: &str, device_id: &str) -> bool {
        self.inner
            .shared
            .with_team(team, |t| t.remove_device(device_id))
            .unwrap_or(false)
    }

    /// Brings a device online or takes it offline.
    pub fn set_online(&self, team: &str, device_id: &str, online: bool) -> bool {
        let now = self.inner.shared.now();
        self.inner
            .shared
            .with_team(team, |t| t.set_online(device_id, online, now))
            .unwrap_or(false)
    }

    /// The team's device IDs (empty for an unknown team).
    pub fn team_devices(&self, team: &str) -> Vec<String> {
        self.inner
            .shared
            .with_team(team, |t| t.device_ids())
            .unwrap_or_default()
    }

    /// The team's stream destinations as `(id, name)` (empty for an unknown team).
    pub fn stream_endpoints(&self, team: &str) -> Vec<(String, String)> {
        self.inner
            .shared
            .with_team(team, |t| t.endpoint_ids())
            .unwrap_or_default()
    }

    /// The simulator clock.
    pub fn now(&self) -> jiff::Timestamp {
        self.inner.shared.now()
    }

    /// Makes the token endpoint refuse every refresh (400 `invalid_grant`) while `true`.
    pub fn refuse_refresh(&self, refuse: bool) {
        self.inner.shared.oauth.set_refuse_refresh(refuse);
    }

    /// Lifetime of access tokens issued from now on (default one hour; zero issues tokens
    /// that are already expired).
    pub fn set_token_lifetime(&self, lifetime: Duration) {
        self.inner.shared.oauth.set_lifetime(lifetime);
    }

    /// Makes the token endpoint answer 503 while `true` (a transient failure).
    pub fn set_token_endpoint_unavailable(&self, unavailable: bool) {
        self.inner.shared.oauth.set_unavailable(unavailable);
    }

    /// Delays every token-endpoint answer (widens races in rotation tests).
    pub fn set_token_delay(&self, delay: Duration) {
        self.inner.shared.oauth.set_delay(delay);
    }

    /// How many token requests arrived, by outcome.
    pub fn token_calls(&self) -> TokenCalls {
        self.inner.shared.oauth.calls()
    }

    /// Stops the server and waits (a few seconds at most) for it to finish.
    pub async fn shutdown(self) {
        self.inner.stop.cancel();
        let task = self
            .inner
            .task
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(task) = task {
            let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
        }
    }
}

fn random_hex(bytes: usize) -> Result<String, SimError> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).map_err(|e| SimError::Io(std::io::Error::other(e.to_string())))?;
    Ok(fleetwatch_protocol::hex::encode(&buf))
}

pub(crate) async fn start(config: SimConfig, port: u16) -> Result<SimHandle, SimError> {
    if config.teams.is_empty() {
        return Err(SimError::Config("no team configured".into()));
    }
    let load_now = config.now.unwrap_or_else(jiff::Timestamp::now);
    let mut tokens = BTreeMap::new();
    let mut teams = BTreeMap::new();
    for team in &config.teams {
        if team.token.is_empty() {
            return Err(SimError::Config(format!(
                "team {} has an empty token",
                team.name
            )));
        }
        if tokens
            .insert(team.token.clone(), team.name.clone())
            .is_some()
        {
            return Err(SimError::Config(format!(
                "two teams share the token of team {}",
                team.name
            )));
        }
        let state: TeamState = match &team.source {
            TeamSource::Replay(dir) => replay::load(dir, load_now)?,
            TeamSource::DemoNormal => demo::normal(load_now),
            TeamSource::DemoSandbox => demo::sandbox(load_now),
        };
        if teams.insert(team.name.clone(), state).is_some() {
            return Err(SimError::Config(format!(
                "team {} is named twice",
                team.name
            )));
        }
    }
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let addr = listener.local_addr()?;
    let team_names = config.teams.iter().map(|t| t.name.clone()).collect();
    let oauth = OAuth::new(format!("http://{addr}"), team_names);
    let view_only = config
        .teams
        .iter()
        .filter(|t| t.view_only)
        .map(|t| t.name.clone())
        .collect();
    let shared = Arc::new(Shared::new(
        config.now,
        tokens,
        view_only,
        teams,
        random_hex(16)?,
        oauth,
    ));
    let stop = CancellationToken::new();

    let handler = SimMcp {
        shared: shared.clone(),
        shutdown: stop.clone(),
    };
    // By default stateless with plain JSON answers: each call is one HTTP exchange, so
    // cutting that exchange (DropAfterWrite) is a lost answer the client cannot resume from a
    // stream. With `sessions`, rmcp's own session manager and event-stream answers.
    let served = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(config.sessions)
        .with_sse_keep_alive(None)
        .with_cancellation_token(stop.child_token());
    let mcp = if config.sessions {
        Router::new().fallback_service(StreamableHttpService::new(
            move || Ok(handler.clone()),
            Arc::new(LocalSessionManager::default()),
            served,
        ))
    } else {
        Router::new().fallback_service(StreamableHttpService::new(
            move || Ok(handler.clone()),
            Arc::new(NeverSessionManager::default()),
            served.with_json_response(true),
        ))
    };
    let mcp = mcp
        .layer(middleware::from_fn_with_state(shared.clone(), bearer_auth))
        .layer(middleware::from_fn_with_state(shared.clone(), transport));
    let control = Router::new()
        .route("/calls", get(control_calls))
        .route("/writes", get(control_writes))
        .route("/devices", get(control_devices))
        .route("/fault", post(control_fault))
        .route("/clear", post(control_clear))
        .route("/recording", post(control_recording))
        .route("/event", post(control_event))
        .route("/remove", post(control_remove))
        .route("/online", post(control_online))
        .route("/oauth", get(oauth::control_get).post(oauth::control_set))
        .layer(middleware::from_fn_with_state(shared.clone(), control_auth))
        .with_state(shared.clone());
    let sign_in = Router::new()
        .route(
            "/.well-known/oauth-protected-resource",
            get(oauth::protected_resource),
        )
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            get(oauth::protected_resource),
        )
        .route(
            "/.well-known/oauth-authorization-server",
            get(oauth::authorization_server),
        )
        .route("/register", post(oauth::register))
        .route("/authorize", get(oauth::authorize))
        .route("/token", post(oauth::token))
        .with_state(shared.clone());
    let app = Router::new()
        .nest_service("/mcp", mcp)
        .nest("/control", control)
        .merge(sign_in);

    let stop_signal = stop.clone();
    let task = tokio::spawn(async move {
        let served = axum::serve(listener, app)
            .with_graceful_shutdown(async move { stop_signal.cancelled().await })
            .await;
        if let Err(e) = served {
            tracing::warn!("simulator server stopped: {e}");
        }
    });
    Ok(SimHandle {
        inner: Arc::new(HandleInner {
            shared,
            addr,
            stop,
            task: Mutex::new(Some(task)),
        }),
    })
}

/// The bearer token of a request, if it has one.
fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let (scheme, token) = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then_some(token.trim())
}

/// Whether the holder of this token can only view: a view-only team's user, or an access
/// token granted without `write`.
fn view_only(shared: &Shared, headers: &HeaderMap, team: &str) -> bool {
    shared.view_only.contains(team)
        || bearer_token(headers).and_then(|t| shared.oauth.may_write(t)) == Some(false)
}

/// The team a bearer token selects: a configured static token, or an access token the
/// authorization server issued (valid, or expired — which the MCP side answers in-band).
fn bearer_team(shared: &Shared, headers: &HeaderMap) -> Bearer {
    let Some(token) = bearer_token(headers) else {
        return Bearer::Unknown;
    };
    match shared.tokens.get(token) {
        Some(team) => Bearer::Valid(team.clone()),
        None => shared.oauth.bearer(token),
    }
}

/// Maps the bearer token to a team (401 with the resource-metadata challenge otherwise) and
/// arms the connection cutter.
/// Records each DELETE's protocol version header, and applies the [`crate::Quirks`] set.
async fn transport(State(shared): State<Arc<Shared>>, request: Request, next: Next) -> Response {
    if request.method() == axum::http::Method::DELETE {
        let version = request
            .headers()
            .get("mcp-protocol-version")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        shared
            .deletes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(version);
    }
    let quirks = shared
        .quirks
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    let response = next.run(request).await;
    if quirks == crate::Quirks::default() {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let content_type = axum::http::header::CONTENT_TYPE;
    if quirks.shout_content_type
        && let Some(shouted) = parts
            .headers
            .get(&content_type)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| axum::http::HeaderValue::from_str(&v.to_ascii_uppercase()).ok())
    {
        parts.headers.insert(&content_type, shouted);
    }
    let Some(version) = quirks.protocol_version else {
        return Response::from_parts(parts, body);
    };
    // The answer as a whole (an initialize answer ends its stream), its version replaced.
    let Ok(bytes) = axum::body::to_bytes(body, 8 << 20).await else {
        return StatusCode::BAD_GATEWAY.into_response();
    };
    let text = String::from_utf8_lossy(&bytes);
    let key = "\"protocolVersion\":\"";
    let text = match text.find(key) {
        Some(at) => {
            let start = at + key.len();
            let end = text[start..].find('"').map_or(start, |n| start + n);
            format!("{}{version}{}", &text[..start], &text[end..])
        }
        None => text.into_owned(),
    };
    parts.headers.remove(axum::http::header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(text))
}

async fn bearer_auth(
    State(shared): State<Arc<Shared>>,
    mut request: Request,
    next: Next,
) -> Response {
    let (team, expired) = match bearer_team(&shared, request.headers()) {
        Bearer::Valid(team) => (team, false),
        // Like Epiphan, an expired sign-in still opens a session; each tool call then
        // answers `Error: 401 Unauthorized` inside its result.
        Bearer::Expired(team) => (team, true),
        Bearer::Unknown => {
            let challenge = format!(
                "Bearer resource_metadata=\"{}\"",
                shared.oauth.resource_metadata_url()
            );
            return (
                StatusCode::UNAUTHORIZED,
                [(axum::http::header::WWW_AUTHENTICATE, challenge)],
                "401 Unauthorized",
            )
                .into_response();
        }
    };
    if shared
        .sessions_ended
        .load(std::sync::atomic::Ordering::SeqCst)
    {
        // Only `initialize` opens a new session; anything else belonged to a forgotten one.
        let (parts, body) = request.into_parts();
        let Ok(bytes) = axum::body::to_bytes(body, 1 << 20).await else {
            return StatusCode::BAD_REQUEST.into_response();
        };
        let initialize = serde_json::from_slice::<serde_json::Value>(&bytes)
            .ok()
            .is_some_and(|v| v.get("method").and_then(|m| m.as_str()) == Some("initialize"));
        if !initialize {
            shared
                .sessions_ended
                .store(false, std::sync::atomic::Ordering::SeqCst);
            return (StatusCode::NOT_FOUND, "session not found").into_response();
        }
        request = Request::from_parts(parts, Body::from(bytes));
    }
    let cut = CancellationToken::new();
    if view_only(&shared, request.headers(), &team) {
        request.extensions_mut().insert(ViewOnly);
    }
    request.extensions_mut().insert(TeamName(team));
    if expired {
        request.extensions_mut().insert(SignInExpired);
    }
    request.extensions_mut().insert(DropSwitch(cut.clone()));
    let response = tokio::select! {
        response = next.run(request) => response,
        _ = cut.cancelled() => return severed(),
    };
    // A streamed answer may still be running when the switch fires; end its body in error.
    let (parts, body) = response.into_parts();
    let tail_cut = cut.clone();
    let stream = body
        .into_data_stream()
        .take_until(cut.cancelled_owned())
        .chain(
            futures_util::stream::once(async move { tail_cut.is_cancelled() }).filter_map(
                |was_cut| async move { was_cut.then(|| Err(axum::Error::new(connection_cut()))) },
            ),
        );
    Response::from_parts(parts, Body::from_stream(stream))
}

fn connection_cut() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::ConnectionAborted,
        "simulated lost connection",
    )
}

/// A response whose body fails at once: hyper aborts the connection instead of finishing it.
fn severed() -> Response {
    let stream = futures_util::stream::once(async {
        Err::<axum::body::Bytes, _>(axum::Error::new(connection_cut()))
    });
    Response::builder()
        .status(StatusCode::OK)
        .header(axum::http::header::CONTENT_TYPE, "application/json")
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

async fn control_auth(State(shared): State<Arc<Shared>>, request: Request, next: Next) -> Response {
    let given = request
        .headers()
        .get("x-control-token")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !constant_time_eq(given.as_bytes(), shared.control_token.as_bytes()) {
        return (StatusCode::UNAUTHORIZED, "control token required").into_response();
    }
    next.run(request).await
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn outcome(ok: bool, what: &str) -> Response {
    if ok {
        axum::Json(json!({"ok": true})).into_response()
    } else {
        (
            StatusCode::NOT_FOUND,
            axum::Json(json!({"ok": false, "error": format!("{what} not found")})),
        )
            .into_response()
    }
}

async fn control_calls(State(shared): State<Arc<Shared>>) -> Response {
    axum::Json(shared.calls()).into_response()
}

async fn control_writes(State(shared): State<Arc<Shared>>) -> Response {
    let writes: Vec<CallRecord> = shared
        .calls()
        .into_iter()
        .filter(|c| tools::is_write(&c.tool))
        .collect();
    axum::Json(writes).into_response()
}

#[derive(Deserialize)]
struct TeamQuery {
    team: String,
}

async fn control_devices(
    State(shared): State<Arc<Shared>>,
    Query(q): Query<TeamQuery>,
) -> Response {
    match shared.with_team(&q.team, |t| t.device_ids()) {
        Some(ids) => axum::Json(ids).into_response(),
        None => outcome(false, "team"),
    }
}

#[derive(Deserialize)]
struct FaultBody {
    tool: String,
    fault: Fault,
}

async fn control_fault(
    State(shared): State<Arc<Shared>>,
    axum::Json(body): axum::Json<FaultBody>,
) -> Response {
    shared.set_fault(&body.tool, body.fault);
    outcome(true, "")
}

async fn control_clear(State(shared): State<Arc<Shared>>) -> Response {
    shared.clear_faults();
    outcome(true, "")
}

#[derive(Deserialize)]
struct RecordingBody {
    team: String,
    channel_id: String,
    recording: bool,
}

async fn control_recording(
    State(shared): State<Arc<Shared>>,
    axum::Json(body): axum::Json<RecordingBody>,
) -> Response {
    let now = shared.now();
    let ok = shared
        .with_team(&body.team, |t| {
            t.set_channel_recording(&body.channel_id, body.recording, now)
        })
        .unwrap_or(false);
    outcome(ok, "team or channel")
}

#[derive(Deserialize)]
struct EventBody {
    team: String,
    device_id: String,
    start: jiff::Timestamp,
    end: Option<jiff::Timestamp>,
}

async fn control_event(
    State(shared): State<Arc<Shared>>,
    axum::Json(body): axum::Json<EventBody>,
) -> Response {
    let ok = shared
        .with_team(&body.team, |t| {
            t.move_event(&body.device_id, body.start, body.end)
        })
        .unwrap_or(false);
    outcome(ok, "team or device")
}

#[derive(Deserialize)]
struct DeviceBody {
    team: String,
    device_id: String,
}

async fn control_remove(
    State(shared): State<Arc<Shared>>,
    axum::Json(body): axum::Json<DeviceBody>,
) -> Response {
    let ok = shared
        .with_team(&body.team, |t| t.remove_device(&body.device_id))
        .unwrap_or(false);
    outcome(ok, "team or device")
}

#[derive(Deserialize)]
struct OnlineBody {
    team: String,
    device_id: String,
    online: bool,
}

async fn control_online(
    State(shared): State<Arc<Shared>>,
    axum::Json(body): axum::Json<OnlineBody>,
) -> Response {
    let now = shared.now();
    let ok = shared
        .with_team(&body.team, |t| {
            t.set_online(&body.device_id, body.online, now)
        })
        .unwrap_or(false);
    outcome(ok, "team or device")
}
