//! Grants are default-closed: nothing is open until the operator opens it, and a grants file
//! that cannot be trusted is an error, never "everything".

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use fleetwatch::grants::{self, Grants, GrantsError};
use fleetwatch_protocol::policy::Policy;

fn policy() -> Policy {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../tool_policy.yaml"))
        .expect("root tool_policy.yaml");
    Policy::from_yaml(&text).expect("root policy loads")
}

fn open_list(g: &Grants) -> Vec<String> {
    g.open_categories().map(str::to_owned).collect()
}

fn write_mode(path: &Path, text: &str, mode: u32) {
    fs::write(path, text).expect("write");
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).expect("chmod");
}

#[test]
fn a_fresh_state_folder_grants_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let g = Grants::load(dir.path()).expect("missing file is fine");
    assert!(open_list(&g).is_empty());
    for category in [
        "fleet",
        "schedule",
        "streams",
        "recording",
        "streaming",
        "maintenance",
        "events",
    ] {
        assert!(!g.is_open(category), "{category}");
    }
    // Not even a folder yet.
    let g = Grants::load(&dir.path().join("not-created")).expect("missing folder is fine");
    assert!(open_list(&g).is_empty());
    assert!(
        !dir.path().join(grants::FILE_NAME).exists(),
        "loading must not create the file"
    );
}

#[test]
fn open_and_close_round_trip() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = dir.path().join("state");
    let p = policy();
    let g = grants::open(&state, &p, "fleet").expect("open fleet");
    assert!(g.is_open("fleet") && !g.is_open("maintenance"));
    grants::open(&state, &p, "maintenance").expect("open maintenance");
    // Opening twice is harmless.
    grants::open(&state, &p, "fleet").expect("open fleet again");
    let g = Grants::load(&state).expect("reload");
    assert_eq!(open_list(&g), ["fleet", "maintenance"]);

    let g = grants::close(&state, "fleet").expect("close fleet");
    assert_eq!(open_list(&g), ["maintenance"]);
    assert_eq!(
        open_list(&Grants::load(&state).expect("reload")),
        ["maintenance"]
    );
    grants::close(&state, "maintenance").expect("close maintenance");
    grants::close(&state, "never-opened").expect("closing a closed category is fine");
    assert!(open_list(&Grants::load(&state).expect("reload")).is_empty());
}

#[test]
fn an_unknown_category_is_refused_with_the_known_ones() {
    let dir = tempfile::tempdir().expect("tempdir");
    let err = grants::open(dir.path(), &policy(), "admin").expect_err("unknown category");
    match &err {
        GrantsError::UnknownCategory { category, known } => {
            assert_eq!(category, "admin");
            assert_eq!(
                known,
                &[
                    "events",
                    "fleet",
                    "maintenance",
                    "recording",
                    "schedule",
                    "streaming",
                    "streams"
                ]
            );
        }
        other => panic!("wrong error: {other}"),
    }
    assert_eq!(
        err.to_string(),
        "unknown category \"admin\"; known categories: events, fleet, maintenance, recording, schedule, streaming, streams"
    );
    for bad in ["", "*", "all", "FLEET", "fleet "] {
        assert!(grants::open(dir.path(), &policy(), bad).is_err(), "{bad:?}");
    }
    assert!(!dir.path().join(grants::FILE_NAME).exists());
}

#[test]
fn the_file_is_0600_and_no_temp_file_is_left() {
    let dir = tempfile::tempdir().expect("tempdir");
    grants::open(dir.path(), &policy(), "schedule").expect("open");
    let path = dir.path().join(grants::FILE_NAME);
    let mode = fs::metadata(&path).expect("metadata").permissions().mode() & 0o7777;
    assert_eq!(mode, 0o600);
    let names: Vec<String> = fs::read_dir(dir.path())
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, [grants::FILE_NAME]);
    // Still 0600 after a rewrite over an existing file.
    grants::close(dir.path(), "schedule").expect("close");
    let mode = fs::metadata(&path).expect("metadata").permissions().mode() & 0o7777;
    assert_eq!(mode, 0o600);
}

