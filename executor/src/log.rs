//! Log output: plain lines on standard error (the journal, under systemd) at one level.
//!
//! `FLEETWATCH_LOG` names the level: `error`, `warn`, `info` (the default), `debug`, `trace`
//! or `off`. `RUST_LOG` is read when `FLEETWATCH_LOG` is unset, for the same words. A fixed
//! level is all the executor needs; per-module filter expressions would bring a regex engine
//! into the privileged process, so anything else is reported once and `info` is used.
//!
//! The subscriber is written here (about forty lines) rather than taken from
//! tracing-subscriber, whose registry and formatter bring four crates for what the executor
//! uses: one line per event — time, level, where, the message and its fields. The executor
//! opens no spans. A control character in a logged value (a line break in an error's text)
//! is escaped, so one event is always one line.

use std::fmt::Write as _;
use std::io::Write as _;

use tracing::field::{Field, Visit};
use tracing::level_filters::LevelFilter;
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata};

const VARIABLES: [&str; 2] = ["FLEETWATCH_LOG", "RUST_LOG"];

/// The level a setting names, if it is one of the plain level words.
pub fn level(text: &str) -> Option<LevelFilter> {
    Some(match text.trim().to_ascii_lowercase().as_str() {
        "off" => LevelFilter::OFF,
        "error" => LevelFilter::ERROR,
        "warn" => LevelFilter::WARN,
        "info" => LevelFilter::INFO,
        "debug" => LevelFilter::DEBUG,
        "trace" => LevelFilter::TRACE,
        _ => return None,
    })
}

/// Starts logging at the configured level.
pub fn init() {
    let setting = VARIABLES.iter().find_map(|name| {
        std::env::var(name)
            .ok()
            .filter(|v| !v.trim().is_empty())
            .map(|v| (*name, v))
    });
    let chosen = match &setting {
        Some((name, text)) => level(text).ok_or(*name),
        None => Ok(LevelFilter::INFO),
    };
    let max = chosen.unwrap_or(LevelFilter::INFO);
    // Set once, at start; a second call (there is none) would keep the first.
    let _ = tracing::subscriber::set_global_default(Lines { max });
    if let Err(name) = chosen {
        tracing::warn!(
            "{name} is not one of off, error, warn, info, debug, trace; logging at info"
        );
    }
}

/// One line per event on standard error.
struct Lines {
    max: LevelFilter,
}

impl tracing::Subscriber for Lines {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        self.max >= *metadata.level()
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(self.max)
    }

    fn event(&self, event: &Event<'_>) {
        let metadata = event.metadata();
        let mut fields = Fields::default();
        event.record(&mut fields);
        let line = format!(
            "{:.6} {:>5} {}: {}{}\n",
            jiff::Timestamp::now(),
            metadata.level(),
            metadata.target(),
            fields.message,
            fields.rest
        );
        // One write per line, so lines from two threads do not interleave.
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }

    // No spans: the executor opens none, and a span from a library is not shown.
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// An event's message and its other fields as ` name=value`, control characters escaped.
#[derive(Default)]
struct Fields {
    message: String,
    rest: String,
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let out = if field.name() == "message" {
            &mut self.message
        } else {
            let _ = write!(self.rest, " {}=", field.name());
            &mut self.rest
        };
        push_escaped(out, &format!("{value:?}"));
    }
}

/// Appends `text`, each control character as its escape.
fn push_escaped(out: &mut String, text: &str) {
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{LevelFilter, level, push_escaped};

    #[test]
    fn plain_level_words_only() {
        assert_eq!(level("debug"), Some(LevelFilter::DEBUG));
        assert_eq!(level(" WARN "), Some(LevelFilter::WARN));
        assert_eq!(level("off"), Some(LevelFilter::OFF));
        assert_eq!(level("fleetwatch_executor=debug"), None);
        assert_eq!(level("verbose"), None);
    }

    #[test]
    fn a_line_break_in_a_value_stays_on_one_line() {
        let mut text = String::from("x ");
        push_escaped(&mut text, "a\nb\r\tc");
        assert_eq!(text, "x a\\nb\\r\\tc");
    }
}
