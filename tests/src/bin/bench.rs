//! The write path, measured: the real executor binary as deployed (`--profile deploy`) on a
//! Unix socket, the simulator on loopback, and a table of figures against their targets.
//!
//! `cargo run --release -p fleetwatch-e2e --bin bench [-- --approvals N] [-- --dir PATH]`
//!
//! * approve → write over N approvals (default 1000, or `FLEETWATCH_BENCH_APPROVALS`): the
//!   client-side total; the simulator's own time answering the reads and the write; the gap
//!   between the last read's answer and the write's arrival (from the simulator's call
//!   records); the executor's overhead (total minus the simulator's time); and, because they
//!   happen inside the executor where no clock can be read from outside, the executor's own
//!   check functions (signature, claims, freshness, nonce commit, policy, fence) timed
//!   in-process on the same approvals and the same disk.
//! * the same path with operators' passkeys enrolled: approvals carrying one assertion (ES256)
//!   and two (ES256 and Ed25519) in turn, next to the assistant-only figures of the same run;
//!   each algorithm's verification and the approver file's per-request read, in-process;
//! * the raw `fdatasync` of the same disk, in the same state folder, in the same run;
//! * the executor's idle RSS and its cold start (spawn → a `Status` answered);
//! * `fleetwatch serve`'s idle RSS;
//! * a 10,000-device team parsed, redacted and fingerprinted in a child process (its peak RSS
//!   is its own);
//! * 10,000 malformed frames from another process, and what they do to a valid approval.
//!
//! `bench --edges [--executor BINARY]` measures the socket's edges instead: the audit rows and
//! bytes the executor writes per refused frame during a 10-second garbage flood, and the
//! latency of an `Execute` while 64 connections sit idle on the socket (kept open: each one
//! the executor closes is opened again). `--executor` measures another build, say an older
//! commit's, for a before-and-after.
//!
//! `bench --trusted-base [--root CHECKOUT] [--executor BINARY]` prints instead what a reviewer
//! of the executor has to read: its third-party crates, its idle RSS (median of three starts)
//! and the lines of this project's code it links, against their targets. `--root` counts
//! another checkout (say, an older commit) and `--executor` measures a binary built there.
#![forbid(unsafe_code)]

#[path = "bench/questions.rs"]
mod questions;
#[path = "bench/snapshot.rs"]
mod snapshot;

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fleetwatch_e2e::authenticator::SoftPasskey;
use fleetwatch_e2e::faults::proc_status_kib;
use fleetwatch_e2e::size;
use fleetwatch_e2e::{canonical, frame, now, random_id, send, sign, test_key, workspace_root};
use fleetwatch_protocol::claims::{self, ApprovalClaims};
use fleetwatch_protocol::wire::{DescribeRequest, ExecuteRequest, OutcomeKind, Request, Response};
use fleetwatch_sim::{SimConfig, SimHandle};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// Targets

const TARGET_OVERHEAD_P99_MS: f64 = 3.0;
const TARGET_OVERHEAD_FSYNC_RATIO: f64 = 3.0;
const TARGET_GAP_P99_US: f64 = 200.0;
const TARGET_EXECUTOR_RSS_MIB: f64 = 8.0;
const TARGET_ASSISTANT_RSS_MIB: f64 = 40.0;
const TARGET_COLD_START_MS: f64 = 20.0;
const TARGET_FLEET_MS: f64 = 50.0;
const TARGET_SNAPSHOT_RSS_MIB: f64 = 64.0;
const TARGET_FLOOD_DELAY_MS: f64 = 10.0;
// The trusted base's targets after the redaction engine left the executor: the p256 stack
// came with passkeys and stays (a reason for each crate is in `executor/allowed-deps`).
const TARGET_EXECUTOR_CRATES: usize = 130;
const TARGET_LINKED_LINES: usize = 9_000;

const FLEET_DEVICES: usize = 10_000;
const FLOOD_FRAMES: usize = 10_000;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("--child-fleet") => child_fleet(Path::new(
            args.get(2).map(String::as_str).unwrap_or_default(),
        )),
        Some("--child-snapshot") => snapshot::child(
            Path::new(args.get(2).map(String::as_str).unwrap_or_default()),
            FLEET_DEVICES,
        ),
        Some("--fleet") => {
            let mut t = Table::new();
            fleet_rows(&mut t, &fleet_in_child());
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .expect("tokio runtime");
            let before = runtime.block_on(questions::costs(false, &fleet_texts));
            let now = runtime.block_on(questions::costs(true, &fleet_texts));
            for (b, n) in before.iter().zip(&now) {
                t.single(
                    &format!(
                        "{} rooms, “{}”: sent to the model (before → now)",
                        n.rooms, n.question
                    ),
                    format!(
                        "{} B in {} calls → {} B in {} calls (largest {} B, {:.0} ms)",
                        b.bytes, b.calls, n.bytes, n.calls, n.largest, n.ms
                    ),
                    Some((n.largest <= 16 * 1024, "each ≤ 16 KB")),
                );
            }
            t.print();
        }
        Some("--trusted-base") => {
            let mut root = workspace_root();
            let mut executor = None;
            let mut it = args.iter().skip(2);
            while let Some(a) = it.next() {
                match a.as_str() {
                    "--root" => root = it.next().map(PathBuf::from).unwrap_or(root),
                    "--executor" => executor = it.next().map(PathBuf::from),
                    other => {
                        eprintln!("unknown argument {other}; see --help");
                        std::process::exit(2);
                    }
                }
            }
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .expect("tokio runtime");
            runtime.block_on(trusted_base(root, executor));
        }
        Some("--edges") => {
            let executor = match (args.get(2).map(String::as_str), args.get(3)) {
                (Some("--executor"), Some(path)) => Some(PathBuf::from(path)),
                (None, _) => None,
                _ => {
                    eprintln!("bench --edges [--executor BINARY]");
                    std::process::exit(2);
                }
            };
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .expect("tokio runtime");
            runtime.block_on(edges(executor));
        }
        Some("--child-flood-for") => child_flood(
            Path::new(args.get(2).map(String::as_str).unwrap_or_default()),
            FloodLimit::Until(
                Instant::now()
                    + Duration::from_secs(args.get(3).and_then(|n| n.parse().ok()).unwrap_or(10)),
            ),
            // The frame to send: a file's bytes, else malformed garbage.
            args.get(4)
                .map(|path| std::fs::read(path).expect("the flood's frame")),
        ),
        Some("--child-flood") => child_flood(
            Path::new(args.get(2).map(String::as_str).unwrap_or_default()),
            FloodLimit::Frames(
                args.get(3)
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(FLOOD_FRAMES),
            ),
            None,
        ),
        _ => {
            let mut approvals = std::env::var("FLEETWATCH_BENCH_APPROVALS")
                .ok()
                .and_then(|n| n.parse().ok())
                .unwrap_or(1000usize);
            let mut dir = None;
            let mut it = args.iter().skip(1);
            while let Some(a) = it.next() {
                match a.as_str() {
                    "--approvals" => {
                        approvals = it.next().and_then(|n| n.parse().ok()).unwrap_or(approvals)
                    }
                    "--dir" => dir = it.next().map(PathBuf::from),
                    "-h" | "--help" => {
                        println!(
                            "bench [--approvals N] [--dir PATH]\n  N approvals (default 1000, or FLEETWATCH_BENCH_APPROVALS); state folders under PATH (default: the system temp folder)\nbench --trusted-base [--root CHECKOUT] [--executor BINARY]\n  the executor's crates, idle RSS and linked lines against their targets"
                        );
                        return;
                    }
                    other => {
                        eprintln!("unknown argument {other}; see --help");
                        std::process::exit(2);
                    }
                }
            }
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .expect("tokio runtime");
            runtime.block_on(run(approvals.max(1), dir));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Statistics and the table

#[derive(Clone, Copy)]
enum Unit {
    Us,
    Ms,
    MiB,
}

fn fmt(value: f64, unit: Unit) -> String {
    match unit {
        Unit::Us => format!("{value:.0} µs"),
        Unit::Ms => format!("{value:.2} ms"),
        Unit::MiB => format!("{value:.1} MiB"),
    }
}

/// Nearest-rank percentile of microsecond samples.
fn pct(samples: &[f64], p: f64) -> f64 {
    if samples.is_empty() {
        return f64::NAN;
    }
    let mut s = samples.to_vec();
    s.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * s.len() as f64).ceil() as usize;
    s[rank.clamp(1, s.len()) - 1]
}

