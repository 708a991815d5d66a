//! Who may call an Epiphan tool, checked over the whole workspace's sources.
//!
//! Only the MCP client core (`epiphan/src`) makes an MCP tool call (the JSON-RPC method that
//! calls a tool, or an MCP library's function for it: see the needles below); the simulator, which serves tools, and the
//! integration tests of the core and the sign-in crate, which drive the simulator or a scripted
//! server, are the only other places that name one. Only two places call the core: the
//! assistant's guarded reader, which may only read, and the executor's client, which also
//! holds the one write. A third call site of any of these fails here.

mod common;

use std::path::{Path, PathBuf};

// Built from parts so this file does not match itself.
/// An MCP library's tool call.
const NEEDLE: &str = concat!("call", "_tool");
/// MCP's tool call method, as a hand-made request would name it.
const METHOD: &str = concat!("tools", "/call");
/// The core's bounded read.
const CORE_READ: &str = concat!("call", "_read");
/// The core's once-only write.
const CORE_WRITE: &str = concat!("call", "_write_once");

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

fn allowed(needle: &str, relative: &Path, text: &str) -> bool {
    let core = relative.starts_with("epiphan/src");
    // The core's own integration tests call it against the simulator and a scripted server;
    // they are never built into a binary that reaches Epiphan.
    let core_tests = relative.starts_with("epiphan/tests");
    match needle {
        NEEDLE | METHOD => {
            core || core_tests || relative.starts_with("sim")
                // The sign-in crate's integration tests drive the simulator with a plain MCP
                // client.
                || relative.starts_with("signin/tests")
        }
        CORE_READ => {
            core || core_tests
                || relative == Path::new("assistant/src/reads.rs")
                || relative == Path::new("executor/src/epiphan.rs")
        }
        // The assistant never writes: only the executor's client may name the write. The
        // assistant's read client names it once, in a `compile_fail` doc test showing that a
        // write there does not compile (the write takes a permit only the executor can make).
        _ => {
            core || core_tests
                || relative == Path::new("executor/src/epiphan.rs")
                || relative == Path::new("assistant/src/reads.rs") && only_in_compile_fail_doc(text)
        }
    }
}

/// Whether every mention of the core's write in `text` sits in a `compile_fail` doc example.
fn only_in_compile_fail_doc(text: &str) -> bool {
    let mut in_compile_fail = false;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("//! ```") || trimmed.starts_with("/// ```") {
            in_compile_fail = !in_compile_fail && trimmed.ends_with("compile_fail");
            continue;
        }
        if line.contains(CORE_WRITE) && !in_compile_fail {
            return false;
        }
    }
    true
}

fn offenders(root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(root, &mut files);
    let mut found = Vec::new();
    for path in &files {
        let Some(relative) = path.strip_prefix(root).ok() else {
            continue;
        };
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        for needle in [NEEDLE, METHOD, CORE_READ, CORE_WRITE] {
            if text.contains(needle) && !allowed(needle, relative, &text) {
                found.push(format!("{} ({needle})", relative.display()));
            }
        }
    }
    found.sort();
    found
}

#[test]
fn no_third_place_calls_a_tool() {
    let root = common::root();
    let found = offenders(&root);
    assert!(
        found.is_empty(),
        "tool calls outside the allowed places: {found:?}"
    );
    // Positive control: the allowed places really do contain them, so the scan sees files.
    let read = |p: &str| std::fs::read_to_string(root.join(p)).unwrap();
    assert!(read("epiphan/src/session.rs").contains(NEEDLE));
    assert!(read("epiphan/src/session.rs").contains(METHOD));
    assert!(read("assistant/src/reads.rs").contains(CORE_READ));
    assert!(only_in_compile_fail_doc(&read("assistant/src/reads.rs")));
    assert!(read("executor/src/epiphan.rs").contains(CORE_WRITE));
}

#[test]
fn the_scan_catches_a_planted_call() {
    let dir = tempfile::tempdir().unwrap();
    for sub in ["assistant/src", "executor/src", "epiphan/src"] {
        std::fs::create_dir_all(dir.path().join(sub)).unwrap();
    }
    let plant = |path: &str, text: String| std::fs::write(dir.path().join(path), text).unwrap();
    plant(
        "epiphan/src/session.rs",
        format!("fn a() {{ peer.{NEEDLE}_once(p); }} fn {CORE_READ}() {{}} fn {CORE_WRITE}() {{}}"),
    );
    plant(
        "assistant/src/reads.rs",
        format!("fn a() {{ session.{CORE_READ}(t, a, b); }}"),
    );
    plant(
        "executor/src/epiphan.rs",
        format!("fn a() {{ s.{CORE_READ}(t); s.{CORE_WRITE}(t); }}"),
    );
    assert!(offenders(dir.path()).is_empty());

    // A raw tool call in the page, a write from the reader, a read from elsewhere in the
    // executor: each is named.
    plant(
        "assistant/src/page.rs",
        format!("fn b() {{ client.{NEEDLE}(write); }}"),
    );
    plant(
        "assistant/src/reads.rs",
        format!("fn a() {{ session.{CORE_READ}(t); session.{CORE_WRITE}(t); }}"),
    );
    plant(
        "executor/src/describe.rs",
        format!("fn c() {{ session.{CORE_READ}(t); }}"),
    );
    // A hand-made MCP request outside the core.
    plant(
        "executor/src/checks.rs",
        format!("fn d() {{ json!({{\"method\": \"{METHOD}\"}}); }}"),
    );
    assert_eq!(
        offenders(dir.path()),
        vec![
            format!("assistant/src/page.rs ({NEEDLE})"),
            format!("assistant/src/reads.rs ({CORE_WRITE})"),
            format!("executor/src/checks.rs ({METHOD})"),
            format!("executor/src/describe.rs ({CORE_READ})"),
        ]
    );
}
