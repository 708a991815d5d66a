//! Identifier checks: whole-value matches, never a prefix, never a different kind of ID.

// Test code: a panic is the failure report, and fixed-size fixtures are indexed directly.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use fleetwatch_protocol::ids::{
    device_of, is_channel_id, is_channel_number, is_event_id, is_master_id, is_uuid,
};

#[test]
fn master_ids() {
    for ok in [
        "0123abcd",
        "deadbeefdeadbeefdeadbeefdeadbeef",
        "00000000",
        "a1b2c3d4e5f6",
    ] {
        assert!(is_master_id(ok), "{ok}");
    }
    for bad in [
        "",
        "0123abc",                           // 7: too short
        "deadbeefdeadbeefdeadbeefdeadbeef0", // 33: too long
        "0123ABCD",                          // upper-case hex
        "0123abcg",                          // not hex
        "0123abcd\n",                        // trailing newline
        "\n0123abcd",
        " 0123abcd",
        "0123abcd ",
        "0123abcd-1",      // a channel is not a master
        "0123abc\u{0661}", // a non-ASCII digit
    ] {
        assert!(!is_master_id(bad), "{bad:?}");
    }
}

#[test]
fn channel_ids() {
    for ok in [
        "0123abcd-1",
        "0123abcd-9",
        "0123abcd-10",
        "0123abcd-999",
        "deadbeefdeadbeefdeadbeefdeadbeef-42",
    ] {
        assert!(is_channel_id(ok), "{ok}");
    }
    for bad in [
        "0123abcd",      // a master is not a channel
        "0123abcd-",     // no number
        "0123abcd-0",    // channels start at 1
        "0123abcd-01",   // leading zero
        "0123abcd-1000", // four digits
        "0123abcd-1\n",  // trailing newline
        "0123abcd-1-2",
        "0123abcd--1",
        "0123abc-1",  // device part too short
        "0123ABCD-1", // upper-case hex
        "-1",
        "0123abcd-a",
        "0123abcd-1 ",
    ] {
        assert!(!is_channel_id(bad), "{bad:?}");
    }
}

#[test]
fn master_and_channel_are_never_confused() {
    for s in ["0123abcd", "0123abcd-1", "0123abcd-12", "deadbeef00"] {
        assert!(
            is_master_id(s) != is_channel_id(s),
            "{s} must be exactly one of master or channel"
        );
    }
}

#[test]
fn device_of_resolves_channels_to_their_device() {
    assert_eq!(device_of("0123abcd"), Some("0123abcd"));
    assert_eq!(device_of("0123abcd-3"), Some("0123abcd"));
    assert_eq!(device_of("0123abcd-999"), Some("0123abcd"));
    assert_eq!(device_of("0123abcd-0"), None);
    assert_eq!(device_of("0123abcd-1000"), None);
    assert_eq!(device_of("0123abcd\n"), None);
    assert_eq!(device_of("0123ABCD-1"), None);
    assert_eq!(device_of("abc-1"), None);
    assert_eq!(device_of(""), None);
}

#[test]
fn uuids() {
    for ok in [
        "123e4567-e89b-12d3-a456-426614174000",
        "123E4567-E89B-12D3-A456-426614174000",
        "00000000-0000-0000-0000-000000000000",
    ] {
        assert!(is_uuid(ok), "{ok}");
    }
    for bad in [
        "",
        "123e4567-e89b-12d3-a456-42661417400", // last group short
        "123e4567-e89b-12d3-a456-4266141740000", // last group long
        "123e4567e89b12d3a456426614174000",    // no hyphens
        "123e4567-e89b-12d3-a456-426614174000\n",
        "{123e4567-e89b-12d3-a456-426614174000}",
        "123e4567-e89b-12d3-a456-426614174000-1",
        "123e4567-e89b-12d3-a456-42661417400g",
        "123e4567-e89b-12d3-a4566-42661417400",
    ] {
        assert!(!is_uuid(bad), "{bad:?}");
    }
}

#[test]
fn event_ids() {
    let longest = format!("a{}", "b".repeat(127));
    for ok in ["a", "Z9", "evt_2024-05-01", "1", longest.as_str()] {
        assert!(is_event_id(ok), "{ok}");
    }
    let too_long = format!("a{}", "b".repeat(128));
    for bad in [
        "",
        "_a",
        "-a",
        "a b",
        "a\n",
        "a.b",
        "a/b",
        "é",
        too_long.as_str(),
    ] {
        assert!(!is_event_id(bad), "{bad:?}");
    }
}

#[test]
fn channel_numbers() {
    for ok in ["1", "9", "10", "999"] {
        assert!(is_channel_number(ok), "{ok}");
    }
    for bad in [
        "", "0", "01", "1000", "1\n", "-1", "+1", "1 ", "a", "\u{0661}",
    ] {
        assert!(!is_channel_number(bad), "{bad:?}");
    }
}
