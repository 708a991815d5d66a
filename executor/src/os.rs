//! The operating-system seam: who the peer is, who owns a file, and how the socket is made.
//! Everything the executor learns from the OS about trust goes through this module, so a
//! reviewer can check it in one place.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The executor's effective uid.
pub fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// The uid of the process at the other end of a Unix socket, read from the kernel
/// (`SO_PEERCRED`), so a client cannot claim another identity.
pub fn peer_uid(stream: &tokio::net::UnixStream) -> std::io::Result<u32> {
    Ok(stream.peer_cred()?.uid())
}

/// What kind of trusted path is expected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trusted {
    /// A file others may read but nobody but its owner may change (keys, policy, config).
    File,
    /// A file only its owner may read (the sandbox token slot).
    SecretFile,
    /// A directory nobody but its owner may change.
    Dir,
}

/// Why a path the executor would trust was refused. Each message names the path and the
/// command that fixes it.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    /// The path cannot be opened or examined.
    #[error("{path}: cannot be read ({source}); check the path in the executor's configuration")]
    Unreadable {
        /// The path.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// Owned by someone other than the executor's user or root.
    #[error(
        "{path} is owned by uid {owner}, not by the executor's user (uid {euid}) or root; run `chown {euid} {path}`"
    )]
    Owner {
        /// The path.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// The executor's uid.
        euid: u32,
    },
    /// Writable by group or others.
    #[error("{path} is writable by group or others (mode {mode:o}); run `chmod go-w {path}`")]
    Writable {
        /// The path.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// A secret readable by group or others.
    #[error("{path} is readable by group or others (mode {mode:o}); run `chmod 600 {path}`")]
    Readable {
        /// The path.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// Not the expected kind of file (a symbolic link is never followed).
    #[error(
        "{path} is not a {expected} (symbolic links are refused); replace it with a {expected}"
    )]
    Kind {
        /// The path.
        path: PathBuf,
        /// What was expected.
        expected: &'static str,
    },
}

fn check_metadata(path: &Path, meta: &std::fs::Metadata, kind: Trusted) -> Result<(), TrustError> {
    let (ok_kind, expected) = match kind {
        Trusted::Dir => (meta.file_type().is_dir(), "directory"),
        Trusted::File | Trusted::SecretFile => (meta.file_type().is_file(), "regular file"),
    };
    if !ok_kind {
        return Err(TrustError::Kind {
            path: path.to_path_buf(),
            expected,
        });
    }
    let owner = meta.uid();
    let me = euid();
    if owner != me && owner != 0 {
        return Err(TrustError::Owner {
            path: path.to_path_buf(),
            owner,
            euid: me,
        });
    }
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(TrustError::Writable {
            path: path.to_path_buf(),
            mode,
        });
    }
    if kind == Trusted::SecretFile && mode & 0o077 != 0 {
        return Err(TrustError::Readable {
            path: path.to_path_buf(),
            mode,
        });
    }
    Ok(())
}

fn check_parent(path: &Path) -> Result<(), TrustError> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let meta = std::fs::symlink_metadata(&parent).map_err(|source| TrustError::Unreadable {
        path: parent.clone(),
        source,
    })?;
    check_metadata(&parent, &meta, Trusted::Dir)
}

/// Checks a trusted directory and its parent.
pub fn check_dir(path: &Path) -> Result<(), TrustError> {
    check_parent(path)?;
    let meta = std::fs::symlink_metadata(path).map_err(|source| TrustError::Unreadable {
        path: path.to_path_buf(),
        source,
    })?;
    check_metadata(path, &meta, Trusted::Dir)
}

