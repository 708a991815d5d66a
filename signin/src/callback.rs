//! The loopback redirect target: a listener on `127.0.0.1` that exists only while a login
//! waits, and answers nothing but `GET /callback?…`.
//!
//! It is deliberately not a web server. Each connection gets one request head, read with a
//! size cap and a deadline; there is no routing, no body, no keep-alive and no page built from
//! input — every answer is one of a few fixed plain-text pages. Any other path gets a fixed
//! 404 and the wait goes on (a browser asks for `/favicon.ico`). A callback whose `state` does
//! not match, compared in constant time, ends the login without using its code: the answer
//! may come from a page that is not the one this login opened.

use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

use crate::{Secret, SignInError};

/// Largest request head read.
const MAX_HEAD: usize = 8 * 1024;

/// Bound on reading one request head.
const HEAD_DEADLINE: Duration = Duration::from_secs(10);

const NOT_FOUND: &str = "Not found.\n";
const SIGNED_IN: &str =
    "Signed in to Epiphan. You can close this tab and go back to the terminal.\n";
const WRONG_STATE: &str = "This answer does not belong to the sign-in in progress, so it was not used and nothing was stored. Start the sign-in again from the terminal.\n";
const DENIED: &str =
    "The sign-in was not completed, so nothing was stored. Start it again from the terminal.\n";
const BAD_REQUEST: &str = "Bad request.\n";

/// The loopback listener, bound before the browser is sent anywhere.
pub struct CallbackListener {
    listener: TcpListener,
    port: u16,
}

/// How one connection ended.
enum Step {
    /// Not the callback; keep waiting.
    Ignored,
    /// The callback, with its verdict.
    Done(Result<Secret, SignInError>),
}

impl CallbackListener {
    /// Binds `127.0.0.1:port` (`0` picks a free port, for tests).
    pub async fn bind(port: u16) -> Result<CallbackListener, SignInError> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await.map_err(|e| {
            SignInError::Callback(format!(
                "cannot listen on 127.0.0.1:{port} for the sign-in answer ({e}); free the port or set FLEETWATCH_OAUTH_CALLBACK_PORT"
            ))
        })?;
        let port = listener
            .local_addr()
            .map_err(|e| SignInError::Callback(format!("listener address: {e}")))?
            .port();
        Ok(CallbackListener { listener, port })
    }

    /// `http://127.0.0.1:PORT/callback`.
    pub fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}/callback", self.port)
    }

    /// Waits up to `wait` for the callback carrying `state`, and returns its code.
    pub async fn wait(self, state: &Secret, wait: Duration) -> Result<Secret, SignInError> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let accepted = tokio::time::timeout_at(deadline, self.listener.accept()).await;
            let (stream, _) = match accepted {
                Err(_) => {
                    return Err(SignInError::Callback(format!(
                        "no sign-in answer arrived within {} s; start again",
                        wait.as_secs()
                    )));
                }
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "callback connection failed");
                    continue;
                }
                Ok(Ok(s)) => s,
            };
            if let Step::Done(result) = handle(stream, state).await {
                return result;
            }
        }
    }
}

