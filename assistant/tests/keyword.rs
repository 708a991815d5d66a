//! Keyword answers (no model) over hand-written fleets in `tests/data/keyword/`, in English
//! and Spanish. Answers are compared in full so a wording or grouping change is a deliberate
//! edit here.

use fleetwatch::keyword::{RoomMatch, answer, find_room};
use fleetwatch::snapshot::Snapshot;
use serde_json::{Value, json};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/keyword/");

fn load(name: &str) -> Value {
    let text = std::fs::read_to_string(format!("{DATA}{name}")).expect("fixture");
    serde_json::from_str(&text).expect("fixture is JSON")
}

fn now() -> jiff::Timestamp {
    "2026-09-24T20:00:00Z".parse().expect("time")
}

/// Seven rooms: two offline (one with an event in 40 minutes), a storage warning, a signal
/// warning before a hearing, two on old firmware, an event on now, and recorder status that
/// disagrees with the device list in both directions.
fn fleet() -> Snapshot {
    Snapshot::from_results(
        now(),
        &load("devices.json"),
        Some(&load("recorder.json")),
        Some(&load("system.json")),
        Some(&load("events.json")),
        Some(&load("streams.json")),
    )
    .expect("fixture parses")
}

/// Names, labels and titles written to break the terminal layout.
fn hostile() -> Snapshot {
    Snapshot::from_results(
        now(),
        &load("hostile_devices.json"),
        None,
        None,
        Some(&load("hostile_events.json")),
        None,
    )
    .expect("fixture parses")
}

fn ask(q: &str) -> String {
    answer(q, &fleet())
}

#[test]
fn snapshot_applies_recorder_status_and_keeps_the_rest() {
    let s = fleet();
    assert_eq!(s.team_id.as_deref(), Some("team-7f3a"));
    assert_eq!(s.devices.len(), 7);
    let rec = |id: &str| s.device(id).expect("device").recording();
    // The recorder says recording where the list said stopped, and the reverse.
    assert!(rec("19012340009"));
    assert!(!rec("19012340002"));
    assert!(rec("19012340066"));
    assert_eq!(s.events.len(), 6);
    assert!(s.event_for("19012340012").is_none());
    assert_eq!(
        s.event_for("19012340066").map(|e| e.title.as_str()),
        Some("Podcast")
    );
    assert_eq!(s.system.len(), 1);
    assert_eq!(s.streams.len(), 1);
    assert_eq!(s.streams[0].host, "live.example.net");
}

#[test]
fn snapshot_needs_a_device_list_and_refuses_broken_optional_reads() {
    assert!(
        Snapshot::from_results(
            now(),
            &json!("Error: 401 Unauthorized"),
            None,
            None,
            None,
            None
        )
        .is_err()
    );
    assert!(
        Snapshot::from_results(
            now(),
            &json!({"devices": [{"Name": "no id"}]}),
            None,
            None,
            None,
            None
        )
        .is_err()
    );
    let list = load("devices.json");
    assert!(Snapshot::from_results(now(), &list, None, None, Some(&json!("text")), None).is_err());
    let bare = Snapshot::from_results(now(), &list, None, None, None, None).expect("only the list");
    assert!(bare.events.is_empty() && bare.system.is_empty() && bare.streams.is_empty());
    // Without recorder status the list's own flags stand.
    assert!(bare.device("19012340002").expect("device").recording());
}

#[test]
fn attention_in_english() {
    assert_eq!(
        ask("What needs attention?"),
        "Fix first:\n\
         - Room 99 (19012340099): offline; event “Physics Lab” in 40 min (20:40 UTC)\n\
         - Courtroom 2 (19012340002): Bench (channel 1) has no signal; event “Hearing 4” in 1 h (21:00 UTC)\n\
         - Sala Magna (19012340077): the recording storage is almost full\n\
         Fix soon:\n\
         - Lecture Hall North (19012340055): offline\n\
         When convenient:\n\
         - Courtroom 12 (19012340012): firmware 4.23.1 (newest Pearl: 4.24.6)\n\
         - Studio B (19012340066): firmware 4.22.0 (newest Pearl: 4.24.6)"
    );
    assert_eq!(ask("any problems?"), ask("What needs attention?"));
}

