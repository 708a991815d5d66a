//! The executor under faults and races: its database pragmas on every connection, concurrent
//! presentations of one approval, idle connections that hold the socket, an Epiphan read that
//! never answers, a full disk under the state folder, and a wall clock ten minutes off.
//!
//! Every refusal is checked together with the simulator's write log: nothing may be written.
//!
//! The disk-full test mounts a tmpfs and so needs root (CI runs as root); elsewhere it fails
//! with a message saying so, unless `FLEETWATCH_REQUIRE_ROOT=0`. The clock test needs
//! libfaketime (Debian's `faketime` package, which `.ci/run` installs).

use std::process::Stdio;
use std::time::{Duration, Instant};

use fleetwatch_e2e::authenticator::SoftPasskey;
use fleetwatch_e2e::faults::{self, Tmpfs};
use fleetwatch_e2e::{Harness, Setup, frame, sandbox_devices, shifted, sign, sign_with_passkeys};
use fleetwatch_protocol::Refusal;
use fleetwatch_protocol::claims::ApprovalClaims;
use fleetwatch_protocol::hex::encode as hex;
use fleetwatch_protocol::wire::{self, ExecuteRequest, OutcomeKind, Request, Response};
use fleetwatch_sim::Fault;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn start_recording(device: &str) -> Value {
    json!({"action": "start", "device_ids": [format!("{device}-1")]})
}

/// A harness whose executor is fenced to the sandbox devices, not yet started.
async fn prepared(setup: Setup) -> Harness {
    let mut h = Harness::prepare(setup).await;
    h.setup.allowlist = Some(sandbox_devices(&h.sim));
    h
}

async fn started(setup: Setup) -> Harness {
    let mut h = prepared(setup).await;
    h.spawn();
    h.wait_ready().await;
    h
}

fn device(h: &Harness, i: usize) -> String {
    sandbox_devices(&h.sim)[i].clone()
}

async fn expect_done(h: &Harness, claims: &ApprovalClaims, case: &str) {
    let response = h.execute(sign(claims, 7)).await;
    let Some(Response::Executed(outcome)) = &response else {
        panic!("{case}: {response:?}\n{}", h.log_text())
    };
    assert_eq!(outcome.kind, OutcomeKind::Done, "{case}");
}

// ---------------------------------------------------------------------------------------------
// Pragmas

fn pragma_i64(conn: &rusqlite::Connection, name: &str) -> i64 {
    conn.query_row(&format!("PRAGMA {name}"), [], |r| r.get(0))
        .unwrap_or_else(|e| panic!("PRAGMA {name}: {e}"))
}

fn journal_mode(conn: &rusqlite::Connection) -> String {
    conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .expect("journal_mode")
}

#[tokio::test(flavor = "multi_thread")]
async fn every_executor_connection_reads_back_wal_full_and_a_busy_timeout() {
    let h = started(Setup::default()).await;
    // Put rows in the database through the running executor first.
    let claims = h
        .claims("batch_recording", &start_recording(&device(&h, 0)))
        .await;
    expect_done(&h, &claims, "control").await;
    let db = h.state.join("executor.db");

    // Every connection the executor opens goes through `store::connect` (the server's store,
    // `audit verify`, `doctor`). Open several at once, while the server holds its own, and read
    // each one's pragmas back.
    let conns: Vec<rusqlite::Connection> = (0..4)
        .map(|_| fleetwatch_executor::store::connect(&db).expect("connect"))
        .collect();
    for (i, conn) in conns.iter().enumerate() {
        assert_eq!(journal_mode(conn), "wal", "connection {i}");
        assert_eq!(pragma_i64(conn, "synchronous"), 2, "connection {i}: FULL");
        assert!(pragma_i64(conn, "busy_timeout") > 0, "connection {i}");
        assert_eq!(
            fleetwatch_executor::store::pragmas(conn).expect("pragmas"),
            ("wal".to_string(), 2),
            "connection {i}"
        );
    }
    // A fresh database opened by the store, as the executor does at start.
    let dir = tempfile::tempdir().expect("tempdir");
    let fresh = dir.path().join("executor.db");
    let store = fleetwatch_executor::store::Store::open(&fresh).expect("open");
    let conn = fleetwatch_executor::store::connect(&fresh).expect("connect");
    assert_eq!(journal_mode(&conn), "wal");
    assert_eq!(pragma_i64(&conn, "synchronous"), 2);
    assert!(pragma_i64(&conn, "busy_timeout") > 0);
    drop(store);

    // WAL is a property of the file: even a connection that sets nothing sees it.
    let plain = rusqlite::Connection::open(&db).expect("plain");
    assert_eq!(journal_mode(&plain), "wal");

    // And the binary itself reports the same from its own connection.
    let doctor = h.cli(&["doctor"], None);
    let text = String::from_utf8_lossy(&doctor.stdout).to_string()
        + &String::from_utf8_lossy(&doctor.stderr);
    assert!(
        text.lines().any(|l| l.starts_with("OK")
            && l.contains("database")
            && l.contains("WAL, synchronous=FULL")),
        "{text}"
    );
}