async fn respond(stream: &mut TcpStream, status: &str, body: &str) {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nReferrer-Policy: no-referrer\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(body.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// Reads bytes until the blank line ending the head, within the size cap.
async fn read_head(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    loop {
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        head.extend_from_slice(buf.get(..n)?);
        if head.windows(4).any(|w| w == b"\r\n\r\n") {
            return Some(head);
        }
        if head.len() > MAX_HEAD {
            return None;
        }
    }
}

async fn handle(mut stream: TcpStream, state: &Secret) -> Step {
    let head = match tokio::time::timeout(HEAD_DEADLINE, read_head(&mut stream)).await {
        Ok(Some(h)) => h,
        _ => {
            respond(&mut stream, "400 Bad Request", BAD_REQUEST).await;
            return Step::Ignored;
        }
    };
    let line = head
        .split(|b| *b == b'\n')
        .next()
        .and_then(|l| std::str::from_utf8(l).ok())
        .unwrap_or_default()
        .trim_end_matches('\r');
    let mut parts = line.split(' ');
    let (method, target, version) = (parts.next(), parts.next(), parts.next());
    let query = match (method, target, version, parts.next()) {
        (Some("GET"), Some(target), Some(v), None) if v.starts_with("HTTP/1.") => {
            match target.split_once('?') {
                Some(("/callback", q)) => q,
                _ => {
                    respond(&mut stream, "404 Not Found", NOT_FOUND).await;
                    return Step::Ignored;
                }
            }
        }
        _ => {
            respond(&mut stream, "404 Not Found", NOT_FOUND).await;
            return Step::Ignored;
        }
    };
    let mut states = Vec::new();
    let mut codes = Vec::new();
    let mut errors = Vec::new();
    for (name, value) in form_urlencoded::parse(query.as_bytes()) {
        match name.as_ref() {
            "state" => states.push(value.into_owned()),
            "code" => codes.push(value.into_owned()),
            "error" => errors.push(value.into_owned()),
            _ => {}
        }
    }
    // Exactly one state, equal to ours; nothing else in the answer is looked at before that.
    let state_ok = matches!(states.as_slice(), [one] if state.ct_eq(one));
    if !state_ok {
        respond(&mut stream, "400 Bad Request", WRONG_STATE).await;
        return Step::Done(Err(SignInError::Callback(
            "the sign-in answer did not carry this login's state, so it was refused and nothing was stored; start again"
                .into(),
        )));
    }
    if let [error] = errors.as_slice() {
        respond(&mut stream, "400 Bad Request", DENIED).await;
        let code: String = error
            .chars()
            .filter(|c| c.is_ascii_lowercase() || *c == '_')
            .take(64)
            .collect();
        return Step::Done(Err(SignInError::Callback(format!(
            "the authorization server did not complete the sign-in ({code})"
        ))));
    }
    match codes.as_slice() {
        [code] => match Secret::new(code) {
            Some(code) => {
                respond(&mut stream, "200 OK", SIGNED_IN).await;
                Step::Done(Ok(code))
            }
            None => {
                respond(&mut stream, "400 Bad Request", DENIED).await;
                Step::Done(Err(SignInError::Callback(
                    "the sign-in answer carried an unusable code".into(),
                )))
            }
        },
        _ => {
            respond(&mut stream, "400 Bad Request", DENIED).await;
            Step::Done(Err(SignInError::Callback(
                "the sign-in answer carried no single code".into(),
            )))
        }
    }
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
mod tests {
    use super::*;

    async fn send(port: u16, request: &str) -> String {
        let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        s.write_all(request.as_bytes()).await.unwrap();
        let mut out = String::new();
        let _ = s.read_to_string(&mut out).await;
        out
    }

    async fn listener() -> (CallbackListener, u16, Secret) {
        let l = CallbackListener::bind(0).await.unwrap();
        let port = l.port;
        (l, port, Secret::new("expected-state").unwrap())
    }

    #[tokio::test]
    async fn only_the_callback_path_answers_and_the_right_state_yields_the_code() {
        let (l, port, state) = listener().await;
        let waiter = tokio::spawn(async move { l.wait(&state, Duration::from_secs(30)).await });
        let other = send(port, "GET /favicon.ico HTTP/1.1\r\nHost: x\r\n\r\n").await;
        assert!(other.starts_with("HTTP/1.1 404"), "{other}");
        assert!(other.ends_with(NOT_FOUND));
        let post = send(
            port,
            "POST /callback?code=c&state=expected-state HTTP/1.1\r\n\r\n",
        )
        .await;
        assert!(post.starts_with("HTTP/1.1 404"), "{post}");
        let big = format!("GET /callback?x={} HTTP/1.1\r\n\r\n", "a".repeat(20_000));
        assert!(send(port, &big).await.starts_with("HTTP/1.1 400"));
        let ok = send(
            port,
            "GET /callback?code=the-code&state=expected-state HTTP/1.1\r\nHost: x\r\n\r\n",
        )
        .await;
        assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
        assert!(ok.ends_with(SIGNED_IN));
        let code = waiter.await.unwrap().unwrap();
        assert_eq!(code.expose(), "the-code");
    }

    #[tokio::test]
    async fn a_wrong_or_doubled_state_ends_the_login_without_the_code() {
        for query in [
            "code=c&state=other-state",
            "code=c",
            "code=c&state=expected-state&state=expected-state",
            "code=c&state=expected-statex",
        ] {
            let (l, port, state) = listener().await;
            let waiter = tokio::spawn(async move { l.wait(&state, Duration::from_secs(30)).await });
            let answer = send(port, &format!("GET /callback?{query} HTTP/1.1\r\n\r\n")).await;
            assert!(answer.starts_with("HTTP/1.1 400"), "{query}: {answer}");
            assert!(answer.ends_with(WRONG_STATE));
            let err = waiter.await.unwrap().err().unwrap().to_string();
            assert!(err.contains("state"), "{err}");
        }
    }

    #[tokio::test]
    async fn an_error_answer_ends_the_login() {
        let (l, port, state) = listener().await;
        let waiter = tokio::spawn(async move { l.wait(&state, Duration::from_secs(30)).await });
        let answer = send(
            port,
            "GET /callback?error=access_denied&state=expected-state HTTP/1.1\r\n\r\n",
        )
        .await;
        assert!(answer.starts_with("HTTP/1.1 400"));
        let err = waiter.await.unwrap().err().unwrap().to_string();
        assert!(err.contains("access_denied"), "{err}");
    }
}
