//! The tool registry: the shipped file, every load refusal, argument validation, the
//! disruptive rules and the digests.
// Tests may panic on a broken expectation; that is how they fail.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use fleetwatch_protocol::Refusal;
use fleetwatch_protocol::policy::{ArgumentError, ChannelRef, EventRef, Policy, PolicyError};
use serde_json::{Value, json};

const SHIPPED: &str = include_str!("../../tool_policy.yaml");
const PENDING: &str = include_str!("data/policy_pending.yaml");
const DUPLICATE: &str = include_str!("data/policy_duplicate_key.yaml");

const DEVICE: &str = "19012341234";
const OTHER_DEVICE: &str = "19012345678";
const CHANNEL: &str = "19012341234-1";
const STREAM: &str = "6f1c2a9e-3b4d-4c5e-8f70-123456789abc";

fn shipped() -> Policy {
    Policy::from_yaml(SHIPPED).expect("the shipped tool_policy.yaml loads")
}

/// The shipped file as JSON, to be edited by a test and loaded again (JSON is valid YAML).
fn shipped_value() -> Value {
    yaml_serde::from_str(SHIPPED).unwrap()
}

fn load(value: &Value) -> Result<Policy, PolicyError> {
    Policy::from_yaml(&serde_json::to_string(value).unwrap())
}

/// Loads an edited file, expects a refusal naming `entry`, and returns its text.
fn refused(value: &Value, entry: &str) -> String {
    let error = load(value).expect_err("the edited policy must be refused");
    assert_eq!(error.entry, entry, "{error}");
    let text = error.to_string();
    assert!(text.contains(entry), "{text}");
    text
}

fn entry_mut<'a>(value: &'a mut Value, pointer: &str) -> &'a mut serde_json::Map<String, Value> {
    value.pointer_mut(pointer).unwrap().as_object_mut().unwrap()
}

fn schema_error(error: ArgumentError) -> (String, String) {
    match error {
        ArgumentError::Schema { field, problem } => (field, problem),
        other => panic!("expected a schema error, got {other:?}"),
    }
}

// ---- the shipped file ----------------------------------------------------------------------

#[test]
fn shipped_policy_loads_with_the_six_proposable_tools() {
    let policy = shipped();
    let names: Vec<&str> = policy.propose_entries().map(|e| e.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "batch_firmware_update",
            "batch_reboot",
            "batch_recording",
            "confirm_cms_event_on_device",
            "start_stream_endpoint",
            "stop_stream_endpoint",
        ]
    );
    for entry in policy.propose_entries() {
        assert_eq!(entry.max_targets, 1, "{}", entry.name);
        assert_eq!(entry.schema_version, 1, "{}", entry.name);
        assert!(entry.schema.is_some(), "{}", entry.name);
        assert!(!entry.description.is_empty(), "{}", entry.name);
    }
    let category = |name: &str| policy.propose_entry(name).unwrap().category.clone();
    assert_eq!(category("batch_recording"), "recording");
    assert_eq!(category("start_stream_endpoint"), "streaming");
    assert_eq!(category("stop_stream_endpoint"), "streaming");
    assert_eq!(category("batch_reboot"), "maintenance");
    assert_eq!(category("batch_firmware_update"), "maintenance");
    assert_eq!(category("confirm_cms_event_on_device"), "events");
    let flags = |name: &str| policy.propose_entry(name).unwrap().disruptive;
    assert!(flags("batch_recording"));
    assert!(!flags("start_stream_endpoint"));
    assert!(flags("stop_stream_endpoint"));
    assert!(!flags("confirm_cms_event_on_device"));
    assert!(flags("batch_reboot"));
    assert!(flags("batch_firmware_update"));
}

#[test]
fn shipped_read_tools_have_categories_and_never_pictures() {
    let policy = shipped();
    for tool in policy.read_tools() {
        assert!(tool.name.starts_with("get_"), "{}", tool.name);
        assert!(
            ["fleet", "schedule", "streams"].contains(&tool.category.as_str()),
            "{}: {}",
            tool.name,
            tool.category
        );
        assert!(!policy.is_write_tool(&tool.name), "{}", tool.name);
        assert_eq!(tool.schema["type"], "object", "{}", tool.name);
        assert_eq!(tool.schema["additionalProperties"], false, "{}", tool.name);
    }
    assert!(policy.read_tool("get_channel_image").is_none());
    for (name, category) in [
        ("get_devices_in_my_team", "fleet"),
        ("get_device_info", "fleet"),
        ("get_recorder_status_for_devices", "fleet"),
        ("get_system_status_for_devices", "fleet"),
        ("get_storage_status_for_devices", "fleet"),
        ("get_current_or_next_cms_events_for_devices", "schedule"),
        ("get_stream_endpoints", "streams"),
    ] {
        assert_eq!(policy.read_tool(name).unwrap().category, category, "{name}");
    }
}

#[test]
fn every_epiphan_write_tool_is_a_write_tool() {
    let policy = shipped();
    for name in fleetwatch_protocol::policy::EPIPHAN_WRITE_TOOLS {
        assert!(policy.is_write_tool(name), "{name}");
        assert!(policy.read_tool(name).is_none(), "{name}");
    }
    assert!(!policy.is_write_tool("get_devices_in_my_team"));
}

#[test]
fn shipped_lead_windows_and_recording_rules() {
    let policy = shipped();
    assert_eq!(policy.lead_minutes("batch_firmware_update"), 120);
    assert_eq!(policy.lead_minutes("batch_reboot"), 30);
    assert_eq!(policy.lead_minutes("stop_stream_endpoint"), 30);
    assert_eq!(policy.lead_minutes("not_a_tool"), 30);
    let stop = json!({"action": "stop", "device_ids": [CHANNEL]});
    let start = json!({"action": "start", "device_ids": [CHANNEL]});
    assert!(policy.stops_recording("batch_recording", &stop));
    assert!(!policy.stops_recording("batch_recording", &start));
    assert!(!policy.stops_recording("batch_recording", &json!({"device_ids": [CHANNEL]})));
    assert!(!policy.stops_recording("batch_reboot", &stop));
}

