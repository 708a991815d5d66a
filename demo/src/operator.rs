//! The demo's operators: a browser session on the approval page, driven over HTTP the way a
//! browser and the page's scripts drive it, and the demo's stand-in passkeys.
//!
//! A stand-in passkey is a software Ed25519 key made fresh for each demo run. It is enrolled as
//! an administrator enrols a person: `fleetwatch-confirm enrol` runs as its own program, the
//! stand-in answers that one-shot page's creation and proof exactly as a security key and a
//! browser would, and the line the program prints is piped into `fleetwatch-executor approvers
//! add -`. It answers the approval page's passkey request the same way (authenticator data,
//! client data JSON, a signature over both), so every program checks it with the same code as a
//! real one. Its name says it is a stand-in everywhere it shows: on the page, in the executor's
//! `approvers list` and in both audit logs. It never leaves the demo's process, and the demo's
//! folder (with the executor's approver file that lists it) is removed at the end.

use std::time::Duration;

use base64::Engine as _;
use ed25519_dalek::Signer as _;
use fleetwatch_protocol::passkey::{Algorithm, Backup, PasskeyRecord};
use sha2::{Digest as _, Sha256};

use crate::page_html::{Page, form_body};

/// The person IDs and names of the demo's two stand-in passkeys.
pub(crate) const STAND_INS: [(&str, &str); 2] = [
    ("demo-1", "Demo operator (stand-in passkey)"),
    ("demo-2", "Second demo operator (stand-in passkey)"),
];

/// The RP ID the page asks passkeys for.
const RP_ID: &str = "localhost";
/// User present and user verified: what a security key with a PIN reports.
const FLAGS_UP_UV: u8 = 0x05;
/// The same, with attested credential data: what a creation reports.
const FLAGS_CREATED: u8 = 0x45;

fn b64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// One stand-in passkey.
pub(crate) struct StandIn {
    person: &'static str,
    name: &'static str,
    key: ed25519_dalek::SigningKey,
    credential_id: Vec<u8>,
    counter: u32,
}

impl StandIn {
    /// A fresh key and credential ID.
    pub(crate) fn new(person: &'static str, name: &'static str) -> Result<StandIn, String> {
        let mut seed = [0u8; 32];
        let mut credential_id = vec![0u8; 16];
        getrandom::fill(&mut seed)
            .and_then(|()| getrandom::fill(&mut credential_id))
            .map_err(|e| format!("no randomness for a stand-in passkey: {e}"))?;
        Ok(StandIn {
            person,
            name,
            key: ed25519_dalek::SigningKey::from_bytes(&seed),
            credential_id,
            counter: 0,
        })
    }

