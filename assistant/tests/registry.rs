//! Registry-wide checks over the whole root `tool_policy.yaml`: every entry the assistant can
//! see stays clear of excluded authority, reads are reads, proposals are writes, and every
//! entry states its category (and, for proposals, disruptive) explicitly. A meta-test adds
//! out-of-bounds entries to a copy and asserts the check reports them, so these tests cannot
//! pass by checking nothing.

use fleetwatch_protocol::policy::{EPIPHAN_WRITE_TOOLS, Policy};
use yaml_serde::{Mapping, Value};

const REGISTRY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tool_policy.yaml");

fn registry_text() -> String {
    std::fs::read_to_string(REGISTRY).expect("root tool_policy.yaml")
}

fn registry() -> Policy {
    Policy::from_yaml(&registry_text()).expect("root registry loads")
}

/// Words of a name or description: lower-case, split on anything not a letter or digit
/// (so `factory_reset_device` is `factory reset device`).
fn words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The kind of excluded authority a tool name or description reaches, if any: account or
/// team administration, users, credentials, stream keys, sign-in, factory reset, the fence,
/// policy or grants editing, deletion, and the stream-endpoint writes that carry stream keys.
///
/// Matching is on whole words and word pairs, so look-alikes ("keyboard", "monkey", "tokenize",
/// "the team's devices") do not trip it.
fn excluded_authority(name: &str, description: &str) -> Option<&'static str> {
    let name_words = words(name);
    let all: Vec<String> = name_words
        .iter()
        .cloned()
        .chain(words(description))
        .collect();
    let has = |w: &str| all.iter().any(|x| x == w);
    let pair = |a: &str, b: &str| all.windows(2).any(|p| p[0] == a && p[1] == b);
    let name_has = |w: &str| name_words.iter().any(|x| x == w);

    if matches!(name, "create_stream_endpoint" | "update_stream_endpoint") {
        return Some("stream keys (its arguments carry the key)");
    }
    if name.starts_with("delete_") || name_has("delete") || name_has("remove") || name_has("purge")
    {
        return Some("deletion");
    }
    if name_has("key") || name_has("keys") {
        return Some("keys");
    }
    const SINGLE: &[(&str, &str)] = &[
        ("account", "account administration"),
        ("accounts", "account administration"),
        ("billing", "account administration"),
        ("subscription", "account administration"),
        ("license", "account administration"),
        ("user", "users"),
        ("users", "users"),
        ("username", "users"),
        ("usernames", "users"),
        ("member", "team members"),
        ("members", "team members"),
        ("membership", "team members"),
        ("invite", "team administration"),
        ("invites", "team administration"),
        ("invitation", "team administration"),
        ("invitations", "team administration"),
        ("admin", "administration"),
        ("admins", "administration"),
        ("administrator", "administration"),
        ("administration", "administration"),
        ("role", "team administration"),
        ("roles", "team administration"),
        ("permission", "team administration"),
        ("permissions", "team administration"),
        ("credential", "credentials"),
        ("credentials", "credentials"),
        ("password", "credentials"),
        ("passwords", "credentials"),
        ("passphrase", "credentials"),
        ("passwd", "credentials"),
        ("secret", "credentials"),
        ("secrets", "credentials"),
        ("token", "credentials"),
        ("tokens", "credentials"),
        ("apikey", "credentials"),
        ("apikeys", "credentials"),
        ("streamkey", "stream keys"),
        ("streamkeys", "stream keys"),
        ("signin", "sign-in"),
        ("signon", "sign-in"),
        ("login", "sign-in"),
        ("logon", "sign-in"),
        ("logout", "sign-in"),
        ("signout", "sign-in"),
        ("oauth", "sign-in"),
        ("sso", "sign-in"),
        ("saml", "sign-in"),
        ("session", "sign-in"),
        ("sessions", "sign-in"),
        ("wipe", "factory reset"),
        ("fence", "the fence"),
        ("allowlist", "the fence"),
        ("whitelist", "the fence"),
        ("denylist", "the fence"),
        ("blocklist", "the fence"),
        ("sandbox", "the fence"),
        ("policy", "policy editing"),
        ("policies", "policy editing"),
        ("grant", "grants editing"),
        ("grants", "grants editing"),
    ];
    if let Some((_, reason)) = SINGLE.iter().find(|(w, _)| has(w)) {
        return Some(reason);
    }
    const PAIRS: &[(&str, &str, &str)] = &[
        ("api", "key", "credentials"),
        ("api", "keys", "credentials"),
        ("stream", "key", "stream keys"),
        ("stream", "keys", "stream keys"),
        ("streaming", "key", "stream keys"),
        ("streaming", "keys", "stream keys"),
        ("sign", "in", "sign-in"),
        ("sign", "out", "sign-in"),
        ("log", "in", "sign-in"),
        ("log", "out", "sign-in"),
        ("factory", "reset", "factory reset"),
        ("factory", "default", "factory reset"),
        ("factory", "defaults", "factory reset"),
        ("to", "factory", "factory reset"),
        ("allow", "list", "the fence"),
    ];
    if let Some((_, _, reason)) = PAIRS.iter().find(|(a, b, _)| pair(a, b)) {
        return Some(reason);
    }
    const TEAM_ADMIN: &[&str] = &[
        "create",
        "update",
        "rename",
        "transfer",
        "settings",
        "owner",
        "owners",
        "leave",
        "join",
        "configure",
    ];
    if has("team") && TEAM_ADMIN.iter().any(|w| has(w)) {
        return Some("team administration");
    }
    None
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Section {
    Read,
    Propose,
}

