//! Proposable tools through the whole approval path. For each of the six: the scripted model
//! proposes it through the model loop (`fleetwatch serve`, asked with `fleetwatch ask`), the
//! card on the real page shows its effect from live state, Approve (and, when disruptive,
//! Confirm) over HTTP, the real executor, and exactly one write the simulator recorded with the
//! canonical arguments. For each tool also one refusal the executor makes on live state, with
//! nothing written; and a category closed while its card is pending. The six runs through the
//! model loop happen once with each model API's stand-in (`both_apis!` at the end).

use fleetwatch_e2e::page::{PagePath, form, form_body};
use fleetwatch_e2e::{sandbox_devices, sign};
use fleetwatch_protocol::refusal::Refusal;
use fleetwatch_protocol::wire::Response;
use fleetwatch_sim::model::{Api, text_reply, tool_use_reply};
use serde_json::{Value, json};

/// The sandbox team's devices by role in the simulator's demo fleet.
const TEST_ROOM_A: usize = 0;
const PRUEBAS_1: usize = 1;
const PRUEBAS_2: usize = 2;
const LAB_BENCH_2: usize = 4;
const DEMO_STUDIO: usize = 5;

/// What one tool's run through the whole path showed.
struct Ran {
    path: PagePath,
    /// The card as first shown.
    card: String,
}

