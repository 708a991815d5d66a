//! `propose_change`: from a model's tool call to a stored, pending proposal — or a refusal the
//! model sees, starting "Not proposed:", that says why. Nothing here changes the fleet; a person
//! approves each stored proposal on the page and the executor re-checks everything.
//!
//! Order matters: cheap local checks (switches, policy, grants, allowlist, fatigue limits)
//! come before the executor is asked, so a model looping on bad calls cannot load the
//! executor or Epiphan.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use fleetwatch_protocol::policy::Policy;
use fleetwatch_redact as redact;
use serde_json::Value;

use crate::config::Fence;
use crate::executor_client::{ExecutorClient, ExecutorError};
use crate::grants::Grants;
use crate::model::ProposeResult;
use crate::store::{self, NewProposal, Store};

/// At most this many proposals wait at once.
pub const MAX_PENDING: u64 = 3;
/// At most this many non-denied proposals per hour.
pub const MAX_PER_HOUR: u64 = 10;
pub use crate::store::DENIALS_TO_PAUSE;
/// The model's reason is cut to this many characters.
pub const MAX_REASON_CHARS: usize = 300;

/// Everything a proposal needs to be checked and stored.
pub struct Proposer {
    policy: Arc<Policy>,
    fence: Fence,
    proposing: bool,
    state_dir: PathBuf,
    store: Arc<Mutex<Store>>,
    executor: ExecutorClient,
}

fn refused(why: impl std::fmt::Display, invalid: bool) -> ProposeResult {
    ProposeResult {
        message: format!("Not proposed: {why}"),
        proposal_id: None,
        invalid,
    }
}

/// The same change already waits: nothing new is stored, and the model learns its number.
fn already_waiting(id: u64) -> ProposeResult {
    ProposeResult {
        message: format!(
            "Not proposed again: the same change already waits as proposal #{id} for a person to \
             approve it on the approval page. Nothing has changed yet."
        ),
        proposal_id: None,
        invalid: false,
    }
}

impl Proposer {
    /// `proposing` is the operator's `autonomy: propose`; the fence is checked separately so
    /// the refusal can say which is missing.
    pub fn new(
        policy: Arc<Policy>,
        fence: Fence,
        proposing: bool,
        state_dir: PathBuf,
        store: Arc<Mutex<Store>>,
        executor: ExecutorClient,
    ) -> Proposer {
        Proposer {
            policy,
            fence,
            proposing,
            state_dir,
            store,
            executor,
        }
    }

    /// The executor this proposer asks (the chat's `pending` asks it for the quorum).
    pub fn executor(&self) -> &ExecutorClient {
        &self.executor
    }

    /// Checks and stores one proposal, asked for by nobody known (see [`Proposer::propose_as`]).
    pub async fn propose(&self, tool: &str, arguments: Value, reason: &str) -> ProposeResult {
        self.propose_as(tool, arguments, reason, "").await
    }

