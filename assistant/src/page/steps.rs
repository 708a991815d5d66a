//! The approve path as witness steps, in the order it must run:
//!
//! [`recheck`] → [`Rechecked`] → [`consume`] → [`Consumed`] → [`sign`] → [`Signed`] →
//! [`execute`].
//!
//! Each step takes the previous step's value by value and is the only code that can build the
//! next one: the fields are private to this module, and none of the values is `Clone`, `Copy`
//! or `Default`. So signing claims for an approval that was not consumed, or sending an
//! `Execute` that was not signed from a consumed approval, cannot be written outside this
//! module, and inside it reads top to bottom in the order DESIGN §2 gives. The executor's
//! check chain is built the same way.
//!
//! Every step stops at its first failure with a page that says why; from [`consume`] on, a
//! failure is also recorded as this approval's outcome, because the approval is spent.

use std::sync::Arc;

use axum::response::Response;
use fleetwatch_protocol::claims::{ApprovalClaims, CLAIMS_VERSION, SignedApproval, Slot};
use fleetwatch_protocol::passkey::PasskeyAssertion;
use fleetwatch_protocol::redact;
use fleetwatch_protocol::wire::{self, ExecuteRequest, OutcomeKind, Request};
use serde_json::json;

use super::approve::{
    ApproveFields, Shown, conflict, finish, record, refused_audit, store_trouble,
};
use super::card::{self, Binding, Card, MAX_NAME_CHARS, show_text};
use super::i18n::Lang;
use super::server::{App, append_audit};
use super::sessions::{self, hex};
use crate::executor_client::ExecutorError;
use crate::store::{self, Proposal, Status};

/// Why a step stopped: the page that says so (boxed: a response is large, and the happy path
/// should not carry its size).
pub(super) type Halt = Box<Response>;

/// The proposal is pending, the approval row is this session's, unused and unexpired, and a
/// fresh describe rebuilt the very card that was shown, still approvable.
pub(super) struct Rechecked {
    proposal: Proposal,
    card: Card,
    approval: String,
}

impl Rechecked {
    /// The stored proposal.
    pub(super) fn proposal(&self) -> &Proposal {
        &self.proposal
    }

    /// The card as rebuilt now.
    pub(super) fn card(&self) -> &Card {
        &self.card
    }
}

/// The approval row was consumed (the one statement that makes it single-use) and the
/// proposal moved to approved, under one lock; the database clock's times and this side's
/// audit chain head were read in the same breath.
pub(super) struct Consumed {
    binding: Binding,
    approval: String,
    approval_id: [u8; 16],
    page_session: [u8; 16],
    expires_at: i64,
    chain_head: [u8; 32],
}

/// The claims bytes an approval row stands for: the card's binding, the row's ID, the page
/// session, and the row's times on the database clock (issued, and five minutes later). Every
/// part is fixed when the card is shown, so the page can ask an operator's passkey to sign
/// these exact bytes before anything is consumed, and [`sign`] sends the same bytes after.
pub(super) fn claims_bytes(
    binding: &Binding,
    approval_id: [u8; 16],
    page_session: [u8; 16],
    expires_at: i64,
) -> Option<Vec<u8>> {
    ApprovalClaims {
        version: CLAIMS_VERSION,
        approval_id,
        proposal_id: binding.proposal_id,
        tool: binding.tool.clone(),
        arguments: binding.arguments.clone(),
        targets: binding.targets.clone(),
        fingerprint: binding.fingerprint.clone(),
        schema_version: binding.schema_version,
        policy_digest: binding.policy_digest,
        slot: Slot::Sandbox,
        approved_at: expires_at.checked_sub(super::approve::APPROVAL_LIFETIME_SECS)?,
        expires_at,
        page_session,
    }
    .encode()
    .ok()
}

/// The claims of a consumed approval, signed, in a request known to encode.
pub(super) struct Signed {
    proposal_id: u64,
    approval: String,
    signed: SignedApproval,
    chain_head: [u8; 32],
}

