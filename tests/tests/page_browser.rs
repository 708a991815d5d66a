//! The approval page in a real browser (headless Debian chromium), against the real executor
//! binary and the simulator: sign-in, the card, focus and Enter, approving calm and disruptive
//! changes, a cross-port auto-submitting form, a rebinding host name, an injected device name
//! and the Spanish page. Screenshots go to each test's temporary folder; their paths are printed.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chromiumoxide::cdp::browser_protocol::emulation::SetUserAgentOverrideParams;
use chromiumoxide::cdp::browser_protocol::web_authn::SetUserVerifiedParams;
use chromiumoxide::page::Page;
use fleetwatch::executor_client::ExecutorClient;
use fleetwatch::keys::ApproverKey;
use fleetwatch::page::{self, PageConfig, PageDeps, PageHandle, SecretDelivery, SystemClock};
use fleetwatch::store::{NewProposal, Status, Store, now_secs};
use fleetwatch_e2e::browser::{
    self, TestBrowser, eval, screenshot, text, virtual_authenticator, wait_until,
};
use fleetwatch_e2e::forward::Forwarder;
use fleetwatch_e2e::{Harness, Setup, sandbox_devices, workspace_root};
use fleetwatch_protocol::policy::Policy;
use fleetwatch_sim::{SimConfig, TeamConfig, TeamSource};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// A foreign host name that reaches 127.0.0.1, as a DNS-rebinding attacker's name would
/// (browsers resolve every `*.localhost` name to loopback themselves).
const REBIND_HOST: &str = "rebind.localhost";

struct World {
    h: Harness,
    page: Option<PageHandle>,
    store: Arc<Mutex<Store>>,
    policy: Arc<Policy>,
    executor: ExecutorClient,
    shots: tempfile::TempDir,
    browser: Option<TestBrowser>,
    /// The confirm page the approval page hands passkey requests to; the executor accepts
    /// assertions from its origin only.
    confirm: fleetwatch_e2e::confirm_page::ConfirmPage,
    /// The relay the browser reaches the pages through, when a test stands in for SSH.
    forwarder: Option<Forwarder>,
}

async fn world(sim: SimConfig, allowlist: Option<Vec<String>>) -> Option<World> {
    // The trial mode: these tests are about the page, not the person.
    world_with(sim, allowlist, "  quorum: 0\n").await
}

/// [`world`] with more lines for the `passkeys:` section of the executor's configuration.
async fn world_with(
    sim: SimConfig,
    allowlist: Option<Vec<String>>,
    passkeys_extra: &str,
) -> Option<World> {
    world_built(sim, allowlist, passkeys_extra, None).await
}

/// [`world_with`], the browser reaching every page through `forwarder` when one is given.
async fn world_built(
    sim: SimConfig,
    allowlist: Option<Vec<String>>,
    passkeys_extra: &str,
    forwarder: Option<Forwarder>,
) -> Option<World> {
    // The browser first: the ports it opens as it starts cannot then take the page's.
    let mut args = vec![format!("--host-resolver-rules=MAP {REBIND_HOST} 127.0.0.1")];
    args.extend(forwarder.iter().flat_map(Forwarder::browser_args));
    let browser = browser::launch(&args.iter().map(String::as_str).collect::<Vec<_>>()).await?;
    let assistant_state = tempfile::tempdir().expect("state");
    let key = ApproverKey::load_or_create(assistant_state.path()).expect("key");
    // The page's port is chosen first, so the confirm page can be told where to return
    // assertions, and the executor the one origin its passkeys may come from: the confirm
    // page's.
    let port = fleetwatch_e2e::page::free_port();
    let confirm =
        fleetwatch_e2e::confirm_page::ConfirmPage::start(&format!("http://localhost:{port}")).await;
    let setup = Setup {
        sim,
        extra_key_lines: vec![key.key_line()],
        config_extra: format!(
            "passkeys:\n  origins: [\"{}\"]\n{passkeys_extra}",
            confirm.origin()
        ),
        ..Setup::default()
    };
    let mut h = Harness::prepare(setup).await;
    h.setup.allowlist = Some(allowlist.unwrap_or_else(|| sandbox_devices(&h.sim)));
    h.spawn();
    h.wait_ready().await;
    let state = h.dir.path().join("assistant");
    std::fs::create_dir(&state).expect("assistant state");
    std::fs::rename(
        assistant_state.path().join(fleetwatch::keys::KEY_FILE),
        state.join(fleetwatch::keys::KEY_FILE),
    )
    .expect("key moves");
    fleetwatch_e2e::page::open_every_proposing_category(&state);
    let policy = Arc::new(
        Policy::from_yaml(
            &std::fs::read_to_string(workspace_root().join("tool_policy.yaml")).expect("policy"),
        )
        .expect("policy loads"),
    );
    let store = Arc::new(Mutex::new(Store::open(&state).expect("store")));
    let executor = ExecutorClient::new(&h.socket).with_timeout(Duration::from_secs(60));
    let config = PageConfig {
        port,
        state_dir: state,
        autonomy_propose: true,
        fence_configured: true,
        secret_delivery: SecretDelivery::File,
        request_timeout: Duration::from_secs(120),
        clock: Arc::new(SystemClock::new()),
        confirm_origin: confirm.origin(),
    };
    let deps = PageDeps {
        store: store.clone(),
        executor: executor.clone(),
        policy: policy.clone(),
        key: Arc::new(key),
    };
    let page = page::start(config, deps).await.expect("page starts");
    Some(World {
        h,
        page: Some(page),
        store,
        policy,
        executor,
        shots: tempfile::tempdir().expect("shots"),
        browser: Some(browser),
        confirm,
        forwarder,
    })
}

