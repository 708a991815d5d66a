//! `login --sandbox` and `logout --sandbox`: store or forget the sandbox token. A sign-in is
//! kept only if the sandbox team lists devices and shares none with the normal sign-in's
//! known devices; otherwise the token is deleted again, because writes through a sign-in that
//! can reach the production fleet would defeat the fence.

use std::collections::BTreeSet;
use std::path::Path;

use serde::Deserialize;

use crate::audit::Entry;
use crate::config::Config;
use crate::context;
use crate::epiphan::{self, Epiphan, SandboxToken};
use crate::{reads, slot};

/// The assistant's export of the devices its normal sign-in can see.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct KnownDevices {
    device_ids: Vec<String>,
}

/// Why the sign-in was refused (and forgotten).
#[derive(Debug, thiserror::Error)]
pub enum LoginError {
    /// Setup problem before anything was stored.
    #[error("{0}")]
    Setup(String),
    /// The sandbox team's device list could not be read.
    #[error(
        "could not read the sandbox team's devices ({0}); the token was not kept. Check the token and FLEETWATCH_EPIPHAN_URL, then try again"
    )]
    Read(String),
    /// The sandbox team lists no devices.
    #[error(
        "the sandbox team lists no devices; the token was not kept. Sign in with a sandbox team that has at least one device"
    )]
    Empty,
    /// The sandbox shares devices with the normal sign-in.
    #[error("the sandbox team shares {} device(s) with the normal sign-in ({}); the token was not kept. Use a separate sandbox team", .0.len(), .0.join(", "))]
    Overlap(Vec<String>),
}

fn read_known(path: &Path) -> Result<BTreeSet<String>, LoginError> {
    let setup = |what: String| {
        LoginError::Setup(format!(
            "known-devices file {}: {what}; export it with `fleetwatch export-devices`",
            path.display()
        ))
    };
    let meta = std::fs::metadata(path).map_err(|e| setup(e.to_string()))?;
    if meta.len() > 8 << 20 {
        return Err(setup("larger than 8 MiB".into()));
    }
    let text = std::fs::read_to_string(path).map_err(|e| setup(e.to_string()))?;
    let known: KnownDevices = serde_json::from_str(&text).map_err(|e| setup(e.to_string()))?;
    Ok(known.device_ids.into_iter().collect())
}

/// Stores the token, checks the sandbox team, and forgets the token on any refusal.
pub async fn login(
    config: &Config,
    token_text: &str,
    known_devices: &Path,
) -> Result<String, LoginError> {
    let known = read_known(known_devices)?;
    let token = SandboxToken::new(token_text).ok_or_else(|| {
        LoginError::Setup("the token is empty or holds characters a token cannot".into())
    })?;
    epiphan::check_url(&config.epiphan_url, config.allow_loopback_http)
        .map_err(|e| LoginError::Setup(e.to_string()))?;
    let store = context::open_store(config).map_err(|e| LoginError::Setup(e.to_string()))?;
    let path = config.token_slot();
    slot::store(&path, &token)
        .map_err(|e| LoginError::Setup(format!("{}: {e}", path.display())))?;
    let verdict = check_team(config, &token, &known).await;
    let (reason, detail) = match &verdict {
        Ok((n, _)) => ("stored", format!("devices={n}")),
        Err(LoginError::Empty) => ("empty_team", String::new()),
        Err(LoginError::Overlap(ids)) => ("overlap", format!("shared={}", ids.len())),
        Err(_) => ("read_failed", String::new()),
    };
    if verdict.is_err() {
        slot::forget(&path).map_err(|e| {
            LoginError::Setup(format!(
                "{}: could not delete the token: {e}; delete it by hand",
                path.display()
            ))
        })?;
    }
    if let Err(e) = store.audit(&Entry {
        kind: "login",
        reason: reason.into(),
        detail,
        ..Entry::default()
    }) {
        tracing::error!(error = %e, "could not audit the sign-in");
    }
    let (n, team) = verdict?;
    Ok(format!(
        "sandbox sign-in stored in {} ({n} device(s){})",
        path.display(),
        team.map(|t| format!(", team {t}")).unwrap_or_default()
    ))
}

async fn check_team(
    config: &Config,
    token: &SandboxToken,
    known: &BTreeSet<String>,
) -> Result<(usize, Option<String>), LoginError> {
    let epiphan = Epiphan::connect(&config.epiphan_url, token, config.read_timeout)
        .await
        .map_err(|e| LoginError::Read(format!("{:?}", reads::refusal(e).code())))?;
    let list = reads::device_list(&epiphan).await;
    epiphan.close().await;
    let list = list.map_err(|r| LoginError::Read(r.code().to_string()))?;
    if list.devices.is_empty() {
        return Err(LoginError::Empty);
    }
    let shared: Vec<String> = list
        .devices
        .iter()
        .filter(|d| known.contains(&d.id))
        .map(|d| d.id.clone())
        .collect();
    if !shared.is_empty() {
        return Err(LoginError::Overlap(shared));
    }
    Ok((list.devices.len(), list.team_id))
}

/// Forgets the sandbox sign-in.
pub fn logout(config: &Config) -> Result<String, String> {
    let store = context::open_store(config).map_err(|e| e.to_string())?;
    let path = config.token_slot();
    slot::forget(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    if let Err(e) = store.audit(&Entry {
        kind: "logout",
        reason: "forgotten".into(),
        ..Entry::default()
    }) {
        tracing::error!(error = %e, "could not audit the sign-out");
    }
    Ok(format!(
        "sandbox sign-in forgotten ({} removed)",
        path.display()
    ))
}
