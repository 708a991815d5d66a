//! Configuration: a YAML file (`FLEETWATCH_EXECUTOR_CONFIG` or `--config`) overridden by the
//! environment names both processes share. Paths come only from here, never from the wire.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::os::{self, TrustError, Trusted};

/// Default configuration file.
pub const DEFAULT_CONFIG: &str = "/etc/fleetwatch/executor.yaml";

/// The file as written. Every field is optional; the environment and defaults fill the rest.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    socket: Option<PathBuf>,
    allowed_uids: Option<Vec<u32>>,
    approver_keys: Option<PathBuf>,
    policy: Option<PathBuf>,
    state_dir: Option<PathBuf>,
    epiphan_url: Option<String>,
    read_timeout_secs: Option<u64>,
    write_timeout_secs: Option<u64>,
    frame_timeout_secs: Option<u64>,
    max_connections: Option<usize>,
    describes_per_minute: Option<usize>,
    write_device_ids: Option<Vec<String>>,
    write_team_id: Option<String>,
    passkeys: Option<FilePasskeys>,
    limits: Option<FileLimits>,
    freeze: Option<Vec<crate::freeze::FileWindow>>,
}

/// The `limits:` section as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileLimits {
    cooldown_minutes: Option<u32>,
    writes_per_hour: Option<u32>,
    open_event_hours: Option<u32>,
    audit_budget_mib: Option<u32>,
}

/// What the executor holds even against a valid approval (DESIGN §10). Each has a safe
/// default; none can be switched off by leaving it out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Minutes a device rests after a disruptive write before another disruptive change
    /// (`limits.cooldown_minutes`, default 10; 0 turns the cooldown off).
    pub cooldown_minutes: u32,
    /// Writes across the sandbox in any hour (`limits.writes_per_hour`, default 20).
    pub writes_per_hour: u32,
    /// Minutes an event with no end counts as on after its start (`limits.open_event_hours`,
    /// default 4 hours).
    pub open_event_minutes: u32,
    /// How large `executor.db` (the audit chain, nonces and evidence, none of which may be
    /// deleted) may grow, in MiB (`limits.audit_budget_mib`, default 1024): at it every new
    /// approval is refused as busy, saying so in the log; `doctor` warns from 90 %.
    pub audit_budget_mib: u32,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            cooldown_minutes: 10,
            writes_per_hour: 20,
            open_event_minutes: 4 * 60,
            audit_budget_mib: 1024,
        }
    }
}

/// Checks the `limits:` section against its ranges.
fn limits(file: FileLimits) -> Result<Limits, ConfigError> {
    let defaults = Limits::default();
    let within = |name: &'static str, n: Option<u32>, range: std::ops::RangeInclusive<u32>| match n
    {
        Some(n) if !range.contains(&n) => Err(ConfigError::Value {
            name,
            problem: format!("{n} is not between {} and {}", range.start(), range.end()),
        }),
        other => Ok(other),
    };
    Ok(Limits {
        cooldown_minutes: within("limits.cooldown_minutes", file.cooldown_minutes, 0..=1440)?
            .unwrap_or(defaults.cooldown_minutes),
        writes_per_hour: within("limits.writes_per_hour", file.writes_per_hour, 1..=10_000)?
            .unwrap_or(defaults.writes_per_hour),
        open_event_minutes: within("limits.open_event_hours", file.open_event_hours, 1..=48)?
            .map_or(defaults.open_event_minutes, |h| h * 60),
        audit_budget_mib: within(
            "limits.audit_budget_mib",
            file.audit_budget_mib,
            1..=1_048_576,
        )?
        .unwrap_or(defaults.audit_budget_mib),
    })
}

/// The `passkeys:` section as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FilePasskeys {
    rp_id: Option<String>,
    origins: Option<Vec<String>>,
    quorum: Option<u32>,
    quorum_disruptive: Option<u32>,
    tools: Option<BTreeMap<String, u32>>,
    device_bound: Option<bool>,
    origin_owner: Option<u32>,
    asker_counts: Option<bool>,
}