impl World {
    fn base(&self) -> String {
        format!(
            "http://127.0.0.1:{}",
            self.page.as_ref().expect("page").addr.port()
        )
    }
    fn port(&self) -> u16 {
        self.page.as_ref().expect("page").addr.port()
    }
    fn secret(&self) -> String {
        let path = self
            .page
            .as_ref()
            .expect("page")
            .secret_file
            .clone()
            .expect("secret file");
        std::fs::read_to_string(path)
            .expect("secret")
            .trim()
            .to_owned()
    }
    fn shot(&self, name: &str) -> PathBuf {
        self.shots.path().join(name)
    }
    /// Stores a proposal the way the assistant does: validated, described, fingerprinted.
    async fn propose(&self, tool: &str, args: Value, reason: &str) -> u64 {
        let valid = self.policy.validate(tool, &args).expect("valid");
        let d = self
            .executor
            .describe(tool, valid.arguments.as_str())
            .await
            .expect("described");
        let new = NewProposal {
            tool: tool.into(),
            arguments: valid.arguments.into_string(),
            targets: valid.targets,
            fingerprint: d.fingerprint,
            schema_version: d.schema_version,
            policy_digest: d.policy_digest,
            slot: "sandbox".into(),
            reason: reason.into(),
        };
        self.store
            .lock()
            .expect("store")
            .insert_proposal(&new, now_secs())
            .expect("stored")
    }
    fn status(&self, id: u64) -> Status {
        self.store
            .lock()
            .expect("store")
            .proposal(id)
            .expect("read")
            .expect("exists")
            .status
    }
    fn unused_approvals(&self) -> i64 {
        self.store
            .lock()
            .expect("store")
            .connection()
            .query_row("SELECT COUNT(*) FROM approvals WHERE used = 0", [], |r| {
                r.get(0)
            })
            .expect("count")
    }
    async fn tab(&self) -> Page {
        self.browser.as_ref().expect("browser").page().await
    }
    async fn login(&self, tab: &Page) {
        self.login_at(tab, &self.base()).await;
    }
    /// Signs in at `origin` (the page answers on 127.0.0.1 and on `localhost`, where passkeys
    /// work).
    async fn login_at(&self, tab: &Page, origin: &str) {
        tab.goto(format!("{origin}/")).await.expect("goto");
        wait_until(tab, "document.getElementById('secret')").await;
        tab.find_element("#secret")
            .await
            .expect("field")
            .click()
            .await
            .expect("click")
            .type_str(self.secret())
            .await
            .expect("type");
        tab.find_element("#login")
            .await
            .expect("button")
            .click()
            .await
            .expect("click");
        // Signed in once the front page's view is there (the card or "nothing waiting", both
        // with the Passkeys link), not merely once the sign-in form has gone: a navigation
        // still in flight would otherwise land after the test's next one.
        wait_until(
            tab,
            "!document.getElementById('secret') && document.getElementById('passkeys-link')",
        )
        .await;
    }
    async fn finish(mut self) {
        // The screenshots go with the temporary folder unless asked to stay (to look at them).
        if std::env::var("FLEETWATCH_KEEP_SCREENSHOTS").is_ok_and(|v| v == "1") {
            let shots = std::mem::replace(&mut self.shots, tempfile::tempdir().expect("dir"));
            println!("screenshots kept in {}", shots.keep().display());
        }
        if let Some(b) = self.browser.take() {
            b.close().await;
        }
        if let Some(p) = self.page.take() {
            p.shutdown().await.expect("page stops");
        }
    }
}

fn record(channel: &str) -> Value {
    json!({"action": "start", "device_ids": [channel]})
}

