//! What `Describe` and `Execute` both judge from the same fresh reads: the targets'
//! fingerprint and whether the event the arguments name is the one the device reports. One
//! function each, so the fingerprint a proposal is bound to at describe time and the one the
//! write is checked against are computed alike by construction.

use std::collections::BTreeMap;

use fleetwatch_protocol::Refusal;
use fleetwatch_protocol::claims::{NameKind, SignedName};
use fleetwatch_protocol::fleet::{self, DeviceList, Event, StreamEndpoint};
use fleetwatch_protocol::policy::{ChannelRef, EventRef, Validated};

/// Canonical JSON of the targets' fingerprint over the device list (recorder status already
/// applied) and the events. Every target must be on the list: one that is not is refused as
/// not on the team, never fingerprinted as absent.
pub(crate) fn fingerprint(
    devices: &DeviceList,
    events: &BTreeMap<String, Option<Event>>,
    targets: &[String],
) -> Result<String, Refusal> {
    let print = fleet::fingerprint(devices, events, targets).map_err(|_| Refusal::NotOnTeam)?;
    Ok(print
        .canonical()
        .map_err(|_| Refusal::Internal)?
        .into_string())
}

/// Whether the device the reference names reports exactly that event as its current or next.
pub(crate) fn event_matches(events: &BTreeMap<String, Option<Event>>, event: &EventRef) -> bool {
    events
        .get(&event.device)
        .and_then(Option::as_ref)
        .is_some_and(|e| e.id == event.event)
}

/// Every name a person is shown for this change, as read now, sorted: each target device's,
/// each channel's the arguments name, the stream destination's and the event's. What is not
/// found is left out (Describe's card is then deny-only, and Execute refuses it by its own
/// check). One function for both sides, so the names signed at describe time and the ones
/// compared at Execute are gathered alike by construction.
pub(crate) fn signed_names(
    devices: &DeviceList,
    endpoints: &[StreamEndpoint],
    events: &BTreeMap<String, Option<Event>>,
    validated: &Validated,
) -> Vec<SignedName> {
    let mut out = Vec::new();
    let name = |kind, id: &str, name: &str| SignedName {
        kind,
        id: id.to_owned(),
        name: name.to_owned(),
    };
    for target in &validated.targets {
        if let Some(d) = devices.devices.iter().find(|d| &d.id == target) {
            out.push(name(NameKind::Device, &d.id, &d.name));
        }
    }
    for channel in validated.channels.iter().chain(&validated.channel) {
        let found = devices
            .devices
            .iter()
            .filter(|d| d.id == channel.device)
            .flat_map(|d| d.channels.iter())
            .find(|c| c.number == channel.number);
        if let Some(c) = found {
            out.push(name(NameKind::Channel, &channel.id(), &c.name));
        }
    }
    if let Some(id) = &validated.stream_id
        && let Some(e) = endpoints.iter().find(|e| e.id.eq_ignore_ascii_case(id))
    {
        // A destination is shown with where it sends: its URL's host, never the path or the
        // query, which may hold the key.
        let shown = match e.host.as_str() {
            "" => e.name.clone(),
            host => format!("{} ({host})", e.name),
        };
        out.push(name(NameKind::Stream, id, &shown));
    }
    if let Some(event) = &validated.event
        && let Some(Some(e)) = events.get(&event.device)
        && e.id == event.event
    {
        out.push(name(NameKind::Event, &e.id, &e.title));
    }
    out.sort();
    out.dedup();
    out
}

/// Whether the channel exists on its device in the list.
pub(crate) fn channel_exists(devices: &DeviceList, channel: &ChannelRef) -> bool {
    devices
        .devices
        .iter()
        .any(|d| d.id == channel.device && d.channels.iter().any(|c| c.number == channel.number))
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
mod tests {
    use super::*;
    use serde_json::json;

    fn events(device: &str, id: &str) -> BTreeMap<String, Option<Event>> {
        fleet::parse_events(&json!({"devices": {device: {"event": {
            "id": id, "title": "Hearing", "start": "2026-12-01T10:00:00Z"
        }}}}))
        .unwrap()
    }

    /// The event and device halves are never told apart by their shape: an event ID that is
    /// all digits, like a real device ID, is still compared as the event.
    #[test]
    fn an_event_id_shaped_like_a_device_id_matches() {
        for id in ["19012349999", "abcdef0123", "evt_1"] {
            let reported = events("19012341234", id);
            let named = EventRef {
                device: "19012341234".into(),
                event: id.into(),
            };
            assert!(event_matches(&reported, &named), "{id}");
            let other = EventRef {
                device: "19012341234".into(),
                event: "19012340000".into(),
            };
            assert!(!event_matches(&reported, &other), "{id}");
            let swapped = EventRef {
                device: id.into(),
                event: "19012341234".into(),
            };
            assert!(!event_matches(&reported, &swapped), "{id}");
        }
    }
}
