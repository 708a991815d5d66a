//! The interactive login: discovery, client registration, the browser round trip with PKCE,
//! the code exchange, and the new record written to the slot.

use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};
use sha2::Digest as _;

use crate::callback::CallbackListener;
use crate::discovery::{self, ServerInfo};
use crate::http::{self, Field, TokenOutcome};
use crate::scopes::{self, Access};
use crate::slot::Record;
use crate::{Secret, SignInError, Slot};

/// The conventional loopback port for the sign-in answer.
pub const DEFAULT_CALLBACK_PORT: u16 = 8765;

/// How to run a login.
#[derive(Debug, Clone)]
pub struct LoginOptions {
    /// The Epiphan MCP URL.
    pub mcp_url: String,
    /// `FLEETWATCH_ALLOW_LOOPBACK_HTTP=1`: the one test setting.
    pub allow_loopback_http: bool,
    /// `FLEETWATCH_OAUTH_CALLBACK_PORT` (default 8765; `0` picks a free port).
    pub callback_port: u16,
    /// Try to open a browser (off with `FLEETWATCH_OAUTH_NO_BROWSER=1`); the address is
    /// printed either way.
    pub open_browser: bool,
    /// Name shown by the authorization server for the registered client.
    pub client_name: String,
    /// How long to wait for the browser to come back.
    pub wait: Duration,
    /// Read only (the normal sign-in) or write (the sandbox's): which scopes are asked for.
    pub access: Access,
}

impl LoginOptions {
    /// Options from the environment names both processes share.
    pub fn from_env(
        mcp_url: &str,
        allow_loopback_http: bool,
        client_name: &str,
        access: Access,
    ) -> Result<LoginOptions, SignInError> {
        let callback_port = match std::env::var("FLEETWATCH_OAUTH_CALLBACK_PORT") {
            Ok(v) if !v.trim().is_empty() => v.trim().parse::<u16>().map_err(|_| {
                SignInError::Callback(format!(
                    "FLEETWATCH_OAUTH_CALLBACK_PORT: {v:?} is not a port number"
                ))
            })?,
            _ => DEFAULT_CALLBACK_PORT,
        };
        let no_browser = std::env::var("FLEETWATCH_OAUTH_NO_BROWSER").is_ok_and(|v| v == "1");
        Ok(LoginOptions {
            mcp_url: mcp_url.to_string(),
            allow_loopback_http,
            callback_port,
            open_browser: !no_browser,
            client_name: client_name.to_string(),
            wait: Duration::from_secs(300),
            access,
        })
    }
}

/// A finished login, for the confirmation line.
#[derive(Debug, Clone)]
pub struct LoginDone {
    /// The authorization server.
    pub issuer: String,
    /// When the access token expires, if the server said.
    pub expires_at: Option<jiff::Timestamp>,
    /// Whether a refresh token was issued.
    pub renewable: bool,
    /// The scopes asked for.
    pub scopes_asked: Vec<String>,
    /// The scopes granted, when the server said; by OAuth's rules, those asked for otherwise.
    pub scopes_granted: Option<Vec<String>>,
}

/// `BASE64URL(SHA256(verifier))` (RFC 7636 S256).
pub fn pkce_challenge(verifier: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(verifier))
}

struct Client {
    id: String,
    secret: Option<Secret>,
}

async fn register(
    client: &reqwest::Client,
    info: &ServerInfo,
    redirect_uri: &str,
    name: &str,
) -> Result<Client, SignInError> {
    let Some(endpoint) = &info.registration_endpoint else {
        return Err(SignInError::Registration(
            "the authorization server offers no dynamic client registration; sign in with a static token instead (--token-file)".into(),
        ));
    };
    let body = json!({
        "client_name": name,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    });
    let answer = http::post_json(client, endpoint, &body)
        .await
        .map_err(SignInError::Registration)?;
    if !matches!(answer.status, 200 | 201) {
        let code = http::oauth_error(answer.json.as_ref())
            .map(|c| format!(", {c}"))
            .unwrap_or_default();
        return Err(SignInError::Registration(format!(
            "HTTP {}{code}",
            answer.status
        )));
    }
    let json = answer.json.unwrap_or(Value::Null);
    let id = json
        .get("client_id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty() && s.len() <= 512)
        .ok_or_else(|| SignInError::Registration("the answer holds no client_id".into()))?;
    let secret = json
        .get("client_secret")
        .and_then(Value::as_str)
        .and_then(Secret::new);
    Ok(Client {
        id: id.to_string(),
        secret,
    })
}

/// Opens the address in a browser when one can be shown; returns whether one was started.
fn open_browser(url: &str) -> bool {
    let program = if cfg!(target_os = "macos") {
        "open"
    } else {
        let display = ["DISPLAY", "WAYLAND_DISPLAY"]
            .iter()
            .any(|v| std::env::var_os(v).is_some_and(|x| !x.is_empty()));
        if !display {
            return false;
        }
        "xdg-open"
    };
    match std::process::Command::new(program)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        Ok(mut child) => {
            // Reap it whenever it ends; the login does not wait for the browser.
            std::thread::spawn(move || child.wait());
            true
        }
        Err(_) => false,
    }
}