/// Opens a trusted file without following a symbolic link, checks the opened file (not the
/// name, so a swap between check and read cannot slip in) and its parent, and reads it.
pub fn read_trusted(path: &Path, kind: Trusted, limit: u64) -> Result<String, TrustError> {
    check_parent(path)?;
    let unreadable = |source: std::io::Error| TrustError::Unreadable {
        path: path.to_path_buf(),
        source,
    };
    let fd = rustix::fs::open(
        path,
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .map_err(|e| unreadable(e.into()))?;
    let file = File::from(fd);
    let meta = file.metadata().map_err(unreadable)?;
    check_metadata(path, &meta, kind)?;
    let mut text = String::new();
    file.take(limit)
        .read_to_string(&mut text)
        .map_err(unreadable)?;
    Ok(text)
}

/// Why the socket could not be created.
#[derive(Debug, thiserror::Error)]
pub enum SocketError {
    /// The socket's directory is unsafe.
    #[error("socket directory: {0}")]
    Dir(#[from] TrustError),
    /// The directory is not owned by the executor's user.
    #[error(
        "{path} is owned by uid {owner}, not by the executor's user; run `chown {euid} {path}`"
    )]
    DirOwner {
        /// The directory.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// The executor's uid.
        euid: u32,
    },
    /// Something that is not a socket sits at the path.
    #[error("{0} exists and is not a socket; remove it if it is not needed")]
    NotASocket(PathBuf),
    /// Another process answers on the socket.
    #[error("{0} is in use by a running executor; stop it first")]
    InUse(PathBuf),
    /// An OS error.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

/// Creates the listening socket with mode 0660 inside a directory the executor owns and
/// nobody else can write. A socket left by a previous run is replaced only when nothing
/// answers on it, and nothing that is not a socket is ever removed.
pub fn bind_socket(path: &Path) -> Result<tokio::net::UnixListener, SocketError> {
    let io = |source: std::io::Error| SocketError::Io {
        path: path.to_path_buf(),
        source,
    };
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o750)
            .create(&dir)
            .map_err(io)?;
    }
    check_dir(&dir)?;
    let owner = std::fs::metadata(&dir).map_err(io)?.uid();
    if owner != euid() {
        return Err(SocketError::DirOwner {
            path: dir,
            owner,
            euid: euid(),
        });
    }
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => {
            if std::os::unix::net::UnixStream::connect(path).is_ok() {
                return Err(SocketError::InUse(path.to_path_buf()));
            }
            std::fs::remove_file(path).map_err(io)?;
        }
        Ok(_) => return Err(SocketError::NotASocket(path.to_path_buf())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io(e)),
    }
    let listener = tokio::net::UnixListener::bind(path).map_err(io)?;
    // Between bind and chmod the umask decides; the peer uid check still guards every
    // connection, so the window only matters for who may knock, not who is heard.
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o660)).map_err(io)?;
    Ok(listener)
}

#[cfg(test)]
// Tests may stop at the first surprise; the deny list guards the shipped code paths.
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
mod tests {
    use super::*;

    fn write(path: &Path, mode: u32) {
        std::fs::write(path, "x").unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn trusted_file_modes() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("keys");
        write(&f, 0o644);
        assert!(read_trusted(&f, Trusted::File, 100).is_ok());
        write(&f, 0o664);
        let err = read_trusted(&f, Trusted::File, 100).unwrap_err();
        assert!(matches!(err, TrustError::Writable { .. }));
        assert!(err.to_string().contains("chmod go-w"), "{err}");
        write(&f, 0o646);
        assert!(matches!(
            read_trusted(&f, Trusted::File, 100),
            Err(TrustError::Writable { .. })
        ));
        write(&f, 0o640);
        let err = read_trusted(&f, Trusted::SecretFile, 100).unwrap_err();
        assert!(err.to_string().contains("chmod 600"), "{err}");
        write(&f, 0o600);
        assert!(read_trusted(&f, Trusted::SecretFile, 100).is_ok());
    }

    #[test]
    fn parent_directory_counts() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("etc");
        std::fs::create_dir(&sub).unwrap();
        let f = sub.join("policy");
        write(&f, 0o644);
        std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = read_trusted(&f, Trusted::File, 100).unwrap_err();
        assert!(
            err.to_string().contains(&sub.display().to_string()),
            "{err}"
        );
        std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(read_trusted(&f, Trusted::File, 100).is_ok());
        assert!(check_dir(&sub).is_ok());
    }

    #[test]
    fn symlinks_and_foreign_owners_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("real");
        write(&f, 0o644);
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&f, &link).unwrap();
        assert!(read_trusted(&link, Trusted::File, 100).is_err());
        if euid() == 0 {
            rustix::fs::chown(&f, Some(rustix::fs::Uid::from_raw(4242)), None).unwrap();
            let err = read_trusted(&f, Trusted::File, 100).unwrap_err();
            assert!(
                matches!(err, TrustError::Owner { owner: 4242, .. }),
                "{err}"
            );
            assert!(err.to_string().contains("chown"));
        }
    }
}
