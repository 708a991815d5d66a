//! Settings: the shared environment names (see the deployment notes) plus `settings.yaml` in
//! the state folder, which holds what the operator decides rather than what the installer
//! decides (autonomy, who may chat).
//!
//! Anything malformed is an error naming the setting, never a silent default: a typo in the
//! fence must not quietly widen or drop it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use fleetwatch_protocol::ids;
use serde::Deserialize;

/// Default Epiphan MCP endpoint.
pub const DEFAULT_EPIPHAN_URL: &str = "https://go.epiphan.cloud/mcp";
/// Default executor socket.
pub const DEFAULT_EXECUTOR_SOCKET: &str = "/run/fleetwatch-executor/executor.sock";
/// Default policy path.
pub const DEFAULT_POLICY: &str = "/etc/fleetwatch/tool_policy.yaml";

/// The registry this binary was built with (the repository's `tool_policy.yaml`), for replays
/// on a machine where no policy is installed.
pub const BUILT_IN_POLICY: &str = include_str!("../../tool_policy.yaml");
/// Default state folder.
pub const DEFAULT_STATE_DIR: &str = "/var/lib/fleetwatch";
/// Default bound on one read, in seconds.
pub const DEFAULT_READ_TIMEOUT_SECS: u64 = 15;
/// Default approval page port.
pub const DEFAULT_APPROVE_PORT: u16 = 8767;
/// Where `fleetwatch-confirm serve` listens: the page the approval hands the tab to for the
/// passkey, and the only origin whose form may post an assertion back (DESIGN §9).
pub const DEFAULT_CONFIRM_ORIGIN: &str = "http://localhost:8768";
/// The settings file inside the state folder.
pub const SETTINGS_FILE: &str = "settings.yaml";
/// The chat socket's name inside the state folder (when `FLEETWATCH_STATE_DIR` is set).
pub const CHAT_SOCKET: &str = "chat.sock";
/// The chat socket of the installed service (`fleetwatch.service` sets
/// `FLEETWATCH_CHAT_SOCKET` to it): in the unit's runtime folder, which operators can reach,
/// unlike the private state folder.
pub const DEFAULT_CHAT_SOCKET: &str = "/run/fleetwatch/chat.sock";

/// A setting that could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("setting {name}: {problem}")]
pub struct ConfigError {
    /// The environment variable or settings key.
    pub name: String,
    /// What is wrong.
    pub problem: String,
}

fn bad(name: &str, problem: impl Into<String>) -> ConfigError {
    ConfigError {
        name: name.to_owned(),
        problem: problem.into(),
    }
}

/// Whether the assistant may propose changes at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub enum Autonomy {
    /// Reads only; `propose_change` is never offered and always refused.
    #[default]
    #[serde(rename = "read-only")]
    ReadOnly,
    /// The model may propose; a person still approves each change.
    #[serde(rename = "propose")]
    Propose,
}

/// `settings.yaml` as written by the operator.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// Default read-only.
    #[serde(default)]
    pub autonomy: Autonomy,
    /// Users allowed on the chat socket (default: the user running the assistant).
    #[serde(default)]
    pub operator_uids: Vec<u32>,
    /// Groups allowed on the chat socket.
    #[serde(default)]
    pub operator_gids: Vec<u32>,
}

impl Settings {
    /// Reads the settings file; a missing file means the defaults (read-only).
    pub fn load(state_dir: &Path) -> Result<Settings, ConfigError> {
        let path = state_dir.join(SETTINGS_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Settings::default()),
            Err(e) => {
                return Err(bad(
                    SETTINGS_FILE,
                    format!("cannot read {}: {e}", path.display()),
                ));
            }
        };
        if text.trim().is_empty() {
            return Ok(Settings::default());
        }
        yaml_serde::from_str(&text).map_err(|e| bad(SETTINGS_FILE, e.to_string()))
    }
}

/// Where changes may land: an allowlist of sandbox device IDs, a sandbox team ID, or both.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fence {
    /// `FLEETWATCH_WRITE_DEVICE_IDS`, sorted, no duplicates.
    pub device_ids: Vec<String>,
    /// `FLEETWATCH_WRITE_TEAM_ID`.
    pub team_id: Option<String>,
}

impl Fence {
    /// True when either half is set; with neither, nothing may be proposed.
    pub fn configured(&self) -> bool {
        !self.device_ids.is_empty() || self.team_id.is_some()
    }

    /// True when `device` may be a target (an empty allowlist defers to the team ID).
    pub fn allows(&self, device: &str) -> bool {
        self.configured()
            && (self.device_ids.is_empty() || self.device_ids.iter().any(|d| d == device))
    }
}

