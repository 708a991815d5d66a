//! `fleetwatch demo`: the whole system on one machine, with no account and no key.
//!
//! The pieces, in start order:
//! 1. `fleetwatch-sim serve --demo`: a simulated Epiphan MCP server with a normal and a sandbox
//!    team (child process);
//! 2. `fleetwatch-sim model --offline`: the rule-based stand-in for the model API (child
//!    process), so the assistant's real HTTP model loop runs;
//! 3. the real `fleetwatch-executor` (child process) with its own state folder, socket, policy
//!    copy, approver key file and sandbox token slot;
//! 4. in this process, what `fleetwatch serve` runs: the chat engine, the chat socket and the
//!    approval page, from the assistant library;
//! 5. the terminal chat, or with `--script` a fixed scenario that checks every step.
//!
//! This crate is not part of the product. `fleetwatch demo` runs its binary, `fleetwatch-demo`,
//! from the folder `fleetwatch` is in, so the production binary carries no demo code, no
//! stand-in wiring and no HTML reader. The simulator runs as its own binary for the same
//! reason.
//!
//! Hazards:
//! * Nothing may be left behind. Child processes and the temporary folder belong to one guard
//!   ([`leftovers::Leftovers`]) whose `Drop` stops and removes them, so a returned error, a
//!   panic and Ctrl-C all end the same way.
//! * The demo never reads the caller's `FLEETWATCH_*` variables (except the approval page's
//!   port for the interactive demo), and its children start with a cleared environment: a
//!   variable meant for a real installation must not point the demo at a real fleet, a real
//!   executor or a real state folder.
//! * Children stay in this process's process group, so a Ctrl-C typed at the terminal reaches
//!   them too and a closed terminal takes them down with the demo.
#![forbid(unsafe_code)]

mod chat;
mod inprocess;
mod leftovers;
mod operator;
pub mod page_html;
mod pieces;
mod script;

use std::sync::Arc;

use leftovers::Leftovers;

/// The shipped tool policy. The demo installs this one copy for both sides, so their digests
/// agree wherever the binary is run from.
const POLICY: &str = include_str!("../../tool_policy.yaml");

/// What the model is, said before anything else.
const STAND_IN_NOTICE: &str = "The model in this demo is a small rule-based stand-in, not AI: it \
     understands a fixed set of questions and requests in English and Spanish, reads the fleet \
     through the same guarded tools and proposes changes the way a model would.";

/// Questions to try, printed at the prompt.
const TRY: &[&str] = &[
    "what needs attention?",
    "what's offline?",
    "¿qué salas están grabando?",
    "start recording in Test Room A",
    "stop the stream in Demo Studio",
    "reboot Lab Bench 2",
    "reboot Lab Bench 1   (an event starts soon: the executor refuses it)",
];

/// Resolves on Ctrl-C, SIGTERM or SIGHUP.
async fn stop_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate());
    let mut hup = signal(SignalKind::hangup());
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        Some(()) = async { term.as_mut().ok()?.recv().await } => {}
        Some(()) = async { hup.as_mut().ok()?.recv().await } => {}
    }
}

/// Runs the demo; returns the exit code.
pub async fn run(script: bool, api: fleetwatch::model::ModelApi) -> i32 {
    let mut leftovers = match Leftovers::new() {
        Ok(l) => l,
        Err(e) => {
            eprintln!("fleetwatch demo: cannot make a temporary folder: {e}");
            return 1;
        }
    };
    if script {
        println!("Fleetwatch demo, scripted: a fixed scenario against the simulated fleet.");
    } else {
        println!("Fleetwatch demo: the whole system on this machine. No account, no key.");
    }
    println!("{STAND_IN_NOTICE}");
    println!(
        "Working folder: {} (removed when the demo ends)",
        leftovers.folder().display()
    );
    println!();

    let stopped = stop_signal();
    tokio::pin!(stopped);
    let started = tokio::select! {
        started = inprocess::start(&mut leftovers, script, api) => started,
        () = &mut stopped => Err("interrupted while starting".to_owned()),
    };
    let running = match started {
        Ok(running) => running,
        Err(e) => {
            eprintln!("fleetwatch demo: {e}");
            drop(leftovers);
            return 1;
        }
    };
    println!();

    let code = if script {
        tokio::select! {
            code = script::scenario(&running, &leftovers) => code,
            () = &mut stopped => {
                eprintln!("fleetwatch demo: interrupted");
                1
            }
        }
    } else {
        let operators = tokio::select! {
            operators = stand_in_operators(&running) => operators,
            () = &mut stopped => Err("interrupted while starting".to_owned()),
        };
        match operators {
            Ok(operators) => {
                print_try();
                tokio::select! {
                    code = chat::chat(Arc::clone(&running.assistant), operators) => code,
                    () = &mut stopped => 0,
                }
            }
            Err(e) => {
                eprintln!("fleetwatch demo: {e}");
                1
            }
        }
    };

    running.stop().await;
    println!("Stopping: executor, model stand-in, simulator; removing the working folder.");
    drop(leftovers);
    code
}

/// Shows the page's secret (on a terminal only), then enrols and installs the stand-in
/// passkeys the demo's own operators approve with.
async fn stand_in_operators(running: &inprocess::Running) -> Result<operator::Operators, String> {
    use std::io::IsTerminal as _;
    let file = running
        .page
        .secret_file
        .clone()
        .ok_or_else(|| "the page secret was not written to a file".to_owned())?;
    let secret = std::fs::read_to_string(&file)
        .map_err(|e| format!("{}: {e}", file.display()))?
        .trim()
        .to_owned();
    if std::io::stdout().is_terminal() {
        println!("Page secret: {secret}");
    }
    println!(
        "Passkeys: the demo makes two software passkeys, stand-ins for two operators' security \
         keys, enrols them with fleetwatch-confirm enrol and installs them on its executor:"
    );
    let operators = operator::Operators::start(running, &secret).await?;
    println!(
        "A calm change needs one person's passkey, a disruptive one two people's. Your browser \
         cannot hold the stand-ins: type `approve N` here to approve proposal N with them, or \
         enrol your own passkey in another terminal with `{} enrol --person you --name \
         'Your name' --approvers {}` and type `install <the line it prints>` here.",
        running.confirm_program.display(),
        running.executor_approvers.display()
    );
    println!();
    Ok(operators)
}

fn print_try() {
    println!("Try (the model is rule-based, so it knows only requests like these):");
    for q in TRY {
        println!("  {q}");
    }
    println!(
        "A proposal waits on the approval page until it is approved or denied there (or with \
         `approve N` here, by the stand-in operators); nothing changes before that."
    );
    println!("Ctrl-C or Ctrl-D ends the demo and removes everything it made.");
    println!();
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleetwatch_protocol::policy::Policy;

    #[test]
    fn the_shipped_policy_is_embedded() {
        let policy = Policy::from_yaml(POLICY).unwrap();
        assert!(policy.propose_entry("batch_recording").is_some());
        assert!(policy.propose_entry("batch_reboot").is_some());
    }
}
