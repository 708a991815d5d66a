//! The simulated world: per team, the devices (kept as the JSON objects Epiphan returns, so a
//! replay folder's extra fields survive), their current-or-next events, stream destinations and
//! status blobs; plus the fault table and the call log shared by every team.
//!
//! Everything lives behind one `std::sync::Mutex`; no lock is ever held across an `.await`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use jiff::Timestamp;
use serde_json::{Map, Value, json};

use crate::{CallRecord, Fault};

/// How `get_devices_in_my_team` was shaped in the source, so it is answered the same way.
#[derive(Debug, Clone)]
pub(crate) enum ListShape {
    /// `{"devices": [...], <extra top-level keys>}`.
    Object(Map<String, Value>),
    /// A bare list.
    Bare,
}

/// One team's world.
#[derive(Debug, Clone)]
pub(crate) struct TeamState {
    pub shape: ListShape,
    /// Device objects (`Id`, `Name`, `Model`, …, `Channels`).
    pub devices: Vec<Value>,
    /// Current-or-next event per device ID.
    pub events: BTreeMap<String, Value>,
    /// Stream destinations `{id, name, url, stream_key}`.
    pub endpoints: Vec<Value>,
    /// `get_system_status_for_devices` entry per device ID.
    pub system: BTreeMap<String, Value>,
    /// `get_storage_status_for_devices` entry per device ID.
    pub storage: BTreeMap<String, Value>,
    /// `get_device_sources` answer per device ID.
    pub sources: BTreeMap<String, Value>,
    /// Results of read tools this simulator does not model, served as loaded.
    pub verbatim: BTreeMap<String, Value>,
    /// `(device, event)` pairs confirmed through `confirm_cms_event_on_device`.
    pub confirmed: BTreeSet<(String, String)>,
}

/// State shared by the MCP handler, the control endpoint and [`crate::SimHandle`].
pub(crate) struct Shared {
    started: Instant,
    clock: Option<Timestamp>,
    /// Bearer token → team name.
    pub tokens: BTreeMap<String, String>,
    /// Teams whose user can only view (writes answer `Error: 403 Forbidden`).
    pub view_only: std::collections::BTreeSet<String>,
    pub control_token: String,
    /// The authorization server: clients, codes and the tokens it issued.
    pub oauth: crate::oauth::OAuth,
    /// Set by [`crate::SimHandle::end_sessions`]: the next MCP request other than `initialize`
    /// is answered `404 Not Found`, as a server answers a session it no longer knows.
    pub sessions_ended: std::sync::atomic::AtomicBool,
    /// How the transport misbehaves, for testing clients ([`crate::Quirks`]).
    pub quirks: Mutex<crate::Quirks>,
    /// The `MCP-Protocol-Version` header of each DELETE that ended a session (`None`: absent).
    pub deletes: Mutex<Vec<Option<String>>>,
    inner: Mutex<Inner>,
}

struct Inner {
    teams: BTreeMap<String, TeamState>,
    faults: BTreeMap<String, Fault>,
    calls: Vec<CallRecord>,
}

