//! The fleet-state model: Epiphan read results parsed into typed structs, the fingerprint of a
//! change's targets, the disruptive-window rule, and replay-folder time templates.
//!
//! Parsers are tolerant of the shape variations Epiphan is known to produce, and strict about
//! the rest: text, an unknown shape, or a non-empty list with no `Id` is a [`ReadError`],
//! never an empty fleet.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::canonical::{self, Canonical, CanonicalError};
use crate::ids;

// What only the assistant and the simulator read: system status and replay templates. Behind
// the `assistant` feature, which the executor does not enable, so it does not link them.
#[cfg(feature = "assistant")]
mod assistant;
#[cfg(feature = "assistant")]
pub use assistant::{SystemStatus, TemplateError, parse_system_status, resolve_templates};
#[cfg(feature = "assistant")]
mod stream;
#[cfg(feature = "assistant")]
pub use stream::{Redact, decode_device_list};

/// A read result that could not be understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{tool}: {problem}")]
pub struct ReadError {
    /// The read tool.
    pub tool: String,
    /// What was wrong, in plain words (never the data itself).
    pub problem: String,
}

/// A warning on a device or channel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Warning {
    /// Warning id, e.g. `disk_space_error`.
    pub id: String,
    /// Label.
    pub label: String,
    /// Message.
    pub message: String,
    /// What the warning's `data` names, when it does: the source (input) it is about.
    #[serde(default)]
    pub source: Option<String>,
    /// The channel number `data` names (a device-level warning about one channel).
    #[serde(default)]
    pub channel: Option<String>,
    /// The channel name `data` names.
    #[serde(default)]
    pub channel_name: Option<String>,
    /// How full the storage is, in percent, when `data` says (directly, or as what is free).
    #[serde(default)]
    pub used_percent: Option<u8>,
}

/// A stream (publisher) on a channel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Publisher {
    /// Protocol: rtmp, srt, …
    pub kind: String,
    /// Whether it reports as started/streaming.
    pub active: bool,
    /// The stream destination (UUID) it sends to, when the publisher says.
    #[serde(default)]
    pub stream_id: Option<String>,
}

/// One channel of a device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Channel {
    /// Channel number as a string (`"1"`).
    pub number: String,
    /// Name.
    pub name: String,
    /// Recording now (the recorder said so clearly).
    pub recording: bool,
    /// The recorder said neither recording nor a clear stopped/idle (`paused`, `starting`,
    /// `stopping`, an unknown state or none): a disruptive change counts it as recording.
    #[serde(default)]
    pub doubtful: bool,
    /// Streams.
    pub publishers: Vec<Publisher>,
    /// Warnings.
    pub warnings: Vec<Warning>,
}

/// One device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Device {
    /// Master ID.
    pub id: String,
    /// Name.
    pub name: String,
    /// Model.
    pub model: String,
    /// Group name.
    pub group: String,
    /// Firmware version.
    pub firmware: String,
    /// Online (`Status` compared case-insensitively).
    pub online: bool,
    /// `StateTime`, as reported.
    pub state_time: Option<String>,
    /// Device warnings.
    pub warnings: Vec<Warning>,
    /// Channels.
    pub channels: Vec<Channel>,
}

impl Device {
    /// True when any channel is recording.
    pub fn recording(&self) -> bool {
        self.channels.iter().any(|c| c.recording)
    }

    /// True when any channel is recording or might be ([`Channel::doubtful`]): what the
    /// disruptive-window rule judges by.
    pub fn busy(&self) -> bool {
        self.channels.iter().any(|c| c.recording || c.doubtful)
    }
}

/// `get_devices_in_my_team`, parsed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeviceList {
    /// Team ID, when reported.
    pub team_id: Option<String>,
    /// Devices in the order reported.
    pub devices: Vec<Device>,
}

/// Per device, per channel number: `(name if given, what the recorder said)`.
pub type RecorderStatus = BTreeMap<String, BTreeMap<String, (Option<String>, RecState)>>;

/// What a recorder said about one channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecState {
    /// `recording`, `started` or `running`.
    Recording,
    /// A clear `stopped` or `idle`.
    Idle,
    /// Anything else, or nothing: for a disruptive change, as good as recording.
    Unclear,
}

impl RecState {
    fn of(state: &str) -> RecState {
        if is_recording_state(state) {
            RecState::Recording
        } else if ["stopped", "idle"]
            .iter()
            .any(|s| state.trim().eq_ignore_ascii_case(s))
        {
            RecState::Idle
        } else {
            RecState::Unclear
        }
    }
}

