//! The fleet tools: what the model asks about a fleet of any size, answered by code from the
//! question's [`Snapshot`].
//!
//! The model never receives a team-wide read whole (at a few dozen rooms it would be cut, and a
//! small model's context cannot hold it at all). It asks these instead, and each is a pure
//! function of the snapshot, with no I/O: an [`overview`] of the whole team, a [`search`] that
//! returns one page of matching rooms, and one [`room`] in full. Every answer is bounded by
//! construction (a page holds at most [`PAGE_ROOMS`] rooms, every string is capped) and says
//! how many matched in all and how many it shows, so a page is never taken for the whole.
//!
//! They add no authority: the snapshot holds only what the guarded reads returned, already
//! redacted, and the answers reach the model as data blocks like every read. Names stay data:
//! they are capped here and escaped by the data block.
//!
//! The keyword answerer counts from [`counts`] too, so both answer alike for one snapshot.

use std::cmp::Ordering;

use fleetwatch_protocol::fleet::{self, Device, Event};
use fleetwatch_protocol::schema::Schema;
use fleetwatch_words::firmware::Newest;
use fleetwatch_words::lang::{Lang, normalize};
use fleetwatch_words::rooms::{RoomMatch, find_room};
use fleetwatch_words::time::{is_on, not_ended, starts_soon};
use fleetwatch_words::triage::{self, Finding, Urgency};
use fleetwatch_words::warnings;
use serde_json::{Map, Value, json};

use crate::snapshot::Snapshot;

/// The rooms a change may go to, for one question. The deployment keeps them apart from the
/// fleet the assistant reads, so they come from the executor (`Rooms`: the fenced rooms by ID,
/// name and channels), asked only when a tool needs them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Changeable {
    /// Not asked: no tool call of this question needed them.
    NotAsked,
    /// Proposing is off or no fence is configured: no room can be changed.
    Off,
    /// As the executor read them.
    Read(fleetwatch_protocol::wire::RoomList),
    /// The executor could not say; the reason, safe to show.
    Failed(String),
}

/// Whether answering this call needs the rooms that can be changed: a search for them, or a
/// room the read fleet does not hold.
pub fn needs_changeable(tool: &str, args: &Value, snap: &Snapshot) -> bool {
    match tool {
        SEARCH => args.get("state").and_then(Value::as_str) == Some("changeable"),
        ROOM => {
            let asked = args.get("room").and_then(Value::as_str).unwrap_or_default();
            matches!(
                lookup(&snap.devices, asked.trim()),
                RoomMatch::None(_) | RoomMatch::NotNamed
            )
        }
        _ => false,
    }
}

/// A device by ID, else by the words of its name.
fn lookup<'a>(devices: &'a [Device], asked: &str) -> RoomMatch<'a> {
    match devices.iter().find(|d| d.id.eq_ignore_ascii_case(asked)) {
        Some(d) => RoomMatch::One(d),
        None => find_room(asked, devices),
    }
}

/// The rooms that can be changed as devices the room rules can match: ID, name and channels.
fn changeable_devices(list: &fleetwatch_protocol::wire::RoomList) -> Vec<Device> {
    list.rooms
        .iter()
        .map(|r| Device {
            id: r.id.clone(),
            name: r.name.clone(),
            model: String::new(),
            group: String::new(),
            firmware: String::new(),
            online: false,
            state_time: None,
            warnings: Vec::new(),
            channels: r
                .channels
                .iter()
                .map(|(number, name)| fleet::Channel {
                    number: number.clone(),
                    name: name.clone(),
                    recording: false,
                    doubtful: false,
                    publishers: Vec::new(),
                    warnings: Vec::new(),
                })
                .collect(),
        })
        .collect()
}

/// A room that can be changed, as the executor named it: no state is read here.
fn changeable_room(d: &Device) -> Value {
    let channels: Vec<Value> = d
        .channels
        .iter()
        .take(ITEMS_PER_ROOM)
        .map(|c| {
            json!({
                "channel": cap(&c.number, 8),
                "channel_id": format!("{}-{}", d.id, cap(&c.number, 8)),
                "name": cap(&c.name, NAME_CHARS),
            })
        })
        .collect();
    json!({
        "id": d.id,
        "name": cap(&d.name, NAME_CHARS),
        "channels": channels,
        "can_be_changed": true,
        "state": "not read here: the executor reads it when a change is proposed, and the person approving sees it",
    })
}