// ---- load refusals -------------------------------------------------------------------------

#[test]
fn refuses_an_epiphan_write_tool_under_read() {
    let mut v = shipped_value();
    entry_mut(&mut v, "/read").insert(
        "batch_reboot".into(),
        json!({"category": "fleet", "description": "x", "schema": {"type": "object", "properties": {}, "additionalProperties": false}}),
    );
    let text = refused(&v, "batch_reboot");
    assert!(text.contains("write tool"), "{text}");
}

#[test]
fn refuses_a_name_from_the_write_list_under_read() {
    let mut v = shipped_value();
    v["write"]
        .as_array_mut()
        .unwrap()
        .push(json!("get_team_secrets"));
    entry_mut(&mut v, "/read").insert(
        "get_team_secrets".into(),
        json!({"category": "fleet", "description": "x", "schema": {"type": "object", "properties": {}, "additionalProperties": false}}),
    );
    refused(&v, "get_team_secrets");
}

#[test]
fn refuses_a_read_name_without_get_or_kb() {
    let mut v = shipped_value();
    entry_mut(&mut v, "/read").insert(
        "list_devices".into(),
        json!({"category": "fleet", "description": "x", "schema": {"type": "object", "properties": {}, "additionalProperties": false}}),
    );
    let text = refused(&v, "list_devices");
    assert!(text.contains("get_ or kb_"), "{text}");
}

#[test]
fn refuses_the_picture_tool_under_read() {
    let mut v = shipped_value();
    entry_mut(&mut v, "/read").insert(
        "get_channel_image".into(),
        json!({"category": "fleet", "description": "x", "schema": {"type": "object", "properties": {}, "additionalProperties": false}}),
    );
    refused(&v, "get_channel_image");
}

#[test]
fn refuses_a_propose_entry_missing_category() {
    let mut v = shipped_value();
    entry_mut(&mut v, "/propose/batch_reboot").remove("category");
    let text = refused(&v, "batch_reboot");
    assert!(text.contains("category"), "{text}");
}

#[test]
fn refuses_a_read_entry_missing_category() {
    let mut v = shipped_value();
    entry_mut(&mut v, "/read/get_devices_in_my_team").remove("category");
    let text = refused(&v, "get_devices_in_my_team");
    assert!(text.contains("category"), "{text}");
}

#[test]
fn refuses_a_propose_entry_missing_disruptive() {
    // Even a calm tool must say so: a missing flag never defaults to calm.
    let mut v = shipped_value();
    entry_mut(&mut v, "/propose/start_stream_endpoint").remove("disruptive");
    let text = refused(&v, "start_stream_endpoint");
    assert!(text.contains("disruptive"), "{text}");
}

#[test]
fn refuses_calm_for_a_tool_on_the_disruptive_list() {
    let mut v = shipped_value();
    entry_mut(&mut v, "/propose/stop_stream_endpoint").insert("disruptive".into(), json!(false));
    let text = refused(&v, "stop_stream_endpoint");
    assert!(text.contains("disruptive list"), "{text}");
}

#[test]
fn refuses_calm_for_a_tool_the_file_lists_as_disruptive() {
    let mut v = shipped_value();
    v["disruptive"]
        .as_array_mut()
        .unwrap()
        .push(json!("start_stream_endpoint"));
    refused(&v, "start_stream_endpoint");
}

#[test]
fn a_known_disruptive_tool_stays_disruptive_when_dropped_from_the_list() {
    let mut v = shipped_value();
    v["disruptive"]
        .as_array_mut()
        .unwrap()
        .retain(|n| n != "batch_reboot");
    entry_mut(&mut v, "/propose/batch_reboot").insert("disruptive".into(), json!(false));
    refused(&v, "batch_reboot");
}

#[test]
fn refuses_max_targets_that_is_not_a_positive_integer() {
    for bad in [json!(0), json!(-1), json!(1.5), json!("1"), json!(null)] {
        let mut v = shipped_value();
        entry_mut(&mut v, "/propose/batch_reboot").insert("max_targets".into(), bad.clone());
        let text = refused(&v, "batch_reboot");
        assert!(text.contains("max_targets"), "{bad}: {text}");
    }
    let mut v = shipped_value();
    entry_mut(&mut v, "/propose/batch_reboot").remove("max_targets");
    let text = refused(&v, "batch_reboot");
    assert!(text.contains("max_targets"), "{text}");
}

#[test]
fn refuses_a_schema_that_does_not_compile() {
    let mut v = shipped_value();
    entry_mut(&mut v, "/propose/batch_reboot/schema/properties/device_ids")
        .insert("minItems".into(), json!(-1));
    let text = refused(&v, "batch_reboot");
    assert!(text.contains("does not compile"), "{text}");
}

#[test]
fn refuses_a_schema_with_an_invalid_regex() {
    let mut v = shipped_value();
    entry_mut(
        &mut v,
        "/propose/start_stream_endpoint/schema/properties/channel_id",
    )
    .insert("pattern".into(), json!("^[1-9$"));
    refused(&v, "start_stream_endpoint");
}

