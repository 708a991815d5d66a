//! Showing a card and acting on it: approve, deny, deny all. There is deliberately no
//! "approve all". With a person required, Approve hands the tab to the confirm page
//! (`fleetwatch-confirm serve`), which names a disruptive change's rooms on its passkey
//! button; in the trial mode, with nobody to ask, a disruptive change gets a second step here
//! that names them.
//!
//! An approval runs in this order, and stops at the first failure with nothing run:
//! session and form token → the proposal is still pending → the approval row is this
//! session's, unused and unexpired → a fresh describe rebuilds the card and it is still
//! approvable and identical to the one shown → (a person required: the confirm page and its
//! passkey; else, disruptive: this page's Confirm step, with its own token) → the
//! one-statement consume → the proposal moves to approved (so two approval rows
//! for one proposal cannot both run) → claims from the card's binding, signed → `Execute`.
//! From the recheck on, the steps are witness values in `steps`, each built only by the step
//! before it.

use std::sync::Arc;

use axum::extract::{Form, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use fleetwatch_protocol::claims::MAX_LIFETIME_SECS;
use fleetwatch_protocol::passkey::PasskeyAssertion;
use fleetwatch_protocol::wire::StatusReport;
use serde::Deserialize;
use serde_json::json;

use super::card;
use super::csrf::Purpose;
use super::i18n::Lang;
use super::pace;
use super::server::{App, append_audit, audit_refusal, html, lang_of};
use super::sessions::{self, hex};
use super::steps;
use super::views::{
    ApproveForm, CardView, ConfirmView, EmptyView, HandoffView, LoginView, MessageView, PasskeyAsk,
};
use crate::proposals::{MAX_PENDING, MAX_PER_HOUR};
use crate::store::{self, Status};

/// An approval row lives this long (database clock).
pub const APPROVAL_LIFETIME_SECS: i64 = MAX_LIFETIME_SECS;
/// After this many approvals in one browser session the page says so.
pub const FATIGUE_APPROVALS: u32 = 5;

/// The approval row ID and the card digest, bound into approve and confirm tokens.
fn approval_extra(approval: &str, digest: &str) -> String {
    format!("{approval}:{digest}")
}

fn message(
    status: StatusCode,
    lang: Lang,
    class: &'static str,
    heading: String,
    lines: Vec<String>,
    details: Vec<String>,
) -> Response {
    html(
        status,
        &MessageView {
            t: lang,
            class,
            heading,
            lines,
            details,
            receipt: None,
        },
    )
}

pub(super) fn conflict(lang: Lang, lines: Vec<String>, details: Vec<String>) -> Response {
    message(
        StatusCode::CONFLICT,
        lang,
        "conflict",
        lang.t("conflict.heading").to_owned(),
        lines,
        details,
    )
}

fn forbidden(lang: Lang) -> Response {
    message(
        StatusCode::FORBIDDEN,
        lang,
        "forbidden",
        lang.t("conflict.heading").to_owned(),
        vec!["Forbidden: sign in again and use the form on the page.".to_owned()],
        Vec::new(),
    )
}

pub(super) fn store_trouble(lang: Lang) -> Response {
    message(
        StatusCode::INTERNAL_SERVER_ERROR,
        lang,
        "conflict",
        lang.t("conflict.heading").to_owned(),
        vec![lang.t("why.store").to_owned()],
        Vec::new(),
    )
}

fn random_id() -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    Some(hex(&bytes))
}

/// The executor's `Status`, asked once per page; `None` when it does not answer (then the page
/// asks for no passkey and approving fails at the executor, which decides).
async fn executor_status(app: &App) -> Option<StatusReport> {
    app.deps.executor.status().await.ok()
}

use crate::pending::passkeys_needed;

/// The assertion request for fixed claims, or `None` when they cannot be built.
fn passkey_ask(binding: &card::Binding, fixed: &store::Fixed) -> Option<PasskeyAsk> {
    let bytes = steps::fixed_claims_bytes(binding, fixed)?;
    Some(PasskeyAsk {
        challenge: fleetwatch_protocol::passkey::challenge_base64url(&bytes),
    })
}

