//! The simulator's authorization server, on the same loopback port as `/mcp`:
//! protected-resource and authorization-server metadata, dynamic client registration,
//! `/authorize` with automatic consent, and `/token` for codes (PKCE S256 checked) and
//! refresh tokens (rotated: a refresh token works once).
//!
//! Tests steer it through [`crate::SimHandle`] or `/control/oauth`: refuse refreshes, make the
//! token endpoint unavailable (503) or slow, shorten token lifetimes, and count token calls.
//!
//! Consent is automatic: `/authorize` redirects straight back with a code. The team the
//! tokens are for is the `team` query parameter (a team name), else the first configured team.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::Form;
use axum::extract::{Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::json;
use sha2::Digest as _;

use crate::state::Shared;

/// How many token requests the simulator saw, by outcome.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenCalls {
    /// `grant_type=authorization_code` requests that issued tokens.
    pub codes_exchanged: u32,
    /// `grant_type=refresh_token` requests that issued tokens (each one a rotation).
    pub refreshes: u32,
    /// Requests refused (400/401).
    pub refused: u32,
    /// Requests answered 503 because the endpoint was made unavailable.
    pub unavailable: u32,
}

impl TokenCalls {
    /// Every request to the token endpoint.
    pub fn total(&self) -> u32 {
        self.codes_exchanged + self.refreshes + self.refused + self.unavailable
    }
}

struct Client {
    redirect_uris: Vec<String>,
}

struct Code {
    client_id: String,
    redirect_uri: String,
    challenge: String,
    team: String,
    /// The scopes granted: those asked for that this server knows.
    scope: Vec<String>,
    issued: Instant,
}

struct Access {
    team: String,
    expires: Instant,
    /// Granted `write`: without it the token can only view.
    write: bool,
}

struct Refresh {
    team: String,
    client_id: String,
    scope: Vec<String>,
}

/// The scopes this authorization server lists; it grants only those asked for.
pub(crate) const SCOPES: [&str; 2] = ["read", "write"];

struct Inner {
    clients: BTreeMap<String, Client>,
    codes: BTreeMap<String, Code>,
    access: BTreeMap<String, Access>,
    refresh: BTreeMap<String, Refresh>,
    lifetime: Duration,
    refuse_refresh: bool,
    unavailable: bool,
    delay: Duration,
    calls: TokenCalls,
}

/// The authorization server's state.
pub(crate) struct OAuth {
    base: String,
    teams: Vec<String>,
    inner: Mutex<Inner>,
}

/// What an access token says about its holder.
pub(crate) enum Bearer {
    /// Issued and still valid: this team.
    Valid(String),
    /// Issued for this team, but expired.
    Expired(String),
    /// Not an issued token.
    Unknown,
}

fn random(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    // The simulator only runs in tests; a failed fill still yields distinct-enough values
    // through the counter the callers add.
    let _ = getrandom::fill(&mut buf);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&buf)
}

