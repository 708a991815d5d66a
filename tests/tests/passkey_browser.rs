//! Passkeys made by a real browser: headless Chromium with its virtual authenticator (DevTools
//! protocol `WebAuthn` domain) enrols on a tiny page served at `http://localhost:<port>/` and
//! asserts over the challenge of some claims bytes; the protocol's verifier must accept exactly
//! that and refuse it for other claims bytes. No part of the assertion is made by this project.
//!
//! With `FLEETWATCH_WRITE_PASSKEY_RECORDINGS=<folder>` each recording is also written there as
//! JSON (the files under `protocol/tests/vectors/chromium-*.json` were made that way and are
//! verified offline by `protocol/tests/passkey_vectors.rs`).

use base64::Engine as _;
use chromiumoxide::cdp::js_protocol::runtime::EvaluateParams;
use chromiumoxide::page::Page;
use fleetwatch_e2e::browser;
use fleetwatch_protocol::claims::{ApprovalClaims, CLAIMS_VERSION, Slot};
use fleetwatch_protocol::passkey::{
    self, Algorithm, Approvers, Backup, PasskeyAssertion, PasskeyError, PasskeyRecord, RelyingParty,
};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// The page: enrolment and assertion exactly as the approval page will ask for them (RP ID
/// `localhost`, user verification required), returning the browser's bytes in base64url.
const PAGE: &str = r#"<!doctype html>
<meta charset="utf-8"><title>passkey</title>
<script>
const b64u = (buf) => btoa(String.fromCharCode(...new Uint8Array(buf)))
  .replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
const b64 = (buf) => btoa(String.fromCharCode(...new Uint8Array(buf)));
const fromB64u = (s) => Uint8Array.from(atob(s.replace(/-/g, "+").replace(/_/g, "/")), c => c.charCodeAt(0));
async function enrol(algs, name) {
  const cred = await navigator.credentials.create({ publicKey: {
    rp: { id: "localhost", name: "Fleetwatch" },
    user: { id: crypto.getRandomValues(new Uint8Array(16)), name, displayName: name },
    challenge: crypto.getRandomValues(new Uint8Array(32)),
    pubKeyCredParams: algs.map((alg) => ({ type: "public-key", alg })),
    authenticatorSelection: { userVerification: "required", residentKey: "required" },
    attestation: "none",
    timeout: 60000,
  }});
  return { id: b64u(cred.rawId), alg: cred.response.getPublicKeyAlgorithm(),
           spki: b64(cred.response.getPublicKey()) };
}
async function assertOver(challenge, id) {
  const a = await navigator.credentials.get({ publicKey: {
    rpId: "localhost",
    challenge: fromB64u(challenge),
    allowCredentials: [{ type: "public-key", id: fromB64u(id) }],
    userVerification: "required",
    timeout: 60000,
  }});
  return { id: b64u(a.rawId), authenticatorData: b64u(a.response.authenticatorData),
           clientDataJSON: b64u(a.response.clientDataJSON), signature: b64u(a.response.signature) };
}
window.ready = true;
</script>
<p>passkey test page</p>
"#;

/// Serves [`PAGE`] for every request on loopback until the test ends. Listens on 127.0.0.1 and,
/// when it can, on the same port of ::1, since the browser may resolve `localhost` to either.
async fn serve() -> u16 {
    let v4 = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = v4.local_addr().expect("addr").port();
    let mut listeners = vec![v4];
    if let Ok(v6) = tokio::net::TcpListener::bind(("::1", port)).await {
        listeners.push(v6);
    }
    for listener in listeners {
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
                        match stream.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    let ok = head.starts_with(b"GET / ");
                    let (status, body) = if ok {
                        ("200 OK", PAGE)
                    } else {
                        ("404 Not Found", "")
                    };
                    let response = format!(
                        "HTTP/1.1 {status}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = stream.write_all(response.as_bytes()).await;
                    let _ = stream.shutdown().await;
                });
            }
        });
    }
    port
}

