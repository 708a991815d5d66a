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
