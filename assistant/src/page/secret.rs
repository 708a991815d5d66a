//! The page secret: 256 random bits made at each start, shown to the operator once and then
//! only compared. It never appears in a URL, a log line, an audit row or an error message: it
//! is held in the protocol's one [`Secret`] wrapper, which has no `Debug`/`Display`, so it
//! cannot be formatted by accident.

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

pub use fleetwatch_protocol::secret::Secret;

/// The file the secret is written to when no terminal is attached.
pub const SECRET_FILE: &str = "approval-page.secret";

/// A fresh secret from the OS generator: lower-case hex of 32 random bytes, what the operator
/// types or pastes.
pub fn generate() -> std::io::Result<Secret> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
    Secret::new(&fleetwatch_protocol::hex::encode(&bytes))
        .ok_or_else(|| std::io::Error::other("no secret"))
}

/// Compares an entry with the secret in constant time. Surrounding whitespace (a pasted
/// newline) is ignored; the length is not secret, so a wrong length may return early.
pub fn matches(secret: &Secret, entry: &str) -> bool {
    secret.ct_eq(entry.trim())
}

/// Where the secret goes at start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretDelivery {
    /// Printed on standard output when it is a terminal, else written to the file.
    Auto,
    /// Always written to the file (services and tests).
    File,
}

/// The secret file on disk; removed when the page stops cleanly (and replaced at the next
/// start if a crash left it behind).
pub struct SecretFile {
    path: PathBuf,
}

impl SecretFile {
    /// Writes the secret to `<state_dir>/approval-page.secret`, mode 0600. It is written whole
    /// to a new file beside it (created exclusively, so never a file another user prepared)
    /// and renamed into place: whoever sees the file sees the whole secret, never an empty or
    /// half-written one, and a stale file from a crash is replaced in the same step.
    pub fn write(state_dir: &Path, secret: &Secret) -> std::io::Result<SecretFile> {
        let path = state_dir.join(SECRET_FILE);
        let partial = state_dir.join(format!("{SECRET_FILE}.{}.partial", std::process::id()));
        match std::fs::remove_file(&partial) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let written = (|| {
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&partial)?;
            file.write_all(secret.expose().as_bytes())?;
            file.write_all(b"\n")?;
            file.sync_all()?;
            std::fs::rename(&partial, &path)
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&partial);
            return Err(e);
        }
        Ok(SecretFile { path })
    }

    /// The file's path (printed instead of the secret).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the file now.
    pub fn remove(self) {
        // Drop does the work; this makes the clean stop explicit at the call site.
        drop(self);
    }
}

impl Drop for SecretFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    #[test]
    fn secret_is_256_bits_and_compares_exactly() {
        let secret = generate().unwrap();
        assert_eq!(secret.expose().len(), 64);
        assert!(matches(&secret, secret.expose()));
        assert!(matches(&secret, &format!("{}\n", secret.expose())));
        let mut wrong = secret.expose().to_owned();
        wrong.replace_range(63.., if wrong.ends_with('0') { "1" } else { "0" });
        assert!(!matches(&secret, &wrong));
        assert!(!matches(&secret, ""));
        assert!(!matches(&secret, &secret.expose()[..63]));
        assert_ne!(secret.expose(), generate().unwrap().expose());
    }

    #[test]
    fn file_is_private_replaces_a_stale_one_and_goes_away() {
        let dir = tempfile::tempdir().unwrap();
        let stale = dir.path().join(SECRET_FILE);
        std::fs::write(&stale, "old").unwrap();
        std::fs::set_permissions(&stale, std::fs::Permissions::from_mode(0o644)).unwrap();
        let secret = generate().unwrap();
        let file = SecretFile::write(dir.path(), &secret).unwrap();
        let meta = std::fs::metadata(file.path()).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        let text = std::fs::read_to_string(file.path()).unwrap();
        assert!(matches(&secret, &text));
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [SECRET_FILE], "nothing but the secret file is left");
        let path = file.path().to_owned();
        file.remove();
        assert!(!path.exists());
    }
}
