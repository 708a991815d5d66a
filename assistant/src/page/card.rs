//! The card: what a person reads before approving one change. Built only by code, from the
//! stored proposal and a fresh `Describe`; nothing the model wrote becomes a label, colour or
//! focus, and the model's reason is shown apart, escaped and capped.
//!
//! When anything cannot be shown faithfully or checked — an argument that is too long, hidden
//! characters, deep nesting, an ID that is no longer found, state that moved, a read that
//! failed — the card offers Deny only, and says why.

use fleetwatch_protocol::canonical;
use fleetwatch_protocol::fleet::RoomBlock;
use fleetwatch_protocol::passkey::Approvers;
use fleetwatch_protocol::policy::{ChannelRef, Policy, Validated};
use fleetwatch_protocol::wire::{
    Description, DeviceFacts, FreezeReport, LimitsReport, PublisherState,
};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use super::i18n::{Lang, ToolText, tool_text};
use super::sessions::hex;
use crate::executor_client::ExecutorError;
use crate::store::Proposal;

/// A string argument longer than this cannot be shown in full.
pub const MAX_ARG_CHARS: usize = 256;
/// Containers nested deeper than this (the arguments object is level 1).
pub const MAX_DEPTH: usize = 2;
/// Lists or objects with more items than this.
pub const MAX_ITEMS: usize = 20;
/// Canonical arguments longer than this many bytes.
pub const MAX_CANONICAL_BYTES: usize = 4000;
/// The model's reason is cut to this many characters (after escaping).
pub const MAX_REASON_CHARS: usize = 500;
/// Device names, channel names, titles are cut to this many characters (after escaping).
pub const MAX_NAME_CHARS: usize = 80;

/// Text from outside (device names, the model's reason) made safe to read, the protocol's one
/// way ([`fleetwatch_protocol::shown::readable`]): hidden characters spelled out (`␊` for a
/// control, `⟨U+202E⟩` otherwise), at most `cap` characters with an ellipsis. HTML escaping is
/// the template engine's job, done on top of this.
pub fn show_text(text: &str, cap: usize) -> String {
    fleetwatch_protocol::shown::readable(text, cap)
}

/// Exactly the values the approval will sign. Taken once from the stored proposal (already
/// canonical) and reused for the digest the form carries and for the claims.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    /// Proposal number.
    pub proposal_id: u64,
    /// Write tool.
    pub tool: String,
    /// Canonical arguments.
    pub arguments: String,
    /// Sorted device IDs.
    pub targets: Vec<String>,
    /// Canonical fingerprint (equal to the fresh one, or the card is Deny only).
    pub fingerprint: String,
    /// Schema version.
    pub schema_version: u32,
    /// Policy digest of the tool's entry.
    pub policy_digest: [u8; 32],
    /// The names the fresh describe read, as the claims sign them (empty when it failed: the
    /// card is then deny-only).
    pub names: Vec<fleetwatch_protocol::claims::SignedName>,
    /// Who asked for the change (the chat peer's user name the proposal kept; empty when
    /// nobody is known, or a name the claims cannot carry).
    pub asked_by: String,
}

impl Binding {
    /// SHA-256 over every bound value, length-prefixed; carried in the approve form so a card
    /// that changed between showing and approving is noticed.
    pub fn digest(&self) -> String {
        let mut h = Sha256::new();
        let mut field = |bytes: &[u8]| {
            h.update((bytes.len() as u64).to_be_bytes());
            h.update(bytes);
        };
        field(&self.proposal_id.to_be_bytes());
        field(self.tool.as_bytes());
        field(self.arguments.as_bytes());
        for t in &self.targets {
            field(t.as_bytes());
        }
        field(self.fingerprint.as_bytes());
        field(&self.schema_version.to_be_bytes());
        field(&self.policy_digest);
        for n in &self.names {
            field(&[n.kind as u8]);
            field(n.id.as_bytes());
            field(n.name.as_bytes());
        }
        field(self.asked_by.as_bytes());
        hex(&h.finalize())
    }
}

/// One row of the targets table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetRow {
    /// Device ID.
    pub id: String,
    /// Current name (escaped, capped).
    pub name: String,
    /// Model (escaped, capped).
    pub model: String,
    /// "yes"/"no"/"unknown" in the page's language.
    pub online: String,
    /// "yes"/"no"/"unknown".
    pub recording: String,
}

