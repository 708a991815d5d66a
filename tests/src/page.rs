//! The real approval page (`fleetwatch serve`) in front of the real executor: an assistant
//! state folder with proposing allowed and a signing key, the page started on a free port and
//! signed in to over HTTP, and proposals stored as a turn stores them.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use fleetwatch::store::{NewProposal, Store};
use fleetwatch_sim::model::{Api, ModelHandle};

use crate::{Harness, Setup, binary, canonical, sandbox_devices, workspace_root};

/// Opens every category a proposable tool belongs to in the assistant state folder `state`,
/// as an operator does with `fleetwatch grants open`: the page offers Approve only for a
/// category that is open.
pub fn open_every_proposing_category(state: &Path) {
    let policy = fleetwatch_protocol::policy::Policy::from_yaml(
        &std::fs::read_to_string(workspace_root().join("tool_policy.yaml")).expect("policy"),
    )
    .expect("policy");
    for entry in policy.propose_entries() {
        fleetwatch::grants::open(state, &policy, &entry.category).expect("grants");
    }
}

/// Opens one category in the assistant state folder `state`, as `fleetwatch grants open` does.
pub fn open_category(state: &Path, category: &str) {
    let policy = fleetwatch_protocol::policy::Policy::from_yaml(
        &std::fs::read_to_string(workspace_root().join("tool_policy.yaml")).expect("policy"),
    )
    .expect("policy");
    fleetwatch::grants::open(state, &policy, category).expect("grants");
}

/// An assistant state folder (0750, `autonomy: propose`, the `fleet` read category and every
/// proposing category open, as the README's step 5 has it) and its approver key line.
pub struct AssistantState {
    /// The folder.
    pub dir: tempfile::TempDir,
    /// `ed25519 …`, to install in the executor's key file.
    pub key_line: String,
    /// More environment for every command run for this folder, as an operator's service
    /// file sets it for `serve` (such as a short proposal lifetime).
    pub env: Vec<(String, String)>,
}

impl AssistantState {
    /// Makes the folder, the settings and the signing key.
    pub fn new() -> AssistantState {
        let dir = tempfile::tempdir().expect("state");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o750))
            .expect("chmod");
        std::fs::write(
            dir.path().join(fleetwatch::config::SETTINGS_FILE),
            "autonomy: propose\n",
        )
        .expect("settings");
        let state = AssistantState {
            dir,
            key_line: String::new(),
            env: Vec::new(),
        };
        open_every_proposing_category(state.path());
        // A model with nothing it may read is not asked at all.
        open_category(state.path(), "fleet");
        let shown = state.run(&["keys", "show"], "");
        assert!(shown.status.success(), "{shown:?}");
        let key_line = String::from_utf8_lossy(&shown.stdout)
            .lines()
            .find(|l| l.starts_with("ed25519 "))
            .expect("key line")
            .to_owned();
        AssistantState { key_line, ..state }
    }

    /// The folder's path.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `fleetwatch` with a clean environment pointing at this folder and the shipped policy.
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(binary("fleetwatch", "fleetwatch"));
        cmd.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("FLEETWATCH_STATE_DIR", self.path())
            .env(
                "FLEETWATCH_POLICY",
                workspace_root().join("tool_policy.yaml"),
            )
            .envs(self.env.iter().map(|(k, v)| (k, v)));
        cmd
    }

    /// Runs `fleetwatch ARGS` to the end with `input` on standard input.
    pub fn run(&self, args: &[&str], input: &str) -> Output {
        let mut child = self
            .command()
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("fleetwatch runs");
        if let Some(mut stdin) = child.stdin.take() {
            use std::io::Write as _;
            let _ = stdin.write_all(input.as_bytes());
        }
        child.wait_with_output().expect("fleetwatch finishes")
    }

    /// The store, opened as the page opens it.
    pub fn store(&self) -> Store {
        Store::open(self.path()).expect("store")
    }

    /// Stores a pending proposal bound to what the executor describes now, as a turn does.
    pub async fn propose(&self, h: &Harness, tool: &str, arguments: &serde_json::Value) -> u64 {
        let d = h.describe(tool, arguments).await;
        self.store()
            .insert_proposal(
                &NewProposal {
                    tool: tool.into(),
                    arguments: canonical(arguments),
                    targets: d.targets.clone(),
                    fingerprint: d.fingerprint.clone(),
                    schema_version: d.schema_version,
                    policy_digest: d.policy_digest,
                    slot: "sandbox".into(),
                    reason: "a test proposal".into(),
                },
                fleetwatch::store::now_secs(),
            )
            .expect("proposal")
    }
}