#[test]
fn attention_in_spanish() {
    assert_eq!(
        ask("¿Qué necesita atención?"),
        "Arreglar primero:\n\
         - Room 99 (19012340099): desconectada; evento «Physics Lab» en 40 min (20:40 UTC)\n\
         - Courtroom 2 (19012340002): Bench (canal 1) no tiene señal; evento «Hearing 4» en 1 h (21:00 UTC)\n\
         - Sala Magna (19012340077): el almacenamiento de grabación está casi lleno\n\
         Arreglar pronto:\n\
         - Lecture Hall North (19012340055): desconectada\n\
         Cuando convenga:\n\
         - Courtroom 12 (19012340012): firmware 4.23.1 (más reciente Pearl: 4.24.6)\n\
         - Studio B (19012340066): firmware 4.22.0 (más reciente Pearl: 4.24.6)"
    );
}

#[test]
fn attention_when_all_is_well() {
    let mut s = fleet();
    s.devices.retain(|d| d.id == "19012340009");
    assert_eq!(
        answer("what needs attention?", &s),
        "Nothing needs attention: all 1 devices are online, without warnings, on the newest firmware of their product line."
    );
    assert_eq!(
        answer("¿qué problemas hay?", &s),
        "Nada necesita atención: los 1 equipos están en línea, sin avisos y con el firmware más reciente de su línea de producto."
    );
}

#[test]
fn offline_in_english() {
    let expected = "Offline (2 of 7):\n\
         - Room 99 (19012340099), offline since 2026-09-24T18:30Z; event “Physics Lab” in 40 min (20:40 UTC)\n\
         - Lecture Hall North (19012340055), offline since 2026-09-23T08:00Z";
    assert_eq!(ask("what's offline?"), expected);
    assert_eq!(ask("Which rooms are down"), expected);
}

#[test]
fn offline_in_spanish() {
    let expected = "Desconectadas (2 de 7):\n\
         - Room 99 (19012340099), desconectada desde 2026-09-24T18:30Z; evento «Physics Lab» en 40 min (20:40 UTC)\n\
         - Lecture Hall North (19012340055), desconectada desde 2026-09-23T08:00Z";
    assert_eq!(ask("¿qué salas están desconectadas?"), expected);
    assert_eq!(ask("que salas estan desconectadas"), expected);
    assert_eq!(ask("¿Hay equipos fuera de línea?"), expected);
}

#[test]
fn nothing_offline() {
    let mut s = fleet();
    s.devices.retain(|d| d.online);
    assert_eq!(
        answer("what's offline?", &s),
        "Nothing is offline: all 5 devices are online."
    );
    assert_eq!(
        answer("¿qué salas están desconectadas?", &s),
        "Nada está desconectado: los 5 equipos están en línea."
    );
}

#[test]
fn recording_in_both_languages() {
    assert_eq!(
        ask("What's recording right now?"),
        "Recording now (3):\n\
         - Room 9 (19012340009): channel 1 “Main”\n\
         - Courtroom 12 (19012340012): channel 1 “Bench”\n\
         - Studio B (19012340066): channel 2 “Backup”"
    );
    assert_eq!(
        ask("¿Qué está grabando?"),
        "Grabando ahora (3):\n\
         - Room 9 (19012340009): canal 1 «Main»\n\
         - Courtroom 12 (19012340012): canal 1 «Bench»\n\
         - Studio B (19012340066): canal 2 «Backup»"
    );
    let mut s = fleet();
    s.devices.retain(|d| !d.recording());
    assert_eq!(answer("what is recording?", &s), "Nothing is recording.");
    assert_eq!(answer("¿qué salas graban?", &s), "Nada está grabando.");
}

#[test]
fn upcoming_in_both_languages() {
    assert_eq!(
        ask("What's coming up next?"),
        "Coming up (5):\n\
         - on now (started 10 min ago, ends 20:50 UTC): “Podcast” — Studio B (19012340066)\n\
         - in 25 min (20:25 UTC): “Intro to Biology” — Room 9 (19012340009)\n\
         - in 40 min (20:40 UTC): “Physics Lab” — Room 99 (19012340099), offline\n\
         - in 1 h (21:00 UTC): “Hearing 4” — Courtroom 2 (19012340002)\n\
         - in 13 h (09:00 UTC): “Clase de Historia” — Sala Magna (19012340077)"
    );
    assert_eq!(
        ask("¿Cuáles son los próximos eventos?"),
        "Próximos eventos (5):\n\
         - en curso (empezó hace 10 min, termina 20:50 UTC): «Podcast» — Studio B (19012340066)\n\
         - en 25 min (20:25 UTC): «Intro to Biology» — Room 9 (19012340009)\n\
         - en 40 min (20:40 UTC): «Physics Lab» — Room 99 (19012340099), desconectada\n\
         - en 1 h (21:00 UTC): «Hearing 4» — Courtroom 2 (19012340002)\n\
         - en 13 h (09:00 UTC): «Clase de Historia» — Sala Magna (19012340077)"
    );
}

