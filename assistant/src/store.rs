//! `assistant.db`: proposals, approvals (consumed by the approval page) and the audit chain.
//!
//! Every connection runs in WAL mode with `synchronous=FULL` and a busy timeout, so a decision
//! the operator made survives a crash and two processes on the same file wait rather than fail.
//! The audit table refuses UPDATE and DELETE by trigger, and each row carries the SHA-256 of
//! the previous row's hash and its own content, so an edit made behind the program's back
//! (triggers dropped first) is found by [`Store::verify_audit`]. The row format and the
//! verifier are the protocol's ([`fleetwatch_protocol::audit`]), the same the executor uses.
//!
//! # Databases from before the shared format
//!
//! This table's first rows were hashed over canonical JSON. An audit log is never re-chained
//! (recomputing every hash would also wipe out the evidence of any earlier edit), so opening an
//! older database adds a `format` column in which every existing row is marked with that first
//! format ([`audit::FORMAT_ASSISTANT_JSON`], the column default), and new rows are written in
//! the shared one ([`audit::FORMAT_FIELDS`]), chained on from the last old row. The verifier
//! checks each row with the function it was written with, and refuses an old-format row after
//! a new one. The migration runs on every open, once per database, inside an immediate
//! transaction so two processes opening the same file do not both add the column.

use std::path::Path;
use std::time::Duration;

use fleetwatch_protocol::audit;
use fleetwatch_protocol::hex;
use rusqlite::{Connection, OptionalExtension as _, params};
use serde_json::{Value, json};

mod quorum;
pub use quorum::{Fixed, Gathered, NewSigner, Waiting};

/// This many denials of one tool and target within an hour pause it for an hour from the last.
pub const DENIALS_TO_PAUSE: usize = 3;
/// How long a pause lasts after its last denial, in seconds.
pub const PAUSE_SECS: i64 = 3600;

/// The database file inside the state folder.
pub const DB_FILE: &str = "assistant.db";
/// How long a pending proposal waits for a person before it expires.
pub const PROPOSAL_LIFETIME_SECS: i64 = 30 * 60;

/// A storage failure, with the SQLite message.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite refused or failed.
    #[error("assistant.db: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// A stored value is not what this build wrote.
    #[error("assistant.db: {0}")]
    Corrupt(String),
}

/// Where a proposal stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Waiting for a person.
    Pending,
    /// Approved on the page; sent to the executor.
    Approved,
    /// Denied by a person.
    Denied,
    /// Nobody decided in time, the assistant restarted, or its turn failed.
    Expired,
    /// The executor reported it done.
    Executed,
    /// The executor reported per-device errors.
    Failed,
    /// Sent, outcome unknown.
    Unknown,
    /// The executor refused it at run time.
    Refused,
}

impl Status {
    /// The stored word.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Approved => "approved",
            Status::Denied => "denied",
            Status::Expired => "expired",
            Status::Executed => "executed",
            Status::Failed => "failed",
            Status::Unknown => "unknown",
            Status::Refused => "refused",
        }
    }

    fn parse(text: &str) -> Option<Status> {
        Some(match text {
            "pending" => Status::Pending,
            "approved" => Status::Approved,
            "denied" => Status::Denied,
            "expired" => Status::Expired,
            "executed" => Status::Executed,
            "failed" => Status::Failed,
            "unknown" => Status::Unknown,
            "refused" => Status::Refused,
            _ => return None,
        })
    }
}

/// A proposal to store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewProposal {
    /// Write tool.
    pub tool: String,
    /// Canonical JSON arguments.
    pub arguments: String,
    /// Sorted target device IDs.
    pub targets: Vec<String>,
    /// Canonical fingerprint from the executor's describe.
    pub fingerprint: String,
    /// Schema version.
    pub schema_version: u32,
    /// Policy digest of the tool's entry.
    pub policy_digest: [u8; 32],
    /// Sign-in slot (`sandbox`).
    pub slot: String,
    /// The model's reason, redacted and capped.
    pub reason: String,
}

/// A stored proposal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proposal {
    /// Proposal number.
    pub id: u64,
    /// Write tool.
    pub tool: String,
    /// Canonical JSON arguments.
    pub arguments: String,
    /// Sorted target device IDs.
    pub targets: Vec<String>,
    /// Canonical fingerprint.
    pub fingerprint: String,
    /// Schema version.
    pub schema_version: u32,
    /// Policy digest.
    pub policy_digest: [u8; 32],
    /// Slot.
    pub slot: String,
    /// Reason (redacted, capped).
    pub reason: String,
    /// Status.
    pub status: Status,
    /// Unix seconds.
    pub created_at: i64,
    /// Unix seconds.
    pub expires_at: i64,
    /// The operator's user who asked for it in the chat (empty when not known).
    pub asked_by: String,
    /// The targets' names as the executor described them (redacted), in `targets` order.
    pub names: Vec<String>,
    /// A person's reason for denying it (redacted, capped; empty when none was given).
    pub deny_reason: String,
    /// The executor's refusal code, when it refused the change at run time.
    pub refusal: String,
}

/// The longest reason a person may give for a denial, in characters.
pub const MAX_DENY_REASON_CHARS: usize = 300;

