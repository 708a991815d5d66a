//! Finding the authorization server behind an MCP URL, as MCP clients do:
//!
//! 1. Ask the MCP URL without a token. A 401 whose `WWW-Authenticate: Bearer` challenge names
//!    `resource_metadata` gives the protected-resource metadata (RFC 9728); without one, the
//!    metadata is looked up at `/.well-known/oauth-protected-resource` (path-specific first).
//! 2. That document names the authorization server; its metadata (RFC 8414) is read from
//!    `/.well-known/oauth-authorization-server`, path-specific first, and its `issuer` must be
//!    the server that was named.
//!
//! Every URL found on the way must pass the one URL policy ([`fleetwatch_epiphan::url_policy`]);
//! a server that does not offer PKCE with S256 is refused.

use serde_json::Value;

use crate::http;
use crate::{SignInError, check_url};

/// Where and how to sign in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerInfo {
    /// The protected resource (the MCP URL), sent as `resource` with every request.
    pub resource: String,
    /// The authorization server's issuer identifier.
    pub issuer: String,
    /// Where the browser goes.
    pub authorization_endpoint: reqwest::Url,
    /// Where codes and refresh tokens are exchanged.
    pub token_endpoint: reqwest::Url,
    /// Dynamic client registration, when offered.
    pub registration_endpoint: Option<reqwest::Url>,
    /// Scopes the resource (else its authorization server) says it understands.
    pub scopes: Vec<String>,
}

/// The `resource_metadata` parameter of a `Bearer` challenge.
pub fn resource_metadata_param(header: &str) -> Option<String> {
    let lower = header.to_ascii_lowercase();
    let mut from = 0;
    while let Some(found) = lower.get(from..)?.find("resource_metadata") {
        let start = from + found;
        from = start + "resource_metadata".len();
        // A whole parameter name: preceded by a separator, followed by `=`.
        let before_ok = start == 0
            || lower
                .as_bytes()
                .get(start - 1)
                .is_some_and(|b| matches!(b, b' ' | b',' | b'\t'));
        let rest = header.get(from..)?.trim_start();
        let Some(rest) = rest.strip_prefix('=') else {
            continue;
        };
        if !before_ok {
            continue;
        }
        let rest = rest.trim_start();
        return if let Some(quoted) = rest.strip_prefix('"') {
            let end = quoted.find('"')?;
            quoted.get(..end).map(str::to_string)
        } else {
            let end = rest.find([',', ' ']).unwrap_or(rest.len());
            rest.get(..end).map(str::to_string)
        };
    }
    None
}

/// `https://host/.well-known/<name>/<path>` (when the URL has a path) and
/// `https://host/.well-known/<name>`.
fn well_known(url: &reqwest::Url, name: &str) -> Vec<reqwest::Url> {
    let mut out = Vec::new();
    let path = url.path().trim_end_matches('/');
    let mut base = url.clone();
    base.set_query(None);
    base.set_fragment(None);
    if !path.is_empty() {
        let mut u = base.clone();
        u.set_path(&format!("/.well-known/{name}{path}"));
        out.push(u);
    }
    let mut u = base;
    u.set_path(&format!("/.well-known/{name}"));
    out.push(u);
    out
}

fn same_url(a: &str, b: &str) -> bool {
    a.trim_end_matches('/') == b.trim_end_matches('/')
}

async fn fetch_metadata(
    client: &reqwest::Client,
    candidates: &[reqwest::Url],
) -> Result<Value, String> {
    let mut last = String::from("no address to try");
    for url in candidates {
        match http::get(client, url).await {
            Ok(answer) if answer.status == 200 => match answer.json {
                Some(json @ Value::Object(_)) => return Ok(json),
                _ => last = format!("{url}: the answer is not a JSON object"),
            },
            Ok(answer) => last = format!("{url}: HTTP {}", answer.status),
            Err(e) => last = format!("{url}: {e}"),
        }
    }
    Err(last)
}

fn endpoint(meta: &Value, name: &str, allow: bool) -> Result<Option<reqwest::Url>, SignInError> {
    match meta.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => check_url("the URL", s, allow)
            .map(Some)
            .map_err(|e| SignInError::Discovery(format!("{name}: {e}"))),
        Some(_) => Err(SignInError::Discovery(format!("{name} is not a string"))),
    }
}

