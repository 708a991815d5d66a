//! Shared test helpers: the shipped policy, configurations pointing at an in-process simulator,
//! and the real executor binary on a socket in a temp folder.
#![allow(dead_code)]

use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fleetwatch::config::Config;
use fleetwatch_protocol::policy::Policy;

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The shipped registry.
pub fn policy_path() -> PathBuf {
    root().join("tool_policy.yaml")
}

/// The shipped registry, loaded.
pub fn policy() -> Arc<Policy> {
    Arc::new(Policy::from_yaml(&std::fs::read_to_string(policy_path()).unwrap()).unwrap())
}

/// The example replay folder shipped with the simulator.
pub fn example_replay() -> PathBuf {
    root().join("sim/replay/example")
}

/// A configuration from pairs (plus the policy and the state folder).
pub fn config(state: &Path, pairs: &[(&str, String)]) -> Config {
    let mut map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect();
    map.insert(
        "FLEETWATCH_POLICY".into(),
        policy_path().display().to_string(),
    );
    map.insert("FLEETWATCH_STATE_DIR".into(), state.display().to_string());
    Config::from_lookup(move |name| map.get(name).cloned()).unwrap()
}

#[path = "../../../tests/src/binaries.rs"]
mod binaries;

/// A workspace binary next to this test executable, built first when missing or older than the
/// sources.
pub fn binary(package: &str, name: &str) -> PathBuf {
    binaries::workspace_binary(&root(), package, name)
}

/// The real executor on a temp socket, reading the simulator's sandbox team.
pub struct Executor {
    /// Temp folder (socket, config, state, keys).
    pub dir: tempfile::TempDir,
    /// Socket path.
    pub socket: PathBuf,
    /// The process.
    pub child: Child,
    /// stderr log.
    pub log: PathBuf,
}

impl Executor {
    /// Starts it with a sandbox token, the given fence, and `key_lines` installed.
    pub async fn start(
        mcp_url: &str,
        allowlist: &[String],
        team_id: Option<&str>,
        key_lines: &[String],
    ) -> Executor {
        Executor::start_with(mcp_url, allowlist, team_id, key_lines, "").await
    }

    /// [`Executor::start`] with more YAML at the end of `executor.yaml` (a `freeze:` section).
    pub async fn start_with(
        mcp_url: &str,
        allowlist: &[String],
        team_id: Option<&str>,
        key_lines: &[String],
        extra_yaml: &str,
    ) -> Executor {
        let dir = tempfile::tempdir().unwrap();
        let etc = dir.path().join("etc");
        let state = dir.path().join("state");
        let run = dir.path().join("run");
        for (d, mode) in [(&etc, 0o755), (&state, 0o700), (&run, 0o750)] {
            std::fs::create_dir(d).unwrap();
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        let socket = run.join("executor.sock");
        let policy = etc.join("tool_policy.yaml");
        std::fs::copy(policy_path(), &policy).unwrap();
        std::fs::set_permissions(&policy, std::fs::Permissions::from_mode(0o644)).unwrap();
        let keys = etc.join("approvers.pub");
        let mut lines = key_lines.to_vec();
        if lines.is_empty() {
            // The executor needs at least one key to start; an unrelated one will do.
            let other = ed25519_dalek::SigningKey::from_bytes(&[9u8; 32]);
            lines.push(fleetwatch_protocol::claims::key_line(
                &other.verifying_key(),
                "other",
            ));
        }
        std::fs::write(&keys, lines.join("\n") + "\n").unwrap();
        std::fs::set_permissions(&keys, std::fs::Permissions::from_mode(0o644)).unwrap();
        let uid = rustix::process::getuid().as_raw();
        let config = etc.join("executor.yaml");
        std::fs::write(
            &config,
            format!(
                "socket: {}\nallowed_uids: [{uid}]\napprover_keys: {}\npolicy: {}\nstate_dir: {}\nmax_connections: 8\nframe_timeout_secs: 3\npasskeys:\n  quorum: 0\n{extra_yaml}",
                socket.display(),
                keys.display(),
                policy.display(),
                state.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o644)).unwrap();
        let slot = state.join("sandbox.token");
        std::fs::write(&slot, "sandbox-token").unwrap();
        std::fs::set_permissions(&slot, std::fs::Permissions::from_mode(0o600)).unwrap();
        let log = dir.path().join("executor.log");
        let mut cmd = Command::new(binary("fleetwatch-executor", "fleetwatch-executor"));
        cmd.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("FLEETWATCH_EXECUTOR_CONFIG", &config)
            .env("FLEETWATCH_EPIPHAN_URL", mcp_url)
            .env("FLEETWATCH_ALLOW_LOOPBACK_HTTP", "1")
            .env("FLEETWATCH_READ_TIMEOUT_SECS", "10");
        if !allowlist.is_empty() {
            cmd.env("FLEETWATCH_WRITE_DEVICE_IDS", allowlist.join(","));
        }
        if let Some(team) = team_id {
            cmd.env("FLEETWATCH_WRITE_TEAM_ID", team);
        }
        let child = cmd
            .arg("serve")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let mut executor = Executor {
            dir,
            socket,
            child,
            log,
        };
        executor.wait_ready().await;
        executor
    }

    async fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        let client = fleetwatch::executor_client::ExecutorClient::new(&self.socket);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "executor exited ({status}): {}",
                    std::fs::read_to_string(&self.log).unwrap_or_default()
                );
            }
            if self.socket.exists() && client.status().await.is_ok() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "executor not ready: {}",
                std::fs::read_to_string(&self.log).unwrap_or_default()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Executor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The assistant's name for a stand-in's API.
pub fn model_api(api: fleetwatch_sim::model::Api) -> fleetwatch::model::ModelApi {
    match api {
        fleetwatch_sim::model::Api::Anthropic => fleetwatch::model::ModelApi::Anthropic,
        fleetwatch_sim::model::Api::OpenAi => fleetwatch::model::ModelApi::OpenAi,
    }
}
