//! The approver file: who may approve a change on this executor. Two kinds of line, in any
//! order:
//!
//! ```text
//! # the assistant's signing key: proves the assistant process asked
//! ed25519 11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo= assistant on ops-01
//! # added 2026-12-03T08:10:50Z
//! approver ana es256 <credential ID> <SPKI base64> device-bound Ana Gómez
//! ```
//!
//! `ed25519` lines are read by [`TrustedKeys::parse`], `approver` lines by
//! [`Approvers::parse`], each on the file with the other kind's lines blanked, so every error
//! names the file's own line number. A `# added <time>` comment right above a record is what
//! `approvers add` writes and `approvers list` shows; the executor ignores it like any
//! comment. The file is root's: the assistant can never enrol a passkey.
//!
//! The running executor reads this file again for every `Execute` and `Status`, so
//! `approvers add` and `approvers remove` take effect at once, without a restart.

use std::io::Write as _;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt as _, PermissionsExt};
use std::path::Path;

use fleetwatch_protocol::claims::{KeyId, TrustedKeys};
use fleetwatch_protocol::passkey::{Approvers, Backup, PasskeyRecord, Scope, scope};

use crate::os::{self, TrustError, Trusted};

/// Largest approver file read.
const MAX_FILE: u64 = 1 << 20;

/// The comment `approvers add` writes above each record it adds.
const ADDED: &str = "# added ";

/// The approver file, checked.
#[derive(Debug, Clone)]
pub struct ApproverFile {
    /// The assistant's signing keys (at least one).
    pub keys: TrustedKeys,
    /// The operators' passkeys (possibly none).
    pub passkeys: Approvers,
}

/// Why the approver file was refused.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The file is not trusted or cannot be read.
    #[error("{0}")]
    Trust(#[from] TrustError),
    /// A line is wrong; `line` is 1-based.
    #[error("approver file {path}, line {line}: {problem}")]
    Line {
        /// The file.
        path: String,
        /// The line.
        line: usize,
        /// What is wrong.
        problem: String,
    },
    /// Something about the file as a whole.
    #[error("approver file {path}: {problem}")]
    File {
        /// The file.
        path: String,
        /// What is wrong.
        problem: String,
    },
}

/// The kind of a record line, from its first word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Key,
    Passkey,
}

fn kind_of(line: &str) -> Option<Kind> {
    match line.split_whitespace().next() {
        Some("ed25519") => Some(Kind::Key),
        Some("passkey" | "approver") => Some(Kind::Passkey),
        _ => None,
    }
}

fn is_record(line: &str) -> bool {
    let t = line.trim();
    !t.is_empty() && !t.starts_with('#')
}

