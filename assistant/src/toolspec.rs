//! Which tools the model is shown, and the same decision again when a tool is called.
//!
//! The list is built only from the curated policy and the operator's grants; nothing comes from
//! the server's own tool list. The model seeing a tool is a convenience, not permission: the
//! loop asks [`is_shown`] again at call time, because grants can be closed between turns and a
//! model can name a tool it was never shown.

use fleetwatch_protocol::policy::{FleetTool, Policy, ProposeEntry, ReadTool};
use serde_json::{Value, json};

use crate::grants::Grants;

/// The one tool through which the model can ask for a change.
pub const PROPOSE_TOOL: &str = "propose_change";

/// Longest reason (characters) the model may attach to a proposal.
pub const REASON_MAX_CHARS: usize = 300;

/// Read tools never shown to the model whatever the policy says: pictures of a room are not
/// fleet data, and an image can carry instructions no escaping can neutralise.
const NEVER_SHOWN: &[&str] = &["get_channel_image"];

/// Whether a read tool name has the shape of a read at all. The policy loader refuses other
/// names; checking here too keeps a write tool out of the model's reach even if that changes.
fn read_shaped(name: &str) -> bool {
    (name.starts_with("get_") || name.starts_with("kb_")) && !NEVER_SHOWN.contains(&name)
}

fn read_allowed(tool: &ReadTool, is_open: &dyn Fn(&str) -> bool) -> bool {
    read_shaped(&tool.name) && is_open(&tool.category)
}

/// A read the model may be shown: allowed, and bounded by its arguments. A team-wide read goes
/// into the question's snapshot only; the model asks the fleet tools about it.
fn read_shown(tool: &ReadTool, is_open: &dyn Fn(&str) -> bool) -> bool {
    read_allowed(tool, is_open) && !tool.team_wide
}

/// A fleet tool is open when the category of its first (required) read is.
fn fleet_allowed(policy: &Policy, tool: &FleetTool, is_open: &dyn Fn(&str) -> bool) -> bool {
    tool.reads
        .first()
        .and_then(|read| policy.read_tool(read))
        .is_some_and(|read| read_allowed(read, is_open))
}

/// True when `name` is a fleet tool the model may call now.
pub fn allowed_fleet(policy: &Policy, grants: &Grants, name: &str) -> bool {
    allowed_fleet_with(policy, &|c| grants.is_open(c), name)
}

/// [`allowed_fleet`] over any grant check.
pub fn allowed_fleet_with(policy: &Policy, is_open: &dyn Fn(&str) -> bool, name: &str) -> bool {
    policy
        .fleet_tool(name)
        .is_some_and(|tool| fleet_allowed(policy, tool, is_open))
}

fn propose_allowed(entry: &ProposeEntry, is_open: &dyn Fn(&str) -> bool) -> bool {
    // An entry without a schema is a `pending-live-run` marker: never proposable.
    entry.schema.is_some() && is_open(&entry.category)
}

/// True when `name` is a read tool the model may call now: on the policy's read list, shaped
/// like a read, not an image, and its category granted.
pub fn allowed_read(policy: &Policy, grants: &Grants, name: &str) -> bool {
    allowed_read_with(policy, &|c| grants.is_open(c), name)
}

/// [`allowed_read`] over any grant check.
pub fn allowed_read_with(policy: &Policy, is_open: &dyn Fn(&str) -> bool, name: &str) -> bool {
    policy
        .read_tool(name)
        .is_some_and(|tool| read_allowed(tool, is_open))
}

/// True when `tool` may be proposed now: a proposable entry with a schema whose category is
/// granted.
pub fn allowed_propose(policy: &Policy, grants: &Grants, tool: &str) -> bool {
    allowed_propose_with(policy, &|c| grants.is_open(c), tool)
}

/// [`allowed_propose`] over any grant check.
pub fn allowed_propose_with(policy: &Policy, is_open: &dyn Fn(&str) -> bool, tool: &str) -> bool {
    policy
        .propose_entry(tool)
        .is_some_and(|entry| propose_allowed(entry, is_open))
}

