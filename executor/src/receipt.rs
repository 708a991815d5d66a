//! Receipts (DESIGN §11): the executor's receipt key, and `receipt N`, which writes the evidence
//! of one change as one file. The statement itself is signed where the outcome is stored
//! ([`crate::store::Store::finish`]).

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::PathBuf;

use ed25519_dalek::SigningKey;
use fleetwatch_protocol::claims::SignedApproval;
use fleetwatch_protocol::receipt::{self, Receipt, Row, Statement, b64};
use fleetwatch_protocol::{hex, refusal::code_words};
use rusqlite::{OptionalExtension as _, params};

use crate::config::Config;
use crate::os::{self, Trusted};

/// The receipt key's file in the state folder: the 32-byte seed in base64, mode 0600.
pub fn key_path(config: &Config) -> PathBuf {
    config.state_dir.join("receipt.key")
}

/// The receipt key, or `None` when its file does not exist. The file must be the executor's
/// own secret (owner, mode 0600), like the sign-in slot.
pub fn read_key(config: &Config) -> Result<Option<SigningKey>, String> {
    let path = key_path(config);
    if !path.exists() {
        return Ok(None);
    }
    let text = os::read_trusted(&path, Trusted::SecretFile, 1024).map_err(|e| e.to_string())?;
    receipt::unb64(text.trim())
        .and_then(|bytes| <[u8; 32]>::try_from(bytes).ok())
        .map(|seed| Some(SigningKey::from_bytes(&seed)))
        .ok_or_else(|| format!("{}: not a receipt key (32 bytes in base64)", path.display()))
}

/// The receipt key, made when there is none yet (at `serve`'s start): a fresh seed from the
/// operating system, written once with mode 0600 and synced before it signs anything.
pub fn key(config: &Config) -> Result<SigningKey, String> {
    if let Some(key) = read_key(config)? {
        return Ok(key);
    }
    let path = key_path(config);
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| format!("no randomness for the receipt key: {e}"))?;
    let fail = |e: std::io::Error| format!("{}: {e}", path.display());
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .map_err(fail)?;
    writeln!(file, "{}", b64(&seed)).map_err(fail)?;
    file.sync_all().map_err(fail)?;
    tracing::info!(public = %public(&SigningKey::from_bytes(&seed)), "made the receipt key");
    Ok(SigningKey::from_bytes(&seed))
}

/// A receipt key's public half as receipts and verifiers name it: base64 of its 32 bytes.
pub fn public(key: &SigningKey) -> String {
    b64(key.verifying_key().as_bytes())
}

/// `receipt --key`: the public receipt key, for whoever verifies receipts.
pub fn public_key(config: &Config) -> Result<String, String> {
    match read_key(config)? {
        Some(key) => Ok(public(&key)),
        None => Err(format!(
            "no receipt key yet at {}: `serve` makes one at its first start",
            key_path(config).display()
        )),
    }
}

