//! Freeze windows (`freeze:` in `executor.yaml`): times when the team says nothing of a kind
//! may change — finals week, a council's budget session. Inside one the executor refuses every
//! change it holds (`frozen`, with the reason and the window's end), whatever approved it.
//!
//! A window is either once (`from` and `until` in RFC 3339 with an offset) or weekly (`every`
//! listing days, `from` and `until` as local times of day in `zone`, a named time zone read
//! from the system's zone files, `/usr/share/zoneinfo`; jiff's `tzdb-zoneinfo` feature, which
//! brings no crate). Each names what it holds — `all`, `disruptive`, or a list of tool names —
//! and a reason in words. A window that cannot be read stops the executor at start.

use fleetwatch_protocol::wire::FreezeReport;
use jiff::civil::{Time, Weekday};
use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan as _};
use serde::Deserialize;

/// One `freeze:` entry as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileWindow {
    from: String,
    until: String,
    every: Option<Vec<String>>,
    zone: Option<String>,
    tools: FileTools,
    reason: String,
}

/// `tools:` as written: `all`, `disruptive`, or a list of tool names.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum FileTools {
    Word(String),
    List(Vec<String>),
}

/// What a window holds.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Holds {
    All,
    Disruptive,
    Tools(Vec<String>),
}

/// When a window is.
#[derive(Debug, Clone, PartialEq)]
enum When {
    Once {
        start: Timestamp,
        end: Timestamp,
    },
    Weekly {
        days: Vec<Weekday>,
        from: Time,
        until: Time,
        zone: TimeZone,
    },
}

/// One freeze window, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Window {
    when: When,
    holds: Holds,
    reason: String,
}

/// Checks every window; the error names the window (its place and reason) and what is wrong.
pub fn parse(file: Vec<FileWindow>) -> Result<Vec<Window>, String> {
    file.into_iter()
        .enumerate()
        .map(|(i, w)| {
            let name = format!("freeze window {} ({:?})", i + 1, w.reason);
            window(w).map_err(|why| format!("{name}: {why}"))
        })
        .collect()
}

fn window(w: FileWindow) -> Result<Window, String> {
    let reason = w.reason.trim().to_owned();
    if reason.is_empty()
        || reason.chars().count() > 120
        || reason.chars().any(fleetwatch_protocol::shown::is_hidden)
    {
        return Err("`reason` must be 1 to 120 readable characters".into());
    }
    let holds = match w.tools {
        FileTools::Word(word) if word == "all" => Holds::All,
        FileTools::Word(word) if word == "disruptive" => Holds::Disruptive,
        FileTools::Word(word) => {
            return Err(format!(
                "`tools: {word}` is not `all`, `disruptive` or a list of tool names"
            ));
        }
        FileTools::List(list) if list.is_empty() => return Err("`tools` is an empty list".into()),
        FileTools::List(list) => Holds::Tools(list),
    };
    let when = match (w.every, w.zone) {
        (None, None) => {
            let at = |field: &str, text: &str| {
                text.parse::<Timestamp>().map_err(|_| {
                    format!("`{field}: {text}` is not RFC 3339 with an offset (2026-12-14T08:00:00-05:00)")
                })
            };
            let (start, end) = (at("from", &w.from)?, at("until", &w.until)?);
            if end <= start {
                return Err("`until` is not after `from`".into());
            }
            When::Once { start, end }
        }
        (Some(days), Some(zone)) => {
            let zone = TimeZone::get(&zone).map_err(|e| {
                format!("`zone: {zone}` is not a time zone the system's zone files name ({e})")
            })?;
            let days = days
                .iter()
                .map(|d| weekday(d).ok_or_else(|| format!("`{d}` is not a day (mon … sun)")))
                .collect::<Result<Vec<_>, _>>()?;
            if days.is_empty() {
                return Err("`every` lists no day".into());
            }
            let time = |field: &str, text: &str| {
                text.parse::<Time>()
                    .map_err(|_| format!("`{field}: {text}` is not a time of day (08:00)"))
            };
            let (from, until) = (time("from", &w.from)?, time("until", &w.until)?);
            if from == until {
                return Err("`from` and `until` are the same time".into());
            }
            When::Weekly {
                days,
                from,
                until,
                zone,
            }
        }
        _ => {
            return Err(
                "a weekly window needs both `every` and `zone`; a window once, neither".into(),
            );
        }
    };
    Ok(Window {
        when,
        holds,
        reason,
    })
}

fn weekday(text: &str) -> Option<Weekday> {
    Some(match text.to_ascii_lowercase().get(..3)? {
        "mon" => Weekday::Monday,
        "tue" => Weekday::Tuesday,
        "wed" => Weekday::Wednesday,
        "thu" => Weekday::Thursday,
        "fri" => Weekday::Friday,
        "sat" => Weekday::Saturday,
        "sun" => Weekday::Sunday,
        _ => return None,
    })
}

impl Window {
    /// Whether this window holds a change of `tool` (disruptive or not).
    fn holds(&self, tool: &str, disruptive: bool) -> bool {
        match &self.holds {
            Holds::All => true,
            Holds::Disruptive => disruptive,
            Holds::Tools(tools) => tools.iter().any(|t| t == tool),
        }
    }

