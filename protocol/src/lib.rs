//! The contract between the Fleetwatch assistant and the executor.
//!
//! Everything both processes must judge identically lives here, once: canonical JSON
//! ([`canonical`]), the signed approval ([`claims`]), the operator's passkey on it ([`passkey`]), the socket messages ([`wire`]), the tool
//! registry ([`policy`]), the fleet-state model and fingerprint ([`fleet`]), the ID patterns
//! ([`ids`]), the redaction rules ([`redact`]) and how each audit chain anchors the other
//! ([`anchor`]). This crate does no I/O and runs no async
//! runtime, so both sides can call it from anywhere and a reviewer can read it in isolation.
#![forbid(unsafe_code)]

pub mod anchor;
pub mod canonical;
pub mod claims;
pub mod fleet;
pub mod ids;
pub mod passkey;
pub mod policy;
pub mod redact;
pub mod refusal;
pub mod wire;

pub use canonical::Canonical;
pub use refusal::Refusal;
