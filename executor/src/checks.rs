//! The checks an `Execute` passes, in the order of the design (§2 step 5). Each returns a
//! value only that check can construct (private fields, neither `Clone` nor `Copy`), and each
//! consumes the previous one, so the write cannot be reached with a check skipped.
//!
//! `PeerChecked` → `VerifiedBytes` → `PersonChecked` → `Claims` → `Fresh` → `Quorate` (not
//! frozen) → `NonceStored` → `PolicyChecked` → `Fenced` → `Limited` → `LiveState` → `WriteTicket` →
//! [`write`].

use fleetwatch_write_permit::WritePermit;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use fleetwatch_protocol::Refusal;
use fleetwatch_protocol::claims::{
    ApprovalClaims, CLAIMS_VERSION, CLOCK_SKEW_SECS, ClaimsError, MAX_ARGUMENTS_BYTES,
    MAX_FINGERPRINT_BYTES, MAX_LIFETIME_SECS, MAX_NAME_BYTES, MAX_NAMES, SignatureError,
    SignedApproval, TrustedKeys,
};
use fleetwatch_protocol::fleet::{self, DeviceList, RoomBlock};
use fleetwatch_protocol::passkey::{
    self, Approvers, CredentialUse, RelyingParty, VerifiedPasskeys,
};
use fleetwatch_protocol::policy::{Policy, Validated};
use serde_json::{Map, Value};

use crate::approvers::ApproverFile;
use crate::config::{Fence, Limits, PasskeyConfig};
use crate::epiphan::{Epiphan, WriteAnswer};
use crate::store::{Approved, LimitError, NonceError, Store};
use crate::{reads, state};

/// Where the executor gets the time. Injected so tests can stand exactly at a boundary.
pub type Clock = fn() -> jiff::Timestamp;

/// The peer's uid is on the allowed list.
pub struct PeerChecked(u32);

impl PeerChecked {
    /// The peer's uid, from the kernel.
    pub fn uid(&self) -> u32 {
        self.0
    }
}

/// Refuses a uid that is not allowed. Called before a byte is read from the connection.
pub fn peer(uid: u32, allowed: &BTreeSet<u32>) -> Result<PeerChecked, Refusal> {
    if allowed.contains(&uid) {
        Ok(PeerChecked(uid))
    } else {
        Err(Refusal::PeerNotAllowed)
    }
}

/// Claims bytes whose signature verified strictly against an installed key, still undecoded.
pub struct VerifiedBytes(Vec<u8>);

/// Verifies the signatures over the raw claims bytes, before anything is decoded from them.
pub fn signature(
    _peer: &PeerChecked,
    approval: &SignedApproval,
    keys: &TrustedKeys,
) -> Result<VerifiedBytes, Refusal> {
    match keys.verify(approval) {
        Ok(bytes) => Ok(VerifiedBytes(bytes.to_vec())),
        Err(SignatureError::NoSignature) => Err(Refusal::NoSignature),
        Err(SignatureError::UnknownKey) => Err(Refusal::UnknownKey),
        Err(SignatureError::BadSignature) => Err(Refusal::BadSignature),
    }
}

/// Claims bytes whose every passkey assertion verified over exactly these bytes, with the
/// distinct enrolled passkeys that signed (possibly none; the quorum judges that later).
pub struct PersonChecked {
    bytes: Vec<u8>,
    passkeys: VerifiedPasskeys,
}

/// Verifies every passkey assertion the approval carries against the bytes the assistant's
/// signature verified, still undecoded (DESIGN §9), with the executor's own RP ID and
/// origins; with `passkeys.device_bound`, refuses any that its authenticator calls backup
/// eligible. One bad assertion refuses the approval, each failure with its own code.
pub fn person(
    verified: VerifiedBytes,
    approval: &SignedApproval,
    approvers: &Approvers,
    config: &PasskeyConfig,
    rp: &RelyingParty,
) -> Result<PersonChecked, Refusal> {
    let passkeys = passkey::verify_assertions(&approval.passkeys, &verified.0, approvers, rp)
        .map_err(passkey::PasskeyError::refusal)?;
    if config.device_bound {
        passkeys
            .require_device_bound()
            .map_err(passkey::PasskeyError::refusal)?;
    }
    Ok(PersonChecked {
        bytes: verified.0,
        passkeys,
    })
}