/// Everything the assistant reads from its environment and state folder.
#[derive(Debug, Clone)]
pub struct Config {
    /// Epiphan MCP URL (already checked for scheme).
    pub epiphan_url: String,
    /// `FLEETWATCH_ALLOW_LOOPBACK_HTTP=1`.
    pub allow_loopback_http: bool,
    /// The write fence.
    pub fence: Fence,
    /// The executor's socket.
    pub executor_socket: PathBuf,
    /// The policy file.
    pub policy_path: PathBuf,
    /// The state folder.
    pub state_dir: PathBuf,
    /// The chat socket (`FLEETWATCH_CHAT_SOCKET`; see [`chat_socket_from_env`]).
    pub chat_socket: PathBuf,
    /// Bound on each read.
    pub read_timeout: Duration,
    /// How long a proposal waits for a person before it expires, in seconds
    /// (`FLEETWATCH_PROPOSAL_LIFETIME_SECS`, 10 to 86,400; default 1,800).
    pub proposal_lifetime: i64,
    /// Approval page port (the page itself is served elsewhere).
    pub approve_port: u16,
    /// The confirm page's origin (`FLEETWATCH_CONFIRM_ORIGIN`).
    pub confirm_origin: String,
    /// The operator's settings.
    pub settings: Settings,
}

/// Where the chat socket is: `FLEETWATCH_CHAT_SOCKET` when set; else `chat.sock` in
/// `FLEETWATCH_STATE_DIR` when that is set (a development or test run); else the installed
/// service's [`DEFAULT_CHAT_SOCKET`]. `fleetwatch ask` needs nothing else, so an operator who
/// cannot read the state folder can still ask.
pub fn chat_socket_from_env() -> PathBuf {
    chat_socket_from(&|name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty()))
}

fn chat_socket_from(get: &dyn Fn(&str) -> Option<String>) -> PathBuf {
    if let Some(path) = get("FLEETWATCH_CHAT_SOCKET") {
        return PathBuf::from(path);
    }
    match get("FLEETWATCH_STATE_DIR") {
        Some(dir) => PathBuf::from(dir).join(CHAT_SOCKET),
        None => PathBuf::from(DEFAULT_CHAT_SOCKET),
    }
}

impl Config {
    /// From the process environment.
    pub fn from_env() -> Result<Config, ConfigError> {
        Config::from_lookup(|name| std::env::var(name).ok())
    }

    /// From any name → value lookup (tests pass a map).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let get = |name: &str| get(name).filter(|v| !v.trim().is_empty());
        let allow_loopback_http = match get("FLEETWATCH_ALLOW_LOOPBACK_HTTP").as_deref() {
            None | Some("0") => false,
            Some("1") => true,
            Some(_) => return Err(bad("FLEETWATCH_ALLOW_LOOPBACK_HTTP", "must be 1 or unset")),
        };
        let epiphan_url =
            get("FLEETWATCH_EPIPHAN_URL").unwrap_or_else(|| DEFAULT_EPIPHAN_URL.to_owned());
        // The one URL policy both processes apply (fleetwatch-epiphan).
        fleetwatch_epiphan::check_url(&epiphan_url, allow_loopback_http)
            .map_err(|p| bad("FLEETWATCH_EPIPHAN_URL", p.to_string()))?;

