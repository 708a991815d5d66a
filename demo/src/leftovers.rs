//! Leftovers: the children and the folder, stopped and removed however the demo ends.

use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a child gets to stop after SIGTERM before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// A child process the demo started.
struct Started {
    name: &'static str,
    child: Child,
    log: PathBuf,
}

/// Everything the demo made outside its own memory.
pub(crate) struct Leftovers {
    folder: PathBuf,
    children: Vec<Started>,
}

impl Leftovers {
    /// Makes `$TMPDIR/fleetwatch-demo-<random>` with mode 0700, created exclusively so a folder
    /// someone else prepared is never used.
    pub(crate) fn new() -> std::io::Result<Leftovers> {
        let base = std::env::temp_dir();
        let mut last = None;
        for _ in 0..8 {
            let mut bytes = [0u8; 6];
            getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
            let hex = fleetwatch_protocol::hex::encode(&bytes);
            let folder = base.join(format!("fleetwatch-demo-{hex}"));
            match std::fs::DirBuilder::new().mode(0o700).create(&folder) {
                Ok(()) => {
                    return Ok(Leftovers {
                        folder,
                        children: Vec::new(),
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| std::io::Error::other("no free folder name")))
    }

    /// The demo's own folder, `$TMPDIR/fleetwatch-demo-<random>`.
    pub(crate) fn folder(&self) -> &Path {
        &self.folder
    }

    /// A private subfolder (0700).
    pub(crate) fn subfolder(&self, name: &str) -> Result<PathBuf, String> {
        let path = self.folder.join(name);
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(path)
    }

    /// Starts a child with a cleared environment (PATH plus `env`), its standard error to a
    /// log file in the folder and its standard output to `stdout` (or nowhere).
    pub(crate) fn spawn(
        &mut self,
        name: &'static str,
        program: &Path,
        args: &[&str],
        env: &[(&str, String)],
        stdout: Option<&Path>,
    ) -> Result<u32, String> {
        let log = self.folder.join(format!("{}.log", name.replace(' ', "-")));
        let stderr = private_file(&log)?;
        let out = match stdout {
            Some(path) => Stdio::from(private_file(path)?),
            None => Stdio::null(),
        };
        let mut command = Command::new(program);
        command
            .args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(stderr);
        for (key, value) in env {
            command.env(key, value);
        }
        let child = command
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", program.display()))?;
        let pid = child.id();
        self.children.push(Started { name, child, log });
        Ok(pid)
    }

    /// Fails with the child's own words if it has exited.
    pub(crate) fn check_alive(&mut self, name: &str) -> Result<(), String> {
        let Some(started) = self.children.iter_mut().find(|c| c.name == name) else {
            return Err(format!("{name} was never started"));
        };
        match started.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => {
                let log = std::fs::read_to_string(&started.log).unwrap_or_default();
                let tail: Vec<&str> = log.lines().rev().take(8).collect();
                let tail: Vec<&str> = tail.into_iter().rev().collect();
                Err(format!(
                    "{name} exited ({status}):\n{}",
                    if tail.is_empty() {
                        "(no output)".to_owned()
                    } else {
                        tail.join("\n")
                    }
                ))
            }
            Err(e) => Err(format!("{name}: {e}")),
        }
    }
}

impl Drop for Leftovers {
    fn drop(&mut self) {
        // Newest first: the executor talks to the simulator, so it goes before it.
        while let Some(mut started) = self.children.pop() {
            stop_child(&mut started.child);
        }
        if let Err(e) = std::fs::remove_dir_all(&self.folder)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            eprintln!(
                "fleetwatch demo: could not remove {}: {e}",
                self.folder.display()
            );
        }
    }
}

/// SIGTERM, a grace period, then SIGKILL; always reaped, so no zombie outlives the demo.
fn stop_child(child: &mut Child) {
    if matches!(child.try_wait(), Ok(Some(_))) {
        return;
    }
    let pid = i32::try_from(child.id())
        .ok()
        .and_then(rustix::process::Pid::from_raw);
    if let Some(pid) = pid {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        let deadline = Instant::now() + STOP_GRACE;
        while Instant::now() < deadline {
            if matches!(child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Creates a file only this user can read, replacing nothing.
pub(crate) fn private_file(path: &Path) -> Result<std::fs::File, String> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Writes a new private file and syncs it.
pub(crate) fn write_private(path: &Path, contents: &str) -> Result<(), String> {
    let mut file = private_file(path)?;
    file.write_all(contents.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|e| format!("{}: {e}", path.display()))
}
#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    #[test]
    fn the_leftovers_guard_removes_its_folder() {
        let leftovers = Leftovers::new().unwrap();
        let folder = leftovers.folder().to_path_buf();
        let meta = std::fs::metadata(&folder).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o700);
        let sub = leftovers.subfolder("x").unwrap();
        write_private(&sub.join("f"), "secret").unwrap();
        assert_eq!(
            std::fs::metadata(sub.join("f"))
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o600
        );
        drop(leftovers);
        assert!(!folder.exists());
    }

    #[test]
    fn the_leftovers_guard_stops_its_children() {
        let mut leftovers = Leftovers::new().unwrap();
        let pid = leftovers
            .spawn(
                "sleeper",
                Path::new("/bin/sh"),
                &["-c", "sleep 600"],
                &[],
                None,
            )
            .unwrap();
        assert!(Path::new(&format!("/proc/{pid}")).exists());
        drop(leftovers);
        assert!(!Path::new(&format!("/proc/{pid}")).exists());
    }
}
