//! The confirm page in a real browser against a lying approval page: a stand-in for a
//! taken-over assistant shows the person one change (start recording in one room) and hands
//! the confirm page the claims of another (a reboot of another room). The confirm page, which
//! renders from the claims alone, names the change that would really be signed. (That the
//! executor refuses an assertion made on the assistant's own page is
//! `executor_passkeys::every_bad_assertion_is_refused_with_its_own_code`.)

use base64::Engine as _;
use fleetwatch_e2e::browser::{self, eval, text, wait_until};
use fleetwatch_e2e::confirm_page::ConfirmPage;
use fleetwatch_e2e::{Harness, Setup};
use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

#[tokio::test(flavor = "multi_thread")]
async fn a_lying_page_cannot_make_the_confirm_page_show_another_change() {
    let Some(browser) = browser::launch(&[]).await else {
        return;
    };
    // Change B, the one a taken-over assistant wants signed: a reboot of the third device.
    let (h, devices) = Harness::start_fenced(Setup::default()).await;
    let b = h
        .claims("batch_reboot", &json!({"device_ids": [devices[2]]}))
        .await;
    let b_room = fleetwatch_e2e::room_of(&b);
    let a_room = h
        .describe(
            "batch_recording",
            &json!({"action": "start", "device_ids": [format!("{}-1", devices[0])]}),
        )
        .await
        .devices[0]
        .name
        .clone();
    assert_ne!(a_room, b_room);
    let claims = base64::engine::general_purpose::STANDARD.encode(b.encode().expect("encode"));

    // The lying page: change A in its words, B's claims in its form. Its port is chosen before
    // the confirm page starts, which must be told the page's origin.
    let lying_port = fleetwatch_e2e::page::free_port();
    let confirm = ConfirmPage::start(&format!("http://localhost:{lying_port}")).await;
    let html = format!(
        "<!doctype html><meta charset=\"utf-8\"><title>approve</title>\
         <h1>Start recording in {a_room}</h1>\
         <form method=\"post\" action=\"{}/\" id=\"lie\">\
         <input type=\"hidden\" name=\"claims\" value=\"{claims}\">\
         <input type=\"hidden\" name=\"return\" value=\"a-1-00-00-00\">\
         <button type=\"submit\" id=\"approve\">Approve</button></form>",
        confirm.origin()
    );
    serve_at(lying_port, html).await;

    let tab = browser.page().await;
    tab.goto(format!("http://localhost:{lying_port}/"))
        .await
        .expect("goto");
    wait_until(&tab, "document.getElementById('approve')").await;
    assert!(text(&tab).await.contains(&a_room));
    browser::press_approve(&tab).await;
    wait_until(&tab, "document.getElementById('confirm-heading')").await;
    let shown = text(&tab).await;
    // What the person sees is what would be signed: B's tool and B's room, never A's.
    assert!(shown.contains("reboot the recorder"), "{shown}");
    assert!(
        shown.contains(&format!(
            "This change interrupts what is happening in “{b_room}”"
        )),
        "{shown}"
    );
    assert!(!shown.contains("start or stop recording"), "{shown}");
    assert!(!shown.contains(&a_room), "{shown}");
    // The only button that asks the passkey names B's room too.
    let button = eval(&tab, "document.getElementById('passkey').textContent").await;
    assert_eq!(
        button.as_str(),
        Some(
            format!(
                "Interrupt “{b_room}” ({}) to reboot the recorder: confirm with my passkey",
                devices[2]
            )
            .as_str()
        )
    );
    browser.close().await;
}

