//! The contract between the Fleetwatch assistant and the executor.
//!
//! Everything both processes must judge identically lives here, once: canonical JSON
//! ([`canonical`]), the signed approval ([`claims`]), the operator's passkey on it ([`passkey`]),
//! the socket messages ([`wire`]), the tool
//! registry ([`policy`]) and the JSON Schema subset its entries use ([`schema`]), the
//! fleet-state model and fingerprint ([`fleet`]), the ID patterns ([`ids`]), the audit chain's
//! row format and verifier
//! ([`audit`]) and how each audit chain anchors the other ([`anchor`]), and the small shared
//! pieces both sides need spelled once: [`hex`] and the [`secret::Secret`] wrapper. This crate
//! does no I/O and runs no async runtime, so both sides can call it from anywhere and a
//! reviewer can read it in isolation.
#![forbid(unsafe_code)]

pub mod anchor;
pub mod audit;
pub mod canonical;
pub mod claims;
pub mod fleet;
pub mod hex;
pub mod ids;
pub mod lenient;
pub mod passkey;
pub mod policy;
pub mod receipt;
pub mod refusal;
pub mod schema;
pub mod secret;
pub mod shown;
pub mod wire;

pub use canonical::Canonical;
pub use refusal::Refusal;
