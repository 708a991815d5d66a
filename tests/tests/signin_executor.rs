//! The executor's OAuth sandbox sign-in against the simulator, with real processes: the login
//! driven through the printed address (a test stands in for the browser), the callback's path
//! and state checks, the overlap and empty-team refusals, renewal before expiry, one rotation
//! when two processes share the slot, a refused renewal killing the slot (serve exits 78, no
//! further token requests), a 503 not killing it, logout, doctor, and no token in any output.

use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use fleetwatch_e2e::{Harness, Setup, sandbox_devices};
use fleetwatch_sim::{SimConfig, TeamConfig, TeamSource};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

fn known_devices(h: &Harness, ids: &[String]) -> PathBuf {
    let path = h.dir.path().join("known-devices.json");
    std::fs::write(&path, json!({"device_ids": ids}).to_string()).unwrap();
    path
}

struct Finished {
    status: ExitStatus,
    output: String,
}

/// Starts `login --sandbox` with nothing on standard input (so OAuth runs) and returns the
/// child plus the authorization address it printed.
async fn start_login(h: &Harness, known: &Path) -> (Login, String) {
    let mut cmd = h.command();
    cmd.args(["login", "--sandbox", "--known-devices"])
        .arg(known)
        .env("FLEETWATCH_OAUTH_NO_BROWSER", "1")
        .env("FLEETWATCH_OAUTH_CALLBACK_PORT", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = tokio::process::Command::from(cmd).spawn().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    let url = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            let mut line = String::new();
            if stderr.read_line(&mut line).await.unwrap() == 0 {
                panic!("login ended without printing an address:\n{seen}");
            }
            seen.push_str(&line);
            if line.starts_with("http://") && line.contains("/authorize?") {
                return line.trim().to_string();
            }
        }
    })
    .await
    .expect("the address is printed");
    // Keep draining standard error so the child never blocks on a full pipe.
    let rest = tokio::spawn(async move {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text).await;
        text
    });
    (
        Login {
            child,
            printed: seen,
            rest,
        },
        url,
    )
}

struct Login {
    child: tokio::process::Child,
    printed: String,
    rest: tokio::task::JoinHandle<String>,
}

async fn finish(login: Login) -> Finished {
    let Login {
        mut child,
        printed,
        rest,
    } = login;
    let status = tokio::time::timeout(Duration::from_secs(60), child.wait())
        .await
        .expect("login finishes")
        .unwrap();
    let mut out = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        let _ = stdout.read_to_string(&mut out).await;
    }
    let rest = rest.await.unwrap_or_default();
    Finished {
        status,
        output: format!("{printed}{rest}{out}"),
    }
}

/// Plays the browser: opens the address (choosing a team) and follows the redirect back to the
/// loopback callback.
async fn consent(url: &str, team: &str) -> String {
    let page = fleetwatch_e2e::http_get(format!("{url}&team={team}"))
        .await
        .unwrap();
    assert!(page.status().is_success(), "{}", page.status());
    page.text().await.unwrap()
}

async fn oauth_login(h: &Harness, known: &Path, team: &str) -> Finished {
    let (login, url) = start_login(h, known).await;
    let page = consent(&url, team).await;
    assert!(page.contains("Signed in"), "{page}");
    finish(login).await
}

fn slot_json(h: &Harness) -> Value {
    serde_json::from_str(&std::fs::read_to_string(h.state.join("sandbox.token")).unwrap()).unwrap()
}

/// Every token the slot has held, for the leak checks.
fn tokens_of(record: &Value) -> Vec<String> {
    ["access_token", "refresh_token"]
        .iter()
        .filter_map(|k| record[k].as_str().map(str::to_string))
        .collect()
}