fn changeable_unknown(changeable: &Changeable) -> Option<Value> {
    match changeable {
        Changeable::Read(_) => None,
        Changeable::Off | Changeable::NotAsked => Some(json!({
            "matched": 0,
            "note": "no room can be changed here: proposing is off or no fence is set",
        })),
        Changeable::Failed(why) => Some(json!({
            "matched": 0,
            "note": format!("the rooms that can be changed could not be read: {}", cap(why, TEXT_CHARS)),
        })),
    }
}

/// One page of the rooms that can be changed whose name (or ID) matches.
fn search_changeable(changeable: &Changeable, query: &Query) -> Value {
    if let Some(unknown) = changeable_unknown(changeable) {
        return unknown;
    }
    let Changeable::Read(list) = changeable else {
        return json!({"matched": 0});
    };
    let devices = changeable_devices(list);
    let mut matched: Vec<&Device> = devices
        .iter()
        .filter(|d| {
            query
                .name
                .as_deref()
                .is_none_or(|n| d.id.eq_ignore_ascii_case(n) || contains_normalised(&d.name, n))
        })
        .collect();
    matched.sort_by(|a, b| natural(&a.name, &b.name).then_with(|| a.id.cmp(&b.id)));
    let mut out = page(&matched, query.cursor, "name", changeable_room);
    if list.left_out > 0 {
        out["left_out_by_the_executor"] = json!(list.left_out);
    }
    out
}

/// The overview of the whole team.
pub const OVERVIEW: &str = "fleet_overview";
/// One page of the rooms that match.
pub const SEARCH: &str = "fleet_search";
/// One room in full.
pub const ROOM: &str = "fleet_room";

/// Most rooms on one page of a search: with the prompt, the tools and an overview, a page of
/// rooms with names of the longest kept still fits a request of 16 KB, which a small model's
/// context holds.
pub const PAGE_ROOMS: usize = 15;
/// Rooms the overview lists as needing attention first.
pub const ATTENTION_LISTED: usize = 5;
/// Candidates listed when a name fits several rooms.
pub const CANDIDATES_LISTED: usize = 10;
/// Longest name (characters) in an answer.
pub const NAME_CHARS: usize = 60;
/// Longest other text (characters) in an answer.
pub const TEXT_CHARS: usize = 160;
/// Most channels, warnings or streams shown for one room.
const ITEMS_PER_ROOM: usize = 12;

/// Whether `name` is one of the fleet tools this code answers.
pub fn is_fleet_tool(name: &str) -> bool {
    matches!(name, OVERVIEW | SEARCH | ROOM)
}

/// Answers a fleet tool call from `snap`, after checking the arguments against the tool's
/// schema; what is said in words (why a room needs attention, its warnings) is in `lang`, the
/// operator's language. The error text is written here and safe to show the model.
pub fn call(
    tool: &str,
    schema: &Value,
    args: &Value,
    snap: &Snapshot,
    changeable: &Changeable,
    lang: Lang,
) -> Result<Value, String> {
    let compiled =
        Schema::compile(schema).map_err(|_| "the tool's schema could not be read".to_owned())?;
    compiled.validate(args).map_err(|v| {
        format!(
            "the arguments do not match the tool's schema at {}",
            v.pointer()
        )
    })?;
    match tool {
        OVERVIEW => Ok(overview(snap, lang)),
        SEARCH if args.get("state").and_then(Value::as_str) == Some("changeable") => {
            Ok(search_changeable(changeable, &Query::from_args(args)))
        }
        SEARCH => Ok(search(snap, &Query::from_args(args), lang)),
        ROOM => {
            let asked = args.get("room").and_then(Value::as_str).unwrap_or_default();
            let found = room(snap, asked, lang);
            if found["matched"] != json!(0) {
                return Ok(found);
            }
            Ok(room_to_change(changeable, asked).unwrap_or(found))
        }
        _ => Err("that tool is not available".to_owned()),
    }
}

// ---- counting ------------------------------------------------------------------------------

