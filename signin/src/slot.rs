//! One sign-in's token slot: a file only its owner can read, and a lock file beside it.
//!
//! The file holds either a static token (plain text, as an operator may paste it) or the JSON
//! record an OAuth login writes: tokens, expiry, the token endpoint and client to refresh
//! with, a generation counter, and — once a refresh was refused — the dead mark.
//!
//! Hazards handled here:
//! * A reader must never see half a file and the token must never be readable by others for
//!   a moment: every write goes to a fresh temporary file created 0600 with
//!   `O_EXCL|O_NOFOLLOW`, is synced, then renamed over the slot.
//! * Refresh tokens rotate: the old one stops working once the new one is issued. Two
//!   processes refreshing the same slot at once would make one of them present a spent token
//!   and kill the sign-in. So the refresh happens under an exclusive `flock` on `<slot>.lock`,
//!   and the slot is read again after the lock is taken: if another process already rotated
//!   it (the generation moved) its fresh token is used instead of refreshing a second time.
//! * A refused refresh (HTTP 400/401) cannot succeed later; it is written into the slot so
//!   every process stops asking until someone signs in again. A 5xx or a network failure is
//!   not a refusal and leaves the slot alive.

use std::fs::File;
use std::io::{Read as _, Write as _};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use jiff::Timestamp;
use rustix::fs::{FlockOperation, Mode, OFlags};
use serde::{Deserialize, Serialize};

use crate::http::{self, Field, TokenOutcome};
use crate::{Secret, SignInDead, SignInError};

/// Refresh when the access token has less than this left, so a read never starts with a
/// token that expires mid-call.
pub const REFRESH_MARGIN_SECS: i64 = 60;

/// Largest slot file read.
const MAX_SLOT: u64 = 64 * 1024;

/// How long to wait for another process's refresh to finish.
const LOCK_WAIT: Duration = Duration::from_secs(90);

/// Bound on one token request.
const TOKEN_TIMEOUT: Duration = Duration::from_secs(30);

/// The OAuth record as stored. Holds secrets, so no `Debug`.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Record {
    pub version: u32,
    /// Moves on every write, so a process can tell that another one refreshed.
    pub generation: u64,
    #[serde(default)]
    pub access_token: Option<Secret>,
    #[serde(default)]
    pub refresh_token: Option<Secret>,
    /// Unix seconds; `None` when the server gave no lifetime.
    #[serde(default)]
    pub expires_at: Option<i64>,
    pub issuer: String,
    pub token_endpoint: String,
    pub client_id: String,
    #[serde(default)]
    pub client_secret: Option<Secret>,
    /// The MCP URL the tokens are for (RFC 8707 `resource`).
    pub resource: String,
    #[serde(default)]
    pub dead: Option<DeadMark>,
    /// The scopes granted (space-separated): as the server said, else as asked for.
    #[serde(default)]
    pub scope: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DeadMark {
    pub since: i64,
    pub reason: String,
}

impl Record {
    fn needs_refresh(&self, now: i64) -> bool {
        self.expires_at
            .is_some_and(|at| at.saturating_sub(REFRESH_MARGIN_SECS) <= now)
    }

    fn expired(&self, now: i64) -> bool {
        self.expires_at.is_some_and(|at| at <= now)
    }

    fn dead(&self) -> Option<SignInDead> {
        self.dead.as_ref().map(|d| SignInDead {
            since: Timestamp::from_second(d.since).unwrap_or(Timestamp::UNIX_EPOCH),
            reason: d.reason.clone(),
        })
    }
}

enum Content {
    Static(Secret),
    OAuth(Box<Record>),
}

/// What a slot holds, for `doctor` and status lines. Reveals nothing secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlotStatus {
    /// Nothing stored.
    Empty,
    /// A static bearer token (no expiry known, nothing to renew).
    Static,
    /// An OAuth sign-in.
    SignedIn {
        /// When the current access token expires, if the server said.
        expires_at: Option<Timestamp>,
        /// Whether a refresh token is held to renew it.
        renewable: bool,
        /// The authorization server.
        issuer: String,
    },
    /// A refresh was refused; nothing is used until the next login.
    Dead(SignInDead),
}

