//! The operator's terminal: what waits (`fleetwatch pending`), a denial with a reason
//! (`fleetwatch deny`), and the line the chat's prompt prints when a proposal it raised is
//! decided, runs, is refused, expires or is half-way to expiring.
//!
//! `serve` answers these over the chat socket from its own store, so the operators who may
//! chat are the ones who may list and deny; approving stays on the page, behind a passkey.

use fleetwatch_protocol::policy::Policy;
use fleetwatch_protocol::wire::StatusReport;
use fleetwatch_words::Lang;
use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::page::card::{MAX_NAME_CHARS, show_text};
use crate::store::{Proposal, Status, Store, StoreError};

/// One waiting proposal, as `fleetwatch pending` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Waiting {
    /// The proposal number.
    pub proposal: u64,
    /// The write tool.
    pub tool: String,
    /// Its arguments (canonical JSON, as stored).
    pub arguments: String,
    /// The target device IDs.
    pub targets: Vec<String>,
    /// The targets' names as the executor described them (redacted), in `targets` order.
    pub rooms: Vec<String>,
    /// The operator's user who asked for it (empty when not known).
    pub asked_by: String,
    /// Unix seconds.
    pub created_at: i64,
    /// Unix seconds: when it expires if nobody decides.
    pub expires_at: i64,
    /// The persons whose passkeys approved it so far.
    pub approved_by: Vec<String>,
    /// How many more persons' passkeys it needs (0: anyone may approve it, the executor's
    /// trial mode, or the executor did not answer).
    pub persons_needed: u64,
}

/// Where a proposal stands, for the chat's prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Standing {
    /// The proposal number.
    pub proposal: u64,
    /// The stored status word (`pending`, `approved`, `denied`, …); `gone` when there is no
    /// such proposal.
    pub status: String,
    /// A denial's reason (redacted, capped; empty when none).
    pub deny_reason: String,
    /// The executor's refusal code, when it refused the change.
    pub refusal: String,
    /// Unix seconds.
    pub created_at: i64,
    /// Unix seconds.
    pub expires_at: i64,
}

impl Standing {
    /// From a stored proposal.
    pub fn of(p: &Proposal) -> Standing {
        Standing {
            proposal: p.id,
            status: p.status.as_str().to_owned(),
            deny_reason: p.deny_reason.clone(),
            refusal: p.refusal.clone(),
            created_at: p.created_at,
            expires_at: p.expires_at,
        }
    }

    /// A number the store does not hold.
    pub fn gone(proposal: u64) -> Standing {
        Standing {
            proposal,
            status: "gone".to_owned(),
            deny_reason: String::new(),
            refusal: String::new(),
            created_at: 0,
            expires_at: 0,
        }
    }
}

/// How many persons' passkeys the executor reported a change of `tool` needs (0: none). An
/// executor that lists no quorum for the tool needs one person unless it runs in trial mode;
/// one that did not answer is `None` here and asks for nobody (the executor decides anyway).
pub fn passkeys_needed(status: Option<&StatusReport>, tool: &str, disruptive: bool) -> usize {
    let Some(status) = status else {
        return 0;
    };
    let listed = status
        .quorums
        .iter()
        .find(|q| q.tool == tool)
        .map(|q| if disruptive { q.disruptive } else { q.calm });
    match listed {
        Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
        None => usize::from(!status.trial),
    }
}

/// The proposals waiting now, oldest first (expiring those whose time is up first).
pub fn waiting(
    store: &mut Store,
    policy: &Policy,
    status: Option<&StatusReport>,
    now: i64,
) -> Result<Vec<Waiting>, StoreError> {
    store.expire_due(now)?;
    let mut out = Vec::new();
    for p in store.pending()? {
        let approved_by = store.waiting(p.id)?.map(|w| w.names).unwrap_or_default();
        let arguments: Value = serde_json::from_str(&p.arguments).unwrap_or(Value::Null);
        let needed = passkeys_needed(status, &p.tool, policy.is_disruptive(&p.tool, &arguments));
        let persons_needed = u64::try_from(needed.saturating_sub(approved_by.len())).unwrap_or(0);
        out.push(Waiting {
            proposal: p.id,
            tool: p.tool,
            arguments: p.arguments,
            targets: p.targets,
            rooms: p.names,
            asked_by: p.asked_by,
            created_at: p.created_at,
            expires_at: p.expires_at,
            approved_by,
            persons_needed,
        });
    }
    Ok(out)
}

