//! `fleetwatch-confirm enrol`: a person's passkey, enrolled in the administrator's terminal
//! (DESIGN §9).
//!
//! The program chooses everything the ceremony binds — the path token, the user handle and two
//! challenges — before it serves anything. The page asks the browser to create a passkey for
//! `localhost` with user verification, then to sign the second challenge with it. The program
//! then checks, in order: the creation's client data (type `webauthn.create`, the first
//! challenge, this page's own origin, not cross-origin) and authenticator data (RP ID hash,
//! user present, user verified, the new credential's ID); the public key the browser returned,
//! with the protocol's record parser; and the assertion over the second challenge, with the
//! protocol's verifier against that key (proof of possession). Only then does it print the
//! approver line, to standard output, and its fingerprint, to standard error: the terminal is
//! the only place either appears. One attempt: a refused one also ends the program.

use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use fleetwatch_protocol::passkey::{
    self, Algorithm, Approvers, Backup, PRODUCTION_RP_ID, PasskeyAssertion, PasskeyError,
    PasskeyRecord, RelyingParty,
};
use serde_json::Value;

use crate::http::{self, Reply, Request, Response};
use crate::lang::Lang;

/// How long the page stays open.
pub const LIFETIME: Duration = Duration::from_secs(10 * 60);

/// Where an installed executor keeps its approver file.
pub const DEFAULT_APPROVERS: &str = "/etc/fleetwatch/approvers.pub";

/// What the administrator asked for.
#[derive(Debug, Clone)]
pub struct Options {
    /// The person's short ID.
    pub person: String,
    /// The person's display name.
    pub name: String,
    /// The approver file whose passkeys the browser is told not to make again.
    pub approvers: PathBuf,
    /// A fixed port, or the kernel's choice.
    pub port: Option<u16>,
    /// How long the page stays open.
    pub lifetime: Duration,
}

/// What the ceremony binds, chosen before the page is served.
struct Ceremony {
    token: String,
    origin: String,
    host: String,
    person: String,
    name: String,
    user_handle: [u8; 16],
    create_challenge: [u8; 32],
    get_challenge: [u8; 32],
    exclude: Vec<Vec<u8>>,
}

/// How an enrolment ended.
#[derive(Debug)]
pub enum Ending {
    /// A passkey was made and proved; the record to install.
    Enrolled(Box<PasskeyRecord>, passkey::Registration),
    /// The one attempt was refused; why, in a sentence.
    Refused(String),
}

fn random<const N: usize>() -> Result<[u8; N], String> {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).map_err(|e| format!("no randomness from the system: {e}"))?;
    Ok(bytes)
}

