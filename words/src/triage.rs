//! What needs attention, and how urgently: the judgement behind "what needs attention?",
//! whichever answerer words it.
//!
//! The rules, per device:
//! * offline: fix first when its event is on or starts within [`SOON_MINUTES`](crate::time::SOON_MINUTES), else soon;
//! * a storage warning: fix first (it loses recordings whenever it happens);
//! * a signal warning: fix first when the event is soon, else soon; any other warning: soon;
//! * online, an event on now and nothing recording: fix first;
//! * firmware behind the newest of its line: when convenient.
//!
//! A device is listed once, under its most urgent problem, and when that is urgent because of
//! an event, the event is named after what endangers it.

use fleetwatch_protocol::fleet::{Device, Event};
use jiff::Timestamp;

use crate::firmware::{Newest, firmware_line};
use crate::lang::Lang;
use crate::shown::shown;
use crate::state;
use crate::time::{event_text, is_on, not_ended, starts_soon};
use crate::warnings::{self, Located};

/// Triage groups, most urgent first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Urgency {
    /// Fix first.
    First,
    /// Fix soon.
    Soon,
    /// When convenient.
    Convenient,
}

impl Urgency {
    /// The group's heading, without the colon.
    pub fn heading(self, lang: Lang) -> &'static str {
        match self {
            Urgency::First => lang.pick("Fix first", "Arreglar primero"),
            Urgency::Soon => lang.pick("Fix soon", "Arreglar pronto"),
            Urgency::Convenient => lang.pick("When convenient", "Cuando convenga"),
        }
    }
}

/// One thing wrong with a device.
#[derive(Debug, Clone)]
pub enum Problem<'a> {
    /// The device is offline.
    Offline,
    /// A warning it or one of its channels reports.
    Warning(Located<'a>),
    /// An event is on and nothing records it.
    NotRecording,
    /// Its firmware is behind `newest`, the newest of its line.
    Firmware {
        /// The newest version of the device's line.
        newest: String,
    },
    /// The event an urgent problem endangers.
    Event(&'a Event),
}

impl Problem<'_> {
    /// The problem in words, as a list item's part: "offline", "channel 1: …", "firmware 4.23.1
    /// (newest Pearl: 4.24.6)", "event “Hearing” in 1 h (21:00 UTC)".
    pub fn phrase(&self, device: &Device, now: Timestamp, lang: Lang) -> String {
        match self {
            Problem::Offline => state::offline(lang).to_owned(),
            Problem::Warning(located) => located.phrase(lang),
            Problem::NotRecording => lang.pick("not recording", "no está grabando").to_owned(),
            Problem::Firmware { newest } => {
                let line = shown(&firmware_line(&device.model));
                let (fw, newest) = (shown(&device.firmware), shown(newest));
                match lang {
                    Lang::En => format!("firmware {fw} (newest {line}: {newest})"),
                    Lang::Es => format!("firmware {fw} (más reciente {line}: {newest})"),
                }
            }
            Problem::Event(e) => match lang {
                Lang::En => format!("event {}", event_text(e, now, lang)),
                Lang::Es => format!("evento {}", event_text(e, now, lang)),
            },
        }
    }
}

/// A device that needs attention.
#[derive(Debug, Clone)]
pub struct Finding<'a> {
    /// The device.
    pub device: &'a Device,
    /// Its most urgent problem's group.
    pub urgency: Urgency,
    /// Its problems, most urgent first.
    pub problems: Vec<Problem<'a>>,
}

impl Finding<'_> {
    /// The problems in words, joined by "; ".
    pub fn phrase(&self, now: Timestamp, lang: Lang) -> String {
        let parts: Vec<String> = self
            .problems
            .iter()
            .map(|p| p.phrase(self.device, now, lang))
            .collect();
        parts.join("; ")
    }
}

/// Every device of `devices` that needs attention, in the fleet's order. `event_for` gives a
/// device's current or next event by ID.
pub fn attention<'a>(
    devices: &'a [Device],
    event_for: impl Fn(&str) -> Option<&'a Event>,
    now: Timestamp,
) -> Vec<Finding<'a>> {
    let newest = Newest::of(devices);
    let mut out = Vec::new();
    for d in devices {
        let event = event_for(&d.id).filter(|e| not_ended(e, now));
        let soon = event.is_some_and(|e| starts_soon(e, now));
        let mut problems: Vec<(Urgency, Problem<'a>)> = Vec::new();
        if !d.online {
            let urgency = if soon { Urgency::First } else { Urgency::Soon };
            problems.push((urgency, Problem::Offline));
        } else if event.is_some_and(|e| is_on(e, now)) && !d.recording() {
            problems.push((Urgency::First, Problem::NotRecording));
        }
        for located in warnings::of_device(d) {
            let id = &located.warning.id;
            let urgency = if warnings::is_storage(id) || (warnings::is_signal(id) && soon) {
                Urgency::First
            } else {
                Urgency::Soon
            };
            problems.push((urgency, Problem::Warning(located)));
        }
        if let Some(v) = newest.behind(d) {
            let newest = v.to_owned();
            problems.push((Urgency::Convenient, Problem::Firmware { newest }));
        }
        let Some(urgency) = problems.iter().map(|(u, _)| *u).min() else {
            continue;
        };
        if let Some(e) = event.filter(|_| soon && urgency == Urgency::First) {
            // Say why it is urgent: the event it would spoil.
            problems.push((urgency, Problem::Event(e)));
        }
        // Stable: the event note follows what endangers it.
        problems.sort_by_key(|(u, _)| *u);
        out.push(Finding {
            device: d,
            urgency,
            problems: problems.into_iter().map(|(_, p)| p).collect(),
        });
    }
    out
}
