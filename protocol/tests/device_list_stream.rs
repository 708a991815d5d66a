//! The device list decoded one device at a time says what the whole-tree parser says about the
//! same text redacted whole: the same devices, the same team ID, the same errors.
#![forbid(unsafe_code)]
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic, missing_docs)]

use fleetwatch_protocol::fleet::{decode_device_list, parse_device_list};
use fleetwatch_redact as redact;
use proptest::prelude::*;
use serde_json::{Value, json};

fn whole(text: &str) -> Result<fleetwatch_protocol::fleet::DeviceList, String> {
    let mut value: Value =
        fleetwatch_protocol::lenient::parse(text.trim()).map_err(|_| "not JSON".to_owned())?;
    redact::redact_value(&mut value);
    parse_device_list(&value).map_err(|e| e.to_string())
}

fn streamed(text: &str) -> Result<fleetwatch_protocol::fleet::DeviceList, String> {
    decode_device_list(text, &mut |v| redact::redact_value(v)).map_err(|e| e.to_string())
}

fn same(text: &str) {
    match (whole(text), streamed(text)) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "{text}"),
        (Err(_), Err(e)) => assert!(e.starts_with("get_devices_in_my_team"), "{e}"),
        (a, b) => panic!("whole {a:?} but streamed {b:?} for {text}"),
    }
}

#[test]
fn known_shapes_and_failures_agree() {
    for text in [
        include_str!("data/devices_object.json"),
        include_str!("data/devices_bare_list.json"),
        r#"{"devices": []}"#,
        r#"[]"#,
        r#"{"devices": null}"#,
        r#"{"devices": {"a": 1}}"#,
        r#"{"devices": "none"}"#,
        r#"{"team": "x"}"#,
        r#""text""#,
        r#"42"#,
        r#"null"#,
        r#"[1, 2]"#,
        r#"[{"name": "no id"}]"#,
        r#"[{"Id": 7, "Name": "numeric id"}, {"name": "no id"}]"#,
        r#"{"Devices": [{"Id": "a1"}], "devices": [{"Id": "b2"}]}"#,
        r#"{"devices": [{"Id": "a1"}], "devices": [{"Id": "b2"}]}"#,
        r#"{"team_id": null, "TeamId": "t-1", "devices": []}"#,
        r#"{"teamId": "t-2", "team_id": "t-3", "devices": [{"Id": "c3", "Name": "x\ud800y"}]}"#,
        r#"{"devices": [{"Id": "d4", "Channels": {"2": {"name": "B", "state": "recording"}}}]}"#,
        r#"{"devices": [{"Id": "e5", "Name": "rtmp://u:p@h/app/key", "password": "hunter2"}]}"#,
        r#"{"devices": [{"Id": "f6"}] "#,
        r#"{"devices": [{"Id": "f6"}]} trailing"#,
    ] {
        same(text);
    }
}

/// A JSON value shaped like a device entry, with the spellings and oddities Epiphan produces.
fn device_entry() -> impl Strategy<Value = Value> {
    let id = prop_oneof![
        "[0-9a-f]{10}".prop_map(Value::from),
        (0_u64..1_000_000).prop_map(Value::from),
        Just(Value::Null),
    ];
    let id_key = prop_oneof![Just("Id"), Just("id"), Just("ID"), Just("_id")];
    let text = prop_oneof![
        "[A-Za-z0-9 ]{0,12}".prop_map(Value::from),
        Just(json!("rtmp://user:pass@live.example.net/app/sk_live_123")),
        Just(json!("Bearer abcdefghijklmnop")),
        Just(Value::Null),
        (0_i64..100).prop_map(Value::from),
    ];
    let state = prop_oneof![
        Just(json!("recording")),
        Just(json!("stopped")),
        Just(json!("paused")),
        Just(json!({"state": "started"})),
        Just(Value::Null),
    ];
    let channel = (1_u32..4, text.clone(), state, any::<bool>()).prop_map(|(n, name, st, pub_on)| {
        json!({
            "channel_id": n.to_string(),
            "name": name,
            "recording_status": st,
            "publishers": [{"type": "rtmp", "status": if pub_on { "started" } else { "stopped" },
                            "stream_key": "sk-secret"}],
            "warnings": [{"id": "disk_space_error", "label": "Disk", "message": "low",
                          "data": {"used_percent": 93}}],
        })
    });
    (
        id_key,
        id,
        text.clone(),
        text,
        prop_oneof![Just("online"), Just("Offline"), Just("ONLINE")],
        proptest::collection::vec(channel, 0..3),
        any::<bool>(),
    )
        .prop_map(|(id_key, id, name, firmware, status, channels, as_map)| {
            let channels = if as_map {
                let map: serde_json::Map<String, Value> = channels
                    .into_iter()
                    .enumerate()
                    .map(|(i, c)| ((i + 1).to_string(), c))
                    .collect();
                Value::Object(map)
            } else {
                Value::Array(channels)
            };
            json!({id_key: id, "Name": name, "Firmware": firmware, "Status": status,
                   "Channels": channels, "Model": "Pearl-2"})
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn generated_lists_agree(
        entries in proptest::collection::vec(device_entry(), 0..6),
        bare in any::<bool>(),
        team in proptest::option::of("[a-z0-9-]{1,8}"),
        junk in proptest::option::of(prop_oneof![Just(json!(1)), Just(json!("x")), Just(Value::Null)]),
    ) {
        let mut list: Vec<Value> = entries;
        if let Some(junk) = junk {
            list.push(junk);
        }
        let doc = if bare {
            Value::Array(list)
        } else {
            json!({"team_id": team, "devices": list, "other": {"nested": [1, 2, 3]}})
        };
        same(&doc.to_string());
    }
}
