//! Proposable tools through the whole approval path: a proposal stored as a turn stores it,
//! the card on the real page, Approve over HTTP, the real executor, and the write the
//! simulator recorded.

use fleetwatch_e2e::page::PagePath;
use serde_json::json;

/// An event ID may have exactly the shape of a device ID: Epiphan's CMS IDs can be all digits,
/// and hex-looking ones pass the master-ID pattern too. The event is confirmed all the same,
/// once, with the arguments as proposed.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn confirm_cms_event_on_device_runs_for_event_ids_shaped_like_device_ids() {
    let PagePath {
        state,
        h,
        page,
        devices,
    } = PagePath::start().await;
    let device = &devices[0];
    for (n, event_id) in ["19012349999", "abcdef0123456789"].iter().enumerate() {
        let start = h.sim.now() + jiff::SignedDuration::from_hours(3);
        let end = start + jiff::SignedDuration::from_hours(1);
        assert!(h.sim.set_event(
            "sandbox",
            device,
            json!({"id": event_id, "title": "Council meeting", "start": start.to_string(), "end": end.to_string()}),
        ));
        let arguments = json!({"device_id": device, "event_id": event_id});
        state
            .propose(&h, "confirm_cms_event_on_device", &arguments)
            .await;
        let body = page.approve_form().await;
        assert_eq!(page.post("/approve", &body).await, 200);
        let writes = h.sim.writes();
        assert_eq!(writes.len(), n + 1, "exactly one write per approval");
        let last = writes.last().expect("a write");
        assert_eq!(last.team, "sandbox");
        assert_eq!(last.tool, "confirm_cms_event_on_device");
        assert_eq!(last.arguments, arguments);
    }
}
