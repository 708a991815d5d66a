//! Slowing down wrong secret entries. Each client address gets three free tries; after that a
//! wait that doubles with each further wrong entry (2 s, 4 s, … at most 60 s). While an
//! address is waiting its entries are answered "too many tries" without being checked, and
//! they do not lengthen the wait — otherwise a script hammering the form would lock the
//! operator out for good. A right entry clears the address. A much higher ceiling counts wrong
//! entries from every address together, so spreading guesses over 127.0.0.0/8 gains nothing.
//!
//! Time comes from a [`Clock`] so tests can step through the schedule without sleeping.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Wrong entries allowed per address before any wait.
pub const FREE_TRIES: u32 = 3;
/// The longest wait for one address.
pub const MAX_WAIT: Duration = Duration::from_secs(60);
/// Wrong entries from all addresses together allowed within [`GLOBAL_WINDOW`].
pub const GLOBAL_MAX: usize = 30;
/// The window of the global ceiling.
pub const GLOBAL_WINDOW: Duration = Duration::from_secs(60);
/// Addresses remembered at most (loopback only, so this is a memory bound, not a policy).
const MAX_ADDRESSES: usize = 4096;

/// A monotonic clock: time since some fixed start.
pub trait Clock: Send + Sync {
    /// Now.
    fn now(&self) -> Duration;
}

/// The real monotonic clock.
pub struct SystemClock(Instant);

impl SystemClock {
    /// Starting now.
    pub fn new() -> SystemClock {
        SystemClock(Instant::now())
    }
}

impl Default for SystemClock {
    fn default() -> Self {
        SystemClock::new()
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Duration {
        self.0.elapsed()
    }
}

/// A clock that moves only when told (tests).
#[derive(Default)]
pub struct ManualClock(Mutex<Duration>);

impl ManualClock {
    /// Starting at zero.
    pub fn new() -> ManualClock {
        ManualClock::default()
    }

    /// Moves time forward.
    pub fn advance(&self, by: Duration) {
        let mut now = self.0.lock().unwrap_or_else(|p| p.into_inner());
        *now += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Duration {
        *self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Whether an entry may be checked now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// Check it.
    Open,
    /// Answer "too many tries" without checking; this long remains.
    Wait(Duration),
}

#[derive(Debug, Clone, Copy, Default)]
struct Entry {
    failures: u32,
    until: Duration,
}

/// The wait that starts after the `failures`-th consecutive wrong entry.
pub fn wait_after(failures: u32) -> Duration {
    if failures < FREE_TRIES {
        return Duration::ZERO;
    }
    // 3rd wrong → 2 s, 4th → 4 s, 5th → 8 s … capped.
    let exponent = (failures - FREE_TRIES + 1).min(6);
    Duration::from_secs(1u64 << exponent).min(MAX_WAIT)
}

/// Per-address and global state.
#[derive(Default)]
pub struct Throttle {
    addresses: HashMap<IpAddr, Entry>,
    global: VecDeque<Duration>,
}

impl Throttle {
    /// Empty.
    pub fn new() -> Throttle {
        Throttle::default()
    }

    fn prune_global(&mut self, now: Duration) {
        while self
            .global
            .front()
            .is_some_and(|t| now.saturating_sub(*t) >= GLOBAL_WINDOW)
        {
            self.global.pop_front();
        }
    }

    /// Whether an entry from `ip` may be checked at `now`. Never records anything.
    pub fn gate(&mut self, ip: IpAddr, now: Duration) -> Gate {
        self.prune_global(now);
        let own = self
            .addresses
            .get(&ip)
            .map(|e| e.until.saturating_sub(now))
            .unwrap_or_default();
        let global = if self.global.len() >= GLOBAL_MAX {
            self.global
                .front()
                .map(|first| (*first + GLOBAL_WINDOW).saturating_sub(now))
                .unwrap_or_default()
        } else {
            Duration::ZERO
        };
        let wait = own.max(global);
        if wait.is_zero() {
            Gate::Open
        } else {
            Gate::Wait(wait)
        }
    }

    /// Records a wrong entry that was checked; returns the wait that now applies.
    pub fn failure(&mut self, ip: IpAddr, now: Duration) -> Duration {
        if self.addresses.len() >= MAX_ADDRESSES && !self.addresses.contains_key(&ip) {
            self.addresses.retain(|_, e| e.until > now);
        }
        let entry = self.addresses.entry(ip).or_default();
        entry.failures = entry.failures.saturating_add(1);
        let wait = wait_after(entry.failures);
        entry.until = now + wait;
        self.global.push_back(now);
        self.prune_global(now);
        wait
    }

    /// A right entry clears the address.
    pub fn success(&mut self, ip: IpAddr) {
        self.addresses.remove(&ip);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, 1));
    const B: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, 2));

    #[test]
    fn schedule_doubles_and_caps() {
        let waits: Vec<u64> = (1..=10).map(|n| wait_after(n).as_secs()).collect();
        assert_eq!(waits, vec![0, 0, 2, 4, 8, 16, 32, 60, 60, 60]);
    }

    #[test]
    fn waiting_entries_are_not_checked_and_do_not_lengthen_the_wait() {
        let mut t = Throttle::new();
        let s = Duration::from_secs;
        for _ in 0..2 {
            assert_eq!(t.gate(A, s(0)), Gate::Open);
            assert_eq!(t.failure(A, s(0)), s(0));
        }
        assert_eq!(t.gate(A, s(0)), Gate::Open);
        assert_eq!(t.failure(A, s(0)), s(2));
        // Asking again during the wait changes nothing.
        for _ in 0..50 {
            assert_eq!(t.gate(A, s(1)), Gate::Wait(s(1)));
        }
        assert_eq!(t.gate(B, s(1)), Gate::Open, "another address is not slowed");
        assert_eq!(t.gate(A, s(2)), Gate::Open);
        assert_eq!(t.failure(A, s(2)), s(4));
        assert_eq!(t.gate(A, s(6)), Gate::Open);
        t.success(A);
        assert_eq!(t.gate(A, s(6)), Gate::Open);
        assert_eq!(t.failure(A, s(6)), s(0), "a right entry reset the count");
    }

    #[test]
    fn global_ceiling_slows_everyone() {
        let mut t = Throttle::new();
        let s = Duration::from_secs;
        for i in 0..GLOBAL_MAX {
            let ip = IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 1, u8::try_from(i).unwrap()));
            assert_eq!(t.gate(ip, s(0)), Gate::Open);
            t.failure(ip, s(0));
        }
        assert_eq!(t.gate(B, s(10)), Gate::Wait(s(50)));
        assert_eq!(t.gate(B, s(60)), Gate::Open);
    }
}
