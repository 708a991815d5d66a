//! The two audit chains and their anchors in each other, and the assistant database's pragmas.
//!
//! Deleting the newest rows of a hash chain (and putting the append-only triggers back) leaves
//! a shorter chain that still verifies on its own; only the other side's record of the head
//! shows that rows are missing. So the executor records the assistant's head with each
//! `Execute`, the page records the executor's head with each outcome, and each side's
//! `audit verify --against` checks the other's `audit heads` listing.

use std::process::Output;

use fleetwatch::store::Store;
use fleetwatch_e2e::page::PagePath;
use serde_json::json;

const GUARDS: &str = "CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit
     BEGIN SELECT RAISE(ABORT, 'audit rows are append-only'); END;
     CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit
     BEGIN SELECT RAISE(ABORT, 'audit rows are append-only'); END;";

/// What an intruder with the file does: drop the guards, delete the newest rows, and put the
/// guards back so nothing looks altered.
fn truncate(db: &std::path::Path, delete: &str, keep_from: i64) {
    let conn = rusqlite::Connection::open(db).expect("open");
    conn.execute_batch("DROP TRIGGER audit_no_update; DROP TRIGGER audit_no_delete;")
        .expect("drop guards");
    let removed = conn.execute(delete, [keep_from]).expect("delete newest");
    assert!(removed > 0, "{delete} removed nothing");
    conn.execute_batch(GUARDS).expect("guards back");
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn ok(out: Output) -> String {
    assert!(out.status.success(), "{}", text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn deleting_the_newest_rows_on_either_side_is_caught_by_the_other_sides_verify() {
    let PagePath {
        state,
        h,
        page,
        devices,
    } = PagePath::start().await;

    // Two changes approved on the page and run: two anchors each way.
    let mut proposals = Vec::new();
    for device in &devices[..2] {
        let channel = format!("{device}-1");
        // Stopped first: a start on a channel already recording changes nothing, and its card
        // offers only Deny.
        assert!(h.sim.set_recording("sandbox", &channel, false));
        let arguments = json!({"action": "start", "device_ids": [channel]});
        let id = state.propose(&h, "batch_recording", &arguments).await;
        let body = page.approve_form().await;
        assert_eq!(page.post("/approve", &body).await, 200);
        proposals.push(id);
    }
    assert_eq!(h.writes(), 2);

    // Each side verifies on its own and against the other.
    let assistant_heads = ok(state.run(&["audit", "heads"], ""));
    let executor_heads = ok(h.cli(&["audit", "heads"], None));
    let out = ok(h.cli(
        &["audit", "verify", "--against", "-"],
        Some(&assistant_heads),
    ));
    assert!(out.contains("anchors OK: all 2 assistant head(s)"), "{out}");
    let out = ok(state.run(&["audit", "verify", "--against", "-"], &executor_heads));
    assert!(
        out.contains("anchors intact: all 2 executor head(s)"),
        "{out}"
    );

    // The executor's newest row (the second outcome, whose hash the page recorded) removed.
    let executor_db = h.state.join("executor.db");
    let last = h.audit_rows().last().map(|r| r.0).expect("rows");
    truncate(&executor_db, "DELETE FROM audit WHERE seq >= ?1", last);
    let alone = ok(h.cli(&["audit", "verify"], None));
    assert!(
        alone.contains("audit chain OK"),
        "on its own it still verifies: {alone}"
    );
    let executor_heads = ok(h.cli(&["audit", "heads"], None));
    let caught = state.run(&["audit", "verify", "--against", "-"], &executor_heads);
    assert!(!caught.status.success(), "{}", text(&caught));
    let result_row = state
        .store()
        .audit_rows()
        .expect("rows")
        .into_iter()
        .rev()
        .find(|r| r.kind == "page_result")
        .map(|r| r.id)
        .expect("page_result row");
    assert!(
        text(&caught).contains(&format!("anchor broken at row {result_row}")),
        "{}",
        text(&caught)
    );

    // The assistant's newest rows removed, back to before the second approval was sent.
    let sent_from = state
        .store()
        .audit_rows()
        .expect("rows")
        .into_iter()
        .find(|r| r.kind == "page_approval" && r.proposal_id == Some(proposals[1]))
        .map(|r| r.id)
        .expect("page_approval row");
    truncate(
        &state.path().join(fleetwatch::store::DB_FILE),
        "DELETE FROM audit WHERE id >= ?1",
        sent_from,
    );
    let alone = ok(state.run(&["audit", "verify"], ""));
    assert!(alone.contains("audit chain intact"), "{alone}");
    let assistant_heads = ok(state.run(&["audit", "heads"], ""));
    let caught = h.cli(
        &["audit", "verify", "--against", "-"],
        Some(&assistant_heads),
    );
    assert!(!caught.status.success(), "{}", text(&caught));
    let accepted_row = h
        .audit_rows()
        .into_iter()
        .rev()
        .find(|r| r.1 == "accepted")
        .map(|r| r.0)
        .expect("accepted row");
    assert!(
        text(&caught).contains(&format!(
            "audit row {accepted_row} recorded the assistant's chain head"
        )),
        "{}",
        text(&caught)
    );

    // A listing that is not a listing is refused, not read as "nothing missing".
    let garbage = h.cli(
        &["audit", "verify", "--against", "-"],
        Some("1 not-a-hash\n"),
    );
    assert!(!garbage.status.success(), "{}", text(&garbage));
    assert!(text(&garbage).contains("line 1"), "{}", text(&garbage));
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
