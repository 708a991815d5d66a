//! `fleetwatch serve` and `fleetwatch ask` as processes: the chat socket's mode and peer check,
//! pending proposals expired at start, the signing key made once and shown as a key line.

mod common;

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fleetwatch::answer::Assistant;
use fleetwatch::chat::{self, ChatRequest};
use fleetwatch::reads::Reader;
use fleetwatch::serve::{self, Operators};
use fleetwatch::store::{self, NewProposal, Status, Store};
use fleetwatch_sim::SimConfig;

fn command(state: &Path, mcp_url: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fleetwatch"));
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("FLEETWATCH_POLICY", common::policy_path())
        .env("FLEETWATCH_STATE_DIR", state)
        .env("FLEETWATCH_EPIPHAN_URL", mcp_url)
        .env("FLEETWATCH_ALLOW_LOOPBACK_HTTP", "1")
        .env("FLEETWATCH_EPIPHAN_TOKEN", "normal-token")
        .env("FLEETWATCH_EXECUTOR_SOCKET", state.join("no-executor.sock"));
    cmd
}

struct Serve(Child);

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn wait_for(path: &Path, child: &mut Child) {
    let deadline = Instant::now() + Duration::from_secs(60);
    // The mode is set right after bind: wait for both.
    let ready =
        |p: &Path| std::fs::metadata(p).is_ok_and(|m| m.permissions().mode() & 0o777 == 0o660);
    while !ready(path) {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("serve exited early: {status}");
        }
        assert!(Instant::now() < deadline, "serve never opened its socket");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_answers_ask_expires_old_proposals_and_stops_cleanly() {
    let sim = fleetwatch_sim::start(SimConfig::demo()).await.unwrap();
    let state = tempfile::tempdir().unwrap();
    std::fs::set_permissions(state.path(), std::fs::Permissions::from_mode(0o750)).unwrap();
    // A proposal left pending by an earlier run.
    let old = {
        let mut store = Store::open(state.path()).unwrap();
        store
            .insert_proposal(
                &NewProposal {
                    tool: "batch_reboot".into(),
                    arguments: r#"{"device_ids":["1000000001"]}"#.into(),
                    targets: vec!["1000000001".into()],
                    fingerprint: "{}".into(),
                    schema_version: 1,
                    policy_digest: [0; 32],
                    slot: "sandbox".into(),
                    reason: String::new(),
                },
                store::now_secs(),
            )
            .unwrap()
    };
    let child = command(state.path(), &sim.mcp_url())
        .arg("serve")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut serve = Serve(child);
    let socket = state.path().join("chat.sock");
    wait_for(&socket, &mut serve.0).await;
    let mode = std::fs::metadata(&socket).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o660);

    // Expired at start, and audited.
    {
        let store = Store::open(state.path()).unwrap();
        assert_eq!(
            store.proposal(old).unwrap().unwrap().status,
            Status::Expired
        );
        assert!(
            store
                .audit_rows()
                .unwrap()
                .iter()
                .any(|r| r.kind == "expired")
        );
    }
    // The key was made, private.
    let key_mode = std::fs::metadata(state.path().join(fleetwatch::keys::KEY_FILE))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(key_mode, 0o600);

    // `ask` holds no token: it gets its answer from the socket.
    let out = Command::new(env!("CARGO_BIN_EXE_fleetwatch"))
        .env_clear()
        .env("FLEETWATCH_STATE_DIR", state.path())
        .args(["ask", "what's offline?"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.to_lowercase().contains("offline"), "{stdout}");
    assert!(
        sim.calls()
            .iter()
            .any(|c| c.tool == "get_devices_in_my_team")
    );
    // An operator's `ask` reads nothing but the socket path: a state folder it cannot use
    // (here, one whose settings do not even parse) does not stand in its way.
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::write(
        elsewhere.path().join(fleetwatch::config::SETTINGS_FILE),
        "autonomy: [not a setting\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_fleetwatch"))
        .env_clear()
        .env("FLEETWATCH_STATE_DIR", elsewhere.path())
        .env("FLEETWATCH_CHAT_SOCKET", &socket)
        .args(["ask", "what's offline?"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .to_lowercase()
            .contains("offline")
    );

    // The question left a counts-only audit row.
    {
        let store = Store::open(state.path()).unwrap();
        let rows = store.audit_rows().unwrap();
        let q = rows.iter().find(|r| r.kind == "question").unwrap();
        assert!(!q.detail.contains("offline"), "{}", q.detail);
        assert!(matches!(
            store.verify_audit().unwrap(),
            store::ChainCheck::Intact { .. }
        ));
    }

    // `keys show` prints the line for the key serve made, and nothing secret.
    let out = command(state.path(), &sim.mcp_url())
        .args(["keys", "show"])
        .output()
        .unwrap();
    let line = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert!(line.starts_with("ed25519 "), "{line}");
    let key = fleetwatch::keys::ApproverKey::load_or_create(state.path()).unwrap();
    assert_eq!(line, key.key_line());
    let seed = std::fs::read(state.path().join(fleetwatch::keys::KEY_FILE)).unwrap();
    use base64::Engine as _;
    assert!(!line.contains(&base64::engine::general_purpose::STANDARD.encode(&seed)));

    // SIGTERM: a clean stop removes the socket.
    let pid = rustix::process::Pid::from_raw(serve.0.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while serve.0.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "serve did not stop");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!socket.exists());
    // No secret in what serve logged or audited.
    let mut log = String::new();
    use std::io::Read as _;
    serve
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut log)
        .unwrap();
    assert!(log.contains("chat on"), "{log}");
    let seed_b64 = base64::engine::general_purpose::STANDARD.encode(&seed);
    let store = Store::open(state.path()).unwrap();
    for row in store.audit_rows().unwrap() {
        assert!(!row.detail.contains("normal-token"));
        assert!(!row.detail.contains(&seed_b64));
    }
    assert!(!log.contains("normal-token"));
    assert!(!log.contains(&seed_b64));
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_without_a_sign_in_refuses_to_start_with_a_clear_message() {
    let state = tempfile::tempdir().unwrap();
    let out = command(state.path(), "http://127.0.0.1:9/mcp")
        .env_remove("FLEETWATCH_EPIPHAN_TOKEN")
        .arg("serve")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("FLEETWATCH_EPIPHAN_TOKEN"), "{err}");
}

