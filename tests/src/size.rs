//! The executor's trusted base, counted: the third-party crates in its normal dependency graph
//! and the lines of this project's own code it links. `bench --trusted-base` prints these with
//! the executor's idle memory against their targets (docs/TESTING.md).
//!
//! Definitions, so that two checkouts are counted alike:
//!
//! * **crates**: distinct package names in `cargo tree -p fleetwatch-executor -e normal` (this
//!   platform, resolved features), workspace members left out; `versions` counts name and
//!   version pairs, which is larger when two versions of one crate are linked.
//! * **lines**: the source files compiled into the executor from `executor/`, `protocol/`,
//!   `signin/` and `epiphan/` (the MCP core both processes share) — found by following `mod` declarations from each crate's root, leaving out
//!   modules under `#[cfg(test)]` or a cargo feature the executor does not enable — counting
//!   lines that are not blank, not comments (`//…`, `/* … */`) and not inside a
//!   `#[cfg(test)]` item.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Third-party crates in the executor's normal graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Crates {
    /// Distinct names.
    pub names: BTreeSet<String>,
    /// Distinct `name version` pairs.
    pub versions: usize,
    /// For each direct dependency, the crates reachable only through it.
    pub only_through: BTreeMap<String, BTreeSet<String>>,
}

/// Runs `cargo tree` in the checkout at `root` and counts the executor's crates.
pub fn crates(root: &Path) -> Result<Crates, String> {
    crates_of(root, "fleetwatch-executor")
}

/// The same count for another workspace package (`fleetwatch-confirm`, trusted like the
/// executor).
pub fn crates_of(root: &Path, package: &str) -> Result<Crates, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "tree",
            "-p",
            package,
            "-e",
            "normal",
            "--prefix",
            "depth",
            "--no-dedupe",
            "-f",
            "{p}",
        ])
        .current_dir(root)
        .output()
        .map_err(|e| format!("cargo tree: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(parse_tree(&String::from_utf8_lossy(&out.stdout)))
}

/// Reads `cargo tree --prefix depth --no-dedupe -f {p}` output. Workspace members are the
/// packages printed with a path (`name vX (/path)`).
pub fn parse_tree(text: &str) -> Crates {
    let mut names = BTreeSet::new();
    let mut versions = BTreeSet::new();
    let mut members = BTreeSet::new();
    let mut reached: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut stack: Vec<String> = Vec::new();
    for line in text.lines() {
        let digits: String = line.chars().take_while(char::is_ascii_digit).collect();
        let Ok(depth) = digits.parse::<usize>() else {
            continue;
        };
        let mut words = line[digits.len()..].split_whitespace();
        let (Some(name), Some(version)) = (words.next(), words.next()) else {
            continue;
        };
        let is_member = words.next().is_some_and(|w| w.starts_with("(/"));
        stack.truncate(depth);
        stack.push(name.to_owned());
        if is_member {
            members.insert(name.to_owned());
            continue;
        }
        names.insert(name.to_owned());
        versions.insert(format!("{name} {version}"));
        // The first member-less step below the root: the direct dependency (or, for crates under
        // a workspace member, the member's direct dependency).
        if let Some(first) = stack.iter().skip(1).find(|s| !members.contains(*s)) {
            reached
                .entry(name.to_owned())
                .or_default()
                .insert(first.clone());
        }
    }
    let mut only_through: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (name, via) in &reached {
        if via.len() == 1
            && let Some(one) = via.iter().next()
            && one != name
        {
            only_through
                .entry(one.clone())
                .or_default()
                .insert(name.clone());
        }
    }
    Crates {
        names,
        versions: versions.len(),
        only_through,
    }
}

/// Counted lines of one source file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileLines {
    /// Path from the checkout's root.
    pub path: String,
    /// Non-blank, non-comment, non-test lines.
    pub lines: usize,
}

