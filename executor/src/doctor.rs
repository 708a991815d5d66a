//! `doctor`: one line per check, OK / WARN / FAIL. Any FAIL means the executor would refuse
//! to write (or should not be trusted to), and the command exits 1.

use std::os::unix::fs::MetadataExt;

use crate::config::Config;
use crate::epiphan::Epiphan;
use crate::{approvers, audit, context, describe, epiphan, os, reads, slot, store};
use fleetwatch_signin::SlotStatus;

/// A check's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Fine.
    Ok,
    /// Works, but look at it.
    Warn,
    /// Broken: writes are refused or unsafe.
    Fail,
}

/// One line of the report.
#[derive(Debug, Clone)]
pub struct Line {
    /// Verdict.
    pub level: Level,
    /// What was checked.
    pub check: &'static str,
    /// What was found and, on failure, what to do.
    pub message: String,
}

impl std::fmt::Display for Line {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let level = match self.level {
            Level::Ok => "OK  ",
            Level::Warn => "WARN",
            Level::Fail => "FAIL",
        };
        write!(f, "{level} {}: {}", self.check, self.message)
    }
}

fn line(level: Level, check: &'static str, message: impl Into<String>) -> Line {
    Line {
        level,
        check,
        message: message.into(),
    }
}

/// Runs every check.
pub async fn doctor(config: &Config) -> Vec<Line> {
    let mut lines = Vec::new();
    lines.push(if config.allowed_uids.is_empty() {
        line(
            Level::Fail,
            "allowed uids",
            "none configured; set allowed_uids to the assistant's uid in the configuration file",
        )
    } else {
        line(
            Level::Ok,
            "allowed uids",
            format!("{:?}", config.allowed_uids),
        )
    });
    let fence = &config.fence;
    lines.push(match (&fence.allowlist, &fence.team_id) {
        (None, None) => line(Level::Fail, "fence", "neither FLEETWATCH_WRITE_DEVICE_IDS nor FLEETWATCH_WRITE_TEAM_ID is set; every write is refused"),
        (list, team) => line(
            Level::Ok,
            "fence",
            format!(
                "{}{}",
                list.as_ref().map(|l| format!("allowlist of {} device(s)", l.len())).unwrap_or_else(|| "no allowlist".into()),
                team.as_ref().map(|t| format!(", team {t}")).unwrap_or_default()
            ),
        ),
    });
    let approvers = approvers::load(&config.approver_keys);
    lines.push(match &approvers {
        Ok(file) => line(
            Level::Ok,
            "approver file",
            format!(
                "{}: {} assistant key(s), {} passkey(s)",
                config.approver_keys.display(),
                file.keys.key_ids().len(),
                file.passkeys.len()
            ),
        ),
        Err(e) => line(Level::Fail, "approver file", e.to_string()),
    });
    let policy = context::load_policy(&config.policy);
    lines.push(match &policy {
        Ok(policy) => line(
            Level::Ok,
            "policy",
            format!(
                "{}: {} proposable tool(s), digest {}",
                config.policy.display(),
                policy.propose_entries().count(),
                fleetwatch_protocol::hex::encode(&policy.whole_digest())
            ),
        ),
        Err(e) => line(Level::Fail, "policy", e.to_string()),
    });
    if let Ok(file) = &approvers {
        lines.extend(person(config, &file.passkeys, policy.as_ref().ok()));
    }
    // Outside the trial mode every change is confirmed on the confirm page, at the origins
    // assertions are accepted from.
    if !config.passkeys.trial() {
        for origin in &config.passkeys.origins {
            lines.push(confirm_page(origin).await);
        }
        // What each Execute checks: the origin's port held by its owner alone.
        let owner = config.passkeys.origin_owner;
        lines.push(
            match crate::holder::check(&config.passkeys.origins, owner) {
                Ok(()) => line(
                    Level::Ok,
                    "confirm origin held",
                    format!(
                        "by uid {owner} alone (passkeys.origin_owner), on the loopback addresses"
                    ),
                ),
                Err(why) => line(
                    Level::Fail,
                    "confirm origin held",
                    format!(
                        "{why}: every passkey is refused until uid {owner} alone holds it \
                         (`systemctl enable --now fleetwatch-confirm.socket`; \
                         passkeys.origin_owner names the owner)"
                    ),
                ),
            },
        );
    }
    lines.push(
        match epiphan::check_url(&config.epiphan_url, config.allow_loopback_http) {
            Ok(()) => line(Level::Ok, "Epiphan URL", config.epiphan_url.clone()),
            Err(e) => line(Level::Fail, "Epiphan URL", e.to_string()),
        },
    );
    lines.push(socket_dir(config));
    lines.push(running(config));
    lines.push(sign_in(config).await);
    match context::open_store(config) {
        Err(e) => {
            lines.push(line(Level::Fail, "state folder", e.to_string()));
            lines.push(limits(config, None));
        }
        Ok(store) => {
            lines.push(line(
                Level::Ok,
                "state folder",
                config.state_dir.display().to_string(),
            ));
            lines.extend(database(config));
            lines.push(limits(config, Some(&store)));
            lines.push(audit_budget(config, &store));
            lines.push(freeze(config));
        }
    }
    lines
}

