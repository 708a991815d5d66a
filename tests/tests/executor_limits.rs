//! The limits no signature lifts (DESIGN §10), through the real executor binary with the
//! simulator as Epiphan: the per-device cooldown and the hourly cap (kept across a restart),
//! offline targets, doubtful recorder states, an online target missing from recorder status,
//! events with no end, the expiry checked again at the write, and the claims' sizes checked
//! before anything of them is stored. Every refusal is checked against the simulator's write
//! log and the executor's audit.
//!
//! The cooldown's end is reached by moving the executor's wall clock with libfaketime (Debian's
//! `faketime` package, which `.ci/run` installs).

use fleetwatch_e2e::{Harness, Setup, sandbox_devices, shifted, sign};
use fleetwatch_protocol::Refusal;
use fleetwatch_protocol::claims::ApprovalClaims;
use fleetwatch_protocol::wire::{OutcomeKind, Request, Response};
use fleetwatch_sim::Fault;
use jiff::SignedDuration;
use serde_json::{Value, json};

async fn started() -> Harness {
    let mut h = Harness::prepare(Setup::default()).await;
    h.setup.allowlist = Some(sandbox_devices(&h.sim));
    h.spawn();
    h.wait_ready().await;
    h
}

fn device(h: &Harness, i: usize) -> String {
    sandbox_devices(&h.sim)[i].clone()
}

fn reboot(device: &str) -> Value {
    json!({"device_ids": [device]})
}

fn recording(device: &str, action: &str) -> Value {
    json!({"action": action, "device_ids": [format!("{device}-1")]})
}

async fn done(h: &Harness, claims: &ApprovalClaims, case: &str) {
    let response = h.execute(sign(claims, 7)).await;
    let Some(Response::Executed(outcome)) = &response else {
        panic!("{case}: {response:?}\n{}", h.log_text())
    };
    assert_eq!(outcome.kind, OutcomeKind::Done, "{case}");
}

/// The refusal the executor answers (with the audit row carrying its code), and that nothing
/// was written by it.
async fn refusal(h: &Harness, claims: &ApprovalClaims, case: &str) -> Refusal {
    let before = h.writes();
    let response = h.execute(sign(claims, 7)).await;
    let Some(Response::Refused(refusal)) = response else {
        panic!(
            "{case}: expected a refusal, got {response:?}\n{}",
            h.log_text()
        )
    };
    assert_eq!(h.writes(), before, "{case}: nothing written");
    assert!(
        h.audit_rows()
            .iter()
            .any(|r| r.1 == "refused" && r.2 == refusal.code()),
        "{case}: an audit row with reason {}",
        refusal.code()
    );
    refusal
}

