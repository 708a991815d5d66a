//! Answers without a model: a handful of fixed questions about the fleet, recognised by
//! keywords, answered in the question's language (English or Spanish).
//!
//! This path is read-only by construction: it gets a [`Snapshot`] and returns text, and has no
//! handle on proposals, the executor or the network. That is what makes it safe as the
//! fallback when there is no model key or a model call fails.
//!
//! What it says about the fleet (which room a question names, who is behind on firmware,
//! what a warning means, what needs attention first) is judged by `fleetwatch_words`, the
//! same code the demo's offline model uses; this module recognises the question and lays out
//! the answer. Names of devices, channels and events are fleet data and go through
//! `fleetwatch_words::shown`, so a name can never start a line of its own or pass itself off
//! as a heading.

use std::collections::BTreeMap;

use fleetwatch_protocol::fleet::{Device, Event};
use fleetwatch_words::firmware::Newest;
use fleetwatch_words::question::{Question as Intent, classify};
pub use fleetwatch_words::rooms::{RoomMatch, find_room};
use fleetwatch_words::shown::{label, quoted, shown};
use fleetwatch_words::time::{clock, event_text, is_on, not_ended, relative};
use fleetwatch_words::triage::Urgency;
use fleetwatch_words::{state, warnings};

use crate::fleet_tools;
use crate::lang::{self, Lang};
use crate::snapshot::Snapshot;

/// Answers `question` from `snap`, in the question's language.
pub fn answer(question: &str, snap: &Snapshot) -> String {
    let lang = lang::detect(question);
    let words = lang::words(question);
    let intent = classify(&words);
    if intent == Intent::Help {
        // A bare room name ("Room 12?") is taken as "is Room 12 ready?"; anything else that
        // names no room gets the help text.
        return match find_room(question, &snap.devices) {
            RoomMatch::One(device) => readiness(device, snap, lang),
            RoomMatch::Several(devices) => ambiguous(&devices, lang),
            RoomMatch::NotNamed | RoomMatch::None(_) => help(lang),
        };
    }
    if snap.devices.is_empty() {
        return match lang {
            Lang::En => "The team has no devices.".to_owned(),
            Lang::Es => "El equipo no tiene dispositivos.".to_owned(),
        };
    }
    match intent {
        Intent::Ready => match find_room(question, &snap.devices) {
            RoomMatch::One(device) => readiness(device, snap, lang),
            RoomMatch::Several(devices) => ambiguous(&devices, lang),
            RoomMatch::None(asked) => no_room(&asked, lang),
            RoomMatch::NotNamed => match lang {
                Lang::En => {
                    "Which room? Ask for example “is Room 12 ready for its next event?”".to_owned()
                }
                Lang::Es => "¿Qué sala? Pregunta por ejemplo «¿está lista la Sala 12 para su \
                             próximo evento?»"
                    .to_owned(),
            },
        },
        Intent::Firmware => firmware(snap, lang),
        Intent::Offline => offline(snap, lang),
        Intent::Recording => recording(snap, lang),
        Intent::Upcoming => upcoming(snap, lang),
        Intent::Attention => attention(snap, lang),
        Intent::Help => help(lang),
    }
}

/// The help text: what the keyword answerer can answer.
pub fn help(lang: Lang) -> String {
    match lang {
        Lang::En => "I can answer these (read-only; nothing is changed):\n\
                     - what needs attention? (Fix first / Fix soon / When convenient)\n\
                     - what's offline?\n\
                     - what's recording?\n\
                     - what's coming up next?\n\
                     - is <room> ready for its next event?\n\
                     - which devices have outdated firmware?"
            .to_owned(),
        Lang::Es => "Puedo responder esto (solo lectura; no se cambia nada):\n\
                     - ¿qué necesita atención? (Arreglar primero / Arreglar pronto / Cuando convenga)\n\
                     - ¿qué salas están desconectadas?\n\
                     - ¿qué está grabando?\n\
                     - ¿cuáles son los próximos eventos?\n\
                     - ¿está lista <sala> para su próximo evento?\n\
                     - ¿qué equipos tienen firmware desactualizado?"
            .to_owned(),
    }
}

// ---------------------------------------------------------------------------------------------
// Speaking of rooms (which question was asked is `fleetwatch_words::question`'s)

fn no_room(asked: &str, lang: Lang) -> String {
    match lang {
        Lang::En => format!("No room matches “{asked}”."),
        Lang::Es => format!("Ninguna sala coincide con «{asked}»."),
    }
}

fn ambiguous(devices: &[&Device], lang: Lang) -> String {
    let list: Vec<String> = devices.iter().map(|d| label(d)).collect();
    match lang {
        Lang::En => format!("Which room do you mean: {}?", list.join(", ")),
        Lang::Es => format!("¿Qué sala quieres decir: {}?", list.join(", ")),
    }
}

/// The event of a device that has not ended yet.
fn live_or_next<'a>(snap: &'a Snapshot, id: &str) -> Option<&'a Event> {
    snap.event_for(id).filter(|e| not_ended(e, snap.now))
}