/// One argument, in full.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgRow {
    /// Key.
    pub key: String,
    /// Value (a string as is, anything else as compact JSON).
    pub value: String,
}

/// Everything a card shows.
pub struct Card {
    /// What will be signed.
    pub binding: Binding,
    /// Plain words, or `None` (then Deny only).
    pub tool_text: Option<ToolText>,
    /// Targets table.
    pub targets: Vec<TargetRow>,
    /// Every argument, sorted by key.
    pub arguments: Vec<ArgRow>,
    /// Names for the IDs the arguments hold.
    pub names: Vec<String>,
    /// Effect preview lines.
    pub effects: Vec<String>,
    /// Disruptive-window verdicts (information).
    pub window: Vec<String>,
    /// The targets' warnings now, in words.
    pub warnings: Vec<String>,
    /// Whether approving needs the second confirm.
    pub disruptive: bool,
    /// Target names for the confirm page.
    pub rooms: Vec<String>,
    /// The model's reason, escaped and capped.
    pub reason: String,
    /// Why only Deny is offered (empty: Approve is offered too).
    pub deny_only: Vec<String>,
}

impl Card {
    /// Whether Approve may be offered.
    pub fn approvable(&self) -> bool {
        self.deny_only.is_empty()
    }
}

/// Why an argument cannot be shown in full (a catalogue key).
fn value_problem(value: &Value, parent_depth: usize) -> Option<&'static str> {
    match value {
        Value::String(s) => string_problem(s),
        Value::Array(items) => {
            if parent_depth + 1 > MAX_DEPTH {
                return Some("deny.arg_deep");
            }
            if items.len() > MAX_ITEMS {
                return Some("deny.arg_many");
            }
            items
                .iter()
                .find_map(|item| value_problem(item, parent_depth + 1))
        }
        Value::Object(map) => {
            if parent_depth + 1 > MAX_DEPTH {
                return Some("deny.arg_deep");
            }
            if map.len() > MAX_ITEMS {
                return Some("deny.arg_many");
            }
            map.iter()
                .find_map(|(k, v)| string_problem(k).or_else(|| value_problem(v, parent_depth + 1)))
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => None,
    }
}

fn string_problem(s: &str) -> Option<&'static str> {
    if s.chars().count() > MAX_ARG_CHARS {
        Some("deny.arg_long")
    } else if s.chars().any(fleetwatch_protocol::shown::is_hidden) {
        Some("deny.arg_hidden")
    } else if s.trim() != s {
        Some("deny.arg_space")
    } else {
        None
    }
}

fn yes_no(lang: Lang, value: bool) -> String {
    lang.t(if value { "yes" } else { "no" }).to_owned()
}

fn name_of(device: Option<&DeviceFacts>, id: &str) -> String {
    match device {
        Some(d) if !d.name.is_empty() => show_text(&d.name, MAX_NAME_CHARS),
        _ => id.to_owned(),
    }
}

fn channel_name(device: Option<&DeviceFacts>, number: &str) -> Option<String> {
    device?
        .channels
        .iter()
        .find(|c| c.number == number)
        .map(|c| show_text(&c.name, MAX_NAME_CHARS))
}