    /// Checks and stores one proposal; `asked_by` is the chat peer's user name, kept with it.
    pub async fn propose_as(
        &self,
        tool: &str,
        arguments: Value,
        reason: &str,
        asked_by: &str,
    ) -> ProposeResult {
        if !self.proposing {
            return refused(
                "proposing is switched off (the operator's settings say read-only). Answer the \
                 question without proposing.",
                false,
            );
        }
        if !self.fence.configured() {
            return refused(
                "no write fence is configured (FLEETWATCH_WRITE_DEVICE_IDS or \
                 FLEETWATCH_WRITE_TEAM_ID), so no change can be proposed.",
                false,
            );
        }
        // The name comes from the model (and perhaps from data it read): never echoed.
        let Some(entry) = self.policy.propose_entry(tool) else {
            return refused("that tool cannot be proposed.", true);
        };
        let grants = match Grants::load(&self.state_dir) {
            Ok(grants) => grants,
            Err(e) => {
                tracing::warn!("grants unreadable: {e}");
                return refused("the operator's grants could not be read.", false);
            }
        };
        if !grants.is_open(&entry.category) {
            return refused(
                format!(
                    "the {} category is not granted; only the operator can open it.",
                    entry.category
                ),
                true,
            );
        }
        let validated = match self.policy.validate(tool, &arguments) {
            Ok(v) => v,
            Err(e) => return refused(format!("{e}."), true),
        };
        if let Some(outside) = validated.targets.iter().find(|t| !self.fence.allows(t)) {
            return refused(
                format!("device {outside} is not on the write allowlist."),
                false,
            );
        }
        match self.waiting_same(tool, validated.arguments.as_str(), &validated.targets) {
            Ok(Some(id)) => return already_waiting(id),
            Ok(None) => {}
            Err(why) => return refused(why, false),
        }
        if let Err(why) = self.check_limits(tool, &validated.targets) {
            return refused(why, false);
        }
        let Some(our_digest) = self.policy.digest(tool) else {
            return refused("that tool cannot be proposed.", true);
        };

        let description = match self
            .executor
            .describe(tool, validated.arguments.as_str())
            .await
        {
            Ok(d) => d,
            Err(ExecutorError::Refused(refusal)) => {
                return refused(
                    format!("the executor refused to describe it: {}", refusal.message()),
                    false,
                );
            }
            Err(e) => {
                tracing::warn!("describe failed: {e}");
                return refused(
                    "the executor could not be asked to check the target, so nothing was \
                     stored. Tell the operator; do not retry.",
                    false,
                );
            }
        };
        if description.targets != validated.targets {
            return refused("the executor resolved different targets.", false);
        }
        if let Some(frozen) = &description.frozen {
            let until = jiff::Timestamp::from_second(frozen.end)
                .map(fleetwatch_protocol::fleet::format_time)
                .unwrap_or_else(|_| frozen.end.to_string());
            return refused(
                format!(
                    "the team has frozen {} until {until} ({}), and the executor would refuse \
                     it. Do not propose it before then; tell the operator.",
                    fleetwatch_protocol::shown::readable(&frozen.holds, 200),
                    fleetwatch_protocol::shown::readable(&frozen.reason, 120)
                ),
                false,
            );
        }
        for device in &description.devices {
            if !device.on_team {
                return refused(
                    format!(
                        "device {} is not on the sandbox team's device list.",
                        device.id
                    ),
                    false,
                );
            }
            if !device.allowlisted || !self.fence.allows(&device.id) {
                return refused(
                    format!("device {} is not on the write allowlist.", device.id),
                    false,
                );
            }
        }
        if description.devices.len() != validated.targets.len() {
            return refused("the executor did not describe every target.", false);
        }
        if let Some(team) = &self.fence.team_id
            && description.team_id.as_deref() != Some(team.as_str())
        {
            return refused("the sandbox team is not the configured team.", false);
        }
        if description.policy_digest != our_digest
            || description.schema_version != entry.schema_version
        {
            return refused(
                "the executor's copy of the tool policy differs from this one; the operator \
                 must install the same policy on both sides.",
                false,
            );
        }

        // The describe answer lists the targets in `targets` order, names already redacted.
        let names: Vec<String> = description.devices.iter().map(|d| d.name.clone()).collect();
        let reason: String = redact::redact_text(reason.trim())
            .chars()
            .take(MAX_REASON_CHARS)
            .collect();
        let new = NewProposal {
            tool: tool.to_owned(),
            arguments: validated.arguments.into_string(),
            targets: validated.targets,
            fingerprint: description.fingerprint,
            schema_version: entry.schema_version,
            policy_digest: our_digest,
            slot: "sandbox".to_owned(),
            reason,
        };
        let stored = {
            let Ok(mut store) = self.store.lock() else {
                return refused("the proposal store is unavailable.", false);
            };
            // Limits again under the lock: two questions in flight must not both slip in, nor
            // store the same change twice.
            if let Ok(Some(id)) = store.waiting_same(tool, &new.arguments, &new.targets) {
                return already_waiting(id);
            }
            if let Err(why) = limits(&store, tool, &new.targets) {
                return refused(why, false);
            }
            store.insert_proposal_named(&new, &names, asked_by, store::now_secs())
        };
        match stored {
            Ok(id) => ProposeResult {
                message: format!(
                    "Proposal #{id} is waiting for a person to approve it on the approval page. \
                     Nothing has changed yet."
                ),
                proposal_id: Some(id),
                invalid: false,
            },
            Err(e) => {
                tracing::warn!("storing a proposal failed: {e}");
                refused("the proposal could not be saved.", false)
            }
        }
    }

    /// The pending proposal of exactly this change (tool, canonical arguments, targets), once
    /// lapsed proposals are expired.
    fn waiting_same(
        &self,
        tool: &str,
        arguments: &str,
        targets: &[String],
    ) -> Result<Option<u64>, String> {
        let unavailable = |_| "the proposal store is unavailable.".to_owned();
        let mut store = self
            .store
            .lock()
            .map_err(|_| "the proposal store is unavailable.".to_owned())?;
        store.expire_due(store::now_secs()).map_err(unavailable)?;
        store
            .waiting_same(tool, arguments, targets)
            .map_err(unavailable)
    }

    fn check_limits(&self, tool: &str, targets: &[String]) -> Result<(), String> {
        let mut store = self
            .store
            .lock()
            .map_err(|_| "the proposal store is unavailable.".to_owned())?;
        // Lapsed proposals first, so the pending count is honest.
        store
            .expire_due(store::now_secs())
            .map_err(|_| "the proposal store is unavailable.".to_owned())?;
        limits(&store, tool, targets)
    }
}

fn limits(store: &Store, tool: &str, targets: &[String]) -> Result<(), String> {
    let unavailable = |_| "the proposal store is unavailable.".to_owned();
    let now = store::now_secs();
    let pending = store.pending_count().map_err(unavailable)?;
    if pending >= MAX_PENDING {
        return Err(format!(
            "the approval queue is full ({pending} waiting). A person must review those first."
        ));
    }
    let hourly = store.non_denied_last_hour(now).map_err(unavailable)?;
    if hourly >= MAX_PER_HOUR {
        return Err(format!(
            "the hourly limit of {MAX_PER_HOUR} proposals is reached. Try again later."
        ));
    }
    if let Some(until) = store
        .paused_until(tool, targets, now)
        .map_err(unavailable)?
    {
        let minutes = (until - now + 59) / 60;
        return Err(format!(
            "a person denied this change {DENIALS_TO_PAUSE} times within an hour, so it is \
             paused for an hour from the last denial ({minutes} more minute(s)). Do not propose \
             it again."
        ));
    }
    Ok(())
}
