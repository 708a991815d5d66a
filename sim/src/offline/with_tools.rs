//! The stand-in over the fleet tools, as a model uses them when the assistant offers them and
//! not the team-wide device list: counts from `fleet_overview`, one page of rooms from
//! `fleet_search`, one room in full from `fleet_room`. Whatever the team's size, a question
//! costs the same few kilobytes.
//!
//! The sentences and the change rules are the ones the stand-in uses over the device list: a
//! room from `fleet_room` is read back into the fleet model and handed to them.

use std::collections::BTreeMap;

use fleetwatch_protocol::fleet::{Channel, Device, Event, Publisher, Warning};
use fleetwatch_words::lang::Lang;
use fleetwatch_words::shown::{quoted, quoted_label, shown};
use fleetwatch_words::state;
use fleetwatch_words::time::event_clause;
use jiff::Timestamp;
use serde_json::{Value, json};

use super::{
    Conversation, Fleet, Intent, STREAMS, Step, change, failed_text, help, ready, with_note,
};

/// The counts of the whole team.
pub(super) const OVERVIEW: &str = "fleet_overview";
/// One page of the rooms in a state.
pub(super) const SEARCH: &str = "fleet_search";
/// One room in full.
pub(super) const ROOM: &str = "fleet_room";

/// Longest `room` argument the tool takes.
const ROOM_ARGUMENT_CHARS: usize = 200;

/// Whether to answer through the fleet tools: they are offered and the team-wide list is not.
pub(super) fn offered(conv: &Conversation) -> bool {
    [OVERVIEW, SEARCH, ROOM]
        .iter()
        .all(|t| conv.offered.contains(*t))
        && !conv.offered.contains(super::DEVICES)
}

fn last<'a>(conv: &'a Conversation, tool: &str) -> Option<&'a Value> {
    conv.reads.get(tool).and_then(|values| values.last())
}

/// The next step of a question, over the fleet tools.
pub(super) fn plan(conv: &Conversation, intent: Intent, now: Timestamp, lang: Lang) -> Step {
    for tool in [OVERVIEW, SEARCH, ROOM] {
        if let Some(why) = conv.failed.get(tool) {
            return Step::Text(with_note(lang, &failed_text(tool, why, lang)));
        }
    }
    if intent.names_a_room() {
        let Some(found) = last(conv, ROOM) else {
            // The question itself names the room; the tool finds it by its words.
            let asked: String = conv.question.chars().take(ROOM_ARGUMENT_CHARS).collect();
            return Step::Read(vec![(ROOM, json!({"room": asked}))]);
        };
        if intent == Intent::StartStream
            && conv.offered.contains(STREAMS)
            && !conv.has(STREAMS)
            && found.get("room").is_some()
        {
            return Step::Read(vec![(STREAMS, json!({}))]);
        }
        return one_room(conv, intent, found, now, lang);
    }
    let (state, sort) = match intent {
        Intent::Offline => ("offline", "name"),
        Intent::Recording => ("recording", "name"),
        Intent::Attention => ("needs_attention", "urgency"),
        Intent::Upcoming => ("scheduled", "next_event"),
        Intent::Firmware => ("outdated_firmware", "name"),
        _ => return Step::Text(with_note(lang, &help(lang))),
    };
    let (Some(overview), Some(page)) = (last(conv, OVERVIEW), last(conv, SEARCH)) else {
        return Step::Read(vec![
            (OVERVIEW, json!({})),
            (SEARCH, json!({"state": state, "sort": sort})),
        ]);
    };
    let mut body = match intent {
        Intent::Offline => offline(overview, page, lang),
        Intent::Recording => recording(page, lang),
        Intent::Attention => attention(overview, page, lang),
        Intent::Upcoming => upcoming(page, now, lang),
        _ => firmware(overview, page, lang),
    };
    if let Some(more) = more(page, lang) {
        body.push('\n');
        body.push_str(&more);
    }
    for tool in overview["not_read"].as_array().into_iter().flatten() {
        body.push('\n');
        body.push_str(&match lang {
            Lang::En => format!(
                "(Not checked: {}.)",
                shown(tool.as_str().unwrap_or_default())
            ),
            Lang::Es => format!(
                "(Sin comprobar: {}.)",
                shown(tool.as_str().unwrap_or_default())
            ),
        });
    }
    Step::Text(with_note(lang, &body))
}

fn count(value: &Value) -> u64 {
    value.as_u64().unwrap_or(0)
}

