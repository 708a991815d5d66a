//! `fleetwatch demo --script` as a process, the way the README runs it: `fleetwatch` hands
//! over to `fleetwatch-demo` beside it, every step of the fixed scenario happens, and when it
//! exits no child process and no temporary folder is left. The interactive demo, driven
//! through a pseudo-terminal: it starts, answers a question, shows the page's address, and
//! Ctrl-D ends it the same way.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[path = "../../tests/src/binaries.rs"]
mod binaries;

fn demo_program() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_fleetwatch-demo"))
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap()
}

/// `fleetwatch`, next to `fleetwatch-demo`; built first when missing or older than the
/// sources (a filtered `cargo test -p fleetwatch-demo`).
fn fleetwatch() -> PathBuf {
    let built = binaries::workspace_binary(root(), "fleetwatch", "fleetwatch");
    assert_eq!(
        built.parent(),
        demo_program().parent(),
        "fleetwatch not next to fleetwatch-demo"
    );
    built
}

/// The demo runs the simulator and the executor from the folder it sits in; they are built
/// first when missing or older than the sources.
fn build_siblings() {
    let dir = demo_program().parent().unwrap().to_path_buf();
    for name in ["fleetwatch-sim", "fleetwatch-executor"] {
        let built = binaries::workspace_binary(root(), name, name);
        assert_eq!(
            built.parent(),
            Some(dir.as_path()),
            "{name} not next to fleetwatch-demo"
        );
    }
}

/// A link to (or copy of) `program` in `dir`.
fn place(program: &Path, dir: &Path) -> PathBuf {
    let to = dir.join(program.file_name().unwrap());
    if std::fs::hard_link(program, &to).is_err() {
        std::fs::copy(program, &to).unwrap();
    }
    to
}

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs `program demo --script` with `tmp` as its temporary folder and a generous deadline.
fn run_demo(program: &Path, tmp: &Path, extra_env: &[(&str, &str)]) -> Run {
    run_demo_with(program, tmp, &[], extra_env)
}

/// [`run_demo`] with more arguments after `demo --script`.
fn run_demo_with(program: &Path, tmp: &Path, args: &[&str], extra_env: &[(&str, &str)]) -> Run {
    let mut command = Command::new(program);
    command
        .args(["demo", "--script"])
        .args(args)
        .env("TMPDIR", tmp)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in extra_env {
        command.env(k, v);
    }
    let child = command.spawn().unwrap();
    let pid = child.id();
    // A watchdog, so a hang fails the test instead of stalling the run.
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if done_rx.recv_timeout(Duration::from_secs(600)).is_err() {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
        }
    });
    let output = child.wait_with_output().unwrap();
    let _ = done_tx.send(());
    watchdog.join().unwrap();
    Run {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// The process IDs the demo reported for its children ("ok (pid N, …").
fn child_pids(stdout: &str) -> Vec<u32> {
    stdout
        .lines()
        .filter_map(|l| l.split("ok (pid ").nth(1))
        .filter_map(|rest| rest.split([',', ')']).next())
        .filter_map(|n| n.trim().parse().ok())
        .collect()
}

/// True while a process with this ID runs one of the demo's programs.
fn demo_child_alive(pid: u32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|cmd| {
            let cmd = String::from_utf8_lossy(&cmd);
            cmd.contains("fleetwatch-sim") || cmd.contains("fleetwatch-executor")
        })
        .unwrap_or(false)
}

