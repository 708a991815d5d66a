//! The Fleetwatch assistant: the unprivileged process that reads the fleet through guarded
//! read tools, runs the model loop, stores proposals and (later) serves the approval page. It
//! never holds the sandbox sign-in and has no code path that calls a write tool.
#![forbid(unsafe_code)]

pub mod fleet_tools;
pub mod grants;
pub mod grounding;
pub mod keyword;
/// Language detection and question words, shared with the simulator's offline model.
pub use fleetwatch_words::lang;
pub mod snapshot;

pub mod datablock;
pub mod model;
pub mod prompt;
pub mod toolspec;

pub mod answer;
pub mod ask;
pub mod audit_show;
pub mod chat;
pub mod cli;
pub mod config;
pub mod doctor;
pub mod executor_client;
pub mod keys;
pub mod login;
pub mod page;
pub mod pending;
pub mod proposals;
pub mod reads;
pub mod serve;
pub mod store;
