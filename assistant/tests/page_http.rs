//! The approval page over real HTTP on loopback, without a browser: guards, headers, tokens,
//! origins, sign-in backoff, the secret file, cards and their Deny-only cases, approvals and
//! the concurrent-approve race. The executor is a stand-in on a Unix socket that speaks the
//! real wire protocol, verifies each approval's signature and counts every `Execute`.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fleetwatch::executor_client::ExecutorClient;
use fleetwatch::keys::ApproverKey;
use fleetwatch::page::{
    self, ManualClock, PageConfig, PageDeps, PageError, PageHandle, SecretDelivery,
};
use fleetwatch::store::{NewProposal, Status, Store, now_secs};
use fleetwatch_protocol::Refusal;
use fleetwatch_protocol::claims::{ApprovalClaims, TrustedKeys};
use fleetwatch_protocol::fleet::RoomBlock;
use fleetwatch_protocol::policy::Policy;
use fleetwatch_protocol::wire::{
    self, ChannelFacts, Description, DeviceFacts, EventFacts, Outcome, OutcomeKind, PublisherState,
    Request, Response, StatusReport, StreamFacts, ToolQuorum,
};
use futures_util::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio_util::codec::{Framed, LengthDelimitedCodec};

const DEV_A: &str = "2903456001";
const DEV_B: &str = "2903456002";
const STREAM: &str = "5d0e1c2b-3a49-4f58-8e67-7d6c5b4a3921";

/// `application/x-www-form-urlencoded` bodies, as a browser sends forms.
trait Formed {
    fn formed<K: AsRef<str>, V: AsRef<str>>(self, fields: &[(K, V)]) -> Self;
}

fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'*' => {
                (b as char).to_string()
            }
            b' ' => "+".to_owned(),
            other => format!("%{other:02X}"),
        })
        .collect()
}

impl Formed for reqwest::RequestBuilder {
    fn formed<K: AsRef<str>, V: AsRef<str>>(self, fields: &[(K, V)]) -> Self {
        let body: Vec<String> = fields
            .iter()
            .map(|(k, v)| format!("{}={}", urlencode(k.as_ref()), urlencode(v.as_ref())))
            .collect();
        self.header("content-type", "application/x-www-form-urlencoded")
            .body(body.join("&"))
    }
}

// ---- a stand-in executor ------------------------------------------------------------------

#[derive(Clone)]
enum Answer {
    Done,
    Errors(BTreeMap<String, String>),
    Unknown,
    Refuse(Refusal),
    Hang,
}

struct World {
    sign_in: bool,
    fence: bool,
    devices: Vec<DeviceFacts>,
    stream_found: bool,
    /// What the named channel's publisher for the stream destination is doing.
    publisher: PublisherState,
    event_matches: Option<bool>,
    fingerprint: String,
    describe_refusal: Option<Refusal>,
    answer: Answer,
    executes: Vec<ApprovalClaims>,
    trusted: TrustedKeys,
    /// What `Status` reports as enrolled passkeys.
    passkeys_enrolled: u32,
    /// The approver lines `Status` reports.
    approvers: Vec<String>,
    /// Whether `Status` reports the trial mode (the assistant's signature alone).
    trial: bool,
    /// The passkey assertions each `Execute` carried.
    assertions: Vec<Vec<fleetwatch_protocol::passkey::PasskeyAssertion>>,
    /// What `Status` reports as each tool's quorum.
    quorums: Vec<ToolQuorum>,
    /// What `Status` reports of the executor's limits.
    limits: fleetwatch_protocol::wire::LimitsReport,
    /// How many `Describe` requests the page sent.
    describes: usize,
    /// What `Status` says of who holds the confirm origin.
    confirm_origin_not_held: Option<String>,
    /// The freeze window the executor says holds every described change (None: none).
    frozen: Option<fleetwatch_protocol::wire::FreezeReport>,
}

fn device(id: &str, name: &str) -> DeviceFacts {
    DeviceFacts {
        id: id.to_owned(),
        on_team: true,
        allowlisted: true,
        name: name.to_owned(),
        model: "Pearl-2".to_owned(),
        firmware: "4.24.3".to_owned(),
        newest_firmware: "4.24.6".to_owned(),
        online: true,
        recording: false,
        channels: vec![
            ChannelFacts {
                number: "1".into(),
                name: "Program Mix".into(),
                recording: false,
                warnings: Vec::new(),
            },
            ChannelFacts {
                number: "2".into(),
                name: "Lectern".into(),
                recording: false,
                warnings: Vec::new(),
            },
        ],
        event: Some(EventFacts {
            id: "law-210".into(),
            title: "LAW 210".into(),
            start: "2030-01-01T10:00:00Z".into(),
            end: Some("2030-01-01T11:00:00Z".into()),
            confirmed: Some(false),
        }),
        warnings: Vec::new(),
        block: RoomBlock::None,
    }
}

fn describe(world: &World, policy: &Policy, tool: &str, arguments: &str) -> Response {
    if let Some(r) = &world.describe_refusal {
        return Response::Refused(r.clone());
    }
    let value: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
    let Ok(valid) = policy.validate(tool, &value) else {
        return Response::Refused(Refusal::ArgumentsInvalid);
    };
    let devices = valid
        .targets
        .iter()
        .map(|t| {
            world
                .devices
                .iter()
                .find(|d| &d.id == t)
                .cloned()
                .unwrap_or_else(|| DeviceFacts {
                    on_team: false,
                    name: String::new(),
                    channels: Vec::new(),
                    event: None,
                    ..device(t, "")
                })
        })
        .collect();
    Response::Described(Description {
        targets: valid.targets.clone(),
        names: Vec::new(),
        devices,
        stream: valid.stream_id.map(|id| StreamFacts {
            id,
            found: world.stream_found,
            name: "Sandbox RTMP".into(),
            host: "live.example.net".into(),
            publisher: world.publisher,
        }),
        event_matches: valid.event.as_ref().and(world.event_matches),
        fingerprint: world.fingerprint.clone(),
        team_id: None,
        disruptive: policy.is_disruptive(tool, &value),
        policy_digest: policy.digest(tool).unwrap_or_default(),
        schema_version: policy
            .propose_entry(tool)
            .map(|e| e.schema_version)
            .unwrap_or(0),
        frozen: world.frozen.clone(),
    })
}

async fn serve_executor(socket: &Path, world: Arc<Mutex<World>>, policy: Arc<Policy>) {
    let listener = tokio::net::UnixListener::bind(socket).unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let world = world.clone();
            let policy = policy.clone();
            tokio::spawn(async move {
                let codec = LengthDelimitedCodec::builder()
                    .max_frame_length(wire::MAX_FRAME)
                    .new_codec();
                let mut framed = Framed::new(stream, codec);
                let Some(Ok(frame)) = framed.next().await else {
                    return;
                };
                let Ok(request) = wire::decode_request(&frame) else {
                    return;
                };
                let (response, hang) = {
                    let mut w = world.lock().unwrap();
                    match request {
                        Request::Status => (
                            Response::Status(StatusReport {
                                version: "test".into(),
                                fence_configured: w.fence,
                                sandbox_sign_in: w.sign_in,
                                key_ids: w.trusted.key_ids(),
                                policy_digest: policy.whole_digest(),
                                chain_head: [0; 32],
                                passkeys_enrolled: w.passkeys_enrolled,
                                approvers: w.approvers.clone(),
                                trial: w.trial,
                                quorums: w.quorums.clone(),
                                limits: w.limits.clone(),
                                confirm_origin_not_held: w.confirm_origin_not_held.clone(),
                                freeze: w.frozen.iter().cloned().collect(),
                            }),
                            false,
                        ),
                        Request::Receipt(id) => (
                            Response::Receipt(Some(format!(
                                "{{\"receipt_of\": \"{}\"}}",
                                fleetwatch_protocol::hex::encode(&id)
                            ))),
                            false,
                        ),
                        // The page never asks for the rooms that can be changed.
                        Request::Rooms => (Response::Refused(Refusal::Internal), false),
                        Request::Describe(d) => {
                            w.describes += 1;
                            (describe(&w, &policy, &d.tool, &d.arguments), false)
                        }
                        Request::Execute(e) => {
                            let claims = w
                                .trusted
                                .verify(&e.approval)
                                .ok()
                                .and_then(|bytes| ApprovalClaims::decode(bytes).ok());
                            match claims {
                                None => (Response::Refused(Refusal::BadSignature), false),
                                Some(c) => {
                                    w.executes.push(c);
                                    w.assertions.push(e.approval.passkeys.clone());
                                    match w.answer.clone() {
                                        Answer::Done => (
                                            Response::Executed(Outcome {
                                                kind: OutcomeKind::Done,
                                                chain_head: [1; 32],
                                            }),
                                            false,
                                        ),
                                        Answer::Errors(m) => (
                                            Response::Executed(Outcome {
                                                kind: OutcomeKind::Error(m),
                                                chain_head: [1; 32],
                                            }),
                                            false,
                                        ),
                                        Answer::Unknown => (
                                            Response::Executed(Outcome {
                                                kind: OutcomeKind::Unknown,
                                                chain_head: [1; 32],
                                            }),
                                            false,
                                        ),
                                        Answer::Refuse(r) => (Response::Refused(r), false),
                                        Answer::Hang => {
                                            (Response::Refused(Refusal::Internal), true)
                                        }
                                    }
                                }
                            }
                        }
                    }
                };
                if hang {
                    tokio::time::sleep(Duration::from_secs(30)).await;
                    return;
                }
                let body = wire::encode_response(&response).unwrap();
                let _ = framed.send(tokio_util::bytes::Bytes::from(body)).await;
            });
        }
    });
}

// ---- the page under test ------------------------------------------------------------------

struct Env {
    dir: tempfile::TempDir,
    page: Option<PageHandle>,
    store: Arc<Mutex<Store>>,
    world: Arc<Mutex<World>>,
    clock: Arc<ManualClock>,
    policy: Arc<Policy>,
    port: u16,
    client: reqwest::Client,
}

fn load_policy() -> Arc<Policy> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../tool_policy.yaml"))
        .unwrap();
    Arc::new(Policy::from_yaml(&text).unwrap())
}

fn client_from(ip: Ipv4Addr) -> reqwest::Client {
    fleetwatch_signin::tls::client_builder()
        .redirect(reqwest::redirect::Policy::none())
        .local_address(IpAddr::V4(ip))
        .build()
        .unwrap()
}

struct Options {
    autonomy: bool,
    fence: bool,
    executor_timeout: Duration,
    port: u16,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            autonomy: true,
            fence: true,
            executor_timeout: Duration::from_secs(20),
            port: 0,
        }
    }
}

async fn prepare(
    dir: &tempfile::TempDir,
) -> (
    Arc<Mutex<World>>,
    Arc<Policy>,
    ApproverKey,
    std::path::PathBuf,
) {
    let state = dir.path().join("state");
    std::fs::create_dir_all(&state).unwrap();
    let key = ApproverKey::load_or_create(&state).unwrap();
    let policy = load_policy();
    // The operator has opened every category that proposes (a test closes one to see it held).
    for entry in policy.propose_entries() {
        fleetwatch::grants::open(&state, &policy, &entry.category).unwrap();
    }
    let world = Arc::new(Mutex::new(World {
        sign_in: true,
        fence: true,
        devices: vec![device(DEV_A, "Courtroom"), device(DEV_B, "Aula Magna")],
        stream_found: true,
        publisher: PublisherState::Unknown,
        event_matches: Some(true),
        fingerprint: "fp-1".into(),
        describe_refusal: None,
        answer: Answer::Done,
        executes: Vec::new(),
        trusted: TrustedKeys::from_keys([key.public()]),
        passkeys_enrolled: 0,
        // The trial mode, as the page tests that are not about persons need it.
        approvers: Vec::new(),
        trial: true,
        assertions: Vec::new(),
        describes: 0,
        confirm_origin_not_held: None,
        frozen: None,
        quorums: Vec::new(),
        limits: fleetwatch_protocol::wire::LimitsReport {
            cooldown_minutes: 10,
            writes_per_hour: 20,
            open_event_minutes: 240,
            ..fleetwatch_protocol::wire::LimitsReport::default()
        },
    }));
    let socket = dir.path().join("executor.sock");
    serve_executor(&socket, world.clone(), policy.clone()).await;
    (world, policy, key, socket)
}

async fn start_page(
    dir: &tempfile::TempDir,
    options: Options,
    key: ApproverKey,
    socket: &Path,
    policy: Arc<Policy>,
    store: Arc<Mutex<Store>>,
    clock: Arc<ManualClock>,
) -> Result<PageHandle, PageError> {
    let config = PageConfig {
        port: options.port,
        state_dir: dir.path().join("state"),
        autonomy_propose: options.autonomy,
        fence_configured: options.fence,
        secret_delivery: SecretDelivery::File,
        request_timeout: Duration::from_secs(60),
        clock,
        confirm_origin: CONFIRM.to_owned(),
    };
    let deps = PageDeps {
        store,
        executor: ExecutorClient::new(socket).with_timeout(options.executor_timeout),
        policy,
        key: Arc::new(key),
    };
    page::start(config, deps).await
}

