//! The command line: what each command accepts and its `--help` text, written out by hand.
//!
//! The privileged binary carries a small argument lexer (`lexopt`: options, `--flag=value`,
//! `--`) instead of a derive-and-generate parser; the commands are few and fixed, so a table
//! of them is shorter to review than the code that would generate it. The help keeps the
//! layout operators and `tests/tests/docs_consistency.rs` read (`Commands:` and `Options:`
//! sections, two-space columns), and a usage error exits 2 as before.

use std::ffi::OsString;
use std::path::PathBuf;

/// What the command line asked for.
#[derive(Debug, PartialEq, Eq)]
pub enum Command {
    /// `serve`
    Serve,
    /// `login --sandbox [--token-file FILE] --known-devices FILE`
    Login {
        /// `--token-file`
        token_file: Option<PathBuf>,
        /// `--known-devices`
        known_devices: PathBuf,
    },
    /// `logout --sandbox`
    Logout,
    /// `doctor`
    Doctor,
    /// `audit verify [--against FILE]`
    AuditVerify {
        /// `--against`
        against: Option<PathBuf>,
    },
    /// `audit heads`
    AuditHeads,
    /// `audit show [--since D|T] [--proposal N] [--json] [--lang en|es]`
    AuditShow {
        /// `--since`, as written.
        since: Option<String>,
        /// `--proposal`.
        proposal: Option<u64>,
        /// `--json`.
        json: bool,
        /// `--lang`, as written.
        lang: Option<String>,
    },
    /// `keys list`
    KeysList,
    /// `approvers list`
    ApproversList,
    /// `approvers add LINE… [--may SCOPE]`
    ApproversAdd {
        /// The words of the line, joined by one space (`-`: read one line from standard input).
        line: String,
        /// `--may`: what the person may approve, `TOOLS@ROOMS`.
        may: Option<String>,
        /// `--users`: the user names that are this person.
        users: Option<String>,
    },
    /// `approvers scope PERSON SCOPE`
    ApproversScope {
        /// The person ID.
        person: String,
        /// `TOOLS@ROOMS`, or `everything`.
        scope: String,
    },
    /// `receipt N` or `receipt --key`
    Receipt {
        /// A proposal number or an approval ID; `None` with `--key`.
        which: Option<String>,
    },
    /// `approvers remove WHO…`
    ApproversRemove {
        /// A fingerprint or an operator name, its words joined by one space.
        who: String,
    },
}

/// A parsed command line.
#[derive(Debug, PartialEq, Eq)]
pub struct Cli {
    /// `--config`, from anywhere on the line.
    pub config: Option<PathBuf>,
    /// The command.
    pub command: Command,
}

/// The outcome of parsing.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    /// Run this.
    Run(Cli),
    /// Print this on standard output and exit 0 (`--help`, `--version`).
    Print(String),
    /// Print this on standard error and exit 2 (a usage error).
    Usage(String),
}

const BIN: &str = "fleetwatch-executor";

struct Flag {
    long: &'static str,
    /// The value's name in help, for a flag that takes one.
    value: Option<&'static str>,
    required: bool,
    help: &'static str,
}

/// A flag that takes a value (`value` names it in help), optional.
const fn with_value(long: &'static str, value: &'static str, help: &'static str) -> Flag {
    Flag {
        long,
        value: Some(value),
        required: false,
        help,
    }
}

/// A flag without a value.
const fn switch(long: &'static str, required: bool, help: &'static str) -> Flag {
    Flag {
        long,
        value: None,
        required,
        help,
    }
}

struct Node {
    name: &'static str,
    about: &'static str,
    /// In the order help lists them; `--config` (global) is one of them.
    flags: &'static [&'static Flag],
    children: &'static [&'static Node],
    /// The words a command takes after its name (required when present), and their help.
    operand: Option<(&'static str, &'static str)>,
}

/// A command that runs: its flags, no subcommand, no operand.
const fn command(name: &'static str, about: &'static str, flags: &'static [&'static Flag]) -> Node {
    Node {
        name,
        about,
        flags,
        children: &[],
        operand: None,
    }
}

