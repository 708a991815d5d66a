//! Log output: plain lines on standard error (the journal, under systemd) at one level.
//!
//! `FLEETWATCH_LOG` names the level: `error`, `warn`, `info` (the default), `debug`, `trace`
//! or `off`. `RUST_LOG` is read when `FLEETWATCH_LOG` is unset, for the same words. A fixed
//! level is all the executor needs; per-module filter expressions would bring a regex engine
//! into the privileged process, so anything else is reported once and `info` is used.

use tracing_subscriber::filter::LevelFilter;

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
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(chosen.unwrap_or(LevelFilter::INFO))
        .init();
    if let Err(name) = chosen {
        tracing::warn!(
            "{name} is not one of off, error, warn, info, debug, trace; logging at info"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::level;
    use tracing_subscriber::filter::LevelFilter;

    #[test]
    fn plain_level_words_only() {
        assert_eq!(level("debug"), Some(LevelFilter::DEBUG));
        assert_eq!(level(" WARN "), Some(LevelFilter::WARN));
        assert_eq!(level("off"), Some(LevelFilter::OFF));
        assert_eq!(level("fleetwatch_executor=debug"), None);
        assert_eq!(level("verbose"), None);
    }
}