/// Decoded claims of a version this build speaks.
pub struct Claims(ApprovalClaims, VerifiedPasskeys);

impl Claims {
    /// The approval nonce (for the audit row of a refusal).
    pub fn approval_id(&self) -> [u8; 16] {
        self.0.approval_id
    }
    /// The tool.
    pub fn tool(&self) -> &str {
        &self.0.tool
    }
    /// The signed targets, comma-separated.
    pub fn targets(&self) -> String {
        self.0.targets.join(",")
    }
    /// The assistant's proposal number (for the audit row, so the two logs can be read
    /// side by side).
    pub fn proposal_id(&self) -> u64 {
        self.0.proposal_id
    }
}

/// Decodes the verified bytes (never re-encoded), requiring every byte consumed, and bounds
/// every string in them by what the executor's policy allows, before anything of them is
/// stored or audited: a tool name no longer than the longest proposable one, at most the
/// largest `max_targets` targets, each a device ID, and arguments and fingerprint within
/// their caps. Signed junk then leaves one audit row without its strings.
pub fn claims(checked: PersonChecked, policy: &Policy) -> Result<Claims, Refusal> {
    let claims = ApprovalClaims::decode(&checked.bytes).map_err(|e| match e {
        ClaimsError::UnknownVersion => Refusal::UnknownClaimsVersion,
        ClaimsError::Malformed => Refusal::ClaimsMalformed,
        ClaimsError::TrailingBytes => Refusal::TrailingBytes,
    })?;
    if claims.version != CLAIMS_VERSION {
        return Err(Refusal::UnknownClaimsVersion);
    }
    let (longest_tool, most_targets) =
        policy.propose_entries().fold((0, 0), |(name, targets), e| {
            (name.max(e.name.len()), targets.max(e.max_targets))
        });
    if claims.targets.len() > usize::try_from(most_targets).unwrap_or(usize::MAX) {
        // More than any tool may take: the policy step would say the same, later.
        return Err(Refusal::TooManyTargets);
    }
    if !fleetwatch_protocol::claims::is_user_name(&claims.asked_by) {
        // Longer than a user name, or not one: nothing the assistant reads from a peer.
        return Err(Refusal::ClaimTooLong);
    }
    let bounded = claims.tool.len() <= longest_tool
        && claims
            .targets
            .iter()
            .all(|t| fleetwatch_protocol::ids::is_master_id(t))
        && claims.arguments.len() <= MAX_ARGUMENTS_BYTES
        && claims.fingerprint.len() <= MAX_FINGERPRINT_BYTES
        && claims.names.len() <= MAX_NAMES
        && claims
            .names
            .iter()
            .all(|n| n.id.len() <= MAX_NAME_BYTES && n.name.len() <= MAX_NAME_BYTES);
    if !bounded {
        return Err(Refusal::ClaimTooLong);
    }
    Ok(Claims(claims, checked.passkeys))
}

/// Claims inside their validity window on the executor's own clock.
pub struct Fresh(ApprovalClaims, VerifiedPasskeys);

/// Expiry is strict (`now < expires_at`); the lifetime may not exceed five minutes plus the
/// skew; the approval may not be issued later than `now` plus the skew. Arithmetic is checked
/// because the values come from a peer.
pub fn fresh(claims: Claims, now: i64) -> Result<Fresh, Refusal> {
    let Claims(c, passkeys) = claims;
    if now >= c.expires_at {
        return Err(Refusal::Expired);
    }
    let lifetime = c
        .expires_at
        .checked_sub(c.approved_at)
        .ok_or(Refusal::LifetimeTooLong)?;
    if !(0..=MAX_LIFETIME_SECS + CLOCK_SKEW_SECS).contains(&lifetime) {
        return Err(Refusal::LifetimeTooLong);
    }
    let latest = now
        .checked_add(CLOCK_SKEW_SECS)
        .ok_or(Refusal::NotYetValid)?;
    if c.approved_at > latest {
        return Err(Refusal::NotYetValid);
    }
    Ok(Fresh(c, passkeys))
}

/// Enough distinct enrolled passkeys approved this change; the ones to store counters for.
pub struct Quorate {
    claims: ApprovalClaims,
    uses: Vec<CredentialUse>,
    need: usize,
}

