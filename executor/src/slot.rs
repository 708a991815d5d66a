//! The sandbox token slot: one 0600 file in the state folder, owned by the executor's user.

use std::path::Path;

use crate::epiphan::SandboxToken;
use crate::os::{self, TrustError, Trusted};

/// Why the slot gave no token.
#[derive(Debug, thiserror::Error)]
pub enum SlotError {
    /// No sign-in stored.
    #[error("no sandbox sign-in is stored; run `fleetwatch-executor login --sandbox`")]
    Empty,
    /// The slot file is not trusted.
    #[error("sandbox token slot: {0}")]
    Trust(#[from] TrustError),
    /// The file holds no usable token.
    #[error(
        "the sandbox token slot holds no usable token; run `fleetwatch-executor login --sandbox` again"
    )]
    Invalid,
}

/// Reads the token, refusing a slot that others could read or change.
pub fn read(path: &Path) -> Result<SandboxToken, SlotError> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(SlotError::Empty),
        _ => {}
    }
    let text = os::read_trusted(path, Trusted::SecretFile, 16 * 1024)?;
    SandboxToken::new(&text).ok_or(SlotError::Invalid)
}

/// Stores a token with mode 0600.
pub fn store(path: &Path, token: &SandboxToken) -> std::io::Result<()> {
    os::write_secret(path, token.as_bytes())
}

/// Forgets the token. Absent already is fine.
pub fn forget(path: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}