/// "Approved by Ana, waiting for a second person" (or for `n` more).
fn waiting_line(lang: Lang, names: &[String], needed: usize) -> String {
    let more = needed.saturating_sub(names.len());
    let names = names
        .iter()
        .map(|n| card::show_text(n, card::MAX_NAME_CHARS))
        .collect::<Vec<_>>()
        .join(", ");
    if more <= 1 {
        lang.f("card.waiting", &[("names", &names)])
    } else {
        lang.f(
            "card.waiting_more",
            &[("names", &names), ("n", &more.to_string())],
        )
    }
}

fn notices(app: &App, lang: Lang, session: &str) -> Result<Vec<String>, ()> {
    let mut out = Vec::new();
    let store = app.deps.store.lock().map_err(|_| ())?;
    let pending = store.pending_count().map_err(|_| ())?;
    if pending >= MAX_PENDING {
        out.push(lang.f("notice.queue_full", &[("n", &pending.to_string())]));
    }
    let hourly = store
        .non_denied_last_hour(store::now_secs())
        .map_err(|_| ())?;
    if hourly >= MAX_PER_HOUR {
        out.push(lang.f("notice.hourly", &[("n", &hourly.to_string())]));
    }
    drop(store);
    let approvals = app
        .sessions
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .approvals(session);
    if approvals >= FATIGUE_APPROVALS {
        out.push(lang.f("notice.fatigue", &[("n", &approvals.to_string())]));
    }
    Ok(out)
}

/// The header's pace line for this session, and the slow-down notice when it decides too
/// fast. The rows of the window and as long again before it are read: a card may have been
/// shown a while before the decision.
fn pace_words(app: &App, lang: Lang, session: &str) -> Result<(String, Option<String>), ()> {
    let now = store::now_secs();
    let rows = {
        let store = app.deps.store.lock().map_err(|_| ())?;
        store
            .audit_rows_since(now.saturating_sub(2 * pace::WINDOW_SECS))
            .map_err(|_| ())?
    };
    let tag = hex(&sessions::tag(session));
    Ok(pace::pace(&rows, &tag, now).words(lang))
}

