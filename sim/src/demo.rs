//! The built-in demo fleets: a normal team of 30 rooms and a separate sandbox team of six,
//! with times placed relative to the simulator clock.

use std::collections::{BTreeMap, BTreeSet};

use jiff::{SignedDuration, Timestamp};
use serde_json::{Map, Value, json};

use crate::state::{ListShape, TeamState, publisher_for, rfc3339, state_time, uuid_like};

/// The normal team's ID.
pub const NORMAL_TEAM_ID: &str = "5b0c6f2e-8d41-4a7b-9e13-2f6a0c9d7e51";
/// The sandbox team's ID.
pub const SANDBOX_TEAM_ID: &str = "c3e8a1d4-6f20-4b95-8a7c-1d2e3f405162";

struct Room {
    name: &'static str,
    group: &'static str,
    model: &'static str,
}

const fn room(name: &'static str, group: &'static str, model: &'static str) -> Room {
    Room { name, group, model }
}

const NORMAL_ROOMS: [Room; 30] = [
    room("Courtroom 1", "Law Courts", "Pearl-2"),
    room("Courtroom 2", "Law Courts", "Pearl-2"),
    room("Courtroom 3", "Law Courts", "Pearl Nexus"),
    room("Hearing Room 5", "Law Courts", "Pearl Mini"),
    room("Hearing Room 6", "Law Courts", "Pearl Mini"),
    room("Sala de Juntas 1", "Sede Central", "Pearl Nano"),
    room("Sala de Juntas 2", "Sede Central", "Pearl Nano"),
    room("Sala de Juntas 3", "Sede Central", "Pearl Mini"),
    room("Sala de Prensa", "Sede Central", "Pearl Mini"),
    room("Salón de Actos", "Sede Central", "Pearl-2"),
    room("Aula Magna", "Campus Norte", "Pearl-2"),
    room("Aula 3.1", "Campus Norte", "Pearl Nano"),
    room("Aula 3.2", "Campus Norte", "Pearl Nano"),
    room("Auditorio Principal", "Campus Norte", "Pearl Nexus"),
    room("Laboratorio de Idiomas", "Campus Norte", "Pearl Mini"),
    room("Biblioteca — Sala de Lectura", "Campus Norte", "Pearl Nano"),
    room("Sala Polivalente", "Campus Norte", "Pearl Mini"),
    room("Lecture Hall 101", "Main Campus", "Pearl-2"),
    room("Lecture Hall 102", "Main Campus", "Pearl-2"),
    room("Lecture Hall 204", "Main Campus", "Pearl Nexus"),
    room("Seminar Room A", "Main Campus", "Pearl Nano"),
    room("Seminar Room B", "Main Campus", "Pearl Nano"),
    room("Media Lab", "Main Campus", "Pearl Mini"),
    room("Chapel", "Main Campus", "Pearl Mini"),
    room("Board Room", "Headquarters", "Pearl Nexus"),
    room("Council Chamber", "Headquarters", "Pearl-2"),
    room("Training Room", "Headquarters", "Pearl Mini"),
    room("Town Hall", "Headquarters", "Pearl-2"),
    room("Studio 1", "Headquarters", "Pearl Nexus"),
    room("Studio 2", "Headquarters", "Pearl Mini"),
];

const SANDBOX_ROOMS: [Room; 6] = [
    room("Test Room A", "Sandbox", "Pearl Mini"),
    room("Sala de Pruebas 1", "Sandbox", "Pearl Nano"),
    room("Sala de Pruebas 2", "Sandbox", "Pearl-2"),
    room("Lab Bench 1", "Sandbox", "Pearl Mini"),
    room("Lab Bench 2", "Sandbox", "Pearl Nexus"),
    room("Demo Studio", "Sandbox", "Pearl-2"),
];

const CURRENT_FIRMWARE: &str = "4.24.6";
const OLD_FIRMWARE: &str = "4.19.2";

fn minutes(now: Timestamp, m: i64) -> Timestamp {
    now.checked_add(SignedDuration::from_mins(m)).unwrap_or(now)
}

