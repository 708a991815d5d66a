//! Durations, clock times and events, always relative to a `now` the caller gives (the replay
//! or simulator clock in tests and demos), never to the machine's clock.

use fleetwatch_protocol::fleet::{self, Event};
use jiff::Timestamp;

use crate::lang::Lang;
use crate::shown::quoted;

/// An event counts as "soon" when it is on now or starts within this many minutes: long
/// enough to walk over and fix a room before it matters.
pub const SOON_MINUTES: i64 = 120;

/// "25 min", "2 h 5 min", "1 d 1 h".
pub fn duration(minutes: i64) -> String {
    if minutes < 60 {
        format!("{minutes} min")
    } else if minutes < 24 * 60 {
        let (h, m) = (minutes / 60, minutes % 60);
        if m == 0 {
            format!("{h} h")
        } else {
            format!("{h} h {m} min")
        }
    } else {
        let (d, h) = (minutes / (24 * 60), minutes % (24 * 60) / 60);
        if h == 0 {
            format!("{d} d")
        } else {
            format!("{d} d {h} h")
        }
    }
}

/// "in 25 min" / "10 min ago" (rounded up for the future, so "in 0 min" never appears for
/// something that has not started).
pub fn relative(t: Timestamp, now: Timestamp, lang: Lang) -> String {
    let seconds = t.as_second() - now.as_second();
    if seconds > 0 {
        let minutes = (seconds + 59) / 60;
        match lang {
            Lang::En => format!("in {}", duration(minutes)),
            Lang::Es => format!("en {}", duration(minutes)),
        }
    } else {
        let minutes = -seconds / 60;
        match lang {
            Lang::En => format!("{} ago", duration(minutes)),
            Lang::Es => format!("hace {}", duration(minutes)),
        }
    }
}

/// Wall-clock time in UTC; the date is added when it is a day or more away.
pub fn clock(t: Timestamp, now: Timestamp) -> String {
    if (t.as_second() - now.as_second()).abs() < 24 * 3600 {
        format!("{} UTC", t.strftime("%H:%M"))
    } else {
        format!("{} UTC", t.strftime("%Y-%m-%d %H:%M"))
    }
}

/// Whether an event is still on or ahead. One with no end counts as on for
/// [`fleet::OPEN_EVENT_MINUTES`] after its start, the default of the rule the disruptive window
/// uses (an executor configured otherwise says so on the card).
pub fn not_ended(e: &Event, now: Timestamp) -> bool {
    match e.end {
        Some(end) => end > now,
        None => e.start.as_second() + fleet::OPEN_EVENT_MINUTES * 60 > now.as_second(),
    }
}

/// Whether an event has started and not ended.
pub fn is_on(e: &Event, now: Timestamp) -> bool {
    e.start <= now && not_ended(e, now)
}

/// Whether an event that has not ended is on now or starts within [`SOON_MINUTES`].
pub fn starts_soon(e: &Event, now: Timestamp) -> bool {
    not_ended(e, now) && e.start.as_second() - now.as_second() <= SOON_MINUTES * 60
}

/// An event as a noun phrase, for lists: "“Lecture” in 25 min (20:33 UTC)" or "“Lecture” on
/// now (started 10 min ago)".
pub fn event_text(e: &Event, now: Timestamp, lang: Lang) -> String {
    let title = quoted(&e.title, lang);
    if is_on(e, now) {
        match lang {
            Lang::En => format!("{title} on now (started {})", relative(e.start, now, lang)),
            Lang::Es => format!("{title} en curso (empezó {})", relative(e.start, now, lang)),
        }
    } else if not_ended(e, now) {
        format!(
            "{title} {} ({})",
            relative(e.start, now, lang),
            clock(e.start, now)
        )
    } else {
        ended(&title, e, now, lang)
    }
}

/// An event as a clause, for sentences: "“Lecture” starts in 25 min (20:33 UTC)" or
/// "“Lecture” is on now (until 21:00 UTC)".
pub fn event_clause(e: &Event, now: Timestamp, lang: Lang) -> String {
    let title = quoted(&e.title, lang);
    if is_on(e, now) {
        match (e.end, lang) {
            (Some(end), Lang::En) => format!("{title} is on now (until {})", clock(end, now)),
            (Some(end), Lang::Es) => {
                format!("{title} está en curso (hasta las {})", clock(end, now))
            }
            (None, Lang::En) => format!("{title} is on now"),
            (None, Lang::Es) => format!("{title} está en curso"),
        }
    } else if not_ended(e, now) {
        let when = relative(e.start, now, lang);
        let at = clock(e.start, now);
        match lang {
            Lang::En => format!("{title} starts {when} ({at})"),
            Lang::Es => format!("{title} empieza {when} ({at})"),
        }
    } else {
        ended(&title, e, now, lang)
    }
}

fn ended(title: &str, e: &Event, now: Timestamp, lang: Lang) -> String {
    let end = e.end.unwrap_or(e.start);
    match lang {
        Lang::En => format!("{title} ended {}", relative(end, now, lang)),
        Lang::Es => format!("{title} terminó {}", relative(end, now, lang)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap_or_default()
    }

    fn event(start: &str, end: Option<&str>) -> Event {
        Event {
            id: "e1".to_owned(),
            title: "Hearing".to_owned(),
            start: at(start),
            end: end.map(at),
            confirmed: None,
        }
    }

    #[test]
    fn durations() {
        assert_eq!(duration(0), "0 min");
        assert_eq!(duration(59), "59 min");
        assert_eq!(duration(60), "1 h");
        assert_eq!(duration(125), "2 h 5 min");
        assert_eq!(duration(24 * 60 + 90), "1 d 1 h");
    }

    #[test]
    fn events_read_the_same_in_lists_and_sentences() {
        let now = at("2026-09-24T20:00:00Z");
        let soon = event("2026-09-24T20:13:00Z", Some("2026-09-24T21:00:00Z"));
        assert_eq!(
            event_text(&soon, now, Lang::En),
            "“Hearing” in 13 min (20:13 UTC)"
        );
        assert_eq!(
            event_clause(&soon, now, Lang::Es),
            "«Hearing» empieza en 13 min (20:13 UTC)"
        );
        let on = event("2026-09-24T19:50:00Z", Some("2026-09-24T20:50:00Z"));
        assert_eq!(
            event_text(&on, now, Lang::En),
            "“Hearing” on now (started 10 min ago)"
        );
        assert_eq!(
            event_clause(&on, now, Lang::En),
            "“Hearing” is on now (until 20:50 UTC)"
        );
        let past = event("2026-09-24T18:00:00Z", Some("2026-09-24T19:00:00Z"));
        assert_eq!(
            event_clause(&past, now, Lang::En),
            "“Hearing” ended 1 h ago"
        );
        let far = event("2026-09-26T09:00:00Z", None);
        assert_eq!(
            event_text(&far, now, Lang::En),
            "“Hearing” in 1 d 13 h (2026-09-26 09:00 UTC)"
        );
    }

    #[test]
    fn an_open_event_ends_with_the_disruptive_window() {
        let now = at("2026-09-24T20:00:00Z");
        assert!(is_on(&event("2026-09-24T19:30:00Z", None), now));
        // Four hours by default, as the executor's window: a hearing three hours in is on.
        assert!(is_on(&event("2026-09-24T17:00:00Z", None), now));
        assert!(!not_ended(&event("2026-09-24T16:00:00Z", None), now));
        assert!(starts_soon(&event("2026-09-24T22:00:00Z", None), now));
        assert!(!starts_soon(&event("2026-09-24T22:01:00Z", None), now));
    }
}