/// Builds the card for a stored proposal from a fresh describe (or the error it gave).
pub fn build(
    lang: Lang,
    proposal: &Proposal,
    described: &Result<Description, ExecutorError>,
    policy: &Policy,
) -> Card {
    let binding = Binding {
        proposal_id: proposal.id,
        tool: proposal.tool.clone(),
        arguments: proposal.arguments.clone(),
        targets: proposal.targets.clone(),
        fingerprint: proposal.fingerprint.clone(),
        schema_version: proposal.schema_version,
        policy_digest: proposal.policy_digest,
        names: described
            .as_ref()
            .map(|d| d.names.clone())
            .unwrap_or_default(),
        asked_by: Some(proposal.asked_by.clone())
            .filter(|u| fleetwatch_protocol::claims::is_user_name(u))
            .unwrap_or_default(),
    };
    let mut deny: Vec<String> = Vec::new();
    let tool_text = tool_text(lang, &proposal.tool);
    if tool_text.is_none() {
        deny.push(lang.t("deny.no_text").to_owned());
    }

    // Arguments: shown in full or not at all.
    let mut arguments = Vec::new();
    let parsed = canonical::from_str(&proposal.arguments).and_then(|c| c.to_value());
    let value = match parsed {
        Ok(Value::Object(map)) => Some(Value::Object(map)),
        _ => {
            deny.push(lang.t("deny.args_bad").to_owned());
            None
        }
    };
    if proposal.arguments.len() > MAX_CANONICAL_BYTES {
        deny.push(lang.t("deny.args_big").to_owned());
    }
    if let Some(Value::Object(map)) = &value {
        if map.len() > MAX_ITEMS {
            deny.push(lang.f("deny.arg_many", &[("key", "(arguments)")]));
        }
        for (key, v) in map {
            let shown_key = show_text(key, MAX_ARG_CHARS);
            if let Some(problem) = string_problem(key).or_else(|| value_problem(v, 1)) {
                deny.push(lang.f(problem, &[("key", &shown_key)]));
            }
            let text = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            arguments.push(ArgRow {
                key: shown_key,
                value: show_text(&text, MAX_CANONICAL_BYTES),
            });
        }
    }

    // The policy, again: what was valid when proposed must still be valid, identically.
    let validated: Option<Validated> = value.as_ref().and_then(|v| {
        let ok = policy.validate(&proposal.tool, v).ok()?;
        let entry = policy.propose_entry(&proposal.tool)?;
        let same = ok.arguments.as_str() == proposal.arguments
            && ok.targets == proposal.targets
            && entry.schema_version == proposal.schema_version
            && policy.digest(&proposal.tool) == Some(proposal.policy_digest);
        same.then_some(ok)
    });
    if validated.is_none() {
        deny.push(lang.t("deny.policy").to_owned());
    }

    let mut card = Card {
        binding,
        tool_text,
        targets: Vec::new(),
        arguments,
        names: Vec::new(),
        effects: Vec::new(),
        window: Vec::new(),
        warnings: Vec::new(),
        disruptive: value
            .as_ref()
            .is_none_or(|v| policy.is_disruptive(&proposal.tool, v)),
        rooms: Vec::new(),
        reason: show_text(&proposal.reason, MAX_REASON_CHARS),
        deny_only: Vec::new(),
    };

    let description = match described {
        Ok(d) => d,
        Err(e) => {
            let why = match e {
                ExecutorError::Refused(r) => r.message(),
                other => other.to_string(),
            };
            deny.push(lang.f("deny.read_failed", &[("why", &why)]));
            card.targets = proposal
                .targets
                .iter()
                .map(|id| TargetRow {
                    id: id.clone(),
                    name: lang.t("unknown").to_owned(),
                    model: lang.t("unknown").to_owned(),
                    online: lang.t("unknown").to_owned(),
                    recording: lang.t("unknown").to_owned(),
                })
                .collect();
            card.rooms = proposal.targets.clone();
            card.deny_only = deny;
            return card;
        }
    };
    card.disruptive |= description.disruptive;
    if let Some(frozen) = &description.frozen {
        deny.push(frozen_words(lang, frozen, jiff::Timestamp::now()));
    }
    if description.targets != proposal.targets {
        deny.push(lang.t("deny.targets").to_owned());
    }
    if description.policy_digest != proposal.policy_digest
        || description.schema_version != proposal.schema_version
    {
        deny.push(lang.t("deny.policy").to_owned());
    }
    let device = |id: &str| description.devices.iter().find(|d| d.id == id && d.on_team);
    for id in &proposal.targets {
        match description.devices.iter().find(|d| &d.id == id) {
            Some(d) if d.on_team => {
                if !d.allowlisted {
                    deny.push(lang.f("deny.not_allowlisted", &[("id", id)]));
                }
                card.targets.push(TargetRow {
                    id: id.clone(),
                    name: show_text(&d.name, MAX_NAME_CHARS),
                    model: show_text(&d.model, MAX_NAME_CHARS),
                    online: yes_no(lang, d.online),
                    recording: yes_no(lang, d.recording),
                });
            }
            _ => {
                deny.push(lang.f("deny.device_missing", &[("id", id)]));
                card.targets.push(TargetRow {
                    id: id.clone(),
                    name: lang.t("unknown").to_owned(),
                    model: lang.t("unknown").to_owned(),
                    online: lang.t("unknown").to_owned(),
                    recording: lang.t("unknown").to_owned(),
                });
            }
        }
        card.rooms.push(name_of(device(id), id));
    }
    for d in description.devices.iter().filter(|d| d.on_team) {
        card.warnings.extend(warning_lines(lang, d));
    }
    if description.fingerprint != proposal.fingerprint {
        deny.push(lang.t("deny.fingerprint").to_owned());
    }

    if let (Some(v), Some(valid)) = (&value, &validated) {
        describe_ids(lang, &mut card, &mut deny, v, valid, description, &device);
    }

    if card.disruptive {
        // A stop of a recording is not held up by the recording it stops: its line names the
        // event window only, never "nothing recording" of a room that records.
        let stops = value
            .as_ref()
            .is_some_and(|v| policy.stops_recording(&proposal.tool, v));
        for d in description.devices.iter().filter(|d| d.on_team) {
            let room = name_of(Some(d), &d.id);
            let title = d
                .event
                .as_ref()
                .map(|e| show_text(&e.title, MAX_NAME_CHARS))
                .unwrap_or_else(|| lang.t("an_event").to_owned());
            let line = match d.block {
                RoomBlock::None if stops => lang.f("window.none_stop", &[("device", &room)]),
                RoomBlock::None => lang.f("window.none", &[("device", &room)]),
                RoomBlock::Recording => lang.f("window.recording", &[("device", &room)]),
                RoomBlock::Live => lang.f("window.live", &[("device", &room), ("title", &title)]),
                RoomBlock::Soon(m) => lang.f(
                    "window.soon",
                    &[
                        ("device", &room),
                        ("title", &title),
                        ("minutes", &m.to_string()),
                    ],
                ),
            };
            card.window.push(line);
        }
    }
    card.deny_only = deny;
    card
}

