//! Sixteen simultaneous Approve POSTs on the real approval page (`fleetwatch serve`), with the
//! real executor behind it and the simulator as Epiphan: one approval is consumed, one
//! `Execute` reaches the executor, one write is made.

use fleetwatch_e2e::page::PagePath;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixteen_simultaneous_approve_posts_make_one_execute_and_one_write() {
    let PagePath {
        state,
        h,
        page,
        devices,
    } = PagePath::start().await;

    let arguments = json!({"action": "start", "device_ids": [format!("{}-1", devices[0])]});
    let id = state.propose(&h, "batch_recording", &arguments).await;
    let body = page.approve_form().await;

    let posts = (0..16).map(|_| page.post("/approve", &body));
    let statuses: Vec<u16> = futures_util::future::join_all(posts).await;
    let ok = statuses.iter().filter(|s| **s == 200).count();
    assert_eq!(ok, 1, "exactly one Approve went through: {statuses:?}");
    assert!(
        statuses.iter().all(|s| *s == 200 || (400..500).contains(s)),
        "the others were refused: {statuses:?}"
    );

    // One Execute reached the executor (one nonce stored), and one write was made.
    let accepted = h.audit_rows().iter().filter(|r| r.1 == "accepted").count();
    assert_eq!(accepted, 1, "{:?}", h.audit_rows());
    assert_eq!(h.writes(), 1);
    assert_eq!(h.sim.writes()[0].arguments, arguments);
    let status = state.store().proposal(id).expect("read").map(|p| p.status);
    assert_eq!(status, Some(fleetwatch::store::Status::Executed));
}
