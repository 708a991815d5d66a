//! The executor's audit chain. Rows are append-only (triggers abort UPDATE and DELETE) and
//! each row's hash covers the previous row's hash and its own content, so an edit, a deletion
//! or an insertion made behind the program's back breaks the chain at that row.
//!
//! The row format and the verifier are the protocol's ([`fleetwatch_protocol::audit`]), the
//! same the assistant uses; this module only reads and writes the table. The executor's rows
//! have been written in that format since the first release (it is this table's original
//! format, generalised), so an existing `executor.db` needs no migration and its table has no
//! format column: every row is [`audit::FORMAT_FIELDS`].

use fleetwatch_protocol::audit::{self, Row};
use rusqlite::{Connection, OptionalExtension, Transaction, params};

/// Hash that the first row chains from.
pub const GENESIS: [u8; 32] = audit::GENESIS;

/// Schema of the audit table and its guards.
pub const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS audit (
    seq INTEGER PRIMARY KEY,
    time INTEGER NOT NULL,
    kind TEXT NOT NULL,
    reason TEXT NOT NULL,
    approval_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    targets TEXT NOT NULL,
    assistant_head TEXT NOT NULL,
    detail TEXT NOT NULL,
    prev_hash BLOB NOT NULL,
    row_hash BLOB NOT NULL
);
CREATE TRIGGER IF NOT EXISTS audit_no_update BEFORE UPDATE ON audit
BEGIN SELECT RAISE(ABORT, 'audit rows are append-only'); END;
CREATE TRIGGER IF NOT EXISTS audit_no_delete BEFORE DELETE ON audit
BEGIN SELECT RAISE(ABORT, 'audit rows are append-only'); END;
";

/// What one audit row says. Never holds a secret: reason codes, IDs and tool names only.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Entry {
    /// What happened (`accepted`, `outcome`, `refused`, `peer_refused`, `recovered`, …).
    pub kind: &'static str,
    /// A stable reason code (a refusal code or an outcome).
    pub reason: String,
    /// The approval ID in hex, when known.
    pub approval_id: String,
    /// The tool, when known.
    pub tool: String,
    /// Target device IDs, comma-separated.
    pub targets: String,
    /// The assistant's chain head in hex, when it sent one.
    pub assistant_head: String,
    /// A short typed fact (a peer uid, an outcome detail); never request data.
    pub detail: String,
}

impl Entry {
    /// The hashed fields, in the table's fixed order: kind, reason, approval ID, tool,
    /// targets, assistant head, detail.
    fn fields(&self) -> [&str; 7] {
        [
            self.kind,
            &self.reason,
            &self.approval_id,
            &self.tool,
            &self.targets,
            &self.assistant_head,
            &self.detail,
        ]
    }
}

/// The latest row's hash, or [`GENESIS`].
pub fn head(conn: &Connection) -> rusqlite::Result<[u8; 32]> {
    let last: Option<Vec<u8>> = conn
        .query_row(
            "SELECT row_hash FROM audit ORDER BY seq DESC LIMIT 1",
            [],
            |r| r.get(0),
        )
        .optional()?;
    Ok(last
        .and_then(|v| <[u8; 32]>::try_from(v.as_slice()).ok())
        .unwrap_or(GENESIS))
}

/// Appends a row inside the caller's transaction, so the row commits with the change it
/// describes or not at all. Returns the new head.
pub fn append(tx: &Transaction<'_>, time: i64, entry: &Entry) -> rusqlite::Result<[u8; 32]> {
    let last: Option<(i64, Vec<u8>)> = tx
        .query_row(
            "SELECT seq, row_hash FROM audit ORDER BY seq DESC LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    let (seq, prev) = match last {
        Some((seq, hash)) => (seq.saturating_add(1), hash),
        None => (1, GENESIS.to_vec()),
    };
    // Only this module writes the column, always 32 bytes. Were a stored hash ever another
    // length, the chain is already broken at that row and `verify` names it; the new row
    // then links to nothing it could be mistaken for.
    let prev: [u8; 32] = prev.try_into().unwrap_or(GENESIS);
    let hash = audit::row_hash(&prev, seq, time, &entry.fields());
    tx.execute(
        "INSERT INTO audit (seq, time, kind, reason, approval_id, tool, targets, assistant_head, detail, prev_hash, row_hash)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        params![seq, time, entry.kind, entry.reason, entry.approval_id, entry.tool, entry.targets, entry.assistant_head, entry.detail, prev.to_vec(), hash.to_vec()],
    )?;
    Ok(hash)
}

/// Why the chain did not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChainError {
    /// The first row where the chain breaks.
    #[error("{0}")]
    Chain(#[from] audit::ChainError),
    /// The table could not be read.
    #[error("audit table unreadable: {0}")]
    Db(String),
}

/// Every row as a value, oldest first, for the protocol's verifier.
fn each_row(
    conn: &Connection,
    mut visit: impl FnMut(Row) -> Result<(), ChainError>,
) -> Result<(), ChainError> {
    let db = |e: rusqlite::Error| ChainError::Db(e.to_string());
    let mut stmt = conn
        .prepare("SELECT seq, time, kind, reason, approval_id, tool, targets, assistant_head, detail, prev_hash, row_hash FROM audit ORDER BY seq")
        .map_err(db)?;
    let mut rows = stmt.query([]).map_err(db)?;
    while let Some(row) = rows.next().map_err(db)? {
        let mut fields = Vec::with_capacity(7);
        for i in 2..=8 {
            fields.push(row.get::<_, String>(i).map_err(db)?);
        }
        visit(Row {
            seq: row.get(0).map_err(db)?,
            time: row.get(1).map_err(db)?,
            format: audit::FORMAT_FIELDS,
            fields,
            prev_hash: row.get(9).map_err(db)?,
            row_hash: row.get(10).map_err(db)?,
        })?;
    }
    Ok(())
}

