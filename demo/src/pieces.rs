//! Starting the child programs: the simulator, the model stand-in and the executor.

use std::io::Write as _;
use std::os::unix::fs::DirBuilderExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fleetwatch::executor_client::ExecutorClient;
use serde_json::Value;

use crate::POLICY;
use crate::leftovers::{Leftovers, write_private};

/// How long a piece may take to come up. Generous: a cold start on a busy machine is slow.
const START_DEADLINE: Duration = Duration::from_secs(60);

/// A sibling binary of this program (`fleetwatch-demo`, beside `fleetwatch`), or the exact
/// command that builds it.
pub(crate) fn sibling(name: &str) -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let dir = exe
        .parent()
        .ok_or_else(|| "cannot find this program's folder".to_owned())?;
    let this = exe
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "fleetwatch-demo".to_owned());
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
        "{name} was not found next to {this} (in {}). The demo runs it as a separate \
         program; build the demo's programs with `{build}` and try again.",
        dir.display()
    ))
}

/// Prints what is starting, without a newline: the outcome follows on the same line.
pub(crate) fn progress(what: &str) {
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
pub(crate) struct Sim {
    pub(crate) mcp_url: String,
    base: String,
    control_token: String,
    pub(crate) sandbox_token: String,
}

impl Sim {
    async fn get(&self, path: &str) -> Result<Value, String> {
        let response = fleetwatch_epiphan::tls::client_builder()
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

    pub(crate) async fn sandbox_devices(&self) -> Result<Vec<String>, String> {
        let value = self.get("/control/devices?team=sandbox").await?;
        serde_json::from_value(value).map_err(|e| format!("simulator device list: {e}"))
    }

    /// Every write call the simulator recorded, in order.
    pub(crate) async fn writes(&self) -> Result<Vec<Value>, String> {
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
        .folder()
        .join(format!("{}.out", name.replace(' ', "-")));
    let pid = leftovers.spawn(name, program, args, &[], Some(&out))?;
    let lines = read_lines(leftovers, name, &out, count).await?;
    Ok((pid, lines))
}

pub(crate) async fn start_sim(leftovers: &mut Leftovers, program: &Path) -> Result<Sim, String> {
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

pub(crate) async fn start_model(
    leftovers: &mut Leftovers,
    program: &Path,
    api: fleetwatch::model::ModelApi,
) -> Result<String, String> {
    progress(match api {
        fleetwatch::model::ModelApi::Anthropic => {
            "starting the offline model stand-in (rule-based, not AI)"
        }
        fleetwatch::model::ModelApi::OpenAi => {
            "starting the offline model stand-in (rule-based, not AI) on the Chat Completions API"
        }
    });
    let (pid, lines) = start_listening_child(
        leftovers,
        "model stand-in",
        program,
        &["model", "--offline", "--api", api.label(), "--port", "0"],
        1,
    )
    .await?;
    let url = lines.first().cloned().unwrap_or_default();
    println!("ok (pid {pid}, {url})");
    Ok(url)
}

/// Where the executor's files live.
pub(crate) struct ExecutorFiles {
    pub(crate) config: PathBuf,
    pub(crate) socket: PathBuf,
    pub(crate) approvers: PathBuf,
    pub(crate) policy: PathBuf,
}

/// What the demo's executor asks of passkeys: a disruptive change needs two people (the demo
/// enrols two stand-in passkeys to show it), a calm one needs one (closed by default).
pub(crate) const QUORUM_DISRUPTIVE: u32 = 2;

/// Writes the executor's configuration, policy copy, approver key file and token slot. The
/// configuration's `passkeys:` section names the confirm page's origin, the only one passkeys
/// answer on.
///
/// This is a demo shortcut: the token slot is written directly instead of through
/// `fleetwatch-executor login --sandbox --known-devices`, because in the demo the assistant
/// reads the sandbox team too (see `inprocess::assistant_config`) and the overlap check would rightly
/// refuse that.
pub(crate) fn executor_files(
    leftovers: &Leftovers,
    key_line: &str,
    sandbox_token: &str,
    confirm_origin: &str,
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
         socket: {}\nallowed_uids: [{uid}]\napprover_keys: {}\npolicy: {}\nstate_dir: {}\n\
         passkeys:\n  origins: [\"{confirm_origin}\"]\n  \
         quorum_disruptive: {QUORUM_DISRUPTIVE}\n",
        yaml_string(&socket),
        yaml_string(&keys),
        yaml_string(&policy),
        yaml_string(&state),
    );
    write_private(&config, &yaml)?;
    write_private(&state.join("sandbox.token"), sandbox_token)?;
    Ok(ExecutorFiles {
        config,
        socket,
        approvers: keys,
        policy,
    })
}

/// A path as a YAML double-quoted string (JSON strings are valid YAML).
fn yaml_string(path: &Path) -> String {
    Value::String(path.display().to_string()).to_string()
}

/// Starts `fleetwatch-confirm serve` at `origin`, returning assertions to `page_origin`, and
/// waits until it answers.
pub(crate) async fn start_confirm(
    leftovers: &mut Leftovers,
    program: &Path,
    origin: &str,
    page_origin: &str,
    policy: &Path,
) -> Result<(), String> {
    progress(
        "starting the confirm page (fleetwatch-confirm serve: shows the signed change, asks the passkey)",
    );
    let port = origin.rsplit(':').next().unwrap_or_default().to_owned();
    let policy = policy.display().to_string();
    let pid = leftovers.spawn(
        "confirm page",
        program,
        &[
            "serve",
            "--port",
            &port,
            "--page-origin",
            page_origin,
            "--policy",
            &policy,
        ],
        &[],
        None,
    )?;
    let http = fleetwatch_epiphan::tls::client_builder()
        .timeout(Duration::from_secs(5))
        .build()
        .map_err(|e| e.to_string())?;
    let deadline = Instant::now() + START_DEADLINE;
    loop {
        leftovers.check_alive("confirm page")?;
        if http.get(format!("{origin}/")).send().await.is_ok() {
            println!("ok (pid {pid}, {origin}/)");
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!(
                "the confirm page did not answer within {START_DEADLINE:?}"
            ));
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

pub(crate) async fn start_executor(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_binary_names_the_build_command() {
        let err = sibling("fleetwatch-no-such-binary").unwrap_err();
        assert!(err.contains("cargo build"), "{err}");
        assert!(err.contains("--bins"), "{err}");
    }
}
