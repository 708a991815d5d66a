//! The sandbox token slot: one 0600 file in the state folder, owned by the executor's user,
//! kept by the sign-in crate (static token or OAuth record, renewed before expiry, dead once
//! Epiphan refuses a renewal).

use fleetwatch_protocol::Refusal;
use fleetwatch_protocol::secret::Secret;
use fleetwatch_signin::{SignInError, Slot, SlotStatus};

use crate::config::Config;

/// The sandbox slot.
pub fn slot(config: &Config) -> Slot {
    Slot::new(config.token_slot(), config.allow_loopback_http)
}

/// What the slot holds, without any network call and without revealing a token.
pub fn status(config: &Config) -> Result<SlotStatus, SignInError> {
    slot(config).status()
}

/// The message for a dead slot, when it is dead.
pub fn dead(config: &Config) -> Option<String> {
    match status(config) {
        Ok(SlotStatus::Dead(d)) => Some(format!(
            "sandbox sign-in: {d}. Run `fleetwatch-executor login --sandbox` again"
        )),
        _ => None,
    }
}

/// A token for the next reads and write, renewed first when it is about to expire. Each
/// refusal is logged here, because the refusal code alone does not say which slot problem it
/// was.
pub async fn token(config: &Config) -> Result<Secret, Refusal> {
    match slot(config).bearer().await {
        Ok(secret) => Ok(secret),
        Err(SignInError::Missing) => {
            tracing::warn!(
                "no sandbox sign-in is stored; run `fleetwatch-executor login --sandbox`"
            );
            Err(Refusal::NoSignIn)
        }
        Err(e @ (SignInError::Dead(_) | SignInError::Expired)) => {
            tracing::error!(error = %e, "sandbox sign-in unusable; run `fleetwatch-executor login --sandbox` again");
            Err(Refusal::SignInExpired)
        }
        Err(SignInError::Transient(why)) => {
            tracing::warn!(%why, "sandbox sign-in could not be renewed right now");
            Err(Refusal::ReadFailed)
        }
        Err(e) => {
            tracing::warn!(error = %e, "no usable sandbox sign-in");
            Err(Refusal::NoSignIn)
        }
    }
}
