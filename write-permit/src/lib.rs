//! The one value the MCP client core's write takes, in a crate of its own.
//!
//! The once-only write of `fleetwatch_epiphan::Session` takes a [`WritePermit`] by value. A crate can
//! name only the crates it declares, never one it reaches through another, so only a crate
//! that declares this one can make a permit and so write: the executor. The assistant links
//! the MCP client core for its reads, and a write from it fails to compile (its `compile_fail`
//! doc test shows it; `executor/tests/deps.rs` holds that the executor is the only declarer).
//! Inside the executor, the last check's `WriteTicket` is the only holder of a permit
//! (`executor/tests/one_write.rs`).
#![forbid(unsafe_code)]

/// Permission to send one write. Not `Clone`, `Copy` or `Default`: each write consumes one.
#[derive(Debug)]
#[must_use = "a permit does nothing until the write consumes it"]
pub struct WritePermit {
    _once: (),
}

impl WritePermit {
    /// A permit for one write. Only the executor's last check calls this.
    #[allow(clippy::new_without_default)] // a `Default` would make a permit out of nothing
    pub fn new() -> WritePermit {
        WritePermit { _once: () }
    }
}
