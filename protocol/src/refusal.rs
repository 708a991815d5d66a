//! The one list of reasons a change is refused, shared by the executor, the assistant and the
//! audit tables. Each variant is a check; its [`Refusal::code`] is the audit reason code and its
//! [`Refusal::message`] tells the operator what failed and what to do. Variants carry only
//! typed facts, never free text, so nothing a peer sends is echoed back as prose.

use serde::{Deserialize, Serialize};

/// Why the executor (or the assistant, for a proposal) refused. Nothing ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Refusal {
    /// The connecting process's uid is not on the allowed list.
    PeerNotAllowed,
    /// A frame's length prefix is above the 64 KiB cap.
    FrameTooLarge,
    /// A frame of length zero.
    FrameEmpty,
    /// The connection ended before a whole frame arrived, or the read deadline passed.
    FrameTruncated,
    /// The frame did not decode as a request.
    Malformed,
    /// Bytes followed the encoded request or claims.
    TrailingBytes,
    /// The envelope's version is not one this build speaks.
    UnknownWireVersion,
    /// The approval carries no signature.
    NoSignature,
    /// No signature is from an installed approver key.
    UnknownKey,
    /// A signature from an installed key does not verify.
    BadSignature,
    /// The claims' version is not one this build speaks.
    UnknownClaimsVersion,
    /// The signed claims did not decode.
    ClaimsMalformed,
    /// The approval expired (expiry is strict).
    Expired,
    /// The approval was issued in the future beyond the allowed clock skew.
    NotYetValid,
    /// The approval's lifetime exceeds five minutes plus the skew.
    LifetimeTooLong,
    /// This approval was already presented once.
    Replayed,
    /// The nonce could not be stored durably (for example, a full disk).
    NonceNotStored,
    /// The tool is not proposable in the executor's own policy.
    ToolNotProposable,
    /// The policy entry the approval was made under differs from the executor's.
    PolicyDigestMismatch,
    /// The argument schema version differs.
    SchemaVersionMismatch,
    /// The arguments do not pass the tool's schema.
    ArgumentsInvalid,
    /// The signed arguments are not in canonical form.
    NotCanonical,
    /// The signed targets are not the targets the arguments name.
    TargetsMismatch,
    /// More targets than the tool allows.
    TooManyTargets,
    /// Neither a device allowlist nor a team ID is configured.
    NoFence,
    /// A target is not on `FLEETWATCH_WRITE_DEVICE_IDS`.
    NotAllowlisted,
    /// The sandbox team's ID differs from `FLEETWATCH_WRITE_TEAM_ID`.
    TeamMismatch,
    /// `FLEETWATCH_WRITE_TEAM_ID` is set but the sandbox did not report a team ID.
    TeamNotReported,
    /// A target is not on the sandbox team's device list.
    NotOnTeam,
    /// The stream destination is not on the sandbox team's list.
    StreamNotFound,
    /// The event is not the one the device reports as current or next.
    EventMismatch,
    /// Live state changed since the approval (online, recording or next event).
    FingerprintMoved,
    /// A disruptive change while a target is recording.
    Recording,
    /// A disruptive change while an event is on now.
    EventLive,
    /// A disruptive change with an event starting within the lead window.
    EventSoon {
        /// Minutes until the event starts, rounded up.
        minutes: u32,
    },
    /// A read through the sandbox sign-in failed or timed out.
    ReadFailed,
    /// There is no sandbox sign-in.
    NoSignIn,
    /// The sandbox sign-in was refused by Epiphan (expired or revoked).
    SignInExpired,
    /// The executor is at its connection limit.
    Busy,
    /// The executor could not complete the check for an internal reason (logged locally).
    Internal,
}

impl Refusal {
    /// Stable reason code, used verbatim in audit rows.
    pub fn code(&self) -> &'static str {
        todo!()
    }

    /// One sentence for the operator: what failed and what to do.
    pub fn message(&self) -> String {
        todo!()
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message())
    }
}
