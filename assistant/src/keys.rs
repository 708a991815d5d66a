//! The assistant's Ed25519 approval-signing key: made once in the state folder (0600, created
//! exclusively so two starts cannot race to different keys), never printed. Only its public
//! half leaves this module, as the key line an administrator installs for the executor.

use std::io::Write as _;
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use ed25519_dalek::{SigningKey, VerifyingKey};
use fleetwatch_protocol::claims::{self, KeyId};

/// The key file inside the state folder.
pub const KEY_FILE: &str = "approval-signing.key";

/// Why the key could not be loaded or made.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// Reading or writing failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file is readable by others or is not a key.
    #[error("{}: {problem}", path.display())]
    Unusable {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
}

/// The signing key. No `Debug`, `Display` or `Clone`: it stays where it was loaded.
pub struct ApproverKey {
    key: SigningKey,
}

impl ApproverKey {
    /// Loads the key, making it first if the file does not exist.
    pub fn load_or_create(state_dir: &Path) -> Result<ApproverKey, KeyError> {
        let path = state_dir.join(KEY_FILE);
        match ApproverKey::load(&path) {
            Err(KeyError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                ApproverKey::create(&path)
            }
            other => other,
        }
    }

    /// Loads an existing key, refusing a file that group or others can read.
    pub fn load(path: &Path) -> Result<ApproverKey, KeyError> {
        let io = |source| KeyError::Io {
            path: path.to_owned(),
            source,
        };
        let meta = std::fs::symlink_metadata(path).map_err(io)?;
        if !meta.file_type().is_file() {
            return Err(KeyError::Unusable {
                path: path.to_owned(),
                problem: "is not a regular file".to_owned(),
            });
        }
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(KeyError::Unusable {
                path: path.to_owned(),
                problem: format!("has mode {mode:04o}; it must be 0600"),
            });
        }
        let bytes = std::fs::read(path).map_err(io)?;
        let seed = <[u8; 32]>::try_from(bytes.as_slice()).map_err(|_| KeyError::Unusable {
            path: path.to_owned(),
            problem: "is not a 32-byte key".to_owned(),
        })?;
        Ok(ApproverKey {
            key: SigningKey::from_bytes(&seed),
        })
    }

    fn create(path: &Path) -> Result<ApproverKey, KeyError> {
        let io = |source| KeyError::Io {
            path: path.to_owned(),
            source,
        };
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).map_err(|e| io(std::io::Error::other(e.to_string())))?;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .map_err(io)?;
        file.write_all(&seed).map_err(io)?;
        file.sync_all().map_err(io)?;
        Ok(ApproverKey {
            key: SigningKey::from_bytes(&seed),
        })
    }

    /// The public half.
    pub fn public(&self) -> VerifyingKey {
        self.key.verifying_key()
    }

    /// The key ID the executor lists when this key is installed.
    pub fn key_id(&self) -> KeyId {
        KeyId::of(&self.public())
    }

    /// The line to install in the executor's approver key file.
    pub fn key_line(&self) -> String {
        claims::key_line(&self.public(), "fleetwatch-assistant")
    }

    /// Signs encoded claims (used by the approval page).
    pub fn sign(&self, claims_bytes: Vec<u8>) -> claims::SignedApproval {
        claims::sign(claims_bytes, &self.key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_once_private_and_stable() {
        let dir = tempfile::tempdir().unwrap();
        let first = ApproverKey::load_or_create(dir.path()).unwrap();
        let mode = std::fs::metadata(dir.path().join(KEY_FILE))
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600);
        let second = ApproverKey::load_or_create(dir.path()).unwrap();
        assert_eq!(first.public(), second.public());
        assert!(first.key_line().starts_with("ed25519 "));
    }

    #[test]
    fn readable_key_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        ApproverKey::load_or_create(dir.path()).unwrap();
        let path = dir.path().join(KEY_FILE);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        assert!(matches!(
            ApproverKey::load_or_create(dir.path()),
            Err(KeyError::Unusable { .. })
        ));
    }
}