impl std::fmt::Display for SlotStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SlotStatus::Empty => write!(f, "not signed in"),
            SlotStatus::Static => write!(f, "signed in with a static token (no expiry known)"),
            SlotStatus::SignedIn {
                expires_at,
                renewable,
                issuer,
            } => {
                write!(f, "signed in through {issuer}")?;
                match expires_at {
                    Some(at) => write!(
                        f,
                        "; access token expires at {}",
                        at.strftime("%Y-%m-%d %H:%M:%S UTC")
                    )?,
                    None => write!(f, "; no expiry given")?,
                }
                if *renewable {
                    write!(f, ", renewed automatically")
                } else {
                    write!(f, ", cannot be renewed (no refresh token)")
                }
            }
            SlotStatus::Dead(dead) => write!(f, "{dead}"),
        }
    }
}

/// One sign-in's slot.
pub struct Slot {
    path: PathBuf,
    allow_loopback_http: bool,
}

fn now() -> i64 {
    Timestamp::now().as_second()
}

impl Slot {
    /// The slot at `path`. `allow_loopback_http` is the one test setting: it lets the token
    /// endpoint be `http://` on loopback, as the simulator is.
    pub fn new(path: impl Into<PathBuf>, allow_loopback_http: bool) -> Slot {
        Slot {
            path: path.into(),
            allow_loopback_http,
        }
    }