/// `GET /`: the sign-in form, or the oldest pending proposal's card.
pub async fn show(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    let lang = lang_of(&headers);
    let Some(session) = app.session(&headers) else {
        return html(
            StatusCode::OK,
            &LoginView {
                t: lang,
                messages: Vec::new(),
            },
        );
    };
    let pending = {
        let Ok(mut store) = app.deps.store.lock() else {
            return store_trouble(lang);
        };
        let _ = store.expire_due(store::now_secs());
        match store.pending() {
            Ok(p) => p,
            Err(_) => return store_trouble(lang),
        }
    };
    let Ok(mut notices) = notices(&app, lang, &session) else {
        return store_trouble(lang);
    };
    let Ok((pace, slow_down)) = pace_words(&app, lang, &session) else {
        return store_trouble(lang);
    };
    notices.extend(slow_down);
    let status = executor_status(&app).await;
    if status.as_ref().is_some_and(|s| s.trial) {
        notices.push(lang.t("notice.trial").to_owned());
    } else if status.as_ref().is_some_and(|s| s.passkeys_enrolled == 0) {
        notices.push(lang.t("notice.unbound").to_owned());
    } else if status
        .as_ref()
        .is_some_and(|s| s.confirm_origin_not_held.is_some())
    {
        notices.push(lang.t("notice.origin_not_held").to_owned());
    }
    for frozen in status.iter().flat_map(|s| &s.freeze).filter(|f| f.in_force) {
        notices.push(card::frozen_words(lang, frozen, jiff::Timestamp::now()));
    }
    let Some(first) = pending.first().cloned() else {
        return html(
            StatusCode::OK,
            &EmptyView {
                t: lang,
                notices,
                pace,
                follow: super::views::Follow::new(lang, None, &[], false),
            },
        );
    };
    let mut card = app.shown_card(lang, &first).await;
    if let Some(status) = &status {
        card::hold_limits(&mut card, lang, &status.limits, jiff::Timestamp::now());
    }
    let needed = passkeys_needed(status.as_ref(), &first.tool, card.disruptive);
    if let Some(status) = &status {
        card::who_may_approve(&mut card, lang, &super::passkeys::enrolled(status), needed);
    }
    let digest = card.binding.digest();
    let tag = hex(&sessions::tag(&session));
    let waiting = {
        let Ok(store) = app.deps.store.lock() else {
            return store_trouble(lang);
        };
        store.waiting(first.id).ok().flatten()
    };

    let approve = if card.approvable() {
        let Some(approval) = random_id() else {
            return store_trouble(lang);
        };
        // While the proposal waits for more passkeys, this row lives no longer than the claims
        // the first approval fixed.
        let lifetime = waiting.as_ref().map_or(APPROVAL_LIFETIME_SECS, |w| {
            (w.fixed.expires_at - w.db_now).clamp(0, APPROVAL_LIFETIME_SECS)
        });
        {
            let Ok(mut store) = app.deps.store.lock() else {
                return store_trouble(lang);
            };
            if store
                .create_approval(&approval, first.id, &tag, lifetime)
                .is_err()
            {
                return store_trouble(lang);
            }
        }
        let Some(fixed) = steps::fixed_claims(&app, first.id, &approval, &session) else {
            return store_trouble(lang);
        };
        let db_now = waiting.as_ref().map_or_else(
            || {
                app.deps
                    .store
                    .lock()
                    .ok()
                    .and_then(|s| s.approval(&approval).ok().flatten())
                    .map_or(fixed.expires_at - APPROVAL_LIFETIME_SECS, |a| a.db_now)
            },
            |w| w.db_now,
        );
        let (remaining, expires_at) = (fixed.expires_at - db_now, fixed.expires_at);
        // With a person required, Approve hands the tab to the confirm page, calm or
        // disruptive: the rooms are named there, once, from the signed claims.
        let passkey = if needed > 0 {
            let Some(ask) = passkey_ask(&card.binding, &fixed) else {
                return store_trouble(lang);
            };
            Some(ask)
        } else {
            None
        };
        let time = jiff::Timestamp::from_second(expires_at)
            .map(|t| t.strftime("%H:%M:%S").to_string())
            .unwrap_or_default();
        let minutes = (remaining.max(0) + 59) / 60;
        Some(ApproveForm {
            token: app.tokens.make(
                Purpose::Approve,
                &session,
                first.id,
                &approval_extra(&approval, &digest),
            ),
            expires_text: lang.f(
                "card.expires",
                &[("minutes", &minutes.to_string()), ("time", &time)],
            ),
            approval,
            digest,
            remaining,
            passkey,
        })
    } else {
        None
    };
    append_audit(
        &app,
        "page_card_shown",
        Some(first.id),
        &json!({
            "approval_id": approve.as_ref().map(|a| a.approval.clone()),
            "deny_only": card.deny_only.len(),
            "page_session": tag,
        }),
    );
    let more = pending.len().saturating_sub(1);
    let view = CardView {
        t: lang,
        notices,
        pace,
        title: lang.f("title.waiting", &[("n", &pending.len().to_string())]),
        heading: lang.f("card.heading", &[("id", &first.id.to_string())]),
        asked: asked_line(lang, &first),
        more: (more > 0).then(|| lang.f("card.more", &[("n", &more.to_string())])),
        deny_token: app.tokens.make(Purpose::Deny, &session, first.id, ""),
        deny_all_token: app.tokens.make(Purpose::DenyAll, &session, first.id, ""),
        follow: super::views::Follow::new(
            lang,
            Some(first.id),
            &pending.iter().map(|p| p.id).collect::<Vec<_>>(),
            waiting
                .as_ref()
                .is_some_and(|w| w.live() && !w.names.is_empty()),
        ),
        waiting: waiting
            .filter(|w| w.live() && !w.names.is_empty())
            .map(|w| waiting_line(lang, &w.names, needed.max(2))),
        approve,
        card,
    };
    html(StatusCode::OK, &view)
}