fn channel_count(model: &str) -> usize {
    match model {
        "Pearl-2" => 3,
        "Pearl Nexus" | "Pearl Mini" => 2,
        _ => 1,
    }
}

fn channel_name(room: &str, n: usize) -> String {
    match n {
        1 => format!("{room} — Program"),
        2 => format!("{room} — Camera"),
        _ => format!("{room} — Slides"),
    }
}

fn warning(id: &str, label: &str, message: &str) -> Value {
    json!({"id": id, "data": {}, "label": label, "message": message})
}

fn build_devices(rooms: &[Room], id_prefix: &str, now: Timestamp) -> Vec<Value> {
    rooms
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let id = format!("{id_prefix}{:04}", 1234 + i * 7);
            let since = minutes(now, -(60 * 24 + 17 * i as i64));
            let channels: Vec<Value> = (1..=channel_count(r.model))
                .map(|n| {
                    json!({
                        "channel_id": n.to_string(),
                        "name": channel_name(r.name, n),
                        "recording_status": {
                            "state": "stopped",
                            "timestamp": since.as_second().to_string(),
                            "description": "Stopped",
                        },
                        "Publishers": [],
                    })
                })
                .collect();
            json!({
                "Id": id,
                "Name": r.name,
                "Model": r.model,
                "GroupId": uuid_like(r.group),
                "GroupName": r.group,
                "Firmware": CURRENT_FIRMWARE,
                "Status": "online",
                "StateTime": state_time(since),
                "Channels": channels,
            })
        })
        .collect()
}

fn index_of(rooms: &[Room], name: &str) -> usize {
    rooms.iter().position(|r| r.name == name).unwrap_or(0)
}

fn team(shape_team_id: &str, devices: Vec<Value>) -> TeamState {
    let mut extra = Map::new();
    extra.insert("team_id".into(), json!(shape_team_id));
    TeamState {
        shape: ListShape::Object(extra),
        devices,
        events: BTreeMap::new(),
        endpoints: Vec::new(),
        system: BTreeMap::new(),
        storage: BTreeMap::new(),
        sources: BTreeMap::new(),
        verbatim: BTreeMap::new(),
        confirmed: BTreeSet::new(),
    }
}

fn event(id: &str, title: &str, start: Timestamp, end: Timestamp) -> Value {
    json!({"id": id, "title": title, "start": rfc3339(start), "end": rfc3339(end)})
}

