//! The `fleetwatch` command line: argument parsing and dispatch to the library.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::{Parser, Subcommand};
use fleetwatch_protocol::anchor;

use crate::config::Config;
use crate::reads::{self, Reader, Token};
use crate::store::{AnchorCheck, ChainCheck, Store};
use crate::{ask, doctor, grants, keys, serve};

/// Fleetwatch: answers questions about Epiphan Pearl recorders and proposes changes a person
/// approves.
#[derive(Debug, Parser)]
#[command(name = "fleetwatch", version)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Replay options shared by every command that reads the fleet.
#[derive(Debug, Clone, clap::Args)]
pub struct ReplayArgs {
    /// Read from a replay folder of `<tool>.json` files instead of Epiphan. A replay reads
    /// with the policy in FLEETWATCH_POLICY (default /etc/fleetwatch/tool_policy.yaml) when
    /// that file exists, else with the tool_policy.yaml this binary was built with.
    #[arg(long, value_name = "DIR")]
    pub replay: Option<PathBuf>,
    /// The replay clock (RFC 3339, e.g. 2026-09-24T20:00:00Z); default the current time.
    #[arg(long, value_name = "TIME", requires = "replay")]
    pub now: Option<jiff::Timestamp>,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Ask a question (one answer), or open a prompt when no question is given.
    Ask {
        /// The question; omit it for an interactive prompt.
        question: Option<String>,
        /// Keyword answers only (read-only; never proposes).
        #[arg(long)]
        no_ai: bool,
        #[command(flatten)]
        replay: ReplayArgs,
    },
    /// List the proposals waiting for approval: number, the change, rooms, who asked, age,
    /// when it expires and how many persons it still needs. Read from `fleetwatch serve` over
    /// the chat socket.
    Pending {
        /// One JSON array: proposal, tool, arguments, targets, rooms, asked_by, created_at,
        /// expires_at (Unix seconds), approved_by, persons_needed.
        #[arg(long)]
        json: bool,
        /// The language of the words: en or es (default: from LC_ALL, LC_MESSAGES or LANG).
        #[arg(long, value_name = "en|es")]
        lang: Option<String>,
        /// After the list, keep watching until Ctrl-C: a line when a change starts waiting,
        /// gains a person's approval and waits for more, is decided or expires (every two
        /// seconds).
        #[arg(long, conflicts_with = "json")]
        watch: bool,
    },
    /// Deny a waiting proposal; nothing runs. The reason is kept in the audit (secrets masked,
    /// at most 300 characters) and the model of the chat that asked for it sees it with the
    /// next question. Approving is done on the approval page only.
    Deny {
        /// The proposal number, as `fleetwatch pending` shows it.
        proposal: u64,
        /// Why, in your own words.
        #[arg(long, value_name = "TEXT")]
        reason: Option<String>,
    },
    /// Run the assistant: holds the sign-in and keys, answers on the chat socket.
    Serve,
    /// Sign in to Epiphan for reads (the normal sign-in). Runs the OAuth sign-in: a browser
    /// opens (or the address is printed) and Epiphan answers on http://127.0.0.1:8765/callback
    /// (port: FLEETWATCH_OAUTH_CALLBACK_PORT; FLEETWATCH_OAUTH_NO_BROWSER=1 only prints the
    /// address). A static token piped on standard input is stored instead. Either way the
    /// sign-in is saved with mode 0600 in the state folder; FLEETWATCH_EPIPHAN_TOKEN overrides it.
    Login,
    /// Delete the normal sign-in from the state folder (the sandbox sign-in is the executor's).
    Logout,
    /// Check the installation (exit 1 on any FAIL) with the settings the installed service runs
    /// with: the `Environment=` lines of its unit (/etc/systemd/system/fleetwatch.service), the
    /// environment file it names (/etc/fleetwatch/fleetwatch.env), then this shell's FLEETWATCH_
    /// variables, and says where each came from.
    Doctor {
        /// Another environment file than the one the unit names (it must exist).
        #[arg(long, value_name = "PATH")]
        env_file: Option<PathBuf>,
        /// Another unit than the installed one.
        #[arg(long, value_name = "PATH", default_value = crate::service_env::UNIT)]
        unit: PathBuf,
    },
    /// Write the normal sign-in's device IDs for the executor's overlap check.
    ExportDevices {
        /// Output file (default: known-devices.json in the state folder).
        #[arg(long, value_name = "PATH")]
        out: Option<PathBuf>,
        #[command(flatten)]
        replay: ReplayArgs,
    },
    /// Show or change which tool categories the model may use.
    Grants {
        /// list, open or close.
        #[command(subcommand)]
        action: GrantsAction,
    },
    /// The audit log.
    Audit {
        /// What to do with it.
        #[command(subcommand)]
        action: AuditAction,
    },
    /// The approval-signing key.
    Keys {
        /// What to do with it.
        #[command(subcommand)]
        action: KeysAction,
    },
    /// Run the whole system on this machine with no account and no key: a simulated fleet, a
    /// rule-based model stand-in (not AI), the real executor, the approval page and a prompt.
    /// Everything it starts and writes is removed when it ends.
    Demo {
        /// Run a fixed scenario instead of the prompt and exit 0 only if every step happened
        /// as expected.
        #[arg(long)]
        script: bool,
        /// The API the model stand-in speaks: anthropic (the Messages API) or openai (the Chat
        /// Completions API a team's own model server speaks).
        #[arg(long, value_name = "anthropic|openai", default_value = "anthropic")]
        model_api: String,
    },
}