/// `receipt N`: the receipt of proposal N's approval (its latest one), or of an approval ID
/// (32 hex digits), as one JSON document. Refused in words when there is none: the approval
/// never reached the executor, it was refused (nothing was written), or it is still running.
pub fn write(config: &Config, which: &str) -> Result<String, String> {
    let db = crate::store::open_read_only(&config.database())
        .map_err(|e| format!("{}: {e}", config.database().display()))?;
    let sql = |e: rusqlite::Error| format!("{}: {e}", config.database().display());
    let which = which.trim();
    let id: Option<Vec<u8>> = if which.len() == 32 {
        hex::decode(which)
    } else {
        let proposal: i64 = which
            .parse()
            .map_err(|_| format!("{which:?} is neither a proposal number nor an approval ID"))?;
        db.query_row(
            "SELECT approval_id FROM evidence WHERE proposal_id = ?1 ORDER BY rowid DESC LIMIT 1",
            params![proposal],
            |r| r.get(0),
        )
        .optional()
        .map_err(sql)?
    };
    let Some(id) = id else {
        return Err(format!(
            "no approval of {which} reached this executor's checks after its signature, so \
             nothing was written and there is no receipt{}",
            refused_early(&db, which).unwrap_or_default()
        ));
    };
    let state: Option<(String, String)> = db
        .query_row(
            "SELECT state, reason FROM executions WHERE approval_id = ?1",
            params![id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()
        .map_err(sql)?;
    let id_hex = hex::encode(&id);
    match state.as_ref().map(|(s, r)| (s.as_str(), r.as_str())) {
        Some(("refused", code)) => {
            return Err(format!(
                "approval {id_hex} was refused by the executor ({}: {code}); nothing was \
                 written, so there is no receipt",
                code_words(code, false).unwrap_or(code)
            ));
        }
        Some(("in_flight", _)) => {
            return Err(format!(
                "approval {id_hex} is still running; its receipt exists once the outcome is stored"
            ));
        }
        _ => {}
    }
    let evidence: Option<Evidence> = db
        .query_row(
            "SELECT approval, statement, statement_signature, approvers FROM evidence \
             WHERE approval_id = ?1",
            params![id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .optional()
        .map_err(sql)?;
    let (approval, Some(statement), Some(signature), lines) = evidence.unwrap_or_default() else {
        return Err(format!(
            "approval {id_hex} has no signed statement: it was accepted before this executor \
             kept evidence, or finished while it had no receipt key"
        ));
    };
    // A statement from before statements bound every part of the evidence (receipt format 1)
    // does not read as today's: its receipt could be edited and still verify, so none is
    // written.
    let (Ok(stated), Some(Ok(lines))) = (
        serde_json::from_str::<Statement>(&statement),
        lines.map(|l| serde_json::from_str::<Vec<String>>(&l)),
    ) else {
        return Err(format!(
            "approval {id_hex} was stated by an executor from before receipts bound all of their \
             evidence (receipt format 1); that statement cannot prove which persons approved, \
             so no receipt is written for it"
        ));
    };
    let approval: SignedApproval = serde_json::from_str(&approval).map_err(|e| e.to_string())?;
    let (signatures, passkeys) = receipt::evidence(&approval);
    let audit = rows(&db, &id_hex, stated.audit_row).map_err(sql)?;
    let receipt = Receipt {
        format: receipt::RECEIPT_FORMAT,
        claims: b64(&approval.claims),
        signatures,
        passkeys,
        approvers: lines,
        statement,
        statement_signature: b64(&signature),
        receipt_key: read_key(config)?.map(|k| public(&k)).unwrap_or_default(),
        audit,
    };
    serde_json::to_string_pretty(&receipt).map_err(|e| e.to_string())
}

/// An evidence row as stored: the approval's JSON, the statement and its signature (once the
/// outcome is stored), and the approver lines (JSON; none from before they were kept).
type Evidence = (String, Option<String>, Option<Vec<u8>>, Option<String>);

/// The audit rows naming an approval up to the outcome's row, oldest first, as stored.
fn rows(db: &rusqlite::Connection, id_hex: &str, last: i64) -> rusqlite::Result<Vec<Row>> {
    let mut stmt = db.prepare(
        "SELECT seq, time, kind, reason, approval_id, tool, targets, assistant_head, detail, \
         prev_hash, row_hash FROM audit WHERE approval_id = ?1 AND seq <= ?2 ORDER BY seq",
    )?;
    let rows = stmt.query_map(params![id_hex, last], |r| {
        Ok(Row {
            seq: r.get(0)?,
            time: r.get(1)?,
            fields: (2..9).map(|i| r.get(i)).collect::<rusqlite::Result<_>>()?,
            prev_hash: hex::encode(&r.get::<_, Vec<u8>>(9)?),
            row_hash: hex::encode(&r.get::<_, Vec<u8>>(10)?),
        })
    })?;
    rows.collect()
}

/// For a proposal number: the refusal the executor audited for it before storing a nonce.
fn refused_early(db: &rusqlite::Connection, which: &str) -> Option<String> {
    let code: String = db
        .query_row(
            // A row the burst rule wrote for several says ` n=COUNT` after the proposal.
            "SELECT reason FROM audit WHERE kind = 'refused' AND (detail = ?1 OR detail LIKE ?1 || ' n=%') \
             ORDER BY seq DESC LIMIT 1",
            params![crate::store::proposal_detail(which.parse().ok()?)],
            |r| r.get(0),
        )
        .ok()?;
    Some(format!(
        " (it was refused: {}, {code})",
        code_words(&code, false).unwrap_or(&code)
    ))
}
