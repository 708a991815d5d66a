//! Fuzz target `frame`: the property is [`fleetwatch_fuzz::checks::frame`].
#![no_main]
#![forbid(unsafe_code)]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fleetwatch_fuzz::checks::frame(data));