fn assert_nothing_left(tmp: &Path, pids: &[u32]) {
    let left: Vec<_> = std::fs::read_dir(tmp)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(
        left.is_empty(),
        "left behind in the temporary folder: {left:?}"
    );
    // Reaped children vanish at once; allow a moment for the kernel on a busy machine.
    let deadline = Instant::now() + Duration::from_secs(10);
    while pids.iter().any(|p| demo_child_alive(*p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    for pid in pids {
        assert!(!demo_child_alive(*pid), "child {pid} still runs");
    }
}

#[test]
fn the_scripted_demo_passes_every_step_and_leaves_nothing_behind() {
    build_siblings();
    let tmp = tempfile::tempdir().unwrap();
    // Settings meant for a real installation must not reach the demo: each of these would
    // break it if it did.
    let run = run_demo(
        &fleetwatch(),
        tmp.path(),
        &[
            (
                "FLEETWATCH_EPIPHAN_URL",
                "https://fleet.example.invalid/mcp",
            ),
            ("FLEETWATCH_STATE_DIR", "/nonexistent/fleetwatch-state"),
            ("FLEETWATCH_EXECUTOR_SOCKET", "/nonexistent/executor.sock"),
            ("FLEETWATCH_WRITE_DEVICE_IDS", "1111111111"),
            ("FLEETWATCH_ANTHROPIC_API_KEY", "sk-not-used"),
        ],
    );
    let out = &run.stdout;
    assert_eq!(run.code, Some(0), "stdout:\n{out}\nstderr:\n{}", run.stderr);
    assert!(
        !out.contains("page: POST /confirm → "),
        "a person-bound change takes no Confirm step on the assistant's page:\n{out}"
    );
    for line in [
        "The model in this demo is a small rule-based stand-in, not AI",
        "starting the simulated Epiphan fleet (normal and sandbox teams)… ok (pid ",
        "starting the offline model stand-in (rule-based, not AI)… ok (pid ",
        "starting fleetwatch-executor (its own folder, socket and sandbox sign-in)… ok (pid ",
        "Approval page: http://localhost:",
        "operator> what needs attention?",
        "[offline demo model — rule-based, not AI]",
        "operator> ¿qué salas están grabando?",
        "«Sala de Pruebas 1»",
        "operator> start recording in Test Room A",
        "Proposal #1 is waiting for a person to approve it at http://localhost:",
        "proposal #1 stored, pending; the simulator recorded no write",
        "page: POST /login without an Origin header → 403",
        "page: POST /login with the secret → 303, session cookie set",
        "fleetwatch-confirm enrol --person demo-1 --name \"Demo operator (stand-in passkey)\" → a one-shot page at http://localhost:",
        "fleetwatch-confirm enrol --person demo-2 --name \"Second demo operator (stand-in passkey)\" → a one-shot page at http://localhost:",
        "enrolment page: the stand-in makes the passkey and proves it over the second challenge → 200, \"Enrolled.",
        "terminal: the approver line on standard output, fingerprint ",
        "(person demo-1)",
        "(person demo-2)",
        "… | fleetwatch-executor approvers add - → installed, fingerprint ",
        "executor: 2 persons' passkeys enrolled; a calm change needs 1 person, a disruptive change needs 2",
        "Execute for proposal #1, signed by the assistant's key, with no passkey",
        "executor: refused (passkey_required)",
        "simulator: no write",
        "This executor requires your passkey",
        "page: POST /approve → 200, hands the tab to the confirm page",
        "): 200, \"Proposal #1: start or stop recording\"",
        "Recording in “Test Room A”: stopped → recording",
        "confirm page: the passkey \"Demo operator (stand-in passkey)\" answers → page: POST /confirmed → 200, \"Done\"",
        "simulator: write recorded on team sandbox: batch_recording {\"action\":\"start\"",
        "proposal #1: executed",
        "page: POST /confirmed with the same passkey answer again → 409",
        "operator> reboot Lab Bench 2",
        // The rooms are named once, on the confirm page: the card's Approve hands over.
        "page: POST /approve → 200, hands the tab to the confirm page",
        "This change interrupts what is happening in “Lab Bench 2”.",
        "confirm page: the person presses \"Interrupt “Lab Bench 2” (",
        ") to reboot the recorder: confirm with my passkey\"",
        "confirm page: the person presses \"Start recording in “Test Room A” (",
        "confirm page: the passkey \"Demo operator (stand-in passkey)\" answers → page: POST /confirmed → 200, \"Your approval is kept\"",
        "Approved by Demo operator (stand-in passkey), waiting for a second person",
        "simulator: nothing written yet",
        "page: GET / → 200, Approved by Demo operator (stand-in passkey), waiting for a second person",
        "confirm page: the passkey \"Demo operator (stand-in passkey)\" answers → page: POST /confirmed → 409",
        "a passkey counts once",
        "confirm page: the passkey \"Second demo operator (stand-in passkey)\" answers → page: POST /confirmed → 200, \"Done\"",
        "simulator: write recorded on team sandbox: batch_reboot",
        "proposal #2: executed, approved by both stand-in passkeys",
        "operator> reboot Lab Bench 1",
        "confirm page: the passkey \"Second demo operator (stand-in passkey)\" answers → page: POST /confirmed → 200, \"Nothing ran\"",
        "An event starts in a target room in",
        "proposal #3: refused by the executor",
        "fleetwatch audit verify: intact",
        "fleetwatch audit verify --against <executor heads>: anchors intact",
        "fleetwatch-executor audit verify --against <assistant heads>: audit chain OK",
        "anchors OK: all",
        "fleetwatch-executor receipt 1 > receipt-1.json",
        "fleetwatch-confirm verify: Verified: the executor says this change was DONE.",
        "Change: batch_recording",
        "the same receipt with \"done\" edited to \"failed\": NOT VERIFIED: ",
        "FAILED: The executor's statement is not signed",
        "operator> stop recording in Test Room A",
        "Proposal #4 is waiting for a person to approve it at http://localhost:",
        "$ fleetwatch pending",
        "#4  stop recording in “Test Room A”",
        "asked by ",
        "; expires ",
        "$ fleetwatch deny 4 --reason \"the keynote runs until 11:00; ask again after it\"",
        "Proposal #4 denied. Nothing ran.",
        "$ fleetwatch pending --watch, open in another terminal, printed: #4 was denied: “the keynote runs until 11:00; ask again after it”. Nothing changed.",
        "the asking prompt prints: #4 was denied: “the keynote runs until 11:00; ask again after it”. Nothing changed.",
        "simulator: no new write",
        "Result: all 13 steps happened as expected.",
    ] {
        assert!(out.contains(line), "missing {line:?} in:\n{out}");
    }
    // Without a terminal the secret goes to a private file; only its path is printed.
    assert!(out.contains("its secret is in "), "{out}");
    let pids = child_pids(out);
    assert_eq!(pids.len(), 4, "four children reported in:\n{out}");
    assert_nothing_left(tmp.path(), &pids);
}

#[test]
fn the_scripted_demo_passes_every_step_on_the_chat_completions_api() {
    build_siblings();
    let tmp = tempfile::tempdir().unwrap();
    let run = run_demo_with(&fleetwatch(), tmp.path(), &["--model-api", "openai"], &[]);
    let out = &run.stdout;
    assert_eq!(run.code, Some(0), "stdout:\n{out}\nstderr:\n{}", run.stderr);
    for line in [
        "starting the offline model stand-in (rule-based, not AI) on the Chat Completions API… ok (pid ",
        "Proposal #1 is waiting for a person to approve it at http://localhost:",
        "proposal #2: executed, approved by both stand-in passkeys",
        "the asking prompt prints: #4 was denied: ",
        "Result: all 13 steps happened as expected.",
    ] {
        assert!(out.contains(line), "missing {line:?} in:\n{out}");
    }
    let pids = child_pids(out);
    assert_eq!(pids.len(), 4, "four children reported in:\n{out}");
    assert_nothing_left(tmp.path(), &pids);
}

#[test]
fn without_its_sibling_programs_the_demo_says_what_to_build_and_leaves_nothing() {
    // fleetwatch alone in a folder: no demo program beside it.
    let lonely = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let program = place(&fleetwatch(), lonely.path());
    let tmp = tempfile::tempdir().unwrap();
    let run = run_demo(&program, tmp.path(), &[]);
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stderr
            .contains("fleetwatch-demo was not found next to fleetwatch")
            && run.stderr.contains("cargo build --bins"),
        "{}",
        run.stderr
    );
    assert_nothing_left(tmp.path(), &[]);

    // fleetwatch and the demo program, but no simulator or executor.
    place(&demo_program(), lonely.path());
    let run = run_demo(&program, tmp.path(), &[]);
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stderr
            .contains("fleetwatch-sim was not found next to fleetwatch-demo")
            && run.stderr.contains("cargo build --bins"),
        "{}",
        run.stderr
    );
    assert_nothing_left(tmp.path(), &[]);
}