/// `fleetwatch grants …`
#[derive(Debug, Subcommand)]
pub enum GrantsAction {
    /// Every category, open or closed, with its tools.
    List,
    /// Open a category.
    Open {
        /// Category name.
        category: String,
    },
    /// Close a category (takes effect on the next question).
    Close {
        /// Category name.
        category: String,
    },
}

/// `fleetwatch audit …`
#[derive(Debug, Subcommand)]
pub enum AuditAction {
    /// Walk the hash chain and name the first row that does not match.
    Verify {
        /// The executor's heads listing (`fleetwatch-executor audit heads > FILE`, or `-` to
        /// read it from standard input): also check that every executor chain head recorded
        /// here with an outcome is still in the executor's chain, which shows its newest rows
        /// removed.
        #[arg(long, value_name = "FILE")]
        against: Option<PathBuf>,
    },
    /// Print one `ROW HASH` line per audit row, oldest first, for the executor's
    /// `fleetwatch-executor audit verify --against`. Hashes only, no row content.
    Heads,
    /// The audit rows in words, newest last: time (UTC), proposal, what happened (proposed
    /// with tool and targets by name and ID, card shown, approved by which page session or
    /// passkey, sent, executed or refused with the executor's reason, denied, expired).
    /// Verifies the chain first and says so on the first line when it is broken. Opens the
    /// database read-only, so it can run while `serve` runs.
    Show {
        /// Only rows from this long ago on (`90s`, `15m`, `2h`, `1d`, `1h30m`), or from this
        /// UTC time on (`2026-12-03T09:00:00Z`, `2026-12-03 09:00`, `2026-12-03`).
        #[arg(long, value_name = "DURATION|TIME")]
        since: Option<String>,
        /// Only rows about this proposal number.
        #[arg(long, value_name = "N")]
        proposal: Option<u64>,
        /// One JSON object a line for a log shipper: row, time, unix, kind, proposal, tool,
        /// targets ({id, name}), asked_by, decided_by, outcome, refusal, words, chain.
        #[arg(long)]
        json: bool,
        /// The language of the words: en or es (default: from LC_ALL, LC_MESSAGES or LANG).
        #[arg(long, value_name = "en|es")]
        lang: Option<String>,
    },
}

/// `fleetwatch keys …`
#[derive(Debug, Subcommand)]
pub enum KeysAction {
    /// Print the public key line to install for the executor.
    Show,
}

/// `--lang`, or the terminal's language.
fn lang_arg(lang: Option<&str>) -> Result<fleetwatch_words::Lang, String> {
    match lang.map(str::to_ascii_lowercase).as_deref() {
        None => Ok(crate::doctor::env_lang()),
        Some("en") => Ok(fleetwatch_words::Lang::En),
        Some("es") => Ok(fleetwatch_words::Lang::Es),
        Some(other) => Err(format!("--lang {other:?}: give en or es")),
    }
}

