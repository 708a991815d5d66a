//! The fleet tools over generated snapshots: their counts are the truth, a search pages through
//! every matching room exactly once, every answer stays small whatever the names hold, and a
//! name that fits several rooms is answered with the candidates.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};

use fleetwatch::fleet_tools::{self, PAGE_ROOMS, Query};
use fleetwatch::snapshot::Snapshot;
use fleetwatch_protocol::fleet::{Channel, Device, Event, Publisher, Warning};
use fleetwatch_words::lang::Lang;
use proptest::prelude::*;
use serde_json::{Value, json};

/// Which generated rooms a state holds, by the generator's own facts.
type Keep = fn(&Room) -> bool;

fn now() -> jiff::Timestamp {
    "2026-03-02T14:00:00Z".parse().unwrap()
}

#[derive(Debug, Clone)]
struct Room {
    online: bool,
    recording: bool,
    streaming: bool,
    warning: bool,
    event_in_minutes: Option<i64>,
    name: String,
}

fn device(i: usize, r: &Room) -> Device {
    let warnings = if r.warning {
        vec![Warning {
            id: "disk_space_error".into(),
            label: "Storage".into(),
            message: "The disk is almost full".into(),
            source: None,
            channel: None,
            channel_name: None,
            used_percent: Some(95),
        }]
    } else {
        Vec::new()
    };
    Device {
        id: format!("{:010x}", 0x1000_0000_u64 + i as u64),
        name: r.name.clone(),
        model: "Pearl-2".into(),
        group: "Building".into(),
        firmware: "4.24.3".into(),
        online: r.online,
        state_time: Some("2026-03-02T10:00:00Z".into()),
        warnings,
        channels: vec![Channel {
            number: "1".into(),
            name: "Program".into(),
            recording: r.recording,
            doubtful: false,
            publishers: vec![Publisher {
                kind: "rtmp".into(),
                active: r.streaming,
                stream_id: None,
            }],
            warnings: Vec::new(),
        }],
    }
}

fn snapshot(rooms: &[Room]) -> Snapshot {
    let devices: Vec<Device> = rooms
        .iter()
        .enumerate()
        .map(|(i, r)| device(i, r))
        .collect();
    let events: BTreeMap<String, Option<Event>> = devices
        .iter()
        .zip(rooms)
        .map(|(d, r)| {
            let event = r.event_in_minutes.map(|m| {
                let start = now() + jiff::SignedDuration::from_mins(m);
                Event {
                    id: format!("e-{}", d.id),
                    title: "Lecture".into(),
                    start,
                    end: Some(start + jiff::SignedDuration::from_mins(60)),
                    confirmed: None,
                }
            });
            (d.id.clone(), event)
        })
        .collect();
    Snapshot {
        now: now(),
        team_id: None,
        devices,
        system: BTreeMap::new(),
        events,
        streams: Vec::new(),
        not_read: Vec::new(),
    }
}

fn room_strategy() -> impl Strategy<Value = Room> {
    (
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        prop::bool::weighted(0.2),
        prop::option::of(-90_i64..600),
        prop_oneof![
            "Room [0-9]{1,3}".prop_map(String::from),
            "[A-Za-z ]{0,12}".prop_map(String::from),
            Just("Sala de Juntas".to_owned()),
        ],
    )
        .prop_map(
            |(online, recording, streaming, warning, event_in_minutes, name)| Room {
                online,
                recording: online && recording,
                streaming: online && streaming,
                warning,
                event_in_minutes,
                name,
            },
        )
}

