//! `fleetwatch-executor`: argument parsing only; the work is in the library.
#![forbid(unsafe_code)]

use std::io::{IsTerminal as _, Read};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use fleetwatch_executor::config::Config;
use fleetwatch_executor::doctor::{self, Level};
use fleetwatch_executor::login::Source;

/// The Fleetwatch executor: the only process that holds the sandbox sign-in and can make a
/// change. It runs one approved change per request, after checking the approval's signature,
/// freshness and single use, its own policy, the write fence and the devices' live state.
#[derive(Parser)]
#[command(name = "fleetwatch-executor", version)]
struct Cli {
    /// Configuration file (YAML). Defaults to $FLEETWATCH_EXECUTOR_CONFIG, then
    /// /etc/fleetwatch/executor.yaml. Environment variables (FLEETWATCH_EXECUTOR_SOCKET,
    /// FLEETWATCH_POLICY, FLEETWATCH_STATE_DIR, FLEETWATCH_EPIPHAN_URL,
    /// FLEETWATCH_WRITE_DEVICE_IDS, FLEETWATCH_WRITE_TEAM_ID, FLEETWATCH_READ_TIMEOUT_SECS,
    /// FLEETWATCH_WRITE_TIMEOUT_SECS) override the file.
    #[arg(long, global = true)]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Listen on the Unix socket and answer Describe, Execute and Status requests from the
    /// allowed uids, one request per connection, until SIGTERM or Ctrl-C. Exits 78 at start
    /// when the sandbox sign-in is dead (Epiphan refused to renew it), so systemd does not
    /// restart it into the same refusal.
    Serve,
    /// Sign in to the sandbox team and keep the sign-in in the executor's 0600 token slot. By
    /// default this runs the OAuth sign-in: a browser opens (or the address is printed) and
    /// Epiphan answers on http://127.0.0.1:8765/callback (port: FLEETWATCH_OAUTH_CALLBACK_PORT;
    /// FLEETWATCH_OAUTH_NO_BROWSER=1 only prints the address). A static bearer token is the
    /// fallback: --token-file, or a token piped on standard input. The sign-in is kept only if
    /// the sandbox team lists at least one device and none of the devices the normal sign-in
    /// knows; otherwise it is deleted again.
    Login {
        /// The sandbox sign-in (the only one the executor holds).
        #[arg(long, required = true)]
        sandbox: bool,
        /// Store the static token in this file instead of signing in with OAuth.
        #[arg(long)]
        token_file: Option<PathBuf>,
        /// The normal sign-in's devices, as exported by `fleetwatch export-devices`
        /// (`{"device_ids": [...]}`).
        #[arg(long)]
        known_devices: PathBuf,
    },
    /// Delete the stored sandbox sign-in (the sandbox slot only); nothing can be written until
    /// the next login.
    Logout {
        /// The sandbox sign-in.
        #[arg(long, required = true)]
        sandbox: bool,
    },
    /// Check the configuration, fence, sign-in, key file, policy, socket directory, database
    /// and audit chain; one OK/WARN/FAIL line each. Exits 1 if any check fails.
    Doctor,
    /// The executor's audit log.
    Audit {
        #[command(subcommand)]
        command: AuditCommand,
    },
    /// The installed approver public keys.
    Keys {
        #[command(subcommand)]
        command: KeysCommand,
    },
}

#[derive(Subcommand)]
enum AuditCommand {
    /// Verify the hash chain of executor.db's audit table. Exits non-zero naming the first
    /// row that was edited, removed or inserted behind the program's back.
    Verify {
        /// The assistant's heads listing (`fleetwatch audit heads > FILE`, or `-` to read it
        /// from standard input): also check that every assistant chain head recorded here is
        /// still in the assistant's chain, which shows its newest rows removed.
        #[arg(long, value_name = "FILE")]
        against: Option<PathBuf>,
    },
    /// Print one `ROW HASH` line per audit row, oldest first, for the assistant's
    /// `fleetwatch audit verify --against`. Hashes only, no row content.
    Heads,
}

#[derive(Subcommand)]
enum KeysCommand {
    /// Print the ID of every key in the approver key file.
    List,
}

fn fail(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("fleetwatch-executor: {message}");
    ExitCode::FAILURE
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
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let cli = Cli::parse();
    let config = match Config::load(cli.config.as_deref()) {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
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
            sandbox: _,
            token_file,
            known_devices,
        } => match token_source(token_file) {
            Ok(source) => fleetwatch_executor::login::login(&config, source, &known_devices)
                .await
                .map_err(|e| e.to_string()),
            Err(e) => Err(e),
        },
        Command::Logout { sandbox: _ } => fleetwatch_executor::login::logout(&config).await,
        Command::Doctor => {
            let lines = doctor::doctor(&config).await;
            for line in &lines {
                println!("{line}");
            }
            return if lines.iter().any(|l| l.level == Level::Fail) {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            };
        }
        Command::Audit {
            command: AuditCommand::Verify { against },
        } => match against.as_deref().map(read_listing).transpose() {
            Ok(listing) => fleetwatch_executor::audit_verify(&config, listing.as_deref()),
            Err(e) => Err(e),
        },
        Command::Audit {
            command: AuditCommand::Heads,
        } => fleetwatch_executor::audit_heads(&config),
        Command::Keys {
            command: KeysCommand::List,
        } => fleetwatch_executor::keys_list(&config),
    };
    match result {
        Ok(text) => {
            if !text.is_empty() {
                println!("{text}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => fail(e),
    }
}