fn replay_assistant(state: &Path) -> Arc<Assistant> {
    let config = common::config(state, &[]);
    let policy = common::policy();
    let reader = Arc::new(Reader::replay(
        common::example_replay(),
        jiff::Timestamp::now(),
        Arc::clone(&policy),
    ));
    Arc::new(Assistant::from_config(
        &config,
        policy,
        reader,
        Arc::new(Mutex::new(Store::in_memory().unwrap())),
        None,
        false,
    ))
}

/// A peer not on the operator list gets nothing but one line saying so (its uid, and where the
/// administrator adds it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_not_on_the_operator_list_gets_nothing() {
    let state = tempfile::tempdir().unwrap();
    let socket = state.path().join("chat.sock");
    let me = rustix::process::getuid().as_raw();
    let my_gid = rustix::process::getgid().as_raw();
    for (operators, should_answer) in [
        (
            Operators {
                uids: vec![me.wrapping_add(4242)],
                gids: vec![my_gid.wrapping_add(4242)],
            },
            false,
        ),
        (
            Operators {
                uids: vec![],
                gids: vec![my_gid],
            },
            true,
        ),
        (
            Operators {
                uids: vec![me],
                gids: vec![],
            },
            true,
        ),
    ] {
        let listener = serve::bind(&socket).unwrap();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve::serve(
            listener,
            replay_assistant(state.path()),
            operators.clone(),
            async move {
                let _ = stop_rx.await;
            },
        ));
        let result = tokio::time::timeout(
            Duration::from_secs(60),
            chat::ask(
                &socket,
                &ChatRequest {
                    question: "what's offline?".into(),
                    no_ai: false,
                },
            ),
        )
        .await
        .unwrap();
        assert_eq!(result.is_ok(), should_answer, "{operators:?}: {result:?}");
        match result {
            Ok(reply) => assert!(reply.answer.contains("Board Room"), "{}", reply.answer),
            // One line it can print, naming its uid and where it is added; no answer.
            Err(said) => assert!(
                said.contains(&format!("uid {me} is not an operator here"))
                    && said.contains("operator_uids"),
                "{said}"
            ),
        }
        let _ = stop_tx.send(());
        tokio::time::timeout(Duration::from_secs(60), server)
            .await
            .unwrap()
            .unwrap();
        std::fs::remove_file(&socket).unwrap();
    }
}