/// `POST /waiting`: what waits now, for an open page to follow without a reload: the pending
/// proposals' numbers, oldest first, and those waiting for a second person. Numbers only,
/// behind the session and the tab's value like every form (the middleware checks both).
pub async fn waiting(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    if app.session(&headers).is_none() {
        return super::server::plain(StatusCode::FORBIDDEN, "Sign in first.");
    }
    let listed = {
        let Ok(mut store) = app.deps.store.lock() else {
            return super::server::plain(StatusCode::SERVICE_UNAVAILABLE, "The store is busy.");
        };
        let _ = store.expire_due(store::now_secs());
        store.pending().map(|pending| {
            let waiting: Vec<u64> = pending
                .iter()
                .filter(|p| {
                    store
                        .waiting(p.id)
                        .ok()
                        .flatten()
                        .is_some_and(|w| w.live() && !w.names.is_empty())
                })
                .map(|p| p.id)
                .collect();
            (pending.iter().map(|p| p.id).collect::<Vec<u64>>(), waiting)
        })
    };
    match listed {
        Ok((pending, waiting)) => (
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            json!({"pending": pending, "waiting": waiting}).to_string(),
        )
            .into_response(),
        Err(_) => super::server::plain(StatusCode::SERVICE_UNAVAILABLE, "The store is busy."),
    }
}

/// Who asked for the proposal and when it expires if nobody decides (its whole lifetime,
/// not the five minutes an approval lasts).
fn asked_line(lang: Lang, p: &store::Proposal) -> String {
    let now = jiff::Timestamp::now();
    let expires = jiff::Timestamp::from_second(p.expires_at).unwrap_or(now);
    let words = match lang {
        Lang::Es => fleetwatch_words::Lang::Es,
        Lang::En => fleetwatch_words::Lang::En,
    };
    lang.f(
        "card.asked",
        &[
            ("who", &crate::pending::asker_text(&p.asked_by, words)),
            ("at", &fleetwatch_words::time::clock(expires, now)),
            ("in", &fleetwatch_words::time::relative(expires, now, words)),
        ],
    )
}

/// The approve and confirm forms.
#[derive(Deserialize)]
pub struct ApproveFields {
    pub(super) proposal: u64,
    pub(super) approval: String,
    pub(super) card: String,
    token: String,
    /// An operator's passkey assertion over this approval's claims, filled in by
    /// `static/approve.js` (base64url each); empty when none was asked for or given.
    #[serde(default)]
    credential_id: String,
    #[serde(default)]
    authenticator_data: String,
    #[serde(default)]
    client_data_json: String,
    #[serde(default)]
    signature: String,
}

impl ApproveFields {
    /// The assertion the form carries: `Ok(None)` when it carries none, `Err` when a field is
    /// not base64url (nothing a browser sends).
    fn assertion(&self) -> Result<Option<PasskeyAssertion>, ()> {
        use base64::Engine as _;
        let fields = [
            &self.credential_id,
            &self.authenticator_data,
            &self.client_data_json,
            &self.signature,
        ];
        if fields.iter().all(|f| f.is_empty()) {
            return Ok(None);
        }
        let decode = |text: &str| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(text)
                .map_err(|_| ())
        };
        Ok(Some(PasskeyAssertion {
            credential_id: decode(&self.credential_id)?,
            authenticator_data: decode(&self.authenticator_data)?,
            client_data_json: decode(&self.client_data_json)?,
            signature: decode(&self.signature)?,
        }))
    }
}

/// The deny and deny-all forms.
#[derive(Deserialize)]
pub struct DenyFields {
    proposal: u64,
    token: String,
    /// The person's reason, optional; kept redacted and capped, and told to the chat that
    /// asked (as data for its model's next turn).
    #[serde(default)]
    reason: String,
}

/// `POST /approve`: a calm change runs; a disruptive one asks for confirmation first.
pub async fn approve(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    Form(form): Form<ApproveFields>,
) -> Response {
    decide_approval(app, headers, form, Purpose::Approve, None).await
}

/// `POST /confirm`: the second step of a disruptive change.
pub async fn confirm(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    Form(form): Form<ApproveFields>,
) -> Response {
    decide_approval(app, headers, form, Purpose::Confirm, None).await
}

/// What the confirm page's form sends back: the return token this page made, the claims bytes
/// the confirm page showed and the passkey signed, and the assertion.
#[derive(Deserialize)]
pub struct ConfirmedFields {
    #[serde(rename = "return")]
    return_token: String,
    claims: String,
    #[serde(default)]
    credential_id: String,
    #[serde(default)]
    authenticator_data: String,
    #[serde(default)]
    client_data_json: String,
    #[serde(default)]
    signature: String,
}

