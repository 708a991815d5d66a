//! The approve path as witness steps, in the order it must run:
//!
//! [`recheck`] → [`Rechecked`] → [`consume`] → [`Consumed`] → [`sign`] → [`Signed`] →
//! [`execute`].
//!
//! When the executor needs more than one operator's passkey for the change, [`gather`] takes
//! the place of [`consume`]: it keeps each passkey's approval over the claims the first one
//! fixed, and only the approval that makes the count yields [`Consumed`], with every kept
//! assertion.
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
use fleetwatch_protocol::passkey::{self, Approvers, PasskeyAssertion, PasskeyError, RelyingParty};
use fleetwatch_protocol::wire::{self, ExecuteRequest, OutcomeKind, Request};
use serde_json::json;

use super::approve::{
    ApproveFields, Shown, conflict, finish, record, refused_audit, store_trouble,
};
use super::card::{Binding, Card, MAX_NAME_CHARS, show_text};
use super::i18n::Lang;
use super::server::{App, append_audit, audit_refusal};
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
        names: binding.names.clone(),
        fingerprint: binding.fingerprint.clone(),
        schema_version: binding.schema_version,
        policy_digest: binding.policy_digest,
        slot: Slot::Sandbox,
        approved_at: expires_at.checked_sub(super::approve::APPROVAL_LIFETIME_SECS)?,
        expires_at,
        page_session,
        asked_by: binding.asked_by.clone(),
    }
    .encode()
    .ok()
}

/// The claims an approval on this card signs: those the first passkey approval fixed when the
/// proposal waits for more, else this approval row's own.
pub(super) fn fixed_claims(
    app: &App,
    proposal_id: u64,
    approval: &str,
    session: &str,
) -> Option<store::Fixed> {
    let store = app.deps.store.lock().ok()?;
    if let Some(waiting) = store.waiting(proposal_id).ok()? {
        return Some(waiting.fixed);
    }
    let row = store.approval(approval).ok()??;
    Some(store::Fixed {
        approval_id: approval.to_owned(),
        session: hex(&sessions::tag(session)),
        expires_at: row.expires_at,
    })
}

/// [`claims_bytes`] for fixed claims.
pub(super) fn fixed_claims_bytes(binding: &Binding, fixed: &store::Fixed) -> Option<Vec<u8>> {
    let approval_id = fleetwatch_protocol::hex::decode_array::<16>(&fixed.approval_id)?;
    let page_session = fleetwatch_protocol::hex::decode_array::<16>(&fixed.session)?;
    claims_bytes(binding, approval_id, page_session, fixed.expires_at)
}

/// What one passkey approval did when the change needs more than one.
pub(super) enum Gather {
    /// Kept: the proposal waits for more. The names so far, oldest first.
    Kept(Vec<String>),
    /// That passkey had approved already; it counts once. The names so far.
    Again(Vec<String>),
    /// The count is met: the proposal is approved, with every kept assertion.
    Met(Box<Consumed>, Vec<PasskeyAssertion>),
}

