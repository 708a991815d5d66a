//! Messages on the executor's Unix socket: one request frame in, one response frame out, then
//! the connection closes. Frames are length-delimited (4-byte big-endian length, as tokio-util's
//! `LengthDelimitedCodec` writes by default) and capped at [`MAX_FRAME`] before any allocation.
//! The body is a postcard-encoded [`RequestEnvelope`] / [`ResponseEnvelope`] whose first field
//! is the wire version.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::claims::SignedApproval;
use crate::fleet::{RoomBlock, Warning};
use crate::refusal::Refusal;

/// The only wire version this build speaks. Version 2 added the passkey assertions to
/// [`SignedApproval`]; version 3 added the enrolled passkeys and the quorum per tool to
/// [`StatusReport`]; version 4 added the limits; version 5 added the firmware, the stream
/// destination's publisher state and the event's confirmation to [`Description`]; version 6
/// added the enrolled persons' approver lines and the trial mode to [`StatusReport`]; version 7
/// added the names the executor read to [`Description`], for the claims to sign; version 8
/// added [`Request::Receipt`], a change's receipt for the page to offer; version 9 added
/// [`Request::Rooms`], the fenced rooms the assistant may propose a change for; version 10
/// added why the confirm origin is not held to [`StatusReport`]; version 11 added
/// [`crate::Refusal::PasskeyOutOfScope`]; version 12 added freeze windows (`frozen`, and the
/// windows in [`StatusReport`] and [`Description`]); version 13 added
/// [`crate::Refusal::PasskeyAskerApproved`] and claims version 3 (who asked). A peer of another version is told "unknown version",
/// never "malformed",
/// because the version is decoded alone before anything else.
pub const WIRE_VERSION: u16 = 13;

/// Largest frame either side accepts, in bytes (the length prefix excluded).
pub const MAX_FRAME: usize = 64 * 1024;

/// Most approver lines a [`StatusReport`] carries (each a few hundred bytes), so a status
/// stays far below [`MAX_FRAME`].
pub const MAX_STATUS_APPROVERS: usize = 64;

/// A request with its version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestEnvelope {
    /// Always [`WIRE_VERSION`]; first so it decodes first.
    pub version: u16,
    /// The request.
    pub request: Request,
}

/// A response with its version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResponseEnvelope {
    /// Always [`WIRE_VERSION`].
    pub version: u16,
    /// The response.
    pub response: Response,
}

/// What the assistant can ask.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Request {
    /// Read-only facts about a proposed change's targets, through the sandbox sign-in.
    Describe(DescribeRequest),
    /// Run one approved change.
    Execute(ExecuteRequest),
    /// Version and configuration facts.
    Status,
    /// The receipt of the change with this approval ID (read-only).
    Receipt([u8; 16]),
    /// The rooms that can be changed: the fenced devices as the sandbox sign-in reads them
    /// now, by ID, name and channels, nothing else (read-only).
    Rooms,
}

/// An approved change to run, with the assistant's audit chain head at the moment it sent
/// the request, so the executor's audit row anchors the other side's chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecuteRequest {
    /// The signed approval.
    pub approval: SignedApproval,
    /// The assistant's audit chain head (not signed; recorded, never trusted for a decision).
    pub assistant_chain_head: [u8; 32],
}

/// A proposed change to describe. The executor validates it against its own policy and reads
/// what the arguments name (devices, channels, a stream destination, an event).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DescribeRequest {
    /// The write tool.
    pub tool: String,
    /// Canonical JSON arguments.
    pub arguments: String,
}

/// The answer to each request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Response {
    /// Facts for a proposal or a card.
    Described(Description),
    /// What happened to an `Execute`.
    Executed(Outcome),
    /// Configuration facts.
    Status(StatusReport),
    /// Nothing ran; the first failed check.
    Refused(Refusal),
    /// A change's receipt as JSON (`fleetwatch-executor receipt`), or `None` when it has none
    /// (refused, still running, or from before receipts).
    Receipt(Option<String>),
    /// The rooms that can be changed.
    Rooms(RoomList),
}

