//! The one rule for every URL Fleetwatch sends a credential to: the Epiphan MCP URL (both
//! sign-ins), the OAuth endpoints that sign-in discovery finds, the slot's token endpoint and
//! the model API's base URL.
//!
//! * `https://` only; `http://` only to a loopback host and only when the caller allows it
//!   (tests and the demo set `FLEETWATCH_ALLOW_LOOPBACK_HTTP=1`; the model URL always allows
//!   it, because a loopback model stand-in never leaves the machine).
//! * Loopback means the name `localhost` (any case) or an address in 127.0.0.0/8 or `::1`,
//!   judged on the host the URL parser produced — the same parser reqwest connects with — so
//!   `http://127.1/` and `http://LOCALHOST/` are loopback and `http://localhost.evil.example/`
//!   or `http://127.0.0.1.example.com/` are not. `localhost.` (with the root dot) is refused:
//!   some resolvers send that name to DNS instead of answering it locally, and http is only
//!   allowed where the traffic cannot leave the machine.
//! * No user name or password (they would travel to the server and into logs), no fragment
//!   (an endpoint never needs one, and one in a discovered endpoint means a document is not
//!   what it claims), no spaces or control characters (the parser would silently drop some of
//!   them, so the URL used would not be the URL written).
//!
//! Refusals never quote the URL: one with user info would put a password in the message.

/// Why a URL was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum UrlRefusal {
    /// It does not parse as an absolute URL.
    #[error("is not a URL")]
    NotAUrl,
    /// It holds whitespace or control characters.
    #[error("must not contain spaces or control characters")]
    Whitespace,
    /// It carries a user name or password.
    #[error("must not carry a user name or password")]
    UserInfo,
    /// It carries a `#fragment`.
    #[error("must not carry a fragment (#…)")]
    Fragment,
    /// `http://` without the loopback exception.
    #[error("must be https:// (http:// to a loopback host needs FLEETWATCH_ALLOW_LOOPBACK_HTTP=1)")]
    HttpNotAllowed,
    /// `http://` to a host that is not loopback.
    #[error("http:// is allowed only to a loopback host (localhost, 127.0.0.0/8 or ::1)")]
    HttpNotLoopback,
    /// Any scheme but `https` and `http`.
    #[error("only https:// is allowed")]
    Scheme,
}

/// Checks `url` and returns it parsed, so the caller connects to exactly what was checked.
pub fn check_url(url: &str, allow_loopback_http: bool) -> Result<reqwest::Url, UrlRefusal> {
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(UrlRefusal::Whitespace);
    }
    let parsed = reqwest::Url::parse(url).map_err(|_| UrlRefusal::NotAUrl)?;
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(UrlRefusal::UserInfo);
    }
    if parsed.fragment().is_some() {
        return Err(UrlRefusal::Fragment);
    }
    match parsed.scheme() {
        "https" => Ok(parsed),
        "http" if !allow_loopback_http => Err(UrlRefusal::HttpNotAllowed),
        "http" if is_loopback(&parsed) => Ok(parsed),
        "http" => Err(UrlRefusal::HttpNotLoopback),
        _ => Err(UrlRefusal::Scheme),
    }
}

