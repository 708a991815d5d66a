//! Which permission categories the operator has opened.
//!
//! Every tool in `tool_policy.yaml` belongs to a category, and a fresh install opens none of
//! them. The state lives in `grants.json` in the state folder. The failure direction matters
//! more than anything else here: a missing file means nothing is granted, and a file that
//! cannot be trusted (malformed, oversized, a symlink, writable by others) is an error the
//! operator has to resolve — never a reason to fall back to "everything".

use std::collections::BTreeSet;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use fleetwatch_protocol::policy::Policy;
use serde::{Deserialize, Serialize};

/// The file name inside the state folder.
pub const FILE_NAME: &str = "grants.json";

/// A grants file larger than this is refused before it is read.
const MAX_FILE_BYTES: u64 = 64 * 1024;

/// The only file format version written and accepted.
const VERSION: u32 = 1;

/// Why the grants could not be read or changed.
#[derive(Debug, thiserror::Error)]
pub enum GrantsError {
    /// Reading or writing the file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// The file exists but is not safe to trust.
    #[error("{}: {problem}; fix it (chmod 600, owned by this user) or remove it to close every category", path.display())]
    Insecure {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// The file is not a grants file this version understands.
    #[error("{}: not a valid grants file ({problem}); nothing is granted until it is fixed or removed", path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// The category is not used by any entry of the policy.
    #[error("unknown category {category:?}; known categories: {}", known.join(", "))]
    UnknownCategory {
        /// What was asked for.
        category: String,
        /// The categories the policy uses, sorted.
        known: Vec<String>,
    },
}

/// On-disk form. Unknown fields are refused so a hand edit with a typo is noticed.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct GrantsFile {
    version: u32,
    open: Vec<String>,
}

/// The open categories. The default is nothing open.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grants {
    open: BTreeSet<String>,
}

/// Category names are short identifiers; anything else in the file means it was not written
/// by this code.
fn valid_category(name: &str) -> bool {
    let mut chars = name.chars();
    name.len() <= 64
        && chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

impl Grants {
    /// Reads the grants in `state_dir`. A missing file means nothing is granted.
    pub fn load(state_dir: &Path) -> Result<Grants, GrantsError> {
        let path = state_dir.join(FILE_NAME);
        // O_NOFOLLOW: a symlink planted in place of the file is refused rather than followed.
        let file = match OpenOptions::new()
            .read(true)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(&path)
        {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Grants::default()),
            Err(e) if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) => {
                return Err(GrantsError::Insecure {
                    path,
                    problem: "is a symbolic link".into(),
                });
            }
            Err(source) => return Err(GrantsError::Io { path, source }),
        };
        // Checked on the open handle, so the file judged is the file read.
        let meta = file.metadata().map_err(|source| GrantsError::Io {
            path: path.clone(),
            source,
        })?;
        check_trusted(&path, &meta)?;
        if meta.len() > MAX_FILE_BYTES {
            return Err(GrantsError::Malformed {
                path,
                problem: format!("larger than {MAX_FILE_BYTES} bytes"),
            });
        }
        let mut text = String::new();
        file.take(MAX_FILE_BYTES + 1)
            .read_to_string(&mut text)
            .map_err(|source| GrantsError::Io {
                path: path.clone(),
                source,
            })?;
        parse(&path, &text)
    }

    /// Whether tools of `category` may be shown, called or proposed.
    pub fn is_open(&self, category: &str) -> bool {
        self.open.contains(category)
    }

    /// The open categories, sorted.
    pub fn open_categories(&self) -> impl Iterator<Item = &str> {
        self.open.iter().map(String::as_str)
    }
}

fn check_trusted(path: &Path, meta: &fs::Metadata) -> Result<(), GrantsError> {
    let insecure = |problem: String| GrantsError::Insecure {
        path: path.to_owned(),
        problem,
    };
    if !meta.is_file() {
        return Err(insecure("is not a regular file".into()));
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(insecure(format!(
            "is writable by group or others (mode {mode:04o})"
        )));
    }
    let me = rustix::process::geteuid().as_raw();
    if meta.uid() != me {
        return Err(insecure(format!(
            "is owned by uid {}, not by uid {me}",
            meta.uid()
        )));
    }
    Ok(())
}

fn parse(path: &Path, text: &str) -> Result<Grants, GrantsError> {
    let malformed = |problem: String| GrantsError::Malformed {
        path: path.to_owned(),
        problem,
    };
    let file: GrantsFile = serde_json::from_str(text).map_err(|e| malformed(e.to_string()))?;
    if file.version != VERSION {
        return Err(malformed(format!(
            "version {} (expected {VERSION})",
            file.version
        )));
    }
    let mut open = BTreeSet::new();
    for category in file.open {
        if !valid_category(&category) {
            return Err(malformed(format!("invalid category name {category:?}")));
        }
        if !open.insert(category) {
            return Err(malformed("a category is listed twice".into()));
        }
    }
    Ok(Grants { open })
}

/// The categories used by any entry of the policy, sorted.
fn known_categories(policy: &Policy) -> BTreeSet<String> {
    policy
        .read_tools()
        .map(|t| t.category.clone())
        .chain(policy.propose_entries().map(|e| e.category.clone()))
        .collect()
}

/// Opens `category`. A category no policy entry uses is refused with the list of known ones,
/// so a typo never silently grants nothing (or something else).
pub fn open(state_dir: &Path, policy: &Policy, category: &str) -> Result<Grants, GrantsError> {
    let known = known_categories(policy);
    if !known.contains(category) {
        return Err(GrantsError::UnknownCategory {
            category: category.to_owned(),
            known: known.into_iter().collect(),
        });
    }
    // A file that cannot be trusted is not silently replaced: the error tells the operator.
    let mut grants = Grants::load(state_dir)?;
    grants.open.insert(category.to_owned());
    save(state_dir, &grants)?;
    Ok(grants)
}

