//! Text rule 1: URLs, read through the escapings text carries them in.
//!
//! A URL written inside JSON text (`rtmp:\/\/host\/live2\/KEY`), percent-encoded
//! (`rtmp%3A%2F%2Fhost%2Flive%2FKEY`), as `\u002F` escapes or HTML entities (`&#x2F;`) is still a
//! URL to whoever decodes it: the scheme separator and the URL body are read through those
//! escapings, so the rules below see the URL a reader would see. When the rules change nothing
//! the text is copied exactly as written; when they mask something the URL is written decoded,
//! which is plain text every later pass reads the same way.

use super::{
    MASK, at, is_secret_key, is_uuid, prev_char, push_str, run_end, span, starts_with_at, text_of,
};

/// Schemes whose path and query carry the stream key.
const STREAM_SCHEMES: &[&str] = &[
    "rtmp", "rtmps", "rtmpe", "rtmpt", "srt", "rtsp", "rtsps", "rist",
];

/// Web schemes: user info dropped, query masked, ingest-looking paths masked.
const WEB_SCHEMES: &[&str] = &["http", "https", "ws", "wss"];

/// Path segments (exact, lower-case) that mark an http path as an ingest or publish address.
const INGEST_SEGMENTS: &[&str] = &["app", "key", "keys"];

/// Path segment prefixes (lower-case) that mark an http path as an ingest or publish address.
const INGEST_SEGMENT_PREFIXES: &[&str] = &[
    "live", "ingest", "publish", "stream", "rtmp", "whip", "push", "hls",
];

/// Host label and path segment prefixes (lower-case) of webhook addresses: chat and automation
/// hooks put the credential in the path itself (`hooks.<chat>/services/T…/B…/…`,
/// `…/api/webhooks/<id>/<token>`, `hook.<region>.<automation>/<token>`), so anyone holding the
/// URL can post as the hook.
const HOOK_PREFIXES: &[&str] = &["hook", "webhook"];

/// Shortest run of letters and digits that can pass for a random key in a path segment.
const RANDOM_RUN_MIN: usize = 16;

#[derive(Clone, Copy, PartialEq, Eq)]
enum UrlKind {
    Stream,
    Web,
    Other,
}

fn url_kind(scheme: &[char]) -> UrlKind {
    let lower: String = scheme.iter().map(char::to_ascii_lowercase).collect();
    if STREAM_SCHEMES.iter().any(|s| lower.ends_with(s)) {
        UrlKind::Stream
    } else if WEB_SCHEMES.iter().any(|s| lower.ends_with(s)) {
        UrlKind::Web
    } else {
        UrlKind::Other
    }
}

fn is_url_stop(c: char) -> bool {
    c.is_whitespace() || c.is_control() || matches!(c, '"' | '\'' | '<' | '>' | '`' | '\\')
}

/// Characters a percent escape is decoded to inside a URL: the ones that give a URL its
/// structure. Any other `%XX` stays as written, so `%20` cannot end a URL early.
fn is_structural(c: char) -> bool {
    matches!(c, ':' | '/' | '?' | '#' | '@' | '&' | '=' | '%')
}

/// HTML entity names a URL may be written with, and what they stand for.
const NAMED_ENTITIES: &[(&str, char)] = &[
    ("sol;", '/'),
    ("colon;", ':'),
    ("quest;", '?'),
    ("num;", '#'),
    ("commat;", '@'),
    ("equals;", '='),
    ("period;", '.'),
    ("amp;", '&'),
    ("quot;", '"'),
    ("lt;", '<'),
    ("gt;", '>'),
];

fn hex_value(chars: &[char], from: usize, len: usize) -> Option<u32> {
    let digits = span(chars, from, from.saturating_add(len));
    if digits.len() != len || !digits.iter().all(char::is_ascii_hexdigit) {
        return None;
    }
    digits.iter().try_fold(0_u32, |acc, d| {
        acc.checked_mul(16)?.checked_add(d.to_digit(16)?)
    })
}

