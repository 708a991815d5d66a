//! The tool catalogue (names, input schemas) and the read answers, built from team state in
//! Epiphan's result shapes.

use jiff::Timestamp;
use serde_json::{Map, Value, json};

use crate::state::{self, TeamState, channel_state, device_id, is_online};

/// Whether a tool reads or writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Read,
    Write,
}

/// One tool the simulator lists.
pub(crate) struct ToolDef {
    pub name: &'static str,
    pub kind: Kind,
    pub description: &'static str,
    pub schema: fn() -> Value,
}

fn no_args() -> Value {
    json!({"type": "object", "properties": {}})
}
fn device_ids() -> Value {
    json!({"type": "object", "properties": {"device_ids": {"type": "array", "items": {"type": "string"}}}, "required": ["device_ids"]})
}
fn optional_device_ids() -> Value {
    json!({"type": "object", "properties": {"device_ids": {"type": "array", "items": {"type": "string"}}}})
}
fn device_id_arg() -> Value {
    json!({"type": "object", "properties": {"device_id": {"type": "string"}}, "required": ["device_id"]})
}
fn device_channel() -> Value {
    json!({"type": "object", "properties": {"device_id": {"type": "string"}, "channel_id": {"type": "string"}}, "required": ["device_id", "channel_id"]})
}
fn events_until() -> Value {
    json!({"type": "object", "properties": {"until": {"type": "string", "format": "date-time"}, "device_ids": {"type": "array", "items": {"type": "string"}}}})
}
fn event_for_device() -> Value {
    json!({"type": "object", "properties": {"device_id": {"type": "string"}, "until": {"type": "string", "format": "date-time"}}, "required": ["device_id"]})
}
fn stream_id() -> Value {
    json!({"type": "object", "properties": {"stream_id": {"type": "string"}}, "required": ["stream_id"]})
}
fn query() -> Value {
    json!({"type": "object", "properties": {"query": {"type": "string"}, "id": {"type": "string"}}})
}
fn batch_recording() -> Value {
    json!({"type": "object", "properties": {"action": {"type": "string", "enum": ["start", "stop"]}, "device_ids": {"type": "array", "items": {"type": "string"}}}, "required": ["action", "device_ids"]})
}
fn stream_control() -> Value {
    json!({"type": "object", "properties": {"stream_id": {"type": "string"}, "device_id": {"type": "string"}, "channel_id": {"type": "string"}}, "required": ["stream_id", "device_id", "channel_id"]})
}
fn confirm_event() -> Value {
    json!({"type": "object", "properties": {"device_id": {"type": "string"}, "event_id": {"type": "string"}}, "required": ["device_id", "event_id"]})
}
fn event_fields() -> Value {
    json!({"type": "object", "properties": {"device_id": {"type": "string"}, "event_id": {"type": "string"}, "title": {"type": "string"}, "start": {"type": "string"}, "end": {"type": "string"}, "action": {"type": "string"}}})
}
fn endpoint_fields() -> Value {
    json!({"type": "object", "properties": {"stream_id": {"type": "string"}, "name": {"type": "string"}, "url": {"type": "string"}, "stream_key": {"type": "string"}}})
}
fn preset() -> Value {
    json!({"type": "object", "properties": {"preset_id": {"type": "string"}, "device_ids": {"type": "array", "items": {"type": "string"}}}, "required": ["device_ids"]})
}
fn switch_cms() -> Value {
    json!({"type": "object", "properties": {"device_ids": {"type": "array", "items": {"type": "string"}}, "cms": {"type": "string"}}, "required": ["device_ids"]})
}

macro_rules! tool {
    ($name:literal, $kind:ident, $desc:literal, $schema:ident) => {
        ToolDef {
            name: $name,
            kind: Kind::$kind,
            description: $desc,
            schema: $schema,
        }
    };
}