/// Checks one operator's passkey approval on this page and keeps it (see [`Store::gather`]):
/// the assertion must be over the fixed claims and from a passkey enrolled on the executor (its
/// `Status` lists them, so the card can name who approved), checked with the protocol's own
/// verifier — the executor checks every one again. A refusal here spends nothing.
///
/// [`Store::gather`]: crate::store::Store::gather
pub(super) fn gather(
    app: &App,
    lang: Lang,
    session: &str,
    rechecked: Rechecked,
    assertion: PasskeyAssertion,
    needed: usize,
    approvers: &Approvers,
) -> Result<Gather, Halt> {
    let Rechecked {
        card,
        approval,
        proposal,
    } = rechecked;
    let binding = card.binding;
    let halt = |key: &str| Box::new(conflict(lang, vec![lang.t(key).to_owned()], Vec::new()));
    let refused = |why: &str| {
        audit_refusal(
            app,
            "page_approval_refused",
            Some(proposal.id),
            &json!({"approval_id": approval, "why": why}),
        );
    };
    let Some(fixed) = fixed_claims(app, proposal.id, &approval, session) else {
        return Err(halt("why.approval_used"));
    };
    let Some(bytes) = fixed_claims_bytes(&binding, &fixed) else {
        return Err(Box::new(store_trouble(lang)));
    };
    // Passkeys answer on the confirm page only (DESIGN §9), as the executor requires.
    let rp = RelyingParty::new(passkey::PRODUCTION_RP_ID, [app.confirm_origin.clone()]);
    let verified = match passkey::verify_assertion(&assertion, &bytes, approvers, &rp) {
        Ok(verified) => verified,
        Err(PasskeyError::UnknownCredential) => {
            refused("passkey_unknown");
            return Err(halt("why.passkey_unknown"));
        }
        Err(PasskeyError::ChallengeMismatch) => {
            refused("passkey_other_claims");
            return Err(halt("why.passkey_other"));
        }
        Err(e) => {
            refused("passkey_bad");
            return Err(Box::new(conflict(
                lang,
                vec![lang.f("why.passkey_bad", &[("why", &e.to_string())])],
                Vec::new(),
            )));
        }
    };
    let credential = {
        use base64::Engine as _;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(verified.credential_id())
    };
    let Ok(kept) = serde_json::to_string(&assertion) else {
        return Err(Box::new(store_trouble(lang)));
    };
    let tag = hex(&sessions::tag(session));
    let mut store = app
        .deps
        .store
        .lock()
        .map_err(|_| Box::new(store_trouble(lang)))?;
    let gathered = store
        .gather(
            proposal.id,
            &approval,
            &fixed,
            &store::NewSigner {
                credential_id: &credential,
                name: verified.name(),
                session: &tag,
                assertion: &kept,
            },
            needed,
            store::now_secs(),
        )
        .map_err(|_| Box::new(store_trouble(lang)))?;
    let chain_head = store.chain_head();
    drop(store);
    let id = proposal.id.to_string();
    match gathered {
        store::Gathered::Kept(names) => {
            app.sessions
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .count_approval(session);
            Ok(Gather::Kept(names))
        }
        store::Gathered::Again(names) => Ok(Gather::Again(names)),
        store::Gathered::Met { assertions, .. } => {
            app.sessions
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .count_approval(session);
            let assertions = assertions
                .iter()
                .map(|a| serde_json::from_str::<PasskeyAssertion>(a))
                .collect::<Result<Vec<_>, _>>();
            let ids = (
                fleetwatch_protocol::hex::decode_array::<16>(&fixed.approval_id),
                fleetwatch_protocol::hex::decode_array::<16>(&fixed.session),
            );
            let (Ok(assertions), Ok(chain_head), (Some(approval_id), Some(page_session))) =
                (assertions, chain_head, ids)
            else {
                let why = Shown::NothingRan(lang.t("why.store").to_owned());
                return Err(Box::new(finish(
                    app,
                    lang,
                    proposal.id,
                    &fixed.approval_id,
                    why,
                )));
            };
            Ok(Gather::Met(
                Box::new(Consumed {
                    binding,
                    approval: fixed.approval_id,
                    approval_id,
                    page_session,
                    expires_at: fixed.expires_at,
                    chain_head,
                }),
                assertions,
            ))
        }
        store::Gathered::RowSpent => {
            refused("approval_used_or_expired");
            Err(halt("why.approval_used"))
        }
        store::Gathered::NotPending => {
            refused("not_pending");
            Err(Box::new(conflict(
                lang,
                vec![lang.f("why.decided", &[("id", &id)])],
                Vec::new(),
            )))
        }
        store::Gathered::Expired => {
            refused("quorum_expired");
            Err(halt("why.quorum_expired"))
        }
        store::Gathered::OtherClaims => {
            refused("passkey_other_claims");
            Err(halt("why.passkey_other"))
        }
    }
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
    let card = app.fresh_card(lang, &proposal).await;
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
        audit_refusal(
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
    // The approval ID the executor keys this change's receipt by.
    let receipt = fleetwatch_protocol::claims::ApprovalClaims::decode(&signed.claims)
        .ok()
        .map(|c| c.approval_id);
    let executor = app.deps.executor.clone();
    let worker_app = Arc::clone(app);
    let task = tokio::spawn(async move {
        let result = executor.execute(signed, chain_head).await;
        let executor_head = result.as_ref().ok().map(|outcome| outcome.chain_head);
        let refusal = match &result {
            Err(ExecutorError::Refused(refusal)) => Some(refusal.code()),
            _ => None,
        };
        let ids = receipt.map(|id| (proposal_id, id));
        let shown = match result {
            Ok(outcome) => match outcome.kind {
                OutcomeKind::Done => Shown::Done(ids),
                OutcomeKind::Error(errors) => Shown::Problem(
                    errors
                        .iter()
                        .map(|(device, code)| {
                            // The executor returns a code per device, never Epiphan's text.
                            (show_text(device, MAX_NAME_CHARS), show_text(code, 40))
                        })
                        .collect(),
                    ids,
                ),
                OutcomeKind::Unknown => Shown::Unknown(ids),
            },
            Err(ExecutorError::Refused(refusal)) => Shown::Refused(refusal),
            // The socket never opened: nothing was sent.
            Err(e @ ExecutorError::Unreachable { .. }) => Shown::NothingRan(e.to_string()),
            Err(ExecutorError::Timeout(_) | ExecutorError::Protocol(_)) => Shown::Unknown(None),
        };
        record(
            &worker_app,
            proposal_id,
            &approval,
            &shown,
            executor_head,
            refusal,
        );
        shown
    });
    task.await.unwrap_or(Shown::Unknown(None))
}