/// The text with every record line that is not of `kind` blanked, so line numbers stay.
fn only(text: &str, kind: Kind) -> String {
    text.lines()
        .map(|l| {
            if is_record(l) && kind_of(l) != Some(kind) {
                ""
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Parses the file's text; `path` only names it in errors.
pub fn parse(text: &str, path: &Path) -> Result<ApproverFile, FileError> {
    let path = path.display().to_string();
    for (index, raw) in text.lines().enumerate() {
        if is_record(raw) && kind_of(raw).is_none() {
            return Err(FileError::Line {
                path,
                line: index + 1,
                problem: "unknown kind of line (expected `ed25519 <base64 key> [comment]` or \
                          `approver <person> es256|ed25519 <credential ID> <SPKI base64> \
                          synced|device-bound <name>`)"
                    .into(),
            });
        }
    }
    let passkeys = Approvers::parse(&only(text, Kind::Passkey)).map_err(|e| {
        let fleetwatch_protocol::passkey::ApproverFileError::Line { line, error } = e;
        FileError::Line {
            path: path.clone(),
            line,
            problem: error.to_string(),
        }
    })?;
    let keys = TrustedKeys::parse(&only(text, Kind::Key)).map_err(|e| match e {
        fleetwatch_protocol::claims::KeyFileError::Line { line, reason } => FileError::Line {
            path: path.clone(),
            line,
            problem: reason.into(),
        },
        fleetwatch_protocol::claims::KeyFileError::Empty => FileError::File {
            path: path.clone(),
            problem: "no assistant key (an `ed25519 <base64 key> [comment]` line); the \
                      executor verifies the assistant's signature before anything else"
                .into(),
        },
    })?;
    // A passkey that is the assistant's own key would let the assistant stand in for the
    // person: refuse it, naming the passkey's line.
    let installed = keys.key_ids();
    for (index, raw) in text.lines().enumerate() {
        if !is_record(raw) || kind_of(raw) != Some(Kind::Passkey) {
            continue;
        }
        if let Ok(record) = PasskeyRecord::parse_line(raw)
            && let Some(id) = ed25519_key_id(&record)
            && installed.contains(&id)
        {
            return Err(FileError::Line {
                path,
                line: index + 1,
                problem: "this passkey's key is also installed as the assistant's key; a \
                          person's passkey must be a key the assistant does not hold"
                    .into(),
            });
        }
    }
    Ok(ApproverFile { keys, passkeys })
}

/// The assistant-key ID an Ed25519 passkey's raw key would have.
fn ed25519_key_id(record: &PasskeyRecord) -> Option<KeyId> {
    if record.algorithm() != fleetwatch_protocol::passkey::Algorithm::Ed25519 {
        return None;
    }
    let raw: &[u8; 32] = record
        .spki()
        .get(record.spki().len().checked_sub(32)?..)?
        .try_into()
        .ok()?;
    Some(KeyId::of_bytes(raw))
}

/// The approver file's text, after the owner and mode checks every trusted file gets.
pub fn read(path: &Path) -> Result<String, TrustError> {
    os::read_trusted(path, Trusted::File, MAX_FILE)
}

/// Reads and checks the approver file.
pub fn load(path: &Path) -> Result<ApproverFile, FileError> {
    parse(&read(path)?, path)
}

/// One approver as `approvers list` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// `passkey` or `assistant key`.
    pub kind: &'static str,
    /// The person ID of an `approver` line; `None` for an assistant key.
    pub person: Option<String>,
    /// Whether the passkey may be synced, as recorded at enrolment (`None`: an assistant key).
    pub backup: Option<Backup>,
    /// The operator's name (a passkey) or the comment (an assistant key).
    pub name: String,
    /// `es256` or `ed25519`.
    pub algorithm: &'static str,
    /// The passkey's fingerprint, or the assistant key's ID, as people compare it.
    pub fingerprint: String,
    /// The credential ID (passkeys only), for the counter lookup.
    pub credential_id: Option<Vec<u8>>,
    /// When `approvers add` added it, if it did.
    pub added: Option<String>,
    /// What the person may approve, in words (`None`: everything, or an assistant key).
    pub scope: Option<String>,
    /// The user names (Unix accounts) the line says are this person.
    pub users: Vec<String>,
    /// The 1-based line, and the line of its `# added` comment if any.
    lines: (usize, Option<usize>),
}

/// Every approver in file order. The text must already have passed [`parse`].
pub fn list(text: &str) -> Vec<Listed> {
    let mut out = Vec::new();
    let mut added: Option<(usize, String)> = None;
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        let trimmed = raw.trim();
        if let Some(time) = trimmed.strip_prefix(ADDED) {
            added = Some((line, time.trim().to_owned()));
            continue;
        }
        if !is_record(raw) {
            // Only a comment right above the record belongs to it.
            added = None;
            continue;
        }
        let above = added.take();
        let (added_line, added_time) = match above {
            Some((l, t)) => (Some(l), Some(t)),
            None => (None, None),
        };
        match kind_of(raw) {
            Some(Kind::Passkey) => {
                if let Ok(record) = PasskeyRecord::parse_line(raw) {
                    out.push(Listed {
                        kind: "passkey",
                        person: Some(record.person().to_owned()),
                        backup: Some(record.backup()),
                        name: record.name().to_owned(),
                        algorithm: record.algorithm().name(),
                        fingerprint: record.fingerprint().to_string(),
                        credential_id: Some(record.credential_id().to_vec()),
                        added: added_time,
                        scope: record.scope().map(|s| s.words()),
                        users: record.users().to_vec(),
                        lines: (line, added_line),
                    });
                }
            }
            Some(Kind::Key) => {
                if let Ok(keys) = TrustedKeys::parse(trimmed)
                    && let Some(id) = keys.key_ids().first()
                {
                    let comment = trimmed
                        .split_whitespace()
                        .skip(2)
                        .collect::<Vec<_>>()
                        .join(" ");
                    out.push(Listed {
                        kind: "assistant key",
                        person: None,
                        backup: None,
                        name: comment,
                        algorithm: "ed25519",
                        fingerprint: group(&id.to_hex()),
                        credential_id: None,
                        added: added_time,
                        scope: None,
                        users: Vec::new(),
                        lines: (line, added_line),
                    });
                }
            }
            None => {}
        }
    }
    out
}

/// Hex in groups of four, as passkey fingerprints are shown.
fn group(hex: &str) -> String {
    hex.as_bytes()
        .chunks(4)
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Lower-case hex digits only: how a typed fingerprint is compared.
fn digits(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_whitespace())
        .flat_map(char::to_lowercase)
        .collect()
}

/// The file after `approvers add`: the existing text untouched, then `# added <time>` and the
/// record, re-checked as a whole so a duplicate or a malformed line refuses exactly as it
/// would at start-up. Returns the new text and the approver as listed.
pub fn add(
    existing: &str,
    line: &str,
    (may, users): (Option<&str>, Option<&str>),
    now: &str,
    path: &Path,
) -> Result<(String, Listed), String> {
    if line.contains(['\n', '\r']) {
        return Err("give one line".into());
    }
    let line = line.trim();
    if !is_record(line) {
        return Err("the line is empty or a comment".into());
    }
    // A passkey is written in its canonical form, exactly what the executor will read back,
    // with the scope given, else the one the person's other passkeys carry.
    let line = match kind_of(line) {
        Some(Kind::Passkey) => {
            let record = PasskeyRecord::parse_line(line).map_err(|e| e.to_string())?;
            let enrolled = Approvers::parse(&only(existing, Kind::Passkey)).unwrap_or_default();
            let same = enrolled
                .records()
                .iter()
                .find(|r| r.person() == record.person());
            let scope = match may {
                Some(text) => Some(parse_scope(text)?),
                None => record.scope().or(same.and_then(|r| r.scope())).cloned(),
            };
            let users = match users {
                Some(text) => parse_users(text)?,
                None if !record.users().is_empty() => record.users().to_vec(),
                None => same.map(|r| r.users().to_vec()).unwrap_or_default(),
            };
            record.with_scope(scope).with_users(users).to_line()
        }
        Some(Kind::Key) if may.is_some() || users.is_some() => {
            return Err(
                "--may and --users are for a person's passkey line, not an assistant key".into(),
            );
        }
        Some(Kind::Key) => line.to_owned(),
        None => {
            return Err(
                "unknown kind of line (expected `approver <person> es256|ed25519 <credential ID> \
                 <SPKI base64> synced|device-bound <name>` or `ed25519 <base64 key> [comment]`)"
                    .into(),
            );
        }
    };
    let mut text = existing.to_owned();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&format!("{ADDED}{now}\n{line}\n"));
    let added_at = text.lines().count();
    match parse(&text, path) {
        Ok(_) => {}
        // The new line is the last: its problem is said without a line number.
        Err(FileError::Line {
            line: at, problem, ..
        }) if at == added_at => return Err(problem),
        Err(FileError::File { problem, .. }) if existing.trim().is_empty() => {
            // A new file must start with the assistant's key.
            return Err(problem);
        }
        Err(e) => return Err(format!("the file as it is does not load: {e}")),
    }
    if let Some(Kind::Passkey) = kind_of(&line) {
        same_person_same_name(&list(existing), &line)?;
    }
    let listed = list(&text)
        .into_iter()
        .find(|l| l.lines.0 == added_at)
        .ok_or_else(|| "the added line was not read back".to_owned())?;
    Ok((text, listed))
}

/// The user names after `--users` (`users=` optional), read as an approver line's `users=`.
fn parse_users(text: &str) -> Result<Vec<String>, String> {
    let text = text.trim();
    fleetwatch_protocol::passkey::parse_users(
        text.strip_prefix(fleetwatch_protocol::passkey::USERS_PREFIX)
            .unwrap_or(text),
    )
    .map_err(|e| format!("--users: {e}"))
}

/// A scope as written after `--may` or in `approvers scope` (`may=` optional).
fn parse_scope(text: &str) -> Result<Scope, String> {
    let text = text.trim();
    Scope::parse(text.strip_prefix(scope::PREFIX).unwrap_or(text)).map_err(|e| e.to_string())
}

/// The file after `approvers scope PERSON SCOPE`: every passkey line of that person written
/// again with the scope (`everything` lifts it), every other line untouched. Refuses when the
/// person has no passkey here.
pub fn set_scope(existing: &str, person: &str, scope: &str) -> Result<(String, usize), String> {
    let scope = match scope.trim() {
        "everything" => None,
        text => Some(parse_scope(text)?),
    };
    let mut changed = 0;
    let mut out = String::new();
    for raw in existing.lines() {
        match PasskeyRecord::parse_line(raw) {
            Ok(record) if record.person() == person => {
                out.push_str(&record.with_scope(scope.clone()).to_line());
                changed += 1;
            }
            _ => out.push_str(raw),
        }
        out.push('\n');
    }
    if changed == 0 {
        return Err(format!(
            "no passkey of person {person:?} is enrolled; `approvers list` shows who is"
        ));
    }
    Ok((out, changed))
}

/// A new passkey line against the people already enrolled: a person keeps one display name
/// for all their passkeys, and no two persons share one, so "approved by" always names one
/// person.
fn same_person_same_name(existing: &[Listed], line: &str) -> Result<(), String> {
    let record = PasskeyRecord::parse_line(line).map_err(|e| e.to_string())?;
    for other in existing.iter().filter(|l| l.kind == "passkey") {
        let new = record.person();
        match other.person.as_deref() {
            Some(old) if new == old && other.name != record.name() => {
                return Err(format!(
                    "person {new} is enrolled as {:?}; a second passkey of theirs must carry \
                     the same name (enrol again with --name {:?})",
                    other.name, other.name
                ));
            }
            Some(old) if new == old => {}
            _ if other.name == record.name() => {
                return Err(format!(
                    "{:?} is the name of another person ({}); two persons cannot share a name \
                     (if this is the same person, enrol with their person ID)",
                    other.name,
                    other.person.as_deref().unwrap_or("-"),
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// The file after `approvers remove WHO`: the approvers `who` names, each with its `# added`
/// comment, taken out; every other line untouched. `who` is a fingerprint (one passkey, or an
/// assistant key), a person ID (all of that person's passkeys), or a display name (all the
/// passkeys of the one person with that name). Refuses when nothing matches, and when the last
/// assistant key would go (the executor would not start).
pub fn remove(existing: &str, who: &str) -> Result<(String, Vec<Listed>), String> {
    let all = list(existing);
    let wanted = digits(who);
    let who = who.trim();
    let by_print: Vec<&Listed> = if wanted.is_empty() {
        Vec::new()
    } else {
        all.iter()
            .filter(|l| digits(&l.fingerprint) == wanted)
            .collect()
    };
    let matches = if !by_print.is_empty() {
        by_print
    } else {
        let by_person: Vec<&Listed> = all
            .iter()
            .filter(|l| l.person.as_deref() == Some(who))
            .collect();
        if !by_person.is_empty() {
            by_person
        } else {
            all.iter()
                .filter(|l| l.name == who && !l.name.is_empty())
                .collect()
        }
    };
    if matches.is_empty() {
        return Err(format!(
            "no approver has the person ID, name or fingerprint {who:?}; `approvers list` shows \
             them"
        ));
    }
    // A name shared by several (lines written by hand): say which to use.
    let persons: std::collections::BTreeSet<&str> = matches
        .iter()
        .map(|l| l.person.as_deref().unwrap_or(&l.fingerprint))
        .collect();
    if persons.len() > 1 || matches.iter().any(|l| l.kind == "assistant key") && matches.len() > 1 {
        return Err(format!(
            "{} approvers match {who:?}; remove one by its fingerprint (`approvers list` shows \
             them)",
            matches.len()
        ));
    }
    let keys = all.iter().filter(|l| l.kind == "assistant key").count();
    let keys_removed = matches.iter().filter(|l| l.kind == "assistant key").count();
    if keys_removed > 0 && keys_removed >= keys {
        return Err(
            "that is the only assistant key; the executor would not start without one \
                    (add the new key first)"
                .into(),
        );
    }
    // Fingerprints are ten bytes: a different passkey with the same one is not a concern, but
    // the exact SPKI would be; `Approvers` refuses two records with one key, so one match is one
    // passkey.
    let drop = |line: usize| {
        matches
            .iter()
            .any(|found| line == found.lines.0 || Some(line) == found.lines.1)
    };
    let text: String = existing
        .split_inclusive('\n')
        .enumerate()
        .filter(|(i, _)| !drop(i + 1))
        .map(|(_, l)| l)
        .collect();
    let removed = matches.into_iter().cloned().collect();
    Ok((text, removed))
}

/// Writes the approver file atomically: a temporary file beside it, written and synced, renamed
/// over the old one, and the folder synced; a reader sees the old file or the new one, never a
/// mix. The old file's owner, group and read bits are kept (a deployment's 0640
/// root:fleetwatch-exec stays so), never a write bit for group or others; a new file is 0644,
/// since it holds only public keys.
pub fn write_atomically(path: &Path, text: &str) -> Result<(), String> {
    let fail = |what: &str, e: &dyn std::fmt::Display| format!("{}: {what}: {e}", path.display());
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "approvers".into());
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let old = std::fs::symlink_metadata(path).ok();
    let owner = old.as_ref().map(|m| (m.uid(), m.gid()));
    let mode = old
        .as_ref()
        .map(|m| m.permissions().mode() & 0o755)
        .unwrap_or(0o644);
    let result = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .open(&tmp)
            .map_err(|e| fail("cannot create the temporary file", &e))?;
        file.write_all(text.as_bytes())
            .map_err(|e| fail("cannot write", &e))?;
        // The umask may have narrowed the mode given at creation.
        file.set_permissions(std::fs::Permissions::from_mode(mode))
            .map_err(|e| fail("cannot set the mode", &e))?;
        if let Some((uid, gid)) = owner {
            rustix::fs::fchown(
                &file,
                Some(rustix::fs::Uid::from_raw(uid)),
                Some(rustix::fs::Gid::from_raw(gid)),
            )
            .map_err(|e| fail("cannot keep the owner", &e))?;
        }
        file.sync_all().map_err(|e| fail("cannot sync", &e))?;
        std::fs::rename(&tmp, path).map_err(|e| fail("cannot replace the file", &e))?;
        let folder = std::fs::File::open(&dir).map_err(|e| fail("cannot open its folder", &e))?;
        folder
            .sync_all()
            .map_err(|e| fail("cannot sync its folder", &e))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
mod tests {
    use super::*;

    const KEY: &str = "ed25519 11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo= assistant";

    #[test]
    fn an_unknown_kind_is_named_by_its_line() {
        let err = parse(&format!("# c\n{KEY}\nrsa AAAA x\n"), Path::new("f")).unwrap_err();
        assert!(err.to_string().contains("line 3"), "{err}");
    }

    #[test]
    fn a_file_without_an_assistant_key_is_refused() {
        let err = parse("# nothing\n", Path::new("f")).unwrap_err();
        assert!(err.to_string().contains("no assistant key"), "{err}");
    }

    #[test]
    fn the_last_assistant_key_is_not_removed() {
        let text = format!("{KEY}\n");
        let listed = list(&text);
        assert_eq!(listed.len(), 1);
        let err = remove(&text, &listed[0].fingerprint).unwrap_err();
        assert!(err.contains("only assistant key"), "{err}");
    }
}
