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
    /// The reads a question may not make (their categories are closed), so what they would
    /// have said is not here and an answer must not read their absence as "none".
    pub not_read: Vec<&'static str>,
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
        let list = fleet::parse_device_list(device_list)?;
        Snapshot::from_list(now, list, recorder, system, events, streams)
    }

    /// [`Snapshot::from_results`] over a device list already decoded (and redacted).
    pub fn from_list(
        now: jiff::Timestamp,
        mut list: fleet::DeviceList,
        recorder: Option<&Value>,
        system: Option<&Value>,
        events: Option<&Value>,
        streams: Option<&Value>,
    ) -> Result<Snapshot, ReadError> {
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
            not_read: Vec::new(),
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

/// How long a snapshot is reused by the next question to the model. Every call of one question
/// answers from the snapshot that question read first; a follow-up asked within these seconds
/// ("and which of those are recording?") answers from the same picture instead of reading the
/// team again. Short, so a question after a change sees the change; a keyword answer always
/// reads anew (asking again is how its operator refreshes).
pub const REUSE_FOR: std::time::Duration = std::time::Duration::from_secs(3);

/// The last snapshot read, for the next question within [`REUSE_FOR`].
#[derive(Default)]
pub struct SnapshotCache {
    slot: tokio::sync::Mutex<Option<Cached>>,
}

struct Cached {
    at: tokio::time::Instant,
    scope: [bool; 5],
    snapshot: std::sync::Arc<Snapshot>,
}

impl SnapshotCache {
    /// The snapshot for a question that may read what `is_open` allows: the last one, when it
    /// was read for the same reads less than [`REUSE_FOR`] ago, else a new one. One read at a
    /// time: a question that arrives while another reads waits for that snapshot.
    pub async fn get(
        &self,
        reader: &crate::reads::Reader,
        is_open: &(dyn Fn(&str) -> bool + Sync),
    ) -> Result<std::sync::Arc<Snapshot>, crate::reads::ReadError> {
        self.load(reader, is_open, true).await
    }

    /// A new snapshot whatever the last one was, kept for the next question: the keyword
    /// answerer's, whose operator asks again to see the fleet anew.
    pub async fn fresh(
        &self,
        reader: &crate::reads::Reader,
        is_open: &(dyn Fn(&str) -> bool + Sync),
    ) -> Result<std::sync::Arc<Snapshot>, crate::reads::ReadError> {
        self.load(reader, is_open, false).await
    }

    async fn load(
        &self,
        reader: &crate::reads::Reader,
        is_open: &(dyn Fn(&str) -> bool + Sync),
        reuse: bool,
    ) -> Result<std::sync::Arc<Snapshot>, crate::reads::ReadError> {
        let scope = crate::reads::snapshot_scope(reader.policy(), is_open);
        let mut slot = self.slot.lock().await;
        if let Some(cached) = slot.as_ref()
            && reuse
            && cached.scope == scope
            && cached.at.elapsed() < REUSE_FOR
        {
            return Ok(std::sync::Arc::clone(&cached.snapshot));
        }
        *slot = None;
        let snapshot = std::sync::Arc::new(crate::reads::load_snapshot_in(reader, is_open).await?);
        *slot = Some(Cached {
            at: tokio::time::Instant::now(),
            scope,
            snapshot: std::sync::Arc::clone(&snapshot),
        });
        Ok(snapshot)
    }

    /// Forgets the last snapshot: the next question reads the fleet again (after it proposed a
    /// change, whose outcome the next answer should see).
    pub async fn forget(&self) {
        *self.slot.lock().await = None;
    }
}