fn text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn sign_in_line(doctor: &str) -> String {
    doctor
        .lines()
        .find(|l| l.contains("sandbox sign-in:"))
        .unwrap_or_default()
        .to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn oauth_login_signs_in_doctor_shows_it_logout_forgets_it_and_nothing_leaks() {
    let h = Harness::prepare(Setup {
        token: None,
        ..Setup::default()
    })
    .await;
    let known = known_devices(&h, &h.sim.team_devices("normal"));
    let (login, url) = start_login(&h, &known).await;
    // The sandbox sign-in, the one that writes, asks for every scope the server lists.
    let asked = reqwest::Url::parse(&url)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == "scope")
        .map(|(_, v)| v.into_owned());
    assert_eq!(asked.as_deref(), Some("read write"), "{url}");
    let page = consent(&url, "sandbox").await;
    assert!(page.contains("Signed in"), "{page}");
    let done = finish(login).await;
    assert!(done.status.success(), "{}", done.output);
    assert!(done.output.contains("OAuth"), "{}", done.output);
    for line in ["Scopes asked for: read write", "Scopes granted: read write"] {
        assert!(done.output.contains(line), "{line}: {}", done.output);
    }
    let slot = h.state.join("sandbox.token");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&slot).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let record = slot_json(&h);
    let mut secrets = tokens_of(&record);
    assert_eq!(secrets.len(), 2);

    let doctor = h.cli(&["doctor"], None);
    let doctor = text(&doctor);
    let line = sign_in_line(&doctor);
    assert!(
        line.starts_with("OK") && line.contains("signed in through") && line.contains("expires at"),
        "{doctor}"
    );
    assert!(line.contains(&format!("{} device(s)", sandbox_devices(&h.sim).len())));
    // The executor serves Describe through the OAuth slot.
    let mut h = h;
    h.spawn();
    h.wait_ready().await;
    h.kill();
    secrets.extend(tokens_of(&slot_json(&h)));

    let out = h.cli(&["logout", "--sandbox"], None);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!slot.exists());
    assert!(
        h.state.join("executor.db").exists(),
        "logout removes only its slot"
    );
    let after = text(&h.cli(&["doctor"], None));
    assert!(sign_in_line(&after).contains("not signed in"), "{after}");

    let audit = format!("{:?}", h.audit_rows());
    for secret in &secrets {
        for (name, shown) in [
            ("login output", &done.output),
            ("doctor", &doctor),
            ("doctor after logout", &after),
            ("serve log", &h.log_text()),
            ("audit", &audit),
        ] {
            assert!(
                !shown.contains(secret.as_str()),
                "a token appeared in the {name}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn overlap_and_empty_team_refusals_keep_no_oauth_sign_in() {
    let replay = tempfile::tempdir().unwrap();
    std::fs::write(
        replay.path().join("get_devices_in_my_team.json"),
        r#"{"devices": []}"#,
    )
    .unwrap();
    let mut sim = SimConfig::demo();
    sim.teams.push(TeamConfig {
        view_only: false,
        name: "empty".into(),
        token: "empty-token".into(),
        source: TeamSource::Replay(replay.path().into()),
    });
    let h = Harness::prepare(Setup {
        token: None,
        sim,
        ..Setup::default()
    })
    .await;
    let slot = h.state.join("sandbox.token");

    // Signing in to the normal team as the sandbox overlaps the known devices.
    let known = known_devices(&h, &h.sim.team_devices("normal"));
    let done = oauth_login(&h, &known, "normal").await;
    assert!(!done.status.success());
    assert!(done.output.contains("shares"), "{}", done.output);
    assert!(!slot.exists(), "the new sign-in was not kept");

    let done = oauth_login(&h, &known, "empty").await;
    assert!(!done.status.success());
    assert!(done.output.contains("no devices"), "{}", done.output);
    assert!(!slot.exists(), "the new sign-in was not kept");
    assert!(
        !h.state.join(".sandbox.token.new").exists(),
        "the staged sign-in was forgotten"
    );
    assert_eq!(h.sim.token_calls().codes_exchanged, 2);
    assert_eq!(h.writes(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_callback_answers_only_its_path_and_refuses_a_wrong_state() {
    let h = Harness::prepare(Setup {
        token: None,
        ..Setup::default()
    })
    .await;
    let known = known_devices(&h, &h.sim.team_devices("normal"));
    let (login, url) = start_login(&h, &known).await;
    let parsed = reqwest::Url::parse(&url).unwrap();
    let redirect = parsed
        .query_pairs()
        .find(|(k, _)| k == "redirect_uri")
        .map(|(_, v)| v.into_owned())
        .unwrap();
    let base = redirect.trim_end_matches("/callback").to_string();
    assert!(base.starts_with("http://127.0.0.1:"), "{redirect}");
    let other = fleetwatch_e2e::http_get(format!("{base}/")).await.unwrap();
    assert_eq!(other.status(), 404);
    assert_eq!(other.text().await.unwrap(), "Not found.\n");
    let forged = fleetwatch_e2e::http_get(format!("{redirect}?code=sim-code-forged&state=forged"))
        .await
        .unwrap();
    assert_eq!(forged.status(), 400);
    let done = finish(login).await;
    assert!(!done.status.success());
    assert!(done.output.contains("state"), "{}", done.output);
    assert!(!h.state.join("sandbox.token").exists());
    assert_eq!(
        h.sim.token_calls().total(),
        0,
        "the forged code was never exchanged"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn renewal_before_expiry_rotates_once_for_two_processes() {
    let h = Harness::prepare(Setup {
        token: None,
        ..Setup::default()
    })
    .await;
    let known = known_devices(&h, &h.sim.team_devices("normal"));
    // Shorter than the renewal margin, so the next use renews it.
    h.sim.set_token_lifetime(Duration::from_secs(30));
    let done = oauth_login(&h, &known, "sandbox").await;
    assert!(done.status.success(), "{}", done.output);
    let before = slot_json(&h);
    // The login's own team check already renewed the 30-second token once.
    let renewed = h.sim.token_calls().refreshes;
    h.sim.set_token_lifetime(Duration::from_secs(3600));
    // Slow token answers: both processes are waiting while the first renewal is in flight.
    h.sim.set_token_delay(Duration::from_millis(800));
    let spawn = || {
        h.command()
            .arg("doctor")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    for out in [&a, &b] {
        let line = sign_in_line(&text(out));
        assert!(line.starts_with("OK"), "{}", text(out));
    }
    let calls = h.sim.token_calls();
    assert_eq!(calls.refreshes, renewed + 1, "{calls:?}");
    assert_eq!(calls.refused, 0, "{calls:?}");
    let after = slot_json(&h);
    assert_ne!(after["refresh_token"], before["refresh_token"]);
    assert!(after["expires_at"].as_i64() > before["expires_at"].as_i64());
    let mut secrets = tokens_of(&before);
    secrets.extend(tokens_of(&after));
    for s in &secrets {
        assert!(!text(&a).contains(s.as_str()) && !text(&b).contains(s.as_str()));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_renewal_kills_the_slot_and_a_503_does_not() {
    let mut h = Harness::prepare(Setup {
        token: None,
        ..Setup::default()
    })
    .await;
    let known = known_devices(&h, &h.sim.team_devices("normal"));
    h.sim.set_token_lifetime(Duration::from_secs(30));
    let done = oauth_login(&h, &known, "sandbox").await;
    assert!(done.status.success(), "{}", done.output);

    // A transient failure: the current token (30 s left) still works and the slot lives.
    h.sim.set_token_endpoint_unavailable(true);
    let doctor = text(&h.cli(&["doctor"], None));
    assert!(sign_in_line(&doctor).starts_with("OK"), "{doctor}");
    assert!(slot_json(&h)["dead"].is_null());
    assert_eq!(h.sim.token_calls().unavailable, 1);
    h.sim.set_token_endpoint_unavailable(false);

    h.sim.refuse_refresh(true);
    let doctor = text(&h.cli(&["doctor"], None));
    let line = sign_in_line(&doctor);
    assert!(
        line.starts_with("FAIL") && line.contains("dead"),
        "{doctor}"
    );
    assert_eq!(h.sim.token_calls().refused, 1);
    let record = slot_json(&h);
    assert!(
        record["dead"]["reason"].as_str().unwrap().contains("400"),
        "{record}"
    );
    assert!(tokens_of(&record).is_empty(), "a dead slot keeps no token");

    // No hammering: neither doctor nor serve asks the token endpoint again.
    let before = h.sim.token_calls().total();
    let doctor = text(&h.cli(&["doctor"], None));
    assert!(sign_in_line(&doctor).contains("dead"), "{doctor}");
    let serve = h.cli(&["serve"], None);
    assert_eq!(serve.status.code(), Some(78), "{}", text(&serve));
    assert!(text(&serve).contains("login --sandbox"), "{}", text(&serve));
    assert_eq!(h.sim.token_calls().total(), before);
    assert!(h.child.is_none());
    h.kill();

    // Signing in again brings the slot back.
    h.sim.refuse_refresh(false);
    let done = oauth_login(&h, &known, "sandbox").await;
    assert!(done.status.success(), "{}", done.output);
    assert!(slot_json(&h)["dead"].is_null());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_sandbox_login_leaves_the_sign_in_in_use_byte_for_byte() {
    let mut h = Harness::prepare(Setup::default()).await;
    h.setup.allowlist = Some(sandbox_devices(&h.sim));
    h.spawn();
    h.wait_ready().await;
    let slot = h.state.join("sandbox.token");
    let before = std::fs::read(&slot).unwrap();
    let empty = h.dir.path().join("empty.json");
    std::fs::write(&empty, r#"{"device_ids": []}"#).unwrap();
    let missing = h.dir.path().join("no-such-file.json");
    let normal = known_devices(&h, &h.sim.team_devices("normal"));
    let cases: [(&str, &Path, &str); 3] = [
        ("an empty known-devices list", &empty, "lists no devices"),
        (
            "an unreadable known-devices file",
            &missing,
            "known-devices file",
        ),
        ("a token that reaches the normal team", &normal, "shares"),
    ];
    for (case, known, says) in cases {
        let out = h.cli(
            &[
                "login",
                "--sandbox",
                "--known-devices",
                known.to_str().unwrap(),
            ],
            Some("normal-token\n"),
        );
        let shown = text(&out);
        assert!(!out.status.success(), "{case}: {shown}");
        assert!(shown.contains(says), "{case}: {shown}");
        assert_eq!(
            std::fs::read(&slot).unwrap(),
            before,
            "{case}: the slot changed"
        );
        let leftovers: Vec<_> = std::fs::read_dir(&h.state)
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            // Lock files stay by design (an empty file; see `Slot::forget`).
            .filter(|n| (n.contains(".new") || n.ends_with(".tmp")) && !n.ends_with(".lock"))
            .collect();
        assert!(leftovers.is_empty(), "{case}: {leftovers:?}");
        // The running executor still writes through the sign-in it had.
        let device = sandbox_devices(&h.sim)[0].clone();
        let claims = h
            .claims(
                "batch_recording",
                &json!({"action": "start", "device_ids": [format!("{device}-1")]}),
            )
            .await;
        let answer = h.execute(fleetwatch_e2e::sign(&claims, 7)).await;
        assert!(
            matches!(&answer, Some(fleetwatch_protocol::wire::Response::Executed(o)) if o.kind == fleetwatch_protocol::wire::OutcomeKind::Done),
            "{case}: {answer:?}"
        );
    }
    assert!(h.sim.writes().iter().all(|w| w.team == "sandbox"));
    // A token Epiphan does not know is refused the same way.
    let out = h.cli(
        &[
            "login",
            "--sandbox",
            "--known-devices",
            normal.to_str().unwrap(),
        ],
        Some("sandbox-token-2\n"),
    );
    assert!(
        !out.status.success(),
        "an unknown token is refused: {}",
        text(&out)
    );
    assert_eq!(std::fs::read(&slot).unwrap(), before);
}