/// The confirm page's default address (`fleetwatch-confirm serve`), the only origin passkeys
/// are used on when none is configured: an assertion made on the assistant's own page is
/// refused (DESIGN §9).
pub const DEFAULT_ORIGIN: &str = "http://localhost:8768";

/// The assistant's approval page port unless `FLEETWATCH_APPROVE_PORT` says otherwise: never an
/// origin passkeys may come from.
pub const APPROVAL_PAGE_PORT: u16 = 8767;

/// Who must approve: where passkey assertions must come from and how many distinct enrolled
/// passkeys a change needs (DESIGN §9). Read only from the executor's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PasskeyConfig {
    /// The RP ID passkeys are bound to (`localhost`).
    pub rp_id: String,
    /// The page origins an assertion may come from (`http://localhost:<page port>`).
    pub origins: Vec<String>,
    /// `passkeys.quorum`: persons every change needs; `None` is 1. `Some(0)` is the explicit
    /// trial mode: the assistant's signature alone.
    pub quorum: Option<u32>,
    /// `passkeys.quorum_disruptive`: persons a disruptive change needs; `None` is `quorum`.
    pub quorum_disruptive: Option<u32>,
    /// `passkeys.tools`: per tool.
    pub tools: BTreeMap<String, u32>,
    /// `passkeys.device_bound`: refuse an assertion from a passkey that may be synced.
    pub device_bound: bool,
    /// `passkeys.origin_owner`: the uid that must alone hold each loopback origin's port when
    /// an assertion comes back (0: systemd's socket unit).
    pub origin_owner: u32,
    /// `passkeys.asker_counts` (default true): whether the person who asked for a change (the
    /// user the assistant reports in the claims, matched against the `users=` of approver
    /// lines) counts toward its quorum. Only as strong as the assistant's report.
    pub asker_counts: bool,
}

impl Default for PasskeyConfig {
    /// What an executor with no `passkeys:` section uses.
    fn default() -> PasskeyConfig {
        PasskeyConfig {
            rp_id: fleetwatch_protocol::passkey::PRODUCTION_RP_ID.to_owned(),
            origins: vec![DEFAULT_ORIGIN.to_owned()],
            quorum: None,
            quorum_disruptive: None,
            tools: BTreeMap::new(),
            device_bound: false,
            asker_counts: true,
            origin_owner: 0,
        }
    }
}

impl PasskeyConfig {
    /// Whether the explicit trial mode is on (`quorum: 0`): a change that no other setting
    /// raises is accepted on the assistant's signature alone. Both doctors warn while it is.
    pub fn trial(&self) -> bool {
        self.quorum == Some(0)
    }

    /// How many distinct persons a change of `tool` needs, given whether the executor's policy
    /// calls this change disruptive: the largest of `quorum` (1 unless written),
    /// `quorum_disruptive` (disruptive changes) and the tool's own entry. Closed by default:
    /// how many persons are enrolled changes nothing here, so with none enrolled every change
    /// is refused, and removing the last person closes approvals rather than opening them.
    pub fn needed(&self, tool: &str, disruptive: bool) -> usize {
        let mut need = self.quorum.unwrap_or(1);
        if disruptive && let Some(n) = self.quorum_disruptive {
            need = need.max(n);
        }
        if let Some(n) = self.tools.get(tool) {
            need = need.max(*n);
        }
        usize::try_from(need).unwrap_or(usize::MAX)
    }

    /// The relying party the verifier checks assertions against.
    pub fn relying_party(&self) -> fleetwatch_protocol::passkey::RelyingParty {
        fleetwatch_protocol::passkey::RelyingParty::new(&self.rp_id, self.origins.iter().cloned())
    }
}

/// Where writes may go. At least one of the two must be set, or nothing is written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fence {
    /// `FLEETWATCH_WRITE_DEVICE_IDS`: the only sandbox devices a write may touch.
    pub allowlist: Option<BTreeSet<String>>,
    /// `FLEETWATCH_WRITE_TEAM_ID`: the team the sandbox sign-in must report.
    pub team_id: Option<String>,
}

impl Fence {
    /// True when an allowlist or a team ID is set.
    pub fn configured(&self) -> bool {
        self.allowlist.is_some() || self.team_id.is_some()
    }
}