fn b64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The credential IDs already enrolled in the approver file, when it can be read (an
/// administrator without root may not): the browser is asked not to make a second passkey on
/// an authenticator that holds one.
pub fn enrolled_credentials(path: &std::path::Path) -> Option<Vec<Vec<u8>>> {
    let text = std::fs::read_to_string(path).ok()?;
    Some(
        text.lines()
            .filter_map(|l| PasskeyRecord::parse_line(l).ok())
            .map(|r| r.credential_id().to_vec())
            .collect(),
    )
}

/// Runs the enrolment: serves the page, waits for one attempt or the lifetime, prints the
/// outcome. Returns the process's success.
pub fn run(options: &Options) -> bool {
    match run_inner(options) {
        Ok(ok) => ok,
        Err(message) => {
            eprintln!("fleetwatch-confirm: {message}");
            false
        }
    }
}

fn run_inner(options: &Options) -> Result<bool, String> {
    let person = passkey::check_person(&options.person)
        .map_err(|e| format!("--person {:?}: {e}", options.person))?;
    let name = passkey::check_display_name(&options.name)
        .map_err(|e| format!("--name {:?}: {e}", options.name))?;
    let exclude = enrolled_credentials(&options.approvers);
    let listeners = http::bind_loopback(options.port)
        .map_err(|e| format!("cannot listen on the loopback addresses: {e}"))?;
    let port = listeners.port;
    let ceremony = Arc::new(Ceremony {
        token: b64url(&random::<16>()?),
        origin: format!("http://localhost:{port}"),
        host: format!("localhost:{port}"),
        person: person.clone(),
        name: name.clone(),
        user_handle: random()?,
        create_challenge: random()?,
        get_challenge: random()?,
        exclude: exclude.clone().unwrap_or_default(),
    });
    let (done, ended) = mpsc::channel::<Ending>();
    let attempted = Arc::new(Mutex::new(false));
    let handler_ceremony = ceremony.clone();
    let handler: http::Handler =
        Arc::new(move |request: &Request| handle(&handler_ceremony, &attempted, &done, request));
    let ipv6 = listeners.ipv6;
    // Beyond a few, connections that have not shown the token path are closed, so another local
    // user's idle connections cannot hold every slot while the person's browser waits.
    http::serve_gated(listeners, handler, format!("/enrol/{}", ceremony.token));

    eprintln!("fleetwatch-confirm: enrolling {name} (person {person}).");
    if !ipv6 {
        eprintln!("This host has no IPv6 loopback; the page listens on 127.0.0.1 only.");
    }
    match &exclude {
        Some(ids) => eprintln!(
            "{} passkey(s) already enrolled in {} will not be made again.",
            ids.len(),
            options.approvers.display()
        ),
        None => eprintln!(
            "{} could not be read, so the browser cannot be told which passkeys are already \
             enrolled (`approvers add` still refuses a duplicate).",
            options.approvers.display()
        ),
    }
    eprintln!(
        "Open this address in a browser on this machine within {} minutes (one enrolment):",
        options.lifetime.as_secs() / 60
    );
    eprintln!("  {}/enrol/{}", ceremony.origin, ceremony.token);

    match ended.recv_timeout(options.lifetime) {
        Ok(Ending::Enrolled(record, registration)) => {
            println!("{}", record.to_line());
            eprintln!(
                "fleetwatch-confirm: enrolled {} (person {}): an {} passkey, {}{}.",
                record.name(),
                person,
                match record.algorithm() {
                    Algorithm::Es256 => "ES256",
                    Algorithm::Ed25519 => "Ed25519",
                },
                describe_backup(registration.backup),
                if registration.backed_up {
                    ", backed up now"
                } else {
                    ""
                }
            );
            eprintln!("fingerprint: {}", record.fingerprint());
            eprintln!(
                "The approver line is on standard output. Install it with \
                 `fleetwatch-executor approvers add -` (as root), and check that the \
                 fingerprint it prints is this one. The page is closed."
            );
            Ok(true)
        }
        Ok(Ending::Refused(why)) => {
            eprintln!("fleetwatch-confirm: the enrolment was refused: {why}");
            eprintln!("No approver line was printed. The page is closed; run the command again.");
            Ok(false)
        }
        Err(_) => {
            eprintln!(
                "fleetwatch-confirm: no passkey was enrolled within {} minutes; the page is \
                 closed and no approver line was printed.",
                options.lifetime.as_secs() / 60
            );
            Ok(false)
        }
    }
}

fn describe_backup(backup: Backup) -> &'static str {
    match backup {
        Backup::Synced => "synced (it may be copied to the person's other devices)",
        Backup::DeviceBound => "device-bound (it never leaves its authenticator)",
    }
}

/// Answers one request. Only the token's paths exist; any other path is 404.
fn handle(
    ceremony: &Ceremony,
    attempted: &Mutex<bool>,
    done: &mpsc::Sender<Ending>,
    request: &Request,
) -> Reply {
    let (response, ending) = route(ceremony, attempted, request);
    let Some(ending) = ending else {
        return response.into();
    };
    // The program ends when it hears of the ending: tell it only once the browser has the
    // answer.
    let done = done.clone();
    Reply {
        response,
        then: Some(Box::new(move || {
            let _ = done.send(ending);
        })),
    }
}