/// How many rooms are in each state. One definition for every answerer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct Counts {
    /// Rooms (devices) in the team.
    pub rooms: usize,
    /// Online.
    pub online: usize,
    /// Offline.
    pub offline: usize,
    /// Recording on at least one channel.
    pub recording: usize,
    /// Streaming on at least one channel.
    pub streaming: usize,
    /// Reporting at least one warning (device or channel).
    pub with_warnings: usize,
    /// With a scheduled event on now.
    pub event_now: usize,
    /// With an event starting soon (not yet on).
    pub event_soon: usize,
    /// Needing attention (any triage group).
    pub needs_attention: usize,
}

/// A device's state as the search filters it.
fn streaming(d: &Device) -> bool {
    d.channels
        .iter()
        .any(|c| c.publishers.iter().any(|p| p.active))
}

fn has_warnings(d: &Device) -> bool {
    !d.warnings.is_empty() || d.channels.iter().any(|c| !c.warnings.is_empty())
}

/// The event of a device that has not ended.
fn live_event<'a>(snap: &'a Snapshot, id: &str) -> Option<&'a Event> {
    snap.event_for(id).filter(|e| not_ended(e, snap.now))
}

fn event_now(snap: &Snapshot, d: &Device) -> bool {
    live_event(snap, &d.id).is_some_and(|e| is_on(e, snap.now))
}

fn event_soon(snap: &Snapshot, d: &Device) -> bool {
    live_event(snap, &d.id).is_some_and(|e| !is_on(e, snap.now) && starts_soon(e, snap.now))
}

/// The counts of `snap`.
pub fn counts(snap: &Snapshot) -> Counts {
    let mut c = Counts {
        rooms: snap.devices.len(),
        ..Counts::default()
    };
    for d in &snap.devices {
        if d.online {
            c.online += 1;
        } else {
            c.offline += 1;
        }
        c.recording += usize::from(d.recording());
        c.streaming += usize::from(streaming(d));
        c.with_warnings += usize::from(has_warnings(d));
        c.event_now += usize::from(event_now(snap, d));
        c.event_soon += usize::from(event_soon(snap, d));
    }
    c.needs_attention = findings(snap).len();
    c
}

/// Every room that needs attention, most urgent group first, the fleet's order within a group.
pub fn findings(snap: &Snapshot) -> Vec<Finding<'_>> {
    let mut all = triage::attention(&snap.devices, |id| snap.event_for(id), snap.now);
    all.sort_by_key(|f| f.urgency);
    all
}

// ---- the overview --------------------------------------------------------------------------

/// The whole team in counts, and the rooms that need attention first.
pub fn overview(snap: &Snapshot, lang: Lang) -> Value {
    let counts = counts(snap);
    let all = findings(snap);
    let group = |u: Urgency| all.iter().filter(|f| f.urgency == u).count();
    let first: Vec<Value> = all
        .iter()
        .take(ATTENTION_LISTED)
        .map(|f| attention_item(f, snap, lang))
        .collect();
    let mut out = json!({
        "as_of": fleet::format_time(snap.now),
        "counts": counts,
        "attention": {
            "fix_first": group(Urgency::First),
            "fix_soon": group(Urgency::Soon),
            "when_convenient": group(Urgency::Convenient),
            "listed": first.len(),
            "rooms": first,
        },
    });
    if !snap.not_read.is_empty() {
        out["not_read"] = json!(not_read(snap));
    }
    if all.len() > first.len() {
        out["attention"]["more"] = json!(format!(
            "{} more need attention: search with state needs_attention, sorted by urgency",
            all.len() - first.len()
        ));
    }
    out
}

fn not_read(snap: &Snapshot) -> Vec<String> {
    snap.not_read
        .iter()
        .map(|tool| format!("{tool} (its category is closed)"))
        .collect()
}

fn urgency_word(u: Urgency) -> &'static str {
    match u {
        Urgency::First => "fix first",
        Urgency::Soon => "fix soon",
        Urgency::Convenient => "when convenient",
    }
}

fn attention_item(f: &Finding<'_>, snap: &Snapshot, lang: Lang) -> Value {
    json!({
        "id": f.device.id,
        "name": cap(&f.device.name, NAME_CHARS),
        "urgency": urgency_word(f.urgency),
        "why": cap(&f.phrase(snap.now, lang), TEXT_CHARS),
    })
}