        let mut device_ids = Vec::new();
        if let Some(list) = get("FLEETWATCH_WRITE_DEVICE_IDS") {
            for id in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                if !ids::is_master_id(id) {
                    return Err(bad(
                        "FLEETWATCH_WRITE_DEVICE_IDS",
                        format!("{id:?} is not a device (master) ID"),
                    ));
                }
                device_ids.push(id.to_owned());
            }
        }
        device_ids.sort();
        device_ids.dedup();
        let team_id = get("FLEETWATCH_WRITE_TEAM_ID").map(|t| t.trim().to_owned());

        let read_timeout = match get("FLEETWATCH_READ_TIMEOUT_SECS") {
            None => DEFAULT_READ_TIMEOUT_SECS,
            Some(v) => v
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|n| (1..=600).contains(n))
                .ok_or_else(|| bad("FLEETWATCH_READ_TIMEOUT_SECS", "must be 1 to 600 seconds"))?,
        };
        let proposal_lifetime = match get("FLEETWATCH_PROPOSAL_LIFETIME_SECS") {
            None => crate::store::PROPOSAL_LIFETIME_SECS,
            Some(v) => v
                .trim()
                .parse::<i64>()
                .ok()
                .filter(|n| (10..=86_400).contains(n))
                .ok_or_else(|| {
                    bad(
                        "FLEETWATCH_PROPOSAL_LIFETIME_SECS",
                        "must be 10 to 86400 seconds",
                    )
                })?,
        };
        let approve_port = match get("FLEETWATCH_APPROVE_PORT") {
            None => DEFAULT_APPROVE_PORT,
            Some(v) => v
                .trim()
                .parse::<u16>()
                .ok()
                .filter(|p| *p != 0)
                .ok_or_else(|| bad("FLEETWATCH_APPROVE_PORT", "must be a port number"))?,
        };
        let confirm_origin = get("FLEETWATCH_CONFIRM_ORIGIN")
            .map(|o| o.trim().to_owned())
            .unwrap_or_else(|| DEFAULT_CONFIRM_ORIGIN.to_owned());
        let host = confirm_origin
            .strip_prefix("http://")
            .or_else(|| confirm_origin.strip_prefix("https://"));
        if !host.is_some_and(|h| {
            !h.is_empty()
                && h.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'))
        }) {
            return Err(bad(
                "FLEETWATCH_CONFIRM_ORIGIN",
                "must be an origin such as http://localhost:8768 (scheme, host and port, no path)",
            ));
        }
        let state_dir = PathBuf::from(
            get("FLEETWATCH_STATE_DIR").unwrap_or_else(|| DEFAULT_STATE_DIR.to_owned()),
        );
        let settings = Settings::load(&state_dir)?;
        let chat_socket = chat_socket_from(&get);
        Ok(Config {
            epiphan_url,
            allow_loopback_http,
            fence: Fence {
                device_ids,
                team_id,
            },
            executor_socket: PathBuf::from(
                get("FLEETWATCH_EXECUTOR_SOCKET")
                    .unwrap_or_else(|| DEFAULT_EXECUTOR_SOCKET.to_owned()),
            ),
            policy_path: PathBuf::from(
                get("FLEETWATCH_POLICY").unwrap_or_else(|| DEFAULT_POLICY.to_owned()),
            ),
            state_dir,
            chat_socket,
            read_timeout: Duration::from_secs(read_timeout),
            proposal_lifetime,
            approve_port,
            confirm_origin,
            settings,
        })
    }

    /// Proposing needs both the operator's `autonomy: propose` and a fence.
    pub fn proposing(&self) -> bool {
        self.settings.autonomy == Autonomy::Propose && self.fence.configured()
    }

    /// The approval page address shown next to a proposal number.
    pub fn page_address(&self) -> String {
        format!("http://localhost:{}/", self.approve_port)
    }

    /// The chat socket path.
    pub fn chat_socket(&self) -> PathBuf {
        self.chat_socket.clone()
    }

    /// The policy a replay reads with: the configured file when it exists, else, when none
    /// was named (the default path is absent, as on a machine where nothing is installed), the
    /// registry this binary was built with. A replay never writes, so the built-in registry
    /// cannot widen anything; a file that was named but cannot be read is still an error.
    pub fn load_replay_policy(&self) -> Result<fleetwatch_protocol::policy::Policy, ConfigError> {
        if self.policy_path != Path::new(DEFAULT_POLICY) || self.policy_path.exists() {
            return self.load_policy();
        }
        fleetwatch_protocol::policy::Policy::from_yaml(BUILT_IN_POLICY)
            .map_err(|e| bad("FLEETWATCH_POLICY", format!("the built-in registry: {e}")))
    }

    /// Loads and checks the policy file.
    pub fn load_policy(&self) -> Result<fleetwatch_protocol::policy::Policy, ConfigError> {
        let text = std::fs::read_to_string(&self.policy_path).map_err(|e| {
            bad(
                "FLEETWATCH_POLICY",
                format!("cannot read {}: {e}", self.policy_path.display()),
            )
        })?;
        fleetwatch_protocol::policy::Policy::from_yaml(&text)
            .map_err(|e| bad("FLEETWATCH_POLICY", e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn config(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let dir = std::env::temp_dir().join("fleetwatch-config-test-missing");
        let dir = dir.to_string_lossy().into_owned();
        Config::from_lookup(move |name| {
            if name == "FLEETWATCH_STATE_DIR" {
                return Some(dir.clone());
            }
            map.get(name).cloned()
        })
    }

    #[test]
    fn the_chat_socket_is_the_variable_else_the_state_folder_else_the_service_runtime_folder() {
        let from = |pairs: &[(&str, &str)]| {
            let map: HashMap<String, String> = pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect();
            chat_socket_from(&move |name: &str| map.get(name).cloned())
        };
        assert_eq!(from(&[]), PathBuf::from(DEFAULT_CHAT_SOCKET));
        assert_eq!(
            from(&[("FLEETWATCH_STATE_DIR", "/tmp/st")]),
            PathBuf::from("/tmp/st/chat.sock")
        );
        assert_eq!(
            from(&[
                ("FLEETWATCH_STATE_DIR", "/tmp/st"),
                ("FLEETWATCH_CHAT_SOCKET", "/run/x/c.sock")
            ]),
            PathBuf::from("/run/x/c.sock")
        );
        assert_eq!(
            config(&[("FLEETWATCH_CHAT_SOCKET", "/run/x/c.sock")])
                .unwrap()
                .chat_socket(),
            PathBuf::from("/run/x/c.sock")
        );
    }

    #[test]
    fn the_epiphan_url_passes_the_one_url_policy() {
        let url = |u: &str, allow: &str| {
            config(&[
                ("FLEETWATCH_EPIPHAN_URL", u),
                ("FLEETWATCH_ALLOW_LOOPBACK_HTTP", allow),
            ])
        };
        assert!(url("https://go.epiphan.cloud/mcp", "0").is_ok());
        assert!(url("http://127.0.0.1:9/mcp", "0").is_err());
        assert!(url("http://127.0.0.1:9/mcp", "1").is_ok());
        assert!(url("http://LOCALHOST:9/mcp", "1").is_ok());
        assert!(url("http://127.0.0.1.example.com/mcp", "1").is_err());
        assert!(url("https://user:pw@go.epiphan.cloud/mcp", "0").is_err());
        let err = url("https://go.epiphan.cloud/mcp#frag", "0").unwrap_err();
        assert_eq!(err.name, "FLEETWATCH_EPIPHAN_URL");
        assert!(err.problem.contains("fragment"), "{err}");
    }

    #[test]
    fn fence_parsing() {
        let c = config(&[]).unwrap();
        assert!(!c.fence.configured());
        assert!(!c.proposing());
        let c = config(&[(
            "FLEETWATCH_WRITE_DEVICE_IDS",
            " 2000000002,1000000001,2000000002 ",
        )])
        .unwrap();
        assert_eq!(c.fence.device_ids, vec!["1000000001", "2000000002"]);
        assert!(c.fence.allows("1000000001"));
        assert!(!c.fence.allows("3000000003"));
        assert!(config(&[("FLEETWATCH_WRITE_DEVICE_IDS", "1000000001-1")]).is_err());
        let c = config(&[("FLEETWATCH_WRITE_TEAM_ID", "team-1")]).unwrap();
        assert!(c.fence.allows("3000000003"));
        // Proposing still needs the operator's autonomy setting.
        assert!(!c.proposing());
    }

    #[test]
    fn bad_numbers_are_errors() {
        assert!(config(&[("FLEETWATCH_READ_TIMEOUT_SECS", "0")]).is_err());
        assert!(config(&[("FLEETWATCH_READ_TIMEOUT_SECS", "abc")]).is_err());
        assert_eq!(
            config(&[("FLEETWATCH_READ_TIMEOUT_SECS", "3")])
                .unwrap()
                .read_timeout,
            Duration::from_secs(3)
        );
        assert!(config(&[("FLEETWATCH_ALLOW_LOOPBACK_HTTP", "yes")]).is_err());
        for bad in ["9", "86401", "-5", "soon"] {
            assert!(config(&[("FLEETWATCH_PROPOSAL_LIFETIME_SECS", bad)]).is_err());
        }
        assert_eq!(config(&[]).unwrap().proposal_lifetime, 1800);
        assert_eq!(
            config(&[("FLEETWATCH_PROPOSAL_LIFETIME_SECS", "120")])
                .unwrap()
                .proposal_lifetime,
            120
        );
    }

    #[test]
    fn settings_file() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            Settings::load(dir.path()).unwrap().autonomy,
            Autonomy::ReadOnly
        );
        std::fs::write(dir.path().join(SETTINGS_FILE), "autonomy: propose\n").unwrap();
        assert_eq!(
            Settings::load(dir.path()).unwrap().autonomy,
            Autonomy::Propose
        );
        std::fs::write(dir.path().join(SETTINGS_FILE), "autonomy: everything\n").unwrap();
        assert!(Settings::load(dir.path()).is_err());
        std::fs::write(dir.path().join(SETTINGS_FILE), "autonmy: propose\n").unwrap();
        assert!(Settings::load(dir.path()).is_err());
    }
}
