//! `fleetwatch-confirm`: argument parsing only; the work is in the library.
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;

use fleetwatch_confirm::enrol::{self, Options};
use fleetwatch_confirm::serve;

const HELP: &str = "\
fleetwatch-confirm: where a person is bound to a Fleetwatch approval. It serves pages on the
loopback addresses only, keeps nothing, and holds no key, sign-in or database.

Usage: fleetwatch-confirm <COMMAND>

Commands:
  enrol   Enrol a person's passkey on a one-shot page; the approver line is printed here only
  serve   Serve the confirm page: shows a change from its signed claims alone and asks the
          passkey for exactly those bytes
  verify  Check a change's receipt from public inputs alone and say the change in words

Options:
  -h, --help  Print help
";

const ENROL_HELP: &str = "\
Enrol a person's passkey. Serves a one-shot page on 127.0.0.1 and ::1 at
http://localhost:PORT/enrol/TOKEN (the address is printed here only), open ten minutes, for
one attempt. The page makes a passkey (RP ID localhost, user verification required, ES256 or
Ed25519) and proves it over a second challenge. The approver line goes to standard output and
its fingerprint to standard error, nowhere else. Install it with:

    fleetwatch-confirm enrol --person ana --name 'Ana Gómez' \\
        | sudo fleetwatch-executor approvers add -

Exit status: 0 when a passkey was enrolled and its line printed; 1 otherwise (refused, ten
minutes passed, or bad arguments).

Usage: fleetwatch-confirm enrol --person ID --name NAME [--approvers PATH] [--port PORT]

Options:
      --person ID       The person's short ID: 1 to 32 of a-z, 0-9, '.', '_', '-'. A person's
                        second passkey (a backup key) uses the same ID and counts once
      --name NAME       The display name approvals show (at most 64 characters)
      --approvers PATH  The executor's approver file, read when readable so the browser does
                        not make a passkey that is already enrolled [default:
                        /etc/fleetwatch/approvers.pub]
      --port PORT       Listen on this port instead of one the kernel chooses
  -h, --help            Print help
";

const SERVE_HELP: &str = "\
Serve the confirm page on 127.0.0.1 and ::1 (IPv4 alone, said at start, where the host has no
IPv6 loopback). The approval page sends the tab here with the exact claims bytes; this page
decodes them with the protocol crate and shows the change from them alone (the tool and every
argument, each room's signed name and state, the effect, whether it is disruptive, the proposal
number and the expiry), computes the passkey challenge itself, and posts the assertion back to
the approval page's origin from --page-origin, never from the request. It keeps nothing.

Started by systemd with listening sockets (LISTEN_FDS, as fleetwatch-confirm.socket passes
them), it serves on those instead of binding --port; each must be on a loopback address.

Usage: fleetwatch-confirm serve [--port PORT] [--page-origin ORIGIN] [--policy PATH]

Options:
      --port PORT           The port [default: 8768]
      --page-origin ORIGIN  The approval page's origin, where assertions go [default:
                            http://localhost:8767]
      --policy PATH         The tool policy, for whether a change is disruptive [default:
                            /etc/fleetwatch/tool_policy.yaml]
  -h, --help                Print help
";