async fn env_with(options: Options) -> Env {
    let dir = tempfile::tempdir().unwrap();
    let (world, policy, key, socket) = prepare(&dir).await;
    let store = Arc::new(Mutex::new(Store::open(&dir.path().join("state")).unwrap()));
    let clock = Arc::new(ManualClock::new());
    let page = start_page(
        &dir,
        options,
        key,
        &socket,
        policy.clone(),
        store.clone(),
        clock.clone(),
    )
    .await
    .unwrap();
    let port = page.addr.port();
    Env {
        dir,
        page: Some(page),
        store,
        world,
        clock,
        policy,
        port,
        client: client_from(Ipv4Addr::LOCALHOST),
    }
}

async fn env() -> Env {
    env_with(Options::default()).await
}

impl Env {
    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
    fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
    fn secret(&self) -> String {
        let path = self.page.as_ref().unwrap().secret_file.clone().unwrap();
        std::fs::read_to_string(path).unwrap().trim().to_owned()
    }
    fn propose(&self, tool: &str, args: Value, reason: &str) -> u64 {
        let valid = self.policy.validate(tool, &args).unwrap();
        self.insert(NewProposal {
            tool: tool.into(),
            arguments: valid.arguments.into_string(),
            targets: valid.targets,
            fingerprint: self.world.lock().unwrap().fingerprint.clone(),
            schema_version: self.policy.propose_entry(tool).unwrap().schema_version,
            policy_digest: self.policy.digest(tool).unwrap(),
            slot: "sandbox".into(),
            reason: reason.into(),
        })
    }
    /// Stores a proposal as given (the store is trusted data; the card must still cope).
    fn insert(&self, p: NewProposal) -> u64 {
        self.store
            .lock()
            .unwrap()
            .insert_proposal(&p, now_secs())
            .unwrap()
    }
    fn status(&self, id: u64) -> Status {
        self.store
            .lock()
            .unwrap()
            .proposal(id)
            .unwrap()
            .unwrap()
            .status
    }
    fn executes(&self) -> usize {
        self.world.lock().unwrap().executes.len()
    }
    fn approval_used(&self, approval: &str) -> i64 {
        self.store
            .lock()
            .unwrap()
            .connection()
            .query_row(
                "SELECT used FROM approvals WHERE id = ?1",
                [approval],
                |r| r.get(0),
            )
            .unwrap()
    }
    async fn login_from(&self, client: &reqwest::Client) -> String {
        let r = client
            .post(self.url("/login"))
            .header("origin", self.origin())
            .formed(&[("secret", self.secret()), ("tab", TAB.to_owned())])
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 303);
        let cookie = r
            .headers()
            .get("set-cookie")
            .unwrap()
            .to_str()
            .unwrap()
            .to_owned();
        assert!(
            cookie.contains("HttpOnly")
                && cookie.contains("SameSite=Strict")
                && cookie.contains("Path=/")
        );
        assert!(!cookie.contains(&self.secret()));
        cookie.split(';').next().unwrap().to_owned()
    }
    async fn login(&self) -> String {
        self.login_from(&self.client).await
    }
    /// The front page as a browser tab gets it: with a session, the shell's POST with this
    /// tab's value (the GET answers only the shell); without one, the sign-in form.
    async fn get(&self, cookie: &str, lang: &str) -> (u16, String) {
        let request = if cookie.is_empty() {
            self.client.get(self.url("/"))
        } else {
            self.client
                .post(self.url("/"))
                .header("origin", self.origin())
                .formed(&tab_only())
        };
        let r = request
            .header("cookie", cookie)
            .header("accept-language", lang)
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.text().await.unwrap())
    }
    /// The front page, whatever it shows.
    async fn card_or_empty(&self, cookie: &str) -> String {
        self.get(cookie, "en").await.1
    }
    async fn card(&self, cookie: &str) -> String {
        let (status, body) = self.get(cookie, "en").await;
        assert_eq!(status, 200);
        body
    }
    async fn post(&self, path: &str, cookie: &str, fields: &[(String, String)]) -> (u16, String) {
        let r = self
            .client
            .post(self.url(path))
            .header("cookie", cookie)
            .header("origin", self.origin())
            .formed(fields)
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.text().await.unwrap())
    }
}

/// The confirm page's origin these pages hand approvals to.
const CONFIRM: &str = "http://localhost:47998";

/// The per-tab value the page's script would keep in this tab's `sessionStorage`; every sign-in
/// of these tests sends it, and [`form`] adds it to every form as the script does.
const TAB: &str = "5ab0c6d1e2f30415263748596a7b8c9d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f7";

/// A form of no fields but this tab's value: how the page's shell asks for a view.
fn tab_only() -> Vec<(String, String)> {
    vec![("tab".to_owned(), TAB.to_owned())]
}

/// The hidden fields of the form posting to `action`, with this tab's value the page's script
/// adds.
fn form(html: &str, action: &str) -> Vec<(String, String)> {
    let start = html
        .find(&format!("action=\"{action}\""))
        .unwrap_or_else(|| panic!("no {action} form in\n{html}"));
    let end = start + html[start..].find("</form>").unwrap();
    let mut out = Vec::new();
    let mut rest = &html[start..end];
    while let Some(i) = rest.find("name=\"") {
        rest = &rest[i + 6..];
        let name = &rest[..rest.find('"').unwrap()];
        let v = rest.find("value=\"").unwrap() + 7;
        let value = &rest[v..v + rest[v..].find('"').unwrap()];
        out.push((name.to_owned(), value.to_owned()));
    }
    out.push(("tab".to_owned(), TAB.to_owned()));
    out
}

fn get_field(fields: &[(String, String)], name: &str) -> String {
    fields.iter().find(|(n, _)| n == name).unwrap().1.clone()
}

fn with(fields: &[(String, String)], name: &str, value: &str) -> Vec<(String, String)> {
    fields
        .iter()
        .map(|(n, v)| {
            (
                n.clone(),
                if n == name {
                    value.to_owned()
                } else {
                    v.clone()
                },
            )
        })
        .collect()
}

fn record(channel: &str) -> Value {
    json!({"action": "start", "device_ids": [channel]})
}

fn header_check(r: &reqwest::Response) {
    let h = r.headers();
    let get = |n: &str| {
        h.get(n)
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default()
    };
    assert_eq!(
        get("content-security-policy"),
        // Forms post to the page itself and hand approvals to the confirm page, nowhere else.
        format!(
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self' {CONFIRM}; frame-ancestors 'none'; base-uri 'none'"
        ),
        "{}",
        r.url()
    );
    assert_eq!(get("cache-control"), "no-store");
    assert_eq!(get("x-content-type-options"), "nosniff");
    assert_eq!(get("x-frame-options"), "DENY");
    assert_eq!(get("referrer-policy"), "no-referrer");
}

// ---- serving rules ------------------------------------------------------------------------

#[tokio::test]
async fn every_response_carries_the_security_headers() {
    let e = env().await;
    let c = &e.client;
    let host_bad = c
        .get(e.url("/"))
        .header("host", "evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(host_bad.status(), 403);
    header_check(&host_bad);
    for (path, status) in [
        ("/", 200),
        ("/static/countdown.js", 200),
        ("/static/page.css", 200),
        ("/nope", 404),
        ("/approve", 405),
    ] {
        let r = c.get(e.url(path)).send().await.unwrap();
        assert_eq!(r.status(), status, "{path}");
        header_check(&r);
    }
    let big = c
        .post(e.url("/login"))
        .header("origin", e.origin())
        .body("secret=".to_owned() + &"a".repeat(5000))
        .send()
        .await
        .unwrap();
    assert_eq!(big.status(), 413);
    header_check(&big);
    let no_origin = c
        .post(e.url("/login"))
        .formed(&[("secret", "x")])
        .send()
        .await
        .unwrap();
    assert_eq!(no_origin.status(), 403);
    header_check(&no_origin);
    let wrong = c
        .post(e.url("/login"))
        .header("origin", e.origin())
        .formed(&[("secret", "x")])
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    header_check(&wrong);
    let right = c
        .post(e.url("/login"))
        .header("origin", e.origin())
        .formed(&[("secret", e.secret()), ("tab", TAB.to_owned())])
        .send()
        .await
        .unwrap();
    assert_eq!(right.status(), 303);
    header_check(&right);
    let js = c.get(e.url("/static/countdown.js")).send().await.unwrap();
    assert!(
        js.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/javascript")
    );
}

#[tokio::test]
async fn the_host_header_must_name_this_page() {
    let e = env().await;
    let cookie = e.login().await;
    let id = e.propose("batch_recording", record(&format!("{DEV_A}-1")), "why");
    let html = e.card(&cookie).await;
    let fields = form(&html, "/approve");
    let port = e.port;
    for (host, want) in [
        (format!("127.0.0.1:{port}"), 200),
        (format!("localhost:{port}"), 200),
        (format!("LOCALHOST:{port}"), 200),
        ("127.0.0.1".to_owned(), 403),
        (format!("127.0.0.1:{}", port.wrapping_add(1)), 403),
        (format!("evil.example:{port}"), 403),
        (format!("127.0.0.1.evil.example:{port}"), 403),
        (format!("[::1]:{port}"), 200),
        (format!("[::2]:{port}"), 403),
        (format!("[::1]:{}", port.wrapping_add(1)), 403),
        (format!("localhost.evil.example:{port}"), 403),
    ] {
        let r = e
            .client
            .get(e.url("/"))
            .header("host", &host)
            .header("cookie", &cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), want, "{host}");
    }
    // DNS rebinding: a foreign host name whose page posts to "itself" with a matching Origin.
    let r = e
        .client
        .post(e.url("/approve"))
        .header("host", format!("evil.example:{port}"))
        .header("origin", format!("http://evil.example:{port}"))
        .header("cookie", &cookie)
        .formed(&fields)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    let r = e
        .client
        .post(e.url("/approve"))
        .header("host", format!("evil.example:{port}"))
        .header("origin", e.origin())
        .header("cookie", &cookie)
        .formed(&fields)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    assert_eq!(e.approval_used(&get_field(&fields, "approval")), 0);
    assert_eq!(e.status(id), Status::Pending);
    assert_eq!(e.executes(), 0);
}

#[tokio::test]
async fn bodies_over_four_kib_are_refused_even_without_a_length() {
    let e = env().await;
    // Chunked: no Content-Length to check up front, so the cap applies while reading.
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", e.port))
        .await
        .unwrap();
    let chunk = "a".repeat(3000);
    let head = format!(
        "POST /login HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nOrigin: {}\r\nContent-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
        e.port,
        e.origin()
    );
    s.write_all(head.as_bytes()).await.unwrap();
    for _ in 0..2 {
        s.write_all(format!("{:x}\r\n{chunk}\r\n", chunk.len()).as_bytes())
            .await
            .unwrap();
    }
    s.write_all(b"0\r\n\r\n").await.unwrap();
    let mut answer = String::new();
    let _ = tokio::time::timeout(Duration::from_secs(30), s.read_to_string(&mut answer)).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    let small = e
        .client
        .post(e.url("/login"))
        .header("origin", e.origin())
        .body("secret=".to_owned() + &"a".repeat(4000))
        .header("content-type", "application/x-www-form-urlencoded")
        .send()
        .await
        .unwrap();
    assert_eq!(small.status(), 401, "a body under the cap is read");
}

#[tokio::test]
async fn post_origin_rules() {
    let e = env().await;
    let p = e.port;
    let other = p.wrapping_add(1);
    let cases: Vec<(Option<String>, Option<&str>, u16)> = vec![
        (Some(format!("http://127.0.0.1:{p}")), None, 303),
        (Some(format!("http://localhost:{p}")), None, 303),
        (
            Some(format!("http://127.0.0.1:{p}")),
            Some("same-origin"),
            303,
        ),
        (None, Some("same-origin"), 303),
        (Some(format!("http://127.0.0.1:{other}")), None, 403),
        (Some(format!("http://localhost:{other}")), None, 403),
        (Some(format!("https://127.0.0.1:{p}")), None, 403),
        (Some(format!("http://127.0.0.1:{p}/")), None, 403),
        (Some("null".to_owned()), None, 403),
        // What a browser sends for the page's own forms under `Referrer-Policy: no-referrer`.
        (Some("null".to_owned()), Some("same-origin"), 303),
        (Some("null".to_owned()), Some("same-site"), 403),
        (Some("null".to_owned()), Some("cross-site"), 403),
        (Some(format!("http://evil.example:{p}")), None, 403),
        (
            Some(format!("http://127.0.0.1:{p}")),
            Some("same-site"),
            403,
        ),
        (
            Some(format!("http://127.0.0.1:{other}")),
            Some("same-origin"),
            403,
        ),
        (None, Some("same-site"), 403),
        (None, Some("cross-site"), 403),
        (None, Some("none"), 403),
        (None, None, 403),
    ];
    for (origin, site, want) in cases {
        let mut r = e
            .client
            .post(e.url("/login"))
            .formed(&[("secret", e.secret()), ("tab", TAB.to_owned())]);
        if let Some(o) = &origin {
            r = r.header("origin", o);
        }
        if let Some(s) = site {
            r = r.header("sec-fetch-site", s);
        }
        let got = r.send().await.unwrap().status().as_u16();
        assert_eq!(got, want, "origin {origin:?} sec-fetch-site {site:?}");
    }
}