#[test]
fn refuses_a_schema_without_additional_properties_false_at_the_top() {
    let mut v = shipped_value();
    entry_mut(&mut v, "/propose/batch_reboot/schema").remove("additionalProperties");
    let text = refused(&v, "batch_reboot");
    assert!(text.contains("additionalProperties"), "{text}");

    let mut v = shipped_value();
    entry_mut(&mut v, "/propose/batch_reboot/schema")
        .insert("additionalProperties".into(), json!(true));
    refused(&v, "batch_reboot");
}

#[test]
fn refuses_a_nested_object_without_additional_properties_false() {
    let mut v = shipped_value();
    entry_mut(&mut v, "/propose/batch_reboot/schema/properties").insert(
        "options".into(),
        json!({"type": "object", "properties": {"force": {"type": "boolean"}}}),
    );
    let text = refused(&v, "batch_reboot");
    assert!(text.contains("/properties/options"), "{text}");
}

#[test]
fn refuses_an_untyped_subschema_that_would_accept_any_object() {
    let mut v = shipped_value();
    entry_mut(&mut v, "/propose/batch_reboot/schema/properties").insert("extra".into(), json!({}));
    refused(&v, "batch_reboot");
}

#[test]
fn refuses_a_read_schema_without_additional_properties_false() {
    let mut v = shipped_value();
    entry_mut(&mut v, "/read/get_stream_endpoints/schema").remove("additionalProperties");
    refused(&v, "get_stream_endpoints");
}

#[test]
fn refuses_a_target_field_that_is_not_required() {
    let mut v = shipped_value();
    entry_mut(&mut v, "/propose/batch_recording/schema")
        .insert("required".into(), json!(["action"]));
    let text = refused(&v, "batch_recording");
    assert!(text.contains("required"), "{text}");
}

#[test]
fn refuses_a_target_field_without_an_id_pattern() {
    let mut v = shipped_value();
    entry_mut(
        &mut v,
        "/propose/batch_reboot/schema/properties/device_ids/items",
    )
    .remove("pattern");
    let text = refused(&v, "batch_reboot");
    assert!(text.contains("pattern"), "{text}");

    let mut v = shipped_value();
    entry_mut(
        &mut v,
        "/propose/batch_reboot/schema/properties/device_ids/items",
    )
    .insert("pattern".into(), json!("^[0-9a-z]{1,64}$"));
    refused(&v, "batch_reboot");
}

#[test]
fn refuses_a_target_pattern_without_a_string_type() {
    let mut v = shipped_value();
    entry_mut(
        &mut v,
        "/propose/confirm_cms_event_on_device/schema/properties/device_id",
    )
    .remove("type");
    refused(&v, "confirm_cms_event_on_device");
}

#[test]
fn refuses_a_target_that_is_not_a_property() {
    let mut v = shipped_value();
    entry_mut(&mut v, "/propose/batch_reboot").insert("target".into(), json!("devices"));
    refused(&v, "batch_reboot");
}

#[test]
fn refuses_a_default_on_the_target_field() {
    let mut v = shipped_value();
    entry_mut(
        &mut v,
        "/propose/confirm_cms_event_on_device/schema/properties/device_id",
    )
    .insert("default".into(), json!(DEVICE));
    let text = refused(&v, "confirm_cms_event_on_device");
    assert!(text.contains("default"), "{text}");
}

#[test]
fn refuses_an_unanchored_pattern() {
    for bad in [
        "[1-9][0-9]{0,2}",
        "^[1-9][0-9]{0,2}",
        "[1-9][0-9]{0,2}$",
        "^1|2$",
        "(?m)^[1-9]$",
    ] {
        let mut v = shipped_value();
        entry_mut(
            &mut v,
            "/propose/start_stream_endpoint/schema/properties/channel_id",
        )
        .insert("pattern".into(), json!(bad));
        let text = refused(&v, "start_stream_endpoint");
        assert!(text.contains("pattern"), "{bad}: {text}");
    }
}

#[test]
fn refuses_pattern_properties() {
    let mut v = shipped_value();
    entry_mut(&mut v, "/propose/batch_reboot/schema").insert(
        "patternProperties".into(),
        json!({"^x_.*$": {"type": "string"}}),
    );
    refused(&v, "batch_reboot");
}

#[test]
fn refuses_floats_in_a_schema() {
    let mut v = shipped_value();
    entry_mut(&mut v, "/propose/batch_reboot/schema/properties")
        .insert("delay".into(), json!({"type": "number", "maximum": 2.5}));
    let text = refused(&v, "batch_reboot");
    assert!(text.contains("integers"), "{text}");
}

#[test]
fn refuses_disruptive_when_on_a_field_without_an_enum() {
    let mut v = shipped_value();
    entry_mut(&mut v, "/propose/batch_recording").insert(
        "disruptive_when".into(),
        json!({"field": "device_ids", "values": ["stop"]}),
    );
    let text = refused(&v, "batch_recording");
    assert!(text.contains("disruptive_when"), "{text}");
}

#[test]
fn refuses_disruptive_when_values_outside_the_enum() {
    let mut v = shipped_value();
    entry_mut(&mut v, "/propose/batch_recording").insert(
        "disruptive_when".into(),
        json!({"field": "action", "values": ["halt"]}),
    );
    refused(&v, "batch_recording");

    let mut v = shipped_value();
    entry_mut(&mut v, "/propose/batch_recording").insert(
        "disruptive_when".into(),
        json!({"field": "action", "values": []}),
    );
    refused(&v, "batch_recording");
}

#[test]
fn refuses_disruptive_when_on_a_missing_field() {
    let mut v = shipped_value();
    entry_mut(&mut v, "/propose/batch_recording").insert(
        "disruptive_when".into(),
        json!({"field": "mode", "values": ["stop"]}),
    );
    refused(&v, "batch_recording");
}

