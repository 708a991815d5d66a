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
    /// Owned by someone other than the executor's user or root. The advice never changes a
    /// service's folder: the command is run as its owner instead (`sudo` does that for the
    /// state folder); only a file root should own is given back to root.
    #[error(
        "{path} is owned by uid {owner}, not by this process's user (uid {euid}) or root: run the command as root (`sudo fleetwatch-executor …` acts as the owner of the executor's state folder) or as uid {owner}; if root should own it (configuration, keys, policy), `chown root {path}`"
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

/// Why the state folder could not be locked for this `serve`.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another executor holds the lock.
    #[error(
        "another fleetwatch-executor{} is serving the state folder {dir}; stop it first (nothing was changed)",
        .pid.map(|p| format!(" (pid {p})")).unwrap_or_default()
    )]
    Held {
        /// The state folder.
        dir: PathBuf,
        /// The running executor's pid, as it wrote it.
        pid: Option<u32>,
    },
    /// The lock file could not be opened or written.
    #[error("{path}: {source}")]
    Io {
        /// The lock file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

/// Takes the state folder's exclusive lock (`executor.lock`, `flock`), writing this process's
/// pid into it, and returns the open file that holds the lock for as long as it lives. A
/// second `serve` on the same folder must stop here, before its start-up recovery would mark
/// the running executor's in-flight approval unknown behind its back. The kernel drops the
/// lock when the process ends, however it ends, so a crash never leaves a stale lock.
pub fn lock_state(dir: &Path) -> Result<File, LockError> {
    use std::io::{Seek, Write};
    let path = dir.join("executor.lock");
    let io = |source: std::io::Error| LockError::Io {
        path: path.clone(),
        source,
    };
    let fd = rustix::fs::open(
        &path,
        rustix::fs::OFlags::RDWR
            | rustix::fs::OFlags::CREATE
            | rustix::fs::OFlags::NOFOLLOW
            | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .map_err(|e| io(e.into()))?;
    let mut file = File::from(fd);
    if let Err(e) = rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        if e == rustix::io::Errno::WOULDBLOCK {
            let mut text = String::new();
            let _ = (&file).take(32).read_to_string(&mut text);
            return Err(LockError::Held {
                dir: dir.to_path_buf(),
                pid: text.trim().parse().ok(),
            });
        }
        return Err(io(e.into()));
    }
    file.set_len(0).map_err(io)?;
    file.rewind().map_err(io)?;
    writeln!(file, "{}", std::process::id()).map_err(io)?;
    Ok(file)
}

/// For a command an administrator runs as root (`sudo fleetwatch-executor receipt 1`): when the
/// state folder belongs to another user — the service's, `fleetwatch-exec` — this process
/// becomes that user, with the state folder's group and the user's own primary group, the
/// groups its unit gives it, before it reads or makes anything there. So every file a command
/// creates belongs to the service, as with `runuser -u fleetwatch-exec --`, and no folder's
/// ownership ever needs changing. Returns the uid taken on, or `None` when nothing changed (not
/// root, no folder yet, or a folder root owns).
///
/// Linux keeps credentials per thread and these calls change the calling thread's; they run
/// while the process has one thread (checked), so every thread made later inherits them.
pub fn act_as_state_owner(state_dir: &Path) -> Result<Option<u32>, String> {
    if euid() != 0 {
        return Ok(None);
    }
    let Ok(meta) = std::fs::symlink_metadata(state_dir) else {
        return Ok(None);
    };
    let (uid, gid) = (meta.uid(), meta.gid());
    if uid == 0 || !meta.is_dir() {
        return Ok(None);
    }
    let threads = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Threads:").map(|n| n.trim().to_owned()))
        });
    if threads.as_deref() != Some("1") {
        return Err(format!(
            "cannot act as the owner of {} (uid {uid}) from a process with more than one thread;              run the command as that user (`sudo runuser -u <user> -- fleetwatch-executor …`)",
            state_dir.display()
        ));
    }
    let mut groups = vec![rustix::process::Gid::from_raw(gid)];
    if let Some(primary) = primary_gid(uid).filter(|g| *g != gid) {
        groups.push(rustix::process::Gid::from_raw(primary));
    }
    let failed = |e: rustix::io::Errno| {
        format!(
            "cannot act as the owner of {} (uid {uid}): {e}",
            state_dir.display()
        )
    };
    // Groups first: once the uid is dropped, they can no longer be changed.
    rustix::thread::set_thread_groups(&groups).map_err(failed)?;
    let gid = rustix::process::Gid::from_raw(gid);
    rustix::thread::set_thread_res_gid(gid, gid, gid).map_err(failed)?;
    let user = rustix::process::Uid::from_raw(uid);
    rustix::thread::set_thread_res_uid(user, user, user).map_err(failed)?;
    if euid() != uid || rustix::process::getuid().as_raw() != uid {
        return Err(format!(
            "cannot act as the owner of {} (uid {uid})",
            state_dir.display()
        ));
    }
    Ok(Some(uid))
}

/// A user's primary group from `/etc/passwd` (`name:x:uid:gid:…`), if it lists the user.
fn primary_gid(uid: u32) -> Option<u32> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        (fields.get(2)?.parse::<u32>().ok()? == uid).then(|| fields.get(3)?.parse().ok())?
    })
}

/// Asks the executor listening on `path` for its `Status`, as a client would: one whole
/// request frame, one answer. Used to tell a live executor from a socket left behind, without
/// the half-open connection a bare connect would leave in the live one's audit log.
pub fn probe_status(
    path: &Path,
    timeout: std::time::Duration,
) -> std::io::Result<fleetwatch_protocol::wire::Response> {
    use std::io::Write;
    let invalid =
        |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_owned());
    let body =
        fleetwatch_protocol::wire::encode_request(&fleetwatch_protocol::wire::Request::Status)
            .map_err(|_| invalid("the Status request did not encode"))?;
    let length = u32::try_from(body.len()).map_err(|_| invalid("request too large"))?;
    let mut stream = std::os::unix::net::UnixStream::connect(path)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    stream.write_all(&length.to_be_bytes())?;
    stream.write_all(&body)?;
    let mut prefix = [0u8; 4];
    stream.read_exact(&mut prefix)?;
    let length = usize::try_from(u32::from_be_bytes(prefix)).map_err(|_| invalid("bad length"))?;
    if length > fleetwatch_protocol::wire::MAX_FRAME {
        return Err(invalid("the answer is larger than a frame may be"));
    }
    let mut answer = vec![0u8; length];
    stream.read_exact(&mut answer)?;
    fleetwatch_protocol::wire::decode_response(&answer)
        .map_err(|_| invalid("the answer did not decode"))
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
            if probe_status(path, std::time::Duration::from_secs(2)).is_ok() {
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