    /// The slot file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn lock_path(&self) -> PathBuf {
        let mut name = self.path.as_os_str().to_owned();
        name.push(".lock");
        PathBuf::from(name)
    }

    fn slot_error(&self, problem: impl Into<String>) -> SignInError {
        SignInError::Slot {
            path: self.path.display().to_string(),
            problem: problem.into(),
        }
    }

    /// The slot's state, without any network call.
    pub fn status(&self) -> Result<SlotStatus, SignInError> {
        Ok(match self.read()? {
            None => SlotStatus::Empty,
            Some(Content::Static(_)) => SlotStatus::Static,
            Some(Content::OAuth(r)) => match r.dead() {
                Some(dead) => SlotStatus::Dead(dead),
                None => SlotStatus::SignedIn {
                    expires_at: r.expires_at.and_then(|s| Timestamp::from_second(s).ok()),
                    renewable: r.refresh_token.is_some(),
                    issuer: r.issuer.clone(),
                },
            },
        })
    }

    /// A bearer token to use now: the stored one, or a renewed one when it expires within
    /// [`REFRESH_MARGIN_SECS`]. A dead slot answers [`SignInError::Dead`] without asking the
    /// server anything.
    pub async fn bearer(&self) -> Result<Secret, SignInError> {
        let record = match self.read()? {
            None => return Err(SignInError::Missing),
            Some(Content::Static(token)) => return Ok(token),
            Some(Content::OAuth(r)) => r,
        };
        if let Some(dead) = record.dead() {
            return Err(SignInError::Dead(dead));
        }
        if !record.needs_refresh(now()) {
            return record.access_token.ok_or(SignInError::Expired);
        }
        let seen = record.generation;
        let lock = self.lock().await?;
        let result = self.refresh_locked(seen).await;
        drop(lock);
        result
    }

    async fn refresh_locked(&self, seen: u64) -> Result<Secret, SignInError> {
        // Read again under the lock: another process may have refreshed (or died) meanwhile.
        let record = match self.read()? {
            None => return Err(SignInError::Missing),
            Some(Content::Static(token)) => return Ok(token),
            Some(Content::OAuth(r)) => r,
        };
        if let Some(dead) = record.dead() {
            return Err(SignInError::Dead(dead));
        }
        let now = now();
        if record.generation != seen && !record.expired(now) || !record.needs_refresh(now) {
            return record.access_token.ok_or(SignInError::Expired);
        }
        let Some(refresh_token) = record.refresh_token.as_ref() else {
            return if record.expired(now) {
                Err(SignInError::Expired)
            } else {
                record.access_token.ok_or(SignInError::Expired)
            };
        };
        let endpoint = crate::check_url(
            "the token endpoint",
            &record.token_endpoint,
            self.allow_loopback_http,
        )
        .map_err(SignInError::Url)?;
        let client = http::client(TOKEN_TIMEOUT).map_err(SignInError::Transient)?;
        let mut fields = vec![
            ("grant_type", Field::Text("refresh_token")),
            ("refresh_token", Field::Secret(refresh_token)),
            ("client_id", Field::Text(&record.client_id)),
            ("resource", Field::Text(&record.resource)),
        ];
        if let Some(secret) = &record.client_secret {
            fields.push(("client_secret", Field::Secret(secret)));
        }
        match http::token_request(&client, &endpoint, &fields).await {
            TokenOutcome::Issued(tokens) => {
                let access = tokens.access_token.clone();
                let renewed = Record {
                    generation: record.generation.wrapping_add(1),
                    access_token: Some(tokens.access_token),
                    // Without a new refresh token the old one stays valid (RFC 6749 §6).
                    refresh_token: tokens.refresh_token.or(record.refresh_token.clone()),
                    expires_at: tokens
                        .expires_in
                        .map(|s| now.saturating_add(i64::try_from(s).unwrap_or(i64::MAX))),
                    scope: tokens.scope.or(record.scope.clone()),
                    ..*record
                };
                if let Err(e) = self.write_record(&renewed) {
                    // The new token works for this call; the slot keeps the spent refresh
                    // token, so the next refresh will be refused and mark it dead.
                    tracing::error!(slot = %self.path.display(), error = %e, "could not store the renewed sign-in");
                }
                tracing::info!(slot = %self.path.display(), "sign-in renewed");
                Ok(access)
            }
            TokenOutcome::Refused(why) => {
                let reason = format!("the authorization server refused to renew it ({why})");
                tracing::warn!(slot = %self.path.display(), %reason, "sign-in is dead; sign in again");
                let dead = Record {
                    generation: record.generation.wrapping_add(1),
                    access_token: None,
                    refresh_token: None,
                    expires_at: None,
                    client_secret: None,
                    dead: Some(DeadMark {
                        since: now,
                        reason: reason.clone(),
                    }),
                    ..*record
                };
                self.write_record(&dead)?;
                Err(SignInError::Dead(SignInDead {
                    since: Timestamp::from_second(now).unwrap_or(Timestamp::UNIX_EPOCH),
                    reason,
                }))
            }
            TokenOutcome::Transient(why) => {
                tracing::warn!(slot = %self.path.display(), %why, "could not renew the sign-in; will try again on the next use");
                if record.expired(now) {
                    Err(SignInError::Transient(why))
                } else {
                    record.access_token.ok_or(SignInError::Transient(why))
                }
            }
        }
    }

    /// The scopes an OAuth sign-in was granted (as the server said, else as asked for);
    /// `None` for a static token or an OAuth sign-in stored before scopes were kept, whose
    /// powers nothing here can tell.
    pub fn scopes(&self) -> Result<Option<Vec<String>>, SignInError> {
        Ok(match self.read()? {
            Some(Content::OAuth(record)) => record
                .scope
                .map(|s| s.split_whitespace().map(str::to_owned).collect()),
            _ => None,
        })
    }

    /// A slot beside this one (`.<name>.new`, same folder, 0600) where a new sign-in is
    /// written and checked before [`Slot::adopt`] puts it in place: until then, whoever uses
    /// this slot keeps the sign-in it had, and a refused one never replaces it.
    pub fn staging(&self) -> Slot {
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "slot".into());
        Slot {
            path: self.dir().join(format!(".{name}.new")),
            allow_loopback_http: self.allow_loopback_http,
        }
    }

    /// Puts a checked sign-in from `staged` in place, in one rename under this slot's lock (an
    /// OAuth record's generation moves on from the one it replaces, so a process holding the
    /// old one sees the change), and removes the staged file.
    pub async fn adopt(&self, staged: &Slot) -> Result<(), SignInError> {
        let content = {
            let _staged_lock = staged.lock().await?;
            staged.read()?
        };
        let Some(content) = content else {
            return Err(staged.slot_error("holds no sign-in to put in place"));
        };
        {
            let _lock = self.lock().await?;
            match content {
                Content::Static(token) => self.write_bytes(token.expose().as_bytes())?,
                Content::OAuth(mut record) => {
                    if let Ok(Some(Content::OAuth(old))) = self.read() {
                        record.generation = old.generation.wrapping_add(1);
                    }
                    self.write_record(&record)?;
                }
            }
        }
        staged.forget().await?;
        Ok(())
    }

    /// Stores a static bearer token, as plain text.
    pub async fn store_static(&self, token: &Secret) -> Result<(), SignInError> {
        let _lock = self.lock().await?;
        self.write_bytes(token.expose().as_bytes())
    }

    pub(crate) async fn store_record(&self, record: &mut Record) -> Result<(), SignInError> {
        let _lock = self.lock().await?;
        if let Ok(Some(Content::OAuth(old))) = self.read() {
            record.generation = old.generation.wrapping_add(1);
        }
        self.write_record(record)
    }

    /// Deletes the slot. Returns whether there was one. The lock file stays: removing it
    /// while another process holds it would let a third lock a different file.
    pub async fn forget(&self) -> Result<bool, SignInError> {
        let _lock = self.lock().await?;
        match std::fs::remove_file(&self.path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(self.slot_error(format!("could not delete it: {e}"))),
        }
    }

    fn write_record(&self, record: &Record) -> Result<(), SignInError> {
        let text = serde_json::to_vec_pretty(record)
            .map_err(|_| self.slot_error("could not encode the sign-in"))?;
        self.write_bytes(&text)
    }

    fn dir(&self) -> PathBuf {
        match self.path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        }
    }

    fn write_bytes(&self, bytes: &[u8]) -> Result<(), SignInError> {
        let dir = self.dir();
        check_dir(&dir).map_err(|p| self.slot_error(p))?;
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "slot".into());
        let suffix = crate::secret::random(9).map_err(|e| self.slot_error(e))?;
        // Random name, O_EXCL and O_NOFOLLOW: a file or link planted at a guessable name
        // cannot receive the token.
        let tmp = dir.join(format!(".{name}.{}.tmp", suffix.expose()));
        let io = |e: std::io::Error| self.slot_error(format!("could not write it: {e}"));
        let fd = rustix::fs::open(
            &tmp,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
        .map_err(|e| io(e.into()))?;
        let mut file = File::from(fd);
        let written = file
            .write_all(bytes)
            .and_then(|()| file.sync_all())
            .and_then(|()| std::fs::rename(&tmp, &self.path));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(io(e));
        }
        if let Ok(d) = File::open(&dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }

    /// Reads the slot, refusing a file that is not a regular file of ours, or that group or
    /// others could read or change.
    fn read(&self) -> Result<Option<Content>, SignInError> {
        let fd = match rustix::fs::open(
            &self.path,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT) => return Ok(None),
            Err(rustix::io::Errno::LOOP) => {
                return Err(self.slot_error("is a symbolic link; replace it with a regular file"));
            }
            Err(e) => return Err(self.slot_error(format!("cannot be read ({e})"))),
        };
        check_dir(&self.dir()).map_err(|p| self.slot_error(p))?;
        let file = File::from(fd);
        let meta = file
            .metadata()
            .map_err(|e| self.slot_error(format!("cannot be examined ({e})")))?;
        if !meta.file_type().is_file() {
            return Err(self.slot_error("is not a regular file"));
        }
        let me = rustix::process::geteuid().as_raw();
        if meta.uid() != me {
            return Err(self.slot_error(format!(
                "is owned by uid {}, not by this user (uid {me}); run `chown {me} {}`",
                meta.uid(),
                self.path.display()
            )));
        }
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(self.slot_error(format!(
                "is readable or writable by group or others (mode {mode:04o}); run `chmod 600 {}`",
                self.path.display()
            )));
        }
        let mut text = String::new();
        file.take(MAX_SLOT)
            .read_to_string(&mut text)
            .map_err(|e| self.slot_error(format!("cannot be read ({e})")))?;
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Ok(None);
        }
        if trimmed.starts_with('{') {
            let record: Record = serde_json::from_str(trimmed).map_err(|_| {
                self.slot_error("is not a sign-in this program wrote; sign in again")
            })?;
            if record.version != 1 {
                return Err(self.slot_error(format!(
                    "has format version {}, which this program does not know",
                    record.version
                )));
            }
            return Ok(Some(Content::OAuth(Box::new(record))));
        }
        // A pasted "Bearer …" is accepted: the scheme is added again when sending.
        let bare = trimmed
            .strip_prefix("Bearer ")
            .or_else(|| trimmed.strip_prefix("bearer "))
            .unwrap_or(trimmed);
        Secret::new(bare)
            .map(|s| Some(Content::Static(s)))
            .ok_or_else(|| self.slot_error("holds no usable token; sign in again"))
    }

    /// Takes the exclusive lock, waiting (without blocking the runtime) for another process's
    /// refresh to finish. Released when the returned file is dropped.
    async fn lock(&self) -> Result<File, SignInError> {
        let dir = self.dir();
        check_dir(&dir).map_err(|p| self.slot_error(p))?;
        let path = self.lock_path();
        let fd = rustix::fs::open(
            &path,
            OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
        .map_err(|e| SignInError::Slot {
            path: path.display().to_string(),
            problem: format!("cannot open the lock file ({e})"),
        })?;
        let deadline = tokio::time::Instant::now() + LOCK_WAIT;
        loop {
            match rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => return Ok(File::from(fd)),
                Err(rustix::io::Errno::WOULDBLOCK) | Err(rustix::io::Errno::INTR) => {}
                Err(e) => {
                    return Err(SignInError::Slot {
                        path: path.display().to_string(),
                        problem: format!("cannot be locked ({e})"),
                    });
                }
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(SignInError::Transient(
                    "another process kept the sign-in locked".into(),
                ));
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }
}

/// The folder holding a slot must not be changeable by group or others (or a token could be
/// swapped underneath), and must belong to this user or root.
fn check_dir(dir: &Path) -> Result<(), String> {
    let meta = std::fs::symlink_metadata(dir)
        .map_err(|e| format!("its folder {} cannot be examined ({e})", dir.display()))?;
    if !meta.file_type().is_dir() {
        return Err(format!("{} is not a folder", dir.display()));
    }
    let me = rustix::process::geteuid().as_raw();
    if meta.uid() != me && meta.uid() != 0 {
        return Err(format!(
            "its folder {} is owned by uid {}, not by this user (uid {me}) or root",
            dir.display(),
            meta.uid()
        ));
    }
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(format!(
            "its folder {} is writable by group or others (mode {mode:04o}); run `chmod go-w {}`",
            dir.display(),
            dir.display()
        ));
    }
    Ok(())
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

    fn dir() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        d
    }

    fn record(expires_at: Option<i64>) -> Record {
        Record {
            version: 1,
            generation: 0,
            access_token: Secret::new("access-1"),
            refresh_token: Secret::new("refresh-1"),
            expires_at,
            issuer: "http://127.0.0.1:9".into(),
            token_endpoint: "http://127.0.0.1:9/token".into(),
            client_id: "c".into(),
            client_secret: None,
            resource: "http://127.0.0.1:9/mcp".into(),
            dead: None,
            scope: None,
        }
    }

    #[tokio::test]
    async fn static_tokens_are_plain_text_0600_and_forgotten() {
        let d = dir();
        let slot = Slot::new(d.path().join("s.token"), false);
        assert_eq!(slot.status().unwrap(), SlotStatus::Empty);
        assert!(matches!(slot.bearer().await, Err(SignInError::Missing)));
        slot.store_static(&Secret::new("tok").unwrap())
            .await
            .unwrap();
        assert_eq!(std::fs::read_to_string(slot.path()).unwrap(), "tok");
        let mode = std::fs::metadata(slot.path()).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(slot.status().unwrap(), SlotStatus::Static);
        assert_eq!(slot.bearer().await.unwrap().expose(), "tok");
        assert!(slot.forget().await.unwrap());
        assert!(!slot.path().exists());
        assert!(!slot.forget().await.unwrap());
        // Nothing but the lock file is left behind: no temporary file holds the token.
        let left: Vec<_> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(left, vec!["s.token.lock".to_string()]);
    }

    #[tokio::test]
    async fn unsafe_slots_are_refused() {
        let d = dir();
        let path = d.path().join("s.token");
        let slot = Slot::new(&path, false);
        std::fs::write(&path, "tok").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        let err = slot.status().unwrap_err().to_string();
        assert!(err.contains("chmod 600"), "{err}");
        std::fs::remove_file(&path).unwrap();
        let real = d.path().join("real");
        std::fs::write(&real, "tok").unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::os::unix::fs::symlink(&real, &path).unwrap();
        let err = slot.status().unwrap_err().to_string();
        assert!(err.contains("symbolic link"), "{err}");
        // Writing through a link is refused too: the rename replaces the link, never its target.
        slot.store_static(&Secret::new("new").unwrap())
            .await
            .unwrap();
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "tok");
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = slot.status().unwrap_err().to_string();
        assert!(err.contains("chmod go-w"), "{err}");
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    }

    #[tokio::test]
    async fn a_fresh_token_is_used_without_asking_and_a_dead_slot_never_asks() {
        let d = dir();
        let slot = Slot::new(d.path().join("s.token"), true);
        // The token endpoint points at a closed port: any request would fail.
        let mut r = record(Some(now() + 3600));
        slot.store_record(&mut r).await.unwrap();
        assert_eq!(slot.bearer().await.unwrap().expose(), "access-1");
        assert!(matches!(
            slot.status().unwrap(),
            SlotStatus::SignedIn {
                renewable: true,
                ..
            }
        ));
        let mut dead = record(None);
        dead.dead = Some(DeadMark {
            since: now(),
            reason: "refused".into(),
        });
        slot.store_record(&mut dead).await.unwrap();
        assert!(slot.bearer().await.err().unwrap().is_dead());
        assert!(matches!(slot.status().unwrap(), SlotStatus::Dead(_)));
    }

    #[tokio::test]
    async fn an_unreachable_token_endpoint_is_transient() {
        let d = dir();
        let slot = Slot::new(d.path().join("s.token"), true);
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = closed.local_addr().unwrap().port();
        drop(closed);
        let mut r = record(Some(now() + 10));
        r.token_endpoint = format!("http://127.0.0.1:{port}/token");
        slot.store_record(&mut r).await.unwrap();
        // Still valid for a few seconds: the old token is used and the slot stays alive.
        assert_eq!(slot.bearer().await.unwrap().expose(), "access-1");
        let mut r = record(Some(now() - 1));
        r.token_endpoint = format!("http://127.0.0.1:{port}/token");
        slot.store_record(&mut r).await.unwrap();
        assert!(matches!(
            slot.bearer().await,
            Err(SignInError::Transient(_))
        ));
        assert!(matches!(
            slot.status().unwrap(),
            SlotStatus::SignedIn { .. }
        ));
    }

    #[tokio::test]
    async fn an_http_token_endpoint_needs_the_test_setting() {
        let d = dir();
        let slot = Slot::new(d.path().join("s.token"), false);
        let mut r = record(Some(now() - 1));
        slot.store_record(&mut r).await.unwrap();
        assert!(matches!(slot.bearer().await, Err(SignInError::Url(_))));
    }
}
