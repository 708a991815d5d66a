//! One consistent picture of the fleet, built from the guarded reads of a single question.
//!
//! Everything here has already been redacted and parsed by `fleetwatch_protocol::fleet`; the
//! keyword answerer and the model's digest both work from this, so they can never disagree
//! about what the fleet looked like.

use std::collections::BTreeMap;

use fleetwatch_protocol::fleet::{self, ReadError};
use serde_json::Value;

/// The fleet as read for one question.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// The clock the answer is relative to (the replay clock under `--replay`).
    pub now: jiff::Timestamp,
    /// The team ID, when the device list reported one.
    pub team_id: Option<String>,
    /// Devices in the order reported, with recorder status already applied.
    pub devices: Vec<fleet::Device>,
    /// System status per master ID (devices that were not asked about are absent).
    pub system: BTreeMap<String, fleet::SystemStatus>,
    /// Current or next event per master ID; `None` means nothing scheduled.
    pub events: BTreeMap<String, Option<fleet::Event>>,
    /// Stream destinations (name and host only).
    pub streams: Vec<fleet::StreamEndpoint>,
}

impl Snapshot {
    /// Builds a snapshot from raw (already redacted) read results.
    ///
    /// The device list is required: without it there is no fleet to talk about, and an empty
    /// one would read as "nothing is offline". The other reads are optional, but one that was
    /// made and cannot be parsed is an error rather than silently missing data.
    pub fn from_results(
        now: jiff::Timestamp,
        device_list: &Value,
        recorder: Option<&Value>,
        system: Option<&Value>,
        events: Option<&Value>,
        streams: Option<&Value>,
    ) -> Result<Snapshot, ReadError> {
        let mut list = fleet::parse_device_list(device_list)?;
        if let Some(recorder) = recorder {
            let status = fleet::parse_recorder_status(recorder)?;
            fleet::apply_recorder_status(&mut list, &status);
        }
        let system = match system {
            Some(value) => fleet::parse_system_status(value)?,
            None => BTreeMap::new(),
        };
        let events = match events {
            Some(value) => fleet::parse_events(value)?,
            None => BTreeMap::new(),
        };
        let streams = match streams {
            Some(value) => fleet::parse_stream_endpoints(value)?,
            None => Vec::new(),
        };
        Ok(Snapshot {
            now,
            team_id: list.team_id,
            devices: list.devices,
            system,
            events,
            streams,
        })
    }

    /// The device with this master ID.
    pub fn device(&self, id: &str) -> Option<&fleet::Device> {
        self.devices.iter().find(|d| d.id == id)
    }

    /// The current or next event of a device, if any.
    pub fn event_for(&self, id: &str) -> Option<&fleet::Event> {
        self.events.get(id).and_then(Option::as_ref)
    }
}
