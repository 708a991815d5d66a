//! Who holds the confirm page's address (DESIGN §9, an origin only systemd holds).
//!
//! A passkey assertion says which origin it was made on, and the executor accepts only the
//! confirm page's. An origin is a port on this machine: whoever listens there while the confirm
//! page's socket unit is down gets real assertions over changes of its choosing. So at each
//! Execute that carries passkeys the executor reads the kernel's socket table
//! (`/proc/net/tcp`, `/proc/net/tcp6`) and requires every loopback origin's port to be held, on
//! 127.0.0.1 and (when this host has it) on ::1, by the configured owner only — uid 0 by
//! default, which is systemd holding `fleetwatch-confirm.socket`.

use std::fmt;

/// Where the kernel lists TCP sockets.
const TCP4: &str = "/proc/net/tcp";
const TCP6: &str = "/proc/net/tcp6";
/// The host's IPv6 addresses; ::1 is listed when the host has it.
const IF_INET6: &str = "/proc/net/if_inet6";
/// `st` of a listening socket.
const LISTEN: &str = "0A";

/// Why an origin's port is not held as it must be, in words for the log and `doctor`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotHeld {
    /// Another user listens on the port.
    Other {
        /// The origin's port.
        port: u16,
        /// Who listens there.
        uid: u32,
    },
    /// Nothing of the owner listens on the port on this loopback address.
    Nobody {
        /// The origin's port.
        port: u16,
        /// `127.0.0.1` or `::1`.
        address: &'static str,
    },
    /// The socket table could not be read.
    Unreadable,
}

impl fmt::Display for NotHeld {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotHeld::Other { port, uid } => write!(f, "uid {uid} also listens on port {port}"),
            NotHeld::Nobody { port, address } => {
                write!(
                    f,
                    "nothing of the configured owner listens on {address} port {port}"
                )
            }
            NotHeld::Unreadable => write!(f, "the kernel's socket table could not be read"),
        }
    }
}

/// One listening socket: IPv6 or not, whether its address is loopback or any, port, owner.
struct Listener {
    v6: bool,
    local_or_any: bool,
    port: u16,
    uid: u32,
}

/// The port of an origin whose host is this machine's loopback (`http://localhost:8768`);
/// `None` for any other origin, which no socket here could hold.
fn loopback_port(origin: &str) -> Option<u16> {
    let (scheme, rest) = origin.split_once("://")?;
    let (host, port) = match rest.rsplit_once(':') {
        Some((host, port)) if !port.contains(']') => (host, port.parse().ok()?),
        _ => (rest, if scheme == "https" { 443 } else { 80 }),
    };
    matches!(host, "localhost" | "127.0.0.1" | "[::1]").then_some(port)
}

/// Checks every loopback origin's port against the socket table.
pub fn check(origins: &[String], owner: u32) -> Result<(), NotHeld> {
    let ports: Vec<u16> = origins.iter().filter_map(|o| loopback_port(o)).collect();
    if ports.is_empty() {
        return Ok(());
    }
    let read = |path| std::fs::read_to_string(path).map_err(|_| NotHeld::Unreadable);
    let v4 = read(TCP4)?;
    // A host without IPv6 has no tcp6 table and no ::1 to hold.
    let v6 = std::fs::read_to_string(TCP6).unwrap_or_default();
    let has_v6_loopback = std::fs::read_to_string(IF_INET6).is_ok_and(|t| {
        t.lines()
            .any(|l| l.starts_with("00000000000000000000000000000001"))
    });
    let listeners: Vec<Listener> = parse(&v4, false).chain(parse(&v6, true)).collect();
    for port in ports {
        held(&listeners, port, owner, has_v6_loopback)?;
    }
    Ok(())
}

fn held(listeners: &[Listener], port: u16, owner: u32, v6: bool) -> Result<(), NotHeld> {
    let on_port = || listeners.iter().filter(move |l| l.port == port);
    if let Some(other) = on_port().find(|l| l.uid != owner) {
        return Err(NotHeld::Other {
            port,
            uid: other.uid,
        });
    }
    if !on_port().any(|l| !l.v6 && l.local_or_any) {
        return Err(NotHeld::Nobody {
            port,
            address: "127.0.0.1",
        });
    }
    if v6 && !on_port().any(|l| l.v6 && l.local_or_any) {
        return Err(NotHeld::Nobody {
            port,
            address: "::1",
        });
    }
    Ok(())
}

/// The listening sockets of one table: `sl local rem st queues tr retrnsmt uid …`, addresses in
/// hex as the kernel prints them (127.0.0.1 is `0100007F`, ::1 is `…01000000`).
fn parse(table: &str, v6: bool) -> impl Iterator<Item = Listener> + '_ {
    table.lines().skip(1).filter_map(move |line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (local, state, uid) = (fields.get(1)?, fields.get(3)?, fields.get(7)?);
        if *state != LISTEN {
            return None;
        }
        let (address, port) = local.split_once(':')?;
        let local_or_any = if v6 {
            matches!(
                address,
                "00000000000000000000000001000000" | "00000000000000000000000000000000"
            )
        } else {
            matches!(address, "0100007F" | "00000000")
        };
        Some(Listener {
            v6,
            local_or_any,
            port: u16::from_str_radix(port, 16).ok()?,
            uid: uid.parse().ok()?,
        })
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const V4: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:2250 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1
   1: 0100007F:2251 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 2 1
   2: 0100007F:2250 0100007F:9999 01 00000000:00000000 00:00000000 00000000  1000        0 3 1
";
    const V6: &str = "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:2250 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4 1
";

    fn listeners() -> Vec<Listener> {
        parse(V4, false).chain(parse(V6, true)).collect()
    }

    #[test]
    fn the_owner_on_both_loopbacks_holds_it_and_anyone_else_does_not() {
        // 0x2250 = 8784, held by uid 0 on both; 0x2251 = 8785 by uid 1000 on 127.0.0.1 only.
        assert_eq!(held(&listeners(), 8784, 0, true), Ok(()));
        assert_eq!(
            held(&listeners(), 8784, 1000, true),
            Err(NotHeld::Other { port: 8784, uid: 0 })
        );
        assert_eq!(
            held(&listeners(), 8785, 1000, true),
            Err(NotHeld::Nobody {
                port: 8785,
                address: "::1"
            })
        );
        assert_eq!(held(&listeners(), 8785, 1000, false), Ok(()));
        assert_eq!(
            held(&listeners(), 8786, 0, true),
            Err(NotHeld::Nobody {
                port: 8786,
                address: "127.0.0.1"
            })
        );
    }

    #[test]
    fn only_loopback_origins_have_a_port_here() {
        assert_eq!(loopback_port("http://localhost:8768"), Some(8768));
        assert_eq!(loopback_port("http://127.0.0.1:9"), Some(9));
        assert_eq!(loopback_port("http://[::1]:9"), Some(9));
        assert_eq!(loopback_port("http://localhost"), Some(80));
        assert_eq!(loopback_port("https://confirm.example.org:8768"), None);
    }
}