/// Signs in and stores the new tokens in `slot`, replacing what it held.
///
/// The authorization address goes to standard error (it holds no secret: the PKCE verifier
/// never leaves this process, and the state only ties the answer to this attempt).
pub async fn login(slot: &Slot, options: &LoginOptions) -> Result<LoginDone, SignInError> {
    login_with(slot, options, |url, opened| {
        if opened {
            eprintln!("A browser was opened to sign in. If it did not appear, open this address:");
        } else {
            eprintln!("Open this address in a browser to sign in:");
        }
        eprintln!("{url}");
    })
    .await
}

/// [`login`], handing the authorization address (and whether a browser was started) to
/// `show` instead of printing it.
pub async fn login_with(
    slot: &Slot,
    options: &LoginOptions,
    show: impl FnOnce(&str, bool),
) -> Result<LoginDone, SignInError> {
    let info = discovery::discover(&options.mcp_url, options.allow_loopback_http).await?;
    let client = http::client(Duration::from_secs(30)).map_err(SignInError::Discovery)?;
    // Bind before registering, so the registered redirect is the port actually held.
    let listener = CallbackListener::bind(options.callback_port).await?;
    let redirect_uri = listener.redirect_uri();
    let registered = register(&client, &info, &redirect_uri, &options.client_name).await?;

    let verifier = crate::secret::random(32).map_err(SignInError::Callback)?;
    let state = crate::secret::random(32).map_err(SignInError::Callback)?;
    let (asked, note) = scopes::requested(options.access, &info.scopes);
    eprintln!("Scopes asked for: {}", scopes::shown(&asked));
    if let Some(note) = note {
        eprintln!("({note})");
    }
    let mut url = info.authorization_endpoint.clone();
    {
        let mut q = url.query_pairs_mut();
        q.append_pair("response_type", "code")
            .append_pair("client_id", &registered.id)
            .append_pair("redirect_uri", &redirect_uri)
            .append_pair("code_challenge", &pkce_challenge(verifier.expose()))
            .append_pair("code_challenge_method", "S256")
            .append_pair("state", state.expose())
            .append_pair("resource", &info.resource);
        if !asked.is_empty() {
            q.append_pair("scope", &asked.join(" "));
        }
    }
    let opened = options.open_browser && open_browser(url.as_str());
    show(url.as_str(), opened);
    eprintln!(
        "Waiting for the answer on {redirect_uri} (up to {} minutes)…",
        options.wait.as_secs() / 60
    );

    let code = listener.wait(&state, options.wait).await?;
    let mut fields = vec![
        ("grant_type", Field::Text("authorization_code")),
        ("code", Field::Secret(&code)),
        ("redirect_uri", Field::Text(&redirect_uri)),
        ("client_id", Field::Text(&registered.id)),
        ("code_verifier", Field::Secret(&verifier)),
        ("resource", Field::Text(&info.resource)),
    ];
    if let Some(secret) = &registered.secret {
        fields.push(("client_secret", Field::Secret(secret)));
    }
    let tokens = match http::token_request(&client, &info.token_endpoint, &fields).await {
        TokenOutcome::Issued(t) => t,
        TokenOutcome::Refused(why) => return Err(SignInError::Refused(why)),
        TokenOutcome::Transient(why) => return Err(SignInError::Transient(why)),
    };
    let now = jiff::Timestamp::now().as_second();
    let expires_at = tokens
        .expires_in
        .map(|s| now.saturating_add(i64::try_from(s).unwrap_or(i64::MAX)));
    let renewable = tokens.refresh_token.is_some();
    let scopes_granted: Option<Vec<String>> = tokens
        .scope
        .as_deref()
        .map(|s| s.split_whitespace().map(str::to_owned).collect());
    match &scopes_granted {
        Some(granted) => eprintln!("Scopes granted: {}", scopes::shown(granted)),
        None => eprintln!(
            "Scopes granted: not stated by the server (by OAuth's rules, those asked for: {})",
            scopes::shown(&asked)
        ),
    }
    let scope = Some(
        scopes_granted
            .clone()
            .unwrap_or_else(|| asked.clone())
            .join(" "),
    );
    let mut record = Record {
        version: 1,
        generation: 0,
        access_token: Some(tokens.access_token),
        refresh_token: tokens.refresh_token,
        expires_at,
        issuer: info.issuer.clone(),
        token_endpoint: info.token_endpoint.to_string(),
        client_id: registered.id,
        client_secret: registered.secret,
        resource: info.resource.clone(),
        dead: None,
        scope,
    };
    slot.store_record(&mut record).await?;
    Ok(LoginDone {
        issuer: info.issuer,
        expires_at: expires_at.and_then(|s| jiff::Timestamp::from_second(s).ok()),
        renewable,
        scopes_asked: asked,
        scopes_granted,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s256_challenge_known_answer() {
        // Computed independently: base64url(sha256(verifier)) without padding.
        assert_eq!(
            pkce_challenge("dBjftJeZ4CVP-mJ92K9jiD1sSGMPGa7Gb3z6KJs7gGE"),
            "Z6iGcqGsyVCbYWjtmAlwTZSBWHhk7ldFGt8iYghQGTA"
        );
        assert_eq!(pkce_challenge("x").len(), 43);
    }
}
