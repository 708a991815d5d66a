//! `login --sandbox` and `logout --sandbox`: sign in (OAuth in a browser, or a static token)
//! or forget the sandbox sign-in. A new sign-in is written beside the live one and put in
//! place only if the sandbox team lists devices and shares none with the normal sign-in's
//! known devices (a list that must itself name some); otherwise it is deleted and the sign-in
//! in use stays as it was, because writes through a sign-in that can reach the production
//! fleet would defeat the fence.

use std::collections::BTreeSet;
use std::path::Path;

use serde::Deserialize;

use crate::audit::Entry;
use crate::config::Config;
use crate::context;
use crate::epiphan::{self, Epiphan};
use crate::{reads, slot};
use fleetwatch_signin::{Access, LoginOptions, Secret};

/// The assistant's export of the devices its normal sign-in can see.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct KnownDevices {
    device_ids: Vec<String>,
}

/// Why the new sign-in was refused (and forgotten; the one in use stays).
#[derive(Debug, thiserror::Error)]
pub enum LoginError {
    /// Setup problem before anything was stored.
    #[error("{0}")]
    Setup(String),
    /// The sandbox team's device list could not be read.
    #[error(
        "could not read the sandbox team's devices ({0}); the new sign-in was not kept and the one in use (if any) is unchanged. Check the token and FLEETWATCH_EPIPHAN_URL, then try again"
    )]
    Read(String),
    /// The sandbox team lists no devices.
    #[error(
        "the sandbox team lists no devices; the new sign-in was not kept and the one in use (if any) is unchanged. Sign in with a sandbox team that has at least one device"
    )]
    Empty,
    /// The OAuth sign-in did not complete; nothing was stored.
    #[error("{0}")]
    SignIn(String),
    /// The sandbox shares devices with the normal sign-in.
    #[error("the sandbox team shares {} device(s) with the normal sign-in ({}); the new sign-in was not kept and the one in use (if any) is unchanged. Use a separate sandbox team", .0.len(), .0.join(", "))]
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
    if known.device_ids.is_empty() {
        // An empty list would let any team pass the overlap check, the production one too.
        return Err(setup(
            "lists no devices, so the overlap check would pass for any team".into(),
        ));
    }
    Ok(known.device_ids.into_iter().collect())
}

/// Where the new sandbox sign-in comes from.
pub enum Source {
    /// The OAuth authorization-code flow in a browser.
    OAuth,
    /// A static bearer token (from `--token-file` or standard input).
    Static(String),
}

/// Signs in (OAuth or a static token) into a slot beside the live one, checks the sandbox team
/// through it, and only then puts it in place. A refusal removes the new sign-in and leaves the
/// one in use (if any) as it was, byte for byte, so a running executor keeps working.
pub async fn login(
    config: &Config,
    source: Source,
    known_devices: &Path,
) -> Result<String, LoginError> {
    let known = read_known(known_devices)?;
    epiphan::check_url(&config.epiphan_url, config.allow_loopback_http)
        .map_err(|e| LoginError::Setup(e.to_string()))?;
    let store = context::open_store(config).map_err(|e| LoginError::Setup(e.to_string()))?;
    let slot = slot::slot(config);
    let staged = slot.staging();
    let path = config.token_slot();
    let how = match source {
        Source::Static(text) => {
            let token = Secret::new(&text).ok_or_else(|| {
                LoginError::Setup("the token is empty or holds characters a token cannot".into())
            })?;
            staged
                .store_static(&token)
                .await
                .map_err(|e| LoginError::Setup(e.to_string()))?;
            "static token"
        }
        Source::OAuth => {
            let options = LoginOptions::from_env(
                &config.epiphan_url,
                config.allow_loopback_http,
                "Fleetwatch executor (sandbox sign-in)",
                Access::Write,
            )
            .map_err(|e| LoginError::Setup(e.to_string()))?;
            if let Err(e) = fleetwatch_signin::login(&staged, &options).await {
                let _ = staged.forget().await;
                audit(&store, "sign_in_failed", String::new());
                return Err(LoginError::SignIn(e.to_string()));
            }
            "OAuth"
        }
    };
    let verdict = match staged.bearer().await {
        Ok(token) => check_team(config, &token, &known).await,
        Err(e) => Err(LoginError::Read(e.to_string())),
    };
    let (reason, detail) = match &verdict {
        Ok((n, _)) => ("stored", format!("devices={n} via={how}")),
        Err(LoginError::Empty) => ("empty_team", String::new()),
        Err(LoginError::Overlap(ids)) => ("overlap", format!("shared={}", ids.len())),
        Err(_) => ("read_failed", String::new()),
    };
    let kept = match &verdict {
        Ok(_) => slot.adopt(&staged).await,
        Err(_) => staged.forget().await.map(|_| ()),
    };
    if let Err(e) = kept {
        let _ = staged.forget().await;
        audit(&store, "slot_failed", String::new());
        return Err(LoginError::Setup(format!(
            "{}: could not put the new sign-in in place: {e}",
            path.display()
        )));
    }
    audit(&store, reason, detail);
    let (n, team) = verdict?;
    let state = slot::status(config)
        .map(|s| s.to_string())
        .unwrap_or_default();
    Ok(format!(
        "sandbox sign-in ({how}) stored in {} ({n} device(s){}); {state}",
        path.display(),
        team.map(|t| format!(", team {t}")).unwrap_or_default()
    ))
}

fn audit(store: &crate::store::Store, reason: &str, detail: String) {
    if let Err(e) = store.audit(&Entry {
        kind: "login",
        reason: reason.into(),
        detail,
        ..Entry::default()
    }) {
        tracing::error!(error = %e, "could not audit the sign-in");
    }
}

async fn check_team(
    config: &Config,
    token: &Secret,
    known: &BTreeSet<String>,
) -> Result<(usize, Option<String>), LoginError> {
    let http = epiphan::http_client().map_err(LoginError::Read)?;
    let epiphan = Epiphan::connect(&http, &config.epiphan_url, token, config.read_timeout)
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

/// Forgets the sandbox sign-in (its slot only; the normal sign-in is the assistant's).
pub async fn logout(config: &Config) -> Result<String, String> {
    let store = context::open_store(config).map_err(|e| e.to_string())?;
    let path = config.token_slot();
    slot::slot(config)
        .forget()
        .await
        .map_err(|e| e.to_string())?;
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
