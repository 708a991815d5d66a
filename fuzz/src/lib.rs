//! The properties the fuzz targets check, one function per byte boundary. The same file is
//! compiled into `fleetwatch-protocol`'s test suite (`protocol/tests/fuzz_regressions.rs`), so a
//! crasher found here replays there as a plain test and the property test floor checks exactly
//! what the fuzzer checks.
#![forbid(unsafe_code)]

pub mod checks;
