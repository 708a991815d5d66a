//! The reads `Describe` and `Execute` make through the sandbox sign-in, parsed with the
//! protocol's tolerant parsers. A read that fails or cannot be understood is a refusal, never
//! an empty fleet.

use std::collections::BTreeMap;

use fleetwatch_protocol::Refusal;
use fleetwatch_protocol::fleet::{self, DeviceList, Event, RecorderStatus, StreamEndpoint};
use serde_json::{Map, Value, json};

use crate::epiphan::{Epiphan, ReadFailure};

/// How far ahead the current-or-next event is looked up.
const EVENT_HORIZON_HOURS: i64 = 24;

/// The refusal for a failed read. The detail goes to the local log only.
pub fn refusal(failure: ReadFailure) -> Refusal {
    match failure {
        ReadFailure::Unauthorized => Refusal::SignInExpired,
        ReadFailure::Failed(why) => {
            tracing::warn!(%why, "sandbox read failed");
            Refusal::ReadFailed
        }
    }
}

fn parse_failed(e: fleet::ReadError) -> Refusal {
    tracing::warn!(error = %e, "sandbox read not understood");
    Refusal::ReadFailed
}

/// `get_devices_in_my_team`.
pub async fn device_list(epiphan: &Epiphan) -> Result<DeviceList, Refusal> {
    let value = epiphan
        .read("get_devices_in_my_team", Map::new())
        .await
        .map_err(refusal)?;
    fleet::parse_device_list(&value).map_err(parse_failed)
}

/// `get_stream_endpoints`.
pub async fn stream_endpoints(epiphan: &Epiphan) -> Result<Vec<StreamEndpoint>, Refusal> {
    let value = epiphan
        .read("get_stream_endpoints", Map::new())
        .await
        .map_err(refusal)?;
    fleet::parse_stream_endpoints(&value).map_err(parse_failed)
}

/// `get_current_or_next_cms_events_for_devices`, until `now` + 24 h.
pub async fn events(
    epiphan: &Epiphan,
    now: jiff::Timestamp,
) -> Result<BTreeMap<String, Option<Event>>, Refusal> {
    let until = now
        .checked_add(jiff::SignedDuration::from_hours(EVENT_HORIZON_HOURS))
        .map_err(|_| Refusal::Internal)?;
    let mut args = Map::new();
    args.insert(
        "until".into(),
        json!(until.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()),
    );
    let value = epiphan
        .read("get_current_or_next_cms_events_for_devices", args)
        .await
        .map_err(refusal)?;
    fleet::parse_events(&value).map_err(parse_failed)
}

/// `get_recorder_status_for_devices` for the given (online) devices. An online device the
/// answer leaves out is a failed read: silence is not "stopped", and the device list's flags
/// are older than the judgement needs.
pub async fn recorder_status(
    epiphan: &Epiphan,
    device_ids: &[String],
) -> Result<RecorderStatus, Refusal> {
    let mut args = Map::new();
    args.insert("device_ids".into(), Value::from(device_ids.to_vec()));
    let value = epiphan
        .read("get_recorder_status_for_devices", args)
        .await
        .map_err(refusal)?;
    let status = fleet::parse_recorder_status(&value).map_err(parse_failed)?;
    if let Some(missing) = device_ids.iter().find(|id| !status.contains_key(*id)) {
        tracing::warn!(device = %missing, "recorder status left out an online device");
        return Err(Refusal::ReadFailed);
    }
    Ok(status)
}

/// Online targets present on the list, in target order.
pub fn online(list: &DeviceList, targets: &[String]) -> Vec<String> {
    targets
        .iter()
        .filter(|t| list.devices.iter().any(|d| &d.id == *t && d.online))
        .cloned()
        .collect()
}