#[test]
fn a_file_writable_by_others_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(grants::FILE_NAME);
    let body = r#"{"version":1,"open":["fleet"]}"#;
    write_mode(&path, body, 0o600);
    assert!(Grants::load(dir.path()).expect("trusted").is_open("fleet"));
    for mode in [0o666, 0o602, 0o620, 0o622] {
        write_mode(&path, body, mode);
        match Grants::load(dir.path()) {
            Err(GrantsError::Insecure { problem, .. }) => {
                assert!(problem.contains("writable by group or others"), "{problem}")
            }
            other => panic!("mode {mode:o} accepted: {other:?}"),
        }
        // Nor can it be edited through the CLI path: the operator must fix it first.
        assert!(grants::open(dir.path(), &policy(), "schedule").is_err());
        assert!(grants::close(dir.path(), "fleet").is_err());
        assert_eq!(
            fs::read_to_string(&path).expect("read"),
            body,
            "an untrusted file was rewritten"
        );
    }
}

#[test]
fn a_malformed_file_is_an_error_not_everything() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(grants::FILE_NAME);
    for body in [
        "",
        "not json",
        "{}",
        "null",
        r#"["fleet"]"#,
        r#"{"version":1,"open":"*"}"#,
        r#"{"version":1,"open":["*"]}"#,
        r#"{"version":1,"open":["all"],"everything":true}"#,
        r#"{"version":2,"open":["fleet"]}"#,
        r#"{"version":1,"open":["fleet","fleet"]}"#,
        r#"{"version":1,"open":["fleet"]"#,
    ] {
        write_mode(&path, body, 0o600);
        match Grants::load(dir.path()) {
            Err(GrantsError::Malformed { .. }) => {}
            other => panic!("{body:?} accepted: {other:?}"),
        }
        assert!(
            grants::open(dir.path(), &policy(), "fleet").is_err(),
            "{body:?}"
        );
        assert_eq!(
            fs::read_to_string(&path).expect("read"),
            body,
            "a malformed file was rewritten"
        );
    }
}

#[test]
fn an_oversized_file_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(grants::FILE_NAME);
    let body = format!(r#"{{"version":1,"open":["fleet"]}}{}"#, " ".repeat(70_000));
    write_mode(&path, &body, 0o600);
    assert!(matches!(
        Grants::load(dir.path()),
        Err(GrantsError::Malformed { .. })
    ));
}

#[test]
fn a_symlink_in_place_of_the_file_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let elsewhere = dir.path().join("elsewhere.json");
    write_mode(
        &elsewhere,
        r#"{"version":1,"open":["fleet","maintenance"]}"#,
        0o600,
    );
    std::os::unix::fs::symlink(&elsewhere, dir.path().join(grants::FILE_NAME)).expect("symlink");
    assert!(matches!(
        Grants::load(dir.path()),
        Err(GrantsError::Insecure { .. })
    ));
}

#[test]
fn a_directory_in_place_of_the_file_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    fs::create_dir(dir.path().join(grants::FILE_NAME)).expect("mkdir");
    assert!(Grants::load(dir.path()).is_err());
}

#[test]
fn list_shows_every_category_with_its_tools() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = policy();
    grants::open(dir.path(), &p, "fleet").expect("open");
    grants::open(dir.path(), &p, "maintenance").expect("open");
    assert_eq!(
        grants::list(dir.path(), &p).expect("list"),
        "category     state   tools\n\
         events       closed  propose: confirm_cms_event_on_device\n\
         fleet        open    read: get_device_info, get_devices_in_my_team, get_recorder_status_for_devices, get_storage_status_for_devices, get_system_status_for_devices; fleet: fleet_overview, fleet_room, fleet_search\n\
         maintenance  open    propose: batch_firmware_update, batch_reboot\n\
         recording    closed  propose: batch_recording\n\
         schedule     closed  read: get_current_or_next_cms_event_for_device, get_current_or_next_cms_events_for_devices\n\
         streaming    closed  propose: start_stream_endpoint, stop_stream_endpoint\n\
         streams      closed  read: get_stream_endpoint, get_stream_endpoints\n"
    );
}

#[test]
fn list_flags_an_open_category_the_policy_no_longer_has() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_mode(
        &dir.path().join(grants::FILE_NAME),
        r#"{"version":1,"open":["retired"]}"#,
        0o600,
    );
    let text = grants::list(dir.path(), &policy()).expect("list");
    assert!(
        text.lines()
            .any(|l| l == "retired      open    (not in the policy)"),
        "{text}"
    );
    assert!(
        text.lines().filter(|l| l.contains(" open ")).count() == 1,
        "{text}"
    );
}
