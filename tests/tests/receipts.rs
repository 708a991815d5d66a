//! Receipts (DESIGN §11) through the real binaries: a change the real executor made has a
//! receipt (`fleetwatch-executor receipt N`) that `fleetwatch-confirm verify` checks from public
//! inputs alone; each tampering is caught with its own reason; a change whose result is unknown
//! has one that says so; a refused change has none.

use std::path::Path;
use std::process::Output;

use ed25519_dalek::Signer as _;
use fleetwatch_e2e::authenticator::SoftPasskey;
use fleetwatch_e2e::{Harness, Setup, binary, sandbox_devices, shifted, sign, sign_with_passkeys};
use fleetwatch_protocol::claims::ApprovalClaims;
use fleetwatch_protocol::receipt::{Receipt, Statement, b64, unb64};
use fleetwatch_protocol::wire::{OutcomeKind, Request, Response};
use serde_json::json;

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// `fleetwatch-confirm verify` on a receipt, with the harness's approver file and policy.
fn verify(h: &Harness, receipt: &Receipt, key: &str, approvers: Option<&str>) -> Output {
    let file = h.dir.path().join("receipt.json");
    std::fs::write(&file, serde_json::to_string_pretty(receipt).unwrap()).unwrap();
    let approver_file = h.dir.path().join("approvers-for-verify.pub");
    let approvers_text = match approvers {
        Some(text) => text.to_owned(),
        None => std::fs::read_to_string(h.dir.path().join("etc/approvers.pub")).unwrap(),
    };
    std::fs::write(&approver_file, approvers_text).unwrap();
    std::process::Command::new(binary("fleetwatch-confirm", "fleetwatch-confirm"))
        .arg("verify")
        .arg(&file)
        .args(["--receipt-key", key])
        .arg("--approvers")
        .arg(&approver_file)
        .arg("--policy")
        .arg(h.dir.path().join("etc/tool_policy.yaml"))
        .output()
        .unwrap()
}

/// The receipt key's signing half, as the executor keeps it in its state folder.
fn receipt_signing_key(state: &Path) -> ed25519_dalek::SigningKey {
    let text = std::fs::read_to_string(state.join("receipt.key")).unwrap();
    let seed: [u8; 32] = unb64(text.trim()).unwrap().try_into().unwrap();
    ed25519_dalek::SigningKey::from_bytes(&seed)
}

/// The statement changed by `edit` and signed again with `key`.
fn restated(
    receipt: &Receipt,
    key: &ed25519_dalek::SigningKey,
    edit: impl Fn(&mut Statement),
) -> Receipt {
    let mut statement: Statement = serde_json::from_str(&receipt.statement).unwrap();
    edit(&mut statement);
    let text = statement.to_text();
    Receipt {
        statement_signature: b64(&key.sign(&Statement::signed_message(&text)).to_bytes()),
        statement: text,
        ..receipt.clone()
    }
}

/// The real executor with `people`'s approver lines (passkeys required unless `trial`),
/// fenced to the sandbox team, running.
async fn running(people: Vec<String>, trial: bool) -> Harness {
    let mut h = Harness::prepare(Setup {
        extra_key_lines: people,
        trial,
        ..Setup::default()
    })
    .await;
    h.setup.allowlist = Some(sandbox_devices(&h.sim));
    h.spawn();
    h.wait_ready().await;
    h
}