/// One entry the assistant can see, as written or as loaded.
#[derive(Debug)]
struct Entry {
    section: Section,
    name: String,
    description: String,
    category: Option<String>,
    disruptive: Option<bool>,
}

/// Entries straight from the YAML text, before (and independently of) the loader.
fn entries_from_yaml(text: &str) -> Vec<Entry> {
    let tree: Value = yaml_serde::from_str(text).expect("registry is YAML");
    let mut out = Vec::new();
    for (key, section) in [("read", Section::Read), ("propose", Section::Propose)] {
        let Some(map) = tree.get(key).and_then(Value::as_mapping) else {
            panic!("the registry's {key} section is not a map of tool names");
        };
        for (name, body) in map {
            let text = |field: &str| body.get(field).and_then(Value::as_str).map(str::to_owned);
            out.push(Entry {
                section,
                name: name.as_str().expect("tool names are strings").to_owned(),
                description: text("description").unwrap_or_default(),
                category: text("category"),
                disruptive: body.get("disruptive").and_then(Value::as_bool),
            });
        }
    }
    out
}

/// Entries as the loader understood them (`pending-live-run` ones included).
fn entries_from_policy(policy: &Policy) -> Vec<Entry> {
    let reads = policy.read_tools().map(|t| Entry {
        section: Section::Read,
        name: t.name.clone(),
        description: t.description.clone(),
        category: Some(t.category.clone()),
        disruptive: None,
    });
    let proposals = policy.listed_propose_entries().map(|e| Entry {
        section: Section::Propose,
        name: e.name.clone(),
        description: e.description.clone(),
        category: Some(e.category.clone()),
        disruptive: Some(e.disruptive),
    });
    reads.chain(proposals).collect()
}

/// Every way the entries overstep, one line each naming the entry. Empty means in bounds.
fn registry_violations(entries: &[Entry], policy: Option<&Policy>) -> Vec<String> {
    let mut out = Vec::new();
    let read_names: Vec<&str> = entries
        .iter()
        .filter(|e| e.section == Section::Read)
        .map(|e| e.name.as_str())
        .collect();
    for e in entries {
        let name = &e.name;
        if let Some(reason) = excluded_authority(name, &e.description) {
            out.push(format!("{name}: reaches excluded authority ({reason})"));
        }
        if e.category.as_deref().is_none_or(|c| c.trim().is_empty()) {
            out.push(format!("{name}: no explicit category"));
        }
        let is_write = EPIPHAN_WRITE_TOOLS.contains(&name.as_str())
            || policy.is_some_and(|p| p.is_write_tool(name));
        match e.section {
            Section::Read => {
                if !(name.starts_with("get_") || name.starts_with("kb_")) {
                    out.push(format!("{name}: a read tool must start with get_ or kb_"));
                }
                if is_write {
                    out.push(format!("{name}: a write tool listed as a read"));
                }
                if name == "get_channel_image" {
                    out.push(format!("{name}: pictures never go to the model"));
                }
            }
            Section::Propose => {
                if e.disruptive.is_none() {
                    out.push(format!("{name}: no explicit disruptive flag"));
                }
                if read_names.contains(&name.as_str())
                    || name.starts_with("get_")
                    || name.starts_with("kb_")
                {
                    out.push(format!("{name}: a read tool can never be proposed"));
                }
            }
        }
    }
    out
}