/// The limits no signature lifts (DESIGN §10), with where they stand now when the store can
/// be read: writes in the last hour and the devices still cooling down.
fn limits(config: &Config, store: Option<&store::Store>) -> Line {
    let l = &config.limits;
    let mut text = format!(
        "cooldown {} min per device after a disruptive change; at most {} writes an hour; an \
         event with no end counts as on for {} h after its start",
        l.cooldown_minutes,
        l.writes_per_hour,
        l.open_event_minutes / 60
    );
    let Some(store) = store else {
        return line(Level::Ok, "limits", text);
    };
    match store.limits_now(i64::from(l.cooldown_minutes) * 60) {
        Ok((recent, resting)) => {
            text.push_str(&format!("; {recent} write(s) in the last hour"));
            if !resting.is_empty() {
                let names: Vec<&str> = resting.iter().map(|r| r.device.as_str()).collect();
                text.push_str(&format!("; cooling down: {}", names.join(", ")));
            }
            let level = if recent >= l.writes_per_hour {
                Level::Warn
            } else {
                Level::Ok
            };
            line(level, "limits", text)
        }
        Err(e) => line(
            Level::Fail,
            "limits",
            format!("{text}; the store could not be read: {e}"),
        ),
    }
}

/// The freeze windows in force now and the next one, in the time the machine shows (UTC).
fn freeze(config: &Config) -> Line {
    const CHECK: &str = "freeze";
    if config.freeze.is_empty() {
        return line(
            Level::Ok,
            CHECK,
            "no freeze window (freeze: in executor.yaml)",
        );
    }
    let at = |t: i64| {
        jiff::Timestamp::from_second(t)
            .map(fleetwatch_protocol::fleet::format_time)
            .unwrap_or_else(|_| t.to_string())
    };
    let reports = crate::freeze::report(&config.freeze, jiff::Timestamp::now());
    let mut parts: Vec<String> = reports
        .iter()
        .map(|r| {
            if r.in_force {
                format!("{} frozen until {}: {}", r.holds, at(r.end), r.reason)
            } else {
                format!(
                    "next: {} frozen {} to {}: {}",
                    r.holds,
                    at(r.start),
                    at(r.end),
                    r.reason
                )
            }
        })
        .collect();
    if parts.is_empty() {
        parts.push("none in force, none ahead".into());
    }
    let level = if reports.iter().any(|r| r.in_force) {
        Level::Warn
    } else {
        Level::Ok
    };
    line(
        level,
        CHECK,
        format!("{} window(s); {}", config.freeze.len(), parts.join("; ")),
    )
}