/// Every room a search in `state` returns, page by page, following `next_cursor`.
fn page_through(snap: &Snapshot, state: &str, sort: &str) -> (usize, Vec<String>) {
    let mut ids = Vec::new();
    let mut cursor = 0;
    let mut matched = None;
    for _ in 0..10_000 {
        let query = Query {
            state: Some(state.to_owned()),
            sort: Some(sort.to_owned()),
            cursor,
            ..Query::default()
        };
        let page = fleet_tools::search(snap, &query, Lang::En);
        let rooms = page["rooms"].as_array().unwrap();
        assert!(rooms.len() <= PAGE_ROOMS);
        assert_eq!(page["shown"].as_u64().unwrap() as usize, rooms.len());
        let total = page["matched"].as_u64().unwrap() as usize;
        assert_eq!(
            *matched.get_or_insert(total),
            total,
            "a page changed the total"
        );
        ids.extend(rooms.iter().map(|r| r["id"].as_str().unwrap().to_owned()));
        match page["next_cursor"].as_u64() {
            Some(next) => {
                assert_eq!(next as usize, cursor + rooms.len());
                cursor = next as usize;
            }
            None => return (total, ids),
        }
    }
    panic!("the search never reached its last page")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn counts_are_the_truth_and_pages_cover_every_match_once(
        rooms in prop::collection::vec(room_strategy(), 0..120),
        sort in prop_oneof![Just("name"), Just("urgency"), Just("next_event"), Just("id")],
    ) {
        let snap = snapshot(&rooms);
        let counts = fleet_tools::counts(&snap);
        prop_assert_eq!(counts.rooms, rooms.len());
        prop_assert_eq!(counts.online, rooms.iter().filter(|r| r.online).count());
        prop_assert_eq!(counts.offline, rooms.iter().filter(|r| !r.online).count());
        prop_assert_eq!(counts.recording, rooms.iter().filter(|r| r.recording).count());
        prop_assert_eq!(counts.streaming, rooms.iter().filter(|r| r.streaming).count());
        prop_assert_eq!(counts.with_warnings, rooms.iter().filter(|r| r.warning).count());
        let overview = fleet_tools::overview(&snap, Lang::En);
        prop_assert_eq!(&overview["counts"]["offline"], &json!(counts.offline));

        let truth = |keep: &dyn Fn(&Room) -> bool| -> BTreeSet<String> {
            snap.devices
                .iter()
                .zip(&rooms)
                .filter(|(_, r)| keep(r))
                .map(|(d, _)| d.id.clone())
                .collect()
        };
        let cases: [(&str, Keep); 5] = [
            ("any", |_| true),
            ("offline", |r| !r.online),
            ("online", |r| r.online),
            ("recording", |r| r.recording),
            ("warning", |r| r.warning),
        ];
        for (state, keep) in cases {
            let (total, ids) = page_through(&snap, state, sort);
            let want = truth(&keep);
            prop_assert_eq!(total, want.len(), "{}", state);
            let got: BTreeSet<String> = ids.iter().cloned().collect();
            prop_assert_eq!(got.len(), ids.len(), "a room was shown twice for {}", state);
            prop_assert_eq!(got, want, "{}", state);
        }
        let (attention, _) = page_through(&snap, "needs_attention", sort);
        prop_assert_eq!(attention, counts.needs_attention);

        // The keyword answerer states the same counts for the same snapshot.
        let said = fleetwatch::keyword::answer("what's offline?", &snap);
        if counts.offline > 0 {
            let head = format!("Offline ({} of {}):", counts.offline, counts.rooms);
            prop_assert!(said.starts_with(&head), "{}", said);
        } else if counts.rooms > 0 {
            let head = format!("all {} devices are online", counts.rooms);
            prop_assert!(said.contains(&head), "{}", said);
        }
        let said = fleetwatch::keyword::answer("what's recording?", &snap);
        if counts.recording > 0 {
            let head = format!("Recording now ({}):", counts.recording);
            prop_assert!(said.starts_with(&head), "{}", said);
        }
    }

    #[test]
    fn every_answer_is_bounded_whatever_the_names_hold(
        n in 1_usize..80,
        name_len in 0_usize..6_000,
        filler in prop_oneof![Just('x'), Just('\u{202e}'), Just('<'), Just('好')],
    ) {
        let name: String = std::iter::repeat_n(filler, name_len).collect();
        let rooms: Vec<Room> = (0..n)
            .map(|i| Room {
                online: i % 3 != 0,
                recording: i % 2 == 0,
                streaming: false,
                warning: true,
                event_in_minutes: Some(10),
                name: name.clone(),
            })
            .collect();
        let snap = snapshot(&rooms);
        let id = snap.devices[0].id.clone();
        for answer in [
            fleet_tools::overview(&snap, Lang::En),
            fleet_tools::search(&snap, &Query::default(), Lang::En),
            fleet_tools::room(&snap, &id, Lang::En),
            fleet_tools::room(&snap, &name, Lang::En),
        ] {
            let bytes = answer.to_string().len();
            prop_assert!(bytes <= 12 * 1024, "{bytes} bytes");
        }
    }
}

#[test]
fn a_name_that_fits_several_rooms_gets_the_candidates_never_a_guess() {
    let room = |name: &str| Room {
        online: true,
        recording: false,
        streaming: false,
        warning: false,
        event_in_minutes: None,
        name: name.to_owned(),
    };
    let snap = snapshot(&[
        room("Courtroom 4"),
        room("Courtroom 4"),
        room("Courtroom 5"),
    ]);
    let answer = fleet_tools::room(&snap, "Courtroom 4", Lang::En);
    assert_eq!(answer["matched"], json!(2));
    let ids: Vec<&str> = answer["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [snap.devices[0].id.as_str(), snap.devices[1].id.as_str()]
    );
    assert!(answer.get("room").is_none());

    let one = fleet_tools::room(&snap, "courtroom 5", Lang::En);
    assert_eq!(one["room"]["id"], json!(snap.devices[2].id));
    let by_id = fleet_tools::room(&snap, &snap.devices[1].id, Lang::En);
    assert_eq!(by_id["room"]["id"], json!(snap.devices[1].id));
    assert_eq!(
        fleet_tools::room(&snap, "Courtroom 44", Lang::En)["matched"],
        json!(0)
    );
}