    /// The operator's name it carries.
    pub(crate) fn name(&self) -> &'static str {
        self.name
    }

    /// Its public key as `response.getPublicKey()` gives it: an Ed25519 SPKI.
    fn spki(&self) -> Vec<u8> {
        let mut spki = vec![
            0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
        ];
        spki.extend_from_slice(self.key.verifying_key().as_bytes());
        spki
    }

    /// Its record, checked by the protocol's own parser: a device-bound passkey of its person.
    pub(crate) fn record(&self) -> Result<PasskeyRecord, String> {
        PasskeyRecord::for_person(
            self.person,
            Backup::DeviceBound,
            Algorithm::Ed25519,
            self.credential_id.clone(),
            self.spki(),
            self.name,
        )
        .map_err(|e| format!("stand-in passkey: {e}"))
    }

    /// Signs authenticator data and client data as an authenticator does.
    fn sign(&self, authenticator_data: &[u8], client_data: &[u8]) -> Vec<u8> {
        let mut message = authenticator_data.to_vec();
        message.extend_from_slice(&Sha256::digest(client_data));
        self.key.sign(&message).to_bytes().to_vec()
    }

    /// What `fleetwatch-confirm enrol`'s page script posts after the browser made this passkey
    /// (`credentials.create` over `create_challenge`) and proved it (`credentials.get` over
    /// `get_challenge`), both base64url, on a page at `origin`.
    fn enrol_answer(
        &mut self,
        create_challenge: &str,
        get_challenge: &str,
        origin: &str,
    ) -> serde_json::Value {
        let client_data = |kind: &str, challenge: &str| {
            serde_json::json!({
                "type": kind,
                "challenge": challenge,
                "origin": origin,
                "crossOrigin": false,
            })
            .to_string()
        };
        // Creation: RP ID hash, flags, counter 0, a zero AAGUID, the credential ID and its
        // COSE key (OKP, EdDSA, Ed25519), as an authenticator writes them.
        let mut created = Sha256::digest(RP_ID.as_bytes()).to_vec();
        created.push(FLAGS_CREATED);
        created.extend_from_slice(&0u32.to_be_bytes());
        created.extend_from_slice(&[0u8; 16]);
        let length = u16::try_from(self.credential_id.len()).unwrap_or(u16::MAX);
        created.extend_from_slice(&length.to_be_bytes());
        created.extend_from_slice(&self.credential_id);
        created.extend_from_slice(&[0xa4, 0x01, 0x01, 0x03, 0x27, 0x20, 0x06, 0x21, 0x58, 0x20]);
        created.extend_from_slice(self.key.verifying_key().as_bytes());
        let create_client_data = client_data("webauthn.create", create_challenge);
        // Proof: an assertion over the program's second challenge.
        self.counter += 1;
        let get_client_data = client_data("webauthn.get", get_challenge);
        let mut asserted = Sha256::digest(RP_ID.as_bytes()).to_vec();
        asserted.push(FLAGS_UP_UV);
        asserted.extend_from_slice(&self.counter.to_be_bytes());
        let signature = self.sign(&asserted, get_client_data.as_bytes());
        serde_json::json!({
            "id": b64url(&self.credential_id),
            "algorithm": Algorithm::Ed25519.cose(),
            "public_key": b64url(&self.spki()),
            "create_client_data": b64url(create_client_data.as_bytes()),
            "create_authenticator_data": b64url(&created),
            "assertion_id": b64url(&self.credential_id),
            "authenticator_data": b64url(&asserted),
            "client_data": b64url(get_client_data.as_bytes()),
            "signature": b64url(&signature),
        })
    }

    /// Answers a passkey request for `challenge` (base64url) from a page at `origin`: the four
    /// fields `approve.js` fills in. The counter goes up with every answer, as a key's does.
    fn answer(&mut self, challenge: &str, origin: &str) -> Vec<(String, String)> {
        self.counter += 1;
        let client_data = serde_json::json!({
            "type": "webauthn.get",
            "challenge": challenge,
            "origin": origin,
            "crossOrigin": false,
        })
        .to_string();
        let mut authenticator_data = Sha256::digest(RP_ID.as_bytes()).to_vec();
        authenticator_data.push(FLAGS_UP_UV);
        authenticator_data.extend_from_slice(&self.counter.to_be_bytes());
        let signature = self.sign(&authenticator_data, client_data.as_bytes());
        vec![
            ("credential_id".to_owned(), b64url(&self.credential_id)),
            ("authenticator_data".to_owned(), b64url(&authenticator_data)),
            (
                "client_data_json".to_owned(),
                b64url(client_data.as_bytes()),
            ),
            ("signature".to_owned(), b64url(&signature)),
        ]
    }
}

/// One browser session on the approval page (its own cookie and tab value).
pub(crate) struct Browser {
    http: reqwest::Client,
    /// `http://localhost:<port>`.
    pub(crate) origin: String,
    /// The confirm page's origin (`fleetwatch-confirm serve`).
    pub(crate) confirm_origin: String,
    secret: String,
    /// This tab's value, as the page's script keeps it in `sessionStorage`: sent at sign-in
    /// and with every form.
    tab: String,
    cookie: Option<String>,
}