/// Re-reads everything the card showed; a 409 page says why it can no longer be approved.
pub(super) async fn recheck(
    app: &App,
    lang: Lang,
    session: &str,
    form: &ApproveFields,
) -> Result<Rechecked, Halt> {
    let tag = hex(&sessions::tag(session));
    let (proposal, row) = {
        let store = app
            .deps
            .store
            .lock()
            .map_err(|_| Box::new(store_trouble(lang)))?;
        let proposal = store
            .proposal(form.proposal)
            .map_err(|_| Box::new(store_trouble(lang)))?;
        let row = store
            .approval(&form.approval)
            .map_err(|_| Box::new(store_trouble(lang)))?;
        (proposal, row)
    };
    let id = form.proposal.to_string();
    let Some(proposal) = proposal.filter(|p| p.status == Status::Pending) else {
        refused_audit(app, form, "not_pending");
        return Err(Box::new(conflict(
            lang,
            vec![lang.f("why.decided", &[("id", &id)])],
            Vec::new(),
        )));
    };
    let row_ok = row.is_some_and(|a| {
        u64::try_from(a.proposal_id).ok() == Some(proposal.id)
            && a.session == tag
            && !a.used
            && a.live()
    });
    if !row_ok {
        refused_audit(app, form, "approval_used_or_expired");
        return Err(Box::new(conflict(
            lang,
            vec![lang.t("why.approval_used").to_owned()],
            Vec::new(),
        )));
    }
    let described = app
        .deps
        .executor
        .describe(&proposal.tool, &proposal.arguments)
        .await;
    let card = card::build(lang, &proposal, &described, &app.deps.policy);
    if !card.approvable() {
        refused_audit(app, form, "deny_only");
        return Err(Box::new(conflict(
            lang,
            vec![lang.t("why.deny_only").to_owned()],
            card.deny_only,
        )));
    }
    if card.binding.digest() != form.card {
        refused_audit(app, form, "card_changed");
        return Err(Box::new(conflict(
            lang,
            vec![lang.t("why.changed").to_owned()],
            Vec::new(),
        )));
    }
    Ok(Rechecked {
        proposal,
        card,
        approval: form.approval.clone(),
    })
}

/// Consumes the approval, then claims the proposal, under one lock: the consume is the single
/// statement that makes this approval row single-use; moving the proposal out of `pending`
/// makes a second approval row for the same proposal (another tab) unusable too.
pub(super) fn consume(
    app: &App,
    lang: Lang,
    session: &str,
    rechecked: Rechecked,
) -> Result<Consumed, Halt> {
    let Rechecked { card, approval, .. } = rechecked;
    let binding = card.binding;
    let proposal_id = binding.proposal_id;
    let page_session = sessions::tag(session);
    let Some(approval_id) = fleetwatch_protocol::hex::decode_array::<16>(&approval) else {
        return Err(Box::new(conflict(
            lang,
            vec![lang.t("why.approval_used").to_owned()],
            Vec::new(),
        )));
    };
    let refused = |why: &str| {
        append_audit(
            app,
            "page_approval_refused",
            Some(proposal_id),
            &json!({"approval_id": approval, "why": why}),
        );
    };
    let prepared = {
        let mut store = app
            .deps
            .store
            .lock()
            .map_err(|_| Box::new(store_trouble(lang)))?;
        match store.consume_approval(&approval) {
            Ok(true) => {}
            Ok(false) => {
                drop(store);
                refused("not_consumed");
                return Err(Box::new(conflict(
                    lang,
                    vec![lang.t("why.approval_used").to_owned()],
                    Vec::new(),
                )));
            }
            Err(_) => return Err(Box::new(store_trouble(lang))),
        }
        match store.decide(
            proposal_id,
            Status::Approved,
            "approved on the approval page",
            store::now_secs(),
        ) {
            Ok(true) => {}
            Ok(false) => {
                drop(store);
                refused("not_pending");
                let id = proposal_id.to_string();
                return Err(Box::new(conflict(
                    lang,
                    vec![lang.f("why.decided", &[("id", &id)])],
                    Vec::new(),
                )));
            }
            Err(_) => return Err(Box::new(store_trouble(lang))),
        }
        // The row's expiry, from the database clock as the row was made.
        let times = store
            .approval(&approval)
            .ok()
            .flatten()
            .map(|a| a.expires_at);
        let count = app
            .sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .count_approval(session);
        let _ = store.audit(
            "page_approval",
            Some(proposal_id),
            &json!({
                "approval_id": approval,
                "page_session": hex(&page_session),
                "session_approvals": count,
            }),
        );
        (times, store.chain_head())
    };
    let (Some(expires_at), Ok(chain_head)) = prepared else {
        let why = Shown::NothingRan(lang.t("why.store").to_owned());
        return Err(Box::new(finish(app, lang, proposal_id, &approval, why)));
    };
    Ok(Consumed {
        binding,
        approval,
        approval_id,
        page_session,
        expires_at,
        chain_head,
    })
}

