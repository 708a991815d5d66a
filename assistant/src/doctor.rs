//! `fleetwatch doctor`: one OK/WARN/FAIL line per check, exit 1 when anything fails. Each line
//! says what to do about a problem, not just that there is one.

use std::os::unix::fs::PermissionsExt as _;
use std::sync::Arc;

use fleetwatch_protocol::policy::{self, Policy};
use fleetwatch_redact as redact;
use serde_json::json;

use crate::config::Config;
use crate::executor_client::ExecutorClient;
use crate::grants::Grants;
use crate::keys::{self, ApproverKey};
use crate::model::ModelConfig;
use crate::proposals;
use crate::reads::{self, Reader, Token};
use crate::store::{self, Store};

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Fine.
    Ok,
    /// Works, but the operator should know.
    Warn,
    /// Broken; `doctor` exits 1.
    Fail,
}

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// Outcome.
    pub level: Level,
    /// What was checked.
    pub name: &'static str,
    /// What was found and what to do.
    pub message: String,
}

impl std::fmt::Display for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let level = match self.level {
            Level::Ok => "OK  ",
            Level::Warn => "WARN",
            Level::Fail => "FAIL",
        };
        write!(f, "{level} {}: {}", self.name, self.message)
    }
}

fn check(level: Level, name: &'static str, message: impl Into<String>) -> Check {
    Check {
        level,
        name,
        message: message.into(),
    }
}

/// Runs every check, with the settings `env` gathered (see [`crate::service_env`]).
pub async fn run(config: &Config, env: &crate::service_env::ServiceEnv) -> Vec<Check> {
    let mut out = vec![settings(env)];
    let policy = match config.load_policy() {
        Ok(policy) => {
            out.push(check(
                Level::Ok,
                "policy",
                format!(
                    "{} loads: {} read tools, {} proposable",
                    config.policy_path.display(),
                    policy.read_tools().count(),
                    policy.propose_entries().count()
                ),
            ));
            Some(Arc::new(policy))
        }
        Err(e) => {
            out.push(check(Level::Fail, "policy", e.to_string()));
            None
        }
    };
    if let Some(policy) = &policy {
        out.push(guard_self_test(policy));
    }
    out.push(redaction_self_test());
    out.push(sign_in(config, env));
    out.extend(sign_in_scopes(config, env_lang()));
    out.extend(state_files(config));
    out.push(if config.fence.configured() {
        check(
            Level::Ok,
            "fence",
            format!(
                "{} allowlisted device(s){}",
                config.fence.device_ids.len(),
                match &config.fence.team_id {
                    Some(team) => format!(", sandbox team {team}"),
                    None => String::new(),
                }
            ),
        )
    } else {
        check(
            Level::Fail,
            "fence",
            "neither FLEETWATCH_WRITE_DEVICE_IDS nor FLEETWATCH_WRITE_TEAM_ID is set; nothing \
             can be proposed or run",
        )
    });
    out.push(if config.proposing() {
        check(Level::Ok, "autonomy", "propose: the assistant may propose; a person approves each change")
    } else {
        check(Level::Ok, "autonomy", "read-only: the assistant cannot propose (set `autonomy: propose` in settings.yaml to change)")
    });
    out.extend(executor(config).await);
    out.extend(model(env).await);
    out.push(notify(env));
    out.push(queue(config));
    if let Some(policy) = &policy {
        out.push(grants(config, policy));
    }
    out
}

fn guard_self_test(policy: &Arc<Policy>) -> Check {
    let dir = std::env::temp_dir();
    let reader = Reader::replay(dir, jiff::Timestamp::now(), Arc::clone(policy));
    let leaks: Vec<&str> = policy::EPIPHAN_WRITE_TOOLS
        .iter()
        .chain(policy::NEVER_READABLE)
        .copied()
        .filter(|tool| reader.guard(tool).is_ok())
        .collect();
    if leaks.is_empty() && reader.guard("factory_reset_device").is_err() {
        check(
            Level::Ok,
            "read-only guard",
            "refuses every write tool and any unlisted tool before sending",
        )
    } else {
        check(
            Level::Fail,
            "read-only guard",
            format!("would let through: {}", leaks.join(", ")),
        )
    }
}

