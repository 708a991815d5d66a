//! A relay standing in for SSH's forwarding: a SOCKS5 proxy on a loopback port that carries
//! each connection the browser makes to `localhost:PORT`, byte for byte in both directions, to
//! 127.0.0.1:PORT, and counts them per port. The browser keeps `http://localhost:PORT` as its
//! origin and Host header, as an operator's browser does behind `ssh -L PORT:localhost:PORT`
//! (or `ssh -D`) from their own computer. (A relay named by host resolver rules cannot stand
//! in: Chromium resolves `localhost` itself and ignores such rules for it.)

use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// A running relay; it stops accepting when dropped.
pub struct Forwarder {
    /// The port it listens on (127.0.0.1).
    pub port: u16,
    relayed: Arc<Mutex<BTreeMap<u16, usize>>>,
    stop: Arc<AtomicBool>,
}

impl Forwarder {
    /// Starts relaying connections to `localhost` ports.
    pub fn start() -> Forwarder {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("relay binds");
        let port = listener.local_addr().expect("address").port();
        let relayed = Arc::new(Mutex::new(BTreeMap::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (counts, stopped) = (relayed.clone(), stop.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if stopped.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(client) = client else { continue };
                let counts = counts.clone();
                std::thread::spawn(move || {
                    if let Ok((server, port)) = handshake(&client) {
                        *counts.lock().expect("counts").entry(port).or_insert(0) += 1;
                        relay(client, server);
                    } else {
                        let _ = client.shutdown(Shutdown::Both);
                    }
                });
            }
        });
        Forwarder {
            port,
            relayed,
            stop,
        }
    }

    /// The browser's flags that send every connection, loopback included, through the relay.
    pub fn browser_args(&self) -> [String; 2] {
        [
            format!("--proxy-server=socks5://127.0.0.1:{}", self.port),
            // Without it, loopback addresses bypass any proxy.
            "--proxy-bypass-list=<-loopback>".to_owned(),
        ]
    }

    /// Connections relayed to `port` so far.
    pub fn relayed(&self, port: u16) -> usize {
        self.relayed
            .lock()
            .expect("counts")
            .get(&port)
            .copied()
            .unwrap_or(0)
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop so it sees the flag.
        let _ = TcpStream::connect((Ipv4Addr::LOCALHOST, self.port));
    }
}

/// SOCKS5 without authentication, CONNECT only, to `localhost` or 127.0.0.1: returns the
/// connection to 127.0.0.1 at the port asked for, and the port.
fn handshake(client: &TcpStream) -> io::Result<(TcpStream, u16)> {
    let mut c = client;
    let refuse = || io::Error::other("not a SOCKS5 CONNECT to localhost");
    let mut head = [0u8; 2];
    c.read_exact(&mut head)?;
    let mut methods = vec![0u8; usize::from(head[1])];
    c.read_exact(&mut methods)?;
    if head[0] != 5 || !methods.contains(&0) {
        return Err(refuse());
    }
    c.write_all(&[5, 0])?;
    let mut request = [0u8; 4];
    c.read_exact(&mut request)?;
    if request[..3] != [5, 1, 0] {
        return Err(refuse());
    }
    let host = match request[3] {
        1 => {
            let mut address = [0u8; 4];
            c.read_exact(&mut address)?;
            Ipv4Addr::from(address).to_string()
        }
        3 => {
            let mut length = [0u8; 1];
            c.read_exact(&mut length)?;
            let mut name = vec![0u8; usize::from(length[0])];
            c.read_exact(&mut name)?;
            String::from_utf8_lossy(&name).into_owned()
        }
        _ => return Err(refuse()),
    };
    let mut port = [0u8; 2];
    c.read_exact(&mut port)?;
    let port = u16::from_be_bytes(port);
    if !matches!(host.as_str(), "localhost" | "127.0.0.1") {
        return Err(refuse());
    }
    let server = TcpStream::connect((Ipv4Addr::LOCALHOST, port))?;
    c.write_all(&[5, 0, 0, 1, 127, 0, 0, 1, 0, 0])?;
    Ok((server, port))
}

/// Copies each direction on a thread of its own; each side's end closes the other's writing.
fn relay(client: TcpStream, server: TcpStream) {
    let pairs = [
        (client.try_clone(), server.try_clone()),
        (server.try_clone(), client.try_clone()),
    ];
    for (from, to) in pairs {
        let (Ok(mut from), Ok(mut to)) = (from, to) else {
            continue;
        };
        std::thread::spawn(move || {
            let _: io::Result<u64> = io::copy(&mut from, &mut to);
            let _ = to.shutdown(Shutdown::Write);
        });
    }
}
