//! Browser sessions: a random 256-bit ID in an `HttpOnly; SameSite=Strict` cookie, made after
//! a right secret entry, and bound to the signing-in tab's own value.
//!
//! Cookies are not separated by port: any other service on this machine that the operator's
//! browser opens on `localhost` receives the page's cookie. So a session is also bound to a
//! random value the page keeps in `sessionStorage`, which is per origin (port included) and
//! per tab, and sends with every form; a POST carrying the cookie without that tab's value is
//! refused ([`Sessions::tab_matches`]).
//! The ID is a bearer credential, so it is never stored in the database
//! or signed claims; those carry [`tag`], a hash prefix that cannot be turned back into it.

use std::collections::HashMap;
use std::time::Duration;

use sha2::{Digest as _, Sha256};

/// The cookie's name.
pub const COOKIE: &str = "fleetwatch_page";
/// A session ends this long after it was made (the cookie itself ends with the browser).
pub const LIFETIME: Duration = Duration::from_secs(12 * 3600);
/// Sessions kept at most; the oldest goes first.
const MAX_SESSIONS: usize = 32;

/// The first 16 bytes of SHA-256 of the session ID: what audit rows and claims carry.
pub fn tag(session_id: &str) -> [u8; 16] {
    let digest = Sha256::digest(session_id.as_bytes());
    let mut out = [0u8; 16];
    for (o, b) in out.iter_mut().zip(digest.iter()) {
        *o = *b;
    }
    out
}

/// Lower-case hex (the protocol's one spelling).
pub use fleetwatch_protocol::hex::encode as hex;

struct Session {
    created: Duration,
    approvals: u32,
    tab: String,
}

/// Whether `value` has the shape the page's script makes: 64 lower-case hex digits (32 random
/// bytes).
pub fn is_tab_value(value: &str) -> bool {
    value.len() == 64
        && value
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The live sessions.
#[derive(Default)]
pub struct Sessions {
    map: HashMap<String, Session>,
}

impl Sessions {
    /// None yet.
    pub fn new() -> Sessions {
        Sessions::default()
    }

    /// Makes a session bound to the signing-in tab's value and returns its ID.
    pub fn create(&mut self, now: Duration, tab: &str) -> std::io::Result<String> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
        let id = hex(&bytes);
        self.map
            .retain(|_, s| now.saturating_sub(s.created) < LIFETIME);
        while self.map.len() >= MAX_SESSIONS {
            let oldest = self
                .map
                .iter()
                .min_by_key(|(_, s)| s.created)
                .map(|(k, _)| k.clone());
            match oldest {
                Some(k) => self.map.remove(&k),
                None => break,
            };
        }
        self.map.insert(
            id.clone(),
            Session {
                created: now,
                approvals: 0,
                tab: tab.to_owned(),
            },
        );
        Ok(id)
    }

    /// Whether `id` is a live session.
    pub fn valid(&self, id: &str, now: Duration) -> bool {
        self.map
            .get(id)
            .is_some_and(|s| now.saturating_sub(s.created) < LIFETIME)
    }

    /// Whether `tab` is the value the session was bound to at sign-in (compared in constant
    /// time; an unknown session matches nothing).
    pub fn tab_matches(&self, id: &str, tab: &str) -> bool {
        use subtle::ConstantTimeEq as _;
        self.map.get(id).is_some_and(|s| {
            is_tab_value(tab) && bool::from(s.tab.as_bytes().ct_eq(tab.as_bytes()))
        })
    }

    /// Approvals made in this session so far.
    pub fn approvals(&self, id: &str) -> u32 {
        self.map.get(id).map(|s| s.approvals).unwrap_or(0)
    }

    /// Counts one approval; returns the new count.
    pub fn count_approval(&mut self, id: &str) -> u32 {
        match self.map.get_mut(id) {
            Some(s) => {
                s.approvals = s.approvals.saturating_add(1);
                s.approvals
            }
            None => 0,
        }
    }
}

/// The session cookie's value in a `Cookie` header, if any.
pub fn from_cookie_header(header: &str) -> Option<&str> {
    header.split(';').find_map(|pair| {
        let (name, value) = pair.trim().split_once('=')?;
        (name == COOKIE).then_some(value)
    })
}

/// The `Set-Cookie` value for a new session.
pub fn set_cookie(id: &str) -> String {
    format!("{COOKIE}={id}; HttpOnly; SameSite=Strict; Path=/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_are_random_expire_and_count() {
        let mut s = Sessions::new();
        let (tab_a, tab_b) = ("a".repeat(64), "b".repeat(64));
        let a = s.create(Duration::ZERO, &tab_a).unwrap();
        let b = s.create(Duration::ZERO, &tab_b).unwrap();
        assert!(s.tab_matches(&a, &tab_a));
        assert!(!s.tab_matches(&a, &tab_b), "another tab's value");
        assert!(!s.tab_matches(&a, ""), "no value");
        assert!(!s.tab_matches("nope", &tab_a));
        assert!(is_tab_value(&tab_a) && !is_tab_value("A".repeat(64).as_str()));
        assert_ne!(a, b);
        assert_eq!(a.len(), 64);
        assert!(s.valid(&a, Duration::from_secs(10)));
        assert!(!s.valid("nope", Duration::ZERO));
        assert_eq!(s.count_approval(&a), 1);
        assert_eq!(s.count_approval(&a), 2);
        assert_eq!(s.approvals(&b), 0);
        assert!(!s.valid(&a, LIFETIME));
        assert_ne!(tag(&a), tag(&b));
    }

    #[test]
    fn cookie_parsing() {
        let h = format!("x=1; {COOKIE}=abc; y=2");
        assert_eq!(from_cookie_header(&h), Some("abc"));
        assert_eq!(from_cookie_header("x=1"), None);
        let c = set_cookie("abc");
        assert!(c.contains("HttpOnly") && c.contains("SameSite=Strict") && c.contains("Path=/"));
    }
}
