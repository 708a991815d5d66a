//! Sixteen simultaneous Approve POSTs on the real approval page (`fleetwatch serve`), with the
//! real executor behind it and the simulator as Epiphan: one approval is consumed, one
//! `Execute` reaches the executor, one write is made.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fleetwatch::store::{NewProposal, Store};
use fleetwatch_e2e::{Harness, Setup, binary, canonical, sandbox_devices, workspace_root};
use serde_json::json;

struct Serve(Child);

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'*' => {
                (b as char).to_string()
            }
            other => format!("%{other:02X}"),
        })
        .collect()
}

fn form_body(fields: &[(String, String)]) -> String {
    fields
        .iter()
        .map(|(k, v)| format!("{}={}", urlencode(k), urlencode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// The hidden fields of the form that posts to `action`.
fn form(html: &str, action: &str) -> Vec<(String, String)> {
    let start = html
        .find(&format!("action=\"{action}\""))
        .unwrap_or_else(|| panic!("no {action} form in\n{html}"));
    let end = start + html[start..].find("</form>").expect("form end");
    let mut out = Vec::new();
    let mut rest = &html[start..end];
    while let Some(i) = rest.find("name=\"") {
        rest = &rest[i + 6..];
        let name = &rest[..rest.find('"').expect("name end")];
        let Some(v) = rest.find("value=\"") else {
            break;
        };
        let value = &rest[v + 7..v + 7 + rest[v + 7..].find('"').expect("value end")];
        out.push((name.to_owned(), value.to_owned()));
    }
    out
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

fn assistant_command(state: &Path) -> Command {
    let mut cmd = Command::new(binary("fleetwatch", "fleetwatch"));
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("FLEETWATCH_STATE_DIR", state)
        .env(
            "FLEETWATCH_POLICY",
            workspace_root().join("tool_policy.yaml"),
        );
    cmd
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixteen_simultaneous_approve_posts_make_one_execute_and_one_write() {
    // The assistant's state folder, with proposing allowed and its signing key made.
    let state = tempfile::tempdir().expect("state");
    std::fs::set_permissions(state.path(), std::fs::Permissions::from_mode(0o750)).expect("chmod");
    std::fs::write(
        state.path().join(fleetwatch::config::SETTINGS_FILE),
        "autonomy: propose\n",
    )
    .expect("settings");
    let shown = assistant_command(state.path())
        .args(["keys", "show"])
        .output()
        .expect("keys show");
    assert!(shown.status.success(), "{shown:?}");
    let key_line = String::from_utf8_lossy(&shown.stdout)
        .lines()
        .find(|l| l.starts_with("ed25519 "))
        .expect("key line")
        .to_owned();

    // The executor trusts that key.
    let mut h = Harness::prepare(Setup {
        extra_key_lines: vec![key_line],
        ..Setup::default()
    })
    .await;
    let devices = sandbox_devices(&h.sim);
    h.setup.allowlist = Some(devices.clone());
    h.spawn();
    h.wait_ready().await;

    // The page starts only with a model; the simulator's offline stand-in serves as one.
    let model = fleetwatch_sim::model::start_offline()
        .await
        .expect("model stand-in");
    let port = free_port();
    let child = assistant_command(state.path())
        .env("FLEETWATCH_EPIPHAN_URL", h.sim.mcp_url())
        .env("FLEETWATCH_ALLOW_LOOPBACK_HTTP", "1")
        .env("FLEETWATCH_EPIPHAN_TOKEN", "normal-token")
        .env("FLEETWATCH_ANTHROPIC_API_KEY", "test-key")
        .env("FLEETWATCH_ANTHROPIC_BASE_URL", model.url())
        .env("FLEETWATCH_EXECUTOR_SOCKET", &h.socket)
        .env("FLEETWATCH_WRITE_DEVICE_IDS", devices.join(","))
        .env("FLEETWATCH_APPROVE_PORT", port.to_string())
        .arg("serve")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("serve");
    let mut serve = Serve(child);
    let secret_file = state.path().join("approval-page.secret");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !(secret_file.exists() && std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()) {
        if let Ok(Some(status)) = serve.0.try_wait() {
            let mut err = String::new();
            if let Some(mut e) = serve.0.stderr.take() {
                use std::io::Read;
                let _ = e.read_to_string(&mut err);
            }
            panic!("fleetwatch serve exited ({status}): {err}");
        }
        assert!(Instant::now() < deadline, "the page did not start");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // A pending proposal, bound to what the executor describes now (as a turn stores it).
    let device = devices[0].clone();
    let arguments = json!({"action": "start", "device_ids": [format!("{device}-1")]});
    let d = h.describe("batch_recording", &arguments).await;
    let id = Store::open(state.path())
        .expect("store")
        .insert_proposal(
            &NewProposal {
                tool: "batch_recording".into(),
                arguments: canonical(&arguments),
                targets: d.targets.clone(),
                fingerprint: d.fingerprint.clone(),
                schema_version: d.schema_version,
                policy_digest: d.policy_digest,
                slot: "sandbox".into(),
                reason: "start the lecture recording".into(),
            },
            fleetwatch::store::now_secs(),
        )
        .expect("proposal");

    // Sign in and take the card's Approve form.
    let origin = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    let secret = std::fs::read_to_string(&secret_file)
        .expect("secret")
        .trim()
        .to_owned();
    let login = client
        .post(format!("{origin}/login"))
        .header("origin", &origin)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form_body(&[("secret".into(), secret)]))
        .send()
        .await
        .expect("login");
    assert_eq!(login.status(), 303);
    let cookie = login
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .expect("session cookie")
        .to_owned();
    let card = client
        .get(format!("{origin}/"))
        .header("cookie", &cookie)
        .send()
        .await
        .expect("card")
        .text()
        .await
        .expect("card text");
    let fields = form(&card, "/approve");
    let body = form_body(&fields);

    let posts = (0..16).map(|_| {
        client
            .post(format!("{origin}/approve"))
            .header("cookie", &cookie)
            .header("origin", &origin)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body.clone())
            .send()
    });
    let statuses: Vec<u16> = futures_util::future::join_all(posts)
        .await
        .into_iter()
        .map(|r| r.map(|r| r.status().as_u16()).unwrap_or(0))
        .collect();
    let ok = statuses.iter().filter(|s| **s == 200).count();
    assert_eq!(ok, 1, "exactly one Approve went through: {statuses:?}");
    assert!(
        statuses.iter().all(|s| *s == 200 || (400..500).contains(s)),
        "the others were refused: {statuses:?}"
    );

    // One Execute reached the executor (one nonce stored), and one write was made.
    let accepted = h.audit_rows().iter().filter(|r| r.1 == "accepted").count();
    assert_eq!(accepted, 1, "{:?}", h.audit_rows());
    assert_eq!(h.writes(), 1);
    assert_eq!(h.sim.writes()[0].arguments, arguments);
    let status = Store::open(state.path())
        .expect("store")
        .proposal(id)
        .expect("read")
        .map(|p| p.status);
    assert_eq!(status, Some(fleetwatch::store::Status::Executed));
}