/// Runs page script with a user gesture and waits for its promise.
async fn run(page: &Page, expression: &str) -> Value {
    let params = EvaluateParams::builder()
        .expression(expression)
        .await_promise(true)
        .user_gesture(true)
        .return_by_value(true)
        .build()
        .expect("evaluate params");
    page.evaluate(params)
        .await
        .unwrap_or_else(|e| panic!("{expression}: {e}"))
        .into_value()
        .expect("a JSON result")
}

fn b64url(text: &Value) -> Vec<u8> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(text.as_str().expect("a string"))
        .expect("base64url")
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn claims(proposal_id: u64) -> Vec<u8> {
    ApprovalClaims {
        version: CLAIMS_VERSION,
        approval_id: [0x5a; 16],
        proposal_id,
        tool: "batch_recording".to_owned(),
        arguments: r#"{"action":"start","channel_ids":["0123abcd-1"]}"#.to_owned(),
        targets: vec!["0123abcd".to_owned()],
        names: Vec::new(),
        fingerprint: r#"{"0123abcd":{"next_event_start":null,"online":true,"recording":false}}"#
            .to_owned(),
        schema_version: 1,
        policy_digest: [0x11; 32],
        slot: Slot::Sandbox,
        approved_at: 1_760_000_000,
        expires_at: 1_760_000_300,
        page_session: [0x22; 16],
        asked_by: String::new(),
    }
    .encode()
    .expect("claims encode")
}

struct Enrolled {
    record: PasskeyRecord,
}

async fn enrol(page: &Page, algorithms: &[Algorithm], name: &str) -> Enrolled {
    let cose: Vec<i32> = algorithms.iter().map(|a| a.cose()).collect();
    let result = run(page, &format!("enrol({}, {})", json!(cose), json!(name))).await;
    let algorithm = match result["alg"].as_i64() {
        Some(-7) => Algorithm::Es256,
        Some(-8) => Algorithm::Ed25519,
        other => panic!("the browser chose algorithm {other:?}"),
    };
    let spki = base64::engine::general_purpose::STANDARD
        .decode(result["spki"].as_str().expect("spki"))
        .expect("base64");
    let record = PasskeyRecord::for_person(
        &fleetwatch_e2e::authenticator::person_id_of(name),
        Backup::DeviceBound,
        algorithm,
        b64url(&result["id"]),
        spki,
        name,
    )
    .expect("the browser's public key makes a valid record");
    // The line the page would show is what an administrator installs.
    let parsed = PasskeyRecord::parse_line(&record.to_line()).expect("the line parses");
    assert_eq!(parsed, record);
    Enrolled { record }
}

async fn assertion(page: &Page, record: &PasskeyRecord, claims: &[u8]) -> PasskeyAssertion {
    let id = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(record.credential_id());
    let result = run(
        page,
        &format!(
            "assertOver({}, {})",
            json!(passkey::challenge_base64url(claims)),
            json!(id)
        ),
    )
    .await;
    let assertion = PasskeyAssertion {
        credential_id: b64url(&result["id"]),
        authenticator_data: b64url(&result["authenticatorData"]),
        client_data_json: b64url(&result["clientDataJSON"]),
        signature: b64url(&result["signature"]),
    };
    assert_eq!(assertion.credential_id, record.credential_id());
    assertion
}

