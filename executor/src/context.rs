//! Everything a running executor loads once at start: configuration, approver keys, its own
//! policy and the store. Each trusted file is checked for owner and mode before it is read.

use std::path::Path;

use fleetwatch_protocol::Refusal;
use fleetwatch_protocol::claims::TrustedKeys;
use fleetwatch_protocol::policy::Policy;

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
    /// The approver key file is invalid.
    #[error(
        "approver key file {path}: {problem}; each line must read `ed25519 <base64 key> [comment]`"
    )]
    Keys {
        /// The file.
        path: String,
        /// What is wrong.
        problem: String,
    },
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
    /// Installed approver keys.
    pub keys: TrustedKeys,
    /// The executor's own policy.
    pub policy: Policy,
    /// `executor.db`.
    pub store: Store,
    /// The clock every time check uses.
    pub clock: Clock,
    /// The Epiphan session kept between requests (over one HTTP client built at start).
    pub(crate) sessions: std::sync::Arc<crate::epiphan::Sessions>,
    /// The state folder's lock, held while this executor runs.
    _lock: std::fs::File,
}

/// Reads and parses the approver key file.
pub fn load_keys(path: &Path) -> Result<TrustedKeys, StartError> {
    let text = os::read_trusted(path, Trusted::File, 1 << 20)?;
    TrustedKeys::parse(&text).map_err(|e| StartError::Keys {
        path: path.display().to_string(),
        problem: e.to_string(),
    })
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
        let keys = load_keys(&config.approver_keys)?;
        let policy = load_policy(&config.policy)?;
        state_dir(&config)?;
        // Before recovery: recovery marks in-flight executions unknown, which is right only
        // when no other executor is running them.
        let lock = os::lock_state(&config.state_dir)?;
        let store = open_store(&config)?;
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
            config,
            keys,
            policy,
            store,
            clock: jiff::Timestamp::now,
            sessions,
            _lock: lock,
        })
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
