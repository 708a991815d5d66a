//! The executor's commands: truthful help, `login --sandbox` / `logout --sandbox`, `doctor`,
//! `audit verify` against tampering, `keys list`, and that the sandbox token never leaks.

use std::os::unix::fs::PermissionsExt;

use fleetwatch_e2e::{Harness, Setup, sandbox_devices, sign};
use fleetwatch_protocol::Refusal;
use fleetwatch_protocol::wire::Response;
use fleetwatch_sim::{SimConfig, TeamConfig, TeamSource};
use serde_json::json;

fn text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn help_tells_the_truth() {
    let h = Harness::prepare(Setup::default()).await;
    let top = h.cli(&["--help"], None);
    assert!(top.status.success());
    let top = text(&top);
    for word in [
        "serve", "login", "logout", "doctor", "audit", "keys", "--config",
    ] {
        assert!(top.contains(word), "{word} missing from --help:\n{top}");
    }
    let cases: [(&[&str], &[&str]); 7] = [
        (
            &["serve", "--help"],
            &["Unix socket", "one request per connection"],
        ),
        (
            &["login", "--help"],
            &["--sandbox", "--token-file", "--known-devices", "0600"],
        ),
        (&["logout", "--help"], &["--sandbox"]),
        (&["doctor", "--help"], &["OK/WARN/FAIL", "Exits 1"]),
        (&["audit", "verify", "--help"], &["hash chain", "first"]),
        (&["keys", "list", "--help"], &["approver key file"]),
        (&["audit", "--help"], &["verify"]),
    ];
    for (args, words) in cases {
        let out = h.cli(args, None);
        assert!(out.status.success(), "{args:?}");
        let out = text(&out);
        for word in words {
            assert!(out.contains(word), "{args:?}: {word} missing:\n{out}");
        }
    }
}

/// `… | head -1`: each program whose reader has gone stops quietly, with success, instead of a
/// panic on the closed pipe.
#[test]
fn every_program_stops_quietly_when_its_reader_goes() {
    for (package, name) in [
        ("fleetwatch-executor", "fleetwatch-executor"),
        ("fleetwatch", "fleetwatch"),
        ("fleetwatch-confirm", "fleetwatch-confirm"),
    ] {
        // The reading end is closed before the program starts, so its first write meets it.
        let (reader, writer) = std::io::pipe().expect("pipe");
        drop(reader);
        let out = std::process::Command::new(fleetwatch_e2e::binary(package, name))
            .arg("--help")
            .stdin(std::process::Stdio::null())
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .output()
            .expect("runs");
        assert!(out.status.success(), "{name}: {}", text(&out));
        assert!(out.stderr.is_empty(), "{name}: {}", text(&out));
    }
}

