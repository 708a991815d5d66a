//! Every check of the executor refusing, across the process boundary: each case asserts the
//! refusal reason and that the simulator recorded no write.

use fleetwatch_e2e::{
    Harness, Setup, canonical, frame, random_id, sandbox_devices, sign, test_key,
};
use fleetwatch_protocol::Refusal;
use fleetwatch_protocol::claims::{ApprovalClaims, ApprovalSignature, KeyId, SignedApproval};
use fleetwatch_protocol::wire::{self, OutcomeKind, Request, Response};
use fleetwatch_sim::{Fault, SimConfig, TeamConfig, TeamSource};
use serde_json::{Value, json};

async fn harness(allowlist: bool) -> Harness {
    let mut h = Harness::prepare(Setup::default()).await;
    if allowlist {
        h.setup.allowlist = Some(sandbox_devices(&h.sim));
    }
    h.spawn();
    h.wait_ready().await;
    h
}

fn device(h: &Harness, i: usize) -> String {
    sandbox_devices(&h.sim)[i].clone()
}

fn recording(device: &str, action: &str) -> Value {
    json!({"action": action, "device_ids": [format!("{device}-1")]})
}

/// Asserts the refusal, that nothing was written, and that the executor still serves.
async fn refused(h: &Harness, approval: SignedApproval, expected: Refusal, case: &str) {
    let before = h.writes();
    let response = h.execute(approval).await;
    assert_eq!(
        response,
        Some(Response::Refused(expected.clone())),
        "{case}\n{}",
        h.log_text()
    );
    assert_eq!(h.writes(), before, "{case}: no write");
    assert!(
        matches!(h.request(&Request::Status).await, Some(Response::Status(_))),
        "{case}: still serving"
    );
    assert!(
        h.audit_rows()
            .iter()
            .any(|r| r.1 == "refused" && r.2 == expected.code()),
        "{case}: audit row with reason {}",
        expected.code()
    );
}

async fn done(h: &Harness, approval: SignedApproval, case: &str) {
    let response = h.execute(approval).await;
    let Some(Response::Executed(outcome)) = &response else {
        panic!("{case}: {response:?}\n{}", h.log_text())
    };
    assert_eq!(outcome.kind, OutcomeKind::Done, "{case}");
}