/// The answer to one request, and the ending it brings, if any.
fn route(
    ceremony: &Ceremony,
    attempted: &Mutex<bool>,
    request: &Request,
) -> (Response, Option<Ending>) {
    // A page reached under another host name (DNS rebinding) is not this page.
    if request.header("host") != Some(ceremony.host.as_str()) {
        return (
            Response::text(421, "This page answers only at its localhost address.\n"),
            None,
        );
    }
    let base = format!("/enrol/{}", ceremony.token);
    let path = request.path();
    let lang = Lang::from_accept_language(request.header("accept-language"));
    let response = match (request.method.as_str(), path) {
        ("GET", p) if p == base => {
            Response::new(200, "text/html; charset=utf-8", page(ceremony, lang))
        }
        ("GET", p) if p == format!("{base}/enrol.js") => Response::new(
            200,
            "text/javascript; charset=utf-8",
            include_str!("../templates/enrol.js"),
        ),
        ("GET", p) if p == format!("{base}/confirm.css") => Response::new(
            200,
            "text/css; charset=utf-8",
            include_str!("../templates/confirm.css"),
        ),
        ("POST", p) if p == base => {
            // Only this page's own script may post, from this page's origin.
            if request.header("origin") != Some(ceremony.origin.as_str())
                || request
                    .header("sec-fetch-site")
                    .is_some_and(|s| s != "same-origin")
            {
                return (
                    Response::text(403, "Cross-origin requests are refused.\n"),
                    None,
                );
            }
            if !request
                .header("content-type")
                .is_some_and(|t| t.starts_with("application/json"))
            {
                return (Response::text(415, "JSON only.\n"), None);
            }
            {
                let Ok(mut attempted) = attempted.lock() else {
                    return (Response::text(409, "The page is closing.\n"), None);
                };
                if *attempted {
                    return (answer(410, false, lang.t("used")), None);
                }
                *attempted = true;
            }
            return match verify(ceremony, &request.body) {
                Ok((record, registration)) => {
                    let message = lang.enrolled(record.fingerprint());
                    (
                        answer(200, true, &message),
                        Some(Ending::Enrolled(Box::new(record), registration)),
                    )
                }
                Err(problem) => (
                    answer(422, false, problem.sentence(lang)),
                    Some(Ending::Refused(problem.sentence(Lang::En).to_owned())),
                ),
            };
        }
        (_, p) if p == base => Response::text(405, "Method not allowed.\n"),
        _ => Response::not_found(),
    };
    (response, None)
}

fn answer(status: u16, ok: bool, message: &str) -> Response {
    let body = serde_json::json!({ "ok": ok, "message": message });
    Response::new(status, "application/json", body.to_string())
}

fn page(ceremony: &Ceremony, lang: Lang) -> String {
    let exclude = ceremony
        .exclude
        .iter()
        .map(|id| b64url(id))
        .collect::<Vec<_>>()
        .join(" ");
    let e = http::escape;
    let base = format!("/enrol/{}", ceremony.token);
    format!(
        r#"<!doctype html>
<html lang="{code}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<link rel="stylesheet" href="{base}/confirm.css">
<script src="{base}/enrol.js" defer></script>
</head>
<body>
<main id="enrol" data-rp="{rp}" data-person="{person}" data-name="{name}" data-user="{user}"
 data-create-challenge="{create}" data-get-challenge="{get}" data-exclude="{exclude}"
 data-working="{working}" data-cancelled="{cancelled}" data-unsupported="{unsupported}"
 data-not-discoverable="{not_discoverable}">
<h1>{title}</h1>
<p>{intro}</p>
<dl>
<dt>{name_label}</dt><dd id="name">{name}</dd>
<dt>{person_label}</dt><dd id="person">{person}</dd>
</dl>
<p>{steps}</p>
<button type="button" id="start">{button}</button>
<p id="status" role="status" aria-live="polite"></p>
</main>
</body>
</html>
"#,
        code = lang.code(),
        title = e(lang.t("title")),
        rp = PRODUCTION_RP_ID,
        person = e(&ceremony.person),
        name = e(&ceremony.name),
        user = b64url(&ceremony.user_handle),
        create = b64url(&ceremony.create_challenge),
        get = b64url(&ceremony.get_challenge),
        exclude = e(&exclude),
        working = e(lang.t("working")),
        cancelled = e(lang.t("cancelled")),
        unsupported = e(lang.t("unsupported")),
        not_discoverable = e(lang.t("not_discoverable")),
        intro = e(lang.t("intro")),
        name_label = e(lang.t("name")),
        person_label = e(lang.t("person")),
        steps = e(lang.t("steps")),
        button = e(lang.t("button")),
    )
}

/// Why an attempt was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Problem {
    /// The answer is not the JSON the page sends.
    Malformed,
    /// The algorithm is neither ES256 nor Ed25519.
    Algorithm,
    /// The public key is not a valid key of its algorithm.
    Key,
    /// The passkey is already in the approver file.
    AlreadyEnrolled,
    /// The assertion names another credential than the one created.
    OtherCredential,
    /// A check of the creation or the assertion failed.
    Check(PasskeyError),
}