/// An operator added to `settings.yaml` while the assistant runs is answered from the next
/// question, and one removed is refused from the next, without a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_list_follows_the_settings_file_without_a_restart() {
    let state = tempfile::tempdir().unwrap();
    let socket = state.path().join("chat.sock");
    let me = rustix::process::getuid().as_raw();
    let settings = state.path().join("settings.yaml");
    std::fs::write(
        &settings,
        format!("operator_uids: [{}]\n", me.wrapping_add(4242)),
    )
    .unwrap();
    let config = fleetwatch::config::Config::from_lookup(|name| {
        (name == "FLEETWATCH_STATE_DIR").then(|| state.path().display().to_string())
    })
    .unwrap();
    let listener = serve::bind(&socket).unwrap();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve::serve(
        listener,
        replay_assistant(state.path()),
        serve::OperatorList::following(&config),
        async move {
            let _ = stop_rx.await;
        },
    ));
    let question = ChatRequest {
        question: "what's offline?".into(),
        no_ai: false,
    };
    let ask = || chat::ask(&socket, &question);
    let refused = ask().await.unwrap_err();
    assert!(refused.contains("is not an operator here"), "{refused}");
    std::fs::write(
        &settings,
        format!("operator_uids: [{}, {me}]\n", me.wrapping_add(4242)),
    )
    .unwrap();
    let reply = ask().await.expect("answered once added");
    assert!(reply.answer.contains("Board Room"), "{}", reply.answer);
    std::fs::write(
        &settings,
        format!("operator_uids: [{}]\n", me.wrapping_add(1)),
    )
    .unwrap();
    assert!(ask().await.is_err(), "refused again once removed");
    // A file that no longer reads keeps the list it had.
    std::fs::write(&settings, "operator_uids: [not a number\n").unwrap();
    assert!(ask().await.is_err());
    let _ = stop_tx.send(());
    tokio::time::timeout(Duration::from_secs(60), server)
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_or_malformed_questions_get_an_error_not_a_crash() {
    let state = tempfile::tempdir().unwrap();
    let socket = state.path().join("chat.sock");
    let listener = serve::bind(&socket).unwrap();
    let me = rustix::process::getuid().as_raw();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve::serve(
        listener,
        replay_assistant(state.path()),
        Operators {
            uids: vec![me],
            gids: vec![],
        },
        async move {
            let _ = stop_rx.await;
        },
    ));
    let long = "x".repeat(chat::MAX_QUESTION_CHARS + 1);
    let err = chat::ask(
        &socket,
        &ChatRequest {
            question: long,
            no_ai: false,
        },
    )
    .await
    .unwrap_err();
    assert!(err.contains("limited"), "{err}");
    let err = chat::ask(
        &socket,
        &ChatRequest {
            question: "   ".into(),
            no_ai: false,
        },
    )
    .await
    .unwrap_err();
    assert!(err.contains("empty"), "{err}");
    // Still serving.
    let reply = chat::ask(
        &socket,
        &ChatRequest {
            question: "what's offline?".into(),
            no_ai: true,
        },
    )
    .await
    .unwrap();
    assert!(!reply.answer.is_empty());
    let _ = stop_tx.send(());
    tokio::time::timeout(Duration::from_secs(60), server)
        .await
        .unwrap()
        .unwrap();
}