impl Default for AssistantState {
    fn default() -> Self {
        AssistantState::new()
    }
}

/// `fleetwatch serve` with its page, signed in; the session's requests are the page's own
/// (`page.front()`, `page.approve_form()` …).
pub struct Page {
    serve: Child,
    /// The model `serve` asks (the offline stand-in unless a test gave a scripted one).
    pub model: ModelHandle,
    /// The signed-in session.
    pub session: Session,
}

impl std::ops::Deref for Page {
    type Target = Session;
    fn deref(&self) -> &Session {
        &self.session
    }
}

/// A session signed in on an approval page, as a browser tab holds one.
pub struct Session {
    /// `http://127.0.0.1:PORT`.
    pub origin: String,
    /// A client that does not follow redirects.
    pub client: reqwest::Client,
    /// The session cookie (`name=value`).
    pub cookie: String,
}

impl Session {
    /// Signs in on the page at `origin` with its secret.
    pub async fn sign_in(origin: &str, secret: &str) -> Session {
        let client = crate::http_client_builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("client");
        let login = client
            .post(format!("{origin}/login"))
            .header("origin", origin)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form_body(&[
                ("secret".into(), secret.to_owned()),
                ("tab".into(), TAB.into()),
            ]))
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
        Session {
            origin: origin.to_owned(),
            client,
            cookie,
        }
    }
}

impl Drop for Page {
    fn drop(&mut self) {
        let _ = self.serve.kill();
        let _ = self.serve.wait();
    }
}

/// A port free on 127.0.0.1 now (for a server started right after).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
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