/// Starts everything with a scripted model, lets `prepare` set the simulator's state and say
/// what to propose, asks `fleetwatch ask`, and approves the card (confirming when disruptive).
/// Asserts the proposal line, the one write and its arguments.
async fn through_the_model_loop(
    api: Api,
    prepare: impl FnOnce(&PagePath) -> (&'static str, Value),
    disruptive: bool,
) -> Ran {
    let model = fleetwatch_sim::model::start_api(api, Vec::new(), 0)
        .await
        .expect("model stand-in");
    let path = PagePath::start_with_model(model).await;
    let (tool, arguments) = prepare(&path);
    assert!(path.page.model.push_replies(vec![
        tool_use_reply(
            "toolu_1",
            "propose_change",
            json!({"tool": tool, "arguments": arguments, "reason": "the operator asked for it"}),
        ),
        text_reply("I proposed it; a person approves it on the page."),
    ]));
    let asked = path.state.run(&["ask", "please do it"], "");
    let printed = String::from_utf8_lossy(&asked.stdout).into_owned();
    assert!(
        asked.status.success(),
        "{printed}{}",
        String::from_utf8_lossy(&asked.stderr)
    );
    assert!(
        printed.contains("Proposal #1 is waiting for a person to approve it"),
        "{tool}: {printed}"
    );
    assert_eq!(
        path.h.sim.writes().len(),
        0,
        "{tool}: proposing writes nothing"
    );

    let card = path.page.front().await;
    assert!(card.contains("action=\"/approve\""), "{tool}: {card}");
    let (status, answer) = path
        .page
        .post_text("/approve", &form_body(&form(&card, "/approve")))
        .await;
    assert_eq!(status, 200, "{tool}: {answer}");
    let answer = if disruptive {
        assert!(
            answer.contains("Confirm a disruptive change"),
            "{tool}: {answer}"
        );
        assert_eq!(
            path.h.sim.writes().len(),
            0,
            "{tool}: nothing before Confirm"
        );
        let (status, done) = path
            .page
            .post_text("/confirm", &form_body(&form(&answer, "/confirm")))
            .await;
        assert_eq!(status, 200, "{tool}: {done}");
        done
    } else {
        answer
    };
    assert!(answer.contains(">Done<"), "{tool}: {answer}");
    let writes = path.h.sim.writes();
    assert_eq!(writes.len(), 1, "{tool}: exactly one write");
    assert_eq!(writes[0].team, "sandbox");
    assert_eq!(writes[0].tool, tool);
    assert_eq!(
        writes[0].arguments, arguments,
        "{tool}: the arguments as proposed"
    );
    Ran { path, card }
}

fn device(path: &PagePath, role: usize) -> String {
    sandbox_devices(&path.h.sim)[role].clone()
}

/// The demo fleet's stream destinations: (the one Demo Studio sends to, the spare).
fn streams(path: &PagePath) -> (String, String) {
    let list = path.h.sim.stream_endpoints("sandbox");
    assert_eq!(list.len(), 2, "{list:?}");
    (list[0].0.clone(), list[1].0.clone())
}

async fn batch_recording_start_end_to_end(api: Api) {
    let Ran { path, card } = through_the_model_loop(
        api,
        |p| {
            let channel = format!("{}-1", device(p, TEST_ROOM_A));
            assert!(p.h.sim.set_recording("sandbox", &channel, false));
            (
                "batch_recording",
                json!({"action": "start", "device_ids": [channel]}),
            )
        },
        false,
    )
    .await;
    assert!(card.contains("Recording on Test Room A · "), "{card}");
    assert!(card.contains(": stopped → recording"), "{card}");
    // Now that it records, the same start is pointless: its card offers only Deny.
    let arguments =
        json!({"action": "start", "device_ids": [format!("{}-1", device(&path, TEST_ROOM_A))]});
    path.state
        .propose(&path.h, "batch_recording", &arguments)
        .await;
    let again = path.page.front().await;
    assert!(!again.contains("action=\"/approve\""), "{again}");
    assert!(
        again.contains("is already recording; starting it changes nothing"),
        "{again}"
    );
}

async fn start_stream_endpoint_end_to_end(api: Api) {
    let Ran { card, .. } = through_the_model_loop(
        api,
        |p| {
            let (_, spare) = streams(p);
            (
                "start_stream_endpoint",
                json!({"stream_id": spare, "device_id": device(p, DEMO_STUDIO), "channel_id": "1"}),
            )
        },
        false,
    )
    .await;
    assert!(
        card.contains("from Demo Studio · ")
            && card.contains(": not set up on this channel → sending"),
        "{card}"
    );
}

async fn stop_stream_endpoint_end_to_end(api: Api) {
    let Ran { card, .. } = through_the_model_loop(
        api,
        |p| {
            let (sending, _) = streams(p);
            (
                "stop_stream_endpoint",
                json!({"stream_id": sending, "device_id": device(p, DEMO_STUDIO), "channel_id": "1"}),
            )
        },
        true,
    )
    .await;
    assert!(
        card.contains(
            "Stream Sandbox RTMP — Demo Studio (live.sandbox.example.net) from Demo Studio · "
        ) && card.contains(": sending → stopped"),
        "{card}"
    );
}

async fn confirm_cms_event_on_device_end_to_end(api: Api) {
    let Ran { path, card } = through_the_model_loop(
        api,
        |p| {
            (
                "confirm_cms_event_on_device",
                json!({"device_id": device(p, LAB_BENCH_2), "event_id": "sandbox-review-02"}),
            )
        },
        false,
    )
    .await;
    assert!(
        card.contains("Event Weekly review (") && card.contains(") on Lab Bench 2: "),
        "{card}"
    );
    assert!(card.contains(" → confirmed"), "{card}");
    // Confirmed now: the same proposal again offers only Deny, and says why.
    let arguments =
        json!({"device_id": device(&path, LAB_BENCH_2), "event_id": "sandbox-review-02"});
    path.state
        .propose(&path.h, "confirm_cms_event_on_device", &arguments)
        .await;
    let again = path.page.front().await;
    assert!(!again.contains("action=\"/approve\""), "{again}");
    assert!(
        again.contains("Event Weekly review on Lab Bench 2 is already confirmed"),
        "{again}"
    );
}

async fn batch_reboot_end_to_end(api: Api) {
    let Ran { path, card } = through_the_model_loop(
        api,
        |p| {
            (
                "batch_reboot",
                json!({"device_ids": [device(p, PRUEBAS_2)]}),
            )
        },
        true,
    )
    .await;
    assert!(
        card.contains(
            "Sala de Pruebas 2: online → restarting (offline for a few minutes); recording it interrupts: none"
        ),
        "{card}"
    );
    // Restarting, it is offline: another reboot's card offers only Deny.
    path.state
        .propose(
            &path.h,
            "batch_reboot",
            &json!({"device_ids": [device(&path, PRUEBAS_2)]}),
        )
        .await;
    let again = path.page.front().await;
    assert!(
        again.contains("Sala de Pruebas 2 is offline, so this change cannot reach it."),
        "{again}"
    );
    assert!(!again.contains("action=\"/approve\""), "{again}");
}

async fn batch_firmware_update_end_to_end(api: Api) {
    let Ran { card, .. } = through_the_model_loop(
        api,
        |p| {
            (
                "batch_firmware_update",
                json!({"device_ids": [device(p, PRUEBAS_2)]}),
            )
        },
        true,
    )
    .await;
    assert!(
        card.contains("Sala de Pruebas 2 (Pearl-2): firmware 4.24.6 → Epiphan"),
        "{card}"
    );
    assert!(
        card.contains("(the newest in this team is 4.24.6); online → restarting"),
        "{card}"
    );
}

/// One refusal per tool that the executor makes on the state it reads live, through the real
/// binary: the approval is signed over claims bound to that state, and still nothing is
/// written.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_tool_has_a_refusal_on_live_state_and_nothing_is_written() {
    let path = PagePath::start().await;
    let h = &path.h;
    let sim = &h.sim;
    let now = jiff::Timestamp::now();
    let minutes = |m: i64| now + jiff::SignedDuration::from_mins(m);
    let (sending, _) = streams(&path);
    let bench2 = device(&path, LAB_BENCH_2);
    let studio = device(&path, DEMO_STUDIO);
    let room_a = device(&path, TEST_ROOM_A);
    // Each case: what to set, the change, the refusal.
    type Expected = Box<dyn Fn(&Refusal) -> bool>;
    let cases: Vec<(&str, Value, Expected)> = vec![
        (
            // Stopping a recording while its event is on.
            "batch_recording",
            json!({"action": "stop", "device_ids": [format!("{room_a}-1")]}),
            Box::new(|r| *r == Refusal::EventLive),
        ),
        (
            // Restarting a room that records.
            "batch_reboot",
            json!({"device_ids": [device(&path, PRUEBAS_1)]}),
            Box::new(|r| *r == Refusal::Recording),
        ),
        (
            // Firmware inside its two-hour lead window.
            "batch_firmware_update",
            json!({"device_ids": [bench2.clone()]}),
            Box::new(|r| matches!(r, Refusal::EventSoon { .. })),
        ),
        (
            // A destination the sandbox team does not have.
            "start_stream_endpoint",
            json!({"stream_id": "0f0e0d0c-0b0a-4909-8807-060504030201", "device_id": studio, "channel_id": "1"}),
            Box::new(|r| *r == Refusal::StreamNotFound),
        ),
        (
            // Stopping a stream on a device that went offline.
            "stop_stream_endpoint",
            json!({"stream_id": sending, "device_id": studio, "channel_id": "1"}),
            Box::new(|r| *r == Refusal::Offline),
        ),
        (
            // An event that is not the device's.
            "confirm_cms_event_on_device",
            json!({"device_id": bench2, "event_id": "not-this-event"}),
            Box::new(|r| *r == Refusal::EventMismatch),
        ),
    ];
    assert!(sim.set_recording("sandbox", &format!("{room_a}-1"), true));
    assert!(sim.move_event("sandbox", &room_a, minutes(-10), Some(minutes(50))));
    assert!(sim.move_event("sandbox", &bench2, minutes(90), Some(minutes(150))));
    assert!(sim.set_online("sandbox", &studio, false));
    for (tool, arguments, expected) in cases {
        let claims = h.claims(tool, &arguments).await;
        let answer = h.execute(sign(&claims, 7)).await;
        match &answer {
            Some(Response::Refused(r)) if expected(r) => {}
            other => panic!("{tool}: {other:?}\n{}", h.log_text()),
        }
        assert_eq!(h.writes(), 0, "{tool}: nothing written");
        assert!(sim.writes().is_empty(), "{tool}: nothing reached Epiphan");
    }
}

