//! Finding the workspace's built binaries from a test, std only so other test trees can include
//! this file with `#[path]`.
//!
//! `cargo test --workspace` builds every binary before any test runs, next to the test
//! executables, as long as its package has an integration test of its own (cargo builds a
//! package's binaries for those only; `docs_consistency.rs` holds every member to it). A filtered run (`cargo test -p fleetwatch-e2e`) does not, and may leave an
//! older binary there. So a binary is used as it is when it is newer than every source file of
//! the workspace, and built with `cargo build -p PACKAGE --bin NAME` otherwise.
//!
//! Why not build every time: `cargo build -p PACKAGE` unifies features for that package alone,
//! which differs from the whole-workspace test build, so even a "no-op" build compiles a second
//! copy of the dependency graph (gigabytes of disk, minutes of two cores) and overwrites the
//! binary the workspace build made.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};
use std::time::SystemTime;

/// The folder the running test executable's binaries sit in (`target/<profile>`).
fn profile_dir() -> PathBuf {
    // target/<profile>/deps/<test-hash> → target/<profile>
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent()?.parent().map(Path::to_path_buf))
        .unwrap_or_default()
}

/// The newest modification time of anything a binary is built from: every workspace member's
/// `Cargo.toml`, `src/` and `templates/`, and the root `Cargo.toml` and `Cargo.lock`.
/// Members are the root's subfolders with a `Cargo.toml` (the fuzz workspace excluded).
pub fn newest_source(root: &Path) -> Option<SystemTime> {
    let mut newest = None;
    let mut note = |path: &Path| {
        if let Ok(modified) = path.metadata().and_then(|m| m.modified()) {
            newest = newest.max(Some(modified));
        }
    };
    note(&root.join("Cargo.toml"));
    note(&root.join("Cargo.lock"));
    let Ok(entries) = std::fs::read_dir(root) else {
        return newest;
    };
    let mut pending: Vec<PathBuf> = Vec::new();
    for entry in entries.flatten() {
        let member = entry.path();
        let manifest = member.join("Cargo.toml");
        if !manifest.is_file() || entry.file_name() == "fuzz" {
            continue;
        }
        note(&manifest);
        pending.push(member.join("src"));
        pending.push(member.join("templates"));
    }
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                note(&path);
            }
        }
    }
    newest
}

/// The binary `name` of workspace package `package`, built first when it is missing or older
/// than the workspace's sources. Panics (failing the test) when it cannot be built.
pub fn workspace_binary(root: &Path, package: &str, name: &str) -> PathBuf {
    fresh_binary(root, &profile_dir(), &[], package, name)
}

/// Like [`workspace_binary`] for the binary in `dir` built with `build_args` (for example
/// `["--profile", "deploy"]` for `target/deploy`).
pub fn fresh_binary(
    root: &Path,
    dir: &Path,
    build_args: &[&str],
    package: &str,
    name: &str,
) -> PathBuf {
    static CHECKED: OnceLock<Mutex<Vec<PathBuf>>> = OnceLock::new();
    let path = dir.join(name);
    let checked = CHECKED.get_or_init(|| Mutex::new(Vec::new()));
    let mut checked = checked.lock().unwrap_or_else(|p| p.into_inner());
    if !checked.contains(&path) {
        let built = path.metadata().and_then(|m| m.modified()).ok();
        let stale = match (built, newest_source(root)) {
            (Some(built), Some(source)) => built < source,
            (Some(_), None) => false,
            (None, _) => true,
        };
        if stale {
            eprintln!("building {name}…");
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let status = Command::new(cargo)
                .args(["build", "-q"])
                .args(build_args)
                .args(["-p", package, "--bin", name])
                .current_dir(root)
                .status();
            assert!(
                status.is_ok_and(|s| s.success()),
                "could not build {name} (cargo build {} -p {package} --bin {name})",
                build_args.join(" ")
            );
        }
        checked.push(path.clone());
    }
    assert!(path.is_file(), "{} missing after the build", path.display());
    path
}
