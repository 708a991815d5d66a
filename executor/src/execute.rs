//! One `Execute`, top to bottom: the checks of [`crate::checks`] in order, the one write, and
//! the outcome recorded. Read this function to see everything that stands between a request
//! and a change.

use fleetwatch_protocol::wire::{ExecuteRequest, Outcome, OutcomeKind, Response};
use fleetwatch_protocol::{Refusal, hex};

use crate::audit::{self, Entry};
use crate::checks::{self, PeerChecked};
use crate::context::Context;
use crate::epiphan::WriteAnswer;
use crate::store::Final;

/// Runs an approved change, or refuses it saying which check failed.
pub async fn execute(ctx: &Context, peer: PeerChecked, request: ExecuteRequest) -> Response {
    // Before the nonce: a refusal here leaves no execution row, only an audit row.
    let uid = peer.uid();
    // Nothing in the database may be deleted, so at its budget nothing new is accepted: busy,
    // and the log says why (`doctor` says it from 90 %).
    let budget = u64::from(ctx.config.limits.audit_budget_mib) * 1024 * 1024;
    match ctx.store.size_bytes() {
        Ok(size) if size >= budget => {
            tracing::error!(
                size_mib = size / (1024 * 1024),
                budget_mib = ctx.config.limits.audit_budget_mib,
                "executor.db is at its audit budget (limits.audit_budget_mib): every approval is \
                 refused as busy until the budget is raised or the database is archived"
            );
            return refused_early(ctx, uid, Refusal::Busy, None, &request.assistant_chain_head);
        }
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "the database's size could not be read"),
    }
    let approvers = match ctx.approvers() {
        Ok(a) => a,
        Err(e) => {
            tracing::error!(error = %e, "the approver file does not load; every Execute is refused until it is fixed");
            return refused_early(
                ctx,
                uid,
                Refusal::Internal,
                None,
                &request.assistant_chain_head,
            );
        }
    };
    let verified = match checks::signature(&peer, &request.approval, &approvers.keys) {
        Ok(v) => v,
        Err(r) => return refused_early(ctx, uid, r, None, &request.assistant_chain_head),
    };
    let person = match checks::person(
        verified,
        &request.approval,
        &approvers.passkeys,
        &ctx.config.passkeys,
        &ctx.relying_party,
    ) {
        Ok(p) => p,
        Err(r) => return refused_early(ctx, uid, r, None, &request.assistant_chain_head),
    };
    // The origin the passkeys answered on must be held now by the configured owner alone: a
    // page anyone else serves there could have shown the person another change (DESIGN §9).
    if !request.approval.passkeys.is_empty() {
        let passkeys = &ctx.config.passkeys;
        if let Err(why) = crate::holder::check(&passkeys.origins, passkeys.origin_owner) {
            tracing::warn!(%why, owner = passkeys.origin_owner, "the confirm origin is not held by its owner");
            return refused_early(
                ctx,
                uid,
                Refusal::ConfirmOriginNotHeld,
                None,
                &request.assistant_chain_head,
            );
        }
    }
    let claims = match checks::claims(person, &ctx.policy) {
        Ok(c) => c,
        Err(r) => return refused_early(ctx, uid, r, None, &request.assistant_chain_head),
    };
    let now = (ctx.clock)().as_second();
    let id = claims.approval_id();
    let described = (
        hex::encode(&id),
        claims.tool().to_string(),
        claims.targets(),
        crate::store::proposal_detail(claims.proposal_id()),
    );
    let fresh = match checks::fresh(claims, now) {
        Ok(f) => f,
        Err(r) => {
            return refused_early(ctx, uid, r, Some(&described), &request.assistant_chain_head);
        }
    };
    let quorate = match checks::quorum(fresh, &ctx.config.passkeys, &ctx.policy) {
        Ok(q) => q,
        Err(r) => {
            return refused_early(ctx, uid, r, Some(&described), &request.assistant_chain_head);
        }
    };
    let quorate = match checks::not_frozen(quorate, &ctx.config.freeze, &ctx.policy, (ctx.clock)())
    {
        Ok(q) => q,
        Err(r) => {
            return refused_early(ctx, uid, r, Some(&described), &request.assistant_chain_head);
        }
    };
    let stored = match checks::nonce(
        quorate,
        &ctx.store,
        &request.assistant_chain_head,
        &request.approval,
        &approvers,
    ) {
        Ok(s) => s,
        Err(r) => {
            return refused_early(ctx, uid, r, Some(&described), &request.assistant_chain_head);
        }
    };

    // From here the nonce is spent: every path ends by closing the execution row.
    match checked_write(ctx, stored).await {
        Ok(answer) => finish(ctx, &id, answer),
        Err(refusal) => {
            if let Err(e) =
                ctx.store
                    .finish(&id, Final::Refused, refusal.code(), "", &Default::default())
            {
                tracing::error!(error = %e, "could not record a refusal; the execution stays in flight until restart");
            }
            Response::Refused(refusal)
        }
    }
}