#[test]
fn refuses_disruptive_when_on_a_calm_tool() {
    let mut v = shipped_value();
    entry_mut(&mut v, "/propose/batch_recording").insert("disruptive".into(), json!(false));
    v["disruptive"]
        .as_array_mut()
        .unwrap()
        .retain(|n| n != "batch_recording");
    // batch_recording is also disruptive by name, so either check may fire; both name it.
    refused(&v, "batch_recording");
}

#[test]
fn refuses_stops_recording_outside_the_enum() {
    let mut v = shipped_value();
    entry_mut(&mut v, "/propose/batch_recording").insert(
        "stops_recording".into(),
        json!({"field": "action", "values": ["end"]}),
    );
    let text = refused(&v, "batch_recording");
    assert!(text.contains("stops_recording"), "{text}");

    let mut v = shipped_value();
    entry_mut(&mut v, "/propose/batch_recording").insert(
        "stops_recording".into(),
        json!({"field": "device_ids", "values": ["stop"]}),
    );
    refused(&v, "batch_recording");
}

#[test]
fn refuses_lead_minutes_outside_one_day() {
    for bad in [json!(0), json!(1441), json!(-5), json!(2.5), json!("30")] {
        let mut v = shipped_value();
        entry_mut(&mut v, "/propose/batch_firmware_update")
            .insert("lead_minutes".into(), bad.clone());
        let text = refused(&v, "batch_firmware_update");
        assert!(text.contains("lead_minutes"), "{bad}: {text}");
    }
    for good in [1, 1440] {
        let mut v = shipped_value();
        entry_mut(&mut v, "/propose/batch_firmware_update")
            .insert("lead_minutes".into(), json!(good));
        assert_eq!(
            load(&v).unwrap().lead_minutes("batch_firmware_update"),
            good
        );
    }
}

#[test]
fn refuses_unknown_keys_in_a_propose_entry() {
    let mut v = shipped_value();
    entry_mut(&mut v, "/propose/batch_reboot").insert("auto_approve".into(), json!(true));
    let text = refused(&v, "batch_reboot");
    assert!(text.contains("auto_approve"), "{text}");
}

#[test]
fn refuses_unknown_keys_in_a_read_entry() {
    let mut v = shipped_value();
    entry_mut(&mut v, "/read/get_device_info").insert("disruptive".into(), json!(false));
    refused(&v, "get_device_info");
}

#[test]
fn refuses_unknown_keys_in_a_rule() {
    let mut v = shipped_value();
    entry_mut(&mut v, "/propose/batch_recording/disruptive_when")
        .insert("unless".into(), json!("start"));
    refused(&v, "batch_recording");
}

#[test]
fn refuses_unknown_top_level_keys() {
    let mut v = shipped_value();
    v.as_object_mut()
        .unwrap()
        .insert("grants".into(), json!({"all": true}));
    let text = refused(&v, "(file)");
    assert!(text.contains("grants"), "{text}");
}

#[test]
fn refuses_another_version() {
    let mut v = shipped_value();
    v["version"] = json!(2);
    refused(&v, "version");
}

#[test]
fn refuses_a_duplicate_entry() {
    let error = Policy::from_yaml(DUPLICATE).unwrap_err();
    assert!(error.to_string().contains("duplicate"), "{error}");
}

#[test]
fn refuses_invalid_yaml() {
    let error = Policy::from_yaml("version: 1\nread: [\n").unwrap_err();
    assert_eq!(error.entry, "(file)");
}

#[test]
fn refuses_a_propose_entry_that_is_not_a_write_tool() {
    let mut v = shipped_value();
    let entry = v["propose"]["batch_reboot"].clone();
    entry_mut(&mut v, "/propose").insert("format_disk".into(), entry.clone());
    refused(&v, "format_disk");

    let mut v = shipped_value();
    entry_mut(&mut v, "/propose").insert("get_device_info".into(), entry);
    refused(&v, "get_device_info");
}

#[test]
fn refuses_a_schema_marker_other_than_pending_live_run() {
    let mut v = shipped_value();
    entry_mut(&mut v, "/propose/batch_reboot").insert("schema".into(), json!("todo"));
    refused(&v, "batch_reboot");
}

#[test]
fn refuses_a_blank_category() {
    let mut v = shipped_value();
    entry_mut(&mut v, "/propose/batch_reboot").insert("category".into(), json!("  "));
    refused(&v, "batch_reboot");
}

#[test]
fn refuses_a_secret_like_argument() {
    for name in ["stream_key", "streamKey", "password"] {
        let mut v = shipped_value();
        entry_mut(&mut v, "/propose/start_stream_endpoint/schema/properties")
            .insert(name.into(), json!({"type": "string", "maxLength": 64}));
        let text = refused(&v, "start_stream_endpoint");
        assert!(text.contains(name), "{text}");
    }
}

#[test]
fn shipped_registry_reaches_no_excluded_authority() {
    // Reads are a fixed, reviewed subset of Epiphan's read tools; proposals are exactly the
    // six reviewed write tools. Adding anything else must be a deliberate edit of this list.
    const REVIEWED_READS: &[&str] = &[
        "get_current_or_next_cms_event_for_device",
        "get_current_or_next_cms_events_for_devices",
        "get_device_info",
        "get_devices_in_my_team",
        "get_recorder_status_for_devices",
        "get_storage_status_for_devices",
        "get_stream_endpoint",
        "get_stream_endpoints",
        "get_system_status_for_devices",
    ];
    let policy = shipped();
    let reads: Vec<&str> = policy.read_tools().map(|t| t.name.as_str()).collect();
    assert_eq!(reads, REVIEWED_READS);
    let listed: Vec<&str> = policy
        .listed_propose_entries()
        .map(|e| e.name.as_str())
        .collect();
    let proposable: Vec<&str> = policy.propose_entries().map(|e| e.name.as_str()).collect();
    assert_eq!(listed, proposable, "no pending entries ship");
    for excluded in [
        "create_stream_endpoint",
        "update_stream_endpoint",
        "delete_stream_endpoint",
        "create_cms_event",
        "update_cms_event",
        "delete_cms_event",
        "cms_event_action",
        "apply_team_preset",
        "switch_device_to_cms",
    ] {
        assert!(!listed.contains(&excluded), "{excluded}");
        assert!(policy.on_disruptive_list(excluded), "{excluded}");
    }
    for tool in policy.read_tools() {
        let text = serde_json::to_string(&tool.schema).unwrap();
        for word in ["key", "token", "password", "secret", "credential"] {
            assert!(!text.contains(word), "{}: {word}", tool.name);
        }
    }
}