/// Builds the claims from the card's binding ([`claims_bytes`]), signs the exact encoded bytes,
/// adds the operators' passkey assertions over the same bytes, and checks the request encodes
/// before anything is sent, so every later failure means "sent".
pub(super) fn sign(
    app: &App,
    lang: Lang,
    consumed: Consumed,
    passkeys: Vec<PasskeyAssertion>,
) -> Result<Signed, Halt> {
    let Consumed {
        binding,
        approval,
        approval_id,
        page_session,
        expires_at,
        chain_head,
    } = consumed;
    let proposal_id = binding.proposal_id;
    let nothing_ran = |approval: &str| {
        let why = Shown::NothingRan(lang.t("why.store").to_owned());
        finish(app, lang, proposal_id, approval, why)
    };
    let Some(bytes) = claims_bytes(&binding, approval_id, page_session, expires_at) else {
        return Err(Box::new(nothing_ran(&approval)));
    };
    let signed = app.deps.key.sign(bytes).with_passkeys(passkeys);
    let request = Request::Execute(ExecuteRequest {
        approval: signed.clone(),
        assistant_chain_head: chain_head,
    });
    if wire::encode_request(&request).is_err() {
        return Err(Box::new(nothing_ran(&approval)));
    }
    Ok(Signed {
        proposal_id,
        approval,
        signed,
        chain_head,
    })
}

/// Sends `Execute` once and records the outcome. The exchange runs on its own task: if this
/// request is cancelled (the browser goes away, the request deadline passes), the answer is
/// still received and recorded.
pub(super) async fn execute(app: &Arc<App>, signed: Signed) -> Shown {
    let Signed {
        proposal_id,
        approval,
        signed,
        chain_head,
    } = signed;
    append_audit(
        app,
        "page_execute_sent",
        Some(proposal_id),
        &json!({"approval_id": approval}),
    );
    let executor = app.deps.executor.clone();
    let worker_app = Arc::clone(app);
    let task = tokio::spawn(async move {
        let result = executor.execute(signed, chain_head).await;
        let executor_head = result.as_ref().ok().map(|outcome| outcome.chain_head);
        let shown = match result {
            Ok(outcome) => match outcome.kind {
                OutcomeKind::Done => Shown::Done,
                OutcomeKind::Error(errors) => Shown::Problem(
                    errors
                        .iter()
                        .map(|(device, error)| {
                            let text = redact::redact_text(error);
                            format!(
                                "{}: {}",
                                show_text(device, MAX_NAME_CHARS),
                                show_text(&text, 300)
                            )
                        })
                        .collect(),
                ),
                OutcomeKind::Unknown => Shown::Unknown,
            },
            Err(ExecutorError::Refused(refusal)) => Shown::NothingRan(refusal.message()),
            // The socket never opened: nothing was sent.
            Err(e @ ExecutorError::Unreachable { .. }) => Shown::NothingRan(e.to_string()),
            Err(ExecutorError::Timeout(_) | ExecutorError::Protocol(_)) => Shown::Unknown,
        };
        record(&worker_app, proposal_id, &approval, &shown, executor_head);
        shown
    });
    task.await.unwrap_or(Shown::Unknown)
}
