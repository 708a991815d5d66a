//! `fleetwatch-confirm enrol` through the real binary: the one-shot page answers only at its
//! token; a passkey that proves itself is printed as an approver line on standard output and
//! nowhere else; `approvers add -` installs it and the real executor then writes once with it;
//! a proof by another key prints nothing; the page closes after one enrolment.

use fleetwatch_e2e::authenticator::SoftPasskey;
use fleetwatch_e2e::enrol::{self, answer, page, post};
use fleetwatch_e2e::{Harness, Setup, sandbox_devices, sign_with_passkeys};
use fleetwatch_protocol::passkey::{Backup, PasskeyRecord};
use fleetwatch_protocol::wire::{OutcomeKind, Response};
use serde_json::json;

fn no_file() -> std::path::PathBuf {
    std::path::PathBuf::from("/nonexistent/approvers.pub")
}

#[tokio::test(flavor = "multi_thread")]
async fn an_enrolled_line_installs_with_approvers_add_and_approves_one_write() {
    let mut key = SoftPasskey::es256(41);
    let enrolment = enrol::start("ana", "Ana Gómez", &no_file());
    let html = page(&enrolment).await;
    assert!(html.contains("Ana Gómez") && html.contains("ana"), "{html}");
    let (status, reply) = post(&enrolment, &answer(&html, &enrolment.origin(), &key, &key)).await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["ok"], json!(true));
    let fingerprint = key.record("x").fingerprint().to_string();
    assert!(
        reply["message"]
            .as_str()
            .unwrap_or_default()
            .contains(&fingerprint),
        "{reply}"
    );
    let url = enrolment.url.clone();
    let (ok, out, err) = enrolment.finish();
    assert!(ok, "{err}");
    // The line, and only the line, on standard output.
    let line = out.trim();
    assert_eq!(out.lines().count(), 1, "{out}");
    let record = PasskeyRecord::parse_line(line).expect("an approver line");
    assert_eq!(record.person(), "ana");
    assert_eq!(record.name(), "Ana Gómez");
    assert_eq!(record.backup(), Backup::DeviceBound);
    assert_eq!(record.spki(), key.spki().as_slice());
    assert!(
        err.contains(&format!("fingerprint: {fingerprint}")),
        "{err}"
    );
    assert!(!err.contains(line), "the line goes to standard output only");
    // The page is closed.
    assert!(
        fleetwatch_e2e::http_get(&url).await.is_err(),
        "still serving"
    );

    // Installed through the pipe an administrator uses; the executor then needs the person.
    let mut h = Harness::prepare(Setup::default()).await;
    h.setup.allowlist = Some(sandbox_devices(&h.sim));
    let added = h.cli(&["approvers", "add", "-"], Some(&out));
    assert!(
        added.status.success(),
        "{}",
        String::from_utf8_lossy(&added.stderr)
    );
    assert!(String::from_utf8_lossy(&added.stdout).contains(&fingerprint));
    h.spawn();
    h.wait_ready().await;
    let device = sandbox_devices(&h.sim)[0].clone();
    let c = h
        .claims(
            "batch_recording",
            &json!({"action": "start", "device_ids": [format!("{device}-1")]}),
        )
        .await;
    let writes = h.writes();
    let response = h.execute(sign_with_passkeys(&c, 7, &mut [&mut key])).await;
    let Some(Response::Executed(outcome)) = &response else {
        panic!("{response:?}\n{}", h.log_text())
    };
    assert_eq!(outcome.kind, OutcomeKind::Done);
    assert_eq!(h.writes(), writes + 1, "exactly one write");
}

#[tokio::test(flavor = "multi_thread")]
async fn only_the_token_path_answers() {
    let enrolment = enrol::start("bo", "Bo Díaz", &no_file());
    let origin = enrolment.origin();
    for path in ["/", "/enrol", "/enrol/wrongtoken", "/favicon.ico"] {
        let status = fleetwatch_e2e::http_get(format!("{origin}{path}"))
            .await
            .expect("answers")
            .status()
            .as_u16();
        assert_eq!(status, 404, "{path}");
    }
    let mut wrong = enrolment.url.clone();
    wrong.push('x');
    let status = fleetwatch_e2e::http_get(&wrong)
        .await
        .expect("answers")
        .status();
    assert_eq!(status.as_u16(), 404);
    // A request under another host name (DNS rebinding) is not answered with the page.
    let client = fleetwatch_e2e::http_client_builder()
        .build()
        .expect("client");
    let status = client
        .get(enrolment.url.replace("localhost", "127.0.0.1"))
        .send()
        .await
        .expect("answers")
        .status();
    assert_eq!(status.as_u16(), 421);
    // A post from another origin is refused and does not use up the one attempt.
    let key = SoftPasskey::es256(42);
    let html = page(&enrolment).await;
    let reply = client
        .post(&enrolment.url)
        .header("origin", "http://localhost:1")
        .header("content-type", "application/json")
        .body(answer(&html, &origin, &key, &key).to_string())
        .send()
        .await
        .expect("answers");
    assert_eq!(reply.status().as_u16(), 403);
    let (status, _) = post(&enrolment, &answer(&html, &origin, &key, &key)).await;
    assert_eq!(status, 200);
    let (ok, out, _) = enrolment.finish();
    assert!(ok && out.starts_with("approver bo "), "{out}");
}