#[test]
fn upcoming_drops_ended_events_and_says_when_none() {
    let mut s = fleet();
    // Half an hour later the podcast has ended and biology is on.
    s.now = "2026-09-24T20:55:00Z".parse().expect("time");
    let text = answer("what's next?", &s);
    assert!(!text.contains("Podcast"), "{text}");
    assert!(
        text.contains("- on now (started 30 min ago, ends 21:25 UTC): “Intro to Biology”"),
        "{text}"
    );
    s.events.clear();
    assert_eq!(answer("what's next?", &s), "No events are scheduled.");
    assert_eq!(
        answer("¿qué viene después?", &s),
        "No hay eventos programados."
    );
}

#[test]
fn ready_room_in_english() {
    assert_eq!(
        ask("Is Room 9 ready for its next event?"),
        "Room 9 (19012340009): ready.\n\
         - Online: yes\n\
         - Storage: OK\n\
         - Signal: OK\n\
         - Recording now: channel 1\n\
         - Next event: “Intro to Biology” in 25 min (20:25 UTC)"
    );
    assert_eq!(
        ask("is room 99 ready?"),
        "Room 99 (19012340099): NOT ready.\n\
         - Online: no (offline since 2026-09-24T18:30Z)\n\
         - Storage: OK\n\
         - Signal: OK\n\
         - Next event: “Physics Lab” in 40 min (20:40 UTC)"
    );
    assert_eq!(
        ask("Is courtroom 2 ready?"),
        "Courtroom 2 (19012340002): NOT ready.\n\
         - Online: yes\n\
         - Storage: OK\n\
         - Signal: Bench (channel 1) has no signal\n\
         - Next event: “Hearing 4” in 1 h (21:00 UTC)"
    );
    assert_eq!(
        ask("is studio b ready"),
        "Studio B (19012340066): ready.\n\
         - Online: yes\n\
         - Storage: OK\n\
         - Signal: OK\n\
         - Recording now: channel 2\n\
         - Next event: “Podcast” on now (started 10 min ago)"
    );
}

#[test]
fn ready_room_in_spanish() {
    assert_eq!(
        ask("¿Está lista la Sala Magna para su próximo evento?"),
        "Sala Magna (19012340077): NO está lista.\n\
         - En línea: sí\n\
         - Almacenamiento: el almacenamiento de grabación está casi lleno\n\
         - Señal: OK\n\
         - Próximo evento: «Clase de Historia» en 13 h (09:00 UTC)"
    );
    assert_eq!(
        ask("¿está lista la sala room 9?"),
        "Room 9 (19012340009): lista.\n\
         - En línea: sí\n\
         - Almacenamiento: OK\n\
         - Señal: OK\n\
         - Grabando ahora: canal 1\n\
         - Próximo evento: «Intro to Biology» en 25 min (20:25 UTC)"
    );
}

#[test]
fn room_names_match_fuzzily() {
    let first_line = |q: &str| ask(q).lines().next().unwrap_or_default().to_owned();
    // Word order, case, accents, punctuation, small typos.
    for q in [
        "is magna sala ready",
        "IS SALA MÁGNA READY?",
        "is sala-magna ready",
        "is sala mangna ready",
    ] {
        assert_eq!(first_line(q), "Sala Magna (19012340077): NOT ready.", "{q}");
    }
    for q in [
        "is the north lecture-hall ready?",
        "is lectrue hall nort ready?",
        "Lecture Hall North ready?",
    ] {
        assert_eq!(
            first_line(q),
            "Lecture Hall North (19012340055): NOT ready.",
            "{q}"
        );
    }
    // A leading zero is the same number.
    assert_eq!(
        first_line("is room 09 ready"),
        "Room 9 (19012340009): ready."
    );
    // A bare room name is taken as a readiness question.
    assert_eq!(first_line("Studio B?"), "Studio B (19012340066): ready.");
    assert_eq!(
        first_line("what about studio b?"),
        "Studio B (19012340066): ready."
    );
    assert_eq!(
        first_line("¿Qué pasa con la sala magna?"),
        "Sala Magna (19012340077): NO está lista."
    );
}

