//! The few HTTP exchanges of signing in, bounded in time and size. Redirects are never
//! followed: a token request answered with a redirect would otherwise carry a code or a refresh
//! token to wherever the redirect points.

use std::time::Duration;

use serde_json::Value;

use crate::Secret;

/// Largest metadata, registration or token answer read.
const MAX_BODY: usize = 256 * 1024;

pub(crate) fn client(timeout: Duration) -> Result<reqwest::Client, String> {
    crate::tls::client_builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(timeout)
        .connect_timeout(timeout.min(Duration::from_secs(10)))
        .build()
        .map_err(|e| format!("HTTP client: {e}"))
}

/// An answer: status, selected headers, and the body parsed as JSON when it is JSON.
pub(crate) struct Answer {
    pub status: u16,
    pub www_authenticate: Option<String>,
    pub json: Option<Value>,
}

/// Why an exchange gave no answer. Never carries a body.
pub(crate) fn describe(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        "no answer in time".into()
    } else if e.is_connect() {
        "could not connect".into()
    } else {
        "the request failed".into()
    }
}

async fn finish(response: reqwest::Response) -> Result<Answer, String> {
    let status = response.status().as_u16();
    let www_authenticate = response
        .headers()
        .get(reqwest::header::WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let mut response = response;
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| describe(&e))? {
        if body.len() + chunk.len() > MAX_BODY {
            return Err(format!("answer larger than {} KiB", MAX_BODY / 1024));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Answer {
        status,
        www_authenticate,
        json: serde_json::from_slice(&body).ok(),
    })
}

pub(crate) async fn get(client: &reqwest::Client, url: &reqwest::Url) -> Result<Answer, String> {
    let response = client
        .get(url.clone())
        .header(
            reqwest::header::ACCEPT,
            "application/json, text/event-stream",
        )
        .send()
        .await
        .map_err(|e| describe(&e))?;
    finish(response).await
}

pub(crate) async fn post_json(
    client: &reqwest::Client,
    url: &reqwest::Url,
    body: &Value,
) -> Result<Answer, String> {
    let response = client
        .post(url.clone())
        .header(reqwest::header::ACCEPT, "application/json")
        .json(body)
        .send()
        .await
        .map_err(|e| describe(&e))?;
    finish(response).await
}

/// One form field: plain text, or a secret that only goes into the body.
pub(crate) enum Field<'a> {
    Text(&'a str),
    Secret(&'a Secret),
}

pub(crate) async fn post_form(
    client: &reqwest::Client,
    url: &reqwest::Url,
    fields: &[(&str, Field<'_>)],
) -> Result<Answer, String> {
    // Built in a block: the serializer is not `Send` and must not live across an await.
    let body = {
        let mut form = form_urlencoded::Serializer::new(String::new());
        for (name, value) in fields {
            let value = match value {
                Field::Text(t) => *t,
                Field::Secret(s) => s.expose(),
            };
            form.append_pair(name, value);
        }
        form.finish()
    };
    let response = client
        .post(url.clone())
        .header(reqwest::header::ACCEPT, "application/json")
        .header(
            reqwest::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .body(body)
        .send()
        .await
        .map_err(|e| describe(&e))?;
    finish(response).await
}

/// The `error` code of an OAuth error answer, only when it looks like one (a short lowercase
/// word), so nothing else from the body reaches a message or the slot file.
pub(crate) fn oauth_error(json: Option<&Value>) -> Option<String> {
    let code = json?.get("error")?.as_str()?;
    (!code.is_empty()
        && code.len() <= 64
        && code.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'))
    .then(|| code.to_string())
}

/// A token endpoint's successful answer.
pub(crate) struct Tokens {
    pub access_token: Secret,
    pub refresh_token: Option<Secret>,
    pub expires_in: Option<u64>,
    /// The scopes granted, when the server says (RFC 6749 §5.1: it must when they differ from
    /// those asked for). Only a short list of plain scope names is kept.
    pub scope: Option<String>,
}

/// What a token request came to.
pub(crate) enum TokenOutcome {
    Issued(Tokens),
    /// 400 or 401: the grant or the client was refused; retrying cannot help.
    Refused(String),
    /// Anything that may pass: network, timeout, 5xx, 429, an answer not understood.
    Transient(String),
}

pub(crate) async fn token_request(
    client: &reqwest::Client,
    url: &reqwest::Url,
    fields: &[(&str, Field<'_>)],
) -> TokenOutcome {
    let answer = match post_form(client, url, fields).await {
        Ok(a) => a,
        Err(e) => return TokenOutcome::Transient(e),
    };
    match answer.status {
        200 => {}
        400 | 401 => {
            let code = oauth_error(answer.json.as_ref())
                .map(|c| format!(", {c}"))
                .unwrap_or_default();
            return TokenOutcome::Refused(format!("HTTP {}{code}", answer.status));
        }
        other => return TokenOutcome::Transient(format!("HTTP {other}")),
    }
    let Some(json) = answer.json else {
        return TokenOutcome::Transient("the token answer is not JSON".into());
    };
    let token_type = json.get("token_type").and_then(Value::as_str);
    if !token_type.is_some_and(|t| t.eq_ignore_ascii_case("bearer")) {
        return TokenOutcome::Transient("the token answer is not a bearer token".into());
    }
    let Some(access_token) = json
        .get("access_token")
        .and_then(Value::as_str)
        .and_then(Secret::new)
    else {
        return TokenOutcome::Transient("the token answer holds no usable access token".into());
    };
    let refresh_token = match json.get("refresh_token") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_str().and_then(Secret::new) {
            Some(s) => Some(s),
            None => {
                return TokenOutcome::Transient(
                    "the token answer holds an unusable refresh token".into(),
                );
            }
        },
    };
    let expires_in = match json.get("expires_in") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_u64() {
            Some(n) => Some(n),
            None => {
                return TokenOutcome::Transient(
                    "the token answer's expires_in is not a number".into(),
                );
            }
        },
    };
    let scope = json
        .get("scope")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| s.len() <= 1024 && s.bytes().all(|b| b.is_ascii_graphic() || b == b' '))
        .map(str::to_owned);
    TokenOutcome::Issued(Tokens {
        access_token,
        refresh_token,
        expires_in,
        scope,
    })
}
