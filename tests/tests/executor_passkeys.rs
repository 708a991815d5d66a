//! The operator's passkey, required by the real executor binary on its socket: with a passkey
//! enrolled, the assistant's signature alone writes nothing; every bad assertion is refused
//! with its own code, one audit row and no write; counters only go up; the quorum counts
//! distinct enrolled passkeys; and `approvers add | list | remove` change who that is, at
//! once, without ever leaving a half-written file.

use base64::Engine as _;
use std::os::unix::fs::PermissionsExt;

use fleetwatch_e2e::authenticator::{Ceremony, ORIGIN, SoftPasskey, client_data};
use fleetwatch_e2e::{Harness, Setup, sandbox_devices, sign, sign_with_passkeys};
use fleetwatch_protocol::Refusal;
use fleetwatch_protocol::claims::{self, ApprovalClaims};
use fleetwatch_protocol::passkey::{self, Backup, PasskeyAssertion};
use fleetwatch_protocol::wire::{OutcomeKind, Request, Response};
use serde_json::{Value, json};

/// An executor fenced to the sandbox with these passkeys enrolled and this configuration.
async fn harness(passkeys: &[&SoftPasskey], config_extra: &str) -> Harness {
    let mut h = Harness::prepare(Setup {
        extra_key_lines: passkeys
            .iter()
            .enumerate()
            .map(|(i, p)| p.line(&format!("Operator {i}")))
            .collect(),
        config_extra: config_extra.to_owned(),
        trial: false,
        ..Setup::default()
    })
    .await;
    h.setup.allowlist = Some(sandbox_devices(&h.sim));
    h.spawn();
    h.wait_ready().await;
    h
}

fn device(h: &Harness, i: usize) -> String {
    sandbox_devices(&h.sim)[i].clone()
}

fn start_recording(device: &str) -> Value {
    json!({"action": "start", "device_ids": [format!("{device}-1")]})
}

fn reboot(device: &str) -> Value {
    json!({"device_ids": [device]})
}

/// Asserts the refusal, that nothing was written, and that the audit counts it once (in a row
/// of its own, or in the count of the row the burst rule writes for it within its second).
async fn refused(h: &Harness, approval: claims::SignedApproval, expected: Refusal, case: &str) {
    let writes = h.writes();
    let rows = h.audit_rows().len();
    let before = h.refusals_counted(expected.code());
    let response = h.execute(approval).await;
    assert_eq!(
        response,
        Some(Response::Refused(expected.clone())),
        "{case}\n{}",
        h.log_text()
    );
    assert_eq!(h.writes(), writes, "{case}: nothing written");
    assert_eq!(
        h.await_refusals(expected.code(), before + 1).await,
        before + 1,
        "{case}: counted once with reason {}",
        expected.code()
    );
    assert!(
        h.audit_rows().len() <= rows + 1,
        "{case}: at most one audit row in all"
    );
}

async fn done(h: &Harness, approval: claims::SignedApproval, case: &str) {
    let writes = h.writes();
    let response = h.execute(approval).await;
    let Some(Response::Executed(outcome)) = &response else {
        panic!("{case}: {response:?}\n{}", h.log_text())
    };
    assert_eq!(outcome.kind, OutcomeKind::Done, "{case}");
    assert_eq!(h.writes(), writes + 1, "{case}: one write");
}

/// The approval with these assertions in place of the page's.
fn with(claims: &ApprovalClaims, assertions: Vec<PasskeyAssertion>) -> claims::SignedApproval {
    sign(claims, 7).with_passkeys(assertions)
}