// ---- pending-live-run ----------------------------------------------------------------------

#[test]
fn pending_live_run_loads_but_is_never_proposable() {
    let policy = Policy::from_yaml(PENDING).unwrap();
    assert!(policy.propose_entry("apply_team_preset").is_none());
    assert!(
        policy
            .propose_entries()
            .all(|e| e.name != "apply_team_preset")
    );
    assert!(
        policy
            .listed_propose_entries()
            .any(|e| e.name == "apply_team_preset" && e.schema.is_none())
    );
    assert!(policy.is_write_tool("apply_team_preset"));
    assert!(policy.is_disruptive("apply_team_preset", &json!({})));
    let error = policy
        .validate("apply_team_preset", &json!({"device_ids": [DEVICE]}))
        .unwrap_err();
    assert_eq!(
        error,
        ArgumentError::NotProposable("apply_team_preset".into())
    );
    assert_eq!(error.refusal(), Refusal::ToolNotProposable);
    assert!(policy.read_tool("kb_search").is_some());
}

#[test]
fn a_pending_entry_still_needs_its_flags() {
    let mut v: Value = yaml_serde::from_str(PENDING).unwrap();
    entry_mut(&mut v, "/propose/apply_team_preset").remove("disruptive");
    refused(&v, "apply_team_preset");
}

// ---- validate: happy paths -----------------------------------------------------------------

#[test]
fn validates_batch_recording() {
    let policy = shipped();
    let v = policy
        .validate(
            "batch_recording",
            &json!({"device_ids": [CHANNEL], "action": "start"}),
        )
        .unwrap();
    assert_eq!(v.tool, "batch_recording");
    assert_eq!(
        v.arguments.as_str(),
        r#"{"action":"start","device_ids":["19012341234-1"]}"#
    );
    assert_eq!(v.targets, [DEVICE]);
    assert_eq!(
        v.channels,
        [ChannelRef {
            device: DEVICE.into(),
            number: "1".into()
        }]
    );
    assert_eq!(v.channels[0].id(), CHANNEL);
    assert_eq!(v.stream_id, None);
    assert_eq!(v.event, None);
    assert_eq!(v.channel, None);
}