/// Where each of `ids` stands now (expiring those whose time is up first).
pub fn standings(store: &mut Store, ids: &[u64], now: i64) -> Result<Vec<Standing>, StoreError> {
    store.expire_due(now)?;
    ids.iter()
        .map(|id| {
            Ok(store
                .proposal(*id)?
                .map_or_else(|| Standing::gone(*id), |p| Standing::of(&p)))
        })
        .collect()
}

/// The change in a few words, from the tool and its arguments ("reboot", "start recording").
pub fn change_words(tool: &str, arguments: &str, lang: Lang) -> String {
    let arguments: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
    let action = arguments.get("action").and_then(Value::as_str);
    let (en, es) = match (tool, action) {
        ("batch_recording", Some("start")) => ("start recording", "iniciar la grabación"),
        ("batch_recording", Some("stop")) => ("stop recording", "detener la grabación"),
        ("batch_recording", _) => ("start or stop recording", "iniciar o detener la grabación"),
        ("batch_reboot", _) => ("reboot the recorder", "reiniciar el grabador"),
        ("batch_firmware_update", _) => (
            "update the recorder's firmware",
            "actualizar el firmware del grabador",
        ),
        ("start_stream_endpoint", _) => ("start a stream", "iniciar una transmisión"),
        ("stop_stream_endpoint", _) => ("stop a stream", "detener una transmisión"),
        ("confirm_cms_event_on_device", _) => (
            "confirm a scheduled event",
            "confirmar un evento programado",
        ),
        // A tool this build has no words for: its name, as the policy spells it.
        _ => return show_text(tool, MAX_NAME_CHARS),
    };
    lang.pick(en, es).to_owned()
}

/// The rooms of a change, named as the executor described them, or their IDs.
fn rooms_text(rooms: &[String], targets: &[String]) -> String {
    let shown: Vec<String> = if rooms.is_empty() {
        targets
            .iter()
            .map(|t| show_text(t, MAX_NAME_CHARS))
            .collect()
    } else {
        rooms
            .iter()
            .map(|r| format!("“{}”", show_text(r, MAX_NAME_CHARS)))
            .collect()
    };
    shown.join(", ")
}

/// Who asked, for a person to read ("ana"; "unknown" for a proposal from before this was kept).
pub fn asker_text(asked_by: &str, lang: Lang) -> String {
    if asked_by.is_empty() {
        lang.pick("unknown", "desconocido").to_owned()
    } else {
        show_text(asked_by, MAX_NAME_CHARS)
    }
}