/// A scheduled event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// Event ID.
    pub id: String,
    /// Title.
    pub title: String,
    /// Start.
    pub start: jiff::Timestamp,
    /// End, when known.
    pub end: Option<jiff::Timestamp>,
    /// Whether the event has been confirmed, when the server says (a `confirmed` flag, or a
    /// status of `confirmed` or another state).
    #[serde(default)]
    pub confirmed: Option<bool>,
}

/// A stream destination: name and URL host only (the key and path are never kept).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamEndpoint {
    /// UUID.
    pub id: String,
    /// Name.
    pub name: String,
    /// Host of the URL.
    pub host: String,
}

/// How long an event with no end counts as on after its start, unless the executor's
/// configuration says otherwise (`limits.open_event_hours`). The server reports an event as
/// "current or next", so one that began with no end given is most likely still running; four
/// hours cover a court hearing or a long rehearsal, where a shorter guess would let a restart
/// through in the middle of one.
pub const OPEN_EVENT_MINUTES: i64 = 240;

// ---- shared helpers ------------------------------------------------------------------------

fn fail(tool: &str, problem: impl Into<String>) -> ReadError {
    ReadError {
        tool: tool.to_owned(),
        problem: problem.into(),
    }
}

/// Key spelling differs between Epiphan releases (`team_id`, `teamId`, `TeamID`): keys are
/// compared lower-cased with `_` and `-` removed.
/// Compared without building the squashed key: lookups run for every member of every object
/// of a large read.
fn squashes_to(key: &str, want: &str) -> bool {
    let mut wanted = want.bytes();
    for byte in key.bytes() {
        if !byte.is_ascii() {
            // Lower-casing a non-ASCII letter can give an ASCII one (the Kelvin sign gives
            // `k`), so such a key is compared character by character. The ASCII bytes before
            // it compared alike either way.
            return squashes_to_chars(key, want);
        }
        if byte == b'_' || byte == b'-' {
            continue;
        }
        if wanted.next() != Some(byte.to_ascii_lowercase()) {
            return false;
        }
    }
    wanted.next().is_none()
}

fn squashes_to_chars(key: &str, want: &str) -> bool {
    key.chars()
        .filter(|c| *c != '_' && *c != '-')
        .flat_map(char::to_lowercase)
        .eq(want.chars())
}

/// The first value under any of `names` (given already squashed), in the order of `names`.
/// One pass over the members: the earliest name wins, and for one name the first member.
fn field<'a>(object: &'a Map<String, Value>, names: &[&str]) -> Option<&'a Value> {
    let mut best: Option<(usize, &'a Value)> = None;
    for (key, value) in object {
        if value.is_null() {
            continue;
        }
        let limit = best.map_or(names.len(), |(rank, _)| rank);
        let rank = names
            .iter()
            .take(limit)
            .position(|want| squashes_to(key, want));
        if let Some(rank) = rank {
            best = Some((rank, value));
            if rank == 0 {
                break;
            }
        }
    }
    best.map(|(_, value)| value)
}

/// Several [`field`] lookups in one pass over the members (`found[f]` is
/// `field(object, names[f])`): a device or channel is read field by field, and a pass per field
/// would walk and compare every member name again each time.
fn fields<'a, const N: usize>(
    object: &'a Map<String, Value>,
    names: [&[&str]; N],
) -> [Option<&'a Value>; N] {
    // For each lookup, the best match so far: the earliest name wins, and for one name the
    // first member.
    let mut best: [Option<(usize, &'a Value)>; N] = [None; N];
    let mut buffer = [0_u8; SQUASH_BUFFER];
    for (key, value) in object {
        if value.is_null() {
            continue;
        }
        let squashed = squash_ascii(key, &mut buffer);
        for (slot, wanted) in best.iter_mut().zip(names) {
            let limit = slot.map_or(wanted.len(), |(rank, _)| rank);
            let rank = wanted.iter().take(limit).position(|want| match squashed {
                Some(squashed) => squashed == want.as_bytes(),
                None => squashes_to(key, want),
            });
            if let Some(rank) = rank {
                *slot = Some((rank, value));
            }
        }
    }
    best.map(|slot| slot.map(|(_, value)| value))
}

/// Longest squashed key [`squash_ascii`] writes; longer keys take the slower comparison.
const SQUASH_BUFFER: usize = 32;

/// The squashed form of an ASCII key, written into `buffer`; `None` for a key with a non-ASCII
/// character (see [`squashes_to`]) or too long for the buffer.
fn squash_ascii<'b>(key: &str, buffer: &'b mut [u8; SQUASH_BUFFER]) -> Option<&'b [u8]> {
    let mut len = 0_usize;
    for byte in key.bytes() {
        if !byte.is_ascii() {
            return None;
        }
        if byte == b'_' || byte == b'-' {
            continue;
        }
        *buffer.get_mut(len)? = byte.to_ascii_lowercase();
        len = len.saturating_add(1);
    }
    buffer.get(..len)
}