#[tokio::test(flavor = "multi_thread")]
async fn chromium_virtual_authenticator_assertions_verify_only_for_their_claims() {
    let Some(browser) = browser::launch(&[]).await else {
        return;
    };
    let version = browser
        .browser
        .version()
        .await
        .map(|v| v.product)
        .unwrap_or_else(|_| "Chromium".to_owned());
    let port = serve().await;
    let origin = format!("http://localhost:{port}");
    let page = browser.page().await;
    page.goto(format!("{origin}/")).await.expect("goto");
    browser::wait_until(&page, "window.ready === true").await;

    browser::virtual_authenticator(&page).await;

    // Both algorithms offered, in both orders: the browser picks the first it supports.
    let first = enrol(&page, &[Algorithm::Es256, Algorithm::Ed25519], "Ana Gómez").await;
    assert_eq!(first.record.algorithm(), Algorithm::Es256);
    let second = enrol(&page, &[Algorithm::Ed25519, Algorithm::Es256], "Bo Li").await;
    println!(
        "{version}: offered Ed25519 first, the virtual authenticator made {}",
        second.record.algorithm()
    );

    let mut approvers = Approvers::default();
    approvers.add(first.record.clone()).expect("first enrolled");
    approvers
        .add(second.record.clone())
        .expect("second enrolled");
    let rp = RelyingParty::new(passkey::PRODUCTION_RP_ID, [origin.as_str()]);
    let record_dir = std::env::var_os("FLEETWATCH_WRITE_PASSKEY_RECORDINGS");

    let claims_bytes = claims(7);
    let other_claims = claims(8);
    for enrolled in [&first, &second] {
        let record = &enrolled.record;
        let a = assertion(&page, record, &claims_bytes).await;
        let verified = passkey::verify_assertion(&a, &claims_bytes, &approvers, &rp)
            .unwrap_or_else(|e| panic!("{}: {e}", record.algorithm()));
        assert_eq!(verified.credential_id(), record.credential_id());
        assert_eq!(verified.name(), record.name());
        assert_eq!(
            passkey::verify_assertion(&a, &other_claims, &approvers, &rp).map(|_| ()),
            Err(PasskeyError::ChallengeMismatch)
        );
        let elsewhere = RelyingParty::new("localhost", ["http://localhost:1"]);
        assert_eq!(
            passkey::verify_assertion(&a, &claims_bytes, &approvers, &elsewhere).map(|_| ()),
            Err(PasskeyError::OriginNotAllowed)
        );
        // A second assertion by the same authenticator counts up (or both stay zero).
        let again = assertion(&page, record, &claims_bytes).await;
        let again = passkey::verify_assertion(&again, &claims_bytes, &approvers, &rp)
            .expect("second assertion");
        assert!(passkey::counter_advances(
            verified.counter(),
            again.counter()
        ));

        if let Some(dir) = &record_dir {
            let recording = json!({
                "about": "An assertion made by Chromium's virtual authenticator (DevTools WebAuthn domain: ctap2, internal transport, resident key, user verification) on http://localhost:<port>/, over the passkey challenge of `claims`; written by tests/tests/passkey_browser.rs with FLEETWATCH_WRITE_PASSKEY_RECORDINGS.",
                "browser": version,
                "algorithm": record.algorithm().name(),
                "origin": origin,
                "record_line": record.to_line(),
                "claims": hex(&claims_bytes),
                "other_claims": hex(&other_claims),
                "credential_id": hex(&a.credential_id),
                "authenticator_data": hex(&a.authenticator_data),
                "client_data_json": hex(&a.client_data_json),
                "signature": hex(&a.signature),
            });
            let path = std::path::Path::new(dir)
                .join(format!("chromium-{}.json", record.algorithm().name()));
            std::fs::create_dir_all(dir).expect("recordings folder");
            std::fs::write(
                &path,
                serde_json::to_string_pretty(&recording).expect("json") + "\n",
            )
            .expect("recording written");
            println!("recording: {}", path.display());
        }
    }

    // Both passkeys on one approval are two people; the first one twice is one.
    let a1 = assertion(&page, &first.record, &claims_bytes).await;
    let a2 = assertion(&page, &second.record, &claims_bytes).await;
    let both = passkey::verify_assertions(&[a1.clone(), a2], &claims_bytes, &approvers, &rp)
        .expect("both verify");
    assert_eq!(both.require(2), Ok(()));
    let a1_again = assertion(&page, &first.record, &claims_bytes).await;
    let twice = passkey::verify_assertions(&[a1, a1_again], &claims_bytes, &approvers, &rp)
        .expect("both verify");
    assert_eq!(
        twice.require(2),
        Err(PasskeyError::QuorumNotMet { have: 1, need: 2 })
    );

    browser.close().await;
}
