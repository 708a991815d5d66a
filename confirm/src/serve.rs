//! `fleetwatch-confirm serve`: the confirm page (DESIGN §9). Stateless: each request is answered
//! from what it carries and the program's own configuration, and nothing is kept.
//!
//! The approval page sends the tab here with a form POST of the exact claims bytes (base64) and
//! an opaque return token. The handler reads top to bottom: the `Host` is this page's own; the
//! request comes from the approval page's origin; the claims decode with the protocol's decoder
//! (every byte consumed); the words come from the decoded claims alone ([`crate::view`]); the
//! challenge is computed here from the same bytes; the page asks the passkey for it and posts
//! the assertion back to the approval page's origin, fixed in this program's configuration —
//! never taken from the request.

use std::path::PathBuf;
use std::sync::Arc;

use base64::Engine as _;
use fleetwatch_protocol::claims::ApprovalClaims;
use fleetwatch_protocol::passkey;
use fleetwatch_protocol::policy::Policy;

use crate::http::{self, Reply, Request, Response, escape};
use crate::lang::Lang;
use crate::view;

/// The confirm page's port unless told otherwise.
pub const DEFAULT_PORT: u16 = 8768;

/// The approval page's origin unless told otherwise.
pub const DEFAULT_PAGE_ORIGIN: &str = "http://localhost:8767";

/// The policy the page reads whether a change is disruptive from.
pub const DEFAULT_POLICY: &str = "/etc/fleetwatch/tool_policy.yaml";

/// Longest return token accepted (the approval page's is about 190 characters).
const MAX_RETURN: usize = 512;

/// What `serve` was told.
#[derive(Debug, Clone)]
pub struct Options {
    /// The port on 127.0.0.1 and ::1.
    pub port: u16,
    /// Where the assertion goes: the approval page's origin.
    pub page_origin: String,
    /// The tool policy.
    pub policy: PathBuf,
}

struct Page {
    host: String,
    page_origin: String,
    policy: Policy,
}

/// Checks an origin as browsers write it: `http://` or `https://`, a host, no path.
pub fn check_origin(origin: &str) -> Result<String, String> {
    let rest = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"));
    match rest {
        Some(host)
            if !host.is_empty()
                && !host.contains(['/', '?', '#', '@', '"', '\'', '<', '>', ' ', ';']) =>
        {
            Ok(origin.to_owned())
        }
        _ => Err(format!(
            "{origin:?} is not an origin (`http://localhost:8767`: scheme, host and port, no path)"
        )),
    }
}

/// Serves the confirm page until the process ends.
pub fn run(options: &Options) -> Result<(), String> {
    let page_origin = check_origin(&options.page_origin)?;
    let text = std::fs::read_to_string(&options.policy)
        .map_err(|e| format!("{}: {e}", options.policy.display()))?;
    let policy =
        Policy::from_yaml(&text).map_err(|e| format!("{}: {e}", options.policy.display()))?;
    let listeners = match http::from_systemd()? {
        Some(passed) => {
            eprintln!(
                "fleetwatch-confirm: listening on the {} socket(s) systemd passed (port {})",
                passed.sockets.len(),
                passed.port
            );
            passed
        }
        None => http::bind_loopback(Some(options.port)).map_err(|e| {
            format!(
                "cannot listen on port {} of the loopback addresses: {e}",
                options.port
            )
        })?,
    };
    if !listeners.ipv6 {
        eprintln!(
            "fleetwatch-confirm: no IPv6 loopback socket; the confirm page listens on \
             127.0.0.1 only"
        );
    }
    let page = Arc::new(Page {
        host: format!("localhost:{}", listeners.port),
        page_origin,
        policy,
    });
    eprintln!(
        "fleetwatch-confirm: the confirm page listens on http://localhost:{}/ and returns \
         assertions to {}",
        listeners.port, page.page_origin
    );
    let handler: http::Handler =
        Arc::new(move |request: &Request| -> Reply { handle(&page, request).into() });
    http::serve(listeners, handler);
    loop {
        std::thread::park();
    }
}