fn strings(meta: &Value, name: &str) -> Vec<String> {
    meta.get(name)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Discovers where to sign in for `mcp_url`.
pub async fn discover(mcp_url: &str, allow_loopback_http: bool) -> Result<ServerInfo, SignInError> {
    let mcp = check_url("the MCP URL", mcp_url, allow_loopback_http).map_err(SignInError::Url)?;
    let client =
        http::client(std::time::Duration::from_secs(30)).map_err(SignInError::Discovery)?;

    // Step 1: the resource's own challenge, else its well-known metadata.
    let mut candidates = Vec::new();
    match http::get(&client, &mcp).await {
        Ok(answer) if answer.status == 401 => {
            if let Some(url) = answer
                .www_authenticate
                .as_deref()
                .and_then(resource_metadata_param)
            {
                candidates.push(
                    check_url("the URL", &url, allow_loopback_http)
                        .map_err(|e| SignInError::Discovery(format!("resource_metadata: {e}")))?,
                );
            }
        }
        Ok(_) => {}
        Err(e) => {
            return Err(SignInError::Discovery(format!(
                "the MCP URL {mcp} did not answer ({e})"
            )));
        }
    }
    candidates.extend(well_known(&mcp, "oauth-protected-resource"));
    let resource_meta = fetch_metadata(&client, &candidates)
        .await
        .map_err(|e| SignInError::Discovery(format!("no protected-resource metadata ({e})")))?;
    if let Some(resource) = resource_meta.get("resource").and_then(Value::as_str)
        && !same_url(resource, mcp.as_str())
    {
        return Err(SignInError::Discovery(format!(
            "the metadata describes {resource:?}, not {mcp}"
        )));
    }
    let Some(issuer) = strings(&resource_meta, "authorization_servers")
        .into_iter()
        .next()
    else {
        return Err(SignInError::Discovery(
            "the protected-resource metadata names no authorization server".into(),
        ));
    };
    let issuer_url = check_url("the URL", &issuer, allow_loopback_http)
        .map_err(|e| SignInError::Discovery(format!("authorization server: {e}")))?;

    // Step 2: the authorization server's metadata, which must be about that issuer.
    let server_meta = fetch_metadata(
        &client,
        &well_known(&issuer_url, "oauth-authorization-server"),
    )
    .await
    .map_err(|e| SignInError::Discovery(format!("no authorization-server metadata ({e})")))?;
    let stated = server_meta
        .get("issuer")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !same_url(stated, &issuer) {
        return Err(SignInError::Discovery(format!(
            "the authorization server calls itself {stated:?}, not {issuer:?}"
        )));
    }
    if !strings(&server_meta, "code_challenge_methods_supported")
        .iter()
        .any(|m| m == "S256")
    {
        return Err(SignInError::Discovery(
            "the authorization server does not offer PKCE with S256; refusing to sign in without it"
                .into(),
        ));
    }
    let response_types = strings(&server_meta, "response_types_supported");
    if !response_types.is_empty() && !response_types.iter().any(|t| t == "code") {
        return Err(SignInError::Discovery(
            "the authorization server does not offer the authorization-code flow".into(),
        ));
    }
    let authorization_endpoint =
        endpoint(&server_meta, "authorization_endpoint", allow_loopback_http)?.ok_or_else(
            || SignInError::Discovery("no authorization_endpoint in the metadata".into()),
        )?;
    let token_endpoint = endpoint(&server_meta, "token_endpoint", allow_loopback_http)?
        .ok_or_else(|| SignInError::Discovery("no token_endpoint in the metadata".into()))?;
    let registration_endpoint =
        endpoint(&server_meta, "registration_endpoint", allow_loopback_http)?;
    Ok(ServerInfo {
        resource: mcp.to_string(),
        issuer,
        authorization_endpoint,
        token_endpoint,
        registration_endpoint,
        // The resource's list first; the authorization server's (RFC 8414) when it gives none.
        scopes: Some(strings(&resource_meta, "scopes_supported"))
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| strings(&server_meta, "scopes_supported")),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn challenge_parameter() {
        assert_eq!(
            resource_metadata_param(
                r#"Bearer realm="x", resource_metadata="https://a/.well-known/oauth-protected-resource/mcp""#
            )
            .as_deref(),
            Some("https://a/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(
            resource_metadata_param("Bearer resource_metadata=https://a/m, error=x").as_deref(),
            Some("https://a/m")
        );
        assert_eq!(resource_metadata_param("Bearer"), None);
        assert_eq!(
            resource_metadata_param(r#"Bearer not_resource_metadata="https://evil""#),
            None
        );
    }

    #[test]
    fn well_known_addresses() {
        let u = reqwest::Url::parse("https://go.epiphan.cloud/mcp").unwrap();
        let list = well_known(&u, "oauth-protected-resource");
        assert_eq!(
            list[0].as_str(),
            "https://go.epiphan.cloud/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            list[1].as_str(),
            "https://go.epiphan.cloud/.well-known/oauth-protected-resource"
        );
        let root = reqwest::Url::parse("https://auth.example/").unwrap();
        assert_eq!(well_known(&root, "oauth-authorization-server").len(), 1);
    }
}
