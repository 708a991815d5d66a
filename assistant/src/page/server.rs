//! The HTTP side: the router, the guards every request passes, the security headers every
//! response carries, and sign-in.
//!
//! Guards, in order: the `Host` header must name this page (a DNS-rebinding page arrives with
//! its own host name), the body is capped before it is read, and a POST must come from this
//! origin — by `Origin`, or by `Sec-Fetch-Site: same-origin` when no `Origin` is sent.
//! `same-site` is not enough: another web app on another loopback port is same-site.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{ConnectInfo, Form, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::json;

use fleetwatch_protocol::wire::Description;

use super::csrf::TokenKey;
use super::i18n::Lang;
use super::secret::Secret;
use super::sessions::{self, Sessions};
use super::throttle::{Clock, Gate, Throttle};
use super::views::LoginView;
use super::{PageConfig, PageDeps, PageError, approve, passkeys};

/// Request bodies above this are refused (413) before they are read.
pub const MAX_BODY: usize = 4096;
/// Requests handled at once; more wait for a slot.
const MAX_CONCURRENT: usize = 64;

/// The security policy of every response: forms post to this page, and to the confirm page
/// (the hand-off of an approval to the passkey), nowhere else.
pub fn csp(confirm_origin: &str) -> String {
    format!(
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
         connect-src 'self'; form-action 'self' {confirm_origin}; frame-ancestors 'none'; \
         base-uri 'none'"
    )
}

const COUNTDOWN_JS: &str = include_str!("../../templates/static/countdown.js");
const TAB_JS: &str = include_str!("../../templates/static/tab.js");
const SUBMIT_JS: &str = include_str!("../../templates/static/submit.js");
const FOLLOW_JS: &str = include_str!("../../templates/static/follow.js");
const PAGE_CSS: &str = include_str!("../../templates/static/page.css");

/// Shared state of a running page.
pub struct App {
    pub(crate) port: u16,
    pub(crate) secret: Secret,
    pub(crate) sessions: Mutex<Sessions>,
    pub(crate) throttle: Mutex<Throttle>,
    pub(crate) tokens: TokenKey,
    pub(crate) deps: PageDeps,
    pub(crate) clock: Arc<dyn Clock>,
    /// The state folder, where the operator's grants are read for every card.
    pub(crate) state_dir: std::path::PathBuf,
    /// The confirm page's origin.
    pub(crate) confirm_origin: String,
    request_timeout: Duration,
    slots: tokio::sync::Semaphore,
    /// The describe behind the card last shown, per proposal, reused for [`CARD_REUSE`].
    shown: tokio::sync::Mutex<std::collections::HashMap<u64, (std::time::Instant, Description)>>,
    /// Refusals the burst rule holds, per kind, proposal and reason ([`audit_refusal`]).
    refusals: Mutex<std::collections::HashMap<String, HeldRefusal>>,
}

/// Refusals of one kind, proposal and reason since the last row written for them.
struct HeldRefusal {
    written: std::time::Instant,
    held: u64,
    kind: String,
    proposal: Option<u64>,
    last: serde_json::Value,
}

/// How often one kind of refusal is written per proposal and reason.
const REFUSAL_BURST: Duration = Duration::from_secs(1);

/// How long a card's describe is reused for showing it again: reloads do not each make the
/// executor read Epiphan. Approving always describes afresh.
const CARD_REUSE: Duration = Duration::from_secs(5);

impl App {
    pub(crate) fn new(
        port: u16,
        secret: Secret,
        config: &PageConfig,
        deps: PageDeps,
    ) -> Result<App, PageError> {
        Ok(App {
            port,
            secret,
            sessions: Mutex::new(Sessions::new()),
            throttle: Mutex::new(Throttle::new()),
            tokens: TokenKey::generate().map_err(PageError::Secret)?,
            deps,
            clock: config.clock.clone(),
            state_dir: config.state_dir.clone(),
            confirm_origin: config.confirm_origin.clone(),
            request_timeout: config.request_timeout,
            slots: tokio::sync::Semaphore::new(MAX_CONCURRENT),
            shown: tokio::sync::Mutex::default(),
            refusals: Mutex::default(),
        })
    }

