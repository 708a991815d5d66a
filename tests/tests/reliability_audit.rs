//! The two audit chains and their anchors in each other, and the assistant database's pragmas.
//!
//! Deleting the newest rows of a hash chain (and putting the append-only triggers back) leaves
//! a shorter chain that still verifies on its own; only the other side's record of the head
//! can show that rows are missing. These tests pin what each side records today.

use fleetwatch::store::{ChainCheck, Store};
use fleetwatch_e2e::{Harness, Setup, sandbox_devices, send, sign};
use fleetwatch_protocol::wire::{ExecuteRequest, OutcomeKind, Request, Response};
use serde_json::json;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn assistant_row_hashes(store: &Store) -> Vec<String> {
    let mut stmt = store
        .connection()
        .prepare("SELECT row_hash FROM audit ORDER BY id")
        .expect("select");
    stmt.query_map([], |r| r.get::<_, Vec<u8>>(0))
        .expect("rows")
        .map(|r| hex(&r.expect("row")))
        .collect()
}

/// What an intruder with the file does: drop the guards, delete the newest rows, and put the
/// guards back so nothing looks altered.
fn truncate_assistant_chain(store: &Store, keep: i64) {
    let conn = store.connection();
    conn.execute_batch("DROP TRIGGER audit_no_update; DROP TRIGGER audit_no_delete;")
        .expect("drop guards");
    conn.execute("DELETE FROM audit WHERE id > ?1", [keep])
        .expect("delete newest");
    conn.execute_batch(
        "CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit
         BEGIN SELECT RAISE(ABORT, 'audit rows are append-only'); END;
         CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit
         BEGIN SELECT RAISE(ABORT, 'audit rows are append-only'); END;",
    )
    .expect("guards back");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_executor_records_the_assistant_head_so_a_truncated_assistant_chain_shows() {
    let state = tempfile::tempdir().expect("state");
    let mut assistant = Store::open(state.path()).expect("assistant store");
    for i in 0..5 {
        assistant
            .audit("question", None, &json!({"n": i}))
            .expect("audit");
    }
    let head = assistant.chain_head().expect("head");
    let rows_at_send = assistant.audit_rows().expect("rows").len() as i64;

    let mut h = Harness::prepare(Setup::default()).await;
    h.setup.allowlist = Some(sandbox_devices(&h.sim));
    h.spawn();
    h.wait_ready().await;
    let device = sandbox_devices(&h.sim)[0].clone();
    let claims = h
        .claims(
            "batch_recording",
            &json!({"action": "start", "device_ids": [format!("{device}-1")]}),
        )
        .await;
    let response = send(
        &h.socket,
        &Request::Execute(ExecuteRequest {
            approval: sign(&claims, 7),
            assistant_chain_head: head,
        }),
    )
    .await;
    let Some(Response::Executed(outcome)) = response else {
        panic!("{response:?}")
    };
    assert_eq!(outcome.kind, OutcomeKind::Done);

    // Executor side: the execution's row carries the assistant's head as sent.
    let rows = h.audit_rows();
    let accepted = rows
        .iter()
        .find(|r| r.1 == "accepted" && r.3 == hex(&claims.approval_id))
        .expect("accepted row");
    let anchored: String = {
        let conn = rusqlite::Connection::open(h.state.join("executor.db")).expect("db");
        conn.query_row(
            "SELECT assistant_head FROM audit WHERE seq = ?1",
            [accepted.0],
            |r| r.get(0),
        )
        .expect("assistant_head")
    };
    assert_eq!(anchored, hex(&head));
    // And the outcome handed back is the executor's head after recording it.
    let executor_head = {
        let conn = fleetwatch_executor::store::connect(&h.state.join("executor.db")).expect("db");
        fleetwatch_executor::audit::head(&conn).expect("head")
    };
    assert_eq!(outcome.chain_head, executor_head);

    // The assistant goes on, then someone deletes its newest rows, including the one the
    // executor anchored.
    for i in 0..3 {
        assistant
            .audit("question", None, &json!({"after": i}))
            .expect("audit");
    }
    assert!(assistant_row_hashes(&assistant).contains(&anchored));
    truncate_assistant_chain(&assistant, rows_at_send - 2);
    // On its own, the shorter chain still verifies: this is why the anchor exists.
    assert!(matches!(
        assistant.verify_audit().expect("verify"),
        ChainCheck::Intact { .. }
    ));
    // Against the executor's anchor, the loss shows: the anchored head is no longer a row of
    // the assistant's chain.
    assert!(
        !assistant_row_hashes(&assistant).contains(&anchored),
        "the executor's anchor names a row the assistant no longer has"
    );
}

#[test]
fn every_assistant_connection_reads_back_wal_full_and_a_busy_timeout() {
    let state = tempfile::tempdir().expect("state");
    // Several stores open at once on one file, as `serve`, the page and `audit verify` do.
    let stores: Vec<Store> = (0..3)
        .map(|_| Store::open(state.path()).expect("open"))
        .collect();
    for (i, store) in stores.iter().enumerate() {
        let conn = store.connection();
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .expect("journal_mode");
        let sync: i64 = conn
            .query_row("PRAGMA synchronous", [], |r| r.get(0))
            .expect("synchronous");
        let busy: i64 = conn
            .query_row("PRAGMA busy_timeout", [], |r| r.get(0))
            .expect("busy_timeout");
        assert_eq!(mode, "wal", "connection {i}");
        assert_eq!(sync, 2, "connection {i}: FULL");
        assert!(busy > 0, "connection {i}");
    }
}