struct Table {
    rows: Vec<[String; 5]>,
}

impl Table {
    fn new() -> Table {
        Table { rows: Vec::new() }
    }

    /// A row of p50/p99 (µs samples) with an optional p99 target.
    fn dist(&mut self, what: &str, samples: &[f64], unit: Unit, target: Option<(f64, &str)>) {
        let scale = match unit {
            Unit::Ms => 1000.0,
            _ => 1.0,
        };
        let p50 = pct(samples, 50.0) / scale;
        let p99 = pct(samples, 99.0) / scale;
        let (t, verdict) = match target {
            Some((limit, text)) => (text.to_string(), verdict(p99 <= limit)),
            None => ("—".into(), String::new()),
        };
        self.rows
            .push([what.into(), fmt(p50, unit), fmt(p99, unit), t, verdict]);
    }

    /// A row with one value.
    fn single(&mut self, what: &str, value: String, target: Option<(bool, &str)>) {
        let (t, v) = match target {
            Some((met, text)) => (text.to_string(), verdict(met)),
            None => ("—".into(), String::new()),
        };
        self.rows.push([what.into(), value, String::new(), t, v]);
    }

    fn print(&self) {
        let head = ["measure", "p50 / value", "p99", "target", "met?"];
        let mut widths = head.map(|h| h.chars().count());
        for r in &self.rows {
            for (i, c) in r.iter().enumerate() {
                widths[i] = widths[i].max(c.chars().count());
            }
        }
        let line = |cells: &[String; 5]| {
            let mut out = String::from("|");
            for (i, c) in cells.iter().enumerate() {
                let pad = widths[i] - c.chars().count();
                out.push_str(&format!(" {c}{} |", " ".repeat(pad)));
            }
            out
        };
        println!("{}", line(&head.map(String::from)));
        let sep: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
        println!("|-{}-|", sep.join("-|-"));
        for r in &self.rows {
            println!("{}", line(r));
        }
    }
}

fn verdict(met: bool) -> String {
    if met { "met" } else { "MISSED" }.to_string()
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

// ---------------------------------------------------------------------------------------------
// The rig: simulator in-process, the deployed executor binary on a socket in a state folder

/// The binary `deploy/install.sh` installs: built with the `deploy` profile (whole-program
/// optimisation, see the workspace Cargo.toml) into `target/deploy`, rebuilt when older than
/// the sources. That is what runs in production, so that is what is measured.
fn deploy_binary(package: &str, name: &str) -> PathBuf {
    // target/release/bench → target/deploy
    let dir = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent()?.parent().map(|t| t.join("deploy")))
        .unwrap_or_default();
    fleetwatch_e2e::binaries::fresh_binary(
        &workspace_root(),
        &dir,
        &["--profile", "deploy"],
        package,
        name,
    )
}

struct Rig {
    _dir: tempfile::TempDir,
    sim: SimHandle,
    exe: PathBuf,
    socket: PathBuf,
    state: PathBuf,
    config: PathBuf,
    policy: PathBuf,
    keys: PathBuf,
    log: PathBuf,
    allowlist: Vec<String>,
    child: Option<Child>,
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

impl Rig {
    /// The rig around `exe`, or around the deploy build of this checkout when `None`.
    async fn new(base: Option<&Path>, exe: Option<PathBuf>) -> Rig {
        let sim = fleetwatch_sim::start(SimConfig::demo())
            .await
            .expect("simulator");
        let dir = match base {
            Some(b) => tempfile::tempdir_in(b),
            None => tempfile::tempdir(),
        }
        .expect("temp dir");
        let etc = dir.path().join("etc");
        let run = dir.path().join("run");
        let state = dir.path().join("state");
        for (d, mode) in [(&etc, 0o755), (&run, 0o750), (&state, 0o700)] {
            std::fs::create_dir(d).expect("mkdir");
            chmod(d, mode);
        }
        let policy = etc.join("tool_policy.yaml");
        std::fs::copy(workspace_root().join("tool_policy.yaml"), &policy).expect("policy");
        chmod(&policy, 0o644);
        let keys = etc.join("approvers.pub");
        std::fs::write(
            &keys,
            claims::key_line(&test_key(7).verifying_key(), "bench") + "\n",
        )
        .expect("keys");
        chmod(&keys, 0o644);
        let socket = run.join("executor.sock");
        let config = etc.join("executor.yaml");
        let uid = rustix::process::getuid().as_raw();
        std::fs::write(
            &config,
            format!(
                "socket: {}\nallowed_uids: [{uid}]\napprover_keys: {}\npolicy: {}\nstate_dir: {}\nmax_connections: 16\n{}\
                 limits:\n  writes_per_hour: 10000\n  cooldown_minutes: 0\n\
                 passkeys:\n  quorum: 0\n",
                socket.display(),
                keys.display(),
                policy.display(),
                state.display(),
                // The bench describes far more than a deployment would; an executor built
                // before the setting (measured with --executor) does not know it.
                if exe.is_none() {
                    "describes_per_minute: 10000\n"
                } else {
                    ""
                }
            ),
        )
        .expect("config");
        chmod(&config, 0o644);
        let slot = state.join("sandbox.token");
        std::fs::write(&slot, "sandbox-token").expect("slot");
        chmod(&slot, 0o600);
        let allowlist = sim.team_devices("sandbox");
        Rig {
            log: dir.path().join("executor.log"),
            _dir: dir,
            sim,
            exe: exe.unwrap_or_else(|| deploy_binary("fleetwatch-executor", "fleetwatch-executor")),
            socket,
            state,
            config,
            policy,
            keys,
            allowlist,
            child: None,
        }
    }

    fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("log");
        let child = Command::new(&self.exe)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("FLEETWATCH_LOG", "warn")
            // An executor built before FLEETWATCH_LOG read RUST_LOG; `--trusted-base --executor`
            // may measure one.
            .env("RUST_LOG", "warn")
            .env("FLEETWATCH_EXECUTOR_CONFIG", &self.config)
            .env("FLEETWATCH_EPIPHAN_URL", self.sim.mcp_url())
            .env("FLEETWATCH_ALLOW_LOOPBACK_HTTP", "1")
            .env("FLEETWATCH_WRITE_DEVICE_IDS", self.allowlist.join(","))
            .arg("serve")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("executor starts");
        self.child = Some(child);
    }