impl Shared {
    pub fn new(
        clock: Option<Timestamp>,
        tokens: BTreeMap<String, String>,
        view_only: std::collections::BTreeSet<String>,
        teams: BTreeMap<String, TeamState>,
        control_token: String,
        oauth: crate::oauth::OAuth,
    ) -> Shared {
        Shared {
            started: Instant::now(),
            clock,
            tokens,
            view_only,
            control_token,
            oauth,
            sessions_ended: std::sync::atomic::AtomicBool::new(false),
            quirks: Mutex::default(),
            deletes: Mutex::default(),
            inner: Mutex::new(Inner {
                teams,
                faults: BTreeMap::new(),
                calls: Vec::new(),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves plain data behind; keep serving it.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The simulator clock.
    pub fn now(&self) -> Timestamp {
        self.clock.unwrap_or_else(Timestamp::now)
    }

    fn elapsed_ns(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Logs an arriving call and returns its index for [`Shared::answered`].
    pub fn record_call(&self, team: &str, tool: &str, arguments: &Value) -> usize {
        let received_ns = self.elapsed_ns();
        let mut inner = self.lock();
        inner.calls.push(CallRecord {
            team: team.to_string(),
            tool: tool.to_string(),
            arguments: arguments.clone(),
            received_ns,
            answered_ns: None,
        });
        inner.calls.len() - 1
    }

    /// Marks call `index` as answered now.
    pub fn answered(&self, index: usize) {
        let now = self.elapsed_ns();
        if let Some(record) = self.lock().calls.get_mut(index) {
            record.answered_ns = Some(now);
        }
    }

    pub fn calls(&self) -> Vec<CallRecord> {
        self.lock().calls.clone()
    }

    pub fn fault(&self, tool: &str) -> Option<Fault> {
        self.lock().faults.get(tool).cloned()
    }

    pub fn set_fault(&self, tool: &str, fault: Fault) {
        self.lock().faults.insert(tool.to_string(), fault);
    }

    pub fn clear_faults(&self) {
        self.lock().faults.clear();
    }

    /// Runs `f` on one team's state; `None` when the team does not exist.
    pub fn with_team<R>(&self, team: &str, f: impl FnOnce(&mut TeamState) -> R) -> Option<R> {
        self.lock().teams.get_mut(team).map(f)
    }
}

// ---- device helpers over the Epiphan JSON shape ----

pub(crate) fn device_id(device: &Value) -> Option<&str> {
    device.get("Id").and_then(Value::as_str)
}

pub(crate) fn is_online(device: &Value) -> bool {
    device
        .get("Status")
        .and_then(Value::as_str)
        .is_some_and(|s| s.eq_ignore_ascii_case("online"))
}

fn channel_number(channel: &Value) -> Option<String> {
    match channel.get("channel_id") {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    }
}

pub(crate) fn channel_state(channel: &Value) -> &str {
    channel
        .get("recording_status")
        .and_then(|r| r.get("state"))
        .and_then(Value::as_str)
        .unwrap_or("stopped")
}

/// Epoch seconds as a string, as Epiphan writes recording timestamps.
fn epoch_string(now: Timestamp) -> String {
    now.as_second().to_string()
}

/// Minute precision, as Epiphan writes `StateTime`.
pub(crate) fn state_time(now: Timestamp) -> String {
    now.strftime("%Y-%m-%dT%H:%MZ").to_string()
}

/// RFC 3339 UTC, whole seconds.
pub(crate) fn rfc3339(ts: Timestamp) -> String {
    Timestamp::from_second(ts.as_second())
        .unwrap_or(ts)
        .to_string()
}

/// Splits `<master>-N` into master and channel number.
pub(crate) fn split_channel_id(id: &str) -> Option<(&str, &str)> {
    let (master, number) = id.rsplit_once('-')?;
    if master.is_empty() || number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((master, number))
}

fn set_recording_state(channel: &mut Value, recording: bool, now: Timestamp) {
    let state = if recording { "recording" } else { "stopped" };
    let description = if recording { "Recording" } else { "Stopped" };
    if let Some(obj) = channel.as_object_mut() {
        let status = obj.entry("recording_status").or_insert_with(|| json!({}));
        if !status.is_object() {
            *status = json!({});
        }
        if let Some(status) = status.as_object_mut() {
            status.insert("state".into(), json!(state));
            status.insert("timestamp".into(), json!(epoch_string(now)));
            status.insert("description".into(), json!(description));
        }
    }
}

impl TeamState {
    pub fn device(&self, id: &str) -> Option<&Value> {
        self.devices.iter().find(|d| device_id(d) == Some(id))
    }

    pub fn device_mut(&mut self, id: &str) -> Option<&mut Value> {
        self.devices.iter_mut().find(|d| device_id(d) == Some(id))
    }

    pub fn device_ids(&self) -> Vec<String> {
        self.devices
            .iter()
            .filter_map(|d| device_id(d).map(str::to_string))
            .collect()
    }

    /// The team's stream destinations as `(id, name)`, in list order.
    pub fn endpoint_ids(&self) -> Vec<(String, String)> {
        self.endpoints
            .iter()
            .filter_map(|e| {
                let text = |k: &str| e.get(k).and_then(Value::as_str).map(str::to_string);
                Some((text("id")?, text("name").unwrap_or_default()))
            })
            .collect()
    }

    fn channel_mut(&mut self, master: &str, number: &str) -> Option<&mut Value> {
        self.device_mut(master)?
            .get_mut("Channels")?
            .as_array_mut()?
            .iter_mut()
            .find(|c| channel_number(c).as_deref() == Some(number))
    }

    /// Sets one channel's recording state; false when the channel does not exist.
    pub fn set_channel_recording(
        &mut self,
        channel_id: &str,
        recording: bool,
        now: Timestamp,
    ) -> bool {
        let Some((master, number)) = split_channel_id(channel_id) else {
            return false;
        };
        match self.channel_mut(master, number) {
            Some(channel) => {
                set_recording_state(channel, recording, now);
                true
            }
            None => false,
        }
    }

    /// Sets a device's `Status` (and `StateTime`); going offline stops its recordings, as a
    /// powered-off recorder would.
    pub fn set_online(&mut self, id: &str, online: bool, now: Timestamp) -> bool {
        let Some(device) = self.device_mut(id) else {
            return false;
        };
        if let Some(obj) = device.as_object_mut() {
            obj.insert(
                "Status".into(),
                json!(if online { "online" } else { "offline" }),
            );
            obj.insert("StateTime".into(), json!(state_time(now)));
            if !online && let Some(Value::Array(channels)) = obj.get_mut("Channels") {
                for channel in channels.iter_mut() {
                    if channel_state(channel) != "stopped" {
                        set_recording_state(channel, false, now);
                    }
                }
            }
        }
        true
    }

    pub fn remove_device(&mut self, id: &str) -> bool {
        let before = self.devices.len();
        self.devices.retain(|d| device_id(d) != Some(id));
        self.events.remove(id);
        self.system.remove(id);
        self.storage.remove(id);
        self.sources.remove(id);
        before != self.devices.len()
    }

    /// Moves (or creates) the device's current-or-next event.
    pub fn move_event(&mut self, id: &str, start: Timestamp, end: Option<Timestamp>) -> bool {
        if self.device(id).is_none() {
            return false;
        }
        let event = self.events.entry(id.to_string()).or_insert_with(
            || json!({"id": format!("evt-{id}-moved"), "title": "Scheduled recording"}),
        );
        if let Some(obj) = event.as_object_mut() {
            obj.insert("start".into(), json!(rfc3339(start)));
            obj.insert("end".into(), end.map_or(Value::Null, |e| json!(rfc3339(e))));
        }
        true
    }

    /// Replaces the device's current-or-next event with `event` (an Epiphan event object).
    pub fn set_event(&mut self, id: &str, event: Value) -> bool {
        if self.device(id).is_none() {
            return false;
        }
        self.events.insert(id.to_string(), event);
        true
    }

    // ---- writes: each returns the Epiphan write result, device ID → error ----

    /// `batch_recording`: channel IDs act on one channel, master IDs on every channel.
    pub fn batch_recording(&mut self, args: &Value, now: Timestamp) -> Result<Value, String> {
        let action = args
            .get("action")
            .and_then(Value::as_str)
            .ok_or("missing argument: action")?;
        let recording = match action {
            "start" => true,
            "stop" => false,
            other => return Err(format!("invalid action: {other}")),
        };
        let ids = string_list(args, "device_ids")?;
        let mut errors = Map::new();
        for id in ids {
            let (master, number) = match split_channel_id(&id) {
                Some((m, n)) => (m.to_string(), Some(n.to_string())),
                None => (id.clone(), None),
            };
            let Some(device) = self.device(&master) else {
                errors.insert(id, json!("device not found"));
                continue;
            };
            if !is_online(device) {
                errors.insert(id, json!("device is offline"));
                continue;
            }
            match number {
                Some(n) => {
                    if self.channel_mut(&master, &n).is_none() {
                        errors.insert(id, json!("channel not found"));
                    } else {
                        self.set_channel_recording(&format!("{master}-{n}"), recording, now);
                    }
                }
                None => {
                    if let Some(Value::Array(channels)) =
                        self.device_mut(&master).and_then(|d| d.get_mut("Channels"))
                    {
                        for channel in channels.iter_mut() {
                            set_recording_state(channel, recording, now);
                        }
                    }
                }
            }
        }
        Ok(Value::Object(errors))
    }

    /// `batch_reboot`: the device drops offline (and stops recording) while it restarts.
    pub fn batch_reboot(&mut self, args: &Value, now: Timestamp) -> Result<Value, String> {
        let ids = string_list(args, "device_ids")?;
        let mut errors = Map::new();
        for id in ids {
            match self.device(&id) {
                None => {
                    errors.insert(id, json!("device not found"));
                }
                Some(d) if !is_online(d) => {
                    errors.insert(id, json!("device is offline"));
                }
                Some(_) => {
                    self.set_online(&id, false, now);
                }
            }
        }
        Ok(Value::Object(errors))
    }

    /// `batch_firmware_update`: the device installs the newest firmware its model line runs
    /// in the team and restarts, so it drops offline like a reboot.
    pub fn batch_firmware_update(&mut self, args: &Value, now: Timestamp) -> Result<Value, String> {
        let ids = string_list(args, "device_ids")?;
        let mut errors = Map::new();
        for id in ids {
            match self.device(&id) {
                None => {
                    errors.insert(id, json!("device not found"));
                }
                Some(d) if !is_online(d) => {
                    errors.insert(id, json!("device is offline"));
                }
                Some(d) => {
                    let model = d.get("Model").and_then(Value::as_str).unwrap_or_default();
                    let newest = self
                        .devices
                        .iter()
                        .filter(|o| {
                            o.get("Model")
                                .and_then(Value::as_str)
                                .is_some_and(|m| m.eq_ignore_ascii_case(model))
                        })
                        .filter_map(|o| o.get("Firmware").and_then(Value::as_str))
                        .max_by(|a, b| fleetwatch_protocol::fleet::version_order(a, b))
                        .map(str::to_string);
                    self.set_online(&id, false, now);
                    if let (Some(newest), Some(obj)) = (
                        newest.as_ref(),
                        self.device_mut(&id).and_then(Value::as_object_mut),
                    ) {
                        obj.insert("Firmware".into(), json!(newest));
                    }
                }
            }
        }
        Ok(Value::Object(errors))
    }

    /// `start_stream_endpoint` / `stop_stream_endpoint`: flips the channel's publisher for
    /// that destination (creating it on first start).
    pub fn stream_endpoint(&mut self, args: &Value, start: bool) -> Result<Value, String> {
        let stream_id = string_arg(args, "stream_id")?;
        let device = string_arg(args, "device_id")?;
        let channel = match args.get("channel_id") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => return Err("missing argument: channel_id".into()),
        };
        let mut errors = Map::new();
        let endpoint = self
            .endpoints
            .iter()
            .find(|e| e.get("id").and_then(Value::as_str) == Some(stream_id.as_str()))
            .cloned();
        let Some(endpoint) = endpoint else {
            errors.insert(device, json!("stream endpoint not found"));
            return Ok(Value::Object(errors));
        };
        match self.device(&device) {
            None => {
                errors.insert(device, json!("device not found"));
                return Ok(Value::Object(errors));
            }
            Some(d) if !is_online(d) => {
                errors.insert(device, json!("device is offline"));
                return Ok(Value::Object(errors));
            }
            Some(_) => {}
        }
        let Some(channel_obj) = self.channel_mut(&device, &channel) else {
            errors.insert(device, json!("channel not found"));
            return Ok(Value::Object(errors));
        };
        let Some(obj) = channel_obj.as_object_mut() else {
            errors.insert(device, json!("channel not found"));
            return Ok(Value::Object(errors));
        };
        let publishers = obj.entry("Publishers").or_insert_with(|| json!([]));
        if !publishers.is_array() {
            *publishers = json!([]);
        }
        let Some(list) = publishers.as_array_mut() else {
            return Ok(Value::Object(errors));
        };
        let existing = list
            .iter_mut()
            .find(|p| p.get("stream_id").and_then(Value::as_str) == Some(stream_id.as_str()));
        match (existing, start) {
            (Some(publisher), _) => set_publisher_started(publisher, start),
            (None, true) => {
                let next = list.len() + 1;
                list.push(publisher_for(&endpoint, &next.to_string(), true));
            }
            (None, false) => {
                errors.insert(device, json!("stream is not running on this channel"));
            }
        }
        Ok(Value::Object(errors))
    }

    /// `confirm_cms_event_on_device`: accepted only for the event the device reports.
    pub fn confirm_event(&mut self, args: &Value) -> Result<Value, String> {
        let device = string_arg(args, "device_id")?;
        let event_id = string_arg(args, "event_id")?;
        let mut errors = Map::new();
        if self.device(&device).is_none() {
            errors.insert(device, json!("device not found"));
            return Ok(Value::Object(errors));
        }
        let matches = self
            .events
            .get(&device)
            .and_then(|e| e.get("id"))
            .and_then(Value::as_str)
            == Some(event_id.as_str());
        if !matches {
            errors.insert(device, json!("event not found on this device"));
            return Ok(Value::Object(errors));
        }
        if let Some(obj) = self.events.get_mut(&device).and_then(Value::as_object_mut) {
            obj.insert("confirmed".into(), json!(true));
        }
        self.confirmed.insert((device, event_id));
        Ok(Value::Object(errors))
    }

    /// Writes the simulator models only loosely: every named device must exist.
    pub fn generic_write(
        &mut self,
        tool: &str,
        args: &Value,
        now: Timestamp,
    ) -> Result<Value, String> {
        let mut errors = Map::new();
        let mut ids: Vec<String> = Vec::new();
        if let Some(Value::Array(list)) = args.get("device_ids") {
            ids.extend(list.iter().filter_map(Value::as_str).map(str::to_string));
        }
        if let Some(Value::String(id)) = args.get("device_id") {
            ids.push(id.clone());
        }
        for id in &ids {
            let master = split_channel_id(id).map_or(id.as_str(), |(m, _)| m);
            if self.device(master).is_none() {
                errors.insert(id.clone(), json!("device not found"));
            }
        }
        if !errors.is_empty() {
            return Ok(Value::Object(errors));
        }
        match tool {
            "create_stream_endpoint" => {
                let name = string_arg(args, "name")?;
                let url = string_arg(args, "url")?;
                let key = args.get("stream_key").cloned().unwrap_or(json!(""));
                let id = uuid_like(&format!("{name}{url}{}", self.endpoints.len()));
                self.endpoints
                    .push(json!({"id": id, "name": name, "url": url, "stream_key": key}));
            }
            "update_stream_endpoint" => {
                let id = string_arg(args, "stream_id")?;
                let Some(endpoint) = self
                    .endpoints
                    .iter_mut()
                    .find(|e| e.get("id").and_then(Value::as_str) == Some(id.as_str()))
                else {
                    return Err(format!("stream endpoint {id} not found"));
                };
                for key in ["name", "url", "stream_key"] {
                    if let (Some(v), Some(obj)) = (args.get(key), endpoint.as_object_mut()) {
                        obj.insert(key.into(), v.clone());
                    }
                }
            }
            "delete_stream_endpoint" => {
                let id = string_arg(args, "stream_id")?;
                let before = self.endpoints.len();
                self.endpoints
                    .retain(|e| e.get("id").and_then(Value::as_str) != Some(id.as_str()));
                if before == self.endpoints.len() {
                    return Err(format!("stream endpoint {id} not found"));
                }
            }
            "create_cms_event" => {
                let device = string_arg(args, "device_id")?;
                let title = args.get("title").cloned().unwrap_or(json!("Event"));
                let start = args.get("start").cloned().unwrap_or(json!(rfc3339(now)));
                let end = args.get("end").cloned().unwrap_or(Value::Null);
                let id = format!("evt-{}-{}", device, self.events.len() + 1);
                self.events.insert(
                    device,
                    json!({"id": id, "title": title, "start": start, "end": end}),
                );
            }
            "update_cms_event" | "delete_cms_event" | "cms_event_action" => {
                let event_id = string_arg(args, "event_id")?;
                let Some(device) = self
                    .events
                    .iter()
                    .find(|(_, e)| e.get("id").and_then(Value::as_str) == Some(event_id.as_str()))
                    .map(|(d, _)| d.clone())
                else {
                    return Err(format!("event {event_id} not found"));
                };
                if tool == "delete_cms_event" {
                    self.events.remove(&device);
                } else if tool == "update_cms_event"
                    && let Some(obj) = self.events.get_mut(&device).and_then(Value::as_object_mut)
                {
                    for key in ["title", "start", "end"] {
                        if let Some(v) = args.get(key) {
                            obj.insert(key.into(), v.clone());
                        }
                    }
                }
            }
            _ => {}
        }
        Ok(Value::Object(errors))
    }
}

fn set_publisher_started(publisher: &mut Value, started: bool) {
    if let Some(obj) = publisher.as_object_mut() {
        obj.insert(
            "status".into(),
            json!({"started": started, "state": if started { "started" } else { "stopped" }}),
        );
    }
}

/// A channel publisher for a stream destination, with its settings as Epiphan lists them
/// (the key included: hiding it is the client's job).
pub(crate) fn publisher_for(endpoint: &Value, id: &str, started: bool) -> Value {
    let url = endpoint.get("url").cloned().unwrap_or(json!(""));
    let key = endpoint.get("stream_key").cloned().unwrap_or(json!(""));
    let kind = url
        .as_str()
        .and_then(|u| u.split_once("://"))
        .map_or(
            "rtmp",
            |(scheme, _)| if scheme == "srt" { "srt" } else { "rtmp" },
        );
    let mut publisher = json!({
        "id": id,
        "type": kind,
        "stream_id": endpoint.get("id").cloned().unwrap_or(Value::Null),
        "settings": [
            {"id": "url", "type": {"name": "string"}, "title": "URL", "value": url},
            {"id": "stream", "type": {"name": "string"}, "title": "Stream key", "value": key},
        ],
    });
    set_publisher_started(&mut publisher, started);
    publisher
}

fn string_arg(args: &Value, key: &str) -> Result<String, String> {
    args.get(key)
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| format!("missing argument: {key}"))
}

fn string_list(args: &Value, key: &str) -> Result<Vec<String>, String> {
    let list = args
        .get(key)
        .and_then(Value::as_array)
        .ok_or_else(|| format!("missing argument: {key}"))?;
    list.iter()
        .map(|v| {
            v.as_str()
                .map(str::to_string)
                .ok_or_else(|| format!("{key} must hold strings"))
        })
        .collect()
}

/// A deterministic UUID-shaped ID derived from `seed` (the simulator needs stable, not secret,
/// IDs).
pub(crate) fn uuid_like(seed: &str) -> String {
    // FNV-1a, twice with different offsets, gives 128 bits.
    let mut a: u64 = 0xcbf2_9ce4_8422_2325;
    let mut b: u64 = 0x8422_2325_cbf2_9ce4;
    for byte in seed.bytes() {
        a = (a ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3);
        b = (b ^ u64::from(byte))
            .wrapping_mul(0x0000_0100_0000_01b3)
            .rotate_left(7);
    }
    let hex = format!("{a:016x}{b:016x}");
    format!(
        "{}-{}-4{}-a{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[13..16],
        &hex[17..20],
        &hex[20..32]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channel_ids_split_only_at_a_numeric_suffix() {
        assert_eq!(
            split_channel_id("19012341234-2"),
            Some(("19012341234", "2"))
        );
        assert_eq!(split_channel_id("19012341234"), None);
        assert_eq!(split_channel_id("abc-"), None);
        assert_eq!(split_channel_id("-3"), None);
        assert_eq!(split_channel_id("abc-x1"), None);
    }

    #[test]
    fn generated_ids_are_stable_and_uuid_shaped() {
        let a = uuid_like("seed");
        assert_eq!(a, uuid_like("seed"));
        assert_ne!(a, uuid_like("seed2"));
        let groups: Vec<usize> = a.split('-').map(str::len).collect();
        assert_eq!(groups, [8, 4, 4, 4, 12]);
        assert!(a.bytes().all(|b| b == b'-' || b.is_ascii_hexdigit()));
    }
}