/// The character the text at `i` stands for once escaping is undone, and where the next one
/// starts: `\/` (any number of backslashes, for JSON inside JSON), `\uXXXX`, `\xXX`, `%XX`
/// (`%25XX` chains for double encoding), `&#NN;`, `&#xHH;`, named entities (`&amp;` chains).
/// Anything else stands for itself.
fn unit_at(chars: &[char], i: usize) -> Option<(char, usize)> {
    let ch = at(chars, i)?;
    let literal = Some((ch, i.saturating_add(1)));
    match ch {
        '\\' => {
            let after = run_end(chars, i, |c| c == '\\');
            match at(chars, after) {
                Some('/') => Some(('/', after.saturating_add(1))),
                Some('u') => hex_value(chars, after.saturating_add(1), 4)
                    .and_then(char::from_u32)
                    .map(|c| (c, after.saturating_add(5)))
                    .or(literal),
                Some('x') => hex_value(chars, after.saturating_add(1), 2)
                    .and_then(char::from_u32)
                    .map(|c| (c, after.saturating_add(3)))
                    .or(literal),
                _ => literal,
            }
        }
        '%' => {
            let mut value = hex_value(chars, i.saturating_add(1), 2);
            let mut end = i.saturating_add(3);
            while value == Some(0x25) {
                match hex_value(chars, end, 2) {
                    Some(next) => {
                        value = Some(next);
                        end = end.saturating_add(2);
                    }
                    None => break,
                }
            }
            value
                .and_then(char::from_u32)
                .filter(|&c| is_structural(c))
                .map(|c| (c, end))
                .or(literal)
        }
        '&' => {
            let mut j = i.saturating_add(1);
            while starts_with_at(chars, j, "amp;") {
                j = j.saturating_add(4);
            }
            entity_at(chars, j)
                .or_else(|| (j > i.saturating_add(1)).then_some(('&', j)))
                .or(literal)
        }
        _ => literal,
    }
}

/// An HTML entity body (after its `&`) at `j`.
fn entity_at(chars: &[char], j: usize) -> Option<(char, usize)> {
    if at(chars, j) == Some('#') {
        let hex = matches!(at(chars, j.saturating_add(1)), Some('x' | 'X'));
        let digits_from = j.saturating_add(if hex { 2 } else { 1 });
        let digits_end = run_end(chars, digits_from, |c| {
            if hex {
                c.is_ascii_hexdigit()
            } else {
                c.is_ascii_digit()
            }
        });
        let len = digits_end.saturating_sub(digits_from);
        if len == 0 || len > 6 || at(chars, digits_end) != Some(';') {
            return None;
        }
        let value = span(chars, digits_from, digits_end)
            .iter()
            .try_fold(0_u32, |acc, d| {
                acc.checked_mul(if hex { 16 } else { 10 })?
                    .checked_add(d.to_digit(16)?)
            })?;
        return char::from_u32(value).map(|c| (c, digits_end.saturating_add(1)));
    }
    NAMED_ENTITIES
        .iter()
        .find(|(name, _)| starts_with_at(chars, j, name))
        .map(|(name, c)| (*c, j.saturating_add(name.chars().count())))
}

/// Where a (possibly escaped) `://` at `from` ends.
fn separator_end(chars: &[char], from: usize) -> Option<usize> {
    if starts_with_at(chars, from, "://") {
        return Some(from.saturating_add(3));
    }
    let mut i = from;
    for want in [':', '/', '/'] {
        let (c, next) = unit_at(chars, i)?;
        if c != want {
            return None;
        }
        i = next;
    }
    Some(i)
}

