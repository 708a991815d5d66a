//! The audit chain: append-only by trigger, and an edit made behind the program's back (after
//! dropping the triggers, as an intruder with the file could) is named by
//! `fleetwatch audit verify`.

mod common;

use std::path::Path;
use std::process::Command;

use fleetwatch::store::{ChainCheck, NewProposal, Store};
use serde_json::json;

fn fill(state: &Path) {
    let mut store = Store::open(state).unwrap();
    store
        .audit("started", None, &json!({"expired": 0}))
        .unwrap();
    store
        .insert_proposal(
            &NewProposal {
                tool: "batch_reboot".into(),
                arguments: r#"{"device_ids":["1000000001"]}"#.into(),
                targets: vec!["1000000001".into()],
                fingerprint: "{}".into(),
                schema_version: 1,
                policy_digest: [1; 32],
                slot: "sandbox".into(),
                reason: "r".into(),
            },
            1_700_000_000,
        )
        .unwrap();
    store
        .audit("question", None, &json!({"chars": 12}))
        .unwrap();
    store
        .audit("question", None, &json!({"chars": 30}))
        .unwrap();
}

fn verify(state: &Path) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_fleetwatch"))
        .env_clear()
        .env("FLEETWATCH_STATE_DIR", state)
        .env("FLEETWATCH_POLICY", common::policy_path())
        .args(["audit", "verify"])
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

fn tamper(state: &Path, sql: &str) {
    let conn = rusqlite::Connection::open(state.join("assistant.db")).unwrap();
    conn.execute_batch("DROP TRIGGER audit_no_update; DROP TRIGGER audit_no_delete;")
        .unwrap();
    conn.execute_batch(sql).unwrap();
}

#[test]
fn an_intact_chain_verifies() {
    let dir = tempfile::tempdir().unwrap();
    fill(dir.path());
    let (ok, out) = verify(dir.path());
    assert!(ok, "{out}");
    assert!(out.contains("intact: 4 rows"), "{out}");
}

#[test]
fn triggers_refuse_edits_and_deletes() {
    let dir = tempfile::tempdir().unwrap();
    fill(dir.path());
    let store = Store::open(dir.path()).unwrap();
    assert!(
        store
            .connection()
            .execute("UPDATE audit SET detail = '{}' WHERE id = 2", [])
            .is_err()
    );
    assert!(
        store
            .connection()
            .execute("DELETE FROM audit WHERE id = 2", [])
            .is_err()
    );
    assert!(matches!(
        store.verify_audit().unwrap(),
        ChainCheck::Intact { rows: 4, .. }
    ));
}

#[test]
fn an_edited_row_is_named() {
    let dir = tempfile::tempdir().unwrap();
    fill(dir.path());
    tamper(
        dir.path(),
        "UPDATE audit SET detail = '{\"chars\":1}' WHERE id = 3;",
    );
    let (ok, out) = verify(dir.path());
    assert!(!ok);
    assert!(out.contains("row 3"), "{out}");
}

#[test]
fn a_removed_row_is_found_at_the_next_one() {
    let dir = tempfile::tempdir().unwrap();
    fill(dir.path());
    tamper(dir.path(), "DELETE FROM audit WHERE id = 2;");
    let (ok, out) = verify(dir.path());
    assert!(!ok);
    assert!(out.contains("row 3"), "{out}");
}

#[test]
fn a_rehashed_row_still_breaks_the_link() {
    // An intruder who recomputes one row's own hash still leaves the next row pointing at the
    // old one.
    let dir = tempfile::tempdir().unwrap();
    fill(dir.path());
    tamper(
        dir.path(),
        "UPDATE audit SET row_hash = zeroblob(32) WHERE id = 1;",
    );
    let (ok, out) = verify(dir.path());
    assert!(!ok);
    assert!(out.contains("row 1"), "{out}");
}

// ---- databases written before the shared row format ------------------------------------------