#[test]
fn arguments_are_held_to_the_schema_and_pages_are_in_a_persons_order() {
    let policy = fleetwatch_protocol::policy::Policy::from_yaml(
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../tool_policy.yaml"))
            .unwrap(),
    )
    .unwrap();
    let schema = &policy.fleet_tool(fleet_tools::SEARCH).unwrap().schema;
    let rooms: Vec<Room> = [10, 2, 1, 33]
        .iter()
        .map(|n| Room {
            online: true,
            recording: false,
            streaming: false,
            warning: false,
            event_in_minutes: None,
            name: format!("Room {n}"),
        })
        .collect();
    let snap = snapshot(&rooms);
    for bad in [
        json!({"state": "on fire"}),
        json!({"cursor": -1}),
        json!({"extra": 1}),
        json!({"name": ""}),
        json!("offline"),
    ] {
        let err = fleet_tools::call(
            fleet_tools::SEARCH,
            schema,
            &bad,
            &snap,
            &fleet_tools::Changeable::NotAsked,
            Lang::En,
        )
        .unwrap_err();
        assert!(err.contains("schema"), "{err}");
    }
    let page = fleet_tools::call(
        fleet_tools::SEARCH,
        schema,
        &json!({}),
        &snap,
        &fleet_tools::Changeable::NotAsked,
        Lang::En,
    )
    .unwrap();
    let names: Vec<&str> = page["rooms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Room 1", "Room 2", "Room 10", "Room 33"]);
    assert_eq!(page["next_cursor"], Value::Null);
    let named = fleet_tools::call(
        fleet_tools::SEARCH,
        schema,
        &json!({"name": "room 3"}),
        &snap,
        &fleet_tools::Changeable::NotAsked,
        Lang::En,
    )
    .unwrap();
    assert_eq!(named["matched"], json!(1));
}

#[test]
fn rooms_that_can_be_changed_are_found_by_name_and_never_guessed() {
    use fleetwatch::fleet_tools::Changeable;
    use fleetwatch_protocol::wire::{RoomFacts, RoomList};
    let policy = fleetwatch_protocol::policy::Policy::from_yaml(
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../tool_policy.yaml"))
            .unwrap(),
    )
    .unwrap();
    let room_schema = &policy.fleet_tool(fleet_tools::ROOM).unwrap().schema;
    let search_schema = &policy.fleet_tool(fleet_tools::SEARCH).unwrap().schema;
    // The read fleet holds none of them: read and write teams apart.
    let snap = snapshot(&[Room {
        online: true,
        recording: false,
        streaming: false,
        warning: false,
        event_in_minutes: None,
        name: "Lobby".into(),
    }]);
    let room = |id: &str, name: &str| RoomFacts {
        id: id.into(),
        name: name.into(),
        channels: vec![("1".into(), "Program".into())],
    };
    let changeable = Changeable::Read(RoomList {
        rooms: vec![
            room("aa00000001", "Test Room A"),
            room("aa00000002", "Courtroom 4"),
            room("aa00000003", "Courtroom 4"),
        ],
        left_out: 0,
    });
    let ask = |args: Value, schema: &Value, changeable: &Changeable| {
        assert!(fleet_tools::needs_changeable(
            if schema == room_schema {
                fleet_tools::ROOM
            } else {
                fleet_tools::SEARCH
            },
            &args,
            &snap
        ));
        let tool = if schema == room_schema {
            fleet_tools::ROOM
        } else {
            fleet_tools::SEARCH
        };
        fleet_tools::call(tool, schema, &args, &snap, changeable, Lang::En).unwrap()
    };
    let one = ask(
        json!({"room": "start recording in test room a"}),
        room_schema,
        &changeable,
    );
    assert_eq!(one["room"]["id"], json!("aa00000001"));
    assert_eq!(one["room"]["can_be_changed"], json!(true));
    assert_eq!(
        one["room"]["channels"][0]["channel_id"],
        json!("aa00000001-1")
    );
    let two = ask(json!({"room": "Courtroom 4"}), room_schema, &changeable);
    assert_eq!(two["matched"], json!(2));
    assert!(two.get("room").is_none(), "{two}");
    let listed = ask(json!({"state": "changeable"}), search_schema, &changeable);
    assert_eq!(listed["matched"], json!(3));
    let off = ask(
        json!({"room": "Test Room A"}),
        room_schema,
        &Changeable::Off,
    );
    assert_eq!(off["matched"], json!(0));
    let failed = ask(
        json!({"room": "Test Room A"}),
        room_schema,
        &Changeable::Failed("the executor refused: busy".into()),
    );
    assert!(
        failed["note"].as_str().unwrap().contains("busy"),
        "{failed}"
    );
    // A room the read fleet holds needs no executor.
    assert!(!fleet_tools::needs_changeable(
        fleet_tools::ROOM,
        &json!({"room": "Lobby"}),
        &snap
    ));
}