fn known_devices(h: &Harness, ids: &[String]) -> std::path::PathBuf {
    let path = h.dir.path().join("known-devices.json");
    std::fs::write(&path, json!({"device_ids": ids}).to_string()).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread")]
async fn login_stores_the_token_0600_and_refuses_overlap() {
    let h = Harness::prepare(Setup {
        token: None,
        ..Setup::default()
    })
    .await;
    let slot = h.state.join("sandbox.token");
    let normal = h.sim.team_devices("normal");
    let known = known_devices(&h, &normal);
    let out = h.cli(
        &[
            "login",
            "--sandbox",
            "--known-devices",
            known.to_str().unwrap(),
        ],
        Some("sandbox-token\n"),
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(std::fs::read_to_string(&slot).unwrap(), "sandbox-token");
    assert_eq!(
        std::fs::metadata(&slot).unwrap().permissions().mode() & 0o777,
        0o600
    );

    let out = h.cli(&["logout", "--sandbox"], None);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!slot.exists());

    // Overlap: the normal sign-in already knows one of the sandbox devices.
    let mut overlapping = normal.clone();
    let shared = sandbox_devices(&h.sim)[2].clone();
    overlapping.push(shared.clone());
    let known = known_devices(&h, &overlapping);
    let token_file = h.dir.path().join("token.txt");
    std::fs::write(&token_file, "sandbox-token").unwrap();
    let out = h.cli(
        &[
            "login",
            "--sandbox",
            "--token-file",
            token_file.to_str().unwrap(),
            "--known-devices",
            known.to_str().unwrap(),
        ],
        None,
    );
    assert!(!out.status.success());
    assert!(text(&out).contains(&shared), "{}", text(&out));
    assert!(!slot.exists(), "the token was deleted");

    // The normal token's team overlaps itself completely.
    let known = known_devices(&h, &normal);
    let out = h.cli(
        &[
            "login",
            "--sandbox",
            "--known-devices",
            known.to_str().unwrap(),
        ],
        Some("normal-token"),
    );
    assert!(!out.status.success());
    assert!(!slot.exists());
    assert_eq!(h.writes(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn login_refuses_an_empty_sandbox_team() {
    let replay = tempfile::tempdir().unwrap();
    std::fs::write(
        replay.path().join("get_devices_in_my_team.json"),
        r#"{"devices": []}"#,
    )
    .unwrap();
    let setup = Setup {
        token: None,
        sim: SimConfig {
            teams: vec![TeamConfig {
                view_only: false,
                name: "sandbox".into(),
                token: "empty-token".into(),
                source: TeamSource::Replay(replay.path().into()),
            }],
            now: None,
            sessions: false,
        },
        ..Setup::default()
    };
    let h = Harness::prepare(setup).await;
    let known = known_devices(&h, &[]);
    let out = h.cli(
        &[
            "login",
            "--sandbox",
            "--known-devices",
            known.to_str().unwrap(),
        ],
        Some("empty-token"),
    );
    assert!(!out.status.success());
    assert!(text(&out).contains("no devices"), "{}", text(&out));
    assert!(!h.state.join("sandbox.token").exists());
}

fn fails_on(out: &std::process::Output, check: &str) {
    let t = text(out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(
        t.lines()
            .any(|l| l.starts_with("FAIL") && l.contains(check)),
        "no FAIL line for {check}:\n{t}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn doctor_passes_when_complete_and_fails_on_each_missing_piece() {
    let mut h = Harness::prepare(Setup::default()).await;
    h.setup.allowlist = Some(sandbox_devices(&h.sim));
    let out = h.cli(&["doctor"], None);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!text(&out).contains("FAIL"));

    h.setup.allowlist = None;
    fails_on(&h.cli(&["doctor"], None), "fence");
    h.setup.allowlist = Some(sandbox_devices(&h.sim));

    let slot = h.state.join("sandbox.token");
    std::fs::set_permissions(&slot, std::fs::Permissions::from_mode(0o644)).unwrap();
    fails_on(&h.cli(&["doctor"], None), "sandbox sign-in");
    std::fs::remove_file(&slot).unwrap();
    fails_on(&h.cli(&["doctor"], None), "sandbox sign-in");
    std::fs::write(&slot, "wrong-token").unwrap();
    std::fs::set_permissions(&slot, std::fs::Permissions::from_mode(0o600)).unwrap();
    fails_on(&h.cli(&["doctor"], None), "sandbox sign-in");
    std::fs::write(&slot, "sandbox-token").unwrap();

    let keys = h.dir.path().join("etc/approvers.pub");
    let saved = std::fs::read_to_string(&keys).unwrap();
    std::fs::remove_file(&keys).unwrap();
    fails_on(&h.cli(&["doctor"], None), "approver file");
    std::fs::write(&keys, &saved).unwrap();

    let policy = h.dir.path().join("etc/tool_policy.yaml");
    std::fs::set_permissions(&policy, std::fs::Permissions::from_mode(0o666)).unwrap();
    let out = h.cli(&["doctor"], None);
    fails_on(&out, "policy");
    assert!(text(&out).contains("chmod go-w"), "{}", text(&out));
    std::fs::set_permissions(&policy, std::fs::Permissions::from_mode(0o644)).unwrap();

    let run = h.socket.parent().unwrap().to_path_buf();
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o777)).unwrap();
    fails_on(&h.cli(&["doctor"], None), "socket directory");
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o750)).unwrap();

    let out = h.cli(&["doctor"], None);
    assert!(out.status.success(), "everything restored:\n{}", text(&out));
}

async fn run_one(h: &mut Harness) {
    h.spawn();
    h.wait_ready().await;
    let dev = sandbox_devices(&h.sim)[0].clone();
    for action in ["start", "stop"] {
        let c = h
            .claims(
                "batch_recording",
                &json!({"action": action, "device_ids": [format!("{dev}-1")]}),
            )
            .await;
        assert!(
            matches!(h.execute(sign(&c, 7)).await, Some(Response::Executed(_))),
            "{}",
            h.log_text()
        );
    }
    h.kill();
}

fn tamper(h: &Harness, sql: &str) {
    let conn = rusqlite::Connection::open(h.state.join("executor.db")).unwrap();
    // The program's guards must hold first; the attacker drops them.
    assert!(
        conn.execute("UPDATE audit SET reason = 'x' WHERE seq = 2", [])
            .is_err()
    );
    assert!(conn.execute("DELETE FROM audit WHERE seq = 2", []).is_err());
    conn.execute_batch("DROP TRIGGER audit_no_update; DROP TRIGGER audit_no_delete;")
        .unwrap();
    conn.execute_batch(sql).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn audit_verify_names_the_first_bad_row() {
    let cases = [
        (
            "edit",
            "UPDATE audit SET reason = 'error' WHERE seq = 2",
            "audit row 2",
        ),
        ("delete", "DELETE FROM audit WHERE seq = 2", "audit row 3"),
        (
            "insert",
            "UPDATE audit SET seq = -seq WHERE seq >= 3; UPDATE audit SET seq = 1 - seq WHERE seq < 0; \
             INSERT INTO audit SELECT 3, time, kind, reason, approval_id, tool, targets, assistant_head, detail, row_hash, row_hash FROM audit WHERE seq = 2",
            "audit row 3",
        ),
    ];
    for (case, sql, expected) in cases {
        let mut h = Harness::prepare(Setup::default()).await;
        h.setup.allowlist = Some(sandbox_devices(&h.sim));
        run_one(&mut h).await;
        let ok = h.cli(&["audit", "verify"], None);
        assert!(ok.status.success(), "{case}: {}", text(&ok));
        tamper(&h, sql);
        let out = h.cli(&["audit", "verify"], None);
        assert!(!out.status.success(), "{case}");
        assert!(text(&out).contains(expected), "{case}: {}", text(&out));
        fails_on(&h.cli(&["doctor"], None), "audit");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_sandbox_token_never_leaks() {
    let secret = "tok-S3CRET-9f8e7d6c5b4a";
    let mut sim = SimConfig::demo();
    sim.teams[1].token = secret.into();
    let mut h = Harness::prepare(Setup {
        token: None,
        sim,
        ..Setup::default()
    })
    .await;
    h.setup.allowlist = Some(sandbox_devices(&h.sim));
    let known = known_devices(&h, &h.sim.team_devices("normal"));
    let mut outputs = String::new();
    let out = h.cli(
        &[
            "login",
            "--sandbox",
            "--known-devices",
            known.to_str().unwrap(),
        ],
        Some(secret),
    );
    assert!(out.status.success(), "{}", text(&out));
    outputs += &text(&out);
    h.spawn();
    h.wait_ready().await;
    let dev = sandbox_devices(&h.sim)[0].clone();
    let c = h
        .claims(
            "batch_recording",
            &json!({"action": "start", "device_ids": [format!("{dev}-1")]}),
        )
        .await;
    let signed = sign(&c, 7);
    outputs += &format!("{:?}", h.execute(signed.clone()).await);
    let replay = h.execute(signed).await;
    assert_eq!(replay, Some(Response::Refused(Refusal::Replayed)));
    outputs += &replay.map(|r| format!("{r:?}")).unwrap_or_default();
    h.sim.set_fault(
        "get_devices_in_my_team",
        fleetwatch_sim::Fault::Unauthorized,
    );
    let c = h.claims_unchecked(
        "batch_recording",
        &json!({"action": "stop", "device_ids": [format!("{dev}-1")]}),
        &c,
    );
    outputs += &format!("{:?}", h.execute(sign(&c, 7)).await);
    outputs += &text(&h.cli(&["doctor"], None));
    h.kill();
    outputs += &h.log_text();
    for name in ["executor.db", "executor.db-wal"] {
        if let Ok(bytes) = std::fs::read(h.state.join(name)) {
            outputs += &String::from_utf8_lossy(&bytes);
        }
    }
    assert!(
        outputs.contains("sign"),
        "the run produced output to search"
    );
    assert!(!outputs.contains(secret), "the sandbox token leaked");
    assert!(!outputs.contains("9f8e7d6c5b4a"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_small_order_key_in_the_key_file_stops_the_executor() {
    let small_order = format!(
        "ed25519 {} weak",
        base64_of(
            &[1u8]
                .iter()
                .chain([0u8; 31].iter())
                .copied()
                .collect::<Vec<_>>()
        )
    );
    let h = Harness::prepare(Setup {
        extra_key_lines: vec![small_order],
        ..Setup::default()
    })
    .await;
    let out = h.cli(&["serve"], None);
    assert!(!out.status.success());
    assert!(text(&out).contains("approvers.pub"), "{}", text(&out));
    fails_on(&h.cli(&["doctor"], None), "approver file");
}

#[tokio::test(flavor = "multi_thread")]
async fn keys_list_prints_the_installed_key_ids() {
    let h = Harness::prepare(Setup {
        key_seeds: vec![7, 8],
        ..Setup::default()
    })
    .await;
    let out = h.cli(&["keys", "list"], None);
    assert!(out.status.success(), "{}", text(&out));
    let listed = String::from_utf8_lossy(&out.stdout).to_string();
    for seed in [7, 8] {
        let id =
            fleetwatch_protocol::claims::KeyId::of(&fleetwatch_e2e::test_key(seed).verifying_key())
                .to_hex();
        assert!(listed.contains(&id), "{listed}");
    }
}

fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A second `serve` on the same state folder stops before its start-up recovery, which would
/// otherwise mark the running executor's in-flight approval unknown behind its back.
#[tokio::test(flavor = "multi_thread")]
async fn a_second_serve_on_the_same_state_folder_exits_and_changes_nothing() {
    let mut h = Harness::prepare(Setup::default()).await;
    h.setup.allowlist = Some(sandbox_devices(&h.sim));
    h.spawn();
    h.wait_ready().await;
    let first_pid = h.child.as_ref().map(std::process::Child::id).expect("pid");
    let device = sandbox_devices(&h.sim)[0].clone();
    let claims = h
        .claims(
            "batch_recording",
            &json!({"action": "start", "device_ids": [format!("{device}-1")]}),
        )
        .await;
    // Hold the approval in flight: its last read never answers until the read timeout.
    h.sim.set_fault(
        "get_recorder_status_for_devices",
        fleetwatch_sim::Fault::Hang,
    );
    let socket = h.socket.clone();
    let signed = sign(&claims, 7);
    let pending = tokio::spawn(async move {
        fleetwatch_e2e::send(
            &socket,
            &fleetwatch_protocol::wire::Request::Execute(
                fleetwatch_protocol::wire::ExecuteRequest {
                    approval: signed,
                    assistant_chain_head: [0; 32],
                },
            ),
        )
        .await
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while h.execution_state(&claims.approval_id).as_deref() != Some("in_flight") {
        assert!(std::time::Instant::now() < deadline, "{}", h.log_text());
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let rows_before = h.audit_rows();

    let second = h.cli(&["serve"], None);
    assert!(!second.status.success(), "{}", text(&second));
    let said = text(&second);
    assert!(
        said.contains(&format!("pid {first_pid}")) && said.contains("state folder"),
        "{said}"
    );
    assert_eq!(
        h.execution_state(&claims.approval_id).as_deref(),
        Some("in_flight"),
        "the running executor's approval is still its own"
    );
    assert_eq!(
        h.audit_rows(),
        rows_before,
        "nothing was audited or recovered"
    );
    assert!(
        h.socket.exists(),
        "the running executor's socket is still there"
    );

    h.sim.clear_faults();
    let _ = pending.await;
    assert!(matches!(
        h.request(&fleetwatch_protocol::wire::Request::Status).await,
        Some(Response::Status(_))
    ));
}

/// `doctor` asks a running executor for its status with a whole request, so the live one's
/// audit log gains nothing (a bare connect used to leave a `frame_truncated` row).
#[tokio::test(flavor = "multi_thread")]
async fn doctor_asks_the_running_executor_without_leaving_an_audit_row() {
    let mut h = Harness::prepare(Setup::default()).await;
    h.setup.allowlist = Some(sandbox_devices(&h.sim));
    h.spawn();
    h.wait_ready().await;
    let before = h.audit_rows();
    let out = h.cli(&["doctor"], None);
    let said = text(&out);
    let line = said
        .lines()
        .find(|l| l.contains("running executor"))
        .unwrap_or_else(|| panic!("no running-executor line:\n{said}"));
    assert!(
        line.starts_with("OK") && line.contains("answers on"),
        "{line}"
    );
    assert_eq!(h.audit_rows(), before, "{said}");
    h.kill();
    let out = h.cli(&["doctor"], None);
    let said = text(&out);
    assert!(
        said.lines()
            .any(|l| l.starts_with("WARN running executor") && l.contains("none answers")),
        "{said}"
    );
}

/// `FLEETWATCH_LOG` is one level word; anything else (a filter expression) is named in a
/// warning and the executor logs at `info`, so a typo can neither silence it nor fail it.
#[tokio::test(flavor = "multi_thread")]
async fn the_log_level_is_one_word() {
    let started = |level: &'static str| async move {
        let mut h = Harness::prepare(Setup {
            env: vec![("FLEETWATCH_LOG".into(), level.into())],
            ..Setup::default()
        })
        .await;
        h.spawn();
        h.wait_ready().await;
        h.kill();
        h.log_text()
    };
    let info = started("info").await;
    // One line per event: time, level, where, the message, its fields.
    assert!(
        info.lines().any(|l| l.contains(" INFO fleetwatch_executor")
            && l.contains(": executor listening socket=")),
        "{info}"
    );
    let warn = started("warn").await;
    assert!(!warn.contains("executor listening"), "{warn}");
    let odd = started("fleetwatch_executor=debug").await;
    assert!(
        odd.contains("FLEETWATCH_LOG is not one of") && odd.contains("executor listening"),
        "{odd}"
    );
}