    /// The card for `proposal` to show, from a describe at most [`CARD_REUSE`] old (the lock
    /// is held while describing, so requests that arrive together share one describe).
    pub(crate) async fn shown_card(
        &self,
        lang: super::i18n::Lang,
        proposal: &crate::store::Proposal,
    ) -> super::card::Card {
        let mut shown = self.shown.lock().await;
        shown.retain(|_, (at, _)| at.elapsed() < CARD_REUSE);
        let described = match shown.get(&proposal.id) {
            Some((_, described)) => Ok(described.clone()),
            None => {
                let described = self
                    .deps
                    .executor
                    .describe(&proposal.tool, &proposal.arguments)
                    .await;
                if let Ok(d) = &described {
                    shown.insert(proposal.id, (std::time::Instant::now(), d.clone()));
                }
                described
            }
        };
        drop(shown);
        self.card_from(lang, proposal, &described)
    }

    /// The card for `proposal` from a fresh describe, held to the operator's grants as they
    /// are now: what the page shows and what it checks again before consuming an approval.
    pub(crate) async fn fresh_card(
        &self,
        lang: super::i18n::Lang,
        proposal: &crate::store::Proposal,
    ) -> super::card::Card {
        let described = self
            .deps
            .executor
            .describe(&proposal.tool, &proposal.arguments)
            .await;
        self.card_from(lang, proposal, &described)
    }

    fn card_from(
        &self,
        lang: super::i18n::Lang,
        proposal: &crate::store::Proposal,
        described: &Result<Description, crate::executor_client::ExecutorError>,
    ) -> super::card::Card {
        let mut card = super::card::build(lang, proposal, described, &self.deps.policy);
        super::card::hold_grants(
            &mut card,
            lang,
            &self.deps.policy,
            &crate::grants::Grants::load(&self.state_dir),
        );
        card
    }

    /// The live session named by the request's cookie.
    pub(crate) fn session(&self, headers: &HeaderMap) -> Option<String> {
        let now = self.clock.now();
        let sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .filter_map(sessions::from_cookie_header)
            .find(|id| sessions.valid(id, now))
            .map(str::to_owned)
    }

    /// `localhost`, `127.0.0.1` or `[::1]` with this page's port: the names of the two
    /// loopback addresses it listens on, and nothing a foreign page could be served under.
    fn host_ok(&self, host: &str) -> bool {
        host == format!("127.0.0.1:{}", self.port)
            || host == format!("[::1]:{}", self.port)
            || host.eq_ignore_ascii_case(&format!("localhost:{}", self.port))
    }

    fn origin_ok(&self, origin: &str) -> bool {
        origin
            .strip_prefix("http://")
            .is_some_and(|host| self.host_ok(host))
    }
}

/// The page's language for a request.
pub fn lang_of(headers: &HeaderMap) -> Lang {
    Lang::from_accept_language(
        headers
            .get(header::ACCEPT_LANGUAGE)
            .and_then(|v| v.to_str().ok()),
    )
}

/// Renders a template, or a plain 500 if rendering failed (never a half page).
pub fn html(status: StatusCode, view: &impl askama::Template) -> Response {
    match view.render() {
        Ok(body) => (
            status,
            [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
            body,
        )
            .into_response(),
        Err(e) => {
            tracing::warn!("approval page template failed: {e}");
            plain(
                StatusCode::INTERNAL_SERVER_ERROR,
                "The page could not be rendered.",
            )
        }
    }
}

/// A short plain-text answer (guards; no template needed, nothing to escape).
pub fn plain(status: StatusCode, text: &'static str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        text,
    )
        .into_response()
}