impl Browser {
    /// A browser, not signed in yet, for the page at `origin` whose secret is `secret`.
    pub(crate) fn new(
        origin: String,
        confirm_origin: String,
        secret: String,
    ) -> Result<Browser, String> {
        let http = fleetwatch_epiphan::tls::client_builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(150))
            .build()
            .map_err(|e| e.to_string())?;
        let mut tab = [0u8; 32];
        getrandom::fill(&mut tab).map_err(|e| format!("no randomness for the tab value: {e}"))?;
        Ok(Browser {
            http,
            origin,
            confirm_origin,
            secret,
            tab: fleetwatch_protocol::hex::encode(&tab),
            cookie: None,
        })
    }

    /// `GET path` as a browser tab loads it: a view's GET answers a shell whose script asks
    /// for the view by POST with the tab's value, which is followed here the same way. The
    /// status and the parsed page.
    pub(crate) async fn get(&self, path: &str) -> Result<(u16, Page), String> {
        let (status, page) = self.get_only(path).await?;
        if page.form_attribute(path, "id").as_deref() == Some("view") {
            return self.post_page(path, &[]).await;
        }
        Ok((status, page))
    }

    /// `GET path` alone: the status and the parsed page.
    pub(crate) async fn get_only(&self, path: &str) -> Result<(u16, Page), String> {
        let mut request = self.http.get(format!("{}{path}", self.origin));
        if let Some(cookie) = &self.cookie {
            request = request.header("cookie", cookie);
        }
        let response = request
            .header("accept-language", "en")
            .send()
            .await
            .map_err(|e| format!("GET {path}: {e}"))?;
        let status = response.status().as_u16();
        let body = response.text().await.map_err(|e| e.to_string())?;
        Ok((status, Page::parse(&body)))
    }

    /// A form POST with the tab's value added; `origin` says whether the browser sends its
    /// `Origin` header (every browser does on a form POST).
    pub(crate) async fn post(
        &self,
        path: &str,
        fields: &[(String, String)],
        origin: bool,
    ) -> Result<reqwest::Response, String> {
        let fields: Vec<(String, String)> = fields
            .iter()
            .cloned()
            .chain([("tab".to_owned(), self.tab.clone())])
            .collect();
        let mut request = self
            .http
            .post(format!("{}{path}", self.origin))
            .header("content-type", "application/x-www-form-urlencoded")
            .header("accept-language", "en")
            .body(form_body(&fields));
        if origin {
            request = request.header("origin", &self.origin);
        }
        if let Some(cookie) = &self.cookie {
            request = request.header("cookie", cookie);
        }
        request
            .send()
            .await
            .map_err(|e| format!("POST {path}: {e}"))
    }

    /// A form POST as a browser sends it: the status and the parsed page.
    pub(crate) async fn post_page(
        &self,
        path: &str,
        fields: &[(String, String)],
    ) -> Result<(u16, Page), String> {
        let response = self.post(path, fields, true).await?;
        let status = response.status().as_u16();
        let body = response.text().await.map_err(|e| e.to_string())?;
        Ok((status, Page::parse(&body)))
    }

    /// Signs in with the secret; the status of the answer (303 with a session cookie, kept).
    pub(crate) async fn sign_in(&mut self) -> Result<u16, String> {
        let secret = vec![("secret".to_owned(), self.secret.clone())];
        let response = self.post("/login", &secret, true).await?;
        let status = response.status().as_u16();
        let cookie = response
            .headers()
            .get("set-cookie")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .map(str::to_owned);
        match (status, cookie) {
            (303, Some(cookie)) => {
                self.cookie = Some(cookie);
                Ok(status)
            }
            (status, _) => Err(format!("POST /login with the secret answered {status}")),
        }
    }

    /// The sign-in form's secret, for a POST the caller shapes itself.
    pub(crate) fn secret_field(&self) -> Vec<(String, String)> {
        vec![("secret".to_owned(), self.secret.clone())]
    }

    /// A form POST to an absolute address, as a browser sends it when a page of `origin`
    /// posts there (the session cookie goes to the approval page only): the status and the
    /// parsed page.
    pub(crate) async fn post_to(
        &self,
        url: &str,
        fields: &[(String, String)],
        origin: &str,
    ) -> Result<(u16, Page), String> {
        let mut request = self
            .http
            .post(url)
            .header("content-type", "application/x-www-form-urlencoded")
            .header("accept-language", "en")
            .header("origin", origin)
            .body(form_body(fields));
        if url.starts_with(&format!("{}/", self.origin))
            && let Some(cookie) = &self.cookie
        {
            request = request.header("cookie", cookie);
        }
        let response = request
            .send()
            .await
            .map_err(|e| format!("POST {url}: {e}"))?;
        let status = response.status().as_u16();
        let body = response.text().await.map_err(|e| e.to_string())?;
        Ok((status, Page::parse(&body)))
    }
}

