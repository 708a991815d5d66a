//! The whole sign-in against the simulator, in process: login through the loopback callback,
//! refresh before expiry, rotation under concurrent use, a refused refresh killing the slot,
//! a 503 not killing it.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use fleetwatch_signin::{LoginOptions, SignInError, Slot, SlotStatus, login_with};
use fleetwatch_sim::{SimConfig, SimHandle};

fn options(sim: &SimHandle) -> LoginOptions {
    LoginOptions {
        mcp_url: sim.mcp_url(),
        allow_loopback_http: true,
        callback_port: 0,
        open_browser: false,
        client_name: "fleetwatch test".into(),
        wait: Duration::from_secs(60),
        access: fleetwatch_signin::Access::Read,
    }
}

fn state_dir() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    d
}

/// Plays the browser: follows the authorization address to the callback.
fn browse(url: &str, extra: &str) {
    let url = format!("{url}{extra}");
    tokio::spawn(async move {
        let client = fleetwatch_signin::tls::client_builder().build().unwrap();
        let page = client.get(&url).send().await.unwrap();
        assert!(page.status().is_success(), "{}", page.status());
    });
}

async fn signed_in(sim: &SimHandle, slot: &Slot) {
    login_with(slot, &options(sim), |url, opened| {
        assert!(!opened);
        browse(url, "&team=sandbox");
    })
    .await
    .unwrap();
}

/// A read through the slot's token, as the executor makes it.
async fn devices_seen(sim: &SimHandle, token: &str) -> usize {
    use rmcp::ServiceExt as _;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    fleetwatch_signin::tls::install_provider();
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(sim.mcp_url()).auth_header(token.to_string()),
    );
    let client = ().serve(transport).await.unwrap();
    let result = client
        .peer()
        .call_tool(rmcp::model::CallToolRequestParams::new(
            "get_devices_in_my_team",
        ))
        .await
        .unwrap();
    let text = result.content[0].as_text().unwrap().text.clone();
    let _ = client.cancel().await;
    assert_ne!(result.is_error, Some(true), "{text}");
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    json["devices"].as_array().unwrap().len()
}