/// `fleetwatch pending`: what waits, from `serve`; with `--watch`, then a line for each change
/// as it starts waiting, gains an approval, is decided or expires, until Ctrl-C.
async fn pending(json: bool, lang: Option<&str>, watch: bool) -> i32 {
    let lang = match lang_arg(lang) {
        Ok(lang) => lang,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    let socket = crate::config::chat_socket_from_env();
    let list = match crate::chat::command(&socket, &crate::chat::ChatCommand::Pending).await {
        Ok(crate::chat::ChatResponse::Pending(list)) => list,
        Ok(_) => return fail("fleetwatch serve answered something other than the list"),
        Err(e) => return fail(e),
    };
    if json {
        match serde_json::to_string_pretty(&list) {
            Ok(text) => say!("{text}"),
            Err(e) => return fail(e),
        }
        return 0;
    }
    say!(
        "{}",
        crate::pending::render(&list, lang, crate::store::now_secs())
    );
    if !watch {
        return 0;
    }
    say!(
        "{}",
        lang.pick(
            "Watching for changes (Ctrl-C ends it)…",
            "Vigilando cambios (Ctrl-C termina)…"
        )
    );
    let mut before = list;
    loop {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => return 0,
            () = tokio::time::sleep(std::time::Duration::from_secs(2)) => {}
        }
        let now = match crate::chat::command(&socket, &crate::chat::ChatCommand::Pending).await {
            Ok(crate::chat::ChatResponse::Pending(list)) => list,
            Ok(_) => return fail("fleetwatch serve answered something other than the list"),
            Err(e) => return fail(e),
        };
        let left: Vec<u64> = before
            .iter()
            .map(|w| w.proposal)
            .filter(|id| !now.iter().any(|w| w.proposal == *id))
            .collect();
        let gone = if left.is_empty() {
            Vec::new()
        } else {
            let ask = crate::chat::ChatCommand::Standings {
                proposals: left.into_iter().take(crate::chat::MAX_WATCHED).collect(),
            };
            match crate::chat::command(&socket, &ask).await {
                Ok(crate::chat::ChatResponse::Standings(list)) => list,
                Ok(_) => return fail("fleetwatch serve answered something other than standings"),
                Err(e) => return fail(e),
            }
        };
        for line in
            crate::pending::watch_lines(&before, &now, &gone, lang, crate::store::now_secs())
        {
            say!("{line}");
        }
        before = now;
    }
}

/// `fleetwatch deny N`: a denial with a reason, through `serve`.
async fn deny(proposal: u64, reason: &str) -> i32 {
    let lang = crate::doctor::env_lang();
    let socket = crate::config::chat_socket_from_env();
    let command = crate::chat::ChatCommand::Deny {
        proposal,
        reason: reason.to_owned(),
    };
    match crate::chat::command(&socket, &command).await {
        Ok(crate::chat::ChatResponse::Denied(n)) => {
            say!(
                "{}",
                match lang {
                    fleetwatch_words::Lang::En => format!("Proposal #{n} denied. Nothing ran."),
                    fleetwatch_words::Lang::Es => {
                        format!("Propuesta n.º {n} denegada. No se ejecutó nada.")
                    }
                }
            );
            0
        }
        Ok(_) => fail("fleetwatch serve answered something other than the denial"),
        Err(e) => fail(e),
    }
}

/// `--since` against this machine's clock.
fn since_from_now(text: &str) -> Result<i64, String> {
    fleetwatch_protocol::audit::parse_since(text, crate::store::now_secs())
}

/// `audit show`: the rows in words or JSON lines, read-only.
fn audit_show(
    state_dir: &Path,
    since: Option<&str>,
    proposal: Option<u64>,
    json: bool,
    lang: Option<&str>,
) -> i32 {
    let lang = match lang_arg(lang) {
        Ok(lang) => lang,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    let since = match since.map(since_from_now) {
        Some(Err(e)) => {
            eprintln!("error: {e}");
            return 2;
        }
        Some(Ok(t)) => Some(t),
        None => None,
    };
    let filter = crate::audit_show::Filter { since, proposal };
    match Store::open_read_only(state_dir)
        .and_then(|store| crate::audit_show::show(&store, &filter, json, lang))
    {
        Ok(text) => {
            say!("{}", text.trim_end_matches('\n'));
            0
        }
        Err(e) => fail(e),
    }
}

/// `audit verify [--against LISTING]`: the chain, then every executor head it recorded.
fn audit_verify(store: &Store, against: Option<&Path>) -> i32 {
    match store.verify_audit() {
        Ok(ChainCheck::Intact { rows, head }) => {
            say!(
                "audit chain intact: {rows} rows, head {}",
                fleetwatch_protocol::hex::encode(&head)
            );
        }
        Ok(ChainCheck::Broken { row, problem }) => {
            say!("audit chain broken at row {row}: {problem}");
            return 1;
        }
        Err(e) => return fail(e),
    }
    let Some(path) = against else {
        return 0;
    };
    let listing = if path.as_os_str() == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map(|_| text)
            .map_err(|e| format!("standard input: {e}"))
    } else {
        std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
    };
    match listing.and_then(|text| store.check_executor_anchors(&text)) {
        Ok(check) => {
            say!("{check}");
            i32::from(!matches!(check, AnchorCheck::Intact { .. }))
        }
        Err(e) => fail(e),
    }
}