/// Most bytes the rooms of a [`RoomList`] may take, so the answer stays below [`MAX_FRAME`]
/// whatever the sandbox team holds.
pub const MAX_ROOMS_BYTES: usize = 48 * 1024;
/// Longest name (characters) of a room or channel in a [`RoomList`].
pub const MAX_ROOM_NAME_CHARS: usize = 120;
/// Most channels listed for one room in a [`RoomList`].
pub const MAX_ROOM_CHANNELS: usize = 16;

/// The fenced rooms as the sandbox sign-in read them, in the list's order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoomList {
    /// The rooms, as many as fit [`MAX_ROOMS_BYTES`].
    pub rooms: Vec<RoomFacts>,
    /// Fenced rooms left out because the answer was full.
    pub left_out: u32,
}

impl RoomFacts {
    /// Its size in the wire's encoding, for keeping a [`RoomList`] within [`MAX_ROOMS_BYTES`].
    pub fn encoded_len(&self) -> usize {
        postcard::to_stdvec(self).map_or(usize::MAX, |bytes| bytes.len())
    }
}

/// A room that can be changed: what it takes to name it and its channels, nothing else.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoomFacts {
    /// Master ID.
    pub id: String,
    /// Name, as reported (the assistant redacts it on arrival).
    pub name: String,
    /// Channels: (number, name), as reported.
    pub channels: Vec<(String, String)>,
}

/// Facts about a proposed change's targets, read fresh through the sandbox sign-in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Description {
    /// Device IDs the arguments resolve to, sorted.
    pub targets: Vec<String>,
    /// One entry per target, in `targets` order.
    pub devices: Vec<DeviceFacts>,
    /// The stream destination the arguments name, if any.
    pub stream: Option<StreamFacts>,
    /// The event the arguments name, if any, and whether it matches the device's.
    pub event_matches: Option<bool>,
    /// Canonical JSON of the fingerprint of the targets found (see [`crate::fleet::Fingerprint`]).
    pub fingerprint: String,
    /// The sandbox team's ID, when reported.
    pub team_id: Option<String>,
    /// Whether the tool is disruptive for these arguments (executor's policy).
    pub disruptive: bool,
    /// SHA-256 of the executor's policy entry for the tool.
    pub policy_digest: [u8; 32],
    /// The tool's schema version in the executor's policy.
    pub schema_version: u32,
    /// The names the executor read, as the claims sign them (never redacted by the assistant).
    pub names: Vec<crate::claims::SignedName>,
    /// The freeze window that holds this change now, if any: the executor would refuse it
    /// (`frozen`), so it is not proposed and the card offers only Deny.
    pub frozen: Option<FreezeReport>,
}

/// One span of a freeze window (the executor's `freeze:` configuration).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FreezeReport {
    /// When it starts (Unix seconds).
    pub start: i64,
    /// When it ends (Unix seconds).
    pub end: i64,
    /// What it holds, in words ("every change", "disruptive changes", tool names).
    pub holds: String,
    /// Why, in the team's words.
    pub reason: String,
    /// Whether it is in force now (else it is the next one to start).
    pub in_force: bool,
}

/// One target device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceFacts {
    /// Master ID.
    pub id: String,
    /// On the sandbox team's device list now.
    pub on_team: bool,
    /// On `FLEETWATCH_WRITE_DEVICE_IDS` (true when no allowlist is set but a team ID is).
    pub allowlisted: bool,
    /// Current name, as reported (the assistant redacts every text of a description on arrival).
    pub name: String,
    /// Model.
    pub model: String,
    /// Firmware version, as reported (empty when not).
    pub firmware: String,
    /// The newest firmware version any device of the same model on the sandbox team runs
    /// (empty when none reports one): what the card can say a firmware update moves towards.
    pub newest_firmware: String,
    /// Online now.
    pub online: bool,
    /// Any channel recording now.
    pub recording: bool,
    /// Channels: number and name and whether recording.
    pub channels: Vec<ChannelFacts>,
    /// Current or next event.
    pub event: Option<EventFacts>,
    /// The device's own warnings, as Epiphan reported them (the card puts them in words).
    pub warnings: Vec<Warning>,
    /// Disruptive-window verdict for this tool and target.
    pub block: RoomBlock,
}