/// `assistant.db` as the first releases created it: no `format` column in the audit table.
const FIRST_SCHEMA: &str = "
CREATE TABLE proposals (
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
CREATE INDEX proposals_status ON proposals(status);
CREATE TABLE approvals (
    id TEXT PRIMARY KEY,
    proposal_id INTEGER NOT NULL REFERENCES proposals(id),
    used INTEGER NOT NULL DEFAULT 0 CHECK (used IN (0, 1)),
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    session TEXT NOT NULL
);
CREATE TABLE audit (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at INTEGER NOT NULL,
    kind TEXT NOT NULL,
    proposal_id INTEGER,
    detail TEXT NOT NULL,
    prev_hash BLOB NOT NULL,
    row_hash BLOB NOT NULL
);
CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit
BEGIN SELECT RAISE(ABORT, 'audit rows are append-only'); END;
CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit
BEGIN SELECT RAISE(ABORT, 'audit rows are append-only'); END;
";

/// Writes rows the way the first releases did: SHA-256 over the previous hash and the
/// canonical JSON of the row. Returns each row's hash.
fn first_format_db(path: &Path, rows: &[(&str, Option<u64>, serde_json::Value)]) -> Vec<[u8; 32]> {
    use sha2::Digest as _;
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(FIRST_SCHEMA).unwrap();
    let mut prev = [0u8; 32];
    let mut hashes = Vec::new();
    for (i, (kind, proposal_id, detail)) in rows.iter().enumerate() {
        let id = i as i64 + 1;
        let at = 1_700_000_000 + id;
        let detail = detail.to_string();
        let content =
            json!({"id": id, "at": at, "kind": kind, "proposal_id": proposal_id, "detail": detail});
        let bytes = fleetwatch_protocol::canonical::from_value(&content)
            .unwrap()
            .into_string();
        let mut h = sha2::Sha256::new();
        h.update(prev);
        h.update(bytes.as_bytes());
        let hash: [u8; 32] = h.finalize().into();
        conn.execute(
            "INSERT INTO audit (id, at, kind, proposal_id, detail, prev_hash, row_hash)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            rusqlite::params![
                id,
                at,
                kind,
                proposal_id.map(|p| p as i64),
                detail,
                prev.as_slice(),
                hash.as_slice()
            ],
        )
        .unwrap();
        hashes.push(hash);
        prev = hash;
    }
    hashes
}

fn formats(store: &Store) -> Vec<i64> {
    let conn = store.connection();
    let mut stmt = conn
        .prepare("SELECT format FROM audit ORDER BY id")
        .unwrap();
    stmt.query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<Vec<i64>, _>>()
        .unwrap()
}

#[test]
fn an_old_database_keeps_its_rows_as_written_and_new_rows_chain_on() {
    use fleetwatch_protocol::audit::{FORMAT_ASSISTANT_JSON, FORMAT_FIELDS};
    let dir = tempfile::tempdir().unwrap();
    let old = first_format_db(
        &dir.path().join("assistant.db"),
        &[
            ("started", None, json!({"expired": 0})),
            ("proposed", Some(1), json!({"tool": "batch_reboot"})),
            ("question", None, json!({"chars": 12})),
        ],
    );

    // Opening migrates: the rows, their hashes and the head are untouched, and marked.
    let mut store = Store::open(dir.path()).unwrap();
    assert_eq!(
        store.verify_audit().unwrap(),
        ChainCheck::Intact {
            rows: 3,
            head: old[2]
        }
    );
    let heads: Vec<[u8; 32]> = store
        .audit_heads()
        .unwrap()
        .into_iter()
        .map(|h| h.1)
        .collect();
    assert_eq!(heads, old, "no row was re-chained");
    assert_eq!(formats(&store), vec![FORMAT_ASSISTANT_JSON; 3]);

    // New rows are in the shared format and chain on from the last old one.
    store
        .audit("question", None, &json!({"chars": 30}))
        .unwrap();
    let ChainCheck::Intact { rows: 4, head } = store.verify_audit().unwrap() else {
        panic!("{:?}", store.verify_audit())
    };
    assert_ne!(head, old[2]);
    assert_eq!(
        formats(&store),
        vec![
            FORMAT_ASSISTANT_JSON,
            FORMAT_ASSISTANT_JSON,
            FORMAT_ASSISTANT_JSON,
            FORMAT_FIELDS
        ]
    );
    let rows = store.audit_chain_rows().unwrap();
    assert_eq!(rows[3].prev_hash, old[2].to_vec());
    drop(store);
    // Opening again migrates nothing twice, and the command agrees.
    assert!(Store::open(dir.path()).is_ok());
    let (ok, out) = verify(dir.path());
    assert!(ok, "{out}");
    assert!(out.contains("intact: 4 rows"), "{out}");

    // An edit to an old row is still caught, with the function it was written with.
    tamper(
        dir.path(),
        "UPDATE audit SET detail = '{\"tool\":\"batch_firmware_update\"}' WHERE id = 2;",
    );
    let (ok, out) = verify(dir.path());
    assert!(!ok);
    assert!(out.contains("row 2"), "{out}");
}

#[test]
fn marking_a_new_row_as_old_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    first_format_db(
        &dir.path().join("assistant.db"),
        &[("started", None, json!({"expired": 0}))],
    );
    let mut store = Store::open(dir.path()).unwrap();
    store.audit("question", None, &json!({"chars": 3})).unwrap();
    store.audit("question", None, &json!({"chars": 4})).unwrap();
    drop(store);
    tamper(dir.path(), "UPDATE audit SET format = 0 WHERE id = 3;");
    let (ok, out) = verify(dir.path());
    assert!(!ok);
    assert!(out.contains("row 3"), "{out}");
}