/// What the approval page answered when it handed the tab to the confirm page, followed as a
/// browser does: the confirm page shown the claims, the stand-in passkey answering its request
/// there, and the confirm page's form posted back to `/confirmed`. Prints each exchange; the
/// last page, and the `/confirmed` form (to show that sending it again is refused).
pub(crate) async fn through_confirm_page(
    browser: &Browser,
    stand_in: &mut StandIn,
    handoff: &Page,
    indent: &str,
) -> Result<(u16, Page, Vec<(String, String)>), String> {
    let confirm_url = format!("{}/", browser.confirm_origin);
    let fields = handoff
        .form_fields(&confirm_url)
        .ok_or_else(|| format!("the page did not hand off:\n{}", handoff.main_text()))?;
    let (status, confirm) = browser
        .post_to(&confirm_url, &fields, &browser.origin)
        .await?;
    let heading = confirm.text_by_id("confirm-heading").unwrap_or_default();
    println!(
        "{indent}confirm page ({}): {status}, \"{heading}\"",
        browser.confirm_origin
    );
    for line in confirm.list_items("effects") {
        println!("{indent}  {line}");
    }
    if let Some(line) = confirm.text_by_id("disruptive") {
        println!("{indent}  {line}");
    }
    let action = format!("{}/confirmed", browser.origin);
    let challenge = confirm
        .form_attribute(&action, "data-challenge")
        .ok_or_else(|| format!("the confirm page asks no passkey:\n{}", confirm.main_text()))?;
    // The confirm page asks nothing on its own: the person reads it and presses the one button,
    // which names the change and its rooms.
    let button = confirm.text_by_id("passkey").unwrap_or_default();
    println!("{indent}confirm page: the person presses \"{button}\"");
    let answer = stand_in.answer(&challenge, &browser.confirm_origin);
    let form: Vec<(String, String)> = confirm
        .form_fields(&action)
        .ok_or_else(|| "the confirm page has no form".to_owned())?
        .into_iter()
        .map(|(name, value)| {
            let value = answer
                .iter()
                .find(|(n, _)| *n == name)
                .map_or(value, |(_, v)| v.clone());
            (name, value)
        })
        .collect();
    let (status, page) = browser
        .post_to(&action, &form, &browser.confirm_origin)
        .await?;
    let heading = page.text_by_id("heading").unwrap_or_default();
    println!(
        "{indent}confirm page: the passkey \"{}\" answers → page: POST /confirmed → {status}, \"{heading}\"",
        stand_in.name()
    );
    Ok((status, page, form))
}

/// Approves proposal `id` from `browser` with `stand_in`, as a person would: the card must be
/// that proposal's; Approve, then Confirm when the page asks for it (the trial mode's
/// disruptive change), then the confirm page when the page hands the tab over. Prints each exchange
/// (indented by `indent`) and returns the last page.
pub(crate) async fn approve_as(
    browser: &Browser,
    stand_in: &mut StandIn,
    id: u64,
    indent: &str,
) -> Result<(u16, Page), String> {
    let (status, card) = browser.get("/").await?;
    let fields = card
        .form_fields("/approve")
        .filter(|_| status == 200)
        .ok_or_else(|| format!("the page offers no Approve:\n{}", card.main_text()))?;
    if crate::page_html::field(&fields, "proposal") != Some(id.to_string().as_str()) {
        return Err(format!(
            "the card on the page is not proposal #{id} (the page shows the oldest pending \
             proposal first)"
        ));
    }
    if let Some(line) = card.text_by_id("waiting") {
        println!("{indent}page: {line}");
    }
    let mut form = fields;
    let mut path = "/approve";
    loop {
        let (status, page) = browser.post_page(path, &form).await?;
        if page.text_by_id("handoff-heading").is_some() {
            println!("{indent}page: POST {path} → {status}, hands the tab to the confirm page");
            let (status, page, _) = through_confirm_page(browser, stand_in, &page, indent).await?;
            return Ok((status, page));
        }
        let heading = page
            .text_by_id("heading")
            .or_else(|| page.text_by_id("confirm-text"))
            .unwrap_or_default();
        println!("{indent}page: POST {path} → {status}, \"{heading}\"");
        match page.form_fields("/confirm") {
            Some(next) if path == "/approve" && status == 200 => {
                form = next;
                path = "/confirm";
            }
            _ => return Ok((status, page)),
        }
    }
}

