//! `fleetwatch-executor`: argument parsing only; the work is in the library.
#![forbid(unsafe_code)]

use std::io::{IsTerminal as _, Read};
use std::path::PathBuf;
use std::process::ExitCode;

use fleetwatch_executor::config::Config;
use fleetwatch_executor::doctor::{self, Level};
use fleetwatch_executor::login::Source;

mod cli;
mod log;

use cli::{Command, Parsed};

fn fail(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("fleetwatch-executor: {message}");
    ExitCode::FAILURE
}

/// Writes `text` and a newline to standard output. A reader that has gone (`… | head -1`,
/// `… | grep -q`) ends the program quietly with success, as a pipeline expects, instead of a
/// panic.
fn say(text: &str) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    if let Err(e) = writeln!(out, "{text}").and_then(|()| out.flush())
        && e.kind() == std::io::ErrorKind::BrokenPipe
    {
        std::process::exit(0);
    }
}

/// The other side's heads listing: a file, or standard input for `-`.
fn read_listing(path: &std::path::Path) -> Result<String, String> {
    if path.as_os_str() == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| format!("standard input: {e}"))?;
        Ok(text)
    } else {
        std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
    }
}

/// The line itself, or for `-` the one line of standard input: a person's `approver` line as
/// `fleetwatch-confirm enrol` prints it, and nothing else (what is piped in comes from
/// enrolment; an assistant key is typed as the argument).
fn one_line(line: String) -> Result<String, String> {
    if line != "-" {
        return Ok(line);
    }
    let mut text = String::new();
    std::io::stdin()
        .take(64 * 1024)
        .read_to_string(&mut text)
        .map_err(|e| format!("standard input: {e}"))?;
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    match (lines.next(), lines.next()) {
        (Some(first), None) if first.split_whitespace().next() == Some("approver") => {
            Ok(first.to_owned())
        }
        (Some(_), None) => Err(
            "standard input takes only a person's `approver …` line, as `fleetwatch-confirm \
             enrol` prints it (an assistant key is given as the argument; a `passkey …` line \
             from before persons is no longer read: enrol that person again)"
                .into(),
        ),
        (None, _) => Err("standard input holds no line".into()),
        (Some(_), Some(_)) => {
            Err("standard input holds more than one line; add one at a time".into())
        }
    }
}

/// `--token-file`, else a token piped on standard input, else (a terminal, or nothing piped)
/// the OAuth sign-in.
fn token_source(file: Option<PathBuf>) -> Result<Source, String> {
    let mut text = String::new();
    match file {
        Some(path) => {
            std::fs::File::open(&path)
                .and_then(|f| f.take(16 * 1024).read_to_string(&mut text))
                .map_err(|e| format!("{}: {e}", path.display()))?;
            Ok(Source::Static(text))
        }
        None if std::io::stdin().is_terminal() => Ok(Source::OAuth),
        None => {
            std::io::stdin()
                .take(16 * 1024)
                .read_to_string(&mut text)
                .map_err(|e| format!("standard input: {e}"))?;
            if text.trim().is_empty() {
                Ok(Source::OAuth)
            } else {
                Ok(Source::Static(text))
            }
        }
    }
}