/// One channel of a target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChannelFacts {
    /// Channel number as a string (`"1"`).
    pub number: String,
    /// Name.
    pub name: String,
    /// Recording now.
    pub recording: bool,
    /// The channel's warnings, as Epiphan reported them.
    pub warnings: Vec<Warning>,
}

/// An event on a target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventFacts {
    /// Event ID.
    pub id: String,
    /// Title.
    pub title: String,
    /// Start, RFC 3339 UTC.
    pub start: String,
    /// End, RFC 3339 UTC, when known.
    pub end: Option<String>,
    /// Confirmed already, when the server says.
    pub confirmed: Option<bool>,
}

/// A stream destination, without its key or full URL.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamFacts {
    /// Stream endpoint ID (UUID).
    pub id: String,
    /// On the sandbox team's list.
    pub found: bool,
    /// Name.
    pub name: String,
    /// Host of its URL only.
    pub host: String,
    /// What the named channel's publisher for this destination is doing now.
    pub publisher: PublisherState,
}

/// A channel's publisher for one stream destination, as the device list reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum PublisherState {
    /// The channel's publishers do not say which destination they send to (or the channel or
    /// device was not found): the state is not known.
    Unknown,
    /// No publisher of the channel sends to this destination.
    Absent,
    /// It exists and is stopped.
    Stopped,
    /// It is sending now.
    Running,
}

/// What happened to an approved change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum OutcomeKind {
    /// Epiphan answered with an empty error map: every device worked.
    Done,
    /// Epiphan answered with per-device errors: device ID → a code of the closed vocabulary
    /// `offline`, `busy`, `not_found`, `not_permitted`, `timed_out`, `rejected`, `other`
    /// (never Epiphan's text).
    Error(BTreeMap<String, String>),
    /// The write was sent but no trustworthy answer came back. Never retried.
    Unknown,
}

/// The outcome of an `Execute` that passed every check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    /// What happened.
    pub kind: OutcomeKind,
    /// The executor's audit chain head after recording the outcome.
    pub chain_head: [u8; 32],
}

/// The executor's configuration facts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusReport {
    /// `fleetwatch-executor` version.
    pub version: String,
    /// An allowlist or team ID is configured.
    pub fence_configured: bool,
    /// A sandbox sign-in is stored.
    pub sandbox_sign_in: bool,
    /// Installed approver key IDs.
    pub key_ids: Vec<crate::claims::KeyId>,
    /// SHA-256 of the executor's whole canonical policy.
    pub policy_digest: [u8; 32],
    /// The executor's audit chain head.
    pub chain_head: [u8; 32],
    /// Operator passkeys enrolled in the executor's approver file.
    pub passkeys_enrolled: u32,
    /// The enrolled passkeys' public approver lines, in file order (at most
    /// [`MAX_STATUS_APPROVERS`]): who may approve, for the page to list and to check an
    /// assertion against before it asks a second person. Public keys only.
    pub approvers: Vec<String>,
    /// The executor runs in the explicit trial mode (`passkeys: {quorum: 0}`).
    pub trial: bool,
    /// How many distinct persons each proposable tool needs, from the executor's
    /// configuration; 0 means the assistant's signature alone (the trial mode).
    pub quorums: Vec<ToolQuorum>,
    /// The limits the executor holds even against a valid approval, and where they stand.
    pub limits: LimitsReport,
    /// Outside the trial mode: why the confirm page's address is not held now as every
    /// Execute with passkeys requires (by the configured owner alone, on the loopback
    /// addresses), in the executor's words; `None` when it is, or when no passkey is asked.
    pub confirm_origin_not_held: Option<String>,
    /// The freeze windows in force now, then the next one to start.
    pub freeze: Vec<FreezeReport>,
}

/// The executor's limits (its `limits:` configuration) and their state now, so the card can
/// say ahead of time what the executor will refuse.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LimitsReport {
    /// Minutes a device rests after a disruptive write before another (0: no cooldown).
    pub cooldown_minutes: u32,
    /// Writes allowed per hour across the sandbox.
    pub writes_per_hour: u32,
    /// Writes made (or in flight) in the last hour.
    pub writes_last_hour: u32,
    /// How long an event with no end counts as on after its start.
    pub open_event_minutes: u32,
    /// Devices inside their cooldown now.
    pub cooling: Vec<Cooling>,
}

