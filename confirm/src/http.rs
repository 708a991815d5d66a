//! A small HTTP/1.1 server for pages on the loopback addresses: one request per connection,
//! read within bounds, answered, closed. No keep-alive, no chunked bodies, no TLS: the pages are
//! served to a browser on the same machine, at `http://localhost:PORT/`, because a passkey
//! cannot be bound to an IP address.
//!
//! Written here rather than taken from a general server so the trusted program's whole request
//! path fits on a few screens: the head is capped before it is parsed, the body before it is
//! allocated, and every answer carries the headers a reviewer looks for first.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Largest request head (request line and headers), in bytes.
pub const MAX_HEAD: usize = 16 * 1024;

/// Largest request body, in bytes.
pub const MAX_BODY: usize = 64 * 1024;

/// Connections handled at once; more are closed unanswered. Each costs a thread with a small
/// stack and at most [`MAX_HEAD`] + [`MAX_BODY`] bytes, and is held at most [`DEADLINE`].
const MAX_CONNECTIONS: usize = 64;

/// How long a connection may take to send its whole request (head and body together), and
/// then to take the answer: a client that sends a byte now and then cannot hold a slot longer.
const DEADLINE: Duration = Duration::from_secs(10);

/// On a page whose every path starts with a secret (the enrolment page's token): connections at
/// once that have not yet shown it in their request line. See [`Gate`].
const UNPROVEN: usize = 4;

/// The policy every answer carries: scripts, styles and requests only from the page's own
/// origin, nothing inline, no frames around it, forms only back to itself.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; connect-src 'self'; img-src 'none'; form-action 'self'; \
     frame-ancestors 'none'; base-uri 'none'";

/// One request, as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// `GET`, `POST`, …
    pub method: String,
    /// The request target as sent (a path, possibly with a query).
    pub target: String,
    /// Header names in lower case, values trimmed, in order.
    pub headers: Vec<(String, String)>,
    /// The body (empty without `Content-Length`).
    pub body: Vec<u8>,
}

impl Request {
    /// The value of a header (the first, if repeated).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The path, without any query.
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or_default()
    }
}

/// One answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// `Content-Type`.
    pub content_type: &'static str,
    /// The body.
    pub body: Vec<u8>,
    /// A stricter or different `Content-Security-Policy` than [`CONTENT_SECURITY_POLICY`] (the
    /// confirm page's form posts to the approval page's origin).
    pub csp: Option<String>,
    /// A `Referrer-Policy` other than `no-referrer`: the confirm page's form says which origin
    /// sent it (`strict-origin`: the origin, never a path), which `no-referrer` would hide.
    pub referrer_policy: Option<&'static str>,
}

impl Response {
    /// An answer with a body.
    pub fn new(status: u16, content_type: &'static str, body: impl Into<Vec<u8>>) -> Response {
        Response {
            status,
            content_type,
            body: body.into(),
            csp: None,
            referrer_policy: None,
        }
    }

    /// A plain-text answer.
    pub fn text(status: u16, body: &str) -> Response {
        Response::new(status, "text/plain; charset=utf-8", body)
    }

    /// `404 Not Found`.
    pub fn not_found() -> Response {
        Response::text(404, "Not found.\n")
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        421 => "Misdirected Request",
        422 => "Unprocessable Content",
        431 => "Request Header Fields Too Large",
        _ => "Status",
    }
}