impl Problem {
    /// The sentence for the terminal (English) or the page.
    pub fn sentence(self, lang: Lang) -> &'static str {
        let (en, es) = match self {
            Problem::Malformed => (
                "the browser's answer was not complete or not in the expected form.",
                "la respuesta del navegador no estaba completa o no tenía la forma esperada.",
            ),
            Problem::Algorithm => (
                "the passkey uses an algorithm other than ES256 or Ed25519.",
                "la passkey usa un algoritmo distinto de ES256 o Ed25519.",
            ),
            Problem::Key => (
                "the passkey's public key is not a valid ES256 or Ed25519 key.",
                "la clave pública de la passkey no es una clave ES256 o Ed25519 válida.",
            ),
            Problem::AlreadyEnrolled => (
                "this passkey is already enrolled in the approver file.",
                "esta passkey ya está inscrita en el archivo de aprobadores.",
            ),
            Problem::OtherCredential | Problem::Check(PasskeyError::UnknownCredential) => (
                "the confirmation was signed by another passkey than the one just made.",
                "la confirmación la firmó otra passkey distinta de la recién creada.",
            ),
            Problem::Check(PasskeyError::UserNotVerified) => (
                "the passkey did not verify the person (no PIN, fingerprint or face check).",
                "la passkey no verificó a la persona (sin PIN, huella ni rostro).",
            ),
            Problem::Check(PasskeyError::UserNotPresent) => (
                "the passkey did not report a person's touch or confirmation.",
                "la passkey no indicó que una persona la tocara o confirmara.",
            ),
            Problem::Check(
                PasskeyError::ChallengeMismatch
                | PasskeyError::WrongType
                | PasskeyError::OriginNotAllowed
                | PasskeyError::CrossOrigin
                | PasskeyError::RpIdMismatch,
            ) => (
                "the passkey answered for another page, site or request than this enrolment.",
                "la passkey respondió a otra página, sitio o petición distinta de esta inscripción.",
            ),
            Problem::Check(PasskeyError::BadSignature | PasskeyError::SignatureMalformed) => (
                "the new passkey's signature did not verify against the public key it gave, so it \
                 did not prove it holds that key.",
                "la firma de la nueva passkey no se verificó con la clave pública que dio, así que \
                 no probó que tiene esa clave.",
            ),
            Problem::Check(_) => (
                "the passkey's answer did not pass the checks (its data was malformed or out of bounds).",
                "la respuesta de la passkey no superó las comprobaciones (datos mal formados o fuera de límites).",
            ),
        };
        match lang {
            Lang::En => en,
            Lang::Es => es,
        }
    }
}

fn field(body: &Value, name: &str) -> Result<Vec<u8>, Problem> {
    let text = body
        .get(name)
        .and_then(Value::as_str)
        .ok_or(Problem::Malformed)?;
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(text)
        .map_err(|_| Problem::Malformed)
}

/// The checks of one attempt, in order; the record to print when every one holds.
fn verify(
    ceremony: &Ceremony,
    body: &[u8],
) -> Result<(PasskeyRecord, passkey::Registration), Problem> {
    let body: Value = serde_json::from_slice(body).map_err(|_| Problem::Malformed)?;
    let credential_id = field(&body, "id")?;
    let algorithm = match body.get("algorithm").and_then(Value::as_i64) {
        Some(-7) => Algorithm::Es256,
        Some(-8) => Algorithm::Ed25519,
        _ => return Err(Problem::Algorithm),
    };
    let rp = RelyingParty::new(PRODUCTION_RP_ID, [ceremony.origin.clone()]);
    let registration = passkey::check_registration(
        &field(&body, "create_client_data")?,
        &field(&body, "create_authenticator_data")?,
        &ceremony.create_challenge,
        &credential_id,
        &rp,
    )
    .map_err(Problem::Check)?;
    if ceremony.exclude.contains(&credential_id) {
        return Err(Problem::AlreadyEnrolled);
    }
    let record = PasskeyRecord::for_person(
        &ceremony.person,
        registration.backup,
        algorithm,
        credential_id.clone(),
        field(&body, "public_key")?,
        &ceremony.name,
    )
    .map_err(|_| Problem::Key)?;
    let assertion = PasskeyAssertion {
        credential_id: field(&body, "assertion_id")?,
        authenticator_data: field(&body, "authenticator_data")?,
        client_data_json: field(&body, "client_data")?,
        signature: field(&body, "signature")?,
    };
    if assertion.credential_id != credential_id {
        return Err(Problem::OtherCredential);
    }
    let mut only = Approvers::default();
    only.add(record.clone()).map_err(|_| Problem::Key)?;
    passkey::verify_assertion_for_challenge(&assertion, &ceremony.get_challenge, &only, &rp)
        .map_err(Problem::Check)?;
    Ok((record, registration))
}