/// How many distinct passkeys this change needs, from the executor's own configuration and
/// policy: whether the change is disruptive comes from its policy and the signed arguments,
/// never from anything else in the request. Arguments that do not parse count as disruptive
/// (the policy check refuses them after the nonce anyway).
pub fn needed(config: &PasskeyConfig, policy: &Policy, c: &ApprovalClaims) -> usize {
    config.needed(&c.tool, disruptive(policy, c))
}

/// Whether the executor's policy calls this change disruptive, from the signed arguments;
/// arguments that do not parse count as disruptive.
fn disruptive(policy: &Policy, c: &ApprovalClaims) -> bool {
    let arguments = fleetwatch_protocol::canonical::from_str(&c.arguments)
        .and_then(|canonical| canonical.to_value())
        .unwrap_or(Value::Null);
    policy.is_disruptive(&c.tool, &arguments)
}

/// Refuses unless the distinct enrolled persons who approved, each within the scope their
/// approver line gives (the tool, or calm or disruptive, and every target), meet this
/// change's quorum. The same person twice is one person; a person outside their scope counts
/// for nothing, and is the refusal when the quorum is then unmet.
pub fn quorum(fresh: Fresh, config: &PasskeyConfig, policy: &Policy) -> Result<Quorate, Refusal> {
    let Fresh(c, passkeys) = fresh;
    let disruptive = disruptive(policy, &c);
    let need = config.needed(&c.tool, disruptive);
    // With `asker_counts: false`, the person the assistant says asked counts for nothing.
    let asker = (!config.asker_counts).then_some(c.asked_by.as_str());
    passkeys
        .require_counting(need, (&c.tool, disruptive, &c.targets), asker)
        .map_err(passkey::PasskeyError::refusal)?;
    Ok(Quorate {
        claims: c,
        uses: passkeys.uses(),
        need,
    })
}

/// Refuses a change a freeze window of the executor's configuration holds now (`frozen`,
/// with the window's end and reason), before anything is spent: the team's own rule, which no
/// approval lifts.
pub fn not_frozen(
    quorate: Quorate,
    windows: &[crate::freeze::Window],
    policy: &Policy,
    now: jiff::Timestamp,
) -> Result<Quorate, Refusal> {
    let c = &quorate.claims;
    match crate::freeze::holding(windows, &c.tool, disruptive(policy, c), now) {
        Some(window) => Err(Refusal::Frozen {
            until: window.end,
            reason: window.reason,
        }),
        None => Ok(quorate),
    }
}

/// The nonce is durably stored and the execution is open (`in_flight`).
pub struct NonceStored(ApprovalClaims);

impl NonceStored {
    /// The approval nonce.
    pub fn approval_id(&self) -> [u8; 16] {
        self.0.approval_id
    }
}

/// Inserts the nonce before any read, with the passkeys' counters in the same transaction: a
/// second presentation is a primary-key violation, a counter that did not increase stores
/// nothing, and a crash from here on leaves an `in_flight` row that start-up marks unknown,
/// never re-runs.
pub fn nonce(
    quorate: Quorate,
    store: &Store,
    assistant_head: &[u8; 32],
    approval: &SignedApproval,
    file: &ApproverFile,
) -> Result<NonceStored, Refusal> {
    let Quorate {
        claims: c,
        uses,
        need,
    } = quorate;
    let targets = c.targets.join(",");
    // The approver lines this approval was verified with, kept with it: the receipt names
    // these, not whatever the file holds when it is written.
    let mut lines: Vec<String> = approval
        .signatures
        .iter()
        .filter_map(|s| file.keys.line(&s.key_id))
        .chain(
            uses.iter()
                .filter_map(|u| file.passkeys.get(u.credential_id()).map(|r| r.to_line())),
        )
        .collect();
    lines.sort();
    lines.dedup();
    let approved = Approved {
        proposal_id: c.proposal_id,
        tool: &c.tool,
        targets: &targets,
        assistant_head,
        passkeys: &uses,
        approval,
        asked_by: &c.asked_by,
        approver_lines: &lines,
        quorum: u32::try_from(need).unwrap_or(u32::MAX),
    };
    match store.store_nonce(&c.approval_id, &approved) {
        Ok(()) => Ok(NonceStored(c)),
        Err(NonceError::Replayed) => Err(Refusal::Replayed),
        Err(NonceError::CounterNotIncreased) => Err(Refusal::PasskeyCounterNotIncreased),
        Err(NonceError::NotStored) => Err(Refusal::NonceNotStored),
    }
}

