//! Helpers shared by the cross-process tests.
#![forbid(unsafe_code)]