/// Why a request was not read.
#[derive(Debug)]
pub enum ReadError {
    /// The connection failed or closed early.
    Io(io::Error),
    /// Not a request this server reads; the status to answer with.
    Bad(u16, &'static str),
}

impl From<io::Error> for ReadError {
    fn from(e: io::Error) -> ReadError {
        ReadError::Io(e)
    }
}

/// Reads one request: the head up to [`MAX_HEAD`], then exactly `Content-Length` body bytes
/// up to [`MAX_BODY`].
pub fn read_request(stream: &mut impl Read) -> Result<Request, ReadError> {
    read_request_shown(stream, &mut |_| true)
}

/// [`read_request`], asking `shown` about the request target as soon as the request line has
/// arrived: a target it refuses ends the read with 404 before any header is waited for.
fn read_request_shown(
    stream: &mut impl Read,
    shown: &mut dyn FnMut(&str) -> bool,
) -> Result<Request, ReadError> {
    let mut buffer = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    let mut line_seen = false;
    let head_end = loop {
        if !line_seen && let Some(end) = buffer.windows(2).position(|w| w == b"\r\n") {
            line_seen = true;
            let line = std::str::from_utf8(buffer.get(..end).unwrap_or_default()).unwrap_or("");
            if !shown(line.split(' ').nth(1).unwrap_or("")) {
                return Err(ReadError::Bad(404, "not found"));
            }
        }
        if let Some(at) = find_head_end(&buffer) {
            break at;
        }
        if buffer.len() > MAX_HEAD {
            return Err(ReadError::Bad(431, "request head too large"));
        }
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Err(ReadError::Io(io::ErrorKind::UnexpectedEof.into()));
        }
        buffer.extend_from_slice(chunk.get(..n).unwrap_or_default());
    };
    let (head, rest) = buffer.split_at(head_end);
    let rest = rest.get(4..).unwrap_or_default();
    let head = std::str::from_utf8(head).map_err(|_| ReadError::Bad(400, "head is not UTF-8"))?;
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(ReadError::Bad(400, "malformed request line"));
    };
    if !matches!(version, "HTTP/1.1" | "HTTP/1.0") || !target.starts_with('/') {
        return Err(ReadError::Bad(400, "malformed request line"));
    }
    let mut headers = Vec::new();
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            return Err(ReadError::Bad(400, "malformed header"));
        };
        if name.is_empty() || name.contains([' ', '\t']) {
            return Err(ReadError::Bad(400, "malformed header"));
        }
        headers.push((name.to_ascii_lowercase(), value.trim().to_owned()));
    }
    let count = |n: &str| headers.iter().filter(|(h, _)| h == n).count();
    // Two readers of one request must not disagree about its host or its length.
    if count("host") != 1 || count("content-length") > 1 {
        return Err(ReadError::Bad(
            400,
            "one Host header and at most one Content-Length",
        ));
    }
    if count("transfer-encoding") > 0 {
        return Err(ReadError::Bad(411, "a body needs a Content-Length"));
    }
    let length = match headers.iter().find(|(h, _)| h == "content-length") {
        None => 0,
        Some((_, v)) => v
            .parse::<usize>()
            .map_err(|_| ReadError::Bad(400, "malformed Content-Length"))?,
    };
    if length > MAX_BODY {
        return Err(ReadError::Bad(413, "body too large"));
    }
    let mut body = rest
        .get(..length.min(rest.len()))
        .unwrap_or_default()
        .to_vec();
    if rest.len() > length {
        return Err(ReadError::Bad(400, "bytes after the body"));
    }
    if body.len() < length {
        let mut more = vec![0u8; length - body.len()];
        stream.read_exact(&mut more)?;
        body.extend_from_slice(&more);
    }
    Ok(Request {
        method: method.to_owned(),
        target: target.to_owned(),
        headers,
        body,
    })
}

fn find_head_end(buffer: &[u8]) -> Option<usize> {
    buffer.windows(4).position(|w| w == b"\r\n\r\n")
}