#[tokio::test]
async fn the_page_will_not_start_without_its_preconditions() {
    let dir = tempfile::tempdir().unwrap();
    let (world, policy, key, socket) = prepare(&dir).await;
    world.lock().unwrap().sign_in = false;
    let store = Arc::new(Mutex::new(Store::open(&dir.path().join("state")).unwrap()));
    let clock = Arc::new(ManualClock::new());
    let options = Options {
        autonomy: false,
        fence: false,
        ..Options::default()
    };
    let err = start_page(
        &dir,
        options,
        key,
        &socket,
        policy.clone(),
        store.clone(),
        clock.clone(),
    )
    .await
    .err()
    .unwrap();
    let text = err.to_string();
    assert!(text.contains("autonomy: propose"), "{text}");
    assert!(text.contains("FLEETWATCH_WRITE_DEVICE_IDS"), "{text}");
    assert!(text.contains("sandbox sign-in"), "{text}");
    assert!(
        !dir.path()
            .join("state")
            .join(page::secret::SECRET_FILE)
            .exists()
    );
    // No executor at all.
    let key = ApproverKey::load_or_create(&dir.path().join("state")).unwrap();
    let err = start_page(
        &dir,
        Options::default(),
        key,
        &dir.path().join("missing.sock"),
        policy,
        store,
        clock,
    )
    .await
    .err()
    .unwrap();
    assert!(err.to_string().contains("does not answer Status"), "{err}");
}

// ---- the secret and sessions --------------------------------------------------------------

#[tokio::test]
async fn the_secret_file_is_private_replaced_and_removed() {
    let dir = tempfile::tempdir().unwrap();
    let (_world, policy, key, socket) = prepare(&dir).await;
    let stale = dir.path().join("state").join(page::secret::SECRET_FILE);
    std::fs::write(&stale, "stale\n").unwrap();
    std::fs::set_permissions(&stale, std::fs::Permissions::from_mode(0o644)).unwrap();
    let store = Arc::new(Mutex::new(Store::open(&dir.path().join("state")).unwrap()));
    let handle = start_page(
        &dir,
        Options::default(),
        key,
        &socket,
        policy,
        store.clone(),
        Arc::new(ManualClock::new()),
    )
    .await
    .unwrap();
    let path = handle.secret_file.clone().unwrap();
    assert_eq!(path, stale);
    let meta = std::fs::metadata(&path).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let secret = std::fs::read_to_string(&path).unwrap().trim().to_owned();
    assert_eq!(secret.len(), 64);
    assert!(secret.bytes().all(|b| b.is_ascii_hexdigit()));
    assert!(handle.announcement.contains(&path.display().to_string()));
    assert!(!handle.announcement.contains(&secret));
    assert_eq!(handle.addr.ip(), IpAddr::V4(Ipv4Addr::LOCALHOST));
    handle.shutdown().await.unwrap();
    assert!(!path.exists(), "the secret file is removed at a clean stop");
    // The secret never reached the audit table.
    let rows = store.lock().unwrap().audit_rows().unwrap();
    assert!(rows.iter().all(|r| !r.detail.contains(&secret)));
}

#[tokio::test]
async fn a_post_needs_the_value_of_the_tab_that_signed_in() {
    let e = env().await;
    let cookie = e.login().await;
    let id = e.propose("batch_recording", record(&format!("{DEV_A}-1")), "why");
    let fields = form(&e.card(&cookie).await, "/approve");
    // Another tab signs in: a second session with its own value.
    let other_tab = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    let r = e
        .client
        .post(e.url("/login"))
        .header("origin", e.origin())
        .formed(&[("secret", e.secret()), ("tab", other_tab.to_owned())])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    let without: Vec<(String, String)> =
        fields.iter().filter(|(k, _)| k != "tab").cloned().collect();
    let other = with(&fields, "tab", other_tab);
    let twice: Vec<(String, String)> = fields
        .iter()
        .cloned()
        .chain([("tab".to_owned(), other_tab.to_owned())])
        .collect();
    for (case, body) in [
        ("the cookie alone", &without),
        ("another tab's value", &other),
        ("two values", &twice),
    ] {
        for path in ["/approve", "/deny", "/deny-all"] {
            let r = e
                .client
                .post(e.url(path))
                .header("origin", e.origin())
                .header("cookie", &cookie)
                .formed(body)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 403, "{case} on {path}");
            // With the sign-in form, so this tab can bind a session of its own.
            let body = r.text().await.unwrap();
            assert!(body.contains("name=\"secret\""), "{case} on {path}: {body}");
        }
    }
    assert_eq!(e.approval_used(&get_field(&fields, "approval")), 0);
    assert_eq!(e.status(id), Status::Pending);
    assert_eq!(e.executes(), 0);
    // The right secret from a page whose script did not run makes no session.
    let r = e
        .client
        .post(e.url("/login"))
        .header("origin", e.origin())
        .formed(&[("secret", e.secret())])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert!(r.headers().get("set-cookie").is_none());
    // With this tab's value, the same form goes through.
    let r = e
        .client
        .post(e.url("/approve"))
        .header("origin", e.origin())
        .header("cookie", &cookie)
        .formed(&fields)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(e.executes(), 1);
}

/// POSTs without a session, sent again and again: each refused, each counted, but written
/// under the burst rule (a row a second per kind and reason, `"n"` for the ones it stands for),
/// so a script on this machine cannot fill the disk through the page's audit.
#[tokio::test]
async fn refused_posts_sent_again_and_again_are_counted_in_few_rows() {
    let e = env().await;
    let count = |e: &Env| -> (usize, u64) {
        let rows: Vec<_> = e
            .store
            .lock()
            .unwrap()
            .audit_rows()
            .unwrap()
            .into_iter()
            .filter(|r| r.kind == "page_tab_refused")
            .collect();
        let counted = rows
            .iter()
            .map(|r| {
                serde_json::from_str::<Value>(&r.detail).unwrap()["n"]
                    .as_u64()
                    .unwrap_or(1)
            })
            .sum();
        (rows.len(), counted)
    };
    const SENT: u64 = 200;
    let started = std::time::Instant::now();
    for i in 0..SENT {
        let r = e
            .client
            .post(e.url(if i % 2 == 0 { "/deny" } else { "/approve" }))
            .header("origin", e.origin())
            .formed(&[("tab", "x".to_owned())])
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 403);
    }
    let seconds = started.elapsed().as_secs();
    // The held count is written once its second is over.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while count(&e).1 < SENT && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (rows, counted) = count(&e);
    assert_eq!(counted, SENT, "every refusal counted");
    assert!(
        rows as u64 <= seconds + 3,
        "{rows} rows for {SENT} refusals in {seconds} s"
    );
    assert!(matches!(
        e.store.lock().unwrap().verify_audit().unwrap(),
        fleetwatch::store::ChainCheck::Intact { .. }
    ));
}

/// The approver line of a software Ed25519 passkey (seed, credential ID `[seed, 1, 2, 3]`) as
/// `fleetwatch-confirm enrol` prints it and the executor's `Status` reports it.
fn approver_line(seed: u8, person: &str, name: &str) -> String {
    let key = ed25519_dalek::SigningKey::from_bytes(&[seed; 32]).verifying_key();
    let mut spki = vec![
        0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
    ];
    spki.extend_from_slice(key.as_bytes());
    fleetwatch_protocol::passkey::PasskeyRecord::for_person(
        person,
        fleetwatch_protocol::passkey::Backup::DeviceBound,
        fleetwatch_protocol::passkey::Algorithm::Ed25519,
        vec![seed, 1, 2, 3],
        spki,
        name,
    )
    .unwrap()
    .to_line()
}