/// The executor's resolved configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// The file it came from.
    pub source: PathBuf,
    /// Unix socket path.
    pub socket: PathBuf,
    /// Uids allowed to connect (the assistant's).
    pub allowed_uids: BTreeSet<u32>,
    /// Approver public-key file.
    pub approver_keys: PathBuf,
    /// The executor's own copy of `tool_policy.yaml`.
    pub policy: PathBuf,
    /// State folder: `executor.db` and the sandbox token slot.
    pub state_dir: PathBuf,
    /// Epiphan MCP URL.
    pub epiphan_url: String,
    /// Whether a loopback `http://` URL is allowed (tests, demo).
    pub allow_loopback_http: bool,
    /// Bound on each Epiphan read.
    pub read_timeout: Duration,
    /// Bound on the one write call.
    pub write_timeout: Duration,
    /// Bound on receiving a request frame.
    pub frame_timeout: Duration,
    /// Connections handled at once.
    pub max_connections: usize,
    /// `Describe` requests answered in any minute (each one reads Epiphan); more are `busy`.
    pub describes_per_minute: usize,
    /// The write fence.
    pub fence: Fence,
    /// Passkeys: relying party and quorum.
    pub passkeys: PasskeyConfig,
    /// Cooldown, hourly cap, open events.
    pub limits: Limits,
    /// Freeze windows (`freeze:`): when the team says nothing of a kind may change.
    pub freeze: Vec<crate::freeze::Window>,
}

/// Why the configuration was refused.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The configuration file is not trusted.
    #[error("configuration file: {0}")]
    Trust(#[from] TrustError),
    /// The YAML is invalid.
    #[error("{path}: {problem}; fix the file (see `fleetwatch-executor --help`)")]
    Yaml {
        /// The file.
        path: PathBuf,
        /// What the parser said.
        problem: String,
    },
    /// A value is invalid.
    #[error("{name}: {problem}")]
    Value {
        /// The setting.
        name: &'static str,
        /// What is wrong.
        problem: String,
    },
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn secs(
    name: &'static str,
    env_value: Option<String>,
    file: Option<u64>,
    default: u64,
) -> Result<Duration, ConfigError> {
    let n = match env_value {
        Some(text) => text.trim().parse::<u64>().map_err(|_| ConfigError::Value {
            name,
            problem: format!("{text:?} is not a whole number of seconds"),
        })?,
        None => file.unwrap_or(default),
    };
    if n == 0 || n > 3600 {
        return Err(ConfigError::Value {
            name,
            problem: "must be between 1 and 3600 seconds".into(),
        });
    }
    Ok(Duration::from_secs(n))
}

/// Checks the `passkeys:` section. A quorum is 1 to [`MAX_ASSERTIONS`]; only `quorum` may be
/// 0, the explicit trial mode (a raised quorum for disruptive changes or one tool cannot say
/// "no person"); an origin is `http://` or `https://` with a host and no path, as browsers
/// write it in client data.
///
/// [`MAX_ASSERTIONS`]: fleetwatch_protocol::passkey::MAX_ASSERTIONS
fn passkeys(file: FilePasskeys) -> Result<PasskeyConfig, ConfigError> {
    use fleetwatch_protocol::passkey::MAX_ASSERTIONS;
    let most = u32::try_from(MAX_ASSERTIONS).unwrap_or(u32::MAX);
    let quorum = |name: &'static str, n: Option<u32>| -> Result<Option<u32>, ConfigError> {
        match n {
            Some(n) if !(1..=most).contains(&n) => Err(ConfigError::Value {
                name,
                problem: format!("{n} is not between 1 and {most}"),
            }),
            other => Ok(other),
        }
    };
    let rp_id = file
        .rp_id
        .map(|r| r.trim().to_owned())
        .unwrap_or_else(|| fleetwatch_protocol::passkey::PRODUCTION_RP_ID.to_owned());
    if rp_id.is_empty()
        || !rp_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-')
    {
        return Err(ConfigError::Value {
            name: "passkeys.rp_id",
            problem: format!("{rp_id:?} is not a host name"),
        });
    }
    let origins = file
        .origins
        .unwrap_or_else(|| vec![DEFAULT_ORIGIN.to_owned()]);
    if origins.is_empty() {
        return Err(ConfigError::Value {
            name: "passkeys.origins",
            problem: "lists no origin; no passkey could approve anything".into(),
        });
    }
    for origin in &origins {
        let rest = origin
            .strip_prefix("http://")
            .or_else(|| origin.strip_prefix("https://"));
        let ok = rest.is_some_and(|host| {
            !host.is_empty()
                && !host.contains(['/', '?', '#', '@'])
                && !host.chars().any(char::is_whitespace)
        });
        if !ok {
            return Err(ConfigError::Value {
                name: "passkeys.origins",
                problem: format!(
                    "{origin:?} is not an origin (`{DEFAULT_ORIGIN}`: scheme, host and port, no path)"
                ),
            });
        }
        // The approval page is the assistant's: a passkey used there proves nothing about
        // what the person saw. Its port is FLEETWATCH_APPROVE_PORT, 8767 unless set.
        let page_port = std::env::var("FLEETWATCH_APPROVE_PORT")
            .ok()
            .and_then(|p| p.trim().parse::<u16>().ok())
            .unwrap_or(APPROVAL_PAGE_PORT);
        let is_page = ["localhost", "127.0.0.1", "[::1]"]
            .iter()
            .any(|host| origin.eq_ignore_ascii_case(&format!("http://{host}:{page_port}")));
        if is_page {
            return Err(ConfigError::Value {
                name: "passkeys.origins",
                problem: format!(
                    "{origin:?} is the assistant's approval page; passkeys are used on the \
                     confirm page only: write {DEFAULT_ORIGIN}"
                ),
            });
        }
    }
    let mut tools = BTreeMap::new();
    for (tool, n) in file.tools.unwrap_or_default() {
        if let Some(n) = quorum("passkeys.tools", Some(n))? {
            tools.insert(tool, n);
        }
    }
    Ok(PasskeyConfig {
        rp_id,
        origins,
        quorum: match file.quorum {
            Some(0) => Some(0),
            n => quorum("passkeys.quorum", n)?,
        },
        quorum_disruptive: quorum("passkeys.quorum_disruptive", file.quorum_disruptive)?,
        tools,
        device_bound: file.device_bound.unwrap_or(false),
        asker_counts: file.asker_counts.unwrap_or(true),
        origin_owner: file.origin_owner.unwrap_or(0),
    })
}