/// Runs `fleetwatch-executor ARGS` on the demo's executor configuration with `input` on
/// standard input; its standard output, or why it failed.
pub(crate) fn executor_cli(
    program: &std::path::Path,
    config: &std::path::Path,
    args: &[&str],
    input: &str,
) -> Result<String, String> {
    use std::io::Write as _;
    use std::process::{Command, Stdio};
    let mut child = Command::new(program)
        .args(args)
        .env_clear()
        .env("FLEETWATCH_EXECUTOR_CONFIG", config)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("fleetwatch-executor {}: {e}", args.join(" ")))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(input.as_bytes())
            .map_err(|e| format!("fleetwatch-executor: {e}"))?;
    }
    let output = child
        .wait_with_output()
        .map_err(|e| format!("fleetwatch-executor: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "fleetwatch-executor {}: {}",
            args.first().copied().unwrap_or_default(),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// Enrols `stand_in` as an administrator enrols a person: runs `fleetwatch-confirm enrol`,
/// answers its one-shot page over HTTP as a browser with a security key would, and takes the
/// approver line from the program's standard output and the fingerprint from its standard
/// error. Prints each step (indented by `indent`).
async fn enrol_in_terminal(
    running: &crate::inprocess::Running,
    stand_in: &mut StandIn,
    indent: &str,
) -> Result<(String, String), String> {
    use tokio::io::AsyncBufReadExt as _;
    let mut child = tokio::process::Command::new(&running.confirm_program)
        .args([
            "enrol",
            "--person",
            stand_in.person,
            "--name",
            stand_in.name,
        ])
        .arg("--approvers")
        .arg(&running.executor_approvers)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("fleetwatch-confirm enrol: {e}"))?;
    let stderr = child
        .stderr
        .take()
        .ok_or_else(|| "fleetwatch-confirm: no standard error".to_owned())?;
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    let mut said = Vec::new();
    let url = loop {
        let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
            .await
            .map_err(|_| "fleetwatch-confirm printed no address".to_owned())?
            .map_err(|e| format!("fleetwatch-confirm: {e}"))?
            .ok_or_else(|| format!("fleetwatch-confirm ended: {}", said.join(" ")))?;
        if let Some(rest) = line.trim().strip_prefix("http://localhost:") {
            break format!("http://localhost:{rest}");
        }
        said.push(line);
    };
    let origin = url
        .find("/enrol/")
        .and_then(|at| url.get(..at))
        .unwrap_or_default()
        .to_owned();
    println!(
        "{indent}fleetwatch-confirm enrol --person {} --name \"{}\" → a one-shot page at \
         {origin}/enrol/<token, printed in its terminal only>",
        stand_in.person, stand_in.name
    );
    let http = fleetwatch_epiphan::tls::client_builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| e.to_string())?;
    let html = http
        .get(&url)
        .header("accept-language", "en")
        .send()
        .await
        .map_err(|e| format!("GET the enrolment page: {e}"))?
        .text()
        .await
        .map_err(|e| e.to_string())?;
    let page = Page::parse(&html);
    let challenge = |name: &str| {
        page.attribute_by_id("enrol", name)
            .ok_or_else(|| format!("the enrolment page has no {name}"))
    };
    let answer = stand_in.enrol_answer(
        &challenge("data-create-challenge")?,
        &challenge("data-get-challenge")?,
        &origin,
    );
    let response = http
        .post(&url)
        .header("origin", &origin)
        .header("accept-language", "en")
        .header("content-type", "application/json")
        .body(answer.to_string())
        .send()
        .await
        .map_err(|e| format!("POST the enrolment page: {e}"))?;
    let status = response.status().as_u16();
    let reply: serde_json::Value = response.json().await.unwrap_or_default();
    println!(
        "{indent}enrolment page: the stand-in makes the passkey and proves it over the second \
         challenge → {status}, \"{}\"",
        reply["message"].as_str().unwrap_or_default()
    );
    while let Ok(Some(line)) = lines.next_line().await {
        said.push(line);
    }
    let output = child
        .wait_with_output()
        .await
        .map_err(|e| format!("fleetwatch-confirm: {e}"))?;
    let line = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    if !output.status.success() || line.is_empty() {
        return Err(format!(
            "fleetwatch-confirm enrol refused the stand-in: {}",
            said.join(" ")
        ));
    }
    let print = said
        .iter()
        .find_map(|l| l.strip_prefix("fingerprint: "))
        .ok_or_else(|| "fleetwatch-confirm printed no fingerprint".to_owned())?
        .to_owned();
    if line != stand_in.record()?.to_line() {
        return Err(format!(
            "fleetwatch-confirm printed a line that is not this passkey's: {line}"
        ));
    }
    println!(
        "{indent}terminal: the approver line on standard output, fingerprint {print} (person {})",
        stand_in.person
    );
    Ok((line, print))
}