/// The router with every guard.
pub fn router(app: Arc<App>) -> Router {
    Router::new()
        // A view is shown only to a POST that carries the tab's value (the guard checks it);
        // its GET answers a shell that asks for it so, and writes nothing.
        .route("/", get(|s, h| shell(s, h, "/")).post(approve::show))
        .route("/login", post(login))
        .route("/approve", post(approve::approve))
        .route("/confirm", post(approve::confirm))
        .route("/confirmed", post(approve::confirmed))
        .route("/deny", post(approve::deny))
        .route("/deny-all", post(approve::deny_all))
        .route("/waiting", post(approve::waiting))
        .route("/receipt", post(approve::receipt))
        .route(
            "/passkeys",
            get(|s, h| shell(s, h, "/passkeys")).post(passkeys::show),
        )
        .route("/static/countdown.js", get(|| asset(JS, COUNTDOWN_JS)))
        .route("/static/tab.js", get(|| asset(JS, TAB_JS)))
        .route("/static/submit.js", get(|| asset(JS, SUBMIT_JS)))
        .route("/static/follow.js", get(|| asset(JS, FOLLOW_JS)))
        .route("/static/page.css", get(|| asset(CSS, PAGE_CSS)))
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(app.clone(), guard))
        .with_state(app)
}

/// `GET` of a view: the sign-in form without a session, else the shell that asks for the view
/// by POST with this tab's value. Nothing is read, written or audited.
async fn shell(State(app): State<Arc<App>>, headers: HeaderMap, action: &'static str) -> Response {
    let t = lang_of(&headers);
    match app.session(&headers) {
        None => html(
            StatusCode::OK,
            &LoginView {
                t,
                messages: Vec::new(),
            },
        ),
        Some(_) => html(StatusCode::OK, &super::views::ShellView { t, action }),
    }
}

const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";

/// One of the page's own scripts or its style sheet, compiled into the binary.
async fn asset(content_type: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type)], body).into_response()
}

async fn not_found() -> Response {
    plain(StatusCode::NOT_FOUND, "Not found.")
}