fn redaction_self_test() -> Check {
    let mut sample = json!({
        "stream_key": "live_abc123secret",
        "url": "rtmp://ingest.example.com/live/live_abc123secret",
        "settings": [{"id": "password", "value": "hunter2hunter2"}],
        "note": "Authorization: Bearer abcdefghijklmnop",
    });
    redact::redact_value(&mut sample);
    let text = sample.to_string();
    let masked = !text.contains("abc123secret")
        && !text.contains("hunter2")
        && !text.contains("abcdefghijklmnop")
        && text.contains("ingest.example.com");
    let args = json!({"stream_id": "0f8fad5b-d9cb-469f-a165-70867728950e", "device_id": "19012341234", "channel_id": "1"});
    let mut copy = args.clone();
    redact::redact_value(&mut copy);
    let mut twice = sample.clone();
    redact::redact_value(&mut twice);
    if masked && copy == args && twice == sample {
        check(
            Level::Ok,
            "redaction",
            "masks stream keys, passwords and tokens; keeps valid arguments; idempotent",
        )
    } else {
        check(
            Level::Fail,
            "redaction",
            "the self-test did not mask as expected",
        )
    }
}

/// What doctor read, and where each setting came from.
fn settings(env: &crate::service_env::ServiceEnv) -> Check {
    let sources = env.sources();
    let mut message = format!(
        "read {}; {}",
        env.read.join(", "),
        if sources.is_empty() {
            "no FLEETWATCH_ setting (built-in defaults)".to_owned()
        } else {
            sources.join(", ")
        }
    );
    if env.shell_only.is_empty() {
        return check(Level::Ok, "settings", message);
    }
    message.push_str(&format!(
        ". Set only in this shell, which the service does not see: {}",
        env.shell_only.join(", ")
    ));
    check(Level::Warn, "settings", message)
}

fn sign_in(config: &Config, env: &crate::service_env::ServiceEnv) -> Check {
    match Token::load(&config.state_dir) {
        Ok(_) => {
            let from = if env
                .get("FLEETWATCH_EPIPHAN_TOKEN")
                .is_some_and(|v| !v.trim().is_empty())
            {
                "FLEETWATCH_EPIPHAN_TOKEN".to_owned()
            } else {
                format!(
                    "{} (mode 0600): {}",
                    config.state_dir.join(reads::TOKEN_FILE).display(),
                    crate::login::status_line(config).1
                )
            };
            check(
                Level::Ok,
                "sign-in",
                format!("normal sign-in present from {from}"),
            )
        }
        Err(_) if !crate::login::status_line(config).0 => {
            check(Level::Fail, "sign-in", crate::login::status_line(config).1)
        }
        Err(e) => check(Level::Fail, "sign-in", e.to_string()),
    }
}

/// The language of the person at the terminal, from `LC_ALL`, `LC_MESSAGES` or `LANG` (the
/// first one set): Spanish for `es…`, English otherwise.
pub fn env_lang() -> fleetwatch_words::Lang {
    let tag = ["LC_ALL", "LC_MESSAGES", "LANG"]
        .iter()
        .filter_map(|v| std::env::var(v).ok())
        .find(|v| !v.trim().is_empty())
        .unwrap_or_default();
    if tag.to_ascii_lowercase().starts_with("es") {
        fleetwatch_words::Lang::Es
    } else {
        fleetwatch_words::Lang::En
    }
}