#[tokio::test(flavor = "multi_thread")]
async fn login_stores_a_record_that_reads_the_chosen_team() {
    let sim = fleetwatch_sim::start(SimConfig::demo()).await.unwrap();
    let dir = state_dir();
    let slot = Slot::new(dir.path().join("slot"), true);
    signed_in(&sim, &slot).await;
    let mode = std::fs::metadata(slot.path()).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert!(matches!(
        slot.status().unwrap(),
        SlotStatus::SignedIn {
            renewable: true,
            expires_at: Some(_),
            ..
        }
    ));
    let token = slot.bearer().await.unwrap();
    assert_eq!(
        devices_seen(&sim, token.expose()).await,
        sim.team_devices("sandbox").len()
    );
    let calls = sim.token_calls();
    assert_eq!((calls.codes_exchanged, calls.refreshes), (1, 0));
    // The status line shows no token.
    let shown = slot.status().unwrap().to_string();
    assert!(!shown.contains(token.expose()), "{shown}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_token_near_expiry_is_renewed_and_the_old_refresh_token_is_spent() {
    let sim = fleetwatch_sim::start(SimConfig::demo()).await.unwrap();
    let dir = state_dir();
    let slot = Slot::new(dir.path().join("slot"), true);
    // Shorter than the refresh margin: the first use renews it.
    sim.set_token_lifetime(Duration::from_secs(30));
    signed_in(&sim, &slot).await;
    let before = std::fs::read_to_string(slot.path()).unwrap();
    sim.set_token_lifetime(Duration::from_secs(3600));
    let token = slot.bearer().await.unwrap();
    assert_eq!(sim.token_calls().refreshes, 1);
    assert!(devices_seen(&sim, token.expose()).await > 0);
    // Long-lived now: no further refresh.
    let again = slot.bearer().await.unwrap();
    assert_eq!(again.expose(), token.expose());
    assert_eq!(sim.token_calls().refreshes, 1);
    // Replaying the spent refresh token is refused by the server (rotation).
    let old: serde_json::Value = serde_json::from_str(&before).unwrap();
    let answer = fleetwatch_signin::tls::client_builder()
        .build()
        .unwrap()
        .post(format!("{}/token", sim.base_url()))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!(
            "grant_type=refresh_token&refresh_token={}&client_id={}",
            old["refresh_token"].as_str().unwrap(),
            old["client_id"].as_str().unwrap()
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 400);
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_users_of_one_slot_rotate_once() {
    let sim = fleetwatch_sim::start(SimConfig::demo()).await.unwrap();
    let dir = state_dir();
    let path = dir.path().join("slot");
    let slot = Slot::new(&path, true);
    sim.set_token_lifetime(Duration::from_secs(30));
    signed_in(&sim, &slot).await;
    sim.set_token_lifetime(Duration::from_secs(3600));
    // Slow answers, so every user is waiting while the first refresh is in flight.
    sim.set_token_delay(Duration::from_millis(500));
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let path = path.clone();
        tasks.push(tokio::spawn(async move {
            let slot = Slot::new(path, true);
            slot.bearer().await.map(|t| t.expose().to_string())
        }));
    }
    let mut tokens = Vec::new();
    for t in tasks {
        tokens.push(t.await.unwrap().unwrap());
    }
    assert_eq!(sim.token_calls().refreshes, 1, "{:?}", sim.token_calls());
    assert_eq!(sim.token_calls().refused, 0);
    assert!(tokens.iter().all(|t| t == &tokens[0]));
    assert!(devices_seen(&sim, &tokens[0]).await > 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_refresh_kills_the_slot_once_and_a_503_does_not() {
    let sim = fleetwatch_sim::start(SimConfig::demo()).await.unwrap();
    let dir = state_dir();
    let slot = Slot::new(dir.path().join("slot"), true);
    sim.set_token_lifetime(Duration::from_secs(30));
    signed_in(&sim, &slot).await;

    sim.set_token_endpoint_unavailable(true);
    // Still 30 s left: the current token is used and the slot stays alive.
    assert!(slot.bearer().await.is_ok());
    assert!(matches!(
        slot.status().unwrap(),
        SlotStatus::SignedIn { .. }
    ));
    assert_eq!(sim.token_calls().unavailable, 1);
    sim.set_token_endpoint_unavailable(false);

    sim.refuse_refresh(true);
    let err = slot.bearer().await.err().unwrap();
    assert!(err.is_dead(), "{err}");
    let before = sim.token_calls().total();
    for _ in 0..3 {
        assert!(matches!(slot.bearer().await, Err(SignInError::Dead(_))));
    }
    assert_eq!(sim.token_calls().total(), before, "a dead slot asked again");
    // Persisted: a fresh handle sees it, and the file holds no token any more.
    let text = std::fs::read_to_string(slot.path()).unwrap();
    assert!(text.contains("\"dead\""));
    assert!(
        !text.contains("sim-at-") && !text.contains("sim-rt-"),
        "{text}"
    );
    assert!(matches!(
        Slot::new(slot.path(), true).status().unwrap(),
        SlotStatus::Dead(_)
    ));
    // A new login brings it back.
    sim.refuse_refresh(false);
    signed_in(&sim, &slot).await;
    assert!(slot.bearer().await.is_ok());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wrong_state_stores_nothing() {
    let sim = fleetwatch_sim::start(SimConfig::demo()).await.unwrap();
    let dir = state_dir();
    let slot = Slot::new(dir.path().join("slot"), true);
    let err = login_with(&slot, &options(&sim), |url, _| {
        // Swap the state: the callback must refuse the answer.
        let url = url::replace_state(url);
        tokio::spawn(async move {
            let _ = fleetwatch_signin::tls::client_builder()
                .build()
                .unwrap()
                .get(&url)
                .send()
                .await;
        });
    })
    .await
    .err()
    .unwrap();
    assert!(err.to_string().contains("state"), "{err}");
    assert!(!slot.path().exists());
    assert_eq!(sim.token_calls().total(), 0);
}

mod url {
    /// The address with its `state` parameter replaced.
    pub fn replace_state(url: &str) -> String {
        let mut parsed = reqwest::Url::parse(url).unwrap();
        let pairs: Vec<(String, String)> = parsed
            .query_pairs()
            .map(|(k, v)| {
                let v = if k == "state" {
                    "forged-state".to_string()
                } else {
                    v.into_owned()
                };
                (k.into_owned(), v)
            })
            .collect();
        parsed.query_pairs_mut().clear().extend_pairs(pairs);
        parsed.to_string()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_expired_access_token_is_refused_in_band() {
    let sim = fleetwatch_sim::start(SimConfig::demo()).await.unwrap();
    let dir = state_dir();
    let slot = Slot::new(dir.path().join("slot"), true);
    sim.set_token_lifetime(Duration::ZERO);
    signed_in(&sim, &slot).await;
    let text = std::fs::read_to_string(slot.path()).unwrap();
    let record: serde_json::Value = serde_json::from_str(&text).unwrap();
    use rmcp::ServiceExt as _;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    fleetwatch_signin::tls::install_provider();
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(sim.mcp_url())
            .auth_header(record["access_token"].as_str().unwrap().to_string()),
    );
    let client = ().serve(transport).await.unwrap();
    let result = client
        .peer()
        .call_tool(rmcp::model::CallToolRequestParams::new(
            "get_devices_in_my_team",
        ))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true));
    assert_eq!(
        result.content[0].as_text().unwrap().text,
        "Error: 401 Unauthorized"
    );
    let _ = client.cancel().await;
    // Without any token: HTTP 401 naming the resource metadata.
    let answer = fleetwatch_signin::tls::client_builder()
        .build()
        .unwrap()
        .get(sim.mcp_url())
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 401);
    let challenge = answer.headers()["www-authenticate"].to_str().unwrap();
    assert!(
        challenge.contains("resource_metadata=") && challenge.contains("oauth-protected-resource"),
        "{challenge}"
    );
}