fn set_security_headers(headers: &mut HeaderMap, confirm_origin: &str) {
    if let Ok(value) = HeaderValue::from_str(&csp(confirm_origin)) {
        headers.insert(header::CONTENT_SECURITY_POLICY, value);
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    // The hand-off page sets its own (`strict-origin`), so the confirm page learns which
    // origin sent the tab; every other response sends no referrer at all.
    if !headers.contains_key(header::REFERRER_POLICY) {
        headers.insert(
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        );
    }
}

/// Every request passes here; every response leaves with the security headers.
async fn guard(State(app): State<Arc<App>>, request: Request, next: Next) -> Response {
    let mut response = match app.slots.acquire().await {
        Ok(_slot) => {
            match tokio::time::timeout(app.request_timeout, checked(&app, request, next)).await {
                Ok(response) => response,
                Err(_) => plain(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "The request took too long and was stopped.",
                ),
            }
        }
        Err(_) => plain(StatusCode::SERVICE_UNAVAILABLE, "The page is stopping."),
    };
    set_security_headers(response.headers_mut(), &app.confirm_origin);
    response
}

async fn checked(app: &App, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    if !host.is_some_and(|h| app.host_ok(h)) {
        return plain(
            StatusCode::FORBIDDEN,
            "Forbidden: this page answers only to localhost, 127.0.0.1 or [::1] on its own port.",
        );
    }
    // An absolute-form request line names its own authority; it must agree with Host.
    if let Some(authority) = request.uri().authority()
        && !app.host_ok(authority.as_str())
    {
        return plain(StatusCode::FORBIDDEN, "Forbidden: wrong authority.");
    }
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY as u64) {
        return plain(
            StatusCode::PAYLOAD_TOO_LARGE,
            "The request body is too large.",
        );
    }
    // The assertion comes back from the confirm page's form: from that origin exactly, bound to
    // this session's approval by the return token (the tab's value stays in the tab).
    let from_confirm = request.uri().path() == "/confirmed";
    if from_confirm
        && headers.get(header::ORIGIN).and_then(|v| v.to_str().ok())
            != Some(app.confirm_origin.as_str())
    {
        return plain(
            StatusCode::FORBIDDEN,
            "Forbidden: only the confirm page returns an approval here.",
        );
    }
    if request.method() == Method::POST && !from_confirm && !same_origin(app, headers) {
        return plain(
            StatusCode::FORBIDDEN,
            "Forbidden: a form on this page must be sent from this page.",
        );
    }
    // Read the body here, capped, so no handler can be made to read more (a chunked body has
    // no length to check up front).
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(bytes) => bytes,
        Err(_) => {
            return plain(
                StatusCode::PAYLOAD_TOO_LARGE,
                "The request body is too large.",
            );
        }
    };
    // Every POST but the sign-in changes something: it must come from the tab that signed in
    // (see `sessions`), which a cookie alone cannot prove.
    if parts.method == Method::POST
        && parts.uri.path() != "/login"
        && parts.uri.path() != "/confirmed"
        && !same_tab(app, &parts.headers, &bytes)
    {
        audit_refusal(
            app,
            "page_tab_refused",
            None,
            &json!({"path": parts.uri.path()}),
        );
        // The sign-in form, so this tab (a second one, say) can bind a session of its own.
        let lang = lang_of(&parts.headers);
        return html(
            StatusCode::FORBIDDEN,
            &LoginView {
                t: lang,
                messages: vec![lang.t("login.other_tab").to_owned()],
            },
        );
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// The form's `tab` field is the value the request's session was bound to at sign-in.
fn same_tab(app: &App, headers: &HeaderMap, body: &[u8]) -> bool {
    let Some(session) = app.session(headers) else {
        return false;
    };
    let tabs: Vec<String> = form_urlencoded::parse(body)
        .filter(|(k, _)| k == "tab")
        .map(|(_, v)| v.into_owned())
        .collect();
    // Exactly one: two values would leave it to the reader which one counts.
    let [tab] = tabs.as_slice() else {
        return false;
    };
    app.sessions
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .tab_matches(&session, tab)
}

/// A POST is same-origin when every origin signal present says so and at least one is present.
///
/// `Origin: null` carries no origin at all: browsers send it for this page's own forms because
/// the page's `Referrer-Policy: no-referrer` also hides the origin of POST navigations. Such a
/// request then stands or falls on `Sec-Fetch-Site`, which the browser sets and a page cannot.
fn same_origin(app: &App, headers: &HeaderMap) -> bool {
    let origin = headers
        .get(header::ORIGIN)
        .map(|v| v.to_str().unwrap_or(""))
        .filter(|o| *o != "null");
    let fetch_site = headers
        .get("sec-fetch-site")
        .map(|v| v.to_str().unwrap_or(""));
    if origin.is_none() && fetch_site.is_none() {
        return false;
    }
    origin.is_none_or(|o| app.origin_ok(o))
        && fetch_site.is_none_or(|s| s.eq_ignore_ascii_case("same-origin"))
}

#[derive(Deserialize)]
struct LoginForm {
    #[serde(default)]
    secret: String,
    /// The signing-in tab's value (`static/tab.js`), which every later form must carry.
    #[serde(default)]
    tab: String,
}

async fn login(
    State(app): State<Arc<App>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Form(form): Form<LoginForm>,
) -> Response {
    let lang = lang_of(&headers);
    let now = app.clock.now();
    let ip = peer.ip();
    let gate = app
        .throttle
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .gate(ip, now);
    if let Gate::Wait(wait) = gate {
        // Not checked and not counted: waiting out the delay is the only way forward.
        return too_many(lang, wait);
    }
    if super::secret::matches(&app.secret, &form.secret) {
        app.throttle
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .success(ip);
        // The right secret from a page whose script did not run: no session, since none of its
        // forms could carry the tab's value.
        if !sessions::is_tab_value(&form.tab) {
            return html(
                StatusCode::BAD_REQUEST,
                &LoginView {
                    t: lang,
                    messages: vec![lang.t("login.no_tab").to_owned()],
                },
            );
        }
        let id = match app
            .sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .create(now, &form.tab)
        {
            Ok(id) => id,
            Err(_) => {
                return plain(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "No session could be made.",
                );
            }
        };
        audit(
            &app,
            "page_login",
            &json!({"page_session": sessions::hex(&sessions::tag(&id))}),
        );
        let mut response = (StatusCode::SEE_OTHER, [(header::LOCATION, "/")]).into_response();
        if let Ok(cookie) = HeaderValue::from_str(&sessions::set_cookie(&id)) {
            response.headers_mut().insert(header::SET_COOKIE, cookie);
        }
        return response;
    }
    let wait = app
        .throttle
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .failure(ip, now);
    audit(
        &app,
        "page_login_failed",
        &json!({"wait_secs": wait.as_secs()}),
    );
    let mut messages = vec![lang.t("login.wrong").to_owned()];
    if !wait.is_zero() {
        messages.push(lang.f("login.wait", &[("secs", &wait.as_secs().to_string())]));
    }
    html(StatusCode::UNAUTHORIZED, &LoginView { t: lang, messages })
}

fn too_many(lang: Lang, wait: Duration) -> Response {
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    let mut response = html(
        StatusCode::TOO_MANY_REQUESTS,
        &LoginView {
            t: lang,
            messages: vec![lang.f("login.wait", &[("secs", &secs.to_string())])],
        },
    );
    if let Ok(value) = HeaderValue::from_str(&secs.to_string()) {
        response.headers_mut().insert(header::RETRY_AFTER, value);
    }
    response
}

/// Appends an audit row; a failure is logged, never shown (the decision itself is stored by
/// the store's own transactions).
pub(crate) fn audit(app: &App, kind: &str, detail: &serde_json::Value) {
    append_audit(app, kind, None, detail);
}

/// Audits a refusal the page made, like the executor's burst rule: at most one row a second
/// per kind, proposal and reason (`why` or `purpose` in the detail; a path or an approval ID
/// does not make a new one), so requests sent again and again cannot fill the disk. The ones in
/// between are held and counted: the next row written for them carries `"n": COUNT`, or
/// [`flush_refusals`] writes it once the second is over.
pub(crate) fn audit_refusal(
    app: &App,
    kind: &str,
    proposal: Option<u64>,
    detail: &serde_json::Value,
) {
    let reason = detail
        .get("why")
        .or_else(|| detail.get("purpose"))
        .and_then(serde_json::Value::as_str)
        .unwrap_or("");
    let key = format!("{kind} {proposal:?} {reason}");
    let now = std::time::Instant::now();
    let count = {
        let mut held = app.refusals.lock().unwrap_or_else(|p| p.into_inner());
        let count = match held.get_mut(&key) {
            Some(h) if now.duration_since(h.written) < REFUSAL_BURST => {
                h.held += 1;
                h.last = detail.clone();
                return;
            }
            Some(h) => std::mem::take(&mut h.held) + 1,
            None => 1,
        };
        held.insert(
            key,
            HeldRefusal {
                written: now,
                held: 0,
                kind: kind.to_owned(),
                proposal,
                last: detail.clone(),
            },
        );
        count
    };
    append_audit(app, kind, proposal, &counted(detail, count));
}

/// Writes the refusals held for a second or more (all of them when `all`, at a stop), and
/// forgets kinds quiet for a minute.
pub(crate) fn flush_refusals(app: &App, all: bool) {
    let due: Vec<(String, Option<u64>, serde_json::Value)> = {
        let mut held = app.refusals.lock().unwrap_or_else(|p| p.into_inner());
        let now = std::time::Instant::now();
        held.retain(|_, h| h.held > 0 || now.duration_since(h.written) < 60 * REFUSAL_BURST);
        held.values_mut()
            .filter(|h| h.held > 0 && (all || now.duration_since(h.written) >= REFUSAL_BURST))
            .map(|h| {
                h.written = now;
                let n = std::mem::take(&mut h.held);
                (h.kind.clone(), h.proposal, counted(&h.last, n))
            })
            .collect()
    };
    for (kind, proposal, detail) in due {
        append_audit(app, &kind, proposal, &detail);
    }
}

/// `detail` with `"n": count` when the row stands for more than one refusal.
fn counted(detail: &serde_json::Value, count: u64) -> serde_json::Value {
    let mut detail = detail.clone();
    if count > 1
        && let Some(map) = detail.as_object_mut()
    {
        map.insert("n".into(), json!(count));
    }
    detail
}

/// Appends an audit row about a proposal.
pub(crate) fn append_audit(
    app: &App,
    kind: &str,
    proposal: Option<u64>,
    detail: &serde_json::Value,
) {
    let result = match app.deps.store.lock() {
        Ok(mut store) => store
            .audit(kind, proposal, detail)
            .map_err(|e| e.to_string()),
        Err(_) => Err("store lock poisoned".to_owned()),
    };
    if let Err(e) = result {
        tracing::warn!("approval page audit ({kind}) failed: {e}");
    }
}