/// The normal sign-in must only read: a scope granted to it that does not say it only reads
/// could let a compromised assistant write to the fleet around the executor.
fn sign_in_scopes(config: &Config, lang: fleetwatch_words::Lang) -> Option<Check> {
    let slot = crate::login::slot(config);
    let scopes = slot.scopes().ok().flatten()?;
    let writing: Vec<&str> = scopes
        .iter()
        .map(String::as_str)
        .filter(|s| !fleetwatch_signin::scopes::is_read_only(s))
        .collect();
    let shown = fleetwatch_signin::scopes::shown(&scopes);
    Some(if writing.is_empty() {
        check(
            Level::Ok,
            "sign-in scopes",
            match lang {
                fleetwatch_words::Lang::En => format!("the normal sign-in only reads ({shown})"),
                fleetwatch_words::Lang::Es => {
                    format!("la sesión normal solo lee ({shown})")
                }
            },
        )
    } else {
        let writing = writing.join(" ");
        check(
            Level::Warn,
            "sign-in scopes",
            match lang {
                fleetwatch_words::Lang::En => format!(
                    "the normal sign-in holds {writing}, which may be able to change devices \
                     without the executor; sign in again with `fleetwatch login` (it asks only \
                     for reading) as an Epiphan user who can only view"
                ),
                fleetwatch_words::Lang::Es => format!(
                    "la sesión normal tiene {writing}, que quizá pueda cambiar equipos sin pasar \
                     por el ejecutor; vuelve a iniciar sesión con `fleetwatch login` (solo pide \
                     lectura) como un usuario de Epiphan que solo pueda ver"
                ),
            },
        )
    })
}

fn state_files(config: &Config) -> Vec<Check> {
    let mut out = Vec::new();
    match std::fs::metadata(&config.state_dir) {
        Ok(meta) => {
            let mode = meta.permissions().mode() & 0o777;
            out.push(if mode & 0o002 != 0 {
                check(
                    Level::Fail,
                    "state folder",
                    format!(
                        "{} is world-writable ({mode:04o}); run chmod o-w",
                        config.state_dir.display()
                    ),
                )
            } else {
                check(
                    Level::Ok,
                    "state folder",
                    format!("{} ({mode:04o})", config.state_dir.display()),
                )
            });
        }
        Err(e) => out.push(check(
            Level::Fail,
            "state folder",
            format!("{}: {e}", config.state_dir.display()),
        )),
    }
    let key_path = config.state_dir.join(keys::KEY_FILE);
    out.push(match ApproverKey::load(&key_path) {
        Ok(key) => check(
            Level::Ok,
            "signing key",
            format!("present, mode 0600, key ID {}", key.key_id().to_hex()),
        ),
        Err(keys::KeyError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            check(
                Level::Warn,
                "signing key",
                "not made yet; `fleetwatch serve` or `fleetwatch keys show` creates it",
            )
        }
        Err(e) => check(Level::Fail, "signing key", e.to_string()),
    });
    out
}

/// The executor's answer, and whether it binds approvals to a person (DESIGN §9).
async fn executor(config: &Config) -> Vec<Check> {
    let client = ExecutorClient::new(&config.executor_socket)
        .with_timeout(std::time::Duration::from_secs(10));
    let status = client.status().await;
    let mut out = vec![executor_reachable(config, &status)];
    if let Ok(status) = &status {
        out.push(person(status));
        // Outside the trial mode every approval is confirmed there.
        if !status.trial {
            out.push(confirm_page(&config.confirm_origin).await);
            out.push(origin_held(status));
        }
    }
    out
}

/// Whether the confirm page's address is held as every Execute with passkeys requires, as the
/// executor reads the kernel's socket table for its `Status` (it alone knows the owner).
fn origin_held(status: &fleetwatch_protocol::wire::StatusReport) -> Check {
    const NAME: &str = "confirm origin held";
    match &status.confirm_origin_not_held {
        None => check(
            Level::Ok,
            NAME,
            "by the owner the executor names alone, on the loopback addresses (the executor \
             checked)",
        ),
        Some(why) => check(
            Level::Fail,
            NAME,
            format!(
                "the executor says: {why}. Every passkey is refused until then: an \
                 administrator runs `sudo systemctl enable --now fleetwatch-confirm.socket` \
                 and `fleetwatch-executor doctor`"
            ),
        ),
    }
}

/// Where the model is and what leaves the machine; for a Chat Completions server, whether it
/// answers and serves the model named. (Anthropic's service is not asked: a doctor run should
/// not need the internet, and its key is checked by the first question.)
/// Where the team's channel hears of waiting changes, and what would leave the machine; sends
/// nothing.
fn notify(env: &crate::service_env::ServiceEnv) -> Check {
    const NAME: &str = "notify";
    let page = "the approval page's address";
    match crate::notify::NotifyConfig::from_values(
        env.get("FLEETWATCH_NOTIFY_URL").as_deref(),
        env.get("FLEETWATCH_NOTIFY_FORMAT").as_deref(),
        page,
        env_lang(),
    ) {
        Ok(None) => check(
            Level::Ok,
            NAME,
            "off (FLEETWATCH_NOTIFY_URL unset): nothing is sent about waiting changes",
        ),
        Ok(Some(cfg)) => check(Level::Ok, NAME, cfg.describe()),
        Err(problem) => check(Level::Fail, NAME, problem),
    }
}

