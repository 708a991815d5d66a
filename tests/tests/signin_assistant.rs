//! `fleetwatch login` / `logout` for the normal (read) sign-in against the simulator, with the
//! real binary: OAuth through the printed address, reads renewed before expiry, doctor showing
//! the slot, a refused renewal making `serve` exit 78, and logout touching only its own slot.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use fleetwatch_e2e::{binary, workspace_root};
use fleetwatch_sim::SimConfig;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

fn command(state: &Path, mcp_url: &str) -> Command {
    let mut cmd = Command::new(binary("fleetwatch", "fleetwatch"));
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env(
            "FLEETWATCH_POLICY",
            workspace_root().join("tool_policy.yaml"),
        )
        .env("FLEETWATCH_STATE_DIR", state)
        .env("FLEETWATCH_EPIPHAN_URL", mcp_url)
        .env("FLEETWATCH_ALLOW_LOOPBACK_HTTP", "1")
        .env("FLEETWATCH_EXECUTOR_SOCKET", state.join("no-executor.sock"))
        .env("FLEETWATCH_OAUTH_NO_BROWSER", "1")
        .env("FLEETWATCH_OAUTH_CALLBACK_PORT", "0");
    cmd
}

fn text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn run(state: &Path, url: &str, args: &[&str]) -> std::process::Output {
    command(state, url)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// What one `fleetwatch login` run showed: the authorize address, everything printed, and
/// whether it succeeded.
struct LoginRun {
    address: String,
    printed: String,
    success: bool,
}

/// `fleetwatch login` with nothing piped: the OAuth flow, with this test as the browser.
async fn login_run(state: &Path, url: &str) -> LoginRun {
    let mut cmd = command(state, url);
    cmd.arg("login")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = tokio::process::Command::from(cmd).spawn().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    let address = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            let mut line = String::new();
            assert!(
                stderr.read_line(&mut line).await.unwrap() > 0,
                "no address printed:\n{seen}"
            );
            seen.push_str(&line);
            if line.starts_with("http://") && line.contains("/authorize?") {
                return line.trim().to_string();
            }
        }
    })
    .await
    .unwrap();
    // The consent page answers either way; a failed code exchange shows in the exit status.
    let _ = fleetwatch_e2e::http_get(format!("{address}&team=normal")).await;
    let status = tokio::time::timeout(Duration::from_secs(60), child.wait())
        .await
        .unwrap()
        .unwrap();
    let mut rest = String::new();
    let _ = stderr.read_to_string(&mut rest).await;
    let mut out = String::new();
    let _ = child.stdout.take().unwrap().read_to_string(&mut out).await;
    LoginRun {
        address,
        printed: format!("{seen}{rest}{out}"),
        success: status.success(),
    }
}

/// A `fleetwatch login` that must succeed; what it printed.
async fn login(state: &Path, url: &str) -> String {
    let run = login_run(state, url).await;
    assert!(run.success, "{}", run.printed);
    run.printed
}

/// The `scope` parameter of an authorize address.
fn scope_asked(address: &str) -> Option<String> {
    reqwest::Url::parse(address)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == "scope")
        .map(|(_, v)| v.into_owned())
}

/// doctor's "sign-in scopes" line.
fn scopes_line(doctor: &str) -> String {
    doctor
        .lines()
        .find(|l| l.contains("sign-in scopes"))
        .unwrap_or_else(|| panic!("no sign-in scopes line:\n{doctor}"))
        .to_string()
}