/// The executor's own code and the protocol, signin and epiphan modules it links, file by file.
pub fn linked_lines(root: &Path) -> Result<Vec<FileLines>, String> {
    let mut out = Vec::new();
    let enabled = executor_features(root);
    for (krate, roots) in [
        ("executor", vec!["src/lib.rs", "src/main.rs"]),
        ("protocol", vec!["src/lib.rs"]),
        ("signin", vec!["src/lib.rs"]),
        ("epiphan", vec!["src/lib.rs"]),
    ] {
        let features = enabled.get(krate).cloned().unwrap_or_default();
        let base = root.join(krate);
        let mut files = BTreeSet::new();
        for file in roots {
            collect_modules(&base.join(file), &features, &mut files)?;
        }
        for file in files {
            let text =
                std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
            let path = file
                .strip_prefix(root)
                .unwrap_or(&file)
                .display()
                .to_string();
            out.push(FileLines {
                path,
                lines: count_code_lines(&text),
            });
        }
    }
    Ok(out)
}

/// `fleetwatch-confirm`'s own code, file by file, counted as the executor's is; the protocol it
/// links is the executor's too, and counted there. Its page script, style sheet and HTML
/// (`confirm/templates/`) are counted as lines that are neither blank nor `//` comments.
pub fn confirm_lines(root: &Path) -> Result<Vec<FileLines>, String> {
    let base = root.join("confirm");
    let mut files = BTreeSet::new();
    for file in ["src/lib.rs", "src/main.rs"] {
        collect_modules(&base.join(file), &BTreeSet::new(), &mut files)?;
    }
    let mut out = Vec::new();
    for file in files {
        out.push(counted(root, &file, count_code_lines)?);
    }
    let templates = base.join("templates");
    let mut assets: Vec<PathBuf> = std::fs::read_dir(&templates)
        .map_err(|e| format!("{}: {e}", templates.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    assets.sort();
    for file in assets {
        out.push(counted(root, &file, |text| {
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with("//"))
                .count()
        })?);
    }
    Ok(out)
}

/// One file's lines as `count` counts them, named from the checkout's root.
fn counted(root: &Path, file: &Path, count: fn(&str) -> usize) -> Result<FileLines, String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    Ok(FileLines {
        path: file
            .strip_prefix(root)
            .unwrap_or(file)
            .display()
            .to_string(),
        lines: count(&text),
    })
}

