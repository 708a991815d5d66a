//! `fleetwatch-confirm`: where a person is bound (DESIGN §9): `enrol`, the administrator's
//! one-shot enrolment page, and `serve`, the confirm page; and `verify`, which checks a
//! change's receipt from public inputs alone (DESIGN §11). It serves pages on the loopback
//! addresses only, keeps nothing, holds no key and no sign-in, and links the protocol crate to
//! check what a browser's passkey returned.
#![forbid(unsafe_code)]

pub mod enrol;
pub mod http;
pub mod lang;
pub mod serve;
pub mod verify;
pub mod view;