/// What the executor's own policy says about this change.
pub struct PolicyChecked {
    claims: ApprovalClaims,
    validated: Validated,
    arguments: Map<String, Value>,
}

/// Re-runs the policy from the executor's own copy: the tool is proposable, the entry's
/// digest and schema version are the signed ones, the signed arguments pass the schema and
/// are byte-identical to their canonical form, and the targets they name are the signed ones.
pub fn policy(stored: NonceStored, policy: &Policy) -> Result<PolicyChecked, Refusal> {
    let c = stored.0;
    let entry = policy
        .propose_entry(&c.tool)
        .ok_or(Refusal::ToolNotProposable)?;
    if entry.schema.is_none() {
        return Err(Refusal::ToolNotProposable);
    }
    if policy.digest(&c.tool) != Some(c.policy_digest) {
        return Err(Refusal::PolicyDigestMismatch);
    }
    if entry.schema_version != c.schema_version {
        return Err(Refusal::SchemaVersionMismatch);
    }
    // Parsed with the canonical parser, which refuses duplicate keys that serde would merge.
    let value = fleetwatch_protocol::canonical::from_str(&c.arguments)
        .and_then(|canonical| canonical.to_value())
        .map_err(|_| Refusal::ArgumentsInvalid)?;
    let validated = policy.validate(&c.tool, &value).map_err(|e| e.refusal())?;
    if validated.arguments.as_str().as_bytes() != c.arguments.as_bytes() {
        return Err(Refusal::NotCanonical);
    }
    if validated.targets != c.targets {
        return Err(Refusal::TargetsMismatch);
    }
    if validated.targets.len() > usize::try_from(entry.max_targets).unwrap_or(0) {
        return Err(Refusal::TooManyTargets);
    }
    let Value::Object(arguments) = value else {
        return Err(Refusal::ArgumentsInvalid);
    };
    Ok(PolicyChecked {
        claims: c,
        validated,
        arguments,
    })
}

/// The change is inside the configured fence.
pub struct Fenced(PolicyChecked);

/// No fence → refused before any read. With an allowlist, every target must be on it.
pub fn fence(checked: PolicyChecked, fence: &Fence) -> Result<Fenced, Refusal> {
    if !fence.configured() {
        return Err(Refusal::NoFence);
    }
    if let Some(allowlist) = &fence.allowlist
        && checked
            .validated
            .targets
            .iter()
            .any(|t| !allowlist.contains(t))
    {
        return Err(Refusal::NotAllowlisted);
    }
    Ok(Fenced(checked))
}

/// The executor's own limits allow this change now, and it is counted against them.
pub struct Limited(PolicyChecked);

/// The hourly cap across the sandbox and, for a disruptive change, each target's cooldown,
/// both from the executor's store (they survive a restart). Checked before any read, so a
/// refused change costs Epiphan nothing.
pub fn limits(
    fenced: Fenced,
    store: &Store,
    limits: &Limits,
    policy: &Policy,
) -> Result<Limited, Refusal> {
    let checked = fenced.0;
    let disruptive = policy.is_disruptive(
        &checked.claims.tool,
        &Value::Object(checked.arguments.clone()),
    );
    let reserved = store.reserve(
        &checked.claims.approval_id,
        &checked.validated.targets,
        disruptive,
        i64::from(limits.cooldown_minutes) * 60,
        limits.writes_per_hour,
    );
    match reserved {
        Ok(()) => Ok(Limited(checked)),
        Err(LimitError::HourlyLimit) => Err(Refusal::HourlyLimit {
            limit: limits.writes_per_hour,
        }),
        Err(LimitError::CoolingDown { remaining_secs }) => Err(Refusal::CoolingDown {
            // Rounded up, so the wait said is never shorter than the real one.
            minutes: u32::try_from((remaining_secs.max(1) + 59) / 60).unwrap_or(u32::MAX),
        }),
        Err(LimitError::Store) => Err(Refusal::Internal),
    }
}

/// Facts that do not change by the minute, read fresh and matched.
pub struct LiveState {
    checked: PolicyChecked,
    devices: DeviceList,
    endpoints: Vec<fleet::StreamEndpoint>,
}