/// The cargo features the executor's manifest turns on for `protocol`, `signin` and `epiphan`
/// (`fleetwatch-protocol = { …, features = [...] }`), and none for itself.
fn executor_features(root: &Path) -> BTreeMap<&'static str, BTreeSet<String>> {
    let manifest = std::fs::read_to_string(root.join("executor/Cargo.toml")).unwrap_or_default();
    let mut out = BTreeMap::new();
    for (krate, package) in [
        ("protocol", "fleetwatch-protocol"),
        ("signin", "fleetwatch-signin"),
        ("epiphan", "fleetwatch-epiphan"),
    ] {
        let features = manifest
            .lines()
            .find(|l| l.starts_with(package))
            .and_then(|l| l.split_once("features"))
            .and_then(|(_, rest)| rest.split_once('[').map(|(_, r)| r))
            .and_then(|rest| rest.split_once(']').map(|(list, _)| list))
            .map(|list| {
                list.split(',')
                    .map(|f| f.trim().trim_matches('"').to_owned())
                    .filter(|f| !f.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        out.insert(krate, features);
    }
    out
}

/// Follows `mod name;` from `file`, skipping test-only modules and modules behind a feature
/// not in `features`.
fn collect_modules(
    file: &Path,
    features: &BTreeSet<String>,
    out: &mut BTreeSet<PathBuf>,
) -> Result<(), String> {
    if !out.insert(file.to_path_buf()) {
        return Ok(());
    }
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let dir = module_dir(file);
    let mut attributes: Vec<String> = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with("#[") {
            attributes.push(line.to_owned());
            continue;
        }
        let declared = line
            .strip_prefix("pub ")
            .or_else(|| line.strip_prefix("pub(crate) "))
            .unwrap_or(line)
            .strip_prefix("mod ")
            .and_then(|rest| rest.strip_suffix(';'));
        let skip = attributes.iter().any(|a| excluded(a, features));
        attributes.clear();
        let Some(name) = declared else {
            continue;
        };
        if skip {
            continue;
        }
        let flat = dir.join(format!("{name}.rs"));
        let nested = dir.join(name).join("mod.rs");
        let child = if flat.exists() { flat } else { nested };
        collect_modules(&child, features, out)?;
    }
    Ok(())
}

/// Where the children of the module in `file` live: beside a crate root or `mod.rs`, in a
/// folder named for the module otherwise.
fn module_dir(file: &Path) -> PathBuf {
    let parent = file.parent().map(Path::to_path_buf).unwrap_or_default();
    match file.file_name().and_then(|n| n.to_str()) {
        Some("lib.rs" | "main.rs" | "mod.rs") => parent,
        _ => parent.join(file.file_stem().unwrap_or_default()),
    }
}

fn excluded(attribute: &str, features: &BTreeSet<String>) -> bool {
    let compact: String = attribute.chars().filter(|c| !c.is_whitespace()).collect();
    if compact == "#[cfg(test)]" {
        return true;
    }
    match compact
        .strip_prefix("#[cfg(feature=\"")
        .and_then(|r| r.strip_suffix("\")]"))
    {
        Some(feature) => !features.contains(feature),
        None => false,
    }
}

/// Lines that are not blank, not comments and not inside a `#[cfg(test)]` item. The code is
/// rustfmt-formatted, so a test item ends at the first line that closes a brace at the
/// attribute's own indentation.
pub fn count_code_lines(text: &str) -> usize {
    let lines: Vec<&str> = text.lines().collect();
    let mut count = 0;
    let mut i = 0;
    let mut in_block_comment = false;
    while let Some(line) = lines.get(i) {
        let trimmed = line.trim();
        if in_block_comment {
            in_block_comment = !trimmed.contains("*/");
            i += 1;
            continue;
        }
        if trimmed == "#[cfg(test)]" {
            let indent = &line[..line.len() - line.trim_start().len()];
            // Skip further attributes, then the item.
            let mut j = i + 1;
            while lines.get(j).is_some_and(|l| l.trim().starts_with("#[")) {
                j += 1;
            }
            let opens = lines.get(j).is_some_and(|l| l.trim_end().ends_with('{'));
            if opens {
                while let Some(l) = lines.get(j) {
                    if l.starts_with(indent) && matches!(&l[indent.len()..], "}" | "};") {
                        break;
                    }
                    j += 1;
                }
            }
            i = j + 1;
            continue;
        }
        if trimmed.starts_with("/*") {
            in_block_comment = !trimmed.contains("*/");
        } else if !trimmed.is_empty() && !trimmed.starts_with("//") {
            count += 1;
        }
        i += 1;
    }
    count
}

/// The order a reviewer reads the two trusted programs in, each file with what it decides:
/// the executor along one `Execute` (DESIGN §2 step 5), then what it keeps and reads, then its
/// administrative commands; then the confirm page along an enrolment and a confirmation
/// (DESIGN §9). `bench --trusted-base` prints it with today's counts, SECURITY.md and
/// SECURITY.es.md give it in words, and `docs_consistency.rs` fails when a linked source file
/// is missing from it.
pub const READING_ORDER: &[(&str, &str)] = &[
    // The executor: from the socket to the one write.
    (
        "executor/src/main.rs",
        "the entry point: which command runs, exit codes",
    ),
    (
        "executor/src/cli.rs",
        "the command line: every command and flag, nothing else accepted",
    ),
    (
        "executor/src/lib.rs",
        "`serve` and the administrative commands' bodies",
    ),
    (
        "executor/src/config.rs",
        "the configuration and its bounds; paths never come from the wire",
    ),
    (
        "executor/src/os.rs",
        "trusted files (owner, mode), the socket's folder, the peer's uid, the state lock",
    ),
    (
        "executor/src/context.rs",
        "what is loaded once at start, and the describe allowance",
    ),
    (
        "executor/src/listener.rs",
        "peer uid before a byte is read, the frame deadline, slots shared per peer",
    ),
    (
        "protocol/src/wire.rs",
        "the frame's encoding: exactly one request, versioned",
    ),
    (
        "executor/src/execute.rs",
        "one Execute top to bottom: the checks in order, the write, the outcome",
    ),
    (
        "executor/src/checks.rs",
        "each check, each with its refusal, as witness values in order",
    ),
    (
        "executor/src/freeze.rs",
        "freeze windows: when the team says nothing of a kind may change, once or weekly",
    ),
    (
        "executor/src/holder.rs",
        "who holds the confirm origin's port: the kernel's socket table, at each Execute with passkeys",
    ),
    (
        "protocol/src/claims.rs",
        "the signed claims: strict signature over raw bytes, then decoding and lengths",
    ),
    (
        "protocol/src/passkey.rs",
        "passkey assertions: client data, authenticator data, signatures, counters, persons",
    ),
    (
        "protocol/src/passkey/scope.rs",
        "what a person may approve: the scope on their approver line, and whether it covers a change",
    ),
    (
        "executor/src/approvers.rs",
        "the approver file: assistant keys and persons, read for every request",
    ),
    (
        "protocol/src/policy.rs",
        "the executor's own policy: proposable tools, digests, disruptive, targets",
    ),
    (
        "protocol/src/schema.rs",
        "the JSON Schema subset arguments are validated with",
    ),
    (
        "protocol/src/schema/pattern.rs",
        "the patterns that schema subset matches",
    ),
    (
        "protocol/src/canonical.rs",
        "canonical JSON: the arguments compared byte for byte",
    ),
    (
        "executor/src/store.rs",
        "the nonce, executions, limits, the burst rule for refusals, and each approval's evidence and signed outcome statement, in executor.db",
    ),
    ("executor/src/audit.rs", "the executor's audit chain"),
    (
        "protocol/src/receipt.rs",
        "the receipt's format and the statement the receipt key signs",
    ),
    (
        "protocol/src/audit.rs",
        "the chain's row format and hashing, shared with the assistant",
    ),
    (
        "protocol/src/anchor.rs",
        "each side's chain head recorded by the other",
    ),
    (
        "executor/src/reads.rs",
        "the fresh reads through the sandbox sign-in, and what silence means",
    ),
    (
        "executor/src/state.rs",
        "the fingerprint, the event match and the signed names from those reads",
    ),
    (
        "protocol/src/fleet.rs",
        "parsing Epiphan's answers, the fingerprint, the disruptive window",
    ),
    (
        "executor/src/epiphan.rs",
        "the session kept between requests, the bounded read, the one write",
    ),
    ("epiphan/src/lib.rs", "the MCP client core's parts"),
    (
        "epiphan/src/session.rs",
        "a session: reads, the once-only write, answers as sent, no retries",
    ),
    (
        "epiphan/src/mcp.rs",
        "MCP over streamable HTTP: each message sent once, versions checked",
    ),
    (
        "epiphan/src/sign_in.rs",
        "the one rule for an expired sign-in",
    ),
    (
        "epiphan/src/url_policy.rs",
        "which Epiphan URLs are allowed",
    ),
    ("epiphan/src/tls.rs", "the TLS provider"),
    (
        "executor/src/slot.rs",
        "the sandbox token slot as the executor uses it",
    ),
    (
        "signin/src/slot.rs",
        "the token slot: refresh, rotation lock, the dead mark",
    ),
    ("signin/src/http.rs", "the sign-in's HTTP exchanges"),
    ("signin/src/secret.rs", "secrets that never print"),
    (
        "signin/src/lib.rs",
        "the sign-in crate's parts and its errors",
    ),
    (
        "executor/src/describe.rs",
        "Describe and Status: read-only answers the assistant binds to",
    ),
    ("protocol/src/refusal.rs", "every refusal's code and words"),
    (
        "protocol/src/ids.rs",
        "the shapes of device, channel and stream IDs",
    ),
    (
        "protocol/src/lenient.rs",
        "reading Epiphan's spellings of one field",
    ),
    ("protocol/src/hex.rs", "hex"),
    ("protocol/src/secret.rs", "a secret value that never prints"),
    (
        "protocol/src/shown.rs",
        "a name shown the way a person can read it, the one rule for every place",
    ),
    ("protocol/src/lib.rs", "the protocol crate's parts"),
    // The executor's administrative commands.
    (
        "executor/src/login.rs",
        "`login --sandbox`: the sandbox sign-in and its team check",
    ),
    (
        "signin/src/login.rs",
        "the OAuth authorization-code flow with PKCE",
    ),
    (
        "signin/src/discovery.rs",
        "finding the authorization server",
    ),
    (
        "signin/src/callback.rs",
        "the one-shot loopback listener for the sign-in's redirect",
    ),
    ("signin/src/scopes.rs", "which scopes each sign-in asks for"),
    ("executor/src/doctor.rs", "`doctor`: every check in words"),
    (
        "executor/src/audit_show.rs",
        "`audit show`: the chain in words",
    ),
    (
        "executor/src/receipt.rs",
        "the receipt key, and `receipt N`: one change's evidence as one file",
    ),
    (
        "executor/src/log.rs",
        "the log: one line per event, no request data",
    ),
    // The confirm page: where a person is bound.
    (
        "confirm/src/main.rs",
        "the entry point: `enrol`, `serve` and `verify` and their flags",
    ),
    ("confirm/src/lib.rs", "the confirm crate's parts"),
    (
        "confirm/src/http.rs",
        "the loopback HTTP server: bounded reads, headers, sockets from systemd",
    ),
    (
        "confirm/src/enrol.rs",
        "the one-shot enrolment page and what it checks before printing a line",
    ),
    (
        "protocol/src/passkey/enrol.rs",
        "a creation's client and authenticator data, at enrolment",
    ),
    (
        "confirm/src/serve.rs",
        "the confirm page: Host, Origin, the claims decoded, the challenge computed",
    ),
    (
        "confirm/src/view.rs",
        "the change in words from the decoded claims alone",
    ),
    (
        "confirm/src/lang.rs",
        "English or Spanish, from the browser's language",
    ),
    (
        "confirm/src/verify.rs",
        "`verify`: a receipt checked from public inputs alone, trusting neither process",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counting_leaves_out_blanks_comments_and_tests() {
        let text = "//! doc\n\nuse a;\n/// item doc\nfn f() {\n    // note\n    g();\n}\n/* block\n still */\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn t() {\n        assert!(true);\n    }\n}\n#[cfg(test)]\nuse b;\nfn h() {}\n";
        // use a; fn f() {; g(); }; fn h() {}
        assert_eq!(count_code_lines(text), 5);
    }

    #[test]
    fn tree_parsing_leaves_out_members_and_finds_single_owners() {
        let text = "0fleetwatch-executor v0.1.0 (/w/executor)\n1fleetwatch-protocol v0.1.0 (/w/protocol)\n2serde v1.0.0\n1rmcp v3.11.0\n2chrono v0.4.45\n3num-traits v0.2.19\n2serde v1.0.0\n1serde v1.0.0\n1sha2 v0.10.9\n1sha2 v0.11.1\n";
        let c = parse_tree(text);
        assert_eq!(
            c.names.iter().map(String::as_str).collect::<Vec<_>>(),
            ["chrono", "num-traits", "rmcp", "serde", "sha2"]
        );
        assert_eq!(c.versions, 6);
        assert_eq!(
            c.only_through["rmcp"]
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
            ["chrono", "num-traits"]
        );
        assert!(!c.only_through.contains_key("serde"));
    }
}