/// Whether `propose_change` is offered at all: proposing is switched on, a fence is configured
/// (without one the executor would refuse everything) and at least one proposable tool's
/// category is granted.
pub fn propose_shown(
    policy: &Policy,
    is_open: &dyn Fn(&str) -> bool,
    proposing: bool,
    fence_configured: bool,
) -> bool {
    proposing
        && fence_configured
        && policy
            .propose_entries()
            .any(|entry| propose_allowed(entry, is_open))
}

/// The call-time check: would a tool of this name be in [`tools`] right now?
pub fn is_shown(
    policy: &Policy,
    grants: &Grants,
    proposing: bool,
    fence_configured: bool,
    name: &str,
) -> bool {
    is_shown_with(
        policy,
        &|c| grants.is_open(c),
        proposing,
        fence_configured,
        name,
    )
}

/// [`is_shown`] over any grant check.
pub fn is_shown_with(
    policy: &Policy,
    is_open: &dyn Fn(&str) -> bool,
    proposing: bool,
    fence_configured: bool,
    name: &str,
) -> bool {
    if name == PROPOSE_TOOL {
        propose_shown(policy, is_open, proposing, fence_configured)
    } else if policy.fleet_tool(name).is_some() {
        allowed_fleet_with(policy, is_open, name)
    } else {
        policy
            .read_tool(name)
            .is_some_and(|tool| read_shown(tool, is_open))
    }
}

/// Whether `tools` (as [`tools`] built them) offer the model anything to read: a read or a fleet
/// tool, not only `propose_change`.
pub fn reads_shown(tools: &[Value]) -> bool {
    tools.iter().any(|t| {
        t.get("name")
            .and_then(Value::as_str)
            .is_some_and(|name| name != PROPOSE_TOOL)
    })
}

/// The tools shown to the model: Anthropic tool objects, sorted by name, with the prompt-cache
/// marker on the last one so the whole tool list is part of the cached prefix.
pub fn tools(
    policy: &Policy,
    grants: &Grants,
    proposing: bool,
    fence_configured: bool,
) -> Vec<Value> {
    tools_with(policy, &|c| grants.is_open(c), proposing, fence_configured)
}

/// [`tools`] over any grant check.
pub fn tools_with(
    policy: &Policy,
    is_open: &dyn Fn(&str) -> bool,
    proposing: bool,
    fence_configured: bool,
) -> Vec<Value> {
    let propose: Vec<&ProposeEntry> = if propose_shown(policy, is_open, proposing, fence_configured)
    {
        policy
            .propose_entries()
            .filter(|entry| propose_allowed(entry, is_open))
            .collect()
    } else {
        Vec::new()
    };
    let fleet: Vec<&FleetTool> = policy
        .fleet_tools()
        .filter(|t| fleet_allowed(policy, t, is_open))
        .collect();
    build_with_fleet(
        policy.read_tools().filter(|t| read_shown(t, is_open)),
        &fleet,
        &propose,
    )
}

/// Assembles tool objects from already-filtered entries. Sorting happens here, whatever order
/// the entries arrive in, so the bytes sent depend only on what is granted.
pub fn build<'a>(
    reads: impl Iterator<Item = &'a ReadTool>,
    propose: &[&ProposeEntry],
) -> Vec<Value> {
    build_with_fleet(reads, &[], propose)
}