#[tokio::test(flavor = "multi_thread")]
async fn stop_then_reboot_waits_out_the_cooldown_across_a_restart() {
    let mut h = started().await;
    let dev = device(&h, 0);
    assert!(h.sim.set_recording("sandbox", &format!("{dev}-1"), true));
    let stop = h.claims("batch_recording", &recording(&dev, "stop")).await;
    done(&h, &stop, "the stop").await;
    assert_eq!(h.writes(), 1);

    let cooling =
        |r: &Refusal| matches!(r, Refusal::CoolingDown { minutes } if (1..=10).contains(minutes));
    let restart = h.claims("batch_reboot", &reboot(&dev)).await;
    let r = refusal(&h, &restart, "reboot right after the stop").await;
    assert!(cooling(&r), "{r:?}");

    // Status and doctor say so ahead of time.
    let Some(Response::Status(status)) = h.request(&Request::Status).await else {
        panic!("no status")
    };
    assert_eq!(status.limits.cooldown_minutes, 10);
    let cooling_now: Vec<_> = status.limits.cooling.iter().map(|c| &c.device).collect();
    assert_eq!(cooling_now, [&dev]);
    let entry = &status.limits.cooling[0];
    assert_eq!(entry.until - entry.changed_at, 600);
    let doctor = String::from_utf8_lossy(&h.cli(&["doctor"], None).stdout).into_owned();
    let line = doctor
        .lines()
        .find(|l| l.contains("limits:"))
        .unwrap_or_else(|| panic!("no limits line:\n{doctor}"));
    for part in [
        "cooldown 10 min",
        "at most 20 writes an hour",
        "4 h after its start",
        "1 write(s) in the last hour",
        &format!("cooling down: {dev}"),
    ] {
        assert!(line.contains(part), "{part:?} in {line}");
    }

    // Another device is not held by this one's cooldown.
    let other = device(&h, 1);
    for channel in 1..=8 {
        h.sim
            .set_recording("sandbox", &format!("{other}-{channel}"), false);
    }
    let elsewhere = h.claims("batch_reboot", &reboot(&other)).await;
    done(&h, &elsewhere, "a reboot of another device").await;
    assert_eq!(h.writes(), 2);

    // The cooldown is kept in the store, not in memory.
    h.restart().await;
    let again = h.claims("batch_reboot", &reboot(&dev)).await;
    let r = refusal(&h, &again, "reboot after a restart").await;
    assert!(cooling(&r), "{r:?}");

    // Eleven minutes on (the executor's clock moved, the approval made on that clock), the
    // reboot runs.
    h.kill();
    h.spawn_under_faketime("+11m").await;
    let later = h.claims("batch_reboot", &reboot(&dev)).await;
    done(&h, &shifted(&later, 660), "reboot after the cooldown").await;
    assert_eq!(h.writes(), 3);
    let writes = h.sim.writes();
    assert_eq!(writes[2].tool, "batch_reboot");
    assert_eq!(writes[2].arguments, reboot(&dev));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_twenty_first_write_in_an_hour_is_refused() {
    let h = started().await;
    let devices = sandbox_devices(&h.sim);
    // Starts are not disruptive, so only the hourly cap (default 20) can hold them.
    for i in 0..20 {
        let c = h
            .claims(
                "batch_recording",
                &recording(&devices[i % devices.len()], "start"),
            )
            .await;
        done(&h, &c, &format!("write {}", i + 1)).await;
    }
    assert_eq!(h.writes(), 20);
    let c = h
        .claims("batch_recording", &recording(&devices[0], "start"))
        .await;
    assert_eq!(
        refusal(&h, &c, "the 21st write").await,
        Refusal::HourlyLimit { limit: 20 }
    );
    assert_eq!(h.writes(), 20);
    // Status says so ahead of time.
    let Some(Response::Status(status)) = h.request(&Request::Status).await else {
        panic!("no status")
    };
    assert_eq!(status.limits.writes_per_hour, 20);
    assert_eq!(status.limits.writes_last_hour, 20);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_disruptive_change_to_an_offline_device_is_refused() {
    let h = started().await;
    let dev = device(&h, 0);
    assert!(h.sim.set_online("sandbox", &dev, false));
    let c = h.claims("batch_reboot", &reboot(&dev)).await;
    assert_eq!(refusal(&h, &c, "offline reboot").await, Refusal::Offline);
    assert_eq!(h.writes(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_calm_write_to_an_offline_device_is_not_made_and_not_counted() {
    let h = started().await;
    let dev = device(&h, 0);
    assert!(h.sim.set_online("sandbox", &dev, false));
    let c = h.claims("batch_recording", &recording(&dev, "start")).await;
    assert_eq!(refusal(&h, &c, "offline start").await, Refusal::Offline);
    let stream = h.sim.stream_endpoints("sandbox")[0].0.clone();
    let c = h
        .claims(
            "start_stream_endpoint",
            &json!({"stream_id": stream, "device_id": dev, "channel_id": "1"}),
        )
        .await;
    assert_eq!(refusal(&h, &c, "offline stream").await, Refusal::Offline);
    assert_eq!(h.writes(), 0);
    // Neither counts toward the hourly cap.
    let Some(Response::Status(status)) = h.request(&Request::Status).await else {
        panic!("no status")
    };
    assert_eq!(status.limits.writes_last_hour, 0);
    // Back online, the same start runs.
    assert!(h.sim.set_online("sandbox", &dev, true));
    let c = h.claims("batch_recording", &recording(&dev, "start")).await;
    done(&h, &c, "online again").await;
    assert_eq!(h.writes(), 1);
}

/// A recorder-status answer giving channel 1 of `device` this `recording_status` (or none).
fn recorder_status_with(device: &str, recording_status: Option<Value>) -> String {
    let mut channel = json!({"name": "Lectern"});
    if let Some(status) = recording_status {
        channel["recording_status"] = status;
    }
    json!({"devices": {device: {"channels": {"1": channel}}}}).to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn every_recorder_state_but_a_clear_stop_counts_as_recording() {
    let h = started().await;
    let dev = device(&h, 0);
    let cases = [
        ("paused", Some(json!({"state": "paused"}))),
        ("starting", Some(json!({"state": "starting"}))),
        ("stopping", Some(json!({"state": "stopping"}))),
        ("unknown", Some(json!({"state": "unknown"}))),
        ("a state never seen", Some(json!({"state": "calibrating"}))),
        ("missing", Some(json!({}))),
        ("no recording status", None),
    ];
    for (case, status) in cases {
        h.sim.set_fault(
            "get_recorder_status_for_devices",
            Fault::Text(recorder_status_with(&dev, status)),
        );
        let c = h.claims("batch_reboot", &reboot(&dev)).await;
        assert_eq!(refusal(&h, &c, case).await, Refusal::Recording, "{case}");
    }
    assert_eq!(h.writes(), 0);
    // Positive control: the same answer saying "stopped" lets the reboot through.
    h.sim.set_fault(
        "get_recorder_status_for_devices",
        Fault::Text(recorder_status_with(
            &dev,
            Some(json!({"state": "stopped"})),
        )),
    );
    let c = h.claims("batch_reboot", &reboot(&dev)).await;
    done(&h, &c, "stopped").await;
    assert_eq!(h.writes(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_online_target_left_out_of_recorder_status_is_a_failed_read() {
    let h = started().await;
    let dev = device(&h, 0);
    let c = h.claims("batch_reboot", &reboot(&dev)).await;
    h.sim.set_fault(
        "get_recorder_status_for_devices",
        Fault::Text(json!({"devices": {}}).to_string()),
    );
    assert_eq!(refusal(&h, &c, "left out").await, Refusal::ReadFailed);
    assert_eq!(h.writes(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_target_left_out_of_the_events_answer_is_a_failed_read_for_a_disruptive_change() {
    let h = started().await;
    let dev = device(&h, 0);
    let c = h.claims("batch_reboot", &reboot(&dev)).await;
    // Every other device answered, with nothing scheduled; the target left out.
    let others: serde_json::Map<String, Value> = sandbox_devices(&h.sim)
        .into_iter()
        .filter(|d| *d != dev)
        .map(|d| (d, json!({"event": null})))
        .collect();
    h.sim.set_fault(
        "get_current_or_next_cms_events_for_devices",
        Fault::Text(json!({"devices": others}).to_string()),
    );
    assert_eq!(refusal(&h, &c, "left out").await, Refusal::ReadFailed);
    assert_eq!(h.writes(), 0);
    // Positive control: the same answer naming the target with no event lets it through.
    let mut all = others.clone();
    all.insert(dev.clone(), json!({"event": null}));
    h.sim.set_fault(
        "get_current_or_next_cms_events_for_devices",
        Fault::Text(json!({"devices": all}).to_string()),
    );
    let c = h.claims("batch_reboot", &reboot(&dev)).await;
    done(&h, &c, "named with no event").await;
    assert_eq!(h.writes(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_event_with_no_end_blocks_for_four_hours_after_its_start() {
    let h = started().await;
    let dev = device(&h, 0);
    let hearing = |ago: SignedDuration| json!({"id": "hearing-1", "title": "Hearing", "start": (h.sim.now() - ago).to_string()});
    assert!(h.sim.set_event(
        "sandbox",
        &dev,
        hearing(SignedDuration::from_mins(3 * 60 + 59))
    ));
    let c = h.claims("batch_reboot", &reboot(&dev)).await;
    assert_eq!(
        refusal(&h, &c, "3 h 59 min after the start").await,
        Refusal::EventLive
    );
    assert!(h.sim.set_event(
        "sandbox",
        &dev,
        hearing(SignedDuration::from_mins(4 * 60 + 1))
    ));
    let c = h.claims("batch_reboot", &reboot(&dev)).await;
    done(&h, &c, "4 h 1 min after the start").await;
    assert_eq!(h.writes(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_approval_that_expires_during_a_slow_read_is_refused_at_the_write() {
    let h = started().await;
    let dev = device(&h, 0);
    let mut c = h.claims("batch_recording", &recording(&dev, "start")).await;
    // Valid when it arrives, for two seconds; the last read takes three.
    c.expires_at = fleetwatch_e2e::now() + 2;
    h.sim
        .set_fault("get_recorder_status_for_devices", Fault::DelayMs(3_000));
    let r = refusal(&h, &c, "expired during the reads").await;
    assert!(
        matches!(r, Refusal::ExpiredAtWrite { late_secs } if late_secs <= 3),
        "{r:?}"
    );
    assert!(r.message().contains("s past its expiry"), "{}", r.message());
    assert_eq!(h.writes(), 0);
    assert_eq!(
        h.execution_state(&c.approval_id).as_deref(),
        Some("refused")
    );
}

fn executions(h: &Harness) -> i64 {
    let conn = rusqlite::Connection::open(h.state.join("executor.db")).expect("db");
    conn.query_row("SELECT COUNT(*) FROM executions", [], |r| r.get(0))
        .expect("count")
}

#[tokio::test(flavor = "multi_thread")]
async fn over_long_claims_leave_one_bounded_audit_row_and_nothing_else() {
    let h = started().await;
    let dev = device(&h, 0);
    let base = h.claims("batch_reboot", &reboot(&dev)).await;
    let long = "a".repeat(40_000);
    let cases: Vec<(&str, ApprovalClaims)> = vec![
        (
            "an over-long target",
            ApprovalClaims {
                approval_id: fleetwatch_e2e::random_id(),
                targets: vec![format!("{dev}{long}")],
                ..base.clone()
            },
        ),
        (
            "a target that is not a device ID",
            ApprovalClaims {
                approval_id: fleetwatch_e2e::random_id(),
                targets: vec!["../../etc/passwd".into()],
                ..base.clone()
            },
        ),
        (
            "an over-long tool name",
            ApprovalClaims {
                approval_id: fleetwatch_e2e::random_id(),
                tool: format!("batch_reboot{long}"),
                ..base.clone()
            },
        ),
        (
            "over-long arguments",
            ApprovalClaims {
                approval_id: fleetwatch_e2e::random_id(),
                arguments: format!("{{\"device_ids\":[\"{dev}\"],\"x\":\"{long}\"}}"),
                ..base.clone()
            },
        ),
    ];
    for (case, claims) in cases {
        let rows = h.audit_rows().len();
        let counted = h.refusals_counted(Refusal::ClaimTooLong.code());
        let before = executions(&h);
        assert_eq!(
            refusal(&h, &claims, case).await,
            Refusal::ClaimTooLong,
            "{case}"
        );
        assert_eq!(executions(&h), before, "{case}: no execution row");
        assert_eq!(
            h.execution_state(&claims.approval_id),
            None,
            "{case}: no nonce"
        );
        // Counted once: in a row of its own, or in the burst rule's row within its second.
        assert_eq!(
            h.await_refusals(Refusal::ClaimTooLong.code(), counted + 1)
                .await,
            counted + 1,
            "{case}"
        );
        let audit = h.audit_rows();
        assert!(audit.len() <= rows + 1, "{case}: at most one audit row");
        let row = audit.last().expect("a row");
        let size = row.1.len() + row.2.len() + row.3.len() + row.4.len();
        assert!(size < 1024, "{case}: the row is {size} bytes: {row:?}");
        assert!(!row.4.contains("aaaa"), "{case}: {row:?}");
    }
    assert_eq!(h.writes(), 0);
    // Positive control: the same claims, unaltered, run.
    done(&h, &base, "the claims as described").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixteen_reboots_of_one_device_at_once_make_one_write() {
    let h = started().await;
    let dev = device(&h, 0);
    let base = h.claims("batch_reboot", &reboot(&dev)).await;
    let approvals: Vec<ApprovalClaims> = (0..16)
        .map(|_| ApprovalClaims {
            approval_id: fleetwatch_e2e::random_id(),
            ..base.clone()
        })
        .collect();
    let answers =
        futures_util::future::join_all(approvals.iter().map(|c| h.execute(sign(c, 7)))).await;
    let done = answers
        .iter()
        .filter(|a| matches!(a, Some(Response::Executed(o)) if o.kind == OutcomeKind::Done))
        .count();
    let cooling = answers
        .iter()
        .filter(|a| matches!(a, Some(Response::Refused(Refusal::CoolingDown { .. }))))
        .count();
    assert_eq!((done, cooling), (1, 15), "{answers:?}");
    assert_eq!(h.writes(), 1);
}

/// How many refusals an audit row stands for: `n=COUNT` at the end of its detail, else one.
fn row_count(detail: &str) -> u64 {
    detail
        .rsplit_once("n=")
        .and_then(|(_, n)| n.parse().ok())
        .unwrap_or(1)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_flood_of_refused_frames_writes_a_row_a_second_and_loses_no_count() {
    let h = started().await;
    let garbage = {
        let body = [
            u8::try_from(fleetwatch_protocol::wire::WIRE_VERSION).unwrap(),
            0xff,
            0xff,
            0xff,
            0x13,
        ];
        let mut frame = u32::try_from(body.len()).unwrap().to_be_bytes().to_vec();
        frame.extend_from_slice(&body);
        frame
    };
    const FLOOD: u64 = 300;
    let started = std::time::Instant::now();
    for _ in 0..FLOOD {
        assert_eq!(
            h.raw(&garbage).await,
            Some(Response::Refused(Refusal::Malformed))
        );
    }
    let seconds = started.elapsed().as_secs();
    // The held count is written once its second is over.
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    let rows: Vec<_> = h
        .audit_rows()
        .into_iter()
        .filter(|r| r.2 == Refusal::Malformed.code())
        .collect();
    let counted: u64 = rows.iter().map(|r| row_count(&r.4)).sum();
    assert_eq!(counted, FLOOD, "every refusal counted: {rows:?}");
    assert!(
        rows.len() as u64 <= seconds + 3,
        "{} rows for a {seconds}-second flood: {rows:?}",
        rows.len()
    );
    let uid = rustix::process::getuid().as_raw();
    assert!(rows.iter().all(|r| r.4.starts_with(&format!("uid={uid}"))));
    // The chain still verifies, and `audit show` says how many a row stands for.
    let verify = h.cli(&["audit", "verify"], None);
    assert!(verify.status.success(), "{verify:?}");
    let shown = String::from_utf8_lossy(&h.cli(&["audit", "show"], None).stdout).into_owned();
    assert!(shown.contains(" times)"), "{shown}");
    assert_eq!(h.writes(), 0);
}

/// One validly signed frame, refused only after its claims decode (expired), sent again and
/// again: nothing is spent by it, so the burst rule holds it like garbage — every refusal
/// counted, a row a second at most, the chain intact, the row naming the approval.
#[tokio::test(flavor = "multi_thread")]
async fn a_flood_of_one_signed_frame_refused_after_decoding_writes_a_row_a_second() {
    let h = started().await;
    let dev = device(&h, 0);
    let expired = shifted(&h.claims("batch_reboot", &reboot(&dev)).await, -3600);
    let frame = fleetwatch_e2e::frame(
        &fleetwatch_protocol::wire::encode_request(&Request::Execute(
            fleetwatch_protocol::wire::ExecuteRequest {
                approval: sign(&expired, 7),
                assistant_chain_head: [0xab; 32],
            },
        ))
        .unwrap(),
    );
    const FLOOD: u64 = 300;
    let rows_before = h.audit_rows().len();
    let started = std::time::Instant::now();
    for _ in 0..FLOOD {
        assert_eq!(
            h.raw(&frame).await,
            Some(Response::Refused(Refusal::Expired))
        );
    }
    let seconds = started.elapsed().as_secs();
    assert_eq!(
        h.await_refusals(Refusal::Expired.code(), FLOOD).await,
        FLOOD,
        "every refusal counted"
    );
    let rows: Vec<_> = h.audit_rows().into_iter().skip(rows_before).collect();
    assert!(
        rows.len() as u64 <= seconds + 3,
        "{} rows for a {seconds}-second flood: {rows:?}",
        rows.len()
    );
    let id = fleetwatch_protocol::hex::encode(&expired.approval_id);
    assert!(rows.iter().all(|r| r.3 == id), "{rows:?}");
    let verify = h.cli(&["audit", "verify"], None);
    assert!(verify.status.success(), "{verify:?}");
    assert_eq!(h.writes(), 0);
    assert_eq!(
        h.execution_state(&expired.approval_id),
        None,
        "no nonce spent"
    );
}

/// At its audit budget the executor accepts nothing new: a valid approval is refused as busy,
/// nothing is written, no nonce is spent, and `doctor` fails the budget's line; under it, the
/// same approval runs.
#[tokio::test(flavor = "multi_thread")]
async fn at_its_audit_budget_every_approval_is_refused_as_busy() {
    let mut h = Harness::prepare(Setup {
        config_extra: "limits:\n  audit_budget_mib: 1\n".into(),
        ..Setup::default()
    })
    .await;
    h.setup.allowlist = Some(sandbox_devices(&h.sim));
    // A database already past one MiB, as years of audit rows would make it.
    {
        let conn = rusqlite::Connection::open(h.state.join("executor.db")).unwrap();
        conn.execute_batch(
            "CREATE TABLE ballast (b BLOB); INSERT INTO ballast VALUES (zeroblob(1200000));",
        )
        .unwrap();
    }
    h.spawn();
    h.wait_ready().await;
    let dev = device(&h, 0);
    let c = h.claims("batch_recording", &recording(&dev, "start")).await;
    let response = h.execute(sign(&c, 7)).await;
    assert_eq!(
        response,
        Some(Response::Refused(Refusal::Busy)),
        "{}",
        h.log_text()
    );
    assert_eq!(h.writes(), 0);
    assert_eq!(h.execution_state(&c.approval_id), None, "no nonce spent");
    assert!(h.log_text().contains("audit budget"), "{}", h.log_text());
    let doctor = String::from_utf8_lossy(&h.cli(&["doctor"], None).stdout).into_owned();
    assert!(
        doctor.lines().any(|l| l.contains("FAIL")
            && l.contains("audit budget")
            && l.contains("of its 1 MiB")),
        "{doctor}"
    );
    // The ballast gone (its pages on the free list, which the budget does not count): the same
    // approval runs.
    rusqlite::Connection::open(h.state.join("executor.db"))
        .unwrap()
        .execute_batch("DROP TABLE ballast;")
        .unwrap();
    done(&h, &c, "under the budget").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn describes_beyond_the_minutes_allowance_are_busy_and_read_nothing() {
    let mut h = Harness::prepare(Setup {
        describes_per_minute: 3,
        ..Setup::default()
    })
    .await;
    h.setup.allowlist = Some(sandbox_devices(&h.sim));
    h.spawn();
    h.wait_ready().await;
    let dev = device(&h, 0);
    for _ in 0..3 {
        h.describe("batch_reboot", &reboot(&dev)).await;
    }
    let reads = h.sim.calls().len();
    let request = Request::Describe(fleetwatch_protocol::wire::DescribeRequest {
        tool: "batch_reboot".into(),
        arguments: fleetwatch_e2e::canonical(&reboot(&dev)),
    });
    assert_eq!(
        h.request(&request).await,
        Some(Response::Refused(Refusal::Busy))
    );
    assert_eq!(h.sim.calls().len(), reads, "a busy describe reads nothing");
    // Status is not a describe and still answers.
    assert!(matches!(
        h.request(&Request::Status).await,
        Some(Response::Status(_))
    ));
}

/// A freeze window, through the real executor: before it, a reboot runs and `Status` names it
/// as the next window; inside it (the executor's clock moved two hours, the approval made on
/// that clock) a reboot is refused with the window's end and reason, nothing written and no
/// nonce spent, while a calm change it does not hold runs, and `Describe`, `Status` and
/// `doctor` say so; after it, the reboot runs again. A window that cannot be read stops the
/// executor at start, naming it.
#[tokio::test(flavor = "multi_thread")]
async fn a_freeze_window_holds_what_it_names_until_its_end() {
    let now = jiff::Timestamp::now();
    let start = now + SignedDuration::from_hours(1);
    let end = now + SignedDuration::from_hours(3);
    let offset = jiff::tz::offset(-5);
    let window = format!(
        "freeze:\n  - from: \"{}\"\n    until: \"{}\"\n    tools: disruptive\n    reason: finals week\n",
        start.display_with_offset(offset),
        end.display_with_offset(offset)
    );
    let mut h = Harness::prepare(Setup {
        config_extra: window,
        ..Setup::default()
    })
    .await;
    h.setup.allowlist = Some(sandbox_devices(&h.sim));
    h.spawn();
    h.wait_ready().await;
    let quiet = |h: &Harness, i: usize| {
        let dev = device(h, i);
        for channel in 1..=8 {
            h.sim
                .set_recording("sandbox", &format!("{dev}-{channel}"), false);
        }
        dev
    };
    let Some(Response::Status(status)) = h.request(&Request::Status).await else {
        panic!("no status")
    };
    assert_eq!(status.freeze.len(), 1, "{:?}", status.freeze);
    assert!(!status.freeze[0].in_force);
    assert_eq!(status.freeze[0].start, start.as_second());
    let before = h.claims("batch_reboot", &reboot(&quiet(&h, 0))).await;
    done(&h, &before, "a reboot before the window").await;

    // Inside the window.
    h.kill();
    h.spawn_under_faketime("+2h").await;
    let dev = quiet(&h, 1);
    let inside = shifted(&h.claims("batch_reboot", &reboot(&dev)).await, 7200);
    let described = h.describe("batch_reboot", &reboot(&dev)).await;
    let frozen = described
        .frozen
        .expect("the describe says the window holds it");
    assert_eq!(
        (frozen.end, frozen.reason.as_str()),
        (end.as_second(), "finals week")
    );
    let writes = h.writes();
    let refused = refusal(&h, &inside, "a reboot inside the window").await;
    assert_eq!(
        refused,
        Refusal::Frozen {
            until: end.as_second(),
            reason: "finals week".into()
        }
    );
    assert_eq!(h.writes(), writes);
    assert_eq!(
        h.execution_state(&inside.approval_id),
        None,
        "no nonce spent"
    );
    let calm_claims = h
        .claims("batch_recording", &recording(&device(&h, 2), "start"))
        .await;
    assert!(
        h.describe("batch_recording", &recording(&device(&h, 2), "start"))
            .await
            .frozen
            .is_none()
    );
    done(
        &h,
        &shifted(&calm_claims, 7200),
        "a calm change the window does not hold",
    )
    .await;
    let Some(Response::Status(status)) = h.request(&Request::Status).await else {
        panic!("no status")
    };
    assert!(
        status
            .freeze
            .iter()
            .any(|f| f.in_force && f.reason == "finals week")
    );
    // `doctor` runs on the real clock, where the window is still ahead.
    let doctor = String::from_utf8_lossy(&h.cli(&["doctor"], None).stdout).into_owned();
    for line in doctor
        .lines()
        .filter(|l| l.contains("freeze:") || l.contains("audit budget:"))
    {
        println!("doctor says: {line}");
    }
    assert!(
        doctor.lines().any(
            |l| l.contains("freeze: 1 window(s); next: disruptive changes frozen")
                && l.contains("finals week")
        ),
        "{doctor}"
    );

    // After it.
    h.kill();
    h.spawn_under_faketime("+4h").await;
    let after = shifted(
        &h.claims("batch_reboot", &reboot(&quiet(&h, 3))).await,
        14400,
    );
    done(&h, &after, "a reboot after the window").await;

    // A window that cannot be read: the executor does not start, and says which and why.
    h.kill();
    let mut bad = Harness::prepare(Setup {
        config_extra: "freeze:\n  - from: \"next monday\"\n    until: \"2026-12-19T00:00:00Z\"\n    tools: all\n    reason: finals week\n".into(),
        ..Setup::default()
    })
    .await;
    bad.setup.allowlist = Some(sandbox_devices(&bad.sim));
    let out = bad.cli(&["doctor"], None);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains("freeze window 1 (\"finals week\")") && said.contains("not RFC 3339"),
        "{said}"
    );
}