/// `fleetwatch pending` in words: one block per proposal.
pub fn render(items: &[Waiting], lang: Lang, now: i64) -> String {
    let now_ts = Timestamp::from_second(now).unwrap_or(Timestamp::UNIX_EPOCH);
    let at = |secs: i64| Timestamp::from_second(secs).unwrap_or(Timestamp::UNIX_EPOCH);
    if items.is_empty() {
        return lang
            .pick(
                "Nothing waits for approval.",
                "No hay nada esperando aprobación.",
            )
            .to_owned();
    }
    let mut out = Vec::new();
    for w in items {
        let age = fleetwatch_words::time::duration((now - w.created_at).max(0) / 60);
        let expires = format!(
            "{} ({})",
            fleetwatch_words::time::clock(at(w.expires_at), now_ts),
            fleetwatch_words::time::relative(at(w.expires_at), now_ts, lang)
        );
        let needs = match (w.persons_needed, lang) {
            (0, Lang::En) => "one person's approval on the page".to_owned(),
            (0, Lang::Es) => "la aprobación de una persona en la página".to_owned(),
            (1, Lang::En) => "1 more person's passkey".to_owned(),
            (1, Lang::Es) => "la llave de acceso de 1 persona más".to_owned(),
            (n, Lang::En) => format!("{n} more persons' passkeys"),
            (n, Lang::Es) => format!("las llaves de acceso de {n} personas más"),
        };
        let mut block = match lang {
            Lang::En => format!(
                "#{}  {} in {}\n    asked by {}, {age} ago; expires {expires}\n    needs {needs}",
                w.proposal,
                change_words(&w.tool, &w.arguments, lang),
                rooms_text(&w.rooms, &w.targets),
                asker_text(&w.asked_by, lang),
            ),
            Lang::Es => format!(
                "#{}  {} en {}\n    pedido por {}, hace {age}; caduca {expires}\n    necesita {needs}",
                w.proposal,
                change_words(&w.tool, &w.arguments, lang),
                rooms_text(&w.rooms, &w.targets),
                asker_text(&w.asked_by, lang),
            ),
        };
        if !w.approved_by.is_empty() {
            let names: Vec<String> = w
                .approved_by
                .iter()
                .map(|n| show_text(n, MAX_NAME_CHARS))
                .collect();
            block.push_str(&format!(
                "\n    {} {}",
                lang.pick("approved so far by", "aprobado hasta ahora por"),
                names.join(", ")
            ));
        }
        out.push(block);
    }
    out.join("\n\n")
}

/// What `fleetwatch pending --watch` says between two looks at what waits: a line for each
/// change that started waiting, each that gained a person's approval and waits for more, and
/// (from `gone`, the standings of those no longer waiting) each that was decided or expired.
pub fn watch_lines(
    before: &[Waiting],
    now_waiting: &[Waiting],
    gone: &[Standing],
    lang: Lang,
    now: i64,
) -> Vec<String> {
    let now_ts = Timestamp::from_second(now).unwrap_or(Timestamp::UNIX_EPOCH);
    let mut out = Vec::new();
    for w in now_waiting {
        match before.iter().find(|b| b.proposal == w.proposal) {
            None => {
                let expires = fleetwatch_words::time::clock(
                    Timestamp::from_second(w.expires_at).unwrap_or(Timestamp::UNIX_EPOCH),
                    now_ts,
                );
                let change = change_words(&w.tool, &w.arguments, lang);
                let rooms = rooms_text(&w.rooms, &w.targets);
                let who = asker_text(&w.asked_by, lang);
                out.push(match lang {
                    Lang::En => format!(
                        "#{} waits: {change} in {rooms}, asked by {who}; expires {expires}",
                        w.proposal
                    ),
                    Lang::Es => format!(
                        "#{} espera: {change} en {rooms}, pedido por {who}; caduca {expires}",
                        w.proposal
                    ),
                });
            }
            Some(b) if w.approved_by.len() > b.approved_by.len() && w.persons_needed > 0 => {
                let names: Vec<String> = w
                    .approved_by
                    .iter()
                    .map(|n| show_text(n, MAX_NAME_CHARS))
                    .collect();
                out.push(match lang {
                    Lang::En => format!(
                        "#{} approved by {}; it waits for {} more person(s)",
                        w.proposal,
                        names.join(", "),
                        w.persons_needed
                    ),
                    Lang::Es => format!(
                        "#{} aprobado por {}; espera a {} persona(s) más",
                        w.proposal,
                        names.join(", "),
                        w.persons_needed
                    ),
                });
            }
            Some(_) => {}
        }
    }
    out.extend(
        gone.iter()
            .filter_map(|s| outcome_line(s, Some("pending"), lang)),
    );
    out
}