/// How much of its audit budget `executor.db` uses: a warning from 90 %, a failure at it, when
/// every approval is refused as busy.
fn audit_budget(config: &Config, store: &store::Store) -> Line {
    const CHECK: &str = "audit budget";
    let budget_mib = config.limits.audit_budget_mib;
    let size = match store.size_bytes() {
        Ok(size) => size,
        Err(e) => {
            return line(
                Level::Fail,
                CHECK,
                format!("the size could not be read: {e}"),
            );
        }
    };
    let budget = u64::from(budget_mib) * 1024 * 1024;
    let text = format!(
        "executor.db holds {:.1} MiB of its {budget_mib} MiB (limits.audit_budget_mib)",
        size as f64 / (1024.0 * 1024.0)
    );
    if size >= budget {
        line(
            Level::Fail,
            CHECK,
            format!(
                "{text}: at the budget every approval is refused as busy; its rows may not be \
                 deleted, so raise the budget where the disk allows"
            ),
        )
    } else if size >= budget / 10 * 9 {
        line(
            Level::Warn,
            CHECK,
            format!("{text}: near it; at the budget every approval is refused as busy"),
        )
    } else {
        line(Level::Ok, CHECK, text)
    }
}

/// Whether approvals are bound to a person: the enrolled passkeys, where their assertions must
/// come from, and how many each tool needs (DESIGN §9).
fn person(
    config: &Config,
    passkeys: &fleetwatch_protocol::passkey::Approvers,
    policy: Option<&fleetwatch_protocol::policy::Policy>,
) -> Vec<Line> {
    const CHECK: &str = "approved by a person";
    let settings = &config.passkeys;
    let mut lines = Vec::new();
    lines.push(if settings.trial() {
        line(
            Level::Warn,
            CHECK,
            "trial mode (passkeys: {quorum: 0}): a change no other setting raises is accepted on \
             the assistant's signature alone, not bound to a person; enrol people with \
             `fleetwatch-confirm enrol` and remove `quorum: 0`",
        )
    } else if passkeys.is_empty() {
        line(
            Level::Fail,
            CHECK,
            "no person is enrolled: every change is refused; enrol one with `fleetwatch-confirm \
             enrol --person ID --name NAME | sudo fleetwatch-executor approvers add -`",
        )
    } else {
        line(
            Level::Ok,
            CHECK,
            format!(
                "{} person(s) with {} passkey(s) enrolled: {}",
                passkeys.persons(),
                passkeys.len(),
                enrolled_persons(passkeys)
            ),
        )
    });
    if settings.device_bound {
        lines.push(line(
            Level::Ok,
            "device-bound passkeys",
            "only device-bound passkeys are accepted (passkeys.device_bound)",
        ));
    }
    lines.push(line(
        Level::Ok,
        "passkey origins",
        format!(
            "RP ID {}, assertions accepted from {}",
            settings.rp_id,
            settings.origins.join(", ")
        ),
    ));
    let Some(policy) = policy else {
        return lines;
    };
    if let Err(e) = context::check_quorum_tools(config, policy) {
        lines.push(line(Level::Fail, "quorum", e.to_string()));
        return lines;
    }
    let quorums = describe::quorums(settings, policy);
    let shown = fleetwatch_protocol::wire::ToolQuorum::summary(&quorums);
    let enrolled = u32::try_from(passkeys.persons()).unwrap_or(u32::MAX);
    let unreachable: Vec<&str> = quorums
        .iter()
        .filter(|q| q.calm.max(q.disruptive) > enrolled && enrolled > 0)
        .map(|q| q.tool.as_str())
        .collect();
    lines.push(if unreachable.is_empty() {
        line(Level::Ok, "quorum", format!("persons per change: {shown}"))
    } else {
        line(
            Level::Fail,
            "quorum",
            format!(
                "persons per change: {}; {} enrolled, so {} can never be approved: enrol more \
                 persons or lower the quorum",
                shown,
                enrolled,
                unreachable.join(", ")
            ),
        )
    });
    lines
}