/// The result of checking the executor heads recorded here against the executor's chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnchorCheck {
    /// Every recorded head is in the executor's chain.
    Intact {
        /// Heads recorded here.
        anchors: usize,
        /// Rows in the executor's listing.
        their_rows: usize,
    },
    /// The first recorded head the executor's chain no longer contains.
    Missing {
        /// The row here that recorded it.
        row: i64,
        /// The head.
        head: [u8; 32],
    },
}

impl std::fmt::Display for AnchorCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AnchorCheck::Intact {
                anchors,
                their_rows,
            } => write!(
                f,
                "anchors intact: all {anchors} executor head(s) recorded here are in the \
                 executor's chain ({their_rows} rows)"
            ),
            AnchorCheck::Missing { row, head } => write!(
                f,
                "anchor broken at row {row}: it recorded the executor's chain head {}, which \
                 the executor's chain no longer contains: rows were removed from the executor's \
                 audit log (or the listing is not from this executor)",
                hex::encode(head)
            ),
        }
    }
}

/// An approval row as the page reads it back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approval {
    /// The proposal it approves.
    pub proposal_id: i64,
    /// The page session tag it was made in.
    pub session: String,
    /// Consumed already.
    pub used: bool,
    /// Unix seconds, database clock.
    pub expires_at: i64,
    /// The database clock when read.
    pub db_now: i64,
}

impl Approval {
    /// Not yet expired on the database clock.
    pub fn live(&self) -> bool {
        self.expires_at > self.db_now
    }
}

/// What became of an approved proposal, for [`Store::record_outcome`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome<'a> {
    /// The proposal.
    pub proposal_id: u64,
    /// The approval ID (hex).
    pub approval_id: &'a str,
    /// The audit word (`done`, `epiphan_error`, `nothing_ran`, `unknown`).
    pub word: &'a str,
    /// The final status.
    pub status: Status,
    /// The executor's chain head from its answer, when it answered with an outcome.
    pub executor_head: Option<[u8; 32]>,
    /// The executor's refusal code, when it refused.
    pub refusal: Option<&'a str>,
}

/// One audit row as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditRow {
    /// Row number.
    pub id: i64,
    /// Unix seconds.
    pub at: i64,
    /// What happened (`proposed`, `expired`, `question`, …).
    pub kind: String,
    /// The proposal concerned, if any.
    pub proposal_id: Option<u64>,
    /// Canonical JSON details (counts, codes, IDs — never prompt or answer text).
    pub detail: String,
}

