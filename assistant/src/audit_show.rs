//! `fleetwatch audit show`: the assistant's audit rows in words, or as JSON lines for a log
//! shipper.
//!
//! Each row becomes one line: its time (UTC), the proposal it concerns, and what happened —
//! proposed (tool and targets by name and ID), card shown, approved (by which page session or
//! which passkey's operator), sent, executed or refused with the executor's reason, denied,
//! expired. The chain is verified first; a broken chain is said on the first line and the rows
//! are still shown as stored. Every text taken from a row is redacted again and its hazardous
//! characters spelled out, so nothing shown can hold a secret or rearrange the terminal.
//!
//! `--json` prints one object a line with stable field names: `row`, `time` (RFC 3339, UTC),
//! `unix`, `kind` (the stored kind), `proposal` (number or null), `tool`, `targets` (objects
//! with `id` and `name`, the name null when not recorded), `decided_by` (`page session …` or
//! `passkey <operator>`, or null), `outcome` (`done`, `epiphan_error`, `nothing_ran`,
//! `unknown`, or null), `refusal` (the executor's reason code, or null), `words` (the line as
//! `--lang` gives it) and `chain` (`intact` or `broken`).

use std::collections::BTreeMap;

use fleetwatch_protocol::audit;
use fleetwatch_redact::redact_text;
use fleetwatch_words::Lang;
use fleetwatch_words::shown::shown_capped;
use serde_json::{Value, json};

use crate::store::{AuditRow, ChainCheck, Store, StoreError};

/// Longest text taken from a row, in characters.
const FIELD_CAP: usize = 120;

/// What `audit show` was asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    /// Only rows at or after this Unix second.
    pub since: Option<i64>,
    /// Only rows about this proposal.
    pub proposal: Option<u64>,
}

/// The rows of the store in words (or JSON lines), newest last, the chain's state first.
pub fn show(store: &Store, filter: &Filter, json: bool, lang: Lang) -> Result<String, StoreError> {
    let chain = store.verify_audit()?;
    let rows = store.audit_rows()?;
    let mut story = Story::default();
    let mut out = String::new();
    let (intact, head) = match &chain {
        ChainCheck::Intact { rows, .. } => (
            true,
            lang.pick(
                "Audit log of the assistant: {n} rows, the hash chain is intact.",
                "Registro de auditoría del asistente: {n} filas, la cadena de hashes está intacta.",
            )
            .replace("{n}", &rows.to_string()),
        ),
        ChainCheck::Broken { row, problem } => (
            false,
            lang.pick(
                "WARNING: the audit chain is broken at row {row} ({problem}); rows from there on may have been changed behind the program's back. Rows as stored:",
                "AVISO: la cadena de auditoría está rota en la fila {row} ({problem}); las filas desde ahí pueden haberse cambiado a espaldas del programa. Filas tal como están guardadas:",
            )
            .replace("{row}", &row.to_string())
            .replace("{problem}", &shown_capped(&redact_text(problem), FIELD_CAP)),
        ),
    };
    if !json || !intact {
        // A broken chain is said even to a log shipper, on standard output's first line.
        if json {
            out.push_str(&json!({"chain": "broken", "words": head}).to_string());
        } else {
            out.push_str(&head);
        }
        out.push('\n');
    }
    for row in &rows {
        let line = story.line(row, lang);
        let wanted = filter.since.is_none_or(|since| row.at >= since)
            && filter.proposal.is_none_or(|p| row.proposal_id == Some(p));
        if !wanted {
            continue;
        }
        if json {
            let mut object = line.json;
            if let Some(map) = object.as_object_mut() {
                map.insert("words".to_owned(), Value::String(line.words));
                map.insert(
                    "chain".to_owned(),
                    Value::String(if intact { "intact" } else { "broken" }.to_owned()),
                );
            }
            out.push_str(&object.to_string());
        } else {
            out.push_str(&format!("{}  {}", audit::utc_text(row.at), line.words));
        }
        out.push('\n');
    }
    // A change that reached Epiphan has a receipt the executor writes; name the command.
    let reached = |r: &AuditRow| {
        r.kind == "page_result"
            && serde_json::from_str::<Value>(&r.detail).is_ok_and(|d| {
                matches!(
                    d.get("outcome").and_then(Value::as_str),
                    Some("done" | "epiphan_error" | "unknown")
                )
            })
    };
    if let Some(p) = filter.proposal
        && !json
        && rows.iter().any(|r| r.proposal_id == Some(p) && reached(r))
    {
        out.push_str(
            &lang
                .pick(
                    "Its receipt, which anyone can check with `fleetwatch-confirm verify`: sudo fleetwatch-executor receipt {n} > receipt-{n}.json",
                    "Su recibo, que cualquiera puede comprobar con `fleetwatch-confirm verify`: sudo fleetwatch-executor receipt {n} > receipt-{n}.json",
                )
                .replace("{n}", &p.to_string()),
        );
        out.push('\n');
    }
    Ok(out)
}