impl OAuth {
    pub fn new(base: String, teams: Vec<String>) -> OAuth {
        OAuth {
            base,
            teams,
            inner: Mutex::new(Inner {
                clients: BTreeMap::new(),
                codes: BTreeMap::new(),
                access: BTreeMap::new(),
                refresh: BTreeMap::new(),
                lifetime: Duration::from_secs(3600),
                refuse_refresh: false,
                unavailable: false,
                delay: Duration::ZERO,
                calls: TokenCalls::default(),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn resource(&self) -> String {
        format!("{}/mcp", self.base)
    }

    pub fn resource_metadata_url(&self) -> String {
        format!("{}/.well-known/oauth-protected-resource/mcp", self.base)
    }

    pub fn bearer(&self, token: &str) -> Bearer {
        match self.lock().access.get(token) {
            Some(a) if Instant::now() < a.expires => Bearer::Valid(a.team.clone()),
            Some(a) => Bearer::Expired(a.team.clone()),
            None => Bearer::Unknown,
        }
    }

    /// Whether an access token this server issued was granted `write`; `None` for a token it
    /// did not issue (a configured static token).
    pub fn may_write(&self, token: &str) -> Option<bool> {
        self.lock().access.get(token).map(|a| a.write)
    }

    pub fn set_refuse_refresh(&self, refuse: bool) {
        self.lock().refuse_refresh = refuse;
    }

    pub fn set_lifetime(&self, lifetime: Duration) {
        self.lock().lifetime = lifetime;
    }

    pub fn set_unavailable(&self, unavailable: bool) {
        self.lock().unavailable = unavailable;
    }

    pub fn set_delay(&self, delay: Duration) {
        self.lock().delay = delay;
    }

    pub fn calls(&self) -> TokenCalls {
        self.lock().calls.clone()
    }

    fn issue(
        inner: &mut Inner,
        team: &str,
        client_id: &str,
        scope: &[String],
    ) -> serde_json::Value {
        let access = format!("sim-at-{}", random(24));
        let refresh = format!("sim-rt-{}", random(24));
        let lifetime = inner.lifetime;
        inner.access.insert(
            access.clone(),
            Access {
                team: team.to_string(),
                expires: Instant::now() + lifetime,
                write: scope.iter().any(|s| s == "write"),
            },
        );
        inner.refresh.insert(
            refresh.clone(),
            Refresh {
                team: team.to_string(),
                client_id: client_id.to_string(),
                scope: scope.to_vec(),
            },
        );
        json!({
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": lifetime.as_secs(),
            "refresh_token": refresh,
            "scope": scope.join(" "),
        })
    }
}

fn is_loopback_redirect(uri: &str) -> bool {
    let Some(rest) = uri.strip_prefix("http://") else {
        return false;
    };
    let host_port = rest.split('/').next().unwrap_or_default();
    let host = match host_port.rsplit_once(':') {
        Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => host_port,
    };
    matches!(host, "127.0.0.1" | "localhost" | "[::1]")
}

fn oauth_error(status: StatusCode, error: &str) -> Response {
    (
        status,
        [(header::CACHE_CONTROL, "no-store")],
        axum::Json(json!({"error": error})),
    )
        .into_response()
}

fn text(status: StatusCode, body: &'static str) -> Response {
    (status, body).into_response()
}

pub(crate) async fn protected_resource(State(shared): State<Arc<Shared>>) -> Response {
    let o = &shared.oauth;
    axum::Json(json!({
        "resource": o.resource(),
        "authorization_servers": [o.base],
        "bearer_methods_supported": ["header"],
        "scopes_supported": SCOPES,
    }))
    .into_response()
}

pub(crate) async fn authorization_server(State(shared): State<Arc<Shared>>) -> Response {
    let base = &shared.oauth.base;
    axum::Json(json!({
        "issuer": base,
        "authorization_endpoint": format!("{base}/authorize"),
        "token_endpoint": format!("{base}/token"),
        "registration_endpoint": format!("{base}/register"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
        "scopes_supported": SCOPES,
    }))
    .into_response()
}

#[derive(Deserialize)]
pub(crate) struct Registration {
    #[serde(default)]
    redirect_uris: Vec<String>,
    #[serde(default)]
    client_name: Option<String>,
}

pub(crate) async fn register(
    State(shared): State<Arc<Shared>>,
    axum::Json(body): axum::Json<Registration>,
) -> Response {
    if body.redirect_uris.is_empty() || !body.redirect_uris.iter().all(|u| is_loopback_redirect(u))
    {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_redirect_uri");
    }
    let client_id = format!("sim-client-{}", random(12));
    shared.oauth.lock().clients.insert(
        client_id.clone(),
        Client {
            redirect_uris: body.redirect_uris.clone(),
        },
    );
    (
        StatusCode::CREATED,
        axum::Json(json!({
            "client_id": client_id,
            "client_name": body.client_name,
            "redirect_uris": body.redirect_uris,
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        })),
    )
        .into_response()
}

#[derive(Deserialize)]
pub(crate) struct AuthorizeQuery {
    response_type: Option<String>,
    client_id: Option<String>,
    redirect_uri: Option<String>,
    code_challenge: Option<String>,
    code_challenge_method: Option<String>,
    state: Option<String>,
    team: Option<String>,
    scope: Option<String>,
}

/// Automatic consent: checks the request, then redirects straight back with a code.
pub(crate) async fn authorize(
    State(shared): State<Arc<Shared>>,
    Query(q): Query<AuthorizeQuery>,
) -> Response {
    let o = &shared.oauth;
    let mut inner = o.lock();
    let Some(client_id) = q.client_id.filter(|c| inner.clients.contains_key(c)) else {
        return text(StatusCode::BAD_REQUEST, "unknown client_id\n");
    };
    let registered = inner
        .clients
        .get(&client_id)
        .map(|c| c.redirect_uris.clone())
        .unwrap_or_default();
    let Some(redirect_uri) = q
        .redirect_uri
        .filter(|r| is_loopback_redirect(r) && registered.contains(r))
    else {
        // Never redirect to an address the client did not register.
        return text(StatusCode::BAD_REQUEST, "redirect_uri not registered\n");
    };
    let back = |params: &[(&str, &str)]| {
        let mut url = format!("{redirect_uri}?");
        let mut form = form_urlencoded::Serializer::new(String::new());
        for (k, v) in params {
            form.append_pair(k, v);
        }
        url.push_str(&form.finish());
        (StatusCode::FOUND, [(header::LOCATION, url)]).into_response()
    };
    let state = q.state.unwrap_or_default();
    if q.response_type.as_deref() != Some("code") {
        return back(&[("error", "unsupported_response_type"), ("state", &state)]);
    }
    let challenge = q.code_challenge.unwrap_or_default();
    if q.code_challenge_method.as_deref() != Some("S256")
        || challenge.len() != 43
        || !challenge
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return back(&[("error", "invalid_request"), ("state", &state)]);
    }
    let team = match q.team {
        Some(t) if o.teams.contains(&t) => t,
        Some(_) => return back(&[("error", "access_denied"), ("state", &state)]),
        None => match o.teams.first() {
            Some(t) => t.clone(),
            None => return back(&[("error", "access_denied"), ("state", &state)]),
        },
    };
    // Only what was asked for, of what this server knows: nothing asked, nothing granted.
    let scope: Vec<String> = q
        .scope
        .unwrap_or_default()
        .split_whitespace()
        .filter(|s| SCOPES.contains(s))
        .map(str::to_owned)
        .collect();
    let code = format!("sim-code-{}", random(18));
    inner.codes.insert(
        code.clone(),
        Code {
            client_id,
            redirect_uri: redirect_uri.clone(),
            challenge,
            team,
            scope,
            issued: Instant::now(),
        },
    );
    drop(inner);
    back(&[("code", &code), ("state", &state)])
}

#[derive(Deserialize)]
pub(crate) struct TokenForm {
    grant_type: String,
    code: Option<String>,
    redirect_uri: Option<String>,
    client_id: Option<String>,
    code_verifier: Option<String>,
    refresh_token: Option<String>,
}

pub(crate) async fn token(
    State(shared): State<Arc<Shared>>,
    Form(form): Form<TokenForm>,
) -> Response {
    let o = &shared.oauth;
    let delay = o.lock().delay;
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    let mut inner = o.lock();
    if inner.unavailable {
        inner.calls.unavailable += 1;
        return text(
            StatusCode::SERVICE_UNAVAILABLE,
            "token endpoint unavailable\n",
        );
    }
    let outcome = match form.grant_type.as_str() {
        "authorization_code" => exchange(&mut inner, &form),
        "refresh_token" => refresh(&mut inner, &form),
        _ => Err((StatusCode::BAD_REQUEST, "unsupported_grant_type")),
    };
    match outcome {
        Ok(body) => (
            StatusCode::OK,
            [(header::CACHE_CONTROL, "no-store")],
            axum::Json(body),
        )
            .into_response(),
        Err((status, error)) => {
            inner.calls.refused += 1;
            oauth_error(status, error)
        }
    }
}

type Refusal = (StatusCode, &'static str);

fn exchange(inner: &mut Inner, form: &TokenForm) -> Result<serde_json::Value, Refusal> {
    let invalid = (StatusCode::BAD_REQUEST, "invalid_grant");
    // A code works once, whatever happens next.
    let code = form
        .code
        .as_ref()
        .and_then(|c| inner.codes.remove(c))
        .ok_or(invalid)?;
    if code.issued.elapsed() > Duration::from_secs(600)
        || form.client_id.as_deref() != Some(code.client_id.as_str())
        || form.redirect_uri.as_deref() != Some(code.redirect_uri.as_str())
    {
        return Err(invalid);
    }
    let verifier = form.code_verifier.as_deref().unwrap_or_default();
    let computed = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(sha2::Sha256::digest(verifier.as_bytes()));
    if verifier.len() < 43 || computed != code.challenge {
        return Err(invalid);
    }
    inner.calls.codes_exchanged += 1;
    Ok(OAuth::issue(
        inner,
        &code.team,
        &code.client_id,
        &code.scope,
    ))
}

fn refresh(inner: &mut Inner, form: &TokenForm) -> Result<serde_json::Value, Refusal> {
    if inner.refuse_refresh {
        return Err((StatusCode::BAD_REQUEST, "invalid_grant"));
    }
    let token = form.refresh_token.as_deref().unwrap_or_default();
    let Some(found) = inner.refresh.get(token) else {
        return Err((StatusCode::BAD_REQUEST, "invalid_grant"));
    };
    if form.client_id.as_deref() != Some(found.client_id.as_str()) {
        return Err((StatusCode::UNAUTHORIZED, "invalid_client"));
    }
    // Rotation: the presented refresh token is spent.
    let Some(old) = inner.refresh.remove(token) else {
        return Err((StatusCode::BAD_REQUEST, "invalid_grant"));
    };
    inner.calls.refreshes += 1;
    Ok(OAuth::issue(inner, &old.team, &old.client_id, &old.scope))
}

/// `POST /control/oauth`.
#[derive(Deserialize)]
pub(crate) struct ControlBody {
    refuse_refresh: Option<bool>,
    token_lifetime_secs: Option<u64>,
    token_endpoint_unavailable: Option<bool>,
    token_delay_ms: Option<u64>,
}

pub(crate) async fn control_set(
    State(shared): State<Arc<Shared>>,
    axum::Json(body): axum::Json<ControlBody>,
) -> Response {
    let o = &shared.oauth;
    if let Some(v) = body.refuse_refresh {
        o.set_refuse_refresh(v);
    }
    if let Some(v) = body.token_lifetime_secs {
        o.set_lifetime(Duration::from_secs(v));
    }
    if let Some(v) = body.token_endpoint_unavailable {
        o.set_unavailable(v);
    }
    if let Some(v) = body.token_delay_ms {
        o.set_delay(Duration::from_millis(v));
    }
    axum::Json(json!({"ok": true})).into_response()
}

/// `GET /control/oauth`: the token call counts.
pub(crate) async fn control_get(State(shared): State<Arc<Shared>>) -> Response {
    axum::Json(shared.oauth.calls()).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_redirects_only() {
        assert!(is_loopback_redirect("http://127.0.0.1:8765/callback"));
        assert!(is_loopback_redirect("http://localhost:1/callback"));
        assert!(is_loopback_redirect("http://[::1]:1/callback"));
        assert!(!is_loopback_redirect("https://127.0.0.1:1/callback"));
        assert!(!is_loopback_redirect(
            "http://127.0.0.1.evil.example/callback"
        ));
        assert!(!is_loopback_redirect("http://evil.example/callback"));
    }
}
