//! `fleetwatch ask`'s prompt in a pseudo-terminal, as a person uses it: the up arrow recalls
//! the last question, Ctrl-C cancels the question in flight and keeps the session, and Ctrl-D
//! leaves with status 0. (The interactive demo's own terminal test is in `demo/tests`.)

use std::process::Stdio;
use std::time::{Duration, Instant};

use fleetwatch_e2e::KillOnDrop;
use fleetwatch_e2e::page::AssistantState;
use fleetwatch_sim::Fault;

/// The reads one keyword answer about the fleet makes start with the device list.
const LIST: &str = "get_devices_in_my_team";

fn list_calls(sim: &fleetwatch_sim::SimHandle) -> usize {
    sim.calls().iter().filter(|c| c.tool == LIST).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_prompt_recalls_history_cancels_with_ctrl_c_and_leaves_with_ctrl_d() {
    let sim = fleetwatch_sim::start(fleetwatch_sim::SimConfig::demo())
        .await
        .expect("simulator");
    let state = AssistantState::new();
    // Read-only: no proposing, so no executor is needed.
    std::fs::remove_file(state.path().join(fleetwatch::config::SETTINGS_FILE)).expect("settings");
    let serve = state
        .command()
        .env("FLEETWATCH_EPIPHAN_URL", sim.mcp_url())
        .env("FLEETWATCH_ALLOW_LOOPBACK_HTTP", "1")
        .env("FLEETWATCH_EPIPHAN_TOKEN", "normal-token")
        .env("FLEETWATCH_READ_TIMEOUT_SECS", "120")
        .env(
            "FLEETWATCH_EXECUTOR_SOCKET",
            state.path().join("no-executor.sock"),
        )
        .arg("serve")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("serve");
    let _serve = KillOnDrop(serve);
    let socket = state.path().join("chat.sock");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !socket.exists() {
        assert!(
            Instant::now() < deadline,
            "serve did not open its chat socket"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let mut command = state.command();
    command.args(["ask", "--no-ai"]).env("TERM", "xterm");
    let sim_for_prompt = sim.clone();
    tokio::task::spawn_blocking(move || {
        let sim = sim_for_prompt;
        let mut prompt = rexpect::session::spawn_command(command, Some(60_000)).expect("pty");
        prompt.exp_string("Ctrl-D quits").expect("greeting");
        prompt.exp_string("fleetwatch> ").expect("prompt");

        // A question, answered.
        prompt.send_line("which rooms are offline?").expect("send");
        // The answer's own words (the question's echo holds "offline" too).
        prompt.exp_string("Offline (").expect("an answer");
        prompt.exp_string("fleetwatch> ").expect("prompt again");
        let asked = list_calls(&sim);
        assert!(asked >= 1, "the question read the fleet");

        // The up arrow brings it back; Enter asks it again.
        prompt.send("\x1b[A").expect("up arrow");
        prompt.flush().expect("flush");
        prompt
            .exp_string("which rooms are offline?")
            .expect("the last question recalled");
        prompt.send("\r").expect("enter");
        prompt.flush().expect("flush");
        prompt.exp_string("Offline (").expect("answered again");
        prompt.exp_string("fleetwatch> ").expect("prompt again");
        assert!(list_calls(&sim) > asked, "the recalled question was asked");

        // A question that hangs: Ctrl-C cancels it and the prompt comes back.
        sim.set_fault(LIST, Fault::Hang);
        prompt.send_line("what is recording?").expect("send");
        prompt.exp_string("reading the fleet").expect("the spinner");
        prompt.send_control('c').expect("Ctrl-C");
        prompt.exp_string("(cancelled)").expect("cancelled");
        prompt
            .exp_string("fleetwatch> ")
            .expect("the session is kept");
        sim.clear_faults();
        prompt.send_line("which rooms are offline?").expect("send");
        prompt
            .exp_string("Offline (")
            .expect("answered after the cancel");
        prompt.exp_string("fleetwatch> ").expect("prompt again");

        // Ctrl-D leaves, with status 0.
        fleetwatch_e2e::leave_prompt(&mut prompt);
    })
    .await
    .expect("the terminal session");
    sim.shutdown().await;
}