const ONLY_CONFIG: &[&Flag] = &[&CONFIG];

/// A command that only groups others.
const fn group(
    name: &'static str,
    about: &'static str,
    children: &'static [&'static Node],
) -> Node {
    Node {
        name,
        about,
        flags: ONLY_CONFIG,
        children,
        operand: None,
    }
}

static CONFIG: Flag = with_value(
    "config",
    "CONFIG",
    "Configuration file (YAML). Defaults to $FLEETWATCH_EXECUTOR_CONFIG, then \
     /etc/fleetwatch/executor.yaml. Environment variables (FLEETWATCH_EXECUTOR_SOCKET, \
     FLEETWATCH_POLICY, FLEETWATCH_STATE_DIR, FLEETWATCH_EPIPHAN_URL, \
     FLEETWATCH_WRITE_DEVICE_IDS, FLEETWATCH_WRITE_TEAM_ID, FLEETWATCH_READ_TIMEOUT_SECS, \
     FLEETWATCH_WRITE_TIMEOUT_SECS) override the file",
);
static SANDBOX_LOGIN: Flag = switch(
    "sandbox",
    true,
    "The sandbox sign-in (the only one the executor holds)",
);
static SANDBOX_LOGOUT: Flag = switch("sandbox", true, "The sandbox sign-in");
static TOKEN_FILE: Flag = with_value(
    "token-file",
    "TOKEN_FILE",
    "Store the static token in this file instead of signing in with OAuth",
);
static KNOWN_DEVICES: Flag = Flag {
    required: true,
    ..with_value(
        "known-devices",
        "KNOWN_DEVICES",
        "The normal sign-in's devices, as exported by `fleetwatch export-devices` \
         (`{\"device_ids\": [...]}`)",
    )
};
static AGAINST: Flag = with_value(
    "against",
    "FILE",
    "The assistant's heads listing (`fleetwatch audit heads > FILE`, or `-` to read it from \
     standard input): also check that every assistant chain head recorded here is still in \
     the assistant's chain, which shows its newest rows removed",
);
static SINCE: Flag = with_value(
    "since",
    "DURATION|TIME",
    "Only rows from this long ago on (90s, 15m, 2h, 1d, 1h30m), or from this UTC time on \
     (2026-12-03T09:00:00Z, 2026-12-03 09:00, 2026-12-03)",
);
static PROPOSAL: Flag = with_value(
    "proposal",
    "N",
    "Only rows about the assistant's proposal number N",
);
static JSON: Flag = switch(
    "json",
    false,
    "One JSON object a line for a log shipper: row, time, unix, kind, reason, proposal, \
     approval, tool, targets, decided_by, outcome, refusal, words, chain",
);
static LANG: Flag = with_value(
    "lang",
    "en|es",
    "The language of the words (default: from LC_ALL, LC_MESSAGES or LANG)",
);