/// Another local user who opens more connections than the page has slots and sends nothing
/// does not keep the person out: beyond a few, connections that have not shown the token path
/// are closed (the oldest first), and the page still answers at its token.
#[tokio::test(flavor = "multi_thread")]
async fn idle_connections_without_the_token_cannot_hold_the_page() {
    use std::io::Read as _;
    let enrolment = enrol::start("cy", "Cy Ortiz", &no_file());
    let port: u16 = enrolment
        .origin()
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("a port");
    // More than the page's 64 slots, each sending nothing.
    let idle: Vec<std::net::TcpStream> = (0..80)
        .map(|_| std::net::TcpStream::connect(("127.0.0.1", port)).expect("connects"))
        .collect();
    let html = page(&enrolment).await;
    assert!(html.contains("Cy Ortiz"), "{html}");
    // The first ones were closed by the page, long before any deadline (the enrolment's is
    // ten minutes; the wait here allows for a machine busy with other tests, seen once).
    let mut first = &idle[0];
    first
        .set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .expect("timeout");
    let mut byte = [0u8; 1];
    assert!(
        match first.read(&mut byte) {
            Ok(n) => n == 0,
            Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
        },
        "an idle connection is still held (a read that times out is not a close)"
    );
    drop(idle);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_proof_by_another_key_prints_no_line_and_closes() {
    let made = SoftPasskey::es256(43);
    let other = SoftPasskey::es256(44);
    let enrolment = enrol::start("cy", "Cy Ng", &no_file());
    let html = page(&enrolment).await;
    let origin = enrolment.origin();
    let url = enrolment.url.clone();
    let (status, reply) = post(&enrolment, &answer(&html, &origin, &made, &other)).await;
    assert_eq!(status, 422, "{reply}");
    assert_eq!(reply["ok"], json!(false));
    assert!(
        reply["message"]
            .as_str()
            .unwrap_or_default()
            .contains("did not verify"),
        "{reply}"
    );
    let (ok, out, err) = enrolment.finish();
    assert!(!ok);
    assert!(out.is_empty(), "no line: {out}");
    assert!(
        err.contains("refused") && err.contains("did not verify"),
        "{err}"
    );
    // One attempt: the page is gone, so a second answer, even a good one, is not taken.
    let client = fleetwatch_e2e::http_client_builder()
        .build()
        .expect("client");
    let again = client
        .post(&url)
        .header("origin", &origin)
        .header("content-type", "application/json")
        .body(answer(&html, &origin, &made, &made).to_string())
        .send()
        .await;
    assert!(again.is_err(), "{again:?}");
}

/// A change to the page's answer that must make the program refuse it.
type Spoil = Box<dyn Fn(&mut serde_json::Value, &str)>;

#[tokio::test(flavor = "multi_thread")]
async fn the_creation_is_checked_before_anything_is_printed() {
    let key = SoftPasskey::ed25519(45);
    let cases: Vec<(&str, Spoil)> = vec![
        (
            "a creation answered for another challenge",
            Box::new(|body, origin| {
                let other = fleetwatch_e2e::authenticator::client_data(
                    "webauthn.create",
                    &[9u8; 32],
                    origin,
                );
                body["create_client_data"] = json!(b64url(&other));
            }),
        ),
        (
            "an assertion offered as the creation",
            Box::new(|body, _| body["create_client_data"] = body["client_data"].clone()),
        ),
        (
            "a creation without user verification",
            Box::new(|body, _| {
                let data = enrol::creation_data(&SoftPasskey::ed25519(45), 0x41);
                body["create_authenticator_data"] = json!(b64url(&data));
            }),
        ),
        (
            "a creation naming another credential",
            Box::new(|body, _| {
                let data = enrol::creation_data(&SoftPasskey::ed25519(46), enrol::FLAGS_CREATE);
                body["create_authenticator_data"] = json!(b64url(&data));
            }),
        ),
    ];
    for (case, spoil) in cases {
        let enrolment = enrol::start("dee", "Dee", &no_file());
        let html = page(&enrolment).await;
        let origin = enrolment.origin();
        let mut body = answer(&html, &origin, &key, &key);
        spoil(&mut body, &origin);
        let (status, reply) = post(&enrolment, &body).await;
        assert_eq!(status, 422, "{case}: {reply}");
        let (ok, out, err) = enrolment.finish();
        assert!(!ok && out.is_empty(), "{case}: {out}");
        assert!(err.contains("refused"), "{case}: {err}");
    }
}

fn b64url(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}