/// The return token of a hand-off: which step, proposal, approval row, card digest and form
/// token the answer belongs to. Only this page can make the form token, for this session.
fn return_token(purpose: Purpose, form: &ApproveFields) -> String {
    let step = if purpose == Purpose::Confirm {
        "c"
    } else {
        "a"
    };
    format!(
        "{step}-{}-{}-{}-{}",
        form.proposal, form.approval, form.card, form.token
    )
}

/// `POST /confirmed`: the confirm page's answer (DESIGN §9). The return token names the
/// approval waiting on this page; the claims must be exactly the ones it fixed; then the
/// deciding step runs as for a form of this page, with the confirm page's assertion.
pub async fn confirmed(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    Form(fields): Form<ConfirmedFields>,
) -> Response {
    use base64::Engine as _;
    let lang = lang_of(&headers);
    let parts: Vec<&str> = fields.return_token.split('-').collect();
    let parsed = match parts.as_slice() {
        [step, proposal, approval, card, token] => proposal.parse::<u64>().ok().and_then(|p| {
            let purpose = match *step {
                "a" => Purpose::Approve,
                "c" => Purpose::Confirm,
                _ => return None,
            };
            Some((purpose, p, *approval, *card, *token))
        }),
        _ => None,
    };
    let claims = base64::engine::general_purpose::STANDARD.decode(fields.claims.trim());
    let (Some((purpose, proposal, approval, card, token)), Ok(claims)) = (parsed, claims) else {
        audit_refusal(
            &app,
            "page_confirmed_refused",
            None,
            &json!({"why": "return"}),
        );
        return conflict(lang, vec![lang.t("why.return").to_owned()], Vec::new());
    };
    let form = ApproveFields {
        proposal,
        approval: approval.to_owned(),
        card: card.to_owned(),
        token: token.to_owned(),
        credential_id: fields.credential_id,
        authenticator_data: fields.authenticator_data,
        client_data_json: fields.client_data_json,
        signature: fields.signature,
    };
    decide_approval(app, headers, form, purpose, Some(claims)).await
}

/// The hand-off: the tab goes to the confirm page with the exact claims bytes this approval
/// fixed, and a return token; nothing is consumed here.
fn hand_off(
    app: &App,
    lang: Lang,
    session: &str,
    rechecked: &steps::Rechecked,
    form: &ApproveFields,
    purpose: Purpose,
) -> Response {
    use base64::Engine as _;
    let bytes = steps::fixed_claims(app, rechecked.proposal().id, &form.approval, session)
        .and_then(|fixed| steps::fixed_claims_bytes(&rechecked.card().binding, &fixed));
    let Some(bytes) = bytes else {
        return store_trouble(lang);
    };
    append_audit(
        app,
        "page_handed_off",
        Some(form.proposal),
        &json!({"approval_id": form.approval}),
    );
    let mut response = html(
        StatusCode::OK,
        &HandoffView {
            t: lang,
            action: format!("{}/", app.confirm_origin),
            claims: base64::engine::general_purpose::STANDARD.encode(bytes),
            return_token: return_token(purpose, form),
        },
    );
    // The confirm page accepts the tab only from this page's origin: say it (never a path).
    response.headers_mut().insert(
        axum::http::header::REFERRER_POLICY,
        axum::http::HeaderValue::from_static("strict-origin"),
    );
    response
}

