//! The one rule for "Epiphan says the sign-in is missing, expired or revoked".
//!
//! Epiphan usually reports it *inside* a tool result: an error result whose text is a status
//! line such as `Error: 401 Unauthorized`. Sometimes the HTTP exchange itself answers 401
//! (an unknown token at `initialize`). Names are data: a device called `401 Unauthorized`,
//! an error that merely mentions one (`Error: device "401 Unauthorized" not found`), or a
//! different status that quotes a 401 (`Error: 500 … upstream said 401`) is not a sign-in
//! problem. So the rule looks at where a status goes, never for the digits anywhere:
//!
//! * **Status text** ([`reads_as_expired_sign_in`]): after an optional `Error` (with or
//!   without its colon) and an optional `HTTP` or `HTTP/1.1`, the text *begins* with the
//!   status `401` or the reason phrase `Unauthorized` (either spelling, any case) as a whole
//!   word.
//! * **A JSON error object** in an error result: a `status`/`statusCode`/`status_code`/`code`
//!   of 401, or an `error`/`message` that is such a status text (one nested `error` object
//!   is looked into).
//! * **The transport**: an HTTP 401 response (with or without a challenge), or an MCP error
//!   whose code is 401 or whose message is such a status text. A 403 is a permission problem,
//!   not an expired sign-in.
//!
//! Only error results and results that are plain text (not JSON) are judged; a JSON result is
//! fleet data whatever its names say.

use serde_json::Value;

use crate::mcp::Failure;

/// True when `text` is a status line saying 401 / Unauthorized (see the module notes).
pub fn reads_as_expired_sign_in(text: &str) -> bool {
    let mut t = text.trim_start();
    if let Some(rest) = strip_word(t, "error") {
        let rest = rest.trim_start();
        t = rest.strip_prefix(':').unwrap_or(rest).trim_start();
    }
    if let Some(rest) = strip_word(t, "http") {
        // `HTTP 401`, `HTTP/1.1 401`, `HTTP/2 401`.
        let rest = match rest.strip_prefix('/') {
            Some(version) => version.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.'),
            None => rest,
        };
        if rest.starts_with(char::is_whitespace) {
            t = rest.trim_start();
        }
    }
    if let Some(rest) = t.strip_prefix("401") {
        return !rest.starts_with(|c: char| c.is_ascii_alphanumeric());
    }
    strip_word(t, "unauthorized").is_some() || strip_word(t, "unauthorised").is_some()
}

/// `text` without a leading `word` (ASCII, any case) that ends at a non-alphanumeric
/// character or the end.
fn strip_word<'a>(text: &'a str, word: &str) -> Option<&'a str> {
    let head = text.get(..word.len())?;
    let rest = text.get(word.len()..)?;
    (head.eq_ignore_ascii_case(word) && !rest.starts_with(|c: char| c.is_ascii_alphanumeric()))
        .then_some(rest)
}

/// The JSON form of an error result: `{"status": 401}`, `{"error": "401 Unauthorized"}`,
/// `{"error": {"code": 401, "message": "…"}}` and the like.
pub(crate) fn json_error_is_expired_sign_in(value: &Value) -> bool {
    fn look(value: &Value, depth: u8) -> bool {
        let Some(object) = value.as_object() else {
            return value.as_str().is_some_and(reads_as_expired_sign_in);
        };
        let status = ["status", "statusCode", "status_code", "code"]
            .iter()
            .filter_map(|k| object.get(*k))
            .any(|v| v.as_u64() == Some(401) || v.as_str().is_some_and(|s| s.trim() == "401"));
        let text = ["error", "message"]
            .iter()
            .filter_map(|k| object.get(*k))
            .any(|v| match v {
                Value::String(s) => reads_as_expired_sign_in(s),
                Value::Object(_) if depth == 0 => look(v, 1),
                _ => false,
            });
        status || text
    }
    look(value, 0)
}

/// An error result's text: a status line, or a JSON error object.
pub(crate) fn error_text_is_expired_sign_in(text: &str) -> bool {
    reads_as_expired_sign_in(text)
        || serde_json::from_str::<Value>(text.trim())
            .is_ok_and(|v| json_error_is_expired_sign_in(&v))
}

/// An exchange failed because of the sign-in: opening a session, or a call on it.
pub(crate) fn failure_is_expired_sign_in(failure: &Failure) -> bool {
    match failure {
        Failure::Status(status, _) => *status == 401,
        Failure::Rpc { code, message } => *code == 401 || reads_as_expired_sign_in(message),
        Failure::Connection(_) | Failure::Protocol(_) => false,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]
mod tests {
    use super::*;

    /// The table both processes' read paths are also run over (tests/tests/sign_in_rule.rs):
    /// `kind` is `error` (an error result), `text` (a plain text result) or `json` (a JSON
    /// result, always data).
    pub(crate) const TABLE: &str = include_str!("../tests/data/sign_in_answers.json");

    #[test]
    fn the_sign_in_table_through_the_result_rule() {
        let rows: Vec<Value> = serde_json::from_str(TABLE).unwrap();
        assert!(rows.len() > 20);
        let mut wrong = Vec::new();
        for row in &rows {
            let text = row["text"].as_str().unwrap();
            let expired = row["expired"].as_bool().unwrap();
            let got = match row["kind"].as_str().unwrap() {
                "error" => error_text_is_expired_sign_in(text),
                "text" => {
                    serde_json::from_str::<Value>(text.trim()).is_err()
                        && reads_as_expired_sign_in(text)
                }
                "json" => false,
                other => panic!("unknown kind {other}"),
            };
            if got != expired {
                wrong.push(format!("{row}: judged {got}"));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn the_transport_rule() {
        assert!(failure_is_expired_sign_in(&Failure::Status(
            401,
            String::new()
        )));
        assert!(failure_is_expired_sign_in(&Failure::Status(
            401,
            "{\"error\":\"invalid_token\"}".into()
        )));
        // A 403 is a permission problem; a 500 that quotes a 401 is a 500.
        assert!(!failure_is_expired_sign_in(&Failure::Status(
            403,
            "Unauthorized".into()
        )));
        assert!(!failure_is_expired_sign_in(&Failure::Status(
            500,
            "device 401 Unauthorized".into()
        )));
        let rpc = |code: i64, message: &str| Failure::Rpc {
            code,
            message: message.into(),
        };
        assert!(failure_is_expired_sign_in(&rpc(401, "x")));
        assert!(failure_is_expired_sign_in(&rpc(-32000, "Unauthorized")));
        assert!(!failure_is_expired_sign_in(&rpc(
            -32602,
            "unknown device 401 Unauthorized"
        )));
        assert!(!failure_is_expired_sign_in(&Failure::Connection(
            "401 Unauthorized".into()
        )));
    }
}