#[test]
fn a_stale_non_socket_file_is_not_replaced() {
    let state = tempfile::tempdir().unwrap();
    let path = state.path().join("chat.sock");
    std::fs::write(&path, "not a socket").unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let err = rt.block_on(async { serve::bind(&path).err().unwrap() });
    assert!(err.contains("not a socket"), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "not a socket");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_stores_a_private_token_that_reads_use() {
    use std::io::Write as _;
    let sim = fleetwatch_sim::start(SimConfig::demo()).await.unwrap();
    let state = tempfile::tempdir().unwrap();
    let mut child = command(state.path(), &sim.mcp_url())
        .env_remove("FLEETWATCH_EPIPHAN_TOKEN")
        .arg("login")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"normal-token\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert!(!String::from_utf8_lossy(&out.stdout).contains("normal-token"));
    let path = state.path().join(fleetwatch::reads::TOKEN_FILE);
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    // export-devices reads through that sign-in over MCP.
    let out = command(state.path(), &sim.mcp_url())
        .env_remove("FLEETWATCH_EPIPHAN_TOKEN")
        .arg("export-devices")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let written: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(state.path().join("known-devices.json")).unwrap(),
    )
    .unwrap();
    let mut expected = sim.team_devices("normal");
    expected.sort();
    assert_eq!(written["device_ids"], serde_json::json!(expected));
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_hangs_up_cancels_its_question() {
    use futures_util::SinkExt as _;
    let sim = fleetwatch_sim::start(SimConfig::demo()).await.unwrap();
    let state = tempfile::tempdir().unwrap();
    let config = common::config(
        state.path(),
        &[
            ("FLEETWATCH_EPIPHAN_URL", sim.mcp_url()),
            ("FLEETWATCH_ALLOW_LOOPBACK_HTTP", "1".into()),
            // Far longer than the test waits: only cancellation can free the reader.
            ("FLEETWATCH_READ_TIMEOUT_SECS", "600".into()),
        ],
    );
    let token_path = state.path().join("token");
    std::fs::write(&token_path, "normal-token").unwrap();
    std::fs::set_permissions(&token_path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let policy = common::policy();
    let reader = Reader::live(
        &config,
        Arc::clone(&policy),
        fleetwatch::reads::Token::from_file(&token_path).unwrap(),
    )
    .unwrap();
    let assistant = Arc::new(Assistant::from_config(
        &config,
        policy,
        Arc::new(reader),
        Arc::new(Mutex::new(Store::in_memory().unwrap())),
        None,
        false,
    ));
    let socket = state.path().join("chat.sock");
    let listener = serve::bind(&socket).unwrap();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve::serve(
        listener,
        assistant,
        Operators {
            uids: vec![rustix::process::getuid().as_raw()],
            gids: vec![],
        },
        async move {
            let _ = stop_rx.await;
        },
    ));

    sim.set_fault("get_devices_in_my_team", fleetwatch_sim::Fault::Hang);
    let stream = tokio::net::UnixStream::connect(&socket).await.unwrap();
    let mut framed = tokio_util::codec::Framed::new(stream, chat::codec());
    let body = serde_json::to_vec(&ChatRequest {
        question: "what's offline?".into(),
        no_ai: true,
    })
    .unwrap();
    framed
        .send(tokio_util::bytes::Bytes::from(body))
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !sim
        .calls()
        .iter()
        .any(|c| c.tool == "get_devices_in_my_team")
    {
        assert!(
            Instant::now() < deadline,
            "the question never reached Epiphan"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Ctrl-C in `ask` drops the connection like this.
    drop(framed);
    sim.clear_faults();
    // The hung read held the reader; a new question only gets through if the first was
    // cancelled rather than left waiting out its 600 s bound.
    let reply = tokio::time::timeout(
        Duration::from_secs(120),
        chat::ask(
            &socket,
            &ChatRequest {
                question: "what's offline?".into(),
                no_ai: true,
            },
        ),
    )
    .await
    .expect("the first question was not cancelled")
    .unwrap();
    assert!(
        reply.answer.to_lowercase().contains("offline"),
        "{}",
        reply.answer
    );
    let _ = stop_tx.send(());
    tokio::time::timeout(Duration::from_secs(60), server)
        .await
        .unwrap()
        .unwrap();
    sim.shutdown().await;
}