async fn decide_approval(
    app: Arc<App>,
    headers: HeaderMap,
    form: ApproveFields,
    purpose: Purpose,
    returned_claims: Option<Vec<u8>>,
) -> Response {
    let lang = lang_of(&headers);
    let Some(session) = app.session(&headers) else {
        return forbidden(lang);
    };
    let extra = approval_extra(&form.approval, &form.card);
    if !app
        .tokens
        .check(&form.token, purpose, &session, form.proposal, &extra)
    {
        audit_refusal(
            &app,
            "page_token_refused",
            Some(form.proposal),
            &json!({"purpose": format!("{purpose:?}")}),
        );
        return forbidden(lang);
    }
    let rechecked = match steps::recheck(&app, lang, &session, &form).await {
        Ok(rechecked) => rechecked,
        Err(halt) => return *halt,
    };
    // An answer from the confirm page is for the claims this approval fixed, byte for byte.
    if let Some(returned) = &returned_claims {
        let expected = steps::fixed_claims(&app, form.proposal, &form.approval, &session)
            .and_then(|fixed| steps::fixed_claims_bytes(&rechecked.card().binding, &fixed));
        if expected.as_ref() != Some(returned) {
            refused_audit(&app, &form, "confirmed_other_claims");
            return conflict(
                lang,
                vec![lang.t("why.claims_differ").to_owned()],
                Vec::new(),
            );
        }
    }
    let status = executor_status(&app).await;
    let needed = passkeys_needed(
        status.as_ref(),
        &rechecked.proposal().tool,
        rechecked.card().disruptive,
    );
    let enrolled = status
        .as_ref()
        .map(super::passkeys::enrolled)
        .unwrap_or_default();
    // Without a person to ask (the trial mode) a disruptive change is confirmed here, naming
    // the rooms; with one, the confirm page names them on its passkey button instead.
    if purpose == Purpose::Approve && rechecked.card().disruptive && needed == 0 {
        let (proposal, card) = (rechecked.proposal(), rechecked.card());
        append_audit(
            &app,
            "page_confirm_shown",
            Some(proposal.id),
            &json!({"approval_id": form.approval}),
        );
        let rooms = card.rooms.join(", ");
        let view = ConfirmView {
            t: lang,
            text: lang.f("confirm.text", &[("rooms", &rooms)]),
            effects: card.effects.clone(),
            window: card.window.clone(),
            proposal: proposal.id,
            token: app
                .tokens
                .make(Purpose::Confirm, &session, proposal.id, &extra),
            deny_token: app.tokens.make(Purpose::Deny, &session, proposal.id, ""),
            confirm_label: lang.f("btn.confirm", &[("rooms", &rooms)]),
            approval: form.approval,
            digest: form.card,
        };
        return html(StatusCode::OK, &view);
    }
    // The deciding step: with passkeys enrolled on the executor it must carry one. Without it
    // nothing is consumed, so the person can try again (a cancelled or refused ceremony).
    let Ok(assertion) = form.assertion() else {
        return passkey_missing(&app, lang, &form);
    };
    if needed > 0 && assertion.is_none() {
        // The passkey is asked on the confirm page, which the assistant does not serve.
        return hand_off(&app, lang, &session, &rechecked, &form, purpose);
    }
    let (consumed, assertions) = match assertion {
        // More than one passkey: this one is kept until the count is met.
        Some(assertion) if needed > 1 => {
            match steps::gather(
                &app, lang, &session, rechecked, assertion, needed, &enrolled,
            ) {
                Ok(steps::Gather::Met(consumed, assertions)) => (*consumed, assertions),
                Ok(steps::Gather::Kept(names)) => {
                    return message(
                        StatusCode::OK,
                        lang,
                        "waiting",
                        lang.t("waiting.heading").to_owned(),
                        vec![
                            waiting_line(lang, &names, needed),
                            lang.t("waiting.text").to_owned(),
                        ],
                        Vec::new(),
                    );
                }
                Ok(steps::Gather::Again(names)) => {
                    return conflict(
                        lang,
                        vec![
                            lang.t("why.passkey_again").to_owned(),
                            waiting_line(lang, &names, needed),
                        ],
                        Vec::new(),
                    );
                }
                Err(halt) => return *halt,
            }
        }
        assertion => match steps::consume(&app, lang, &session, rechecked) {
            Ok(consumed) => (consumed, assertion.into_iter().collect()),
            Err(halt) => return *halt,
        },
    };
    let signed = match steps::sign(&app, lang, consumed, assertions) {
        Ok(signed) => signed,
        Err(halt) => return *halt,
    };
    render_outcome(lang, steps::execute(&app, signed).await)
}

/// The page for an approval that needed a passkey and came without a usable one: nothing was
/// consumed, the card can be approved again.
fn passkey_missing(app: &App, lang: Lang, form: &ApproveFields) -> Response {
    refused_audit(app, form, "passkey_missing");
    message(
        StatusCode::CONFLICT,
        lang,
        "conflict",
        lang.t("conflict.heading").to_owned(),
        vec![lang.t("why.passkey_missing").to_owned()],
        Vec::new(),
    )
}