/// Every tool Epiphan's server is known to offer.
pub(crate) const TOOLS: &[ToolDef] = &[
    tool!(
        "get_devices_in_my_team",
        Read,
        "List the devices in your team with their channels.",
        no_args
    ),
    tool!(
        "get_device_info",
        Read,
        "Details of one device.",
        device_id_arg
    ),
    tool!(
        "get_device_sources",
        Read,
        "Video and audio inputs of one device.",
        device_id_arg
    ),
    tool!(
        "get_system_status_for_devices",
        Read,
        "CPU load, temperature and uptime per device.",
        device_ids
    ),
    tool!(
        "get_recorder_status_for_devices",
        Read,
        "Recording state of every channel per device.",
        device_ids
    ),
    tool!(
        "get_storage_status_for_devices",
        Read,
        "Storage capacity and free space per device.",
        device_ids
    ),
    tool!(
        "get_channel_settings",
        Read,
        "Settings of one channel.",
        device_channel
    ),
    tool!(
        "get_channel_image",
        Read,
        "A preview picture of one channel.",
        device_channel
    ),
    tool!(
        "get_channel_audio_levels",
        Read,
        "Audio levels of one channel.",
        device_channel
    ),
    tool!(
        "get_stream_endpoint",
        Read,
        "One stream destination.",
        stream_id
    ),
    tool!(
        "get_stream_endpoints",
        Read,
        "The team's stream destinations.",
        no_args
    ),
    tool!(
        "get_team_presets",
        Read,
        "The team's configuration presets.",
        no_args
    ),
    tool!(
        "get_cms_events_for_device",
        Read,
        "Scheduled events of one device.",
        device_id_arg
    ),
    tool!(
        "get_cms_events_for_devices",
        Read,
        "Scheduled events per device.",
        optional_device_ids
    ),
    tool!(
        "get_current_or_next_cms_event_for_device",
        Read,
        "The event on now or next for one device.",
        event_for_device
    ),
    tool!(
        "get_current_or_next_cms_events_for_devices",
        Read,
        "The event on now or next per device, up to a time.",
        events_until
    ),
    tool!(
        "get_cms_names_for_devices",
        Read,
        "The scheduling system each device uses.",
        optional_device_ids
    ),
    tool!(
        "get_devices_by_cms",
        Read,
        "Devices grouped by scheduling system.",
        no_args
    ),
    tool!("kb_search", Read, "Search the knowledge base.", query),
    tool!("kb_fetch", Read, "Fetch one knowledge-base article.", query),
    tool!(
        "batch_recording",
        Write,
        "Start or stop recording on channels.",
        batch_recording
    ),
    tool!(
        "start_stream_endpoint",
        Write,
        "Start streaming a channel to a destination.",
        stream_control
    ),
    tool!(
        "stop_stream_endpoint",
        Write,
        "Stop streaming a channel to a destination.",
        stream_control
    ),
    tool!(
        "create_cms_event",
        Write,
        "Schedule an event on a device.",
        event_fields
    ),
    tool!(
        "update_cms_event",
        Write,
        "Change a scheduled event.",
        event_fields
    ),
    tool!(
        "delete_cms_event",
        Write,
        "Delete a scheduled event.",
        event_fields
    ),
    tool!(
        "cms_event_action",
        Write,
        "Act on a scheduled event (start, stop, extend).",
        event_fields
    ),
    tool!(
        "confirm_cms_event_on_device",
        Write,
        "Confirm a scheduled event on a device.",
        confirm_event
    ),
    tool!(
        "create_stream_endpoint",
        Write,
        "Create a stream destination.",
        endpoint_fields
    ),
    tool!(
        "update_stream_endpoint",
        Write,
        "Change a stream destination.",
        endpoint_fields
    ),
    tool!(
        "delete_stream_endpoint",
        Write,
        "Delete a stream destination.",
        endpoint_fields
    ),
    tool!(
        "apply_team_preset",
        Write,
        "Apply a team preset to devices.",
        preset
    ),
    tool!(
        "switch_device_to_cms",
        Write,
        "Move devices to another scheduling system.",
        switch_cms
    ),
    tool!("batch_reboot", Write, "Reboot devices.", device_ids),
    tool!(
        "batch_firmware_update",
        Write,
        "Update device firmware.",
        device_ids
    ),
];

pub(crate) fn find(name: &str) -> Option<&'static ToolDef> {
    TOOLS.iter().find(|t| t.name == name)
}

/// True for a write tool (every write tool Epiphan lists is known to the simulator).
pub fn is_write(name: &str) -> bool {
    find(name).is_some_and(|t| t.kind == Kind::Write)
}

