//! Everything a running executor loads once at start: configuration, its own policy and the
//! store; and the approver file, checked at start and read again for every request that needs
//! it (see [`crate::approvers`]). Each trusted file is checked for owner and mode before it is
//! read.

use std::path::Path;

use fleetwatch_protocol::Refusal;
use fleetwatch_protocol::passkey::RelyingParty;
use fleetwatch_protocol::policy::Policy;

use crate::approvers::{self, ApproverFile, FileError};
use crate::checks::Clock;
use crate::config::Config;
use crate::os::{self, TrustError, Trusted};
use crate::store::Store;

/// Why the executor could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A trusted file or folder was refused.
    #[error("{0}")]
    Trust(#[from] TrustError),
    /// The approver file is invalid.
    #[error("{0}")]
    Approvers(#[from] FileError),
    /// The configuration names something the policy does not know.
    #[error("{0}")]
    Config(String),
    /// The policy is invalid.
    #[error("policy file {path}: {problem}")]
    Policy {
        /// The file.
        path: String,
        /// What is wrong.
        problem: String,
    },
    /// The state folder or database failed.
    #[error("state folder {path}: {problem}")]
    State {
        /// The folder.
        path: String,
        /// What is wrong.
        problem: String,
    },
    /// Another executor serves this state folder.
    #[error("{0}")]
    Locked(#[from] crate::os::LockError),
    /// The Epiphan URL is not allowed.
    #[error("{0}")]
    Url(#[from] crate::epiphan::UrlError),
    /// The HTTPS client could not be set up.
    #[error("{0}")]
    Http(String),
}

/// The loaded executor.
pub struct Context {
    /// Configuration.
    pub config: Config,
    /// Where passkey assertions must come from (from the configuration).
    pub relying_party: RelyingParty,
    /// The executor's own policy.
    pub policy: Policy,
    /// `executor.db`.
    pub store: Store,
    /// The clock every time check uses.
    pub clock: Clock,
    /// The Epiphan session kept between requests (over one HTTP client built at start).
    pub(crate) sessions: std::sync::Arc<crate::epiphan::Sessions>,
    /// When the `Describe` requests of the last minute were answered (at most
    /// `describes_per_minute` of them).
    describes: std::sync::Mutex<std::collections::VecDeque<std::time::Instant>>,
    /// The state folder's lock, held while this executor runs.
    _lock: std::fs::File,
}

/// Every tool named under `passkeys.tools` must be proposable in the executor's policy: a
/// misspelt tool would silently keep its quorum lower than the administrator meant.
pub fn check_quorum_tools(config: &Config, policy: &Policy) -> Result<(), StartError> {
    for tool in config.passkeys.tools.keys() {
        if policy.propose_entry(tool).is_none() {
            return Err(StartError::Config(format!(
                "passkeys.tools names {tool:?}, which is not a proposable tool in {}",
                config.policy.display()
            )));
        }
    }
    Ok(())
}

/// Reads and parses the executor's policy file.
pub fn load_policy(path: &Path) -> Result<Policy, StartError> {
    let text = os::read_trusted(path, Trusted::File, 4 << 20)?;
    Policy::from_yaml(&text).map_err(|e| StartError::Policy {
        path: path.display().to_string(),
        problem: e.to_string(),
    })
}

/// Creates the state folder (0700) when missing, then checks it like any trusted folder.
pub fn state_dir(config: &Config) -> Result<(), StartError> {
    use std::os::unix::fs::DirBuilderExt;
    let dir = &config.state_dir;
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| StartError::State {
                path: dir.display().to_string(),
                problem: e.to_string(),
            })?;
    }
    os::check_dir(dir)?;
    Ok(())
}

/// Opens the store in a checked state folder.
pub fn open_store(config: &Config) -> Result<Store, StartError> {
    state_dir(config)?;
    Store::open(&config.database()).map_err(|e| StartError::State {
        path: config.state_dir.display().to_string(),
        problem: e.to_string(),
    })
}

impl Context {
    /// Loads everything `serve` needs, and marks interrupted executions unknown.
    pub fn load(config: Config) -> Result<Context, StartError> {
        crate::epiphan::check_url(&config.epiphan_url, config.allow_loopback_http)?;
        let approvers = approvers::load(&config.approver_keys)?;
        let policy = load_policy(&config.policy)?;
        check_quorum_tools(&config, &policy)?;
        if config.passkeys.trial() {
            tracing::warn!(
                "trial mode (passkeys: {{quorum: 0}}): changes are accepted on the assistant's signature alone, not bound to a person"
            );
        } else if approvers.passkeys.is_empty() {
            tracing::warn!(
                "no person is enrolled: every change is refused until an administrator enrols one with `fleetwatch-confirm enrol` and installs it with `fleetwatch-executor approvers add -`"
            );
        }
        state_dir(&config)?;
        // Before recovery: recovery marks in-flight executions unknown, which is right only
        // when no other executor is running them.
        let lock = os::lock_state(&config.state_dir)?;
        let mut store = open_store(&config)?;
        let key = crate::receipt::key(&config).map_err(|problem| StartError::State {
            path: config.state_dir.display().to_string(),
            problem,
        })?;
        store.sign_receipts(crate::store::Receipts {
            key,
            rp_id: config.passkeys.rp_id.clone(),
            origins: config.passkeys.origins.clone(),
        });
        let recovered = store.recover().map_err(|e| StartError::State {
            path: config.state_dir.display().to_string(),
            problem: e.to_string(),
        })?;
        if recovered > 0 {
            tracing::warn!(
                recovered,
                "executions interrupted by a stop were marked unknown; they will not be re-run"
            );
        }
        let sessions = std::sync::Arc::new(crate::epiphan::Sessions::new(
            crate::epiphan::http_client().map_err(StartError::Http)?,
            &config.epiphan_url,
            config.read_timeout,
        ));
        Ok(Context {
            relying_party: config.passkeys.relying_party(),
            config,
            policy,
            store,
            clock: jiff::Timestamp::now,
            sessions,
            describes: std::sync::Mutex::default(),
            _lock: lock,
        })
    }

    /// Whether one more `Describe` fits in the last minute's allowance; counts it if so.
    pub fn describe_allowed(&self) -> bool {
        let mut times = self.describes.lock().unwrap_or_else(|p| p.into_inner());
        let now = std::time::Instant::now();
        while times
            .front()
            .is_some_and(|t| now.duration_since(*t) >= std::time::Duration::from_secs(60))
        {
            times.pop_front();
        }
        if times.len() >= self.config.describes_per_minute {
            return false;
        }
        times.push_back(now);
        true
    }

    /// The approver file as it is now: read for every request that needs it, so a passkey
    /// removed with `approvers remove` stops verifying at once.
    pub fn approvers(&self) -> Result<ApproverFile, FileError> {
        approvers::load(&self.config.approver_keys)
    }

    /// An MCP session signed in as the sandbox with the slot's current token (renewed when
    /// due): the kept one, or a new one; a refusal saying why when there is none.
    pub async fn sandbox_session(&self) -> Result<crate::epiphan::Epiphan, Refusal> {
        let token = crate::slot::token(&self.config).await?;
        self.sessions
            .session(token)
            .await
            .map_err(crate::reads::refusal)
    }
}