// ---- the search ----------------------------------------------------------------------------

/// Which rooms a search asks for; every filter given must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    /// A state (`offline`, `recording`, …); `None` or `any` for all.
    pub state: Option<String>,
    /// A piece of the name (compared normalised), or a device ID.
    pub name: Option<String>,
    /// A piece of a warning's ID, label or message.
    pub warning: Option<String>,
    /// A piece of the model.
    pub model: Option<String>,
    /// The start of the firmware version.
    pub firmware: Option<String>,
    /// The order: `name` (the default), `urgency`, `next_event` or `id`.
    pub sort: Option<String>,
    /// How many matching rooms to skip (the previous page's `next_cursor`).
    pub cursor: usize,
}

impl Query {
    /// From arguments already checked against the schema.
    pub fn from_args(args: &Value) -> Query {
        let text = |key: &str| {
            args.get(key)
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        Query {
            state: text("state"),
            name: text("name"),
            warning: text("warning"),
            model: text("model"),
            firmware: text("firmware"),
            sort: text("sort"),
            cursor: args
                .get("cursor")
                .and_then(Value::as_u64)
                .and_then(|n| usize::try_from(n).ok())
                .unwrap_or(0),
        }
    }
}

/// Whether `d` is in `state`.
fn in_state(
    snap: &Snapshot,
    d: &Device,
    state: &str,
    urgent: &dyn Fn(&str) -> bool,
    newest: &Newest,
) -> bool {
    match state {
        "online" => d.online,
        "offline" => !d.online,
        "recording" => d.recording(),
        "not_recording" => !d.recording(),
        "streaming" => streaming(d),
        "warning" => has_warnings(d),
        "event_now" => event_now(snap, d),
        "event_soon" => event_soon(snap, d),
        "scheduled" => live_event(snap, &d.id).is_some(),
        "no_event" => live_event(snap, &d.id).is_none(),
        "needs_attention" => urgent(&d.id),
        // Behind the newest of its line in this team.
        "outdated_firmware" => newest.behind(d).is_some(),
        _ => true,
    }
}

fn contains_normalised(haystack: &str, needle: &str) -> bool {
    let needle = normalize(needle);
    let needle = needle.split_whitespace().collect::<Vec<_>>().join(" ");
    let hay = normalize(haystack);
    let hay = hay.split_whitespace().collect::<Vec<_>>().join(" ");
    hay.contains(&needle)
}

/// One page of the rooms matching `query`.
pub fn search(snap: &Snapshot, query: &Query, lang: Lang) -> Value {
    let all = findings(snap);
    // The first finding of a device is its most urgent (they are sorted by urgency).
    let mut urgent_ids: std::collections::HashMap<&str, &Finding<'_>> =
        std::collections::HashMap::new();
    for f in &all {
        urgent_ids.entry(f.device.id.as_str()).or_insert(f);
    }
    let finding_of = |id: &str| urgent_ids.get(id).copied();
    let urgency_of = |id: &str| finding_of(id).map(|f| f.urgency);
    let urgent = |id: &str| urgent_ids.contains_key(id);
    let newest = Newest::of(&snap.devices);
    let state = query.state.as_deref().unwrap_or("any");
    let mut matched: Vec<&Device> = snap
        .devices
        .iter()
        .filter(|d| in_state(snap, d, state, &urgent, &newest))
        .filter(|d| {
            query
                .name
                .as_deref()
                .is_none_or(|n| d.id.eq_ignore_ascii_case(n) || contains_normalised(&d.name, n))
        })
        .filter(|d| {
            query.warning.as_deref().is_none_or(|w| {
                warnings::of_device(d).iter().any(|l| {
                    let x = l.warning;
                    contains_normalised(&x.id.replace('_', " "), w)
                        || contains_normalised(&x.label, w)
                        || contains_normalised(&x.message, w)
                })
            })
        })
        .filter(|d| {
            query
                .model
                .as_deref()
                .is_none_or(|m| contains_normalised(&d.model, m))
        })
        .filter(|d| {
            query
                .firmware
                .as_deref()
                .is_none_or(|f| d.firmware.trim().starts_with(f))
        })
        .collect();
    let sort = query
        .sort
        .as_deref()
        .filter(|s| matches!(*s, "urgency" | "next_event" | "id"))
        .unwrap_or("name");
    match sort {
        "id" => matched.sort_by(|a, b| a.id.cmp(&b.id)),
        "urgency" => matched.sort_by(|a, b| {
            let rank = |d: &Device| urgency_of(&d.id).map_or(3, |u| u as u8);
            rank(a)
                .cmp(&rank(b))
                .then_with(|| natural(&a.name, &b.name))
                .then_with(|| a.id.cmp(&b.id))
        }),
        "next_event" => matched.sort_by(|a, b| {
            let start = |d: &Device| live_event(snap, &d.id).map(|e| e.start);
            match (start(a), start(b)) {
                (Some(x), Some(y)) => x.cmp(&y),
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (None, None) => Ordering::Equal,
            }
            .then_with(|| natural(&a.name, &b.name))
            .then_with(|| a.id.cmp(&b.id))
        }),
        _ => matched.sort_by(|a, b| natural(&a.name, &b.name).then_with(|| a.id.cmp(&b.id))),
    }
    let mut out = page(&matched, query.cursor, sort, |d| {
        brief(d, snap, finding_of(&d.id), newest.behind(d), lang)
    });
    if !snap.not_read.is_empty() {
        out["not_read"] = json!(not_read(snap));
    }
    out
}

/// One page of `matched` from `cursor`: at most [`PAGE_ROOMS`] rooms drawn by `room`, how many
/// matched in all, and the cursor of the next page with a note that says so.
fn page(
    matched: &[&Device],
    cursor: usize,
    sorted_by: &str,
    room: impl Fn(&Device) -> Value,
) -> Value {
    let total = matched.len();
    let from = cursor.min(total);
    let rooms: Vec<Value> = matched
        .iter()
        .skip(from)
        .take(PAGE_ROOMS)
        .map(|d| room(d))
        .collect();
    let shown = rooms.len();
    let next = (from + shown < total).then_some(from + shown);
    let note = match next {
        Some(n) => format!(
            "rooms {}–{} of {total}; call again with cursor {n} for the next page",
            from + 1,
            from + shown
        ),
        None if total == 0 => "no room matches".to_owned(),
        None => format!(
            "rooms {}–{} of {total}: this is the last page",
            from + 1,
            from + shown
        ),
    };
    json!({
        "matched": total,
        "shown": shown,
        "from": from,
        "sorted_by": sorted_by,
        "rooms": rooms,
        "next_cursor": next,
        "note": note,
    })
}

/// A room on a page: what a person would scan for.
fn brief(
    d: &Device,
    snap: &Snapshot,
    finding: Option<&Finding<'_>>,
    newest: Option<&str>,
    lang: Lang,
) -> Value {
    let mut m = Map::new();
    m.insert("id".into(), json!(d.id));
    m.insert("name".into(), json!(cap(&d.name, NAME_CHARS)));
    m.insert("online".into(), json!(d.online));
    if !d.online
        && let Some(t) = &d.state_time
    {
        m.insert("offline_since".into(), json!(cap(t, 40)));
    }
    let recording: Vec<&str> = d
        .channels
        .iter()
        .filter(|c| c.recording)
        .map(|c| c.number.as_str())
        .take(ITEMS_PER_ROOM)
        .collect();
    if !recording.is_empty() {
        m.insert("recording_channels".into(), json!(recording));
    }
    if streaming(d) {
        m.insert("streaming".into(), json!(true));
    }
    let mut ids: Vec<String> = warnings::of_device(d)
        .iter()
        .map(|l| cap(&l.warning.id, 40))
        .collect();
    ids.dedup();
    if !ids.is_empty() {
        ids.truncate(4);
        m.insert("warnings".into(), json!(ids));
    }
    if let Some(newest) = newest {
        m.insert("firmware".into(), json!(cap(&d.firmware, 40)));
        m.insert("newest_firmware_of_its_line".into(), json!(cap(newest, 40)));
    }
    if let Some(f) = finding {
        m.insert("urgency".into(), json!(urgency_word(f.urgency)));
        m.insert(
            "why".into(),
            json!(cap(&f.phrase(snap.now, lang), TEXT_CHARS)),
        );
    }
    if let Some(e) = live_event(snap, &d.id) {
        m.insert("event".into(), event_value(e, snap));
    }
    Value::Object(m)
}

fn event_value(e: &Event, snap: &Snapshot) -> Value {
    let mut v = json!({
        "title": cap(&e.title, NAME_CHARS),
        "start": fleet::format_time(e.start),
        "on_now": is_on(e, snap.now),
    });
    if let Some(end) = e.end {
        v["end"] = json!(fleet::format_time(end));
    }
    v
}

// ---- one room ------------------------------------------------------------------------------

/// One room in full, found by device ID or by name; several that fit are answered with the
/// candidates and their IDs, never a guess.
pub fn room(snap: &Snapshot, asked: &str, lang: Lang) -> Value {
    let asked = asked.trim();
    match lookup(&snap.devices, asked) {
        RoomMatch::One(d) => json!({"matched": 1, "room": full(d, snap, lang)}),
        RoomMatch::Several(devices) => {
            let candidates: Vec<Value> = devices
                .iter()
                .take(CANDIDATES_LISTED)
                .map(|d| json!({"id": d.id, "name": cap(&d.name, NAME_CHARS)}))
                .collect();
            json!({
                "matched": devices.len(),
                "shown": candidates.len(),
                "candidates": candidates,
                "note": "several rooms fit: ask the operator which one, naming each by its ID",
            })
        }
        RoomMatch::None(_) | RoomMatch::NotNamed => json!({
            "matched": 0,
            "note": "no room fits that name or ID; fleet_search with a piece of the name lists rooms",
        }),
    }
}

/// A room the read fleet does not hold, among the rooms that can be changed; `None` when the
/// rooms were not asked for.
fn room_to_change(changeable: &Changeable, asked: &str) -> Option<Value> {
    if let Changeable::NotAsked = changeable {
        return None;
    }
    if let Some(unknown) = changeable_unknown(changeable) {
        return Some(unknown);
    }
    let Changeable::Read(list) = changeable else {
        return None;
    };
    let devices = changeable_devices(list);
    Some(match lookup(&devices, asked.trim()) {
        RoomMatch::One(d) => json!({"matched": 1, "room": changeable_room(d)}),
        RoomMatch::Several(found) => json!({
            "matched": found.len(),
            "shown": found.len().min(CANDIDATES_LISTED),
            "candidates": found
                .iter()
                .take(CANDIDATES_LISTED)
                .map(|d| json!({"id": d.id, "name": cap(&d.name, NAME_CHARS), "can_be_changed": true}))
                .collect::<Vec<_>>(),
            "note": "several rooms that can be changed fit: ask the operator which one, naming each by its ID",
        }),
        RoomMatch::None(_) | RoomMatch::NotNamed => json!({
            "matched": 0,
            "note": "no room fits that name or ID, among the team's rooms or the rooms that can be changed",
        }),
    })
}

fn full(d: &Device, snap: &Snapshot, lang: Lang) -> Value {
    let channels: Vec<Value> = d
        .channels
        .iter()
        .take(ITEMS_PER_ROOM)
        .map(|c| {
            let streams: Vec<Value> = c
                .publishers
                .iter()
                .take(ITEMS_PER_ROOM)
                .map(|p| {
                    let mut s = json!({"kind": cap(&p.kind, 20), "active": p.active});
                    if let Some(id) = &p.stream_id {
                        s["stream_id"] = json!(id);
                        if let Some(dest) = snap.streams.iter().find(|e| &e.id == id) {
                            s["destination"] = json!(cap(&dest.name, NAME_CHARS));
                            s["host"] = json!(cap(&dest.host, NAME_CHARS));
                        }
                    }
                    s
                })
                .collect();
            json!({
                "channel": cap(&c.number, 8),
                "channel_id": format!("{}-{}", d.id, cap(&c.number, 8)),
                "name": cap(&c.name, NAME_CHARS),
                "recording": if c.recording { "yes" } else if c.doubtful { "unclear" } else { "no" },
                "streams": streams,
                "warnings": warning_list(&c.warnings),
            })
        })
        .collect();
    let in_words: Vec<String> = warnings::of_device(d)
        .iter()
        .take(ITEMS_PER_ROOM)
        .map(|l| cap(&l.phrase(lang), TEXT_CHARS))
        .collect();
    let mut out = json!({
        "id": d.id,
        "name": cap(&d.name, NAME_CHARS),
        "model": cap(&d.model, 40),
        "firmware": cap(&d.firmware, 40),
        "group": cap(&d.group, NAME_CHARS),
        "online": d.online,
        "channels": channels,
        "channels_in_all": d.channels.len(),
        "warnings": warning_list(&d.warnings),
        "warnings_in_words": in_words,
    });
    if let Some(t) = &d.state_time {
        out["state_since"] = json!(cap(t, 40));
    }
    if let Some(newest) = Newest::of(&snap.devices).behind(d) {
        out["newest_firmware_of_its_line"] = json!(cap(newest, 40));
    }
    match live_event(snap, &d.id) {
        Some(e) => {
            out["event"] = event_value(e, snap);
            out["event"]["id"] = json!(cap(&e.id, 128));
        }
        None if !snap.not_read.iter().any(|t| t.contains("event")) => {
            out["event"] = json!("none scheduled in the next 24 hours");
        }
        None => {}
    }
    if let Some(system) = snap.system.get(&d.id) {
        let mut s = Map::new();
        if let Some(load) = system.cpu_load {
            s.insert("cpu_load_percent".into(), json!(load.round()));
        }
        if let Some(temp) = system.cpu_temp_c {
            s.insert("cpu_temp_c".into(), json!(temp.round()));
        }
        if let Some(up) = &system.up_since {
            s.insert("up_since".into(), json!(cap(up, 40)));
        }
        out["system"] = Value::Object(s);
    }
    // Judged against the whole team: firmware is behind the newest of its line in the team.
    if let Some(f) = findings(snap).iter().find(|f| f.device.id == d.id) {
        out["attention"] = json!({
            "urgency": urgency_word(f.urgency),
            "why": cap(&f.phrase(snap.now, lang), TEXT_CHARS),
        });
    }
    out
}

// ---- helpers -------------------------------------------------------------------------------

/// Warnings as Epiphan states them (ID, label, message, what their data names), capped.
fn warning_list(list: &[fleet::Warning]) -> Vec<fleet::Warning> {
    list.iter()
        .take(ITEMS_PER_ROOM)
        .map(|w| fleet::Warning {
            id: cap(&w.id, 40),
            label: cap(&w.label, NAME_CHARS),
            message: cap(&w.message, TEXT_CHARS),
            source: w.source.as_deref().map(|t| cap(t, NAME_CHARS)),
            channel: w.channel.as_deref().map(|t| cap(t, 8)),
            channel_name: w.channel_name.as_deref().map(|t| cap(t, NAME_CHARS)),
            used_percent: w.used_percent,
        })
        .collect()
}

/// `text` cut to `max` characters, with `…` when cut.
pub fn cap(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Names in a person's order: letters case-blind, runs of digits by value ("Room 2" before
/// "Room 10").
pub fn natural(a: &str, b: &str) -> Ordering {
    let (mut x, mut y) = (a.chars().peekable(), b.chars().peekable());
    loop {
        match (x.peek().copied(), y.peek().copied()) {
            (None, None) => return a.cmp(b),
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(c), Some(d)) if c.is_ascii_digit() && d.is_ascii_digit() => {
                let take = |it: &mut std::iter::Peekable<std::str::Chars<'_>>| {
                    let mut digits = String::new();
                    while let Some(c) = it.peek().copied().filter(char::is_ascii_digit) {
                        digits.push(c);
                        it.next();
                    }
                    digits
                };
                let (m, n) = (take(&mut x), take(&mut y));
                let (m_trim, n_trim) = (m.trim_start_matches('0'), n.trim_start_matches('0'));
                let order = m_trim
                    .len()
                    .cmp(&n_trim.len())
                    .then_with(|| m_trim.cmp(n_trim));
                if order != Ordering::Equal {
                    return order;
                }
            }
            (Some(c), Some(d)) => {
                let order = c.to_lowercase().cmp(d.to_lowercase());
                if order != Ordering::Equal {
                    return order;
                }
                x.next();
                y.next();
            }
        }
    }
}