/// The result of walking the audit chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChainCheck {
    /// Every row links to the one before; the head hash and row count.
    Intact {
        /// Rows checked.
        rows: u64,
        /// The last row's hash (zeros when empty).
        head: [u8; 32],
    },
    /// The first row that does not match.
    Broken {
        /// Its row number.
        row: i64,
        /// What does not match.
        problem: String,
    },
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS proposals (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    tool TEXT NOT NULL,
    arguments TEXT NOT NULL,
    targets TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    schema_version INTEGER NOT NULL,
    policy_digest TEXT NOT NULL,
    slot TEXT NOT NULL,
    reason TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN
        ('pending','approved','denied','expired','executed','failed','unknown','refused')),
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    decided_at INTEGER
);
CREATE INDEX IF NOT EXISTS proposals_status ON proposals(status);
CREATE TABLE IF NOT EXISTS approvals (
    id TEXT PRIMARY KEY,
    proposal_id INTEGER NOT NULL REFERENCES proposals(id),
    used INTEGER NOT NULL DEFAULT 0 CHECK (used IN (0, 1)),
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    session TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS quorum_waits (
    proposal_id INTEGER PRIMARY KEY REFERENCES proposals(id),
    approval_id TEXT NOT NULL,
    session TEXT NOT NULL,
    expires_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS quorum_signers (
    proposal_id INTEGER NOT NULL REFERENCES quorum_waits(proposal_id),
    credential_id TEXT NOT NULL,
    name TEXT NOT NULL,
    session TEXT NOT NULL,
    assertion TEXT NOT NULL,
    added_at INTEGER NOT NULL,
    PRIMARY KEY (proposal_id, credential_id)
);
CREATE TABLE IF NOT EXISTS audit (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at INTEGER NOT NULL,
    kind TEXT NOT NULL,
    proposal_id INTEGER,
    detail TEXT NOT NULL,
    prev_hash BLOB NOT NULL,
    row_hash BLOB NOT NULL,
    format INTEGER NOT NULL
);
CREATE TRIGGER IF NOT EXISTS audit_no_update BEFORE UPDATE ON audit
BEGIN SELECT RAISE(ABORT, 'audit rows are append-only'); END;
CREATE TRIGGER IF NOT EXISTS audit_no_delete BEFORE DELETE ON audit
BEGIN SELECT RAISE(ABORT, 'audit rows are append-only'); END;
CREATE INDEX IF NOT EXISTS audit_at ON audit(at);
";

/// The open database.
pub struct Store {
    conn: Connection,
    /// How long a new proposal waits before it expires, in seconds.
    lifetime: i64,
}

/// The hashed fields of an assistant row, in the table's fixed order: kind, proposal ID
/// (decimal, empty for none), detail.
fn audit_fields(kind: &str, proposal_id: Option<i64>, detail: &str) -> [String; 3] {
    [
        kind.to_owned(),
        proposal_id.map(|p| p.to_string()).unwrap_or_default(),
        detail.to_owned(),
    ]
}

/// Adds the `format` column to an audit table from before it, marking every existing row as
/// written in the first format (see the module notes). Nothing else about a row changes.
fn migrate_audit_format(conn: &mut Connection) -> Result<(), StoreError> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let has_format: bool = tx.query_row(
        "SELECT count(*) > 0 FROM pragma_table_info('audit') WHERE name = 'format'",
        [],
        |r| r.get(0),
    )?;
    if !has_format {
        tx.execute_batch(&format!(
            "ALTER TABLE audit ADD COLUMN format INTEGER NOT NULL DEFAULT {}",
            audit::FORMAT_ASSISTANT_JSON
        ))?;
        tracing::info!(
            "assistant.db: audit rows from before the shared row format are kept as written and marked so"
        );
    }
    tx.commit()?;
    Ok(())
}

/// Columns added to `proposals` after its first release, each with a default that reads an
/// older row as "not known": who asked, the targets' names, a denial's reason, the executor's
/// refusal code, and whether the chat's model was told of the denial.
const PROPOSAL_COLUMNS: [(&str, &str); 5] = [
    ("asked_by", "TEXT NOT NULL DEFAULT ''"),
    ("names", "TEXT NOT NULL DEFAULT '[]'"),
    ("deny_reason", "TEXT NOT NULL DEFAULT ''"),
    ("refusal", "TEXT NOT NULL DEFAULT ''"),
    ("told_model", "INTEGER NOT NULL DEFAULT 0"),
];

fn migrate_proposal_columns(conn: &Connection) -> Result<(), StoreError> {
    for (name, kind) in PROPOSAL_COLUMNS {
        let present: bool = conn.query_row(
            "SELECT count(*) > 0 FROM pragma_table_info('proposals') WHERE name = ?1",
            [name],
            |r| r.get(0),
        )?;
        if !present {
            conn.execute_batch(&format!("ALTER TABLE proposals ADD COLUMN {name} {kind}"))?;
        }
    }
    Ok(())
}

/// A person's reason for a denial as it is kept: secrets masked, control characters and
/// surrounding space removed, cut to [`MAX_DENY_REASON_CHARS`].
pub fn clean_deny_reason(text: &str) -> String {
    let masked = fleetwatch_redact::redact_text(text);
    let flat: String = masked
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let trimmed = flat.trim();
    let mut out: String = trimmed.chars().take(MAX_DENY_REASON_CHARS).collect();
    if trimmed.chars().count() > MAX_DENY_REASON_CHARS {
        out.push('…');
    }
    out
}

/// The columns [`raw_proposal`] reads, in its order.
const PROPOSAL_SELECT: &str = "SELECT id, tool, arguments, targets, fingerprint, schema_version,
        policy_digest, slot, reason, status, created_at, expires_at, asked_by, names,
        deny_reason, refusal FROM proposals";

/// Current Unix seconds.
pub fn now_secs() -> i64 {
    jiff::Timestamp::now().as_second()
}

impl Store {
    /// Opens (creating) `assistant.db` in the state folder.
    pub fn open(state_dir: &Path) -> Result<Store, StoreError> {
        Store::open_path(&state_dir.join(DB_FILE))
    }

    /// Opens the state folder's database read-only, for reading the audit while `serve`
    /// runs: nothing is created, migrated or written.
    pub fn open_read_only(state_dir: &Path) -> Result<Store, StoreError> {
        let path = state_dir.join(DB_FILE);
        if !path.is_file() {
            return Err(StoreError::Corrupt(format!(
                "{}: no such database (nothing has been recorded in this state folder)",
                path.display()
            )));
        }
        let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY
            | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX
            | rusqlite::OpenFlags::SQLITE_OPEN_URI;
        let conn = Connection::open_with_flags(&path, flags)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        Ok(Store {
            conn,
            lifetime: PROPOSAL_LIFETIME_SECS,
        })
    }

    /// Opens a database file.
    pub fn open_path(path: &Path) -> Result<Store, StoreError> {
        let conn = Connection::open(path)?;
        Store::init(conn)
    }

    /// A private in-memory database (replay try-outs that must not touch the state folder).
    pub fn in_memory() -> Result<Store, StoreError> {
        Store::init(Connection::open_in_memory()?)
    }

    fn init(mut conn: Connection) -> Result<Store, StoreError> {
        conn.busy_timeout(Duration::from_secs(5))?;
        // In-memory databases answer "memory" here; that is fine.
        let _mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
        conn.execute_batch("PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;")?;
        conn.execute_batch(SCHEMA)?;
        migrate_audit_format(&mut conn)?;
        migrate_proposal_columns(&conn)?;
        Ok(Store {
            conn,
            lifetime: PROPOSAL_LIFETIME_SECS,
        })
    }

    /// How long proposals stored from now on wait before they expire (the configuration's
    /// `FLEETWATCH_PROPOSAL_LIFETIME_SECS`).
    pub fn set_proposal_lifetime(&mut self, seconds: i64) {
        self.lifetime = seconds;
    }

    /// Appends an audit row linked to the previous one.
    pub fn audit(
        &mut self,
        kind: &str,
        proposal_id: Option<u64>,
        detail: &Value,
    ) -> Result<(), StoreError> {
        let tx = self.conn.transaction()?;
        append_audit(&tx, now_secs(), kind, proposal_id, detail)?;
        tx.commit()?;
        Ok(())
    }

    /// The hash of the newest audit row (zeros when empty).
    pub fn chain_head(&self) -> Result<[u8; 32], StoreError> {
        chain_head(&self.conn)
    }

    /// Walks the whole chain with the protocol's verifier and names the first row that does
    /// not match.
    pub fn verify_audit(&self) -> Result<ChainCheck, StoreError> {
        let mut verifier = audit::Verifier::new();
        for row in self.audit_chain_rows()? {
            if let Err(e) = verifier.push(&row) {
                return Ok(ChainCheck::Broken {
                    row: e.row(),
                    problem: e.problem(),
                });
            }
        }
        Ok(ChainCheck::Intact {
            rows: verifier.rows(),
            head: verifier.head(),
        })
    }

    /// Every audit row as the protocol's verifier takes it, oldest first.
    pub fn audit_chain_rows(&self) -> Result<Vec<audit::Row>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT id, at, kind, proposal_id, detail, prev_hash, row_hash, format
             FROM audit ORDER BY id",
        )?;
        let rows = stmt.query_map([], |row| {
            let kind: String = row.get(2)?;
            let proposal_id: Option<i64> = row.get(3)?;
            let detail: String = row.get(4)?;
            Ok(audit::Row {
                seq: row.get(0)?,
                time: row.get(1)?,
                format: row.get(7)?,
                fields: audit_fields(&kind, proposal_id, &detail).to_vec(),
                prev_hash: row.get(5)?,
                row_hash: row.get(6)?,
            })
        })?;
        Ok(rows.collect::<Result<Vec<_>, _>>()?)
    }

    /// The audit rows written at or after `since` (Unix seconds), oldest first.
    pub fn audit_rows_since(&self, since: i64) -> Result<Vec<AuditRow>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT id, at, kind, proposal_id, detail FROM audit WHERE at >= ?1 ORDER BY id",
        )?;
        let rows = stmt.query_map(params![since], |row| {
            let proposal_id: Option<i64> = row.get(3)?;
            Ok(AuditRow {
                id: row.get(0)?,
                at: row.get(1)?,
                kind: row.get(2)?,
                proposal_id: proposal_id.and_then(|p| u64::try_from(p).ok()),
                detail: row.get(4)?,
            })
        })?;
        Ok(rows.collect::<Result<Vec<_>, _>>()?)
    }

    /// All audit rows, oldest first.
    pub fn audit_rows(&self) -> Result<Vec<AuditRow>, StoreError> {
        self.audit_rows_since(i64::MIN)
    }

    /// Inserts a pending proposal and its audit row in one transaction.
    pub fn insert_proposal(&mut self, proposal: &NewProposal, now: i64) -> Result<u64, StoreError> {
        self.insert_proposal_named(proposal, &[], "", now)
    }

    /// [`Store::insert_proposal`], with the targets' names as the executor described them
    /// (redacted, in `targets` order) kept in the audit row, so `audit show` can say which
    /// rooms a change was for after the fleet has moved on.
    /// `asked_by` is the chat peer's user name (empty when not known).
    pub fn insert_proposal_named(
        &mut self,
        proposal: &NewProposal,
        names: &[String],
        asked_by: &str,
        now: i64,
    ) -> Result<u64, StoreError> {
        let targets = serde_json::to_string(&proposal.targets)
            .map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let names_json =
            serde_json::to_string(names).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let tx = self.conn.transaction()?;
        tx.execute(
            "INSERT INTO proposals (tool, arguments, targets, fingerprint, schema_version,
                 policy_digest, slot, reason, status, created_at, expires_at, asked_by, names)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'pending', ?9, ?10, ?11, ?12)",
            params![
                proposal.tool,
                proposal.arguments,
                targets,
                proposal.fingerprint,
                proposal.schema_version,
                hex::encode(&proposal.policy_digest),
                proposal.slot,
                proposal.reason,
                now,
                now + self.lifetime,
                asked_by,
                names_json,
            ],
        )?;
        let id = u64::try_from(tx.last_insert_rowid())
            .map_err(|_| StoreError::Corrupt("negative row id".to_owned()))?;
        append_audit(&tx, now, "proposed", Some(id), &{
            let mut detail = json!({"tool": proposal.tool, "targets": proposal.targets});
            if !names.is_empty() {
                detail["names"] = json!(names);
            }
            if !asked_by.is_empty() {
                detail["asked_by"] = json!(asked_by);
            }
            detail
        })?;
        tx.commit()?;
        Ok(id)
    }

    /// One proposal.
    pub fn proposal(&self, id: u64) -> Result<Option<Proposal>, StoreError> {
        let id =
            i64::try_from(id).map_err(|_| StoreError::Corrupt("id out of range".to_owned()))?;
        let row = self
            .conn
            .query_row(
                &format!("{PROPOSAL_SELECT} WHERE id = ?1"),
                [id],
                raw_proposal,
            )
            .optional()?;
        row.map(RawProposal::decode).transpose()
    }

    /// Pending proposals, oldest first.
    pub fn pending(&self) -> Result<Vec<Proposal>, StoreError> {
        let mut stmt = self.conn.prepare(&format!(
            "{PROPOSAL_SELECT} WHERE status = 'pending' ORDER BY id"
        ))?;
        let rows = stmt.query_map([], raw_proposal)?;
        let raw = rows.collect::<Result<Vec<_>, _>>()?;
        raw.into_iter().map(RawProposal::decode).collect()
    }

    /// Moves a pending proposal to a final state; false when it was not pending.
    pub fn decide(
        &mut self,
        id: u64,
        status: Status,
        reason: &str,
        now: i64,
    ) -> Result<bool, StoreError> {
        self.decide_in_session(id, status, reason, None, now)
    }

    /// [`Store::decide`] by a person on the page: the row names the page session (its tag, in
    /// hex), so the page can show that person their own pace.
    pub fn decide_in_session(
        &mut self,
        id: u64,
        status: Status,
        reason: &str,
        page_session: Option<&str>,
        now: i64,
    ) -> Result<bool, StoreError> {
        self.settle(id, status, reason, "", page_session, now)
    }

    /// A person denies a pending proposal, saying why (`how`: where it was denied, for the
    /// audit; `because`: the person's own words, cleaned by [`clean_deny_reason`], empty when
    /// none). The reason is kept for the chat that asked, whose next model turn sees it as
    /// data. False when it was not pending.
    pub fn deny(
        &mut self,
        id: u64,
        how: &str,
        because: &str,
        page_session: Option<&str>,
        now: i64,
    ) -> Result<bool, StoreError> {
        let because = clean_deny_reason(because);
        self.settle(id, Status::Denied, how, &because, page_session, now)
    }

    /// Moves a pending proposal to `status` and audits it in one transaction: `how` is the
    /// audit's reason, `because` a person's own words (kept with the proposal and audited
    /// when not empty). False when it was not pending.
    fn settle(
        &mut self,
        id: u64,
        status: Status,
        how: &str,
        because: &str,
        page_session: Option<&str>,
        now: i64,
    ) -> Result<bool, StoreError> {
        let sql_id =
            i64::try_from(id).map_err(|_| StoreError::Corrupt("id out of range".to_owned()))?;
        let tx = self.conn.transaction()?;
        let changed = tx.execute(
            "UPDATE proposals SET status = ?1, decided_at = ?2, deny_reason = ?3
             WHERE id = ?4 AND status = 'pending'",
            params![status.as_str(), now, because, sql_id],
        )?;
        if changed == 1 {
            let mut detail = json!({"reason": how});
            if let Some(tag) = page_session {
                detail["page_session"] = json!(tag);
            }
            if !because.is_empty() {
                detail["operator_reason"] = json!(because);
            }
            append_audit(&tx, now, status.as_str(), Some(id), &detail)?;
        }
        tx.commit()?;
        Ok(changed == 1)
    }

    /// Denials of proposals `asked_by` raised whose reasons no model turn of theirs has seen
    /// yet, oldest first, marked seen in the same transaction: `(proposal, reason)`.
    pub fn take_untold_denials(
        &mut self,
        asked_by: &str,
    ) -> Result<Vec<(u64, String)>, StoreError> {
        let tx = self.conn.transaction()?;
        let rows: Vec<(i64, String)> = {
            let mut stmt = tx.prepare(
                "SELECT id, deny_reason FROM proposals
                 WHERE status = 'denied' AND told_model = 0 AND asked_by = ?1 AND asked_by != ''
                 ORDER BY id",
            )?;
            let rows = stmt.query_map([asked_by], |r| Ok((r.get(0)?, r.get(1)?)))?;
            rows.collect::<Result<Vec<_>, _>>()?
        };
        for (id, _) in &rows {
            tx.execute("UPDATE proposals SET told_model = 1 WHERE id = ?1", [id])?;
        }
        tx.commit()?;
        Ok(rows
            .into_iter()
            .filter_map(|(id, reason)| Some((u64::try_from(id).ok()?, reason)))
            .collect())
    }

    /// Expires every pending proposal (at start, so nothing from an earlier run can be
    /// approved against a fleet that has moved on). Returns how many.
    pub fn expire_all_pending(&mut self, reason: &str, now: i64) -> Result<usize, StoreError> {
        self.expire_where("status = 'pending'", reason, now)
    }

    /// Expires pending proposals whose time is up, and those waiting for more passkeys whose
    /// claims expired (database clock) before enough came.
    pub fn expire_due(&mut self, now: i64) -> Result<usize, StoreError> {
        let timed_out = self.expire_where(
            &format!("status = 'pending' AND expires_at <= {now}"),
            "timed out",
            now,
        )?;
        let unmet = self.expire_where(
            "status = 'pending' AND id IN
                (SELECT proposal_id FROM quorum_waits WHERE expires_at <= unixepoch())",
            quorum::UNMET,
            now,
        )?;
        Ok(timed_out + unmet)
    }

    fn expire_where(
        &mut self,
        condition: &str,
        reason: &str,
        now: i64,
    ) -> Result<usize, StoreError> {
        let tx = self.conn.transaction()?;
        let ids: Vec<i64> = {
            let mut stmt = tx.prepare(&format!(
                "SELECT id FROM proposals WHERE {condition} ORDER BY id"
            ))?;
            let rows = stmt.query_map([], |r| r.get(0))?;
            rows.collect::<Result<Vec<_>, _>>()?
        };
        for id in &ids {
            tx.execute(
                "UPDATE proposals SET status = 'expired', decided_at = ?1 WHERE id = ?2",
                params![now, id],
            )?;
            append_audit(
                &tx,
                now,
                "expired",
                u64::try_from(*id).ok(),
                &json!({"reason": reason}),
            )?;
        }
        tx.commit()?;
        Ok(ids.len())
    }

    /// The pending proposal of exactly this change, if one waits: the same tool, the same
    /// canonical arguments and the same targets.
    pub fn waiting_same(
        &self,
        tool: &str,
        arguments: &str,
        targets: &[String],
    ) -> Result<Option<u64>, StoreError> {
        let targets =
            serde_json::to_string(targets).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let id: Option<i64> = self
            .conn
            .query_row(
                "SELECT id FROM proposals WHERE status = 'pending' AND tool = ?1 \
                 AND arguments = ?2 AND targets = ?3 ORDER BY id LIMIT 1",
                params![tool, arguments, targets],
                |r| r.get(0),
            )
            .optional()?;
        id.map(|id| u64::try_from(id).map_err(|_| StoreError::Corrupt("negative row id".into())))
            .transpose()
    }

    /// Pending proposals now.
    pub fn pending_count(&self) -> Result<u64, StoreError> {
        count(
            &self.conn,
            "SELECT COUNT(*) FROM proposals WHERE status = 'pending'",
            params![],
        )
    }

    /// Proposals made in the hour before `now` that were not denied (expired and unreviewed
    /// ones count, so letting proposals lapse does not open room for more).
    pub fn non_denied_last_hour(&self, now: i64) -> Result<u64, StoreError> {
        count(
            &self.conn,
            "SELECT COUNT(*) FROM proposals WHERE created_at > ?1 AND status != 'denied'",
            params![now - 3600],
        )
    }

    /// When the pause on this tool and these targets ends, if one is on at `now`: three
    /// denials within an hour pause the change for an hour from the third of them. (Counting
    /// denials in the last hour instead would end the pause an hour after the *first*.)
    pub fn paused_until(
        &self,
        tool: &str,
        targets: &[String],
        now: i64,
    ) -> Result<Option<i64>, StoreError> {
        let targets =
            serde_json::to_string(targets).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        // A pause still on at `now` needs its third denial in the last hour and its first in
        // the hour before that.
        let mut stmt = self.conn.prepare(
            "SELECT decided_at FROM proposals
             WHERE tool = ?1 AND targets = ?2 AND status = 'denied'
               AND decided_at > ?3 AND decided_at <= ?4
             ORDER BY decided_at",
        )?;
        let times = stmt
            .query_map(params![tool, targets, now - 2 * PAUSE_SECS, now], |r| {
                r.get::<_, i64>(0)
            })?
            .collect::<Result<Vec<_>, _>>()?;
        let until = times
            .windows(DENIALS_TO_PAUSE)
            .filter_map(|w| match (w.first(), w.last()) {
                (Some(first), Some(third)) if third - first <= PAUSE_SECS => {
                    Some(third + PAUSE_SECS)
                }
                _ => None,
            })
            .max();
        Ok(until.filter(|until| *until > now))
    }

    /// Records an approval row for the page (single use, expires on the database clock).
    pub fn create_approval(
        &mut self,
        id: &str,
        proposal_id: u64,
        session: &str,
        lifetime_secs: i64,
    ) -> Result<(), StoreError> {
        let pid = i64::try_from(proposal_id)
            .map_err(|_| StoreError::Corrupt("id out of range".to_owned()))?;
        self.conn.execute(
            "INSERT INTO approvals (id, proposal_id, used, created_at, expires_at, session)
             VALUES (?1, ?2, 0, unixepoch(), unixepoch() + ?3, ?4)",
            params![id, pid, lifetime_secs, session],
        )?;
        Ok(())
    }

    /// Consumes an approval in one statement on the database clock; false when it was used,
    /// expired or unknown.
    pub fn consume_approval(&mut self, id: &str) -> Result<bool, StoreError> {
        let changed = self.conn.execute(
            "UPDATE approvals SET used = 1 WHERE id = ?1 AND used = 0 AND expires_at > unixepoch()",
            [id],
        )?;
        Ok(changed == 1)
    }

    /// One approval row, read with the database clock's current time.
    pub fn approval(&self, id: &str) -> Result<Option<Approval>, StoreError> {
        Ok(self
            .conn
            .query_row(
                "SELECT proposal_id, session, used, expires_at, unixepoch()
                 FROM approvals WHERE id = ?1",
                [id],
                |r| {
                    Ok(Approval {
                        proposal_id: r.get(0)?,
                        session: r.get(1)?,
                        used: r.get::<_, i64>(2)? != 0,
                        expires_at: r.get(3)?,
                        db_now: r.get(4)?,
                    })
                },
            )
            .optional()?)
    }

    /// Records what became of an approved proposal: the `page_result` audit row (with the
    /// executor's chain head when it answered, the anchor `audit verify --against` checks)
    /// and the final status, set only from `approved` so it is written once. One transaction.
    pub fn record_outcome(&mut self, outcome: &Outcome<'_>, now: i64) -> Result<(), StoreError> {
        let sql_id = i64::try_from(outcome.proposal_id)
            .map_err(|_| StoreError::Corrupt("id out of range".to_owned()))?;
        let mut detail = json!({"approval_id": outcome.approval_id, "outcome": outcome.word});
        if let Some(map) = detail.as_object_mut() {
            if let Some(head) = outcome.executor_head {
                map.insert(
                    "executor_head".to_owned(),
                    Value::String(hex::encode(&head)),
                );
            }
            if let Some(code) = outcome.refusal {
                map.insert("refusal".to_owned(), Value::String(code.to_owned()));
            }
        }
        let tx = self.conn.transaction()?;
        append_audit(&tx, now, "page_result", Some(outcome.proposal_id), &detail)?;
        tx.execute(
            "UPDATE proposals SET status = ?1, refusal = ?2 WHERE id = ?3 AND status = 'approved'",
            params![
                outcome.status.as_str(),
                outcome.refusal.unwrap_or_default(),
                sql_id
            ],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Every audit row's number and hash, oldest first: the listing `audit heads` prints for
    /// the executor's `audit verify --against`.
    pub fn audit_heads(&self) -> Result<Vec<(i64, [u8; 32])>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT id, row_hash FROM audit ORDER BY id")?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, Vec<u8>>(1)?)))?;
        let mut out = Vec::new();
        for row in rows {
            let (id, hash) = row?;
            let hash = <[u8; 32]>::try_from(hash.as_slice()).map_err(|_| {
                StoreError::Corrupt(format!("audit row {id}: hash is not 32 bytes"))
            })?;
            out.push((id, hash));
        }
        Ok(out)
    }

    /// The executor chain heads this log recorded with outcomes, with the row that recorded
    /// each, oldest first.
    pub fn executor_anchors(&self) -> Result<Vec<(i64, [u8; 32])>, StoreError> {
        let rows = self.audit_rows()?;
        Ok(rows
            .iter()
            .filter(|row| row.kind == "page_result")
            .filter_map(|row| {
                let detail: Value = serde_json::from_str(&row.detail).ok()?;
                let head = detail.get("executor_head")?.as_str()?;
                Some((row.id, hex::decode_array(head)?))
            })
            .collect())
    }

    /// Checks that every executor chain head recorded here is a row of the executor's chain,
    /// given its heads listing (`fleetwatch-executor audit heads`).
    pub fn check_executor_anchors(&self, listing: &str) -> Result<AnchorCheck, String> {
        use fleetwatch_protocol::anchor;
        let theirs =
            anchor::parse_heads(listing).map_err(|e| format!("the executor's heads: {e}"))?;
        let recorded = self.executor_anchors().map_err(|e| e.to_string())?;
        Ok(match anchor::first_missing(&recorded, &theirs) {
            Some(missing) => AnchorCheck::Missing {
                row: missing.row,
                head: missing.head,
            },
            None => AnchorCheck::Intact {
                anchors: recorded.len(),
                their_rows: theirs.len(),
            },
        })
    }

    /// Raw access for tests that tamper with the file as an intruder would.
    pub fn connection(&self) -> &Connection {
        &self.conn
    }
}

