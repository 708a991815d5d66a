//! Enrolling an operator's passkey (DESIGN §9). After signing in with the page secret, the
//! operator types a name and the browser makes a passkey (`navigator.credentials.create`, RP ID
//! `localhost`, user verification required, Ed25519 or ES256). The page then shows one public
//! line, its fingerprint and the exact command an administrator runs on the executor's machine.
//!
//! The line comes from `response.getPublicKey()` (an SPKI), checked by the protocol's one record
//! parser, so nothing here reads CBOR. No attestation is asked for or checked: what makes the
//! line trusted is the administrator comparing the fingerprint `approvers add` prints with the
//! operator's screen. The assistant keeps the lines it showed; it can never install one (the
//! executor's approver file is root's).

use std::sync::Arc;

use axum::extract::{Form, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use base64::Engine as _;
use fleetwatch_protocol::passkey::{Algorithm, PasskeyRecord};
use serde::Deserialize;

use super::csrf::Purpose;
use super::i18n::Lang;
use super::server::{App, html, lang_of};
use super::views::{LoginView, PasskeysView, ShownPasskey};

/// The enrol form, filled in by `static/passkey.js` from the browser's answer.
#[derive(Deserialize)]
pub struct EnrolFields {
    token: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    credential_id: String,
    #[serde(default)]
    algorithm: String,
    #[serde(default)]
    spki: String,
}

/// The command an administrator runs, with the line quoted for a POSIX shell (a `'` in the
/// operator's name is closed, escaped and reopened).
pub fn install_command(line: &str) -> String {
    format!(
        "sudo fleetwatch-executor approvers add '{}'",
        line.replace('\'', r"'\''")
    )
}

/// The passkeys this page has shown after enrolment (whether installed on the executor or not:
/// only the executor knows).
pub(super) fn shown_records(app: &App) -> Vec<PasskeyRecord> {
    app.deps
        .store
        .lock()
        .ok()
        .and_then(|s| s.passkey_lines().ok())
        .unwrap_or_default()
        .iter()
        .filter_map(|line| PasskeyRecord::parse_line(line).ok())
        .collect()
}

/// Their credential IDs as the page's scripts read them: base64url, space-separated.
pub(super) fn credential_ids(records: &[PasskeyRecord]) -> String {
    records
        .iter()
        .map(|r| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(r.credential_id()))
        .collect::<Vec<_>>()
        .join(" ")
}

fn shown(record: &PasskeyRecord) -> ShownPasskey {
    let line = record.to_line();
    ShownPasskey {
        command: install_command(&line),
        name: record.name().to_owned(),
        fingerprint: record.fingerprint().to_string(),
        line,
    }
}

fn view(
    app: &App,
    lang: Lang,
    session: &str,
    made: Option<ShownPasskey>,
    messages: Vec<String>,
) -> PasskeysView {
    let records = shown_records(app);
    let exclude = credential_ids(&records);
    PasskeysView {
        t: lang,
        token: app.tokens.make(Purpose::Enrol, session, 0, ""),
        made,
        messages,
        shown: records.iter().map(shown).collect(),
        exclude,
        localhost: lang.f("passkeys.localhost", &[("port", &app.port.to_string())]),
    }
}

fn login(lang: Lang) -> Response {
    html(
        StatusCode::OK,
        &LoginView {
            t: lang,
            messages: Vec::new(),
        },
    )
}

/// `GET /passkeys`: the enrol form and the lines shown so far.
pub async fn show(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    let lang = lang_of(&headers);
    let Some(session) = app.session(&headers) else {
        return login(lang);
    };
    html(
        StatusCode::OK,
        &view(&app, lang, &session, None, Vec::new()),
    )
}

/// The record the browser's answer describes, or why not.
fn record(form: &EnrolFields) -> Result<PasskeyRecord, String> {
    let algorithm = match form.algorithm.trim() {
        "-7" => Algorithm::Es256,
        "-8" => Algorithm::Ed25519,
        other => {
            return Err(format!(
                "algorithm {other:?} is neither ES256 (-7) nor Ed25519 (-8)"
            ));
        }
    };
    let credential_id = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(form.credential_id.trim())
        .map_err(|_| "the credential ID is not base64url".to_owned())?;
    let spki = base64::engine::general_purpose::STANDARD
        .decode(form.spki.trim())
        .map_err(|_| "the public key is not base64".to_owned())?;
    PasskeyRecord::new(algorithm, credential_id, spki, &form.name).map_err(|e| e.to_string())
}

/// `POST /passkeys`: shows the public line of the passkey the browser just made.
pub async fn enrol(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    Form(form): Form<EnrolFields>,
) -> Response {
    let lang = lang_of(&headers);
    let Some(session) = app.session(&headers) else {
        return login(lang);
    };
    if !app
        .tokens
        .check(&form.token, Purpose::Enrol, &session, 0, "")
    {
        let messages = vec![lang.t("passkeys.token").to_owned()];
        return html(
            StatusCode::FORBIDDEN,
            &view(&app, lang, &session, None, messages),
        );
    }
    let record = match record(&form) {
        Ok(r) => r,
        Err(why) => {
            let messages = vec![lang.f("passkeys.invalid", &[("why", &why)])];
            return html(
                StatusCode::BAD_REQUEST,
                &view(&app, lang, &session, None, messages),
            );
        }
    };
    let made = shown(&record);
    let kept = app.deps.store.lock().map_err(|_| ()).and_then(|mut s| {
        s.keep_passkey_line(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(record.credential_id()),
            &made.line,
            &made.fingerprint,
        )
        .map_err(|_| ())
    });
    let messages = match kept {
        Ok(()) => Vec::new(),
        // The line is still shown: it is public and the administrator needs it either way.
        Err(()) => vec![lang.t("passkeys.not_kept").to_owned()],
    };
    html(
        StatusCode::OK,
        &view(&app, lang, &session, Some(made), messages),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_quotes_the_line_for_a_shell() {
        assert_eq!(
            install_command("passkey es256 AA BB O'Brien"),
            r"sudo fleetwatch-executor approvers add 'passkey es256 AA BB O'\''Brien'"
        );
    }
}