/// [`build`] with fleet tools beside the reads.
pub fn build_with_fleet<'a>(
    reads: impl Iterator<Item = &'a ReadTool>,
    fleet: &[&FleetTool],
    propose: &[&ProposeEntry],
) -> Vec<Value> {
    let tool = |name: &str, description: &str, schema: &Value| {
        (
            name.to_owned(),
            json!({
                "name": name,
                "description": description,
                "input_schema": input_schema(schema),
            }),
        )
    };
    let mut out: Vec<(String, Value)> = reads
        .filter(|t| read_shaped(&t.name))
        .map(|t| tool(&t.name, &t.description, &t.schema))
        .chain(
            fleet
                .iter()
                .filter(|t| t.name.starts_with("fleet_"))
                .map(|t| tool(&t.name, &t.description, &t.schema)),
        )
        .collect();
    let proposable: Vec<&ProposeEntry> = propose
        .iter()
        .copied()
        .filter(|e| e.schema.is_some())
        .collect();
    if !proposable.is_empty() {
        out.push((PROPOSE_TOOL.to_owned(), propose_tool(&proposable)));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out.dedup_by(|a, b| a.0 == b.0);
    let mut tools: Vec<Value> = out.into_iter().map(|(_, v)| v).collect();
    if let Some(Value::Object(last)) = tools.last_mut() {
        last.insert(String::from("cache_control"), json!({"type": "ephemeral"}));
    }
    tools
}

/// The API wants an object schema; a read that takes no arguments may be written as `{}`.
fn input_schema(schema: &Value) -> Value {
    match schema {
        Value::Object(map) if map.contains_key("type") => schema.clone(),
        Value::Object(map) => {
            let mut map = map.clone();
            map.insert(String::from("type"), json!("object"));
            Value::Object(map)
        }
        _ => json!({"type": "object", "properties": {}, "additionalProperties": false}),
    }
}

fn propose_tool(entries: &[&ProposeEntry]) -> Value {
    let mut names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
    names.sort_unstable();
    let mut description = String::from(
        "Propose one change for a person to review. Nothing changes when you call this: the \
         proposal waits on the approval page until a person approves or denies it. Use device \
         and channel IDs exactly as they appear in the data. The arguments must match the \
         chosen tool's schema below exactly (no extra fields). If the result starts with \
         \"Not proposed:\", explain why to the operator and do not retry around it.\n\
         Tools that may be proposed:",
    );
    let mut sorted: Vec<&ProposeEntry> = entries.to_vec();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    for entry in sorted {
        let schema = entry
            .schema
            .as_ref()
            .map(|s| serde_json::to_string(s).unwrap_or_default())
            .unwrap_or_default();
        description.push_str(&format!(
            "\n- {}: {} Disruptive: {}. At most {} target(s). Arguments schema: {}",
            entry.name,
            entry.description.trim(),
            if entry.disruptive { "yes" } else { "no" },
            entry.max_targets,
            schema
        ));
    }
    json!({
        "name": PROPOSE_TOOL,
        "description": description,
        "input_schema": {
            "type": "object",
            "properties": {
                "tool": {
                    "type": "string",
                    "enum": names,
                    "description": "The change to propose.",
                },
                "arguments": {
                    "type": "object",
                    "description": "The arguments for that tool, matching its schema.",
                },
                "reason": {
                    "type": "string",
                    "maxLength": REASON_MAX_CHARS,
                    "description": "One or two sentences for the reviewer: why this change, \
                                    based on what the data showed.",
                },
            },
            "required": ["tool", "arguments", "reason"],
            "additionalProperties": false,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(name: &str, category: &str) -> ReadTool {
        ReadTool {
            name: name.to_owned(),
            category: category.to_owned(),
            description: format!("Reads {name}."),
            schema: json!({
                "type": "object",
                "properties": {"device_ids": {"type": "array", "items": {"type": "string"}}},
                "additionalProperties": false
            }),
            team_wide: false,
        }
    }

    fn propose(name: &str, category: &str, schema: bool) -> ProposeEntry {
        ProposeEntry {
            name: name.to_owned(),
            category: category.to_owned(),
            description: format!("Does {name}."),
            max_targets: 1,
            disruptive: true,
            disruptive_when: None,
            stops_recording: None,
            lead_minutes: None,
            target: String::from("device_ids"),
            schema_version: 1,
            schema: schema.then(|| {
                json!({
                    "type": "object",
                    "properties": {"device_ids": {"type": "array"}},
                    "required": ["device_ids"],
                    "additionalProperties": false
                })
            }),
        }
    }

    fn names(tools: &[Value]) -> Vec<&str> {
        tools.iter().map(|t| t["name"].as_str().unwrap()).collect()
    }

    #[test]
    fn sorted_with_cache_marker_on_the_last_only() {
        let reads = [
            read("get_stream_endpoints", "streams"),
            read("get_devices_in_my_team", "fleet"),
            read("kb_search", "kb"),
        ];
        let p = propose("batch_reboot", "maintenance", true);
        let tools = build(reads.iter(), &[&p]);
        assert_eq!(
            names(&tools),
            [
                "get_devices_in_my_team",
                "get_stream_endpoints",
                "kb_search",
                "propose_change"
            ]
        );
        let marked: Vec<usize> = tools
            .iter()
            .enumerate()
            .filter(|(_, t)| t.get("cache_control").is_some())
            .map(|(i, _)| i)
            .collect();
        assert_eq!(marked, [tools.len() - 1]);
        assert_eq!(tools[3]["cache_control"], json!({"type": "ephemeral"}));
        // Order of input does not change the bytes.
        let reversed: Vec<ReadTool> = reads.iter().rev().cloned().collect();
        let again = build(reversed.iter(), &[&p]);
        assert_eq!(
            serde_json::to_string(&tools).unwrap(),
            serde_json::to_string(&again).unwrap()
        );
    }

    #[test]
    fn image_and_non_read_names_are_never_shown() {
        let reads = [
            read("get_channel_image", "fleet"),
            read("batch_reboot", "fleet"),
            read("get_device_info", "fleet"),
        ];
        let tools = build(reads.iter(), &[]);
        assert_eq!(names(&tools), ["get_device_info"]);
        assert!(read_allowed(&reads[2], &|_| true));
        assert!(!read_allowed(&reads[0], &|_| true));
        assert!(!read_allowed(&reads[1], &|_| true));
    }

    #[test]
    fn category_gate() {
        let t = read("get_device_info", "fleet");
        assert!(read_allowed(&t, &|c| c == "fleet"));
        assert!(!read_allowed(&t, &|c| c == "schedule"));
        assert!(!read_allowed(&t, &|_| false));
        let p = propose("batch_reboot", "maintenance", true);
        assert!(propose_allowed(&p, &|c| c == "maintenance"));
        assert!(!propose_allowed(&p, &|c| c == "fleet"));
        let marker = propose("switch_device_to_cms", "maintenance", false);
        assert!(!propose_allowed(&marker, &|_| true));
    }

    #[test]
    fn propose_change_shape() {
        let a = propose("batch_reboot", "maintenance", true);
        let b = propose("batch_recording", "recording", true);
        let marker = propose("switch_device_to_cms", "maintenance", false);
        let tools = build(std::iter::empty(), &[&b, &marker, &a]);
        assert_eq!(names(&tools), ["propose_change"]);
        let schema = &tools[0]["input_schema"];
        assert_eq!(
            schema["properties"]["tool"]["enum"],
            json!(["batch_reboot", "batch_recording"])
        );
        assert_eq!(schema["properties"]["reason"]["maxLength"], json!(300));
        assert_eq!(schema["properties"]["arguments"]["type"], json!("object"));
        assert_eq!(schema["required"], json!(["tool", "arguments", "reason"]));
        assert_eq!(schema["additionalProperties"], json!(false));
        let description = tools[0]["description"].as_str().unwrap();
        assert!(description.contains("- batch_reboot: Does batch_reboot."));
        assert!(!description.contains("switch_device_to_cms"));
    }

    #[test]
    fn no_propose_change_without_a_schema_bearing_entry() {
        let marker = propose("switch_device_to_cms", "maintenance", false);
        let tools = build(std::iter::empty(), &[&marker]);
        assert!(tools.is_empty());
    }

    fn root_policy() -> Policy {
        Policy::from_yaml(include_str!("../../tool_policy.yaml")).unwrap()
    }

    #[test]
    fn nothing_granted_shows_nothing() {
        let policy = root_policy();
        let grants = Grants::default();
        assert!(tools(&policy, &grants, true, true).is_empty());
        for t in policy.read_tools() {
            assert!(!allowed_read(&policy, &grants, &t.name));
            assert!(!is_shown(&policy, &grants, true, true, &t.name));
        }
        assert!(!is_shown(&policy, &grants, true, true, PROPOSE_TOOL));
    }

    #[test]
    fn real_registry_each_category_alone() {
        let policy = root_policy();
        let categories: std::collections::BTreeSet<String> = policy
            .read_tools()
            .map(|t| t.category.clone())
            .chain(policy.propose_entries().map(|e| e.category.clone()))
            .collect();
        for category in &categories {
            let open = |c: &str| c == category;
            let shown = tools_with(&policy, &open, true, true);
            for t in &shown {
                let name = t["name"].as_str().unwrap();
                assert_ne!(name, "get_channel_image");
                if name == PROPOSE_TOOL {
                    for tool in t["input_schema"]["properties"]["tool"]["enum"]
                        .as_array()
                        .unwrap()
                    {
                        let entry = policy.propose_entry(tool.as_str().unwrap()).unwrap();
                        assert_eq!(&entry.category, category);
                    }
                } else if let Some(fleet) = policy.fleet_tool(name) {
                    // A fleet tool follows the category of the read it requires.
                    let first = policy.read_tool(&fleet.reads[0]).unwrap();
                    assert_eq!(&first.category, category);
                    assert_eq!(t["input_schema"], fleet.schema);
                } else {
                    let read = policy.read_tool(name).unwrap();
                    assert_eq!(&read.category, category);
                    assert_eq!(t["input_schema"], read.schema);
                    assert!(!read.team_wide, "{name} answers for the whole team");
                }
                assert!(is_shown_with(&policy, &open, true, true, name));
            }
            let expected_reads = policy
                .read_tools()
                .filter(|t| &t.category == category && t.name != "get_channel_image")
                .filter(|t| !t.team_wide)
                .count();
            let expected_fleet = policy
                .fleet_tools()
                .filter(|f| policy.read_tool(&f.reads[0]).unwrap().category == *category)
                .count();
            let propose_expected = policy
                .propose_entries()
                .any(|e| &e.category == category && e.schema.is_some());
            assert_eq!(
                shown.len(),
                expected_reads + expected_fleet + usize::from(propose_expected)
            );
        }
    }

    #[test]
    fn propose_change_needs_proposing_fence_and_a_granted_proposable_tool() {
        let policy = root_policy();
        let all = |_: &str| true;
        let reads_only = |c: &str| matches!(c, "fleet" | "schedule" | "streams");
        let has = |v: &[Value]| v.iter().any(|t| t["name"] == PROPOSE_TOOL);
        assert!(has(&tools_with(&policy, &all, true, true)));
        assert!(!has(&tools_with(&policy, &all, false, true)));
        assert!(!has(&tools_with(&policy, &all, true, false)));
        assert!(!has(&tools_with(&policy, &reads_only, true, true)));
        assert!(!is_shown_with(&policy, &all, false, true, PROPOSE_TOOL));
        assert!(!is_shown_with(&policy, &all, true, false, PROPOSE_TOOL));
        assert!(!is_shown_with(
            &policy,
            &reads_only,
            true,
            true,
            PROPOSE_TOOL
        ));
        assert!(is_shown_with(&policy, &all, true, true, PROPOSE_TOOL));
        // Write tools are never reads, whatever is granted.
        for entry in policy.propose_entries() {
            assert!(!allowed_read_with(&policy, &all, &entry.name));
            assert!(!is_shown_with(&policy, &all, true, true, &entry.name));
        }
        assert!(!allowed_read_with(&policy, &all, "get_channel_image"));
    }

    #[test]
    fn empty_schemas_become_object_schemas() {
        assert_eq!(input_schema(&json!({}))["type"], json!("object"));
        assert_eq!(input_schema(&json!(null))["type"], json!("object"));
        let s = json!({"type": "object", "properties": {}});
        assert_eq!(input_schema(&s), s);
    }
}