fn count(conn: &Connection, sql: &str, params: &[&dyn rusqlite::ToSql]) -> Result<u64, StoreError> {
    let n: i64 = conn.query_row(sql, params, |r| r.get(0))?;
    Ok(u64::try_from(n).unwrap_or(0))
}

fn chain_head(conn: &Connection) -> Result<[u8; 32], StoreError> {
    let head: Option<Vec<u8>> = conn
        .query_row(
            "SELECT row_hash FROM audit ORDER BY id DESC LIMIT 1",
            [],
            |r| r.get(0),
        )
        .optional()?;
    match head {
        None => Ok([0u8; 32]),
        Some(bytes) => <[u8; 32]>::try_from(bytes.as_slice())
            .map_err(|_| StoreError::Corrupt("audit hash is not 32 bytes".to_owned())),
    }
}

fn append_audit(
    conn: &Connection,
    at: i64,
    kind: &str,
    proposal_id: Option<u64>,
    detail: &Value,
) -> Result<(), StoreError> {
    let detail = detail.to_string();
    let prev = chain_head(conn)?;
    let next_id: i64 = conn.query_row(
        "SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'audit'), 0) + 1",
        [],
        |r| r.get(0),
    )?;
    let pid = proposal_id.and_then(|p| i64::try_from(p).ok());
    let fields = audit_fields(kind, pid, &detail);
    let hash = audit::row_hash(&prev, next_id, at, &fields.each_ref().map(String::as_str));
    conn.execute(
        "INSERT INTO audit (id, at, kind, proposal_id, detail, prev_hash, row_hash, format)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            next_id,
            at,
            kind,
            pid,
            detail,
            prev.as_slice(),
            hash.as_slice(),
            audit::FORMAT_FIELDS
        ],
    )?;
    Ok(())
}