#[test]
fn validates_start_and_stop_stream_endpoint() {
    let policy = shipped();
    for tool in ["start_stream_endpoint", "stop_stream_endpoint"] {
        let v = policy
            .validate(
                tool,
                &json!({"stream_id": STREAM, "device_id": DEVICE, "channel_id": "2"}),
            )
            .unwrap();
        assert_eq!(
            v.arguments.as_str(),
            format!(r#"{{"channel_id":"2","device_id":"{DEVICE}","stream_id":"{STREAM}"}}"#)
        );
        assert_eq!(v.targets, [DEVICE]);
        assert!(v.channels.is_empty());
        assert_eq!(v.stream_id.as_deref(), Some(STREAM));
        assert_eq!(
            v.channel,
            Some(ChannelRef {
                device: DEVICE.into(),
                number: "2".into()
            })
        );
        assert_eq!(v.event, None);
    }
}

#[test]
fn validates_confirm_cms_event_on_device() {
    let policy = shipped();
    let v = policy
        .validate(
            "confirm_cms_event_on_device",
            &json!({"event_id": "evt_2026-09-24", "device_id": DEVICE}),
        )
        .unwrap();
    assert_eq!(v.targets, [DEVICE]);
    assert_eq!(
        v.event,
        Some(EventRef {
            device: DEVICE.into(),
            event: "evt_2026-09-24".into()
        })
    );
    assert_eq!(v.stream_id, None);
}

/// An event ID may have exactly the shape of a device ID (an all-digit CMS ID, or lower-case
/// hex): the reference keeps each half in its own field whatever it looks like.
#[test]
fn an_event_id_shaped_like_a_device_id_stays_the_event() {
    let policy = shipped();
    for event in ["19012349999", "20261201", "abcdef0123456789", "0000000000"] {
        let v = policy
            .validate(
                "confirm_cms_event_on_device",
                &json!({"event_id": event, "device_id": DEVICE}),
            )
            .unwrap();
        assert_eq!(
            v.event,
            Some(EventRef {
                device: DEVICE.into(),
                event: event.into()
            }),
            "{event}"
        );
    }
}

#[test]
fn validates_batch_reboot_and_firmware_update() {
    let policy = shipped();
    for tool in ["batch_reboot", "batch_firmware_update"] {
        let v = policy
            .validate(tool, &json!({"device_ids": [DEVICE]}))
            .unwrap();
        assert_eq!(
            v.arguments.as_str(),
            format!(r#"{{"device_ids":["{DEVICE}"]}}"#)
        );
        assert_eq!(v.targets, [DEVICE]);
        assert!(v.channels.is_empty());
    }
}

#[test]
fn canonical_output_is_exact_whatever_the_input_order() {
    let policy = shipped();
    let a = policy
        .validate(
            "stop_stream_endpoint",
            &serde_json::from_str(&format!(
                r#"{{ "stream_id": "{STREAM}", "channel_id": "1", "device_id": "{DEVICE}" }}"#
            ))
            .unwrap(),
        )
        .unwrap();
    let b = policy
        .validate(
            "stop_stream_endpoint",
            &serde_json::from_str(&format!(
                r#"{{"device_id":"{DEVICE}","channel_id":"1","stream_id":"{STREAM}"}}"#
            ))
            .unwrap(),
        )
        .unwrap();
    assert_eq!(a.arguments, b.arguments);
    assert_eq!(
        a.arguments.as_str(),
        r#"{"channel_id":"1","device_id":"19012341234","stream_id":"6f1c2a9e-3b4d-4c5e-8f70-123456789abc"}"#
    );
}

#[test]
fn defaults_are_filled_before_canonicalising() {
    let policy = Policy::from_yaml(PENDING).unwrap();
    let v = policy
        .validate("batch_reboot", &json!({"device_ids": [DEVICE]}))
        .unwrap();
    assert_eq!(
        v.arguments.as_str(),
        r#"{"device_ids":["19012341234"],"force":false,"note":"planned restart"}"#
    );
    // A value given explicitly wins over the default.
    let v = policy
        .validate(
            "batch_reboot",
            &json!({"device_ids": [DEVICE], "force": true}),
        )
        .unwrap();
    assert_eq!(
        v.arguments.as_str(),
        r#"{"device_ids":["19012341234"],"force":true,"note":"planned restart"}"#
    );
}

// ---- validate: refusals --------------------------------------------------------------------

#[test]
fn refuses_an_extra_field_naming_it() {
    let policy = shipped();
    let error = policy
        .validate(
            "batch_reboot",
            &json!({"device_ids": [DEVICE], "force": true}),
        )
        .unwrap_err();
    assert_eq!(error.refusal(), Refusal::ArgumentsInvalid);
    let (field, _) = schema_error(error);
    assert_eq!(field, "force");
}

#[test]
fn refuses_a_missing_field_naming_it() {
    let policy = shipped();
    let error = policy
        .validate("batch_recording", &json!({"device_ids": [CHANNEL]}))
        .unwrap_err();
    assert!(error.to_string().contains("action"), "{error}");
    let (field, problem) = schema_error(error);
    assert_eq!(field, "action");
    assert_eq!(problem, "is required");
}

#[test]
fn refuses_a_wrong_type_naming_the_field() {
    let policy = shipped();
    let error = policy
        .validate("batch_reboot", &json!({"device_ids": DEVICE}))
        .unwrap_err();
    let (field, _) = schema_error(error);
    assert_eq!(field, "device_ids");

    let error = policy
        .validate(
            "start_stream_endpoint",
            &json!({"stream_id": STREAM, "device_id": DEVICE, "channel_id": 1}),
        )
        .unwrap_err();
    let (field, _) = schema_error(error);
    assert_eq!(field, "channel_id");
}

#[test]
fn refuses_arguments_that_are_not_an_object() {
    let policy = shipped();
    for bad in [json!([DEVICE]), json!(null), json!("device_ids")] {
        let error = policy.validate("batch_reboot", &bad).unwrap_err();
        assert_eq!(error.refusal(), Refusal::ArgumentsInvalid, "{bad}");
    }
}

#[test]
fn refuses_a_trailing_newline_in_an_id() {
    let policy = shipped();
    let error = policy
        .validate(
            "batch_reboot",
            &json!({"device_ids": [format!("{DEVICE}\n")]}),
        )
        .unwrap_err();
    let (field, problem) = schema_error(error);
    assert_eq!(field, "device_ids/0");
    // The value itself is never echoed.
    assert!(!problem.contains(DEVICE), "{problem}");

    let error = policy
        .validate(
            "confirm_cms_event_on_device",
            &json!({"device_id": DEVICE, "event_id": "evt1\n"}),
        )
        .unwrap_err();
    assert_eq!(schema_error(error).0, "event_id");
}

#[test]
fn refuses_a_channel_id_where_a_master_is_required() {
    let policy = shipped();
    let error = policy
        .validate("batch_reboot", &json!({"device_ids": [CHANNEL]}))
        .unwrap_err();
    assert_eq!(schema_error(error).0, "device_ids/0");
    let error = policy
        .validate(
            "start_stream_endpoint",
            &json!({"stream_id": STREAM, "device_id": CHANNEL, "channel_id": "1"}),
        )
        .unwrap_err();
    assert_eq!(schema_error(error).0, "device_id");
}

#[test]
fn refuses_a_master_id_where_a_channel_is_required() {
    let policy = shipped();
    let error = policy
        .validate(
            "batch_recording",
            &json!({"action": "stop", "device_ids": [DEVICE]}),
        )
        .unwrap_err();
    assert_eq!(schema_error(error).0, "device_ids/0");
}

#[test]
fn refuses_an_empty_target_list() {
    let policy = shipped();
    let error = policy
        .validate("batch_reboot", &json!({"device_ids": []}))
        .unwrap_err();
    assert_eq!(error, ArgumentError::NoTarget("device_ids".into()));
    assert_eq!(error.refusal(), Refusal::ArgumentsInvalid);
    assert!(error.to_string().contains("device_ids"));
}

#[test]
fn refuses_two_targets() {
    let policy = shipped();
    let error = policy
        .validate(
            "batch_reboot",
            &json!({"device_ids": [DEVICE, OTHER_DEVICE]}),
        )
        .unwrap_err();
    assert_eq!(
        error,
        ArgumentError::TooManyTargets {
            field: "device_ids".into(),
            max: 1
        }
    );
    assert_eq!(error.refusal(), Refusal::TooManyTargets);
    assert!(error.to_string().contains("device_ids"));
}

#[test]
fn refuses_a_duplicate_target_after_resolving() {
    let policy = shipped();
    let error = policy
        .validate("batch_reboot", &json!({"device_ids": [DEVICE, DEVICE]}))
        .unwrap_err();
    assert_eq!(error, ArgumentError::DuplicateTarget("device_ids".into()));
    // Two channels of one device are one device.
    let error = policy
        .validate(
            "batch_recording",
            &json!({"action": "stop", "device_ids": [CHANNEL, format!("{DEVICE}-2")]}),
        )
        .unwrap_err();
    assert_eq!(error, ArgumentError::DuplicateTarget("device_ids".into()));
}

#[test]
fn max_targets_above_one_allows_several_devices() {
    let mut v = shipped_value();
    entry_mut(&mut v, "/propose/batch_reboot").insert("max_targets".into(), json!(2));
    let policy = load(&v).unwrap();
    let ok = policy
        .validate(
            "batch_reboot",
            &json!({"device_ids": [OTHER_DEVICE, DEVICE]}),
        )
        .unwrap();
    assert_eq!(ok.targets, [DEVICE, OTHER_DEVICE]);
    let error = policy
        .validate(
            "batch_reboot",
            &json!({"device_ids": [OTHER_DEVICE, DEVICE, "19012349999"]}),
        )
        .unwrap_err();
    assert_eq!(
        error,
        ArgumentError::TooManyTargets {
            field: "device_ids".into(),
            max: 2
        }
    );
}

#[test]
fn refuses_unknown_and_read_tools() {
    let policy = shipped();
    for tool in ["get_devices_in_my_team", "delete_cms_event", "nonsense"] {
        let error = policy.validate(tool, &json!({})).unwrap_err();
        assert_eq!(error, ArgumentError::NotProposable(tool.into()));
    }
}

#[test]
fn refuses_floats_in_arguments() {
    let mut v = shipped_value();
    entry_mut(&mut v, "/propose/batch_reboot/schema/properties")
        .insert("delay".into(), json!({"type": "number"}));
    let policy = load(&v).unwrap();
    let error = policy
        .validate(
            "batch_reboot",
            &json!({"device_ids": [DEVICE], "delay": 1.5}),
        )
        .unwrap_err();
    assert!(matches!(error, ArgumentError::Canonical(_)), "{error:?}");
}

// ---- disruptive ----------------------------------------------------------------------------

#[test]
fn batch_recording_is_disruptive_only_for_stop_and_fails_safe() {
    let policy = shipped();
    let d = |args: Value| policy.is_disruptive("batch_recording", &args);
    assert!(!d(json!({"action": "start", "device_ids": [CHANNEL]})));
    assert!(d(json!({"action": "stop", "device_ids": [CHANNEL]})));
    assert!(d(json!({"device_ids": [CHANNEL]})), "missing action");
    assert!(
        d(json!({"action": "pause", "device_ids": [CHANNEL]})),
        "unknown action"
    );
    assert!(
        d(json!({"action": 1, "device_ids": [CHANNEL]})),
        "non-string action"
    );
    assert!(
        d(json!({"action": "START", "device_ids": [CHANNEL]})),
        "case differs"
    );
    assert!(d(json!(null)));
}

#[test]
fn disruptive_flags_by_tool() {
    let policy = shipped();
    let any = json!({});
    assert!(!policy.is_disruptive("start_stream_endpoint", &any));
    assert!(!policy.is_disruptive("confirm_cms_event_on_device", &any));
    assert!(policy.is_disruptive("stop_stream_endpoint", &any));
    assert!(policy.is_disruptive("batch_reboot", &any));
    assert!(policy.is_disruptive("batch_firmware_update", &any));
    assert!(policy.is_disruptive("not_a_tool", &any));
    assert!(policy.is_disruptive("delete_cms_event", &any));
}

#[test]
fn a_value_in_the_enum_but_not_the_rule_is_calm() {
    let mut v = shipped_value();
    entry_mut(&mut v, "/propose/batch_recording/schema/properties/action")
        .insert("enum".into(), json!(["start", "stop", "pause"]));
    let policy = load(&v).unwrap();
    assert!(!policy.is_disruptive("batch_recording", &json!({"action": "pause"})));
    assert!(policy.is_disruptive("batch_recording", &json!({"action": "stop"})));
    assert!(policy.is_disruptive("batch_recording", &json!({"action": "eject"})));
}

// ---- digests -------------------------------------------------------------------------------

#[test]
fn digests_are_stable_and_differ_between_tools() {
    let a = shipped();
    let b = shipped();
    let mut seen = std::collections::BTreeSet::new();
    for entry in a.propose_entries() {
        let digest = a.digest(&entry.name).unwrap();
        assert_eq!(Some(digest), b.digest(&entry.name), "{}", entry.name);
        assert!(seen.insert(digest), "{} shares a digest", entry.name);
    }
    assert_eq!(seen.len(), 6);
    assert_eq!(a.whole_digest(), b.whole_digest());
    assert_eq!(a.digest("get_devices_in_my_team"), None);
    assert_eq!(a.digest("nonsense"), None);
}

#[test]
fn digests_do_not_depend_on_key_order_or_layout() {
    // The same policy written as JSON in a different key order digests the same.
    let v = shipped_value();
    let reordered = load(&v).unwrap();
    let shipped = shipped();
    for entry in shipped.propose_entries() {
        assert_eq!(shipped.digest(&entry.name), reordered.digest(&entry.name));
    }
    assert_eq!(shipped.whole_digest(), reordered.whole_digest());
}

#[test]
fn editing_an_entry_changes_its_digest_only() {
    let before = shipped();
    let mut v = shipped_value();
    entry_mut(&mut v, "/propose/batch_reboot").insert("max_targets".into(), json!(2));
    let after = load(&v).unwrap();
    assert_ne!(before.digest("batch_reboot"), after.digest("batch_reboot"));
    assert_eq!(
        before.digest("batch_recording"),
        after.digest("batch_recording")
    );
    assert_ne!(before.whole_digest(), after.whole_digest());

    let mut v = shipped_value();
    entry_mut(&mut v, "/propose/batch_reboot/schema/properties/device_ids")
        .insert("maxItems".into(), json!(1));
    let after = load(&v).unwrap();
    assert_ne!(before.digest("batch_reboot"), after.digest("batch_reboot"));
}

#[test]
fn editing_a_read_tool_changes_the_whole_digest() {
    let before = shipped();
    let mut v = shipped_value();
    entry_mut(&mut v, "/read/get_device_info").insert("category".into(), json!("schedule"));
    let after = load(&v).unwrap();
    assert_ne!(before.whole_digest(), after.whole_digest());
    assert_eq!(before.digest("batch_reboot"), after.digest("batch_reboot"));
}

// ---- the schema subset ---------------------------------------------------------------------

#[test]
fn refuses_every_keyword_the_validator_does_not_implement() {
    // Each of these would be accepted by a general validator and ignored (or enforced) by it;
    // the executor's subset implements none of them, so loading must stop and name it.
    for (keyword, value) in [
        ("format", json!("date-time")),
        ("anyOf", json!([{"type": "string"}])),
        ("oneOf", json!([{"type": "string"}])),
        ("allOf", json!([{"type": "string"}])),
        ("not", json!({"type": "integer"})),
        ("$ref", json!("#/$defs/x")),
        ("multipleOf", json!(2)),
        ("exclusiveMinimum", json!(0)),
        ("uniqueItems", json!(true)),
        ("contains", json!({"type": "string"})),
        ("prefixItems", json!([{"type": "string"}])),
        ("minProperties", json!(1)),
        ("propertyNames", json!({"maxLength": 3})),
        ("dependentRequired", json!({"a": ["b"]})),
        ("if", json!({"type": "string"})),
        ("examples", json!(["x"])),
        ("contentEncoding", json!("base64")),
        ("unevaluatedProperties", json!(false)),
    ] {
        let mut v = shipped_value();
        entry_mut(
            &mut v,
            "/propose/confirm_cms_event_on_device/schema/properties/event_id",
        )
        .insert(keyword.into(), value);
        let text = refused(&v, "confirm_cms_event_on_device");
        assert!(text.contains(keyword), "{keyword}: {text}");
        assert!(text.contains("/properties/event_id"), "{keyword}: {text}");
    }
    // A keyword that cannot apply to the declared type would be ignored just the same.
    let mut v = shipped_value();
    entry_mut(
        &mut v,
        "/propose/confirm_cms_event_on_device/schema/properties/event_id",
    )
    .insert("maxItems".into(), json!(1));
    let text = refused(&v, "confirm_cms_event_on_device");
    assert!(text.contains("maxItems"), "{text}");
    // And a read schema is held to the same subset.
    let mut v = shipped_value();
    entry_mut(&mut v, "/read/get_device_info/schema/properties/device_id")
        .insert("format".into(), json!("hostname"));
    let text = refused(&v, "get_device_info");
    assert!(text.contains("format"), "{text}");
}

// ---- fleet tools ---------------------------------------------------------------------------

#[test]
fn shipped_fleet_tools_read_only_listed_reads() {
    let policy = shipped();
    let names: Vec<&str> = policy.fleet_tools().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["fleet_overview", "fleet_room", "fleet_search"]);
    for tool in policy.fleet_tools() {
        assert_eq!(tool.reads[0], "get_devices_in_my_team", "{}", tool.name);
        for read in &tool.reads {
            assert!(policy.read_tool(read).is_some(), "{read}");
        }
        assert!(!policy.is_write_tool(&tool.name));
    }
}

#[test]
fn refuses_a_fleet_tool_not_named_fleet_or_named_like_a_write() {
    for name in ["get_everything", "batch_reboot", "overview"] {
        let mut value = shipped_value();
        let entry = value["fleet"]["fleet_overview"].clone();
        entry_mut(&mut value, "/fleet").insert(name.to_owned(), entry);
        let text = refused(&value, name);
        assert!(text.contains("fleet_"), "{text}");
    }
}

#[test]
fn refuses_a_fleet_tool_that_reads_an_unlisted_tool_or_nothing() {
    let mut value = shipped_value();
    value["fleet"]["fleet_room"]["reads"] = json!(["get_device_info", "get_channel_image"]);
    let text = refused(&value, "fleet_room");
    assert!(text.contains("get_channel_image"), "{text}");
    let mut value = shipped_value();
    value["fleet"]["fleet_room"]["reads"] = json!([]);
    refused(&value, "fleet_room");
    let mut value = shipped_value();
    value["fleet"]["fleet_room"]["category"] = json!("fleet");
    refused(&value, "fleet_room");
}

#[test]
fn a_team_wide_mark_changes_the_whole_digest() {
    let before = shipped();
    let mut value = shipped_value();
    let flipped = !before.read_tool("get_stream_endpoints").unwrap().team_wide;
    value["read"]["get_stream_endpoints"]["team_wide"] = json!(flipped);
    let after = load(&value).unwrap();
    assert_eq!(
        after.read_tool("get_stream_endpoints").unwrap().team_wide,
        flipped
    );
    assert_ne!(before.whole_digest(), after.whole_digest());
}