/// Writes an answer with the headers every page of this program carries, and closes.
pub fn write_response(stream: &mut impl Write, response: &Response) -> io::Result<()> {
    let head = format!(
        "HTTP/1.1 {} {}\r\n\
         content-type: {}\r\n\
         content-length: {}\r\n\
         cache-control: no-store\r\n\
         content-security-policy: {}\r\n\
         referrer-policy: {}\r\n\
         x-content-type-options: nosniff\r\n\
         x-frame-options: DENY\r\n\
         cross-origin-opener-policy: same-origin\r\n\
         cross-origin-resource-policy: same-origin\r\n\
         connection: close\r\n\r\n",
        response.status,
        reason(response.status),
        response.content_type,
        response.body.len(),
        response.csp.as_deref().unwrap_or(CONTENT_SECURITY_POLICY),
        response.referrer_policy.unwrap_or("no-referrer"),
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(&response.body)?;
    stream.flush()
}

/// The loopback sockets a page listens on, and what the program should say about them.
#[derive(Debug)]
pub struct Listeners {
    /// 127.0.0.1 and, where the host has one, ::1 on the same port.
    pub sockets: Vec<TcpListener>,
    /// The port.
    pub port: u16,
    /// False when the host has no IPv6 loopback (then only 127.0.0.1 listens).
    pub ipv6: bool,
}

/// Binds 127.0.0.1 and ::1 on one port: `port`, or one the kernel chooses. Both, so that no
/// other local user can take `localhost` on the address this program left free; IPv4 alone
/// only where the host has no IPv6 loopback at all.
pub fn bind_loopback(port: Option<u16>) -> io::Result<Listeners> {
    let attempts = if port.is_some() { 1 } else { 20 };
    let mut last = io::Error::other("no port could be bound");
    for _ in 0..attempts {
        let v4 = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port.unwrap_or(0))))?;
        let bound = v4.local_addr()?.port();
        match TcpListener::bind(SocketAddr::from((Ipv6Addr::LOCALHOST, bound))) {
            Ok(v6) => {
                return Ok(Listeners {
                    sockets: vec![v4, v6],
                    port: bound,
                    ipv6: true,
                });
            }
            // Someone holds the port on ::1: try another (or give up on a fixed port).
            Err(e) if e.kind() == io::ErrorKind::AddrInUse => last = e,
            // No IPv6 loopback on this host.
            Err(_) => {
                return Ok(Listeners {
                    sockets: vec![v4],
                    port: bound,
                    ipv6: false,
                });
            }
        }
    }
    Err(last)
}

/// The listening sockets systemd passed (`LISTEN_FDS`, for this process by `LISTEN_PID`), or
/// `None` when it passed none. Each must be a TCP listener on a loopback address and all on one
/// port; anything else is refused, since the page must not answer another host.
pub fn from_systemd() -> Result<Option<Listeners>, String> {
    let for_us = std::env::var("LISTEN_PID")
        .ok()
        .and_then(|p| p.parse::<u32>().ok())
        == Some(std::process::id());
    if !for_us || std::env::var_os("LISTEN_FDS").is_none() {
        return Ok(None);
    }
    let mut passed = listenfd::ListenFd::from_env();
    let mut sockets = Vec::new();
    let mut port = None;
    for index in 0..passed.len() {
        let socket = passed
            .take_tcp_listener(index)
            .map_err(|e| {
                format!("systemd passed socket {index}, which is not a TCP listener: {e}")
            })?
            .ok_or_else(|| format!("systemd passed socket {index} twice"))?;
        let address = socket
            .local_addr()
            .map_err(|e| format!("systemd passed socket {index}: {e}"))?;
        if !address.ip().is_loopback() {
            return Err(format!(
                "systemd passed a socket on {address}; the page listens on loopback addresses only"
            ));
        }
        if *port.get_or_insert(address.port()) != address.port() {
            return Err(format!(
                "systemd passed sockets on two ports ({} and {}); the page's address has one",
                port.unwrap_or_default(),
                address.port()
            ));
        }
        sockets.push(socket);
    }
    let Some(port) = port else {
        return Err("LISTEN_FDS names no socket".into());
    };
    let ipv6 = sockets
        .iter()
        .any(|s| s.local_addr().is_ok_and(|a| a.is_ipv6()));
    Ok(Some(Listeners {
        sockets,
        port,
        ipv6,
    }))
}

/// An answer, and what to do once it has been written and the connection closed (a program
/// that ends after its answer must not end before the browser has it).
pub struct Reply {
    /// The answer.
    pub response: Response,
    /// Run after the answer is written, whether or not writing succeeded.
    pub then: Option<Box<dyn FnOnce() + Send>>,
}

