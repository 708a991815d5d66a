//! The team's channel (`FLEETWATCH_NOTIFY_URL`): a local receiver records each message the
//! watcher and the sender make from the store — a change waiting, a second person needed, half
//! its lifetime, a decision — in each format, the retry after a 500, every attempt audited, and
//! nothing in a message but the words the page would show.

mod common;

use std::sync::{Arc, Mutex};

use fleetwatch::notify::{self, Format, NotifyConfig, Watcher};
use fleetwatch::store::{NewProposal, Store};
use fleetwatch_words::Lang;
use serde_json::{Value, json};

/// What the receiver was sent: content type, `Title` header, body.
type Received = Arc<Mutex<Vec<(String, String, String)>>>;

/// A receiver on loopback answering 500 to the first `failures` requests, then 200.
async fn receiver(failures: usize) -> (String, Received) {
    use axum::http::HeaderMap;
    let got: Received = Arc::default();
    let seen = Arc::clone(&got);
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: HeaderMap, body: String| {
            let seen = Arc::clone(&seen);
            async move {
                let header = |name: &str| {
                    headers
                        .get(name)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_owned()
                };
                let mut list = seen.lock().unwrap();
                list.push((header("content-type"), header("title"), body));
                if list.len() <= failures {
                    axum::http::StatusCode::INTERNAL_SERVER_ERROR
                } else {
                    axum::http::StatusCode::OK
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://127.0.0.1:{port}/hook"), got)
}

fn config(url: &str, format: Format) -> NotifyConfig {
    NotifyConfig {
        url: reqwest::Url::parse(url).unwrap(),
        format,
        page: "http://localhost:8767/".into(),
        lang: Lang::En,
    }
}

fn proposal(store: &mut Store, now: i64) -> u64 {
    store
        .insert_proposal_named(
            &NewProposal {
                tool: "batch_recording".into(),
                arguments: r#"{"action":"start","device_ids":["29034561234-1"]}"#.into(),
                targets: vec!["29034561234".into()],
                fingerprint: "{}".into(),
                schema_version: 1,
                policy_digest: [7; 32],
                slot: "sandbox".into(),
                reason: "stream_key=live_9f8e7d6c5b4a the lecture".into(),
            },
            &["Test Room A".to_owned()],
            "sam",
            now,
        )
        .unwrap()
}

#[tokio::test]
async fn every_message_class_in_order_with_a_retry_after_a_500_and_no_secret() {
    let (url, got) = receiver(1).await;
    let cfg = config(&url, Format::Json);
    let dir = tempfile::tempdir().unwrap();
    let store = Mutex::new(Store::open(dir.path()).unwrap());
    let policy = common::policy();
    let now = fleetwatch::store::now_secs();
    let id = proposal(&mut store.lock().unwrap(), now);
    let mut watcher = Watcher::default();
    let look = |watcher: &mut Watcher, at: i64| {
        let mut guard = store.lock().unwrap();
        let waiting = fleetwatch::pending::waiting(&mut guard, &policy, None, at).unwrap();
        watcher.look(&cfg, &waiting, &guard, at)
    };

    // Waiting; nothing new on the next look; half its lifetime (30 minutes) once.
    let mut messages = look(&mut watcher, now);
    assert!(look(&mut watcher, now + 1).is_empty(), "said once");
    messages.extend(look(&mut watcher, now + 901));
    assert!(
        look(&mut watcher, now + 902).is_empty(),
        "the reminder is said once"
    );
    // Denied on the page.
    assert!(
        store
            .lock()
            .unwrap()
            .deny(id, "page", "not today", None, now + 903)
            .unwrap()
    );
    messages.extend(look(&mut watcher, now + 904));
    let events: Vec<&str> = messages.iter().map(|m| m.event.as_str()).collect();
    assert_eq!(events, ["waiting", "half_life", "denied"]);

    fleetwatch_signin::tls::install_provider();
    let client = reqwest::Client::new();
    for m in &messages {
        assert!(notify::send(&client, &cfg, m, &store).await, "{m:?}");
    }
    let received = got.lock().unwrap().clone();
    for (_, _, body) in &received {
        println!("received json: {body}");
    }
    // The first message twice: a 500, then accepted after the backoff.
    assert_eq!(received.len(), 4, "{received:?}");
    assert_eq!(received[0].2, received[1].2);
    let first: Value = serde_json::from_str(&received[1].2).unwrap();
    assert_eq!(first["event"], "waiting");
    assert_eq!(first["proposal"], json!(id));
    assert_eq!(first["change"], "start recording");
    assert_eq!(first["rooms"], json!(["Test Room A"]));
    assert_eq!(first["asked_by"], "sam");
    assert_eq!(first["page"], "http://localhost:8767/");
    assert!(
        first["text"].as_str().unwrap().starts_with(&format!(
            "Fleetwatch #{id} waits: start recording in “Test Room A”, asked by sam; expires "
        )),
        "{first}"
    );
    let last: Value = serde_json::from_str(&received[3].2).unwrap();
    assert_eq!(last["event"], "denied");
    assert_eq!(
        last["text"],
        json!(format!(
            "Fleetwatch #{id} was denied: “not today”. Nothing changed."
        ))
    );
    for (content_type, _, body) in &received {
        assert_eq!(content_type, "application/json");
        // The model's reason (which held a secret) and the claims never leave.
        assert!(
            !body.contains("live_9f8e7d6c5b4a") && !body.contains("stream_key"),
            "{body}"
        );
        assert!(
            !body.contains("policy_digest") && !body.contains("fingerprint"),
            "{body}"
        );
    }
    // Every attempt audited: one failure, then each message sent.
    let audit: Vec<(String, String)> = store
        .lock()
        .unwrap()
        .audit_rows()
        .unwrap()
        .into_iter()
        .filter(|r| r.kind.starts_with("notify_"))
        .map(|r| (r.kind, r.detail))
        .collect();
    assert_eq!(audit.len(), 4, "{audit:?}");
    assert_eq!(audit[0].0, "notify_failed");
    assert!(audit[0].1.contains("\"answer\":\"500\""), "{audit:?}");
    assert!(
        audit[1..].iter().all(|(kind, _)| kind == "notify_sent"),
        "{audit:?}"
    );
}

#[tokio::test]
async fn slack_and_ntfy_carry_the_same_words_and_a_bad_address_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = Mutex::new(Store::open(dir.path()).unwrap());
    let policy = common::policy();
    let now = fleetwatch::store::now_secs();
    let id = proposal(&mut store.lock().unwrap(), now);
    fleetwatch_signin::tls::install_provider();
    let client = reqwest::Client::new();
    for (format, content_type) in [
        (Format::Slack, "application/json"),
        (Format::Ntfy, "text/plain; charset=utf-8"),
    ] {
        let (url, got) = receiver(0).await;
        let cfg = config(&url, format);
        let messages = {
            let mut guard = store.lock().unwrap();
            let waiting = fleetwatch::pending::waiting(&mut guard, &policy, None, now).unwrap();
            Watcher::default().look(&cfg, &waiting, &guard, now)
        };
        assert_eq!(messages.len(), 1);
        assert!(notify::send(&client, &cfg, &messages[0], &store).await);
        let (got_type, title, body) = got.lock().unwrap()[0].clone();
        println!("received {format:?}: title {title:?}; {body}");
        assert_eq!(got_type, content_type);
        let text = match format {
            Format::Slack => {
                let v: Value = serde_json::from_str(&body).unwrap();
                assert_eq!(v.as_object().unwrap().len(), 1, "text only: {v}");
                v["text"].as_str().unwrap().to_owned()
            }
            _ => {
                assert_eq!(title, format!("Fleetwatch #{id}"));
                body
            }
        };
        assert!(
            text.starts_with(&format!("Fleetwatch #{id} waits: start recording")),
            "{text}"
        );
        assert!(text.ends_with("http://localhost:8767/"), "{text}");
    }
    // Only https, or http to this machine; only the three formats.
    for (url, format, why) in [
        ("http://hooks.example.org/x", None, "FLEETWATCH_NOTIFY_URL"),
        (
            "https://hooks.example.org/x",
            Some("teams"),
            "FLEETWATCH_NOTIFY_FORMAT",
        ),
    ] {
        let err = NotifyConfig::from_values(Some(url), format, "http://localhost:8767/", Lang::En)
            .unwrap_err();
        assert!(err.contains(why), "{err}");
    }
    assert!(
        NotifyConfig::from_values(None, None, "http://localhost:8767/", Lang::En)
            .unwrap()
            .is_none()
    );
    let described = config("https://hooks.example.org/x", Format::Json).describe();
    assert!(
        described.contains("https://hooks.example.org/x")
            && described.contains("nothing else leaves"),
        "{described}"
    );
}

/// The two classes the first test does not make: a change that one person approved and that
/// waits for a second (the executor's quorum of two), and a change that expires unapproved.
#[tokio::test]
async fn a_second_person_needed_and_an_expiry_each_make_their_message() {
    let dir = tempfile::tempdir().unwrap();
    let store = Mutex::new(Store::open(dir.path()).unwrap());
    let policy = common::policy();
    let now = fleetwatch::store::now_secs();
    let id = proposal(&mut store.lock().unwrap(), now);
    let status = fleetwatch_protocol::wire::StatusReport {
        version: "test".into(),
        fence_configured: true,
        sandbox_sign_in: true,
        key_ids: Vec::new(),
        policy_digest: [0; 32],
        chain_head: [0; 32],
        passkeys_enrolled: 2,
        approvers: Vec::new(),
        trial: false,
        quorums: vec![fleetwatch_protocol::wire::ToolQuorum {
            tool: "batch_recording".into(),
            calm: 2,
            disruptive: 2,
        }],
        limits: Default::default(),
        confirm_origin_not_held: None,
        freeze: Vec::new(),
    };
    let cfg = config("http://127.0.0.1:9/hook", Format::Json);
    let mut watcher = Watcher::default();
    let look = |watcher: &mut Watcher, at: i64| {
        let mut guard = store.lock().unwrap();
        let waiting = fleetwatch::pending::waiting(&mut guard, &policy, Some(&status), at).unwrap();
        watcher.look(&cfg, &waiting, &guard, at)
    };
    let first = look(&mut watcher, now);
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].fields["persons_needed"], json!(2));
    // Ana approves with her passkey on the page: the change now waits for one more person.
    {
        let mut guard = store.lock().unwrap();
        let approval = "ab".repeat(16);
        guard.create_approval(&approval, id, "tag", 300).unwrap();
        let fixed = fleetwatch::store::Fixed {
            approval_id: approval.clone(),
            session: "tag".into(),
            expires_at: now + 300,
        };
        let signer = fleetwatch::store::NewSigner {
            credential_id: "cred-ana",
            name: "Ana",
            session: "tag",
            assertion: "{}",
        };
        assert!(matches!(
            guard
                .gather(id, &approval, &fixed, &signer, 2, now)
                .unwrap(),
            fleetwatch::store::Gathered::Kept(_)
        ));
    }
    let second = look(&mut watcher, now + 1);
    assert_eq!(second.len(), 1, "{second:?}");
    assert_eq!(second[0].event, "second_person");
    assert_eq!(
        second[0].text,
        format!(
            "Fleetwatch #{id} approved by Ana; it waits for 1 more person(s). http://localhost:8767/"
        )
    );
    // Nobody else comes: past its lifetime it expires, and that is said once.
    let later = look(&mut watcher, now + 4000);
    let expired: Vec<&str> = later.iter().map(|m| m.event.as_str()).collect();
    assert_eq!(expired, ["expired"], "{later:?}");
    assert_eq!(
        later[0].text,
        format!("Fleetwatch #{id} expired before anyone decided. Nothing changed.")
    );
    assert!(look(&mut watcher, now + 4001).is_empty());
}