/// Read before it asks (DESIGN §9): the confirm page asks nothing when it opens, a calm change
/// included; a click that lands in its first second does nothing; once the page has been in
/// front of the person for a moment, its button (naming the change, the room and its ID) asks
/// the passkey, once.
#[tokio::test(flavor = "multi_thread")]
async fn the_confirm_page_asks_only_after_it_was_read_and_its_button_pressed() {
    use chromiumoxide::cdp::browser_protocol::page::AddScriptToEvaluateOnNewDocumentParams;
    let Some(browser) = browser::launch(&[]).await else {
        return;
    };
    let (h, devices) = Harness::start_fenced(Setup::default()).await;
    let c = h
        .claims(
            "batch_recording",
            &json!({"action": "start", "device_ids": [format!("{}-1", devices[0])]}),
        )
        .await;
    let room = fleetwatch_e2e::room_of(&c);
    let claims = base64::engine::general_purpose::STANDARD.encode(c.encode().expect("encode"));
    let page_port = fleetwatch_e2e::page::free_port();
    let confirm = ConfirmPage::start(&format!("http://localhost:{page_port}")).await;
    serve_at(page_port, sending_page(&confirm.origin(), &claims)).await;

    let tab = browser.page().await;
    // An authenticator with no credential: a request is answered at once, as refused.
    browser::virtual_authenticator(&tab).await;
    // Every passkey request the page makes is counted.
    tab.evaluate_on_new_document(AddScriptToEvaluateOnNewDocumentParams::new(
        "window.asked = 0; const realGet = navigator.credentials.get.bind(navigator.credentials); \
         navigator.credentials.get = (o) => { window.asked += 1; return realGet(o); };",
    ))
    .await
    .expect("counting script");

    // A click right after the page appears: several tries, since a busy machine may be slow to
    // click within the first second; the page's own clock says when the click landed.
    let mut early = false;
    for _ in 0..5 {
        send_to_confirm(&tab, page_port).await;
        tab.find_element("#passkey")
            .await
            .expect("passkey button")
            .click()
            .await
            .expect("click");
        let at = eval(&tab, "performance.now()")
            .await
            .as_f64()
            .unwrap_or(f64::MAX);
        if at < 900.0 {
            early = true;
            assert_eq!(
                eval(&tab, "window.asked").await,
                json!(0),
                "a click in the first second asked"
            );
            break;
        }
    }
    assert!(
        early,
        "no click landed within the first second in five tries"
    );
    let button = eval(&tab, "document.getElementById('passkey').textContent").await;
    assert_eq!(
        button.as_str(),
        Some(
            format!(
                "Start recording in “{room}” ({}): confirm with my passkey",
                devices[0]
            )
            .as_str()
        )
    );

    // Open, read, untouched: nothing is asked, and the button waits for the person.
    tokio::time::sleep(std::time::Duration::from_millis(2000)).await;
    assert_eq!(
        eval(&tab, "window.asked").await,
        json!(0),
        "asked without the button"
    );
    assert_eq!(
        eval(&tab, "document.getElementById('passkey').disabled").await,
        json!(true)
    );

    // The person moves to the button and presses it: one request, and the button waits for
    // its answer (the authenticator here holds no passkey, so none comes).
    browser::press_confirm(&tab).await;
    wait_until(&tab, "window.asked === 1").await;
    assert_eq!(
        eval(&tab, "document.getElementById('passkey').disabled").await,
        json!(true)
    );
    assert_eq!(h.writes(), 0);
    browser.close().await;
}

/// Names a person can read (DESIGN §9): a name with a direction override, one with zero-width
/// characters, a look-alike and a 5,000-character one are shown with what hides or reorders
/// spelled out and long text capped, each ID beside its room in order, and the page keeps its
/// width.
#[tokio::test(flavor = "multi_thread")]
async fn hostile_names_are_spelled_out_and_the_page_keeps_its_width() {
    let Some(browser) = browser::launch(&[]).await else {
        return;
    };
    let (h, devices) = Harness::start_fenced(Setup::default()).await;
    let hostile = [
        "Courtroom 4\u{202E}\u{200B}\u{200D} Bench\u{2066}".to_owned(),
        "\u{421}ourtroom 4".to_owned(),
        "W".repeat(5000),
    ];
    let tab = browser.page().await;
    for (id, name) in devices.iter().zip(&hostile) {
        assert!(h.sim.rename_device("sandbox", id, name), "rename {id}");
        let c = h
            .claims(
                "batch_recording",
                &json!({"action": "start", "device_ids": [format!("{id}-1")]}),
            )
            .await;
        let claims = base64::engine::general_purpose::STANDARD.encode(c.encode().expect("encode"));
        let page_port = fleetwatch_e2e::page::free_port();
        let confirm = ConfirmPage::start(&format!("http://localhost:{page_port}")).await;
        serve_at(page_port, sending_page(&confirm.origin(), &claims)).await;
        send_to_confirm(&tab, page_port).await;
        let button = eval(&tab, "document.getElementById('passkey').textContent")
            .await
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let page = text(&tab).await;
        let readable = fleetwatch_protocol::shown::readable(name, 120);
        for shown in [&button, &page] {
            assert!(
                !shown.contains(['\u{202E}', '\u{200B}', '\u{200D}', '\u{2066}']),
                "{shown}"
            );
            assert!(!shown.contains(&"W".repeat(200)), "a long name is capped");
            assert!(shown.contains(&format!("“{readable}” ({id})")), "{shown}");
        }
        // The page is as wide as the window, and the button inside it.
        let fits = eval(
            &tab,
            "document.documentElement.scrollWidth <= window.innerWidth && \
             document.getElementById('passkey').getBoundingClientRect().right <= \
             document.getElementById('confirm').getBoundingClientRect().right + 1",
        )
        .await;
        assert_eq!(fits, json!(true), "the page keeps its width for {readable}");
    }
    assert!(
        fleetwatch_protocol::shown::readable(&hostile[0], 120)
            .contains("Courtroom 4⟨U+202E⟩⟨U+200B⟩⟨U+200D⟩ Bench⟨U+2066⟩")
    );
    assert_eq!(h.writes(), 0);
    browser.close().await;
}

