//! The kill -9 loop: decisions, approvals and executions while the assistant or the executor is
//! SIGKILLed at random points; after every restart, nothing acknowledged is lost, no approval
//! ran twice, nothing is left pending or in flight, and both audit chains verify.
//!
//! 50 iterations by default; `FLEETWATCH_SOAK_ITERATIONS` raises it for a soak run.
//!
//! The executor side is driven through its socket with signed approvals (as the page sends
//! them); the assistant side through its store (as a turn and the page record proposals and
//! decisions) and the real `fleetwatch serve` binary, killed and restarted.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fleetwatch::store::{ChainCheck, NewProposal, Status, Store};
use fleetwatch_e2e::authenticator::SoftPasskey;
use fleetwatch_e2e::{
    Harness, Setup, binary, sandbox_devices, send, sign_with_passkeys, workspace_root,
};
use fleetwatch_protocol::Refusal;
use fleetwatch_protocol::wire::{ExecuteRequest, Request, Response};
use serde_json::json;

fn iterations() -> usize {
    std::env::var("FLEETWATCH_SOAK_ITERATIONS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(50)
}

/// A small deterministic generator, seeded from the clock and printed, so a failing run can
/// be repeated with `FLEETWATCH_SOAK_SEED`.
struct Rng(u64);

impl Rng {
    fn new() -> Rng {
        let seed = std::env::var("FLEETWATCH_SOAK_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| fleetwatch_e2e::now() as u64 ^ 0x9e37_79b9_7f4a_7c15);
        eprintln!("soak seed {seed} (set FLEETWATCH_SOAK_SEED to repeat)");
        Rng(seed.max(1))
    }

    fn below(&mut self, n: u64) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n.max(1)
    }
}

fn executor_chain_verifies(h: &Harness) -> Result<i64, String> {
    let conn = fleetwatch_executor::store::connect(&h.state.join("executor.db"))
        .map_err(|e| e.to_string())?;
    fleetwatch_executor::audit::verify(&conn)
        .map(|(rows, _)| rows as i64)
        .map_err(|e| e.to_string())
}

#[tokio::test(flavor = "multi_thread")]
async fn sigkill_the_executor_at_random_points_never_runs_an_approval_twice() {
    let mut rng = Rng::new();
    // An operator's passkey is required: every approval carries its assertion, whose counter
    // is stored with the nonce, so a kill between them must leave both or neither.
    let mut key = SoftPasskey::es256(1);
    let mut h = Harness::prepare(Setup {
        extra_key_lines: vec![key.line("Ana")],
        ..Setup::default()
    })
    .await;
    h.setup.allowlist = Some(sandbox_devices(&h.sim));
    h.spawn();
    h.wait_ready().await;
    let devices = sandbox_devices(&h.sim);
    let mut outcomes = std::collections::BTreeMap::<String, usize>::new();
    for i in 0..iterations() {
        let device = &devices[i % 3];
        let args = json!({"action": "start", "device_ids": [format!("{device}-1")]});
        let claims = h.claims("batch_recording", &args).await;
        let signed = sign_with_passkeys(&claims, 7, &mut [&mut key]);
        let writes_before = h.writes();
        // Send, and SIGKILL the executor somewhere between "before it read the frame" and
        // "after it answered", depending on the draw.
        let socket = h.socket.clone();
        let request = Request::Execute(ExecuteRequest {
            approval: signed.clone(),
            assistant_chain_head: [0x22; 32],
        });
        let in_flight = tokio::spawn(async move { send(&socket, &request).await });
        // Spread over the approval's life: before the frame is read, around the nonce and
        // the reads, and after the answer (a debug build takes tens of milliseconds).
        let delay = match rng.below(3) {
            0 => rng.below(15),
            1 => rng.below(60),
            _ => rng.below(400),
        };
        tokio::time::sleep(Duration::from_millis(delay)).await;
        h.kill();
        let acknowledged = in_flight.await.expect("client task");
        h.spawn();
        h.wait_ready().await;

        let state = h.execution_state(&claims.approval_id);
        let wrote = h.writes() - writes_before;
        assert!(wrote <= 1, "iteration {i}: {wrote} writes for one approval");
        // Whatever the client was told is what the store says.
        if let Some(Response::Executed(_)) = &acknowledged {
            assert!(
                matches!(state.as_deref(), Some("done" | "error" | "unknown")),
                "iteration {i}: acknowledged as executed, stored as {state:?}"
            );
            assert_eq!(wrote, 1, "iteration {i}: acknowledged, so written");
        }
        // A crash never leaves an execution in flight: start-up marks it unknown.
        assert_ne!(state.as_deref(), Some("in_flight"), "iteration {i}");
        if wrote == 1 {
            assert!(
                state.is_some(),
                "iteration {i}: a write with no execution row"
            );
        }
        // Presenting the same approval again: once the nonce is stored it is a replay and
        // nothing is written; if the kill came before the nonce, it may run now, once.
        let again = h.execute(signed).await;
        match state.as_deref() {
            Some(_) => {
                assert_eq!(
                    again,
                    Some(Response::Refused(Refusal::Replayed)),
                    "iteration {i}"
                );
                assert_eq!(h.writes() - writes_before, wrote, "iteration {i}");
            }
            None => {
                assert_eq!(wrote, 0, "iteration {i}");
                assert!(
                    h.writes() - writes_before <= 1,
                    "iteration {i}: re-presented once, ran at most once"
                );
            }
        }
        *outcomes
            .entry(state.unwrap_or_else(|| "not stored".into()))
            .or_default() += 1;
        executor_chain_verifies(&h).unwrap_or_else(|e| panic!("iteration {i}: {e}"));
    }
    eprintln!("executor kill points reached: {outcomes:?}");
    let verify = h.cli(&["audit", "verify"], None);
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stderr)
    );
}