static KEY: Flag = switch(
    "key",
    false,
    "Print the executor's public receipt key (base64) instead, for whoever verifies receipts",
);
static RECEIPT: Node = Node {
    operand: Some(("N", "A proposal number or an approval ID (32 hex digits)")),
    ..command(
        "receipt",
        "Print the receipt of one change as JSON (redirect it to a file): the exact signed \
         approval (claims bytes, the assistant's signature, every passkey assertion), the \
         approver lines that verified it, the executor's signed statement of the outcome and \
         the approval's audit rows with their chain hashes. Check it anywhere with \
         `fleetwatch-confirm verify`. A refused change has none, and this says why",
        &[&KEY, &CONFIG],
    )
};
static SERVE: Node = command(
    "serve",
    "Listen on the Unix socket and answer Describe, Execute and Status requests from the \
     allowed uids, one request per connection, until SIGTERM or Ctrl-C. Exits 78 at start \
     when the sandbox sign-in is dead (Epiphan refused to renew it), so systemd does not \
     restart it into the same refusal",
    &[&CONFIG],
);
static LOGIN: Node = command(
    "login",
    "Sign in to the sandbox team and keep the sign-in in the executor's 0600 token slot. By \
     default this runs the OAuth sign-in: a browser opens (or the address is printed) and \
     Epiphan answers on http://127.0.0.1:8765/callback (port: FLEETWATCH_OAUTH_CALLBACK_PORT; \
     FLEETWATCH_OAUTH_NO_BROWSER=1 only prints the address). A static bearer token is the \
     fallback: --token-file, or a token piped on standard input. The sign-in is kept only if \
     the sandbox team lists at least one device and none of the devices the normal sign-in \
     knows; otherwise it is deleted again",
    &[&CONFIG, &SANDBOX_LOGIN, &TOKEN_FILE, &KNOWN_DEVICES],
);
static LOGOUT: Node = command(
    "logout",
    "Delete the stored sandbox sign-in (the sandbox slot only); nothing can be written until \
     the next login",
    &[&CONFIG, &SANDBOX_LOGOUT],
);
static DOCTOR: Node = command(
    "doctor",
    "Check the configuration, fence, sign-in, key file, policy, socket directory, whether a \
     running executor answers, database and audit chain; one OK/WARN/FAIL line each. Exits 1 \
     if any check fails",
    &[&CONFIG],
);
static AUDIT_VERIFY: Node = command(
    "verify",
    "Verify the hash chain of executor.db's audit table. Exits non-zero naming the first row \
     that was edited, removed or inserted behind the program's back",
    &[&AGAINST, &CONFIG],
);
static AUDIT_HEADS: Node = command(
    "heads",
    "Print one `ROW HASH` line per audit row, oldest first, for the assistant's `fleetwatch \
     audit verify --against`. Hashes only, no row content",
    &[&CONFIG],
);
static AUDIT_SHOW: Node = command(
    "show",
    "The audit rows in words, newest last: time (UTC), the assistant's proposal, what \
     happened (accepted and approved by which passkey's operator, executed, refused with the \
     reason, sign-ins). Verifies the chain first and says so on the first line when it is \
     broken. Opens the database read-only, so it can run while `serve` runs",
    &[&SINCE, &PROPOSAL, &JSON, &LANG, &CONFIG],
);
static AUDIT: Node = group(
    "audit",
    "The executor's audit log",
    &[&AUDIT_VERIFY, &AUDIT_HEADS, &AUDIT_SHOW],
);
static KEYS_LIST: Node = command(
    "list",
    "Print the ID of every key in the approver key file",
    &[&CONFIG],
);
static KEYS: Node = group("keys", "The installed approver public keys", &[&KEYS_LIST]);
static APPROVERS_LIST: Node = command(
    "list",
    "Show every approver in the approver file: the assistant keys, then each person with \
     their passkeys (algorithm, fingerprint, synced or device-bound, the last signature \
     counter the executor stored, when `approvers add` added it), and whether anything can be \
     approved. Reads the executor's database without writing to it",
    &[&CONFIG],
);
static APPROVERS_ADD: Node = Node {
    operand: Some((
        "LINE",
        "`approver <person> es256|ed25519 <credential ID> <SPKI base64> synced|device-bound \
         <name>` or `ed25519 <base64 key> [comment]`, quoted or as separate words; `-` reads \
         one `approver` line from standard input (a `passkey …` line from before persons is \
         refused: enrol that person again)",
    )),
    ..command(
        "add",
        "Add one approver line to the approver file, as root: a person's passkey line exactly \
         as `fleetwatch-confirm enrol` prints it (pipe it in with `-`), or an assistant key \
         line. Prints the fingerprint to compare with the one the enrolment printed. Refuses a \
         malformed line, an unsupported algorithm, a credential ID or key already in the file, \
         a display name another person uses and a second name for one person, leaving the file \
         unchanged; otherwise replaces the file atomically (owner, group and mode kept; 0644 \
         for a new file). The running executor uses it from the next request",
        &[&MAY, &USERS, &CONFIG],
    )
};
static MAY: Flag = with_value(
    "may",
    "SCOPE",
    "What the person may approve, `TOOLS@ROOMS`: tools as tool names and the words calm, \
     disruptive and all, comma-separated; rooms as `team` (every room of the fenced team) or \
     device IDs, comma-separated (for example calm,batch_reboot@team). Without it the person \
     may approve everything, or keeps the scope their other passkeys carry",
);
static USERS: Flag = with_value(
    "users",
    "NAMES",
    "The user names (Unix accounts, comma-separated, at most 8) that are this person: with \
     passkeys.asker_counts: false, a person whose user asked for a change does not count \
     toward its quorum. Without it, the users the person's other passkeys name",
);
static APPROVERS_SCOPE: Node = Node {
    operand: Some((
        "PERSON",
        "A person ID, then the scope: `TOOLS@ROOMS` as for `add --may`, or `everything` to lift \
         it (`approvers scope sam calm@team`)",
    )),
    ..command(
        "scope",
        "Set what a person may approve, on every passkey line of theirs, as root: the executor \
         counts them toward a change's quorum only when the scope covers its tool and every \
         target. Atomic like `add`; the running executor uses it from the next request",
        &[&CONFIG],
    )
};
static APPROVERS_REMOVE: Node = Node {
    operand: Some(("WHO", "A person ID, a fingerprint or a display name")),
    ..command(
        "remove",
        "Remove approvers: a person by their ID (all their passkeys), one passkey or assistant \
         key by its fingerprint (as `approvers list` shows it; spaces optional), or the person \
         with a display name; say what was removed, and when the last person went that nothing \
         is approved from now on. Refuses when nothing matches, when a name matches several \
         persons, and the last assistant key. Atomic like `add`; what was removed approves \
         nothing from the next request on",
        &[&CONFIG],
    )
};
static APPROVERS: Node = group(
    "approvers",
    "Who may approve: the persons' passkeys and the assistant's key, in the approver file",
    &[
        &APPROVERS_LIST,
        &APPROVERS_ADD,
        &APPROVERS_SCOPE,
        &APPROVERS_REMOVE,
    ],
);
static TOP: Node = group(
    BIN,
    "The Fleetwatch executor: the only process that holds the sandbox sign-in and can make a \
     change. It runs one approved change per request, after checking the approval's \
     signature, freshness and single use, its own policy, the write fence and the devices' \
     live state",
    &[
        &SERVE, &LOGIN, &LOGOUT, &DOCTOR, &AUDIT, &RECEIPT, &KEYS, &APPROVERS,
    ],
);