/// Closes `category` (closing one that is not open is not an error). The next model turn
/// reloads the file, and the page reads it for every card it shows and every approval it
/// consumes, so the category's pending cards offer only Deny at once.
pub fn close(state_dir: &Path, category: &str) -> Result<Grants, GrantsError> {
    let mut grants = Grants::load(state_dir)?;
    grants.open.remove(category);
    save(state_dir, &grants)?;
    Ok(grants)
}

/// A table of every category: open or closed, and the tools in it.
pub fn list(state_dir: &Path, policy: &Policy) -> Result<String, GrantsError> {
    let grants = Grants::load(state_dir)?;
    let mut rows: Vec<(String, String, String)> = Vec::new();
    for category in known_categories(policy) {
        let read: Vec<&str> = policy
            .read_tools()
            .filter(|t| t.category == category)
            .map(|t| t.name.as_str())
            .collect();
        let propose: Vec<&str> = policy
            .propose_entries()
            .filter(|e| e.category == category)
            .map(|e| e.name.as_str())
            .collect();
        // A fleet tool opens with the category of the read it requires.
        let fleet: Vec<&str> = policy
            .fleet_tools()
            .filter(|f| {
                f.reads
                    .first()
                    .and_then(|r| policy.read_tool(r))
                    .is_some_and(|r| r.category == category)
            })
            .map(|f| f.name.as_str())
            .collect();
        let mut tools = Vec::new();
        if !read.is_empty() {
            tools.push(format!("read: {}", read.join(", ")));
        }
        if !fleet.is_empty() {
            tools.push(format!("fleet: {}", fleet.join(", ")));
        }
        if !propose.is_empty() {
            tools.push(format!("propose: {}", propose.join(", ")));
        }
        let state = if grants.is_open(&category) {
            "open"
        } else {
            "closed"
        };
        rows.push((category, state.to_owned(), tools.join("; ")));
    }
    // Open in the file but gone from the policy: shown so the operator can close it.
    let known = known_categories(policy);
    for category in grants.open_categories().filter(|c| !known.contains(*c)) {
        rows.push((
            category.to_owned(),
            "open".to_owned(),
            "(not in the policy)".to_owned(),
        ));
    }
    let width = rows
        .iter()
        .map(|r| r.0.len())
        .max()
        .unwrap_or(0)
        .max("category".len());
    let mut out = format!("{:<width$}  {:<6}  tools\n", "category", "state");
    for (category, state, tools) in rows {
        out.push_str(&format!("{category:<width$}  {state:<6}  {tools}\n"));
    }
    Ok(out)
}

/// Writes the grants: a fresh 0600 temp file in the same folder, synced, then renamed over
/// the old file, so a crash leaves either the old grants or the new ones, never half a file.
fn save(state_dir: &Path, grants: &Grants) -> Result<(), GrantsError> {
    let io_err = |path: &Path| {
        let path = path.to_owned();
        move |source| GrantsError::Io { path, source }
    };
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(state_dir)
        .map_err(io_err(state_dir))?;
    let body = GrantsFile {
        version: VERSION,
        open: grants.open.iter().cloned().collect(),
    };
    let mut text = serde_json::to_string_pretty(&body).map_err(|e| GrantsError::Io {
        path: state_dir.join(FILE_NAME),
        source: io::Error::other(e),
    })?;
    text.push('\n');

    let mut suffix = [0u8; 8];
    getrandom::fill(&mut suffix).map_err(|e| GrantsError::Io {
        path: state_dir.to_owned(),
        source: io::Error::other(e),
    })?;
    let hex = fleetwatch_protocol::hex::encode(&suffix);
    let tmp = state_dir.join(format!(".{FILE_NAME}.{hex}.tmp"));
    let target = state_dir.join(FILE_NAME);

    let result = (|| {
        let mut file: File = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(&tmp)
            .map_err(io_err(&tmp))?;
        // The umask can only narrow 0600, but set it outright so the mode never depends on it.
        file.set_permissions(fs::Permissions::from_mode(0o600))
            .map_err(io_err(&tmp))?;
        file.write_all(text.as_bytes()).map_err(io_err(&tmp))?;
        file.sync_all().map_err(io_err(&tmp))?;
        fs::rename(&tmp, &target).map_err(io_err(&target))?;
        // Sync the folder so the rename itself survives a crash.
        File::open(state_dir)
            .and_then(|d| d.sync_all())
            .map_err(io_err(state_dir))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn category_names() {
        for ok in ["fleet", "schedule", "x", "a_b-c9"] {
            assert!(valid_category(ok), "{ok}");
        }
        for bad in ["", "Fleet", "9x", "a b", "fleet\n", "ü", &"a".repeat(65)] {
            assert!(!valid_category(bad), "{bad:?}");
        }
    }

    #[test]
    fn parse_refuses_anything_unexpected() {
        let p = Path::new("grants.json");
        assert!(parse(p, r#"{"version":1,"open":[]}"#).is_ok());
        for bad in [
            "",
            "null",
            "[]",
            r#"{"open":["fleet"]}"#,
            r#"{"version":2,"open":["fleet"]}"#,
            r#"{"version":1,"open":"*"}"#,
            r#"{"version":1,"open":["*"]}"#,
            r#"{"version":1,"open":["fleet","fleet"]}"#,
            r#"{"version":1,"open":["fleet"],"all":true}"#,
            r#"{"version":1,"open":[true]}"#,
        ] {
            assert!(
                matches!(parse(p, bad), Err(GrantsError::Malformed { .. })),
                "{bad}"
            );
        }
    }
}