/// A string or number as text (IDs and channel numbers arrive either way).
fn text_of(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn text_field(object: &Map<String, Value>, names: &[&str]) -> Option<String> {
    field(object, names).and_then(text_of)
}

/// A number or a numeric string.
fn number_of(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok().filter(|f| f.is_finite()),
        _ => None,
    }
}

/// What a result's top level holds.
fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "null instead of data",
        Value::String(_) => "text instead of data",
        Value::Bool(_) | Value::Number(_) => "a bare value instead of data",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// The per-device collection of a result: the value under `key` (or the value itself when it
/// is a bare list).
fn devices_part<'a>(tool: &str, value: &'a Value, key: &str) -> Result<&'a Value, ReadError> {
    match value {
        Value::Array(_) => Ok(value),
        Value::Object(object) => match object.iter().find(|(k, _)| squashes_to(k, key)) {
            Some((_, Value::Null)) => Err(fail(tool, format!("{key} is null"))),
            Some((_, inner)) => Ok(inner),
            None => Err(fail(tool, format!("the result has no {key} field"))),
        },
        other => Err(fail(tool, describe(other))),
    }
}

/// A device's entry in a per-device result, with its master ID.
type Keyed<'a> = (String, &'a Map<String, Value>);

/// Entries keyed by master ID, from either a map (`{"<master>": {…}}`) or a list of objects
/// carrying `device_id`/`Id`. A `null` entry is a failed read, not an empty device.
fn keyed_entries<'a>(tool: &str, part: &'a Value) -> Result<Vec<Keyed<'a>>, ReadError> {
    let mut out = Vec::new();
    match part {
        Value::Object(map) => {
            for (id, entry) in map {
                let entry = entry
                    .as_object()
                    .ok_or_else(|| fail(tool, format!("the entry for {id} is not an object")))?;
                out.push((id.clone(), entry));
            }
        }
        Value::Array(items) => {
            for item in items {
                let entry = item
                    .as_object()
                    .ok_or_else(|| fail(tool, "a list entry is not an object"))?;
                if let Some(id) = text_field(entry, &["deviceid", "id"]) {
                    out.push((id, entry));
                }
            }
            if !items.is_empty() && out.is_empty() {
                return Err(fail(tool, "no entry in the list has a device ID"));
            }
        }
        other => return Err(fail(tool, format!("devices is {}", describe(other)))),
    }
    Ok(out)
}

/// States that mean a channel is recording.
fn is_recording_state(state: &str) -> bool {
    ["recording", "started", "running"]
        .iter()
        .any(|s| state.trim().eq_ignore_ascii_case(s))
}

/// A channel's recording state: `recording_status.state`, `state` on the channel itself, or a
/// bare state string. `None` when the entry says nothing.
fn channel_state(value: &Value) -> Option<RecState> {
    match value {
        Value::String(state) => Some(RecState::of(state)),
        Value::Object(channel) => object_channel_state(channel),
        _ => None,
    }
}

/// [`channel_state`] of a channel object.
fn object_channel_state(channel: &Map<String, Value>) -> Option<RecState> {
    match field(channel, &["recordingstatus"]) {
        Some(status) => channel_state_of_fields(Some(status), None),
        None => channel_state_of_fields(None, field(channel, &["state", "status"])),
    }
}

/// [`object_channel_state`] from the channel's `recording_status` and `state`/`status` fields.
fn channel_state_of_fields(
    recording_status: Option<&Value>,
    state: Option<&Value>,
) -> Option<RecState> {
    if let Some(status) = recording_status {
        return match status {
            Value::Object(status) => field(status, &["state", "status"])
                .and_then(Value::as_str)
                .map(RecState::of),
            Value::String(state) => Some(RecState::of(state)),
            _ => None,
        };
    }
    state.and_then(Value::as_str).map(RecState::of)
}

// ---- device list ---------------------------------------------------------------------------

const DEVICES_TOOL: &str = "get_devices_in_my_team";