#[tokio::test(flavor = "multi_thread")]
async fn sign_in_see_the_card_deny_is_focused_enter_never_approves_and_a_calm_change_runs_once() {
    let started = Instant::now();
    let Some(w) = world(SimConfig::demo(), None).await else {
        return;
    };
    let devices = sandbox_devices(&w.h.sim);
    let first = w
        .propose(
            "batch_recording",
            record(&format!("{}-1", devices[0])),
            "The room <b>needs</b> it",
        )
        .await;
    let second = w
        .propose(
            "batch_recording",
            record(&format!("{}-2", devices[0])),
            "Second camera too",
        )
        .await;
    let tab = w.tab().await;
    w.login(&tab).await;
    wait_until(&tab, "document.getElementById('card-heading')").await;
    let body = text(&tab).await;
    assert!(body.contains(&format!("Proposal #{first}")), "{body}");
    assert!(body.contains("1 more waiting"));
    assert!(body.contains("Recording on Test Room A"), "{body}");
    assert!(body.contains("stopped → recording"), "{body}");
    assert!(
        body.contains("The room <b>needs</b> it"),
        "the reason is text: {body}"
    );
    assert_eq!(
        eval(&tab, "document.activeElement && document.activeElement.id").await,
        json!("deny")
    );
    // The countdown script ran (same-origin script allowed by the CSP).
    wait_until(
        &tab,
        "document.getElementById('expiry').textContent.startsWith('Approval expires in')",
    )
    .await;
    screenshot(&tab, &w.shot("card.png")).await;
    // Enter goes to the focused button — Deny — never to Approve.
    tab.find_element("body")
        .await
        .expect("body")
        .press_key("Enter")
        .await
        .expect("enter");
    wait_until(&tab, &format!("document.getElementById('card-heading') && document.getElementById('card-heading').textContent.includes('#{second}')")).await;
    assert_eq!(w.status(first), Status::Denied);
    assert_eq!(w.h.writes(), 0);
    // Approve the calm change: the outcome page, and exactly one write at the simulator.
    browser::press_approve(&tab).await;
    wait_until(&tab, "document.getElementById('heading')").await;
    let outcome = text(&tab).await;
    assert!(outcome.contains("Done"), "{outcome}");
    screenshot(&tab, &w.shot("outcome.png")).await;
    let writes = w.h.sim.writes();
    assert_eq!(writes.len(), 1);
    assert_eq!(writes[0].tool, "batch_recording");
    assert_eq!(writes[0].arguments, record(&format!("{}-2", devices[0])));
    assert_eq!(w.status(second), Status::Executed);
    println!("browser test took {:.1} s", started.elapsed().as_secs_f64());
    w.finish().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_disruptive_change_asks_to_confirm_naming_the_room() {
    let Some(w) = world(SimConfig::demo(), None).await else {
        return;
    };
    let devices = sandbox_devices(&w.h.sim);
    let id = w
        .propose(
            "batch_reboot",
            json!({"device_ids": [devices[0]]}),
            "restart it",
        )
        .await;
    let tab = w.tab().await;
    w.login(&tab).await;
    browser::press_approve(&tab).await;
    wait_until(&tab, "document.getElementById('confirm')").await;
    let body = text(&tab).await;
    assert!(body.contains("Confirm a disruptive change"), "{body}");
    assert!(body.contains("Test Room A"), "{body}");
    assert_eq!(
        eval(&tab, "document.getElementById('confirm').textContent").await,
        json!("Yes, change Test Room A")
    );
    assert_eq!(
        eval(&tab, "document.activeElement && document.activeElement.id").await,
        json!("deny")
    );
    screenshot(&tab, &w.shot("confirm.png")).await;
    assert_eq!(w.h.writes(), 0);
    tab.find_element("#confirm")
        .await
        .expect("confirm")
        .click()
        .await
        .expect("click");
    wait_until(&tab, "document.getElementById('heading')").await;
    let outcome = text(&tab).await;
    assert!(outcome.contains("Done"), "{outcome}");
    assert_eq!(w.h.writes(), 1);
    assert_eq!(w.status(id), Status::Executed);
    w.finish().await;
}

/// Serves one HTML page on another loopback port, as another local web app would.
async fn serve_other_app(html: String) -> u16 {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = listener.accept().await else {
                return;
            };
            let html = html.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf).await;
                let answer = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{html}",
                    html.len()
                );
                let _ = s.write_all(answer.as_bytes()).await;
            });
        }
    });
    port
}