// One thread: the executor serves one person's approvals, not a crowd. A single event loop is
// simpler to reason about, measured faster on the write path (no hand-off between worker
// threads: overhead p50 2.10 → 1.94 ms) and smaller. Its blocking steps are short (a SQLite
// commit, a signature check); the sign-in lock is waited for without blocking.
#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let cli = match cli::parse(std::env::args_os().skip(1)) {
        Parsed::Run(cli) => cli,
        Parsed::Print(text) => {
            say(text.trim_end_matches('\n'));
            return ExitCode::SUCCESS;
        }
        Parsed::Usage(text) => {
            eprint!("{text}");
            return ExitCode::from(2);
        }
    };
    log::init();
    fleetwatch_signin::tls::install_provider();
    let config = match Config::load(cli.config.as_deref()) {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    // Root running a command on the service's state acts as the service's user; `serve` runs
    // as its unit says, and the approver file is root's to change.
    if !matches!(
        cli.command,
        Command::Serve
            | Command::ApproversAdd { .. }
            | Command::ApproversScope { .. }
            | Command::ApproversRemove { .. }
    ) && let Err(e) = fleetwatch_executor::act_as_state_owner(&config)
    {
        return fail(e);
    }
    let result = match cli.command {
        Command::Serve => {
            if let Some(dead) = fleetwatch_executor::slot::dead(&config) {
                eprintln!("fleetwatch-executor: {dead}");
                return ExitCode::from(fleetwatch_signin::EXIT_SIGN_IN_DEAD);
            }
            fleetwatch_executor::serve(config)
                .await
                .map(|()| String::new())
        }
        Command::Login {
            token_file,
            known_devices,
        } => match token_source(token_file) {
            Ok(source) => fleetwatch_executor::login::login(&config, source, &known_devices)
                .await
                .map_err(|e| e.to_string()),
            Err(e) => Err(e),
        },
        Command::Logout => fleetwatch_executor::login::logout(&config).await,
        Command::Doctor => {
            let lines = doctor::doctor(&config).await;
            for line in &lines {
                say(&line.to_string());
            }
            return if lines.iter().any(|l| l.level == Level::Fail) {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            };
        }
        Command::AuditVerify { against } => {
            match against.as_deref().map(read_listing).transpose() {
                Ok(listing) => fleetwatch_executor::audit_verify(&config, listing.as_deref()),
                Err(e) => Err(e),
            }
        }
        Command::AuditHeads => fleetwatch_executor::audit_heads(&config),
        Command::AuditShow {
            since,
            proposal,
            json,
            lang,
        } => {
            let spanish = match lang.as_deref().map(str::to_ascii_lowercase).as_deref() {
                None => env_is_spanish(),
                Some("en") => false,
                Some("es") => true,
                Some(other) => {
                    eprintln!("error: --lang {other:?}: give en or es");
                    return ExitCode::from(2);
                }
            };
            let now = jiff::Timestamp::now().as_second();
            match since
                .as_deref()
                .map(|s| fleetwatch_protocol::audit::parse_since(s, now))
            {
                Some(Err(e)) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(2);
                }
                since => {
                    let filter = fleetwatch_executor::audit_show::Filter {
                        since: since.and_then(Result::ok),
                        proposal,
                    };
                    fleetwatch_executor::audit_show(&config, filter, json, spanish)
                }
            }
        }
        Command::Receipt { which: None } => fleetwatch_executor::receipt::public_key(&config),
        Command::Receipt { which: Some(which) } => {
            fleetwatch_executor::receipt::write(&config, &which)
        }
        Command::KeysList => fleetwatch_executor::keys_list(&config),
        Command::ApproversList => fleetwatch_executor::approvers_list(&config),
        Command::ApproversAdd { line, may, users } => match one_line(line) {
            Ok(line) => fleetwatch_executor::approvers_add(
                &config,
                &line,
                (may.as_deref(), users.as_deref()),
            ),
            Err(e) => Err(e),
        },
        Command::ApproversScope { person, scope } => {
            fleetwatch_executor::approvers_scope(&config, &person, &scope)
        }
        Command::ApproversRemove { who } => fleetwatch_executor::approvers_remove(&config, &who),
    };
    match result {
        Ok(text) => {
            if !text.is_empty() {
                say(&text);
            }
            ExitCode::SUCCESS
        }
        Err(e) => fail(e),
    }
}

/// Whether the person at the terminal reads Spanish: `LC_ALL`, `LC_MESSAGES` or `LANG` (the
/// first one set) starting with `es`.
fn env_is_spanish() -> bool {
    ["LC_ALL", "LC_MESSAGES", "LANG"]
        .iter()
        .filter_map(|v| std::env::var(v).ok())
        .find(|v| !v.trim().is_empty())
        .is_some_and(|tag| tag.to_ascii_lowercase().starts_with("es"))
}