async fn checked_write(ctx: &Context, stored: checks::NonceStored) -> Result<WriteAnswer, Refusal> {
    let policy_checked = checks::policy(stored, &ctx.policy)?;
    let fenced = checks::fence(policy_checked, &ctx.config.fence)?;
    let limited = checks::limits(fenced, &ctx.store, &ctx.config.limits, &ctx.policy)?;
    let epiphan = ctx.sandbox_session().await?;
    let result = async {
        let live = checks::live_state(limited, &epiphan, &ctx.config.fence).await?;
        let limits = &ctx.config.limits;
        let ticket = checks::last_reads(
            live,
            &epiphan,
            &ctx.policy,
            ctx.clock,
            limits.open_event_minutes,
        )
        .await?;
        // Nothing between the last read and the write: no I/O, no await.
        checks::write(ticket, &epiphan, ctx.config.write_timeout, ctx.clock).await
    }
    .await;
    epiphan.close().await;
    result
}

fn finish(ctx: &Context, id: &[u8; 16], answer: WriteAnswer) -> Response {
    let mut codes = std::collections::BTreeMap::new();
    let (state, kind, detail) = match answer {
        WriteAnswer::Done => (Final::Done, OutcomeKind::Done, ""),
        // Codes only: Epiphan's text never leaves Epiphan's answer (see `DeviceError`).
        WriteAnswer::Errors(map) => {
            codes = map
                .into_iter()
                .map(|(device, error)| (device, error.code().to_owned()))
                .collect();
            (Final::Error, OutcomeKind::Error(codes.clone()), "")
        }
        WriteAnswer::Unknown(why) => {
            let why = why.reason();
            tracing::warn!(why, "write outcome unknown; it will not be retried");
            (Final::Unknown, OutcomeKind::Unknown, why)
        }
    };
    match ctx.store.finish(id, state, "", detail, &codes) {
        Ok(chain_head) => Response::Executed(Outcome { kind, chain_head }),
        Err(e) => {
            // The write happened (or may have); the answer must still reach the operator. The
            // row stays in flight and becomes unknown at the next start.
            tracing::error!(error = %e, "could not record the outcome");
            let chain_head = ctx.store.head().unwrap_or(audit::GENESIS);
            Response::Executed(Outcome { kind, chain_head })
        }
    }
}

/// A refusal before the nonce, through the burst rule
/// ([`crate::store::Store::audit_refusal`], per kind, code and peer): nothing was spent, so the
/// same signed frame can come again and again. Until the claims are read it names no approval,
/// only the peer; after, the approval, its tool, targets and proposal.
fn refused_early(
    ctx: &Context,
    uid: u32,
    refusal: Refusal,
    described: Option<&(String, String, String, String)>,
    head: &[u8; 32],
) -> Response {
    let entry = match described {
        Some((approval_id, tool, targets, detail)) => Entry {
            kind: "refused",
            reason: refusal.code().to_string(),
            approval_id: approval_id.clone(),
            tool: tool.clone(),
            targets: targets.clone(),
            assistant_head: hex::encode(head),
            detail: detail.clone(),
        },
        // The head the request carried is the peer's to choose: not recorded unread.
        None => Entry {
            kind: "refused",
            reason: refusal.code().to_string(),
            detail: format!("uid={uid}"),
            ..Entry::default()
        },
    };
    let written = ctx.store.audit_refusal(entry, &format!("uid={uid}"));
    if let Err(e) = written {
        tracing::error!(error = %e, "could not audit a refusal");
    }
    Response::Refused(refusal)
}