fn hidden_fields(html: &str, action: &str) -> Vec<(String, String)> {
    let start = html.find(&format!("action=\"{action}\"")).expect("form");
    let end = start + html[start..].find("</form>").expect("end");
    let mut out = Vec::new();
    let mut rest = &html[start..end];
    while let Some(i) = rest.find("name=\"") {
        rest = &rest[i + 6..];
        let name = &rest[..rest.find('"').expect("quote")];
        let v = rest.find("value=\"").expect("value") + 7;
        out.push((
            name.to_owned(),
            rest[v..v + rest[v..].find('"').expect("quote")].to_owned(),
        ));
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn another_local_app_and_a_rebinding_host_are_refused() {
    let Some(w) = world(SimConfig::demo(), None).await else {
        return;
    };
    let devices = sandbox_devices(&w.h.sim);
    let id = w
        .propose("batch_recording", record(&format!("{}-1", devices[0])), "x")
        .await;
    let tab = w.tab().await;
    w.login(&tab).await;
    wait_until(&tab, "document.getElementById('approve')").await;
    // The worst case: the other app even knows the card's hidden fields.
    let html = tab.content().await.expect("content");
    let fields = hidden_fields(&html, "/approve");
    let inputs: String = fields
        .iter()
        .map(|(n, v)| format!("<input type=\"hidden\" name=\"{n}\" value=\"{v}\">"))
        .collect();
    let evil = format!(
        "<!DOCTYPE html><html><head><meta name=\"referrer\" content=\"no-referrer\"></head><body><form id=\"f\" method=\"post\" action=\"{}/approve\">{inputs}</form><script>document.getElementById('f').submit();</script></body></html>",
        w.base()
    );
    let other = serve_other_app(evil).await;
    assert_eq!(w.unused_approvals(), 1);
    tab.goto(format!("http://127.0.0.1:{other}/"))
        .await
        .expect("goto");
    wait_until(&tab, &format!("location.port === '{}'", w.port())).await;
    let body = text(&tab).await;
    assert!(body.contains("Forbidden"), "{body}");
    assert_eq!(w.unused_approvals(), 1, "nothing was consumed");
    assert_eq!(w.status(id), Status::Pending);
    // A rebinding host name pointing at 127.0.0.1: the page does not answer to it.
    tab.goto(format!("http://{REBIND_HOST}:{}/", w.port()))
        .await
        .expect("goto");
    wait_until(&tab, "document.body && document.body.innerText.length > 0").await;
    let body = text(&tab).await;
    assert!(body.contains("Forbidden"), "{body}");
    assert!(!body.contains("Proposal #"));
    assert_eq!(w.h.writes(), 0);
    assert_eq!(w.unused_approvals(), 1);
    w.finish().await;
}

fn hostile_replay(dir: &Path) -> String {
    let example = workspace_root().join("sim/replay/example");
    let hostile = "<img src=x onerror=\"document.title='pwned'\">Room 401";
    for entry in std::fs::read_dir(&example).expect("example") {
        let entry = entry.expect("entry");
        let text = std::fs::read_to_string(entry.path()).expect("read");
        let text = text.replace(
            "\"Room 401 — Seminar\"",
            &serde_json::to_string(hostile).expect("json"),
        );
        std::fs::write(dir.join(entry.file_name()), text).expect("write");
    }
    hostile.to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_injected_device_name_renders_as_text() {
    let replay = tempfile::tempdir().expect("replay");
    let hostile = hostile_replay(replay.path());
    let sim = SimConfig {
        teams: vec![
            TeamConfig {
                view_only: false,
                name: "normal".into(),
                token: "normal-token".into(),
                source: TeamSource::DemoNormal,
            },
            TeamConfig {
                view_only: false,
                name: "sandbox".into(),
                token: "sandbox-token".into(),
                source: TeamSource::Replay(replay.path().to_path_buf()),
            },
        ],
        now: None,
        sessions: false,
    };
    let Some(w) = world(
        sim,
        Some(vec![
            "18033355501".into(),
            "18033355502".into(),
            "18033355503".into(),
        ]),
    )
    .await
    else {
        return;
    };
    w.propose(
        "batch_recording",
        record("18033355501-1"),
        "<script>document.title='pwned'</script>",
    )
    .await;
    let tab = w.tab().await;
    w.login(&tab).await;
    wait_until(&tab, "document.getElementById('card-heading')").await;
    assert_eq!(
        eval(&tab, "document.querySelector('td.name').textContent").await,
        json!(hostile)
    );
    assert_eq!(eval(&tab, "document.images.length").await, json!(0));
    assert_eq!(
        eval(
            &tab,
            "Array.from(document.querySelectorAll('script')).map(s => s.getAttribute('src'))"
        )
        .await,
        json!([
            "/static/tab.js",
            "/static/countdown.js",
            "/static/follow.js"
        ]),
        "only the page's own three scripts"
    );
    assert_ne!(eval(&tab, "document.title").await, json!("pwned"));
    let body = text(&tab).await;
    assert!(
        body.contains("<script>document.title='pwned'</script>"),
        "{body}"
    );
    screenshot(&tab, &w.shot("hostile.png")).await;
    w.finish().await;
}

/// An open page follows what waits without a reload: a change proposed while it is open is
/// announced within seconds and the tab's title counts it, but the view changes only when the
/// person presses Show; a decision made elsewhere leaves this page's card in place, saying it
/// was decided elsewhere.
#[tokio::test(flavor = "multi_thread")]
async fn an_open_page_follows_what_waits_without_a_reload() {
    let Some(w) = world(SimConfig::demo(), None).await else {
        return;
    };
    let devices = sandbox_devices(&w.h.sim);
    let tab = w.tab().await;
    w.login(&tab).await;
    wait_until(&tab, "document.getElementById('follow')").await;
    assert_eq!(
        eval(&tab, "document.getElementById('card-heading') === null").await,
        json!(true),
        "nothing waits yet"
    );
    let first = w
        .propose(
            "batch_recording",
            record(&format!("{}-1", devices[0])),
            "while the page is open",
        )
        .await;
    wait_until(
        &tab,
        "!document.getElementById('follow-news').hidden && \
         document.getElementById('follow-text').textContent === '1 new change(s) waiting.'",
    )
    .await;
    wait_until(&tab, "document.title.startsWith('(1) ')").await;
    // Announced, not swapped in: the page shows the card when the person chooses.
    assert_eq!(
        eval(&tab, "document.getElementById('card-heading') === null").await,
        json!(true)
    );
    tab.find_element("#follow-show")
        .await
        .expect("Show")
        .click()
        .await
        .expect("click");
    wait_until(
        &tab,
        &format!(
            "document.getElementById('card-heading') && \
             document.getElementById('card-heading').textContent.includes('#{first}')"
        ),
    )
    .await;
    // Decided elsewhere (another session, another tool): this card stays, saying so.
    assert!(
        w.store
            .lock()
            .expect("store")
            .deny(first, "page", "", None, now_secs())
            .expect("deny")
    );
    wait_until(
        &tab,
        "!document.getElementById('follow-news').hidden && \
         document.getElementById('follow-text').textContent.includes('decided elsewhere')",
    )
    .await;
    assert_eq!(
        eval(&tab, "document.getElementById('card-heading').textContent").await,
        json!(format!("Proposal #{first}"))
    );
    wait_until(&tab, "!document.title.startsWith('(')").await;
    assert_eq!(w.h.writes(), 0);
    w.finish().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_spanish_page() {
    let Some(w) = world(SimConfig::demo(), None).await else {
        return;
    };
    let devices = sandbox_devices(&w.h.sim);
    w.propose("batch_recording", record(&format!("{}-1", devices[0])), "x")
        .await;
    let tab = w.tab().await;
    let agent = SetUserAgentOverrideParams::builder()
        .user_agent("Mozilla/5.0 fleetwatch-test")
        .accept_language("es-ES,es;q=0.9")
        .build()
        .expect("params");
    tab.execute(agent).await.expect("accept-language");
    tab.goto(w.base() + "/").await.expect("goto");
    wait_until(&tab, "document.getElementById('secret')").await;
    assert_eq!(
        eval(&tab, "document.documentElement.lang").await,
        json!("es")
    );
    assert!(text(&tab).await.contains("Secreto de la página"));
    w.login(&tab).await;
    wait_until(&tab, "document.getElementById('card-heading')").await;
    let body = text(&tab).await;
    assert!(body.contains("Propuesta n.º"), "{body}");
    assert!(body.contains("Grabación en Test Room A"), "{body}");
    assert_eq!(
        eval(&tab, "document.getElementById('deny').textContent").await,
        json!("Denegar")
    );
    screenshot(&tab, &w.shot("card-es.png")).await;
    w.finish().await;
}

/// Enrols a person as an administrator does: `fleetwatch-confirm enrol` in a terminal, its
/// one-shot page opened in `tab` (whose virtual authenticator makes the passkey), and the line
/// it prints piped into the real executor's `approvers add -`. Returns the line and the
/// fingerprint the terminal printed, after checking that `approvers add` printed the same.
async fn enrol_in_terminal(w: &World, tab: &Page, person: &str, name: &str) -> (String, String) {
    enrol_in_terminal_on(w, tab, person, name, None).await
}

/// [`enrol_in_terminal`] with `fleetwatch-confirm enrol --port PORT` when `port` is given.
async fn enrol_in_terminal_on(
    w: &World,
    tab: &Page,
    person: &str,
    name: &str,
    port: Option<u16>,
) -> (String, String) {
    let approvers = w.h.dir.path().join("etc/approvers.pub");
    let enrolment = fleetwatch_e2e::enrol::start_on(person, name, &approvers, port);
    tab.goto(enrolment.url.clone()).await.expect("goto");
    wait_until(tab, "document.getElementById('start')").await;
    assert!(text(tab).await.contains(name));
    tab.find_element("#start")
        .await
        .expect("the enrol button")
        .click()
        .await
        .expect("click");
    wait_until(tab, "document.getElementById('status').className === 'ok'").await;
    screenshot(tab, &w.shot(&format!("enrolled-{person}.png"))).await;
    let (ok, out, err) = enrolment.finish();
    assert!(ok, "{err}");
    let print = err
        .lines()
        .find_map(|l| l.strip_prefix("fingerprint: "))
        .expect("the terminal prints the fingerprint")
        .to_owned();
    let added = w.h.cli(&["approvers", "add", "-"], Some(&out));
    let said = String::from_utf8_lossy(&added.stdout).into_owned();
    assert!(
        added.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&added.stderr)
    );
    assert!(
        said.contains(&format!("fingerprint: {print}")),
        "{said} vs {print}"
    );
    (out.trim().to_owned(), print)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_person_enrolled_in_the_terminal_is_listed_on_the_page_which_enrols_nothing() {
    let Some(w) = world_with(SimConfig::demo(), None, "").await else {
        return;
    };
    let tab = w.tab().await;
    virtual_authenticator(&tab).await;
    let (line, shown) = enrol_in_terminal(&w, &tab, "ana", "Ana Gómez").await;
    assert!(
        line.starts_with("approver ana ") && line.ends_with(" Ana Gómez"),
        "{line}"
    );
    let status = w.executor.status().await.expect("status");
    assert_eq!(status.passkeys_enrolled, 1);

    // The assistant's page lists her from the executor's Status, and offers no enrolment.
    let origin = format!("http://localhost:{}", w.port());
    w.login_at(&tab, &origin).await;
    tab.goto(format!("{origin}/passkeys")).await.expect("goto");
    wait_until(&tab, "document.getElementById('persons')").await;
    let body = text(&tab).await;
    assert!(
        body.contains("Ana Gómez")
            && body.contains(&shown)
            && body.contains("fleetwatch-confirm enrol"),
        "{body}"
    );
    let html = eval(&tab, "document.documentElement.outerHTML").await;
    let html = html.as_str().unwrap_or_default();
    assert!(
        !html.contains("sudo") && !html.contains("approvers add"),
        "{html}"
    );
    assert!(
        !html.contains("<form"),
        "no form on the passkeys view: {html}"
    );

    // The same pages in Spanish (screenshots): who approves, and a card whose Approve asks for
    // the passkey.
    let agent = SetUserAgentOverrideParams::builder()
        .user_agent("Mozilla/5.0 fleetwatch-test")
        .accept_language("es-ES,es;q=0.9")
        .build()
        .expect("params");
    tab.execute(agent).await.expect("accept-language");
    tab.goto(format!("{origin}/passkeys")).await.expect("goto");
    wait_until(&tab, "document.getElementById('persons')").await;
    assert!(text(&tab).await.contains("Quién aprueba"));
    screenshot(&tab, &w.shot("passkeys-es.png")).await;
    let devices = sandbox_devices(&w.h.sim);
    w.propose("batch_recording", record(&format!("{}-1", devices[0])), "x")
        .await;
    tab.goto(format!("{origin}/")).await.expect("goto");
    wait_until(&tab, "document.querySelector('form[data-challenge]')").await;
    screenshot(&tab, &w.shot("card-asks-passkey-es.png")).await;
    // Denied here, so the next card is the reboot below.
    tab.find_element("#deny")
        .await
        .expect("deny")
        .click()
        .await
        .expect("click");
    wait_until(&tab, "!document.getElementById('approve')").await;

    // Card → confirm page → passkey, in Spanish: the confirm page speaks the browser's
    // language, names the room on its button, and exactly one write follows, with the
    // canonical arguments.
    w.propose("batch_reboot", json!({"device_ids": [devices[2]]}), "x")
        .await;
    let button = confirm_disruptive(&tab, &origin).await;
    assert!(
        button.starts_with("Interrumpir «")
            && button.ends_with(&format!(
                "» ({}) para reiniciar el grabador: confirmar con mi passkey",
                devices[2]
            )),
        "{button}"
    );
    let shown = text(&tab).await;
    assert!(
        shown.contains("reiniciar el grabador") && shown.contains("Este cambio interrumpe"),
        "{shown}"
    );
    screenshot(&tab, &w.shot("confirm-page-es.png")).await;
    assert_eq!(w.h.writes(), 0);
    browser::press_confirm(&tab).await;
    back_on_the_page(&tab).await;
    let outcome = text(&tab).await;
    assert!(outcome.contains("Hecho"), "{outcome}");
    let writes = w.h.sim.writes();
    assert_eq!(writes.len(), 1, "{writes:?}");
    assert_eq!(writes[0].tool, "batch_reboot");
    assert_eq!(writes[0].arguments, json!({"device_ids": [devices[2]]}));
    w.finish().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn with_a_passkey_enrolled_the_person_approves_with_it_and_nothing_else_will_do() {
    // Closed by default: no quorum written, one person approves every change.
    let Some(w) = world_with(SimConfig::demo(), None, "").await else {
        return;
    };
    let devices = sandbox_devices(&w.h.sim);
    let tab = w.tab().await;
    let authenticator = virtual_authenticator(&tab).await;
    let origin = format!("http://localhost:{}", w.port());
    enrol_in_terminal(&w, &tab, "ana", "Ana Gómez").await;
    w.login_at(&tab, &origin).await;

    // A calm change: Approve asks the passkey, and exactly one write follows.
    let calm = w
        .propose(
            "batch_recording",
            record(&format!("{}-1", devices[0])),
            "record",
        )
        .await;
    tab.goto(format!("{origin}/")).await.expect("goto");
    wait_until(&tab, "document.getElementById('approve')").await;
    let body = text(&tab).await;
    assert!(!body.contains("not bound to a person"), "{body}");
    // The confirm page asks nothing on load, a calm change too: its button asks.
    approve_on_the_confirm_page(&tab, &origin).await;
    back_on_the_page(&tab).await;
    let outcome = text(&tab).await;
    assert!(outcome.contains("Done"), "{outcome}");
    assert_eq!(w.h.writes(), 1);
    assert_eq!(w.status(calm), Status::Executed);
    let accepted =
        w.h.audit_rows()
            .into_iter()
            .filter(|r| r.1 == "accepted")
            .collect::<Vec<_>>();
    assert!(
        accepted
            .last()
            .is_some_and(|r| r.4.contains("approved by Ana Gómez")),
        "the executor names the person: {accepted:?}"
    );

    // A disruptive change: Approve hands the tab over, the confirm page names the room on its
    // passkey button and asks only when it is pressed; one write.
    let reboot = w
        .propose(
            "batch_reboot",
            json!({"device_ids": [devices[2]]}),
            "restart",
        )
        .await;
    let button = confirm_disruptive(&tab, &origin).await;
    let room = button
        .strip_prefix("Interrupt “")
        .and_then(|b| {
            b.strip_suffix(&format!(
                "” ({}) to reboot the recorder: confirm with my passkey",
                devices[2]
            ))
        })
        .unwrap_or_else(|| panic!("the button names the room and its ID: {button:?}"));
    assert!(!room.is_empty());
    let warning = eval(&tab, "document.getElementById('disruptive').textContent").await;
    assert!(
        warning.as_str().is_some_and(|w| w.contains(room)),
        "{warning} names {room}"
    );
    screenshot(&tab, &w.shot("confirm-page-disruptive.png")).await;
    assert_eq!(
        w.h.writes(),
        1,
        "nothing is asked or written before the button"
    );
    browser::press_confirm(&tab).await;
    back_on_the_page(&tab).await;
    let outcome = text(&tab).await;
    assert!(outcome.contains("Done"), "{outcome}");
    assert_eq!(w.h.writes(), 2);
    assert_eq!(w.status(reboot), Status::Executed);

    // The key stops verifying the user: the page says so, nothing is consumed or written,
    // and the card can still be approved or denied.
    tab.execute(SetUserVerifiedParams::new(authenticator, false))
        .await
        .expect("WebAuthn.setUserVerified");
    let third = w
        .propose(
            "batch_recording",
            record(&format!("{}-1", devices[3])),
            "record",
        )
        .await;
    approve_on_the_confirm_page(&tab, &origin).await;
    wait_until(
        &tab,
        "document.getElementById('passkey-status').textContent.includes('did not answer')",
    )
    .await;
    screenshot(&tab, &w.shot("passkey-refused.png")).await;
    assert_eq!(w.h.writes(), 2);
    assert_eq!(w.status(third), Status::Pending);
    assert!(w.unused_approvals() >= 1, "the approval was not used up");
    w.finish().await;
}

/// Approving from another computer (README "Approving from your own computer"): the browser
/// reaches the approval page, the confirm page and a one-shot enrolment page opened with
/// `enrol --port` only through a relay that carries the bytes as SSH's forwarding does, and
/// every origin stays `http://localhost:PORT`. A person enrols, signs in, approves a calm
/// change with the passkey, and the executor writes once; each page was reached through the
/// relay.
#[tokio::test(flavor = "multi_thread")]
async fn approving_from_another_computer_through_forwarded_ports() {
    let enrol_port = fleetwatch_e2e::page::free_port();
    let Some(w) = world_built(SimConfig::demo(), None, "", Some(Forwarder::start())).await else {
        return;
    };
    let devices = sandbox_devices(&w.h.sim);
    let tab = w.tab().await;
    virtual_authenticator(&tab).await;
    let origin = format!("http://localhost:{}", w.port());
    enrol_in_terminal_on(&w, &tab, "ana", "Ana Gómez", Some(enrol_port)).await;
    w.login_at(&tab, &origin).await;
    let calm = w
        .propose(
            "batch_recording",
            record(&format!("{}-1", devices[0])),
            "record",
        )
        .await;
    approve_on_the_confirm_page(&tab, &origin).await;
    back_on_the_page(&tab).await;
    let outcome = text(&tab).await;
    assert!(outcome.contains("Done"), "{outcome}");
    assert_eq!(w.h.writes(), 1);
    assert_eq!(w.status(calm), Status::Executed);
    let forwarder = w.forwarder.as_ref().expect("the relay");
    let relayed: Vec<usize> = [w.port(), w.confirm.port, enrol_port]
        .into_iter()
        .map(|port| forwarder.relayed(port))
        .collect();
    assert!(
        relayed.iter().all(|n| *n > 0),
        "the page, the confirm page and the enrolment page each through the relay: {relayed:?}"
    );
    w.finish().await;
}

/// Opens the page, presses Approve on the card in front and, on the confirm page it hands the
/// tab to, the one button that asks the passkey.
async fn approve_on_the_confirm_page(tab: &Page, origin: &str) {
    tab.goto(format!("{origin}/")).await.expect("goto");
    browser::press_approve(tab).await;
    browser::press_confirm(tab).await;
}

/// Waits until the tab is back on the approval page with an outcome, after the hand-off to the
/// confirm page and the passkey there.
async fn back_on_the_page(tab: &Page) {
    wait_until(
        tab,
        "location.pathname === '/confirmed' || location.pathname === '/approve' || location.pathname === '/confirm' ? !!document.getElementById('heading') : false",
    )
    .await;
}

/// Clicks Approve on the card of a disruptive change and waits on the confirm page, which
/// asks nothing until its button is pressed; the button's words.
async fn confirm_disruptive(tab: &Page, origin: &str) -> String {
    tab.goto(format!("{origin}/")).await.expect("goto");
    browser::press_approve(tab).await;
    wait_until(
        tab,
        "document.getElementById('confirm-heading') && document.getElementById('passkey')",
    )
    .await;
    eval(tab, "document.getElementById('passkey').textContent")
        .await
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Approves a disruptive change through the confirm page's button, and waits for the page
/// that follows.
async fn approve_and_confirm(tab: &Page, origin: &str) -> String {
    confirm_disruptive(tab, origin).await;
    browser::press_confirm(tab).await;
    back_on_the_page(tab).await;
    text(tab).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_disruptive_change_waits_for_a_second_persons_passkey() {
    let Some(w) = world_with(SimConfig::demo(), None, "  quorum_disruptive: 2\n").await else {
        return;
    };
    let devices = sandbox_devices(&w.h.sim);
    let origin = format!("http://localhost:{}", w.port());
    // Two people, two browsers (contexts), each with their own passkey, both installed.
    let ana = w.tab().await;
    virtual_authenticator(&ana).await;
    let bo = w
        .browser
        .as_ref()
        .expect("browser")
        .page_in_new_context()
        .await;
    virtual_authenticator(&bo).await;
    for (tab, person, name) in [(&ana, "ana", "Ana Gómez"), (&bo, "bo", "Bo Lindqvist")] {
        enrol_in_terminal(&w, tab, person, name).await;
        w.login_at(tab, &origin).await;
    }

    // Ana approves a reboot: kept, nothing written.
    let reboot = w
        .propose(
            "batch_reboot",
            json!({"device_ids": [devices[2]]}),
            "restart",
        )
        .await;
    let said = approve_and_confirm(&ana, &origin).await;
    assert!(
        said.contains("Approved by Ana Gómez, waiting for a second person"),
        "{said}"
    );
    assert_eq!(w.h.writes(), 0);
    assert_eq!(w.status(reboot), Status::Pending);
    // Bo's card names her.
    bo.goto(format!("{origin}/")).await.expect("goto");
    wait_until(&bo, "document.getElementById('waiting')").await;
    let card = text(&bo).await;
    assert!(
        card.contains("Approved by Ana Gómez, waiting for a second person"),
        "{card}"
    );
    screenshot(&bo, &w.shot("waiting-for-second.png")).await;
    // Ana's passkey again: still waiting, and the page says it counts once.
    let said = approve_and_confirm(&ana, &origin).await;
    assert!(said.contains("counts once"), "{said}");
    assert_eq!(w.h.writes(), 0);
    assert_eq!(w.status(reboot), Status::Pending);
    // Bo's passkey: exactly one write, and the executor names both people.
    let said = approve_and_confirm(&bo, &origin).await;
    assert!(said.contains("Done"), "{said}");
    assert_eq!(w.h.writes(), 1);
    assert_eq!(w.status(reboot), Status::Executed);
    let accepted =
        w.h.audit_rows()
            .into_iter()
            .filter(|r| r.1 == "accepted")
            .collect::<Vec<_>>();
    assert!(
        accepted
            .last()
            .is_some_and(|r| r.4.contains("Ana Gómez") && r.4.contains("Bo Lindqvist")),
        "{accepted:?}"
    );

    // A denial after the first approval: nothing written, the card gone for both.
    let second = w
        .propose(
            "batch_reboot",
            json!({"device_ids": [devices[3]]}),
            "restart",
        )
        .await;
    let said = approve_and_confirm(&ana, &origin).await;
    assert!(said.contains("waiting for a second person"), "{said}");
    bo.goto(format!("{origin}/")).await.expect("goto");
    wait_until(&bo, "document.getElementById('deny')").await;
    bo.find_element("#deny")
        .await
        .expect("deny")
        .click()
        .await
        .expect("click");
    wait_until(&bo, "!document.getElementById('waiting')").await;
    assert_eq!(w.status(second), Status::Denied);
    for tab in [&ana, &bo] {
        tab.goto(format!("{origin}/")).await.expect("goto");
        wait_until(tab, "document.body").await;
        assert!(!text(tab).await.contains(&format!("Proposal #{second}")));
    }
    assert_eq!(w.h.writes(), 1);
    w.finish().await;
}
