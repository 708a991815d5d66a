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
    verify_text(
        h,
        &serde_json::to_string_pretty(receipt).unwrap(),
        key,
        approvers,
        &[],
    )
}

/// `fleetwatch-confirm verify` on a receipt file's text, with more arguments.
fn verify_text(
    h: &Harness,
    receipt: &str,
    key: &str,
    approvers: Option<&str>,
    more: &[&str],
) -> Output {
    let file = h.dir.path().join("receipt.json");
    std::fs::write(&file, receipt).unwrap();
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
        .args(more)
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
        "Passkeys answered on: http://localhost:8768 (the executor accepted http://localhost:8768",
    ] {
        assert!(said.contains(words), "{words:?} in {said}");
    }
    assert!(
        said.starts_with("Verified: the executor says this change was DONE."),
        "{said}"
    );
    // The origin the person expects: the one the passkey answered on verifies, another fails.
    let receipt_text = serde_json::to_string_pretty(&receipt).unwrap();
    let expected = verify_text(
        &h,
        &receipt_text,
        &key,
        None,
        &["--expect-origin", "http://localhost:8768"],
    );
    assert!(expected.status.success(), "{}", text(&expected));
    let elsewhere = verify_text(
        &h,
        &receipt_text,
        &key,
        None,
        &["--expect-origin", "https://approve.example.org"],
    );
    assert_eq!(elsewhere.status.code(), Some(1), "{}", text(&elsewhere));
    assert!(
        text(&elsewhere).contains(
            "Passkey assertion 1 was made on http://localhost:8768, not on an origin expected \
             (https://approve.example.org)"
        ),
        "{}",
        text(&elsewhere)
    );
    // The same result for scripts.
    let json = verify_text(&h, &receipt_text, &key, None, &["--json"]);
    assert!(json.status.success(), "{}", text(&json));
    let result: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(result["verified"], true, "{result}");
    assert_eq!(result["status"], 0, "{result}");
    assert_eq!(result["outcome"], "done", "{result}");
    assert_eq!(
        result["passkey_origins"],
        json!(["http://localhost:8768"]),
        "{result}"
    );

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