// ---------------------------------------------------------------------------------------------
// The answers

fn readiness(device: &Device, snap: &Snapshot, lang: Lang) -> String {
    let all = warnings::of_device(device);
    let storage: Vec<String> = all
        .iter()
        .filter(|w| warnings::is_storage(&w.warning.id))
        .map(|w| w.phrase(lang))
        .collect();
    let signal: Vec<String> = all
        .iter()
        .filter(|w| warnings::is_signal(&w.warning.id))
        .map(|w| w.phrase(lang))
        .collect();
    // Any other warning is said too (in Epiphan's words when it has no phrase of its own),
    // without changing the verdict: what it means for a recording is not known.
    let other: Vec<String> = all
        .iter()
        .filter(|w| !warnings::is_storage(&w.warning.id) && !warnings::is_signal(&w.warning.id))
        .map(|w| w.phrase(lang))
        .collect();
    let ready = device.online && storage.is_empty() && signal.is_empty();
    let event = live_or_next(snap, &device.id);
    let recording = state::recording_channels(device);
    let since = device.state_time.as_deref().map(shown);
    let ok_or = |items: &[String]| {
        if items.is_empty() {
            "OK".to_owned()
        } else {
            items.join("; ")
        }
    };
    let (verdict, online, storage_word, signal_word, recording_word, next_word) = match lang {
        Lang::En => (
            if ready { "ready." } else { "NOT ready." },
            match (device.online, since) {
                (true, _) => "yes".to_owned(),
                (false, Some(t)) => format!("no (offline since {t})"),
                (false, None) => "no".to_owned(),
            },
            "Storage",
            "Signal",
            "Recording now: channel",
            "Next event",
        ),
        Lang::Es => (
            if ready { "lista." } else { "NO está lista." },
            match (device.online, since) {
                (true, _) => "sí".to_owned(),
                (false, Some(t)) => format!("no (desconectada desde {t})"),
                (false, None) => "no".to_owned(),
            },
            "Almacenamiento",
            "Señal",
            "Grabando ahora: canal",
            "Próximo evento",
        ),
    };
    let mut out = vec![
        format!("{}: {verdict}", label(device)),
        format!("- {}: {online}", lang.pick("Online", "En línea")),
        format!("- {storage_word}: {}", ok_or(&storage)),
        format!("- {signal_word}: {}", ok_or(&signal)),
    ];
    if !other.is_empty() {
        out.push(format!(
            "- {}: {}",
            lang.pick("Other warnings", "Otros avisos"),
            other.join("; ")
        ));
    }
    if !recording.is_empty() {
        out.push(format!("- {recording_word} {}", recording.join(", ")));
    }
    out.push(match event {
        Some(e) => format!("- {next_word}: {}", event_text(e, snap.now, lang)),
        None => format!(
            "- {next_word}: {}",
            lang.pick("none scheduled", "ninguno programado")
        ),
    });
    out.join("\n")
}

fn offline(snap: &Snapshot, lang: Lang) -> String {
    // The counts every answerer states (the model's fleet tools too).
    let counts = fleet_tools::counts(snap);
    let total = counts.rooms;
    let down: Vec<&Device> = snap.devices.iter().filter(|d| !d.online).collect();
    debug_assert_eq!(down.len(), counts.offline);
    if counts.offline == 0 {
        return match lang {
            Lang::En => format!("Nothing is offline: all {total} devices are online."),
            Lang::Es => {
                format!("Nada está desconectado: los {total} equipos están en línea.")
            }
        };
    }
    let mut out = vec![match lang {
        Lang::En => format!("Offline ({} of {total}):", counts.offline),
        Lang::Es => format!("Desconectadas ({} de {total}):", counts.offline),
    }];
    for d in down {
        let mut line = format!("- {}", label(d));
        if d.state_time.is_some() {
            line.push_str(", ");
            line.push_str(&state::offline_since(d, lang));
        }
        if let Some(e) = live_or_next(snap, &d.id) {
            line.push_str(&match lang {
                Lang::En => format!("; event {}", event_text(e, snap.now, lang)),
                Lang::Es => format!("; evento {}", event_text(e, snap.now, lang)),
            });
        }
        out.push(line);
    }
    out.join("\n")
}

fn recording(snap: &Snapshot, lang: Lang) -> String {
    let rec: Vec<&Device> = snap.devices.iter().filter(|d| d.recording()).collect();
    if rec.is_empty() {
        return lang
            .pick("Nothing is recording.", "Nada está grabando.")
            .to_owned();
    }
    let recording = fleet_tools::counts(snap).recording;
    let mut out = vec![match lang {
        Lang::En => format!("Recording now ({recording}):"),
        Lang::Es => format!("Grabando ahora ({recording}):"),
    }];
    for d in rec {
        let channels: Vec<String> = d
            .channels
            .iter()
            .filter(|c| c.recording)
            .map(|c| {
                let word = state::channel(lang);
                if c.name.trim().is_empty() {
                    format!("{word} {}", shown(&c.number))
                } else {
                    format!("{word} {} {}", shown(&c.number), quoted(&c.name, lang))
                }
            })
            .collect();
        let mut line = format!("- {}: {}", label(d), channels.join(", "));
        if !d.online {
            // Recorder status is only read for online devices; this flag is the last known.
            line.push_str(lang.pick(
                " (offline: last known state)",
                " (desconectada: último estado conocido)",
            ));
        }
        out.push(line);
    }
    out.join("\n")
}