async fn model(env: &crate::service_env::ServiceEnv) -> Vec<Check> {
    // The service's key file is root's and reaches the service through systemd
    // (LoadCredential=): a doctor run as the service's user cannot read it, and says so.
    let denied = std::cell::Cell::new(None);
    let read = |path: &std::path::Path| match crate::model::read_key_file(path) {
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            denied.set(Some(path.to_path_buf()));
            Ok(String::new())
        }
        other => other,
    };
    let found = ModelConfig::from_lookup(|name| env.get(name), read);
    if let Some(path) = denied.take() {
        return vec![check(
            Level::Warn,
            "model",
            format!(
                "the service reads its model key from {} through systemd; this user cannot \
                 read it, so the model is not checked here (run doctor as root to check it)",
                path.display()
            ),
        )];
    }
    let cfg = match found {
        Err(problem) => return vec![check(Level::Fail, "model", problem)],
        Ok(None) => {
            return vec![check(
                Level::Ok,
                "model",
                "off: keyword answers only (read-only, cannot propose); nothing leaves the machine",
            )];
        }
        Ok(Some(cfg)) => cfg,
    };
    if let Some(problem) = cfg.base_url_problem() {
        return vec![check(Level::Fail, "model", problem)];
    }
    let local = cfg.is_local();
    let mut out = vec![check(
        if local { Level::Ok } else { Level::Warn },
        "model",
        format!(
            "on ({}, {} API): questions and redacted fleet data are sent to {}{}",
            cfg.model,
            cfg.api.label(),
            cfg.recipient(),
            if local {
                "; they do not leave the machine"
            } else {
                ""
            }
        ),
    )];
    let limits = format!(
        "{} s a call, {} s a question ({} and {})",
        cfg.request_timeout.as_secs(),
        cfg.wall_clock.as_secs(),
        crate::model::ENV_CALL_TIMEOUT,
        crate::model::ENV_QUESTION_TIMEOUT
    );
    out.push(check(Level::Ok, "model limits", limits));
    if cfg.api == crate::model::ModelApi::OpenAi {
        out.push(match crate::model::list_models(&cfg).await {
            Err(why) => check(Level::Fail, "model server", why),
            Ok(models) if models.contains(&cfg.model) => check(
                Level::Ok,
                "model server",
                format!("answers at {} and serves {}", cfg.base_url, cfg.model),
            ),
            Ok(models) => check(
                Level::Fail,
                "model server",
                format!(
                    "answers at {}, but does not list {}; it lists: {} (set FLEETWATCH_AI_MODEL \
                     to one of them)",
                    cfg.base_url,
                    cfg.model,
                    match models.len() {
                        0 => "nothing".to_owned(),
                        n if n > 20 => format!("{}, and {} more", models[..20].join(", "), n - 20),
                        _ => models.join(", "),
                    }
                ),
            ),
        });
    }
    // A server the team runs (or any Chat Completions server) is probed: whether it calls tools
    // and how fast, against the limit. Anthropic's hosted service is not (see above).
    if cfg.api == crate::model::ModelApi::OpenAi || cfg.is_local() {
        out.push(model_probe(&cfg).await);
    }
    out
}

