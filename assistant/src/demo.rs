//! `fleetwatch demo`: the whole system on one machine, with no account and no key.
//!
//! The pieces, in start order:
//! 1. `fleetwatch-sim serve --demo`: a simulated Epiphan MCP server with a normal and a sandbox
//!    team (child process);
//! 2. `fleetwatch-sim model --offline`: the rule-based stand-in for the model API (child
//!    process), so the assistant's real HTTP model loop runs;
//! 3. the real `fleetwatch-executor` (child process) with its own state folder, socket, policy
//!    copy, approver key file and sandbox token slot;
//! 4. in this process, what `fleetwatch serve` runs: the chat engine, the chat socket and the
//!    approval page;
//! 5. the terminal chat, or with `--script` a fixed scenario that checks every step.
//!
//! The simulator runs as its own binary on purpose: linking it here would put test stand-ins
//! into the production binary's dependency graph.
//!
//! Hazards:
//! * Nothing may be left behind. Child processes and the temporary folder belong to one guard
//!   ([`Leftovers`]) whose `Drop` stops and removes them, so a returned error, a panic and
//!   Ctrl-C all end the same way.
//! * The demo never reads the caller's `FLEETWATCH_*` variables, and its children start with a
//!   cleared environment: a variable meant for a real installation must not point the demo at
//!   a real fleet, a real executor or a real state folder.
//! * Children stay in this process's process group, so a Ctrl-C typed at the terminal reaches
//!   them too and a closed terminal takes them down with the demo.

use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fleetwatch_protocol::policy::Policy;
use serde_json::{Value, json};
use tokio::sync::oneshot;

use crate::answer::{Assistant, Reply};
use crate::config::{Autonomy, Config, SETTINGS_FILE};
use crate::executor_client::ExecutorClient;
use crate::keys::ApproverKey;
use crate::model::{ApiKey, ModelConfig};
use crate::page::{self, PageConfig, PageDeps, PageError, PageHandle, SecretDelivery};
use crate::reads::{self, Reader, Token};
use crate::store::{AnchorCheck, ChainCheck, Status, Store};
use crate::{ask, grants, serve};

/// The shipped tool policy. The demo installs this one copy for both sides, so their digests
/// agree wherever the binary is run from.
const POLICY: &str = include_str!("../../tool_policy.yaml");

/// How long a piece may take to come up. Generous: a cold start on a busy machine is slow.
const START_DEADLINE: Duration = Duration::from_secs(60);
/// How long a child gets to stop after SIGTERM before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// What the model is, said before anything else.
const STAND_IN_NOTICE: &str = "The model in this demo is a small rule-based stand-in, not AI: it \
     understands a fixed set of questions and requests in English and Spanish, reads the fleet \
     through the same guarded tools and proposes changes the way a model would.";

/// Questions to try, printed at the prompt.
const TRY: &[&str] = &[
    "what needs attention?",
    "what's offline?",
    "¿qué salas están grabando?",
    "start recording in Test Room A",
    "stop the stream in Demo Studio",
    "reboot Lab Bench 2",
    "reboot Lab Bench 1   (an event starts soon: the executor refuses it)",
];

/// Runs the demo; returns the exit code.
pub async fn run(script: bool) -> i32 {
    let mut leftovers = match Leftovers::new() {
        Ok(l) => l,
        Err(e) => {
            eprintln!("fleetwatch demo: cannot make a temporary folder: {e}");
            return 1;
        }
    };
    if script {
        println!("Fleetwatch demo, scripted: a fixed scenario against the simulated fleet.");
    } else {
        println!("Fleetwatch demo: the whole system on this machine. No account, no key.");
    }
    println!("{STAND_IN_NOTICE}");
    println!(
        "Working folder: {} (removed when the demo ends)",
        leftovers.folder.display()
    );
    println!();

    let stopped = async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate());
        let mut hup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup());
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            Some(()) = async { term.as_mut().ok()?.recv().await } => {}
            Some(()) = async { hup.as_mut().ok()?.recv().await } => {}
        }
    };
    tokio::pin!(stopped);

    let started = tokio::select! {
        started = start(&mut leftovers, script) => started,
        () = &mut stopped => Err("interrupted while starting".to_owned()),
    };
    let running = match started {
        Ok(running) => running,
        Err(e) => {
            eprintln!("fleetwatch demo: {e}");
            drop(leftovers);
            return 1;
        }
    };
    println!();

    let code = if script {
        tokio::select! {
            code = scenario(&running, &leftovers) => code,
            () = &mut stopped => {
                eprintln!("fleetwatch demo: interrupted");
                1
            }
        }
    } else {
        println!("Try (the model is rule-based, so it knows only requests like these):");
        for q in TRY {
            println!("  {q}");
        }
        println!(
            "A proposal waits on the approval page until you approve or deny it there; \
             nothing changes before that."
        );
        println!("Ctrl-C or Ctrl-D ends the demo and removes everything it made.");
        println!();
        tokio::select! {
            code = chat(Arc::clone(&running.assistant)) => code,
            () = &mut stopped => 0,
        }
    };

    running.stop().await;
    println!("Stopping: executor, model stand-in, simulator; removing the working folder.");
    drop(leftovers);
    code
}

// ---------------------------------------------------------------------------------------------
// Leftovers: the children and the folder, stopped and removed however the demo ends.

/// A child process the demo started.
struct Started {
    name: &'static str,
    child: Child,
    log: PathBuf,
}

/// Everything the demo made outside its own memory.
struct Leftovers {
    folder: PathBuf,
    children: Vec<Started>,
}

