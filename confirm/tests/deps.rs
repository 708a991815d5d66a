//! The receipt verifier trusts neither process: `fleetwatch-confirm` (whose `verify` checks
//! receipts) builds and runs without the assistant's or the executor's crates, and without the
//! sign-in or the MCP client either.
#![allow(clippy::expect_used, clippy::panic)]

use std::process::Command;

#[test]
fn the_verifier_links_neither_the_assistant_nor_the_executor() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "tree",
            "-p",
            "fleetwatch-confirm",
            "-e",
            "normal",
            "--prefix",
            "none",
            "-f",
            "{p}",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree = String::from_utf8_lossy(&out.stdout);
    let crates: Vec<&str> = tree
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(crates.contains(&"fleetwatch-protocol"), "{tree}");
    for forbidden in [
        "fleetwatch-assistant",
        "fleetwatch-executor",
        "fleetwatch-signin",
        "fleetwatch-epiphan",
        "fleetwatch-write-permit",
        "fleetwatch-redact",
    ] {
        assert!(
            !crates.contains(&forbidden),
            "fleetwatch-confirm links {forbidden}:\n{tree}"
        );
    }
}