fn slot(state: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(state.join("epiphan-token")).unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn normal_sign_in_renews_shows_its_state_dies_cleanly_and_logs_out_alone() {
    let sim = fleetwatch_sim::start(SimConfig::demo()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let url = sim.mcp_url();
    sim.set_token_lifetime(Duration::from_secs(30));
    let printed = login(&state, &url).await;
    let first = slot(&state);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(state.join("epiphan-token"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o600
    );

    // A read renews the short-lived token first, then sees the normal team.
    sim.set_token_lifetime(Duration::from_secs(3600));
    let out_file = dir.path().join("known.json");
    let export = run(
        &state,
        &url,
        &["export-devices", "--out", out_file.to_str().unwrap()],
    );
    assert!(export.status.success(), "{}", text(&export));
    let known: Value = serde_json::from_str(&std::fs::read_to_string(&out_file).unwrap()).unwrap();
    assert_eq!(
        known["device_ids"].as_array().unwrap().len(),
        sim.team_devices("normal").len()
    );
    assert_eq!(sim.token_calls().refreshes, 1);
    let second = slot(&state);
    assert_ne!(first["refresh_token"], second["refresh_token"]);

    let doctor = text(&run(&state, &url, &["doctor"]));
    assert!(
        doctor.contains("signed in through") && doctor.contains("expires at"),
        "{doctor}"
    );

    // A refused renewal: the slot dies, serve exits 78 and asks nothing more.
    let mut record = second.clone();
    record["expires_at"] = Value::from(jiff::Timestamp::now().as_second() + 10);
    std::fs::write(state.join("epiphan-token"), record.to_string()).unwrap();
    sim.refuse_refresh(true);
    let export = run(
        &state,
        &url,
        &["export-devices", "--out", out_file.to_str().unwrap()],
    );
    assert!(!export.status.success());
    assert!(
        text(&export).contains("fleetwatch login"),
        "{}",
        text(&export)
    );
    assert!(slot(&state)["dead"].is_object());
    let calls = sim.token_calls().total();
    let serve = run(&state, &url, &["serve"]);
    assert_eq!(serve.status.code(), Some(78), "{}", text(&serve));
    assert!(
        text(&serve).contains("fleetwatch login"),
        "{}",
        text(&serve)
    );
    let doctor = text(&run(&state, &url, &["doctor"]));
    assert!(doctor.contains("dead"), "{doctor}");
    assert_eq!(
        sim.token_calls().total(),
        calls,
        "a dead sign-in asked again"
    );

    // Logout removes this slot and nothing else (here: the executor's slot file beside it).
    let other = state.join("sandbox.token");
    std::fs::write(&other, "sandbox-token").unwrap();
    let out = run(&state, &url, &["logout"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!state.join("epiphan-token").exists());
    assert!(other.exists());

    for secret in [&first, &second]
        .iter()
        .flat_map(|r| ["access_token", "refresh_token"].map(|k| r[k].as_str().map(str::to_string)))
        .flatten()
    {
        for shown in [&printed, &doctor, &text(&export), &text(&serve)] {
            assert!(!shown.contains(&secret), "a token leaked");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_normal_login_asks_only_to_read_and_doctor_warns_when_the_slot_can_write() {
    // The simulator's authorization server lists `read write`.
    let sim = fleetwatch_sim::start(SimConfig::demo()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let url = sim.mcp_url();
    let done = login_run(&state, &url).await;
    assert!(done.success, "{}", done.printed);
    assert_eq!(
        scope_asked(&done.address).as_deref(),
        Some("read"),
        "{}",
        done.address
    );
    for line in ["Scopes asked for: read\n", "Scopes granted: read\n"] {
        assert!(done.printed.contains(line), "{line:?}: {}", done.printed);
    }
    assert_eq!(slot(&state)["scope"], "read");
    let doctor = text(&run(&state, &url, &["doctor"]));
    let line = scopes_line(&doctor);
    assert!(
        line.contains("only reads") && !line.contains("WARN"),
        "{line}"
    );

    // A slot made with a write scope (an older login, or a server that grants more than asked).
    let mut record = slot(&state);
    record["scope"] = Value::from("read write");
    std::fs::write(state.join("epiphan-token"), record.to_string()).unwrap();
    let doctor = text(&run(&state, &url, &["doctor"]));
    let line = scopes_line(&doctor);
    assert!(
        line.contains("WARN") && line.contains("write") && line.contains("only view"),
        "{line}"
    );
    let spanish = command(&state, &url)
        .arg("doctor")
        .env("LANG", "es_ES.UTF-8")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let line = scopes_line(&text(&spanish));
    assert!(
        line.contains("WARN") && line.contains("solo pueda ver"),
        "{line}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_login_refused_mid_way_keeps_the_sign_in_in_use() {
    let sim = fleetwatch_sim::start(SimConfig::demo()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let url = sim.mcp_url();
    login(&state, &url).await;
    let before = std::fs::read(state.join("epiphan-token")).unwrap();

    // The code exchange fails after consent: the new sign-in never existed.
    sim.set_token_endpoint_unavailable(true);
    let done = login_run(&state, &url).await;
    assert!(!done.success, "{}", done.printed);
    assert!(done.printed.contains("is unchanged"), "{}", done.printed);
    assert_eq!(std::fs::read(state.join("epiphan-token")).unwrap(), before);
    sim.set_token_endpoint_unavailable(false);

    // A piped token that is not one: refused before anything is stored.
    let out = command(&state, &url)
        .arg("login")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write as _;
            child.stdin.take().unwrap().write_all(b"two words\n")?;
            child.wait_with_output()
        })
        .unwrap();
    assert!(!out.status.success(), "{}", text(&out));
    assert_eq!(std::fs::read(state.join("epiphan-token")).unwrap(), before);

    // No staged file is left behind, and the kept sign-in still reads.
    let leftovers: Vec<String> = std::fs::read_dir(&state)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".new"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let out_file = dir.path().join("known.json");
    let export = run(
        &state,
        &url,
        &["export-devices", "--out", out_file.to_str().unwrap()],
    );
    assert!(export.status.success(), "{}", text(&export));
}