fn parse_warnings(value: Option<&Value>) -> Vec<Warning> {
    let Some(Value::Array(items)) = value else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(Value::as_object)
        .map(|w| {
            let data = match field(w, &["data"]) {
                Some(Value::Object(data)) => Some(data),
                _ => None,
            };
            let data_text = |names: &[&str]| {
                data.and_then(|d| text_field(d, names))
                    .filter(|t| !t.trim().is_empty())
            };
            let data_number =
                |names: &[&str]| data.and_then(|d| field(d, names)).and_then(number_of);
            // Only fields that say they are percentages: a bare `free` may be gigabytes.
            let used_percent =
                data_number(&["usedpercent", "percentused", "usagepercent", "fullpercent"])
                    .or_else(|| {
                        data_number(&["freepercent", "percentfree"]).map(|free| 100.0 - free)
                    })
                    .filter(|p| (0.0..=100.0).contains(p))
                    .map(|p| p.round() as u8);
            Warning {
                id: text_field(w, &["id"]).unwrap_or_default(),
                label: text_field(w, &["label"]).unwrap_or_default(),
                message: text_field(w, &["message"]).unwrap_or_default(),
                source: data_text(&["sourcename", "source", "inputname", "input"]),
                channel: data_text(&["channelid", "channel", "channelnumber"]),
                channel_name: data_text(&["channelname"]),
                used_percent,
            }
        })
        .collect()
}

/// A publisher counts as active when its `status` reports a running state. Epiphan's status
/// object is loosely specified, so a state string, a `started`/`active` flag or a bare string
/// are all read; anything else counts as not active.
fn parse_publisher(object: &Map<String, Value>) -> Publisher {
    let running = |s: &str| {
        [
            "started",
            "streaming",
            "running",
            "connected",
            "active",
            "publishing",
            "on",
        ]
        .iter()
        .any(|w| s.trim().eq_ignore_ascii_case(w))
    };
    let [status, kind, stream_id] = fields(
        object,
        [
            &["status"],
            &["type", "kind"],
            &["streamid", "streamendpointid", "endpointid"],
        ],
    );
    let active = match status {
        Some(Value::String(s)) => running(s),
        Some(Value::Bool(b)) => *b,
        Some(Value::Object(status)) => {
            field(status, &["state", "status"])
                .and_then(Value::as_str)
                .is_some_and(running)
                || field(status, &["started", "active", "isstarted"])
                    .and_then(Value::as_bool)
                    .unwrap_or(false)
        }
        _ => false,
    };
    Publisher {
        kind: kind.and_then(text_of).unwrap_or_default(),
        active,
        // Only a UUID, the way a destination is named; anything else is not kept.
        stream_id: stream_id
            .and_then(Value::as_str)
            .filter(|s| crate::ids::is_uuid(s))
            .map(str::to_ascii_lowercase),
    }
}

fn parse_channel(object: &Map<String, Value>) -> Option<Channel> {
    let [number, name, publishers, warnings, recording_status, state] = fields(
        object,
        [
            &["channelid", "id", "number"],
            &["name"],
            &["publishers"],
            &["warnings"],
            &["recordingstatus"],
            &["state", "status"],
        ],
    );
    let number = number.and_then(text_of)?;
    let publishers = match publishers {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_object)
            .map(parse_publisher)
            .collect(),
        _ => Vec::new(),
    };
    let said = channel_state_of_fields(recording_status, state).unwrap_or(RecState::Unclear);
    Some(Channel {
        number,
        name: name.and_then(text_of).unwrap_or_default(),
        recording: said == RecState::Recording,
        doubtful: said == RecState::Unclear,
        publishers,
        warnings: parse_warnings(warnings),
    })
}

fn parse_device(object: &Map<String, Value>, id: String) -> Device {
    let [
        channels,
        name,
        model,
        group,
        firmware,
        status,
        state_time,
        warnings,
    ] = fields(
        object,
        [
            &["channels"],
            &["name"],
            &["model"],
            &["groupname"],
            &["firmware"],
            &["status"],
            &["statetime"],
            &["warnings"],
        ],
    );
    let channels = match channels {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_object)
            .filter_map(parse_channel)
            .collect(),
        Some(Value::Object(map)) => map
            .iter()
            .filter_map(|(number, channel)| {
                let mut channel = channel.as_object()?.clone();
                channel
                    .entry("channel_id")
                    .or_insert_with(|| Value::String(number.clone()));
                parse_channel(&channel)
            })
            .collect(),
        _ => Vec::new(),
    };
    Device {
        id,
        name: name.and_then(text_of).unwrap_or_default(),
        model: model.and_then(text_of).unwrap_or_default(),
        group: group.and_then(text_of).unwrap_or_default(),
        firmware: firmware.and_then(text_of).unwrap_or_default(),
        // A number can never read `online`, so only a string is looked at (no copy).
        online: status
            .and_then(Value::as_str)
            .is_some_and(|s| s.trim().eq_ignore_ascii_case("online")),
        state_time: state_time.and_then(text_of),
        warnings: parse_warnings(warnings),
        channels,
    }
}