/// One probe with one tool: a real tool call within the call limit is OK; text instead of a
/// call, or more than half the limit, is a warning; no answer in time is a failure.
async fn model_probe(cfg: &ModelConfig) -> Check {
    const NAME: &str = "model tool call";
    let limit = cfg.request_timeout;
    match crate::model::probe(cfg).await {
        Err(why) => check(Level::Fail, NAME, format!("the probe failed: {why}")),
        Ok(probe) => {
            let took = format!(
                "{:.1} s of the {} s call limit",
                probe.elapsed.as_secs_f64(),
                limit.as_secs()
            );
            if !probe.called_tool {
                check(
                    Level::Warn,
                    NAME,
                    format!(
                        "{} answered a one-tool probe with text, not a tool call ({took}): this \
                         model may not read the fleet; its answers are set aside when they rest \
                         on nothing read",
                        cfg.model
                    ),
                )
            } else if probe.elapsed * 2 > limit {
                check(
                    Level::Warn,
                    NAME,
                    format!(
                        "{} called the tool, but slowly ({took}); a question takes several calls: \
                         consider raising {}",
                        cfg.model,
                        crate::model::ENV_CALL_TIMEOUT
                    ),
                )
            } else {
                check(
                    Level::Ok,
                    NAME,
                    format!(
                        "{} answered a one-tool probe with a tool call ({took})",
                        cfg.model
                    ),
                )
            }
        }
    }
}

/// Whether the confirm page (`fleetwatch-confirm serve`) answers at its origin: every approval
/// that needs a person is confirmed there (DESIGN §9).
async fn confirm_page(origin: &str) -> Check {
    const NAME: &str = "confirm page";
    let answered = async {
        let client = fleetwatch_signin::tls::client_builder()
            .timeout(std::time::Duration::from_secs(5))
            .build()
            .ok()?;
        let response = client.get(format!("{origin}/")).send().await.ok()?;
        let ok = response.status().is_success();
        let body = response.text().await.ok()?;
        (ok && body.contains("<main id=\"confirm\">")).then_some(())
    }
    .await;
    match answered {
        Some(()) => check(Level::Ok, NAME, format!("answers at {origin}/")),
        None => check(
            Level::Fail,
            NAME,
            format!(
                "nothing answers at {origin}/ as the confirm page: start it (`systemctl enable \
                 --now fleetwatch-confirm.socket`, or `fleetwatch-confirm serve`) or set \
                 FLEETWATCH_CONFIRM_ORIGIN to where it listens; without it no approval can be \
                 confirmed with a passkey"
            ),
        ),
    }
}

/// Whether the executor binds approvals to a person, as its `Status` reports it: closed by
/// default (nobody enrolled fails), the trial mode warns, enrolled persons pass.
fn person(status: &fleetwatch_protocol::wire::StatusReport) -> Check {
    const NAME: &str = "approved by a person";
    if status.trial {
        return check(
            Level::Warn,
            NAME,
            "the executor runs in trial mode (passkeys: {quorum: 0}): a change is accepted on the \
             assistant's signature alone, not bound to a person; an administrator enrols people \
             with `fleetwatch-confirm enrol` and removes `quorum: 0`",
        );
    }
    if status.passkeys_enrolled == 0 {
        return check(
            Level::Fail,
            NAME,
            "no person is enrolled on the executor: every change is refused until an \
             administrator enrols one with `fleetwatch-confirm enrol`",
        );
    }
    let persons = crate::page::passkeys::enrolled(status).persons();
    let second_person = status.quorums.iter().any(|q| q.disruptive > 1);
    check(
        Level::Ok,
        NAME,
        format!(
            "{persons} person(s) with {} passkey(s) enrolled on the executor; persons per change: \
             {}{}",
            status.passkeys_enrolled,
            fleetwatch_protocol::wire::ToolQuorum::summary(&status.quorums),
            if second_person {
                " (a second person approves on their own page session)"
            } else {
                ""
            }
        ),
    )
}

fn executor_reachable(
    config: &Config,
    status: &Result<fleetwatch_protocol::wire::StatusReport, impl std::fmt::Display>,
) -> Check {
    // Without proposing an absent executor costs nothing; with it, nothing can be approved.
    let missing = if config.proposing() {
        Level::Fail
    } else {
        Level::Warn
    };
    match status {
        Ok(status) => {
            let ours = ApproverKey::load(&config.state_dir.join(keys::KEY_FILE))
                .ok()
                .map(|k| k.key_id());
            match ours {
                Some(id) if status.key_ids.contains(&id) => check(
                    Level::Ok,
                    "executor",
                    format!(
                        "reachable (version {}), our key {} is installed, sandbox sign-in {}",
                        status.version,
                        id.to_hex(),
                        if status.sandbox_sign_in {
                            "present"
                        } else {
                            "missing"
                        }
                    ),
                ),
                Some(id) => check(
                    missing,
                    "executor",
                    format!(
                        "reachable, but our key {} is not installed there; install the line from \
                         `fleetwatch keys show`",
                        id.to_hex()
                    ),
                ),
                None => check(
                    missing,
                    "executor",
                    "reachable, but this assistant has no signing key yet",
                ),
            }
        }
        Err(e) => check(missing, "executor", e.to_string()),
    }
}