/// One device resting after a disruptive write.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cooling {
    /// Device ID.
    pub device: String,
    /// When the disruptive write was made (Unix seconds, the executor's clock).
    pub changed_at: i64,
    /// When the cooldown ends (Unix seconds).
    pub until: i64,
}

/// The passkeys one tool's changes need on this executor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolQuorum {
    /// The write tool.
    pub tool: String,
    /// For a change the executor's policy calls calm.
    pub calm: u32,
    /// For a change the executor's policy calls disruptive ([`Description::disruptive`]).
    pub disruptive: u32,
}

impl ToolQuorum {
    /// Every tool's passkeys per change in a few words, as both `doctor`s show them:
    /// `batch_recording 1 (2 when disruptive), batch_reboot 2`.
    pub fn summary(quorums: &[ToolQuorum]) -> String {
        quorums
            .iter()
            .map(|q| {
                if q.calm == q.disruptive {
                    format!("{} {}", q.tool, q.calm)
                } else {
                    format!("{} {} ({} when disruptive)", q.tool, q.calm, q.disruptive)
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Why a frame body did not decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// Empty frame.
    #[error("empty frame")]
    Empty,
    /// Above [`MAX_FRAME`].
    #[error("frame too large")]
    TooLarge,
    /// The version is not [`WIRE_VERSION`].
    #[error("unknown wire version")]
    UnknownVersion,
    /// Not a valid message.
    #[error("malformed frame")]
    Malformed,
    /// Bytes left over.
    #[error("trailing bytes")]
    TrailingBytes,
}

impl DecodeError {
    /// The matching refusal.
    pub fn refusal(self) -> Refusal {
        match self {
            DecodeError::Empty => Refusal::FrameEmpty,
            DecodeError::TooLarge => Refusal::FrameTooLarge,
            DecodeError::UnknownVersion => Refusal::UnknownWireVersion,
            DecodeError::Malformed => Refusal::Malformed,
            DecodeError::TrailingBytes => Refusal::TrailingBytes,
        }
    }
}

/// Encodes a request body (without the length prefix).
pub fn encode_request(request: &Request) -> Result<Vec<u8>, DecodeError> {
    encode(request)
}

/// Decodes a request body: version first, every byte consumed.
pub fn decode_request(body: &[u8]) -> Result<Request, DecodeError> {
    decode::<RequestEnvelope>(body).map(|envelope| envelope.request)
}

/// Encodes a response body (without the length prefix).
pub fn encode_response(response: &Response) -> Result<Vec<u8>, DecodeError> {
    encode(response)
}

/// Decodes a response body: version first, every byte consumed.
pub fn decode_response(body: &[u8]) -> Result<Response, DecodeError> {
    decode::<ResponseEnvelope>(body).map(|envelope| envelope.response)
}

/// Encodes like [`RequestEnvelope`] / [`ResponseEnvelope`] (postcard writes struct fields in
/// order with no names), borrowing the message instead of cloning it.
#[derive(Serialize)]
struct EnvelopeRef<'a, T> {
    version: u16,
    message: &'a T,
}

fn encode<T: Serialize>(message: &T) -> Result<Vec<u8>, DecodeError> {
    let body = postcard::to_stdvec(&EnvelopeRef {
        version: WIRE_VERSION,
        message,
    })
    .map_err(|_| DecodeError::Malformed)?;
    // The peer would refuse it; say so here rather than send it.
    if body.len() > MAX_FRAME {
        return Err(DecodeError::TooLarge);
    }
    Ok(body)
}

fn decode<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, DecodeError> {
    if body.is_empty() {
        return Err(DecodeError::Empty);
    }
    if body.len() > MAX_FRAME {
        return Err(DecodeError::TooLarge);
    }
    // The version alone first, so a newer peer is told so rather than "malformed".
    let (version, _) =
        postcard::take_from_bytes::<u16>(body).map_err(|_| DecodeError::Malformed)?;
    if version != WIRE_VERSION {
        return Err(DecodeError::UnknownVersion);
    }
    let (envelope, rest) =
        postcard::take_from_bytes::<T>(body).map_err(|_| DecodeError::Malformed)?;
    if !rest.is_empty() {
        return Err(DecodeError::TrailingBytes);
    }
    Ok(envelope)
}
