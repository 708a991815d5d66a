//! The Fleetwatch assistant: the unprivileged process that reads the fleet through guarded
//! read tools, runs the model loop, stores proposals and (later) serves the approval page. It
//! never holds the sandbox sign-in and has no code path that calls a write tool.
#![forbid(unsafe_code)]

/// `println!` for output that may go to a pipe: a reader that has gone (`… | head -1`,
/// `… | grep -q`) ends the program quietly with success, as a pipeline expects, instead of a
/// panic.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let mut out = std::io::stdout().lock();
        if let Err(e) = writeln!(out, $($arg)*).and_then(|()| out.flush())
            && e.kind() == std::io::ErrorKind::BrokenPipe
        {
            std::process::exit(0);
        }
    }};
}

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
pub mod notify;
pub mod page;
pub mod pending;
pub mod proposals;
pub mod reads;
pub mod serve;
pub mod service_env;
pub mod store;
