//! Both audit chains are one format with one verifier: rows read out of the executor's
//! database and out of the assistant's are each checked by the protocol's verifier, which
//! agrees with each side's own `verify`; an edited row on either side is caught at that row;
//! and a row copied from one chain into the other does not pass.

use fleetwatch::store::{ChainCheck, Store};
use fleetwatch_executor::audit::{self as executor_audit, Entry};
use fleetwatch_protocol::audit::{self, ChainError};
use serde_json::json;

fn executor_db(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("executor.db");
    let store = fleetwatch_executor::store::Store::open(&path).expect("executor store");
    for (kind, reason) in [
        ("refused", "no_fence"),
        ("accepted", ""),
        ("outcome", "done"),
    ] {
        store
            .audit(&Entry {
                kind,
                reason: reason.into(),
                approval_id: "00".repeat(16),
                tool: "batch_reboot".into(),
                targets: "1000000001".into(),
                ..Entry::default()
            })
            .expect("audit");
    }
    path
}

fn assistant_store(dir: &std::path::Path) -> Store {
    let mut store = Store::open(dir).expect("assistant store");
    for chars in [3, 5, 8] {
        store
            .audit("question", None, &json!({"chars": chars}))
            .expect("audit");
    }
    store
}

fn drop_guards(conn: &rusqlite::Connection) {
    conn.execute_batch("DROP TRIGGER audit_no_update; DROP TRIGGER audit_no_delete;")
        .expect("drop guards");
}

#[test]
fn both_sides_rows_verify_with_the_one_verifier_and_an_edited_row_is_caught() {
    let dir = tempfile::tempdir().expect("dir");
    let executor_path = executor_db(dir.path());
    let conn = fleetwatch_executor::store::connect(&executor_path).expect("connect");
    let store = assistant_store(dir.path());

    // The one verifier over each side's rows agrees with each side's own verify.
    let executor_rows = executor_audit::rows(&conn).expect("rows");
    let assistant_rows = store.audit_chain_rows().expect("rows");
    let by_protocol = audit::verify(&executor_rows).expect("executor chain");
    assert_eq!(by_protocol, executor_audit::verify(&conn).expect("verify"));
    assert_eq!(by_protocol.1, executor_audit::head(&conn).expect("head"));
    let (rows, head) = audit::verify(&assistant_rows).expect("assistant chain");
    assert_eq!(
        store.verify_audit().expect("verify"),
        ChainCheck::Intact { rows, head }
    );
    assert_eq!((by_protocol.0, rows), (3, 3));

    // A row of one chain spliced into the other is refused.
    let mut spliced = assistant_rows.clone();
    spliced[1] = executor_rows[1].clone();
    assert!(audit::verify(&spliced).is_err());

    // An edit behind each side's back is named at its row, by the verifier and by each side.
    drop_guards(&conn);
    conn.execute("UPDATE audit SET reason = 'done' WHERE seq = 2", [])
        .expect("edit");
    let executor_rows = executor_audit::rows(&conn).expect("rows");
    assert_eq!(
        audit::verify(&executor_rows),
        Err(ChainError::Content { seq: 2 })
    );
    assert_eq!(
        executor_audit::verify(&conn)
            .expect_err("caught")
            .to_string(),
        ChainError::Content { seq: 2 }.to_string()
    );
    drop_guards(store.connection());
    store
        .connection()
        .execute("UPDATE audit SET detail = '{\"chars\":1}' WHERE id = 3", [])
        .expect("edit");
    let assistant_rows = store.audit_chain_rows().expect("rows");
    assert_eq!(
        audit::verify(&assistant_rows),
        Err(ChainError::Content { seq: 3 })
    );
    assert!(matches!(
        store.verify_audit().expect("verify"),
        ChainCheck::Broken { row: 3, .. }
    ));
}
