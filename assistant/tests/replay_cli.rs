//! `fleetwatch ask --replay DIR "question"` with no key and no daemon: the binary answers in
//! process, in the question's language.

mod common;

use std::process::{Command, Output};

fn ask(args: &[&str], extra_env: &[(&str, &str)]) -> Output {
    let state = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fleetwatch"));
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("FLEETWATCH_POLICY", common::policy_path())
        .env("FLEETWATCH_STATE_DIR", state.path())
        // A socket that does not exist: the replay path must not need a daemon.
        .env("FLEETWATCH_EXECUTOR_SOCKET", state.path().join("none.sock"));
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    let out = cmd.args(args).output().unwrap();
    // The state folder is untouched by a replay try-out.
    assert_eq!(std::fs::read_dir(state.path()).unwrap().count(), 0);
    out
}

fn replay_args<'a>(dir: &'a str, question: &'a str) -> Vec<&'a str> {
    vec![
        "ask",
        "--replay",
        dir,
        "--now",
        "2026-09-24T20:00:00Z",
        question,
    ]
}

fn offline_names() -> Vec<String> {
    let text =
        std::fs::read_to_string(common::example_replay().join("get_devices_in_my_team.json"))
            .unwrap()
            .replace("{{now-48h}}", "x")
            .replace("{{now-3h}}", "x");
    let resolved = fleetwatch_protocol::fleet::resolve_templates(
        &text,
        "2026-09-24T20:00:00Z".parse().unwrap(),
    )
    .unwrap();
    let value: serde_json::Value = serde_json::from_str(&resolved).unwrap();
    value["devices"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| {
            d["Status"]
                .as_str()
                .unwrap()
                .eq_ignore_ascii_case("offline")
        })
        .map(|d| d["Name"].as_str().unwrap().to_owned())
        .collect()
}