/// `fleetwatch demo`: runs `fleetwatch-demo` from the folder this program is in, in its place.
///
/// The demo is its own program so that this one, the production binary, carries no demo
/// orchestration, stand-in wiring or HTML reader. It replaces this process (`exec`) rather than
/// running as a child, so Ctrl-C, the terminal and the exit status are the demo's own, as if
/// it had been started directly. Returns only when it could not be started.
fn demo(script: bool, model_api: &str) -> i32 {
    use std::os::unix::process::CommandExt as _;
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => return fail(format!("cannot find this program: {e}")),
    };
    let Some(dir) = exe.parent() else {
        return fail("cannot find this program's folder");
    };
    let program = dir.join("fleetwatch-demo");
    if !program.is_file() {
        let build = if dir.ends_with("release") {
            "cargo build --release --bins"
        } else {
            "cargo build --bins"
        };
        return fail(format!(
            "fleetwatch-demo was not found next to fleetwatch (in {}). `fleetwatch demo` runs \
             it as a separate program; build the demo's programs with `{build}` and try again.",
            dir.display()
        ));
    }
    let mut command = std::process::Command::new(&program);
    if script {
        command.arg("--script");
    }
    if crate::model::ModelApi::parse(model_api).is_none() {
        eprintln!("error: --model-api {model_api:?}: give anthropic or openai");
        return 2;
    }
    command.args(["--model-api", model_api]);
    let error = command.exec();
    fail(format!("cannot run {}: {error}", program.display()))
}

fn fail(message: impl std::fmt::Display) -> i32 {
    eprintln!("fleetwatch: {message}");
    1
}