/// Applies a write to the team; `Err` is an error result's text.
pub(crate) fn write(
    team: &mut TeamState,
    tool: &str,
    args: &Value,
    now: Timestamp,
) -> Result<Value, String> {
    match tool {
        "batch_recording" => team.batch_recording(args, now),
        "batch_reboot" => team.batch_reboot(args, now),
        "batch_firmware_update" => team.batch_firmware_update(args, now),
        "start_stream_endpoint" => team.stream_endpoint(args, true),
        "stop_stream_endpoint" => team.stream_endpoint(args, false),
        "confirm_cms_event_on_device" => team.confirm_event(args),
        other => team.generic_write(other, args, now),
    }
}

/// Answers a read from team state; `Err` is an error result's text.
pub(crate) fn read(
    team: &TeamState,
    tool: &str,
    args: &Value,
    now: Timestamp,
) -> Result<Value, String> {
    match tool {
        "get_devices_in_my_team" => Ok(device_list(team)),
        "get_device_info" => {
            let id = arg_str(args, "device_id")?;
            team.device(id)
                .cloned()
                .ok_or_else(|| format!("Error: 404 device {id} not found"))
        }
        "get_device_sources" => {
            let id = arg_str(args, "device_id")?;
            if team.device(id).is_none() {
                return Err(format!("Error: 404 device {id} not found"));
            }
            Ok(team
                .sources
                .get(id)
                .cloned()
                .unwrap_or_else(|| default_sources(team.device(id))))
        }
        "get_recorder_status_for_devices" => Ok(recorder_status(team, &requested(team, args))),
        "get_system_status_for_devices" => Ok(per_device(
            team,
            &requested(team, args),
            &team.system,
            |d| default_system(d, now),
        )),
        "get_storage_status_for_devices" => Ok(per_device(
            team,
            &requested(team, args),
            &team.storage,
            default_storage,
        )),
        "get_current_or_next_cms_events_for_devices" => {
            let until = until(args, now)?;
            let mut devices = Map::new();
            for id in requested(team, args) {
                devices.insert(
                    id.clone(),
                    json!({"event": event_for(team, &id, now, until)}),
                );
            }
            Ok(json!({"devices": devices}))
        }
        "get_current_or_next_cms_event_for_device" => {
            let id = arg_str(args, "device_id")?;
            if team.device(id).is_none() {
                return Err(format!("Error: 404 device {id} not found"));
            }
            let until = until(args, now)?;
            Ok(json!({"device_id": id, "event": event_for(team, id, now, until)}))
        }
        "get_stream_endpoints" => Ok(json!({"stream_endpoints": team.endpoints})),
        "get_stream_endpoint" => {
            let id = arg_str(args, "stream_id")?;
            team.endpoints
                .iter()
                .find(|e| e.get("id").and_then(Value::as_str) == Some(id))
                .cloned()
                .ok_or_else(|| format!("Error: 404 stream endpoint {id} not found"))
        }
        other => team
            .verbatim
            .get(other)
            .cloned()
            .ok_or_else(|| format!("Error: 404 Not Found (no {other} data in this simulation)")),
    }
}

fn arg_str<'a>(args: &'a Value, key: &str) -> Result<&'a str, String> {
    args.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("Error: 400 missing argument {key}"))
}

/// The device IDs a per-device read asked for (every device when the argument is absent).
fn requested(team: &TeamState, args: &Value) -> Vec<String> {
    match args.get("device_ids").and_then(Value::as_array) {
        Some(list) => list
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        None => team.device_ids(),
    }
}

fn device_list(team: &TeamState) -> Value {
    match &team.shape {
        state::ListShape::Bare => Value::Array(team.devices.clone()),
        state::ListShape::Object(extra) => {
            let mut obj = extra.clone();
            obj.insert("devices".into(), Value::Array(team.devices.clone()));
            Value::Object(obj)
        }
    }
}

fn recorder_status(team: &TeamState, ids: &[String]) -> Value {
    let mut devices = Map::new();
    for id in ids {
        // Offline or unknown devices report nothing, as a recorder that cannot be reached.
        let Some(device) = team.device(id).filter(|d| is_online(d)) else {
            continue;
        };
        let mut channels = Map::new();
        for channel in device
            .get("Channels")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let number = match channel.get("channel_id") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Number(n)) => n.to_string(),
                _ => continue,
            };
            channels.insert(
                number,
                json!({
                    "name": channel.get("name").cloned().unwrap_or(Value::Null),
                    "recording_status": {"state": channel_state(channel)},
                }),
            );
        }
        devices.insert(id.clone(), json!({"channels": channels}));
    }
    json!({"devices": devices})
}