fn online_names() -> Vec<String> {
    let text =
        std::fs::read_to_string(common::example_replay().join("get_devices_in_my_team.json"))
            .unwrap();
    let resolved = fleetwatch_protocol::fleet::resolve_templates(
        &text,
        "2026-09-24T20:00:00Z".parse().unwrap(),
    )
    .unwrap();
    let value: serde_json::Value = serde_json::from_str(&resolved).unwrap();
    value["devices"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["Status"].as_str().unwrap().eq_ignore_ascii_case("online"))
        .map(|d| d["Name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn whats_offline_in_english() {
    let dir = common::example_replay().display().to_string();
    let out = ask(&replay_args(&dir, "what's offline?"), &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let offline = offline_names();
    assert!(!offline.is_empty());
    for name in &offline {
        assert!(
            stdout.contains(name.as_str()),
            "{name} missing from: {stdout}"
        );
    }
    for name in online_names() {
        assert!(
            !stdout.contains(name.as_str()),
            "online {name} listed as offline: {stdout}"
        );
    }
    assert!(stdout.to_lowercase().contains("offline"), "{stdout}");
}

#[test]
fn que_salas_estan_desconectadas_in_spanish() {
    let dir = common::example_replay().display().to_string();
    let out = ask(&replay_args(&dir, "¿qué salas están desconectadas?"), &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for name in offline_names() {
        assert!(
            stdout.contains(name.as_str()),
            "{name} missing from: {stdout}"
        );
    }
    let lower = stdout.to_lowercase();
    assert!(
        lower.contains("desconectad") || lower.contains("sin conexi"),
        "not Spanish: {stdout}"
    );
    assert!(!lower.contains("offline"), "answered in English: {stdout}");
}

#[test]
fn no_ai_ignores_a_key_and_never_calls_a_model() {
    let dir = common::example_replay().display().to_string();
    let mut args = replay_args(&dir, "what's offline?");
    args.insert(1, "--no-ai");
    // A model URL that nothing listens on: using it would fail the turn and add a note.
    let out = ask(
        &args,
        &[
            ("FLEETWATCH_ANTHROPIC_API_KEY", "sk-ant-test-not-real"),
            ("FLEETWATCH_ANTHROPIC_BASE_URL", "http://127.0.0.1:9"),
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(!stdout.contains("Note:"), "{stdout}");
    for name in offline_names() {
        assert!(stdout.contains(name.as_str()));
    }
}

#[test]
fn a_failed_model_falls_back_to_the_keyword_answer_with_a_note() {
    let dir = common::example_replay().display().to_string();
    let out = ask(
        &replay_args(&dir, "what's offline?"),
        &[
            ("FLEETWATCH_ANTHROPIC_API_KEY", "sk-ant-test-not-real"),
            ("FLEETWATCH_ANTHROPIC_BASE_URL", "http://127.0.0.1:9"),
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("Note:"), "{stdout}");
    assert!(!stdout.contains("sk-ant-test-not-real"));
    for name in offline_names() {
        assert!(stdout.contains(name.as_str()));
    }
}

#[test]
fn a_missing_replay_folder_is_a_clear_error() {
    let out = ask(
        &["ask", "--replay", "/nonexistent/replay", "what's offline?"],
        &[],
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/replay"));
}

#[test]
fn help_lists_the_commands() {
    let out = Command::new(env!("CARGO_BIN_EXE_fleetwatch"))
        .arg("--help")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for command in [
        "ask",
        "serve",
        "doctor",
        "export-devices",
        "grants",
        "audit",
        "keys",
    ] {
        assert!(
            text.contains(command),
            "{command} missing from --help: {text}"
        );
    }
}

#[test]
fn export_devices_from_a_replay() {
    let state = tempfile::tempdir().unwrap();
    let out_path = state.path().join("known.json");
    let out = Command::new(env!("CARGO_BIN_EXE_fleetwatch"))
        .env_clear()
        .env("FLEETWATCH_POLICY", common::policy_path())
        .env("FLEETWATCH_STATE_DIR", state.path())
        .args(["export-devices", "--out"])
        .arg(&out_path)
        .arg("--replay")
        .arg(common::example_replay())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out_path).unwrap()).unwrap();
    let ids: Vec<&str> = value["device_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(!ids.is_empty());
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(ids, sorted);
    assert!(ids.contains(&"18033355501"));
}

/// A replay on a machine where nothing is installed: no FLEETWATCH_POLICY and no
/// /etc/fleetwatch/tool_policy.yaml. The registry the binary was built with serves, and
/// `--help` says so. A policy file that was named but is missing is still an error.
#[test]
fn a_replay_needs_no_installed_policy() {
    let installed = std::path::Path::new(fleetwatch::config::DEFAULT_POLICY).exists();
    let state = tempfile::tempdir().unwrap();
    let run = |policy: Option<&std::path::Path>, args: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_fleetwatch"));
        cmd.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("FLEETWATCH_STATE_DIR", state.path())
            .env("FLEETWATCH_EXECUTOR_SOCKET", state.path().join("none.sock"));
        if let Some(path) = policy {
            cmd.env("FLEETWATCH_POLICY", path);
        }
        cmd.args(args).output().unwrap()
    };
    let dir = common::example_replay();
    let dir = dir.to_str().unwrap();
    let out = run(None, &replay_args(dir, "what's offline?"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    if !installed {
        let said = String::from_utf8_lossy(&out.stdout);
        for name in offline_names() {
            assert!(said.contains(&name), "{name} missing from: {said}");
        }
    }
    let known = state.path().join("known.json");
    let out = run(
        None,
        &[
            "export-devices",
            "--out",
            known.to_str().unwrap(),
            "--replay",
            dir,
        ],
    );
    assert!(
        out.status.success() && known.exists(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let missing = state.path().join("no-such-policy.yaml");
    let out = run(Some(&missing), &replay_args(dir, "what's offline?"));
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no-such-policy.yaml"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let help = run(None, &["ask", "--help"]);
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.contains("built with") && help.contains("FLEETWATCH_POLICY"),
        "{help}"
    );
}