/// `application/x-www-form-urlencoded` of the fields.
pub fn form_body(fields: &[(String, String)]) -> String {
    fields
        .iter()
        .map(|(k, v)| format!("{}={}", urlencode(k), urlencode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// The per-tab value the page's script keeps in `sessionStorage`: what these clients send at
/// sign-in and with every form, as the script does in a browser.
pub const TAB: &str = "c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00";

/// The hidden fields of the form in `html` that posts to `action`, with the tab's value the
/// page's script adds.
pub fn form(html: &str, action: &str) -> Vec<(String, String)> {
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
    out.push(("tab".to_owned(), TAB.to_owned()));
    out
}

impl Page {
    /// Starts `fleetwatch serve` for `state` in front of the running executor of `h`, with
    /// `devices` as its fence, and signs in with the secret from the state folder.
    pub async fn start(state: &AssistantState, h: &Harness, devices: &[String]) -> Page {
        Page::start_on(free_port(), state, h, devices).await
    }

    /// [`Page::start`] on a port chosen beforehand (so the executor can be told the page's
    /// origin first).
    pub async fn start_on(
        port: u16,
        state: &AssistantState,
        h: &Harness,
        devices: &[String],
    ) -> Page {
        // The page starts only with a model; the simulator's offline stand-in serves as one.
        let model = fleetwatch_sim::model::start_offline()
            .await
            .expect("model stand-in");
        Page::start_with_model(port, state, h, devices, model).await
    }

    /// [`Page::start_on`] with `model` as the model `serve` asks (a scripted one, for a test
    /// that proposes through the model loop).
    pub async fn start_with_model(
        port: u16,
        state: &AssistantState,
        h: &Harness,
        devices: &[String],
        model: ModelHandle,
    ) -> Page {
        let mut command = state.command();
        match model.api() {
            Api::Anthropic => command
                .env("FLEETWATCH_ANTHROPIC_API_KEY", "test-key")
                .env("FLEETWATCH_ANTHROPIC_BASE_URL", model.url()),
            // As a team runs a server of its own: no key, its address and its model.
            Api::OpenAi => command
                .env("FLEETWATCH_MODEL_API", "openai")
                .env("FLEETWATCH_MODEL_BASE_URL", model.url())
                .env("FLEETWATCH_AI_MODEL", fleetwatch_sim::model::SCRIPTED_MODEL),
        };
        let child = command
            .env("FLEETWATCH_EPIPHAN_URL", h.sim.mcp_url())
            .env("FLEETWATCH_ALLOW_LOOPBACK_HTTP", "1")
            .env("FLEETWATCH_EPIPHAN_TOKEN", "normal-token")
            .env("FLEETWATCH_EXECUTOR_SOCKET", &h.socket)
            .env("FLEETWATCH_WRITE_DEVICE_IDS", devices.join(","))
            .env("FLEETWATCH_APPROVE_PORT", port.to_string())
            .arg("serve")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("serve");
        let mut serve = child;
        let secret_file = state.path().join("approval-page.secret");
        let deadline = Instant::now() + Duration::from_secs(60);
        while !(secret_file.exists() && std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()) {
            if let Ok(Some(status)) = serve.try_wait() {
                let mut err = String::new();
                if let Some(mut e) = serve.stderr.take() {
                    use std::io::Read as _;
                    let _ = e.read_to_string(&mut err);
                }
                panic!("fleetwatch serve exited ({status}): {err}");
            }
            assert!(Instant::now() < deadline, "the page did not start");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let secret = std::fs::read_to_string(&secret_file)
            .expect("secret")
            .trim()
            .to_owned();
        let session = Session::sign_in(&format!("http://127.0.0.1:{port}"), &secret).await;
        Page {
            serve,
            model,
            session,
        }
    }
}

impl Session {
    /// The front page's Approve form, as a request body.
    pub async fn approve_form(&self) -> String {
        form_body(&form(&self.front().await, "/approve"))
    }

    /// The front page's Approve form answered by a software passkey on the confirm page's
    /// default origin (the page's `FLEETWATCH_CONFIRM_ORIGIN` unless set), over the challenge the
    /// card names: what the confirm page's form returns, posted to `/approve` here.
    pub async fn approve_form_with(
        &self,
        passkey: &mut crate::authenticator::SoftPasskey,
    ) -> String {
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let html = self.front().await;
        let start = html
            .find("data-challenge=\"")
            .expect("the card asks a passkey")
            + 16;
        let challenge = &html[start..start + html[start..].find('"').expect("challenge end")];
        passkey.counter += 1;
        let ceremony = crate::authenticator::Ceremony {
            client_data_json: crate::authenticator::client_data(
                "webauthn.get",
                &b64.decode(challenge).expect("base64url challenge"),
                fleetwatch::config::DEFAULT_CONFIRM_ORIGIN,
            ),
            ..crate::authenticator::Ceremony::for_claims(b"", passkey.counter)
        };
        let assertion = passkey.assert_with(&ceremony);
        let fields = form(&html, "/approve")
            .into_iter()
            .map(|(name, value)| {
                let value = match name.as_str() {
                    "credential_id" => b64.encode(&assertion.credential_id),
                    "authenticator_data" => b64.encode(&assertion.authenticator_data),
                    "client_data_json" => b64.encode(&assertion.client_data_json),
                    "signature" => b64.encode(&assertion.signature),
                    _ => value,
                };
                (name, value)
            })
            .collect::<Vec<_>>();
        form_body(&fields)
    }

    /// The front page as this session's tab sees it: the view its shell asks for by POST
    /// with the tab's value.
    pub async fn front(&self) -> String {
        self.post_text("/", &form_body(&[("tab".to_owned(), TAB.to_owned())]))
            .await
            .1
    }

    /// A same-origin form POST with the session; the status (0 when it did not complete).
    pub async fn post(&self, path: &str, body: &str) -> u16 {
        self.post_text(path, body).await.0
    }

    /// [`Page::post`], with the page it answered (empty when it did not complete).
    pub async fn post_text(&self, path: &str, body: &str) -> (u16, String) {
        let Ok(response) = self
            .client
            .post(format!("{}{path}", self.origin))
            .header("cookie", &self.cookie)
            .header("origin", &self.origin)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body.to_owned())
            .send()
            .await
        else {
            return (0, String::new());
        };
        let status = response.status().as_u16();
        (status, response.text().await.unwrap_or_default())
    }
}

/// The whole approval path on this machine: an assistant state folder, the simulator and the
/// real executor trusting the assistant's key (fenced to the sandbox team's devices), and the
/// page in front of them, signed in.
pub struct PagePath {
    /// The assistant's state folder.
    pub state: AssistantState,
    /// The simulator and the running executor.
    pub h: Harness,
    /// The signed-in page.
    pub page: Page,
    /// The sandbox team's devices (the fence).
    pub devices: Vec<String>,
}

impl PagePath {
    /// Starts everything and signs in.
    pub async fn start() -> PagePath {
        PagePath::start_with(|_| String::new()).await
    }

    /// [`PagePath::start`] with more executor configuration, given the page's port.
    pub async fn start_with(config_extra: impl Fn(u16) -> String) -> PagePath {
        PagePath::start_full(config_extra, None, &[]).await
    }

    /// [`PagePath::start`] with `serve` asking `model` (scripted replies), so a test can
    /// propose through the model loop with `fleetwatch ask`.
    pub async fn start_with_model(model: ModelHandle) -> PagePath {
        PagePath::start_with_model_env(model, &[]).await
    }

    /// [`PagePath::start_with_model`] with `env` set for `serve` and every other command of
    /// the assistant's folder.
    pub async fn start_with_model_env(model: ModelHandle, env: &[(&str, &str)]) -> PagePath {
        PagePath::start_full(|_| String::new(), Some(model), env).await
    }

    async fn start_full(
        config_extra: impl Fn(u16) -> String,
        model: Option<ModelHandle>,
        env: &[(&str, &str)],
    ) -> PagePath {
        let mut state = AssistantState::new();
        state.env = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let mut h = Harness::prepare(Setup {
            extra_key_lines: vec![state.key_line.clone()],
            ..Setup::default()
        })
        .await;
        // The page's port is chosen once the simulator listens, so the two cannot meet on one
        // port; the executor's configuration learns it before the executor starts.
        let port = free_port();
        h.setup.config_extra = config_extra(port);
        let mut config = std::fs::read_to_string(&h.config).expect("executor config");
        if h.setup.config_extra.contains("passkeys:") {
            // Its own section replaces the one the harness wrote (with the test's origin owner).
            config = crate::without_passkeys_section(&config);
            config.push_str(&crate::with_origin_owner(&h.setup.config_extra));
        } else {
            config.push_str(&h.setup.config_extra);
        }
        std::fs::write(&h.config, config).expect("executor config");
        let devices = sandbox_devices(&h.sim);
        h.setup.allowlist = Some(devices.clone());
        h.spawn();
        h.wait_ready().await;
        let page = match model {
            Some(model) => Page::start_with_model(port, &state, &h, &devices, model).await,
            None => Page::start_on(port, &state, &h, &devices).await,
        };
        PagePath {
            state,
            h,
            page,
            devices,
        }
    }
}
