//! `propose_change` end to end: the simulator's sandbox team, the real executor binary for
//! `Describe`, and the assistant's store. Every refusal starts "Not proposed:", says why and
//! stores nothing; success stores a pending proposal with everything the page will need.

mod common;

use std::path::Path;
use std::sync::{Arc, Mutex};

use fleetwatch::config::Fence;
use fleetwatch::executor_client::ExecutorClient;
use fleetwatch::grants;
use fleetwatch::proposals::{MAX_PENDING, MAX_PER_HOUR, Proposer};
use fleetwatch::store::{self, NewProposal, Status, Store};
use fleetwatch_protocol::canonical;
use fleetwatch_sim::{SimConfig, SimHandle};
use serde_json::{Value, json};

struct World {
    sim: SimHandle,
    _executor: Option<common::Executor>,
    socket: std::path::PathBuf,
    state: tempfile::TempDir,
    store: Arc<Mutex<Store>>,
    sandbox: Vec<String>,
    normal: Vec<String>,
}

async fn world(allow_all_sandbox: bool, extra_allow: &[String]) -> World {
    let sim = fleetwatch_sim::start(SimConfig::demo()).await.unwrap();
    let sandbox = sim.team_devices("sandbox");
    let normal = sim.team_devices("normal");
    let mut allow: Vec<String> = if allow_all_sandbox {
        sandbox.clone()
    } else {
        vec![sandbox[0].clone()]
    };
    allow.extend(extra_allow.iter().cloned());
    let executor = common::Executor::start(&sim.mcp_url(), &allow, None, &[]).await;
    let state = tempfile::tempdir().unwrap();
    for category in ["maintenance", "recording", "streaming", "events"] {
        grants::open(state.path(), &common::policy(), category).unwrap();
    }
    let store = Arc::new(Mutex::new(Store::open(state.path()).unwrap()));
    World {
        socket: executor.socket.clone(),
        _executor: Some(executor),
        sim,
        state,
        store,
        sandbox,
        normal,
    }
}

fn proposer(w: &World, fence: Fence, proposing: bool) -> Proposer {
    proposer_at(w, fence, proposing, &w.socket)
}

fn proposer_at(w: &World, fence: Fence, proposing: bool, socket: &Path) -> Proposer {
    Proposer::new(
        common::policy(),
        fence,
        proposing,
        w.state.path().to_path_buf(),
        Arc::clone(&w.store),
        ExecutorClient::new(socket),
    )
}

fn fence(ids: &[String]) -> Fence {
    let mut device_ids = ids.to_vec();
    device_ids.sort();
    Fence {
        device_ids,
        team_id: None,
    }
}

fn stored(w: &World) -> usize {
    let store = w.store.lock().unwrap();
    let n: i64 = store
        .connection()
        .query_row("SELECT COUNT(*) FROM proposals", [], |r| r.get(0))
        .unwrap();
    n as usize
}

fn reboot(id: &str) -> Value {
    json!({"device_ids": [id]})
}

