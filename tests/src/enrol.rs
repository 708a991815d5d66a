//! `fleetwatch-confirm enrol` driven as a browser would: the real binary serves its one-shot
//! page, and a software passkey answers it over HTTP (creation, then the proof over the second
//! challenge). Each part of the answer can be spoiled by a test.

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use crate::authenticator::{self, SoftPasskey};

/// User present, user verified, attested credential data.
pub const FLAGS_CREATE: u8 = 0x45;

/// A running `fleetwatch-confirm enrol`.
pub struct Enrolment {
    /// The process (stdout piped: the approver line).
    pub child: Child,
    /// The page's address, as the terminal printed it.
    pub url: String,
    /// Every line the program wrote to standard error, as it comes.
    pub stderr: mpsc::Receiver<String>,
}

impl Drop for Enrolment {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `fleetwatch-confirm enrol --person … --name … --approvers …` and waits for the
/// address it prints.
pub fn start(person: &str, name: &str, approvers: &Path) -> Enrolment {
    start_on(person, name, approvers, None)
}

/// [`start`] with `--port PORT` when `port` is given: the page an administrator forwards.
pub fn start_on(person: &str, name: &str, approvers: &Path, port: Option<u16>) -> Enrolment {
    let mut command = Command::new(crate::binary("fleetwatch-confirm", "fleetwatch-confirm"));
    command
        .args(["enrol", "--person", person, "--name", name, "--approvers"])
        .arg(approvers);
    if let Some(port) = port {
        command.args(["--port", &port.to_string()]);
    }
    from_command(command)
}

/// Runs `command`, which starts an enrolment (the binary itself, or a shell that pipes its line
/// onward), and waits for the address it prints on standard error.
pub fn from_command(mut command: Command) -> Enrolment {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("fleetwatch-confirm starts");
    let (tx, rx) = mpsc::channel();
    let stderr = child.stderr.take().expect("stderr");
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut url = None;
    while url.is_none() {
        let line = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("fleetwatch-confirm prints its address");
        if let Some(u) = line.trim().strip_prefix("http://localhost:") {
            url = Some(format!("http://localhost:{u}"));
        }
    }
    Enrolment {
        child,
        url: url.unwrap_or_default(),
        stderr: rx,
    }
}

impl Enrolment {
    /// The page's origin.
    pub fn origin(&self) -> String {
        let rest = self.url.trim_start_matches("http://");
        format!("http://{}", rest.split('/').next().unwrap_or_default())
    }

    /// Waits for the program to end: its exit success, standard output, and the rest of
    /// standard error.
    pub fn finish(mut self) -> (bool, String, String) {
        let status = self.child.wait().expect("wait");
        let mut out = String::new();
        if let Some(mut stdout) = self.child.stdout.take() {
            std::io::Read::read_to_string(&mut stdout, &mut out).expect("stdout");
        }
        // The reader thread ends when the program's standard error closes.
        let mut err = Vec::new();
        while let Ok(line) = self.stderr.recv_timeout(Duration::from_secs(10)) {
            err.push(line);
        }
        (status.success(), out, err.join("\n"))
    }
}

/// One `data-…` attribute of the page.
pub fn attribute(html: &str, name: &str) -> String {
    let key = format!("data-{name}=\"");
    let start = html
        .find(&key)
        .unwrap_or_else(|| panic!("no {key} in the page"))
        + key.len();
    let end = html[start..].find('"').expect("closing quote") + start;
    html[start..end].to_owned()
}

fn b64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn unb64url(text: &str) -> Vec<u8> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(text)
        .expect("base64url")
}

/// The creation's authenticator data: RP ID hash, flags, counter 0, a zero AAGUID, the
/// credential ID and the COSE public key (as authenticators write it).
pub fn creation_data(key: &SoftPasskey, flags: u8) -> Vec<u8> {
    let mut out = Sha256::digest(authenticator::RP_ID.as_bytes()).to_vec();
    out.push(flags);
    out.extend_from_slice(&0u32.to_be_bytes());
    out.extend_from_slice(&[0u8; 16]);
    out.extend_from_slice(
        &u16::try_from(key.credential_id.len())
            .expect("short")
            .to_be_bytes(),
    );
    out.extend_from_slice(&key.credential_id);
    let spki = key.spki();
    match key.algorithm() {
        fleetwatch_protocol::passkey::Algorithm::Es256 => {
            let point = &spki[spki.len() - 64..];
            out.extend_from_slice(&[0xa5, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01, 0x21, 0x58, 0x20]);
            out.extend_from_slice(&point[..32]);
            out.extend_from_slice(&[0x22, 0x58, 0x20]);
            out.extend_from_slice(&point[32..]);
        }
        fleetwatch_protocol::passkey::Algorithm::Ed25519 => {
            out.extend_from_slice(&[0xa4, 0x01, 0x01, 0x03, 0x27, 0x20, 0x06, 0x21, 0x58, 0x20]);
            out.extend_from_slice(&spki[spki.len() - 32..]);
        }
    }
    out
}

/// The answer the page's script would post for `made` (the created passkey), with the proof
/// signed by `signer` (the same passkey, unless a test wants another).
pub fn answer(html: &str, origin: &str, made: &SoftPasskey, signer: &SoftPasskey) -> Value {
    let create_challenge = unb64url(&attribute(html, "create-challenge"));
    let get_challenge = unb64url(&attribute(html, "get-challenge"));
    let create_client_data =
        authenticator::client_data("webauthn.create", &create_challenge, origin);
    let client_data = authenticator::client_data("webauthn.get", &get_challenge, origin);
    let authenticator_data =
        authenticator::authenticator_data(authenticator::RP_ID, authenticator::FLAGS_UP_UV, 1);
    json!({
        "id": b64url(&made.credential_id),
        "algorithm": made.algorithm().cose(),
        "public_key": b64url(&made.spki()),
        "create_client_data": b64url(&create_client_data),
        "create_authenticator_data": b64url(&creation_data(made, FLAGS_CREATE)),
        "assertion_id": b64url(&made.credential_id),
        "authenticator_data": b64url(&authenticator_data),
        "client_data": b64url(&client_data),
        "signature": b64url(&signer.sign(&authenticator_data, &client_data)),
    })
}

/// GETs the page and POSTs an answer the way its script does; the status and the answer.
pub async fn post(enrolment: &Enrolment, body: &Value) -> (u16, Value) {
    let client = crate::http_client_builder().build().expect("client");
    let origin = enrolment.origin();
    let response = client
        .post(&enrolment.url)
        .header("origin", &origin)
        .header("sec-fetch-site", "same-origin")
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .expect("the page answers");
    let status = response.status().as_u16();
    let value = response.json().await.unwrap_or(Value::Null);
    (status, value)
}

/// The page's HTML.
pub async fn page(enrolment: &Enrolment) -> String {
    crate::http_get(&enrolment.url)
        .await
        .expect("the page answers")
        .text()
        .await
        .expect("html")
}

/// Enrols `key` for `person` through the real binary and returns the approver line it printed.
pub async fn enrol(key: &SoftPasskey, person: &str, name: &str, approvers: &Path) -> String {
    let enrolment = start(person, name, approvers);
    let html = page(&enrolment).await;
    let body = answer(&html, &enrolment.origin(), key, key);
    let (status, reply) = post(&enrolment, &body).await;
    assert_eq!(status, 200, "{reply}");
    let (ok, out, err) = enrolment.finish();
    assert!(ok, "{err}");
    out.trim().to_owned()
}
