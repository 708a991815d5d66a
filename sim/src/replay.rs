//! Loading a replay folder (`<tool>.json` per read tool, time templates resolved against the
//! simulator clock) into mutable team state.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use jiff::Timestamp;
use serde_json::Value;

use crate::SimError;
use crate::state::{ListShape, TeamState, device_id};
use crate::tools;

fn problem(path: &Path, problem: impl Into<String>) -> SimError {
    SimError::Replay {
        path: path.to_path_buf(),
        problem: problem.into(),
    }
}

/// Keys starting with `_` are notes for people reading the folder; the real server never
/// sends them, so they are dropped from top-level objects.
fn strip_notes(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(k, _)| !k.starts_with('_'))
                .collect(),
        ),
        other => other,
    }
}

fn load_file(path: &Path, now: Timestamp) -> Result<Value, SimError> {
    let text = std::fs::read_to_string(path).map_err(|e| problem(path, e.to_string()))?;
    let text = if text.contains("{{") {
        fleetwatch_protocol::fleet::resolve_templates(&text, now)
            .map_err(|e| problem(path, e.to_string()))?
    } else {
        text
    };
    let value: Value = fleetwatch_protocol::lenient::parse(&text)
        .map_err(|e| problem(path, format!("not JSON: {e}")))?;
    Ok(strip_notes(value))
}

/// Per-device map from `{"devices": {"<id>": X}}` or a list of entries with `device_id`/`Id`.
fn per_device(value: &Value) -> BTreeMap<String, Value> {
    let devices = value.get("devices").unwrap_or(value);
    match devices {
        Value::Object(map) => map.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        Value::Array(list) => list
            .iter()
            .filter_map(|entry| {
                let id = entry
                    .get("device_id")
                    .or_else(|| entry.get("Id"))
                    .or_else(|| entry.get("id"))
                    .and_then(Value::as_str)?;
                Some((id.to_string(), entry.clone()))
            })
            .collect(),
        _ => BTreeMap::new(),
    }
}

/// Recorder-status states per channel number, from any of the known shapes.
fn recorder_states(entry: &Value) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let state_of = |channel: &Value| -> Option<String> {
        channel
            .get("recording_status")
            .and_then(|r| r.get("state"))
            .or_else(|| channel.get("state"))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    match entry.get("channels") {
        Some(Value::Object(map)) => {
            for (number, channel) in map {
                if let Some(state) = state_of(channel) {
                    out.insert(number.clone(), state);
                }
            }
        }
        Some(Value::Array(list)) => {
            for channel in list {
                let number = match channel.get("channel_id") {
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Number(n)) => n.to_string(),
                    _ => continue,
                };
                if let Some(state) = state_of(channel) {
                    out.insert(number, state);
                }
            }
        }
        _ => {}
    }
    out
}

fn is_recording_state(state: &str) -> bool {
    ["recording", "started", "running"]
        .iter()
        .any(|s| state.eq_ignore_ascii_case(s))
}

/// Loads one team from a replay folder. `get_devices_in_my_team.json` is required; every other
/// file is optional.
pub(crate) fn load(dir: &Path, now: Timestamp) -> Result<TeamState, SimError> {
    if !dir.is_dir() {
        return Err(problem(dir, "not a folder"));
    }
    let list_path = dir.join("get_devices_in_my_team.json");
    if !list_path.is_file() {
        return Err(problem(dir, "get_devices_in_my_team.json is missing"));
    }
    let list = load_file(&list_path, now)?;
    let (shape, devices) = match list {
        Value::Array(devices) => (ListShape::Bare, devices),
        Value::Object(mut map) => match map.remove("devices") {
            Some(Value::Array(devices)) => (ListShape::Object(map), devices),
            _ => return Err(problem(&list_path, "no \"devices\" list")),
        },
        _ => return Err(problem(&list_path, "neither an object nor a list")),
    };
    let mut seen = BTreeSet::new();
    for device in &devices {
        let id = device_id(device)
            .ok_or_else(|| problem(&list_path, "a device has no string \"Id\""))?;
        if !seen.insert(id.to_string()) {
            return Err(problem(&list_path, format!("device {id} is listed twice")));
        }
    }
    let mut team = TeamState {
        shape,
        devices,
        events: BTreeMap::new(),
        endpoints: Vec::new(),
        system: BTreeMap::new(),
        storage: BTreeMap::new(),
        sources: BTreeMap::new(),
        verbatim: BTreeMap::new(),
        confirmed: BTreeSet::new(),
    };

    let entries = std::fs::read_dir(dir).map_err(|e| problem(dir, e.to_string()))?;
    for entry in entries {
        let entry = entry.map_err(|e| problem(dir, e.to_string()))?;
        let path = entry.path();
        let Some(tool) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".json"))
            .map(str::to_string)
        else {
            continue;
        };
        if tool == "get_devices_in_my_team" {
            continue;
        }
        if tools::find(&tool).is_none() || tools::is_write(&tool) {
            tracing::warn!(
                "replay file {} names no known read tool; ignored",
                path.display()
            );
            continue;
        }
        let value = load_file(&path, now)?;
        match tool.as_str() {
            "get_recorder_status_for_devices" => {
                for (id, entry) in per_device(&value) {
                    let states = recorder_states(&entry);
                    for (number, state) in states {
                        team.set_channel_recording(
                            &format!("{id}-{number}"),
                            is_recording_state(&state),
                            now,
                        );
                    }
                }
            }
            "get_current_or_next_cms_events_for_devices" => {
                for (id, entry) in per_device(&value) {
                    if let Some(event @ Value::Object(_)) = entry.get("event") {
                        team.events.insert(id, event.clone());
                    }
                }
            }
            "get_system_status_for_devices" => team.system = per_device(&value),
            "get_storage_status_for_devices" => team.storage = per_device(&value),
            "get_stream_endpoints" => {
                team.endpoints = match value {
                    Value::Object(mut map) => match map.remove("stream_endpoints") {
                        Some(Value::Array(list)) => list,
                        _ => return Err(problem(&path, "no \"stream_endpoints\" list")),
                    },
                    Value::Array(list) => list,
                    _ => return Err(problem(&path, "neither an object nor a list")),
                }
            }
            _ => {
                team.verbatim.insert(tool, value);
            }
        }
    }
    Ok(team)
}