/// Whether the confirm page (`fleetwatch-confirm serve`) answers at an origin assertions are
/// accepted from: a GET of its idle page, which carries `<main id="confirm">`.
async fn confirm_page(origin: &str) -> Line {
    const CHECK: &str = "confirm page";
    let answered = async {
        let client = fleetwatch_signin::tls::client_builder()
            .timeout(std::time::Duration::from_secs(5))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .ok()?;
        let response = client.get(format!("{origin}/")).send().await.ok()?;
        let ok = response.status().is_success();
        let body = response.text().await.ok()?;
        (ok && body.contains("<main id=\"confirm\">")).then_some(())
    }
    .await;
    match answered {
        Some(()) => line(Level::Ok, CHECK, format!("answers at {origin}/")),
        None => line(
            Level::Fail,
            CHECK,
            format!(
                "nothing answers at {origin}/ as the confirm page, so no person can approve a \
                 change: start it (`systemctl enable --now fleetwatch-confirm.socket`, or \
                 `fleetwatch-confirm serve`) or correct passkeys.origins"
            ),
        ),
    }
}

/// The enrolled persons in a few words: `Ana Gómez (ana: es256 3fa2 …, device-bound)`.
pub fn enrolled_persons(passkeys: &fleetwatch_protocol::passkey::Approvers) -> String {
    let mut persons: Vec<(&str, &str, Vec<String>)> = Vec::new();
    for r in passkeys.records() {
        let key = r.person();
        let shown = format!(
            "{} {}, {}",
            r.algorithm(),
            r.fingerprint(),
            r.backup().name()
        );
        match persons.iter_mut().find(|(k, _, _)| *k == key) {
            Some((_, _, keys)) => keys.push(shown),
            None => persons.push((key, r.name(), vec![shown])),
        }
    }
    persons
        .iter()
        .map(|(id, name, keys)| format!("{name} ({id}: {})", keys.join("; ")))
        .collect::<Vec<_>>()
        .join("; ")
}

fn socket_dir(config: &Config) -> Line {
    let dir = config
        .socket
        .parent()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_default();
    if !dir.exists() {
        return line(
            Level::Warn,
            "socket directory",
            format!(
                "{} does not exist yet; `serve` creates it (mode 0750)",
                dir.display()
            ),
        );
    }
    if let Err(e) = os::check_dir(&dir) {
        return line(Level::Fail, "socket directory", e.to_string());
    }
    match std::fs::metadata(&dir) {
        Ok(meta) if meta.uid() == os::euid() => {
            line(Level::Ok, "socket directory", dir.display().to_string())
        }
        Ok(meta) => line(
            Level::Fail,
            "socket directory",
            format!(
                "{} is owned by uid {}, not the executor's user; run `chown {} {}`",
                dir.display(),
                meta.uid(),
                os::euid(),
                dir.display()
            ),
        ),
        Err(e) => line(Level::Fail, "socket directory", e.to_string()),
    }
}

