//! Fuzz target `policy`: the property is [`fleetwatch_fuzz::checks::policy`].
#![no_main]
#![forbid(unsafe_code)]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fleetwatch_fuzz::checks::policy(data));
