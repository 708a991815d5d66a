//! The Fleetwatch assistant.
#![forbid(unsafe_code)]