/// True when the URL's host is `localhost` or a loopback address (see the module notes).
pub fn is_loopback(url: &reqwest::Url) -> bool {
    let Some(host) = url.host_str() else {
        return false;
    };
    if host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    // IPv6 hosts come back bracketed; a domain never does.
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    bare.parse::<std::net::IpAddr>()
        .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use UrlRefusal::*;

    /// (URL, allow loopback http, verdict)
    const TABLE: &[(&str, bool, Result<(), UrlRefusal>)] = &[
        // Schemes.
        ("https://go.epiphan.cloud/mcp", false, Ok(())),
        ("HTTPS://go.epiphan.cloud/mcp", false, Ok(())),
        ("https://eu.go.epiphan.cloud/mcp", true, Ok(())),
        ("http://go.epiphan.cloud/mcp", false, Err(HttpNotAllowed)),
        ("http://go.epiphan.cloud/mcp", true, Err(HttpNotLoopback)),
        ("ftp://127.0.0.1/mcp", true, Err(Scheme)),
        ("ws://127.0.0.1/mcp", true, Err(Scheme)),
        ("file:///etc/passwd", true, Err(Scheme)),
        ("javascript:alert(1)", true, Err(Scheme)),
        ("go.epiphan.cloud/mcp", true, Err(NotAUrl)),
        ("", true, Err(NotAUrl)),
        ("https://", true, Err(NotAUrl)),
        // Loopback forms, allowed only with the exception.
        ("http://127.0.0.1:3000/mcp", false, Err(HttpNotAllowed)),
        ("http://127.0.0.1:3000/mcp", true, Ok(())),
        ("http://127.1.2.3/mcp", true, Ok(())),
        ("http://127.255.255.254:1/mcp", true, Ok(())),
        ("http://127.1/mcp", true, Ok(())),
        ("http://0x7f.1/mcp", true, Ok(())),
        ("http://[::1]:3000/mcp", true, Ok(())),
        ("http://[0:0:0:0:0:0:0:1]/mcp", true, Ok(())),
        ("http://localhost:3000/mcp", true, Ok(())),
        ("http://LOCALHOST:3000/mcp", true, Ok(())),
        ("http://LocalHost/mcp", true, Ok(())),
        ("http://localhost./mcp", true, Err(HttpNotLoopback)),
        // Look-alikes and near misses.
        (
            "http://localhost.evil.example/mcp",
            true,
            Err(HttpNotLoopback),
        ),
        (
            "http://evil.example.localhost.com/mcp",
            true,
            Err(HttpNotLoopback),
        ),
        (
            "http://127.0.0.1.example.com/mcp",
            true,
            Err(HttpNotLoopback),
        ),
        ("http://localhost@evil.example/mcp", true, Err(UserInfo)),
        ("http://evil.example#@localhost/mcp", true, Err(Fragment)),
        (
            "http://evil.example?@localhost/mcp",
            true,
            Err(HttpNotLoopback),
        ),
        ("http://10.0.0.1/mcp", true, Err(HttpNotLoopback)),
        ("http://0.0.0.0/mcp", true, Err(HttpNotLoopback)),
        ("http://128.0.0.1/mcp", true, Err(HttpNotLoopback)),
        ("http://[::2]/mcp", true, Err(HttpNotLoopback)),
        ("http://[::ffff:127.0.0.1]/mcp", true, Err(HttpNotLoopback)),
        ("http://xn--localhost-/mcp", true, Err(NotAUrl)),
        // User info, in any part.
        ("https://u:p@go.epiphan.cloud/mcp", false, Err(UserInfo)),
        ("https://u@go.epiphan.cloud/mcp", false, Err(UserInfo)),
        ("https://:p@go.epiphan.cloud/mcp", false, Err(UserInfo)),
        ("http://u:p@127.0.0.1/mcp", true, Err(UserInfo)),
        // Fragments.
        ("https://go.epiphan.cloud/mcp#x", false, Err(Fragment)),
        ("https://go.epiphan.cloud/mcp#", false, Err(Fragment)),
        ("http://127.0.0.1/token#frag", true, Err(Fragment)),
        // Ports and queries are fine.
        ("https://go.epiphan.cloud:8443/mcp", false, Ok(())),
        ("https://go.epiphan.cloud:443/mcp?region=eu", false, Ok(())),
        ("http://localhost:65535/", true, Ok(())),
        ("https://go.epiphan.cloud:65536/mcp", false, Err(NotAUrl)),
        // What the parser would quietly drop.
        ("https://go.epiphan.cloud/mcp ", false, Err(Whitespace)),
        (" https://go.epiphan.cloud/mcp", false, Err(Whitespace)),
        ("https://go.epi\nphan.cloud/mcp", false, Err(Whitespace)),
        ("https://go.epiphan.cloud/m\tcp", false, Err(Whitespace)),
    ];

    #[test]
    fn the_url_table() {
        let mut wrong = Vec::new();
        for (url, allow, verdict) in TABLE {
            let got = check_url(url, *allow).map(|_| ());
            if got != *verdict {
                wrong.push(format!(
                    "{url:?} (allow {allow}): {got:?}, expected {verdict:?}"
                ));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn the_checked_url_is_the_one_returned() {
        let url = check_url("http://LOCALHOST:9/mcp", true).unwrap();
        assert_eq!(url.as_str(), "http://localhost:9/mcp");
        assert!(is_loopback(&url));
        assert!(!is_loopback(
            &check_url("https://go.epiphan.cloud/", false).unwrap()
        ));
    }

    #[test]
    fn refusals_never_quote_the_url() {
        let err = check_url("https://admin:hunter2@go.epiphan.cloud/mcp", false).unwrap_err();
        assert!(!err.to_string().contains("hunter2"), "{err}");
    }
}
