//! The executor checks the peer's uid (SO_PEERCRED) before reading a byte: a connection from a
//! uid that is not allowed is closed without an answer, audited, and nothing is written.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;

use fleetwatch_e2e::{Harness, Setup, sandbox_devices, sign};
use fleetwatch_protocol::wire::{self, Request, Response};
use serde_json::json;

const HELPER_ENV: &str = "FLEETWATCH_TEST_PEER_HELPER_SOCKET";

fn my_uid() -> u32 {
    rustix::process::getuid().as_raw()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_uid_not_allowed_is_closed_without_an_answer() {
    // Sign a valid approval against a correctly configured executor first.
    let mut h = Harness::prepare(Setup::default()).await;
    h.setup.allowlist = Some(sandbox_devices(&h.sim));
    h.spawn();
    h.wait_ready().await;
    let dev = sandbox_devices(&h.sim)[0].clone();
    let claims = h
        .claims(
            "batch_recording",
            &json!({"action": "start", "device_ids": [format!("{dev}-1")]}),
        )
        .await;
    h.kill();

    // Now only the next uid up is allowed.
    let yaml = std::fs::read_to_string(&h.config).unwrap();
    let yaml = yaml.replace(
        &format!("allowed_uids: [{}]", my_uid()),
        &format!("allowed_uids: [{}]", my_uid() + 1),
    );
    std::fs::write(&h.config, yaml).unwrap();
    // The killed executor left its socket file behind, so the file's presence says nothing:
    // wait for the new one to say it listens (a stale socket refuses the connection, which
    // would pass for "closed" without the new executor ever judging the uid).
    let listening = |h: &Harness| h.log_text().matches("executor listening").count();
    let before = listening(&h);
    h.spawn();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while listening(&h) == before {
        assert!(std::time::Instant::now() < deadline, "{}", h.log_text());
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(
        h.request(&Request::Status).await,
        None,
        "closed without an answer"
    );
    assert_eq!(h.execute(sign(&claims, 7)).await, None);
    assert_eq!(h.writes(), 0);
    // Both refusals are counted: the second within the same second is held by the burst rule
    // and written, with its count, once that second is over.
    let refused = |h: &Harness| -> Vec<_> {
        h.audit_rows()
            .into_iter()
            .filter(|r| r.1 == "peer_refused")
            .collect()
    };
    let count = |detail: &str| -> u64 {
        detail
            .rsplit_once(" n=")
            .and_then(|(_, n)| n.parse().ok())
            .unwrap_or(1)
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while refused(&h).iter().map(|r| count(&r.4)).sum::<u64>() < 2 {
        assert!(std::time::Instant::now() < deadline, "{:?}", refused(&h));
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(refused(&h).iter().all(|r| r.2 == "peer_not_allowed"
        && r.4.split(' ').next() == Some(format!("uid={}", my_uid()).as_str())));
    // The nonce was never stored, so the same approval still runs for the right uid.
    h.kill();
    let yaml = std::fs::read_to_string(&h.config).unwrap();
    std::fs::write(
        &h.config,
        yaml.replace(
            &format!("allowed_uids: [{}]", my_uid() + 1),
            &format!("allowed_uids: [{}]", my_uid()),
        ),
    )
    .unwrap();
    h.spawn();
    h.wait_ready().await;
    assert!(
        matches!(
            h.execute(sign(&claims, 7)).await,
            Some(Response::Executed(_))
        ),
        "positive control"
    );
    assert_eq!(h.writes(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_running_as_another_uid_is_refused() {
    if my_uid() != 0 {
        eprintln!(
            "SKIPPED a_client_running_as_another_uid_is_refused: needs root to run a client as another uid"
        );
        return;
    }
    let h = Harness::start(Setup::default()).await;
    // Let the other uid reach the socket, so the peer check (not file modes) is what refuses.
    for dir in [h.dir.path(), h.socket.parent().unwrap()] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::set_permissions(&h.socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    let nobody = 65534;
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "peer_client_helper",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(HELPER_ENV, &h.socket)
        .uid(nobody)
        .gid(nobody)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("HELPER_CONNECTED"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("HELPER_ANSWER_BYTES=0"), "{stdout}");
    assert!(
        h.audit_rows()
            .iter()
            .any(|r| r.1 == "peer_refused" && r.4 == format!("uid={nobody}"))
    );
    // Positive control from the allowed uid.
    assert!(matches!(
        h.request(&Request::Status).await,
        Some(Response::Status(_))
    ));
    assert_eq!(h.writes(), 0);
}

/// Runs only as the child process of `a_client_running_as_another_uid_is_refused`.
#[test]
#[ignore = "helper: run as a child process under another uid by a_client_running_as_another_uid_is_refused"]
fn peer_client_helper() {
    use std::io::{Read, Write};
    let socket = std::env::var(HELPER_ENV).expect("run by the parent test");
    let mut stream = std::os::unix::net::UnixStream::connect(socket).expect("connect");
    println!("HELPER_CONNECTED");
    let body = wire::encode_request(&Request::Status).unwrap();
    let _ = stream.write_all(&fleetwatch_e2e::frame(&body));
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    println!("HELPER_ANSWER_BYTES={}", answer.len());
}