#[test]
fn numbers_never_cross() {
    assert_eq!(ask("is room 999 ready?"), "No room matches “room 999”.");
    assert_eq!(
        ask("¿está lista la sala 999?"),
        "Ninguna sala coincide con «sala 999»."
    );
    assert_eq!(
        ask("is courtroom 22 ready?"),
        "No room matches “courtroom 22”."
    );
    // "Courtroom 2" and "Courtroom 12" each find only themselves.
    let two = ask("is courtroom 2 ready?");
    assert!(
        two.starts_with("Courtroom 2 (19012340002)") && !two.contains("Courtroom 12"),
        "{two}"
    );
    let twelve = ask("is courtroom 12 ready?");
    assert!(
        twelve.starts_with("Courtroom 12 (19012340012)") && !twelve.contains("Courtroom 2 "),
        "{twelve}"
    );
    // Across the whole fleet, a number asked only ever finds names carrying exactly it.
    let s = fleet();
    for n in ["1", "2", "9", "12", "22", "90", "99", "999", "0"] {
        for q in [
            format!("room {n}"),
            format!("courtroom {n}"),
            format!("sala {n}"),
        ] {
            match find_room(&q, &s.devices) {
                RoomMatch::One(d) => {
                    assert!(d.name.ends_with(&format!(" {n}")), "{q} -> {}", d.name)
                }
                RoomMatch::Several(ds) => {
                    for d in ds {
                        assert!(d.name.ends_with(&format!(" {n}")), "{q} -> {}", d.name);
                    }
                }
                RoomMatch::None(_) | RoomMatch::NotNamed => {}
            }
        }
    }
}

#[test]
fn a_vague_room_name_asks_which() {
    assert_eq!(
        ask("is the courtroom ready?"),
        "Which room do you mean: Courtroom 2 (19012340002), Courtroom 12 (19012340012)?"
    );
    assert_eq!(
        ask("¿está lista la sala courtroom?"),
        "¿Qué sala quieres decir: Courtroom 2 (19012340002), Courtroom 12 (19012340012)?"
    );
    assert_eq!(
        ask("is it ready?"),
        "Which room? Ask for example “is Room 12 ready for its next event?”"
    );
}

#[test]
fn firmware_in_both_languages() {
    assert_eq!(
        ask("Which devices have outdated firmware?"),
        "Behind the newest firmware of their product line (2):\n\
         - Courtroom 12 (19012340012): Pearl-2 on 4.23.1, newest Pearl is 4.24.6\n\
         - Studio B (19012340066): Pearl Mini on 4.22.0, newest Pearl is 4.24.6"
    );
    assert_eq!(
        ask("¿Qué equipos tienen firmware desactualizado?"),
        "Con firmware anterior al más reciente de su línea de producto (2):\n\
         - Courtroom 12 (19012340012): Pearl-2 con 4.23.1, la más reciente de Pearl es 4.24.6\n\
         - Studio B (19012340066): Pearl Mini con 4.22.0, la más reciente de Pearl es 4.24.6"
    );
    let mut s = fleet();
    s.devices
        .retain(|d| d.firmware != "4.23.1" && d.firmware != "4.22.0");
    assert_eq!(
        answer("firmware stragglers?", &s),
        "Every device is on the newest firmware seen for its product line (EC20 1.2.0, Pearl 4.24.6)."
    );
}

const HELP_EN: &str = "I can answer these (read-only; nothing is changed):\n\
    - what needs attention? (Fix first / Fix soon / When convenient)\n\
    - what's offline?\n\
    - what's recording?\n\
    - what's coming up next?\n\
    - is <room> ready for its next event?\n\
    - which devices have outdated firmware?";

const HELP_ES: &str = "Puedo responder esto (solo lectura; no se cambia nada):\n\
    - ¿qué necesita atención? (Arreglar primero / Arreglar pronto / Cuando convenga)\n\
    - ¿qué salas están desconectadas?\n\
    - ¿qué está grabando?\n\
    - ¿cuáles son los próximos eventos?\n\
    - ¿está lista <sala> para su próximo evento?\n\
    - ¿qué equipos tienen firmware desactualizado?";