/// Claims to start recording in the sandbox's first room, as proposal `proposal`.
async fn start_recording(h: &Harness, proposal: u64) -> ApprovalClaims {
    let device = sandbox_devices(&h.sim)[0].clone();
    let c = h
        .claims(
            "batch_recording",
            &json!({"action": "start", "device_ids": [format!("{device}-1")]}),
        )
        .await;
    ApprovalClaims {
        proposal_id: proposal,
        ..c
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_done_change_has_a_receipt_that_verifies_offline_and_each_tampering_is_caught() {
    let mut ana = SoftPasskey::es256(1);
    let mut ana_backup = SoftPasskey::es256(2);
    let ben = SoftPasskey::es256(3);
    let h = running(
        vec![
            ana.person_line("ana", "Ana Gómez"),
            ana_backup.person_line("ana", "Ana Gómez"),
            ben.person_line("ben", "Ben Ruiz"),
        ],
        false,
    )
    .await;
    let c = start_recording(&h, 41).await;
    let response = h.execute(sign_with_passkeys(&c, 7, &mut [&mut ana])).await;
    assert!(
        matches!(&response, Some(Response::Executed(o)) if o.kind == OutcomeKind::Done),
        "{response:?}\n{}",
        h.log_text()
    );

    let key_out = h.cli(&["receipt", "--key"], None);
    assert!(key_out.status.success(), "{}", text(&key_out));
    let key = String::from_utf8(key_out.stdout).unwrap().trim().to_owned();
    let doctor = text(&h.cli(&["doctor"], None));
    assert!(
        doctor.contains(&format!("receipt key: public key {key}")),
        "{doctor}"
    );

    let out = h.cli(&["receipt", "41"], None);
    assert!(out.status.success(), "{}", text(&out));
    let receipt: Receipt = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(receipt.receipt_key, key);
    // The same receipt by its approval ID.
    let by_id = h.cli(
        &["receipt", &fleetwatch_protocol::hex::encode(&c.approval_id)],
        None,
    );
    assert_eq!(by_id.stdout, out.stdout);
    // And over the socket, as the page asks for it: the same document.
    let Some(Response::Receipt(Some(over_socket))) =
        h.request(&Request::Receipt(c.approval_id)).await
    else {
        panic!("no receipt over the socket")
    };
    assert_eq!(format!("{over_socket}\n").as_bytes(), out.stdout.as_slice());

    let good = verify(&h, &receipt, &key, None);
    let said = text(&good);
    assert!(good.status.success(), "{said}");
    for words in [
        "batch_recording",
        "proposal #41",
        "Ana Gómez (ana",
        "1 person(s) required",
        "Outcome: done",
        "Verified:",
    ] {
        assert!(said.contains(words), "{words:?} in {said}");
    }

    let signer = receipt_signing_key(&h.state);
    let mut claims = unb64(&receipt.claims).unwrap();
    claims[10] ^= 1;
    let other_key = ed25519_dalek::SigningKey::from_bytes(&[42; 32]);
    let stranger = SoftPasskey::es256(9);
    let assertions_of_ana = {
        let bytes = unb64(&receipt.claims).unwrap();
        let mut again = receipt.clone();
        let extra = ana_backup.assert(&bytes);
        again
            .passkeys
            .push(fleetwatch_protocol::receipt::Assertion {
                credential_id: b64(&extra.credential_id),
                authenticator_data: b64(&extra.authenticator_data),
                client_data_json: b64(&extra.client_data_json),
                signature: b64(&extra.signature),
            });
        restated(&again, &signer, |s| s.quorum = 2)
    };
    let approver_file = std::fs::read_to_string(h.dir.path().join("etc/approvers.pub")).unwrap();
    let swapped_file = approver_file.replace(
        &ana.person_line("ana", "Ana Gómez"),
        &stranger.person_line("ana", "Ana Gómez"),
    );
    let cases: Vec<(&str, Receipt, String, Option<&str>, &str)> = vec![
        (
            "one byte of the claims",
            Receipt {
                claims: b64(&claims),
                ..receipt.clone()
            },
            key.clone(),
            None,
            "The assistant's signature over the claims does not hold",
        ),
        (
            "a removed assertion",
            Receipt {
                passkeys: Vec::new(),
                ..receipt.clone()
            },
            key.clone(),
            None,
            "was not met by distinct persons",
        ),
        (
            "an approver line swapped in the receipt",
            Receipt {
                approvers: receipt
                    .approvers
                    .iter()
                    .map(|l| {
                        if l.starts_with("approver") {
                            stranger.person_line("ana", "Ana Gómez")
                        } else {
                            l.clone()
                        }
                    })
                    .collect(),
                ..receipt.clone()
            },
            key.clone(),
            None,
            "is not in the approver file",
        ),
        (
            "the person's key swapped in the approver file",
            receipt.clone(),
            key.clone(),
            Some(&swapped_file),
            "A passkey assertion does not hold",
        ),
        (
            "the outcome changed",
            Receipt {
                statement: receipt.statement.replace("\"done\"", "\"failed\""),
                ..receipt.clone()
            },
            key.clone(),
            None,
            "is not signed by the receipt key given",
        ),
        (
            "an audit row changed",
            {
                let mut r = receipt.clone();
                r.audit[0].fields[6].push_str(" and more");
                r
            },
            key.clone(),
            None,
            "does not match its chain hash",
        ),
        (
            "the statement signed by another key",
            restated(&receipt, &other_key, |_| {}),
            key.clone(),
            None,
            "is not signed by the receipt key given",
        ),
        (
            "a quorum of two met by one person",
            assertions_of_ana,
            key.clone(),
            None,
            "(2 person(s)) was not met by distinct persons",
        ),
    ];
    for (case, tampered, key, approvers, reason) in cases {
        let out = verify(&h, &tampered, &key, approvers);
        let said = text(&out);
        assert!(!out.status.success(), "{case}: accepted\n{said}");
        assert!(said.contains(reason), "{case}: {reason:?} not in\n{said}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_change_has_no_receipt_and_the_command_says_why() {
    let h = running(Vec::new(), true).await;
    let stale = shifted(&start_recording(&h, 7).await, -3600);
    let response = h.execute(sign(&stale, 7)).await;
    assert!(
        matches!(response, Some(Response::Refused(_))),
        "{response:?}"
    );
    assert_eq!(
        h.request(&Request::Receipt(stale.approval_id)).await,
        Some(Response::Receipt(None))
    );
    let out = h.cli(&["receipt", "7"], None);
    let said = text(&out);
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains("no receipt") && said.contains("refused"),
        "{said}"
    );
    // A proposal that never reached the executor has none either, in words.
    let out = h.cli(&["receipt", "99"], None);
    assert!(!out.status.success());
    assert!(text(&out).contains("no receipt"), "{}", text(&out));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_change_whose_result_is_unknown_has_a_receipt_that_says_unknown() {
    let mut ana = SoftPasskey::es256(4);
    let h = running(vec![ana.person_line("ana", "Ana Gómez")], false).await;
    let c = start_recording(&h, 12).await;
    // The write's answer cannot be read: whether it ran is not known.
    h.sim.set_fault(
        "batch_recording",
        fleetwatch_sim::Fault::Text("ok, probably".into()),
    );
    let response = h.execute(sign_with_passkeys(&c, 7, &mut [&mut ana])).await;
    assert!(
        matches!(&response, Some(Response::Executed(o)) if o.kind == OutcomeKind::Unknown),
        "{response:?}\n{}",
        h.log_text()
    );
    let key = text(&h.cli(&["receipt", "--key"], None)).trim().to_owned();
    let out = h.cli(&["receipt", "12"], None);
    assert!(out.status.success(), "{}", text(&out));
    let receipt: Receipt = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        receipt.statement.contains("\"outcome\":\"unknown\""),
        "{}",
        receipt.statement
    );
    let checked = verify(&h, &receipt, &key, None);
    let said = text(&checked);
    assert!(checked.status.success(), "{said}");
    assert!(said.contains("Outcome: unknown"), "{said}");
    assert!(said.contains("Ana Gómez (ana"), "{said}");
}

/// As an administrator runs them after an install: root, the executor's state belonging to the
/// service's own user. `receipt N`, `receipt --key`, `audit show` and `approvers list` work as
/// written, act as the state folder's owner (nothing in it changes hands), and a reader that
/// stops early (`… | head -1`) ends the command quietly.
#[tokio::test(flavor = "multi_thread")]
async fn root_runs_the_readmes_commands_on_the_services_state_as_its_owner() {
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
    if rustix::process::geteuid().as_raw() != 0 {
        eprintln!(
            "SKIPPED root_runs_the_readmes_commands_on_the_services_state_as_its_owner: needs root"
        );
        return;
    }
    let mut h = running(Vec::new(), true).await;
    let c = start_recording(&h, 5).await;
    let response = h.execute(sign(&c, 7)).await;
    assert!(
        matches!(&response, Some(Response::Executed(o)) if o.kind == OutcomeKind::Done),
        "{response:?}"
    );
    h.kill();
    // The service's user owns its state, as systemd's StateDirectory= makes it; the folders
    // above it let that user through, as /var/lib does.
    let service = 4242;
    let owned = |path: &Path| {
        rustix::fs::chown(
            path,
            Some(rustix::fs::Uid::from_raw(service)),
            Some(rustix::fs::Gid::from_raw(service)),
        )
        .unwrap();
    };
    owned(&h.state);
    for entry in std::fs::read_dir(&h.state).unwrap() {
        owned(&entry.unwrap().path());
    }
    std::fs::set_permissions(h.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(
        h.dir.path().join("etc"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();

    for args in [
        &["receipt", "5"][..],
        &["receipt", "--key"],
        &["audit", "show"],
        &["approvers", "list"],
    ] {
        let out = h.cli(args, None);
        assert!(out.status.success(), "{args:?}: {}", text(&out));
        assert!(!text(&out).contains("chown"), "{args:?}: {}", text(&out));
    }
    let receipt: Receipt =
        serde_json::from_slice(&h.cli(&["receipt", "5"], None).stdout).expect("a receipt");
    assert!(receipt.statement.contains("done"), "{}", receipt.statement);
    // Nothing in the state folder changed hands, including anything a command made there.
    for entry in std::fs::read_dir(&h.state).unwrap() {
        let path = entry.unwrap().path();
        assert_eq!(
            std::fs::symlink_metadata(&path).unwrap().uid(),
            service,
            "{}",
            path.display()
        );
    }

    // A reader that stops after one line: no panic, success, nothing on standard error.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = h
        .command()
        .args(["audit", "show"])
        .stdin(std::process::Stdio::null())
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(out.stderr.is_empty(), "{}", text(&out));
}