impl From<Response> for Reply {
    fn from(response: Response) -> Reply {
        Reply {
            response,
            then: None,
        }
    }
}

/// What answers a request.
pub type Handler = Arc<dyn Fn(&Request) -> Reply + Send + Sync>;

/// Serves every listener on its own thread until the process ends. Each connection is read on
/// a thread of its own, within [`DEADLINE`], and at most [`MAX_CONNECTIONS`] at once.
pub fn serve(listeners: Listeners, handler: Handler) {
    serve_with(listeners, handler, None);
}

/// [`serve`] for a page whose every path starts with `path`, a secret only its browser knows
/// (the enrolment page's token): see [`Gate`].
pub fn serve_gated(listeners: Listeners, handler: Handler, path: String) {
    serve_with(
        listeners,
        handler,
        Some(Arc::new(Gate {
            path,
            waiting: Mutex::new(VecDeque::new()),
            next: AtomicU64::new(0),
        })),
    );
}

fn serve_with(listeners: Listeners, handler: Handler, gate: Option<Arc<Gate>>) {
    let open = Arc::new(AtomicUsize::new(0));
    for listener in listeners.sockets {
        let handler = handler.clone();
        let open = open.clone();
        let gate = gate.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                if open.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
                    open.fetch_sub(1, Ordering::SeqCst);
                    continue;
                }
                let handler = handler.clone();
                let open = open.clone();
                let gate = gate.clone();
                std::thread::spawn(move || {
                    match &gate {
                        None => answer_within(stream, &handler, DEADLINE, &mut |_| true),
                        Some(gate) => {
                            let id = gate.admit(&stream);
                            answer_within(stream, &handler, DEADLINE, &mut |target| {
                                gate.shown(id);
                                gate.fits(target)
                            });
                            gate.shown(id);
                        }
                    }
                    open.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
    }
}

/// Keeps a page behind a secret path answerable while another local user opens connections
/// and sends nothing (or a byte now and then): at most [`UNPROVEN`] connections at once may be
/// open without having sent their request line, and a newer one closes the oldest of them. A
/// browser sends its request line as soon as it connects, so it is the slow ones that are
/// closed; one whose request line names another path is answered 404 at once.
struct Gate {
    path: String,
    waiting: Mutex<VecDeque<(u64, TcpStream)>>,
    next: AtomicU64,
}

impl Gate {
    /// Counts a new connection as waiting to show the path, closing the oldest waiting one when
    /// there are already [`UNPROVEN`]. Returns its number.
    fn admit(&self, stream: &TcpStream) -> u64 {
        let id = self.next.fetch_add(1, Ordering::SeqCst);
        let mut waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
        while waiting.len() >= UNPROVEN {
            if let Some((_, oldest)) = waiting.pop_front() {
                let _ = oldest.shutdown(std::net::Shutdown::Both);
            }
        }
        if let Ok(copy) = stream.try_clone() {
            waiting.push_back((id, copy));
        }
        id
    }

    /// The connection sent its request line, or ended: it no longer waits.
    fn shown(&self, id: u64) {
        let mut waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
        waiting.retain(|(i, _)| *i != id);
    }

    /// Whether a request target is under the secret path.
    fn fits(&self, target: &str) -> bool {
        target
            .strip_prefix(self.path.as_str())
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(['/', '?']))
    }
}

/// A stream read against one deadline for the whole request: each read waits at most for
/// what is left of it, and none starts once it has passed.
struct WithinDeadline<'a> {
    stream: &'a TcpStream,
    deadline: Instant,
}

impl Read for WithinDeadline<'_> {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        let left = self
            .deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
            .ok_or_else(|| io::Error::from(io::ErrorKind::TimedOut))?;
        self.stream.set_read_timeout(Some(left))?;
        (&mut &*self.stream).read(buffer)
    }
}

