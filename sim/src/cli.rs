//! The `fleetwatch-sim` command line: argument parsing and the two long-running commands.

use std::io::Write;
use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::{SimConfig, SimError, TeamConfig, TeamSource};

/// Stand-ins for Epiphan's MCP server and the Anthropic Messages API, on 127.0.0.1 only.
#[derive(Debug, Parser)]
#[command(name = "fleetwatch-sim", version)]
pub struct Cli {
    /// What to serve.
    #[command(subcommand)]
    pub command: Command,
}

/// The simulator's commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve a simulated Epiphan MCP server. Prints the MCP URL on the first line of stdout,
    /// then the control token (header `x-control-token` for /control/*), then with --demo the
    /// team tokens. Runs until Ctrl-C or SIGTERM.
    Serve(ServeArgs),
    /// Serve an Anthropic Messages API stand-in (POST /v1/messages): scripted (--script) or
    /// the offline demo's rule-based stand-in (--offline). Prints its base URL on the first
    /// line of stdout. Runs until Ctrl-C or SIGTERM.
    Model(ModelArgs),
}

/// Arguments of `serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Serve the built-in demo fleet as team `normal` (token `normal-token`) and team
    /// `sandbox` (token `sandbox-token`).
    #[arg(long)]
    pub demo: bool,
    /// Serve one team from this replay folder (needs --token).
    #[arg(long, value_name = "DIR", requires = "token")]
    pub replay: Option<PathBuf>,
    /// Bearer token for the --replay team (named `replay`).
    #[arg(long, value_name = "TOKEN", requires = "replay")]
    pub token: Option<String>,
    /// Serve a team from a replay folder; repeatable.
    #[arg(long = "team", value_name = "NAME=TOKEN:DIR")]
    pub teams: Vec<String>,
    /// Fixed simulator clock (RFC 3339) for replay templates, demo event times and event
    /// windows; default: the current time.
    #[arg(long, value_name = "RFC3339")]
    pub now: Option<jiff::Timestamp>,
    /// Port on 127.0.0.1; 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    pub port: u16,
}

/// Arguments of `model`.
#[derive(Debug, clap::Args)]
pub struct ModelArgs {
    /// JSON file holding a list of Messages API response bodies, answered in order (sent as
    /// Chat Completions answers with --api openai; a body with `choices` is sent as it is).
    #[arg(long, value_name = "FILE.json", required_unless_present = "offline")]
    pub script: Option<PathBuf>,
    /// Answer with the rule-based offline stand-in instead of a script: a fixed set of
    /// English and Spanish questions and change requests, no AI, every answer labelled so.
    #[arg(long, conflicts_with = "script")]
    pub offline: bool,
    /// Fixed clock (RFC 3339) for --offline answers, matching a simulator started with the
    /// same --now; default: the current time.
    #[arg(long, value_name = "RFC3339", requires = "offline")]
    pub now: Option<jiff::Timestamp>,
    /// The API to speak: anthropic (`POST /v1/messages`) or openai (the Chat Completions API,
    /// `POST /v1/chat/completions`). Both list the stand-in's model at `GET /v1/models`.
    #[arg(long, value_name = "anthropic|openai", default_value = "anthropic", value_parser = parse_api)]
    pub api: crate::model::Api,
    /// Port on 127.0.0.1; 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    pub port: u16,
}

fn parse_api(text: &str) -> Result<crate::model::Api, String> {
    crate::model::Api::parse(text).ok_or_else(|| format!("{text:?}: give anthropic or openai"))
}

/// Parses `NAME=TOKEN:DIR`.
pub fn parse_team(spec: &str) -> Result<TeamConfig, SimError> {
    let bad = || SimError::Config(format!("--team {spec:?}: expected NAME=TOKEN:DIR"));
    let (name, rest) = spec.split_once('=').ok_or_else(bad)?;
    let (token, dir) = rest.split_once(':').ok_or_else(bad)?;
    if name.is_empty() || token.is_empty() || dir.is_empty() {
        return Err(bad());
    }
    Ok(TeamConfig {
        view_only: false,
        name: name.to_string(),
        token: token.to_string(),
        source: TeamSource::Replay(PathBuf::from(dir)),
    })
}

/// Builds the simulator configuration from `serve` arguments.
pub fn serve_config(args: &ServeArgs) -> Result<SimConfig, SimError> {
    let mut teams = Vec::new();
    if args.demo {
        teams.extend(SimConfig::demo().teams);
    }
    if let (Some(dir), Some(token)) = (&args.replay, &args.token) {
        teams.push(TeamConfig {
            view_only: false,
            name: "replay".to_string(),
            token: token.clone(),
            source: TeamSource::Replay(dir.clone()),
        });
    }
    for spec in &args.teams {
        teams.push(parse_team(spec)?);
    }
    if teams.is_empty() {
        return Err(SimError::Config(
            "nothing to serve: give --demo, --replay DIR --token TOKEN, or --team NAME=TOKEN:DIR"
                .into(),
        ));
    }
    Ok(SimConfig {
        teams,
        now: args.now,
        sessions: false,
    })
}

async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

fn print_lines(lines: &[String]) -> Result<(), SimError> {
    let mut out = std::io::stdout().lock();
    for line in lines {
        writeln!(out, "{line}")?;
    }
    // Callers read the first line to find the server, so it must not sit in a buffer.
    out.flush()?;
    Ok(())
}

/// Runs a command until Ctrl-C or SIGTERM.
pub async fn run(cli: Cli) -> Result<(), SimError> {
    match cli.command {
        Command::Serve(args) => {
            let config = serve_config(&args)?;
            let tokens: Vec<String> = if args.demo {
                SimConfig::demo()
                    .teams
                    .iter()
                    .map(|t| format!("team {} token: {}", t.name, t.token))
                    .collect()
            } else {
                Vec::new()
            };
            let handle = crate::start_on_port(config, args.port).await?;
            let mut lines = vec![
                handle.mcp_url(),
                format!("control token: {}", handle.control_token()),
            ];
            lines.extend(tokens);
            print_lines(&lines)?;
            stop_signal().await;
            handle.shutdown().await;
        }
        Command::Model(args) => {
            let handle = match &args.script {
                _ if args.offline => {
                    crate::model::start_offline_api(args.api, args.now, args.port).await?
                }
                Some(path) => {
                    let text = std::fs::read_to_string(path)?;
                    let script: Vec<serde_json::Value> =
                        serde_json::from_str(&text).map_err(|e| {
                            SimError::Config(format!(
                                "{}: expected a JSON list of response bodies: {e}",
                                path.display()
                            ))
                        })?;
                    crate::model::start_api(args.api, script, args.port).await?
                }
                None => {
                    return Err(SimError::Config(
                        "model: give --script FILE.json or --offline".into(),
                    ));
                }
            };
            print_lines(&[handle.url()])?;
            stop_signal().await;
            handle.shutdown().await;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn team_specs_split_on_the_first_equals_and_colon() {
        let team = parse_team("east=tok:/srv/replay:with:colons").unwrap();
        assert_eq!((team.name.as_str(), team.token.as_str()), ("east", "tok"));
        assert!(
            matches!(team.source, TeamSource::Replay(ref p) if p == std::path::Path::new("/srv/replay:with:colons"))
        );
        for bad in ["east", "east=tok", "=tok:/x", "east=:/x", "east=tok:"] {
            assert!(parse_team(bad).is_err(), "{bad}");
        }
    }
}