/// The page's language as the shared words crate names it.
fn words_lang(lang: Lang) -> fleetwatch_words::Lang {
    match lang {
        Lang::En => fleetwatch_words::Lang::En,
        Lang::Es => fleetwatch_words::Lang::Es,
    }
}

/// A target's warnings, its own then each channel's, as "<device>: <the warning in words>".
fn warning_lines(lang: Lang, d: &DeviceFacts) -> Vec<String> {
    use fleetwatch_words::warnings::phrase_at;
    let lang = words_lang(lang);
    let room = name_of(Some(d), &d.id);
    let own = d.warnings.iter().map(|w| phrase_at(w, None, None, lang));
    let channels = d.channels.iter().flat_map(|c| {
        c.warnings
            .iter()
            .map(move |w| phrase_at(w, Some(&c.number), Some(&c.name), lang))
    });
    own.chain(channels)
        .map(|line| format!("{room}: {line}"))
        .collect()
}

/// A freeze window in words: "Frozen until Monday 08:00: finals week" (the time on this
/// machine's clock, as the page shows every time).
pub fn frozen_words(lang: Lang, frozen: &FreezeReport, now: jiff::Timestamp) -> String {
    let until = jiff::Timestamp::from_second(frozen.end)
        .map(|t| fleetwatch_words::time::clock(t, now))
        .unwrap_or_else(|_| frozen.end.to_string());
    lang.f(
        "deny.frozen",
        &[
            ("until", &until),
            ("reason", &show_text(&frozen.reason, 120)),
            ("holds", &show_text(&frozen.holds, 200)),
        ],
    )
}

