//! Helpers shared by the cross-process tests: finding the built binaries, starting the
//! simulator in-process and the executor binary on a socket in a temp folder, and signing test
//! approvals with a key installed in the executor's key file.
#![forbid(unsafe_code)]

// The protocol tests' software passkey, said once: what a browser and an authenticator hand
// the page, for the executor tests that need a person's assertion.
#[path = "../../protocol/tests/support/authenticator.rs"]
pub mod authenticator;
pub mod binaries;
pub mod browser;
pub mod confirm_page;
pub mod enrol;
pub mod faults;
pub mod forward;
pub mod page;
pub mod size;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use ed25519_dalek::SigningKey;
use fleetwatch_protocol::claims::{self, ApprovalClaims, CLAIMS_VERSION, SignedApproval, Slot};
use fleetwatch_protocol::wire::{
    self, DescribeRequest, Description, ExecuteRequest, Request, Response,
};
use fleetwatch_sim::{SimConfig, SimHandle};
use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::codec::{Framed, LengthDelimitedCodec};

/// The standard output of a command that must have succeeded (`what` names it when not).
pub fn printed(out: std::process::Output, what: impl std::fmt::Debug) -> String {
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{what:?}: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// Leaves a prompt in a pseudo-terminal the way a person does, with Ctrl-D, and checks it
/// ended with status 0.
pub fn leave_prompt(prompt: &mut rexpect::session::PtySession) {
    prompt.send_control('d').expect("Ctrl-D");
    prompt.exp_eof().expect("the prompt ends");
    let status = prompt.process.wait().expect("exit status");
    assert!(
        matches!(status, rexpect::process::wait::WaitStatus::Exited(_, 0)),
        "{status:?}"
    );
}

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// A workspace binary next to the running test executable (`target/<profile>/NAME`), built
/// first when missing or older than the sources (see `binaries`).
pub fn binary(package: &str, name: &str) -> PathBuf {
    binaries::workspace_binary(&workspace_root(), package, name)
}

/// The executor binary.
pub fn executor_binary() -> PathBuf {
    binary("fleetwatch-executor", "fleetwatch-executor")
}

/// A fixed test approver key (seed 7…7), and other keys by seed.
pub fn test_key(seed: u8) -> SigningKey {
    SigningKey::from_bytes(&[seed; 32])
}

/// 16 random bytes.
pub fn random_id() -> [u8; 16] {
    let mut id = [0u8; 16];
    getrandom::fill(&mut id).unwrap_or_default();
    id
}

/// Unix seconds now.
pub fn now() -> i64 {
    jiff::Timestamp::now().as_second()
}

/// An HTTP client builder for test code, with the TLS provider both processes use installed.
pub fn http_client_builder() -> reqwest::ClientBuilder {
    fleetwatch_signin::tls::client_builder()
}

/// A plain GET, as `reqwest::get` does, with the TLS provider installed.
pub async fn http_get(url: impl reqwest::IntoUrl) -> reqwest::Result<reqwest::Response> {
    http_client_builder().build()?.get(url).send().await
}

/// Canonical JSON text of a value.
pub fn canonical(value: &serde_json::Value) -> String {
    fleetwatch_protocol::canonical::from_value(value)
        .map(|c| c.into_string())
        .unwrap_or_default()
}

/// How a test executor is set up.
#[derive(Clone)]
pub struct Setup {
    /// Uids allowed to connect; `None` means the test's own uid.
    pub allowed_uids: Option<Vec<u32>>,
    /// `FLEETWATCH_WRITE_DEVICE_IDS`; `None` leaves it unset.
    pub allowlist: Option<Vec<String>>,
    /// `FLEETWATCH_WRITE_TEAM_ID`.
    pub team_id: Option<String>,
    /// Sandbox token to place in the slot; `None` leaves the slot empty.
    pub token: Option<String>,
    /// Extra environment for the executor.
    pub env: Vec<(String, String)>,
    /// Simulator configuration.
    pub sim: SimConfig,
    /// Installed approver keys (seeds).
    pub key_seeds: Vec<u8>,
    /// Extra lines for the key file.
    pub extra_key_lines: Vec<String>,
    /// Connection limit.
    pub max_connections: usize,
    /// `describes_per_minute`: well above what a test asks for unless a test is about it.
    pub describes_per_minute: usize,
    /// `frame_timeout_secs`.
    pub frame_timeout_secs: u64,
    /// More YAML for `executor.yaml` (for example a `passkeys:` section).
    pub config_extra: String,
    /// Whether the executor runs in the explicit trial mode ([`TRIAL_SECTION`]): the tests of
    /// everything but persons sign as the assistant alone. Ignored when `config_extra` writes
    /// its own `passkeys:` section.
    pub trial: bool,
}

/// The executor configuration's explicit trial mode: the assistant's signature alone.
pub const TRIAL_SECTION: &str = "passkeys:\n  quorum: 0\n";

/// The signed name of the claims' target device (the room the person is shown).
pub fn room_of(claims: &fleetwatch_protocol::claims::ApprovalClaims) -> String {
    claims
        .names
        .iter()
        .find(|n| n.kind == fleetwatch_protocol::claims::NameKind::Device)
        .expect("the claims sign the room's name")
        .name
        .clone()
}

/// `extra` with `origin_owner:` set to this test's uid in its `passkeys:` section (added when
/// there is none): the executor accepts a passkey only while the confirm origin's port is held
/// by that owner alone, which in a test is the test (or the confirm page it started), not
/// systemd.
pub fn with_origin_owner(extra: &str) -> String {
    let line = format!(
        "passkeys:\n  origin_owner: {}\n",
        rustix::process::getuid().as_raw()
    );
    if extra.contains("origin_owner:") {
        // The test chose its own owner.
        extra.to_owned()
    } else if extra.contains("passkeys:\n") {
        extra.replacen("passkeys:\n", &line, 1)
    } else {
        format!("{extra}{line}")
    }
}

/// `config` without its `passkeys:` section (the line and the indented lines under it).
pub fn without_passkeys_section(config: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    for line in config.lines() {
        if line == "passkeys:" {
            inside = true;
            continue;
        }
        if inside && line.starts_with(' ') {
            continue;
        }
        inside = false;
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Holds the confirm page's default origin (`http://localhost:8768`, the origin the soft
/// authenticator's assertions carry) on both loopback addresses for the rest of this test
/// process, as `fleetwatch-confirm.socket` holds it in an installation.
pub fn hold_default_origin() {
    static HELD: std::sync::OnceLock<Vec<std::net::TcpListener>> = std::sync::OnceLock::new();
    HELD.get_or_init(|| {
        let port = 8768;
        let mut held = Vec::new();
        for address in ["127.0.0.1", "::1"] {
            match std::net::TcpListener::bind((address, port)) {
                Ok(listener) => held.push(listener),
                Err(e) => {
                    eprintln!("could not hold {address} port {port} for the passkey origin: {e}")
                }
            }
        }
        held
    });
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            allowed_uids: None,
            allowlist: None,
            team_id: None,
            token: Some("sandbox-token".into()),
            env: Vec::new(),
            sim: SimConfig::demo(),
            key_seeds: vec![7],
            extra_key_lines: Vec::new(),
            max_connections: 32,
            describes_per_minute: 10_000,
            frame_timeout_secs: 3,
            config_extra: String::new(),
            trial: true,
        }
    }
}

/// A running simulator plus an executor process on a temp socket.
pub struct Harness {
    /// Temp folder holding everything (removed on drop).
    pub dir: tempfile::TempDir,
    /// The simulator.
    pub sim: SimHandle,
    /// The executor process, when running.
    pub child: Option<Child>,
    /// The setup used.
    pub setup: Setup,
    /// Socket path.
    pub socket: PathBuf,
    /// State folder.
    pub state: PathBuf,
    /// Config file.
    pub config: PathBuf,
    /// Where the executor's stderr goes.
    pub log: PathBuf,
}

/// The sandbox devices of the demo fleet, in list order.
pub fn sandbox_devices(sim: &SimHandle) -> Vec<String> {
    sim.team_devices("sandbox")
}

impl Harness {
    /// Starts the simulator and the executor (waiting until it answers `Status`).
    pub async fn start(setup: Setup) -> Harness {
        let mut h = Harness::prepare(setup).await;
        h.spawn();
        h.wait_ready().await;
        h
    }

    /// Starts the simulator and the executor fenced to the sandbox team's devices (known only
    /// once the simulator runs), and returns those devices in list order.
    pub async fn start_fenced(setup: Setup) -> (Harness, Vec<String>) {
        let mut h = Harness::prepare(setup).await;
        let devices = sandbox_devices(&h.sim);
        h.setup.allowlist = Some(devices.clone());
        h.spawn();
        h.wait_ready().await;
        (h, devices)
    }

    /// Starts the simulator and writes the executor's files, without starting it.
    pub async fn prepare(setup: Setup) -> Harness {
        fleetwatch_signin::tls::install_provider();
        let sim = fleetwatch_sim::start(setup.sim.clone())
            .await
            .expect("simulator starts");
        let dir = tempfile::tempdir().expect("temp dir");
        let etc = dir.path().join("etc");
        std::fs::create_dir(&etc).expect("etc");
        std::fs::set_permissions(&etc, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let state = dir.path().join("state");
        let run = dir.path().join("run");
        std::fs::create_dir(&run).expect("run");
        std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o750)).expect("chmod");
        let socket = run.join("executor.sock");
        let policy = etc.join("tool_policy.yaml");
        std::fs::copy(workspace_root().join("tool_policy.yaml"), &policy).expect("policy");
        std::fs::set_permissions(&policy, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let keys = etc.join("approvers.pub");
        let mut lines: Vec<String> = setup
            .key_seeds
            .iter()
            .map(|s| claims::key_line(&test_key(*s).verifying_key(), "test"))
            .collect();
        lines.extend(setup.extra_key_lines.iter().cloned());
        std::fs::write(&keys, lines.join("\n") + "\n").expect("keys");
        std::fs::set_permissions(&keys, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let uids = setup
            .allowed_uids
            .clone()
            .unwrap_or_else(|| vec![rustix::process::getuid().as_raw()]);
        let config = etc.join("executor.yaml");
        let yaml = format!(
            "socket: {}\nallowed_uids: {:?}\napprover_keys: {}\npolicy: {}\nstate_dir: {}\nmax_connections: {}\ndescribes_per_minute: {}\nframe_timeout_secs: {}\n",
            socket.display(),
            uids,
            keys.display(),
            policy.display(),
            state.display(),
            setup.max_connections,
            setup.describes_per_minute,
            setup.frame_timeout_secs
        ) + &with_origin_owner(
            &(setup.config_extra.clone()
                + if setup.trial && !setup.config_extra.contains("passkeys:") {
                    TRIAL_SECTION
                } else {
                    ""
                }),
        );
        hold_default_origin();
        std::fs::write(&config, yaml).expect("config");
        std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        std::fs::create_dir(&state).expect("state");
        std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).expect("chmod");
        if let Some(token) = &setup.token {
            let slot = state.join("sandbox.token");
            std::fs::write(&slot, token).expect("slot");
            std::fs::set_permissions(&slot, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        }
        let log = dir.path().join("executor.log");
        Harness {
            dir,
            sim,
            child: None,
            setup,
            socket,
            state,
            config,
            log,
        }
    }

    /// The executor command with this harness's environment (and nothing inherited that could
    /// change its behaviour).
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(executor_binary());
        cmd.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("FLEETWATCH_LOG", "info")
            .env("FLEETWATCH_EXECUTOR_CONFIG", &self.config)
            .env("FLEETWATCH_EPIPHAN_URL", self.sim.mcp_url())
            .env("FLEETWATCH_ALLOW_LOOPBACK_HTTP", "1")
            .env("FLEETWATCH_READ_TIMEOUT_SECS", "5")
            .env("FLEETWATCH_WRITE_TIMEOUT_SECS", "5");
        if let Some(list) = &self.setup.allowlist {
            cmd.env("FLEETWATCH_WRITE_DEVICE_IDS", list.join(","));
        }
        if let Some(team) = &self.setup.team_id {
            cmd.env("FLEETWATCH_WRITE_TEAM_ID", team);
        }
        for (k, v) in &self.setup.env {
            cmd.env(k, v);
        }
        cmd
    }

    /// Runs an executor subcommand to completion.
    pub fn cli(&self, args: &[&str], stdin: Option<&str>) -> Output {
        let mut cmd = self.command();
        cmd.args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("executor runs");
        if let Some(mut input) = child.stdin.take() {
            use std::io::Write;
            let _ = input.write_all(stdin.unwrap_or_default().as_bytes());
        }
        child.wait_with_output().expect("executor finishes")
    }

    /// Starts `serve` in the background.
    pub fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("log");
        let child = self
            .command()
            .arg("serve")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("executor starts");
        self.child = Some(child);
    }

    /// Waits until `Status` is answered (generous deadline).
    pub async fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                panic!("executor exited early ({status}): {}", self.log_text());
            }
            if self.socket.exists()
                && matches!(
                    self.request(&Request::Status).await,
                    Some(Response::Status(_))
                )
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "executor did not become ready: {}",
                self.log_text()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// SIGKILLs the executor.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Kills and starts it again.
    pub async fn restart(&mut self) {
        self.kill();
        self.spawn();
        self.wait_ready().await;
    }

    /// Starts `serve` with libfaketime moving its wall clock by `offset` (`+10m`, `-1h`), and
    /// waits until it answers.
    pub async fn spawn_under_faketime(&mut self, offset: &str) {
        let lib = faults::libfaketime().expect(
            "libfaketime is not installed; install Debian's `faketime` package (.ci/run does this)",
        );
        let mut cmd = self.command();
        cmd.arg("serve");
        faults::under_faketime(&lib, offset, &mut cmd);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("log");
        cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(log);
        self.child = Some(cmd.spawn().expect("executor starts"));
        self.wait_ready().await;
    }

    /// What the executor wrote to stderr so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Sends raw bytes and reads one response frame; `None` when the executor closed the
    /// connection without answering.
    pub async fn raw(&self, bytes: &[u8]) -> Option<Response> {
        let mut stream = tokio::net::UnixStream::connect(&self.socket).await.ok()?;
        let _ = stream.write_all(bytes).await;
        let _ = stream.shutdown().await;
        let mut answer = Vec::new();
        let read =
            tokio::time::timeout(Duration::from_secs(60), stream.read_to_end(&mut answer)).await;
        read.ok()?.ok()?;
        decode_answer(&answer)
    }

    /// Sends one request and reads the response.
    pub async fn request(&self, request: &Request) -> Option<Response> {
        send(&self.socket, request).await
    }

    /// Describes a change; panics unless described.
    pub async fn describe(&self, tool: &str, arguments: &serde_json::Value) -> Description {
        let request = Request::Describe(DescribeRequest {
            tool: tool.into(),
            arguments: canonical(arguments),
        });
        match self.request(&request).await {
            Some(Response::Described(d)) => d,
            other => panic!("describe {tool}: {other:?}\n{}", self.log_text()),
        }
    }

    /// Claims for a change, bound to a fresh describe, valid for five minutes from now.
    pub async fn claims(&self, tool: &str, arguments: &serde_json::Value) -> ApprovalClaims {
        bound_claims(tool, arguments, self.describe(tool, arguments).await)
    }

    /// Claims for a change without a describe: the binding fields are copied from `like`
    /// (used when the sandbox cannot be read).
    pub fn claims_unchecked(
        &self,
        tool: &str,
        arguments: &serde_json::Value,
        like: &ApprovalClaims,
    ) -> ApprovalClaims {
        ApprovalClaims {
            approval_id: random_id(),
            tool: tool.into(),
            arguments: canonical(arguments),
            ..like.clone()
        }
    }

    /// Sends an `Execute` with the given approval.
    pub async fn execute(&self, approval: SignedApproval) -> Option<Response> {
        self.request(&Request::Execute(ExecuteRequest {
            approval,
            assistant_chain_head: [0xab; 32],
        }))
        .await
    }

    /// The executor's audit rows: `(seq, kind, reason, approval_id, detail)`.
    /// How many refusals with `code` the audit counts: rows of kind `refused`, each standing
    /// for the count at the end of its detail (` n=COUNT`, the burst rule) or for one.
    pub fn refusals_counted(&self, code: &str) -> u64 {
        self.audit_rows()
            .iter()
            .filter(|r| r.1 == "refused" && r.2 == code)
            .map(|r| {
                r.4.rsplit_once("n=")
                    .and_then(|(_, n)| n.parse().ok())
                    .unwrap_or(1)
            })
            .sum()
    }

    /// Waits (a few seconds at most) until the audit counts `count` refusals with `code`: one
    /// the burst rule holds is written once its second is over. The count reached.
    pub async fn await_refusals(&self, code: &str, count: u64) -> u64 {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let counted = self.refusals_counted(code);
            if counted >= count || std::time::Instant::now() > deadline {
                return counted;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub fn audit_rows(&self) -> Vec<(i64, String, String, String, String)> {
        let conn = rusqlite::Connection::open(self.state.join("executor.db")).expect("db");
        let mut stmt = conn
            .prepare("SELECT seq, kind, reason, approval_id, detail FROM audit ORDER BY seq")
            .expect("select");
        stmt.query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .expect("rows")
        .collect::<Result<Vec<_>, _>>()
        .expect("rows")
    }

    /// The execution state recorded for an approval.
    pub fn execution_state(&self, approval_id: &[u8; 16]) -> Option<String> {
        let conn = rusqlite::Connection::open(self.state.join("executor.db")).expect("db");
        conn.query_row(
            "SELECT state FROM executions WHERE approval_id = ?1",
            [approval_id.to_vec()],
            |r| r.get(0),
        )
        .ok()
    }

    /// Number of write calls the simulator recorded.
    pub fn writes(&self) -> usize {
        self.sim.writes().len()
    }
}

/// Claims that are valid on a clock `shift` seconds off the real one.
pub fn shifted(claims: &ApprovalClaims, shift: i64) -> ApprovalClaims {
    ApprovalClaims {
        approval_id: random_id(),
        approved_at: claims.approved_at + shift,
        expires_at: claims.expires_at + shift,
        ..claims.clone()
    }
}

/// Claims for a change bound to what the executor described, with a fresh approval ID, valid
/// for five minutes from now.
pub fn bound_claims(tool: &str, arguments: &serde_json::Value, d: Description) -> ApprovalClaims {
    let t = now();
    ApprovalClaims {
        version: CLAIMS_VERSION,
        approval_id: random_id(),
        proposal_id: 1,
        tool: tool.into(),
        arguments: canonical(arguments),
        targets: d.targets,
        names: d.names,
        fingerprint: d.fingerprint,
        schema_version: d.schema_version,
        policy_digest: d.policy_digest,
        slot: Slot::Sandbox,
        approved_at: t,
        expires_at: t + 300,
        page_session: [9; 16],
        asked_by: String::new(),
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Sends one request to a socket and reads the response; `None` when the connection closed
/// without an answer.
pub async fn send(socket: &Path, request: &Request) -> Option<Response> {
    let stream = tokio::net::UnixStream::connect(socket).await.ok()?;
    let mut framed = Framed::new(
        stream,
        LengthDelimitedCodec::builder()
            .max_frame_length(wire::MAX_FRAME)
            .new_codec(),
    );
    let body = wire::encode_request(request).ok()?;
    framed
        .send(tokio_util::bytes::Bytes::from(body))
        .await
        .ok()?;
    let frame = tokio::time::timeout(Duration::from_secs(120), framed.next())
        .await
        .ok()??
        .ok()?;
    wire::decode_response(&frame).ok()
}

/// Signs claims with a seed key.
pub fn sign(claims: &ApprovalClaims, seed: u8) -> SignedApproval {
    claims::sign(claims.encode().expect("claims encode"), &test_key(seed))
}

/// Signs claims with a seed key and adds an assertion over the same bytes from each passkey,
/// as the page will send them.
pub fn sign_with_passkeys(
    claims: &ApprovalClaims,
    seed: u8,
    passkeys: &mut [&mut authenticator::SoftPasskey],
) -> SignedApproval {
    let bytes = claims.encode().expect("claims encode");
    let assertions = passkeys.iter_mut().map(|p| p.assert(&bytes)).collect();
    claims::sign(bytes, &test_key(seed)).with_passkeys(assertions)
}

/// Decodes a length-prefixed response, `None` for no answer.
pub fn decode_answer(bytes: &[u8]) -> Option<Response> {
    let (len, body) = bytes.split_at_checked(4)?;
    let n = u32::from_be_bytes(len.try_into().ok()?) as usize;
    wire::decode_response(body.get(..n)?).ok()
}

/// A request body framed with its 4-byte big-endian length.
pub fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = (body.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(body);
    out
}

/// A child process killed and reaped when the guard is dropped, so a failing test leaves no
/// process behind.
pub struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