/// Enrolment makes only a passkey the authenticator keeps (a discoverable credential): the
/// confirm page asks without naming one, so any other could never approve. An authenticator
/// that cannot keep one enrols nothing, and the page says why.
#[tokio::test(flavor = "multi_thread")]
async fn an_authenticator_that_keeps_no_passkey_enrols_nothing() {
    let Some(browser) = browser::launch(&[]).await else {
        return;
    };
    let folder = tempfile::tempdir().expect("folder");
    let approvers = folder.path().join("approvers.pub");
    let enrolment = fleetwatch_e2e::enrol::start("bo", "Bo Li", &approvers);
    let tab = browser.page().await;
    browser::authenticator(&tab, false).await;
    tab.goto(enrolment.url.clone()).await.expect("goto");
    wait_until(&tab, "document.getElementById('start')").await;
    tab.find_element("#start")
        .await
        .expect("the enrol button")
        .click()
        .await
        .expect("click");
    wait_until(
        &tab,
        "document.getElementById('status').className === 'error'",
    )
    .await;
    let said = text(&tab).await;
    assert!(said.contains("keep a passkey on itself"), "{said}");
    drop(enrolment);
    assert!(
        std::fs::read_to_string(&approvers)
            .unwrap_or_default()
            .trim()
            .is_empty(),
        "nothing is enrolled"
    );
    browser.close().await;
}

/// Opens the stand-in approval page on `page_port`, presses its Approve, and waits on the
/// confirm page for its button.
async fn send_to_confirm(tab: &chromiumoxide::page::Page, page_port: u16) {
    tab.goto(format!("http://localhost:{page_port}/"))
        .await
        .expect("goto");
    browser::press_approve(tab).await;
    wait_until(tab, "document.getElementById('passkey')").await;
}

/// A stand-in for the approval page: one form that sends `claims` to the confirm page.
fn sending_page(confirm_origin: &str, claims: &str) -> String {
    format!(
        "<!doctype html><meta charset=\"utf-8\"><title>approve</title>\
         <form method=\"post\" action=\"{confirm_origin}/\">\
         <input type=\"hidden\" name=\"claims\" value=\"{claims}\">\
         <input type=\"hidden\" name=\"return\" value=\"a-1-00-00-00\">\
         <button type=\"submit\" id=\"approve\">Approve</button></form>"
    )
}

/// Serves `html` for every request on 127.0.0.1 and ::1 of `port`, until the test ends.
async fn serve_at(port: u16, html: String) {
    let v4 = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .expect("bind the lying page's port");
    let mut listeners = vec![v4];
    if let Ok(v6) = tokio::net::TcpListener::bind(("::1", port)).await {
        listeners.push(v6);
    }
    for listener in listeners {
        let html = html.clone();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let html = html.clone();
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
                        match stream.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    let response = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{html}",
                        html.len()
                    );
                    let _ = stream.write_all(response.as_bytes()).await;
                    let _ = stream.shutdown().await;
                });
            }
        });
    }
}