// ---------------------------------------------------------------------------------------------
// Races

/// Opens a connection and frames an `Execute`, but holds the bytes until `go` is released, so
/// every request reaches the executor at once.
async fn execute_on_signal(
    socket: std::path::PathBuf,
    body: Vec<u8>,
    go: std::sync::Arc<tokio::sync::Barrier>,
) -> Option<Response> {
    let mut stream = tokio::net::UnixStream::connect(&socket).await.ok()?;
    go.wait().await;
    stream.write_all(&frame(&body)).await.ok()?;
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(60), stream.read_to_end(&mut answer))
        .await
        .ok()?
        .ok()?;
    fleetwatch_e2e::decode_answer(&answer)
}

#[tokio::test(flavor = "multi_thread")]
async fn sixteen_simultaneous_executes_of_one_approval_make_one_write() {
    sixteen_at_once(false).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sixteen_simultaneous_executes_with_a_passkey_required_make_one_write() {
    sixteen_at_once(true).await;
}

/// Sixteen presentations of one approval at once; with `passkey`, an operator's passkey is
/// enrolled and every copy carries its one assertion, so the counter is stored once too.
async fn sixteen_at_once(passkey: bool) {
    let mut key = SoftPasskey::es256(1);
    let setup = Setup {
        extra_key_lines: if passkey {
            vec![key.line("Ana")]
        } else {
            Vec::new()
        },
        // Without the passkey, the trial mode: the assistant's signature alone.
        trial: !passkey,
        ..Setup::default()
    };
    let h = started(setup).await;
    let claims = h
        .claims("batch_recording", &start_recording(&device(&h, 0)))
        .await;
    let approval = if passkey {
        sign_with_passkeys(&claims, 7, &mut [&mut key])
    } else {
        sign(&claims, 7)
    };
    if passkey {
        // Without the assertion the same claims are refused, before the nonce.
        assert_eq!(
            h.execute(sign(&claims, 7)).await,
            Some(Response::Refused(Refusal::PasskeyRequired))
        );
    }
    let body = wire::encode_request(&Request::Execute(ExecuteRequest {
        approval,
        assistant_chain_head: [0x11; 32],
    }))
    .expect("encode");
    let go = std::sync::Arc::new(tokio::sync::Barrier::new(16));
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            tokio::spawn(execute_on_signal(
                h.socket.clone(),
                body.clone(),
                go.clone(),
            ))
        })
        .collect();
    let mut results = Vec::new();
    for t in tasks {
        results.push(t.await.expect("task"));
    }
    let executed = results
        .iter()
        .filter(|r| matches!(r, Some(Response::Executed(o)) if o.kind == OutcomeKind::Done))
        .count();
    let replayed = results
        .iter()
        .filter(|r| **r == Some(Response::Refused(Refusal::Replayed)))
        .count();
    assert_eq!((executed, replayed), (1, 15), "{results:?}");
    assert_eq!(h.writes(), 1, "one write for one approval");
    let id = hex(&claims.approval_id);
    let rows = h.audit_rows();
    assert_eq!(
        rows.iter()
            .filter(|r| r.3 == id && r.1 == "accepted")
            .count(),
        1,
        "the nonce was stored once: {rows:?}"
    );
    // Every loser audited as a replay: under the burst rule (nothing was spent by them, so the
    // same frame could come again and again), in rows that say how many they stand for.
    assert_eq!(
        h.await_refusals(Refusal::Replayed.code(), 15).await,
        15,
        "every loser audited as a replay"
    );
    assert!(
        h.audit_rows()
            .iter()
            .filter(|r| r.2 == Refusal::Replayed.code())
            .all(|r| r.3 == id),
        "each replay row names the approval"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn sixty_four_idle_connections_do_not_keep_a_valid_approval_out() {
    // The deployed default connection limit, far fewer than the idle connections, and a frame
    // deadline far longer than the approval takes: it must be answered while every idle
    // connection is still open, not once they time out.
    let setup = Setup {
        max_connections: 16,
        frame_timeout_secs: 120,
        ..Setup::default()
    };
    let h = started(setup).await;
    let claims = h
        .claims("batch_recording", &start_recording(&device(&h, 0)))
        .await;
    let mut idle = faults::idle_connections(&h.socket, 64).await;
    assert_eq!(idle.len(), 64, "all idle connections open");
    // Let the executor accept them all before the real request arrives.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started_at = Instant::now();
    let response = h.execute(sign(&claims, 7)).await;
    let finished = fleetwatch_e2e::now();
    let Some(Response::Executed(outcome)) = &response else {
        panic!(
            "a valid approval behind 64 idle connections: {response:?}\n{}",
            h.log_text()
        )
    };
    assert_eq!(outcome.kind, OutcomeKind::Done);
    assert!(
        finished < claims.expires_at,
        "completed after its expiry ({:?})",
        started_at.elapsed()
    );
    assert_eq!(h.writes(), 1);
    let closed = faults::closed_by_server(&mut idle).await;
    assert_eq!(
        closed, 0,
        "answered while all 64 still waited for their frames"
    );
    drop(idle);
    assert!(matches!(
        h.request(&Request::Status).await,
        Some(Response::Status(_))
    ));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_connection_that_sends_no_whole_frame_is_closed_at_the_frame_deadline() {
    let setup = Setup {
        frame_timeout_secs: 1,
        ..Setup::default()
    };
    let h = started(setup).await;
    let mut idle = faults::idle_connections(&h.socket, 4).await;
    // Half a frame: a length prefix and nothing after it.
    idle[0]
        .write_all(&100u32.to_be_bytes())
        .await
        .expect("write");
    let mut closed = 0;
    for _ in 0..100 {
        closed = faults::closed_by_server(&mut idle).await;
        if closed == idle.len() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(closed, idle.len(), "every idle connection closed");
    assert!(
        h.audit_rows()
            .iter()
            .any(|r| r.2 == Refusal::FrameTruncated.code()),
        "audited as a truncated frame"
    );
}

// ---------------------------------------------------------------------------------------------
// Bounded waits

async fn hung_read_is_refused(tool: &str) {
    let setup = Setup {
        env: vec![("FLEETWATCH_READ_TIMEOUT_SECS".into(), "2".into())],
        ..Setup::default()
    };
    let h = started(setup).await;
    let claims = h
        .claims("batch_recording", &start_recording(&device(&h, 0)))
        .await;
    h.sim.set_fault(tool, Fault::Hang);
    let t = Instant::now();
    let response = h.execute(sign(&claims, 7)).await;
    let waited = t.elapsed();
    assert_eq!(
        response,
        Some(Response::Refused(Refusal::ReadFailed)),
        "{tool}\n{}",
        h.log_text()
    );
    // It did wait for the read (so the refusal is the timeout, not something earlier), and
    // it gave up: far sooner than the 15-second default or the client's own patience.
    assert!(waited >= Duration::from_secs(2), "{tool}: {waited:?}");
    assert!(waited < Duration::from_secs(60), "{tool}: {waited:?}");
    assert!(
        h.sim
            .calls()
            .iter()
            .any(|c| c.tool == tool && c.answered_ns.is_none()),
        "{tool}: the hanging read was made"
    );
    assert_eq!(h.writes(), 0, "{tool}: nothing written");
    assert_eq!(
        h.execution_state(&claims.approval_id).as_deref(),
        Some("refused")
    );
    assert!(
        h.log_text().contains("no answer in time"),
        "{tool}: the log says why\n{}",
        h.log_text()
    );
    assert!(Refusal::ReadFailed.message().contains("Nothing ran"));
    // The executor serves the next approval once Epiphan answers again.
    h.sim.clear_faults();
    let next = h
        .claims("batch_recording", &start_recording(&device(&h, 0)))
        .await;
    expect_done(&h, &next, tool).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_device_list_read_that_never_answers_is_refused_within_the_read_timeout() {
    hung_read_is_refused("get_devices_in_my_team").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_status_read_that_never_answers_is_refused_within_the_read_timeout() {
    hung_read_is_refused("get_recorder_status_for_devices").await;
}

/// The assistant's side of the same fault: `fleetwatch serve` (keyword answers, no model, so
/// only the read is waited on) gives up at its read timeout, and `fleetwatch ask` is told what
/// did not answer.
#[tokio::test(flavor = "multi_thread")]
async fn the_assistant_gives_up_on_a_read_that_never_answers_and_says_so() {
    let sim = fleetwatch_sim::start(fleetwatch_sim::SimConfig::demo())
        .await
        .expect("simulator");
    sim.set_fault("get_devices_in_my_team", Fault::Hang);
    let state = fleetwatch_e2e::page::AssistantState::new();
    // Read-only: no proposing, so no executor is needed.
    std::fs::remove_file(state.path().join(fleetwatch::config::SETTINGS_FILE)).expect("settings");
    let serve = state
        .command()
        .env("FLEETWATCH_EPIPHAN_URL", sim.mcp_url())
        .env("FLEETWATCH_ALLOW_LOOPBACK_HTTP", "1")
        .env("FLEETWATCH_EPIPHAN_TOKEN", "normal-token")
        .env("FLEETWATCH_READ_TIMEOUT_SECS", "2")
        .env(
            "FLEETWATCH_EXECUTOR_SOCKET",
            state.path().join("no-executor.sock"),
        )
        .arg("serve")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("serve");
    let _serve = fleetwatch_e2e::KillOnDrop(serve);
    let socket = state.path().join("chat.sock");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !socket.exists() {
        assert!(
            Instant::now() < deadline,
            "serve did not open its chat socket"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let mut ask = state.command();
    ask.args(["ask", "what's offline?"]).stdin(Stdio::null());
    let t = Instant::now();
    let out = tokio::task::spawn_blocking(move || ask.output())
        .await
        .expect("join")
        .expect("fleetwatch ask runs");
    let waited = t.elapsed();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("did not answer get_devices_in_my_team within 2 s"),
        "the answer names the read and the bound: {text}"
    );
    // It waited for the read and then gave up, far sooner than the 15-second default.
    assert!(waited >= Duration::from_secs(2), "{waited:?}");
    assert!(waited < Duration::from_secs(12), "{waited:?}: {text}");
    assert!(
        sim.calls()
            .iter()
            .any(|c| c.tool == "get_devices_in_my_team" && c.answered_ns.is_none()),
        "the hanging read was made"
    );
    sim.shutdown().await;
}

// ---------------------------------------------------------------------------------------------
// A kept session that Epiphan forgot

/// The executor keeps its MCP session between requests. When Epiphan has forgotten it (expiry,
/// restart), the first read is answered 404; reads may be repeated, so the executor opens a new
/// session and reads again, and the approval still runs, once.
#[tokio::test(flavor = "multi_thread")]
async fn a_forgotten_session_is_replaced_for_the_reads_and_the_write_still_goes_once() {
    let h = started(Setup::default()).await;
    let first = h
        .claims("batch_recording", &start_recording(&device(&h, 0)))
        .await;
    expect_done(&h, &first, "first approval").await;
    // Bound before Epiphan forgets, so the 404 meets the Execute's own first read.
    let second = h
        .claims("batch_recording", &start_recording(&device(&h, 1)))
        .await;
    h.sim.end_sessions();
    expect_done(&h, &second, "after Epiphan forgot the session").await;
    assert_eq!(h.writes(), 2, "one write per approval");
    assert!(
        h.log_text().contains("opening a new one"),
        "the renewal is logged\n{}",
        h.log_text()
    );
}

// ---------------------------------------------------------------------------------------------
// Disk full

#[tokio::test(flavor = "multi_thread")]
async fn a_full_disk_refuses_before_any_write_and_service_resumes_when_space_is_freed() {
    let mut h = prepared(Setup::default()).await;
    let mount = match Tmpfs::mount(&h.state, 2 * 1024 * 1024) {
        Ok(m) => m,
        Err(e) if !faults::root_required() => {
            eprintln!("skipped (FLEETWATCH_REQUIRE_ROOT=0): {e}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    // The mount hid the token slot the harness wrote; put it back on the tmpfs.
    {
        use std::os::unix::fs::PermissionsExt;
        let slot = mount.path().join("sandbox.token");
        std::fs::write(&slot, "sandbox-token").expect("slot");
        std::fs::set_permissions(&slot, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    }
    h.spawn();
    h.wait_ready().await;
    let first = h
        .claims("batch_recording", &start_recording(&device(&h, 0)))
        .await;
    expect_done(&h, &first, "before the disk fills").await;

    let (filler, bytes) = faults::fill(mount.path(), "filler").expect("fill");
    assert!(bytes > 0, "the filler took the free space");
    let blocked = h
        .claims("batch_recording", &start_recording(&device(&h, 1)))
        .await;
    let signed = sign(&blocked, 7);
    let writes_before = h.writes();
    let calls_before = h.sim.calls().len();
    let response = h.execute(signed.clone()).await;
    assert_eq!(
        response,
        Some(Response::Refused(Refusal::NonceNotStored)),
        "{}",
        h.log_text()
    );
    assert!(
        Refusal::NonceNotStored.message().contains("disk is full"),
        "the operator is told what to do"
    );
    assert_eq!(h.writes(), writes_before, "no write");
    assert_eq!(
        h.sim.calls().len(),
        calls_before,
        "refused before any read, let alone a write"
    );
    let log = h.log_text();
    assert!(
        log.contains("nonce not stored") && log.contains("full"),
        "the log names the cause:\n{log}"
    );
    // The failed transaction left nothing behind: the approval is not marked used.
    std::fs::remove_file(&filler).expect("free the space");
    assert_eq!(h.execution_state(&blocked.approval_id), None);
    let response = h.execute(signed).await;
    let Some(Response::Executed(outcome)) = &response else {
        panic!(
            "the same approval once space is back: {response:?}\n{}",
            h.log_text()
        )
    };
    assert_eq!(outcome.kind, OutcomeKind::Done);
    assert_eq!(h.writes(), writes_before + 1);
    let last = h
        .claims("batch_recording", &start_recording(&device(&h, 2)))
        .await;
    expect_done(&h, &last, "after space is freed").await;
    let verify = h.cli(&["audit", "verify"], None);
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stderr)
    );
    h.kill();
    drop(mount);
}

// ---------------------------------------------------------------------------------------------
// Clock

#[tokio::test(flavor = "multi_thread")]
async fn an_executor_clock_ten_minutes_off_refuses_and_writes_nothing() {
    let mut h = prepared(Setup::default()).await;
    for (offset, shift, expected) in [
        ("+10m", 600, Refusal::Expired),
        ("-10m", -600, Refusal::NotYetValid),
    ] {
        h.spawn_under_faketime(offset).await;
        let claims = h
            .claims("batch_recording", &start_recording(&device(&h, 0)))
            .await;
        let before = h.writes();
        let response = h.execute(sign(&claims, 7)).await;
        assert_eq!(
            response,
            Some(Response::Refused(expected.clone())),
            "executor clock {offset}\n{}",
            h.log_text()
        );
        assert_eq!(h.writes(), before, "{offset}: nothing written");
        assert_eq!(
            h.execution_state(&claims.approval_id),
            None,
            "{offset}: refused before the nonce"
        );
        assert!(
            h.audit_rows()
                .iter()
                .any(|r| r.3 == hex(&claims.approval_id) && r.2 == expected.code()),
            "{offset}: audited"
        );
        // Positive control: the same change approved on the executor's (shifted) clock runs,
        // so the refusal above is the clock and nothing else.
        expect_done(&h, &shifted(&claims, shift), offset).await;
        assert_eq!(h.writes(), before + 1);
        h.kill();
    }
}
