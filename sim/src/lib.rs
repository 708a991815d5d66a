//! Fleetwatch's simulator of the outside world.
#![forbid(unsafe_code)]