fn id_at(team: &TeamState, i: usize) -> String {
    team.devices
        .get(i)
        .and_then(|d| d.get("Id"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn attach_stream(team: &mut TeamState, device: &str, endpoint: &Value, started: bool) {
    if let Some(Value::Array(channels)) =
        team.device_mut(device).and_then(|d| d.get_mut("Channels"))
        && let Some(Value::Object(first)) = channels.first_mut()
    {
        first.insert(
            "Publishers".into(),
            json!([publisher_for(endpoint, "1", started)]),
        );
    }
}

fn set(team: &mut TeamState, device: &str, key: &str, value: Value) {
    if let Some(obj) = team.device_mut(device).and_then(Value::as_object_mut) {
        obj.insert(key.into(), value);
    }
}

/// The normal team: 30 rooms, one recording, one offline, one streaming, events soon and later,
/// a firmware straggler and warnings on two rooms.
pub(crate) fn normal(now: Timestamp) -> TeamState {
    let rooms = &NORMAL_ROOMS;
    let mut t = team(NORMAL_TEAM_ID, build_devices(rooms, "1901234", now));
    let id = |t: &TeamState, name: &str| id_at(t, index_of(rooms, name));

    let courtroom2 = id(&t, "Courtroom 2");
    t.set_channel_recording(&format!("{courtroom2}-1"), true, minutes(now, -40));
    t.events.insert(
        courtroom2.clone(),
        event(
            "hearing-2026-0042",
            "Hearing 2026-0042",
            minutes(now, -40),
            minutes(now, 50),
        ),
    );

    let studio2 = id(&t, "Studio 2");
    t.set_online(&studio2, false, minutes(now, -190));

    let aula_magna = id(&t, "Aula Magna");
    let youtube = json!({
        "id": uuid_like("normal-youtube-aula-magna"),
        "name": "YouTube — Aula Magna",
        "url": "rtmp://a.rtmp.youtube.com/live2/f7k2-9xq4-mm3p-0c1d",
        "stream_key": "f7k2-9xq4-mm3p-0c1d",
    });
    let vimeo = json!({
        "id": uuid_like("normal-vimeo-town-hall"),
        "name": "Vimeo — Town Hall",
        "url": "rtmps://rtmp-global.cloud.vimeo.com:443/live/8e1b7c44-aa10",
        "stream_key": "8e1b7c44-aa10",
    });
    attach_stream(&mut t, &aula_magna, &youtube, true);
    t.endpoints = vec![youtube, vimeo];

    let juntas3 = id(&t, "Sala de Juntas 3");
    t.events.insert(
        juntas3,
        event(
            "consejo-direccion-0613",
            "Consejo de Dirección",
            minutes(now, 13),
            minutes(now, 73),
        ),
    );
    let lh101 = id(&t, "Lecture Hall 101");
    t.events.insert(
        lh101,
        event(
            "econ101-lecture-07",
            "Introduction to Economics",
            minutes(now, 180),
            minutes(now, 255),
        ),
    );
    let auditorio = id(&t, "Auditorio Principal");
    t.events.insert(
        auditorio,
        event(
            "graduacion-2026",
            "Ceremonia de Graduación",
            minutes(now, 26 * 60),
            minutes(now, 29 * 60),
        ),
    );

    let straggler = id(&t, "Chapel");
    set(&mut t, &straggler, "Firmware", json!(OLD_FIRMWARE));

    let hearing6 = id(&t, "Hearing Room 6");
    let mut low_disk = warning(
        "disk_space_error",
        "Low disk space",
        "Less than 2% of storage is free",
    );
    low_disk["data"] = json!({"free_percent": 2});
    set(&mut t, &hearing6, "Warnings", json!([low_disk]));
    let studio1 = id(&t, "Studio 1");
    if let Some(Value::Array(channels)) = t.device_mut(&studio1).and_then(|d| d.get_mut("Channels"))
        && let Some(Value::Object(second)) = channels.get_mut(1)
    {
        second.insert(
            "Warnings".into(),
            json!([warning(
                "channel_no_signal",
                "No signal",
                "The camera input has no signal"
            )]),
        );
    }
    t
}

/// The sandbox team: six rooms sharing no device with [`normal`], one recording, one with an
/// event within 20 minutes, one streaming to its destination.
pub(crate) fn sandbox(now: Timestamp) -> TeamState {
    let rooms = &SANDBOX_ROOMS;
    let mut t = team(SANDBOX_TEAM_ID, build_devices(rooms, "2903456", now));
    let id = |t: &TeamState, name: &str| id_at(t, index_of(rooms, name));

    let pruebas1 = id(&t, "Sala de Pruebas 1");
    t.set_channel_recording(&format!("{pruebas1}-1"), true, minutes(now, -25));

    let bench1 = id(&t, "Lab Bench 1");
    t.events.insert(
        bench1,
        event(
            "sandbox-rehearsal-01",
            "Ensayo general",
            minutes(now, 12),
            minutes(now, 72),
        ),
    );
    let bench2 = id(&t, "Lab Bench 2");
    t.events.insert(
        bench2,
        event(
            "sandbox-review-02",
            "Weekly review",
            minutes(now, 150),
            minutes(now, 210),
        ),
    );

    let studio = id(&t, "Demo Studio");
    let endpoint = json!({
        "id": uuid_like("sandbox-demo-studio-stream"),
        "name": "Sandbox RTMP — Demo Studio",
        "url": "rtmp://live.sandbox.example.net/app/sbx-55aa-key",
        "stream_key": "sbx-55aa-key",
    });
    attach_stream(&mut t, &studio, &endpoint, true);
    let spare = json!({
        "id": uuid_like("sandbox-spare-srt"),
        "name": "Sandbox SRT spare",
        "url": "srt://srt.sandbox.example.net:9000?streamid=sbx-spare-77",
        "stream_key": "sbx-spare-77",
    });
    t.endpoints = vec![endpoint, spare];
    t
}