#[test]
fn the_interactive_demo_answers_in_a_terminal_and_ctrl_d_leaves_nothing() {
    use rexpect::process::wait::WaitStatus;
    build_siblings();
    let tmp = tempfile::tempdir().unwrap();
    let mut command = Command::new(fleetwatch());
    command
        .arg("demo")
        .env("TMPDIR", tmp.path())
        .env("TERM", "xterm");
    let mut demo = rexpect::session::spawn_command(command, Some(90_000)).unwrap();
    let started = demo.exp_string("Approval page: http://localhost:").unwrap();
    let mut seen = started.clone();
    seen.push_str(&demo.exp_string("Ctrl-C or Ctrl-D ends the demo").unwrap());
    seen.push_str(&demo.exp_string("demo> ").unwrap());
    demo.send_line("what needs attention?").unwrap();
    // The pseudo-terminal reader takes bytes one by one, so only ASCII is looked for.
    let answer = demo.exp_string("rule-based, not AI]").unwrap();
    seen.push_str(&answer);
    seen.push_str(&demo.exp_string("demo> ").unwrap());
    demo.send_control('d').unwrap();
    seen.push_str(&demo.exp_string("removing the working folder").unwrap());
    seen.push_str(&demo.exp_eof().unwrap());
    let status = demo.process.wait().unwrap();
    assert!(
        matches!(status, WaitStatus::Exited(_, 0)),
        "{status:?}\n{seen}"
    );
    // With a terminal, the page's secret is shown for the person to type.
    assert!(seen.contains("Page secret: "), "{seen}");
    let pids = child_pids(&started);
    assert_eq!(pids.len(), 4, "four children reported in:\n{started}");
    assert_nothing_left(tmp.path(), &pids);
}