/// Whether an executor answers on the socket, asked with a real `Status` request so the live
/// one logs no half-open connection (a bare connect would leave a `frame_truncated` row).
fn running(config: &Config) -> Line {
    use fleetwatch_protocol::wire::Response;
    const CHECK: &str = "running executor";
    if !config.socket.exists() {
        return line(
            Level::Warn,
            CHECK,
            format!(
                "none answers: {} does not exist (start it with `fleetwatch-executor serve`)",
                config.socket.display()
            ),
        );
    }
    // A uid that is not allowed is closed without an answer and audited as a refused peer:
    // asking from one would only add that row to the live executor's log.
    if !config.allowed_uids.contains(&os::euid()) {
        return line(
            Level::Ok,
            CHECK,
            format!(
                "not asked: this user (uid {}) is not on allowed_uids; `fleetwatch doctor`, run \
                 as the assistant's user, checks the connection",
                os::euid()
            ),
        );
    }
    match os::probe_status(&config.socket, std::time::Duration::from_secs(5)) {
        Ok(Response::Status(status)) => line(
            Level::Ok,
            CHECK,
            format!(
                "version {} answers on {} (audit head {})",
                status.version,
                config.socket.display(),
                fleetwatch_protocol::hex::encode(&status.chain_head)
            ),
        ),
        Ok(Response::Refused(refusal)) => line(
            Level::Warn,
            CHECK,
            format!(
                "the executor on {} refused the status request: {}",
                config.socket.display(),
                refused(&refusal)
            ),
        ),
        Ok(_) => line(
            Level::Warn,
            CHECK,
            "the executor answered something other than its status",
        ),
        Err(e) => line(
            Level::Warn,
            CHECK,
            format!(
                "none answers on {} ({e}); a socket left by a stopped executor is replaced at the next start",
                config.socket.display()
            ),
        ),
    }
}

/// A refusal as `audit show` says it, with its code, and for the sign-in what to run.
fn refused(refusal: &fleetwatch_protocol::Refusal) -> String {
    use fleetwatch_protocol::Refusal;
    let code = refusal.code();
    let words = fleetwatch_protocol::refusal::code_words(code, false).unwrap_or(code);
    match refusal {
        Refusal::NoSignIn | Refusal::SignInExpired => {
            format!("{words} ({code}); run `fleetwatch-executor login --sandbox` again")
        }
        _ => format!("{words} ({code})"),
    }
}

async fn sign_in(config: &Config) -> Line {
    let state = match slot::status(config) {
        Ok(SlotStatus::Empty) => {
            return line(
                Level::Fail,
                "sandbox sign-in",
                "not signed in; run `fleetwatch-executor login --sandbox --known-devices FILE` (OAuth in a browser, or --token-file for a static token)",
            );
        }
        Ok(SlotStatus::Dead(d)) => {
            return line(
                Level::Fail,
                "sandbox sign-in",
                format!(
                    "{d}; run `fleetwatch-executor login --sandbox` again (serve exits 78 until then)"
                ),
            );
        }
        Ok(state) => state,
        Err(e) => return line(Level::Fail, "sandbox sign-in", e.to_string()),
    };
    let token = match slot::token(config).await {
        Ok(t) => t,
        Err(r) => {
            let now = slot::status(config)
                .map(|s| s.to_string())
                .unwrap_or_else(|_| state.to_string());
            return line(
                Level::Fail,
                "sandbox sign-in",
                format!("{now}; {}", refused(&r)),
            );
        }
    };
    // Read again: using the slot may just have renewed it.
    let state = slot::status(config).unwrap_or(state);
    if epiphan::check_url(&config.epiphan_url, config.allow_loopback_http).is_err() {
        return line(
            Level::Fail,
            "sandbox sign-in",
            "stored, but the Epiphan URL is refused",
        );
    }
    let http = match epiphan::http_client() {
        Ok(h) => h,
        Err(e) => return line(Level::Fail, "sandbox sign-in", e),
    };
    let epiphan =
        match Epiphan::connect(&http, &config.epiphan_url, &token, config.read_timeout).await {
            Ok(e) => e,
            Err(e) => return line(Level::Fail, "sandbox sign-in", refused(&reads::refusal(e))),
        };
    let list = reads::device_list(&epiphan).await;
    epiphan.close().await;
    match list {
        Err(r) => line(Level::Fail, "sandbox sign-in", refused(&r)),
        Ok(list) => match (&config.fence.team_id, &list.team_id) {
            (Some(want), Some(got)) if want != got => line(
                Level::Fail,
                "sandbox sign-in",
                format!("signed in to team {got}, but FLEETWATCH_WRITE_TEAM_ID is {want}"),
            ),
            (Some(_), None) => line(
                Level::Fail,
                "sandbox sign-in",
                "FLEETWATCH_WRITE_TEAM_ID is set but the sandbox reports no team ID",
            ),
            _ => line(
                Level::Ok,
                "sandbox sign-in",
                format!(
                    "{state}; {} device(s) on the sandbox team",
                    list.devices.len()
                ),
            ),
        },
    }
}

