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

/// The same race when the executor needs two operators' passkeys: the first passkey's approval
/// is kept, then sixteen simultaneous approvals with the second passkey make one `Execute`
/// carrying both, and one write.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn with_two_passkeys_needed_sixteen_second_approvals_make_one_write() {
    use fleetwatch_e2e::authenticator::SoftPasskey;
    let PagePath {
        state,
        h,
        page,
        devices,
    } = PagePath::start_with(|_| "passkeys:\n  quorum: 2\n".to_owned()).await;
    let mut ana = SoftPasskey::ed25519(41);
    let mut bo = SoftPasskey::es256(42);
    // Enrolled on the executor; the page names who approved from the approver lines the
    // executor's Status reports.
    for (passkey, person, name) in [(&ana, "ana", "Ana"), (&bo, "bo", "Bo")] {
        let line = passkey.person_line(person, name);
        let out = h.cli(&["approvers", "add", "-"], Some(&line));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    let arguments = json!({"action": "start", "device_ids": [format!("{}-1", devices[0])]});
    let id = state.propose(&h, "batch_recording", &arguments).await;
    let first = page.approve_form_with(&mut ana).await;
    assert_eq!(page.post("/approve", &first).await, 200);
    assert_eq!(h.writes(), 0, "the first passkey alone writes nothing");
    assert!(page.front().await.contains("waiting for a second person"));

    let body = page.approve_form_with(&mut bo).await;
    let posts = (0..16).map(|_| page.post("/approve", &body));
    let statuses: Vec<u16> = futures_util::future::join_all(posts).await;
    let ok = statuses.iter().filter(|s| **s == 200).count();
    assert_eq!(ok, 1, "exactly one approval went through: {statuses:?}");
    let accepted: Vec<_> = h
        .audit_rows()
        .into_iter()
        .filter(|r| r.1 == "accepted")
        .collect();
    assert_eq!(accepted.len(), 1, "{:?}", h.audit_rows());
    assert!(
        accepted[0].4.contains("Ana") && accepted[0].4.contains("Bo"),
        "{accepted:?}"
    );
    assert_eq!(h.writes(), 1);
    let status = state.store().proposal(id).expect("read").map(|p| p.status);
    assert_eq!(status, Some(fleetwatch::store::Status::Executed));
}