const VERIFY_HELP: &str = "\
Check the receipt of one change (`fleetwatch-executor receipt N > FILE`) with public inputs
alone, trusting neither the assistant nor the executor: the assistant's signature over the
claims bytes, every passkey assertion over their challenge (from the approver file's lines),
the quorum of distinct persons the executor required, the executor's statement signed with
its receipt key and every part of the evidence it binds (signatures, assertions, approver
lines, audit rows), and the audit rows against their chain hashes; with --policy, the policy
entry the claims were approved under.

The first line is the verdict: `Verified: the executor says this change was DONE` (or FAILED,
or its result UNKNOWN), or `NOT VERIFIED`. Then the change in words: the tool and its
arguments, the rooms, the persons who approved and when, the origin each passkey answered on,
the outcome. Text from the receipt is shown with hidden and control characters spelled out.

Exit status: 0 when the receipt verifies and the change was done; 2 when it verifies and the
change failed; 3 when it verifies and the result is unknown; 1 when it does not verify, each
failed check said in its own sentence.

Usage: fleetwatch-confirm verify RECEIPT --receipt-key KEY [--approvers PATH] [--policy PATH]
                                 [--expect-origin ORIGIN]... [--json]

Options:
      --receipt-key KEY         The executor's public receipt key, base64, as
                                `fleetwatch-executor receipt --key` prints it
      --approvers PATH          The approver file that held the approvers [default:
                                /etc/fleetwatch/approvers.pub]
      --policy PATH             The tool policy, to check the entry the claims were approved
                                under
      --expect-origin ORIGIN    An origin the passkeys should have answered on (repeatable);
                                an assertion made on any other fails the verification
      --json                    Print the result as one JSON object (verified, status,
                                verdict, outcome, failures, change, passkey_origins,
                                accepted_origins); the exit status is the same
  -h, --help                    Print help
";

fn fail(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("fleetwatch-confirm: {message}\nRun `fleetwatch-confirm --help` for usage.");
    ExitCode::FAILURE
}

/// Writes `text` and a newline to standard output. A reader that has gone (`… | head -1`)
/// ends the program quietly, with `status`: the exit status the output was going to end with,
/// so a closed pipe never turns a failed verification into a success.
fn say(text: &str, status: i32) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    if let Err(e) = writeln!(out, "{text}").and_then(|()| out.flush())
        && e.kind() == std::io::ErrorKind::BrokenPipe
    {
        std::process::exit(status);
    }
}

fn main() -> ExitCode {
    match parse() {
        Ok(Parsed::Help(text)) => {
            say(text.trim_end_matches('\n'), 0);
            ExitCode::SUCCESS
        }
        Ok(Parsed::Enrol(options)) => {
            if enrol::run(&options) {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Ok(Parsed::Verify {
            receipt,
            key,
            approvers,
            policy,
            expect_origins,
            json,
        }) => {
            let read = |path: &PathBuf| {
                std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
            };
            let texts = (|| {
                Ok::<_, String>((
                    read(&receipt)?,
                    read(&approvers)?,
                    policy.as_ref().map(read).transpose()?,
                ))
            })();
            let (receipt, approvers, policy) = match texts {
                Ok(t) => t,
                Err(e) => return fail(e),
            };
            let report = fleetwatch_confirm::verify::verify(&fleetwatch_confirm::verify::Inputs {
                receipt: &receipt,
                approvers: &approvers,
                receipt_key: &key,
                policy: policy.as_deref(),
                expect_origins: &expect_origins,
            });
            let status = report.status();
            if json {
                say(&report.to_json(), status.into());
                return ExitCode::from(status);
            }
            // The verdict first; nothing from the receipt can come before it. Every line is
            // passed through the readable form once more, so no control character from the
            // receipt reaches the terminal whatever a sentence quoted.
            let mut lines = vec![report.verdict()];
            if report.verified() {
                lines.extend(report.words.iter().cloned());
            } else {
                lines.extend(report.failures.iter().map(|f| format!("FAILED: {f}")));
                if !report.words.is_empty() {
                    lines.push("What the receipt claims (not proven):".to_owned());
                    lines.extend(report.words.iter().map(|w| format!("  {w}")));
                }
            }
            for line in &lines {
                say(
                    &fleetwatch_protocol::shown::readable(line, usize::MAX),
                    status.into(),
                );
            }
            ExitCode::from(status)
        }
        Ok(Parsed::Serve(options)) => match serve::run(&options) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("fleetwatch-confirm: {e}");
                ExitCode::FAILURE
            }
        },
        Err(message) => fail(message),
    }
}