    /// The spans of this window from a day before `now` to eight days after, as
    /// `(start, end)`, in order.
    fn spans(&self, now: Timestamp) -> Vec<(Timestamp, Timestamp)> {
        match &self.when {
            When::Once { start, end } => vec![(*start, *end)],
            When::Weekly {
                days,
                from,
                until,
                zone,
            } => {
                let today = now.to_zoned_datetime(zone.clone()).date();
                (-1i64..=8)
                    .filter_map(|offset| {
                        let date = today.checked_add(offset.days()).ok()?;
                        if !days.contains(&date.weekday()) {
                            return None;
                        }
                        let end_date = if until > from {
                            date
                        } else {
                            date.tomorrow().ok()?
                        };
                        let start = date
                            .to_datetime(*from)
                            .to_zoned_datetime(zone.clone())
                            .ok()?;
                        let end = end_date
                            .to_datetime(*until)
                            .to_zoned_datetime(zone.clone())
                            .ok()?;
                        Some((start.timestamp(), end.timestamp()))
                    })
                    .collect()
            }
        }
    }

    /// Each span of [`Window::spans`] as reported.
    fn reports(&self, now: Timestamp) -> Vec<FreezeReport> {
        self.spans(now)
            .into_iter()
            .map(|(start, end)| FreezeReport {
                start: start.as_second(),
                end: end.as_second(),
                holds: self.what(),
                reason: self.reason.clone(),
                in_force: start <= now && now < end,
            })
            .collect()
    }

    fn what(&self) -> String {
        match &self.holds {
            Holds::All => "every change".to_owned(),
            Holds::Disruptive => "disruptive changes".to_owned(),
            Holds::Tools(tools) => tools.join(", "),
        }
    }
}

/// The window holding a change of `tool` (disruptive or not) now, if any: of several, the
/// one that ends last.
pub fn holding(
    windows: &[Window],
    tool: &str,
    disruptive: bool,
    now: Timestamp,
) -> Option<FreezeReport> {
    windows
        .iter()
        .filter(|w| w.holds(tool, disruptive))
        .flat_map(|w| w.reports(now))
        .filter(|r| r.in_force)
        .max_by_key(|r| r.end)
}

/// Every window in force now, then the next one to start, for `Status` and `doctor`.
pub fn report(windows: &[Window], now: Timestamp) -> Vec<FreezeReport> {
    let all: Vec<FreezeReport> = windows.iter().flat_map(|w| w.reports(now)).collect();
    let next = all
        .iter()
        .filter(|r| r.start > now.as_second())
        .min_by_key(|r| r.start)
        .cloned();
    all.into_iter().filter(|r| r.in_force).chain(next).collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    /// A weekly window Mondays 08:00–12:00 at UTC−5, built as parsing a named zone would.
    fn monday_mornings(holds: Holds) -> Window {
        Window {
            when: When::Weekly {
                days: vec![Weekday::Monday],
                from: "08:00".parse().unwrap(),
                until: "12:00".parse().unwrap(),
                zone: TimeZone::fixed(jiff::tz::offset(-5)),
            },
            holds,
            reason: "council budget session".into(),
        }
    }

    #[test]
    fn a_weekly_window_holds_inside_its_hours_only_and_names_the_next() {
        let windows = [monday_mornings(Holds::Disruptive)];
        // Monday 2026-12-07, 09:30 at UTC−5 is 14:30Z.
        let inside = at("2026-12-07T14:30:00Z");
        let held = holding(&windows, "batch_reboot", true, inside).unwrap();
        assert_eq!(held.end, at("2026-12-07T17:00:00Z").as_second());
        assert_eq!(held.reason, "council budget session");
        assert!(holding(&windows, "batch_recording", false, inside).is_none());
        // Its edges: held from 08:00 exactly, free from 12:00 exactly.
        assert!(holding(&windows, "x", true, at("2026-12-07T13:00:00Z")).is_some());
        assert!(holding(&windows, "x", true, at("2026-12-07T12:59:59Z")).is_none());
        assert!(holding(&windows, "x", true, at("2026-12-07T17:00:00Z")).is_none());
        // On Sunday none is in force; the next is Monday's.
        let sunday = at("2026-12-06T15:00:00Z");
        let report = report(&windows, sunday);
        assert_eq!(report.len(), 1);
        assert!(!report[0].in_force);
        assert_eq!(report[0].start, at("2026-12-07T13:00:00Z").as_second());
    }

    #[test]
    fn a_window_once_and_its_checks() {
        let file = |from: &str, until: &str, tools: &str| -> Vec<FileWindow> {
            yaml_serde::from_str(&format!(
                "- from: \"{from}\"\n  until: \"{until}\"\n  tools: {tools}\n  reason: finals week\n"
            ))
            .unwrap()
        };
        let windows = parse(file(
            "2026-12-14T00:00:00-05:00",
            "2026-12-19T00:00:00-05:00",
            "[firmware_update, batch_reboot]",
        ))
        .unwrap();
        let during = at("2026-12-15T12:00:00Z");
        assert!(holding(&windows, "firmware_update", false, during).is_some());
        assert!(holding(&windows, "batch_recording", true, during).is_none());
        for (from, until, tools, why) in [
            (
                "2026-12-14T00:00:00",
                "2026-12-19T00:00:00Z",
                "all",
                "RFC 3339",
            ),
            (
                "2026-12-19T00:00:00Z",
                "2026-12-14T00:00:00Z",
                "all",
                "not after",
            ),
            (
                "2026-12-14T00:00:00Z",
                "2026-12-19T00:00:00Z",
                "calm",
                "is not `all`",
            ),
            (
                "2026-12-14T00:00:00Z",
                "2026-12-19T00:00:00Z",
                "[]",
                "empty list",
            ),
        ] {
            let err = parse(file(from, until, tools)).unwrap_err();
            assert!(err.contains("freeze window 1 (\"finals week\")"), "{err}");
            assert!(err.contains(why), "{why}: {err}");
        }
    }
}