fn per_device(
    team: &TeamState,
    ids: &[String],
    stored: &std::collections::BTreeMap<String, Value>,
    default: impl Fn(&Value) -> Value,
) -> Value {
    let mut devices = Map::new();
    for id in ids {
        let Some(device) = team.device(id).filter(|d| is_online(d)) else {
            continue;
        };
        let entry = stored.get(id).cloned().unwrap_or_else(|| default(device));
        devices.insert(id.clone(), entry);
    }
    json!({"devices": devices})
}

/// A stable small number per device, so generated status values do not change between reads.
fn seed(device: &Value) -> u64 {
    device_id(device)
        .unwrap_or("")
        .bytes()
        .fold(7u64, |acc, b| {
            acc.wrapping_mul(31).wrapping_add(u64::from(b))
        })
}

fn default_system(device: &Value, now: Timestamp) -> Value {
    let s = seed(device);
    let up_hours = 6 + (s % 400) as i64;
    let up_since = now
        .checked_sub(jiff::SignedDuration::from_hours(up_hours))
        .unwrap_or(now);
    json!({
        "cpu_load": 8 + s % 40,
        "cpu_temp_c": 38 + s % 20,
        "up_since": state::rfc3339(up_since),
    })
}

fn default_storage(device: &Value) -> Value {
    let s = seed(device);
    let total: u64 = 512_000_000_000;
    let full = device
        .get("Warnings")
        .and_then(Value::as_array)
        .is_some_and(|w| {
            w.iter()
                .any(|w| w.get("id").and_then(Value::as_str) == Some("disk_space_error"))
        });
    let free = if full {
        total / 100
    } else {
        total / 100 * (30 + s % 60)
    };
    json!({"storages": [{"id": "internal", "name": "Internal SSD", "total_bytes": total, "free_bytes": free}]})
}

fn default_sources(device: Option<&Value>) -> Value {
    let no_signal = device
        .and_then(|d| d.get("Channels"))
        .and_then(Value::as_array)
        .is_some_and(|chs| {
            chs.iter().any(|c| {
                c.get("Warnings")
                    .and_then(Value::as_array)
                    .is_some_and(|w| {
                        w.iter().any(|w| {
                            w.get("id").and_then(Value::as_str) == Some("channel_no_signal")
                        })
                    })
            })
        });
    json!({"sources": [
        {"id": "hdmi-a", "name": "HDMI-A", "type": "video", "signal": !no_signal, "resolution": if no_signal { Value::Null } else { json!("1920x1080") }},
        {"id": "sdi-a", "name": "SDI-A", "type": "video", "signal": true, "resolution": "1920x1080"},
        {"id": "xlr-a", "name": "XLR-A", "type": "audio", "signal": true},
    ]})
}

fn until(args: &Value, now: Timestamp) -> Result<Timestamp, String> {
    match args.get("until").and_then(Value::as_str) {
        Some(text) => parse_time(text).ok_or_else(|| format!("Error: 400 invalid until: {text}")),
        None => Ok(now
            .checked_add(jiff::SignedDuration::from_hours(24))
            .unwrap_or(now)),
    }
}

/// RFC 3339, or a naive `YYYY-MM-DDTHH:MM:SS` taken as UTC.
pub(crate) fn parse_time(text: &str) -> Option<Timestamp> {
    text.parse::<Timestamp>()
        .ok()
        .or_else(|| format!("{text}Z").parse::<Timestamp>().ok())
}

/// The device's event if it is on now or starts before `until`; an ended one is gone.
fn event_for(team: &TeamState, id: &str, now: Timestamp, until: Timestamp) -> Value {
    let Some(event) = team.events.get(id) else {
        return Value::Null;
    };
    let start = event
        .get("start")
        .and_then(Value::as_str)
        .and_then(parse_time);
    let end = event
        .get("end")
        .and_then(Value::as_str)
        .and_then(parse_time);
    if end.is_some_and(|e| e <= now) || start.is_some_and(|s| s > until) {
        return Value::Null;
    }
    event.clone()
}