    /// Polls until a `Status` is answered; the time from `since`.
    async fn ready(&mut self, since: Instant) -> Duration {
        let deadline = since + Duration::from_secs(60);
        loop {
            if matches!(
                send(&self.socket, &Request::Status).await,
                Some(Response::Status(_))
            ) {
                return since.elapsed();
            }
            if let Some(c) = self.child.as_mut()
                && let Ok(Some(status)) = c.try_wait()
            {
                panic!(
                    "executor exited ({status}): {}",
                    std::fs::read_to_string(&self.log).unwrap_or_default()
                );
            }
            assert!(Instant::now() < deadline, "executor never became ready");
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
    }

    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    fn pid(&self) -> String {
        self.child
            .as_ref()
            .map(|c| c.id().to_string())
            .unwrap_or_default()
    }

    /// Fresh claims for starting a recording on `device`, bound to a describe.
    async fn claims(&self, device: &str) -> ApprovalClaims {
        let arguments = json!({"action": "start", "device_ids": [format!("{device}-1")]});
        let request = Request::Describe(DescribeRequest {
            tool: "batch_recording".into(),
            arguments: canonical(&arguments),
        });
        let Some(Response::Described(d)) = send(&self.socket, &request).await else {
            panic!("describe refused for {device}")
        };
        fleetwatch_e2e::bound_claims("batch_recording", &arguments, d)
    }

    /// Sends the approval, with an assertion from each passkey given; the client-side time.
    async fn execute(
        &self,
        claims: &ApprovalClaims,
        passkeys: &mut [&mut SoftPasskey],
    ) -> (Duration, Option<Response>) {
        let approval = if passkeys.is_empty() {
            sign(claims, 7)
        } else {
            fleetwatch_e2e::sign_with_passkeys(claims, 7, passkeys)
        };
        let request = Request::Execute(ExecuteRequest {
            approval,
            assistant_chain_head: [0xab; 32],
        });
        let t = Instant::now();
        let response = send(&self.socket, &request).await;
        (t.elapsed(), response)
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        self.kill();
    }
}

fn done(response: &Option<Response>) -> bool {
    matches!(response, Some(Response::Executed(o)) if o.kind == OutcomeKind::Done)
}

// ---------------------------------------------------------------------------------------------
// The run

#[derive(Default)]
struct WritePath {
    total: Vec<f64>,
    reads: Vec<f64>,
    write: Vec<f64>,
    gap: Vec<f64>,
    overhead: Vec<f64>,
}

async fn run(approvals: usize, base: Option<PathBuf>) {
    let mut rig = Rig::new(base.as_deref(), None).await;
    let devices: Vec<String> = rig.allowlist.clone();

    // Cold start, a few times (the first also creates the database).
    let mut cold = Vec::new();
    for _ in 0..11 {
        rig.kill();
        let t = Instant::now();
        rig.spawn();
        cold.push(us(rig.ready(t).await));
    }
    let cold: Vec<f64> = cold.into_iter().skip(1).collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let idle_rss = proc_status_kib(&rig.pid(), "VmRSS").unwrap_or(0) as f64 / 1024.0;

    // Which sandbox devices run a plain start (online, describable, not refused).
    let mut usable = Vec::new();
    for d in &devices {
        let c = rig.claims(d).await;
        if done(&rig.execute(&c, &mut []).await.1) {
            usable.push(d.clone());
        }
    }
    assert!(!usable.is_empty(), "no sandbox device accepts a start");

    eprintln!("approve → write: {approvals} approvals, the assistant's signature alone…");
    let (wp, kept) = write_path(&rig, &usable, approvals, &mut []).await;

    // The same path with operators' passkeys, right after, on the same executor: two enrolled
    // in the approver file (the running executor reads it for every request), approvals with
    // one and with two assertions taken in turn so both see the same machine. Every assertion
    // an approval carries is verified whatever the quorum, so two assertions cost what a
    // two-person approval costs. Then the file is put back for the rest of the run.
    let mut ana = SoftPasskey::es256(11);
    let mut bo = SoftPasskey::ed25519(12);
    let original = std::fs::read_to_string(&rig.keys).expect("approver file");
    std::fs::write(
        &rig.keys,
        format!("{original}{}\n{}\n", ana.line("Ana"), bo.line("Bo")),
    )
    .expect("approver file");
    eprintln!(
        "approve → write: {approvals} approvals with one passkey and {approvals} with two, in turn…"
    );
    let mut one_passkey = WritePath::default();
    let mut two_passkeys = WritePath::default();
    for i in 0..approvals {
        let from = &usable[i % usable.len()..];
        let (one, _) = write_path(&rig, from, 1, &mut [&mut ana]).await;
        one_passkey.extend(one);
        let (two, _) = write_path(&rig, from, 1, &mut [&mut ana, &mut bo]).await;
        two_passkeys.extend(two);
    }
    let approver_file = approver_file_reads(&rig.keys, approvals);
    std::fs::write(&rig.keys, original).expect("approver file");
    let after_rss = proc_status_kib(&rig.pid(), "VmRSS").unwrap_or(0) as f64 / 1024.0;

    // The executor's own checks, in-process, on the same approvals and the same disk.
    let inproc = in_process_checks(&rig, &kept);
    let fsync = raw_fsync(&rig.state, approvals);
    // The executor opens a fresh MCP session per Execute, and with it a fresh HTTP client; its
    // construction (TLS configuration included, even for a loopback http:// URL) is timed here.
    let mut http_client = Vec::new();
    for _ in 0..100 {
        let t = Instant::now();
        let client = fleetwatch_e2e::http_client_builder()
            .build()
            .expect("http client");
        http_client.push(us(t.elapsed()));
        drop(client);
    }

    // The flood, against the same executor.
    let flood = flood(&rig, &usable, &wp.total).await;

    // The assistant.
    let assistant = assistant_rss(&rig).await;

    // A large team, in a child process of its own.
    let fleet = fleet_in_child();

    let verify = passkey_verification(approvals);

    // ---- table
    let mut t = Table::new();
    t.dist(
        "signature verify (in-process: TrustedKeys::verify via checks::signature)",
        &inproc.signature,
        Unit::Us,
        None,
    );
    t.dist(
        "claims decode + freshness (in-process)",
        &inproc.claims,
        Unit::Us,
        None,
    );
    t.dist(
        "nonce commit, fsync (in-process: checks::nonce on Store, same disk)",
        &inproc.nonce,
        Unit::Us,
        None,
    );
    t.dist(
        "outcome commit, fsync (in-process: Store::finish)",
        &inproc.finish,
        Unit::Us,
        None,
    );
    t.dist(
        "policy checks + fence (in-process: checks::policy, checks::fence)",
        &inproc.policy,
        Unit::Us,
        None,
    );
    t.dist(
        "HTTP client construction (in-process: reqwest with rustls, 100 runs)",
        &http_client,
        Unit::Us,
        None,
    );
    t.dist(
        "Epiphan reads (simulator time, sum of reads)",
        &wp.reads,
        Unit::Us,
        None,
    );
    t.dist("Epiphan write (simulator time)", &wp.write, Unit::Us, None);
    t.dist(
        "check-to-write gap (simulator: last read answered → write arrived)",
        &wp.gap,
        Unit::Us,
        Some((TARGET_GAP_P99_US, "p99 ≤ 200 µs")),
    );
    t.dist(
        "approve → write total (client side)",
        &wp.total,
        Unit::Ms,
        None,
    );
    t.dist(
        "executor overhead (total − simulator time)",
        &wp.overhead,
        Unit::Ms,
        Some((TARGET_OVERHEAD_P99_MS, "p99 ≤ 3 ms")),
    );
    t.dist(
        "executor overhead, one passkey (ES256) verified",
        &one_passkey.overhead,
        Unit::Ms,
        None,
    );
    t.dist(
        "executor overhead, two passkeys (ES256 + Ed25519, both verified)",
        &two_passkeys.overhead,
        Unit::Ms,
        Some((TARGET_OVERHEAD_P99_MS, "p99 ≤ 3 ms")),
    );
    t.dist(
        "approver file read + parse per request (in-process: approvers::load)",
        &approver_file,
        Unit::Us,
        None,
    );
    t.dist(
        "passkey verification, ES256 (in-process: passkey::verify_assertions)",
        &verify.es256,
        Unit::Us,
        None,
    );
    t.dist(
        "passkey verification, Ed25519 (in-process: passkey::verify_assertions)",
        &verify.ed25519,
        Unit::Us,
        None,
    );
    t.dist(
        "raw append 64 B + fdatasync, same folder",
        &fsync,
        Unit::Us,
        None,
    );
    let ratio = pct(&wp.overhead, 99.0) / pct(&fsync, 99.0);
    let ratio50 = pct(&wp.overhead, 50.0) / pct(&fsync, 50.0);
    t.single(
        "executor overhead ÷ fsync (p99 ÷ p99; p50 ÷ p50)",
        format!("{ratio:.1}× ({ratio50:.1}× at p50)"),
        Some((ratio <= TARGET_OVERHEAD_FSYNC_RATIO, "≤ 3×")),
    );
    t.single(
        "executor idle RSS (after start)",
        fmt(idle_rss, Unit::MiB),
        Some((idle_rss <= TARGET_EXECUTOR_RSS_MIB, "≤ 8 MiB")),
    );
    t.single(
        &format!("executor RSS after {approvals} approvals"),
        fmt(after_rss, Unit::MiB),
        None,
    );
    t.dist(
        "executor cold start (spawn → Status answered, 10 runs)",
        &cold,
        Unit::Ms,
        Some((TARGET_COLD_START_MS, "p99 ≤ 20 ms")),
    );
    match &assistant {
        Ok((mib, page)) => t.single(
            if *page {
                "assistant idle RSS (fleetwatch serve, page on)"
            } else {
                "assistant idle RSS (fleetwatch serve, page did not start)"
            },
            fmt(*mib, Unit::MiB),
            Some((*mib <= TARGET_ASSISTANT_RSS_MIB, "≤ 40 MiB")),
        ),
        Err(why) => t.single("assistant idle RSS", format!("not measured: {why}"), None),
    }
    fleet_rows(&mut t, &fleet);
    t.single(
        "flood: malformed frames refused (another process)",
        format!(
            "{} in {:.1} s",
            flood.frames_sent,
            flood.elapsed.as_secs_f64()
        ),
        None,
    );
    t.dist(
        "flood: approve → write during the flood",
        &flood.during,
        Unit::Ms,
        None,
    );
    let delay_ms = (pct(&flood.during, 99.0) - pct(&wp.total, 99.0)) / 1000.0;
    let delay50_ms = (pct(&flood.during, 50.0) - pct(&wp.total, 50.0)) / 1000.0;
    t.single(
        "flood: delay of a valid approval (p99 during − p99 quiet; p50)",
        format!("{delay_ms:.2} ms ({delay50_ms:.2} ms at p50)"),
        Some((delay_ms <= TARGET_FLOOD_DELAY_MS, "≤ 10 ms")),
    );

    println!();
    println!(
        "Fleetwatch write-path bench, {} — {} approvals; {} CPU(s), {}",
        jiff::Timestamp::now().strftime("%Y-%m-%d %H:%M UTC"),
        approvals,
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        cpu_model()
    );
    println!("state folder on: {}", filesystem_of(&rig.state));
    println!();
    t.print();
}

/// `n` approvals on the usable devices in turn, each carrying an assertion from every passkey
/// given; the client-side total, the simulator's time, the gap and the executor's overhead.
async fn write_path(
    rig: &Rig,
    usable: &[String],
    n: usize,
    passkeys: &mut [&mut SoftPasskey],
) -> (WritePath, Vec<ApprovalClaims>) {
    let mut wp = WritePath::default();
    let mut kept = Vec::with_capacity(n);
    for i in 0..n {
        let device = &usable[i % usable.len()];
        let c = rig.claims(device).await;
        let before = rig.sim.calls().len();
        let (total, response) = rig.execute(&c, passkeys).await;
        assert!(
            done(&response),
            "approval {i}: {response:?}\n{}",
            std::fs::read_to_string(&rig.log).unwrap_or_default()
        );
        let calls = rig.sim.calls();
        let ours = calls.get(before..).unwrap_or_default();
        let Some(w) = ours.iter().position(|c| fleetwatch_sim::is_write(&c.tool)) else {
            panic!("approval {i}: no write recorded")
        };
        let span =
            |c: &fleetwatch_sim::CallRecord| c.answered_ns.unwrap_or(c.received_ns) - c.received_ns;
        let reads_ns: u64 = ours[..w].iter().map(span).sum();
        let write_ns = span(&ours[w]);
        let last_read = ours[..w].last().and_then(|r| r.answered_ns).unwrap_or(0);
        let gap_ns = ours[w].received_ns.saturating_sub(last_read);
        let total_us = us(total);
        wp.total.push(total_us);
        wp.reads.push(reads_ns as f64 / 1e3);
        wp.write.push(write_ns as f64 / 1e3);
        wp.gap.push(gap_ns as f64 / 1e3);
        wp.overhead
            .push(total_us - (reads_ns + write_ns) as f64 / 1e3);
        kept.push(c);
    }
    (wp, kept)
}

impl WritePath {
    fn extend(&mut self, other: WritePath) {
        self.total.extend(other.total);
        self.reads.extend(other.reads);
        self.write.extend(other.write);
        self.gap.extend(other.gap);
        self.overhead.extend(other.overhead);
    }
}

/// What reading the approver file for a request costs in-process: open, check, read, parse
/// (one assistant key and two passkeys), as `Context::approvers` does for every `Execute`.
fn approver_file_reads(path: &Path, n: usize) -> Vec<f64> {
    (0..n)
        .map(|_| {
            let t = Instant::now();
            let file = fleetwatch_executor::approvers::load(path).expect("approver file");
            let took = us(t.elapsed());
            assert_eq!(file.passkeys.len(), 2);
            took
        })
        .collect()
}

struct Verification {
    es256: Vec<f64>,
    ed25519: Vec<f64>,
}

/// One assertion of each algorithm verified `n` times over fresh claims bytes, in-process,
/// exactly as the executor's `checks::person` runs it.
fn passkey_verification(n: usize) -> Verification {
    use fleetwatch_protocol::passkey::{self, Approvers, RelyingParty};
    let mut es = SoftPasskey::es256(21);
    let mut ed = SoftPasskey::ed25519(22);
    let approvers =
        Approvers::parse(&format!("{}\n{}\n", es.line("Ana"), ed.line("Bo"))).expect("approvers");
    let rp = RelyingParty::new(
        fleetwatch_e2e::authenticator::RP_ID,
        [fleetwatch_e2e::authenticator::ORIGIN],
    );
    let mut out = Verification {
        es256: Vec::with_capacity(n),
        ed25519: Vec::with_capacity(n),
    };
    for i in 0..n {
        let bytes = format!("claims bytes of approval {i}").into_bytes();
        for (key, times) in [(&mut es, &mut out.es256), (&mut ed, &mut out.ed25519)] {
            let assertion = [key.assert(&bytes)];
            let t = Instant::now();
            let verified = passkey::verify_assertions(&assertion, &bytes, &approvers, &rp);
            times.push(us(t.elapsed()));
            assert!(verified.is_ok(), "a good assertion verifies");
        }
    }
    out
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .and_then(|rest| rest.split_once(':').map(|(_, m)| m.trim().to_string()))
        })
        .unwrap_or_else(|| "unknown CPU".into())
}