/// Every row as a value, oldest first (what the one verifier takes).
pub fn rows(conn: &Connection) -> Result<Vec<Row>, ChainError> {
    let mut out = Vec::new();
    each_row(conn, |row| {
        out.push(row);
        Ok(())
    })?;
    Ok(out)
}

/// Verifies the whole chain with the protocol's verifier; returns the number of rows and the
/// head.
pub fn verify(conn: &Connection) -> Result<(u64, [u8; 32]), ChainError> {
    let mut verifier = audit::Verifier::new();
    each_row(conn, |row| Ok(verifier.push(&row)?))?;
    Ok((verifier.rows(), verifier.head()))
}

/// Every row's number and hash, oldest first: the listing `audit heads` prints for the
/// assistant's `audit verify --against`.
pub fn heads(conn: &Connection) -> rusqlite::Result<Vec<(i64, [u8; 32])>> {
    let mut stmt = conn.prepare("SELECT seq, row_hash FROM audit ORDER BY seq")?;
    let rows = stmt.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, Vec<u8>>(1)?)))?;
    let mut out = Vec::new();
    for row in rows {
        let (seq, hash) = row?;
        out.push((
            seq,
            <[u8; 32]>::try_from(hash.as_slice()).unwrap_or(GENESIS),
        ));
    }
    Ok(out)
}

/// The assistant chain heads this log recorded (one per request that carried one), with the
/// row that recorded each, oldest first.
pub fn assistant_anchors(conn: &Connection) -> rusqlite::Result<Vec<(i64, [u8; 32])>> {
    let mut stmt = conn
        .prepare("SELECT seq, assistant_head FROM audit WHERE assistant_head != '' ORDER BY seq")?;
    let rows = stmt.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))?;
    let mut out = Vec::new();
    for row in rows {
        let (seq, text) = row?;
        // Only this program writes the column, always from 32 bytes; the chain check has
        // already shown the row unaltered.
        if let Some(head) = fleetwatch_protocol::hex::decode_array(&text) {
            out.push((seq, head));
        }
    }
    Ok(out)
}

/// True when both guard triggers are installed.
pub fn guarded(conn: &Connection) -> rusqlite::Result<bool> {
    let n: i64 = conn.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name IN ('audit_no_update', 'audit_no_delete')",
        [],
        |r| r.get(0),
    )?;
    Ok(n == 2)
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
mod tests {
    use super::*;

    fn db() -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(SCHEMA).unwrap();
        conn
    }

    fn add(conn: &mut Connection, reason: &str) -> [u8; 32] {
        let tx = conn.transaction().unwrap();
        let h = append(
            &tx,
            1,
            &Entry {
                kind: "refused",
                reason: reason.into(),
                ..Entry::default()
            },
        )
        .unwrap();
        tx.commit().unwrap();
        h
    }

    #[test]
    fn chain_verifies_and_triggers_refuse_changes() {
        let mut conn = db();
        add(&mut conn, "a");
        let h = add(&mut conn, "b");
        assert_eq!(verify(&conn).unwrap(), (2, h));
        assert_eq!(head(&conn).unwrap(), h);
        assert!(conn.execute("UPDATE audit SET reason = 'x'", []).is_err());
        assert!(conn.execute("DELETE FROM audit", []).is_err());
        assert!(guarded(&conn).unwrap());
    }

    #[test]
    fn edits_behind_the_back_are_named() {
        let mut conn = db();
        for r in ["a", "b", "c"] {
            add(&mut conn, r);
        }
        conn.execute_batch("DROP TRIGGER audit_no_update; DROP TRIGGER audit_no_delete;")
            .unwrap();
        conn.execute("UPDATE audit SET reason = 'z' WHERE seq = 2", [])
            .unwrap();
        assert_eq!(
            verify(&conn).unwrap_err(),
            ChainError::Chain(audit::ChainError::Content { seq: 2 })
        );
        let mut conn = db();
        for r in ["a", "b", "c"] {
            add(&mut conn, r);
        }
        conn.execute_batch("DROP TRIGGER audit_no_delete;").unwrap();
        conn.execute("DELETE FROM audit WHERE seq = 2", []).unwrap();
        assert_eq!(
            verify(&conn).unwrap_err(),
            ChainError::Chain(audit::ChainError::Gap {
                seq: 3,
                expected: 2
            })
        );
    }

    #[test]
    fn heads_list_every_row_and_anchors_skip_requests_without_one() {
        let mut conn = db();
        let first = add(&mut conn, "a");
        let tx = conn.transaction().unwrap();
        let second = append(
            &tx,
            2,
            &Entry {
                kind: "accepted",
                assistant_head: fleetwatch_protocol::hex::encode(&[9; 32]),
                ..Entry::default()
            },
        )
        .unwrap();
        tx.commit().unwrap();
        assert_eq!(heads(&conn).unwrap(), vec![(1, first), (2, second)]);
        assert_eq!(assistant_anchors(&conn).unwrap(), vec![(2, [9; 32])]);
    }
}