/// Masks credentials in every URL of the text (see the module rules in [`super`]).
pub(super) fn mask_urls(chars: &[char]) -> Vec<char> {
    let mut out = Vec::with_capacity(chars.len());
    // A hook address written without a scheme (`hooks.<chat>/services/…`) is looked for only
    // when the text mentions a hook, and each host run is looked at once (a long dotted run
    // must not be re-read from every label).
    let mut hooks_possible: Option<bool> = None;
    let mut host_checked_until = 0;
    let mut i = 0;
    while let Some(ch) = at(chars, i) {
        let starts_run = ch.is_ascii_alphanumeric()
            && !prev_char(chars, i).is_some_and(|p| p.is_ascii_alphanumeric());
        if !starts_run {
            out.push(ch);
            i = i.saturating_add(1);
            continue;
        }
        let scheme_end = run_end(chars, i, |c| c.is_ascii_alphanumeric());
        let Some(body_start) = separator_end(chars, scheme_end) else {
            if i >= host_checked_until
                && *hooks_possible.get_or_insert_with(|| mentions_hook(chars))
            {
                let host_end = run_end(chars, i, is_host_char);
                host_checked_until = host_end;
                if let Some(url_end) = mask_schemeless_hook(chars, i, host_end, &mut out) {
                    i = url_end;
                    continue;
                }
            }
            // Copy the whole run so each run is examined once (linear in the text length).
            out.extend_from_slice(span(chars, i, scheme_end));
            i = scheme_end;
            continue;
        };
        let scheme = span(chars, i, scheme_end);
        let plain_end = run_end(chars, body_start, |c| !is_url_stop(c) && !may_escape(c));
        let plain = body_start == scheme_end.saturating_add(3)
            && at(chars, plain_end).is_none_or(|c| !may_escape(c));
        if plain {
            // Nearly every URL: nothing escaped, rewritten straight from the text.
            out.extend_from_slice(scheme);
            push_str(&mut out, "://");
            rewrite_url_body(
                &mut out,
                url_kind(scheme),
                span(chars, body_start, plain_end),
            );
            i = plain_end;
            continue;
        }
        let (body, url_end, escaped_body) = url_body(chars, body_start);
        let escaped = escaped_body || body_start != scheme_end.saturating_add(3);
        let mut rewritten = Vec::with_capacity(body.len());
        rewrite_url_body(&mut rewritten, url_kind(scheme), &body);
        if escaped && rewritten == body {
            // Nothing to mask: the escaped text stays exactly as it was written.
            out.extend_from_slice(span(chars, i, url_end));
        } else {
            out.extend_from_slice(scheme);
            push_str(&mut out, "://");
            out.extend_from_slice(&rewritten);
        }
        i = url_end;
    }
    out
}

/// A character that may open an escape [`unit_at`] decodes.
fn may_escape(c: char) -> bool {
    matches!(c, '\\' | '%' | '&')
}

fn mentions_hook(chars: &[char]) -> bool {
    chars
        .windows(4)
        .any(|w| w.iter().map(char::to_ascii_lowercase).eq("hook".chars()))
}

fn is_host_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '.' || c == '-'
}

/// The body (decoded) of an address starting at `from`, and where it ends in the text.
fn url_body(chars: &[char], from: usize) -> (Vec<char>, usize, bool) {
    let mut escaped = false;
    let mut body = Vec::new();
    let mut end = from;
    while let Some((c, next)) = unit_at(chars, end) {
        if is_url_stop(c) {
            break;
        }
        escaped |= next != end.saturating_add(1);
        body.push(c);
        end = next;
    }
    (body, end, escaped)
}

/// A webhook address without a scheme, `host/path` with a dotted host, at `start..host_end`:
/// writes it masked and returns where it ends; `None` (nothing written) when it is no hook.
fn mask_schemeless_hook(
    chars: &[char],
    start: usize,
    host_end: usize,
    out: &mut Vec<char>,
) -> Option<usize> {
    let host = span(chars, start, host_end);
    if !host.contains(&'.') || unit_at(chars, host_end).map(|(c, _)| c) != Some('/') {
        return None;
    }
    let (rest, url_end, _) = url_body(chars, host_end);
    let path_end = rest
        .iter()
        .position(|c| matches!(c, '?' | '#'))
        .unwrap_or(rest.len());
    if !is_hook_address(host, span(&rest, 0, path_end)) {
        return None;
    }
    let mut body = host.to_vec();
    body.extend_from_slice(&rest);
    rewrite_url_body(out, UrlKind::Web, &body);
    Some(url_end)
}