/// Parses `get_devices_in_my_team` (object with `devices`, or a bare list).
pub fn parse_device_list(value: &serde_json::Value) -> Result<DeviceList, ReadError> {
    let team_id = value
        .as_object()
        .and_then(|top| text_field(top, &["teamid"]));
    let items = match devices_part(DEVICES_TOOL, value, "devices")? {
        Value::Array(items) => items,
        other => {
            return Err(fail(
                DEVICES_TOOL,
                format!("devices is {}", describe(other)),
            ));
        }
    };
    let mut devices = Vec::with_capacity(items.len());
    for item in items {
        let object = item
            .as_object()
            .ok_or_else(|| fail(DEVICES_TOOL, "a device entry is not an object"))?;
        // An entry without an ID cannot be targeted or fenced; it is left out, and a list
        // where no entry has one is a failed read rather than an empty fleet.
        if let Some(id) = text_field(object, &["id"]) {
            devices.push(parse_device(object, id));
        }
    }
    if !items.is_empty() && devices.is_empty() {
        return Err(fail(DEVICES_TOOL, "no device in the list has an Id"));
    }
    Ok(DeviceList { team_id, devices })
}

// ---- recorder status -----------------------------------------------------------------------

const RECORDER_TOOL: &str = "get_recorder_status_for_devices";

/// Parses `get_recorder_status_for_devices` in any of its known shapes.
pub fn parse_recorder_status(value: &serde_json::Value) -> Result<RecorderStatus, ReadError> {
    let part = devices_part(RECORDER_TOOL, value, "devices")?;
    let mut status = RecorderStatus::new();
    for (id, entry) in keyed_entries(RECORDER_TOOL, part)? {
        let mut channels = BTreeMap::new();
        // A channel entry that states nothing is unclear, not idle.
        let mut add = |number: String, channel: &Value| {
            let said = channel_state(channel).unwrap_or(RecState::Unclear);
            let name = channel.as_object().and_then(|c| text_field(c, &["name"]));
            channels.insert(number, (name, said));
        };
        match field(entry, &["channels"]) {
            Some(Value::Object(map)) => {
                for (number, channel) in map {
                    if channel.is_null() {
                        return Err(fail(
                            RECORDER_TOOL,
                            format!("channel {number} of {id} is null"),
                        ));
                    }
                    add(number.clone(), channel);
                }
            }
            Some(Value::Array(items)) => {
                for channel in items {
                    let number = channel
                        .as_object()
                        .and_then(|c| text_field(c, &["channelid", "id", "number"]))
                        .ok_or_else(|| {
                            fail(
                                RECORDER_TOOL,
                                format!("a channel of {id} has no channel_id"),
                            )
                        })?;
                    add(number, channel);
                }
            }
            None => {}
            Some(_) => {
                return Err(fail(
                    RECORDER_TOOL,
                    format!("channels of {id} is not a map or list"),
                ));
            }
        }
        status.insert(id, channels);
    }
    Ok(status)
}

/// Recorder status is fresher than the device list's channel flags and overrides them.
pub fn apply_recorder_status(list: &mut DeviceList, status: &RecorderStatus) {
    for device in &mut list.devices {
        let Some(channels) = status.get(&device.id) else {
            continue;
        };
        for (number, (name, said)) in channels {
            let (recording, doubtful) = (*said == RecState::Recording, *said == RecState::Unclear);
            match device.channels.iter_mut().find(|c| &c.number == number) {
                Some(channel) => {
                    channel.recording = recording;
                    channel.doubtful = doubtful;
                    if let Some(name) = name {
                        channel.name.clone_from(name);
                    }
                }
                // A channel the list did not show but the recorder reports still counts: a
                // recording nobody listed must block a disruptive change all the same.
                None => device.channels.push(Channel {
                    number: number.clone(),
                    name: name.clone().unwrap_or_default(),
                    recording,
                    doubtful,
                    publishers: Vec::new(),
                    warnings: Vec::new(),
                }),
            }
        }
    }
}