impl Leftovers {
    /// Makes `$TMPDIR/fleetwatch-demo-<random>` with mode 0700, created exclusively so a folder
    /// someone else prepared is never used.
    fn new() -> std::io::Result<Leftovers> {
        let base = std::env::temp_dir();
        let mut last = None;
        for _ in 0..8 {
            let mut bytes = [0u8; 6];
            getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
            let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            let folder = base.join(format!("fleetwatch-demo-{hex}"));
            match std::fs::DirBuilder::new().mode(0o700).create(&folder) {
                Ok(()) => {
                    return Ok(Leftovers {
                        folder,
                        children: Vec::new(),
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| std::io::Error::other("no free folder name")))
    }

    /// A private subfolder (0700).
    fn subfolder(&self, name: &str) -> Result<PathBuf, String> {
        let path = self.folder.join(name);
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(path)
    }

    /// Starts a child with a cleared environment (PATH plus `env`), its standard error to a
    /// log file in the folder and its standard output to `stdout` (or nowhere).
    fn spawn(
        &mut self,
        name: &'static str,
        program: &Path,
        args: &[&str],
        env: &[(&str, String)],
        stdout: Option<&Path>,
    ) -> Result<u32, String> {
        let log = self.folder.join(format!("{}.log", name.replace(' ', "-")));
        let stderr = private_file(&log)?;
        let out = match stdout {
            Some(path) => Stdio::from(private_file(path)?),
            None => Stdio::null(),
        };
        let mut command = Command::new(program);
        command
            .args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(stderr);
        for (key, value) in env {
            command.env(key, value);
        }
        let child = command
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", program.display()))?;
        let pid = child.id();
        self.children.push(Started { name, child, log });
        Ok(pid)
    }

    /// Fails with the child's own words if it has exited.
    fn check_alive(&mut self, name: &str) -> Result<(), String> {
        let Some(started) = self.children.iter_mut().find(|c| c.name == name) else {
            return Err(format!("{name} was never started"));
        };
        match started.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => {
                let log = std::fs::read_to_string(&started.log).unwrap_or_default();
                let tail: Vec<&str> = log.lines().rev().take(8).collect();
                let tail: Vec<&str> = tail.into_iter().rev().collect();
                Err(format!(
                    "{name} exited ({status}):\n{}",
                    if tail.is_empty() {
                        "(no output)".to_owned()
                    } else {
                        tail.join("\n")
                    }
                ))
            }
            Err(e) => Err(format!("{name}: {e}")),
        }
    }
}

impl Drop for Leftovers {
    fn drop(&mut self) {
        // Newest first: the executor talks to the simulator, so it goes before it.
        while let Some(mut started) = self.children.pop() {
            stop_child(&mut started.child);
        }
        if let Err(e) = std::fs::remove_dir_all(&self.folder)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            eprintln!(
                "fleetwatch demo: could not remove {}: {e}",
                self.folder.display()
            );
        }
    }
}

/// SIGTERM, a grace period, then SIGKILL; always reaped, so no zombie outlives the demo.
fn stop_child(child: &mut Child) {
    if matches!(child.try_wait(), Ok(Some(_))) {
        return;
    }
    let pid = i32::try_from(child.id())
        .ok()
        .and_then(rustix::process::Pid::from_raw);
    if let Some(pid) = pid {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        let deadline = Instant::now() + STOP_GRACE;
        while Instant::now() < deadline {
            if matches!(child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Creates a file only this user can read, replacing nothing.
fn private_file(path: &Path) -> Result<std::fs::File, String> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))
}

fn write_private(path: &Path, contents: &str) -> Result<(), String> {
    let mut file = private_file(path)?;
    file.write_all(contents.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|e| format!("{}: {e}", path.display()))
}

// ---------------------------------------------------------------------------------------------
// Starting the pieces

/// A sibling binary of the running `fleetwatch`, or the exact command that builds it.
fn sibling(name: &str) -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let dir = exe
        .parent()
        .ok_or_else(|| "cannot find this program's folder".to_owned())?;
    let path = dir.join(name);
    if path.is_file() {
        return Ok(path);
    }
    let build = if dir.ends_with("release") {
        "cargo build --release --bins"
    } else {
        "cargo build --bins"
    };
    Err(format!(
        "{name} was not found next to fleetwatch (in {}). The demo runs it as a separate \
         program; build every binary of the workspace with `{build}` and try again.",
        dir.display()
    ))
}

fn progress(what: &str) {
    print!("  {what}… ");
    let _ = std::io::stdout().flush();
}

/// Waits until `file` holds at least `lines` complete lines, or the child exits.
async fn read_lines(
    leftovers: &mut Leftovers,
    name: &str,
    file: &Path,
    lines: usize,
) -> Result<Vec<String>, String> {
    let deadline = Instant::now() + START_DEADLINE;
    loop {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        if text.matches('\n').count() >= lines {
            return Ok(text.lines().map(str::to_owned).collect());
        }
        leftovers.check_alive(name)?;
        if Instant::now() > deadline {
            return Err(format!("{name} did not start within {START_DEADLINE:?}"));
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// The simulator as the demo sees it.
struct Sim {
    mcp_url: String,
    base: String,
    control_token: String,
    sandbox_token: String,
}

impl Sim {
    async fn get(&self, path: &str) -> Result<Value, String> {
        let response = fleetwatch_signin::tls::client_builder()
            .build()
            .map_err(|e| format!("simulator {path}: {e}"))?
            .get(format!("{}{path}", self.base))
            .header("x-control-token", &self.control_token)
            .timeout(Duration::from_secs(10))
            .send()
            .await
            .map_err(|e| format!("simulator {path}: {e}"))?;
        if !response.status().is_success() {
            return Err(format!("simulator {path}: {}", response.status()));
        }
        response
            .json()
            .await
            .map_err(|e| format!("simulator {path}: {e}"))
    }

    async fn sandbox_devices(&self) -> Result<Vec<String>, String> {
        let value = self.get("/control/devices?team=sandbox").await?;
        serde_json::from_value(value).map_err(|e| format!("simulator device list: {e}"))
    }

    /// Every write call the simulator recorded, in order.
    async fn writes(&self) -> Result<Vec<Value>, String> {
        match self.get("/control/writes").await? {
            Value::Array(items) => Ok(items),
            _ => Err("simulator /control/writes: not a list".to_owned()),
        }
    }
}

/// Starts a child that prints what it listens on, and returns its pid and its first `count`
/// lines of output.
async fn start_listening_child(
    leftovers: &mut Leftovers,
    name: &'static str,
    program: &Path,
    args: &[&str],
    count: usize,
) -> Result<(u32, Vec<String>), String> {
    let out = leftovers
        .folder
        .join(format!("{}.out", name.replace(' ', "-")));
    let pid = leftovers.spawn(name, program, args, &[], Some(&out))?;
    let lines = read_lines(leftovers, name, &out, count).await?;
    Ok((pid, lines))
}

async fn start_sim(leftovers: &mut Leftovers, program: &Path) -> Result<Sim, String> {
    progress("starting the simulated Epiphan fleet (normal and sandbox teams)");
    // URL, control token, then one token line per team.
    let (pid, lines) = start_listening_child(
        leftovers,
        "simulator",
        program,
        &["serve", "--demo", "--port", "0"],
        4,
    )
    .await?;
    let mcp_url = lines.first().cloned().unwrap_or_default();
    let control_token = lines
        .iter()
        .find_map(|l| l.strip_prefix("control token: "))
        .map(str::to_owned)
        .ok_or_else(|| "the simulator printed no control token".to_owned())?;
    let sandbox_token = lines
        .iter()
        .find_map(|l| l.strip_prefix("team sandbox token: "))
        .map(str::to_owned)
        .ok_or_else(|| "the simulator printed no sandbox team token".to_owned())?;
    let base = mcp_url
        .strip_suffix("/mcp")
        .ok_or_else(|| format!("unexpected simulator URL {mcp_url:?}"))?
        .to_owned();
    println!("ok (pid {pid}, {mcp_url})");
    Ok(Sim {
        mcp_url,
        base,
        control_token,
        sandbox_token,
    })
}

async fn start_model(leftovers: &mut Leftovers, program: &Path) -> Result<String, String> {
    progress("starting the offline model stand-in (rule-based, not AI)");
    let (pid, lines) = start_listening_child(
        leftovers,
        "model stand-in",
        program,
        &["model", "--offline", "--port", "0"],
        1,
    )
    .await?;
    let url = lines.first().cloned().unwrap_or_default();
    println!("ok (pid {pid}, {url})");
    Ok(url)
}

/// Where the executor's files live.
struct ExecutorFiles {
    config: PathBuf,
    socket: PathBuf,
}

/// Writes the executor's configuration, policy copy, approver key file and token slot.
///
/// This is a demo shortcut: the token slot is written directly instead of through
/// `fleetwatch-executor login --sandbox --known-devices`, because in the demo the assistant
/// reads the sandbox team too (see [`assistant_config`]) and the overlap check would rightly
/// refuse that.
fn executor_files(
    leftovers: &Leftovers,
    key_line: &str,
    sandbox_token: &str,
) -> Result<ExecutorFiles, String> {
    let root = leftovers.subfolder("executor")?;
    let etc = root.join("etc");
    let state = root.join("state");
    let run = root.join("run");
    for dir in [&etc, &state, &run] {
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(dir)
            .map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let policy = etc.join("tool_policy.yaml");
    write_private(&policy, POLICY)?;
    let keys = etc.join("approvers.pub");
    write_private(&keys, &format!("{key_line}\n"))?;
    let socket = run.join("executor.sock");
    let uid = rustix::process::getuid().as_raw();
    let config = etc.join("executor.yaml");
    let yaml = format!(
        "# fleetwatch demo: removed when the demo ends\n\
         socket: {}\nallowed_uids: [{uid}]\napprover_keys: {}\npolicy: {}\nstate_dir: {}\n",
        yaml_string(&socket),
        yaml_string(&keys),
        yaml_string(&policy),
        yaml_string(&state),
    );
    write_private(&config, &yaml)?;
    write_private(&state.join("sandbox.token"), sandbox_token)?;
    Ok(ExecutorFiles { config, socket })
}

/// A path as a YAML double-quoted string (JSON strings are valid YAML).
fn yaml_string(path: &Path) -> String {
    Value::String(path.display().to_string()).to_string()
}

async fn start_executor(
    leftovers: &mut Leftovers,
    program: &Path,
    files: &ExecutorFiles,
    sim: &Sim,
    fence: &str,
) -> Result<(), String> {
    progress("starting fleetwatch-executor (its own folder, socket and sandbox sign-in)");
    let pid = leftovers.spawn(
        "executor",
        program,
        &["serve"],
        &[
            (
                "FLEETWATCH_EXECUTOR_CONFIG",
                files.config.display().to_string(),
            ),
            ("FLEETWATCH_EPIPHAN_URL", sim.mcp_url.clone()),
            ("FLEETWATCH_ALLOW_LOOPBACK_HTTP", "1".to_owned()),
            ("FLEETWATCH_WRITE_DEVICE_IDS", fence.to_owned()),
            ("RUST_LOG", "warn".to_owned()),
        ],
        None,
    )?;
    let client = ExecutorClient::new(&files.socket).with_timeout(Duration::from_secs(10));
    let deadline = Instant::now() + START_DEADLINE;
    loop {
        leftovers.check_alive("executor")?;
        if files.socket.exists()
            && let Ok(status) = client.status().await
        {
            if !status.sandbox_sign_in || !status.fence_configured {
                return Err("the executor started without its sign-in or fence".to_owned());
            }
            println!("ok (pid {pid}, socket {})", files.socket.display());
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!(
                "the executor did not answer within {START_DEADLINE:?}"
            ));
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// The assistant's configuration, built only from the demo's own values.
///
/// The demo is a demo: both sign-ins read the same simulated sandbox team. The assistant's read
/// token is the sandbox team's, so the rooms the model reads are the rooms a proposal may
/// change and "start recording in <room>" can go all the way to a write. The executor alone
/// still holds the write path, behind the fence (the sandbox devices) and a signed, single-use
/// approval. A real installation keeps the two teams apart, and the executor's login refuses a
/// sandbox team that overlaps the normal one.
fn assistant_config(
    state: &Path,
    sim: &Sim,
    fence: &str,
    executor_socket: &Path,
) -> Result<Config, String> {
    let policy = state.join("tool_policy.yaml");
    write_private(&policy, POLICY)?;
    write_private(&state.join(SETTINGS_FILE), "autonomy: propose\n")?;
    write_private(&state.join(reads::TOKEN_FILE), &sim.sandbox_token)?;
    let values: Vec<(&str, String)> = vec![
        ("FLEETWATCH_EPIPHAN_URL", sim.mcp_url.clone()),
        ("FLEETWATCH_ALLOW_LOOPBACK_HTTP", "1".to_owned()),
        ("FLEETWATCH_WRITE_DEVICE_IDS", fence.to_owned()),
        (
            "FLEETWATCH_EXECUTOR_SOCKET",
            executor_socket.display().to_string(),
        ),
        ("FLEETWATCH_POLICY", policy.display().to_string()),
        ("FLEETWATCH_STATE_DIR", state.display().to_string()),
    ];
    let config = Config::from_lookup(|name| {
        values
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| value.clone())
    })
    .map_err(|e| e.to_string())?;
    if config.settings.autonomy != Autonomy::Propose || !config.proposing() {
        return Err("the demo settings did not switch proposing on".to_owned());
    }
    Ok(config)
}

/// The approval page's port: `FLEETWATCH_APPROVE_PORT` or the usual default for the
/// interactive demo (so the address is the familiar one), any free port for the script.
fn page_port(script: bool) -> u16 {
    if script {
        return 0;
    }
    std::env::var("FLEETWATCH_APPROVE_PORT")
        .ok()
        .and_then(|v| v.trim().parse::<u16>().ok())
        .unwrap_or(crate::config::DEFAULT_APPROVE_PORT)
}

/// Everything running in this process.
struct Running {
    sim: Sim,
    config: Config,
    assistant: Arc<Assistant>,
    store: Arc<Mutex<Store>>,
    page: PageHandle,
    executor_config: PathBuf,
    executor_program: PathBuf,
    chat_stop: oneshot::Sender<()>,
    chat_task: tokio::task::JoinHandle<()>,
}

impl Running {
    /// Stops the page (its secret file goes with it) and the chat socket.
    async fn stop(self) {
        let _ = self.chat_stop.send(());
        let _ = self.chat_task.await;
        let _ = std::fs::remove_file(self.config.chat_socket());
        if let Err(e) = self.page.shutdown().await {
            eprintln!("fleetwatch demo: {e}");
        }
    }
}

async fn start(leftovers: &mut Leftovers, script: bool) -> Result<Running, String> {
    let sim_program = sibling("fleetwatch-sim")?;
    let executor_program = sibling("fleetwatch-executor")?;
    let policy = Arc::new(Policy::from_yaml(POLICY).map_err(|e| format!("policy: {e}"))?);

    println!("Starting:");
    let sim = start_sim(leftovers, &sim_program).await?;
    let model_url = start_model(leftovers, &sim_program).await?;

    // The fence: exactly the sandbox team's devices.
    let sandbox = sim.sandbox_devices().await?;
    if sandbox.is_empty() {
        return Err("the simulator's sandbox team has no devices".to_owned());
    }
    let fence = sandbox.join(",");

    // The assistant's key is made first: its public line is what the executor trusts.
    let state = leftovers.subfolder("assistant")?;
    let key = ApproverKey::load_or_create(&state).map_err(|e| e.to_string())?;
    let files = executor_files(leftovers, &key.key_line(), &sim.sandbox_token)?;
    start_executor(leftovers, &executor_program, &files, &sim, &fence).await?;

    progress("starting the assistant (chat engine, chat socket, every category granted)");
    let mut config = assistant_config(&state, &sim, &fence, &files.socket)?;
    let categories: std::collections::BTreeSet<String> = policy
        .read_tools()
        .map(|t| t.category.clone())
        .chain(policy.propose_entries().map(|e| e.category.clone()))
        .collect();
    for category in &categories {
        grants::open(&state, &policy, category).map_err(|e| e.to_string())?;
    }
    let mut store = Store::open(&state).map_err(|e| e.to_string())?;
    store
        .audit(
            "started",
            None,
            &json!({"demo": true, "key_id": key.key_id().to_hex()}),
        )
        .map_err(|e| e.to_string())?;
    let store = Arc::new(Mutex::new(store));
    let token = Token::from_file(&state.join(reads::TOKEN_FILE)).map_err(|e| e.to_string())?;
    let reader = Arc::new(
        Reader::live(&config, Arc::clone(&policy), token)
            .map_err(|e| e.to_string())?
            .with_timeout(config.read_timeout),
    );
    let api_key = ApiKey::new("offline-demo")
        .ok_or_else(|| "the demo's placeholder model key is empty".to_owned())?;
    let model = ModelConfig::new(model_url, api_key, "fleetwatch-offline-demo");
    println!("ok ({} categories open)", categories.len());

    println!("  starting the approval page…");
    let deps = PageDeps {
        store: Arc::clone(&store),
        executor: ExecutorClient::new(&config.executor_socket),
        policy: Arc::clone(&policy),
        key: Arc::new(key),
    };
    let mut page_config = PageConfig::from_config(&config);
    page_config.port = page_port(script);
    if script {
        page_config.secret_delivery = SecretDelivery::File;
    }
    // The page announces its address (and the secret, on a terminal) itself.
    let page = match page::start(page_config, deps.clone()).await {
        Ok(page) => page,
        Err(PageError::Bind { port, source }) if port != 0 => {
            println!(
                "  port {port} is busy ({source}); the approval page takes a free port instead"
            );
            let mut retry = PageConfig::from_config(&config);
            retry.port = 0;
            page::start(retry, deps).await.map_err(|e| e.to_string())?
        }
        Err(e) => return Err(e.to_string()),
    };
    // Answers name the page's real address.
    config.approve_port = page.addr.port();
    let assistant = Arc::new(Assistant::from_config(
        &config,
        Arc::clone(&policy),
        reader,
        Arc::clone(&store),
        Some(model),
        config.proposing(),
    ));

    let listener = serve::bind(&config.chat_socket())?;
    let (chat_stop, stop_rx) = oneshot::channel::<()>();
    let chat_task = tokio::spawn(serve::serve(
        listener,
        Arc::clone(&assistant),
        serve::Operators::from_config(&config),
        async move {
            let _ = stop_rx.await;
        },
    ));
    if !script {
        println!("Open the page in a browser on this machine and enter the secret to sign in.");
        println!(
            "From another terminal you can also ask: FLEETWATCH_STATE_DIR={} fleetwatch ask",
            state.display()
        );
    }
    Ok(Running {
        sim,
        config,
        assistant,
        store,
        page,
        executor_config: files.config,
        executor_program,
        chat_stop,
        chat_task,
    })
}

// ---------------------------------------------------------------------------------------------
// The terminal chat

/// The demo's prompt: the engine's answers, rendered the way `fleetwatch ask` renders them.
/// Unlike `ask`, Ctrl-C at the prompt ends the demo: here it is the way out people try first.
async fn chat(assistant: Arc<Assistant>) -> i32 {
    let mut editor = match rustyline::DefaultEditor::new() {
        Ok(editor) => editor,
        Err(e) => {
            eprintln!("fleetwatch demo: cannot open the terminal: {e}");
            return 1;
        }
    };
    loop {
        // Line reading blocks, so it runs off the async workers; the editor travels with it.
        let read = tokio::task::spawn_blocking(move || {
            let line = editor.readline("demo> ");
            (editor, line)
        })
        .await;
        let (back, line) = match read {
            Ok(pair) => pair,
            Err(_) => return 1,
        };
        editor = back;
        let question = match line {
            Ok(line) => line,
            Err(
                rustyline::error::ReadlineError::Interrupted | rustyline::error::ReadlineError::Eof,
            ) => return 0,
            Err(e) => {
                eprintln!("fleetwatch demo: {e}");
                return 1;
            }
        };
        let question = question.trim();
        if question.is_empty() {
            continue;
        }
        let _ = editor.add_history_entry(question);
        let reply = assistant.ask(question, false).await;
        println!("{}\n", ask::render(&reply));
    }
}

// ---------------------------------------------------------------------------------------------
// The scripted scenario

/// The rooms the scenario uses, all on the sandbox team.
const CALM_ROOM: &str = "Test Room A";
const REBOOT_ROOM: &str = "Lab Bench 2";
const BUSY_ROOM: &str = "Lab Bench 1";

async fn scenario(running: &Running, leftovers: &Leftovers) -> i32 {
    let mut script = match Script::new(running, leftovers) {
        Ok(s) => s,
        Err(e) => {
            println!("FAILED: {e}");
            return 1;
        }
    };
    const STEPS: [&str; 9] = [
        "a question",
        "the same in Spanish",
        "a proposal",
        "signing in to the approval page",
        "approving the proposal",
        "approving it a second time",
        "a disruptive change, confirmed",
        "a refusal from the executor",
        "both audit chains",
    ];
    let total = STEPS.len();
    for (n, title) in STEPS.iter().enumerate() {
        println!("[{}/{total}] {title}", n + 1);
        let result = match n {
            0 => script.question().await,
            1 => script.spanish().await,
            2 => script.proposal().await,
            3 => script.sign_in().await,
            4 => script.approve_calm().await,
            5 => script.approve_again().await,
            6 => script.disruptive().await,
            7 => script.refusal().await,
            _ => script.audit().await,
        };
        match result {
            Ok(()) => println!("      ok\n"),
            Err(e) => {
                println!("      FAILED: {e}\n");
                println!(
                    "Result: step {} of {total} did not happen as expected.",
                    n + 1
                );
                return 1;
            }
        }
    }
    println!("Result: all {total} steps happened as expected.");
    0
}

struct Script<'r> {
    running: &'r Running,
    http: reqwest::Client,
    origin: String,
    secret: String,
    cookie: Option<String>,
    /// The proposal approved in step 5, with the form used, for the second attempt.
    approved: Option<(u64, Vec<(String, String)>)>,
    writes: usize,
}

fn say(prefix: &str, text: &str) {
    let mut first = true;
    for line in text.lines() {
        if line.trim().is_empty() {
            println!();
        } else if first {
            println!("      {prefix}{line}");
            first = false;
        } else {
            println!("      {}{line}", " ".repeat(prefix.chars().count()));
        }
    }
}

impl<'r> Script<'r> {
    fn new(running: &'r Running, leftovers: &Leftovers) -> Result<Script<'r>, String> {
        let secret_file = running
            .page
            .secret_file
            .clone()
            .ok_or_else(|| "the page secret was not written to a file".to_owned())?;
        if !secret_file.starts_with(&leftovers.folder) {
            return Err("the page secret file is outside the demo folder".to_owned());
        }
        let secret = std::fs::read_to_string(&secret_file)
            .map_err(|e| format!("{}: {e}", secret_file.display()))?
            .trim()
            .to_owned();
        let http = fleetwatch_signin::tls::client_builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(150))
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Script {
            running,
            http,
            origin: format!("http://127.0.0.1:{}", running.page.addr.port()),
            secret,
            cookie: None,
            approved: None,
            writes: 0,
        })
    }

    async fn ask(&self, question: &str) -> Reply {
        println!("      operator> {question}");
        let reply = self.running.assistant.ask(question, false).await;
        say("", &ask::render(&reply));
        reply
    }

    fn status(&self, id: u64) -> Result<Status, String> {
        let store = self
            .running
            .store
            .lock()
            .map_err(|_| "the store lock is poisoned".to_owned())?;
        store
            .proposal(id)
            .map_err(|e| e.to_string())?
            .map(|p| p.status)
            .ok_or_else(|| format!("proposal #{id} is not stored"))
    }

    /// Asks for a change and expects exactly one pending proposal for `tool`.
    async fn propose(&self, question: &str, tool: &str) -> Result<u64, String> {
        let reply = self.ask(question).await;
        let [id] = reply.proposals.as_slice() else {
            return Err(format!("expected one proposal, got {:?}", reply.proposals));
        };
        let stored = {
            let store = self
                .running
                .store
                .lock()
                .map_err(|_| "the store lock is poisoned".to_owned())?;
            store.proposal(*id).map_err(|e| e.to_string())?
        };
        match stored {
            Some(p) if p.status == Status::Pending && p.tool == tool => Ok(*id),
            Some(p) => Err(format!(
                "proposal #{id} is {} for {}, expected pending {tool}",
                p.status.as_str(),
                p.tool
            )),
            None => Err(format!("proposal #{id} is not stored")),
        }
    }

    async fn new_writes(&mut self) -> Result<Vec<Value>, String> {
        let all = self.running.sim.writes().await?;
        let fresh = all.get(self.writes..).unwrap_or_default().to_vec();
        self.writes = all.len();
        Ok(fresh)
    }

    async fn page_get(&self) -> Result<(u16, String), String> {
        let mut request = self.http.get(format!("{}/", self.origin));
        if let Some(cookie) = &self.cookie {
            request = request.header("cookie", cookie);
        }
        let response = request
            .header("accept-language", "en")
            .send()
            .await
            .map_err(|e| format!("GET /: {e}"))?;
        let status = response.status().as_u16();
        let body = response.text().await.map_err(|e| e.to_string())?;
        Ok((status, body))
    }

    async fn page_post(
        &self,
        path: &str,
        fields: &[(String, String)],
        origin: bool,
    ) -> Result<reqwest::Response, String> {
        let mut request = self
            .http
            .post(format!("{}{path}", self.origin))
            .header("content-type", "application/x-www-form-urlencoded")
            .header("accept-language", "en")
            .body(form_body(fields));
        if origin {
            request = request.header("origin", &self.origin);
        }
        if let Some(cookie) = &self.cookie {
            request = request.header("cookie", cookie);
        }
        request
            .send()
            .await
            .map_err(|e| format!("POST {path}: {e}"))
    }

    async fn post_text(
        &self,
        path: &str,
        fields: &[(String, String)],
    ) -> Result<(u16, String), String> {
        let response = self.page_post(path, fields, true).await?;
        let status = response.status().as_u16();
        let body = response.text().await.map_err(|e| e.to_string())?;
        Ok((status, body))
    }

    /// The card now on the page, which must be for proposal `id`; returns its approve form.
    async fn card(&self, id: u64) -> Result<Vec<(String, String)>, String> {
        let (status, html) = self.page_get().await?;
        if status != 200 {
            return Err(format!("GET / answered {status}"));
        }
        let fields = form_fields(&html, "/approve")
            .ok_or_else(|| format!("the card has no approve form:\n{}", page_text(&html)))?;
        if field(&fields, "proposal") != Some(id.to_string().as_str()) {
            return Err(format!("the card is not for proposal #{id}"));
        }
        println!(
            "      page: GET / → 200, {}",
            element_text(&html, "id=\"card-heading\"").unwrap_or_default()
        );
        if let Some(tool) = element_text(&html, "id=\"tool\"") {
            println!("            tool: {tool}");
        }
        for line in list_items(&html, "id=\"effects\"") {
            println!("            effect: {line}");
        }
        for line in list_items(&html, "id=\"window\"") {
            println!("            schedule: {line}");
        }
        Ok(fields)
    }

    async fn question(&mut self) -> Result<(), String> {
        let reply = self.ask("what needs attention?").await;
        if !reply.proposals.is_empty() {
            return Err("a question raised a proposal".to_owned());
        }
        if !reply.answer.contains("not AI") {
            return Err("the answer does not say the model is a stand-in".to_owned());
        }
        Ok(())
    }

    async fn spanish(&mut self) -> Result<(), String> {
        let reply = self.ask("¿qué salas están grabando?").await;
        if !reply.proposals.is_empty() {
            return Err("a question raised a proposal".to_owned());
        }
        if !reply.answer.contains("no es IA") || !reply.answer.contains("Sala de Pruebas 1") {
            return Err("the Spanish answer does not name the recording room".to_owned());
        }
        Ok(())
    }

    async fn proposal(&mut self) -> Result<(), String> {
        let id = self
            .propose(
                &format!("start recording in {CALM_ROOM}"),
                "batch_recording",
            )
            .await?;
        if !self.new_writes().await?.is_empty() {
            return Err("something was written before anyone approved".to_owned());
        }
        println!("      proposal #{id} stored, pending; the simulator recorded no write");
        self.approved = Some((id, Vec::new()));
        Ok(())
    }

    async fn sign_in(&mut self) -> Result<(), String> {
        let (status, html) = self.page_get().await?;
        if status != 200 || !html.contains("action=\"/login\"") {
            return Err(format!(
                "GET / without a session answered {status} without a sign-in form"
            ));
        }
        println!("      page: GET / → 200, the sign-in form");
        let secret = vec![("secret".to_owned(), self.secret.clone())];
        let refused = self.page_post("/login", &secret, false).await?;
        if refused.status().as_u16() != 403 {
            return Err(format!(
                "POST /login without an Origin header answered {}",
                refused.status()
            ));
        }
        println!("      page: POST /login without an Origin header → 403");
        let response = self.page_post("/login", &secret, true).await?;
        let status = response.status().as_u16();
        let cookie = response
            .headers()
            .get("set-cookie")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .map(str::to_owned);
        match (status, cookie) {
            (303, Some(cookie)) => {
                println!("      page: POST /login with the secret → 303, session cookie set");
                self.cookie = Some(cookie);
                Ok(())
            }
            (status, _) => Err(format!("POST /login with the secret answered {status}")),
        }
    }

    async fn approve_calm(&mut self) -> Result<(), String> {
        let Some((id, _)) = self.approved.take() else {
            return Err("no proposal to approve".to_owned());
        };
        let fields = self.card(id).await?;
        let (status, html) = self.post_text("/approve", &fields).await?;
        let heading = element_text(&html, "id=\"heading\"").unwrap_or_default();
        println!("      page: POST /approve → {status}, \"{heading}\"");
        if status != 200 || heading != "Done" {
            return Err(format!("the approval did not run:\n{}", page_text(&html)));
        }
        let writes = self.new_writes().await?;
        let [write] = writes.as_slice() else {
            return Err(format!(
                "expected one write, the simulator recorded {}",
                writes.len()
            ));
        };
        show_write(write);
        let args = write.get("arguments").cloned().unwrap_or_default();
        if write.get("tool").and_then(Value::as_str) != Some("batch_recording")
            || args.get("action").and_then(Value::as_str) != Some("start")
            || write.get("team").and_then(Value::as_str) != Some("sandbox")
        {
            return Err("the recorded write is not the approved change".to_owned());
        }
        if self.status(id)? != Status::Executed {
            return Err(format!("proposal #{id} is not marked executed"));
        }
        println!("      proposal #{id}: executed");
        self.approved = Some((id, fields));
        Ok(())
    }

    async fn approve_again(&mut self) -> Result<(), String> {
        let Some((id, fields)) = self.approved.take() else {
            return Err("no approved proposal to try again".to_owned());
        };
        let (status, html) = self.post_text("/approve", &fields).await?;
        println!(
            "      page: POST /approve with the same form again → {status}, \"{}\"",
            first_paragraph(&html).unwrap_or_default()
        );
        if status != 409 {
            return Err(format!(
                "a second approval of proposal #{id} answered {status}"
            ));
        }
        if !self.new_writes().await?.is_empty() {
            return Err("the second approval wrote something".to_owned());
        }
        println!("      simulator: no new write");
        Ok(())
    }

    async fn disruptive(&mut self) -> Result<(), String> {
        let id = self
            .propose(&format!("reboot {REBOOT_ROOM}"), "batch_reboot")
            .await?;
        let fields = self.card(id).await?;
        let (status, html) = self.post_text("/approve", &fields).await?;
        let confirm = form_fields(&html, "/confirm");
        println!(
            "      page: POST /approve → {status}, \"{}\"",
            element_text(&html, "id=\"confirm-text\"").unwrap_or_default()
        );
        let Some(confirm) = confirm.filter(|_| status == 200) else {
            return Err(format!("no confirmation was asked:\n{}", page_text(&html)));
        };
        if !self.new_writes().await?.is_empty() {
            return Err("the reboot ran before it was confirmed".to_owned());
        }
        println!("      simulator: nothing written yet");
        let (status, html) = self.post_text("/confirm", &confirm).await?;
        let heading = element_text(&html, "id=\"heading\"").unwrap_or_default();
        println!("      page: POST /confirm → {status}, \"{heading}\"");
        if status != 200 || heading != "Done" {
            return Err(format!(
                "the confirmed reboot did not run:\n{}",
                page_text(&html)
            ));
        }
        let writes = self.new_writes().await?;
        let [write] = writes.as_slice() else {
            return Err(format!(
                "expected one write, the simulator recorded {}",
                writes.len()
            ));
        };
        show_write(write);
        if write.get("tool").and_then(Value::as_str) != Some("batch_reboot") {
            return Err("the recorded write is not the reboot".to_owned());
        }
        if self.status(id)? != Status::Executed {
            return Err(format!("proposal #{id} is not marked executed"));
        }
        println!("      proposal #{id}: executed");
        Ok(())
    }

    async fn refusal(&mut self) -> Result<(), String> {
        let id = self
            .propose(&format!("reboot {BUSY_ROOM}"), "batch_reboot")
            .await?;
        let fields = self.card(id).await?;
        let (status, html) = self.post_text("/approve", &fields).await?;
        let Some(confirm) = form_fields(&html, "/confirm").filter(|_| status == 200) else {
            return Err(format!("no confirmation was asked:\n{}", page_text(&html)));
        };
        println!("      page: POST /approve → {status}, confirmation asked");
        let (status, html) = self.post_text("/confirm", &confirm).await?;
        let heading = element_text(&html, "id=\"heading\"").unwrap_or_default();
        println!("      page: POST /confirm → {status}, \"{heading}\"");
        for line in paragraphs(&html) {
            say("      ", &line);
        }
        if status != 200 || heading != "Nothing ran" {
            return Err(format!(
                "the executor did not refuse:\n{}",
                page_text(&html)
            ));
        }
        if !page_text(&html).contains("event") {
            return Err("the refusal does not say an event is the reason".to_owned());
        }
        if !self.new_writes().await?.is_empty() {
            return Err("the refused reboot wrote something".to_owned());
        }
        println!("      simulator: no new write");
        if self.status(id)? != Status::Refused {
            return Err(format!("proposal #{id} is not marked refused"));
        }
        println!("      proposal #{id}: refused by the executor");
        Ok(())
    }

    /// Both chains verify, and each still contains every head the other recorded of it.
    async fn audit(&mut self) -> Result<(), String> {
        let (check, own_heads) = {
            let store = self
                .running
                .store
                .lock()
                .map_err(|_| "the store lock is poisoned".to_owned())?;
            let check = store.verify_audit().map_err(|e| e.to_string())?;
            let heads = store.audit_heads().map_err(|e| e.to_string())?;
            (check, heads)
        };
        match check {
            ChainCheck::Intact { rows, .. } => {
                println!("      fleetwatch audit verify: intact, {rows} rows");
            }
            ChainCheck::Broken { row, problem } => {
                return Err(format!(
                    "the assistant's audit chain is broken at row {row}: {problem}"
                ));
            }
        }
        let executor_heads = self.executor_audit(&["heads"], "")?;
        let anchors = {
            let store = self
                .running
                .store
                .lock()
                .map_err(|_| "the store lock is poisoned".to_owned())?;
            store.check_executor_anchors(&executor_heads)?
        };
        println!("      fleetwatch audit verify --against <executor heads>: {anchors}");
        if !matches!(anchors, AnchorCheck::Intact { anchors: 1.., .. }) {
            return Err("the assistant's record of the executor's chain does not match".into());
        }
        let listing: Vec<String> = own_heads
            .iter()
            .map(|(id, hash)| fleetwatch_protocol::anchor::heads_line(*id, hash))
            .collect();
        let text = self.executor_audit(&["verify", "--against", "-"], &listing.join("\n"))?;
        println!(
            "      fleetwatch-executor audit verify --against <assistant heads>: {}",
            text.replace('\n', "\n      ")
        );
        Ok(())
    }

    /// Runs `fleetwatch-executor audit ARGS` on the demo's executor configuration with `input`
    /// on standard input; its standard output, or why it failed.
    fn executor_audit(&self, args: &[&str], input: &str) -> Result<String, String> {
        use std::io::Write as _;
        let mut child = Command::new(&self.running.executor_program)
            .arg("audit")
            .args(args)
            .env_clear()
            .env("FLEETWATCH_EXECUTOR_CONFIG", &self.running.executor_config)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("fleetwatch-executor audit: {e}"))?;
        if let Some(mut stdin) = child.stdin.take() {
            stdin
                .write_all(input.as_bytes())
                .map_err(|e| format!("fleetwatch-executor audit: {e}"))?;
        }
        let output = child
            .wait_with_output()
            .map_err(|e| format!("fleetwatch-executor audit: {e}"))?;
        if !output.status.success() {
            return Err(format!(
                "fleetwatch-executor audit {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        }
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
    }
}

fn show_write(write: &Value) {
    println!(
        "      simulator: write recorded on team {}: {} {}",
        write.get("team").and_then(Value::as_str).unwrap_or("?"),
        write.get("tool").and_then(Value::as_str).unwrap_or("?"),
        write.get("arguments").cloned().unwrap_or_default()
    );
}

// ---------------------------------------------------------------------------------------------
// Reading the page's HTML (our own templates, so a few fixed markers are enough)

fn form_body(fields: &[(String, String)]) -> String {
    fields
        .iter()
        .map(|(k, v)| format!("{}={}", urlencode(k), urlencode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#34;", "\"")
        .replace("&#39;", "'")
        .replace("&#x27;", "'")
        .replace("&amp;", "&")
}

/// Text with tags removed and entities decoded, whitespace collapsed.
fn strip_tags(html: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => {
                in_tag = true;
                out.push(' ');
            }
            '>' => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    unescape(&out.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// The hidden fields of the form that posts to `action`.
fn form_fields(html: &str, action: &str) -> Option<Vec<(String, String)>> {
    let start = html.find(&format!("action=\"{action}\""))?;
    let rest = html.get(start..)?;
    let form = rest.get(..rest.find("</form>")?)?;
    let mut out = Vec::new();
    let mut tail = form;
    while let Some(i) = tail.find("name=\"") {
        tail = tail.get(i + 6..)?;
        let name = tail.get(..tail.find('"')?)?.to_owned();
        let tag_end = tail.find('>')?;
        let tag = tail.get(..tag_end)?;
        if let Some(v) = tag.find("value=\"") {
            let value = tag.get(v + 7..)?;
            let value = value.get(..value.find('"')?)?;
            out.push((name, unescape(value)));
        }
    }
    Some(out)
}

fn field<'a>(fields: &'a [(String, String)], name: &str) -> Option<&'a str> {
    fields
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

/// The text of the element whose opening tag holds `marker`.
fn element_text(html: &str, marker: &str) -> Option<String> {
    let start = html.find(marker)?;
    let rest = html.get(start..)?;
    let open_end = rest.find('>')?;
    let body = rest.get(open_end + 1..)?;
    let close = body.find("</")?;
    Some(strip_tags(body.get(..close)?))
}

/// The `<li>` items of the list whose opening tag holds `marker`.
fn list_items(html: &str, marker: &str) -> Vec<String> {
    let Some(start) = html.find(marker) else {
        return Vec::new();
    };
    let rest = html.get(start..).unwrap_or_default();
    let list = rest
        .get(..rest.find("</ul>").unwrap_or(rest.len()))
        .unwrap_or_default();
    list.split("<li>")
        .skip(1)
        .map(|item| strip_tags(item.split("</li>").next().unwrap_or_default()))
        .collect()
}

/// The `<p>` lines of a message page, without the link back.
fn paragraphs(html: &str) -> Vec<String> {
    html.split("<p")
        .skip(1)
        .filter_map(|p| {
            let body = p.get(p.find('>')? + 1..)?;
            let text = body.get(..body.find("</p>")?)?;
            (!text.contains("<a ")).then(|| strip_tags(text))
        })
        .filter(|t| !t.is_empty())
        .collect()
}

fn first_paragraph(html: &str) -> Option<String> {
    paragraphs(html).into_iter().next()
}

/// The page's visible text inside `<main>`, for failure messages.
fn page_text(html: &str) -> String {
    let main = html
        .find("<main>")
        .and_then(|s| html.get(s..))
        .unwrap_or(html);
    strip_tags(main)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    #[test]
    fn forms_and_text_come_out_of_the_page_markup() {
        let html = r#"<main><h1 id="heading" class="done">Done &amp; dusted</h1>
<p>It ran.</p><p><a href="/" id="back">Back</a></p>
<ul id="effects"><li>recording: stopped → <b>recording</b></li><li>x</li></ul>
<form method="post" action="/approve" class="approve">
<input type="hidden" name="proposal" value="3">
<input type="hidden" name="token" value="a&amp;b">
<button type="submit" id="approve">Approve</button>
</form></main>"#;
        assert_eq!(
            element_text(html, "id=\"heading\"").unwrap(),
            "Done & dusted"
        );
        assert_eq!(paragraphs(html), vec!["It ran.".to_owned()]);
        assert_eq!(
            list_items(html, "id=\"effects\""),
            vec!["recording: stopped → recording".to_owned(), "x".to_owned()]
        );
        let fields = form_fields(html, "/approve").unwrap();
        assert_eq!(field(&fields, "proposal"), Some("3"));
        assert_eq!(field(&fields, "token"), Some("a&b"));
        assert!(form_fields(html, "/confirm").is_none());
        assert_eq!(form_body(&fields), "proposal=3&token=a%26b");
    }

    #[test]
    fn the_leftovers_guard_removes_its_folder() {
        let leftovers = Leftovers::new().unwrap();
        let folder = leftovers.folder.clone();
        let meta = std::fs::metadata(&folder).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o700);
        let sub = leftovers.subfolder("x").unwrap();
        write_private(&sub.join("f"), "secret").unwrap();
        assert_eq!(
            std::fs::metadata(sub.join("f"))
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o600
        );
        drop(leftovers);
        assert!(!folder.exists());
    }

    #[test]
    fn the_leftovers_guard_stops_its_children() {
        let mut leftovers = Leftovers::new().unwrap();
        let pid = leftovers
            .spawn(
                "sleeper",
                Path::new("/bin/sh"),
                &["-c", "sleep 600"],
                &[],
                None,
            )
            .unwrap();
        assert!(Path::new(&format!("/proc/{pid}")).exists());
        drop(leftovers);
        assert!(!Path::new(&format!("/proc/{pid}")).exists());
    }

    #[test]
    fn the_shipped_policy_is_embedded() {
        let policy = Policy::from_yaml(POLICY).unwrap();
        assert!(policy.propose_entry("batch_recording").is_some());
        assert!(policy.propose_entry("batch_reboot").is_some());
    }

    #[test]
    fn a_missing_binary_names_the_build_command() {
        let err = sibling("fleetwatch-no-such-binary").unwrap_err();
        assert!(err.contains("cargo build"), "{err}");
        assert!(err.contains("--bins"), "{err}");
    }
}