fn rewrite_url_body(out: &mut Vec<char>, kind: UrlKind, body: &[char]) {
    let authority_end = body
        .iter()
        .position(|c| matches!(c, '/' | '?' | '#'))
        .unwrap_or(body.len());
    let authority = span(body, 0, authority_end);
    let rest = span(body, authority_end, body.len());

    let host = match authority.iter().rposition(|&c| c == '@') {
        Some(at_sign) => {
            if kind != UrlKind::Web {
                push_str(out, MASK);
                out.push('@');
            }
            span(authority, at_sign.saturating_add(1), authority.len())
        }
        None => authority,
    };
    out.extend_from_slice(host);

    let fragment_at = rest.iter().position(|&c| c == '#');
    let before_fragment = span(rest, 0, fragment_at.unwrap_or(rest.len()));
    let query_at = before_fragment.iter().position(|&c| c == '?');
    let path = span(
        before_fragment,
        0,
        query_at.unwrap_or(before_fragment.len()),
    );

    let mask_path = path.len() > 1
        && match kind {
            UrlKind::Stream => true,
            UrlKind::Web => {
                is_ingest_path(path)
                    || is_hook_address(host, path)
                    || path_behind_a_mask(path)
                    || has_random_segment(path)
            }
            UrlKind::Other => path_behind_a_mask(path) || has_random_segment(path),
        };
    if mask_path {
        out.push('/');
        push_str(out, MASK);
    } else {
        out.extend_from_slice(path);
    }
    if let Some(q) = query_at {
        out.push('?');
        if q.saturating_add(1) < before_fragment.len() {
            push_str(out, MASK);
        }
    }
    if let Some(f) = fragment_at {
        out.push('#');
        if f.saturating_add(1) < rest.len() {
            push_str(out, MASK);
        }
    }
}

/// Lower-case path segments, empty ones dropped.
fn segments(path: &[char]) -> Vec<String> {
    path.split(|&c| c == '/')
        .filter(|s| !s.is_empty())
        .map(|s| s.iter().map(char::to_ascii_lowercase).collect())
        .collect()
}

/// An ingest or publish path, or one with a segment that names a secret (`/token/…`,
/// `/api_key/…`).
fn is_ingest_path(path: &[char]) -> bool {
    segments(path).iter().any(|segment| {
        INGEST_SEGMENTS.contains(&segment.as_str())
            || INGEST_SEGMENT_PREFIXES
                .iter()
                .any(|p| segment.starts_with(p))
            || is_secret_key(segment)
    })
}

/// A webhook: a host label or a path segment starting with `hook`/`webhook`, or a
/// `services/<ID>/…` path (chat hooks address a workspace and a channel by upper-case IDs and
/// then carry the secret).
fn is_hook_address(host: &[char], path: &[char]) -> bool {
    let host: String = host.iter().map(char::to_ascii_lowercase).collect();
    let hook_host = host
        .split('.')
        .any(|label| HOOK_PREFIXES.iter().any(|p| label.starts_with(p)));
    if hook_host {
        return true;
    }
    let lower = segments(path);
    if lower
        .iter()
        .any(|s| HOOK_PREFIXES.iter().any(|p| s.starts_with(p)))
    {
        return true;
    }
    let raw: Vec<&[char]> = path
        .split(|&c| c == '/')
        .filter(|s| !s.is_empty())
        .collect();
    lower.iter().zip(raw.iter().skip(1)).any(|(segment, next)| {
        segment == "services"
            && next.len() >= 6
            && next
                .iter()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
    })
}

/// A mask already in the path: what follows a masked segment is as secret as the segment was
/// (a key in the segment after a masked one). A masked user info says nothing about the path.
fn path_behind_a_mask(path: &[char]) -> bool {
    path.windows(MASK.len())
        .any(|w| w.iter().copied().eq(MASK.chars()))
}

/// A path segment holding a run of letters and digits that reads as a generated key rather
/// than words or an ID: at least [`RANDOM_RUN_MIN`] long, letters and digits mixed (three or
/// more switches between them). Slugs (`pearl-2-user-guide`), numbers, UUIDs and `CamelCase`
/// words with a year stay.
fn has_random_segment(path: &[char]) -> bool {
    path.split(|&c| c == '/').any(|segment| {
        if is_uuid(&text_of(segment)) {
            return false;
        }
        segment
            .split(|c: &char| !c.is_ascii_alphanumeric())
            .any(looks_random)
    })
}

fn looks_random(run: &[char]) -> bool {
    if run.len() < RANDOM_RUN_MIN {
        return false;
    }
    let digits = run.iter().filter(|c| c.is_ascii_digit()).count();
    let letters = run.len().saturating_sub(digits);
    let switches = run
        .windows(2)
        .filter(|pair| match pair {
            [a, b] => a.is_ascii_digit() != b.is_ascii_digit(),
            _ => false,
        })
        .count();
    digits >= 2 && letters >= 2 && switches >= 3
}