fn rooms(page: &Value) -> &[Value] {
    page["rooms"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// "… and 3,527 more", when the page is not the last.
fn more(page: &Value, lang: Lang) -> Option<String> {
    page["next_cursor"].as_u64()?;
    let rest = count(&page["matched"]).saturating_sub(count(&page["from"]) + count(&page["shown"]));
    Some(match lang {
        Lang::En => format!("… and {rest} more (ask me for the next page)."),
        Lang::Es => format!("… y {rest} más (pídeme la página siguiente)."),
    })
}

/// A room of a page as the fleet model, with what the page says of it.
fn room_of(room: &Value) -> Device {
    let text = |key: &str| room[key].as_str().unwrap_or_default().to_owned();
    let channels = room["recording_channels"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|number| Channel {
            number: number.to_owned(),
            name: String::new(),
            recording: true,
            doubtful: false,
            publishers: Vec::new(),
            warnings: Vec::new(),
        })
        .collect();
    Device {
        id: text("id"),
        name: text("name"),
        model: String::new(),
        group: String::new(),
        firmware: text("firmware"),
        online: room["online"].as_bool().unwrap_or(false),
        state_time: room["offline_since"].as_str().map(str::to_owned),
        warnings: Vec::new(),
        channels,
    }
}

fn event_of(value: &Value) -> Option<Event> {
    let time = |key: &str| {
        value[key]
            .as_str()
            .and_then(|t| t.parse::<Timestamp>().ok())
    };
    Some(Event {
        id: value["id"].as_str().unwrap_or_default().to_owned(),
        title: value["title"].as_str()?.to_owned(),
        start: time("start")?,
        end: time("end"),
        confirmed: None,
    })
}

fn offline(overview: &Value, page: &Value, lang: Lang) -> String {
    let total = count(&overview["counts"]["rooms"]);
    let down = count(&page["matched"]);
    if down == 0 {
        return match lang {
            Lang::En => format!("All {total} rooms are online."),
            Lang::Es => format!("Las {total} salas están conectadas."),
        };
    }
    let lines: Vec<String> = rooms(page)
        .iter()
        .map(|r| {
            let d = room_of(r);
            format!(
                "- {}, {}",
                quoted_label(&d, lang),
                state::offline_since(&d, lang)
            )
        })
        .collect();
    let head = match lang {
        Lang::En => format!("{down} of {total} rooms are offline:"),
        Lang::Es => format!("{down} de {total} salas están desconectadas:"),
    };
    format!("{head}\n{}", lines.join("\n"))
}

fn recording(page: &Value, lang: Lang) -> String {
    let n = count(&page["matched"]);
    if n == 0 {
        return lang
            .pick(
                "No room is recording right now.",
                "Ninguna sala está grabando ahora.",
            )
            .to_owned();
    }
    let lines: Vec<String> = rooms(page)
        .iter()
        .map(|r| {
            let d = room_of(r);
            format!(
                "- {} — {} {}",
                quoted_label(&d, lang),
                state::channel(lang),
                state::recording_channels(&d).join(", ")
            )
        })
        .collect();
    let head = match lang {
        Lang::En => format!("{n} room(s) recording now:"),
        Lang::Es => format!("{n} sala(s) grabando ahora:"),
    };
    format!("{head}\n{}", lines.join("\n"))
}

fn attention(overview: &Value, page: &Value, lang: Lang) -> String {
    if count(&page["matched"]) == 0 {
        let total = count(&overview["counts"]["rooms"]);
        return match lang {
            Lang::En => format!("Nothing needs attention right now across {total} rooms."),
            Lang::Es => format!("Nada necesita atención ahora mismo en {total} salas."),
        };
    }
    let groups = [
        (
            "fix first",
            "fix_first",
            fleetwatch_words::triage::Urgency::First,
        ),
        (
            "fix soon",
            "fix_soon",
            fleetwatch_words::triage::Urgency::Soon,
        ),
        (
            "when convenient",
            "when_convenient",
            fleetwatch_words::triage::Urgency::Convenient,
        ),
    ];
    let mut out = String::new();
    for (word, key, urgency) in groups {
        let items: Vec<String> = rooms(page)
            .iter()
            .filter(|r| r["urgency"] == word)
            .map(|r| {
                let d = room_of(r);
                let why = shown(r["why"].as_str().unwrap_or_default());
                format!("- {}: {why}\n", quoted_label(&d, lang))
            })
            .collect();
        let in_all = count(&overview["attention"][key]);
        if in_all > 0 {
            out.push_str(urgency.heading(lang));
            if in_all > items.len() as u64 {
                out.push_str(&format!(" ({in_all})"));
            }
            out.push_str(":\n");
            out.push_str(&items.concat());
        }
    }
    out
}

fn upcoming(page: &Value, now: Timestamp, lang: Lang) -> String {
    if count(&page["matched"]) == 0 {
        return lang
            .pick(
                "Nothing is on now or scheduled in the next 24 hours.",
                "No hay nada en curso ni programado en las próximas 24 horas.",
            )
            .to_owned();
    }
    let lines: Vec<String> = rooms(page)
        .iter()
        .filter_map(|r| {
            let d = room_of(r);
            let e = event_of(&r["event"])?;
            let offline = if d.online {
                ""
            } else {
                lang.pick(" — the room is OFFLINE", " — la sala está DESCONECTADA")
            };
            Some(format!(
                "- {}: {}{offline}",
                quoted_label(&d, lang),
                event_clause(&e, now, lang)
            ))
        })
        .collect();
    let head = lang.pick(
        "On now and coming up (next 24 h):",
        "En curso y próximos (24 h):",
    );
    format!("{head}\n{}", lines.join("\n"))
}

fn firmware(overview: &Value, page: &Value, lang: Lang) -> String {
    if count(&page["matched"]) == 0 {
        let total = count(&overview["counts"]["rooms"]);
        return match lang {
            Lang::En => {
                format!("Every room runs the newest firmware seen in its line ({total} rooms).")
            }
            Lang::Es => format!(
                "Todas las salas tienen el firmware más reciente de su línea ({total} salas)."
            ),
        };
    }
    let lines: Vec<String> = rooms(page)
        .iter()
        .map(|r| {
            let d = room_of(r);
            let newest = shown(
                r["newest_firmware_of_its_line"]
                    .as_str()
                    .unwrap_or_default(),
            );
            match lang {
                Lang::En => format!(
                    "- {}: {} (newest seen: {newest})",
                    quoted_label(&d, lang),
                    shown(&d.firmware)
                ),
                Lang::Es => format!(
                    "- {}: {} (el más reciente visto: {newest})",
                    quoted_label(&d, lang),
                    shown(&d.firmware)
                ),
            }
        })
        .collect();
    let head = lang.pick(
        "Firmware behind the rest of the fleet:",
        "Firmware desactualizado respecto al resto:",
    );
    format!("{head}\n{}", lines.join("\n"))
}

/// A room from `fleet_room`, read back into the fleet model.
fn device_of(room: &Value) -> Option<Device> {
    let text = |v: &Value, key: &str| v[key].as_str().unwrap_or_default().to_owned();
    let warnings = |v: &Value| -> Vec<Warning> {
        serde_json::from_value(v["warnings"].clone()).unwrap_or_default()
    };
    // A room that can be changed, from the executor's list: named, its state not read here.
    let changeable = room["can_be_changed"] == true && room.get("online").is_none();
    let channels = room["channels"]
        .as_array()?
        .iter()
        .map(|c| Channel {
            number: text(c, "channel"),
            name: text(c, "name"),
            recording: c["recording"] == "yes",
            doubtful: c["recording"] == "unclear",
            publishers: c["streams"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|p| Publisher {
                    kind: text(p, "kind"),
                    active: p["active"].as_bool().unwrap_or(false),
                    stream_id: p["stream_id"].as_str().map(str::to_owned),
                })
                .collect(),
            warnings: warnings(c),
        })
        .collect();
    Some(Device {
        id: room["id"].as_str()?.to_owned(),
        name: text(room, "name"),
        model: text(room, "model"),
        group: text(room, "group"),
        firmware: text(room, "firmware"),
        online: room["online"].as_bool().unwrap_or(changeable),
        state_time: room["state_since"].as_str().map(str::to_owned),
        warnings: warnings(room),
        channels,
    })
}

fn one_room(
    conv: &Conversation,
    intent: Intent,
    found: &Value,
    now: Timestamp,
    lang: Lang,
) -> Step {
    let Some(d) = found.get("room").and_then(device_of) else {
        return Step::Text(with_note(lang, &not_one(found, lang)));
    };
    let room = &found["room"];
    let event = event_of(&room["event"]);
    let events_read = event.is_some() || room["event"].is_string();
    let endpoints = conv.reads.get(STREAMS).map(|values| {
        values
            .iter()
            .filter_map(|v| fleetwatch_protocol::fleet::parse_stream_endpoints(v).ok())
            .flatten()
            .collect()
    });
    let fleet = Fleet {
        events: BTreeMap::from([(d.id.clone(), event)]),
        events_read,
        endpoints,
        streams_failed: conv.failed.get(STREAMS).cloned(),
        notes: Vec::new(),
        newest: room["newest_firmware_of_its_line"]
            .as_str()
            .map(str::to_owned),
        devices: vec![d],
    };
    let Some(d) = fleet.devices.first() else {
        return Step::Text(with_note(lang, &help(lang)));
    };
    match intent {
        Intent::Ready => Step::Text(with_note(lang, &ready(d, &fleet, now, lang))),
        _ => match change(intent, d, &fleet, now, lang) {
            Step::Text(body) => Step::Text(with_note(lang, &body)),
            Step::Propose {
                tool,
                arguments,
                reason,
            } => super::propose_or_explain(conv, tool, arguments, reason, lang),
            other => other,
        },
    }
}

/// No room, or several: never a guess.
fn not_one(found: &Value, lang: Lang) -> String {
    let candidates: Vec<String> = found["candidates"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            format!(
                "{} ({})",
                quoted(c["name"].as_str().unwrap_or_default(), lang),
                shown(c["id"].as_str().unwrap_or_default())
            )
        })
        .collect();
    if candidates.is_empty() {
        return lang
            .pick(
                "No room in this team matches that; nothing has been proposed.",
                "Ninguna sala de este equipo coincide con eso; no se ha propuesto nada.",
            )
            .to_owned();
    }
    match lang {
        Lang::En => format!(
            "I am not sure which room you mean; which one do you mean: {}? Please name it with \
             its number. Nothing has been proposed.",
            candidates.join(", ")
        ),
        Lang::Es => format!(
            "No sé con certeza qué sala quieres decir; ¿cuál de estas: {}? Dime su nombre con \
             el número. No se ha propuesto nada.",
            candidates.join(", ")
        ),
    }
}