fn answer_within(
    mut stream: TcpStream,
    handler: &Handler,
    deadline: Duration,
    shown: &mut dyn FnMut(&str) -> bool,
) {
    let _ = stream.set_write_timeout(Some(deadline));
    let mut reader = WithinDeadline {
        stream: &stream,
        deadline: Instant::now() + deadline,
    };
    let reply = match read_request_shown(&mut reader, shown) {
        Ok(request) => handler(&request),
        Err(ReadError::Bad(status, why)) => Response::text(status, &format!("{why}.\n")).into(),
        Err(ReadError::Io(_)) => return,
    };
    let _ = write_response(&mut stream, &reply.response);
    let _ = stream.shutdown(std::net::Shutdown::Both);
    if let Some(then) = reply.then {
        then();
    }
}

/// Escapes text for HTML element content and quoted attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn read(bytes: &[u8]) -> Result<Request, ReadError> {
        read_request(&mut &bytes[..])
    }

    #[test]
    fn a_post_with_a_body_is_read_exactly() {
        let r =
            read(b"POST /enrol/x HTTP/1.1\r\nHost: localhost:1\r\nContent-Length: 3\r\n\r\nabc")
                .unwrap();
        assert_eq!(r.method, "POST");
        assert_eq!(r.path(), "/enrol/x");
        assert_eq!(r.header("host"), Some("localhost:1"));
        assert_eq!(r.body, b"abc");
    }

    #[test]
    fn ambiguous_or_oversize_requests_are_refused() {
        for bad in [
            &b"GET / HTTP/1.1\r\n\r\n"[..],
            b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
            b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 999999\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n",
            b"GET http://x/ HTTP/1.1\r\nHost: a\r\n\r\n",
            b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\nab",
        ] {
            assert!(
                matches!(read(bad), Err(ReadError::Bad(..))),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        let mut huge = b"GET / HTTP/1.1\r\nHost: a\r\nX: ".to_vec();
        huge.extend(std::iter::repeat_n(b'a', MAX_HEAD + 10));
        assert!(matches!(read(&huge), Err(ReadError::Bad(431, _))));
    }

    #[test]
    fn answers_carry_the_security_headers() {
        let mut out = Vec::new();
        write_response(&mut out, &Response::text(200, "hi")).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"));
        assert!(text.contains("frame-ancestors 'none'"));
        assert!(text.contains("referrer-policy: no-referrer"));
        assert!(text.ends_with("\r\n\r\nhi"));
    }

    /// A client that sends its request a byte at a time, each well within any per-read
    /// timeout, is cut off at the whole request's deadline, unanswered.
    #[test]
    fn a_request_sent_slowly_ends_at_its_deadline() {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let address = listener.local_addr().unwrap();
        let client = std::thread::spawn(move || {
            let mut stream = TcpStream::connect(address).unwrap();
            let request = b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";
            for byte in request {
                if stream.write_all(&[*byte]).is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            let mut answer = Vec::new();
            let _ = stream.read_to_end(&mut answer);
            answer
        });
        let (stream, _) = listener.accept().unwrap();
        let handler: Handler = Arc::new(|_: &Request| Response::text(200, "hi").into());
        answer_within(stream, &handler, Duration::from_millis(600), &mut |_| true);
        assert!(
            client.join().unwrap().is_empty(),
            "a slow request was answered"
        );
        // The same request sent at once is answered.
        let client = std::thread::spawn(move || {
            let mut stream = TcpStream::connect(address).unwrap();
            stream
                .write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
                .unwrap();
            let mut answer = Vec::new();
            let _ = stream.read_to_end(&mut answer);
            answer
        });
        let (stream, _) = listener.accept().unwrap();
        answer_within(stream, &handler, Duration::from_millis(600), &mut |_| true);
        assert!(client.join().unwrap().ends_with(b"hi"));
    }

    #[test]
    fn escaping_covers_markup_and_quotes() {
        assert_eq!(
            escape(r#"<a href="x">O'B & c</a>"#),
            "&lt;a href=&quot;x&quot;&gt;O&#39;B &amp; c&lt;/a&gt;"
        );
    }
}