// ---- events --------------------------------------------------------------------------------

const EVENTS_TOOL: &str = "get_current_or_next_cms_events_for_devices";

fn parse_event(device: &str, object: &Map<String, Value>) -> Result<Event, ReadError> {
    let id = text_field(object, &["id", "eventid"])
        .ok_or_else(|| fail(EVENTS_TOOL, format!("the event of {device} has no id")))?;
    // A start that cannot be read would hide the event from the disruptive-window rule, so it
    // fails the read instead.
    let start = field(object, &["start", "starttime", "startsat"])
        .and_then(parse_time)
        .ok_or_else(|| {
            fail(
                EVENTS_TOOL,
                format!("the event of {device} has no readable start"),
            )
        })?;
    let end = match field(object, &["end", "endtime", "endsat"]) {
        None => None,
        Some(v) => Some(parse_time(v).ok_or_else(|| {
            fail(
                EVENTS_TOOL,
                format!("the event of {device} has an unreadable end"),
            )
        })?),
    };
    let confirmed = match field(object, &["confirmed", "isconfirmed"]) {
        Some(Value::Bool(b)) => Some(*b),
        // A status that says neither (`live`, `scheduled`) tells nothing about confirming.
        _ => text_field(object, &["status", "state"]).and_then(|s| {
            let s = s.trim().to_ascii_lowercase().replace(['_', '-', ' '], "");
            match s.as_str() {
                "confirmed" => Some(true),
                "unconfirmed" | "notconfirmed" | "pending" | "pendingconfirmation" => Some(false),
                _ => None,
            }
        }),
    };
    Ok(Event {
        id,
        title: text_field(object, &["title", "name"]).unwrap_or_default(),
        start,
        end,
        confirmed,
    })
}

/// Parses `get_current_or_next_cms_events_for_devices`: per device, its event or `None`.
pub fn parse_events(
    value: &serde_json::Value,
) -> Result<BTreeMap<String, Option<Event>>, ReadError> {
    let part = devices_part(EVENTS_TOOL, value, "devices")?;
    let mut out = BTreeMap::new();
    for (id, entry) in keyed_entries(EVENTS_TOOL, part)? {
        let event = match field(entry, &["event"]) {
            None => None,
            Some(Value::Object(event)) => Some(parse_event(&id, event)?),
            Some(other) => {
                return Err(fail(
                    EVENTS_TOOL,
                    format!("the event of {id} is {}", describe(other)),
                ));
            }
        };
        out.insert(id, event);
    }
    Ok(out)
}

// ---- stream endpoints ----------------------------------------------------------------------

const STREAMS_TOOL: &str = "get_stream_endpoints";

/// The host of a URL: no scheme, user info, port, path or query, so a key carried in any of
/// those is never kept.
fn url_host(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if let Some(bracketed) = host_port.strip_prefix('[') {
        // IPv6 literal: keep the brackets, drop the port.
        return bracketed
            .split_once(']')
            .map(|(h, _)| format!("[{h}]"))
            .unwrap_or_default();
    }
    host_port
        .split(':')
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase()
}

/// Parses `get_stream_endpoints`.
pub fn parse_stream_endpoints(value: &serde_json::Value) -> Result<Vec<StreamEndpoint>, ReadError> {
    let items = match devices_part(STREAMS_TOOL, value, "streamendpoints")? {
        Value::Array(items) => items,
        other => {
            return Err(fail(
                STREAMS_TOOL,
                format!("stream_endpoints is {}", describe(other)),
            ));
        }
    };
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let object = item
            .as_object()
            .ok_or_else(|| fail(STREAMS_TOOL, "an endpoint entry is not an object"))?;
        // Only a UUID is kept as the ID: anything else in that slot could be a stream key.
        let Some(id) = text_field(object, &["id", "streamid"]).filter(|id| ids::is_uuid(id)) else {
            continue;
        };
        out.push(StreamEndpoint {
            id,
            name: text_field(object, &["name", "title"]).unwrap_or_default(),
            host: text_field(object, &["url", "uri"])
                .map(|u| url_host(&u))
                .unwrap_or_default(),
        });
    }
    if !items.is_empty() && out.is_empty() {
        return Err(fail(
            STREAMS_TOOL,
            "no endpoint in the list has a stream ID",
        ));
    }
    Ok(out)
}

// ---- time ----------------------------------------------------------------------------------

