//! The Fleetwatch executor.
#![forbid(unsafe_code)]
