//! Fuzz target `passkey`: the property is [`fleetwatch_fuzz::checks::passkey`].
#![no_main]
#![forbid(unsafe_code)]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fleetwatch_fuzz::checks::passkey(data));