#[tokio::test(flavor = "multi_thread")]
async fn framing_errors_are_refused_distinctly_and_serving_continues() {
    let h = harness(true).await;
    let status = wire::encode_request(&Request::Status).unwrap();
    let mut wrong_version = status.clone();
    wrong_version[0] = u8::try_from(wire::WIRE_VERSION + 1).unwrap();
    let mut trailing = status.clone();
    trailing.push(0);
    let mut truncated = (100u32).to_be_bytes().to_vec();
    truncated.extend_from_slice(&[1; 10]);
    let cases: Vec<(&str, Vec<u8>, Refusal)> = vec![
        (
            "oversize length",
            ((wire::MAX_FRAME + 1) as u32).to_be_bytes().to_vec(),
            Refusal::FrameTooLarge,
        ),
        (
            "huge length",
            u32::MAX.to_be_bytes().to_vec(),
            Refusal::FrameTooLarge,
        ),
        ("zero length", frame(&[]), Refusal::FrameEmpty),
        ("truncated", truncated, Refusal::FrameTruncated),
        ("trailing bytes", frame(&trailing), Refusal::TrailingBytes),
        (
            "unknown envelope version",
            frame(&wrong_version),
            Refusal::UnknownWireVersion,
        ),
        (
            "garbage",
            frame(&[
                u8::try_from(wire::WIRE_VERSION).unwrap(),
                0xff,
                0xff,
                0xff,
                0xff,
                0xff,
                0x13,
                0x37,
            ]),
            Refusal::Malformed,
        ),
    ];
    for (case, bytes, expected) in cases {
        assert_eq!(
            h.raw(&bytes).await,
            Some(Response::Refused(expected.clone())),
            "{case}"
        );
        assert!(
            matches!(h.request(&Request::Status).await, Some(Response::Status(_))),
            "{case}: still serving"
        );
        assert!(
            h.audit_rows().iter().any(|r| r.2 == expected.code()),
            "{case}: audited"
        );
    }
    assert_eq!(h.writes(), 0);

    // A claims version this build does not speak, correctly signed.
    let mut c = h
        .claims("batch_recording", &recording(&device(&h, 0), "start"))
        .await;
    c.version = fleetwatch_protocol::claims::CLAIMS_VERSION + 1;
    refused(
        &h,
        sign(&c, 7),
        Refusal::UnknownClaimsVersion,
        "unknown claims version",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn signatures_that_do_not_verify_are_refused() {
    let h = harness(true).await;
    let args = recording(&device(&h, 0), "start");
    let good = h.claims("batch_recording", &args).await;

    let mut flipped = sign(&good, 7);
    flipped.claims[5] ^= 0x01;
    refused(
        &h,
        flipped,
        Refusal::BadSignature,
        "flipped bit in the claims",
    )
    .await;

    refused(&h, sign(&good, 8), Refusal::UnknownKey, "key not installed").await;

    let mut none = sign(&good, 7);
    none.signatures.clear();
    refused(&h, none, Refusal::NoSignature, "no signature").await;

    // S + L: the same point equation holds, but S is not canonical.
    let mut malleable = sign(&good, 7);
    let sig = &mut malleable.signatures[0].signature;
    const L: [u8; 32] = [
        0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde,
        0x14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10,
    ];
    let mut carry = 0u16;
    for i in 0..32 {
        let sum = u16::from(sig[32 + i]) + u16::from(L[i]) + carry;
        sig[32 + i] = sum as u8;
        carry = sum >> 8;
    }
    refused(&h, malleable, Refusal::BadSignature, "non-canonical S").await;

    // A small-order public key cannot be installed; a signature naming one is from no
    // installed key.
    let small_order = [1u8]
        .iter()
        .chain([0u8; 31].iter())
        .copied()
        .collect::<Vec<_>>();
    let weak = SignedApproval {
        claims: good.encode().unwrap(),
        signatures: vec![ApprovalSignature {
            key_id: KeyId(sha_prefix(&small_order)),
            signature: [1u8].iter().chain([0u8; 63].iter()).copied().collect(),
        }],
        passkeys: Vec::new(),
    };
    refused(&h, weak, Refusal::UnknownKey, "small-order key").await;

    // Signed over the claims without the domain prefix.
    use ed25519_dalek::Signer;
    let bytes = good.encode().unwrap();
    let bare = SignedApproval {
        signatures: vec![ApprovalSignature {
            key_id: KeyId::of(&test_key(7).verifying_key()),
            signature: test_key(7).sign(&bytes).to_bytes().to_vec(),
        }],
        claims: bytes,
        passkeys: Vec::new(),
    };
    refused(&h, bare, Refusal::BadSignature, "no domain prefix").await;

    // Positive control: the same claims, properly signed, run.
    done(&h, sign(&good, 7), "control").await;
}

fn sha_prefix(bytes: &[u8]) -> [u8; 8] {
    use sha2::Digest;
    let d = sha2::Sha256::digest(bytes);
    d[..8].try_into().unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn approvals_outside_their_time_window_are_refused() {
    let h = harness(true).await;
    let base = h
        .claims("batch_recording", &recording(&device(&h, 0), "start"))
        .await;
    let now = fleetwatch_e2e::now();
    let with = |approved_at: i64, expires_at: i64| ApprovalClaims {
        approval_id: random_id(),
        approved_at,
        expires_at,
        ..base.clone()
    };
    refused(
        &h,
        sign(&with(now - 400, now - 100), 7),
        Refusal::Expired,
        "expired",
    )
    .await;
    refused(
        &h,
        sign(&with(now - 10, now - 10 + 361), 7),
        Refusal::LifetimeTooLong,
        "lifetime above 5 min + 60 s",
    )
    .await;
    refused(
        &h,
        sign(&with(now + 120, now + 300), 7),
        Refusal::NotYetValid,
        "approved in the future",
    )
    .await;
    done(&h, sign(&with(now - 10, now + 290), 7), "control").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_executors_own_policy_is_rechecked() {
    let h = harness(true).await;
    let dev = device(&h, 0);
    let other = device(&h, 5);
    let args = recording(&dev, "start");
    let base = h.claims("batch_recording", &args).await;
    let fresh = |f: &dyn Fn(&mut ApprovalClaims)| {
        let mut c = ApprovalClaims {
            approval_id: random_id(),
            ..base.clone()
        };
        f(&mut c);
        sign(&c, 7)
    };
    let cases: Vec<(&str, SignedApproval, Refusal)> = vec![
        (
            "tool not proposable",
            fresh(&|c| c.tool = "delete_cms_event".into()),
            Refusal::ToolNotProposable,
        ),
        (
            "policy digest differs",
            fresh(&|c| c.policy_digest[0] ^= 1),
            Refusal::PolicyDigestMismatch,
        ),
        (
            "schema version differs",
            fresh(&|c| c.schema_version += 1),
            Refusal::SchemaVersionMismatch,
        ),
        (
            "extra field",
            fresh(&|c| {
                c.arguments = canonical(
                    &json!({"action": "start", "device_ids": [format!("{dev}-1")], "extra": 1}),
                )
            }),
            Refusal::ArgumentsInvalid,
        ),
        (
            "wrong type",
            fresh(&|c| {
                c.arguments = canonical(&json!({"action": 1, "device_ids": [format!("{dev}-1")]}))
            }),
            Refusal::ArgumentsInvalid,
        ),
        (
            "wrong ID kind (master where a channel is required)",
            fresh(&|c| {
                c.arguments = canonical(&json!({"action": "start", "device_ids": [dev.clone()]}))
            }),
            Refusal::ArgumentsInvalid,
        ),
        (
            "trailing newline",
            fresh(&|c| {
                c.arguments =
                    canonical(&json!({"action": "start", "device_ids": [format!("{dev}-1\n")]}))
            }),
            Refusal::ArgumentsInvalid,
        ),
        (
            "duplicate key",
            fresh(&|c| {
                c.arguments =
                    format!(r#"{{"action":"start","action":"stop","device_ids":["{dev}-1"]}}"#)
            }),
            Refusal::ArgumentsInvalid,
        ),
        (
            "not canonical",
            fresh(&|c| {
                c.arguments = format!(r#"{{"device_ids": ["{dev}-1"], "action": "start"}}"#)
            }),
            Refusal::NotCanonical,
        ),
    ];
    for (case, approval, expected) in cases {
        refused(&h, approval, expected, case).await;
    }
    let differ = ApprovalClaims {
        approval_id: random_id(),
        targets: vec![other.clone()],
        ..base.clone()
    };
    refused(
        &h,
        sign(&differ, 7),
        Refusal::TargetsMismatch,
        "targets differ",
    )
    .await;
    // An approval refused by the policy is spent: it has a refused execution row.
    assert_eq!(
        h.execution_state(&differ.approval_id).as_deref(),
        Some("refused")
    );
    let two = json!({"device_ids": [dev.clone(), other.clone()]});
    let mut c = ApprovalClaims {
        approval_id: random_id(),
        ..h.claims("batch_reboot", &json!({"device_ids": [dev.clone()]}))
            .await
    };
    c.arguments = canonical(&two);
    c.targets = {
        let mut t = vec![dev.clone(), other.clone()];
        t.sort();
        t
    };
    refused(
        &h,
        sign(&c, 7),
        Refusal::TooManyTargets,
        "more than max_targets",
    )
    .await;
    // More targets than any tool takes is refused with the claims' sizes, before the nonce is
    // stored: nothing of it is kept but the audit row.
    assert_eq!(h.execution_state(&c.approval_id), None);
}

#[tokio::test(flavor = "multi_thread")]
async fn no_fence_refuses_before_any_read() {
    let h = harness(false).await;
    let c = h
        .claims("batch_recording", &recording(&device(&h, 0), "start"))
        .await;
    let calls = h.sim.calls().len();
    refused(&h, sign(&c, 7), Refusal::NoFence, "no fence").await;
    assert_eq!(h.sim.calls().len(), calls, "no call reached the simulator");
}

#[tokio::test(flavor = "multi_thread")]
async fn allowlist_misses_are_refused_before_any_read() {
    let mut h = Harness::prepare(Setup::default()).await;
    let devices = sandbox_devices(&h.sim);
    h.setup.allowlist = Some(vec![devices[0].clone()]);
    h.spawn();
    h.wait_ready().await;
    let c = h
        .claims("batch_reboot", &json!({"device_ids": [devices[2].clone()]}))
        .await;
    let calls = h.sim.calls().len();
    refused(&h, sign(&c, 7), Refusal::NotAllowlisted, "allowlist miss").await;
    assert_eq!(h.sim.calls().len(), calls);
    // A channel on a device that was not approved for writes.
    let c = h
        .claims("batch_recording", &recording(&devices[2], "start"))
        .await;
    refused(
        &h,
        sign(&c, 7),
        Refusal::NotAllowlisted,
        "channel on another device",
    )
    .await;
    // A channel that does not exist on the allowed device.
    let c = h
        .claims(
            "batch_recording",
            &json!({"action": "start", "device_ids": [format!("{}-9", devices[0])]}),
        )
        .await;
    refused(
        &h,
        sign(&c, 7),
        Refusal::NotOnTeam,
        "channel not on the device",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn team_id_must_match_and_be_reported() {
    let mut h = Harness::prepare(Setup::default()).await;
    h.setup.team_id = Some("another-team".into());
    h.spawn();
    h.wait_ready().await;
    let c = h
        .claims("batch_recording", &recording(&device(&h, 0), "start"))
        .await;
    refused(&h, sign(&c, 7), Refusal::TeamMismatch, "team mismatch").await;
    drop(h);

    // A sandbox that reports no team ID at all.
    let replay = tempfile::tempdir().unwrap();
    std::fs::write(
        replay.path().join("get_devices_in_my_team.json"),
        r#"[{"Id": "5551230001", "Name": "Bench", "Model": "Pearl Mini", "Status": "online",
            "Channels": [{"channel_id": "1", "name": "Main", "recording_status": {"state": "stopped"}}]}]"#,
    )
    .unwrap();
    let setup = Setup {
        sim: SimConfig {
            teams: vec![TeamConfig {
                view_only: false,
                name: "sandbox".into(),
                token: "sandbox-token".into(),
                source: TeamSource::Replay(replay.path().to_path_buf()),
            }],
            now: None,
            sessions: false,
        },
        team_id: Some("c3e8a1d4".into()),
        ..Setup::default()
    };
    let h = Harness::start(setup).await;
    let c = h
        .claims("batch_recording", &recording("5551230001", "start"))
        .await;
    refused(
        &h,
        sign(&c, 7),
        Refusal::TeamNotReported,
        "team not reported",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_target_missing_from_the_sandbox_team_is_refused() {
    let mut h = Harness::prepare(Setup::default()).await;
    let mut list = sandbox_devices(&h.sim);
    let foreign = h.sim.team_devices("normal")[0].clone();
    list.push(foreign.clone());
    h.setup.allowlist = Some(list);
    h.spawn();
    h.wait_ready().await;
    let c = h
        .claims("batch_reboot", &json!({"device_ids": [foreign]}))
        .await;
    refused(
        &h,
        sign(&c, 7),
        Refusal::NotOnTeam,
        "not on the sandbox team",
    )
    .await;
    // A device removed from the team after approval.
    let gone = device(&h, 0);
    let c = h
        .claims("batch_recording", &recording(&gone, "start"))
        .await;
    assert!(h.sim.remove_device("sandbox", &gone));
    refused(
        &h,
        sign(&c, 7),
        Refusal::NotOnTeam,
        "removed after approval",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn live_state_changes_since_approval_are_refused() {
    let h = harness(true).await;
    let dev = device(&h, 0);
    let c = h.claims("batch_recording", &recording(&dev, "start")).await;
    assert!(h.sim.set_recording("sandbox", &format!("{dev}-1"), true));
    refused(
        &h,
        sign(&c, 7),
        Refusal::FingerprintMoved,
        "recording flipped",
    )
    .await;

    let bench2 = device(&h, 4);
    let c = h
        .claims("batch_recording", &recording(&bench2, "start"))
        .await;
    let later = jiff::Timestamp::now() + jiff::SignedDuration::from_mins(200);
    assert!(h.sim.move_event("sandbox", &bench2, later, None));
    refused(&h, sign(&c, 7), Refusal::FingerprintMoved, "event moved").await;

    // Disruptive while recording.
    let pruebas1 = device(&h, 1);
    let c = h
        .claims("batch_reboot", &json!({"device_ids": [pruebas1.clone()]}))
        .await;
    refused(
        &h,
        sign(&c, 7),
        Refusal::Recording,
        "reboot while recording",
    )
    .await;
    // Stopping the manual recording itself is allowed.
    let c = h
        .claims("batch_recording", &recording(&pruebas1, "stop"))
        .await;
    done(&h, sign(&c, 7), "stop a manual recording").await;

    // Stopping a recording inside an event is refused.
    let bench1 = device(&h, 3);
    let now = jiff::Timestamp::now();
    assert!(h.sim.move_event(
        "sandbox",
        &bench1,
        now - jiff::SignedDuration::from_mins(10),
        Some(now + jiff::SignedDuration::from_mins(50))
    ));
    assert!(h.sim.set_recording("sandbox", &format!("{bench1}-1"), true));
    let c = h
        .claims("batch_recording", &recording(&bench1, "stop"))
        .await;
    refused(&h, sign(&c, 7), Refusal::EventLive, "stop inside an event").await;

    // A stream destination not on the team's list.
    let studio = device(&h, 5);
    let c = h
        .claims("start_stream_endpoint", &json!({"stream_id": "0f0e0d0c-0b0a-4909-8807-060504030201", "device_id": studio, "channel_id": "1"}))
        .await;
    refused(
        &h,
        sign(&c, 7),
        Refusal::StreamNotFound,
        "stream not on the list",
    )
    .await;

    // An event that is not the device's current or next.
    let c = h
        .claims(
            "confirm_cms_event_on_device",
            &json!({"device_id": bench2, "event_id": "not-this-event"}),
        )
        .await;
    refused(
        &h,
        sign(&c, 7),
        Refusal::EventMismatch,
        "event not the device's",
    )
    .await;
    assert_eq!(h.writes(), 1);
}

async fn lead_window(tool: &str, lead: i64) {
    let h = harness(true).await;
    let dev = device(&h, 0);
    let args = json!({"device_ids": [dev.clone()]});
    let now = jiff::Timestamp::now();
    assert!(h.sim.move_event(
        "sandbox",
        &dev,
        now + jiff::SignedDuration::from_mins(lead - 1),
        None
    ));
    let c = h.claims(tool, &args).await;
    let before = h.writes();
    let response = h.execute(sign(&c, 7)).await;
    assert!(
        matches!(response, Some(Response::Refused(Refusal::EventSoon { minutes })) if (minutes as i64) < lead),
        "{tool} at lead-1: {response:?}"
    );
    assert_eq!(h.writes(), before);
    let now = jiff::Timestamp::now();
    assert!(h.sim.move_event(
        "sandbox",
        &dev,
        now + jiff::SignedDuration::from_mins(lead + 1),
        None
    ));
    let c = h.claims(tool, &args).await;
    done(&h, sign(&c, 7), &format!("{tool} at lead+1")).await;
    assert_eq!(h.writes(), before + 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn reboot_lead_window_is_thirty_minutes() {
    lead_window("batch_reboot", 30).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn firmware_lead_window_is_two_hours() {
    lead_window("batch_firmware_update", 120).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn any_failing_read_refuses_without_writing() {
    let h = harness(true).await;
    let dev = device(&h, 0);
    let cases = [
        ("get_devices_in_my_team", Fault::Fail, Refusal::ReadFailed),
        (
            "get_current_or_next_cms_events_for_devices",
            Fault::Fail,
            Refusal::ReadFailed,
        ),
        (
            "get_recorder_status_for_devices",
            Fault::Text("not json".into()),
            Refusal::ReadFailed,
        ),
        (
            "get_recorder_status_for_devices",
            Fault::Unauthorized,
            Refusal::SignInExpired,
        ),
        ("get_devices_in_my_team", Fault::Hang, Refusal::ReadFailed),
    ];
    for (tool, fault, expected) in cases {
        h.sim.clear_faults();
        let c = h.claims("batch_recording", &recording(&dev, "start")).await;
        h.sim.set_fault(tool, fault.clone());
        refused(&h, sign(&c, 7), expected, &format!("{tool} {fault:?}")).await;
    }
    h.sim.clear_faults();
    assert_eq!(h.writes(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn no_sign_in_refuses() {
    let h = harness(true).await;
    let c = h
        .claims("batch_recording", &recording(&device(&h, 0), "start"))
        .await;
    std::fs::remove_file(h.state.join("sandbox.token")).unwrap();
    refused(&h, sign(&c, 7), Refusal::NoSignIn, "no sign-in").await;
}

/// Every name the person is shown is signed (claims version 2): a device renamed between the
/// describe and the approval, a name the assistant changed, and a name left out are each
/// refused with `name_changed`, nothing written; the signed names as read go through.
#[tokio::test(flavor = "multi_thread")]
async fn a_name_that_is_not_the_one_read_now_is_refused() {
    use fleetwatch_protocol::claims::NameKind;
    let h = harness(true).await;
    let target = device(&h, 0);
    let arguments = recording(&target, "start");
    let c = h.claims("batch_recording", &arguments).await;
    // What the executor read: the device's name and the channel's, signed.
    assert!(
        c.names
            .iter()
            .any(|n| n.kind == NameKind::Device && n.id == target && !n.name.is_empty()),
        "{:?}",
        c.names
    );
    assert!(
        c.names
            .iter()
            .any(|n| n.kind == NameKind::Channel && n.id == format!("{target}-1")),
        "{:?}",
        c.names
    );
    // A name the assistant changed.
    let mut changed = c.clone();
    changed.approval_id = random_id();
    if let Some(n) = changed
        .names
        .iter_mut()
        .find(|n| n.kind == NameKind::Device)
    {
        n.name = "Room 101".into();
    }
    refused(
        &h,
        sign(&changed, 7),
        Refusal::NameChanged,
        "a changed name",
    )
    .await;
    // A name left out.
    let mut missing = c.clone();
    missing.approval_id = random_id();
    missing.names.retain(|n| n.kind != NameKind::Channel);
    refused(
        &h,
        sign(&missing, 7),
        Refusal::NameChanged,
        "a name left out",
    )
    .await;
    // The device renamed in Epiphan between the describe and the approval.
    assert!(h.sim.rename_device("sandbox", &target, "Courtroom 4"));
    refused(
        &h,
        sign(&c, 7),
        Refusal::NameChanged,
        "renamed since the describe",
    )
    .await;
    // Described again, the new name is signed and the change goes through once.
    let fresh = h.claims("batch_recording", &arguments).await;
    assert!(fresh.names.iter().any(|n| n.name == "Courtroom 4"));
    let writes = h.writes();
    let response = h.execute(sign(&fresh, 7)).await;
    assert!(
        matches!(response, Some(Response::Executed(_))),
        "{response:?}\n{}",
        h.log_text()
    );
    assert_eq!(h.writes(), writes + 1);
}