/// The root registry as a YAML tree, for making modified copies.
fn tree() -> Value {
    yaml_serde::from_str(&registry_text()).expect("YAML")
}

fn section_mut<'a>(tree: &'a mut Value, key: &str) -> &'a mut Mapping {
    tree.get_mut(key)
        .and_then(Value::as_mapping_mut)
        .expect("section map")
}

fn to_text(tree: &Value) -> String {
    yaml_serde::to_string(tree).expect("serialise")
}

#[test]
fn the_root_registry_is_in_bounds() {
    let text = registry_text();
    let policy = registry();
    let from_yaml = entries_from_yaml(&text);
    let from_policy = entries_from_policy(&policy);
    // Not vacuous: the check saw every entry, both ways.
    assert!(
        from_yaml.len() >= 15,
        "only {} entries seen",
        from_yaml.len()
    );
    assert_eq!(from_yaml.len(), from_policy.len());
    assert_eq!(
        registry_violations(&from_yaml, Some(&policy)),
        Vec::<String>::new()
    );
    assert_eq!(
        registry_violations(&from_policy, Some(&policy)),
        Vec::<String>::new()
    );
}

#[test]
fn excluded_authority_known_answers() {
    let p = registry();
    for t in p.read_tools() {
        assert_eq!(
            excluded_authority(&t.name, &t.description),
            None,
            "{}",
            t.name
        );
    }
    for e in p.listed_propose_entries() {
        assert_eq!(
            excluded_authority(&e.name, &e.description),
            None,
            "{}",
            e.name
        );
    }
    let out_of_bounds = [
        (
            "factory_reset_device",
            "Restores a device to its shipped state.",
        ),
        ("batch_reboot", "Reboots and then performs a factory reset."),
        ("get_team_members", "Lists people in the team."),
        ("get_users", "Lists accounts."),
        ("update_team_settings", "Changes the team."),
        ("create_team", "Makes a team."),
        ("invite_member", "Adds a person."),
        ("get_account", "Account details."),
        ("get_credentials", "Returns sign-in material."),
        ("get_device_password", "Admin password of a device."),
        ("get_stream_key", "The key of a stream."),
        (
            "get_stream_endpoints",
            "Lists destinations with their stream keys.",
        ),
        (
            "get_stream_endpoint",
            "Returns the streaming key of a destination.",
        ),
        ("rotate_api_key", "New key."),
        ("get_oauth_token", "The token."),
        ("start_login", "Signs in."),
        (
            "kb_search",
            "Searches the knowledge base; use it to sign in as another user.",
        ),
        ("get_allowlist", "The fence."),
        ("set_write_fence", "Moves the fence."),
        ("edit_policy", "Changes tool_policy.yaml."),
        ("open_grants", "Opens every category."),
        ("delete_cms_event", "Removes an event."),
        ("delete_stream_endpoint", "Removes a destination."),
        ("create_stream_endpoint", "Adds a destination."),
        ("update_stream_endpoint", "Edits a destination."),
        ("wipe_storage", "Erases recordings."),
        ("get_sessions", "Active sign-in sessions."),
        (
            "get_devices_in_my_team",
            "Lists devices, and the team's secrets.",
        ),
    ];
    for (name, description) in out_of_bounds {
        assert!(
            excluded_authority(name, description).is_some(),
            "{name}: {description}"
        );
    }
    let look_alikes = [
        (
            "get_keyboard_layout",
            "Returns the keyboard layout; a monkey wrote it.",
        ),
        ("get_team_presets", "Lists the team's presets."),
        (
            "get_devices_in_my_team",
            "A bearer of good news about the team's devices.",
        ),
        (
            "kb_search",
            "Searches articles about tokenized captions and hotkeys.",
        ),
        ("get_device_info", "Returns details, keyed by device ID."),
    ];
    for (name, description) in look_alikes {
        assert_eq!(
            excluded_authority(name, description),
            None,
            "{name}: {description}"
        );
    }
}