/// One row as shown.
struct Line {
    words: String,
    json: Value,
}

/// A target as its proposal row recorded it: ID, and name when the row kept one.
type Target = (String, Option<String>);

/// What earlier rows said about each proposal: its tool and targets, for the rows after.
#[derive(Default)]
struct Story {
    /// Each proposal's tool, targets and the user who asked for it (empty when not recorded).
    proposals: BTreeMap<u64, (String, Vec<Target>, String)>,
}

/// A text from a row made safe to show: redacted, hazards spelled, capped.
fn safe(text: &str) -> String {
    shown_capped(&redact_text(text), FIELD_CAP)
}

fn text_of(detail: &Value, key: &str) -> Option<String> {
    match detail.get(key)? {
        Value::String(s) => Some(safe(s)),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

impl Story {
    fn line(&mut self, row: &AuditRow, lang: Lang) -> Line {
        let detail: Value = serde_json::from_str(&row.detail).unwrap_or(Value::Null);
        let get = |key: &str| text_of(&detail, key);
        let mut decided_by: Option<String> = None;
        let mut outcome: Option<String> = None;
        let mut refusal: Option<String> = None;
        if row.kind == "proposed" {
            let ids: Vec<String> = list(&detail, "targets");
            let names: Vec<String> = list(&detail, "names");
            let targets = ids
                .into_iter()
                .enumerate()
                .map(|(i, id)| (id, names.get(i).cloned()))
                .collect();
            let tool = get("tool").unwrap_or_default();
            let asked_by = get("asked_by").unwrap_or_default();
            if let Some(p) = row.proposal_id {
                self.proposals.insert(p, (tool, targets, asked_by));
            }
        }
        let (tool, targets, asked_by) = row
            .proposal_id
            .and_then(|p| self.proposals.get(&p).cloned())
            .unwrap_or_default();
        let session = get("page_session").map(|s| s.chars().take(8).collect::<String>());
        let what = match row.kind.as_str() {
            "question" => lang
                .pick("question asked ({n} characters)", "pregunta ({n} caracteres)")
                .replace("{n}", &get("chars").unwrap_or_default()),
            "proposed" => {
                let text = if asked_by.is_empty() {
                    lang.pick("proposed {tool} on {targets}", "propuesta: {tool} en {targets}")
                } else {
                    lang.pick(
                        "proposed {tool} on {targets}, asked by {who}",
                        "propuesta: {tool} en {targets}, pedida por {who}",
                    )
                };
                text.replace("{tool}", &tool)
                    .replace("{targets}", &targets_text(&targets, lang))
                    .replace("{who}", &asked_by)
            }
            "page_card_shown" => {
                let deny_only = get("deny_only").is_some_and(|n| n != "0");
                let text = if deny_only {
                    lang.pick(
                        "card shown, Deny only (page session {s})",
                        "tarjeta mostrada, solo Denegar (sesión de página {s})",
                    )
                } else {
                    lang.pick(
                        "card shown (page session {s})",
                        "tarjeta mostrada (sesión de página {s})",
                    )
                };
                text.replace("{s}", &session.clone().unwrap_or_default())
            }
            "page_confirm_shown" => lang
                .pick(
                    "asked to confirm a disruptive change",
                    "se pidió confirmar un cambio disruptivo",
                )
                .to_owned(),
            "page_approval" => {
                let who = lang
                    .pick("page session {s}", "sesión de página {s}")
                    .replace("{s}", &session.clone().unwrap_or_default());
                decided_by = Some(who.clone());
                lang.pick("approved by {who}", "aprobada por {who}")
                    .replace("{who}", &who)
            }
            "page_passkey_approval" => {
                let name = get("name").unwrap_or_default();
                let who = lang
                    .pick("passkey of {name}", "passkey de {name}")
                    .replace("{name}", &name);
                decided_by = Some(format!("passkey {name}"));
                lang.pick(
                    "approved with the {who} ({kept} of {needed} needed)",
                    "aprobada con la {who} ({kept} de {needed} necesarias)",
                )
                .replace("{who}", &who)
                .replace("{kept}", &get("kept").unwrap_or_default())
                .replace("{needed}", &get("needed").unwrap_or_default())
            }
            "approved" => lang
                .pick(
                    "decision recorded: approved ({reason})",
                    "decisión registrada: aprobada ({reason})",
                )
                .replace("{reason}", &get("reason").unwrap_or_default()),
            "started" => lang
                .pick(
                    "assistant started ({n} pending proposals from before expired; signing key {key})",
                    "asistente iniciado ({n} propuestas pendientes de antes caducadas; clave de firma {key})",
                )
                .replace("{n}", &get("expired").unwrap_or_default())
                .replace("{key}", &get("key_id").unwrap_or_default()),
            "page_login" => lang
                .pick(
                    "signed in to the approval page (page session {s})",
                    "sesión abierta en la página de aprobación (sesión de página {s})",
                )
                .replace("{s}", &session.clone().unwrap_or_default()),
            "denied" => {
                decided_by = session.clone().map(|s| format!("page session {s}"));
                let by = session
                    .as_ref()
                    .map(|s| {
                        lang.pick(" (page session {s})", " (sesión de página {s})")
                            .replace("{s}", s)
                    })
                    .unwrap_or_default();
                let because = get("operator_reason")
                    .map(|r| format!(": “{r}”"))
                    .unwrap_or_default();
                lang.pick("denied: {reason}{by}{because}", "denegada: {reason}{by}{because}")
                    .replace("{reason}", &get("reason").unwrap_or_default())
                    .replace("{by}", &by)
                    .replace("{because}", &because)
            }
            "expired" => lang
                .pick("expired: {reason}", "caducada: {reason}")
                .replace("{reason}", &get("reason").unwrap_or_default()),
            "page_execute_sent" => lang
                .pick("sent to the executor", "enviada al ejecutor")
                .to_owned(),
            "page_result" => {
                let word = get("outcome").unwrap_or_default();
                refusal = get("refusal");
                let text = match word.as_str() {
                    "done" => lang
                        .pick("executed: the change ran", "ejecutada: el cambio se hizo")
                        .to_owned(),
                    "epiphan_error" => lang
                        .pick(
                            "failed: Epiphan reported an error on a device",
                            "falló: Epiphan informó de un error en un equipo",
                        )
                        .to_owned(),
                    "nothing_ran" => match &refusal {
                        Some(code) => lang
                            .pick(
                                "refused by the executor ({why}); nothing ran",
                                "rechazada por el ejecutor ({why}); no se ejecutó nada",
                            )
                            .replace(
                                "{why}",
                                fleetwatch_protocol::refusal::code_words(
                                    code,
                                    matches!(lang, Lang::Es),
                                )
                                .unwrap_or(code),
                            ),
                        None => lang
                            .pick("refused; nothing ran", "rechazada; no se ejecutó nada")
                            .to_owned(),
                    },
                    _ => lang
                        .pick(
                            "sent, but no trustworthy answer came back: check the device",
                            "enviada, pero no volvió una respuesta fiable: revisa el equipo",
                        )
                        .to_owned(),
                };
                outcome = Some(word);
                text
            }
            "page_approval_refused" => lang
                .pick("approval refused ({why})", "aprobación rechazada ({why})")
                .replace("{why}", &get("why").unwrap_or_default().replace('_', " ")),
            "page_passkey_enrolled" => lang
                .pick(
                    "passkey enrolled (fingerprint {f})",
                    "passkey registrada (huella {f})",
                )
                .replace("{f}", &get("fingerprint").unwrap_or_default()),
            "page_deny_all" => lang
                .pick("denied every pending card ({n})", "denegadas todas las tarjetas ({n})")
                .replace("{n}", &get("denied").unwrap_or_default()),
            "page_started" => lang
                .pick("approval page started", "página de aprobación iniciada")
                .to_owned(),
            "page_stopped" => lang
                .pick("approval page stopped", "página de aprobación detenida")
                .to_owned(),
            other => {
                // A kind without words of its own: its name and its fields, redacted.
                let fields = match &detail {
                    Value::Object(map) => map
                        .iter()
                        .map(|(k, v)| match v {
                            Value::String(s) => format!("{}={}", safe(k), safe(s)),
                            other => format!("{}={}", safe(k), safe(&other.to_string())),
                        })
                        .collect::<Vec<_>>()
                        .join(", "),
                    _ => String::new(),
                };
                let name = safe(&other.replace('_', " "));
                if fields.is_empty() { name } else { format!("{name} ({fields})") }
            }
        };
        let words = match row.proposal_id {
            Some(p) => format!("#{p}  {what}"),
            None => what,
        };
        let json = json!({
            "row": row.id,
            "time": audit::rfc3339(row.at),
            "unix": row.at,
            "kind": row.kind,
            "proposal": row.proposal_id,
            "tool": (!tool.is_empty()).then_some(tool),
            "targets": targets
                .iter()
                .map(|(id, name)| json!({"id": id, "name": name}))
                .collect::<Vec<_>>(),
            "asked_by": (!asked_by.is_empty()).then_some(asked_by),
            "decided_by": decided_by,
            "outcome": outcome,
            "refusal": refusal,
        });
        Line { words, json }
    }
}

/// The strings of an array member, made safe.
fn list(detail: &Value, key: &str) -> Vec<String> {
    detail
        .get(key)
        .and_then(Value::as_array)
        .map(|items| items.iter().filter_map(Value::as_str).map(safe).collect())
        .unwrap_or_default()
}

fn targets_text(targets: &[Target], lang: Lang) -> String {
    if targets.is_empty() {
        return lang
            .pick("no named device", "ningún equipo nombrado")
            .to_owned();
    }
    targets
        .iter()
        .map(|(id, name)| match name {
            Some(name) if !name.is_empty() => format!("{name} ({id})"),
            _ => id.clone(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}