/// Who may approve this card, from the approver lines the executor's `Status` lists: when any
/// person carries a scope, the card names those whose scope covers its tool and every target,
/// and when fewer of them than the change needs are enrolled, it offers only Deny, saying so
/// before anyone reaches for a passkey. The executor counts them in any case.
pub fn who_may_approve(card: &mut Card, lang: Lang, approvers: &Approvers, needed: usize) {
    let records = approvers.records();
    if records.iter().all(|r| r.scope().is_none()) {
        return;
    }
    let mut names: Vec<&str> = Vec::new();
    for r in records {
        let covered = r
            .scope()
            .is_none_or(|s| s.covers(&card.binding.tool, card.disruptive, &card.binding.targets));
        if covered && !names.contains(&r.name()) {
            names.push(r.name());
        }
    }
    let shown: Vec<String> = names.iter().map(|n| show_text(n, MAX_NAME_CHARS)).collect();
    if names.is_empty() {
        card.deny_only.push(lang.t("deny.scope_nobody").to_owned());
        return;
    }
    card.warnings
        .push(lang.f("card.may_approve", &[("names", &shown.join(", "))]));
    if names.len() < needed {
        card.deny_only.push(lang.f(
            "deny.scope_few",
            &[
                ("have", &names.len().to_string()),
                ("need", &needed.to_string()),
            ],
        ));
    }
}

/// What the executor's limits (its `Status`) say of this card ahead of time: a disruptive
/// change to a device still cooling down after its last one, or any change once the hourly cap
/// is reached, is refused there, so the card offers only Deny and says until when. The
/// executor decides in any case; this only spares the operator a refusal.
pub fn hold_limits(card: &mut Card, lang: Lang, limits: &LimitsReport, now: jiff::Timestamp) {
    if card.disruptive {
        for target in &card.targets {
            let Some(cooling) = limits.cooling.iter().find(|c| c.device == target.id) else {
                continue;
            };
            let (Ok(changed), Ok(until)) = (
                jiff::Timestamp::from_second(cooling.changed_at),
                jiff::Timestamp::from_second(cooling.until),
            ) else {
                continue;
            };
            if until <= now {
                continue;
            }
            let ago = fleetwatch_words::time::relative(changed.min(now), now, words_lang(lang));
            card.deny_only.push(lang.f(
                "deny.cooling",
                &[
                    ("device", &target.name),
                    ("ago", &ago),
                    ("time", &fleetwatch_words::time::clock(until, now)),
                ],
            ));
        }
    }
    // A cap of 0 is not one the executor can set (1..=10000): nothing reported, nothing held.
    if limits.writes_per_hour > 0 && limits.writes_last_hour >= limits.writes_per_hour {
        card.deny_only.push(lang.f(
            "deny.hourly",
            &[
                ("n", &limits.writes_last_hour.to_string()),
                ("limit", &limits.writes_per_hour.to_string()),
            ],
        ));
    }
}

/// Whether the operator still grants the tool's category. Read from the grants file each time
/// a card is shown and again when an approval is consumed, so `fleetwatch grants close` holds
/// the category's pending cards at once, not at the next model turn. A grants file that
/// cannot be read grants nothing, here as everywhere.
pub fn hold_grants(
    card: &mut Card,
    lang: Lang,
    policy: &Policy,
    grants: &Result<crate::grants::Grants, crate::grants::GrantsError>,
) {
    // A tool the policy no longer proposes is held already (`deny.policy`).
    let Some(entry) = policy.propose_entry(&card.binding.tool) else {
        return;
    };
    match grants {
        Ok(grants) if grants.is_open(&entry.category) => {}
        Ok(_) => card
            .deny_only
            .push(lang.f("deny.grant_closed", &[("category", &entry.category)])),
        Err(e) => card
            .deny_only
            .push(lang.f("deny.grants_unreadable", &[("why", &e.to_string())])),
    }
}