/// The line the chat's prompt prints when a proposal it raised has moved on from `was`
/// (`None`: never reported). `None` when there is nothing new to say.
pub fn outcome_line(s: &Standing, was: Option<&str>, lang: Lang) -> Option<String> {
    if was == Some(s.status.as_str()) {
        return None;
    }
    let n = s.proposal;
    let line = match (s.status.as_str(), lang) {
        ("approved", Lang::En) => format!("#{n} was approved; the executor is running it."),
        ("approved", Lang::Es) => format!("#{n} se aprobó; el ejecutor lo está ejecutando."),
        ("executed", Lang::En) => {
            format!("#{n} is done: Epiphan reported every device accepted it.")
        }
        ("executed", Lang::Es) => {
            format!("#{n} está hecho: Epiphan informó de que todos los equipos lo aceptaron.")
        }
        ("failed", Lang::En) => format!(
            "#{n} ran, but Epiphan reported errors on some devices; see `fleetwatch audit show --proposal {n}`."
        ),
        ("failed", Lang::Es) => format!(
            "#{n} se ejecutó, pero Epiphan informó de errores en algunos equipos; mira `fleetwatch audit show --proposal {n}`."
        ),
        ("unknown", Lang::En) => format!(
            "#{n} was sent, but whether it ran is not known; check the device before trying again."
        ),
        ("unknown", Lang::Es) => format!(
            "#{n} se envió, pero no se sabe si se ejecutó; comprueba el equipo antes de volver a intentarlo."
        ),
        ("refused", _) => {
            let why = refusal_words(&s.refusal, lang);
            match lang {
                Lang::En => format!("#{n} was refused by the executor, so nothing ran: {why}"),
                Lang::Es => {
                    format!("#{n} lo rechazó el ejecutor, así que no se ejecutó nada: {why}")
                }
            }
        }
        ("denied", _) => {
            let reason = show_text(&s.deny_reason, crate::store::MAX_DENY_REASON_CHARS + 1);
            match (reason.is_empty(), lang) {
                (true, Lang::En) => format!("#{n} was denied. Nothing changed."),
                (true, Lang::Es) => format!("#{n} se denegó. No cambió nada."),
                (false, Lang::En) => format!("#{n} was denied: “{reason}”. Nothing changed."),
                (false, Lang::Es) => format!("#{n} se denegó: «{reason}». No cambió nada."),
            }
        }
        ("expired", Lang::En) => format!("#{n} expired before anyone decided. Nothing changed."),
        ("expired", Lang::Es) => format!("#{n} caducó sin que nadie decidiera. No cambió nada."),
        _ => return None,
    };
    Some(line)
}

/// A refusal code in words, or the code itself when this build does not know it.
fn refusal_words(code: &str, lang: Lang) -> String {
    match fleetwatch_protocol::refusal::code_words(code, matches!(lang, Lang::Es)) {
        Some(words) => format!("{words}."),
        None => show_text(code, MAX_NAME_CHARS),
    }
}

/// The reminder at half a proposal's lifetime, if it still waits then.
pub fn reminder_line(s: &Standing, page: &str, now: i64, lang: Lang) -> Option<String> {
    let half = s.created_at + (s.expires_at - s.created_at) / 2;
    if s.status != Status::Pending.as_str() || now < half || now >= s.expires_at {
        return None;
    }
    let now_ts = Timestamp::from_second(now).unwrap_or(Timestamp::UNIX_EPOCH);
    let expires = fleetwatch_words::time::clock(
        Timestamp::from_second(s.expires_at).unwrap_or(Timestamp::UNIX_EPOCH),
        now_ts,
    );
    let page = if page.is_empty() {
        lang.pick("the approval page", "la página de aprobación")
    } else {
        page
    };
    Some(match lang {
        Lang::En => format!(
            "#{} still waits for you at {page} — expires {expires}",
            s.proposal
        ),
        Lang::Es => format!(
            "#{} todavía le espera en {page}; caduca a las {expires}",
            s.proposal
        ),
    })
}