struct RawProposal {
    id: i64,
    tool: String,
    arguments: String,
    targets: String,
    fingerprint: String,
    schema_version: i64,
    policy_digest: String,
    slot: String,
    reason: String,
    status: String,
    created_at: i64,
    expires_at: i64,
    asked_by: String,
    names: String,
    deny_reason: String,
    refusal: String,
}

fn raw_proposal(row: &rusqlite::Row<'_>) -> rusqlite::Result<RawProposal> {
    Ok(RawProposal {
        id: row.get(0)?,
        tool: row.get(1)?,
        arguments: row.get(2)?,
        targets: row.get(3)?,
        fingerprint: row.get(4)?,
        schema_version: row.get(5)?,
        policy_digest: row.get(6)?,
        slot: row.get(7)?,
        reason: row.get(8)?,
        status: row.get(9)?,
        created_at: row.get(10)?,
        expires_at: row.get(11)?,
        asked_by: row.get(12)?,
        names: row.get(13)?,
        deny_reason: row.get(14)?,
        refusal: row.get(15)?,
    })
}

impl RawProposal {
    fn decode(self) -> Result<Proposal, StoreError> {
        let corrupt = |what: &str| StoreError::Corrupt(format!("proposal {}: bad {what}", self.id));
        Ok(Proposal {
            id: u64::try_from(self.id).map_err(|_| corrupt("id"))?,
            targets: serde_json::from_str(&self.targets).map_err(|_| corrupt("targets"))?,
            schema_version: u32::try_from(self.schema_version)
                .map_err(|_| corrupt("schema version"))?,
            policy_digest: hex::decode_array(&self.policy_digest)
                .ok_or_else(|| corrupt("policy digest"))?,
            status: Status::parse(&self.status).ok_or_else(|| corrupt("status"))?,
            tool: self.tool,
            arguments: self.arguments,
            fingerprint: self.fingerprint,
            slot: self.slot,
            reason: self.reason,
            created_at: self.created_at,
            expires_at: self.expires_at,
            names: serde_json::from_str(&self.names).map_err(|_| corrupt("names"))?,
            asked_by: self.asked_by,
            deny_reason: self.deny_reason,
            refusal: self.refusal,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(tool: &str, target: &str) -> NewProposal {
        NewProposal {
            tool: tool.to_owned(),
            arguments: format!(r#"{{"device_ids":["{target}"]}}"#),
            targets: vec![target.to_owned()],
            fingerprint: "{}".to_owned(),
            schema_version: 1,
            policy_digest: [7u8; 32],
            slot: "sandbox".to_owned(),
            reason: "why".to_owned(),
        }
    }

    /// A denial's reason is kept cleaned, reaches the asking operator's next turn once, and
    /// never another operator's.
    #[test]
    fn a_denial_reason_is_kept_and_told_once_to_the_asker() {
        let mut store = Store::in_memory().unwrap();
        let names = vec!["Lab Bench 2".to_owned()];
        let id = store
            .insert_proposal_named(&sample("batch_reboot", "1"), &names, "ana", 1000)
            .unwrap();
        let p = store.proposal(id).unwrap().unwrap();
        assert_eq!((p.asked_by.as_str(), p.names.clone()), ("ana", names));
        let long = format!("exam\u{7}in progress {}", "x".repeat(400));
        assert!(
            store
                .deny(id, "denied from the terminal by ana", &long, None, 1001)
                .unwrap()
        );
        assert!(
            !store.deny(id, "again", "", None, 1002).unwrap(),
            "denied once only"
        );
        let kept = store.proposal(id).unwrap().unwrap().deny_reason;
        assert!(kept.starts_with("exam in progress"), "{kept}");
        assert_eq!(
            kept.chars().count(),
            MAX_DENY_REASON_CHARS + 1,
            "cut, with an ellipsis"
        );
        assert!(store.take_untold_denials("bob").unwrap().is_empty());
        let told = store.take_untold_denials("ana").unwrap();
        assert_eq!(told, vec![(id, kept)]);
        assert!(
            store.take_untold_denials("ana").unwrap().is_empty(),
            "told once"
        );
    }

    #[test]
    fn proposals_round_trip_and_expire() {
        let mut store = Store::in_memory().unwrap();
        let id = store
            .insert_proposal(&sample("batch_reboot", "1000000001"), 1000)
            .unwrap();
        let p = store.proposal(id).unwrap().unwrap();
        assert_eq!(p.status, Status::Pending);
        assert_eq!(p.policy_digest, [7u8; 32]);
        assert_eq!(p.targets, vec!["1000000001"]);
        assert_eq!(store.pending_count().unwrap(), 1);
        assert_eq!(
            store.expire_due(1000 + PROPOSAL_LIFETIME_SECS - 1).unwrap(),
            0
        );
        assert_eq!(store.expire_due(1000 + PROPOSAL_LIFETIME_SECS).unwrap(), 1);
        assert_eq!(store.proposal(id).unwrap().unwrap().status, Status::Expired);
        // A final state is final.
        assert!(!store.decide(id, Status::Denied, "late", 2000).unwrap());
    }

    #[test]
    fn audit_is_append_only_and_chained() {
        let mut store = Store::in_memory().unwrap();
        store.audit("question", None, &json!({"chars": 3})).unwrap();
        store
            .insert_proposal(&sample("batch_reboot", "1000000001"), 1000)
            .unwrap();
        assert!(matches!(
            store.verify_audit().unwrap(),
            ChainCheck::Intact { rows: 2, .. }
        ));
        assert!(
            store
                .connection()
                .execute("UPDATE audit SET kind = 'x'", [])
                .is_err()
        );
        assert!(store.connection().execute("DELETE FROM audit", []).is_err());
    }

    #[test]
    fn file_databases_run_wal_with_full_sync() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let mode: String = store
            .connection()
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        let sync: i64 = store
            .connection()
            .query_row("PRAGMA synchronous", [], |r| r.get(0))
            .unwrap();
        assert_eq!(sync, 2, "synchronous=FULL");
    }

    #[test]
    fn approvals_are_single_use() {
        let mut store = Store::in_memory().unwrap();
        let id = store
            .insert_proposal(&sample("batch_reboot", "1000000001"), now_secs())
            .unwrap();
        store.create_approval("a1", id, "s1", 300).unwrap();
        assert!(store.consume_approval("a1").unwrap());
        assert!(!store.consume_approval("a1").unwrap());
        store.create_approval("a2", id, "s1", -1).unwrap();
        assert!(!store.consume_approval("a2").unwrap());
        assert!(!store.consume_approval("nope").unwrap());
    }
}