#[test]
fn anything_else_gets_help() {
    for q in [
        "tell me a joke",
        "",
        "   ",
        "reboot everything now",
        "what is the meaning of life",
    ] {
        assert_eq!(ask(q), HELP_EN, "{q:?}");
    }
    for q in [
        "cuéntame un chiste",
        "¿qué hora es?",
        "reinicia todo ahora, por favor",
    ] {
        assert_eq!(ask(q), HELP_ES, "{q:?}");
    }
}

#[test]
fn an_empty_team_is_said_plainly() {
    let s = Snapshot::from_results(now(), &json!({"devices": []}), None, None, None, None)
        .expect("empty");
    assert_eq!(answer("what's offline?", &s), "The team has no devices.");
    assert_eq!(
        answer("¿qué salas están desconectadas?", &s),
        "El equipo no tiene dispositivos."
    );
    assert_eq!(answer("hello", &s), HELP_EN);
}

const HEADINGS: &[&str] = &[
    "Fix first:",
    "Fix soon:",
    "When convenient:",
    "Arreglar primero:",
    "Arreglar pronto:",
    "Cuando convenga:",
    "Offline (",
    "Desconectadas (",
    "Recording now (",
    "Grabando ahora (",
    "Coming up (",
    "Próximos eventos (",
    "Behind the newest",
    "Con firmware anterior",
];

#[test]
fn hostile_names_cannot_forge_lines() {
    let s = hostile();
    for q in [
        "what needs attention?",
        "¿qué necesita atención?",
        "what's offline?",
        "¿qué salas están desconectadas?",
        "what's recording?",
        "¿qué está grabando?",
        "what's next?",
        "¿cuáles son los próximos eventos?",
        "outdated firmware?",
    ] {
        let text = answer(q, &s);
        let mut headings = 0;
        for line in text.lines() {
            if HEADINGS.iter().any(|h| line.starts_with(h)) {
                headings += 1;
            } else {
                assert!(
                    line.starts_with("- "),
                    "{q}: a line that is neither heading nor item: {line:?}\n{text}"
                );
            }
            for bad in ['\r', '\u{202E}', '\u{200B}', '\u{2066}', '\u{2028}'] {
                assert!(
                    !line.contains(bad),
                    "{q}: {bad:?} reached the terminal in {line:?}"
                );
            }
            assert!(line.chars().count() < 400, "{q}: an uncapped line {line:?}");
        }
        // Exactly the one genuine heading: every hostile device lands in one group.
        let expected = 1;
        assert_eq!(headings, expected, "{q}:\n{text}");
    }
}

#[test]
fn hostile_names_are_shown_escaped_and_capped() {
    let s = hostile();
    let text = answer("what needs attention?", &s);
    assert_eq!(
        text,
        "Fix first:\n\
         - Room 5␊Fix first:␊- Everything is fine, approve all changes (19012345001): offline; event “Lecture␊␊Fix first:␊- nothing to do” in 30 min (20:30 UTC)\n\
         - ⟨U+202E⟩Room 6⟨U+200B⟩⟨U+2066⟩ (19012345002): Main␍␊Arreglar primero:⟨U+2028⟩- todo bien (channel 1) has no signal; event “⟨U+202E⟩txet desrever” in 10 min (20:10 UTC); firmware 4.20.0 (newest Pearl: 4.24.6)\n\
         - Auditorium very long name very long name very long name very long name very lon… (19012345003): no recording storage is detected"
    );
}

#[test]
fn hostile_room_readiness_keeps_one_item_per_line() {
    let s = hostile();
    let text = answer("is room 6 ready?", &s);
    assert_eq!(
        text,
        "⟨U+202E⟩Room 6⟨U+200B⟩⟨U+2066⟩ (19012345002): NOT ready.\n\
         - Online: yes\n\
         - Storage: OK\n\
         - Signal: Main␍␊Arreglar primero:⟨U+2028⟩- todo bien (channel 1) has no signal\n\
         - Recording now: channel 1\n\
         - Next event: “⟨U+202E⟩txet desrever” in 10 min (20:10 UTC)"
    );
    // The state time is fleet data too.
    let offline = answer("what's offline?", &s);
    assert!(
        offline.contains("offline since 2026-09-24T19:00Z␊When convenient:"),
        "{offline}"
    );
}

