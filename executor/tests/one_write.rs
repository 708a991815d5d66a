//! The executor has exactly one way to write, and it takes the last check's ticket.
//!
//! The type system does most of it: `WriteTicket` has private fields and no `Clone`, `Copy`
//! or `Default`, so only `checks::last_reads` can make one, and `Epiphan::write_once` takes it
//! by value. What the types cannot see is a second path around them — code that opens an MCP
//! session of its own, or calls the core's write with any tool name it likes. This scan of the
//! executor's sources closes that: it fails when a second write path appears.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::{Path, PathBuf};

// Built from parts so this file does not match itself.
const RMCP_CALL: &str = concat!("call", "_tool");
const CORE_WRITE: &str = concat!("call", "_write_once");
const CORE_CRATE: &str = concat!("fleetwatch", "_epiphan");
const TICKET: &str = concat!("Write", "Ticket");
const INTO_CALL: &str = concat!("into", "_call(");

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `(file name relative to src, text)` for every source file.
fn sources(src: &Path) -> Vec<(String, String)> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    files
        .iter()
        .map(|p| {
            (
                p.strip_prefix(src).unwrap().display().to_string(),
                std::fs::read_to_string(p).unwrap(),
            )
        })
        .collect()
}

/// The `fn` declaration (name and parameters, up to the body) that encloses byte `at`.
fn enclosing_fn(text: &str, at: usize) -> &str {
    let start = text[..at].rfind("fn ").expect("inside a function");
    let end = text[start..].find('{').map_or(text.len(), |e| start + e);
    &text[start..end]
}

/// Every way the sources hold a write path other than the ticket-consuming one.
fn second_write_paths(src: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    let mut writes = Vec::new();
    for (file, text) in sources(src) {
        if text.contains(RMCP_CALL) {
            problems.push(format!("{file} calls an MCP tool directly"));
        }
        if file != "epiphan.rs" && text.contains(CORE_CRATE) {
            problems.push(format!(
                "{file} names the MCP core (only epiphan.rs may open sessions)"
            ));
        }
        for (at, _) in text.match_indices(CORE_WRITE) {
            writes.push((file.clone(), enclosing_fn(&text, at).to_string()));
        }
        if file != "checks.rs" && text.contains(&format!("{TICKET} {{")) {
            problems.push(format!("{file} builds a {TICKET} outside the checks"));
        }
        if !matches!(file.as_str(), "checks.rs" | "epiphan.rs") && text.contains(INTO_CALL) {
            problems.push(format!("{file} unpacks a {TICKET}"));
        }
        if file == "checks.rs" {
            let def = text
                .find(&format!("pub struct {TICKET}"))
                .expect("the ticket is defined in checks.rs");
            let before = text[..def].trim_end().lines().last().unwrap_or_default();
            if before.trim_start().starts_with("#[derive") {
                problems.push(format!("{TICKET} derives traits: {before}"));
            }
            for t in ["Clone", "Copy", "Default"] {
                if text.contains(&format!("impl {t} for {TICKET}")) {
                    problems.push(format!("{TICKET} implements {t}"));
                }
            }
        }
    }
    match writes.as_slice() {
        [(file, signature)] => {
            let consumes = signature.starts_with("fn write_once(")
                && signature.contains(&format!("ticket: {TICKET}"));
            if file != "epiphan.rs" || !consumes {
                problems.push(format!(
                    "the write is sent from {file} in `{signature}`, which does not consume a {TICKET}"
                ));
            }
        }
        [] => problems.push("no write found: the scan no longer sees the sources".into()),
        more => problems.push(format!(
            "{} places send a write: {:?}",
            more.len(),
            more.iter()
                .map(|(f, s)| format!("{f}: {s}"))
                .collect::<Vec<_>>()
        )),
    }
    problems
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn the_only_write_consumes_the_ticket() {
    let problems = second_write_paths(&src());
    assert!(problems.is_empty(), "{problems:#?}");
}

/// A copy of the real sources with one file changed.
fn planted(file: &str, change: impl Fn(String) -> String) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in sources(&src()) {
        let path = dir.path().join(&name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let text = if name == file { change(text) } else { text };
        std::fs::write(path, text).unwrap();
    }
    second_write_paths(dir.path())
}

#[test]
fn a_second_write_path_is_caught() {
    // A general "write any tool" beside the ticketed one.
    let found = planted("epiphan.rs", |t| {
        t + &format!(
            "\nimpl Epiphan {{ pub async fn write_any(&self, tool: &str) {{ \
             self.current().{CORE_WRITE}(tool, Map::new(), Duration::ZERO).await; }} }}\n"
        )
    });
    assert!(
        found.iter().any(|p| p.contains("2 places send a write")),
        "{found:#?}"
    );
    // A module opening a session of its own.
    let found = planted("describe.rs", |t| {
        t + &format!("\nfn own() {{ let _ = {CORE_CRATE}::http_client(); }}\n")
    });
    assert!(
        found
            .iter()
            .any(|p| p.contains("describe.rs names the MCP core")),
        "{found:#?}"
    );
    // The ticketed function no longer taking the ticket.
    let found = planted("epiphan.rs", |t| {
        t.replace(&format!("ticket: {TICKET}"), "ticket: &str")
    });
    assert!(
        found.iter().any(|p| p.contains("does not consume")),
        "{found:#?}"
    );
    // A ticket that can be copied, or made elsewhere, or unpacked elsewhere.
    let found = planted("checks.rs", |t| {
        t.replace(
            &format!("pub struct {TICKET} {{"),
            &format!("#[derive(Clone)]\npub struct {TICKET} {{"),
        )
    });
    assert!(
        found.iter().any(|p| p.contains("derives traits")),
        "{found:#?}"
    );
    let found = planted("execute.rs", |t| {
        t + &format!("\nfn forge() {{ let _ = {TICKET} {{ }}; }}\n")
    });
    assert!(
        found.iter().any(|p| p.contains("execute.rs builds")),
        "{found:#?}"
    );
    let found = planted("execute.rs", |t| {
        t + &format!("\nfn peek(t: T) {{ t.{INTO_CALL}); }}\n")
    });
    assert!(
        found.iter().any(|p| p.contains("execute.rs unpacks")),
        "{found:#?}"
    );
    // And a raw MCP call anywhere.
    let found = planted("reads.rs", |t| t + &format!("\n// peer.{RMCP_CALL}(p)\n"));
    assert!(
        found
            .iter()
            .any(|p| p.contains("reads.rs calls an MCP tool")),
        "{found:#?}"
    );
}