fn handle(page: &Page, request: &Request) -> Response {
    if request.header("host") != Some(page.host.as_str()) {
        return Response::text(421, "This page answers only at its localhost address.\n");
    }
    let lang = Lang::from_accept_language(request.header("accept-language"));
    match (request.method.as_str(), request.path()) {
        ("GET", "/confirm.js") => Response::new(
            200,
            "text/javascript; charset=utf-8",
            include_str!("../templates/confirm.js"),
        ),
        ("GET", "/confirm.css") => Response::new(
            200,
            "text/css; charset=utf-8",
            include_str!("../templates/confirm.css"),
        ),
        // Nothing to show without claims; the GET changes nothing.
        ("GET", "/") => html(lang, lang.t("confirm.idle"), None, &page.page_origin),
        ("POST", "/") => confirm(page, lang, request),
        (_, "/") => Response::text(405, "Method not allowed.\n"),
        _ => Response::not_found(),
    }
}

/// One form field of an `application/x-www-form-urlencoded` body.
fn form_field(body: &[u8], name: &str) -> Option<String> {
    form_urlencoded::parse(body)
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

fn confirm(page: &Page, lang: Lang, request: &Request) -> Response {
    // Only the approval page sends the tab here. The usual way to arrive from elsewhere is
    // the approval page opened as 127.0.0.1: say, in the page's language, which address works.
    if request.header("origin") != Some(page.page_origin.as_str()) {
        let text = match lang {
            Lang::En => format!(
                "Only the approval page at {0}/ sends changes here. If you opened it under \
                 another address (such as 127.0.0.1), open {0}/ instead and approve there.\n",
                page.page_origin
            ),
            Lang::Es => format!(
                "Solo la página de aprobación en {0}/ envía cambios aquí. Si la abriste con otra \
                 dirección (como 127.0.0.1), abre {0}/ y aprueba allí.\n",
                page.page_origin
            ),
        };
        return Response::text(403, &text);
    }
    let return_token = form_field(&request.body, "return").unwrap_or_default();
    let token_ok = !return_token.is_empty()
        && return_token.len() <= MAX_RETURN
        && return_token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    let encoded = form_field(&request.body, "claims").unwrap_or_default();
    let bytes = base64::engine::general_purpose::STANDARD.decode(encoded.trim());
    let decoded = bytes
        .as_ref()
        .ok()
        .and_then(|b| ApprovalClaims::decode(b).ok());
    let (Ok(bytes), Some(claims), true) = (&bytes, decoded, token_ok) else {
        return html(lang, lang.t("confirm.undecodable"), None, &page.page_origin);
    };
    let shown = view::show(lang, &claims, &page.policy);
    let mut body = String::new();
    body.push_str(&format!(
        "<h1 id=\"confirm-heading\">{}</h1>\n",
        escape(&shown.heading)
    ));
    if let Some(warning) = &shown.disruptive {
        body.push_str(&format!(
            "<p class=\"warning\" id=\"disruptive\">{}</p>\n",
            drawn(warning)
        ));
    }
    if let Some(asked) = &shown.asked_by {
        body.push_str(&format!("<p id=\"asked-by\">{}</p>\n", drawn(asked)));
    }
    let list = |title: &str, id: &str, lines: &[String]| {
        let items: String = lines
            .iter()
            .map(|l| format!("<li>{}</li>", drawn(l)))
            .collect();
        format!("<h2>{}</h2>\n<ul id=\"{id}\">{items}</ul>\n", escape(title))
    };
    body.push_str(&list(lang.t("confirm.effects"), "effects", &shown.effects));
    body.push_str(&list(lang.t("confirm.targets"), "targets", &shown.targets));
    body.push_str(&list(
        lang.t("confirm.arguments"),
        "arguments",
        &shown.arguments,
    ));
    let expires = jiff::Timestamp::from_second(claims.expires_at)
        .map(|t| t.strftime("%H:%M:%S UTC").to_string())
        .unwrap_or_default();
    // Expired claims are said so and offer no button: the executor would refuse them anyway,
    // and a person must not be asked for a passkey that cannot count.
    let expired = claims.expires_at <= jiff::Timestamp::now().as_second();
    let (expiry_words, problem) = if expired {
        (
            lang.t("confirm.expired_at"),
            Some(lang.t("confirm.expired").to_owned()),
        )
    } else {
        (lang.t("confirm.expires"), shown.problem.clone())
    };
    body.push_str(&format!(
        "<p id=\"expiry\" data-expires=\"{}\" data-expired=\"{}\">{} {}</p>\n",
        claims.expires_at,
        escape(lang.t("confirm.expired")),
        escape(expiry_words),
        escape(&expires)
    ));
    let form = match &problem {
        Some(why) => Some(format!(
            "<p class=\"warning\" id=\"problem\">{}</p>\n",
            drawn(why)
        )),
        None => {
            let challenge = passkey::challenge_base64url(bytes);
            // Read before it asks (DESIGN §9): nothing is asked on load, for any change. The
            // one button names the change and its rooms, and the script enables it only once
            // the page has been seen and a fresh pointer or key event arrived.
            Some(format!(
                "<form method=\"post\" action=\"{origin}/confirmed\" id=\"confirm-form\" \
                 data-challenge=\"{challenge}\" \
                 data-cancelled=\"{cancelled}\">\n\
                 <input type=\"hidden\" name=\"return\" value=\"{ret}\">\n\
                 <input type=\"hidden\" name=\"claims\" value=\"{claims}\">\n\
                 <input type=\"hidden\" name=\"credential_id\" value=\"\">\n\
                 <input type=\"hidden\" name=\"authenticator_data\" value=\"\">\n\
                 <input type=\"hidden\" name=\"client_data_json\" value=\"\">\n\
                 <input type=\"hidden\" name=\"signature\" value=\"\">\n\
                 <button type=\"button\" id=\"passkey\" disabled>{button}</button>\n\
                 <p class=\"hint\" id=\"passkey-wait\">{wait}</p>\n\
                 <p id=\"passkey-status\" role=\"status\"></p>\n\
                 </form>\n",
                origin = escape(&page.page_origin),
                wait = escape(lang.t("confirm.wait")),
                cancelled = escape(lang.t("confirm.cancelled")),
                ret = escape(&return_token),
                claims = escape(&base64::engine::general_purpose::STANDARD.encode(bytes)),
                button = drawn(&shown.button),
            ))
        }
    };
    if let Some(form) = form {
        body.push_str(&form);
    }
    html(
        lang,
        lang.t("confirm.explain"),
        Some(body),
        &page.page_origin,
    )
}

/// A line of the view, escaped, with each name in an isolating element.
fn drawn(line: &str) -> String {
    escape(line)
        .replace(view::NAME_OPEN, "<bdi>")
        .replace(view::NAME_CLOSE, "</bdi>")
}

fn html(lang: Lang, lead: &str, body: Option<String>, page_origin: &str) -> Response {
    let text = format!(
        "<!doctype html>\n<html lang=\"{code}\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title}</title>\n<link rel=\"stylesheet\" href=\"/confirm.css\">\n\
         <script src=\"/confirm.js\" defer></script>\n</head>\n<body>\n<main id=\"confirm\">\n\
         <p class=\"lead\" id=\"lead\">{lead}</p>\n{body}</main>\n</body>\n</html>\n",
        code = lang.code(),
        title = escape(lang.t("confirm.title")),
        lead = escape(lead),
        body = body.unwrap_or_default(),
    );
    let mut response = Response::new(200, "text/html; charset=utf-8", text);
    // The one form posts to the approval page, and nowhere else.
    // The approval page checks that the answer comes from this origin: send it (and no path).
    response.referrer_policy = Some("strict-origin");
    response.csp = Some(format!(
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'none'; \
         img-src 'none'; form-action {page_origin}; frame-ancestors 'none'; base-uri 'none'"
    ));
    response
}