const HELP_COMMAND: &str = "Print this message or the help of the given subcommand(s)";

fn flag_spec(flag: &Flag) -> String {
    match flag.value {
        Some(value) => format!("--{} <{value}>", flag.long),
        None => format!("--{}", flag.long),
    }
}

fn usage(path: &[&Node], with_options: bool) -> String {
    let mut line = String::from(BIN);
    for node in path {
        line.push(' ');
        line.push_str(node.name);
    }
    let node = path.last().copied().unwrap_or(&TOP);
    if with_options {
        line.push_str(" [OPTIONS]");
    }
    for flag in node.flags.iter().filter(|f| f.required) {
        line.push(' ');
        line.push_str(&flag_spec(flag));
    }
    if !node.children.is_empty() {
        line.push_str(" <COMMAND>");
    }
    if let Some((name, _)) = node.operand {
        line.push_str(&format!(" <{name}>..."));
    }
    format!("Usage: {line}")
}

/// The help of the command at `path` (empty: the top).
fn help(path: &[&Node]) -> String {
    let node = path.last().copied().unwrap_or(&TOP);
    let mut out = format!("{}\n\n{}\n", node.about, usage(path, true));
    if !node.children.is_empty() {
        let width = node
            .children
            .iter()
            .map(|c| c.name.len())
            .chain(["help".len()])
            .max()
            .unwrap_or(0);
        out.push_str("\nCommands:\n");
        for child in node.children {
            out.push_str(&format!("  {:width$}  {}\n", child.name, child.about));
        }
        out.push_str(&format!("  {:width$}  {HELP_COMMAND}\n", "help"));
    }
    if let Some((name, text)) = node.operand {
        out.push_str(&format!("\nArguments:\n  <{name}>...  {text}\n"));
    }
    let mut rows: Vec<(String, &str)> = node
        .flags
        .iter()
        .map(|f| (format!("      {}", flag_spec(f)), f.help))
        .collect();
    rows.push(("  -h, --help".to_owned(), "Print help"));
    if path.is_empty() {
        rows.push(("  -V, --version".to_owned(), "Print version"));
    }
    let width = rows.iter().map(|(spec, _)| spec.len()).max().unwrap_or(0);
    out.push_str("\nOptions:\n");
    for (spec, text) in rows {
        out.push_str(&format!("{spec:width$}  {text}\n"));
    }
    out
}