fn database(config: &Config) -> Vec<Line> {
    let conn = match store::connect(&config.database()) {
        Ok(c) => c,
        Err(e) => return vec![line(Level::Fail, "database", e.to_string())],
    };
    let mut lines = Vec::new();
    lines.push(match store::pragmas(&conn) {
        Ok((mode, 2)) if mode.eq_ignore_ascii_case("wal") => {
            line(Level::Ok, "database", "WAL, synchronous=FULL")
        }
        Ok((mode, sync)) => line(
            Level::Fail,
            "database",
            format!("journal_mode={mode}, synchronous={sync}; expected WAL and FULL (2)"),
        ),
        Err(e) => line(Level::Fail, "database", e.to_string()),
    });
    lines.push(match audit::guarded(&conn) {
        Ok(true) => line(Level::Ok, "audit guards", "UPDATE and DELETE triggers installed"),
        Ok(false) => line(Level::Fail, "audit guards", "a trigger that keeps the audit append-only is missing; the table was altered behind the program's back"),
        Err(e) => line(Level::Fail, "audit guards", e.to_string()),
    });
    lines.push(match audit::verify(&conn) {
        Ok((rows, head)) => line(
            Level::Ok,
            "audit chain",
            format!(
                "{rows} row(s), head {}",
                fleetwatch_protocol::hex::encode(&head)
            ),
        ),
        Err(e) => line(Level::Fail, "audit chain", e.to_string()),
    });
    lines.push(receipt_key(config, &conn));
    lines
}

/// The receipt key: its public half, and whether it is the key that signed the newest
/// receipt statement (a lost or replaced key is said; receipts given before still verify with
/// the public key they were checked with).
fn receipt_key(config: &Config, conn: &rusqlite::Connection) -> Line {
    const CHECK: &str = "receipt key";
    // An executor.db from before receipts has no evidence table: no statement yet.
    let newest: Option<(String, Vec<u8>)> = conn
        .query_row(
            "SELECT statement, statement_signature FROM evidence WHERE statement IS NOT NULL \
             ORDER BY rowid DESC LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .ok();
    let path = crate::receipt::key_path(config);
    match (crate::receipt::read_key(config), newest) {
        (Err(e), _) => line(Level::Fail, CHECK, e),
        (Ok(None), None) => line(
            Level::Ok,
            CHECK,
            format!(
                "none yet; `serve` makes {} at its first start",
                path.display()
            ),
        ),
        (Ok(None), Some(_)) => line(
            Level::Warn,
            CHECK,
            format!(
                "{} is gone, though receipts were signed with it: receipts already given still \
                 verify with the public key they name; `serve` makes a new key, whose public \
                 half verifiers then need (`fleetwatch-executor receipt --key`)",
                path.display()
            ),
        ),
        (Ok(Some(key)), newest) => {
            let public = crate::receipt::public(&key);
            let signed_by_it = newest.is_none_or(|(text, signature)| {
                fleetwatch_protocol::receipt::statement_signed_by(
                    key.verifying_key().as_bytes(),
                    &text,
                    &signature,
                )
            });
            if signed_by_it {
                line(Level::Ok, CHECK, format!("public key {public}"))
            } else {
                line(
                    Level::Warn,
                    CHECK,
                    format!(
                        "public key {public}, but the newest receipt statement was signed by \
                         another key: the key in {} was replaced; receipts signed before verify \
                         only with the old public key",
                        path.display()
                    ),
                )
            }
        }
    }
}
