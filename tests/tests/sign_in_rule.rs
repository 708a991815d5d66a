//! One rule for "the sign-in has expired", run over the same table through both processes'
//! real read paths against the simulator: the assistant's guarded reader (normal sign-in) and
//! the executor's client (sandbox sign-in). Each row is an answer Epiphan could give to a
//! read — an error result, a plain-text result or a JSON result — and whether it means the
//! sign-in expired. A device *named* `401 Unauthorized` is data on both sides; a status line
//! reading `Error: 401 Unauthorized` is a sign-in problem on both sides.

use std::sync::Arc;
use std::time::Duration;

use fleetwatch::reads::{ReadError, Reader, Token};
use fleetwatch_executor::epiphan::{Epiphan, ReadFailure};
use fleetwatch_protocol::policy::Policy;
use fleetwatch_protocol::secret::Secret;
use fleetwatch_sim::{Fault, SimConfig};
use serde_json::{Map, Value, json};

fn table() -> Vec<Value> {
    let path = fleetwatch_e2e::workspace_root().join("epiphan/tests/data/sign_in_answers.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("the table")).expect("JSON")
}

fn assistant_reader(state: &std::path::Path, mcp_url: &str, token: &str) -> Reader {
    use std::os::unix::fs::PermissionsExt as _;
    let root = fleetwatch_e2e::workspace_root();
    let policy_path = root.join("tool_policy.yaml");
    let pairs = [
        ("FLEETWATCH_EPIPHAN_URL", mcp_url.to_owned()),
        ("FLEETWATCH_ALLOW_LOOPBACK_HTTP", "1".to_owned()),
        ("FLEETWATCH_READ_TIMEOUT_SECS", "5".to_owned()),
        ("FLEETWATCH_STATE_DIR", state.display().to_string()),
        ("FLEETWATCH_POLICY", policy_path.display().to_string()),
    ];
    let config = fleetwatch::config::Config::from_lookup(|name| {
        pairs
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.clone())
    })
    .expect("config");
    let policy = Policy::from_yaml(&std::fs::read_to_string(policy_path).expect("policy"))
        .expect("policy loads");
    let token_path = state.join(fleetwatch::reads::TOKEN_FILE);
    std::fs::write(&token_path, token).expect("token");
    std::fs::set_permissions(&token_path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let token = Token::from_file(&token_path).expect("token file");
    Reader::live(&config, Arc::new(policy), token).expect("reader")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sign_in_table_through_both_processes_read_paths() {
    let rows = table();
    assert!(rows.len() > 20, "the table was not read");
    let sim = fleetwatch_sim::start(SimConfig::demo()).await.expect("sim");
    let state = tempfile::tempdir().expect("state");
    let reader = assistant_reader(state.path(), &sim.mcp_url(), "normal-token");
    let http = fleetwatch_executor::epiphan::http_client().expect("http");
    let sandbox = Secret::new("sandbox-token").expect("token");
    let executor = Epiphan::connect(&http, &sim.mcp_url(), &sandbox, Duration::from_secs(5))
        .await
        .expect("sandbox session");

    let mut wrong = Vec::new();
    for row in &rows {
        let text = row["text"].as_str().expect("text").to_owned();
        let expired = row["expired"].as_bool().expect("expired");
        let kind = row["kind"].as_str().expect("kind");
        let fault = match kind {
            "error" => Fault::ErrorText(text.clone()),
            "text" | "json" => Fault::Text(text.clone()),
            other => panic!("unknown kind {other}"),
        };
        sim.set_fault("get_devices_in_my_team", fault);
        let theirs = reader.read("get_devices_in_my_team", json!({})).await;
        let ours = executor.read("get_devices_in_my_team", Map::new()).await;
        let assistant_says = matches!(theirs, Err(ReadError::SignInExpired));
        let executor_says = matches!(ours, Err(ReadFailure::Unauthorized));
        if assistant_says != expired {
            wrong.push(format!("assistant, {kind} {text:?}: {theirs:?}"));
        }
        if executor_says != expired {
            wrong.push(format!("executor, {kind} {text:?}: {ours:?}"));
        }
        // JSON is data on both sides, whatever the names in it say.
        if kind == "json" && (theirs.is_err() || ours.is_err()) {
            wrong.push(format!("{text:?} is data: {theirs:?} / {ours:?}"));
        }
    }
    executor.close().await;
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // Each row reached the simulator from each side; none was a write.
    assert_eq!(sim.calls().len(), rows.len() * 2);
    assert!(sim.writes().is_empty());
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_token_is_an_expired_sign_in_on_both_sides() {
    // The simulator answers HTTP 401 with a challenge at `initialize`: the transport side of
    // the same rule.
    let sim = fleetwatch_sim::start(SimConfig::demo()).await.expect("sim");
    let http = fleetwatch_executor::epiphan::http_client().expect("http");
    let stranger = Secret::new("not-a-token").expect("token");
    let opened = Epiphan::connect(&http, &sim.mcp_url(), &stranger, Duration::from_secs(5)).await;
    assert!(
        matches!(opened, Err(ReadFailure::Unauthorized)),
        "{:?}",
        opened.err()
    );
    let state = tempfile::tempdir().expect("state");
    let reader = assistant_reader(state.path(), &sim.mcp_url(), "not-a-token");
    assert_eq!(
        reader.read("get_devices_in_my_team", json!({})).await,
        Err(ReadError::SignInExpired)
    );
    assert!(sim.calls().is_empty(), "nothing got past the sign-in");
    sim.shutdown().await;
}