/// Parses an event time: RFC 3339 (naive means UTC) or epoch seconds/milliseconds
/// (milliseconds when above 1e11).
pub fn parse_time(value: &serde_json::Value) -> Option<jiff::Timestamp> {
    match value {
        Value::Number(n) => epoch(n.as_f64()?),
        Value::String(s) => {
            let s = s.trim();
            if let Ok(n) = s.parse::<f64>() {
                return epoch(n);
            }
            if let Ok(t) = s.parse::<jiff::Timestamp>() {
                return Some(t);
            }
            let naive = s.parse::<jiff::civil::DateTime>().ok()?;
            jiff::tz::Offset::UTC.to_timestamp(naive).ok()
        }
        _ => None,
    }
}

fn epoch(n: f64) -> Option<jiff::Timestamp> {
    if !n.is_finite() {
        return None;
    }
    let millis = if n.abs() > 1e11 { n } else { n * 1000.0 };
    // `as` saturates; out-of-range values are then refused by jiff.
    let millis = millis.round() as i64;
    jiff::Timestamp::from_millisecond(millis).ok()
}

/// Formats a timestamp as RFC 3339 UTC with seconds (`2026-09-24T20:08:00Z`).
pub fn format_time(t: jiff::Timestamp) -> String {
    let dt = jiff::tz::Offset::UTC.to_datetime(t);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        dt.year(),
        dt.month(),
        dt.day(),
        dt.hour(),
        dt.minute(),
        dt.second()
    )
}

// ---- firmware ------------------------------------------------------------------------------

/// Compares two firmware versions part by part (`4.10.0` is newer than `4.9.2`): numbers as
/// numbers, other parts as text, a missing part older than any present one.
pub fn version_order(a: &str, b: &str) -> std::cmp::Ordering {
    let parts = |v: &str| -> Vec<(u64, String)> {
        v.trim()
            .split(['.', '-', '_'])
            .map(|p| match p.parse::<u64>() {
                Ok(n) => (n, String::new()),
                Err(_) => (0, p.to_ascii_lowercase()),
            })
            .collect()
    };
    parts(a).cmp(&parts(b))
}

/// The newest firmware any device of `model` on the list runs (models compared
/// case-insensitively), or `None` when none reports one.
pub fn newest_firmware<'a>(devices: &'a DeviceList, model: &str) -> Option<&'a str> {
    devices
        .devices
        .iter()
        .filter(|d| d.model.trim().eq_ignore_ascii_case(model.trim()) && !d.firmware.is_empty())
        .map(|d| d.firmware.as_str())
        .max_by(|a, b| version_order(a, b))
}

// ---- fingerprint ---------------------------------------------------------------------------

/// One target's live state as bound into an approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetState {
    /// Online.
    pub online: bool,
    /// Any channel recording.
    pub recording: bool,
    /// Start of the current or next event (RFC 3339 UTC), or null.
    pub next_event_start: Option<String>,
}

/// Per-target live state, keyed by device ID.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Fingerprint(pub BTreeMap<String, TargetState>);

impl Fingerprint {
    /// The one canonical form compared and signed.
    pub fn canonical(&self) -> Result<Canonical, CanonicalError> {
        // Through JSON text rather than a `serde_json::Value`: the same canonical bytes, without
        // building a value tree per target only to walk it once.
        let text = serde_json::to_string(&self.0).map_err(|_| CanonicalError::NotObject)?;
        canonical::from_str(&text)
    }
}

/// The fingerprint of `targets`: a target missing from `devices` is an error naming it.
pub fn fingerprint(
    devices: &DeviceList,
    events: &BTreeMap<String, Option<Event>>,
    targets: &[String],
) -> Result<Fingerprint, String> {
    // Indexed once: a search of the list per target is quadratic in a large team. The first
    // device with an ID wins, as a search from the front would find it.
    let mut by_id: HashMap<&str, &Device> = HashMap::with_capacity(devices.devices.len());
    for device in &devices.devices {
        by_id.entry(device.id.as_str()).or_insert(device);
    }
    let mut out = BTreeMap::new();
    for target in targets {
        let device = by_id
            .get(target.as_str())
            .ok_or_else(|| format!("device {target} is not on the device list"))?;
        let next_event_start = events
            .get(target)
            .and_then(Option::as_ref)
            .map(|e| format_time(e.start));
        out.insert(
            target.clone(),
            TargetState {
                online: device.online,
                recording: device.recording(),
                next_event_start,
            },
        );
    }
    Ok(Fingerprint(out))
}