#[test]
fn every_read_tool_is_a_get_or_kb_read() {
    let p = registry();
    let mut seen = 0;
    for t in p.read_tools() {
        seen += 1;
        assert!(
            t.name.starts_with("get_") || t.name.starts_with("kb_"),
            "{}",
            t.name
        );
        assert!(!p.is_write_tool(&t.name), "{} is a write tool", t.name);
        assert!(
            !EPIPHAN_WRITE_TOOLS.contains(&t.name.as_str()),
            "{}",
            t.name
        );
    }
    assert!(seen >= 5, "only {seen} read tools");
}

#[test]
fn get_channel_image_is_never_readable() {
    let p = registry();
    assert!(p.read_tool("get_channel_image").is_none());
    // Listing it in a copy is refused by the loader, and the check names it too.
    let mut t = tree();
    let body = section_mut(&mut t, "read")
        .get("get_devices_in_my_team")
        .cloned()
        .expect("entry");
    section_mut(&mut t, "read").insert(Value::from("get_channel_image"), body);
    let text = to_text(&t);
    let err = Policy::from_yaml(&text).expect_err("the loader refuses get_channel_image");
    assert!(err.to_string().contains("get_channel_image"), "{err}");
    let violations = registry_violations(&entries_from_yaml(&text), None);
    assert!(
        violations
            .iter()
            .any(|v| v.starts_with("get_channel_image:")),
        "{violations:?}"
    );
}

#[test]
fn no_proposable_tool_is_on_the_read_list() {
    let p = registry();
    let mut seen = 0;
    for e in p.listed_propose_entries() {
        seen += 1;
        assert!(p.read_tool(&e.name).is_none(), "{} is readable", e.name);
        assert!(
            p.is_write_tool(&e.name),
            "{} is proposable but not a write tool",
            e.name
        );
    }
    assert!(seen >= 6, "only {seen} propose entries");
    // A copy that lists a proposable tool under read is refused.
    let mut t = tree();
    let body = section_mut(&mut t, "read")
        .get("get_device_info")
        .cloned()
        .expect("entry");
    section_mut(&mut t, "read").insert(Value::from("batch_reboot"), body);
    assert!(Policy::from_yaml(&to_text(&t)).is_err());
}

#[test]
fn every_entry_states_category_and_disruptive_explicitly() {
    let base = tree();
    let reads: Vec<String> = section_names(&base, "read");
    let proposals: Vec<String> = section_names(&base, "propose");
    assert!(!reads.is_empty() && !proposals.is_empty());
    // The unmodified copy loads, so a refusal below is the removed field's doing.
    Policy::from_yaml(&to_text(&base)).expect("round-tripped copy loads");

    let mut cases: Vec<(&str, &String, &str)> = Vec::new();
    cases.extend(reads.iter().map(|n| ("read", n, "category")));
    cases.extend(proposals.iter().map(|n| ("propose", n, "category")));
    cases.extend(proposals.iter().map(|n| ("propose", n, "disruptive")));
    for (section, name, field) in cases {
        let mut t = base.clone();
        let entry = section_mut(&mut t, section)
            .get_mut(name.as_str())
            .and_then(Value::as_mapping_mut)
            .expect("entry map");
        assert!(
            entry.remove(field).is_some(),
            "{name} has no {field} to remove"
        );
        let text = to_text(&t);
        let err = Policy::from_yaml(&text).expect_err("a missing field must be refused");
        assert_eq!(&err.entry, name, "{section}.{name} without {field}: {err}");
        // The registry check reports it as well, independently of the loader.
        let violations = registry_violations(&entries_from_yaml(&text), None);
        assert!(
            violations
                .iter()
                .any(|v| v.starts_with(&format!("{name}: no explicit {field}"))),
            "{name} without {field}: {violations:?}"
        );
    }
    // A blank category is no better than none.
    let mut t = base.clone();
    let name = reads.first().expect("a read tool");
    section_mut(&mut t, "read")
        .get_mut(name.as_str())
        .and_then(Value::as_mapping_mut)
        .expect("entry")
        .insert(Value::from("category"), Value::from("  "));
    assert!(Policy::from_yaml(&to_text(&t)).is_err());
}

fn section_names(tree: &Value, key: &str) -> Vec<String> {
    tree.get(key)
        .and_then(Value::as_mapping)
        .expect("section")
        .keys()
        .map(|k| k.as_str().expect("name").to_owned())
        .collect()
}

