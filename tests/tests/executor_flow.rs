//! The executor end to end: a real binary on a real socket, the simulator as Epiphan.
//! Success, replay, concurrency, the write's outcomes, and crashes.

use fleetwatch_e2e::{Harness, Setup, sandbox_devices, sign};
use fleetwatch_protocol::Refusal;
use fleetwatch_protocol::wire::{OutcomeKind, Response};
use fleetwatch_sim::Fault;
use serde_json::json;

async fn fenced() -> Harness {
    Harness::start_fenced(Setup::default()).await.0
}

fn start_recording(device: &str) -> serde_json::Value {
    json!({"action": "start", "device_ids": [format!("{device}-1")]})
}

#[tokio::test(flavor = "multi_thread")]
async fn success_makes_exactly_one_write_with_the_canonical_arguments() {
    let h = fenced().await;
    let device = sandbox_devices(&h.sim)[0].clone();
    let args = start_recording(&device);
    let claims = h.claims("batch_recording", &args).await;
    let response = h.execute(sign(&claims, 7)).await;
    let Some(Response::Executed(outcome)) = response else {
        panic!("{response:?}\n{}", h.log_text())
    };
    assert_eq!(outcome.kind, OutcomeKind::Done);
    let writes = h.sim.writes();
    assert_eq!(writes.len(), 1);
    assert_eq!(writes[0].tool, "batch_recording");
    assert_eq!(writes[0].arguments, args);
    assert_eq!(writes[0].team, "sandbox");
    // Audit: accepted (nonce stored, with the assistant's head), then the outcome; the
    // outcome's chain head is the newest row's.
    let rows = h.audit_rows();
    let ours: Vec<_> = rows
        .iter()
        .filter(|r| r.3 == fleetwatch_protocol::hex::encode(&claims.approval_id))
        .collect();
    assert_eq!(ours.len(), 2, "{rows:?}");
    assert_eq!(
        (ours[0].1.as_str(), ours[0].2.as_str()),
        ("accepted", "nonce_stored")
    );
    assert_eq!(
        (ours[1].1.as_str(), ours[1].2.as_str()),
        ("outcome", "done")
    );
    assert!(ours[0].0 < ours[1].0);
    assert_eq!(
        h.execution_state(&claims.approval_id).as_deref(),
        Some("done")
    );
    let verify = h.cli(&["audit", "verify"], None);
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stderr)
    );
    // The last read was answered before the write arrived, with no call in between.
    let calls = h.sim.calls();
    let write_at = calls
        .iter()
        .position(|c| c.tool == "batch_recording")
        .unwrap();
    let last_read = &calls[write_at - 1];
    assert_eq!(last_read.tool, "get_recorder_status_for_devices");
    assert!(last_read.answered_ns.unwrap() <= calls[write_at].received_ns);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_same_approval_twice_is_refused_the_second_time() {
    let h = fenced().await;
    let device = sandbox_devices(&h.sim)[0].clone();
    let claims = h.claims("batch_recording", &start_recording(&device)).await;
    let signed = sign(&claims, 7);
    assert!(matches!(
        h.execute(signed.clone()).await,
        Some(Response::Executed(_))
    ));
    assert_eq!(
        h.execute(signed).await,
        Some(Response::Refused(Refusal::Replayed))
    );
    assert_eq!(h.writes(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn sixteen_identical_executes_at_once_write_once() {
    let h = fenced().await;
    let device = sandbox_devices(&h.sim)[0].clone();
    let claims = h.claims("batch_recording", &start_recording(&device)).await;
    let signed = sign(&claims, 7);
    let results = futures_util::future::join_all((0..16).map(|_| h.execute(signed.clone()))).await;
    let executed = results
        .iter()
        .filter(|r| matches!(r, Some(Response::Executed(_))))
        .count();
    let replayed = results
        .iter()
        .filter(|r| **r == Some(Response::Refused(Refusal::Replayed)))
        .count();
    assert_eq!((executed, replayed), (1, 15), "{results:?}");
    assert_eq!(h.writes(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn per_device_errors_come_back_as_codes_and_their_text_is_kept_nowhere() {
    let h = fenced().await;
    let device = sandbox_devices(&h.sim)[0].clone();
    let claims = h.claims("batch_recording", &start_recording(&device)).await;
    // The write itself reports an error whose text holds a stream key and a credential: the
    // executor, which links no redaction engine, must keep and return none of it.
    let secret = "live_9f8e7d6c5b4aQv9";
    h.sim.set_fault(
        "batch_recording",
        Fault::Text(format!(
            r#"{{"{device}": "device offline: stream_key={secret} rtmp://u:pw@host/app/{secret}"}}"#
        )),
    );
    let response = h.execute(sign(&claims, 7)).await;
    let Some(Response::Executed(outcome)) = response else {
        panic!("{response:?}")
    };
    let OutcomeKind::Error(map) = outcome.kind else {
        panic!("{:?}", outcome.kind)
    };
    assert_eq!(
        map.get(&device).map(String::as_str),
        Some("offline"),
        "{map:?}"
    );
    assert_eq!(h.writes(), 1);
    assert_eq!(
        h.execution_state(&claims.approval_id).as_deref(),
        Some("error")
    );
    // Nowhere in the audit, the database file or the log.
    let rows = format!("{:?}", h.audit_rows());
    assert!(!rows.contains(secret) && !rows.contains("pw@"), "{rows}");
    let db = std::fs::read(h.state.join("executor.db")).expect("db");
    assert!(
        !String::from_utf8_lossy(&db).contains(secret),
        "the database file holds the text"
    );
    let log = h.log_text();
    assert!(!log.contains(secret) && !log.contains("pw@"), "{log}");
}

async fn unknown_after(fault: Fault, write_timeout: Option<&str>) {
    let mut setup = Setup::default();
    if let Some(secs) = write_timeout {
        setup
            .env
            .push(("FLEETWATCH_WRITE_TIMEOUT_SECS".into(), secs.into()));
    }
    let mut h = Harness::prepare(setup).await;
    h.setup.allowlist = Some(sandbox_devices(&h.sim));
    h.spawn();
    h.wait_ready().await;
    let device = sandbox_devices(&h.sim)[0].clone();
    let claims = h.claims("batch_recording", &start_recording(&device)).await;
    h.sim.set_fault("batch_recording", fault.clone());
    let response = h.execute(sign(&claims, 7)).await;
    let Some(Response::Executed(outcome)) = response else {
        panic!("{fault:?}: {response:?}\n{}", h.log_text())
    };
    assert_eq!(outcome.kind, OutcomeKind::Unknown, "{fault:?}");
    assert_eq!(h.writes(), 1, "{fault:?}: exactly one call, never retried");
    assert_eq!(
        h.execution_state(&claims.approval_id).as_deref(),
        Some("unknown")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn in_band_401_on_the_write_is_unknown_and_not_retried() {
    unknown_after(Fault::Unauthorized, None).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn write_timeout_is_unknown() {
    unknown_after(Fault::Hang, Some("2")).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn connection_dropped_after_the_write_is_unknown() {
    unknown_after(Fault::DropAfterWrite, None).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn unreadable_write_answer_is_unknown() {
    unknown_after(Fault::Text("ok, probably".into()), None).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sigkill_while_a_read_hangs_leaves_unknown_and_never_reruns() {
    let mut h = fenced().await;
    let device = sandbox_devices(&h.sim)[0].clone();
    let claims = h.claims("batch_recording", &start_recording(&device)).await;
    let signed = sign(&claims, 7);
    h.sim
        .set_fault("get_recorder_status_for_devices", Fault::Hang);
    let socket = h.socket.clone();
    let pending = tokio::spawn({
        let signed = signed.clone();
        async move {
            let h2 = HarnessClient { socket };
            h2.execute(signed).await
        }
    });
    // Wait until the hanging read has arrived: the nonce is stored by then.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !h
        .sim
        .calls()
        .iter()
        .any(|c| c.tool == "get_recorder_status_for_devices" && c.answered_ns.is_none())
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the read never arrived"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(
        h.execution_state(&claims.approval_id).as_deref(),
        Some("in_flight")
    );
    h.kill();
    let _ = pending.await;
    h.sim.clear_faults();
    h.spawn();
    h.wait_ready().await;
    assert_eq!(
        h.execution_state(&claims.approval_id).as_deref(),
        Some("unknown")
    );
    assert_eq!(
        h.execute(signed).await,
        Some(Response::Refused(Refusal::Replayed))
    );
    assert_eq!(h.writes(), 0);
    assert!(
        h.audit_rows()
            .iter()
            .any(|r| r.1 == "recovered" && r.2 == "unknown")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn sigkill_after_the_write_was_sent_is_unknown_with_one_write_ever() {
    let mut h = fenced().await;
    let device = sandbox_devices(&h.sim)[0].clone();
    let claims = h.claims("batch_recording", &start_recording(&device)).await;
    let signed = sign(&claims, 7);
    h.sim.set_fault("batch_recording", Fault::Hang);
    let socket = h.socket.clone();
    let pending = tokio::spawn({
        let signed = signed.clone();
        async move { HarnessClient { socket }.execute(signed).await }
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while h.writes() == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the write never arrived"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    h.kill();
    let _ = pending.await;
    h.sim.clear_faults();
    h.spawn();
    h.wait_ready().await;
    assert_eq!(
        h.execution_state(&claims.approval_id).as_deref(),
        Some("unknown")
    );
    assert_eq!(
        h.execute(signed).await,
        Some(Response::Refused(Refusal::Replayed))
    );
    assert_eq!(h.writes(), 1);
}

/// A bare client for requests sent from another task.
struct HarnessClient {
    socket: std::path::PathBuf,
}

impl HarnessClient {
    async fn execute(
        &self,
        approval: fleetwatch_protocol::claims::SignedApproval,
    ) -> Option<Response> {
        fleetwatch_e2e::send(
            &self.socket,
            &fleetwatch_protocol::wire::Request::Execute(
                fleetwatch_protocol::wire::ExecuteRequest {
                    approval,
                    assistant_chain_head: [0; 32],
                },
            ),
        )
        .await
    }
}

/// One sandbox device whose name holds a lone surrogate escape: the executor reads that one
/// string as U+FFFD and describes the other devices as sent, instead of failing the read.
#[tokio::test(flavor = "multi_thread")]
async fn a_lone_surrogate_in_one_name_does_not_fail_the_executors_read() {
    let h = fenced().await;
    let devices = sandbox_devices(&h.sim);
    let channel = |name: &str| json!([{"channel_id": "1", "name": name}]);
    let list = json!({"devices": [
        {"Id": devices[0], "Name": "LONE", "Status": "online", "Channels": channel("a")},
        {"Id": devices[2], "Name": "Sala de Pruebas 2", "Status": "online", "Channels": channel("b")},
    ]})
    .to_string()
    .replace("LONE", "Room \\ud800 7");
    h.sim
        .set_fault("get_devices_in_my_team", Fault::Text(list.clone()));
    for (device, name) in [
        (&devices[2], "Sala de Pruebas 2"),
        (&devices[0], "Room \u{FFFD} 7"),
    ] {
        let described = h
            .request(&fleetwatch_protocol::wire::Request::Describe(
                fleetwatch_protocol::wire::DescribeRequest {
                    tool: "batch_recording".into(),
                    arguments: fleetwatch_e2e::canonical(&start_recording(device)),
                },
            ))
            .await;
        let Some(Response::Described(d)) = described else {
            panic!("{described:?}\n{}", h.log_text())
        };
        assert_eq!(d.devices[0].name, name);
    }
}

/// The write path against a server with sessions that answers on event streams, as a
/// long-lived MCP server does (the simulator's `sessions`): two approvals each write once on
/// the kept session, and a write whose answer is lost mid-stream is unknown, sent once.
#[tokio::test(flavor = "multi_thread")]
async fn with_sessions_and_event_streams_each_write_is_sent_once() {
    let setup = Setup {
        sim: fleetwatch_sim::SimConfig {
            sessions: true,
            ..fleetwatch_sim::SimConfig::demo()
        },
        ..Setup::default()
    };
    let mut h = Harness::prepare(setup).await;
    h.setup.allowlist = Some(sandbox_devices(&h.sim));
    h.spawn();
    h.wait_ready().await;
    let devices = sandbox_devices(&h.sim);
    assert!(devices.len() >= 3, "{devices:?}");
    for device in &devices[..2] {
        let claims = h.claims("batch_recording", &start_recording(device)).await;
        let response = h.execute(sign(&claims, 7)).await;
        let Some(Response::Executed(outcome)) = response else {
            panic!("{response:?}\n{}", h.log_text())
        };
        assert_eq!(outcome.kind, OutcomeKind::Done);
    }
    assert_eq!(h.writes(), 2);
    let claims = h
        .claims("batch_recording", &start_recording(&devices[2]))
        .await;
    h.sim.set_fault("batch_recording", Fault::DropAfterWrite);
    let response = h.execute(sign(&claims, 7)).await;
    let Some(Response::Executed(outcome)) = response else {
        panic!("{response:?}\n{}", h.log_text())
    };
    assert_eq!(outcome.kind, OutcomeKind::Unknown);
    assert_eq!(h.writes(), 3, "the lost write was sent once, never again");
}

/// The rooms that can be changed, through the real executor: only the fenced devices of the
/// sandbox team as it reads them now, each by ID, name and channels; a room off the allowlist
/// is left out, a name past its cap is cut, nothing is written, and each answer spends the
/// describe budget (a fourth within the minute is refused as busy).
#[tokio::test(flavor = "multi_thread")]
async fn rooms_lists_only_the_fenced_rooms_by_name_and_channel_and_writes_nothing() {
    let mut h = Harness::prepare(Setup {
        describes_per_minute: 3,
        ..Setup::default()
    })
    .await;
    let devices = sandbox_devices(&h.sim);
    assert!(devices.len() >= 3, "{devices:?}");
    // The last sandbox device is on the team but not on the allowlist.
    let fenced: Vec<String> = devices[..devices.len() - 1].to_vec();
    h.setup.allowlist = Some(fenced.clone());
    h.spawn();
    h.wait_ready().await;
    let long = "Sala ".repeat(60);
    let list = json!({"devices": devices.iter().enumerate().map(|(i, id)| json!({
        "Id": id,
        "Name": if i == 0 { long.clone() } else { format!("Room {i}") },
        "Status": "online",
        "Firmware": "4.24.3",
        "Channels": [{"channel_id": "1", "name": "Program", "Publishers": [{"stream_key": "sk-secret"}]},
                     {"channel_id": "2", "name": "Backup"}],
    })).collect::<Vec<_>>()});
    h.sim
        .set_fault("get_devices_in_my_team", Fault::Text(list.to_string()));

    let answer = h.request(&fleetwatch_protocol::wire::Request::Rooms).await;
    let Some(Response::Rooms(rooms)) = answer else {
        panic!("{answer:?}\n{}", h.log_text())
    };
    let ids: Vec<&str> = rooms.rooms.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, fenced.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(rooms.left_out, 0);
    assert_eq!(
        rooms.rooms[0].name.chars().count(),
        fleetwatch_protocol::wire::MAX_ROOM_NAME_CHARS
    );
    assert_eq!(rooms.rooms[1].name, "Room 1");
    assert_eq!(
        rooms.rooms[1].channels,
        [
            ("1".to_owned(), "Program".to_owned()),
            ("2".to_owned(), "Backup".to_owned())
        ]
    );
    // Nothing but IDs, names and channels crosses: no firmware, no stream key.
    let encoded = format!("{rooms:?}");
    assert!(
        !encoded.contains("sk-secret") && !encoded.contains("4.24.3"),
        "{encoded}"
    );

    for _ in 0..2 {
        assert!(matches!(
            h.request(&fleetwatch_protocol::wire::Request::Rooms).await,
            Some(Response::Rooms(_))
        ));
    }
    assert_eq!(
        h.request(&fleetwatch_protocol::wire::Request::Rooms).await,
        Some(Response::Refused(Refusal::Busy))
    );
    assert!(h.sim.writes().is_empty());
}