/// The file-system type and device under `path` (from /proc/self/mountinfo's longest match).
fn filesystem_of(path: &Path) -> String {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let mut best: Option<(usize, String)> = None;
    for line in text.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        let Some(mount) = fields.get(4) else { continue };
        let Some(dash) = fields.iter().position(|f| *f == "-") else {
            continue;
        };
        let fstype = fields.get(dash + 1).copied().unwrap_or("?");
        let source = fields.get(dash + 2).copied().unwrap_or("?");
        if path.starts_with(mount) && best.as_ref().is_none_or(|(len, _)| mount.len() >= *len) {
            best = Some((
                mount.len(),
                format!("{fstype} ({source}, mounted on {mount})"),
            ));
        }
    }
    best.map(|b| b.1).unwrap_or_else(|| "unknown".into())
}

// ---------------------------------------------------------------------------------------------
// In-process: the executor's check functions, and the raw disk

#[derive(Default)]
struct InProcess {
    signature: Vec<f64>,
    claims: Vec<f64>,
    nonce: Vec<f64>,
    finish: Vec<f64>,
    policy: Vec<f64>,
}

fn in_process_checks(rig: &Rig, approvals: &[ApprovalClaims]) -> InProcess {
    use fleetwatch_executor::{approvers, checks, config::Fence, context, store};
    let file = approvers::load(&rig.keys).expect("approver file");
    // The rig's trial mode: these approvals carry the assistant's signature alone.
    let passkeys = fleetwatch_executor::config::PasskeyConfig {
        quorum: Some(0),
        ..Default::default()
    };
    let rp = passkeys.relying_party();
    let policy = context::load_policy(&rig.policy).expect("policy");
    let mut store = store::Store::open(&rig.state.join("bench-checks.db")).expect("store");
    // Each outcome's receipt statement is signed in the finish step, as in `serve`.
    store.sign_receipts(store::Receipts {
        key: ed25519_dalek::SigningKey::from_bytes(&[5; 32]),
        rp_id: rp.rp_id().to_owned(),
        origins: rp.origins().to_vec(),
    });
    let fence = Fence {
        allowlist: Some(rig.allowlist.iter().cloned().collect()),
        team_id: None,
    };
    let uid = rustix::process::getuid().as_raw();
    let allowed = std::collections::BTreeSet::from([uid]);
    let mut out = InProcess::default();
    for original in approvals {
        // A new nonce, so the in-process store accepts each one once, as the executor did.
        let c = ApprovalClaims {
            approval_id: random_id(),
            ..original.clone()
        };
        let signed = sign(&c, 7);
        let peer = checks::peer(uid, &allowed).expect("peer");
        let t = Instant::now();
        let verified = checks::signature(&peer, &signed, &file.keys).expect("signature");
        let person =
            checks::person(verified, &signed, &file.passkeys, &passkeys, &rp).expect("person");
        out.signature.push(us(t.elapsed()));
        let t = Instant::now();
        let decoded = checks::claims(person, &policy).expect("claims");
        let fresh = checks::fresh(decoded, now()).expect("fresh");
        let quorate = checks::quorum(fresh, &passkeys, &policy).expect("quorum");
        out.claims.push(us(t.elapsed()));
        let t = Instant::now();
        let stored = checks::nonce(quorate, &store, &[0xab; 32], &signed, &file).expect("nonce");
        out.nonce.push(us(t.elapsed()));
        let id = stored.approval_id();
        let t = Instant::now();
        let checked = checks::policy(stored, &policy).expect("policy");
        let _fenced = checks::fence(checked, &fence).expect("fence");
        out.policy.push(us(t.elapsed()));
        let t = Instant::now();
        store
            .finish(&id, store::Final::Done, "", "", &Default::default())
            .expect("finish");
        out.finish.push(us(t.elapsed()));
    }
    out
}