// ---------------------------------------------------------------------------------------------
// The assistant

struct Serve(Option<Child>);

impl Serve {
    fn kill(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        self.kill();
    }
}

fn serve_command(
    state: &Path,
    mcp_url: &str,
    executor_socket: &Path,
    devices: &[String],
) -> Command {
    let mut cmd = Command::new(binary("fleetwatch", "fleetwatch"));
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port");
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env(
            "FLEETWATCH_POLICY",
            workspace_root().join("tool_policy.yaml"),
        )
        .env("FLEETWATCH_STATE_DIR", state)
        .env("FLEETWATCH_EPIPHAN_URL", mcp_url)
        .env("FLEETWATCH_ALLOW_LOOPBACK_HTTP", "1")
        .env("FLEETWATCH_EPIPHAN_TOKEN", "normal-token")
        .env("FLEETWATCH_EXECUTOR_SOCKET", executor_socket)
        .env("FLEETWATCH_WRITE_DEVICE_IDS", devices.join(","))
        .env("FLEETWATCH_APPROVE_PORT", port.to_string())
        .arg("serve")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd
}

async fn wait_serving(state: &Path, child: &mut Child) {
    let socket = state.join("chat.sock");
    let deadline = Instant::now() + Duration::from_secs(60);
    let ready =
        |p: &Path| std::fs::metadata(p).is_ok_and(|m| m.permissions().mode() & 0o777 == 0o660);
    while !ready(&socket) {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("fleetwatch serve exited: {status}");
        }
        assert!(
            Instant::now() < deadline,
            "fleetwatch serve never opened its socket"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn proposal(tool: &str, device: &str) -> NewProposal {
    NewProposal {
        tool: tool.into(),
        arguments: format!(r#"{{"action":"start","device_ids":["{device}-1"]}}"#),
        targets: vec![device.into()],
        fingerprint: "{}".into(),
        schema_version: 1,
        policy_digest: [0; 32],
        slot: "sandbox".into(),
        reason: String::new(),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn sigkill_the_assistant_at_random_points_keeps_decisions_and_expires_pending() {
    let mut rng = Rng::new();
    let h = {
        let mut h = Harness::prepare(Setup::default()).await;
        h.setup.allowlist = Some(sandbox_devices(&h.sim));
        h.spawn();
        h.wait_ready().await;
        h
    };
    let devices = sandbox_devices(&h.sim);
    let state = tempfile::tempdir().expect("state");
    std::fs::set_permissions(state.path(), std::fs::Permissions::from_mode(0o750)).expect("chmod");
    let mut serve = Serve(None);
    // Every decision acknowledged so far, with the status it must keep.
    let mut decided: Vec<(u64, Status)> = Vec::new();
    for i in 0..iterations() {
        // While the assistant is down: a turn leaves a proposal pending, and a person's
        // decision on another is acknowledged (committed) before the crash.
        let (pending, decision) = {
            let mut store = Store::open(state.path()).expect("store");
            let now = fleetwatch::store::now_secs();
            let device = &devices[i % devices.len()];
            let pending = store
                .insert_proposal(&proposal("batch_recording", device), now)
                .expect("insert");
            let other = store
                .insert_proposal(&proposal("batch_recording", device), now)
                .expect("insert");
            let status = if rng.below(2) == 0 {
                Status::Denied
            } else {
                Status::Expired
            };
            assert!(
                store
                    .decide(other, status, "decided before the crash", now)
                    .expect("decide")
            );
            (pending, (other, status))
        };
        decided.push(decision);

        let _ = std::fs::remove_file(state.path().join("chat.sock"));
        let mut child = serve_command(state.path(), &h.sim.mcp_url(), &h.socket, &devices)
            .spawn()
            .expect("serve starts");
        // Kill it at a random point: during start-up, or once it serves.
        let delay = rng.below(120);
        if rng.below(2) == 0 {
            wait_serving(state.path(), &mut child).await;
        }
        tokio::time::sleep(Duration::from_millis(delay)).await;
        let _ = child.kill();
        let _ = child.wait();

        // Restart and check. SIGKILL leaves the socket file behind; remove it so readiness
        // means the new process bound it (after its start-up work), not the old one's file.
        let _ = std::fs::remove_file(state.path().join("chat.sock"));
        let mut child = serve_command(state.path(), &h.sim.mcp_url(), &h.socket, &devices)
            .spawn()
            .expect("serve restarts");
        wait_serving(state.path(), &mut child).await;
        serve.0 = Some(child);
        let store = Store::open(state.path()).expect("store");
        assert_eq!(
            store.proposal(pending).expect("read").map(|p| p.status),
            Some(Status::Expired),
            "iteration {i}: a pending proposal is expired at start"
        );
        assert!(
            store.pending().expect("pending").is_empty(),
            "iteration {i}: nothing pending after a start"
        );
        for (id, status) in &decided {
            assert_eq!(
                store.proposal(*id).expect("read").map(|p| p.status),
                Some(*status),
                "iteration {i}: proposal {id}'s acknowledged decision"
            );
        }
        match store.verify_audit().expect("verify") {
            ChainCheck::Intact { .. } => {}
            other => panic!("iteration {i}: assistant audit chain: {other:?}"),
        }
        drop(store);
        serve.kill();
    }
    assert_eq!(h.writes(), 0, "no proposal here was approved");
}
