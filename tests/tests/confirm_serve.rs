//! `fleetwatch-confirm serve` through the real binary: the confirm page renders a change from
//! the claims bytes alone (claims made by the real executor's describe, so the names are the
//! ones it read), computes the passkey challenge itself and points its one form at the approval
//! page's origin from its own configuration; claims it cannot read get no passkey button; a
//! request under another host name or from another origin is refused.

use base64::Engine as _;
use fleetwatch_e2e::confirm_page::ConfirmPage;
use fleetwatch_e2e::{Harness, Setup, sandbox_devices};
use fleetwatch_protocol::claims::ApprovalClaims;
use fleetwatch_protocol::passkey;
use serde_json::json;

const PAGE: &str = "http://localhost:47999";

/// The confirm page under test.
struct Confirm(ConfirmPage);

async fn start() -> Confirm {
    Confirm(ConfirmPage::start(PAGE).await)
}

impl Confirm {
    fn url(&self) -> String {
        format!("{}/", self.0.origin())
    }

    /// POSTs claims bytes as the approval page's hand-off does; the status, CSP and body.
    async fn post(&self, claims: &str, lang: &str) -> (u16, String, String) {
        let client = fleetwatch_e2e::http_client_builder()
            .build()
            .expect("client");
        let body = format!(
            "claims={}&return=ret-0123",
            claims
                .replace('+', "%2B")
                .replace('/', "%2F")
                .replace('=', "%3D")
        );
        let response = client
            .post(self.url())
            .header("origin", PAGE)
            .header("accept-language", lang)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .expect("answers");
        let status = response.status().as_u16();
        let csp = response
            .headers()
            .get("content-security-policy")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        (status, csp, response.text().await.expect("text"))
    }
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

async fn reboot_claims() -> (Harness, ApprovalClaims) {
    let (h, devices) = Harness::start_fenced(Setup::default()).await;
    let target = devices[2].clone();
    let c = h
        .claims("batch_reboot", &json!({"device_ids": [target]}))
        .await;
    (h, c)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_change_is_shown_from_the_claims_alone_in_both_languages() {
    let confirm = start().await;
    let (_h, c) = reboot_claims().await;
    // Who asked, as the assistant reported the chat's peer: shown, said as its report.
    let c = ApprovalClaims {
        asked_by: "sam".into(),
        ..c
    };
    let bytes = c.encode().expect("encode");
    let room = fleetwatch_e2e::room_of(&c);
    let (status, csp, html) = confirm.post(&b64(&bytes), "en").await;
    assert_eq!(status, 200, "{html}");
    assert!(html.contains("Proposal #1: reboot the recorder"), "{html}");
    assert!(html.contains(&room), "{html}");
    assert!(
        html.contains(&format!(
            "This change interrupts what is happening in “<bdi>{room}</bdi>”"
        )),
        "{html}"
    );
    assert!(html.contains("device_ids: "), "{html}");
    assert!(
        html.contains(
            "<p id=\"asked-by\">Asked by sam, as the assistant reports it (the executor cannot \
             check this).</p>"
        ),
        "{html}"
    );
    // The challenge is the protocol's, over exactly these bytes; the form goes to the page
    // origin from the program's configuration.
    let challenge = passkey::challenge_base64url(&bytes);
    assert!(
        html.contains(&format!("data-challenge=\"{challenge}\"")),
        "{html}"
    );
    assert!(
        html.contains(&format!("action=\"{PAGE}/confirmed\"")),
        "{html}"
    );
    assert!(html.contains(&format!("data-expires=\"{}\"", c.expires_at)));
    // The passkey is asked only by the button, which names what is interrupted, the room and
    // its ID, and arrives disabled (the script enables it once the page has been read).
    assert!(!html.contains("data-ask"), "{html}");
    let target = &c.targets[0];
    assert!(
        html.contains(&format!(
            "<button type=\"button\" id=\"passkey\" disabled>Interrupt “<bdi>{room}</bdi>” ({target}) \
             to reboot the recorder: confirm with my passkey</button>"
        )),
        "{html}"
    );
    assert!(csp.contains(&format!("form-action {PAGE}")), "{csp}");
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    let (_, _, html) = confirm.post(&b64(&bytes), "es-ES,es;q=0.9").await;
    assert!(
        html.contains("Propuesta n.º 1: reiniciar el grabador"),
        "{html}"
    );
    assert!(html.contains("Este cambio interrumpe"), "{html}");
    assert!(html.contains("Lo pidió sam, según el asistente"), "{html}");
    assert!(
        html.contains(&format!(
            "Interrumpir «<bdi>{room}</bdi>» ({target}) para reiniciar el grabador: confirmar con \
             mi passkey"
        )),
        "{html}"
    );
}

/// A calm change is not asked on load either: its button names the change and the room.
#[tokio::test(flavor = "multi_thread")]
async fn a_calm_change_asks_only_by_its_button() {
    let confirm = start().await;
    let (h, devices) = Harness::start_fenced(Setup::default()).await;
    let c = h
        .claims(
            "batch_recording",
            &json!({"action": "start", "device_ids": [format!("{}-1", devices[0])]}),
        )
        .await;
    let (status, _, html) = confirm.post(&b64(&c.encode().expect("encode")), "en").await;
    assert_eq!(status, 200, "{html}");
    assert!(!html.contains("data-ask"), "{html}");
    assert!(!html.contains("id=\"disruptive\""), "{html}");
    let room = &fleetwatch_e2e::room_of(&c);
    assert!(
        html.contains(&format!(
            "<button type=\"button\" id=\"passkey\" disabled>Start recording in “<bdi>{room}</bdi>” \
             ({}): confirm with my passkey</button>",
            devices[0]
        )),
        "{html}"
    );
}

/// Claims past their expiry: the page says they expired and offers no button.
#[tokio::test(flavor = "multi_thread")]
async fn expired_claims_are_said_so_and_get_no_button() {
    let confirm = start().await;
    let (_h, c) = reboot_claims().await;
    let expired = ApprovalClaims {
        expires_at: jiff::Timestamp::now().as_second() - 1,
        ..c
    };
    let bytes = expired.encode().expect("encode");
    let (status, _, html) = confirm.post(&b64(&bytes), "en").await;
    assert_eq!(status, 200, "{html}");
    assert!(html.contains("This approval has expired"), "{html}");
    assert!(html.contains("This approval expired at"), "{html}");
    assert!(!html.contains("id=\"passkey\""), "{html}");
    assert!(!html.contains("data-challenge"), "{html}");
    let (_, _, html) = confirm.post(&b64(&bytes), "es").await;
    assert!(html.contains("ha caducado"), "{html}");
    assert!(!html.contains("id=\"passkey\""), "{html}");
}

#[tokio::test(flavor = "multi_thread")]
async fn claims_that_cannot_be_shown_in_full_get_no_passkey_button() {
    let confirm = start().await;
    let (_h, c) = reboot_claims().await;
    // Not claims at all.
    let (status, _, html) = confirm.post(&b64(b"not claims"), "en").await;
    assert_eq!(status, 200);
    assert!(html.contains("cannot be read"), "{html}");
    assert!(!html.contains("id=\"passkey\""), "{html}");
    // Claims whose target carries no name: shown, but not confirmable, and why.
    let unnamed = ApprovalClaims {
        names: Vec::new(),
        ..c.clone()
    };
    let (_, _, html) = confirm
        .post(&b64(&unnamed.encode().expect("encode")), "en")
        .await;
    assert!(html.contains("carries no name"), "{html}");
    assert!(!html.contains("id=\"passkey\""), "{html}");
    // Claims checked against another policy than this page's: not confirmable, and why.
    let other_policy = ApprovalClaims {
        policy_digest: [0x5a; 32],
        ..c.clone()
    };
    let (_, _, html) = confirm
        .post(&b64(&other_policy.encode().expect("encode")), "en")
        .await;
    assert!(html.contains("another tool policy"), "{html}");
    assert!(!html.contains("id=\"passkey\""), "{html}");
    // A tool this page cannot put in words.
    let unknown = ApprovalClaims {
        tool: "factory_reset".into(),
        ..c.clone()
    };
    let (_, _, html) = confirm
        .post(&b64(&unknown.encode().expect("encode")), "en")
        .await;
    assert!(html.contains("cannot show the tool"), "{html}");
    assert!(!html.contains("id=\"passkey\""), "{html}");
}

#[tokio::test(flavor = "multi_thread")]
async fn another_host_another_origin_and_a_get_change_nothing() {
    let confirm = start().await;
    let client = fleetwatch_e2e::http_client_builder()
        .build()
        .expect("client");
    // Reached under another name (DNS rebinding): refused.
    let status = client
        .get(format!("http://127.0.0.1:{}/", confirm.0.port))
        .send()
        .await
        .expect("answers")
        .status();
    assert_eq!(status.as_u16(), 421);
    // A post from another origin (the approval page opened as 127.0.0.1, say): refused, and
    // told in the browser's language which address works.
    for (lang, words) in [("en", "instead and approve"), ("es", "y aprueba allí")] {
        let response = client
            .post(confirm.url())
            .header("origin", "http://127.0.0.1:8767")
            .header("accept-language", lang)
            .header("content-type", "application/x-www-form-urlencoded")
            .body("claims=AAAA&return=x")
            .send()
            .await
            .expect("answers");
        assert_eq!(response.status().as_u16(), 403);
        let text = response.text().await.expect("text");
        assert!(
            text.contains(words) && text.contains(&format!("{PAGE}/")),
            "{text}"
        );
    }
    // A GET shows nothing to confirm.
    let html = fleetwatch_e2e::http_get(confirm.url())
        .await
        .expect("answers")
        .text()
        .await
        .expect("text");
    assert!(html.contains("Nothing to confirm"), "{html}");
    assert!(!html.contains("<form"), "{html}");
    let status = fleetwatch_e2e::http_get(format!("{}other", confirm.url()))
        .await
        .expect("answers")
        .status();
    assert_eq!(status.as_u16(), 404);
}

/// Outside the trial mode every approval is confirmed on the confirm page, so the assistant's
/// `doctor` fails while none answers at its origin, and passes once one does.
#[tokio::test(flavor = "multi_thread")]
async fn the_assistants_doctor_checks_that_the_confirm_page_answers() {
    use fleetwatch_e2e::authenticator::SoftPasskey;
    let state = fleetwatch_e2e::page::AssistantState::new();
    let (h, devices) = Harness::start_fenced(Setup {
        extra_key_lines: vec![
            state.key_line.clone(),
            SoftPasskey::es256(31).person_line("ana", "Ana Gómez"),
        ],
        trial: false,
        ..Setup::default()
    })
    .await;
    let doctor = |origin: &str| {
        let out = state
            .command()
            .arg("doctor")
            .env("FLEETWATCH_EXECUTOR_SOCKET", &h.socket)
            .env("FLEETWATCH_WRITE_DEVICE_IDS", devices.join(","))
            .env("FLEETWATCH_CONFIRM_ORIGIN", origin)
            .output()
            .expect("doctor runs");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .find(|l| l.contains("confirm page"))
            .unwrap_or_default()
            .to_owned()
    };
    let nobody = format!("http://localhost:{}", fleetwatch_e2e::page::free_port());
    let said = doctor(&nobody);
    assert!(
        said.starts_with("FAIL") && said.contains("fleetwatch-confirm serve"),
        "{said}"
    );
    let confirm = ConfirmPage::start("http://localhost:8767").await;
    let said = doctor(&confirm.origin());
    assert!(said.starts_with("OK"), "{said}");
}

/// The executor's `doctor` checks the same at every origin it accepts assertions from.
#[tokio::test(flavor = "multi_thread")]
async fn the_executors_doctor_checks_that_the_confirm_page_answers() {
    use fleetwatch_e2e::authenticator::SoftPasskey;
    let confirm = ConfirmPage::start("http://localhost:8767").await;
    let nobody = format!("http://localhost:{}", fleetwatch_e2e::page::free_port());
    for (origin, says) in [(nobody.as_str(), "FAIL"), (confirm.origin().as_str(), "OK")] {
        let mut h = Harness::prepare(Setup {
            extra_key_lines: vec![SoftPasskey::es256(31).person_line("ana", "Ana Gómez")],
            config_extra: format!("passkeys:\n  origins: [\"{origin}\"]\n"),
            trial: false,
            ..Setup::default()
        })
        .await;
        h.setup.allowlist = Some(sandbox_devices(&h.sim));
        let out = h.cli(&["doctor"], None);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let said = text
            .lines()
            .find(|l| l.contains("confirm page"))
            .unwrap_or_default();
        assert!(said.starts_with(says), "{origin}: {text}");
        assert!(said.contains(origin), "{said}");
        // And whether its port is held by the owner alone, as each Execute checks.
        let held = text
            .lines()
            .find(|l| l.contains("confirm origin held"))
            .unwrap_or_default();
        assert!(held.starts_with(says), "{origin}: {text}");
        if says == "FAIL" {
            assert!(!out.status.success(), "{text}");
            assert!(said.contains("fleetwatch-confirm.socket"), "{said}");
        }
    }
}

/// A stream change names its destination and where it sends: the URL's host, signed with the
/// name by the executor, and never the rest of the URL, which may hold the key.
#[tokio::test(flavor = "multi_thread")]
async fn a_stream_change_shows_the_destination_by_name_and_host() {
    let confirm = start().await;
    let (h, devices) = Harness::start_fenced(Setup::default()).await;
    let (stream, name) = h
        .sim
        .stream_endpoints("sandbox")
        .into_iter()
        .next()
        .expect("a destination");
    let c = h
        .claims(
            "start_stream_endpoint",
            &json!({"stream_id": stream, "device_id": devices[0], "channel_id": "1"}),
        )
        .await;
    let (status, _, html) = confirm.post(&b64(&c.encode().expect("encode")), "en").await;
    assert_eq!(status, 200, "{html}");
    assert!(
        html.contains(&format!(
            "to “<bdi>{name} (live.sandbox.example.net)</bdi>”"
        )),
        "{html}"
    );
    assert!(
        !html.contains("sbx-55aa-key") && !html.contains("/app/"),
        "{html}"
    );
}