pub(super) fn refused_audit(app: &App, form: &ApproveFields, why: &str) {
    audit_refusal(
        app,
        "page_approval_refused",
        Some(form.proposal),
        &json!({"approval_id": form.approval, "why": why}),
    );
}

/// What the page tells the person after `Execute`.
pub(super) enum Shown {
    /// Done, with the proposal and approval ID whose receipt the page offers.
    Done(Option<(u64, [u8; 16])>),
    /// Per-device errors: the device as shown, and the executor's code for what went wrong;
    /// with the receipt's proposal and approval ID (the executor signed this outcome too).
    Problem(Vec<(String, String)>, Option<(u64, [u8; 16])>),
    NothingRan(String),
    /// The executor's refusal, said in the page's language when shown.
    Refused(fleetwatch_protocol::Refusal),
    /// Whether it ran is not known; with the receipt's IDs when the executor itself said
    /// unknown (it signed that), without when its answer never came.
    Unknown(Option<(u64, [u8; 16])>),
}

/// Records an outcome reached before `Execute` was sent and shows it.
pub(super) fn finish(
    app: &App,
    lang: Lang,
    proposal_id: u64,
    approval: &str,
    shown: Shown,
) -> Response {
    record(app, proposal_id, approval, &shown, None, None);
    render_outcome(lang, shown)
}

/// Audits the outcome (with the executor's chain head when it answered) and moves the
/// proposal from `approved` to its final state.
pub(super) fn record(
    app: &App,
    proposal_id: u64,
    approval: &str,
    shown: &Shown,
    executor_head: Option<[u8; 32]>,
    refusal: Option<&str>,
) {
    let (status, word) = match shown {
        Shown::Done(_) => (Status::Executed, "done"),
        Shown::Problem(..) => (Status::Failed, "epiphan_error"),
        Shown::NothingRan(_) | Shown::Refused(_) => (Status::Refused, "nothing_ran"),
        Shown::Unknown(_) => (Status::Unknown, "unknown"),
    };
    let recorded = app.deps.store.lock().map(|mut store| {
        store.record_outcome(
            &store::Outcome {
                proposal_id,
                approval_id: approval,
                word,
                status,
                executor_head,
                refusal,
            },
            store::now_secs(),
        )
    });
    if !matches!(recorded, Ok(Ok(()))) {
        tracing::warn!("approval page: outcome of proposal {proposal_id} not recorded");
    }
}

fn render_outcome(lang: Lang, shown: Shown) -> Response {
    // Every outcome the executor signed has a receipt: done, failed or unknown.
    let receipt = match &shown {
        Shown::Done(Some((proposal, id)))
        | Shown::Problem(_, Some((proposal, id)))
        | Shown::Unknown(Some((proposal, id))) => Some((*proposal, hex(id))),
        _ => None,
    };
    let (class, key, lines, details) = match shown {
        Shown::Done(_) => ("done", "outcome.done", Vec::new(), Vec::new()),
        Shown::Problem(errors, _) => {
            let details = errors
                .into_iter()
                .map(|(device, code)| {
                    let words = match lang.t(&format!("device_error.{code}")) {
                        "?" => lang.t("device_error.other"),
                        known => known,
                    };
                    format!("{device}: {words}")
                })
                .collect();
            ("problem", "outcome.error", Vec::new(), details)
        }
        Shown::NothingRan(why) => ("refused", "outcome.refused", vec![why], Vec::new()),
        Shown::Refused(refusal) => {
            // The executor's sentences are English; in Spanish its reason in a few words.
            let code = refusal.code();
            let why = match fleetwatch_protocol::refusal::code_words(code, true) {
                Some(words) if lang == Lang::Es => {
                    let mut chars = words.chars();
                    let first = chars.next().map(|c| c.to_uppercase().to_string());
                    format!("{}{} ({code}).", first.unwrap_or_default(), chars.as_str())
                }
                _ => refusal.message(),
            };
            ("refused", "outcome.refused", vec![why], Vec::new())
        }
        Shown::Unknown(_) => ("unknown", "outcome.unknown", Vec::new(), Vec::new()),
    };
    let mut all = vec![lang.t(&format!("{key}.text")).to_owned()];
    all.extend(lines);
    html(
        StatusCode::OK,
        &MessageView {
            t: lang,
            class,
            heading: lang.t(&format!("{key}.heading")).to_owned(),
            lines: all,
            details,
            receipt,
        },
    )
}