/// Names and effects for what the arguments point at.
fn describe_ids<'a>(
    lang: Lang,
    card: &mut Card,
    deny: &mut Vec<String>,
    args: &Value,
    valid: &Validated,
    description: &'a Description,
    device: &dyn Fn(&str) -> Option<&'a DeviceFacts>,
) {
    let text = |key: &str| args.get(key).and_then(Value::as_str).unwrap_or_default();
    let tool = card.binding.tool.as_str();
    // Channels named as `<device>-N`.
    for channel in &valid.channels {
        let (master, number) = (channel.device.as_str(), channel.number.as_str());
        let channel = &channel.id();
        let d = device(master);
        let Some(name) = channel_name(d, number) else {
            if d.is_some() {
                deny.push(lang.f("deny.channel_missing", &[("id", channel)]));
            }
            continue;
        };
        card.names
            .push(lang.f("name.channel", &[("id", channel), ("name", &name)]));
        if tool == "batch_recording" {
            let now = d
                .and_then(|d| d.channels.iter().find(|c| c.number == number))
                .is_some_and(|c| c.recording);
            let after = match text("action") {
                "start" => true,
                "stop" => false,
                _ => now,
            };
            let state = |r: bool| {
                lang.t(if r {
                    "state.recording"
                } else {
                    "state.stopped"
                })
            };
            let words = [
                ("device", name_of(d, master)),
                ("channel", name),
                ("from", state(now).to_owned()),
                ("to", state(after).to_owned()),
            ];
            let words: Vec<(&str, &str)> = words.iter().map(|(k, v)| (*k, v.as_str())).collect();
            card.effects.push(lang.f("effect.recording", &words));
            // A change to the state the channel is already in does nothing (an offline device
            // is said once, below, for every tool).
            if now == after && d.is_some_and(|d| d.online) {
                let key = if now {
                    "deny.already_recording"
                } else {
                    "deny.not_recording"
                };
                deny.push(lang.f(key, &words));
            }
        }
    }
    // A channel number beside a device ID (streams).
    let mut stream_channel = String::new();
    if let Some(ChannelRef {
        device: master,
        number,
    }) = &valid.channel
    {
        let d = device(master);
        match channel_name(d, number) {
            Some(name) => {
                let id = format!("{master}-{number}");
                card.names
                    .push(lang.f("name.channel", &[("id", &id), ("name", &name)]));
                stream_channel = name;
            }
            None => {
                if d.is_some() {
                    deny.push(lang.f(
                        "deny.channel_missing",
                        &[("id", &format!("{master}-{number}"))],
                    ));
                }
            }
        }
    }
    if let Some(id) = &valid.stream_id {
        match &description.stream {
            Some(s) if s.found && s.id.eq_ignore_ascii_case(id) => {
                let name = show_text(&s.name, MAX_NAME_CHARS);
                let host = show_text(&s.host, MAX_NAME_CHARS);
                card.names.push(lang.f(
                    "name.stream",
                    &[("id", id), ("name", &name), ("host", &host)],
                ));
                let master = text("device_id");
                let stop = tool == "stop_stream_endpoint";
                let from = lang.t(match s.publisher {
                    PublisherState::Running => "state.sending",
                    PublisherState::Stopped => "state.not_sending",
                    PublisherState::Absent => "state.no_publisher",
                    PublisherState::Unknown => "state.not_reported",
                });
                let words = [
                    ("dest", name.as_str()),
                    ("host", host.as_str()),
                    ("device", &name_of(device(master), master)),
                    ("channel", &stream_channel),
                    ("from", from),
                ];
                let key = if stop {
                    "effect.stream_stop"
                } else {
                    "effect.stream_start"
                };
                card.effects.push(lang.f(key, &words));
                // Starting what already sends, or stopping what does not, does nothing; an
                // unreported state is not held against the change.
                match (stop, s.publisher) {
                    (false, PublisherState::Running) => {
                        deny.push(lang.f("deny.already_sending", &words));
                    }
                    (true, PublisherState::Stopped | PublisherState::Absent) => {
                        deny.push(lang.f("deny.not_sending", &words));
                    }
                    _ => {}
                }
            }
            _ => deny.push(lang.f("deny.stream_missing", &[("id", id)])),
        }
    }
    if let Some(named) = &valid.event {
        let event_id = named.event.as_str();
        let event = device(&named.device).and_then(|d| d.event.as_ref());
        match (description.event_matches, event) {
            (Some(true), Some(e)) if e.id == event_id => {
                let title = show_text(&e.title, MAX_NAME_CHARS);
                let end = e.end.clone().unwrap_or_else(|| "?".to_owned());
                card.names.push(lang.f(
                    "name.event",
                    &[
                        ("id", event_id),
                        ("title", &title),
                        ("start", &e.start),
                        ("end", &end),
                    ],
                ));
                let from = lang.t(match e.confirmed {
                    Some(true) => "state.confirmed",
                    Some(false) => "state.unconfirmed",
                    None => "state.not_reported",
                });
                let words = [
                    ("title", title.as_str()),
                    ("start", e.start.as_str()),
                    ("end", end.as_str()),
                    ("device", &name_of(device(&named.device), &named.device)),
                    ("from", from),
                ];
                card.effects.push(lang.f("effect.confirm", &words));
                if e.confirmed == Some(true) {
                    deny.push(lang.f("deny.already_confirmed", &words));
                }
            }
            _ => deny.push(lang.f("deny.event_missing", &[("id", event_id)])),
        }
    }
    for target in &valid.targets {
        let d = device(target);
        let online = d.is_some_and(|d| d.online);
        let from = lang.t(if online {
            "state.online"
        } else {
            "state.offline"
        });
        // The recording a restart would cut, by channel name.
        let interrupted = d
            .map(|d| {
                d.channels
                    .iter()
                    .filter(|c| c.recording)
                    .map(|c| show_text(&c.name, MAX_NAME_CHARS))
                    .collect::<Vec<_>>()
            })
            .filter(|names| !names.is_empty())
            .map_or_else(|| lang.t("state.none").to_owned(), |names| names.join(", "));
        let device_name = name_of(d, target);
        match tool {
            "batch_reboot" => card.effects.push(lang.f(
                "effect.reboot",
                &[
                    ("device", &device_name),
                    ("from", from),
                    ("channels", &interrupted),
                ],
            )),
            "batch_firmware_update" => {
                let version = |v: Option<&str>| match v {
                    Some(v) if !v.is_empty() => show_text(v, MAX_NAME_CHARS),
                    _ => lang.t("unknown").to_owned(),
                };
                card.effects.push(lang.f(
                    "effect.firmware",
                    &[
                        ("device", &device_name),
                        ("model", &version(d.map(|d| d.model.as_str()))),
                        ("current", &version(d.map(|d| d.firmware.as_str()))),
                        ("newest", &version(d.map(|d| d.newest_firmware.as_str()))),
                        ("from", from),
                        ("channels", &interrupted),
                    ],
                ));
            }
            _ => {}
        }
        // A write that acts on the device cannot reach it offline (the executor refuses it).
        // (A device not on the team is said already.)
        if d.is_some() && !online && Policy::needs_device_online(tool) {
            deny.push(lang.f("deny.offline", &[("device", &device_name)]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_characters_are_spelled_out_and_text_is_capped() {
        assert_eq!(
            show_text("a\u{202E}b\u{200B}c\n", 100),
            "a⟨U+202E⟩b⟨U+200B⟩c␊"
        );
        assert_eq!(show_text("\u{E000}", 100), "⟨U+E000⟩");
        assert_eq!(show_text("plain words", 100), "plain words");
        assert_eq!(show_text("abcdef", 3), "ab…");
        assert_eq!(
            show_text(&"x".repeat(600), MAX_REASON_CHARS)
                .chars()
                .count(),
            MAX_REASON_CHARS
        );
        // The escape counts toward the cap, so a wall of hidden characters stays short.
        assert!(show_text(&"\u{200B}".repeat(600), 20).chars().count() <= 20);
    }

    #[test]
    fn argument_display_rules() {
        use serde_json::json;
        assert_eq!(value_problem(&json!("x".repeat(256)), 1), None);
        assert_eq!(
            value_problem(&json!("x".repeat(257)), 1),
            Some("deny.arg_long")
        );
        assert_eq!(value_problem(&json!(" x"), 1), Some("deny.arg_space"));
        assert_eq!(value_problem(&json!("x\u{a0}"), 1), Some("deny.arg_hidden"));
        assert_eq!(
            value_problem(&json!("a\u{202E}b"), 1),
            Some("deny.arg_hidden")
        );
        assert_eq!(
            value_problem(&json!("a\u{F8FF}b"), 1),
            Some("deny.arg_hidden")
        );
        assert_eq!(
            value_problem(&json!("a\u{0378}b"), 1),
            Some("deny.arg_hidden")
        );
        assert_eq!(value_problem(&json!(["a"]), 1), None);
        assert_eq!(value_problem(&json!([["a"]]), 1), Some("deny.arg_deep"));
        assert_eq!(
            value_problem(&json!({"k": {"j": 1}}), 1),
            Some("deny.arg_deep")
        );
        assert_eq!(value_problem(&json!(vec!["a"; 20]), 1), None);
        assert_eq!(
            value_problem(&json!(vec!["a"; 21]), 1),
            Some("deny.arg_many")
        );
    }
}
