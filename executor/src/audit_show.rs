//! `fleetwatch-executor audit show`: the executor's audit rows in words (English or Spanish)
//! or as JSON lines for a log shipper, read without writing anything beside the database.
//!
//! The executor's rows hold codes, IDs, tool names, counts and the names of the passkey
//! operators the approver file lists; device names are not kept here (the assistant's
//! `fleetwatch audit show` has them). A row that names an approval is tied to the
//! assistant's proposal number by the `accepted` or `refused` row that recorded it, so
//! `--proposal N` finds every row about that proposal. The chain is verified first; a broken
//! chain is said on the first line, and the rows are still shown as stored. Nothing is
//! redacted here: the executor's rows cannot hold a secret (see SECURITY.md).
//!
//! `--json` prints one object a line: `row`, `time` (RFC 3339, UTC), `unix`, `kind`, `reason`
//! (the stored code), `proposal` (or null), `approval` (hex, or null), `tool` (or null),
//! `targets` (device IDs), `decided_by` (the passkey operators, `the assistant's key`, or
//! null), `outcome` (`done`, `error`, `unknown`, or null), `refusal` (the code, or null),
//! `words` and `chain` (`intact` or `broken`).

use std::collections::BTreeMap;

use fleetwatch_protocol::audit as chain;
use fleetwatch_protocol::refusal::code_words;
use rusqlite::Connection;
use serde_json::json;

use crate::audit;

/// Longest text taken from a row, in characters.
const FIELD_CAP: usize = 120;

/// Which rows to show.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Filter {
    /// Only rows at or after this Unix second.
    pub since: Option<i64>,
    /// Only rows about this proposal.
    pub proposal: Option<u64>,
}

/// One stored row.
struct Stored {
    seq: i64,
    time: i64,
    kind: String,
    reason: String,
    approval: String,
    tool: String,
    targets: String,
    detail: String,
}

fn read_rows(conn: &Connection) -> rusqlite::Result<Vec<Stored>> {
    let mut stmt = conn.prepare(
        "SELECT seq, time, kind, reason, approval_id, tool, targets, detail FROM audit ORDER BY seq",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok(Stored {
            seq: r.get(0)?,
            time: r.get(1)?,
            kind: r.get(2)?,
            reason: r.get(3)?,
            approval: r.get(4)?,
            tool: r.get(5)?,
            targets: r.get(6)?,
            detail: r.get(7)?,
        })
    })?;
    rows.collect()
}

/// A text from a row for one line: control characters shown as their pictures (`␊`),
/// capped. The rows hold codes, IDs, tool names, counts and operator names from the approver
/// file, never a secret (SECURITY.md lists them), so nothing here needs redacting.
fn safe(text: &str) -> String {
    let mut out = String::new();
    for (i, c) in text.chars().enumerate() {
        if i >= FIELD_CAP {
            out.push('…');
            break;
        }
        match u32::from(c) {
            code @ 0x00..=0x1F => out.push(char::from_u32(0x2400 + code).unwrap_or('\u{FFFD}')),
            0x7F => out.push('\u{2421}'),
            _ if c.is_control() => out.push('\u{FFFD}'),
            _ => out.push(c),
        }
    }
    out
}