#[tokio::test(flavor = "multi_thread")]
async fn with_a_passkey_enrolled_the_assistant_alone_writes_nothing() {
    let mut key = SoftPasskey::es256(1);
    let h = harness(&[&key], "").await;
    let c = h
        .claims("batch_recording", &start_recording(&device(&h, 0)))
        .await;
    refused(&h, sign(&c, 7), Refusal::PasskeyRequired, "assistant alone").await;
    // The refusal came before the nonce: the same claims, now with the person, go through.
    assert_eq!(h.execution_state(&c.approval_id), None);
    done(
        &h,
        sign_with_passkeys(&c, 7, &mut [&mut key]),
        "with the passkey",
    )
    .await;
    let accepted = h
        .audit_rows()
        .into_iter()
        .find(|r| r.1 == "accepted")
        .expect("accepted row");
    assert!(
        accepted.4.contains("Operator 0")
            && accepted
                .4
                .contains(&key.record("x").fingerprint().to_string()),
        "the audit names who approved: {accepted:?}"
    );
    // Status says a person is required.
    let Some(Response::Status(status)) = h.request(&Request::Status).await else {
        panic!("status")
    };
    assert_eq!(status.passkeys_enrolled, 1);
    assert!(
        status
            .quorums
            .iter()
            .any(|q| q.tool == "batch_reboot" && q.calm == 1 && q.disruptive == 1),
        "{:?}",
        status.quorums
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn every_bad_assertion_is_refused_with_its_own_code() {
    let mut key = SoftPasskey::es256(1);
    let other = SoftPasskey::es256(2);
    let h = harness(&[&key], "").await;
    let args = start_recording(&device(&h, 0));
    let c = h.claims("batch_recording", &args).await;
    let bytes = c.encode().unwrap();
    let good = |counter: u32| Ceremony::for_claims(&bytes, counter);
    let challenge = passkey::challenge(&bytes);

    let mut other_claims = c.clone();
    other_claims.proposal_id += 1;
    let over_other = key.assert(&other_claims.encode().unwrap());

    let mut wrong_origin = good(10);
    wrong_origin.client_data_json = client_data("webauthn.get", &challenge, "http://localhost:9");
    // Made on the assistant's own page (its default origin): not the confirm page, so refused
    // by the executor's default configuration (DESIGN §9).
    let mut on_the_assistants_page = good(19);
    on_the_assistants_page.client_data_json =
        client_data("webauthn.get", &challenge, "http://localhost:8767");
    let mut wrong_rp = good(11);
    wrong_rp.rp_id = "fleetwatch.example".into();
    let mut no_up = good(12);
    no_up.flags = 0x04;
    let mut no_uv = good(13);
    no_uv.flags = 0x01;
    let mut cross = good(14);
    cross.client_data_json = format!(
        r#"{{"type":"webauthn.get","challenge":"{}","origin":"{ORIGIN}","crossOrigin":true}}"#,
        passkey::challenge_base64url(&bytes)
    )
    .into_bytes();
    let mut create = good(15);
    create.client_data_json = client_data("webauthn.create", &challenge, ORIGIN);

    let mut malformed = key.assert_with(&good(16));
    malformed.signature = vec![0x30, 0x03, 0x02, 0x01];
    // Another key's signature over a correct ceremony, under the enrolled credential's ID.
    let mut forged = other.assert_with(&good(17));
    forged.credential_id = key.credential_id.clone();
    let unknown = other.assert_with(&good(18));

    let cases: Vec<(&str, PasskeyAssertion, Refusal)> = vec![
        (
            "over other claims",
            over_other,
            Refusal::PasskeyChallengeMismatch,
        ),
        (
            "wrong origin",
            key.assert_with(&wrong_origin),
            Refusal::PasskeyOriginNotAllowed,
        ),
        (
            "made on the assistant's page",
            key.assert_with(&on_the_assistants_page),
            Refusal::PasskeyOriginNotAllowed,
        ),
        (
            "wrong RP ID hash",
            key.assert_with(&wrong_rp),
            Refusal::PasskeyRpIdMismatch,
        ),
        (
            "UP clear",
            key.assert_with(&no_up),
            Refusal::PasskeyUserNotPresent,
        ),
        (
            "UV clear",
            key.assert_with(&no_uv),
            Refusal::PasskeyUserNotVerified,
        ),
        (
            "unknown credential ID",
            unknown,
            Refusal::PasskeyUnknownCredential,
        ),
        (
            "malformed DER",
            malformed,
            Refusal::PasskeySignatureMalformed,
        ),
        (
            "another key's signature",
            forged,
            Refusal::PasskeyBadSignature,
        ),
        (
            "cross-origin",
            key.assert_with(&cross),
            Refusal::PasskeyCrossOrigin,
        ),
        (
            "wrong type",
            key.assert_with(&create),
            Refusal::PasskeyWrongType,
        ),
    ];
    for (case, assertion, expected) in cases {
        refused(&h, with(&c, vec![assertion]), expected, case).await;
        assert_eq!(h.execution_state(&c.approval_id), None, "{case}: no nonce");
    }
    // One bad assertion beside a good one still refuses.
    let good_one = key.assert_with(&good(20));
    let mut bad_one = key.assert_with(&good(21));
    bad_one.signature = vec![0x30, 0x00];
    refused(
        &h,
        with(&c, vec![good_one.clone(), bad_one]),
        Refusal::PasskeySignatureMalformed,
        "one bad among good",
    )
    .await;
    done(&h, with(&c, vec![good_one]), "the good one alone").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_counter_that_does_not_increase_is_refused_and_spends_no_nonce() {
    let mut key = SoftPasskey::ed25519(3);
    let h = harness(&[&key], "").await;
    key.counter = 4;
    let first = h
        .claims("batch_recording", &start_recording(&device(&h, 0)))
        .await;
    done(
        &h,
        sign_with_passkeys(&first, 7, &mut [&mut key]),
        "counter 5",
    )
    .await;
    // A second approval whose assertion reports the stored counter again (a cloned passkey,
    // or an assertion kept and replayed over other claims bytes).
    key.counter = 4;
    let second = h
        .claims("batch_recording", &start_recording(&device(&h, 2)))
        .await;
    refused(
        &h,
        sign_with_passkeys(&second, 7, &mut [&mut key]),
        Refusal::PasskeyCounterNotIncreased,
        "counter 5 again",
    )
    .await;
    assert_eq!(
        h.execution_state(&second.approval_id),
        None,
        "a refused counter writes no nonce"
    );
    // The same claims with a counter that did advance go through: nothing was spent.
    done(
        &h,
        sign_with_passkeys(&second, 7, &mut [&mut key]),
        "counter 6",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn two_people_for_a_disruptive_change() {
    let mut ana = SoftPasskey::es256(4);
    let mut bo = SoftPasskey::ed25519(5);
    let h = harness(&[&ana, &bo], "passkeys:\n  quorum_disruptive: 2\n").await;
    let target = device(&h, 0);

    let c = h.claims("batch_reboot", &reboot(&target)).await;
    refused(
        &h,
        sign_with_passkeys(&c, 7, &mut [&mut ana]),
        Refusal::PasskeyQuorumNotMet { have: 1, need: 2 },
        "one person",
    )
    .await;
    // The same passkey twice is one person.
    let bytes = c.encode().unwrap();
    let twice = vec![ana.assert(&bytes), ana.assert(&bytes)];
    refused(
        &h,
        with(&c, twice),
        Refusal::PasskeyQuorumNotMet { have: 1, need: 2 },
        "the same passkey twice",
    )
    .await;
    refused(&h, sign(&c, 7), Refusal::PasskeyRequired, "nobody").await;
    done(
        &h,
        sign_with_passkeys(&c, 7, &mut [&mut ana, &mut bo]),
        "two enrolled passkeys",
    )
    .await;

    // A calm change needs one.
    let calm = h
        .claims("batch_recording", &start_recording(&device(&h, 2)))
        .await;
    done(
        &h,
        sign_with_passkeys(&calm, 7, &mut [&mut bo]),
        "calm, one person",
    )
    .await;

    let Some(Response::Status(status)) = h.request(&Request::Status).await else {
        panic!("status")
    };
    let recording = status
        .quorums
        .iter()
        .find(|q| q.tool == "batch_recording")
        .expect("batch_recording");
    assert_eq!((recording.calm, recording.disruptive), (1, 2));
    let reboot = status
        .quorums
        .iter()
        .find(|q| q.tool == "batch_reboot")
        .expect("batch_reboot");
    assert_eq!((reboot.calm, reboot.disruptive), (2, 2));
}

fn file_bytes(h: &Harness) -> Vec<u8> {
    std::fs::read(h.dir.path().join("etc/approvers.pub")).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn approvers_add_list_and_remove_change_who_approves_at_once() {
    let mut ana = SoftPasskey::es256(6);
    let bo = SoftPasskey::ed25519(17);
    // Seed 7 is the assistant's signing key in these tests.
    let assistant_as_passkey = SoftPasskey::ed25519(7).line("Not a person");
    let h = harness(&[&ana], "").await;
    let path = h.dir.path().join("etc/approvers.pub");

    // Refusals leave the file byte for byte.
    let before = file_bytes(&h);
    let ana_line = ana.line("Operator 0");
    let bo_line = bo.line("Bo Díaz");
    let mut fields: Vec<&str> = bo_line.splitn(7, ' ').collect();
    let rs256 = {
        fields[2] = "rs256";
        fields.join(" ")
    };
    let bad_key = {
        let mut f: Vec<&str> = bo_line.splitn(7, ' ').collect();
        f[4] = "not-base64!";
        f.join(" ")
    };
    // The same passkey as a line from before persons: no person, so it would count as its own.
    let before_persons = {
        let f: Vec<&str> = bo_line.splitn(7, ' ').collect();
        format!("passkey {} {} {} {}", f[2], f[3], f[4], f[6])
    };
    for (case, line, says) in [
        ("malformed", bad_key.as_str(), "base64"),
        (
            "a line from before persons",
            before_persons.as_str(),
            "enrol this person again",
        ),
        ("unknown algorithm", rs256.as_str(), "algorithm"),
        ("duplicate", ana_line.as_str(), "twice"),
        ("not a line", "hello there", "unknown kind"),
        (
            "the assistant's own key",
            assistant_as_passkey.as_str(),
            "assistant's key",
        ),
    ] {
        let out = h.cli(&["approvers", "add", line], None);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{case}: refused");
        assert!(err.contains(says), "{case}: {err}");
        assert!(err.contains("unchanged"), "{case}: {err}");
        assert_eq!(file_bytes(&h), before, "{case}: file unchanged");
    }

    // A good line: the fingerprint to compare, the file replaced keeping its owner and mode
    // (a deployment installs it 0640 root:fleetwatch-exec).
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    let out = h.cli(&["approvers", "add", &bo_line], None);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let print = bo.record("Bo Díaz").fingerprint().to_string();
    assert!(said.contains(&format!("fingerprint: {print}")), "{said}");
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640);
    assert!(
        file_bytes(&h).starts_with(&before),
        "what was there is kept as it was"
    );
    // From standard input too, one line; a second copy is refused.
    let out = h.cli(&["approvers", "add", "-"], Some(&format!("{bo_line}\n")));
    assert!(!out.status.success());
    // Standard input takes a person's line only: not an assistant key, nor a line from before
    // persons.
    let key_line = format!(
        "ed25519 {} another assistant",
        base64::engine::general_purpose::STANDARD.encode([3u8; 32])
    );
    let after_bo = file_bytes(&h);
    for line in [key_line.as_str(), before_persons.as_str()] {
        let out = h.cli(&["approvers", "add", "-"], Some(&format!("{line}\n")));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{line}: refused");
        assert!(err.contains("only a person's `approver"), "{err}");
        assert_eq!(file_bytes(&h), after_bo, "{line}: file unchanged");
    }

    let list = h.cli(&["approvers", "list"], None);
    let listed = String::from_utf8_lossy(&list.stdout);
    assert!(list.status.success(), "{listed}");
    assert!(
        listed.contains("Bo Díaz") && listed.contains(&print),
        "{listed}"
    );
    assert!(
        listed.contains("assistant key") && listed.contains("Operator 0"),
        "{listed}"
    );
    assert!(
        listed.contains("added 20"),
        "the time it was added: {listed}"
    );

    // Ana approves; the list shows her last counter.
    let c = h
        .claims("batch_recording", &start_recording(&device(&h, 0)))
        .await;
    done(
        &h,
        sign_with_passkeys(&c, 7, &mut [&mut ana]),
        "Ana approves",
    )
    .await;
    let listed = String::from_utf8_lossy(&h.cli(&["approvers", "list"], None).stdout).into_owned();
    // Each person, then their passkeys indented under them.
    let ana_row = listed
        .lines()
        .skip_while(|l| !l.starts_with("person operator-0  Operator 0"))
        .nth(1)
        .expect("Ana's passkey row")
        .to_owned();
    assert!(ana_row.starts_with("  passkey"), "{ana_row}");
    assert!(
        ana_row.contains(&format!("counter {}", ana.counter)),
        "{ana_row}"
    );

    // Removed by name: her next approval is from an unknown passkey, with no restart.
    let out = h.cli(&["approvers", "remove", "Operator 0"], None);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        said.contains("removed passkey") && said.contains("Operator 0"),
        "{said}"
    );
    let c = h
        .claims("batch_recording", &start_recording(&device(&h, 2)))
        .await;
    refused(
        &h,
        sign_with_passkeys(&c, 7, &mut [&mut ana]),
        Refusal::PasskeyUnknownCredential,
        "removed passkey",
    )
    .await;
    // Bo, removed by fingerprint typed without spaces; then nobody is left, which closes
    // approvals (closed by default): the assistant's signature alone is refused, nothing written.
    let out = h.cli(&["approvers", "remove", &print.replace(' ', "")], None);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        said.contains("that was the last person")
            && said.contains("nothing is approved until someone is enrolled again"),
        "{said}"
    );
    let out = h.cli(&["approvers", "remove", "nobody"], None);
    assert!(!out.status.success());
    refused(&h, sign(&c, 7), Refusal::PasskeyRequired, "nobody is left").await;
}

/// Runs `serve` for an executor set up with `setup`, which must refuse to start: what it said
/// on standard error. Nothing was written.
async fn refused_at_start(setup: Setup) -> String {
    let mut h = Harness::prepare(setup).await;
    h.setup.allowlist = Some(sandbox_devices(&h.sim));
    let out = h.cli(&["serve"], None);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{err}");
    assert_eq!(h.writes(), 0);
    err
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bad_approver_line_stops_start_up_naming_its_line() {
    let key = SoftPasskey::es256(8);
    let mut line = key.line("Ana");
    line.push('\u{202e}');
    let err = refused_at_start(Setup {
        extra_key_lines: vec!["# operators".into(), line],
        ..Setup::default()
    })
    .await;
    // Line 1 is the assistant's key, line 2 the comment.
    assert!(err.contains("line 3") && err.contains("invisible"), "{err}");
}

/// A person ID listed under two names (a hand-edited file) stops start-up naming the line: an
/// approval would otherwise say "approved by" one person two ways.
/// A line from before persons (`passkey …`, no person) stops start-up naming its line and
/// saying to enrol again: it would count as a person of its own, so one human with such a line
/// and an `approver` line could meet a quorum of two.
#[tokio::test(flavor = "multi_thread")]
async fn a_line_from_before_persons_stops_start_up_saying_to_enrol_again() {
    let line = SoftPasskey::es256(8).line("Ana");
    let f: Vec<&str> = line.splitn(7, ' ').collect();
    let err = refused_at_start(Setup {
        extra_key_lines: vec![
            SoftPasskey::es256(9).person_line("bo", "Bo"),
            format!("passkey {} {} {} Ana", f[2], f[3], f[4]),
        ],
        trial: false,
        ..Setup::default()
    })
    .await;
    // Line 1 is the assistant's key.
    assert!(
        err.contains("line 3")
            && err.contains("from before persons")
            && err.contains("fleetwatch-confirm enrol"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_person_under_two_names_stops_start_up_naming_its_line() {
    let err = refused_at_start(Setup {
        extra_key_lines: vec![
            SoftPasskey::es256(8).person_line("ana", "Ana Gómez"),
            SoftPasskey::es256(9).person_line("ana", "Ana G."),
        ],
        trial: false,
        ..Setup::default()
    })
    .await;
    // Line 1 is the assistant's key.
    assert!(
        err.contains("line 3") && err.contains("another name"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_quorum_written_with_no_passkey_enrolled_refuses_everything() {
    let h = harness(&[], "passkeys:\n  quorum: 1\n").await;
    let c = h
        .claims("batch_recording", &start_recording(&device(&h, 0)))
        .await;
    refused(
        &h,
        sign(&c, 7),
        Refusal::PasskeyRequired,
        "no passkey, quorum 1",
    )
    .await;
    let doctor = h.cli(&["doctor"], None);
    let text = String::from_utf8_lossy(&doctor.stdout);
    assert!(
        text.contains("FAIL approved by a person") && text.contains("no person is enrolled"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn doctor_says_whether_approvals_are_bound_to_a_person() {
    // Closed by default: nobody enrolled fails, naming the command that enrols.
    let h = harness(&[], "").await;
    let doctor = h.cli(&["doctor"], None);
    let text = String::from_utf8_lossy(&doctor.stdout).into_owned();
    assert!(!doctor.status.success(), "{text}");
    assert!(
        text.contains("FAIL approved by a person: no person is enrolled: every change is refused")
            && text.contains("fleetwatch-confirm enrol"),
        "{text}"
    );
    drop(h);
    // The explicit trial mode warns while it is on.
    let h = harness(&[], "passkeys:\n  quorum: 0\n").await;
    let text = String::from_utf8_lossy(&h.cli(&["doctor"], None).stdout).into_owned();
    assert!(
        text.contains("WARN approved by a person: trial mode (passkeys: {quorum: 0})"),
        "{text}"
    );
    drop(h);
    let ana = SoftPasskey::es256(9);
    let h = harness(&[&ana], "passkeys:\n  tools: {batch_firmware_update: 2}\n").await;
    let text = String::from_utf8_lossy(&h.cli(&["doctor"], None).stdout).into_owned();
    assert!(
        text.contains(
            "OK   approved by a person: 1 person(s) with 1 passkey(s) enrolled: Operator 0"
        ),
        "{text}"
    );
    assert!(
        text.contains("FAIL quorum")
            && text.contains("batch_firmware_update can never be approved"),
        "{text}"
    );
    assert!(text.contains("batch_recording 1"), "{text}");
}

/// An executor with these person lines (`fleetwatch-confirm enrol`'s format) in its approver
/// file.
async fn harness_with_lines(lines: Vec<String>, config_extra: &str) -> Harness {
    let mut h = Harness::prepare(Setup {
        extra_key_lines: lines,
        config_extra: config_extra.to_owned(),
        trial: false,
        ..Setup::default()
    })
    .await;
    h.setup.allowlist = Some(sandbox_devices(&h.sim));
    h.spawn();
    h.wait_ready().await;
    h
}

#[tokio::test(flavor = "multi_thread")]
async fn a_persons_two_passkeys_count_once_toward_a_two_person_rule() {
    let mut ana = SoftPasskey::es256(21);
    let mut ana_backup = SoftPasskey::ed25519(22);
    let mut bo = SoftPasskey::es256(23);
    let h = harness_with_lines(
        vec![
            ana.person_line("ana", "Ana Gómez"),
            ana_backup.person_line("ana", "Ana Gómez"),
            bo.person_line("bo", "Bo Díaz"),
        ],
        "passkeys:\n  quorum_disruptive: 2\n",
    )
    .await;
    let c = h.claims("batch_reboot", &reboot(&device(&h, 0))).await;
    refused(
        &h,
        sign_with_passkeys(&c, 7, &mut [&mut ana, &mut ana_backup]),
        Refusal::PasskeyQuorumNotMet { have: 1, need: 2 },
        "one person's two passkeys",
    )
    .await;
    done(
        &h,
        sign_with_passkeys(&c, 7, &mut [&mut ana_backup, &mut bo]),
        "two persons",
    )
    .await;
    let accepted = h
        .audit_rows()
        .into_iter()
        .find(|r| r.1 == "accepted")
        .expect("accepted row");
    assert!(
        accepted.4.contains("Ana Gómez") && accepted.4.contains("Bo Díaz"),
        "{accepted:?}"
    );
    // Status and `approvers list` count persons.
    let listed = String::from_utf8_lossy(&h.cli(&["approvers", "list"], None).stdout).into_owned();
    assert!(listed.contains("2 person(s) with 3 passkey(s)"), "{listed}");
    let ana_block: Vec<&str> = listed
        .lines()
        .skip_while(|l| !l.starts_with("person ana"))
        .take(3)
        .collect();
    assert_eq!(ana_block.len(), 3, "{listed}");
    assert!(ana_block[1].starts_with("  passkey") && ana_block[2].starts_with("  passkey"));
    assert!(ana_block[1].contains("device-bound"), "{listed}");
}

/// With `device_bound`, a passkey whose backup-eligible flag (BE) is set is refused, and so is
/// one whose flag is not the one its enrolment recorded (BE never changes for one credential),
/// either way; each through the real binary, nothing written.
#[tokio::test(flavor = "multi_thread")]
async fn device_bound_refuses_a_synced_passkey_and_one_whose_backup_flag_changed() {
    let mut ana = SoftPasskey::es256(24);
    let mut bo = SoftPasskey::es256(25);
    let h = harness_with_lines(
        vec![
            ana.person_line("ana", "Ana Gómez"),
            bo.person_record("bo", "Bo Díaz", Backup::Synced).to_line(),
        ],
        "passkeys:\n  device_bound: true\n",
    )
    .await;
    let c = h
        .claims("batch_recording", &start_recording(&device(&h, 0)))
        .await;
    let bytes = c.encode().unwrap();
    let asserted = |key: &mut SoftPasskey, flags: u8| {
        key.counter += 1;
        let mut ceremony = Ceremony::for_claims(&bytes, key.counter);
        ceremony.flags |= flags;
        with(&c, vec![key.assert_with(&ceremony)])
    };
    let cases = [
        (
            asserted(&mut ana, 0x08),
            Refusal::PasskeyBackupChanged,
            "enrolled device-bound, now says it may be synced",
        ),
        (
            asserted(&mut bo, 0x08),
            Refusal::PasskeySynced,
            "enrolled synced, and says so",
        ),
        (
            asserted(&mut bo, 0),
            Refusal::PasskeyBackupChanged,
            "enrolled synced, now says it is device-bound",
        ),
    ];
    for (approval, refusal, case) in cases {
        refused(&h, approval, refusal, case).await;
    }
    done(
        &h,
        sign_with_passkeys(&c, 7, &mut [&mut ana]),
        "the device-bound passkey as enrolled",
    )
    .await;
}

/// An assertion whose flags say backed up (BS) but not eligible for backup (BE) is refused, with
/// or without `device_bound`: no honest authenticator sets them so.
#[tokio::test(flavor = "multi_thread")]
async fn backed_up_without_backup_eligible_is_refused() {
    let mut ana = SoftPasskey::es256(26);
    let h = harness_with_lines(vec![ana.person_line("ana", "Ana Gómez")], "").await;
    let c = h
        .claims("batch_recording", &start_recording(&device(&h, 0)))
        .await;
    let bytes = c.encode().unwrap();
    ana.counter += 1;
    let mut ceremony = Ceremony::for_claims(&bytes, ana.counter);
    ceremony.flags |= 0x10;
    refused(
        &h,
        with(&c, vec![ana.assert_with(&ceremony)]),
        Refusal::PasskeyBackupStateWithoutEligible,
        "BS without BE",
    )
    .await;
    done(
        &h,
        sign_with_passkeys(&c, 7, &mut [&mut ana]),
        "the same passkey with honest flags",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn closed_by_default_and_the_explicit_trial_mode() {
    // No `passkeys:` section and nobody enrolled: the assistant alone writes nothing.
    let h = harness_with_lines(Vec::new(), "").await;
    let c = h
        .claims("batch_recording", &start_recording(&device(&h, 0)))
        .await;
    refused(
        &h,
        sign(&c, 7),
        Refusal::PasskeyRequired,
        "closed by default",
    )
    .await;
    drop(h);
    // `quorum: 0` is the trial mode: the assistant's signature alone is written.
    let h = harness_with_lines(Vec::new(), "passkeys:\n  quorum: 0\n").await;
    let c = h
        .claims("batch_recording", &start_recording(&device(&h, 0)))
        .await;
    done(&h, sign(&c, 7), "trial mode").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn approvers_add_keeps_one_name_per_person_and_remove_takes_a_person() {
    let ana = SoftPasskey::es256(25);
    let ana_backup = SoftPasskey::es256(26);
    let impostor = SoftPasskey::es256(27);
    let mut bo = SoftPasskey::es256(28);
    let h = harness_with_lines(vec![ana.person_line("ana", "Ana Gómez")], "").await;
    let before = file_bytes(&h);
    for (case, line, says) in [
        (
            "another person with Ana's name",
            impostor.person_line("eve", "Ana Gómez"),
            "two persons cannot share a name",
        ),
        (
            "Ana under another name",
            ana_backup.person_line("ana", "Ana G."),
            "must carry the same name",
        ),
    ] {
        let out = h.cli(&["approvers", "add", "-"], Some(&line));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{case}");
        assert!(err.contains(says), "{case}: {err}");
        assert_eq!(file_bytes(&h), before, "{case}: file unchanged");
    }
    for line in [
        ana_backup.person_line("ana", "Ana Gómez"),
        bo.person_line("bo", "Bo Díaz"),
    ] {
        let out = h.cli(&["approvers", "add", "-"], Some(&line));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // A person is removed with all their passkeys; the executor sees it at once.
    let out = h.cli(&["approvers", "remove", "ana"], None);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(said.matches("removed passkey").count(), 2, "{said}");
    let listed = String::from_utf8_lossy(&h.cli(&["approvers", "list"], None).stdout).into_owned();
    assert!(
        !listed.contains("Ana Gómez") && listed.contains("person bo"),
        "{listed}"
    );
    // Removing the last person while the executor runs closes approvals at once.
    let c = h
        .claims("batch_recording", &start_recording(&device(&h, 0)))
        .await;
    let out = h.cli(&["approvers", "remove", "bo"], None);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("that was the last person"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    refused(
        &h,
        sign_with_passkeys(&c, 7, &mut [&mut bo]),
        Refusal::PasskeyUnknownCredential,
        "the last person removed",
    )
    .await;
    refused(&h, sign(&c, 7), Refusal::PasskeyRequired, "and nobody else").await;
}

/// An origin only systemd holds (DESIGN §9): a valid passkey is refused while the confirm
/// origin's port is held by anyone but the configured owner, or not held at all, through the
/// real executor, with nothing written; held by the owner alone, it runs.
#[tokio::test(flavor = "multi_thread")]
async fn a_confirm_origin_not_held_by_its_owner_refuses_a_valid_passkey() {
    let me = rustix::process::getuid().as_raw();
    // This test process holds the default origin's port: as another owner than the one
    // configured, it is the wrong holder.
    fleetwatch_e2e::hold_default_origin();
    let mut ana = SoftPasskey::es256(31);
    let someone_else = me.wrapping_add(4242);
    let free = fleetwatch_e2e::page::free_port();
    let cases = [
        (
            "the origin's port held by another uid",
            format!("passkeys:\n  origin_owner: {someone_else}\n"),
            true,
            format!("uid {me} also listens on port 8768"),
        ),
        (
            "an origin's port held by nobody",
            format!(
                "passkeys:\n  origin_owner: {me}\n  origins: [\"http://localhost:8768\", \"http://localhost:{free}\"]\n"
            ),
            true,
            String::new(),
        ),
        // Held by the owner alone: the same passkey runs.
        (
            "held by the owner",
            format!("passkeys:\n  origin_owner: {me}\n"),
            false,
            String::new(),
        ),
    ];
    for (case, config, refuses, logged) in cases {
        let h = harness_with_lines(vec![ana.person_line("ana", "Ana Gómez")], &config).await;
        let c = h
            .claims("batch_recording", &start_recording(&device(&h, 0)))
            .await;
        // Status says the same ahead of time, for the assistant's doctor and page.
        let Some(Response::Status(status)) = h.request(&Request::Status).await else {
            panic!("{case}: no status")
        };
        assert_eq!(
            status.confirm_origin_not_held.is_some(),
            refuses,
            "{case}: {status:?}"
        );
        assert!(
            status
                .confirm_origin_not_held
                .as_deref()
                .unwrap_or_default()
                .contains(&logged),
            "{case}: {status:?}"
        );
        let approval = sign_with_passkeys(&c, 7, &mut [&mut ana]);
        if refuses {
            refused(&h, approval, Refusal::ConfirmOriginNotHeld, case).await;
            assert!(h.log_text().contains(&logged), "{case}: {}", h.log_text());
        } else {
            done(&h, approval, case).await;
        }
    }
}

/// The approval page's own origin is refused at start: a passkey used on the assistant's page
/// proves nothing about what the person saw.
#[tokio::test(flavor = "multi_thread")]
async fn the_approval_pages_origin_stops_the_executor_at_start() {
    let err = refused_at_start(Setup {
        config_extra: "passkeys:\n  origins: [\"http://localhost:8767\"]\n".to_owned(),
        trial: false,
        ..Setup::default()
    })
    .await;
    assert!(
        err.contains("passkeys.origins") && err.contains("approval page"),
        "{err}"
    );
}

/// What a person may approve, held by the executor (the team's own rule): a student technician
/// scoped to calm changes in one room cannot make the quorum of a reboot, nor of a calm change
/// in another room (nothing written, its own code); inside the scope they count. A line without
/// a scope approves everything, as before scopes.
#[tokio::test(flavor = "multi_thread")]
async fn a_person_outside_their_scope_cannot_make_the_quorum() {
    let mut tech = SoftPasskey::es256(61);
    let mut lead = SoftPasskey::ed25519(62);
    let mut h = Harness::prepare(Setup {
        trial: false,
        ..Setup::default()
    })
    .await;
    let room = sandbox_devices(&h.sim)[0].clone();
    let other = sandbox_devices(&h.sim)[1].clone();
    let scoped = fleetwatch_protocol::passkey::PasskeyRecord::parse_line(
        &tech.person_line("tech", "Student Tech"),
    )
    .unwrap()
    .with_scope(Some(
        fleetwatch_protocol::passkey::Scope::parse(&format!("calm@{room}")).unwrap(),
    ))
    .to_line();
    assert!(
        scoped.contains(&format!(" may=calm@{room} Student Tech")),
        "{scoped}"
    );
    // Installed as an administrator writes them, before the executor starts.
    let file = h.dir.path().join("etc/approvers.pub");
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str(&format!(
        "{scoped}\n{}\n",
        lead.person_line("lead", "Lead Engineer")
    ));
    std::fs::write(&file, text).unwrap();
    h.setup.allowlist = Some(sandbox_devices(&h.sim));
    h.spawn();
    h.wait_ready().await;

    // A reboot is disruptive: outside "calm".
    let reboot_room = h.claims("batch_reboot", &reboot(&room)).await;
    refused(
        &h,
        sign_with_passkeys(&reboot_room, 7, &mut [&mut tech]),
        Refusal::PasskeyOutOfScope { have: 0, need: 1 },
        "a reboot by a person scoped to calm changes",
    )
    .await;
    assert_eq!(
        h.execution_state(&reboot_room.approval_id),
        None,
        "no nonce"
    );
    // A calm change in another room: outside the rooms.
    let elsewhere = h.claims("batch_recording", &start_recording(&other)).await;
    refused(
        &h,
        sign_with_passkeys(&elsewhere, 7, &mut [&mut tech]),
        Refusal::PasskeyOutOfScope { have: 0, need: 1 },
        "a calm change in a room outside the scope",
    )
    .await;
    // Inside the scope the person counts; the unscoped lead approves anything.
    let inside = h.claims("batch_recording", &start_recording(&room)).await;
    done(
        &h,
        sign_with_passkeys(&inside, 7, &mut [&mut tech]),
        "a calm change in the person's room",
    )
    .await;
    done(
        &h,
        sign_with_passkeys(&elsewhere, 7, &mut [&mut tech, &mut lead]),
        "the lead makes the quorum the technician cannot",
    )
    .await;

    // `approvers list` says it in words; `approvers scope` changes it for the next request.
    let list = String::from_utf8_lossy(&h.cli(&["approvers", "list"], None).stdout).into_owned();
    assert!(
        list.contains(&format!(
            "person tech  Student Tech  may approve calm changes, in {room}"
        )) && list.contains("person lead  Lead Engineer  may approve everything"),
        "{list}"
    );
    if rustix::process::geteuid().as_raw() == 0 {
        let out = h.cli(&["approvers", "scope", "tech", "all@team"], None);
        assert!(out.status.success(), "{out:?}");
        // A room nothing records in: a reboot there is the executor's to allow.
        let quiet = sandbox_devices(&h.sim)[2].clone();
        let reboot_other = h.claims("batch_reboot", &reboot(&quiet)).await;
        done(
            &h,
            sign_with_passkeys(&reboot_other, 7, &mut [&mut tech]),
            "after the scope was widened",
        )
        .await;
        let bad = h.cli(&["approvers", "scope", "tech", "calm@room-1"], None);
        assert!(!bad.status.success());
        assert!(
            String::from_utf8_lossy(&bad.stderr).contains("may=TOOLS@ROOMS"),
            "{bad:?}"
        );
    }
}

/// Who asked, signed: the claims carry the user the assistant read from the chat socket, the
/// executor writes it in its audit and the receipt, and `verify` prints it as the assistant's
/// report. With `passkeys.asker_counts: false` the person whose approver line names that user
/// does not count toward the quorum of their own change (nothing written, its own code);
/// another person does.
#[tokio::test(flavor = "multi_thread")]
async fn the_person_who_asked_does_not_count_when_the_team_says_so() {
    let mut sam = SoftPasskey::es256(81);
    let mut lead = SoftPasskey::ed25519(82);
    let sam_line = fleetwatch_protocol::passkey::PasskeyRecord::parse_line(
        &sam.person_line("sam", "Sam Ortiz"),
    )
    .unwrap()
    .with_users(vec!["sam".into(), "sortiz".into()])
    .to_line();
    assert!(
        sam_line.contains(" users=sam,sortiz Sam Ortiz"),
        "{sam_line}"
    );
    let h = harness_with_lines(
        vec![sam_line, lead.person_line("lead", "Lead Engineer")],
        "passkeys:\n  asker_counts: false\n",
    )
    .await;
    let dev = device(&h, 0);
    let asked = |c: ApprovalClaims, who: &str| ApprovalClaims {
        asked_by: who.into(),
        ..c
    };
    let own = asked(
        h.claims("batch_recording", &start_recording(&dev)).await,
        "sortiz",
    );
    refused(
        &h,
        sign_with_passkeys(&own, 7, &mut [&mut sam]),
        Refusal::PasskeyAskerApproved { have: 0, need: 1 },
        "the asker approving their own change",
    )
    .await;
    assert_eq!(h.execution_state(&own.approval_id), None, "no nonce");
    // A name the claims cannot carry is refused before anything is stored.
    let odd = asked(own.clone(), "sam\nroot");
    let odd = ApprovalClaims {
        approval_id: fleetwatch_e2e::random_id(),
        ..odd
    };
    refused(
        &h,
        sign_with_passkeys(&odd, 7, &mut [&mut lead]),
        Refusal::ClaimTooLong,
        "an asker that is not a user name",
    )
    .await;
    // Another person approves it; the audit and the receipt say who asked.
    let other = ApprovalClaims {
        approval_id: fleetwatch_e2e::random_id(),
        ..own.clone()
    };
    done(
        &h,
        sign_with_passkeys(&other, 7, &mut [&mut lead]),
        "another person approving what sam asked for",
    )
    .await;
    let id = fleetwatch_protocol::hex::encode(&other.approval_id);
    assert!(
        h.audit_rows().iter().any(|r| r.1 == "accepted"
            && r.3 == id
            && r.4.contains("; asked by sortiz; approved by Lead Engineer")),
        "{:?}",
        h.audit_rows()
    );
    // `approvers list` says which users are the person.
    let list = String::from_utf8_lossy(&h.cli(&["approvers", "list"], None).stdout).into_owned();
    assert!(
        list.contains("person sam  Sam Ortiz  may approve everything  users sam, sortiz"),
        "{list}"
    );
    // Sam approving a change someone else asked for counts.
    let theirs = asked(
        h.claims("batch_recording", &start_recording(&device(&h, 1)))
            .await,
        "lead",
    );
    done(
        &h,
        sign_with_passkeys(&theirs, 7, &mut [&mut sam]),
        "sam approving what another asked for",
    )
    .await;
}