/// `fleetwatch grants close` while a card is pending: the next Approve is refused, nothing is
/// written, and the card offers only Deny and says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn closing_a_category_refuses_the_pending_cards_next_approve() {
    let PagePath {
        state,
        h,
        page,
        devices,
    } = PagePath::start().await;
    let channel = format!("{}-1", devices[TEST_ROOM_A]);
    assert!(h.sim.set_recording("sandbox", &channel, false));
    state
        .propose(
            &h,
            "batch_recording",
            &json!({"action": "start", "device_ids": [channel]}),
        )
        .await;
    let body = page.approve_form().await;
    let closed = state.run(&["grants", "close", "recording"], "");
    assert!(closed.status.success(), "{closed:?}");
    let (status, answer) = page.post_text("/approve", &body).await;
    assert_eq!(status, 409, "{answer}");
    assert!(
        answer.contains("The recording category was closed"),
        "{answer}"
    );
    assert!(h.sim.writes().is_empty());
    assert_eq!(h.writes(), 0);
    let card = page.front().await;
    assert!(!card.contains("action=\"/approve\""), "{card}");
    assert!(card.contains("The recording category was closed"), "{card}");
}

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

fleetwatch_sim::both_apis!(
    batch_recording_start_end_to_end,
    start_stream_endpoint_end_to_end,
    stop_stream_endpoint_end_to_end,
    confirm_cms_event_on_device_end_to_end,
    batch_reboot_end_to_end,
    batch_firmware_update_end_to_end,
);