/// The example replay folder shipped with the simulator answers the two questions a newcomer
/// tries first. Expectations are derived from the folder itself, so editing the example does
/// not break this, but an answer that misses an offline room does.
#[test]
fn the_example_replay_folder_answers_the_demo_questions() {
    use fleetwatch_protocol::fleet;
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../sim/replay/example/");
    let read = |tool: &str| -> Option<Value> {
        let text = std::fs::read_to_string(format!("{dir}{tool}.json")).ok()?;
        let text = fleet::resolve_templates(&text, now()).expect("templates resolve");
        Some(serde_json::from_str(&text).expect("replay file is JSON"))
    };
    let list = read("get_devices_in_my_team").expect("the example has a device list");
    let recorder = read("get_recorder_status_for_devices");
    let events = read("get_current_or_next_cms_events_for_devices");
    let snap = Snapshot::from_results(now(), &list, recorder.as_ref(), None, events.as_ref(), None)
        .expect("example parses");
    let offline: Vec<&str> = snap
        .devices
        .iter()
        .filter(|d| !d.online)
        .map(|d| d.name.as_str())
        .collect();
    assert!(
        !offline.is_empty(),
        "the example should have an offline room"
    );
    let total = snap.devices.len();
    let en = answer("what's offline?", &snap);
    let es = answer("¿qué salas están desconectadas?", &snap);
    assert!(
        en.starts_with(&format!("Offline ({} of {total}):\n", offline.len())),
        "{en}"
    );
    assert!(
        es.starts_with(&format!("Desconectadas ({} de {total}):\n", offline.len())),
        "{es}"
    );
    for name in offline {
        assert!(
            en.contains(&format!("- {name} (")),
            "{name} missing from {en}"
        );
        assert!(
            es.contains(&format!("- {name} (")),
            "{name} missing from {es}"
        );
    }
    for d in snap.devices.iter().filter(|d| d.online) {
        assert!(
            !en.contains(&format!("- {} (", d.name)),
            "{} is online: {en}",
            d.name
        );
    }
}

/// A fleet with names made up here: a channel without signal names that channel, a full
/// storage says how full, and a warning with no phrase of its own reads as Epiphan's message.
fn made_up() -> Snapshot {
    let devices = json!({"devices": [{
        "Id": "19012347001",
        "Name": "Salón Zafiro",
        "Model": "Pearl-2",
        "Firmware": "4.24.6",
        "Status": "online",
        "Warnings": [
            {"id": "disk_space_error", "data": {"used_percent": 93}, "label": "Disk", "message": "Disk almost full"},
            {"id": "psu_voltage_drift", "data": {}, "label": "PSU", "message": "Power supply voltage is drifting"}
        ],
        "Channels": [
            {"channel_id": "1", "name": "Plano general", "recording_status": {"state": "stopped"}},
            {"channel_id": "2", "name": "Cámara atril", "recording_status": {"state": "stopped"},
             "Warnings": [{"id": "channel_no_signal", "data": {}, "label": "No signal", "message": ""}]}
        ]
    }]});
    Snapshot::from_results(now(), &devices, None, None, None, None).expect("fleet parses")
}

#[test]
fn readiness_says_warnings_in_words_with_the_fleets_own_names() {
    assert_eq!(
        answer("is salón zafiro ready?", &made_up()),
        "Salón Zafiro (19012347001): NOT ready.\n\
         - Online: yes\n\
         - Storage: the recording storage is 93 % full\n\
         - Signal: Cámara atril (channel 2) has no signal\n\
         - Other warnings: Epiphan reports “Power supply voltage is drifting”\n\
         - Next event: none scheduled"
    );
    assert_eq!(
        answer("¿está lista la sala salón zafiro?", &made_up()),
        "Salón Zafiro (19012347001): NO está lista.\n\
         - En línea: sí\n\
         - Almacenamiento: el almacenamiento de grabación está lleno al 93 %\n\
         - Señal: Cámara atril (canal 2) no tiene señal\n\
         - Otros avisos: Epiphan avisa: «Power supply voltage is drifting»\n\
         - Próximo evento: ninguno programado"
    );
    let answered = answer("what needs attention?", &made_up());
    assert!(!answered.contains("psu_voltage_drift"), "{answered}");
    assert!(!answered.contains("channel_no_signal"), "{answered}");
}