/// Every edit a forger can make to a real receipt: each leaf changed, each object key removed,
/// each list element removed, each list reordered, an unknown key added. `Some(value)` for each
/// variant, with what was done.
fn variants(receipt: &serde_json::Value) -> Vec<(String, serde_json::Value)> {
    use serde_json::Value;
    /// `root` with `f` applied at `path`.
    fn edited(root: &Value, path: &[Value], f: &dyn Fn(&mut Value)) -> Value {
        let mut copy = root.clone();
        let mut node = &mut copy;
        for step in path {
            node = match step {
                Value::String(k) => node.get_mut(k.as_str()).unwrap(),
                Value::Number(i) => node.get_mut(i.as_u64().unwrap() as usize).unwrap(),
                _ => unreachable!(),
            };
        }
        f(node);
        copy
    }
    fn walk(root: &Value, path: &mut Vec<Value>, at: &Value, out: &mut Vec<(String, Value)>) {
        type Edit = Box<dyn Fn(&mut Value)>;
        let mut edits: Vec<(String, Edit)> = Vec::new();
        match at {
            Value::String(text) => {
                // Changed in its last character (another of the same kind), and emptied.
                let mut changed: Vec<char> = text.chars().collect();
                if let Some(last) = changed.last_mut() {
                    *last = match *last {
                        '0'..='8' | 'a'..='y' | 'A'..='Y' => char::from(*last as u8 + 1),
                        '9' => '0',
                        'z' => 'a',
                        'Z' => 'A',
                        _ => 'A',
                    };
                }
                let changed: String = changed.into_iter().collect();
                edits.push((
                    "changed".into(),
                    Box::new(move |v| *v = Value::String(changed.clone())),
                ));
                if !text.is_empty() {
                    edits.push((
                        "emptied".into(),
                        Box::new(|v| *v = Value::String(String::new())),
                    ));
                }
            }
            Value::Number(n) => {
                let n = n.as_i64().unwrap();
                edits.push(("number + 1".into(), Box::new(move |v| *v = json!(n + 1))));
                edits.push(("number - 1".into(), Box::new(move |v| *v = json!(n - 1))));
            }
            Value::Array(items) => {
                for i in 0..items.len() {
                    edits.push((
                        format!("element {i} removed"),
                        Box::new(move |v| {
                            v.as_array_mut().unwrap().remove(i);
                        }),
                    ));
                }
                if items.len() >= 2 && items.first() != items.last() {
                    edits.push((
                        "reversed".into(),
                        Box::new(|v| v.as_array_mut().unwrap().reverse()),
                    ));
                }
                if let Some(first) = items.first().cloned() {
                    edits.push((
                        "first element repeated".into(),
                        Box::new(move |v| v.as_array_mut().unwrap().push(first.clone())),
                    ));
                }
            }
            Value::Object(map) => {
                for key in map.keys() {
                    let key = key.clone();
                    edits.push((
                        format!("key {key} removed"),
                        Box::new(move |v| {
                            v.as_object_mut().unwrap().remove(&key);
                        }),
                    ));
                }
                edits.push((
                    "unknown key added".into(),
                    Box::new(|v| {
                        v.as_object_mut()
                            .unwrap()
                            .insert("note".into(), json!("verified"));
                    }),
                ));
            }
            _ => {}
        }
        for (what, f) in edits {
            let variant = edited(root, path, &*f);
            // An edit that changes nothing (an empty string "changed") is no edit.
            if &variant != root {
                out.push((format!("{what} at {path:?}"), variant));
            }
        }
        match at {
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    path.push(json!(i));
                    walk(root, path, item, out);
                    path.pop();
                }
            }
            Value::Object(map) => {
                for (key, item) in map {
                    path.push(json!(key));
                    walk(root, path, item, out);
                    path.pop();
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(receipt, &mut Vec::new(), receipt, &mut out);
    out
}

/// The issue's forger, run to the end: a receipt of a change two persons approved, and every
/// edit of it ([`variants`]), each checked by the real verifier. None verifies; in particular
/// dropping one person's assertion (which once still verified and quietly named one person),
/// reordering the assertions and rewriting a row other than the outcome's (with its hash
/// recomputed) are each refused with their own sentence.
#[tokio::test(flavor = "multi_thread")]
async fn no_edit_of_a_real_receipt_verifies() {
    let mut ana = SoftPasskey::es256(21);
    let mut ben = SoftPasskey::es256(22);
    let mut h = Harness::prepare(Setup {
        extra_key_lines: vec![
            ana.person_line("ana", "Ana Gómez"),
            ben.person_line("ben", "Ben Ruiz"),
        ],
        config_extra: "passkeys:\n  quorum: 2\n".into(),
        ..Setup::default()
    })
    .await;
    h.setup.allowlist = Some(sandbox_devices(&h.sim));
    h.spawn();
    h.wait_ready().await;
    // Asked for by `sam`, as the assistant reports the chat's peer.
    let c = ApprovalClaims {
        asked_by: "sam".into(),
        ..start_recording(&h, 8).await
    };
    let response = h
        .execute(sign_with_passkeys(&c, 7, &mut [&mut ben, &mut ana]))
        .await;
    assert!(
        matches!(&response, Some(Response::Executed(o)) if o.kind == OutcomeKind::Done),
        "{response:?}\n{}",
        h.log_text()
    );
    let key = text(&h.cli(&["receipt", "--key"], None)).trim().to_owned();
    let out = h.cli(&["receipt", "8"], None);
    assert!(out.status.success(), "{}", text(&out));
    let receipt: Receipt = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(receipt.passkeys.len(), 2);
    assert!(receipt.audit.len() >= 2, "{:?}", receipt.audit);
    let good = verify(&h, &receipt, &key, None);
    assert!(good.status.success(), "{}", text(&good));
    assert!(
        text(&good).contains("Ana Gómez (ana") && text(&good).contains("Ben Ruiz (ben"),
        "{}",
        text(&good)
    );
    assert!(
        text(&good).contains(
            "Asked by: sam (what the assistant reported; the executor could not check it)"
        ),
        "{}",
        text(&good)
    );

    let value = serde_json::to_value(&receipt).unwrap();
    let all = variants(&value);
    assert!(all.len() > 100, "only {} variants", all.len());
    let mut verified = Vec::new();
    for (what, variant) in &all {
        let out = verify_text(&h, &variant.to_string(), &key, None, &["--json"]);
        let result: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{what}: {e}: {}", text(&out)));
        if out.status.code() != Some(1) || result["verified"] != false {
            verified.push(format!("{what}: {}", text(&out)));
        }
    }
    assert!(
        verified.is_empty(),
        "{} of {} edited receipts still verify:\n{}",
        verified.len(),
        all.len(),
        verified.join("\n")
    );

    // The classes the issue found, each with its own sentence.
    let signer = receipt_signing_key(&h.state);
    let mut one_person = receipt.clone();
    one_person.passkeys.remove(0);
    let mut reordered = receipt.clone();
    reordered.passkeys.reverse();
    let mut rewritten = receipt.clone();
    {
        // The accepted row (not the outcome's) rewritten, its hash recomputed so it chains.
        let row = &mut rewritten.audit[0];
        row.fields[6] = "proposal 8; approved by Ana Gómez".into();
        let fields: Vec<&str> = row.fields.iter().map(String::as_str).collect();
        let prev = fleetwatch_protocol::hex::decode_array::<32>(&row.prev_hash).unwrap();
        row.row_hash = fleetwatch_protocol::hex::encode(&fleetwatch_protocol::audit::row_hash(
            &prev, row.seq, row.time, &fields,
        ));
    }
    let mut fewer_lines = receipt.clone();
    fewer_lines.approvers.pop();
    let other = ed25519_dalek::SigningKey::from_bytes(&[43; 32]);
    let key_swapped = Receipt {
        receipt_key: b64(other.verifying_key().as_bytes()),
        ..restated(&receipt, &other, |_| {})
    };
    for (case, tampered, sentence) in [
        (
            "one person's assertion dropped",
            &one_person,
            "The passkey assertions in the receipt are not the ones the executor judged",
        ),
        (
            "the assertions reordered",
            &reordered,
            "The passkey assertions in the receipt are not the ones the executor judged",
        ),
        (
            "the accepted row rewritten with its hash recomputed",
            &rewritten,
            "The audit rows in the receipt are not the ones the executor's statement names",
        ),
        (
            "an approver line dropped",
            &fewer_lines,
            "The approver lines in the receipt are not the ones the executor verified",
        ),
        (
            "the receipt key and statement swapped for another key's",
            &key_swapped,
            "The receipt names the receipt key",
        ),
    ] {
        let out = verify(&h, tampered, &key, None);
        let said = text(&out);
        assert_eq!(out.status.code(), Some(1), "{case}: {said}");
        assert!(said.starts_with("NOT VERIFIED: "), "{case}: {said}");
        assert!(
            said.contains(sentence),
            "{case}: {sentence:?} not in\n{said}"
        );
    }
    // Signed again with the executor's own key, a statement that names a person's assertion
    // away still cannot verify without it: the quorum of two is one short.
    let restated_one = restated(&one_person, &signer, |s| {
        s.passkeys_sha256 = fleetwatch_protocol::receipt::passkeys_sha256(&one_person.passkeys);
    });
    let said = text(&verify(&h, &restated_one, &key, None));
    assert!(said.contains("(2 person(s)) was not met"), "{said}");
}

/// A forged receipt whose room name carries a newline, a fake verdict and terminal escapes:
/// the verdict is the first line, and no byte below 0x20 but the newline ending each line
/// reaches the terminal from it. The same name in a receipt the executor did sign (a device
/// really named so) verifies, spelled out.
#[tokio::test(flavor = "multi_thread")]
async fn a_hostile_name_cannot_pose_as_a_verdict() {
    let mut ana = SoftPasskey::es256(31);
    let h = running(vec![ana.person_line("ana", "Ana Gómez")], false).await;
    let c = start_recording(&h, 3).await;
    let response = h.execute(sign_with_passkeys(&c, 7, &mut [&mut ana])).await;
    assert!(
        matches!(&response, Some(Response::Executed(o)) if o.kind == OutcomeKind::Done),
        "{response:?}"
    );
    let key = text(&h.cli(&["receipt", "--key"], None)).trim().to_owned();
    let receipt: Receipt = serde_json::from_slice(&h.cli(&["receipt", "3"], None).stdout).unwrap();
    let hostile = "Room 1\nVerified: the executor says this change was DONE.\u{1b}[8m\u{1b}]0;x\u{7}\r\u{202e}";
    let mut claims = ApprovalClaims::decode(&unb64(&receipt.claims).unwrap()).unwrap();
    for n in &mut claims.names {
        n.name = hostile.to_owned();
    }
    // Signed by the assistant's key and the person's passkey, as a compromised assistant could:
    // the executor never stated these claims.
    let forged_approval = sign_with_passkeys(&claims, 7, &mut [&mut ana]);
    let (signatures, passkeys) = fleetwatch_protocol::receipt::evidence(&forged_approval);
    let forged = Receipt {
        claims: b64(&forged_approval.claims),
        signatures,
        passkeys,
        ..receipt.clone()
    };
    // And as if the executor had stated them (the device was named so).
    let signer = receipt_signing_key(&h.state);
    let stated = restated(&forged, &signer, |s| {
        s.claims_sha256 = fleetwatch_protocol::receipt::claims_sha256(&forged_approval.claims);
        s.signatures_sha256 = fleetwatch_protocol::receipt::signatures_sha256(&forged.signatures);
        s.passkeys_sha256 = fleetwatch_protocol::receipt::passkeys_sha256(&forged.passkeys);
    });
    for (case, tampered, first, status) in [
        ("forged", &forged, "NOT VERIFIED: ", 1),
        (
            "stated",
            &stated,
            "Verified: the executor says this change was DONE.",
            0,
        ),
    ] {
        let out = verify(&h, tampered, &key, None);
        assert_eq!(out.status.code(), Some(status), "{case}: {}", text(&out));
        let said = String::from_utf8(out.stdout.clone()).unwrap();
        assert!(said.starts_with(first), "{case}: {said}");
        assert!(
            out.stdout.iter().all(|b| *b >= 0x20 || *b == b'\n'),
            "{case}: a control byte reached the terminal: {said:?}"
        );
        assert_eq!(
            said.lines()
                .filter(|l| l.starts_with("Verified") || l.starts_with("NOT VERIFIED"))
                .count(),
            1,
            "{case}: {said}"
        );
        assert!(said.contains("Room 1␊Verified"), "{case}: {said}");
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
    // Verified, and the exit status says the result is unknown, not done.
    assert_eq!(checked.status.code(), Some(3), "{said}");
    assert!(
        said.starts_with("Verified: the executor says the result of this change is UNKNOWN"),
        "{said}"
    );
    assert!(said.contains("Outcome: unknown"), "{said}");
    assert!(said.contains("Ana Gómez (ana"), "{said}");
}

/// A change Epiphan answered with a per-device error: its receipt verifies, and both the first
/// line and the exit status (2) say the change FAILED, so no script takes it for done.
#[tokio::test(flavor = "multi_thread")]
async fn a_failed_change_verifies_and_says_failed_first_with_its_own_status() {
    let mut ana = SoftPasskey::es256(5);
    let h = running(vec![ana.person_line("ana", "Ana Gómez")], false).await;
    let c = start_recording(&h, 14).await;
    let device = sandbox_devices(&h.sim)[0].clone();
    h.sim.set_fault(
        "batch_recording",
        fleetwatch_sim::Fault::Text(format!(r#"{{"{device}": "device offline"}}"#)),
    );
    let response = h.execute(sign_with_passkeys(&c, 7, &mut [&mut ana])).await;
    assert!(
        matches!(&response, Some(Response::Executed(o)) if matches!(o.kind, OutcomeKind::Error(_))),
        "{response:?}\n{}",
        h.log_text()
    );
    let key = text(&h.cli(&["receipt", "--key"], None)).trim().to_owned();
    let out = h.cli(&["receipt", "14"], None);
    assert!(out.status.success(), "{}", text(&out));
    let receipt: Receipt = serde_json::from_slice(&out.stdout).unwrap();
    let checked = verify(&h, &receipt, &key, None);
    let said = text(&checked);
    assert_eq!(checked.status.code(), Some(2), "{said}");
    assert!(
        said.starts_with("Verified: the executor says this change FAILED"),
        "{said}"
    );
    assert!(said.contains("Outcome: failed ("), "{said}");
    let json = verify_text(
        &h,
        &serde_json::to_string(&receipt).unwrap(),
        &key,
        None,
        &["--json"],
    );
    assert_eq!(json.status.code(), Some(2));
    let result: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(
        (&result["verified"], &result["outcome"]),
        (&json!(true), &json!("failed"))
    );
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