#[tokio::test]
async fn the_page_enrols_nothing_and_lists_who_the_executor_has_enrolled() {
    let e = env().await;
    let cookie = e.login().await;
    {
        let mut w = e.world.lock().unwrap();
        w.trial = false;
        w.passkeys_enrolled = 2;
        w.approvers = vec![
            approver_line(3, "siobhan", "Siobhán O'Neill"),
            approver_line(4, "siobhan", "Siobhán O'Neill"),
        ];
    }
    let (status, page) = e.post("/passkeys", &cookie, &tab_only()).await;
    assert_eq!(status, 200);
    // One person with two passkeys, each fingerprint, device-bound; how people are enrolled.
    assert_eq!(
        page.matches("<strong>Siobhán O&#39;Neill</strong>").count(),
        1,
        "{page}"
    );
    for line in &e.world.lock().unwrap().approvers {
        let record = fleetwatch_protocol::passkey::PasskeyRecord::parse_line(line).unwrap();
        assert!(page.contains(&record.fingerprint().to_string()), "{page}");
    }
    assert!(page.contains("device-bound"), "{page}");
    assert!(page.contains("fleetwatch-confirm enrol"), "{page}");
    // No form, no enrolment script, no command to paste on any page the assistant serves.
    assert!(
        !page.contains("<form method=\"post\" action=\"/passkeys\""),
        "{page}"
    );
    let card = e.card_or_empty(&cookie).await;
    for html in [&page, &card] {
        assert!(!html.contains("sudo"), "{html}");
        assert!(!html.contains("approvers add"), "{html}");
        assert!(!html.contains("credentials.create"), "{html}");
    }
    for asset in [
        "/static/tab.js",
        "/static/approve.js",
        "/static/countdown.js",
    ] {
        let text = e
            .client
            .get(e.url(asset))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(!text.contains("credentials.create"), "{asset}");
        assert!(
            !text.contains("approvers add") && !text.contains("sudo"),
            "{asset}"
        );
    }
    let r = e
        .client
        .get(e.url("/static/passkey.js"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    // A POST with the former enrolment's fields only shows the list (a view is asked for by
    // POST with the tab's value): nothing is kept, nothing of it is shown.
    let (status, body) = e
        .post(
            "/passkeys",
            &cookie,
            &[
                ("name".to_owned(), "Eve".to_owned()),
                ("credential_id".to_owned(), "AQID".to_owned()),
                ("algorithm".to_owned(), "-8".to_owned()),
                ("spki".to_owned(), "AAAA".to_owned()),
                ("tab".to_owned(), TAB.to_owned()),
            ],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(!body.contains("Eve"), "{body}");
    assert_eq!(e.world.lock().unwrap().approvers.len(), 2);
    // Nobody enrolled (closed) and the trial mode are each said in words.
    {
        let mut w = e.world.lock().unwrap();
        w.passkeys_enrolled = 0;
        w.approvers.clear();
    }
    let (_, page) = e.post("/passkeys", &cookie, &tab_only()).await;
    assert!(
        page.contains("Nobody is enrolled on the executor"),
        "{page}"
    );
    e.world.lock().unwrap().trial = true;
    let (_, page) = e.post("/passkeys", &cookie, &tab_only()).await;
    assert!(page.contains("trial mode"), "{page}");
    // Without a session there is only the sign-in form.
    let r = e.client.get(e.url("/passkeys")).send().await.unwrap();
    assert!(r.text().await.unwrap().contains("name=\"secret\""));
}

#[tokio::test]
async fn with_passkeys_required_an_approval_without_one_uses_nothing_up() {
    use base64::Engine as _;
    let e = env().await;
    let cookie = e.login().await;
    // Without passkeys the header says approvals are not bound to a person.
    assert!(
        e.card_or_empty(&cookie)
            .await
            .contains("not bound to a person")
    );
    {
        let mut w = e.world.lock().unwrap();
        w.passkeys_enrolled = 1;
        w.trial = false;
    }
    let id = e.propose("batch_recording", record(&format!("{DEV_A}-1")), "why");
    // When the executor says the confirm origin is not held as an Execute requires, the page
    // says every passkey will be refused, before anyone reaches for one.
    e.world.lock().unwrap().confirm_origin_not_held =
        Some("uid 1000 also listens on port 8768".into());
    let html = e.card(&cookie).await;
    assert!(html.contains("not held by its own service"), "{html}");
    e.world.lock().unwrap().confirm_origin_not_held = None;
    let html = e.card(&cookie).await;
    assert!(!html.contains("not held by its own service"), "{html}");
    assert!(!html.contains("not bound to a person"), "{html}");
    assert!(
        html.contains("This executor requires your passkey"),
        "the card says Approve will ask for it: {html}"
    );
    // The card asks for the passkey over the exact claims the approval will send.
    let challenge = {
        let start = html.find("data-challenge=\"").expect("a challenge") + 16;
        html[start..start + html[start..].find('"').unwrap()].to_owned()
    };
    // The page asks no passkey itself: no script of it calls the browser's passkey API.
    assert!(!html.contains("/static/approve.js"));
    let fields = form(&html, "/approve");
    // No assertion: Approve hands the tab to the confirm page with the exact claims bytes and
    // a return token, and uses nothing up.
    let (status, body) = e.post("/approve", &cookie, &fields).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(&format!("action=\"{CONFIRM}/\"")), "{body}");
    assert!(body.contains("/static/submit.js"), "{body}");
    let handoff = form(&body, &format!("{CONFIRM}/"));
    let handed_claims = get_field(&handoff, "claims");
    let return_token = get_field(&handoff, "return");
    assert_eq!(e.approval_used(&get_field(&fields, "approval")), 0);
    assert_eq!(e.status(id), Status::Pending);
    assert_eq!(e.executes(), 0);
    // The answer comes back only from the confirm page's origin, and only for those claims.
    let confirmed = |claims: &str, origin: &str| {
        let body = [
            ("return".to_owned(), return_token.clone()),
            ("claims".to_owned(), claims.to_owned()),
            ("credential_id".to_owned(), "Y3JlZGVudGlhbA".to_owned()),
            ("authenticator_data".to_owned(), "BQUF".to_owned()),
            ("client_data_json".to_owned(), "e30".to_owned()),
            ("signature".to_owned(), "BgYG".to_owned()),
        ];
        e.client
            .post(e.url("/confirmed"))
            .header("cookie", cookie.as_str())
            .header("origin", origin.to_owned())
            .formed(&body)
            .send()
    };
    let r = confirmed(&handed_claims, &e.origin()).await.unwrap();
    assert_eq!(r.status(), 403, "only the confirm page returns an answer");
    let other = base64::engine::general_purpose::STANDARD.encode(b"other claims");
    let r = confirmed(&other, CONFIRM).await.unwrap();
    assert_eq!(r.status(), 409);
    assert!(r.text().await.unwrap().contains("another change"));
    assert_eq!(e.executes(), 0);
    // Fields that are not base64url are refused the same way.
    let garbled = with(&fields, "signature", "!!");
    let garbled = with(&garbled, "credential_id", "AA");
    let (status, _) = e.post("/approve", &cookie, &garbled).await;
    assert_eq!(status, 409);
    assert_eq!(e.executes(), 0);
    // The confirm page's answer runs the approval once, carrying the assertion beside the
    // assistant's signature over the very bytes the confirm page was handed.
    let r = confirmed(&handed_claims, CONFIRM).await.unwrap();
    let (status, body) = (r.status().as_u16(), r.text().await.unwrap());
    assert_eq!(status, 200, "{body}");
    let w = e.world.lock().unwrap();
    assert_eq!(w.executes.len(), 1);
    assert_eq!(w.assertions[0].len(), 1);
    assert_eq!(w.assertions[0][0].credential_id, b"credential");
    let sent = w.executes[0].encode().unwrap();
    assert_eq!(
        fleetwatch_protocol::passkey::challenge_base64url(&sent),
        challenge
    );
    assert_eq!(
        base64::engine::general_purpose::STANDARD.encode(&sent),
        handed_claims
    );
}

#[tokio::test]
async fn the_page_holds_its_port_on_both_loopback_addresses() {
    let e = env().await;
    let page = e.page.as_ref().unwrap();
    assert!(
        page.announcement
            .contains(&format!("http://localhost:{}/", e.port)),
        "{}",
        page.announcement
    );
    let v6 = std::net::SocketAddr::from((Ipv6Addr::LOCALHOST, e.port));
    let taken = std::net::TcpListener::bind(v6);
    if page.ipv6 {
        // Nobody else can take localhost's other address, and the page answers there.
        assert_eq!(
            taken.err().map(|e| e.kind()),
            Some(std::io::ErrorKind::AddrInUse)
        );
        let client = fleetwatch_signin::tls::client_builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let r = client
            .get(format!("http://[::1]:{}/", e.port))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let r = client
            .get(format!("http://localhost:{}/", e.port))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
    } else {
        // A host without IPv6 loopback: nobody can bind ::1 at all.
        assert!(taken.is_err(), "::1 was free for someone else");
    }
}

#[tokio::test]
async fn a_port_someone_else_holds_on_either_loopback_address_refuses_the_start() {
    let Ok(squatter) = std::net::TcpListener::bind((Ipv6Addr::LOCALHOST, 0)) else {
        // No IPv6 loopback on this host: nobody can squat ::1 either.
        return;
    };
    let port = squatter.local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let (_world, policy, key, socket) = prepare(&dir).await;
    let store = Arc::new(Mutex::new(Store::open(&dir.path().join("state")).unwrap()));
    let result = start_page(
        &dir,
        Options {
            port,
            ..Options::default()
        },
        key,
        &socket,
        policy,
        store,
        Arc::new(ManualClock::new()),
    )
    .await;
    let Err(err) = result else {
        panic!("started although [::1]:{port} belongs to someone else")
    };
    let text = err.to_string();
    assert!(text.contains(&format!("[::1]:{port}")), "{text}");
    // And nothing of the page is left on 127.0.0.1.
    assert!(std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok());
}

#[tokio::test]
async fn wrong_entries_back_off_per_address_and_globally() {
    let e = env().await;
    let s = Duration::from_secs;
    let try_from = |client: reqwest::Client, secret: String| {
        let url = e.url("/login");
        let origin = e.origin();
        async move {
            let r = client
                .post(url)
                .header("origin", origin)
                .formed(&[("secret", secret), ("tab", TAB.to_owned())])
                .send()
                .await
                .unwrap();
            let retry = r
                .headers()
                .get("retry-after")
                .map(|v| v.to_str().unwrap().to_owned());
            (r.status().as_u16(), retry)
        }
    };
    let a = e.client.clone();
    let wrong = || "0".repeat(64);
    for _ in 0..3 {
        assert_eq!(try_from(a.clone(), wrong()).await.0, 401);
    }
    // Waiting: even the right secret is not checked, and asking again does not lengthen it.
    assert_eq!(
        try_from(a.clone(), e.secret()).await,
        (429, Some("2".to_owned()))
    );
    e.clock.advance(s(1));
    for _ in 0..5 {
        assert_eq!(
            try_from(a.clone(), wrong()).await,
            (429, Some("1".to_owned()))
        );
    }
    // Another address is not slowed by this one.
    let b = client_from(Ipv4Addr::new(127, 0, 0, 2));
    assert_eq!(try_from(b.clone(), wrong()).await.0, 401);
    e.clock.advance(s(1));
    assert_eq!(try_from(a.clone(), wrong()).await.0, 401);
    assert_eq!(
        try_from(a.clone(), wrong()).await,
        (429, Some("4".to_owned()))
    );
    e.clock.advance(s(4));
    assert_eq!(try_from(a.clone(), wrong()).await.0, 401);
    assert_eq!(
        try_from(a.clone(), wrong()).await,
        (429, Some("8".to_owned()))
    );
    e.clock.advance(s(8));
    // A right entry resets the address.
    assert_eq!(try_from(a.clone(), e.secret()).await.0, 303);
    for _ in 0..3 {
        assert_eq!(try_from(a.clone(), wrong()).await.0, 401);
    }
    // The cap: the wait never exceeds a minute.
    for expect in [2u64, 4, 8, 16, 32, 60, 60] {
        let (status, retry) = try_from(a.clone(), wrong()).await;
        assert_eq!((status, retry), (429, Some(expect.to_string())));
        e.clock.advance(s(expect));
        assert_eq!(try_from(a.clone(), wrong()).await.0, 401);
    }
    e.clock.advance(s(120));
    // Global ceiling: wrong entries spread over many addresses slow everyone.
    let mut count = 0;
    'outer: for host in 10u8..40 {
        let c = client_from(Ipv4Addr::new(127, 0, 0, host));
        for _ in 0..3 {
            if count == page::throttle::GLOBAL_MAX {
                break 'outer;
            }
            assert_eq!(try_from(c.clone(), wrong()).await.0, 401);
            count += 1;
        }
    }
    let fresh = client_from(Ipv4Addr::new(127, 0, 0, 99));
    assert_eq!(try_from(fresh.clone(), e.secret()).await.0, 429);
    e.clock.advance(s(61));
    assert_eq!(try_from(fresh, e.secret()).await.0, 303);
}

// ---- tokens -------------------------------------------------------------------------------

#[tokio::test]
async fn every_post_needs_the_session_and_a_token_bound_to_purpose_session_and_proposal() {
    let e = env().await;
    let cookie = e.login().await;
    let other_cookie = e.login().await;
    let first = e.propose("batch_recording", record(&format!("{DEV_A}-1")), "one");
    let second = e.propose("batch_recording", record(&format!("{DEV_B}-1")), "two");
    let html = e.card(&cookie).await;
    let approve = form(&html, "/approve");
    let deny = form(&html, "/deny");
    let deny_all = form(&html, "/deny-all");
    let approval = get_field(&approve, "approval");
    let forged = [
        ("no session", "/approve", String::new(), approve.clone()),
        (
            "another session",
            "/approve",
            other_cookie.clone(),
            approve.clone(),
        ),
        (
            "forged session",
            "/approve",
            "fleetwatch_page=00".to_owned(),
            approve.clone(),
        ),
        (
            "other proposal",
            "/approve",
            cookie.clone(),
            with(&approve, "proposal", &second.to_string()),
        ),
        (
            "no token",
            "/approve",
            cookie.clone(),
            with(&approve, "token", ""),
        ),
        (
            "deny token",
            "/approve",
            cookie.clone(),
            with(&approve, "token", &get_field(&deny, "token")),
        ),
        (
            "card token confirms",
            "/confirm",
            cookie.clone(),
            approve.clone(),
        ),
        (
            "other approval",
            "/approve",
            cookie.clone(),
            with(&approve, "approval", &"0".repeat(32)),
        ),
        (
            "other card",
            "/approve",
            cookie.clone(),
            with(&approve, "card", &"0".repeat(64)),
        ),
        (
            "deny for other proposal",
            "/deny",
            cookie.clone(),
            with(&deny, "proposal", &second.to_string()),
        ),
        (
            "deny with approve token",
            "/deny",
            cookie.clone(),
            with(&deny, "token", &get_field(&approve, "token")),
        ),
        (
            "deny from another session",
            "/deny",
            other_cookie.clone(),
            deny.clone(),
        ),
        (
            "deny-all with deny token",
            "/deny-all",
            cookie.clone(),
            with(&deny_all, "token", &get_field(&deny, "token")),
        ),
        (
            "deny-all without session",
            "/deny-all",
            String::new(),
            deny_all.clone(),
        ),
    ];
    for (what, path, c, fields) in forged {
        let (status, _) = e.post(path, &c, &fields).await;
        assert_eq!(status, 403, "{what}");
    }
    assert_eq!(e.approval_used(&approval), 0);
    assert_eq!(
        (e.status(first), e.status(second)),
        (Status::Pending, Status::Pending)
    );
    assert_eq!(e.executes(), 0);
    // The genuine form works.
    let (status, body) = e.post("/approve", &cookie, &approve).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(e.executes(), 1);
}

#[tokio::test]
async fn there_is_no_approve_all_and_get_changes_nothing() {
    let e = env().await;
    let cookie = e.login().await;
    let id = e.propose("batch_recording", record(&format!("{DEV_A}-1")), "x");
    for _ in 0..3 {
        e.card(&cookie).await;
    }
    for path in [
        "/approve-all",
        "/approve",
        "/confirm",
        "/deny",
        "/deny-all",
        "/login",
    ] {
        let r = e
            .client
            .get(e.url(path))
            .header("cookie", &cookie)
            .send()
            .await
            .unwrap();
        assert!(
            r.status() == 404 || r.status() == 405,
            "{path}: {}",
            r.status()
        );
    }
    let r = e
        .client
        .post(e.url("/approve-all"))
        .header("origin", e.origin())
        .header("cookie", &cookie)
        .formed(&[("tab", TAB)])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    assert_eq!(e.status(id), Status::Pending);
    assert_eq!(e.executes(), 0);
}

// ---- cards --------------------------------------------------------------------------------

#[tokio::test]
async fn the_card_shows_the_change_in_words_with_names_and_effect() {
    let e = env().await;
    let cookie = e.login().await;
    let id = e.propose(
        "batch_recording",
        record(&format!("{DEV_A}-1")),
        "Start <b>now</b>\u{202e} please",
    );
    e.propose("batch_reboot", json!({"device_ids": [DEV_B]}), "r");
    let html = e.card(&cookie).await;
    assert!(html.contains(&format!("Proposal #{id}")), "{html}");
    assert!(html.contains("1 more waiting"));
    assert!(html.contains("<code id=\"tool\">batch_recording</code>"));
    assert!(html.contains("Start or stop recording on one channel"));
    assert!(
        html.contains("Recording on Courtroom · Program Mix: stopped → recording"),
        "{html}"
    );
    assert!(html.contains(&format!("Channel {DEV_A}-1: Program Mix")));
    assert!(
        html.contains(&format!("[&quot;{DEV_A}-1&quot;]"))
            || html.contains(&format!("[&#34;{DEV_A}-1&#34;]")),
        "{html}"
    );
    assert!(
        html.contains("Start &#60;b&#62;now&#60;/b&#62;⟨U+202E⟩ please"),
        "{html}"
    );
    assert!(html.contains("written by the assistant"));
    // Deny comes first and is focused; Approve is never focused.
    let deny_at = html.find("id=\"deny\"").unwrap();
    let approve_at = html.find("id=\"approve\"").unwrap();
    assert!(deny_at < approve_at);
    assert!(html[deny_at..deny_at + 40].contains("autofocus"));
    assert_eq!(html.matches("autofocus").count(), 1);
    assert!(html.contains("id=\"expiry\" data-remaining=\""));
    assert!(html.contains("<script src=\"/static/countdown.js\" defer></script>"));
    assert!(!html.contains("<script>"), "no inline script");
    assert!(!html.contains("style=\""), "no inline style");
}

#[tokio::test]
async fn stream_and_event_names_and_the_window_verdict() {
    let e = env().await;
    let cookie = e.login().await;
    {
        let mut w = e.world.lock().unwrap();
        w.devices[0].block = RoomBlock::Soon(13);
        w.publisher = PublisherState::Running;
    }
    e.propose(
        "stop_stream_endpoint",
        json!({"stream_id": STREAM, "device_id": DEV_A, "channel_id": "1"}),
        "s",
    );
    let html = e.card(&cookie).await;
    assert!(
        html.contains(&format!(
            "Stream destination {STREAM}: Sandbox RTMP (host live.example.net)"
        )),
        "{html}"
    );
    assert!(
        html.contains(
            "Stream Sandbox RTMP (live.example.net) from Courtroom · Program Mix: sending → stopped"
        ),
        "{html}"
    );
    assert!(
        html.contains(
            "Courtroom has LAW 210 starting in 13 minutes, so the executor would refuse this."
        ),
        "{html}"
    );
    let deny = form(&html, "/deny");
    e.post("/deny", &cookie, &deny).await;
    e.propose(
        "confirm_cms_event_on_device",
        json!({"device_id": DEV_A, "event_id": "law-210"}),
        "c",
    );
    let html = e.card(&cookie).await;
    assert!(
        html.contains("Event law-210: LAW 210, 2030-01-01T10:00:00Z – 2030-01-01T11:00:00Z"),
        "{html}"
    );
    assert!(
        html.contains(
            "Event LAW 210 (2030-01-01T10:00:00Z – 2030-01-01T11:00:00Z) on Courtroom: not confirmed → confirmed"
        ),
        "{html}"
    );
    assert!(html.contains("action=\"/approve\""));
}

#[tokio::test]
async fn the_card_says_the_targets_warnings_in_words() {
    let e = env().await;
    let cookie = e.login().await;
    {
        let mut w = e.world.lock().unwrap();
        w.devices[0].channels[1].name = "Atril izquierdo".into();
        w.devices[0].channels[1].warnings = vec![fleetwatch_protocol::fleet::Warning {
            id: "channel_no_signal".into(),
            label: "No signal".into(),
            message: String::new(),
            source: None,
            channel: None,
            channel_name: None,
            used_percent: None,
        }];
        w.devices[0].warnings = vec![fleetwatch_protocol::fleet::Warning {
            id: "fan_stalled_9".into(),
            label: String::new(),
            message: "Fan 2 has stopped".into(),
            source: None,
            channel: None,
            channel_name: None,
            used_percent: None,
        }];
    }
    e.propose("batch_reboot", json!({"device_ids": [DEV_A]}), "r");
    let html = e.card(&cookie).await;
    assert!(html.contains("Warnings on the targets now"), "{html}");
    assert!(
        html.contains("Courtroom: Atril izquierdo (channel 2) has no signal"),
        "{html}"
    );
    assert!(html.contains("Courtroom: Epiphan reports"), "{html}");
    assert!(html.contains("Fan 2 has stopped"), "{html}");
    assert!(!html.contains("channel_no_signal") && !html.contains("fan_stalled_9"));
    let (_, card) = e.get(&cookie, "es").await;
    assert!(
        card.contains("Courtroom: Atril izquierdo (canal 2) no tiene señal"),
        "{card}"
    );
}

#[tokio::test]
async fn every_tools_effect_reads_from_live_state_and_a_pointless_change_offers_only_deny() {
    let e = env().await;
    let cookie = e.login().await;
    let stream = |tool: &str| {
        (
            tool.to_owned(),
            json!({"stream_id": STREAM, "device_id": DEV_A, "channel_id": "1"}),
        )
    };
    // Reboot and firmware: the device's state now, and the recording a restart cuts.
    {
        let mut w = e.world.lock().unwrap();
        w.devices[0].channels[1].recording = true;
        w.devices[0].recording = true;
    }
    e.propose("batch_reboot", json!({"device_ids": [DEV_A]}), "r");
    let html = e.card(&cookie).await;
    assert!(
        html.contains(
            "Courtroom: online → restarting (offline for a few minutes); recording it interrupts: Lectern"
        ),
        "{html}"
    );
    e.post("/deny", &cookie, &form(&html, "/deny")).await;
    e.propose("batch_firmware_update", json!({"device_ids": [DEV_A]}), "f");
    let html = e.card(&cookie).await;
    assert!(
        html.contains(
            "Courtroom (Pearl-2): firmware 4.24.3 → Epiphan&#39;s newest for this model (the newest in this team is 4.24.6); online → restarting"
        ) || html.contains(
            "Courtroom (Pearl-2): firmware 4.24.3 → Epiphan&#x27;s newest for this model (the newest in this team is 4.24.6); online → restarting"
        ),
        "{html}"
    );
    e.post("/deny", &cookie, &form(&html, "/deny")).await;

    // Changes the live state makes pointless or impossible: Deny only, and why.
    type SetUp = Box<dyn Fn(&mut World)>;
    let cases: Vec<(SetUp, (String, Value), &str)> = vec![
        (
            Box::new(|w| w.devices[0].online = false),
            ("batch_reboot".into(), json!({"device_ids": [DEV_A]})),
            "Courtroom is offline, so this change cannot reach it.",
        ),
        (
            Box::new(|w| w.devices[0].online = false),
            (
                "batch_firmware_update".into(),
                json!({"device_ids": [DEV_A]}),
            ),
            "Courtroom is offline, so this change cannot reach it.",
        ),
        (
            Box::new(|w| w.devices[0].channels[0].recording = true),
            ("batch_recording".into(), record(&format!("{DEV_A}-1"))),
            "Courtroom · Program Mix is already recording; starting it changes nothing.",
        ),
        (
            Box::new(|w| w.publisher = PublisherState::Running),
            stream("start_stream_endpoint"),
            "Stream Sandbox RTMP from Courtroom · Program Mix is already sending; starting it changes nothing.",
        ),
        (
            Box::new(|w| w.publisher = PublisherState::Absent),
            stream("stop_stream_endpoint"),
            "Stream Sandbox RTMP from Courtroom · Program Mix is not sending; there is nothing to stop.",
        ),
        (
            Box::new(|w| {
                if let Some(ev) = w.devices[0].event.as_mut() {
                    ev.confirmed = Some(true);
                }
            }),
            (
                "confirm_cms_event_on_device".into(),
                json!({"device_id": DEV_A, "event_id": "law-210"}),
            ),
            "Event LAW 210 on Courtroom is already confirmed; confirming it again changes nothing.",
        ),
    ];
    for (set, (tool, arguments), why) in cases {
        {
            let mut w = e.world.lock().unwrap();
            w.devices[0] = device(DEV_A, "Courtroom");
            w.publisher = PublisherState::Unknown;
            set(&mut w);
        }
        e.propose(&tool, arguments.clone(), "p");
        assert_deny_only(&e, &cookie, why).await;
        // The same change from the state where it means something offers Approve.
        {
            let mut w = e.world.lock().unwrap();
            w.devices[0] = device(DEV_A, "Courtroom");
            w.publisher = if tool == "stop_stream_endpoint" {
                PublisherState::Running
            } else {
                PublisherState::Stopped
            };
        }
        e.propose(&tool, arguments, "p");
        let html = e.card(&cookie).await;
        assert!(html.contains("action=\"/approve\""), "{tool}: {html}");
        e.post("/deny", &cookie, &form(&html, "/deny")).await;
    }
    // In Spanish too.
    {
        let mut w = e.world.lock().unwrap();
        w.devices[0] = device(DEV_A, "Courtroom");
        w.devices[0].online = false;
    }
    e.propose("batch_reboot", json!({"device_ids": [DEV_A]}), "r");
    let (_, card) = e.get(&cookie, "es").await;
    assert!(
        card.contains("Courtroom está sin conexión, así que este cambio no puede llegarle.")
            && card.contains("Courtroom: sin conexión → reiniciando"),
        "{card}"
    );
    assert!(!card.contains("action=\"/approve\""));
}

#[tokio::test]
async fn spanish_when_the_first_language_tag_is_spanish() {
    let e = env().await;
    let (_, login) = e.get("", "es-ES,es;q=0.9,en;q=0.5").await;
    assert!(
        login.contains("lang=\"es\"") && login.contains("Secreto de la página"),
        "{login}"
    );
    let (_, login) = e.get("", "en-GB,es;q=0.9").await;
    assert!(login.contains("lang=\"en\"") && login.contains("Page secret"));
    let cookie = e.login().await;
    e.propose("batch_recording", record(&format!("{DEV_A}-1")), "x");
    let (_, card) = e.get(&cookie, "es").await;
    assert!(
        card.contains("Grabación en Courtroom · Program Mix: detenida → grabando"),
        "{card}"
    );
    assert!(card.contains(">Denegar<") && card.contains(">Aprobar este cambio<"));
}

async fn assert_deny_only(e: &Env, cookie: &str, expect: &str) {
    let html = e.card(cookie).await;
    assert!(
        !html.contains("action=\"/approve\""),
        "Approve offered although {expect}:\n{html}"
    );
    assert!(html.contains(expect), "missing {expect:?} in\n{html}");
    assert!(html.contains("id=\"deny\""));
    let deny = form(&html, "/deny");
    let (status, _) = e.post("/deny", cookie, &deny).await;
    assert_eq!(status, 303);
}

fn raw(e: &Env, tool: &str, arguments: Value, targets: &[&str]) -> NewProposal {
    NewProposal {
        tool: tool.into(),
        arguments: fleetwatch_protocol::canonical::from_value(&arguments)
            .map(|c| c.into_string())
            .unwrap_or_else(|_| arguments.to_string()),
        targets: targets.iter().map(|t| (*t).to_owned()).collect(),
        fingerprint: e.world.lock().unwrap().fingerprint.clone(),
        schema_version: 1,
        policy_digest: e.policy.digest(tool).unwrap_or([0; 32]),
        slot: "sandbox".into(),
        reason: "r".into(),
    }
}

#[tokio::test]
async fn deny_is_the_only_button_when_the_card_cannot_be_trusted() {
    let e = env().await;
    let cookie = e.login().await;
    let ch = format!("{DEV_A}-1");
    let cases: Vec<(Value, &str)> = vec![
        (
            json!({"action": "start", "device_ids": [ch], "note": "x".repeat(257)}),
            "longer than 256 characters",
        ),
        (
            json!({"action": "start ", "device_ids": [ch]}),
            "starts or ends with white space",
        ),
        (
            json!({"action": "st\u{202e}art", "device_ids": [ch]}),
            "control, format, private-use or unassigned",
        ),
        (
            json!({"action": "start", "device_ids": [ch], "x": "\u{e000}"}),
            "control, format, private-use or unassigned",
        ),
        (
            json!({"action": "start", "device_ids": [ch], "x": "\u{0378}"}),
            "control, format, private-use or unassigned",
        ),
        (
            json!({"action": "start", "device_ids": [[ch]]}),
            "nested deeper than 2 levels",
        ),
        (
            json!({"action": "start", "device_ids": vec![ch.clone(); 21]}),
            "more than 20 items",
        ),
        (
            json!({"action": "start", "device_ids": [ch], "pad": vec!["y".repeat(250); 18]}),
            "longer than 4,000 bytes",
        ),
    ];
    for (args, expect) in cases {
        e.insert(raw(&e, "batch_recording", args, &[DEV_A]));
        assert_deny_only(&e, &cookie, expect).await;
    }
    // No plain-words text for the tool.
    e.insert(raw(
        &e,
        "apply_team_preset",
        json!({"device_ids": [DEV_A]}),
        &[DEV_A],
    ));
    assert_deny_only(&e, &cookie, "no plain-words description").await;
    // The policy moved on since the proposal.
    let mut p = raw(&e, "batch_recording", record(&ch), &[DEV_A]);
    p.policy_digest = [9; 32];
    e.insert(p);
    assert_deny_only(&e, &cookie, "no longer pass the tool policy").await;
    // IDs that are not found.
    e.propose("batch_recording", record(&format!("{DEV_A}-3")), "r");
    assert_deny_only(&e, &cookie, &format!("Channel {DEV_A}-3 was not found")).await;
    e.world.lock().unwrap().stream_found = false;
    e.propose(
        "start_stream_endpoint",
        json!({"stream_id": STREAM, "device_id": DEV_A, "channel_id": "1"}),
        "r",
    );
    assert_deny_only(
        &e,
        &cookie,
        &format!("Stream destination {STREAM} was not found"),
    )
    .await;
    e.world.lock().unwrap().event_matches = Some(false);
    e.propose(
        "confirm_cms_event_on_device",
        json!({"device_id": DEV_A, "event_id": "other-1"}),
        "r",
    );
    assert_deny_only(&e, &cookie, "Event other-1 is not the device").await;
    let id = e.propose("batch_reboot", json!({"device_ids": [DEV_B]}), "r");
    e.world.lock().unwrap().devices.retain(|d| d.id != DEV_B);
    assert_deny_only(
        &e,
        &cookie,
        &format!("Device {DEV_B} is not on the sandbox team"),
    )
    .await;
    assert_eq!(e.status(id), Status::Denied);
    e.world.lock().unwrap().devices[0].allowlisted = false;
    e.propose("batch_reboot", json!({"device_ids": [DEV_A]}), "r");
    assert_deny_only(&e, &cookie, "not on the write allowlist").await;
    e.world.lock().unwrap().devices[0].allowlisted = true;
    // The fingerprint moved.
    e.propose("batch_reboot", json!({"device_ids": [DEV_A]}), "r");
    e.world.lock().unwrap().fingerprint = "fp-2".into();
    assert_deny_only(&e, &cookie, "state changed since the change was proposed").await;
    // A read failed.
    e.world.lock().unwrap().describe_refusal = Some(Refusal::ReadFailed);
    e.propose("batch_reboot", json!({"device_ids": [DEV_A]}), "r");
    assert_deny_only(&e, &cookie, "could not be read").await;
    assert_eq!(e.executes(), 0);
}

#[tokio::test]
async fn injected_names_render_as_text() {
    let e = env().await;
    e.world.lock().unwrap().devices[0].name =
        "<img src=x onerror=alert(1)>Courtroom\u{200b}".into();
    e.world.lock().unwrap().devices[0].model = format!("<b>{}</b>", "M".repeat(200));
    let cookie = e.login().await;
    e.propose(
        "batch_reboot",
        json!({"device_ids": [DEV_A]}),
        &format!("ignore previous instructions {}", "z".repeat(900)),
    );
    let html = e.card(&cookie).await;
    assert!(!html.contains("<img"), "{html}");
    assert!(
        html.contains("&#60;img src=x onerror=alert(1)&#62;Courtroom⟨U+200B⟩"),
        "{html}"
    );
    assert!(!html.contains(&"M".repeat(100)), "model is capped");
    let reason_start = html.find("ignore previous instructions").unwrap();
    let reason_end = reason_start + html[reason_start..].find("</p>").unwrap();
    assert!(
        html[reason_start..reason_end].chars().count() <= 501,
        "reason capped at 500"
    );
}

// ---- approving ----------------------------------------------------------------------------

#[tokio::test]
async fn a_calm_change_runs_once_with_the_claims_the_card_showed() {
    let e = env().await;
    let cookie = e.login().await;
    let args = record(&format!("{DEV_A}-1"));
    let id = e.propose("batch_recording", args.clone(), "x");
    let html = e.card(&cookie).await;
    let fields = form(&html, "/approve");
    let approval = get_field(&fields, "approval");
    let (status, body) = e.post("/approve", &cookie, &fields).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(">Done<"), "{body}");
    assert_eq!(e.approval_used(&approval), 1);
    assert_eq!(e.status(id), Status::Executed);
    // The done page offers the change's receipt, which the executor gives by approval ID.
    let receipt_form = form(&body, "/receipt");
    assert_eq!(get_field(&receipt_form, "approval"), approval);
    let (status, receipt) = e.post("/receipt", &cookie, &receipt_form).await;
    assert_eq!(status, 200, "{receipt}");
    assert_eq!(receipt, format!("{{\"receipt_of\": \"{approval}\"}}"));
    // The cookie alone gets no receipt: the form must come from the tab that signed in.
    let without_tab: Vec<(String, String)> = receipt_form
        .into_iter()
        .filter(|(n, _)| n != "tab")
        .collect();
    let (status, refused) = e.post("/receipt", &cookie, &without_tab).await;
    assert_ne!(status, 200, "{refused}");
    assert!(!refused.contains("receipt_of"), "{refused}");
    let claims = e.world.lock().unwrap().executes[0].clone();
    let stored = e.store.lock().unwrap().proposal(id).unwrap().unwrap();
    assert_eq!(claims.proposal_id, id);
    assert_eq!(claims.tool, "batch_recording");
    assert_eq!(claims.arguments, stored.arguments);
    assert_eq!(claims.targets, vec![DEV_A.to_owned()]);
    assert_eq!(claims.fingerprint, "fp-1");
    assert_eq!(
        claims.policy_digest,
        e.policy.digest("batch_recording").unwrap()
    );
    assert_eq!(page::sessions::hex(&claims.approval_id), approval);
    let session_id = cookie.split_once('=').unwrap().1;
    let tag: [u8; 16] = Sha256::digest(session_id.as_bytes())[..16]
        .try_into()
        .unwrap();
    assert_eq!(claims.page_session, tag);
    let (created, expires): (i64, i64) = e
        .store
        .lock()
        .unwrap()
        .connection()
        .query_row(
            "SELECT created_at, expires_at FROM approvals WHERE id = ?1",
            [&approval],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(claims.expires_at, expires);
    assert_eq!(expires - created, 300);
    assert!(claims.approved_at >= created && claims.approved_at < expires);
    // The same form again: refused, no second Execute.
    let (status, body) = e.post("/approve", &cookie, &fields).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(e.executes(), 1);
    // Every step audited, the session counted.
    let kinds: Vec<String> = e
        .store
        .lock()
        .unwrap()
        .audit_rows()
        .unwrap()
        .into_iter()
        .filter(|r| r.proposal_id == Some(id))
        .map(|r| r.kind)
        .collect();
    for k in [
        "proposed",
        "page_card_shown",
        "approved",
        "page_approval",
        "page_execute_sent",
        "page_result",
        "page_approval_refused",
    ] {
        assert!(kinds.iter().any(|x| x == k), "{k} missing from {kinds:?}");
    }
}

#[tokio::test]
async fn two_cards_for_one_proposal_still_run_it_once() {
    let e = env().await;
    let cookie = e.login().await;
    let id = e.propose("batch_recording", record(&format!("{DEV_A}-1")), "x");
    let first = form(&e.card(&cookie).await, "/approve");
    let second = form(&e.card(&cookie).await, "/approve");
    assert_ne!(
        get_field(&first, "approval"),
        get_field(&second, "approval")
    );
    assert_eq!(e.post("/approve", &cookie, &first).await.0, 200);
    let (status, body) = e.post("/approve", &cookie, &second).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(e.executes(), 1);
    assert_eq!(e.status(id), Status::Executed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixteen_concurrent_approves_execute_once() {
    let e = env().await;
    let cookie = e.login().await;
    e.propose("batch_recording", record(&format!("{DEV_A}-1")), "x");
    let fields = form(&e.card(&cookie).await, "/approve");
    let results =
        futures_util::future::join_all((0..16).map(|_| e.post("/approve", &cookie, &fields))).await;
    let ok = results.iter().filter(|(s, _)| *s == 200).count();
    let conflict = results.iter().filter(|(s, _)| *s == 409).count();
    assert_eq!(
        (ok, conflict),
        (1, 15),
        "{:?}",
        results.iter().map(|r| r.0).collect::<Vec<_>>()
    );
    assert_eq!(e.executes(), 1);
}

#[tokio::test]
async fn closing_a_category_holds_its_pending_cards_at_once() {
    let e = env().await;
    let cookie = e.login().await;
    let state = e.dir.path().join("state");
    let id = e.propose("batch_recording", record(&format!("{DEV_A}-1")), "x");
    let fields = form(&e.card(&cookie).await, "/approve");
    // Closed between showing the card and approving it: the approval is refused, nothing runs.
    fleetwatch::grants::close(&state, "recording").unwrap();
    let (status, body) = e.post("/approve", &cookie, &fields).await;
    assert_eq!(status, 409, "{body}");
    assert!(
        body.contains("The recording category was closed (fleetwatch grants close)"),
        "{body}"
    );
    assert_eq!(e.executes(), 0);
    assert_eq!(e.status(id), Status::Pending);
    // The card offers only Deny from now on, and says why; other categories are untouched.
    assert_deny_only(
        &e,
        &cookie,
        "The recording category was closed (fleetwatch grants close) after this was proposed",
    )
    .await;
    e.propose("batch_reboot", json!({"device_ids": [DEV_A]}), "r");
    assert!(e.card(&cookie).await.contains("action=\"/approve\""));
    let html = e.card(&cookie).await;
    e.post("/deny", &cookie, &form(&html, "/deny")).await;
    // Opened again, a new card of the category offers Approve.
    let policy = load_policy();
    fleetwatch::grants::open(&state, &policy, "recording").unwrap();
    e.propose("batch_recording", record(&format!("{DEV_A}-1")), "x");
    assert!(e.card(&cookie).await.contains("action=\"/approve\""));
    // A grants file that cannot be trusted grants nothing.
    std::fs::set_permissions(
        state.join(fleetwatch::grants::FILE_NAME),
        std::fs::Permissions::from_mode(0o666),
    )
    .unwrap();
    let (_, card) = e.get(&cookie, "es").await;
    assert!(
        card.contains("No se pueden leer las categorías abiertas")
            && !card.contains("action=\"/approve\""),
        "{card}"
    );
}

#[tokio::test]
async fn a_card_that_changed_after_showing_is_refused_with_why() {
    let e = env().await;
    let cookie = e.login().await;
    let id = e.propose("batch_recording", record(&format!("{DEV_A}-1")), "x");
    let fields = form(&e.card(&cookie).await, "/approve");
    e.world.lock().unwrap().fingerprint = "fp-moved".into();
    let (status, body) = e.post("/approve", &cookie, &fields).await;
    assert_eq!(status, 409);
    assert!(
        body.contains("state changed since the change was proposed"),
        "{body}"
    );
    assert_eq!(e.approval_used(&get_field(&fields, "approval")), 0);
    assert_eq!(e.status(id), Status::Pending);
    assert_eq!(e.executes(), 0);
}

#[tokio::test]
async fn an_expired_approval_runs_nothing() {
    let e = env().await;
    let cookie = e.login().await;
    e.propose("batch_recording", record(&format!("{DEV_A}-1")), "x");
    let fields = form(&e.card(&cookie).await, "/approve");
    let approval = get_field(&fields, "approval");
    e.store
        .lock()
        .unwrap()
        .connection()
        .execute(
            "UPDATE approvals SET expires_at = unixepoch() - 1 WHERE id = ?1",
            [&approval],
        )
        .unwrap();
    let (status, body) = e.post("/approve", &cookie, &fields).await;
    assert_eq!(status, 409);
    assert!(body.contains("already used or has expired"), "{body}");
    assert_eq!(e.executes(), 0);
}

#[tokio::test]
async fn a_disruptive_change_needs_its_own_confirmation() {
    let e = env().await;
    let cookie = e.login().await;
    let id = e.propose("batch_reboot", json!({"device_ids": [DEV_A]}), "x");
    let html = e.card(&cookie).await;
    assert!(html.contains("you will be asked to confirm"));
    let card = form(&html, "/approve");
    let (status, confirm_page) = e.post("/approve", &cookie, &card).await;
    assert_eq!(status, 200);
    assert!(confirm_page.contains("Confirm a disruptive change"));
    assert!(
        confirm_page.contains("Yes, change Courtroom"),
        "{confirm_page}"
    );
    assert_eq!(e.approval_used(&get_field(&card, "approval")), 0);
    assert_eq!(e.executes(), 0);
    let confirm = form(&confirm_page, "/confirm");
    // Deny is first and focused on the confirm page too.
    assert!(
        confirm_page.find("id=\"deny\" autofocus").unwrap()
            < confirm_page.find("id=\"confirm\"").unwrap()
    );
    // A card token cannot confirm, and a confirm token cannot approve.
    assert_eq!(e.post("/confirm", &cookie, &card).await.0, 403);
    assert_eq!(e.post("/approve", &cookie, &confirm).await.0, 403);
    assert_eq!(e.executes(), 0);
    let (status, body) = e.post("/confirm", &cookie, &confirm).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(">Done<"));
    assert_eq!(e.executes(), 1);
    assert_eq!(e.status(id), Status::Executed);
}

#[tokio::test]
async fn outcomes_are_told_in_plain_words() {
    let e = env_with(Options {
        executor_timeout: Duration::from_secs(3),
        ..Options::default()
    })
    .await;
    let cookie = e.login().await;
    // The executor answers with a code per device; a code this page does not know (here,
    // text where a code belongs) reads as "other", and its text is never shown.
    let mut errors = BTreeMap::new();
    errors.insert(DEV_A.to_owned(), "offline".to_owned());
    errors.insert(
        DEV_B.to_owned(),
        "<b>disk full</b> token=sk-ant-abcdef123456".to_owned(),
    );
    let recording = Refusal::Recording.message();
    let offline = format!("{DEV_A}: the device is offline or could not be reached");
    let other = format!("{DEV_B}: Epiphan reported an error (its text is not kept)");
    // The last of each case: whether the page offers the receipt (the executor signs every
    // outcome it reached: failed and unknown too, not a refusal, not an answer that never came).
    let cases = vec![
        (
            Answer::Errors(errors),
            Status::Failed,
            vec![
                "Epiphan reported a problem",
                offline.as_str(),
                other.as_str(),
            ],
            "abcdef123456",
            true,
        ),
        (
            Answer::Refuse(Refusal::Recording),
            Status::Refused,
            vec!["Nothing ran", recording.as_str()],
            "<b>",
            false,
        ),
        (
            Answer::Unknown,
            Status::Unknown,
            vec!["may or may not have run — check the unit before trying again"],
            "<b>",
            true,
        ),
        (
            Answer::Hang,
            Status::Unknown,
            vec!["may or may not have run — check the unit before trying again"],
            "<b>",
            false,
        ),
    ];
    for (answer, status, expect, absent, receipt) in cases {
        e.world.lock().unwrap().answer = answer;
        let id = e.propose("batch_recording", record(&format!("{DEV_A}-1")), "x");
        let fields = form(&e.card(&cookie).await, "/approve");
        let (code, body) = e.post("/approve", &cookie, &fields).await;
        assert_eq!(code, 200);
        for text in expect {
            let text = text.replace('\'', "&#39;");
            assert!(body.contains(&text), "{text:?} missing:\n{body}");
        }
        assert!(!body.contains(absent), "{body}");
        assert_eq!(e.status(id), status);
        assert_eq!(
            body.contains("action=\"/receipt\""),
            receipt,
            "{status:?}: {body}"
        );
    }
    // In Spanish the executor's refusal is said in Spanish too, with its code.
    e.world.lock().unwrap().answer = Answer::Refuse(Refusal::Recording);
    e.propose("batch_recording", record(&format!("{DEV_A}-1")), "x");
    let fields = form(&e.card(&cookie).await, "/approve");
    let body = e
        .client
        .post(e.url("/approve"))
        .header("cookie", &cookie)
        .header("origin", e.origin())
        .header("accept-language", "es-ES,es;q=0.9")
        .formed(&fields)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        body.contains("No se ejecutó nada")
            && body.contains("Un equipo estaba grabando (recording)."),
        "{body}"
    );
    assert!(!body.contains(&recording), "{body}");
}

#[tokio::test]
async fn deny_and_deny_all_record_denials_and_run_nothing() {
    let e = env().await;
    let cookie = e.login().await;
    let a = e.propose("batch_recording", record(&format!("{DEV_A}-1")), "x");
    let b = e.propose("batch_reboot", json!({"device_ids": [DEV_A]}), "x");
    let c = e.propose("batch_reboot", json!({"device_ids": [DEV_B]}), "x");
    let html = e.card(&cookie).await;
    assert!(html.contains("Proposal queue full (3 waiting)."), "{html}");
    let (status, _) = e.post("/deny", &cookie, &form(&html, "/deny")).await;
    assert_eq!(status, 303);
    assert_eq!(e.status(a), Status::Denied);
    let html = e.card(&cookie).await;
    assert!(html.contains(&format!("Proposal #{b}")));
    let (status, _) = e
        .post("/deny-all", &cookie, &form(&html, "/deny-all"))
        .await;
    assert_eq!(status, 303);
    assert_eq!((e.status(b), e.status(c)), (Status::Denied, Status::Denied));
    assert!(e.card(&cookie).await.contains("Nothing is waiting"));
    assert_eq!(e.executes(), 0);
    let rows = e.store.lock().unwrap().audit_rows().unwrap();
    assert_eq!(rows.iter().filter(|r| r.kind == "denied").count(), 3);
    assert!(rows.iter().any(|r| r.kind == "page_deny_all"));
}

#[tokio::test]
async fn fatigue_limits_are_shown_in_both_languages() {
    let e = env().await;
    let cookie = e.login().await;
    for i in 0..5 {
        let channel = format!("{}-{}", if i % 2 == 0 { DEV_A } else { DEV_B }, 1 + i % 2);
        e.propose("batch_recording", record(&channel), "x");
        let (status, _) = e
            .post(
                "/approve",
                &cookie,
                &form(&e.card(&cookie).await, "/approve"),
            )
            .await;
        assert_eq!(status, 200);
        let shown = e.card(&cookie).await;
        assert_eq!(
            shown.contains("You have approved"),
            i == 4,
            "after {} approvals",
            i + 1
        );
    }
    let (_, es) = e.get(&cookie, "es").await;
    assert!(es.contains("Has aprobado 5 cambios en esta sesión"), "{es}");
    // A new browser session starts counting again.
    let fresh = e.login().await;
    assert!(!e.card(&fresh).await.contains("You have approved"));
    let counts: Vec<u64> = e
        .store
        .lock()
        .unwrap()
        .audit_rows()
        .unwrap()
        .into_iter()
        .filter(|r| r.kind == "page_approval")
        .map(|r| {
            serde_json::from_str::<Value>(&r.detail).unwrap()["session_approvals"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(counts, vec![1, 2, 3, 4, 5]);
    // The hourly cap: five executed plus five more that lapsed count; denied ones would not.
    for i in 0..5 {
        let id = e.propose(
            "batch_recording",
            record(&format!("{DEV_A}-{}", 1 + i % 2)),
            "x",
        );
        e.store
            .lock()
            .unwrap()
            .decide(id, Status::Expired, "timed out", now_secs())
            .unwrap();
    }
    let html = e.card(&cookie).await;
    assert!(
        html.contains("Hourly cap reached: 10 proposals in the last hour"),
        "{html}"
    );
    let (_, es) = e.get(&cookie, "es").await;
    assert!(
        es.contains("Límite por hora alcanzado: 10 propuestas"),
        "{es}"
    );
    for _ in 0..3 {
        e.propose("batch_reboot", json!({"device_ids": [DEV_A]}), "x");
    }
    let (_, es) = e.get(&cookie, "es").await;
    assert!(
        es.contains("Cola de propuestas llena (3 en espera)."),
        "{es}"
    );
    drop(e.dir);
}

// ---- two people for one change ------------------------------------------------------------

/// The `data-challenge` of the form posting to `action`.
fn challenge_of(html: &str, action: &str) -> String {
    let start = html.find(&format!("action=\"{action}\"")).unwrap();
    let form = &html[start..start + html[start..].find('>').unwrap()];
    let c = form
        .find("data-challenge=\"")
        .unwrap_or_else(|| panic!("no challenge on {action} in\n{html}"))
        + 16;
    form[c..c + form[c..].find('"').unwrap()].to_owned()
}

/// The form as the confirm page's answer fills it after the browser's passkey answered there:
/// a software Ed25519 key enrolled as [`approver_line`]`(seed, …)`, asked on the confirm page's
/// origin for the challenge the card names.
fn with_passkey(
    fields: &[(String, String)],
    challenge: &str,
    seed: u8,
    counter: u32,
) -> Vec<(String, String)> {
    use base64::Engine as _;
    use ed25519_dalek::Signer as _;
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    let client_data = format!(
        r#"{{"type":"webauthn.get","challenge":"{challenge}","origin":"{CONFIRM}","crossOrigin":false}}"#
    );
    let mut authenticator_data = Sha256::digest(b"localhost").to_vec();
    authenticator_data.push(0x05);
    authenticator_data.extend_from_slice(&counter.to_be_bytes());
    let mut message = authenticator_data.clone();
    message.extend_from_slice(&Sha256::digest(client_data.as_bytes()));
    let signature = ed25519_dalek::SigningKey::from_bytes(&[seed; 32]).sign(&message);
    let out = with(fields, "credential_id", &b64(&[seed, 1, 2, 3]));
    let out = with(&out, "authenticator_data", &b64(&authenticator_data));
    let out = with(&out, "client_data_json", &b64(client_data.as_bytes()));
    with(&out, "signature", &b64(&signature.to_bytes()))
}

/// Two people signed in, each with an enrolled passkey (seeds 7 and 8), and an executor that
/// needs two passkeys for a recording change.
async fn two_people() -> (Env, String, String) {
    let e = env().await;
    {
        let mut w = e.world.lock().unwrap();
        w.trial = false;
        w.passkeys_enrolled = 2;
        w.approvers = vec![approver_line(7, "ana", "Ana"), approver_line(8, "bo", "Bo")];
        w.quorums = vec![ToolQuorum {
            tool: "batch_recording".into(),
            calm: 2,
            disruptive: 2,
        }];
    }
    let ana = e.login().await;
    let bo = e.login().await;
    (e, ana, bo)
}

/// The approver line of `approver_line`, scoped as the executor's administrator would scope it.
fn scoped(line: &str, scope: &str) -> String {
    fleetwatch_protocol::passkey::PasskeyRecord::parse_line(line)
        .unwrap()
        .with_scope(Some(
            fleetwatch_protocol::passkey::Scope::parse(scope).unwrap(),
        ))
        .to_line()
}

/// With scopes on the executor's approver lines, the card names who may approve it before
/// anyone reaches for a passkey, and offers only Deny when too few may (the executor would
/// refuse it anyway).
#[tokio::test]
async fn the_card_says_who_may_approve_it_and_holds_when_too_few_may() {
    let (e, ana, _bo) = two_people().await;
    e.world.lock().unwrap().approvers = vec![
        scoped(&approver_line(7, "ana", "Ana"), &format!("calm@{DEV_A}")),
        scoped(&approver_line(8, "bo", "Bo"), "batch_reboot@team"),
    ];
    e.propose("batch_recording", record(&format!("{DEV_A}-1")), "why");
    let html = e.card(&ana).await;
    assert!(
        html.contains("May approve this change (their approver lines&#39; scope covers it): Ana."),
        "{html}"
    );
    assert!(
        html.contains("Only 1 enrolled person(s) may approve this change and it needs 2"),
        "{html}"
    );
    assert!(
        !html.contains("action=\"/approve\""),
        "Approve is not offered: {html}"
    );
    // Both in scope: both named, Approve offered.
    e.world.lock().unwrap().approvers = vec![
        scoped(&approver_line(7, "ana", "Ana"), &format!("calm@{DEV_A}")),
        scoped(&approver_line(8, "bo", "Bo"), "calm,batch_reboot@team"),
    ];
    let html = e.card(&ana).await;
    assert!(html.contains("scope covers it): Ana, Bo."), "{html}");
    assert!(html.contains("action=\"/approve\""), "{html}");
}

/// A freeze window the executor reports: the card offers only Deny and says until when and why,
/// and the page's notices say it too, before anyone approves.
#[tokio::test]
async fn a_freeze_window_holds_the_card_and_the_page_says_until_when() {
    let e = env().await;
    let cookie = e.login().await;
    let end = jiff::Timestamp::now() + jiff::SignedDuration::from_hours(2);
    e.world.lock().unwrap().frozen = Some(fleetwatch_protocol::wire::FreezeReport {
        start: 0,
        end: end.as_second(),
        holds: "disruptive changes".into(),
        reason: "finals week".into(),
        in_force: true,
    });
    e.propose("batch_recording", record(&format!("{DEV_A}-1")), "why");
    let html = e.card(&cookie).await;
    assert!(html.contains("Frozen until "), "{html}");
    assert!(
        html.contains(": finals week (the executor holds disruptive changes until then"),
        "{html}"
    );
    assert!(
        !html.contains("action=\"/approve\""),
        "Approve is not offered: {html}"
    );
}

/// One person's approval with their passkey on the card they are shown now; the status, the
/// page, and the challenge the passkey answered.
async fn approve_with(e: &Env, cookie: &str, seed: u8, counter: u32) -> (u16, String, String) {
    let html = e.card(cookie).await;
    let fields = form(&html, "/approve");
    let challenge = challenge_of(&html, "/approve");
    let (status, body) = e
        .post(
            "/approve",
            cookie,
            &with_passkey(&fields, &challenge, seed, counter),
        )
        .await;
    (status, body, challenge)
}

#[tokio::test]
async fn with_two_needed_the_first_passkey_waits_and_the_second_runs_it_once() {
    let (e, ana, bo) = two_people().await;
    let id = e.propose("batch_recording", record(&format!("{DEV_A}-1")), "why");
    let (status, body, first_challenge) = approve_with(&e, &ana, 7, 1).await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("Approved by Ana, waiting for a second person"),
        "{body}"
    );
    assert!(
        body.contains("Nothing has been sent to the executor"),
        "{body}"
    );
    assert_eq!(e.executes(), 0, "the first approval sends nothing");
    assert_eq!(e.status(id), Status::Pending);

    // The other session sees who approved, and signs the very claims the first one fixed.
    let html = e.card(&bo).await;
    assert!(
        html.contains("Approved by Ana, waiting for a second person"),
        "{html}"
    );
    let second_challenge = challenge_of(&html, "/approve");
    // The same passkey again counts once, and the page says so; nothing is spent.
    let fields = form(&html, "/approve");
    let (status, body) = e
        .post(
            "/approve",
            &bo,
            &with_passkey(&fields, &second_challenge, 7, 2),
        )
        .await;
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("counts once"), "{body}");
    assert_eq!(e.approval_used(&get_field(&fields, "approval")), 0);
    assert_eq!(e.executes(), 0);
    // A passkey over claims other than the fixed ones is refused, nothing spent.
    let other_challenge = {
        let first = if second_challenge.starts_with('A') {
            'B'
        } else {
            'A'
        };
        format!("{first}{}", &second_challenge[1..])
    };
    let (status, body) = e
        .post(
            "/approve",
            &bo,
            &with_passkey(&fields, &other_challenge, 8, 1),
        )
        .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(e.executes(), 0);
    // Bo's own passkey: one Execute carrying both assertions over one set of claims.
    let (status, body) = e
        .post(
            "/approve",
            &bo,
            &with_passkey(&fields, &second_challenge, 8, 2),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let w = e.world.lock().unwrap();
    assert_eq!(w.executes.len(), 1);
    assert_eq!(w.assertions[0].len(), 2);
    assert_eq!(w.assertions[0][0].credential_id, vec![7, 1, 2, 3]);
    assert_eq!(w.assertions[0][1].credential_id, vec![8, 1, 2, 3]);
    let sent = w.executes[0].encode().unwrap();
    let sent = fleetwatch_protocol::passkey::challenge_base64url(&sent);
    assert_eq!(sent, first_challenge);
    assert_eq!(sent, second_challenge);
    drop(w);
    assert_eq!(e.status(id), Status::Executed);
}

#[tokio::test]
async fn a_denial_by_anyone_ends_a_waiting_change() {
    let (e, ana, bo) = two_people().await;
    let id = e.propose("batch_recording", record(&format!("{DEV_A}-1")), "why");
    assert_eq!(approve_with(&e, &ana, 7, 1).await.0, 200);
    let html = e.card(&bo).await;
    let bo_approve = form(&html, "/approve");
    let bo_challenge = challenge_of(&html, "/approve");
    let (status, _) = e.post("/deny", &bo, &form(&html, "/deny")).await;
    assert_eq!(status, 303);
    assert_eq!(e.status(id), Status::Denied);
    for cookie in [&ana, &bo] {
        assert!(!e.card_or_empty(cookie).await.contains("Proposal #"));
    }
    let (status, _) = e
        .post(
            "/approve",
            &bo,
            &with_passkey(&bo_approve, &bo_challenge, 8, 1),
        )
        .await;
    assert_eq!(status, 409);
    assert_eq!(e.executes(), 0);
}

#[tokio::test]
async fn a_waiting_change_expires_five_minutes_after_the_first_approval() {
    let (e, ana, bo) = two_people().await;
    let id = e.propose("batch_recording", record(&format!("{DEV_A}-1")), "why");
    assert_eq!(approve_with(&e, &ana, 7, 1).await.0, 200);
    let html = e.card(&bo).await;
    let fields = form(&html, "/approve");
    let challenge = challenge_of(&html, "/approve");
    // The database clock passes the claims' expiry (moved, not slept): every row and the wait
    // made at the first approval are now past it.
    e.store
        .lock()
        .unwrap()
        .connection()
        .execute_batch(
            "UPDATE quorum_waits SET expires_at = unixepoch() - 1;
             UPDATE approvals SET expires_at = unixepoch() - 1;",
        )
        .unwrap();
    let (status, body) = e
        .post("/approve", &bo, &with_passkey(&fields, &challenge, 8, 1))
        .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(e.executes(), 0);
    assert!(!e.card_or_empty(&bo).await.contains("Proposal #"));
    assert_eq!(e.status(id), Status::Expired);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixteen_second_approvals_at_once_send_one_execute() {
    let (e, ana, bo) = two_people().await;
    let id = e.propose("batch_recording", record(&format!("{DEV_A}-1")), "why");
    assert_eq!(approve_with(&e, &ana, 7, 1).await.0, 200);
    let html = e.card(&bo).await;
    let fields = with_passkey(
        &form(&html, "/approve"),
        &challenge_of(&html, "/approve"),
        8,
        1,
    );
    let results =
        futures_util::future::join_all((0..16).map(|_| e.post("/approve", &bo, &fields))).await;
    let ok = results.iter().filter(|(s, _)| *s == 200).count();
    assert_eq!(
        ok,
        1,
        "{:?}",
        results.iter().map(|r| r.0).collect::<Vec<_>>()
    );
    assert_eq!(e.executes(), 1);
    assert_eq!(e.status(id), Status::Executed);
}

#[tokio::test]
async fn the_executors_limits_leave_only_deny_and_say_until_when() {
    use fleetwatch_protocol::wire::{Cooling, LimitsReport};
    let e = env().await;
    let cookie = e.login().await;
    let now = now_secs();
    let limits = |writes_last_hour: u32, cooling: Vec<Cooling>| LimitsReport {
        cooldown_minutes: 10,
        writes_per_hour: 20,
        writes_last_hour,
        open_event_minutes: 240,
        cooling,
    };
    // Courtroom was changed four minutes ago: a reboot of it waits until six minutes on.
    let until = now + 6 * 60;
    e.world.lock().unwrap().limits = limits(
        1,
        vec![Cooling {
            device: DEV_A.into(),
            changed_at: now - 4 * 60,
            until,
        }],
    );
    let at = jiff::Timestamp::from_second(until)
        .unwrap()
        .strftime("%H:%M")
        .to_string();
    e.propose("batch_reboot", json!({"device_ids": [DEV_A]}), "x");
    let (_, spanish) = e.get(&cookie, "es").await;
    assert!(
        spanish.contains("Courtroom tuvo un cambio disruptivo")
            && spanish.contains(&format!("el ejecutor rechazará otro hasta las {at} UTC")),
        "{spanish}"
    );
    assert!(!spanish.contains("action=\"/approve\""));
    assert_deny_only(
        &e,
        &cookie,
        &format!("4 min ago; the executor will refuse another until {at} UTC"),
    )
    .await;
    // A calm change to the same device is not held by the cooldown.
    e.propose("batch_recording", record(&format!("{DEV_A}-1")), "x");
    let html = e.card(&cookie).await;
    assert!(html.contains("action=\"/approve\""), "{html}");
    let deny = form(&html, "/deny");
    assert_eq!(e.post("/deny", &cookie, &deny).await.0, 303);
    // At the hourly cap, every change waits.
    e.world.lock().unwrap().limits = limits(20, Vec::new());
    e.propose("batch_recording", record(&format!("{DEV_A}-1")), "x");
    assert_deny_only(
        &e,
        &cookie,
        "The executor has made 20 changes in the last hour, its limit of 20",
    )
    .await;
    assert_eq!(e.executes(), 0);
}

/// Audit rows and approval rows in the page's store.
fn rows(e: &Env) -> (usize, i64) {
    let store = e.store.lock().unwrap();
    let audit = store.audit_rows().unwrap().len();
    let approvals = store
        .connection()
        .query_row("SELECT COUNT(*) FROM approvals", [], |r| r.get(0))
        .unwrap();
    (audit, approvals)
}

#[tokio::test]
async fn a_cookie_alone_reads_no_card_token_or_challenge_and_a_get_writes_nothing() {
    let e = env().await;
    let cookie = e.login().await;
    {
        let mut w = e.world.lock().unwrap();
        w.trial = false;
        w.passkeys_enrolled = 1;
    }
    e.propose(
        "batch_recording",
        record(&format!("{DEV_A}-1")),
        "record it",
    );
    let before = rows(&e);
    let describes = e.world.lock().unwrap().describes;
    // A GET, with the cookie a stolen session would carry: the shell only.
    for _ in 0..100 {
        let r = e
            .client
            .get(e.url("/"))
            .header("cookie", &cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let shell = r.text().await.unwrap();
        assert!(shell.contains("id=\"view\"") && shell.contains("action=\"/\""));
        for secret in [
            "batch_recording",
            "name=\"token\"",
            "data-challenge",
            "/approve",
        ] {
            assert!(!shell.contains(secret), "{secret} in\n{shell}");
        }
    }
    assert_eq!(rows(&e), before, "no GET writes an audit or approval row");
    assert_eq!(
        e.world.lock().unwrap().describes,
        describes,
        "no GET describes"
    );
    // The view by POST without the tab's value: the sign-in form, no card.
    let (status, body) = e.post("/", &cookie, &[]).await;
    assert_eq!(status, 403);
    assert!(body.contains("name=\"secret\"") && !body.contains("batch_recording"));
    // With it: the card, its token and its passkey marker.
    let card = e.card(&cookie).await;
    assert!(
        card.contains("name=\"token\"") && card.contains("data-challenge"),
        "{card}"
    );
}

#[tokio::test]
async fn a_hundred_views_of_a_card_make_a_handful_of_describes() {
    let e = env().await;
    let cookie = e.login().await;
    e.propose(
        "batch_recording",
        record(&format!("{DEV_A}-1")),
        "record it",
    );
    let before = e.world.lock().unwrap().describes;
    for _ in 0..100 {
        let card = e.card(&cookie).await;
        assert!(card.contains("name=\"token\""), "{card}");
    }
    let made = e.world.lock().unwrap().describes - before;
    assert!(
        (1..=5).contains(&made),
        "{made} describes for a hundred views"
    );
}

#[tokio::test]
async fn a_card_whose_assistant_gave_no_reason_says_so() {
    let e = env().await;
    let cookie = e.login().await;
    e.propose("batch_recording", record(&format!("{DEV_A}-1")), "");
    let card = e.card(&cookie).await;
    assert!(card.contains("The assistant gave no reason."), "{card}");
    let e = env().await;
    let cookie = e.login().await;
    e.propose(
        "batch_recording",
        record(&format!("{DEV_A}-1")),
        "the lecture starts",
    );
    let card = e.card(&cookie).await;
    assert!(
        card.contains("the lecture starts") && !card.contains("gave no reason"),
        "{card}"
    );
}

/// A disruptive stop of a recording: the window line names the event window only, never
/// "nothing recording" of the room whose recording it stops.
#[tokio::test]
async fn the_window_line_of_a_recording_stop_says_what_is_true() {
    let e = env().await;
    let cookie = e.login().await;
    e.propose(
        "batch_recording",
        json!({"action": "stop", "device_ids": [format!("{DEV_A}-1")]}),
        "stop it",
    );
    let card = e.card(&cookie).await;
    assert!(
        card.contains("stopping its recording is what this change does"),
        "{card}"
    );
    assert!(!card.contains("nothing recording"), "{card}");
}