/// The slow-moving reads first: the device list (membership, team ID, the named channels) and
/// the stream destination list.
pub async fn live_state(
    limited: Limited,
    epiphan: &Epiphan,
    fence: &Fence,
) -> Result<LiveState, Refusal> {
    let checked = limited.0;
    let devices = reads::device_list(epiphan).await?;
    for target in &checked.validated.targets {
        if !devices.devices.iter().any(|d| &d.id == target) {
            return Err(Refusal::NotOnTeam);
        }
    }
    if let Some(team) = &fence.team_id {
        match &devices.team_id {
            None => return Err(Refusal::TeamNotReported),
            Some(reported) if reported != team => return Err(Refusal::TeamMismatch),
            Some(_) => {}
        }
    }
    // A named channel must exist on its device, or the write would address something the
    // person never saw on the card.
    let validated = &checked.validated;
    if !validated
        .channels
        .iter()
        .chain(&validated.channel)
        .all(|channel| state::channel_exists(&devices, channel))
    {
        return Err(Refusal::NotOnTeam);
    }
    let mut endpoints = Vec::new();
    if let Some(stream_id) = &checked.validated.stream_id {
        endpoints = reads::stream_endpoints(epiphan).await?;
        if !endpoints
            .iter()
            .any(|e| e.id.eq_ignore_ascii_case(stream_id))
        {
            return Err(Refusal::StreamNotFound);
        }
    }
    Ok(LiveState {
        checked,
        devices,
        endpoints,
    })
}

/// Everything checked; the only value [`write`] accepts.
pub struct WriteTicket {
    approval_id: [u8; 16],
    tool: String,
    arguments: Map<String, Value>,
    expires_at: i64,
    /// The MCP client core's write takes this; only the ticket holds one.
    permit: WritePermit,
}

impl WriteTicket {
    /// The approval nonce.
    pub fn approval_id(&self) -> [u8; 16] {
        self.approval_id
    }

    /// The write the ticket allows, consuming it: only [`crate::epiphan::Epiphan::write_once`]
    /// calls this, on its way to sending it.
    pub(crate) fn into_call(self) -> (WritePermit, String, Map<String, Value>) {
        (self.permit, self.tool, self.arguments)
    }
}

/// The fast-moving reads, last: events, then recorder status. Then the event ID, the
/// fingerprint and the disruptive window are judged on what was just read, and the caller
/// sends the write at once with nothing in between. Every target must be online: a write
/// cannot reach an offline device (and a disruptive one would be sent blind), so it is not
/// made, and a refused write does not count toward the hourly cap. For a disruptive change a
/// recorder state that is not
/// clearly stopped counts as recording, and a target the events answer leaves out is a failed
/// read: silence is not "nothing scheduled" when the change would interrupt it.
pub async fn last_reads(
    live: LiveState,
    epiphan: &Epiphan,
    policy: &Policy,
    clock: Clock,
    open_event_minutes: u32,
) -> Result<WriteTicket, Refusal> {
    let LiveState {
        checked,
        mut devices,
        endpoints,
    } = live;
    let c = &checked.claims;
    let targets = &checked.validated.targets;
    let events = reads::events(epiphan, clock()).await?;
    if let Some(event) = &checked.validated.event
        && !state::event_matches(&events, event)
    {
        return Err(Refusal::EventMismatch);
    }
    let online = reads::online(&devices, targets);
    if online.len() < targets.len() && Policy::needs_device_online(&c.tool) {
        // A target that is not on the list at all was refused with its own code earlier.
        return Err(Refusal::Offline);
    }
    if !online.is_empty() {
        let status = reads::recorder_status(epiphan, &online).await?;
        fleet::apply_recorder_status(&mut devices, &status);
    }
    if state::fingerprint(&devices, &events, targets)? != c.fingerprint {
        return Err(Refusal::FingerprintMoved);
    }
    // Every name the person was shown is the name read now, and every one is there: a name
    // the assistant changed, invented or left out is refused.
    if state::signed_names(&devices, &endpoints, &events, &checked.validated) != c.names {
        return Err(Refusal::NameChanged);
    }
    let value = Value::Object(checked.arguments.clone());
    if policy.is_disruptive(&c.tool, &value) {
        let now = clock();
        let lead = policy.lead_minutes(&c.tool);
        let stops = policy.stops_recording(&c.tool, &value);
        let by_id: BTreeMap<&str, &fleet::Device> =
            devices.devices.iter().map(|d| (d.id.as_str(), d)).collect();
        for target in targets {
            let device = by_id.get(target.as_str()).ok_or(Refusal::NotOnTeam)?;
            if !device.online {
                return Err(Refusal::Offline);
            }
            let Some(event) = events.get(target) else {
                tracing::warn!(device = %target, "the events answer left out a target");
                return Err(Refusal::ReadFailed);
            };
            match fleet::room_block(device, event.as_ref(), now, lead, stops, open_event_minutes) {
                RoomBlock::None => {}
                RoomBlock::Recording => return Err(Refusal::Recording),
                RoomBlock::Live => return Err(Refusal::EventLive),
                RoomBlock::Soon(minutes) => return Err(Refusal::EventSoon { minutes }),
            }
        }
    }
    Ok(WriteTicket {
        approval_id: c.approval_id,
        tool: c.tool.clone(),
        arguments: checked.arguments,
        expires_at: c.expires_at,
        permit: WritePermit::new(),
    })
}

