//! Fault injection for the reliability tests and the bench: a size-limited tmpfs for a state
//! folder, filling it to the last byte, idle socket connections, running a binary under
//! `faketime`, and reading a process's memory figures from `/proc`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Whether a test that needs root (mounting a tmpfs) must fail rather than skip when it cannot
/// mount. On by default, because CI runs as root; `FLEETWATCH_REQUIRE_ROOT=0` turns it off on a
/// developer machine.
pub fn root_required() -> bool {
    std::env::var("FLEETWATCH_REQUIRE_ROOT").map_or(true, |v| v.trim() != "0")
}

/// A tmpfs mounted over a folder, unmounted when dropped.
pub struct Tmpfs {
    path: PathBuf,
}

impl Tmpfs {
    /// Mounts a tmpfs of `size_bytes` over `path` (which must exist), owned by the caller with
    /// mode 0700. Whatever `path` held is hidden until the unmount.
    pub fn mount(path: &Path, size_bytes: u64) -> Result<Tmpfs, String> {
        let uid = rustix::process::getuid().as_raw();
        if uid != 0 {
            return Err(format!(
                "mounting a tmpfs needs root (running as uid {uid}); run as root, or set FLEETWATCH_REQUIRE_ROOT=0 to skip"
            ));
        }
        let gid = rustix::process::getgid().as_raw();
        let output = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size_bytes},mode=0700,uid={uid},gid={gid}"),
                "tmpfs",
            ])
            .arg(path)
            .output()
            .map_err(|e| format!("could not run mount: {e}"))?;
        if !output.status.success() {
            return Err(format!(
                "mount -t tmpfs over {} failed: {}; run as root in a container that allows mounts, or set FLEETWATCH_REQUIRE_ROOT=0 to skip",
                path.display(),
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        }
        Ok(Tmpfs {
            path: path.to_path_buf(),
        })
    }

    /// The mount point.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        // Lazy, so a process that still holds a file there (a killed executor not yet reaped)
        // cannot keep the mount alive after the test.
        let _ = Command::new("umount").arg("-l").arg(&self.path).status();
    }
}

/// Writes zeros into `dir/name` until the file system says it is full; returns the file's path
/// and how many bytes fitted. Each chunk is smaller than the last so the last free block is
/// taken too.
pub fn fill(dir: &Path, name: &str) -> std::io::Result<(PathBuf, u64)> {
    let path = dir.join(name);
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)?;
    let mut written = 0u64;
    let mut chunk = 64 * 1024;
    let zeros = vec![0u8; chunk];
    while chunk > 0 {
        match file.write(zeros.get(..chunk).unwrap_or_default()) {
            Ok(0) => chunk /= 2,
            Ok(n) => written += n as u64,
            Err(e) if e.raw_os_error() == Some(28) => chunk /= 2,
            Err(e) => return Err(e),
        }
    }
    let _ = file.sync_all();
    Ok((path, written))
}

/// Opens `n` connections to a Unix socket and sends nothing on them; they stay open while the
/// returned streams live (or until the server closes them).
pub async fn idle_connections(socket: &Path, n: usize) -> Vec<tokio::net::UnixStream> {
    let mut streams = Vec::with_capacity(n);
    for _ in 0..n {
        if let Ok(s) = tokio::net::UnixStream::connect(socket).await {
            streams.push(s);
        }
    }
    streams
}

/// How many of the streams the server has closed (a read returns end of file or an error
/// without blocking).
pub async fn closed_by_server(streams: &mut [tokio::net::UnixStream]) -> usize {
    use tokio::io::AsyncReadExt;
    let mut closed = 0;
    for s in streams.iter_mut() {
        let mut buf = [0u8; 64];
        // Any answer (a refusal frame) followed by end of file counts as closed.
        let mut ended = false;
        while let Ok(Ok(n)) =
            tokio::time::timeout(Duration::from_millis(20), s.read(&mut buf)).await
        {
            if n == 0 {
                ended = true;
                break;
            }
        }
        if ended {
            closed += 1;
        }
    }
    closed
}

/// libfaketime, when Debian's `faketime` package is installed.
pub fn libfaketime() -> Option<PathBuf> {
    let lib = std::fs::read_dir("/usr/lib")
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path().join("faketime/libfaketime.so.1"))
        .find(|p| p.is_file());
    lib.or_else(|| {
        let p = PathBuf::from("/usr/lib/faketime/libfaketime.so.1");
        p.is_file().then_some(p)
    })
}

/// Makes `cmd` run with its wall clock moved by `offset` (libfaketime syntax: `+10m`, `-10m`).
/// This is what the `faketime -f OFFSET` wrapper does, minus the wrapper process: preloaded
/// into the program itself, a SIGKILL reaches the program and not just the wrapper. The
/// monotonic clock is left alone, so timeouts stay real and only the wall clock moves.
pub fn under_faketime(lib: &Path, offset: &str, cmd: &mut Command) {
    cmd.env("LD_PRELOAD", lib)
        .env("FAKETIME", offset)
        .env("FAKETIME_DONT_FAKE_MONOTONIC", "1")
        .env("FAKETIME_NO_CACHE", "1");
}

/// A `kB` field of `/proc/<pid>/status` (`VmRSS`, `VmHWM`, …), in KiB.
pub fn proc_status_kib(pid: &str, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
}
