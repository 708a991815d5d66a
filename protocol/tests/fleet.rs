//! The fleet model: every known result shape, failed reads, the recorder override, the
//! fingerprint, the disruptive-window rule and replay templates.
// Tests may panic on a broken expectation; that is how they fail.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::collections::BTreeMap;

use fleetwatch_protocol::fleet::{
    self, Channel, Device, DeviceList, Event, Fingerprint, RecState, RoomBlock, TargetState,
};
use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

const A: &str = "19012341234";
const B: &str = "19012345678";
const C: &str = "19012349999";

fn fixture(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

fn ts(s: &str) -> Timestamp {
    s.parse().unwrap()
}

fn now() -> Timestamp {
    ts("2026-09-24T20:00:00Z")
}

fn plus_minutes(t: Timestamp, minutes: i64) -> Timestamp {
    t.checked_add(SignedDuration::from_mins(minutes)).unwrap()
}

fn plus_seconds(t: Timestamp, seconds: i64) -> Timestamp {
    t.checked_add(SignedDuration::from_secs(seconds)).unwrap()
}

// ---- device list ---------------------------------------------------------------------------

#[test]
fn parses_the_device_list_object() {
    let list =
        fleet::parse_device_list(&fixture(include_str!("data/devices_object.json"))).unwrap();
    assert_eq!(list.team_id.as_deref(), Some("team-7f3a"));
    assert_eq!(list.devices.len(), 2);
    let a = &list.devices[0];
    assert_eq!(a.id, A);
    assert_eq!(a.name, "Aula Magna");
    assert_eq!(a.model, "Pearl-2");
    assert_eq!(a.group, "Campus Norte");
    assert_eq!(a.firmware, "4.24.6");
    assert!(a.online);
    assert_eq!(a.state_time.as_deref(), Some("2026-09-24T20:08Z"));
    assert_eq!(a.warnings.len(), 1);
    assert_eq!(a.warnings[0].id, "disk_space_error");
    assert_eq!(a.warnings[0].label, "Disk space");
    assert_eq!(a.warnings[0].message, "Less than 5% free");
    assert_eq!(a.channels.len(), 2);
    let ch1 = &a.channels[0];
    assert_eq!(ch1.number, "1");
    assert_eq!(ch1.name, "Lectern");
    assert!(ch1.recording);
    assert_eq!(ch1.publishers.len(), 2);
    assert_eq!(ch1.publishers[0].kind, "rtmp");
    assert!(ch1.publishers[0].active);
    assert_eq!(ch1.publishers[1].kind, "srt");
    assert!(!ch1.publishers[1].active);
    assert_eq!(ch1.warnings[0].id, "source_no_signal");
    assert!(!a.channels[1].recording);
    assert!(a.recording());

    let b = &list.devices[1];
    assert_eq!(b.id, B);
    assert!(!b.online, "Offline (any case) is not online");
    assert!(b.channels.is_empty());
    assert!(!b.recording());
}

#[test]
fn parses_a_bare_device_list() {
    let list =
        fleet::parse_device_list(&fixture(include_str!("data/devices_bare_list.json"))).unwrap();
    assert_eq!(list.team_id, None);
    assert_eq!(list.devices.len(), 2);
    assert!(list.devices[0].online, "ONLINE compares case-insensitively");
    assert_eq!(
        list.devices[0].channels[0].number, "1",
        "a numeric channel_id"
    );
    assert!(
        list.devices[0].channels[0].recording,
        "Recording in any case"
    );
    assert_eq!(list.devices[1].model, "EC20");
    assert_eq!(list.devices[1].group, "");
    assert!(list.devices[1].warnings.is_empty());
}

#[test]
fn team_id_under_every_known_spelling() {
    for key in ["team_id", "teamId", "TeamId", "TeamID"] {
        let value = json!({key: "t-1", "devices": [{"Id": A, "Status": "online"}]});
        let list = fleet::parse_device_list(&value).unwrap();
        assert_eq!(list.team_id.as_deref(), Some("t-1"), "{key}");
    }
    let value = json!({"devices": [{"Id": A}]});
    assert_eq!(fleet::parse_device_list(&value).unwrap().team_id, None);
}

#[test]
fn an_empty_device_list_is_an_empty_fleet() {
    assert!(
        fleet::parse_device_list(&json!({"devices": []}))
            .unwrap()
            .devices
            .is_empty()
    );
    assert!(
        fleet::parse_device_list(&json!([]))
            .unwrap()
            .devices
            .is_empty()
    );
}

#[test]
fn a_list_with_no_id_is_a_failed_read() {
    let value = json!({"devices": [{"Name": "Room 1", "Status": "online"}, {"name": "Room 2"}]});
    let error = fleet::parse_device_list(&value).unwrap_err();
    assert_eq!(error.tool, "get_devices_in_my_team");
    assert!(error.problem.contains("Id"), "{error}");
    assert!(fleet::parse_device_list(&json!([{"Ident": A}])).is_err());
}

#[test]
fn entries_without_an_id_are_left_out_when_others_have_one() {
    let value = json!([{"Id": A, "Status": "online"}, {"Name": "ghost"}]);
    let list = fleet::parse_device_list(&value).unwrap();
    assert_eq!(list.devices.len(), 1);
    assert_eq!(list.devices[0].id, A);
}

#[test]
fn text_null_and_unknown_shapes_are_failed_reads() {
    for bad in [
        json!("Error: 401 Unauthorized"),
        json!(null),
        json!(42),
        json!({"items": [{"Id": A}]}),
        json!({"devices": null}),
        json!({"devices": {"19012341234": {}}}),
        json!({"devices": "none"}),
        json!([null]),
        json!([{"Id": A}, "text"]),
    ] {
        let error = fleet::parse_device_list(&bad).unwrap_err();
        assert_eq!(error.tool, "get_devices_in_my_team", "{bad}");
    }
}

#[test]
fn a_device_named_like_an_error_is_still_a_device() {
    let value = json!({"devices": [{"Id": A, "Name": "401 Unauthorized", "Status": "online"}]});
    let list = fleet::parse_device_list(&value).unwrap();
    assert_eq!(list.devices[0].name, "401 Unauthorized");
}

// ---- recorder status -----------------------------------------------------------------------

#[test]
fn parses_recorder_status_as_a_map() {
    let status =
        fleet::parse_recorder_status(&fixture(include_str!("data/recorder_map.json"))).unwrap();
    assert_eq!(status[A]["1"], (Some("Lectern".into()), RecState::Idle));
    assert_eq!(status[A]["2"], (Some("Wide".into()), RecState::Recording));
    assert!(status[B].is_empty());
}

#[test]
fn parses_recorder_status_as_a_list_with_state_on_the_channel() {
    let status =
        fleet::parse_recorder_status(&fixture(include_str!("data/recorder_list.json"))).unwrap();
    assert_eq!(
        status[A]["1"],
        (None, RecState::Recording),
        "Started means recording"
    );
    assert_eq!(status[A]["3"], (None, RecState::Idle));
    assert_eq!(
        status[B]["1"],
        (Some("Main".into()), RecState::Recording),
        "RUNNING means recording"
    );
}

#[test]
fn only_a_clear_stopped_or_idle_is_idle_and_doubt_blocks_a_disruptive_change() {
    for (said, want) in [
        (
            json!({"recording_status": {"state": "stopped"}}),
            RecState::Idle,
        ),
        (
            json!({"recording_status": {"state": " IDLE "}}),
            RecState::Idle,
        ),
        (
            json!({"recording_status": {"state": "recording"}}),
            RecState::Recording,
        ),
        (
            json!({"recording_status": {"state": "paused"}}),
            RecState::Unclear,
        ),
        (
            json!({"recording_status": {"state": "starting"}}),
            RecState::Unclear,
        ),
        (
            json!({"recording_status": {"state": "stopping"}}),
            RecState::Unclear,
        ),
        (
            json!({"recording_status": {"state": "archiving"}}),
            RecState::Unclear,
        ),
        (json!({"recording_status": {}}), RecState::Unclear),
        (json!({"name": "no state at all"}), RecState::Unclear),
        (json!({"state": 3}), RecState::Unclear),
    ] {
        let status = fleet::parse_recorder_status(
            &json!({"devices": {A: {"channels": {"1": said.clone()}}}}),
        )
        .unwrap();
        assert_eq!(status[A]["1"].1, want, "{said}");
        let mut list = DeviceList {
            team_id: None,
            devices: vec![device(A, false)],
        };
        fleet::apply_recorder_status(&mut list, &status);
        let d = &list.devices[0];
        assert_eq!(d.recording(), want == RecState::Recording, "{said}");
        assert_eq!(d.busy(), want != RecState::Idle, "{said}");
        let verdict = fleet::room_block(d, None, now(), 30, false, OPEN_EVENT);
        let expected = if want == RecState::Idle {
            RoomBlock::None
        } else {
            RoomBlock::Recording
        };
        assert_eq!(verdict, expected, "{said}");
    }
}

#[test]
fn recorder_status_failures() {
    for bad in [
        json!("Error: 401 Unauthorized"),
        json!(null),
        json!({"devices": {A: null}}),
        json!({"devices": [{"channels": {}}]}),
        json!({"devices": {A: {"channels": {"1": null}}}}),
        json!({"devices": {A: {"channels": [{"state": "recording"}]}}}),
        json!({"devices": {A: {"channels": "recording"}}}),
        json!({"status": {}}),
    ] {
        let error = fleet::parse_recorder_status(&bad).unwrap_err();
        assert_eq!(error.tool, "get_recorder_status_for_devices", "{bad}");
    }
}

#[test]
fn recorder_status_overrides_the_device_list() {
    let mut list =
        fleet::parse_device_list(&fixture(include_str!("data/devices_object.json"))).unwrap();
    assert!(list.devices[0].channels[0].recording);
    assert!(!list.devices[0].channels[1].recording);
    let status =
        fleet::parse_recorder_status(&fixture(include_str!("data/recorder_map.json"))).unwrap();
    fleet::apply_recorder_status(&mut list, &status);
    assert!(
        !list.devices[0].channels[0].recording,
        "stopped overrides recording"
    );
    assert!(
        list.devices[0].channels[1].recording,
        "recording overrides stopped"
    );
    assert!(list.devices[0].recording());
}

#[test]
fn a_recording_channel_missing_from_the_list_is_added() {
    let mut list = DeviceList {
        team_id: None,
        devices: vec![device(A, false)],
    };
    let status = fleet::parse_recorder_status(&json!({"devices": {A: {"channels": {"4": {"state": "recording"}}}, C: {"channels": {"1": {"state": "recording"}}}}})).unwrap();
    fleet::apply_recorder_status(&mut list, &status);
    assert!(list.devices[0].recording());
    assert_eq!(list.devices[0].channels.last().unwrap().number, "4");
    assert_eq!(
        list.devices.len(),
        1,
        "status never adds a device to the team"
    );
}

// ---- system status -------------------------------------------------------------------------

#[test]
fn parses_system_status() {
    let status =
        fleet::parse_system_status(&fixture(include_str!("data/system_status.json"))).unwrap();
    let a = &status[A];
    assert_eq!(a.cpu_load, Some(18.0));
    assert_eq!(a.cpu_temp_c, Some(44.0));
    assert_eq!(a.up_since.as_deref(), Some("2026-09-20T06:00:00Z"));
}

#[test]
fn parses_system_status_spelling_variants() {
    let status =
        fleet::parse_system_status(&fixture(include_str!("data/system_status_variants.json")))
            .unwrap();
    assert_eq!(status[A].cpu_load, Some(23.5));
    assert_eq!(status[A].cpu_temp_c, Some(51.5));
    assert_eq!(status[A].up_since.as_deref(), Some("2026-09-20T04:00:00Z"));
    assert_eq!(status[B].cpu_load, Some(7.0));
    assert_eq!(status[B].cpu_temp_c, Some(39.0));
    assert_eq!(
        status[B].up_since, None,
        "a one-day duration is not a start time"
    );
    assert_eq!(status[C].cpu_load, Some(3.0));
    assert_eq!(status[C].cpu_temp_c, None);
    assert_eq!(status[C].up_since.as_deref(), Some("2026-09-20T10:26:40Z"));
}

#[test]
fn system_status_failures() {
    for bad in [
        json!("text"),
        json!(null),
        json!({"devices": {A: null}}),
        json!({"cpu": 1}),
    ] {
        assert!(fleet::parse_system_status(&bad).is_err(), "{bad}");
    }
}

// ---- events --------------------------------------------------------------------------------

#[test]
fn parses_events_with_null_and_missing() {
    let events = fleet::parse_events(&fixture(include_str!("data/events.json"))).unwrap();
    let a = events[A].as_ref().unwrap();
    assert_eq!(a.id, "evt-101");
    assert_eq!(a.title, "Physics 101");
    assert_eq!(a.start, ts("2026-09-24T21:00:00Z"));
    assert_eq!(a.end, Some(ts("2026-09-24T22:00:00Z")));
    assert_eq!(events[B], None, "event: null is nothing scheduled");
    assert_eq!(events[C], None, "no event key is nothing scheduled");
    assert!(
        !events.contains_key("0000000f"),
        "a device not reported is absent"
    );
}

#[test]
fn parses_every_event_time_form() {
    let events =
        fleet::parse_events(&fixture(include_str!("data/events_time_variants.json"))).unwrap();
    let start = ts("2026-09-24T21:00:00Z");
    let end = ts("2026-09-24T22:00:00Z");
    for id in ["0000000a", "0000000b", "0000000c", "0000000d"] {
        let event = events[id].as_ref().unwrap();
        assert_eq!(event.start, start, "{id}");
        assert_eq!(event.end, Some(end), "{id}");
    }
    let open = events["0000000e"].as_ref().unwrap();
    assert_eq!(open.start, start);
    assert_eq!(open.end, None);
}

#[test]
fn parse_time_forms() {
    let t = ts("2026-09-24T21:00:00Z");
    assert_eq!(fleet::parse_time(&json!("2026-09-24T21:00:00Z")), Some(t));
    assert_eq!(fleet::parse_time(&json!("2026-09-24T21:00:00")), Some(t));
    assert_eq!(
        fleet::parse_time(&json!("2026-09-24T17:00:00-04:00")),
        Some(t)
    );
    assert_eq!(fleet::parse_time(&json!(1790283600)), Some(t));
    assert_eq!(fleet::parse_time(&json!(1790283600000_u64)), Some(t));
    assert_eq!(fleet::parse_time(&json!("1790283600")), Some(t));
    assert_eq!(fleet::parse_time(&json!("1790283600000")), Some(t));
    // 1e11 seconds is far in the future; just above it the value is read as milliseconds.
    assert_eq!(
        fleet::parse_time(&json!(100_000_000_001_u64)),
        Some(Timestamp::from_millisecond(100_000_000_001).unwrap())
    );
    assert_eq!(fleet::parse_time(&json!("soon")), None);
    assert_eq!(fleet::parse_time(&json!(null)), None);
    assert_eq!(fleet::parse_time(&json!({"t": 1})), None);
}

#[test]
fn format_time_is_utc_with_seconds() {
    assert_eq!(
        fleet::format_time(ts("2026-09-24T23:08:00+03:00")),
        "2026-09-24T20:08:00Z"
    );
    assert_eq!(
        fleet::format_time(ts("2026-09-24T20:08:05.750Z")),
        "2026-09-24T20:08:05Z"
    );
}

#[test]
fn event_failures() {
    for bad in [
        json!("text"),
        json!(null),
        json!({"events": {}}),
        json!({"devices": {A: null}}),
        json!({"devices": {A: {"event": "Physics"}}}),
        json!({"devices": {A: {"event": {"id": "e1", "title": "x"}}}}),
        json!({"devices": {A: {"event": {"id": "e1", "start": "tomorrow"}}}}),
        json!({"devices": {A: {"event": {"id": "e1", "start": "2026-09-24T21:00:00Z", "end": "later"}}}}),
        json!({"devices": {A: {"event": {"title": "no id", "start": "2026-09-24T21:00:00Z"}}}}),
    ] {
        let error = fleet::parse_events(&bad).unwrap_err();
        assert_eq!(
            error.tool, "get_current_or_next_cms_events_for_devices",
            "{bad}"
        );
    }
}

// ---- stream endpoints ----------------------------------------------------------------------

#[test]
fn stream_endpoints_keep_name_and_host_only() {
    let value = fixture(include_str!("data/stream_endpoints.json"));
    let endpoints = fleet::parse_stream_endpoints(&value).unwrap();
    assert_eq!(endpoints.len(), 2);
    assert_eq!(endpoints[0].id, "6f1c2a9e-3b4d-4c5e-8f70-123456789abc");
    assert_eq!(endpoints[0].name, "YouTube main");
    assert_eq!(endpoints[0].host, "a.rtmp.youtube.com");
    assert_eq!(endpoints[1].host, "ingest.example.org");
    let kept = format!("{endpoints:?}");
    for secret in ["abcd-efgh", "secret", "live2", "pw", "9000", "publish"] {
        assert!(!kept.contains(secret), "{secret} kept in {kept}");
    }
}

#[test]
fn stream_endpoint_shapes_and_failures() {
    let bare = json!([{"id": "6F1C2A9E-3B4D-4C5E-8F70-123456789ABC", "name": "X", "url": "https://[2001:db8::1]:8443/path?k=v"}]);
    let endpoints = fleet::parse_stream_endpoints(&bare).unwrap();
    assert_eq!(endpoints[0].host, "[2001:db8::1]");
    assert!(
        fleet::parse_stream_endpoints(&json!({"stream_endpoints": []}))
            .unwrap()
            .is_empty()
    );
    for bad in [
        json!("text"),
        json!(null),
        json!({"endpoints": []}),
        json!({"stream_endpoints": null}),
        json!({"stream_endpoints": [{"name": "no id"}]}),
        // An ID that is not a UUID could be a stream key; it is never kept.
        json!({"stream_endpoints": [{"id": "live_abcdef0123456789", "name": "x"}]}),
    ] {
        let error = fleet::parse_stream_endpoints(&bad).unwrap_err();
        assert_eq!(error.tool, "get_stream_endpoints", "{bad}");
    }
}

// ---- fingerprint ---------------------------------------------------------------------------

fn device(id: &str, recording: bool) -> Device {
    Device {
        id: id.into(),
        name: "Room".into(),
        model: "Pearl-2".into(),
        group: String::new(),
        firmware: "4.24.6".into(),
        online: true,
        state_time: None,
        warnings: Vec::new(),
        channels: vec![Channel {
            number: "1".into(),
            name: "Main".into(),
            recording,
            doubtful: false,
            publishers: Vec::new(),
            warnings: Vec::new(),
        }],
    }
}

#[test]
fn fingerprint_canonical_form_is_exact() {
    let list =
        fleet::parse_device_list(&fixture(include_str!("data/devices_object.json"))).unwrap();
    let events = fleet::parse_events(&fixture(include_str!("data/events.json"))).unwrap();
    let fp = fleet::fingerprint(&list, &events, &[B.into(), A.into()]).unwrap();
    assert_eq!(
        fp.canonical().unwrap().as_str(),
        r#"{"19012341234":{"next_event_start":"2026-09-24T21:00:00Z","online":true,"recording":true},"19012345678":{"next_event_start":null,"online":false,"recording":false}}"#
    );
}

#[test]
fn fingerprint_moves_when_state_moves() {
    let list = DeviceList {
        team_id: None,
        devices: vec![device(A, false)],
    };
    let events = BTreeMap::new();
    let before = fleet::fingerprint(&list, &events, &[A.into()]).unwrap();
    let recording = DeviceList {
        team_id: None,
        devices: vec![device(A, true)],
    };
    let after = fleet::fingerprint(&recording, &events, &[A.into()]).unwrap();
    assert_ne!(before.canonical().unwrap(), after.canonical().unwrap());
    assert_eq!(
        before,
        Fingerprint(BTreeMap::from([(
            A.to_owned(),
            TargetState {
                online: true,
                recording: false,
                next_event_start: None
            }
        )]))
    );
}

#[test]
fn fingerprint_names_a_missing_target() {
    let list = DeviceList {
        team_id: None,
        devices: vec![device(A, false)],
    };
    let error = fleet::fingerprint(&list, &BTreeMap::new(), &[A.into(), C.into()]).unwrap_err();
    assert!(error.contains(C), "{error}");
}

// ---- room_block ----------------------------------------------------------------------------

fn event_at(start: Timestamp, end: Option<Timestamp>) -> Event {
    Event {
        id: "evt-1".into(),
        title: "Lecture".into(),
        start,
        end,
        confirmed: None,
    }
}

fn block(recording: bool, event: Option<Event>, lead: u32, stops: bool) -> RoomBlock {
    fleet::room_block(
        &device(A, recording),
        event.as_ref(),
        now(),
        lead,
        stops,
        OPEN_EVENT,
    )
}

#[test]
fn lead_window_boundaries() {
    for lead in [30_u32, 120] {
        let l = i64::from(lead);
        let soon = |m: i64| {
            Some(event_at(
                plus_minutes(now(), m),
                Some(plus_minutes(now(), m + 60)),
            ))
        };
        assert_eq!(
            block(false, soon(l - 1), lead, false),
            RoomBlock::Soon(lead - 1),
            "{lead}"
        );
        assert_eq!(
            block(false, soon(l), lead, false),
            RoomBlock::Soon(lead),
            "{lead}"
        );
        assert_eq!(
            block(false, soon(l + 1), lead, false),
            RoomBlock::None,
            "{lead}"
        );
    }
}

#[test]
fn minutes_round_up_and_are_at_least_one() {
    let at = |s: i64| Some(event_at(plus_seconds(now(), s), None));
    assert_eq!(
        block(false, at(29 * 60 + 30), 30, false),
        RoomBlock::Soon(30)
    );
    assert_eq!(block(false, at(30 * 60 + 1), 30, false), RoomBlock::None);
    assert_eq!(block(false, at(1), 30, false), RoomBlock::Soon(1));
    assert_eq!(block(false, at(60), 30, false), RoomBlock::Soon(1));
    assert_eq!(block(false, at(61), 30, false), RoomBlock::Soon(2));
}

#[test]
fn live_and_ended_events() {
    let live = Some(event_at(
        plus_minutes(now(), -10),
        Some(plus_minutes(now(), 50)),
    ));
    assert_eq!(block(false, live, 30, false), RoomBlock::Live);
    let starting_now = Some(event_at(now(), Some(plus_minutes(now(), 60))));
    assert_eq!(block(false, starting_now, 30, false), RoomBlock::Live);
    let ended = Some(event_at(
        plus_minutes(now(), -120),
        Some(plus_minutes(now(), -1)),
    ));
    assert_eq!(block(false, ended, 30, false), RoomBlock::None);
    let ending_now = Some(event_at(plus_minutes(now(), -60), Some(now())));
    assert_eq!(block(false, ending_now, 120, false), RoomBlock::None);
    assert_eq!(block(false, None, 30, false), RoomBlock::None);
}

/// The executor's default for an event with no end (`limits.open_event_hours: 4`).
const OPEN_EVENT: u32 = 240;

#[test]
fn an_event_without_an_end_is_live_for_four_hours_or_as_configured() {
    let open = |m: i64| Some(event_at(plus_minutes(now(), m), None));
    // A court hearing three hours in is still on.
    assert_eq!(block(false, open(-180), 30, false), RoomBlock::Live);
    assert_eq!(block(false, open(-239), 30, false), RoomBlock::Live);
    assert_eq!(block(false, open(-240), 30, false), RoomBlock::None);
    assert_eq!(block(false, open(-241), 30, false), RoomBlock::None);
    assert_eq!(i64::from(OPEN_EVENT), fleet::OPEN_EVENT_MINUTES);
    let shorter =
        |m: i64| fleet::room_block(&device(A, false), open(m).as_ref(), now(), 30, false, 60);
    assert_eq!(shorter(-59), RoomBlock::Live);
    assert_eq!(shorter(-60), RoomBlock::None);
}

#[test]
fn recording_blocks_unless_the_change_stops_it() {
    assert_eq!(block(true, None, 30, false), RoomBlock::Recording);
    assert_eq!(block(true, None, 30, true), RoomBlock::None);
    let live = Some(event_at(
        plus_minutes(now(), -10),
        Some(plus_minutes(now(), 50)),
    ));
    assert_eq!(block(true, live.clone(), 30, false), RoomBlock::Recording);
    // Stopping the recording is still refused while an event is on or about to start.
    assert_eq!(block(true, live, 30, true), RoomBlock::Live);
    let soon = Some(event_at(plus_minutes(now(), 10), None));
    assert_eq!(block(true, soon, 30, true), RoomBlock::Soon(10));
}

// ---- templates -----------------------------------------------------------------------------

#[test]
fn templates_resolve_against_the_clock() {
    let t = now();
    assert_eq!(
        fleet::resolve_templates("{{now}}", t).unwrap(),
        "2026-09-24T20:00:00Z"
    );
    assert_eq!(
        fleet::resolve_templates("{{now+25m}}", t).unwrap(),
        "2026-09-24T20:25:00Z"
    );
    assert_eq!(
        fleet::resolve_templates("{{now-48h}}", t).unwrap(),
        "2026-09-22T20:00:00Z"
    );
    assert_eq!(
        fleet::resolve_templates("{{now+0m}}", t).unwrap(),
        "2026-09-24T20:00:00Z"
    );
    assert_eq!(
        fleet::resolve_templates(
            r#"{"a": "{{now-5m}}", "b": "{{now+2h}}", "c": {"d": 1}}"#,
            t
        )
        .unwrap(),
        r#"{"a": "2026-09-24T19:55:00Z", "b": "2026-09-24T22:00:00Z", "c": {"d": 1}}"#
    );
    assert_eq!(
        fleet::resolve_templates("no templates }}", t).unwrap(),
        "no templates }}"
    );
}

#[test]
fn replay_events_with_templates_parse() {
    let text = r#"{"devices": {"19012341234": {"event": {"id": "e1", "title": "Soon", "start": "{{now+25m}}", "end": "{{now+85m}}"}}}}"#;
    let resolved = fleet::resolve_templates(text, now()).unwrap();
    let events = fleet::parse_events(&serde_json::from_str(&resolved).unwrap()).unwrap();
    let event = events[A].clone().unwrap();
    assert_eq!(block(false, Some(event), 30, false), RoomBlock::Soon(25));
}

#[test]
fn unknown_templates_are_errors() {
    for bad in [
        "{{later}}",
        "{{ now }}",
        "{{now+5}}",
        "{{now+m}}",
        "{{now*5m}}",
        "{{now+5d}}",
        "{{now+-5m}}",
        "{{now+99999999999999999999h}}",
        "{{now+9999999999h}}",
        "{{}}",
        "x {{now",
    ] {
        let error = fleet::resolve_templates(bad, now()).unwrap_err();
        assert!(
            bad.contains(error.template.trim_end_matches("}}")),
            "{bad}: {error}"
        );
    }
}

// ---- what the card reads of firmware, publishers and events --------------------------------

#[test]
fn firmware_versions_compare_part_by_part_and_newest_is_per_model() {
    use std::cmp::Ordering;
    assert_eq!(fleet::version_order("4.10.0", "4.9.2"), Ordering::Greater);
    assert_eq!(fleet::version_order("4.24.6", "4.24.6"), Ordering::Equal);
    assert_eq!(fleet::version_order("4.24", "4.24.1"), Ordering::Less);
    let list = fleet::parse_device_list(&json!({"devices": [
        {"Id": A, "Model": "Pearl-2", "Firmware": "4.9.2", "Status": "online"},
        {"Id": B, "Model": "pearl-2", "Firmware": "4.10.0", "Status": "online"},
        {"Id": C, "Model": "Pearl Nano", "Firmware": "4.30.1", "Status": "online"},
    ]}))
    .unwrap();
    assert_eq!(fleet::newest_firmware(&list, "Pearl-2"), Some("4.10.0"));
    assert_eq!(fleet::newest_firmware(&list, "Pearl Nano"), Some("4.30.1"));
    assert_eq!(fleet::newest_firmware(&list, "EC20"), None);
}

#[test]
fn a_publisher_names_its_destination_only_by_uuid() {
    let uuid = "0B5C1A52-8F0E-4D7A-9A64-4F3A2F1E9C10";
    let list = fleet::parse_device_list(&json!({"devices": [{
        "Id": A, "Status": "online",
        "Channels": [{"channel_id": "1", "name": "Program", "Publishers": [
            {"type": "rtmp", "stream_id": uuid, "status": {"state": "started"}},
            {"type": "srt", "streamId": "rtmp://host/live/secret-key", "status": "stopped"},
            {"type": "srt", "status": "stopped"},
        ]}],
    }]}))
    .unwrap();
    let publishers = &list.devices[0].channels[0].publishers;
    assert_eq!(
        publishers[0].stream_id.as_deref(),
        Some(uuid.to_ascii_lowercase().as_str())
    );
    assert!(publishers[0].active);
    assert_eq!(publishers[1].stream_id, None, "not a UUID, not kept");
    assert_eq!(publishers[2].stream_id, None);
}

#[test]
fn an_events_confirmation_is_read_from_a_flag_or_a_clear_status() {
    let events = fleet::parse_events(&json!({"devices": {
        "1000000001": {"event": {"id": "e1", "start": "2030-01-01T10:00:00Z", "confirmed": true}},
        "1000000002": {"event": {"id": "e2", "start": "2030-01-01T10:00:00Z", "status": "Unconfirmed"}},
        "1000000003": {"event": {"id": "e3", "start": "2030-01-01T10:00:00Z", "status": "live"}},
        "1000000004": {"event": {"id": "e4", "start": "2030-01-01T10:00:00Z"}},
    }}))
    .unwrap();
    let confirmed = |id: &str| events[id].as_ref().unwrap().confirmed;
    assert_eq!(confirmed("1000000001"), Some(true));
    assert_eq!(confirmed("1000000002"), Some(false));
    assert_eq!(confirmed("1000000003"), None, "a status that says neither");
    assert_eq!(confirmed("1000000004"), None);
}
