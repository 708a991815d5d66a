//! `fleetwatch doctor` as a process: OK/WARN/FAIL lines and exit 1 on any FAIL.

mod common;

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::{Command, Output};

use fleetwatch_sim::SimConfig;

fn doctor(state: &Path, env: &[(&str, String)]) -> (Output, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fleetwatch"));
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("FLEETWATCH_POLICY", common::policy_path())
        .env("FLEETWATCH_STATE_DIR", state);
    for (k, v) in env {
        cmd.env(k, v);
    }
    // No unit and an empty environment file: only this test's settings, whatever this machine
    // has installed.
    let site = state.join("none.env");
    std::fs::write(&site, "").unwrap();
    let out = cmd
        .arg("doctor")
        .arg("--unit")
        .arg(state.join("none.service"))
        .arg("--env-file")
        .arg(&site)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    (out, text)
}

fn line<'a>(text: &'a str, name: &str) -> &'a str {
    text.lines()
        .find(|l| {
            l.get(5..)
                .is_some_and(|rest| rest.starts_with(&format!("{name}:")))
        })
        .unwrap_or_else(|| panic!("no {name} line in:\n{text}"))
}

fn private_state() -> tempfile::TempDir {
    let state = tempfile::tempdir().unwrap();
    std::fs::set_permissions(state.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    state
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_complete_installation_passes() {
    let sim = fleetwatch_sim::start(SimConfig::demo()).await.unwrap();
    let sandbox = sim.team_devices("sandbox");
    let state = private_state();
    std::fs::write(state.path().join("settings.yaml"), "autonomy: propose\n").unwrap();
    fleetwatch::grants::open(state.path(), &common::policy(), "fleet").unwrap();
    let key = fleetwatch::keys::ApproverKey::load_or_create(state.path()).unwrap();
    let executor = common::Executor::start(&sim.mcp_url(), &sandbox, None, &[key.key_line()]).await;
    let env = [
        ("FLEETWATCH_EPIPHAN_TOKEN", "normal-token".to_owned()),
        ("FLEETWATCH_WRITE_DEVICE_IDS", sandbox.join(",")),
        (
            "FLEETWATCH_EXECUTOR_SOCKET",
            executor.socket.display().to_string(),
        ),
    ];
    let (out, text) = doctor(state.path(), &env);
    assert!(out.status.success(), "{text}");
    for name in [
        "policy",
        "read-only guard",
        "redaction",
        "sign-in",
        "fence",
        "executor",
        "signing key",
        "grants",
        "queue",
    ] {
        assert!(line(&text, name).starts_with("OK"), "{name}: {text}");
    }
    assert!(line(&text, "executor").contains(&key.key_id().to_hex()));
    assert!(line(&text, "model").contains("off"));
    assert!(line(&text, "autonomy").contains("propose"));

    // A model key: data leaves the machine, and doctor says so.
    let mut with_model = env.to_vec();
    with_model.push((
        "FLEETWATCH_ANTHROPIC_API_KEY",
        "sk-ant-test-doctor".to_owned(),
    ));
    let (out, text) = doctor(state.path(), &with_model);
    assert!(out.status.success(), "{text}");
    assert!(line(&text, "model").starts_with("WARN"));
    assert!(line(&text, "model").contains("Anthropic"));
    assert!(!text.contains("sk-ant-test-doctor"));

    // Our key missing from the executor while proposing is on: FAIL.
    let other = common::Executor::start(&sim.mcp_url(), &sandbox, None, &[]).await;
    let mut env2 = env.to_vec();
    env2[2].1 = other.socket.display().to_string();
    let (out, text) = doctor(state.path(), &env2);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(line(&text, "executor").starts_with("FAIL"));
    assert!(line(&text, "executor").contains("keys show"));
    sim.shutdown().await;
}

/// Step 6 as the README writes it: doctor run with a clean environment reads the installed
/// unit and the environment file it names, as the service does, and says where each setting
/// came from; a shell value the service would not see is a warning.
#[test]
fn doctor_reads_the_settings_the_service_runs_with() {
    let state = private_state();
    let etc = tempfile::tempdir().unwrap();
    let site = etc.path().join("fleetwatch.env");
    std::fs::write(&site, "# site\nFLEETWATCH_WRITE_TEAM_ID=\"sandbox-team\"\n").unwrap();
    let unit = etc.path().join("fleetwatch.service");
    std::fs::write(
        &unit,
        format!(
            "[Service]\nEnvironment=FLEETWATCH_STATE_DIR={}\nEnvironment=FLEETWATCH_POLICY={}\n\
             Environment=FLEETWATCH_EXECUTOR_SOCKET={}\nEnvironmentFile=-{}\n",
            state.path().display(),
            common::policy_path().display(),
            state.path().join("none.sock").display(),
            site.display()
        ),
    )
    .unwrap();
    let run = |extra: &[(&str, &str)]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_fleetwatch"));
        cmd.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default());
        for (k, v) in extra {
            cmd.env(k, v);
        }
        let out = cmd.arg("doctor").arg("--unit").arg(&unit).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let text = run(&[]);
    assert!(line(&text, "fence").starts_with("OK"), "{text}");
    assert!(line(&text, "fence").contains("sandbox-team"), "{text}");
    let settings = line(&text, "settings");
    assert!(settings.starts_with("OK"), "{text}");
    assert!(
        settings.contains(&format!(
            "FLEETWATCH_WRITE_TEAM_ID (from {})",
            site.display()
        )) && settings.contains(&format!("FLEETWATCH_STATE_DIR (from {})", unit.display())),
        "{settings}"
    );
    // A value only this shell has: the service does not see it.
    let text = run(&[("FLEETWATCH_WRITE_TEAM_ID", "another-team")]);
    let settings = line(&text, "settings");
    assert!(settings.starts_with("WARN"), "{text}");
    assert!(settings.contains("uses the value from"), "{settings}");
}

#[test]
fn no_fence_no_sign_in_and_no_executor_fail() {
    let state = private_state();
    let (out, text) = doctor(
        state.path(),
        &[(
            "FLEETWATCH_EXECUTOR_SOCKET",
            state.path().join("none.sock").display().to_string(),
        )],
    );
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(line(&text, "fence").starts_with("FAIL"));
    assert!(line(&text, "sign-in").starts_with("FAIL"));
    // Read-only: a missing executor is a warning, not a failure.
    assert!(line(&text, "executor").starts_with("WARN"));
    assert!(line(&text, "grants").starts_with("WARN"));
    assert!(line(&text, "read-only guard").starts_with("OK"));
    assert!(line(&text, "redaction").starts_with("OK"));
}

#[test]
fn a_readable_token_file_fails() {
    let state = private_state();
    let token = state.path().join(fleetwatch::reads::TOKEN_FILE);
    std::fs::write(&token, "normal-token").unwrap();
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (out, text) = doctor(
        state.path(),
        &[("FLEETWATCH_WRITE_TEAM_ID", "team".to_owned())],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(line(&text, "sign-in").starts_with("FAIL"));
    assert!(line(&text, "sign-in").contains("0644"), "{text}");
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    let (_, text) = doctor(
        state.path(),
        &[("FLEETWATCH_WRITE_TEAM_ID", "team".to_owned())],
    );
    assert!(line(&text, "sign-in").starts_with("OK"), "{text}");
    assert!(!text.contains("normal-token"));
}

#[test]
fn a_broken_policy_fails() {
    let state = private_state();
    let bad = state.path().join("bad.yaml");
    std::fs::write(&bad, "version: 2\n").unwrap();
    let (out, text) = doctor(
        state.path(),
        &[("FLEETWATCH_POLICY", bad.display().to_string())],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(line(&text, "policy").starts_with("FAIL"), "{text}");
}