/// Makes both stand-in passkeys, enrols each with `fleetwatch-confirm enrol` and pipes the line
/// it prints into `fleetwatch-executor approvers add -`, checking the fingerprint the executor
/// prints against the one the enrolment printed, as an administrator would. Prints each step
/// (indented by `indent`).
pub(crate) async fn enrol_stand_ins(
    running: &crate::inprocess::Running,
    indent: &str,
) -> Result<Vec<StandIn>, String> {
    let mut out = Vec::new();
    for (person, name) in STAND_INS {
        let mut stand_in = StandIn::new(person, name)?;
        let (line, shown) = enrol_in_terminal(running, &mut stand_in, indent).await?;
        let said = executor_cli(
            &running.executor_program,
            &running.executor_config,
            &["approvers", "add", "-"],
            &format!("{line}\n"),
        )?;
        if !said.contains(&format!("fingerprint: {shown}")) {
            return Err(format!(
                "the executor's fingerprint does not match the enrolment's:\n{said}"
            ));
        }
        println!(
            "{indent}… | fleetwatch-executor approvers add - → installed, fingerprint {shown} \
             (the same)"
        );
        out.push(stand_in);
    }
    Ok(out)
}

/// The interactive demo's two stand-in operators: a browser session each, with its stand-in
/// passkey, enrolled and installed at start. `approve N` at the demo's prompt uses them.
pub(crate) struct Operators {
    browsers: Vec<Browser>,
    stand_ins: Vec<StandIn>,
    executor_program: std::path::PathBuf,
    executor_config: std::path::PathBuf,
}

impl Operators {
    /// Signs both operators in, then enrols and installs the stand-in passkeys.
    pub(crate) async fn start(
        running: &crate::inprocess::Running,
        secret: &str,
    ) -> Result<Operators, String> {
        let origin = format!("http://localhost:{}", running.page.addr.port());
        let mut browsers = Vec::new();
        for _ in STAND_INS {
            let mut browser = Browser::new(
                origin.clone(),
                running.confirm_origin.clone(),
                secret.to_owned(),
            )?;
            browser.sign_in().await?;
            browsers.push(browser);
        }
        let stand_ins = enrol_stand_ins(running, "  ").await?;
        Ok(Operators {
            browsers,
            stand_ins,
            executor_program: running.executor_program.clone(),
            executor_config: running.executor_config.clone(),
        })
    }

    /// Approves proposal `id` as the first operator, and as the second too when the change
    /// waits for a second person; prints what the page answers.
    pub(crate) async fn approve(&mut self, id: u64) -> Result<(), String> {
        for (browser, stand_in) in self.browsers.iter().zip(self.stand_ins.iter_mut()) {
            let (_, page) = approve_as(browser, stand_in, id, "  ").await?;
            for line in page.paragraphs() {
                println!("    {line}");
            }
            if page.text_by_id("heading").as_deref() != Some("Your approval is kept") {
                return Ok(());
            }
        }
        Ok(())
    }

    /// Installs an approver line `fleetwatch-confirm enrol` printed on the demo's executor, as
    /// `sudo fleetwatch-executor approvers add -` does on a real one.
    pub(crate) fn install(&self, line: &str) -> Result<String, String> {
        let line = line.trim().trim_matches('\'');
        executor_cli(
            &self.executor_program,
            &self.executor_config,
            &["approvers", "add", "-"],
            &format!("{line}\n"),
        )
    }
}
