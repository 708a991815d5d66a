//! The fleet-state model: Epiphan read results parsed into typed structs, the fingerprint of a
//! change's targets, the disruptive-window rule, and replay-folder time templates.
//!
//! Parsers are tolerant of the shape variations Epiphan is known to produce, and strict about
//! the rest: text, an unknown shape, or a non-empty list with no `Id` is a [`ReadError`],
//! never an empty fleet.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::canonical::Canonical;

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
}

/// A stream (publisher) on a channel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Publisher {
    /// Protocol: rtmp, srt, …
    pub kind: String,
    /// Whether it reports as started/streaming.
    pub active: bool,
}

/// One channel of a device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Channel {
    /// Channel number as a string (`"1"`).
    pub number: String,
    /// Name.
    pub name: String,
    /// Recording now.
    pub recording: bool,
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
}

/// `get_devices_in_my_team`, parsed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeviceList {
    /// Team ID, when reported.
    pub team_id: Option<String>,
    /// Devices in the order reported.
    pub devices: Vec<Device>,
}

/// Per device, per channel number: `(name if given, recording)`.
pub type RecorderStatus = BTreeMap<String, BTreeMap<String, (Option<String>, bool)>>;

/// System status of one device.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SystemStatus {
    /// CPU load percent.
    pub cpu_load: Option<f64>,
    /// CPU temperature in °C.
    pub cpu_temp_c: Option<f64>,
    /// Up since (RFC 3339 UTC).
    pub up_since: Option<String>,
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

/// Parses `get_devices_in_my_team` (object with `devices`, or a bare list).
pub fn parse_device_list(value: &serde_json::Value) -> Result<DeviceList, ReadError> {
    let _ = value;
    todo!()
}

/// Parses `get_recorder_status_for_devices` in any of its known shapes.
pub fn parse_recorder_status(value: &serde_json::Value) -> Result<RecorderStatus, ReadError> {
    let _ = value;
    todo!()
}

/// Recorder status is fresher than the device list's channel flags and overrides them.
pub fn apply_recorder_status(list: &mut DeviceList, status: &RecorderStatus) {
    let _ = (list, status);
    todo!()
}

/// Parses `get_system_status_for_devices`.
pub fn parse_system_status(value: &serde_json::Value) -> Result<BTreeMap<String, SystemStatus>, ReadError> {
    let _ = value;
    todo!()
}

/// Parses `get_current_or_next_cms_events_for_devices`: per device, its event or `None`.
pub fn parse_events(value: &serde_json::Value) -> Result<BTreeMap<String, Option<Event>>, ReadError> {
    let _ = value;
    todo!()
}

/// Parses `get_stream_endpoints`.
pub fn parse_stream_endpoints(value: &serde_json::Value) -> Result<Vec<StreamEndpoint>, ReadError> {
    let _ = value;
    todo!()
}

/// Parses an event time: RFC 3339 (naive means UTC) or epoch seconds/milliseconds
/// (milliseconds when above 1e11).
pub fn parse_time(value: &serde_json::Value) -> Option<jiff::Timestamp> {
    let _ = value;
    todo!()
}

/// Formats a timestamp as RFC 3339 UTC with seconds (`2026-09-24T20:08:00Z`).
pub fn format_time(t: jiff::Timestamp) -> String {
    let _ = t;
    todo!()
}

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
    pub fn canonical(&self) -> Canonical {
        todo!()
    }
}

/// The fingerprint of `targets`: a target missing from `devices` is an error naming it.
pub fn fingerprint(
    devices: &DeviceList,
    events: &BTreeMap<String, Option<Event>>,
    targets: &[String],
) -> Result<Fingerprint, String> {
    let _ = (devices, events, targets);
    todo!()
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

/// The disruptive-window rule. An event that has ended blocks nothing.
pub fn room_block(
    device: &Device,
    event: Option<&Event>,
    now: jiff::Timestamp,
    lead_minutes: u32,
    stops_recording: bool,
) -> RoomBlock {
    let _ = (device, event, now, lead_minutes, stops_recording);
    todo!()
}

/// Why a replay template did not resolve.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("replay template {template:?}: {problem}")]
pub struct TemplateError {
    /// The template text.
    pub template: String,
    /// What is wrong.
    pub problem: &'static str,
}

/// Resolves `{{now}}`, `{{now+25m}}`, `{{now-48h}}` (minutes `m`, hours `h`) against `now`,
/// written as RFC 3339 UTC. Other `{{…}}` text is an error.
pub fn resolve_templates(text: &str, now: jiff::Timestamp) -> Result<String, TemplateError> {
    let _ = (text, now);
    todo!()
}