fn upcoming(snap: &Snapshot, lang: Lang) -> String {
    let mut events: Vec<(&Event, Option<&Device>, &str)> = snap
        .events
        .iter()
        .filter_map(|(id, e)| e.as_ref().map(|e| (e, snap.device(id), id.as_str())))
        .filter(|(e, _, _)| not_ended(e, snap.now))
        .collect();
    events.sort_by(|a, b| {
        a.0.start.cmp(&b.0.start).then_with(|| {
            let name = |x: &(&Event, Option<&Device>, &str)| {
                x.1.map(|d| d.name.clone()).unwrap_or_default()
            };
            name(a).cmp(&name(b)).then_with(|| a.2.cmp(b.2))
        })
    });
    if events.is_empty() {
        return lang
            .pick("No events are scheduled.", "No hay eventos programados.")
            .to_owned();
    }
    let mut out = vec![match lang {
        Lang::En => format!("Coming up ({}):", events.len()),
        Lang::Es => format!("Próximos eventos ({}):", events.len()),
    }];
    for (e, device, id) in events {
        let room = match device {
            Some(d) => label(d),
            None => shown(id),
        };
        let when = if is_on(e, snap.now) {
            let started = relative(e.start, snap.now, lang);
            match (lang, e.end) {
                (Lang::En, Some(end)) => {
                    format!("on now (started {started}, ends {})", clock(end, snap.now))
                }
                (Lang::En, None) => format!("on now (started {started})"),
                (Lang::Es, Some(end)) => {
                    format!(
                        "en curso (empezó {started}, termina {})",
                        clock(end, snap.now)
                    )
                }
                (Lang::Es, None) => format!("en curso (empezó {started})"),
            }
        } else {
            format!(
                "{} ({})",
                relative(e.start, snap.now, lang),
                clock(e.start, snap.now)
            )
        };
        let mut line = format!("- {when}: {} — {room}", quoted(&e.title, lang));
        if device.is_some_and(|d| !d.online) {
            line.push_str(", ");
            line.push_str(state::offline(lang));
        }
        out.push(line);
    }
    out.join("\n")
}

fn firmware(snap: &Snapshot, lang: Lang) -> String {
    let newest = Newest::of(&snap.devices);
    let behind: Vec<(&Device, &str)> = snap
        .devices
        .iter()
        .filter_map(|d| newest.behind(d).map(|v| (d, v)))
        .collect();
    if behind.is_empty() {
        let lines: Vec<String> = newest
            .lines()
            .map(|(line, version)| format!("{} {}", shown(line), shown(version)))
            .collect();
        return match lang {
            Lang::En => format!(
                "Every device is on the newest firmware seen for its product line ({}).",
                lines.join(", ")
            ),
            Lang::Es => format!(
                "Todos los equipos tienen el firmware más reciente visto para su línea de producto ({}).",
                lines.join(", ")
            ),
        };
    }
    let mut out = vec![match lang {
        Lang::En => format!(
            "Behind the newest firmware of their product line ({}):",
            behind.len()
        ),
        Lang::Es => format!(
            "Con firmware anterior al más reciente de su línea de producto ({}):",
            behind.len()
        ),
    }];
    for (d, version) in behind {
        let (model, fw) = (shown(&d.model), shown(&d.firmware));
        let line = shown(&fleetwatch_words::firmware::firmware_line(&d.model));
        let version = shown(version);
        out.push(match lang {
            Lang::En => format!(
                "- {}: {model} on {fw}, newest {line} is {version}",
                label(d)
            ),
            Lang::Es => format!(
                "- {}: {model} con {fw}, la más reciente de {line} es {version}",
                label(d)
            ),
        });
    }
    out.join("\n")
}

fn attention(snap: &Snapshot, lang: Lang) -> String {
    // The findings the model's fleet tools rank by, most urgent group first.
    let findings = fleet_tools::findings(snap);
    if findings.is_empty() {
        let total = snap.devices.len();
        return match lang {
            Lang::En => format!(
                "Nothing needs attention: all {total} devices are online, without warnings, on \
                 the newest firmware of their product line."
            ),
            Lang::Es => format!(
                "Nada necesita atención: los {total} equipos están en línea, sin avisos y con el \
                 firmware más reciente de su línea de producto."
            ),
        };
    }
    let mut groups: BTreeMap<Urgency, Vec<String>> = BTreeMap::new();
    for f in &findings {
        groups.entry(f.urgency).or_default().push(format!(
            "- {}: {}",
            label(f.device),
            f.phrase(snap.now, lang)
        ));
    }
    let mut out = Vec::new();
    for (urgency, lines) in groups {
        out.push(format!("{}:", urgency.heading(lang)));
        out.extend(lines);
    }
    out.join("\n")
}