/// What the command line asks for.
enum Parsed {
    /// Print this help.
    Help(&'static str),
    /// Run an enrolment.
    Enrol(Options),
    /// Serve the confirm page.
    Serve(serve::Options),
    /// Check a receipt.
    Verify {
        /// The receipt file.
        receipt: PathBuf,
        /// The public receipt key, base64.
        key: String,
        /// The approver file.
        approvers: PathBuf,
        /// The tool policy, when given.
        policy: Option<PathBuf>,
        /// Origins the passkeys should have answered on.
        expect_origins: Vec<String>,
        /// The result as JSON.
        json: bool,
    },
}

fn parse() -> Result<Parsed, String> {
    use lexopt::prelude::*;
    let mut parser = lexopt::Parser::from_env();
    let mut command: Option<String> = None;
    let mut person = None;
    let mut name = None;
    let mut approvers = PathBuf::from(enrol::DEFAULT_APPROVERS);
    let mut port = None;
    let mut page_origin = serve::DEFAULT_PAGE_ORIGIN.to_owned();
    let mut policy: Option<PathBuf> = None;
    let mut receipt_key: Option<String> = None;
    let mut operand: Option<PathBuf> = None;
    let mut expect_origins: Vec<String> = Vec::new();
    let mut json = false;
    while let Some(arg) = parser.next().map_err(|e| e.to_string())? {
        match arg {
            Short('h') | Long("help") => {
                return Ok(Parsed::Help(match command.as_deref() {
                    Some("enrol") => ENROL_HELP,
                    Some("serve") => SERVE_HELP,
                    Some("verify") => VERIFY_HELP,
                    _ => HELP,
                }));
            }
            Long("person") => person = Some(string(parser.value())?),
            Long("name") => name = Some(string(parser.value())?),
            Long("approvers") => {
                approvers = PathBuf::from(parser.value().map_err(|e| e.to_string())?)
            }
            Long("page-origin") => page_origin = string(parser.value())?,
            Long("policy") => {
                policy = Some(PathBuf::from(parser.value().map_err(|e| e.to_string())?))
            }
            Long("receipt-key") => receipt_key = Some(string(parser.value())?),
            Long("expect-origin") if command.as_deref() == Some("verify") => {
                expect_origins.push(string(parser.value())?)
            }
            Long("json") if command.as_deref() == Some("verify") => json = true,
            Long("port") => {
                let text = string(parser.value())?;
                let n: u16 =
                    text.parse().ok().filter(|n| *n != 0).ok_or_else(|| {
                        format!("--port {text:?} is not a port number (1 to 65535)")
                    })?;
                port = Some(n);
            }
            Value(v) if command.is_none() => command = Some(v.string().map_err(|e| e.to_string())?),
            Value(v) if command.as_deref() == Some("verify") && operand.is_none() => {
                operand = Some(PathBuf::from(v))
            }
            other => return Err(other.unexpected().to_string()),
        }
    }
    match command.as_deref() {
        Some("enrol") => {}
        Some("serve") => {
            return Ok(Parsed::Serve(serve::Options {
                port: port.unwrap_or(serve::DEFAULT_PORT),
                page_origin,
                policy: policy.unwrap_or_else(|| PathBuf::from(serve::DEFAULT_POLICY)),
            }));
        }
        Some("verify") => {
            return Ok(Parsed::Verify {
                receipt: operand.ok_or("verify needs the receipt file")?,
                key: receipt_key.ok_or(
                    "verify needs --receipt-key KEY (`fleetwatch-executor receipt --key` prints it)",
                )?,
                approvers,
                policy,
                expect_origins,
                json,
            });
        }
        Some(other) => {
            return Err(format!(
                "unknown command {other:?} (the commands are `enrol`, `serve` and `verify`)"
            ));
        }
        None => {
            return Err("no command given (the commands are `enrol`, `serve` and `verify`)".into());
        }
    }
    Ok(Parsed::Enrol(Options {
        person: person.ok_or("enrol needs --person ID")?,
        name: name.ok_or("enrol needs --name NAME")?,
        approvers,
        port,
        lifetime: enrol::LIFETIME,
    }))
}

fn string(value: Result<std::ffi::OsString, lexopt::Error>) -> Result<String, String> {
    value
        .map_err(|e| e.to_string())?
        .into_string()
        .map_err(|_| "an argument is not valid UTF-8".to_owned())
}