fn usage_error(problem: &str, path: &[&Node]) -> Parsed {
    Parsed::Usage(format!(
        "error: {problem}\n\n{}\n\nFor more information, try '--help'.\n",
        usage(path, true)
    ))
}

/// Parses the arguments after the program name.
pub fn parse<I>(args: I) -> Parsed
where
    I: IntoIterator,
    I::Item: Into<OsString>,
{
    let mut parser = lexopt::Parser::from_args(args);
    let mut path: Vec<&'static Node> = Vec::new();
    let mut config: Option<PathBuf> = None;
    let mut given: Vec<(&'static str, Option<OsString>)> = Vec::new();
    let mut operands: Vec<String> = Vec::new();
    loop {
        let node = path.last().copied().unwrap_or(&TOP);
        let arg = match parser.next() {
            Ok(Some(arg)) => arg,
            Ok(None) => break,
            Err(e) => return usage_error(&e.to_string(), &path),
        };
        match arg {
            lexopt::Arg::Short('h') | lexopt::Arg::Long("help") => {
                return Parsed::Print(help(&path));
            }
            lexopt::Arg::Short('V') | lexopt::Arg::Long("version") if path.is_empty() => {
                return Parsed::Print(format!("{BIN} {}\n", env!("CARGO_PKG_VERSION")));
            }
            lexopt::Arg::Long(long) => {
                let Some(flag) = node.flags.iter().find(|f| f.long == long) else {
                    let shown = format!("--{long}");
                    return usage_error(&format!("unexpected argument '{shown}' found"), &path);
                };
                let value = match flag.value {
                    Some(_) => match parser.value() {
                        Ok(v) => Some(v),
                        Err(_) => {
                            return usage_error(
                                &format!(
                                    "a value is required for '{}' but none was supplied",
                                    flag_spec(flag)
                                ),
                                &path,
                            );
                        }
                    },
                    None => None,
                };
                let seen = if flag.long == CONFIG.long {
                    config.is_some()
                } else {
                    given.iter().any(|(l, _)| *l == flag.long)
                };
                if seen {
                    return usage_error(
                        &format!(
                            "the argument '{}' cannot be used multiple times",
                            flag_spec(flag)
                        ),
                        &path,
                    );
                }
                if flag.long == CONFIG.long {
                    config = value.map(PathBuf::from);
                } else {
                    given.push((flag.long, value));
                }
            }
            lexopt::Arg::Short(c) => {
                return usage_error(&format!("unexpected argument '-{c}' found"), &path);
            }
            lexopt::Arg::Value(word) => {
                if node.operand.is_some() {
                    match word.into_string() {
                        Ok(text) => operands.push(text),
                        Err(_) => return usage_error("an argument is not valid UTF-8", &path),
                    }
                    continue;
                }
                let text = word.to_string_lossy();
                if node.children.is_empty() {
                    return usage_error(&format!("unexpected argument '{text}' found"), &path);
                }
                if text == "help" {
                    return help_command(&mut parser, path);
                }
                match node.children.iter().find(|c| c.name == text) {
                    Some(child) => path.push(child),
                    None => {
                        return usage_error(&format!("unrecognized subcommand '{text}'"), &path);
                    }
                }
            }
        }
    }
    finish(path, config, given, operands)
}

/// `help [COMMAND…]`: the help of that command.
fn help_command(parser: &mut lexopt::Parser, mut path: Vec<&'static Node>) -> Parsed {
    while let Ok(Some(lexopt::Arg::Value(word))) = parser.next() {
        let text = word.to_string_lossy();
        let node = path.last().copied().unwrap_or(&TOP);
        match node.children.iter().find(|c| c.name == text) {
            Some(child) => path.push(child),
            None => return usage_error(&format!("unrecognized subcommand '{text}'"), &path),
        }
    }
    Parsed::Print(help(&path))
}

fn finish(
    path: Vec<&'static Node>,
    config: Option<PathBuf>,
    given: Vec<(&'static str, Option<OsString>)>,
    operands: Vec<String>,
) -> Parsed {
    let node = path.last().copied().unwrap_or(&TOP);
    if !node.children.is_empty() {
        // A command that only groups others: say what it holds, as a usage error.
        return Parsed::Usage(help(&path));
    }
    let missing: Vec<String> = node
        .flags
        .iter()
        .filter(|f| f.required && !given.iter().any(|(l, _)| *l == f.long))
        .map(|f| format!("  {}", flag_spec(f)))
        .collect();
    // `receipt --key` is the one form without an operand.
    let keyed = given.iter().any(|(l, _)| *l == KEY.long);
    if let Some((name, _)) = node.operand
        && operands.iter().all(|w| w.trim().is_empty())
        && !keyed
    {
        return usage_error(&format!("the argument <{name}> is required"), &path);
    }
    if !missing.is_empty() {
        return Parsed::Usage(format!(
            "error: the following required arguments were not provided:\n{}\n\n{}\n\nFor more \
             information, try '--help'.\n",
            missing.join("\n"),
            usage(&path, false)
        ));
    }
    let value = |long: &str| {
        given
            .iter()
            .find(|(l, _)| *l == long)
            .and_then(|(_, v)| v.clone())
            .map(PathBuf::from)
    };
    let names: Vec<&str> = path.iter().map(|n| n.name).collect();
    let command = match names.as_slice() {
        ["serve"] => Command::Serve,
        ["login"] => match value(KNOWN_DEVICES.long) {
            Some(known_devices) => Command::Login {
                token_file: value(TOKEN_FILE.long),
                known_devices,
            },
            None => return usage_error("--known-devices needs a file", &path),
        },
        ["logout"] => Command::Logout,
        ["doctor"] => Command::Doctor,
        ["audit", "verify"] => Command::AuditVerify {
            against: value(AGAINST.long),
        },
        ["audit", "heads"] => Command::AuditHeads,
        ["audit", "show"] => {
            let text = |long: &str| {
                given
                    .iter()
                    .find(|(l, _)| *l == long)
                    .and_then(|(_, v)| v.as_ref())
                    .map(|v| v.to_string_lossy().into_owned())
            };
            let proposal = match text(PROPOSAL.long).map(|n| n.trim().parse::<u64>()) {
                Some(Ok(n)) => Some(n),
                Some(Err(_)) => {
                    return usage_error("--proposal needs a proposal number", &path);
                }
                None => None,
            };
            Command::AuditShow {
                since: text(SINCE.long),
                proposal,
                json: given.iter().any(|(l, _)| *l == JSON.long),
                lang: text(LANG.long),
            }
        }
        ["receipt"] if keyed && !operands.is_empty() => {
            return usage_error("give either a proposal or --key", &path);
        }
        ["receipt"] => Command::Receipt {
            which: (!keyed).then(|| operands.join(" ")),
        },
        ["keys", "list"] => Command::KeysList,
        ["approvers", "list"] => Command::ApproversList,
        ["approvers", "add"] => Command::ApproversAdd {
            line: operands.join(" "),
            may: value(MAY.long).map(|p| p.to_string_lossy().into_owned()),
            users: value(USERS.long).map(|p| p.to_string_lossy().into_owned()),
        },
        ["approvers", "scope"] => match operands.as_slice() {
            [person, scope] => Command::ApproversScope {
                person: person.clone(),
                scope: scope.clone(),
            },
            _ => return usage_error("give a person ID and a scope", &path),
        },
        ["approvers", "remove"] => Command::ApproversRemove {
            who: operands.join(" "),
        },
        _ => return Parsed::Usage(help(&path)),
    };
    Parsed::Run(Cli { config, command })
}

// A test fails by panicking.
#[cfg(test)]
#[allow(clippy::panic)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Parsed {
        parse(args.iter().copied())
    }

    #[test]
    fn commands_and_flags() {
        assert_eq!(
            run(&["serve"]),
            Parsed::Run(Cli {
                config: None,
                command: Command::Serve
            })
        );
        assert_eq!(
            run(&[
                "--config",
                "/etc/x.yaml",
                "login",
                "--sandbox",
                "--known-devices=k.json"
            ]),
            Parsed::Run(Cli {
                config: Some("/etc/x.yaml".into()),
                command: Command::Login {
                    token_file: None,
                    known_devices: "k.json".into()
                }
            })
        );
        assert_eq!(
            run(&["audit", "verify", "--against", "-", "--config", "c"]),
            Parsed::Run(Cli {
                config: Some("c".into()),
                command: Command::AuditVerify {
                    against: Some("-".into())
                }
            })
        );
        assert!(matches!(run(&["keys", "list"]), Parsed::Run(_)));
        assert!(matches!(run(&["logout", "--sandbox"]), Parsed::Run(_)));
        assert_eq!(
            run(&[
                "approvers",
                "add",
                "approver ana es256 AAAA",
                "Ana",
                "--config",
                "c"
            ]),
            Parsed::Run(Cli {
                config: Some("c".into()),
                command: Command::ApproversAdd {
                    line: "approver ana es256 AAAA Ana".into(),
                    may: None,
                    users: None,
                }
            })
        );
        assert_eq!(
            run(&["approvers", "add", "-", "--may", "calm@team"]),
            Parsed::Run(Cli {
                config: None,
                command: Command::ApproversAdd {
                    line: "-".into(),
                    may: Some("calm@team".into()),
                    users: None,
                }
            })
        );
        assert_eq!(
            run(&["approvers", "scope", "ana", "calm@team"]),
            Parsed::Run(Cli {
                config: None,
                command: Command::ApproversScope {
                    person: "ana".into(),
                    scope: "calm@team".into(),
                }
            })
        );
        assert!(matches!(
            run(&["approvers", "scope", "ana"]),
            Parsed::Usage(_)
        ));
        assert_eq!(
            run(&["approvers", "remove", "3fa2 9c01"]),
            Parsed::Run(Cli {
                config: None,
                command: Command::ApproversRemove {
                    who: "3fa2 9c01".into()
                }
            })
        );
        assert!(matches!(run(&["approvers", "list"]), Parsed::Run(_)));
    }

    #[test]
    fn usage_errors() {
        for args in [
            &[][..],
            &["bogus"],
            &["login", "--sandbox"],
            &["login", "--known-devices", "k"],
            &["logout"],
            &["serve", "--sandbox"],
            &["--sandbox", "logout"],
            &["serve", "extra"],
            &["audit"],
            &["serve", "--config"],
            &["--config", "a", "serve", "--config", "b"],
            &["logout", "--sandbox=yes"],
            &["serve", "-x"],
            &["approvers"],
            &["approvers", "add"],
            &["approvers", "remove", " "],
            &["approvers", "list", "extra"],
        ] {
            assert!(matches!(run(args), Parsed::Usage(_)), "{args:?}");
        }
    }

    #[test]
    fn help_and_version() {
        let Parsed::Print(top) = run(&["--help"]) else {
            panic!("no help")
        };
        assert!(top.contains("\nCommands:\n  serve      Listen on the Unix socket"));
        assert!(top.contains("      --config <CONFIG>  Configuration file"));
        assert!(top.contains("  -V, --version          Print version\n"));
        let Parsed::Print(login) = run(&["login", "-h"]) else {
            panic!("no help")
        };
        assert!(login.contains(
            "Usage: fleetwatch-executor login [OPTIONS] --sandbox --known-devices <KNOWN_DEVICES>"
        ));
        assert!(login.contains("  -h, --help                           Print help\n"));
        assert_eq!(run(&["help", "login"]), run(&["login", "--help"]));
        assert_eq!(
            run(&["audit", "help", "verify"]),
            run(&["audit", "verify", "--help"])
        );
        assert!(matches!(run(&["-V"]), Parsed::Print(v) if v.starts_with("fleetwatch-executor ")));
    }
}