/// Whether a disruptive change to a room must wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RoomBlock {
    /// Nothing in the way.
    None,
    /// A channel is recording (not counted when the change is the stop of that recording).
    Recording,
    /// An event is on now.
    Live,
    /// An event starts within the lead window, in this many minutes (rounded up, at least 1).
    Soon(u32),
}

const NANOS_PER_MINUTE: i128 = 60_000_000_000;

/// The disruptive-window rule. An event that has ended blocks nothing.
///
/// Order: a recording, or a recorder state that is not clearly stopped ([`Device::busy`]),
/// unless the change is the stop that ends it; then an event on now (start ≤ now < end; with
/// no end, for `open_event_minutes` after its start, [`OPEN_EVENT_MINUTES`] by default), then
/// an event starting within `lead_minutes` (0 < start − now ≤ lead).
pub fn room_block(
    device: &Device,
    event: Option<&Event>,
    now: jiff::Timestamp,
    lead_minutes: u32,
    stops_recording: bool,
    open_event_minutes: u32,
) -> RoomBlock {
    if device.busy() && !stops_recording {
        return RoomBlock::Recording;
    }
    let Some(event) = event else {
        return RoomBlock::None;
    };
    let now_ns = now.as_nanosecond();
    let start_ns = event.start.as_nanosecond();
    if start_ns <= now_ns {
        let end_ns = match event.end {
            Some(end) => end.as_nanosecond(),
            None => start_ns.saturating_add(i128::from(open_event_minutes) * NANOS_PER_MINUTE),
        };
        return if now_ns < end_ns {
            RoomBlock::Live
        } else {
            RoomBlock::None
        };
    }
    let until = start_ns.saturating_sub(now_ns);
    if until <= i128::from(lead_minutes) * NANOS_PER_MINUTE {
        // Rounded up so "in 29.5 minutes" reads as 30, never as a shorter wait than real.
        let minutes = until.div_euclid(NANOS_PER_MINUTE)
            + i128::from(until.rem_euclid(NANOS_PER_MINUTE) != 0);
        RoomBlock::Soon(u32::try_from(minutes.max(1)).unwrap_or(lead_minutes))
    } else {
        RoomBlock::None
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
mod tests {
    use serde_json::json;

    use super::*;

    /// `fields` squashes each key once into a buffer; it must pick what `field` picks.
    #[test]
    fn one_pass_lookups_pick_what_single_lookups_pick() {
        let long = format!("Channel_{}ID", "_".repeat(40));
        let objects = [
            json!({"Name": "a", "name": "b", "NAME": null, "channel_id": 1, "Id": "x", "number": "7"}),
            json!({"ChannelID": null, "channel-id": "2", "id": "y", "Status": "online"}),
            json!({"\u{212A}ey": "kelvin", "state": "started", "STATUS": "stopped"}),
            json!({ long.clone(): "long", "number": 3, "recording_status": {"state": "recording"} }),
            json!({"status": {"state": "started"}, "kind": "srt", "Type": "rtmp"}),
            json!({}),
        ];
        let lookups: [&[&str]; 7] = [
            &["channelid", "id", "number"],
            &["name"],
            &["status"],
            &["state", "status"],
            &["key"],
            &["type", "kind"],
            &["recordingstatus"],
        ];
        for object in &objects {
            let map = object.as_object().unwrap();
            let together = fields(map, lookups);
            for (names, found) in lookups.iter().zip(together) {
                assert_eq!(found, field(map, names), "{names:?} in {object}");
            }
        }
        let kelvin = json!({"\u{212A}ey": "kelvin"});
        let [found] = fields(kelvin.as_object().unwrap(), [&["key"]]);
        assert_eq!(found, Some(&json!("kelvin")));
        let long_id = json!({ long: "long" });
        let [found] = fields(long_id.as_object().unwrap(), [&["channelid"]]);
        assert_eq!(found, Some(&json!("long")));
    }

    /// Indexing by ID must keep what a search from the front found: the first device with it.
    #[test]
    fn fingerprint_takes_the_first_device_with_a_repeated_id() {
        let list = parse_device_list(&json!({"devices": [
            {"Id": "d1", "Status": "online"},
            {"Id": "d1", "Status": "offline"},
        ]}))
        .unwrap();
        let print = fingerprint(&list, &BTreeMap::new(), &["d1".to_owned()]).unwrap();
        assert!(print.0["d1"].online);
        let missing = fingerprint(&list, &BTreeMap::new(), &["d1".to_owned(), "d2".to_owned()]);
        assert_eq!(
            missing.unwrap_err(),
            "device d2 is not on the device list".to_owned()
        );
    }
}