/// The proposal number a detail starts with (`proposal 12…`).
fn proposal_of(detail: &str) -> Option<u64> {
    let rest = detail.strip_prefix("proposal ")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// The rows in words (or JSON lines), newest last, the chain's state first.
pub fn show(
    conn: &Connection,
    filter: Filter,
    as_json: bool,
    spanish: bool,
) -> Result<String, String> {
    let pick = |en: &str, es: &str| {
        if spanish {
            es.to_owned()
        } else {
            en.to_owned()
        }
    };
    let verdict = audit::verify(conn);
    let rows = read_rows(conn).map_err(|e| format!("audit table unreadable: {e}"))?;
    let intact = verdict.is_ok();
    let head = match &verdict {
        Ok((n, _)) => pick(
            "Audit log of the executor: {n} rows, the hash chain is intact.",
            "Registro de auditoría del ejecutor: {n} filas, la cadena de hashes está intacta.",
        )
        .replace("{n}", &n.to_string()),
        Err(e) => pick(
            "WARNING: the audit chain is broken ({problem}); rows from there on may have been changed behind the program's back. Rows as stored:",
            "AVISO: la cadena de auditoría está rota ({problem}); las filas desde ahí pueden haberse cambiado a espaldas del programa. Filas tal como están guardadas:",
        )
        .replace("{problem}", &safe(&e.to_string())),
    };
    let mut out = String::new();
    if !as_json || !intact {
        if as_json {
            out.push_str(&json!({"chain": "broken", "words": head}).to_string());
        } else {
            out.push_str(&head);
        }
        out.push('\n');
    }
    // Approval → proposal, from every row that names both.
    let mut proposals: BTreeMap<&str, u64> = BTreeMap::new();
    for row in &rows {
        if let Some(p) = proposal_of(&row.detail).filter(|_| !row.approval.is_empty()) {
            proposals.insert(&row.approval, p);
        }
    }
    for row in &rows {
        let proposal = proposals.get(row.approval.as_str()).copied();
        let wanted = filter.since.is_none_or(|since| row.time >= since)
            && filter.proposal.is_none_or(|p| proposal == Some(p));
        if !wanted {
            continue;
        }
        let tool = safe(&row.tool);
        let targets: Vec<String> = row
            .targets
            .split(',')
            .filter(|t| !t.is_empty())
            .map(safe)
            .collect();
        let on = if targets.is_empty() {
            String::new()
        } else {
            format!(
                " {} {}",
                if spanish { "en" } else { "on" },
                targets.join(", ")
            )
        };
        let mut decided_by: Option<String> = None;
        let mut outcome: Option<String> = None;
        let mut refusal: Option<String> = None;
        let words = match row.kind.as_str() {
            "accepted" => {
                let by = row
                    .detail
                    .split_once("approved by ")
                    .map(|(_, names)| safe(names));
                let who = by.clone().unwrap_or_else(|| {
                    pick("the assistant's key only", "solo la clave del asistente")
                });
                decided_by = Some(by.unwrap_or_else(|| "the assistant's key".to_owned()));
                pick(
                    "accepted {tool}{on}, approved by {who}; the approval is spent",
                    "aceptada {tool}{on}, aprobada por {who}; la aprobación queda usada",
                )
                .replace("{tool}", &tool)
                .replace("{on}", &on)
                .replace("{who}", &who)
            }
            "outcome" => {
                outcome = Some(safe(&row.reason));
                match row.reason.as_str() {
                    "done" => pick(
                        "executed {tool}{on}: the change ran",
                        "ejecutada {tool}{on}: el cambio se hizo",
                    ),
                    "error" => pick(
                        "{tool}{on}: Epiphan reported an error on a device",
                        "{tool}{on}: Epiphan informó de un error en un equipo",
                    ),
                    _ => pick(
                        "{tool}{on}: sent, no trustworthy answer ({why}); never retried",
                        "{tool}{on}: enviada, sin respuesta fiable ({why}); nunca se reintenta",
                    )
                    .replace("{why}", &safe(&row.detail)),
                }
                .replace("{tool}", &tool)
                .replace("{on}", &on)
            }
            "refused" | "peer_refused" => {
                refusal = Some(safe(&row.reason));
                let why = code_words(&row.reason, spanish)
                    .map_or_else(|| safe(&row.reason), str::to_owned);
                let what = if tool.is_empty() {
                    String::new()
                } else {
                    format!(" {tool}{on}")
                };
                pick("refused{what}: {why}; nothing ran", "rechazada{what}: {why}; no se ejecutó nada")
                    .replace("{what}", &what)
                    .replace("{why}", &why)
            }
            "recovered" => pick(
                "after a restart, {tool}{on} was found unfinished and marked unknown (never re-run)",
                "tras un reinicio, {tool}{on} estaba sin terminar y quedó como desconocida (nunca se repite)",
            )
            .replace("{tool}", &tool)
            .replace("{on}", &on),
            "login" => pick("sandbox sign-in: {reason}", "sesión de pruebas: {reason}")
                .replace("{reason}", &safe(&row.reason.replace('_', " "))),
            "logout" => pick("sandbox sign-in forgotten", "sesión de pruebas olvidada"),
            other => safe(&other.replace('_', " ")),
        };
        let words = match (row.kind.as_str(), row.detail.is_empty()) {
            ("login" | "peer_refused", false) => format!("{words} ({})", safe(&row.detail)),
            _ => words,
        };
        // A row the burst rule wrote for several refusals says how many.
        let times = row
            .detail
            .rsplit_once("n=")
            .and_then(|(_, n)| n.parse::<u64>().ok());
        let words = match times {
            Some(n) if row.kind.ends_with("refused") => {
                format!("{words} ({n} {})", pick("times", "veces"))
            }
            _ => words,
        };
        let words = match proposal {
            Some(p) => format!("#{p}  {words}"),
            None => words,
        };
        if as_json {
            let line = json!({
                "row": row.seq,
                "time": chain::rfc3339(row.time),
                "unix": row.time,
                "kind": row.kind,
                "reason": safe(&row.reason),
                "proposal": proposal,
                "approval": (!row.approval.is_empty()).then(|| row.approval.clone()),
                "tool": (!tool.is_empty()).then_some(tool),
                "targets": targets,
                "decided_by": decided_by,
                "outcome": outcome,
                "refusal": refusal,
                "words": words,
                "chain": if intact { "intact" } else { "broken" },
            });
            out.push_str(&line.to_string());
        } else {
            out.push_str(&format!("{}  {words}", chain::utc_text(row.time)));
        }
        out.push('\n');
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn a_detail_names_its_proposal_at_its_start_only() {
        assert_eq!(proposal_of("proposal 12; approved by Ana [ab]"), Some(12));
        assert_eq!(proposal_of("proposal 7"), Some(7));
        assert_eq!(proposal_of("approved by proposal 9"), None);
        assert_eq!(proposal_of(""), None);
    }

    #[test]
    fn control_characters_read_as_pictures() {
        assert_eq!(safe("a\nb"), "a␊b");
        assert_eq!(safe(&"x".repeat(200)).chars().count(), FIELD_CAP + 1);
    }
}
