//! The executor's normal dependency graph may only hold crates listed in `executor/allowed-deps`,
//! and never a web server, a template engine or a model client.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::BTreeSet;
use std::process::Command;

fn cargo_tree(extra: &[&str]) -> String {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "tree",
            "-p",
            "fleetwatch-executor",
            "-e",
            "normal",
            "--prefix",
            "none",
        ])
        .args(extra)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Crate names in the executor's resolved normal dependency closure (for this platform).
fn resolved() -> BTreeSet<String> {
    cargo_tree(&["-f", "{p}"])
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| *n != "fleetwatch-executor")
        .map(str::to_string)
        .collect()
}

/// The executor's direct normal dependencies.
fn direct() -> BTreeSet<String> {
    cargo_tree(&["-f", "{p}", "--depth", "1"])
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| *n != "fleetwatch-executor")
        .map(str::to_string)
        .collect()
}

/// `name → reason` for every line of `executor/allowed-deps`.
fn listed() -> Vec<(String, String)> {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/allowed-deps"))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (name, reason) = l.split_once('#').unwrap_or((l, ""));
            (name.trim().to_string(), reason.trim().to_string())
        })
        .collect()
}

fn allowed() -> BTreeSet<String> {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/allowed-deps"))
        .unwrap()
        .lines()
        .map(|l| l.split('#').next().unwrap_or_default().trim())
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn every_dependency_is_listed_with_a_reason() {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/allowed-deps")).unwrap();
    for line in text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
    {
        let reason = line
            .split_once('#')
            .map(|(_, r)| r.trim())
            .unwrap_or_default();
        assert!(reason.len() > 3, "no reason given: {line}");
    }
    let resolved = resolved();
    let allowed = allowed();
    let unlisted: Vec<_> = resolved.difference(&allowed).collect();
    assert!(
        unlisted.is_empty(),
        "crates in the executor's graph but not in executor/allowed-deps: {unlisted:?}"
    );
    assert!(resolved.len() > 10, "cargo tree output was not understood");
    // A stale line would hide the next addition of that crate.
    let stale: Vec<_> = allowed.difference(&resolved).collect();
    assert!(
        stale.is_empty(),
        "executor/allowed-deps lists crates the graph no longer has: {stale:?}"
    );
    // Direct dependencies are the decisions: each says what it is for; the rest say via what.
    let direct = direct();
    assert!(direct.len() > 5, "cargo tree --depth 1 was not understood");
    for (name, reason) in listed() {
        if direct.contains(&name) {
            assert!(
                reason.starts_with("direct: ") && reason.len() > 20,
                "direct dependency {name} needs a `direct: <what it is for>` reason: {reason:?}"
            );
        } else {
            assert!(
                reason.starts_with("via "),
                "{name} is not a direct dependency; its reason says `via` what: {reason:?}"
            );
        }
    }
}

/// The redaction engine (some two thousand lines of text rules) is the assistant's: the
/// executor keeps and returns only codes, IDs and counts, so it must not link it, directly or
/// through the MCP client core or the protocol crate.
#[test]
fn the_executor_links_no_redaction_engine() {
    let resolved = resolved();
    assert!(resolved.contains("fleetwatch-protocol"), "{resolved:?}");
    assert!(
        !resolved.contains("fleetwatch-redact"),
        "the redaction crate is in the executor's graph"
    );
    let protocol = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../protocol/src/lib.rs"
    ))
    .unwrap();
    assert!(
        !protocol.contains("mod redact"),
        "the protocol crate carries a redaction module again"
    );
}