/// Runs a parsed command; returns the exit code.
pub async fn run(cli: Cli) -> i32 {
    // The demo builds its whole configuration in a temporary folder; this environment's
    // settings (meant for a real installation) must not reach it, so nothing is read first.
    if let Command::Demo { script, model_api } = &cli.command {
        return demo(*script, model_api);
    }
    // Asking the running service needs only its socket: an operator allowed on the socket
    // usually cannot read the service's private state folder, so nothing else is loaded.
    if let Command::Ask {
        question,
        no_ai,
        replay: ReplayArgs { replay: None, .. },
    } = &cli.command
    {
        let source = ask::Source::Socket(crate::config::chat_socket_from_env());
        return match question {
            Some(q) => ask::one_shot(&source, q, *no_ai).await,
            None => ask::repl(&source, *no_ai).await,
        };
    }
    // doctor checks what the service would run with, not only this shell's environment.
    if let Command::Doctor { env_file, unit } = &cli.command {
        let env =
            match crate::service_env::ServiceEnv::load(unit, env_file.as_deref(), std::env::vars())
            {
                Ok(env) => env,
                Err(e) => return fail(e),
            };
        let config = match Config::from_lookup(|name| env.get(name)) {
            Ok(config) => config,
            Err(e) => return fail(e),
        };
        let checks = doctor::run(&config, &env).await;
        for c in &checks {
            say!("{c}");
        }
        return i32::from(checks.iter().any(|c| c.level == doctor::Level::Fail));
    }
    match &cli.command {
        Command::Pending { json, lang, watch } => {
            return pending(*json, lang.as_deref(), *watch).await;
        }
        Command::Deny { proposal, reason } => {
            return deny(*proposal, reason.as_deref().unwrap_or_default()).await;
        }
        _ => {}
    }
    let config = match Config::from_env() {
        Ok(config) => config,
        Err(e) => return fail(e),
    };
    match cli.command {
        // Answered above without the configuration; the same calls, for completeness.
        Command::Pending { json, lang, watch } => pending(json, lang.as_deref(), watch).await,
        Command::Deny { proposal, reason } => {
            deny(proposal, reason.as_deref().unwrap_or_default()).await
        }
        Command::Demo { script, model_api } => demo(script, &model_api),
        Command::Ask {
            question,
            no_ai,
            replay,
        } => {
            let source = match replay.replay {
                Some(dir) => {
                    let now = replay.now.unwrap_or_else(jiff::Timestamp::now);
                    match ask::Source::replay(&config, dir, now, no_ai) {
                        Ok(source) => source,
                        Err(e) => return fail(e),
                    }
                }
                // Handled above, before the configuration is read.
                None => ask::Source::Socket(config.chat_socket()),
            };
            match question {
                Some(q) => ask::one_shot(&source, &q, no_ai).await,
                None => ask::repl(&source, no_ai).await,
            }
        }
        Command::Serve => {
            if let Some(dead) = crate::login::dead(&config) {
                eprintln!("fleetwatch: {dead}");
                return i32::from(fleetwatch_signin::EXIT_SIGN_IN_DEAD);
            }
            let shutdown = async {
                let mut term =
                    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                    {
                        Ok(term) => term,
                        Err(_) => {
                            let _ = tokio::signal::ctrl_c().await;
                            return;
                        }
                    };
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            };
            match serve::run(config, shutdown).await {
                Ok(()) => 0,
                Err(e) => fail(e),
            }
        }
        Command::Login => match crate::login::login(&config).await {
            Ok(text) => {
                say!("{text}");
                0
            }
            Err(e) => fail(e),
        },
        Command::Logout => match crate::login::logout(&config).await {
            Ok(text) => {
                say!("{text}");
                0
            }
            Err(e) => fail(e),
        },
        // Answered above, with the service's settings.
        Command::Doctor { .. } => 0,
        Command::ExportDevices { out, replay } => export_devices(&config, out, replay).await,
        Command::Grants { action } => {
            let policy = match config.load_policy() {
                Ok(p) => p,
                Err(e) => return fail(e),
            };
            let result = match action {
                GrantsAction::List => grants::list(&config.state_dir, &policy),
                GrantsAction::Open { category } => {
                    grants::open(&config.state_dir, &policy, &category)
                        .map(|_| format!("{category}: open"))
                }
                GrantsAction::Close { category } => grants::close(&config.state_dir, &category)
                    .map(|_| format!("{category}: closed (from the next question)")),
            };
            match result {
                Ok(text) => {
                    say!("{}", text.trim_end());
                    0
                }
                Err(e) => fail(e),
            }
        }
        Command::Audit {
            action:
                AuditAction::Show {
                    since,
                    proposal,
                    json,
                    lang,
                },
        } => audit_show(
            &config.state_dir,
            since.as_deref(),
            proposal,
            json,
            lang.as_deref(),
        ),
        Command::Audit { action } => {
            let store = match Store::open(&config.state_dir) {
                Ok(s) => s,
                Err(e) => return fail(e),
            };
            match action {
                AuditAction::Verify { against } => audit_verify(&store, against.as_deref()),
                AuditAction::Show { .. } => 2,
                AuditAction::Heads => match store.audit_heads() {
                    Ok(heads) => {
                        for (id, hash) in heads {
                            say!("{}", anchor::heads_line(id, &hash));
                        }
                        0
                    }
                    Err(e) => fail(e),
                },
            }
        }
        Command::Keys {
            action: KeysAction::Show,
        } => {
            if let Err(e) = std::fs::create_dir_all(&config.state_dir) {
                return fail(format!("{}: {e}", config.state_dir.display()));
            }
            match keys::ApproverKey::load_or_create(&config.state_dir) {
                Ok(key) => {
                    say!("{}", key.key_line());
                    0
                }
                Err(e) => fail(e),
            }
        }
    }
}

async fn export_devices(config: &Config, out: Option<PathBuf>, replay: ReplayArgs) -> i32 {
    let loaded = if replay.replay.is_some() {
        config.load_replay_policy()
    } else {
        config.load_policy()
    };
    let policy = match loaded {
        Ok(p) => Arc::new(p),
        Err(e) => return fail(e),
    };
    let reader = match replay.replay {
        Some(dir) => Reader::replay(dir, replay.now.unwrap_or_else(jiff::Timestamp::now), policy),
        None => {
            let token = match Token::load(&config.state_dir) {
                Ok(t) => t,
                Err(e) => return fail(e),
            };
            match Reader::live(config, policy, token) {
                Ok(r) => r.with_timeout(config.read_timeout),
                Err(e) => return fail(e),
            }
        }
    };
    let ids = match reads::known_device_ids(&reader).await {
        Ok(ids) => ids,
        Err(e) => return fail(e),
    };
    let path = out.unwrap_or_else(|| config.state_dir.join("known-devices.json"));
    let body = serde_json::json!({ "device_ids": ids }).to_string();
    match std::fs::write(&path, body + "\n") {
        Ok(()) => {
            say!("wrote {} device IDs to {}", ids.len(), path.display());
            0
        }
        Err(e) => fail(format!("{}: {e}", path.display())),
    }
}
