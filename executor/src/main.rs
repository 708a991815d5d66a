//! `fleetwatch-executor`: argument parsing only; the work is in the library.
#![forbid(unsafe_code)]

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use fleetwatch_executor::config::Config;
use fleetwatch_executor::doctor::{self, Level};

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
    /// allowed uids, one request per connection, until SIGTERM or Ctrl-C.
    Serve,
    /// Store a sandbox sign-in (a bearer token) in the executor's 0600 token slot. The token is
    /// kept only if the sandbox team lists at least one device and none of the devices the
    /// normal sign-in knows.
    Login {
        /// The sandbox sign-in (the only one the executor holds).
        #[arg(long, required = true)]
        sandbox: bool,
        /// Read the token from this file instead of standard input.
        #[arg(long)]
        token_file: Option<PathBuf>,
        /// The normal sign-in's devices, as exported by `fleetwatch export-devices`
        /// (`{"device_ids": [...]}`).
        #[arg(long)]
        known_devices: PathBuf,
    },
    /// Delete the stored sandbox sign-in; nothing can be written until the next login.
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
    Verify,
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

fn read_token(file: Option<PathBuf>) -> Result<String, String> {
    let mut text = String::new();
    match file {
        Some(path) => std::fs::File::open(&path)
            .and_then(|f| f.take(16 * 1024).read_to_string(&mut text))
            .map_err(|e| format!("{}: {e}", path.display()))?,
        None => std::io::stdin()
            .take(16 * 1024)
            .read_to_string(&mut text)
            .map_err(|e| format!("standard input: {e}"))?,
    };
    Ok(text)
}

#[tokio::main]
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
        Command::Serve => fleetwatch_executor::serve(config)
            .await
            .map(|()| String::new()),
        Command::Login {
            sandbox: _,
            token_file,
            known_devices,
        } => match read_token(token_file) {
            Ok(token) => fleetwatch_executor::login::login(&config, &token, &known_devices)
                .await
                .map_err(|e| e.to_string()),
            Err(e) => Err(e),
        },
        Command::Logout { sandbox: _ } => fleetwatch_executor::login::logout(&config),
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
            command: AuditCommand::Verify,
        } => fleetwatch_executor::audit_verify(&config),
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