/// Only the executor makes write permits: no other member of the workspace declares the
/// permit crate but the MCP client core, whose write takes one (and which never calls its own
/// write). A crate cannot name a crate it does not declare, so a write from anywhere else
/// fails to compile (`assistant/src/reads.rs` has the `compile_fail` doc test).
#[test]
fn only_the_executor_and_the_core_declare_the_write_permit() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let workspace = std::fs::read_to_string(format!("{root}/Cargo.toml")).unwrap();
    let members: Vec<&str> = workspace
        .lines()
        .find(|l| l.starts_with("members"))
        .unwrap()
        .split('"')
        .skip(1)
        .step_by(2)
        .collect();
    assert!(members.len() > 5, "{members:?}");
    let declaring: Vec<&str> = members
        .iter()
        .copied()
        .filter(|m| {
            std::fs::read_to_string(format!("{root}/{m}/Cargo.toml"))
                .unwrap()
                .contains("fleetwatch-write-permit")
        })
        .collect();
    assert_eq!(
        declaring,
        ["write-permit", "epiphan", "executor"],
        "who declares the write permit"
    );
}

/// What the trusted base was cut down from must not come back: a general JSON Schema library
/// (and the regex engines and Unicode tables it brings), a derive-based argument parser, the
/// aws-lc C library, a log subscriber library (and its filter expressions), ICU and a general
/// MCP library.
#[test]
fn no_schema_library_clap_aws_lc_icu_or_mcp_library() {
    let resolved = resolved();
    for banned in [
        "jsonschema",
        "fancy-regex",
        "regex",
        "regex-automata",
        "clap",
        "clap_builder",
        "aws-lc-rs",
        "aws-lc-sys",
        "icu_normalizer",
        "icu_properties",
        "matchers",
        // One fixed level and one line per event, written by the executor (src/log.rs).
        "tracing-subscriber",
        // The MCP client is the core's own (epiphan/src/mcp.rs): a general MCP library's
        // session recovery and stream resumption could re-send a write.
        "rmcp",
        "sse-stream",
    ] {
        assert!(
            !resolved.contains(banned),
            "{banned} is back in the executor's graph"
        );
    }
    assert!(
        !resolved.iter().any(|n| n.starts_with("icu_")),
        "ICU tables are back (idna_adapter must stay pinned to 1.0.0)"
    );
}

#[test]
fn no_server_template_or_model_client() {
    let resolved = resolved();
    for banned in [
        "axum",
        "actix-web",
        "warp",
        "tiny_http",
        "askama",
        "maud",
        "tera",
        "handlebars",
        "minijinja",
        "async-openai",
        "anthropic",
        "fleetwatch",
        "fleetwatch-sim",
    ] {
        assert!(
            !resolved.contains(banned),
            "{banned} must not be in the executor's graph"
        );
    }
    // reqwest brings hyper and tower-http as an HTTP client; their server sides must stay off.
    let features = cargo_tree(&["-e", "features", "-f", "{p} {f}"]);
    let enabled = |krate: &str| -> BTreeSet<String> {
        features
            .lines()
            .filter(|l| l.starts_with(&format!("{krate} v")))
            .filter_map(|l| l.split_whitespace().nth(2))
            .flat_map(|f| f.split(',').map(str::to_string).collect::<Vec<_>>())
            .collect()
    };
    let within = |krate: &str, allowed: &[&str]| {
        let extra: Vec<_> = enabled(krate)
            .into_iter()
            .filter(|f| !allowed.contains(&f.as_str()))
            .collect();
        assert!(
            extra.is_empty(),
            "{krate} has features beyond its client side: {extra:?}"
        );
    };
    within("hyper", &["client", "default", "http1"]);
    within(
        "hyper-util",
        &[
            "client",
            "client-legacy",
            "client-proxy",
            "default",
            "http1",
            "tokio",
        ],
    );
    within("tower-http", &["follow-redirect", "futures-util", "tower"]);
    // rustls with the ring provider only.
    within("rustls", &["log", "logging", "ring", "std", "tls12"]);
    within(
        "reqwest",
        &["__rustls", "__tls", "json", "rustls-no-provider", "stream"],
    );
    assert!(
        enabled("reqwest").contains("json"),
        "feature listing was not understood"
    );
}