/// The single write, in exchange for the ticket: the approval's expiry checked once more on
/// the executor's clock (the reads can take minutes), then, with no I/O in between, the call
/// sent once, bounded by `timeout`, never retried.
pub async fn write(
    ticket: WriteTicket,
    epiphan: &Epiphan,
    timeout: Duration,
    clock: Clock,
) -> Result<WriteAnswer, Refusal> {
    let now = clock().as_second();
    if now >= ticket.expires_at {
        return Err(Refusal::ExpiredAtWrite {
            late_secs: u32::try_from(now - ticket.expires_at).unwrap_or(u32::MAX),
        });
    }
    Ok(epiphan.write_once(ticket, timeout).await)
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
mod tests {
    use super::*;
    use fleetwatch_protocol::claims::Slot;

    const NOW: i64 = 1_800_000_000;

    fn claims(approved_at: i64, expires_at: i64) -> Claims {
        let none = passkey::verify_assertions(
            &[],
            b"",
            &Approvers::default(),
            &RelyingParty::new("localhost", ["http://localhost:8767"]),
        )
        .unwrap();
        Claims(
            ApprovalClaims {
                version: CLAIMS_VERSION,
                approval_id: [1; 16],
                proposal_id: 1,
                tool: "batch_reboot".into(),
                arguments: "{}".into(),
                targets: vec![],
                names: Vec::new(),
                fingerprint: "{}".into(),
                schema_version: 1,
                policy_digest: [0; 32],
                slot: Slot::Sandbox,
                approved_at,
                expires_at,
                page_session: [0; 16],
                asked_by: String::new(),
            },
            none,
        )
    }

    fn verdict(approved_at: i64, expires_at: i64) -> Result<(), Refusal> {
        fresh(claims(approved_at, expires_at), NOW).map(|_| ())
    }

    #[test]
    fn expiry_is_strict() {
        assert_eq!(verdict(NOW - 300, NOW), Err(Refusal::Expired));
        assert_eq!(verdict(NOW - 300, NOW - 1), Err(Refusal::Expired));
        assert_eq!(verdict(NOW - 299, NOW + 1), Ok(()));
    }

    #[test]
    fn lifetime_ceiling_is_five_minutes_plus_skew() {
        assert_eq!(verdict(NOW - 10, NOW - 10 + 360), Ok(()));
        assert_eq!(
            verdict(NOW - 10, NOW - 10 + 361),
            Err(Refusal::LifetimeTooLong)
        );
        assert_eq!(verdict(NOW, NOW - 1 + 1), Err(Refusal::Expired));
        assert_eq!(verdict(NOW + 5, NOW + 1), Err(Refusal::LifetimeTooLong));
        assert_eq!(verdict(i64::MIN, NOW + 10), Err(Refusal::LifetimeTooLong));
    }

    #[test]
    fn issued_in_the_future_beyond_skew() {
        assert_eq!(verdict(NOW + 60, NOW + 300), Ok(()));
        assert_eq!(verdict(NOW + 61, NOW + 300), Err(Refusal::NotYetValid));
    }

    #[test]
    fn peer_uid_must_be_listed() {
        let allowed = BTreeSet::from([1000]);
        assert!(peer(1000, &allowed).is_ok());
        assert_eq!(peer(1001, &allowed).err(), Some(Refusal::PeerNotAllowed));
        assert_eq!(
            peer(0, &BTreeSet::new()).err(),
            Some(Refusal::PeerNotAllowed)
        );
    }
}
