//! Each refusal in one sentence for the operator: what failed, that nothing ran, and what to
//! do (the `assistant` feature).

use super::Refusal;

impl Refusal {
    /// One sentence for the operator: what failed and what to do.
    pub fn message(&self) -> String {
        let text = match self {
            Refusal::PeerNotAllowed => {
                "The executor refused a connection from a user that is not on its allowed list. Nothing ran. Run the assistant as the configured user, or add that user to the executor's allowed list."
            }
            Refusal::FrameTooLarge => {
                "The request was larger than the 64 KiB the executor accepts. Nothing ran. Propose a smaller change (fewer targets) and approve it again."
            }
            Refusal::FrameEmpty => {
                "The executor received an empty request. Nothing ran. Check that the assistant and the executor are the same Fleetwatch version."
            }
            Refusal::FrameTruncated => {
                "The connection closed or timed out before the whole request arrived. Nothing ran. Try the approval again; if it keeps happening, check the executor's log."
            }
            Refusal::Malformed => {
                "The executor could not read the request. Nothing ran. Check that the assistant and the executor are the same Fleetwatch version."
            }
            Refusal::TrailingBytes => {
                "The request had extra bytes after its end. Nothing ran. Check that the assistant and the executor are the same Fleetwatch version."
            }
            Refusal::UnknownWireVersion => {
                "The request uses a message version this executor does not speak. Nothing ran. Upgrade the assistant and the executor to the same Fleetwatch version."
            }
            Refusal::NoSignature => {
                "The approval carried no signature. Nothing ran. Approve the change again on the approval page."
            }
            Refusal::UnknownKey => {
                "The approval was not signed by any key installed for the executor. Nothing ran. Install the assistant's public key in the executor's approver key file, then approve again."
            }
            Refusal::BadSignature => {
                "The approval's signature did not verify, so it may have been altered. Nothing ran. Approve the change again, and check the executor's approver key file if this repeats."
            }
            Refusal::PasskeyTooMany => {
                "The approval carried more passkey confirmations than the executor accepts. Nothing ran. Check that the assistant and the executor are the same Fleetwatch version, then approve again."
            }
            Refusal::PasskeyOutOfBounds => {
                "A passkey confirmation was larger than the executor accepts, or had an empty credential. Nothing ran. Approve the change again; if it repeats, try another browser or passkey."
            }
            Refusal::PasskeyUnknownCredential => {
                "The change was confirmed with a passkey that is not enrolled for this executor. Nothing ran. Use an enrolled passkey, or ask an administrator to install yours with `fleetwatch-executor approvers add`."
            }
            Refusal::PasskeyClientDataMalformed => {
                "The browser's passkey data could not be read. Nothing ran. Approve the change again; if it repeats, try another browser."
            }
            Refusal::PasskeyWrongType => {
                "The passkey answer was not a confirmation (it may come from an enrolment). Nothing ran. Approve the change again on the approval page."
            }
            Refusal::PasskeyChallengeMismatch => {
                "The passkey confirmed a different approval than the one the executor received, so the change may have been altered after you confirmed it. Nothing ran. Review the change on the approval page and approve it again."
            }
            Refusal::PasskeyOriginNotAllowed => {
                "The passkey was used on a page the executor does not take passkeys from. Only the confirm page (fleetwatch-confirm serve, at the origin in the executor's passkeys.origins: http://localhost:8768 unless changed) may ask for it. Nothing ran. Approve the change again; the approval page hands it to the confirm page."
            }
            Refusal::PasskeyCrossOrigin => {
                "The passkey was used from inside a frame of another site. Nothing ran. Approve again from the approval page in its own tab; the confirm page opens in that tab."
            }
            Refusal::PasskeyAuthenticatorDataShort => {
                "The passkey's authenticator data was too short to be genuine. Nothing ran. Approve the change again; if it repeats, try another passkey."
            }
            Refusal::PasskeyRpIdMismatch => {
                "The passkey answered for a different site than this executor's. Nothing ran. Use a passkey enrolled with `fleetwatch-confirm enrol` (at http://localhost)."
            }
            Refusal::PasskeyUserNotPresent => {
                "The passkey did not report that a person touched or confirmed it. Nothing ran. Approve again and confirm on your passkey when it asks."
            }
            Refusal::PasskeyUserNotVerified => {
                "The passkey did not check who you are (no PIN, fingerprint or face check). Nothing ran. Approve again and complete the passkey's PIN or biometric check."
            }
            Refusal::PasskeySignatureMalformed => {
                "The passkey's signature was not in a valid format. Nothing ran. Approve the change again; if it repeats, enrol the passkey again."
            }
            Refusal::PasskeyBadSignature => {
                "The passkey's signature did not verify against the enrolled key, so the approval may have been altered. Nothing ran. Approve the change again, and check the executor's approver file if this repeats."
            }
            Refusal::PasskeyCounterNotIncreased => {
                "The passkey's signature counter did not increase, so this may be a replayed confirmation or a copied passkey. Nothing ran. Approve again; if this repeats, ask an administrator to check and re-enrol the passkey."
            }
            Refusal::PasskeyRequired => {
                "The approval was not confirmed with an operator's passkey, and this executor requires one. Nothing ran. Approve the change again and confirm it with your passkey; if no one is enrolled yet, an administrator enrols people with `fleetwatch-confirm enrol`."
            }
            Refusal::PasskeyAskerApproved { have, need } => {
                return format!(
                    "The person who asked for this change also confirmed it, and this executor does not count the asker toward their own change (passkeys.asker_counts: false): {have} of the {need} people it needs approved besides them. Nothing ran. Ask another enrolled operator to confirm it."
                );
            }
            Refusal::Frozen { until, reason } => {
                let until = jiff::Timestamp::from_second(*until)
                    .map(crate::fleet::format_time)
                    .unwrap_or_else(|_| until.to_string());
                return format!(
                    "Changes like this are frozen until {until}: {}. Nothing ran. Ask again after the window ends; an administrator changes windows in the executor's configuration (freeze:).",
                    crate::shown::readable(reason, 120)
                );
            }
            Refusal::PasskeyOutOfScope { have, need } => {
                return format!(
                    "A person who confirmed this change may not approve it: their approver line's scope does not cover its tool or one of its rooms, and without them {have} of the {need} people it needs approved. Nothing ran. Ask an enrolled operator whose scope covers it to confirm; the approval page lists who may."
                );
            }
            Refusal::PasskeyQuorumNotMet { have, need } => {
                return format!(
                    "This change needs passkey confirmations from {need} different operators and the approval carried {have}. Nothing ran. Ask another enrolled operator to confirm the same change before it expires."
                );
            }
            Refusal::UnknownClaimsVersion => {
                "The approval uses a format version this executor does not speak. Nothing ran. Upgrade the assistant and the executor to the same Fleetwatch version."
            }
            Refusal::ClaimsMalformed => {
                "The signed approval could not be read. Nothing ran. Check that the assistant and the executor are the same Fleetwatch version, then approve again."
            }
            Refusal::Expired => {
                "The approval expired before it reached the executor. Nothing ran. Ask for the change again and approve it within five minutes."
            }
            Refusal::NotYetValid => {
                "The approval was issued later than the executor's clock allows. Nothing ran. Check that both machines' clocks are correct, then approve again."
            }
            Refusal::LifetimeTooLong => {
                "The approval was valid for longer than five minutes. Nothing ran. Check that the assistant and the executor are the same Fleetwatch version, then approve again."
            }
            Refusal::Replayed => {
                "This approval was already used once. Nothing ran. Ask for the change again if it is still needed."
            }
            Refusal::NonceNotStored => {
                "The executor could not record the approval durably (for example, the disk is full). Nothing ran. Free space or fix the executor's state folder, then approve again."
            }
            Refusal::ToolNotProposable => {
                "The executor's policy does not allow this change. Nothing ran. Check the executor's tool policy."
            }
            Refusal::PolicyDigestMismatch => {
                "The assistant and the executor have different policies for this tool. Nothing ran. Install the same tool policy for both, then propose the change again."
            }
            Refusal::SchemaVersionMismatch => {
                "The assistant and the executor disagree on this tool's argument format. Nothing ran. Install the same tool policy for both, then propose the change again."
            }
            Refusal::ArgumentsInvalid => {
                "The change's arguments do not pass the executor's checks for this tool. Nothing ran. Propose the change again with valid arguments."
            }
            Refusal::NotCanonical => {
                "The signed arguments were not in canonical form. Nothing ran. Check that the assistant and the executor are the same Fleetwatch version, then propose again."
            }
            Refusal::TargetsMismatch => {
                "The approved devices are not the devices the arguments name. Nothing ran. Propose the change again."
            }
            Refusal::TooManyTargets => {
                "The change names more devices than this tool allows at once. Nothing ran. Split it into smaller changes."
            }
            Refusal::NoFence => {
                "Neither FLEETWATCH_WRITE_DEVICE_IDS nor FLEETWATCH_WRITE_TEAM_ID is set for the executor. Nothing ran. Set at least one of them and restart the executor."
            }
            Refusal::NotAllowlisted => {
                "A target device is not on FLEETWATCH_WRITE_DEVICE_IDS. Nothing ran. Add the device to the allowlist if it really should be changed."
            }
            Refusal::TeamMismatch => {
                "The sandbox sign-in belongs to a different team than FLEETWATCH_WRITE_TEAM_ID. Nothing ran. Sign the sandbox in to the right team, or correct the setting."
            }
            Refusal::TeamNotReported => {
                "FLEETWATCH_WRITE_TEAM_ID is set but the sandbox sign-in did not report a team. Nothing ran. Sign the sandbox in again, or use FLEETWATCH_WRITE_DEVICE_IDS instead."
            }
            Refusal::NotOnTeam => {
                "A target device is not on the sandbox team's device list. Nothing ran. Check that the device belongs to the sandbox team."
            }
            Refusal::StreamNotFound => {
                "The stream destination is not on the sandbox team's list. Nothing ran. Check the destination and propose the change again."
            }
            Refusal::EventMismatch => {
                "The event is not the device's current or next event. Nothing ran. Propose the change again for the right event."
            }
            Refusal::FingerprintMoved => {
                "A target device changed (online, recording or next event) since the change was approved. Nothing ran. Review the new state and approve again."
            }
            Refusal::Recording => {
                "A target device is recording, or its recorder did not clearly report stopped (paused, starting, stopping or no state), and this change would disturb it. Nothing ran. Wait until the recording ends."
            }
            Refusal::EventLive => {
                "An event is on now in a target room, and this change would disturb it. Nothing ran. Wait until the event ends."
            }
            Refusal::EventSoon { minutes } => {
                return format!(
                    "An event starts in a target room in {minutes} minute{}, and this change would disturb it. Nothing ran. Wait until the event is over.",
                    if *minutes == 1 { "" } else { "s" }
                );
            }
            Refusal::CoolingDown { minutes } => {
                return format!(
                    "A target had a disruptive change (a restart, a firmware update, a stopped recording) a short while ago, and the executor lets a device settle between such changes: it refuses for {minutes} more minute{}. Nothing ran. Check that the earlier change did what was meant, then try again.",
                    if *minutes == 1 { "" } else { "s" }
                );
            }
            Refusal::HourlyLimit { limit } => {
                return format!(
                    "The executor has already made {limit} changes in the last hour, its limit. Nothing ran. Wait, or raise `limits.writes_per_hour` in the executor's configuration if this pace is expected."
                );
            }
            Refusal::Offline => {
                "A target is offline, so the change could not reach it (and a disruptive one would be sent blind). Nothing ran. It does not count toward the hourly limit: bring the device back online, check it, then propose the change again."
            }
            Refusal::ExpiredAtWrite { late_secs } => {
                return format!(
                    "The approval expired while the executor was still reading the devices' state ({late_secs} s past its expiry), so the change was not sent. Nothing ran. Approve it again; if reads keep being slow, check the connection to Epiphan."
                );
            }
            Refusal::ClaimTooLong => {
                "The approval held a tool name, a device ID or another value longer than, or of another form than, anything the executor's policy allows. Nothing ran. Check that the assistant and the executor are the same Fleetwatch version."
            }
            Refusal::ReadFailed => {
                "The executor could not read the devices' current state through the sandbox sign-in. Nothing ran. Try again in a moment."
            }
            Refusal::NoSignIn => {
                "The executor has no sandbox sign-in, so it cannot make changes. Nothing ran. Run `fleetwatch-executor login --sandbox`."
            }
            Refusal::SignInExpired => {
                "Epiphan refused the sandbox sign-in (expired or revoked). Nothing ran. Run `fleetwatch-executor login --sandbox` again."
            }
            Refusal::Busy => {
                "The executor is handling as many requests as it allows. Nothing ran. Try again in a moment."
            }
            Refusal::Internal => {
                "The executor could not complete its checks because of an internal error. Nothing ran. See the executor's log for details."
            }
            Refusal::NameChanged => {
                "A name the approval showed (a room, a channel, a stream destination or an event) is not the name the executor reads now, so the person may have approved something other than what will change. Nothing ran. Check the names on the card and approve again."
            }
            Refusal::ConfirmOriginNotHeld => {
                "The confirm page's address was not held by the confirm page's own service (systemd's fleetwatch-confirm.socket) when the passkey came back, so another program may have shown you the change. Nothing ran. An administrator runs `sudo systemctl start fleetwatch-confirm.socket` and `fleetwatch-executor doctor`; then approve again."
            }
            Refusal::PasskeyBackupStateWithoutEligible => {
                "The passkey's authenticator said it is backed up but may not be backed up, which no honest authenticator says. Nothing ran. Confirm with another enrolled passkey, and have an administrator check this one with `fleetwatch-executor approvers list`."
            }
            Refusal::PasskeyBackupChanged => {
                "The passkey's authenticator no longer says what it said at enrolment about being copied to other devices, and this executor accepts only device-bound passkeys that stay so. Nothing ran. Confirm with another enrolled passkey; an administrator enrols this one again with `fleetwatch-confirm enrol`."
            }
            Refusal::PasskeySynced => {
                "A passkey that confirmed the approval can be copied to other devices (a synced passkey), and this executor accepts only passkeys bound to one device. Nothing ran. Confirm with a security key or another device-bound passkey enrolled with `fleetwatch-confirm enrol`."
            }
        };
        text.to_owned()
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message())
    }
}