impl Config {
    /// Loads the configuration: `explicit` (from `--config`), else `FLEETWATCH_EXECUTOR_CONFIG`,
    /// else [`DEFAULT_CONFIG`]. A missing default file means "environment only"; a missing
    /// file that was named is an error.
    pub fn load(explicit: Option<&Path>) -> Result<Config, ConfigError> {
        let named = explicit
            .map(Path::to_path_buf)
            .or_else(|| env("FLEETWATCH_EXECUTOR_CONFIG").map(PathBuf::from));
        let source = named
            .clone()
            .unwrap_or_else(|| PathBuf::from(DEFAULT_CONFIG));
        let file = if named.is_none() && !source.exists() {
            FileConfig::default()
        } else {
            // The file names the uids that may ask for writes, so it is trusted like a key file.
            let text = os::read_trusted(&source, Trusted::File, 1 << 20)?;
            yaml_serde::from_str::<Option<FileConfig>>(&text)
                .map_err(|e| ConfigError::Yaml {
                    path: source.clone(),
                    problem: e.to_string(),
                })?
                .unwrap_or_default()
        };
        Config::resolve(source, file)
    }

    fn resolve(source: PathBuf, file: FileConfig) -> Result<Config, ConfigError> {
        let state_dir = env("FLEETWATCH_STATE_DIR")
            .map(PathBuf::from)
            .or(file.state_dir)
            .unwrap_or_else(|| PathBuf::from("/var/lib/fleetwatch-executor"));
        let allowlist = match env("FLEETWATCH_WRITE_DEVICE_IDS") {
            Some(text) => Some(
                text.split(',')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect::<Vec<_>>(),
            ),
            None => file.write_device_ids,
        };
        let allowlist = match allowlist {
            Some(ids) => {
                if let Some(bad) = ids
                    .iter()
                    .find(|id| !fleetwatch_protocol::ids::is_master_id(id))
                {
                    return Err(ConfigError::Value {
                        name: "FLEETWATCH_WRITE_DEVICE_IDS",
                        problem: format!("{bad:?} is not a device (master) ID"),
                    });
                }
                let set: BTreeSet<String> = ids.into_iter().collect();
                (!set.is_empty()).then_some(set)
            }
            None => None,
        };
        let team_id = env("FLEETWATCH_WRITE_TEAM_ID")
            .or(file.write_team_id)
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty());
        let max_connections = file.max_connections.unwrap_or(16);
        if !(1..=1024).contains(&max_connections) {
            return Err(ConfigError::Value {
                name: "max_connections",
                problem: "must be between 1 and 1024".into(),
            });
        }
        let describes_per_minute = file.describes_per_minute.unwrap_or(60);
        if !(1..=10_000).contains(&describes_per_minute) {
            return Err(ConfigError::Value {
                name: "describes_per_minute",
                problem: "must be between 1 and 10000".into(),
            });
        }
        let passkeys = passkeys(file.passkeys.unwrap_or_default())?;
        let limits = limits(file.limits.unwrap_or_default())?;
        let freeze = crate::freeze::parse(file.freeze.unwrap_or_default()).map_err(|problem| {
            ConfigError::Value {
                name: "freeze",
                problem,
            }
        })?;
        Ok(Config {
            passkeys,
            limits,
            freeze,
            socket: env("FLEETWATCH_EXECUTOR_SOCKET")
                .map(PathBuf::from)
                .or(file.socket)
                .unwrap_or_else(|| PathBuf::from("/run/fleetwatch-executor/executor.sock")),
            allowed_uids: file.allowed_uids.unwrap_or_default().into_iter().collect(),
            approver_keys: file
                .approver_keys
                .unwrap_or_else(|| state_dir.join("approvers.pub")),
            policy: env("FLEETWATCH_POLICY")
                .map(PathBuf::from)
                .or(file.policy)
                .unwrap_or_else(|| PathBuf::from("/etc/fleetwatch/tool_policy.yaml")),
            epiphan_url: env("FLEETWATCH_EPIPHAN_URL")
                .or(file.epiphan_url)
                .unwrap_or_else(|| "https://go.epiphan.cloud/mcp".to_string()),
            allow_loopback_http: env("FLEETWATCH_ALLOW_LOOPBACK_HTTP").as_deref() == Some("1"),
            read_timeout: secs(
                "FLEETWATCH_READ_TIMEOUT_SECS",
                env("FLEETWATCH_READ_TIMEOUT_SECS"),
                file.read_timeout_secs,
                15,
            )?,
            write_timeout: secs(
                "FLEETWATCH_WRITE_TIMEOUT_SECS",
                env("FLEETWATCH_WRITE_TIMEOUT_SECS"),
                file.write_timeout_secs,
                30,
            )?,
            frame_timeout: secs("frame_timeout_secs", None, file.frame_timeout_secs, 1)?,
            max_connections,
            describes_per_minute,
            fence: Fence { allowlist, team_id },
            state_dir,
            source,
        })
    }

    /// The sandbox token slot.
    pub fn token_slot(&self) -> PathBuf {
        self.state_dir.join("sandbox.token")
    }

    /// The executor's database.
    pub fn database(&self) -> PathBuf {
        self.state_dir.join("executor.db")
    }
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn yaml_fields_resolve_and_unknown_fields_are_refused() {
        let file: FileConfig = yaml_serde::from_str(
            "socket: /tmp/x.sock\nallowed_uids: [1000]\nwrite_device_ids: [abcdef0123]\nread_timeout_secs: 7\n",
        )
        .unwrap();
        let config = Config::resolve(PathBuf::from("c.yaml"), file).unwrap();
        assert_eq!(config.allowed_uids, BTreeSet::from([1000]));
        assert!(config.fence.configured());
        assert!(yaml_serde::from_str::<FileConfig>("sockett: /x\n").is_err());
    }

    #[test]
    fn passkey_quorum_defaults_and_settings() {
        let none = passkeys(FilePasskeys::default()).unwrap();
        assert_eq!(none.rp_id, "localhost");
        assert_eq!(none.origins, vec![DEFAULT_ORIGIN.to_owned()]);
        // Closed by default: one person, calm or disruptive, enrolled or not.
        assert_eq!(none.needed("batch_reboot", true), 1);
        assert_eq!(none.needed("batch_recording", false), 1);
        assert!(!none.trial() && !none.device_bound);
        let two: FilePasskeys = yaml_serde::from_str(
            "quorum_disruptive: 2\ntools: {batch_firmware_update: 3}\norigins: [\"http://localhost:9000\"]\ndevice_bound: true\n",
        )
        .unwrap();
        let two = passkeys(two).unwrap();
        assert_eq!(two.needed("batch_recording", false), 1);
        assert_eq!(two.needed("batch_reboot", true), 2);
        assert_eq!(two.needed("batch_firmware_update", false), 3);
        assert!(two.device_bound);
        // The explicit trial mode: the assistant alone, unless another setting raises it.
        let trial: FilePasskeys =
            yaml_serde::from_str("quorum: 0\nquorum_disruptive: 2\n").unwrap();
        let trial = passkeys(trial).unwrap();
        assert!(trial.trial());
        assert_eq!(trial.needed("batch_recording", false), 0);
        assert_eq!(trial.needed("batch_reboot", true), 2);
        for bad in [
            "quorum_disruptive: 0\n",
            "quorum_disruptive: 9\n",
            "tools: {batch_reboot: 0}\n",
            "origins: []\n",
            "origins: [\"localhost:8767\"]\n",
            "origins: [\"http://localhost:8767/\"]\n",
            "rp_id: \"local host\"\n",
        ] {
            let file: FilePasskeys = yaml_serde::from_str(bad).unwrap();
            assert!(passkeys(file).is_err(), "{bad}");
        }
        assert!(yaml_serde::from_str::<FilePasskeys>("quorom: 2\n").is_err());
    }

    #[test]
    fn limits_have_safe_defaults_and_ranges() {
        assert_eq!(
            limits(FileLimits::default()).unwrap(),
            Limits {
                cooldown_minutes: 10,
                writes_per_hour: 20,
                open_event_minutes: 240,
                audit_budget_mib: 1024,
            }
        );
        let set: FileLimits =
            yaml_serde::from_str("cooldown_minutes: 0\nwrites_per_hour: 5\nopen_event_hours: 8\n")
                .unwrap();
        let set = limits(set).unwrap();
        let budget: FileLimits = yaml_serde::from_str("audit_budget_mib: 64\n").unwrap();
        assert_eq!(limits(budget).unwrap().audit_budget_mib, 64);
        assert_eq!(
            (
                set.cooldown_minutes,
                set.writes_per_hour,
                set.open_event_minutes
            ),
            (0, 5, 480)
        );
        for bad in [
            "writes_per_hour: 0\n",
            "cooldown_minutes: 1441\n",
            "open_event_hours: 0\n",
            "audit_budget_mib: 0\n",
        ] {
            let file: FileLimits = yaml_serde::from_str(bad).unwrap();
            let err = limits(file).unwrap_err().to_string();
            assert!(err.contains("limits."), "{bad}: {err}");
        }
        assert!(yaml_serde::from_str::<FileLimits>("cooldown: 2\n").is_err());
    }

    #[test]
    fn bad_allowlist_entry_is_named() {
        let file = FileConfig {
            write_device_ids: Some(vec!["abcdef0123-1".into()]),
            ..FileConfig::default()
        };
        let err = Config::resolve(PathBuf::from("c"), file).unwrap_err();
        assert!(err.to_string().contains("abcdef0123-1"), "{err}");
    }

    #[test]
    fn group_writable_config_is_refused_with_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("executor.yaml");
        std::fs::write(&path, "allowed_uids: [1]\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o664)).unwrap();
        let err = Config::load(Some(&path)).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("executor.yaml") && text.contains("chmod go-w"),
            "{text}"
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(Config::load(Some(&path)).is_ok());
    }
}