#[derive(Debug, Deserialize)]
pub struct ReceiptFields {
    proposal: u64,
    approval: String,
}

/// `POST /receipt`: the receipt of a change that ran, from the executor (a read-only
/// request), as a JSON download. Read-only: nothing is written or decided.
pub async fn receipt(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    Form(form): Form<ReceiptFields>,
) -> Response {
    let lang = lang_of(&headers);
    if app.session(&headers).is_none() {
        return forbidden(lang);
    }
    let command = format!("fleetwatch-executor receipt {}", form.proposal);
    let Some(id) = fleetwatch_protocol::hex::decode_array::<16>(&form.approval) else {
        return conflict(
            lang,
            vec![lang.f("receipt.none", &[("command", &command)])],
            Vec::new(),
        );
    };
    match app.deps.executor.receipt(id).await {
        Ok(Some(json)) => (
            StatusCode::OK,
            [
                (header::CONTENT_TYPE, "application/json".to_owned()),
                (
                    header::CONTENT_DISPOSITION,
                    format!(
                        "attachment; filename=\"fleetwatch-receipt-{}.json\"",
                        form.proposal
                    ),
                ),
            ],
            json,
        )
            .into_response(),
        Ok(None) => conflict(
            lang,
            vec![lang.f("receipt.none", &[("command", &command)])],
            Vec::new(),
        ),
        Err(e) => conflict(
            lang,
            vec![
                lang.f("receipt.none", &[("command", &command)]),
                e.to_string(),
            ],
            Vec::new(),
        ),
    }
}

/// The session and the form token bound to `purpose` that both deny routes require.
fn denial_allowed(app: &App, headers: &HeaderMap, form: &DenyFields, purpose: Purpose) -> bool {
    app.session(headers).is_some_and(|session| {
        app.tokens
            .check(&form.token, purpose, &session, form.proposal, "")
    })
}

/// `POST /deny`: records a denial; nothing runs.
pub async fn deny(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    Form(form): Form<DenyFields>,
) -> Response {
    let lang = lang_of(&headers);
    if !denial_allowed(&app, &headers, &form, Purpose::Deny) {
        return forbidden(lang);
    }
    let decided = {
        let Ok(mut store) = app.deps.store.lock() else {
            return store_trouble(lang);
        };
        let tag = app.session(&headers).map(|s| hex(&sessions::tag(&s)));
        store.deny(
            form.proposal,
            "denied on the approval page",
            &form.reason,
            tag.as_deref(),
            store::now_secs(),
        )
    };
    match decided {
        Ok(true) => see_front(),
        Ok(false) => conflict(
            lang,
            vec![lang.f("why.decided", &[("id", &form.proposal.to_string())])],
            Vec::new(),
        ),
        Err(_) => store_trouble(lang),
    }
}

/// `POST /deny-all`: denies every pending proposal; nothing runs.
pub async fn deny_all(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    Form(form): Form<DenyFields>,
) -> Response {
    let lang = lang_of(&headers);
    if !denial_allowed(&app, &headers, &form, Purpose::DenyAll) {
        return forbidden(lang);
    }
    let denied = {
        let Ok(mut store) = app.deps.store.lock() else {
            return store_trouble(lang);
        };
        let Ok(pending) = store.pending() else {
            return store_trouble(lang);
        };
        let tag = app.session(&headers).map(|s| hex(&sessions::tag(&s)));
        let mut count = 0u64;
        for p in pending {
            if matches!(
                store.decide_in_session(
                    p.id,
                    Status::Denied,
                    "denied with deny all",
                    tag.as_deref(),
                    store::now_secs()
                ),
                Ok(true)
            ) {
                count += 1;
            }
        }
        let _ = store.audit("page_deny_all", None, &json!({"denied": count}));
        count
    };
    tracing::info!("approval page: denied {denied} pending proposal(s)");
    see_front()
}

fn see_front() -> Response {
    (StatusCode::SEE_OTHER, [(header::LOCATION, "/")]).into_response()
}
