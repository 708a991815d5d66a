//! `fleetwatch login` and `fleetwatch logout` for the normal (read) sign-in, and the OAuth slot
//! behind the reads. The slot is the token file in the state folder; the sign-in crate keeps
//! it (0600, renewed before expiry, locked while renewing, dead once Epiphan refuses a
//! renewal). `FLEETWATCH_EPIPHAN_TOKEN`, when set, overrides it.

use std::io::{IsTerminal as _, Read as _};
use std::path::Path;

use fleetwatch_signin::{Access, LoginOptions, Secret, SignInError, Slot, SlotStatus};

use crate::config::Config;
use crate::reads::{ReadError, TOKEN_FILE};

fn allow_loopback_http() -> bool {
    std::env::var("FLEETWATCH_ALLOW_LOOPBACK_HTTP").is_ok_and(|v| v == "1")
}

/// The normal sign-in's slot.
pub fn slot(config: &Config) -> Slot {
    Slot::new(
        config.state_dir.join(TOKEN_FILE),
        config.allow_loopback_http,
    )
}

/// The message for a dead slot, when it is dead (and not overridden by the environment).
pub fn dead(config: &Config) -> Option<String> {
    if std::env::var("FLEETWATCH_EPIPHAN_TOKEN").is_ok_and(|v| !v.trim().is_empty()) {
        return None;
    }
    match slot(config).status() {
        Ok(SlotStatus::Dead(d)) => {
            Some(format!("normal sign-in: {d}. Run `fleetwatch login` again"))
        }
        _ => None,
    }
}

/// The slot's state for `doctor`: whether it is usable, and a line that reveals nothing.
pub fn status_line(config: &Config) -> (bool, String) {
    match slot(config).status() {
        Ok(SlotStatus::Empty) => (
            false,
            "not signed in; run `fleetwatch login` (OAuth in a browser, or pipe a static token) or set FLEETWATCH_EPIPHAN_TOKEN".into(),
        ),
        Ok(SlotStatus::Dead(d)) => (
            false,
            format!("{d}; run `fleetwatch login` again (serve exits 78 until then)"),
        ),
        Ok(state) => (true, state.to_string()),
        Err(e) => (false, e.to_string()),
    }
}

/// `fleetwatch login`: a token piped on standard input is stored as a static token;
/// otherwise (a terminal, or nothing piped) the OAuth sign-in runs, asking only for scopes that
/// read. Either way the new sign-in is written beside the live slot, checked there (it must
/// be a usable sign-in), and only then put in place: a login that fails or is refused part-way leaves
/// the sign-in in use as it was.
pub async fn login(config: &Config) -> Result<String, String> {
    create_state_dir(&config.state_dir)?;
    let slot = slot(config);
    let staged = slot.staging();
    let mut text = String::new();
    if !std::io::stdin().is_terminal() {
        std::io::stdin()
            .take(16 * 1024)
            .read_to_string(&mut text)
            .map_err(|e| format!("standard input: {e}"))?;
    }
    let bare = text.trim();
    let bare = bare.strip_prefix("Bearer ").unwrap_or(bare);
    let how = if bare.is_empty() {
        let options = LoginOptions::from_env(
            &config.epiphan_url,
            config.allow_loopback_http,
            "Fleetwatch assistant (read sign-in)",
            Access::Read,
        )
        .map_err(|e| e.to_string())?;
        fleetwatch_signin::login(&staged, &options)
            .await
            .map_err(|e| kept_old(&staged, &slot, e.to_string()))?;
        "OAuth"
    } else {
        let token =
            Secret::new(bare).ok_or("the token is empty or holds spaces or control characters")?;
        staged
            .store_static(&token)
            .await
            .map_err(|e| kept_old(&staged, &slot, e.to_string()))?;
        "static token"
    };
    // Checked without a network call (a refresh now would spend the new refresh token).
    match staged.status() {
        Ok(SlotStatus::Static | SlotStatus::SignedIn { .. }) => {}
        Ok(other) => {
            return Err(kept_old(
                &staged,
                &slot,
                format!("the new sign-in is not usable ({other})"),
            ));
        }
        Err(e) => return Err(kept_old(&staged, &slot, e.to_string())),
    }
    slot.adopt(&staged)
        .await
        .map_err(|e| kept_old(&staged, &slot, e.to_string()))?;
    let state = slot.status().map(|s| s.to_string()).unwrap_or_default();
    Ok(format!(
        "sign-in ({how}) stored in {} (mode 0600); {state}",
        slot.path().display()
    ))
}

/// Removes a refused new sign-in and says that the one in use stays.
fn kept_old(staged: &Slot, slot: &Slot, why: String) -> String {
    if let Err(e) = std::fs::remove_file(staged.path())
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(path = %staged.path().display(), error = %e, "could not remove the refused sign-in");
    }
    format!(
        "{why}; the sign-in in {} (if any) is unchanged",
        slot.path().display()
    )
}

/// `fleetwatch logout`: deletes the normal sign-in's slot (only that one).
pub async fn logout(config: &Config) -> Result<String, String> {
    let slot = slot(config);
    let removed = slot.forget().await.map_err(|e| e.to_string())?;
    Ok(if removed {
        format!(
            "normal sign-in forgotten ({} removed)",
            slot.path().display()
        )
    } else {
        "no normal sign-in was stored".into()
    })
}

fn create_state_dir(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::DirBuilderExt as _;
    if dir.exists() {
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))
}

/// A token file holding an OAuth sign-in, used through the slot.
pub struct SlotToken {
    slot: Slot,
    last: tokio::sync::Mutex<Option<Secret>>,
}

impl SlotToken {
    /// Opens the slot at `path`, refusing one that is dead or unusable.
    pub fn open(path: &Path) -> Result<SlotToken, ReadError> {
        let slot = Slot::new(path, allow_loopback_http());
        match slot.status() {
            Ok(SlotStatus::Empty) => Err(ReadError::NoSignIn(format!(
                "{} is empty; run `fleetwatch login`",
                path.display()
            ))),
            Ok(SlotStatus::Dead(d)) => Err(ReadError::NoSignIn(format!(
                "{d}; run `fleetwatch login` again"
            ))),
            Ok(_) => Ok(SlotToken {
                slot,
                last: tokio::sync::Mutex::new(None),
            }),
            Err(e) => Err(ReadError::NoSignIn(e.to_string())),
        }
    }

    /// The bearer for the next call, and whether it changed since the last one.
    pub async fn bearer(&self) -> Result<(Secret, bool), ReadError> {
        let token = self.slot.bearer().await.map_err(|e| match e {
            SignInError::Dead(d) => {
                tracing::error!(error = %d, "normal sign-in is dead; run `fleetwatch login` again");
                ReadError::NoSignIn(format!("{d}; run `fleetwatch login` again"))
            }
            SignInError::Expired => ReadError::SignInExpired,
            SignInError::Transient(why) => ReadError::Transport(why),
            other => ReadError::NoSignIn(other.to_string()),
        })?;
        let mut last = self.last.lock().await;
        let changed = last.as_ref().is_some_and(|old| !old.ct_eq(token.expose()));
        *last = Some(token.clone());
        Ok((token, changed))
    }
}