/// A freeze window the executor holds: the assistant learns it from the executor's describe
/// and tells the model, in words, that the change cannot run until the window ends, storing
/// nothing; a change the window does not hold is proposed as usual.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_a_freeze_window_holds_is_not_proposed_and_the_model_is_told_why() {
    let sim = fleetwatch_sim::start(SimConfig::demo()).await.unwrap();
    let sandbox = sim.team_devices("sandbox");
    let now = jiff::Timestamp::now();
    let window = format!(
        "freeze:\n  - from: \"{}\"\n    until: \"{}\"\n    tools: disruptive\n    reason: finals week\n",
        now - jiff::SignedDuration::from_hours(1),
        now + jiff::SignedDuration::from_hours(2)
    );
    let executor = common::Executor::start_with(&sim.mcp_url(), &sandbox, None, &[], &window).await;
    let state = tempfile::tempdir().unwrap();
    for category in ["maintenance", "recording"] {
        grants::open(state.path(), &common::policy(), category).unwrap();
    }
    let w = World {
        socket: executor.socket.clone(),
        _executor: Some(executor),
        sim,
        store: Arc::new(Mutex::new(Store::open(state.path()).unwrap())),
        state,
        sandbox: sandbox.clone(),
        normal: Vec::new(),
    };
    let p = proposer(&w, fence(&sandbox), true);
    let result = p
        .propose("batch_reboot", reboot(&sandbox[0]), "restart it")
        .await;
    assert_eq!(result.proposal_id, None, "{}", result.message);
    assert!(
        result.message.contains("frozen disruptive changes until")
            && result.message.contains("(finals week)")
            && result.message.contains("Do not propose it before then"),
        "{}",
        result.message
    );
    assert_eq!(stored(&w), 0);
    // A calm change is not held.
    let calm = p
        .propose(
            "batch_recording",
            json!({"action": "start", "device_ids": [format!("{}-1", sandbox[0])]}),
            "record it",
        )
        .await;
    assert!(calm.proposal_id.is_some(), "{}", calm.message);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_valid_proposal_is_stored_pending_with_everything_bound() {
    let w = world(false, &[]).await;
    let target = w.sandbox[0].clone();
    let p = proposer(&w, fence(std::slice::from_ref(&target)), true);
    let long_reason = format!("password=hunter2hunter2 {}", "x".repeat(600));
    let result = p
        .propose("batch_reboot", reboot(&target), &long_reason)
        .await;
    assert!(!result.invalid, "{}", result.message);
    let id = result.proposal_id.expect(&result.message);
    assert!(result.message.contains(&format!("#{id}")));
    assert!(result.message.contains("waiting for a person"));
    assert!(result.message.contains("Nothing has changed"));
    let stored = w.store.lock().unwrap().proposal(id).unwrap().unwrap();
    assert_eq!(stored.status, Status::Pending);
    assert_eq!(stored.tool, "batch_reboot");
    assert_eq!(
        stored.arguments,
        canonical::from_value(&reboot(&target))
            .unwrap()
            .into_string()
    );
    assert_eq!(stored.targets, vec![target.clone()]);
    assert_eq!(stored.schema_version, 1);
    assert_eq!(
        stored.policy_digest,
        common::policy().digest("batch_reboot").unwrap()
    );
    assert_eq!(stored.slot, "sandbox");
    assert!(
        stored.fingerprint.contains(&target),
        "{}",
        stored.fingerprint
    );
    assert!(stored.reason.chars().count() <= 300);
    assert!(
        !stored.reason.contains("hunter2hunter2"),
        "{}",
        stored.reason
    );
    // Nothing was written anywhere.
    assert!(w.sim.writes().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schema_problems_are_refused_naming_the_field() {
    let w = world(false, &[]).await;
    let target = w.sandbox[0].clone();
    let p = proposer(&w, fence(std::slice::from_ref(&target)), true);
    for (args, field) in [
        (
            json!({"device_ids": [target.clone()], "force": true}),
            "force",
        ),
        (json!({}), "device_ids"),
        (json!({"device_ids": [format!("{target}\n")]}), "device_ids"),
        (json!({"device_ids": []}), "device_ids"),
        (
            json!({"device_ids": [target.clone(), w.sandbox[1].clone()]}),
            "device_ids",
        ),
        (json!({"device_ids": "not-a-list"}), "device_ids"),
    ] {
        let result = p.propose("batch_reboot", args.clone(), "r").await;
        assert!(
            result.message.starts_with("Not proposed:"),
            "{args}: {}",
            result.message
        );
        assert!(result.message.contains(field), "{args}: {}", result.message);
        assert!(result.proposal_id.is_none());
    }
    // An unknown or read tool, without echoing the name.
    for tool in [
        "factory_reset_device",
        "get_devices_in_my_team",
        "create_stream_endpoint",
    ] {
        let result = p.propose(tool, json!({}), "r").await;
        assert!(result.message.starts_with("Not proposed:"));
        assert!(!result.message.contains(tool), "{}", result.message);
        assert!(result.invalid);
    }
    assert_eq!(stored(&w), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_category_not_granted_is_refused_even_if_the_model_calls_it() {
    let w = world(false, &[]).await;
    let target = w.sandbox[0].clone();
    grants::close(w.state.path(), "maintenance").unwrap();
    let p = proposer(&w, fence(std::slice::from_ref(&target)), true);
    let result = p
        .propose("batch_firmware_update", reboot(&target), "r")
        .await;
    assert!(
        result.message.starts_with("Not proposed:"),
        "{}",
        result.message
    );
    assert!(result.message.contains("maintenance"));
    assert!(result.message.contains("not granted"));
    assert_eq!(stored(&w), 0);
    // Reopening takes effect on the next call: the grant is re-read every time.
    grants::open(w.state.path(), &common::policy(), "maintenance").unwrap();
    let result = p
        .propose("batch_firmware_update", reboot(&target), "r")
        .await;
    assert!(result.proposal_id.is_some(), "{}", result.message);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_off_the_allowlist_is_refused_before_the_executor() {
    let w = world(false, &[]).await;
    let p = proposer(&w, fence(&[w.sandbox[0].clone()]), true);
    let before = w.sim.calls().len();
    let result = p.propose("batch_reboot", reboot(&w.sandbox[1]), "r").await;
    assert!(
        result.message.starts_with("Not proposed:"),
        "{}",
        result.message
    );
    assert!(result.message.contains("allowlist"), "{}", result.message);
    assert_eq!(w.sim.calls().len(), before, "the executor was asked anyway");
    assert_eq!(stored(&w), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_not_on_the_sandbox_team_is_refused() {
    // The normal team's device is on both allowlists, but the executor's fresh sandbox list
    // does not have it.
    let normal_device = {
        let sim = fleetwatch_sim::start(SimConfig::demo()).await.unwrap();
        let id = sim.team_devices("normal")[0].clone();
        sim.shutdown().await;
        id
    };
    let w = world(false, std::slice::from_ref(&normal_device)).await;
    assert_eq!(w.normal[0], normal_device);
    let p = proposer(
        &w,
        fence(&[w.sandbox[0].clone(), normal_device.clone()]),
        true,
    );
    let result = p.propose("batch_reboot", reboot(&normal_device), "r").await;
    assert!(
        result.message.starts_with("Not proposed:"),
        "{}",
        result.message
    );
    assert!(
        result.message.contains("sandbox team") && !result.message.contains("allowlist"),
        "{}",
        result.message
    );
    assert_eq!(stored(&w), 0);
    assert!(w.sim.writes().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_fence_or_read_only_proposes_nothing() {
    let w = world(false, &[]).await;
    let target = w.sandbox[0].clone();
    let result = proposer(&w, Fence::default(), true)
        .propose("batch_reboot", reboot(&target), "r")
        .await;
    assert!(result.message.starts_with("Not proposed:"));
    assert!(result.message.contains("fence"), "{}", result.message);
    let result = proposer(&w, fence(std::slice::from_ref(&target)), false)
        .propose("batch_reboot", reboot(&target), "r")
        .await;
    assert!(result.message.starts_with("Not proposed:"));
    assert!(result.message.contains("read-only"), "{}", result.message);
    assert_eq!(stored(&w), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_executor_stores_nothing() {
    let w = world(false, &[]).await;
    let target = w.sandbox[0].clone();
    let missing = w.state.path().join("no-executor.sock");
    let result = proposer_at(&w, fence(std::slice::from_ref(&target)), true, &missing)
        .propose("batch_reboot", reboot(&target), "r")
        .await;
    assert!(
        result.message.starts_with("Not proposed:"),
        "{}",
        result.message
    );
    assert!(result.message.contains("executor"));
    assert_eq!(stored(&w), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_most_three_pending() {
    let w = world(true, &[]).await;
    let p = proposer(&w, fence(&w.sandbox), true);
    assert!(w.sandbox.len() > MAX_PENDING as usize);
    for device in w.sandbox.iter().take(MAX_PENDING as usize) {
        // Start recording on channel 1 is calm and always describable.
        let args = json!({"action": "start", "device_ids": [format!("{device}-1")]});
        let result = p.propose("batch_recording", args, "r").await;
        assert!(result.proposal_id.is_some(), "{}", result.message);
    }
    let device = &w.sandbox[MAX_PENDING as usize];
    let result = p.propose("batch_reboot", reboot(device), "r").await;
    assert!(result.message.starts_with("Not proposed:"));
    assert!(
        result.message.contains("queue is full"),
        "{}",
        result.message
    );
    assert!(!result.invalid);
    assert_eq!(stored(&w), MAX_PENDING as usize);
}

fn insert(w: &World, tool: &str, target: &str) -> u64 {
    w.store
        .lock()
        .unwrap()
        .insert_proposal(
            &NewProposal {
                tool: tool.into(),
                arguments: canonical::from_value(&reboot(target))
                    .unwrap()
                    .into_string(),
                targets: vec![target.into()],
                fingerprint: "{}".into(),
                schema_version: 1,
                policy_digest: [0; 32],
                slot: "sandbox".into(),
                reason: String::new(),
            },
            store::now_secs(),
        )
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hourly_cap_counts_expired_but_not_denied() {
    let w = world(false, &[]).await;
    let target = w.sandbox[0].clone();
    let p = proposer(&w, fence(std::slice::from_ref(&target)), true);
    for _ in 0..MAX_PER_HOUR - 1 {
        insert(&w, "batch_firmware_update", &target);
    }
    w.store
        .lock()
        .unwrap()
        .expire_all_pending("test", store::now_secs())
        .unwrap();
    // Denied ones do not count: one more is still allowed.
    let denied = insert(&w, "batch_firmware_update", &target);
    w.store
        .lock()
        .unwrap()
        .decide(denied, Status::Denied, "test", store::now_secs())
        .unwrap();
    let result = p.propose("batch_reboot", reboot(&target), "r").await;
    assert!(result.proposal_id.is_some(), "{}", result.message);
    // That was the tenth non-denied proposal this hour; it lapses (so the next is not the same
    // change still waiting), and still counts.
    w.store
        .lock()
        .unwrap()
        .expire_all_pending("test", store::now_secs())
        .unwrap();
    let result = p.propose("batch_reboot", reboot(&target), "r").await;
    assert!(result.message.starts_with("Not proposed:"));
    assert!(
        result.message.contains("hourly limit"),
        "{}",
        result.message
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_denials_pause_that_tool_and_target() {
    let w = world(true, &[]).await;
    let target = w.sandbox[0].clone();
    let p = proposer(&w, fence(&w.sandbox), true);
    for _ in 0..3 {
        let id = insert(&w, "batch_reboot", &target);
        w.store
            .lock()
            .unwrap()
            .decide(id, Status::Denied, "no", store::now_secs())
            .unwrap();
    }
    let result = p.propose("batch_reboot", reboot(&target), "r").await;
    assert!(result.message.starts_with("Not proposed:"));
    assert!(result.message.contains("paused"), "{}", result.message);
    // Another target, or another tool on the same target, is not paused.
    let result = p.propose("batch_reboot", reboot(&w.sandbox[1]), "r").await;
    assert!(result.proposal_id.is_some(), "{}", result.message);
    let result = p
        .propose(
            "batch_recording",
            json!({"action": "start", "device_ids": [format!("{target}-1")]}),
            "r",
        )
        .await;
    assert!(result.proposal_id.is_some(), "{}", result.message);
}

#[test]
fn pending_proposals_expire_at_start_and_it_is_audited() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let a = store
        .insert_proposal(
            &NewProposal {
                tool: "batch_reboot".into(),
                arguments: "{}".into(),
                targets: vec!["1000000001".into()],
                fingerprint: "{}".into(),
                schema_version: 1,
                policy_digest: [0; 32],
                slot: "sandbox".into(),
                reason: String::new(),
            },
            store::now_secs(),
        )
        .unwrap();
    drop(store);
    let mut store = Store::open(dir.path()).unwrap();
    assert_eq!(
        store
            .expire_all_pending("the assistant restarted", store::now_secs())
            .unwrap(),
        1
    );
    assert_eq!(store.proposal(a).unwrap().unwrap().status, Status::Expired);
    let rows = store.audit_rows().unwrap();
    assert!(rows.iter().any(|r| r.kind == "expired"
        && r.proposal_id == Some(a)
        && r.detail.contains("restarted")));
}

/// The pause lasts an hour from the third denial, not from the first: denied at T-50 min,
/// T-20 min and T, the change is still paused at T+59 min and free again at T+61 min.
#[test]
fn three_denials_pause_for_an_hour_from_the_third() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let targets = vec!["19012341234".to_owned()];
    let third = 1_800_000_000;
    for at in [third - 50 * 60, third - 20 * 60, third] {
        let id = store
            .insert_proposal(
                &NewProposal {
                    tool: "batch_reboot".into(),
                    arguments: r#"{"device_ids":["19012341234"]}"#.into(),
                    targets: targets.clone(),
                    fingerprint: "{}".into(),
                    schema_version: 1,
                    policy_digest: [0; 32],
                    slot: "sandbox".into(),
                    reason: "r".into(),
                },
                at - 60,
            )
            .unwrap();
        assert!(store.decide(id, Status::Denied, "no", at).unwrap());
    }
    let paused = |at: i64| store.paused_until("batch_reboot", &targets, at).unwrap();
    assert_eq!(paused(third + 59 * 60), Some(third + 3600));
    assert_eq!(paused(third + 61 * 60), None);
    // Two denials are not a pause, and another tool on the same target is not paused.
    assert_eq!(paused(third - 21 * 60), None);
    assert_eq!(
        store
            .paused_until("batch_firmware_update", &targets, third + 60)
            .unwrap(),
        None
    );
}

/// Three denials spread over more than an hour are not a pause.
#[test]
fn denials_spread_over_more_than_an_hour_do_not_pause() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let targets = vec!["19012341234".to_owned()];
    let now = 1_800_000_000;
    for at in [now - 100 * 60, now - 50 * 60, now - 30] {
        let id = store
            .insert_proposal(
                &NewProposal {
                    tool: "batch_reboot".into(),
                    arguments: r#"{"device_ids":["19012341234"]}"#.into(),
                    targets: targets.clone(),
                    fingerprint: "{}".into(),
                    schema_version: 1,
                    policy_digest: [0; 32],
                    slot: "sandbox".into(),
                    reason: "r".into(),
                },
                at - 60,
            )
            .unwrap();
        assert!(store.decide(id, Status::Denied, "no", at).unwrap());
    }
    assert_eq!(
        store.paused_until("batch_reboot", &targets, now).unwrap(),
        None
    );
}
