//! Only two places in the workspace may call an MCP tool: the assistant's guarded reader and
//! the executor. A third call site (the simulator, which serves tools, excepted) fails here.

mod common;

use std::path::{Path, PathBuf};

// Built from parts so this file does not match itself.
const NEEDLE: &str = concat!("call", "_tool");

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if path.is_dir() {
            if name == "target" || name.starts_with('.') {
                continue;
            }
            rust_files(&path, out);
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

fn allowed(relative: &Path) -> bool {
    relative == Path::new("assistant/src/reads.rs")
        || relative.starts_with("executor/src")
        || relative.starts_with("sim")
        // Integration tests of a crate (for example the sign-in crate's) drive the simulator
        // with a plain MCP client; they are never built into a binary that reaches Epiphan.
        || relative.starts_with("signin/tests")
}

fn offenders(root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(root, &mut files);
    files
        .iter()
        .filter_map(|path| {
            let relative = path.strip_prefix(root).ok()?;
            let text = std::fs::read_to_string(path).ok()?;
            (text.contains(NEEDLE) && !allowed(relative)).then(|| relative.display().to_string())
        })
        .collect()
}

#[test]
fn no_third_place_calls_a_tool() {
    let root = common::root();
    let found = offenders(&root);
    assert!(
        found.is_empty(),
        "tool calls outside the two allowed places: {found:?}"
    );
    // Positive control: the allowed places really do contain it, so the scan sees files.
    let reads = std::fs::read_to_string(root.join("assistant/src/reads.rs")).unwrap();
    assert!(reads.contains(NEEDLE));
}

#[test]
fn the_scan_catches_a_planted_call() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("assistant/src")).unwrap();
    std::fs::create_dir_all(dir.path().join("executor/src")).unwrap();
    std::fs::write(
        dir.path().join("assistant/src/reads.rs"),
        format!("fn a() {{ peer.{NEEDLE}(p); }}"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("executor/src/epiphan.rs"),
        format!("fn a() {{ peer.{NEEDLE}(p); }}"),
    )
    .unwrap();
    assert!(offenders(dir.path()).is_empty());
    std::fs::write(
        dir.path().join("assistant/src/page.rs"),
        format!("fn b() {{ client.{NEEDLE}(write); }}"),
    )
    .unwrap();
    assert_eq!(
        offenders(dir.path()),
        vec!["assistant/src/page.rs".to_owned()]
    );
}