/// Appends 64 bytes and `fdatasync`s, `n` times, in `dir`.
fn raw_fsync(dir: &Path, n: usize) -> Vec<f64> {
    let path = dir.join("bench-fsync");
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .expect("fsync file");
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        file.write_all(&[0x5a; 64]).expect("write");
        file.sync_data().expect("fdatasync");
        out.push(us(t.elapsed()));
    }
    let _ = std::fs::remove_file(path);
    out
}

// ---------------------------------------------------------------------------------------------
// The flood

struct Flood {
    frames_sent: usize,
    elapsed: Duration,
    during: Vec<f64>,
}

async fn flood(rig: &Rig, usable: &[String], _quiet: &[f64]) -> Flood {
    let exe = std::env::current_exe().expect("own path");
    let t = Instant::now();
    let mut child = Command::new(exe)
        .arg("--child-flood")
        .arg(&rig.socket)
        .arg(FLOOD_FRAMES.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("flood process");
    // Let the flood get going before measuring.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut during = Vec::new();
    let mut i = 0;
    while matches!(child.try_wait(), Ok(None)) {
        let device = &usable[i % usable.len()];
        i += 1;
        let c = rig.claims(device).await;
        let (total, response) = rig.execute(&c, &mut []).await;
        if matches!(child.try_wait(), Ok(None)) {
            assert!(done(&response), "approval during the flood: {response:?}");
            during.push(us(total));
        }
    }
    let elapsed = t.elapsed();
    let mut text = String::new();
    if let Some(mut out) = child.stdout.take() {
        let _ = out.read_to_string(&mut text);
    }
    let _ = child.wait();
    Flood {
        frames_sent: text.trim().parse().unwrap_or(0),
        elapsed,
        during,
    }
}

/// How long a child flood goes on.
enum FloodLimit {
    /// This many frames in all.
    Frames(usize),
    /// Until this moment.
    Until(Instant),
}

/// Child: sends `sent` (malformed garbage when `None`), each on its own connection (the executor
/// answers one request per connection), from four threads, until `limit`; prints how many were
/// answered.
fn child_flood(socket: &Path, limit: FloodLimit, sent: Option<Vec<u8>>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let garbage = sent.unwrap_or_else(|| frame(&[1, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0x13, 0x37]));
    let (sent, answered) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let more = || match limit {
        FloodLimit::Frames(n) => sent.fetch_add(1, Ordering::Relaxed) < n,
        FloodLimit::Until(until) => Instant::now() < until,
    };
    std::thread::scope(|s| {
        for _ in 0..4 {
            let (garbage, answered, more) = (&garbage, &answered, &more);
            s.spawn(move || {
                while more() {
                    let Ok(mut stream) = std::os::unix::net::UnixStream::connect(socket) else {
                        continue;
                    };
                    let _ = stream.write_all(garbage);
                    let _ = stream.shutdown(std::net::Shutdown::Write);
                    let mut buf = Vec::new();
                    if stream.read_to_end(&mut buf).is_ok() && !buf.is_empty() {
                        answered.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    println!("{}", answered.load(Ordering::Relaxed));
}

// ---------------------------------------------------------------------------------------------
// The assistant

async fn assistant_rss(rig: &Rig) -> Result<(f64, bool), String> {
    let exe = deploy_binary("fleetwatch", "fleetwatch");
    let state = tempfile::tempdir().map_err(|e| e.to_string())?;
    chmod(state.path(), 0o750);
    // The operator's setting that lets it propose (and so start the page).
    std::fs::write(
        state.path().join(fleetwatch::config::SETTINGS_FILE),
        "autonomy: propose\n",
    )
    .map_err(|e| e.to_string())?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| e.to_string())?;
    // The page starts only when proposing is on, which needs a model: the simulator's offline
    // stand-in, on loopback.
    let model = fleetwatch_sim::model::start_offline()
        .await
        .map_err(|e| format!("model stand-in: {e}"))?;
    let mut child = Command::new(exe)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("RUST_LOG", "warn")
        .env("FLEETWATCH_ANTHROPIC_API_KEY", "bench-key")
        .env("FLEETWATCH_ANTHROPIC_BASE_URL", model.url())
        .env(
            "FLEETWATCH_POLICY",
            workspace_root().join("tool_policy.yaml"),
        )
        .env("FLEETWATCH_STATE_DIR", state.path())
        .env("FLEETWATCH_EPIPHAN_URL", rig.sim.mcp_url())
        .env("FLEETWATCH_ALLOW_LOOPBACK_HTTP", "1")
        .env("FLEETWATCH_EPIPHAN_TOKEN", "normal-token")
        .env("FLEETWATCH_EXECUTOR_SOCKET", &rig.socket)
        .env("FLEETWATCH_WRITE_DEVICE_IDS", rig.allowlist.join(","))
        .env("FLEETWATCH_APPROVE_PORT", port.to_string())
        .arg("serve")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("fleetwatch serve did not start: {e}"))?;
    let socket = state.path().join("chat.sock");
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut socket_since: Option<Instant> = None;
    let result = loop {
        if let Ok(Some(status)) = child.try_wait() {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut err);
            }
            break Err(format!(
                "fleetwatch serve exited ({status}): {}",
                err.trim()
            ));
        }
        let page_up = std::net::TcpStream::connect(("127.0.0.1", port)).is_ok();
        if socket.exists() && socket_since.is_none() {
            socket_since = Some(Instant::now());
        }
        // Measured once the page answers too, or with the page off if it has not come up
        // five seconds after the chat socket (the table says which).
        let waited_for_page = socket_since.is_some_and(|t| t.elapsed() > Duration::from_secs(5));
        if socket.exists() && (page_up || waited_for_page) {
            tokio::time::sleep(Duration::from_millis(500)).await;
            break proc_status_kib(&child.id().to_string(), "VmRSS")
                .map(|k| (k as f64 / 1024.0, page_up))
                .ok_or_else(|| "no VmRSS".to_string());
        }
        if Instant::now() > deadline {
            break Err("fleetwatch serve did not open its chat socket in 60 s".into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let _ = child.kill();
    let _ = child.wait();
    if let Ok((_, false)) = &result
        && let Some(mut e) = child.stderr.take()
    {
        let mut err = String::new();
        let _ = e.read_to_string(&mut err);
        eprintln!("fleetwatch serve said:\n{}", err.trim());
    }
    result
}

/// The rows of a large team: the executor's reads of a change (parse, redact, fingerprint)
/// and the assistant's snapshot of a question.
fn fleet_rows(t: &mut Table, fleet: &Result<FleetFigures, String>) {
    match &fleet {
        Ok(f) => {
            t.single(
                "10,000 devices: parse (JSON + fleet parsers)",
                fmt(f.parse_ms, Unit::Ms),
                None,
            );
            t.single("10,000 devices: redact", fmt(f.redact_ms, Unit::Ms), None);
            t.single(
                "10,000 devices: fingerprint (all targets, canonical)",
                fmt(f.fingerprint_ms, Unit::Ms),
                None,
            );
            let total = f.parse_ms + f.redact_ms + f.fingerprint_ms;
            t.single(
                "10,000 devices: parse + redact + fingerprint",
                fmt(total, Unit::Ms),
                Some((total <= TARGET_FLEET_MS, "≤ 50 ms")),
            );
            t.single(
                "10,000 devices: peak RSS of a process holding the texts (growth while working)",
                format!(
                    "{} (+{})",
                    fmt(f.peak_mib, Unit::MiB),
                    fmt(f.growth_mib, Unit::MiB)
                ),
                None,
            );
        }
        Err(why) => t.single("10,000 devices", format!("failed: {why}"), None),
    }
    let (list, status, events) = fleet_texts(FLEET_DEVICES);
    match snapshot::in_child(&list, &status, &events) {
        Ok(f) => {
            t.single(
                "10,000 devices: read → snapshot (assistant, guarded, redacted; median of 7)",
                fmt(f.median_ms, Unit::Ms),
                Some((f.median_ms <= TARGET_FLEET_MS, "≤ 50 ms")),
            );
            t.single(
                "10,000 devices: peak RSS of a process reading them into a snapshot",
                fmt(f.peak_mib, Unit::MiB),
                Some((f.peak_mib <= TARGET_SNAPSHOT_RSS_MIB, "≤ 64 MiB")),
            );
        }
        Err(why) => t.single("10,000 devices: snapshot", format!("failed: {why}"), None),
    }
}

// ---------------------------------------------------------------------------------------------
// A large team

struct FleetFigures {
    parse_ms: f64,
    redact_ms: f64,
    fingerprint_ms: f64,
    peak_mib: f64,
    growth_mib: f64,
}

/// Runs this bench as a child with `mode` over `dir` and reads the numbers it prints (with the
/// text, for an error).
pub(crate) fn child_figures(mode: &str, dir: &Path) -> Result<(Vec<f64>, String), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let out = Command::new(exe)
        .arg(mode)
        .arg(dir)
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let figures = text
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    Ok((figures, text))
}

fn fleet_in_child() -> Result<FleetFigures, String> {
    // The texts are made here and handed over as files, so the child's memory holds only what
    // a process that received them would: the texts, then what parsing makes of them.
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let (list, status, events) = fleet_texts(FLEET_DEVICES);
    for (name, text) in [("list", &list), ("status", &status), ("events", &events)] {
        std::fs::write(dir.path().join(name), text).map_err(|e| e.to_string())?;
    }
    let (v, text) = child_figures("--child-fleet", dir.path())?;
    match v.as_slice() {
        [parse, redact, print, peak, base] => Ok(FleetFigures {
            parse_ms: *parse,
            redact_ms: *redact,
            fingerprint_ms: *print,
            peak_mib: peak / 1024.0,
            growth_mib: (peak - base) / 1024.0,
        }),
        _ => Err(format!("unexpected child output: {text}")),
    }
}

/// The three reads a team answers, for `n` devices, as the Epiphan texts.
fn fleet_texts(n: usize) -> (String, String, String) {
    let start = jiff::Timestamp::now();
    let mut devices = Vec::with_capacity(n);
    let mut status = serde_json::Map::new();
    let mut events = serde_json::Map::new();
    for i in 0..n {
        let id = format!("{:010x}", 0x5000_0000u64 + i as u64);
        let channels: Vec<Value> = (1..=2)
            .map(|c| {
                json!({
                    "channel_id": c.to_string(),
                    "name": format!("Room {i} channel {c}"),
                    "recording_status": {"state": if (i + c) % 5 == 0 { "started" } else { "stopped" }, "timestamp": "1700000000", "description": "Stopped"},
                    "Publishers": [{"id": format!("p{c}"), "type": "rtmp", "url": format!("rtmp://user:pass@live.example.net/app/stream_key_{i}"), "stream_key": format!("sk-{i}-{c}")}],
                })
            })
            .collect();
        devices.push(json!({
            "Id": id,
            "Name": format!("Room {i}"),
            "Model": "Pearl-2",
            "GroupId": "3f1c2d4e-0000-4000-8000-000000000001",
            "GroupName": format!("Building {}", i / 100),
            "Firmware": "4.24.3",
            "Status": if i % 17 == 0 { "offline" } else { "online" },
            "StateTime": "2026-01-01T00:00:00Z",
            "Channels": channels,
        }));
        let mut chans = serde_json::Map::new();
        for c in 1..=2 {
            chans.insert(
                c.to_string(),
                json!({"name": format!("Room {i} channel {c}"), "recording_status": {"state": if (i + c) % 5 == 0 { "started" } else { "stopped" }}}),
            );
        }
        status.insert(id.clone(), json!({"channels": chans}));
        let event = if i % 3 == 0 {
            let s = start + jiff::SignedDuration::from_mins((i % 600) as i64);
            json!({"event": {"id": format!("evt-{i}"), "title": format!("Lecture {i}"), "start": s.to_string(), "end": (s + jiff::SignedDuration::from_mins(50)).to_string()}})
        } else {
            json!({"event": null})
        };
        events.insert(id, event);
    }
    let list = json!({"team_id": "team-bench", "devices": devices});
    (
        list.to_string(),
        json!({ "devices": status }).to_string(),
        json!({ "devices": events }).to_string(),
    )
}

/// Child: parse, redact and fingerprint the team in `dir`; prints
/// `parse_ms redact_ms fingerprint_ms peak_kib base_kib`.
fn child_fleet(dir: &Path) {
    use fleetwatch_protocol::fleet;
    use fleetwatch_redact as redact;
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).expect("fleet text");
    let (list_text, status_text, events_text) = (read("list"), read("status"), read("events"));
    // Peak RSS from here on: reset the high-water mark to the current RSS.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let base = proc_status_kib("self", "VmHWM").unwrap_or(0);

    let t = Instant::now();
    let mut list_value: Value = serde_json::from_str(&list_text).expect("list json");
    let mut status_value: Value = serde_json::from_str(&status_text).expect("status json");
    let mut events_value: Value = serde_json::from_str(&events_text).expect("events json");
    let json_us = us(t.elapsed());

    // Redaction runs on every read before anything else looks at it.
    let t = Instant::now();
    redact::redact_value(&mut list_value);
    redact::redact_value(&mut status_value);
    redact::redact_value(&mut events_value);
    let redact_ms = t.elapsed().as_secs_f64() * 1e3;

    let t = Instant::now();
    let mut list = fleet::parse_device_list(&list_value).expect("device list");
    let status = fleet::parse_recorder_status(&status_value).expect("status");
    fleet::apply_recorder_status(&mut list, &status);
    let events = fleet::parse_events(&events_value).expect("events");
    let parse_ms = (json_us + us(t.elapsed())) / 1e3;
    let n = list.devices.len();
    assert_eq!(n, FLEET_DEVICES);

    let t = Instant::now();
    let targets: Vec<String> = list.devices.iter().map(|d| d.id.clone()).collect();
    let print = fleet::fingerprint(&list, &events, &targets).expect("fingerprint");
    let canonical = print.canonical().expect("canonical");
    let fingerprint_ms = t.elapsed().as_secs_f64() * 1e3;
    assert!(canonical.as_str().len() > n);
    let peak = proc_status_kib("self", "VmHWM").unwrap_or(0);
    println!("{parse_ms:.3} {redact_ms:.3} {fingerprint_ms:.3} {peak} {base}");
}

// ---------------------------------------------------------------------------------------------
// --trusted-base

/// Idle RSS in MiB of one start: spawned, answering `Status`, then left alone for 300 ms (the
/// same moment the write-path run reads it).
async fn idle_rss(rig: &mut Rig) -> f64 {
    rig.kill();
    rig.spawn();
    rig.ready(Instant::now()).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let kib = proc_status_kib(&rig.pid(), "VmRSS").unwrap_or(0);
    rig.kill();
    kib as f64 / 1024.0
}

async fn trusted_base(root: PathBuf, executor: Option<PathBuf>) {
    let crates = match size::crates(&root) {
        Ok(c) => c,
        Err(e) => panic!("cargo tree in {}: {e}", root.display()),
    };
    let files = size::linked_lines(&root).expect("sources");
    let mut rig = Rig::new(None, executor).await;
    let mut rss = Vec::new();
    for _ in 0..3 {
        rss.push(idle_rss(&mut rig).await);
    }
    rss.sort_by(f64::total_cmp);
    let median = rss[1];

    println!("checkout: {}", root.display());
    println!("executor: {}", rig.exe.display());
    let total: usize = files.iter().map(|f| f.lines).sum();
    let mut t = Table::new();
    t.single(
        "executor third-party crates (distinct names, normal edges)",
        format!("{} ({} name+version)", crates.names.len(), crates.versions),
        Some((
            crates.names.len() <= TARGET_EXECUTOR_CRATES,
            &format!("≤ {TARGET_EXECUTOR_CRATES}"),
        )),
    );
    t.single(
        "executor idle RSS, deploy profile (median of 3 starts)",
        format!(
            "{} ({})",
            fmt(median, Unit::MiB),
            rss.iter()
                .map(|r| format!("{r:.1}"))
                .collect::<Vec<_>>()
                .join(" / ")
        ),
        Some((median <= TARGET_EXECUTOR_RSS_MIB, "≤ 8 MiB")),
    );
    t.single(
        "project code the executor links (non-test, non-blank, non-comment lines)",
        total.to_string(),
        Some((
            total <= TARGET_LINKED_LINES,
            &format!("≤ {TARGET_LINKED_LINES}"),
        )),
    );
    let confirm = size::confirm_lines(&root).expect("confirm sources");
    t.single(
        "fleetwatch-confirm's own code (Rust lines, counted the same way; its protocol is above)",
        confirm
            .iter()
            .filter(|f| f.path.ends_with(".rs"))
            .map(|f| f.lines)
            .sum::<usize>()
            .to_string(),
        None,
    );
    t.print();

    println!();
    println!("linked lines by crate and file:");
    for krate in ["executor", "protocol", "signin", "epiphan"] {
        let mine: Vec<&size::FileLines> = files
            .iter()
            .filter(|f| f.path.starts_with(&format!("{krate}/")))
            .collect();
        let sum: usize = mine.iter().map(|f| f.lines).sum();
        let detail: Vec<String> = mine
            .iter()
            .map(|f| {
                let name = f.path.trim_start_matches(&format!("{krate}/src/"));
                format!("{name} {}", f.lines)
            })
            .collect();
        println!("  {krate} {sum}: {}", detail.join(", "));
    }
    // fleetwatch-confirm is trusted like the executor (DESIGN §9): its own code and crates.
    let rust: usize = confirm
        .iter()
        .filter(|f| f.path.ends_with(".rs"))
        .map(|f| f.lines)
        .sum();
    let assets: usize = confirm
        .iter()
        .filter(|f| !f.path.ends_with(".rs"))
        .map(|f| f.lines)
        .sum();
    let confirm_crates = size::crates_of(&root, "fleetwatch-confirm").expect("cargo tree");
    println!();
    println!(
        "fleetwatch-confirm: {rust} lines of its own Rust and {assets} of page assets (the \
         protocol it links is counted above), {} third-party crates ({} name+version): {}",
        confirm_crates.names.len(),
        confirm_crates.versions,
        confirm_crates
            .names
            .iter()
            .cloned()
            .collect::<Vec<_>>()
            .join(", ")
    );
    for f in &confirm {
        println!("  {} {}", f.path, f.lines);
    }
    // The reading order a reviewer follows (SECURITY.md), with today's counts.
    println!();
    println!(
        "reading order (the executor along one Execute, DESIGN §2 step 5; then the confirm page, §9):"
    );
    let count = |path: &str| {
        files
            .iter()
            .chain(&confirm)
            .find(|f| f.path == path)
            .map(|f| f.lines)
            .or_else(|| {
                std::fs::read_to_string(root.join(path))
                    .ok()
                    .map(|t| size::count_code_lines(&t))
            })
            .unwrap_or(0)
    };
    for (n, (path, decides)) in size::READING_ORDER.iter().enumerate() {
        println!("  {:>2}. {path} ({}): {decides}", n + 1, count(path));
    }
    println!();
    println!("crates reachable only through one direct dependency:");
    for (direct, only) in &crates.only_through {
        println!(
            "  {direct} ({}): {}",
            only.len(),
            only.iter().cloned().collect::<Vec<_>>().join(", ")
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The socket's edges

/// Bytes the process passed to `write` and friends so far (`wchar` of `/proc/PID/io`).
fn written_bytes(pid: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/io"))
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("wchar:"))
                .and_then(|n| n.trim().parse().ok())
        })
        .unwrap_or(0)
}

/// The executor database's size on disk with its write-ahead log.
fn audit_file_bytes(state: &Path) -> u64 {
    ["executor.db", "executor.db-wal"]
        .iter()
        .filter_map(|f| std::fs::metadata(state.join(f)).ok())
        .map(|m| m.len())
        .sum()
}

/// The text of the newest `rows` audit rows, in bytes: every field and both hashes.
fn audit_text_bytes(state: &Path, rows: u64) -> u64 {
    rusqlite::Connection::open(state.join("executor.db"))
        .and_then(|c| {
            c.query_row(
                "SELECT COALESCE(SUM(length(kind) + length(reason) + length(approval_id) + \
                 length(tool) + length(targets) + length(assistant_head) + length(detail) + \
                 length(prev_hash) + length(row_hash) + 16), 0) FROM \
                 (SELECT * FROM audit ORDER BY seq DESC LIMIT ?1)",
                [i64::try_from(rows).unwrap_or(i64::MAX)],
                |r| r.get::<_, i64>(0),
            )
        })
        .map_or(0, |n| n.unsigned_abs())
}

fn audit_row_count(state: &Path) -> u64 {
    rusqlite::Connection::open(state.join("executor.db"))
        .and_then(|c| c.query_row("SELECT COUNT(*) FROM audit", [], |r| r.get::<_, i64>(0)))
        .map_or(0, |n| n.unsigned_abs())
}

async fn edges(exe: Option<PathBuf>) {
    let mut rig = Rig::new(None, exe).await;
    rig.spawn();
    rig.ready(Instant::now()).await;
    let mut table = Table::new();

    // A 10-second flood of garbage frames from another process, then one of a single validly
    // signed frame that is refused after its claims decode (expired), re-sent as fast as the
    // socket takes it.
    let expired = fleetwatch_e2e::shifted(&rig.claims(&rig.allowlist[0]).await, -3600);
    let signed = Request::Execute(ExecuteRequest {
        approval: sign(&expired, 7),
        assistant_chain_head: [0xab; 32],
    });
    let signed_file = rig.state.join("signed-junk.frame");
    std::fs::write(
        &signed_file,
        frame(&fleetwatch_protocol::wire::encode_request(&signed).expect("frame")),
    )
    .expect("frame file");
    for (what, sent) in [
        ("garbage", None),
        ("one signed expired frame re-sent", Some(&signed_file)),
    ] {
        let (rows, bytes) = (audit_row_count(&rig.state), written_bytes(&rig.pid()));
        let size = audit_file_bytes(&rig.state);
        let mut flood = Command::new(std::env::current_exe().expect("own path"));
        flood.arg("--child-flood-for").arg(&rig.socket).arg("10");
        if let Some(file) = sent {
            flood.arg(file);
        }
        let out = flood.output().expect("flood process");
        let frames: u64 = String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .unwrap_or(0);
        // Held counts are written once their second is over.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let rows = audit_row_count(&rig.state) - rows;
        let bytes = written_bytes(&rig.pid()) - bytes;
        let grown = audit_file_bytes(&rig.state).saturating_sub(size);
        let per = |n: u64| n as f64 / frames.max(1) as f64;
        table.single(
            &format!("{what}: frames refused in a 10 s flood"),
            frames.to_string(),
            None,
        );
        table.single(
            &format!("{what}: audit rows per refused frame"),
            format!("{:.4} ({rows} rows)", per(rows)),
            None,
        );
        table.single(
            &format!("{what}: audit bytes per refused frame (rows' text)"),
            format!(
                "{:.2} ({} bytes; executor.db grew {grown} bytes)",
                per(audit_text_bytes(&rig.state, rows)),
                audit_text_bytes(&rig.state, rows)
            ),
            None,
        );
        table.single(
            &format!(
                "{what}: bytes the executor wrote per refused frame (wchar: audit, WAL, answers)"
            ),
            format!("{:.1}", per(bytes)),
            None,
        );
    }

    // An Execute while 64 connections sit idle, each reopened as soon as it is closed.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut keepers = Vec::new();
    for _ in 0..64 {
        let (socket, stop) = (rig.socket.clone(), stop.clone());
        keepers.push(tokio::spawn(async move {
            use tokio::io::AsyncReadExt as _;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let Ok(mut s) = tokio::net::UnixStream::connect(&socket).await else {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                let mut sink = Vec::new();
                let _ =
                    tokio::time::timeout(Duration::from_secs(30), s.read_to_end(&mut sink)).await;
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let usable = rig.allowlist.clone();
    let mut latencies = Vec::new();
    for i in 0..9 {
        let c = rig.claims(&usable[i % usable.len()]).await;
        let (total, response) = rig.execute(&c, &mut []).await;
        if done(&response) {
            latencies.push(us(total));
        } else {
            eprintln!("an Execute under 64 idle connections: {response:?}");
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for k in keepers {
        k.abort();
    }
    table.dist(
        &format!(
            "Execute with 64 idle connections open ({} of 9 done)",
            latencies.len()
        ),
        &latencies,
        Unit::Ms,
        None,
    );
    table.print();
    rig.kill();
}