fn queue(config: &Config) -> Check {
    let path = config.state_dir.join(store::DB_FILE);
    if !path.exists() {
        return check(Level::Ok, "queue", "no proposals yet");
    }
    match Store::open_path(&path) {
        Ok(store) => {
            let pending = store.pending_count().unwrap_or(0);
            let hourly = store.non_denied_last_hour(store::now_secs()).unwrap_or(0);
            let level = if pending >= proposals::MAX_PENDING || hourly >= proposals::MAX_PER_HOUR {
                Level::Warn
            } else {
                Level::Ok
            };
            check(
                level,
                "queue",
                format!(
                    "{pending} of {} pending; {hourly} of {} proposals in the last hour",
                    proposals::MAX_PENDING,
                    proposals::MAX_PER_HOUR
                ),
            )
        }
        Err(e) => check(Level::Fail, "queue", e.to_string()),
    }
}

fn grants(config: &Config, _policy: &Policy) -> Check {
    match Grants::load(&config.state_dir) {
        Ok(grants) => {
            let open: Vec<&str> = grants.open_categories().collect();
            if open.is_empty() {
                check(
                    Level::Warn,
                    "grants",
                    "nothing granted: the model can read nothing; `fleetwatch grants open fleet`",
                )
            } else {
                check(Level::Ok, "grants", format!("open: {}", open.join(", ")))
            }
        }
        Err(e) => check(Level::Fail, "grants", e.to_string()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use fleetwatch_protocol::wire::{StatusReport, ToolQuorum};

    fn status(enrolled: u32, need: u32) -> StatusReport {
        StatusReport {
            version: "test".into(),
            fence_configured: true,
            sandbox_sign_in: true,
            key_ids: Vec::new(),
            policy_digest: [0; 32],
            chain_head: [0; 32],
            passkeys_enrolled: enrolled,
            approvers: Vec::new(),
            trial: need == 0,
            quorums: vec![ToolQuorum {
                tool: "batch_reboot".into(),
                calm: need,
                disruptive: need,
            }],
            limits: Default::default(),
            confirm_origin_not_held: None,
            freeze: Vec::new(),
        }
    }

    #[test]
    fn says_whether_the_executor_binds_approvals_to_a_person() {
        let trial = person(&status(0, 0));
        assert_eq!(trial.level, Level::Warn);
        assert!(trial.message.contains("trial mode"), "{trial}");
        let refused = person(&status(0, 1));
        assert_eq!(refused.level, Level::Fail);
        assert!(
            refused.message.contains("fleetwatch-confirm enrol"),
            "{refused}"
        );
        let two = person(&status(2, 2));
        assert_eq!(two.level, Level::Ok);
        assert!(two.message.contains("2 passkey(s)"), "{two}");
        // The quorum in force, per tool, and that a second person is part of it.
        assert!(
            two.message.contains("persons per change: batch_reboot 2"),
            "{two}"
        );
        assert!(two.message.contains("a second person"), "{two}");
        let one = person(&status(2, 1));
        assert!(one.message.contains("batch_reboot 1"), "{one}");
        assert!(!one.message.contains("second person"), "{one}");
    }

    #[test]
    fn says_what_the_executor_says_of_who_holds_the_confirm_origin() {
        let held = origin_held(&status(1, 1));
        assert_eq!(held.level, Level::Ok);
        let mut taken = status(1, 1);
        taken.confirm_origin_not_held = Some("uid 1000 also listens on port 8768".into());
        let taken = origin_held(&taken);
        assert_eq!(taken.level, Level::Fail);
        assert!(
            taken.message.contains("uid 1000 also listens on port 8768")
                && taken.message.contains("fleetwatch-confirm.socket"),
            "{taken}"
        );
    }
}
