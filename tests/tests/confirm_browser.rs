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
use fleetwatch_protocol::claims::NameKind;
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
    let b_room = b
        .names
        .iter()
        .find(|n| n.kind == NameKind::Device)
        .expect("B's room")
        .name
        .clone();
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
    tab.find_element("#approve")
        .await
        .expect("approve")
        .click()
        .await
        .expect("click");
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
        Some(format!("Interrupt “{b_room}”: confirm with my passkey").as_str())
    );
    browser.close().await;
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
