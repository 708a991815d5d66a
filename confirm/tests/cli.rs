//! `fleetwatch-confirm`'s command line, through the real binary: bad arguments are said before
//! anything listens, and `--help` tells what each command does.
//!
//! This file is also why `cargo test --workspace` builds the `fleetwatch-confirm` binary at all:
//! cargo builds a package's binaries for its integration tests only, and the demo and the
//! end-to-end tests run this one as a separate program.

#![allow(clippy::expect_used, reason = "a test fails by panicking")]

use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fleetwatch-confirm"))
        .args(args)
        .output()
        .expect("fleetwatch-confirm runs")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn bad_arguments_are_said_before_anything_listens() {
    let missing = std::env::temp_dir().join("fleetwatch-confirm-no-such-policy.yaml");
    let missing = missing.to_str().expect("a UTF-8 temporary folder");
    for (args, says) in [
        (
            &["enrol", "--person", "Ana!", "--name", "Ana"][..],
            "--person",
        ),
        (
            &["enrol", "--person", "ana", "--name", "A\u{202e}na"],
            "--name",
        ),
        (&["enrol", "--name", "Ana"], "needs --person"),
        (&["enrol", "--person", "ana"], "needs --name"),
        (
            &["enroll", "--person", "ana", "--name", "Ana"],
            "unknown command",
        ),
        (&[], "no command given"),
        (&["serve", "--port", "0"], "not a port number"),
        (&["serve", "--port", "eighty"], "not a port number"),
        (
            &["serve", "--page-origin", "http://localhost:8767/approve"],
            "is not an origin",
        ),
        (
            &["serve", "--page-origin", "javascript:alert(1)"],
            "is not an origin",
        ),
        (&["serve", "--policy", missing], missing),
        (&["serve", "--bogus"], "--bogus"),
    ] {
        let out = run(args);
        assert!(!out.status.success(), "{args:?} succeeded");
        let err = stderr(&out);
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}: {}", stdout(&out));
    }
}

#[test]
fn help_names_both_commands_and_the_defaults_serve_uses() {
    let out = run(&["--help"]);
    assert!(out.status.success());
    let text = stdout(&out);
    assert!(text.contains("enrol") && text.contains("serve"), "{text}");

    let out = run(&["enrol", "--help"]);
    assert!(out.status.success());
    let text = stdout(&out);
    assert!(
        text.contains("approvers add -") && text.contains("--person") && text.contains("--name"),
        "{text}"
    );
    assert!(
        text.contains(fleetwatch_confirm::enrol::DEFAULT_APPROVERS),
        "{text}"
    );

    let out = run(&["serve", "--help"]);
    assert!(out.status.success());
    let text = stdout(&out);
    for default in [
        fleetwatch_confirm::serve::DEFAULT_PORT.to_string(),
        fleetwatch_confirm::serve::DEFAULT_PAGE_ORIGIN.to_owned(),
        fleetwatch_confirm::serve::DEFAULT_POLICY.to_owned(),
    ] {
        assert!(
            text.contains(&default),
            "serve --help lacks {default}: {text}"
        );
    }
}