/// Adds an out-of-bounds entry to a copy of the registry, written to disk like a real edit.
fn copy_with(dir: &std::path::Path, read: &[(&str, &str)], propose: &[(&str, &str)]) -> String {
    let mut t = tree();
    let read_template = section_mut(&mut t, "read")
        .get("get_devices_in_my_team")
        .cloned()
        .expect("entry");
    let propose_template = section_mut(&mut t, "propose")
        .get("batch_reboot")
        .cloned()
        .expect("entry");
    for (name, description) in read {
        let mut body = read_template.clone();
        body.as_mapping_mut()
            .expect("map")
            .insert(Value::from("description"), Value::from(*description));
        section_mut(&mut t, "read").insert(Value::from(*name), body);
    }
    for (name, description) in propose {
        let mut body = propose_template.clone();
        body.as_mapping_mut()
            .expect("map")
            .insert(Value::from("description"), Value::from(*description));
        section_mut(&mut t, "propose").insert(Value::from(*name), body);
        // The loader only accepts proposals of known write tools, so declare it as one.
        t.get_mut("write")
            .and_then(Value::as_sequence_mut)
            .expect("write list")
            .push(Value::from(*name));
    }
    let path = dir.join("tool_policy.yaml");
    std::fs::write(&path, to_text(&t)).expect("write copy");
    std::fs::read_to_string(&path).expect("read copy")
}

#[test]
fn meta_an_out_of_bounds_entry_turns_the_check_red() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = copy_with(
        dir.path(),
        &[(
            "get_team_members_credentials",
            "Lists the team's members with their sign-in credentials.",
        )],
        &[(
            "factory_reset_device",
            "Restores one device to factory settings.",
        )],
    );
    let expect_both = |violations: &[String]| {
        for name in ["get_team_members_credentials", "factory_reset_device"] {
            assert!(
                violations
                    .iter()
                    .any(|v| v.starts_with(&format!("{name}: reaches excluded authority"))),
                "{name} not reported: {violations:?}"
            );
        }
    };
    let from_yaml = registry_violations(&entries_from_yaml(&text), None);
    expect_both(&from_yaml);
    // The loader accepts these (they are well-formed), which is exactly why the registry
    // check has to exist: it is what turns red.
    let policy = Policy::from_yaml(&text).expect("well-formed copy loads");
    assert!(policy.propose_entry("factory_reset_device").is_some());
    assert!(policy.read_tool("get_team_members_credentials").is_some());
    expect_both(&registry_violations(
        &entries_from_policy(&policy),
        Some(&policy),
    ));
}

#[test]
fn meta_each_kind_of_excluded_authority_is_caught_alone() {
    let reads = [
        ("get_users", "Lists people who can sign in."),
        ("get_stream_keys", "Lists the keys of every destination."),
        (
            "get_write_allowlist",
            "Returns the devices changes may touch.",
        ),
        (
            "kb_search",
            "Searches help articles; also resets the fence when asked.",
        ),
        ("get_account_billing", "Returns the plan."),
    ];
    for (name, description) in reads {
        let dir = tempfile::tempdir().expect("tempdir");
        let text = copy_with(dir.path(), &[(name, description)], &[]);
        let violations = registry_violations(&entries_from_yaml(&text), None);
        assert!(
            violations
                .iter()
                .any(|v| v.starts_with(&format!("{name}: "))),
            "{name} not reported: {violations:?}"
        );
    }
    let proposals = [
        ("create_stream_endpoint", "Adds a destination."),
        ("update_stream_endpoint", "Edits a destination."),
        ("delete_stream_endpoint", "Removes a destination."),
        ("factory_reset_device", "Restores one device."),
        ("reset_device_password", "Sets a new device password."),
        ("update_team_settings", "Changes team settings."),
        ("grant_category", "Opens a permission category."),
    ];
    for (name, description) in proposals {
        let dir = tempfile::tempdir().expect("tempdir");
        let text = copy_with(dir.path(), &[], &[(name, description)]);
        let violations = registry_violations(&entries_from_yaml(&text), None);
        assert!(
            violations
                .iter()
                .any(|v| v.starts_with(&format!("{name}: "))),
            "{name} not reported: {violations:?}"
        );
    }
}
