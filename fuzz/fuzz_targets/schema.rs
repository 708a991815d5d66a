//! Fuzz target `schema`: the property is [`fleetwatch_fuzz::checks::schema`].
#![no_main]
#![forbid(unsafe_code)]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fleetwatch_fuzz::checks::schema(data));
