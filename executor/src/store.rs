//! `executor.db`: used nonces, executions and the audit chain. WAL with `synchronous=FULL`, so
//! a nonce the executor acknowledged storing survives a crash or power loss.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use fleetwatch_protocol::claims::SignedApproval;
use fleetwatch_protocol::hex;
use fleetwatch_protocol::passkey::CredentialUse;
use fleetwatch_protocol::receipt::Statement;
use rusqlite::{Connection, ErrorCode, OptionalExtension as _, params};

use crate::audit::{self, Entry};

/// How long a statement waits for another connection's lock.
const BUSY_TIMEOUT_MS: u32 = 5_000;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS nonces (
    approval_id BLOB PRIMARY KEY,
    stored_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS executions (
    approval_id BLOB PRIMARY KEY REFERENCES nonces(approval_id),
    tool TEXT NOT NULL,
    targets TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('in_flight', 'done', 'error', 'unknown', 'refused')),
    reason TEXT NOT NULL DEFAULT '',
    started_at INTEGER NOT NULL,
    finished_at INTEGER
);
CREATE TABLE IF NOT EXISTS execution_targets (
    approval_id BLOB NOT NULL REFERENCES executions(approval_id),
    device_id TEXT NOT NULL,
    disruptive INTEGER NOT NULL CHECK (disruptive IN (0, 1)),
    PRIMARY KEY (approval_id, device_id)
);
CREATE INDEX IF NOT EXISTS executions_started ON executions (started_at);
CREATE INDEX IF NOT EXISTS execution_targets_device ON execution_targets (device_id, disruptive);
CREATE TABLE IF NOT EXISTS evidence (
    approval_id BLOB PRIMARY KEY REFERENCES nonces(approval_id),
    proposal_id INTEGER NOT NULL,
    claims BLOB NOT NULL,
    approval TEXT NOT NULL,
    quorum INTEGER NOT NULL,
    codes TEXT NOT NULL DEFAULT '{}',
    statement TEXT,
    statement_signature BLOB,
    approvers TEXT
);
CREATE INDEX IF NOT EXISTS evidence_proposal ON evidence (proposal_id);
CREATE INDEX IF NOT EXISTS audit_approval ON audit (approval_id);
CREATE TABLE IF NOT EXISTS passkey_counters (
    credential_id BLOB PRIMARY KEY,
    counter INTEGER NOT NULL CHECK (counter BETWEEN 0 AND 4294967295),
    updated_at INTEGER NOT NULL
);
";

/// Final states of an execution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Final {
    /// Every device worked.
    Done,
    /// Per-device errors.
    Error,
    /// Sent, no trustworthy answer.
    Unknown,
    /// A check after the nonce refused; nothing was sent.
    Refused,
}

impl Final {
    fn as_str(self) -> &'static str {
        match self {
            Final::Done => "done",
            Final::Error => "error",
            Final::Unknown => "unknown",
            Final::Refused => "refused",
        }
    }
}

/// Why the nonce was not stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NonceError {
    /// The primary key already holds it.
    Replayed,
    /// A passkey's signature counter did not increase; nothing was stored.
    CounterNotIncreased,
    /// The insert failed for another reason (disk full, read-only, locked).
    NotStored,
}

/// Why [`Store::reserve`] refused a write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LimitError {
    /// A target's last disruptive write is inside the cooldown.
    CoolingDown {
        /// Seconds until it ends.
        remaining_secs: i64,
    },
    /// The hourly cap is reached.
    HourlyLimit,
    /// The store could not be read or written.
    Store,
}

/// One device's last disruptive write, inside the cooldown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resting {
    /// Device ID.
    pub device: String,
    /// When (Unix seconds): the write's finish, or its start while in flight.
    pub changed_at: i64,
}

/// When a write counts from, in SQL: its finish, or its start while it is in flight.
const WRITE_TIME: &str = "COALESCE(e.finished_at, e.started_at)";

/// What one approval asks the nonce's transaction to store besides the nonce.
#[derive(Debug)]
pub struct Approved<'a> {
    /// The assistant's proposal number.
    pub proposal_id: u64,
    /// The tool.
    pub tool: &'a str,
    /// The signed targets, comma-separated.
    pub targets: &'a str,
    /// The assistant's audit chain head it sent.
    pub assistant_head: &'a [u8; 32],
    /// One entry per distinct passkey that verified.
    pub passkeys: &'a [CredentialUse],
    /// The signed approval exactly as received (claims bytes, signatures, assertions): the
    /// receipt's evidence.
    pub approval: &'a SignedApproval,
    /// Who the assistant says asked for the change (empty: nobody known).
    pub asked_by: &'a str,
    /// The approver lines that verified it, as receipts name them
    /// ([`fleetwatch_protocol::receipt::approver_line`]), sorted.
    pub approver_lines: &'a [String],
    /// How many distinct persons this change needed.
    pub quorum: u32,
}

/// What signs each outcome's receipt statement (DESIGN §11): the receipt key and the passkey
/// settings the assertions were checked against.
pub struct Receipts {
    /// The receipt key.
    pub key: ed25519_dalek::SigningKey,
    /// The passkey RP ID.
    pub rp_id: String,
    /// The origins assertions are accepted from.
    pub origins: Vec<String>,
}

/// The open database. One connection behind a mutex: every statement is short and the
/// primary key, not the mutex, is what makes a nonce single-use.
pub struct Store {
    conn: Mutex<Connection>,
    bursts: Mutex<HashMap<(&'static str, String, String), Burst>>,
    receipts: Option<Receipts>,
}

/// How often one refusal that names no approval is written per kind, code and peer.
const BURST: Duration = Duration::from_secs(1);

/// Refusals of one kind, code and peer since the last row written for them.
struct Burst {
    written: Instant,
    held: u64,
    last: Entry,
}

/// `detail`, with ` n=COUNT` when the row stands for more than one refusal.
fn counted(mut entry: Entry, count: u64) -> Entry {
    if count > 1 {
        entry.detail = format!("{} n={count}", entry.detail)
            .trim_start()
            .to_owned();
    }
    entry
}

/// Opens a connection with the pragmas every connection needs.
pub fn connect(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(std::time::Duration::from_millis(u64::from(BUSY_TIMEOUT_MS)))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    Ok(conn)
}

/// Reads back the durability pragmas: `(journal_mode, synchronous)`.
pub fn pragmas(conn: &Connection) -> rusqlite::Result<(String, i64)> {
    let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
    let sync: i64 = conn.query_row("PRAGMA synchronous", [], |r| r.get(0))?;
    Ok((mode, sync))
}

fn now() -> i64 {
    jiff::Timestamp::now().as_second()
}

impl Store {
    /// Opens (creating if needed) the database and its tables.
    pub fn open(path: &Path) -> rusqlite::Result<Store> {
        let conn = connect(path)?;
        conn.execute_batch(audit::SCHEMA)?;
        conn.execute_batch(SCHEMA)?;
        // An evidence table from before receipts bound their approver lines gains the column;
        // its rows keep NULL there and are never stated (their receipts would not bind it).
        let has_lines: bool = conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM pragma_table_info('evidence') WHERE name = 'approvers')",
            [],
            |r| r.get(0),
        )?;
        if !has_lines {
            conn.execute_batch("ALTER TABLE evidence ADD COLUMN approvers TEXT")?;
        }
        Ok(Store {
            conn: Mutex::new(conn),
            bursts: Mutex::new(HashMap::new()),
            receipts: None,
        })
    }

    /// From now on each outcome is stated and signed for its receipt; `serve` sets this
    /// before recovery, so an interrupted execution's unknown outcome is signed too.
    pub fn sign_receipts(&mut self, receipts: Receipts) {
        self.receipts = Some(receipts);
    }

    /// Audits a refusal before a nonce was stored (a bad frame, a peer not allowed, an approval
    /// whose signature does not verify, or one whose claims decoded but which is expired,
    /// short of its quorum or replayed): at most one row a second per kind, code and peer, so a
    /// flood — of garbage, or of one validly signed frame sent again and again — cannot fill
    /// the disk. Every refusal still counts: the ones in between are held and the next row
    /// written for them says how many it stands for (` n=COUNT`), or [`Store::flush_bursts`]
    /// writes them once the second is over. The row written is the latest refusal's.
    pub fn audit_refusal(&self, entry: Entry, peer: &str) -> rusqlite::Result<()> {
        let mut bursts = self.bursts.lock().unwrap_or_else(|p| p.into_inner());
        let key = (entry.kind, entry.reason.clone(), peer.to_owned());
        let now = Instant::now();
        let count = match bursts.get_mut(&key) {
            Some(burst) if now.duration_since(burst.written) < BURST => {
                burst.held += 1;
                burst.last = entry;
                return Ok(());
            }
            Some(burst) => std::mem::take(&mut burst.held) + 1,
            None => 1,
        };
        bursts.insert(
            key,
            Burst {
                written: now,
                held: 0,
                last: entry.clone(),
            },
        );
        self.audit(&counted(entry, count)).map(drop)
    }

    /// Writes the refusals held for a second or more (all of them when `all`, at shutdown),
    /// and forgets bursts quiet for a minute.
    pub fn flush_bursts(&self, all: bool) -> rusqlite::Result<()> {
        let mut bursts = self.bursts.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        bursts.retain(|_, b| b.held > 0 || now.duration_since(b.written) < 60 * BURST);
        for burst in bursts.values_mut() {
            if burst.held > 0 && (all || now.duration_since(burst.written) >= BURST) {
                let held = std::mem::take(&mut burst.held);
                burst.written = now;
                self.audit(&counted(burst.last.clone(), held))?;
            }
        }
        Ok(())
    }

    fn with<T>(
        &self,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<T>,
    ) -> rusqlite::Result<T> {
        // A poisoned lock only means another request panicked mid-statement; SQLite rolled
        // that transaction back, so the connection is still consistent.
        let mut guard = match self.conn.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        f(&mut guard)
    }

    /// Marks every execution left `in_flight` by a crash as `unknown`, with an audit row each.
    /// They are never re-run: the write may or may not have reached Epiphan.
    pub fn recover(&self) -> rusqlite::Result<usize> {
        self.with(|conn| {
            let tx = conn.transaction()?;
            let stuck: Vec<(Vec<u8>, String, String)> = {
                let mut stmt = tx.prepare("SELECT approval_id, tool, targets FROM executions WHERE state = 'in_flight'")?;
                let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
                rows.collect::<rusqlite::Result<_>>()?
            };
            let t = now();
            for (id, tool, targets) in &stuck {
                tx.execute(
                    "UPDATE executions SET state = 'unknown', reason = 'interrupted', finished_at = ?2 WHERE approval_id = ?1",
                    params![id, t],
                )?;
                audit::append(
                    &tx,
                    t,
                    &Entry {
                        kind: "recovered",
                        reason: "unknown".into(),
                        approval_id: fleetwatch_protocol::hex::encode(id),
                        tool: tool.clone(),
                        targets: targets.clone(),
                        assistant_head: String::new(),
                        detail: String::new(),
                    },
                )?;
                state_outcome(&tx, self.receipts.as_ref(), id, "unknown", t)?;
            }
            tx.commit()?;
            Ok(stuck.len())
        })
    }

    /// Stores the nonce, the passkeys' new signature counters, the open `in_flight` execution
    /// and their audit row, in one durable transaction. Runs before any read so a crash after
    /// this point can never re-run. A counter that did not increase rolls everything back, so
    /// no nonce is spent on a refused counter and no counter moves for a replayed nonce.
    pub fn store_nonce(
        &self,
        approval_id: &[u8; 16],
        approved: &Approved<'_>,
    ) -> Result<(), NonceError> {
        let result = self.with(|conn| {
            let tx = conn.transaction()?;
            let t = now();
            // The nonce first: a second presentation of one approval is a replay, whatever its
            // counters say.
            tx.execute("INSERT INTO nonces (approval_id, stored_at) VALUES (?1, ?2)", params![approval_id.to_vec(), t])?;
            for used in approved.passkeys {
                let stored: Option<i64> = tx
                    .query_row(
                        "SELECT counter FROM passkey_counters WHERE credential_id = ?1",
                        params![used.credential_id()],
                        |r| r.get(0),
                    )
                    .optional()?;
                let stored = stored.and_then(|c| u32::try_from(c).ok()).unwrap_or(0);
                let Ok(next) = used.next_counter(stored) else {
                    // Dropping the transaction rolls it back, the nonce with it.
                    return Ok(Err(NonceError::CounterNotIncreased));
                };
                tx.execute(
                    "INSERT INTO passkey_counters (credential_id, counter, updated_at) VALUES (?1, ?2, ?3)
                     ON CONFLICT (credential_id) DO UPDATE SET counter = excluded.counter, updated_at = excluded.updated_at",
                    params![used.credential_id(), i64::from(next), t],
                )?;
            }
            tx.execute(
                "INSERT INTO executions (approval_id, tool, targets, state, started_at) VALUES (?1, ?2, ?3, 'in_flight', ?4)",
                params![approval_id.to_vec(), approved.tool, approved.targets, t],
            )?;
            let approval = serde_json::to_string(approved.approval).unwrap_or_default();
            let lines = serde_json::to_string(approved.approver_lines).unwrap_or_default();
            tx.execute(
                "INSERT INTO evidence (approval_id, proposal_id, claims, approval, quorum, approvers) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![approval_id.to_vec(), i64::try_from(approved.proposal_id).unwrap_or(i64::MAX), approved.approval.claims, approval, approved.quorum, lines],
            )?;
            audit::append(
                &tx,
                t,
                &Entry {
                    kind: "accepted",
                    reason: "nonce_stored".into(),
                    approval_id: fleetwatch_protocol::hex::encode(approval_id),
                    tool: approved.tool.into(),
                    targets: approved.targets.into(),
                    assistant_head: fleetwatch_protocol::hex::encode(approved.assistant_head),
                    detail: accepted_detail(approved.proposal_id, approved.asked_by, approved.passkeys),
                },
            )?;
            tx.commit().map(Ok)
        });
        match result {
            Ok(verdict) => verdict,
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == ErrorCode::ConstraintViolation && is_primary_key(e.extended_code) =>
            {
                Err(NonceError::Replayed)
            }
            Err(e) => {
                tracing::error!(error = %e, "nonce not stored");
                Err(NonceError::NotStored)
            }
        }
    }

    /// Holds the limits for one execution whose nonce is stored, in one transaction: fewer
    /// than `per_hour` other writes (done, failed, unknown or in flight; not refused) started
    /// in the last hour, and, for a disruptive change, no target with a disruptive write in
    /// the last `cooldown_secs`; a disruptive change then records its targets, so the next sees it.
    /// Both survive a restart: they are read from the executions table, never from memory.
    pub fn reserve(
        &self,
        approval_id: &[u8; 16],
        targets: &[String],
        disruptive: bool,
        cooldown_secs: i64,
        per_hour: u32,
    ) -> Result<(), LimitError> {
        let result = self.with(|conn| {
            // Every execution's nonce row is committed before its limits are checked, so the
            // count below sees every change in flight without a write of its own: a calm
            // change costs one read, no commit. A disruptive one records its targets in the
            // same immediate transaction as the check, so of two at once on one device the
            // second sees the first.
            let behavior = if disruptive {
                rusqlite::TransactionBehavior::Immediate
            } else {
                rusqlite::TransactionBehavior::Deferred
            };
            let tx = conn.transaction_with_behavior(behavior)?;
            let t = now();
            let id = approval_id.to_vec();
            let recent: i64 = tx.query_row(
                "SELECT COUNT(*) FROM executions
                 WHERE started_at > ?1 AND state != 'refused' AND approval_id != ?2",
                params![t - 3600, id],
                |r| r.get(0),
            )?;
            if recent >= i64::from(per_hour) {
                return Ok(Err(LimitError::HourlyLimit));
            }
            if disruptive && cooldown_secs > 0 {
                let mut last = tx.prepare(&format!(
                    "SELECT MAX({WRITE_TIME}) FROM executions e
                     JOIN execution_targets t ON t.approval_id = e.approval_id
                     WHERE t.device_id = ?1 AND t.disruptive = 1 AND e.state != 'refused'
                       AND e.approval_id != ?2"
                ))?;
                for target in targets {
                    let at: Option<i64> = last.query_row(params![target, id], |r| r.get(0))?;
                    if let Some(at) = at
                        && at + cooldown_secs > t
                    {
                        return Ok(Err(LimitError::CoolingDown {
                            remaining_secs: at + cooldown_secs - t,
                        }));
                    }
                }
            }
            if !disruptive {
                // Nothing written: ending the read transaction costs no sync.
                return tx.commit().map(Ok);
            }
            for target in targets {
                tx.execute(
                    "INSERT OR IGNORE INTO execution_targets (approval_id, device_id, disruptive)
                     VALUES (?1, ?2, 1)",
                    params![id, target],
                )?;
            }
            tx.commit().map(Ok)
        });
        result.unwrap_or_else(|e| {
            tracing::error!(error = %e, "limits not checked");
            Err(LimitError::Store)
        })
    }

    /// Writes started in the hour before now (not refused), and the devices whose last
    /// disruptive write is within `cooldown_secs`: what `Status` reports.
    pub fn limits_now(&self, cooldown_secs: i64) -> rusqlite::Result<(u32, Vec<Resting>)> {
        self.with(|conn| {
            let t = now();
            let recent: i64 = conn.query_row(
                "SELECT COUNT(*) FROM executions WHERE started_at > ?1 AND state != 'refused'",
                params![t - 3600],
                |r| r.get(0),
            )?;
            let mut stmt = conn.prepare(&format!(
                "SELECT t.device_id, MAX({WRITE_TIME}) AS at FROM executions e
                 JOIN execution_targets t ON t.approval_id = e.approval_id
                 WHERE t.disruptive = 1 AND e.state != 'refused'
                 GROUP BY t.device_id HAVING at + ?1 > ?2 ORDER BY t.device_id"
            ))?;
            let resting = stmt
                .query_map(params![cooldown_secs, t], |r| {
                    Ok(Resting {
                        device: r.get(0)?,
                        changed_at: r.get(1)?,
                    })
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok((u32::try_from(recent).unwrap_or(u32::MAX), resting))
        })
    }

    /// The stored signature counter of every passkey that has approved here.
    pub fn counters(&self) -> rusqlite::Result<BTreeMap<Vec<u8>, u32>> {
        self.with(|conn| read_counters(conn))
    }

    /// Records an execution's final state with its audit row and, for a write that was made
    /// (or may have been), the signed receipt statement, all in one transaction; `codes` are
    /// the devices' error codes of a failed write. Returns the new chain head. An execution
    /// that is not in flight (already finished, or never opened) is left alone: nothing is
    /// written and nothing signed ([`rusqlite::Error::StatementChangedRows`]).
    pub fn finish(
        &self,
        approval_id: &[u8; 16],
        state: Final,
        reason: &str,
        detail: &str,
        codes: &BTreeMap<String, String>,
    ) -> rusqlite::Result<[u8; 32]> {
        self.with(|conn| {
            let tx = conn.transaction()?;
            let t = now();
            let (tool, targets): (String, String) = tx.query_row(
                "SELECT tool, targets FROM executions WHERE approval_id = ?1",
                params![approval_id.to_vec()],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            let changed = tx.execute(
                "UPDATE executions SET state = ?2, reason = ?3, finished_at = ?4 WHERE approval_id = ?1 AND state = 'in_flight'",
                params![approval_id.to_vec(), state.as_str(), reason, t],
            )?;
            if changed != 1 {
                // Dropping the transaction rolls it back: no row, no statement.
                return Err(rusqlite::Error::StatementChangedRows(changed));
            }
            let kind = if state == Final::Refused { "refused" } else { "outcome" };
            let reason = if state == Final::Refused { reason.to_string() } else { state.as_str().to_string() };
            let head = audit::append(
                &tx,
                t,
                &Entry { kind, reason, approval_id: fleetwatch_protocol::hex::encode(approval_id), tool, targets, assistant_head: String::new(), detail: detail.to_string() },
            )?;
            let outcome = match state {
                Final::Done => "done",
                Final::Error => "failed",
                Final::Unknown => "unknown",
                Final::Refused => "",
            };
            if !outcome.is_empty() {
                let codes = serde_json::to_string(codes).unwrap_or_default();
                tx.execute("UPDATE evidence SET codes = ?2 WHERE approval_id = ?1", params![approval_id.to_vec(), codes])?;
                state_outcome(&tx, self.receipts.as_ref(), approval_id, outcome, t)?;
            }
            tx.commit()?;
            Ok(head)
        })
    }

    /// Appends one audit row on its own.
    pub fn audit(&self, entry: &Entry) -> rusqlite::Result<[u8; 32]> {
        self.with(|conn| {
            let tx = conn.transaction()?;
            let head = audit::append(&tx, now(), entry)?;
            tx.commit()?;
            Ok(head)
        })
    }

    /// The database's size in bytes (its pages; the write-ahead log is checkpointed into it):
    /// what the audit budget counts.
    pub fn size_bytes(&self) -> rusqlite::Result<u64> {
        self.with(|conn| size_bytes(conn))
    }

    /// The audit chain head.
    pub fn head(&self) -> rusqlite::Result<[u8; 32]> {
        self.with(|conn| audit::head(conn))
    }

    /// The state of an execution (tests and `doctor`).
    pub fn execution_state(&self, approval_id: &[u8; 16]) -> rusqlite::Result<Option<String>> {
        use rusqlite::OptionalExtension;
        self.with(|conn| {
            conn.query_row(
                "SELECT state FROM executions WHERE approval_id = ?1",
                params![approval_id.to_vec()],
                |r| r.get(0),
            )
            .optional()
        })
    }
}

/// Signs the receipt statement of an outcome whose audit row this transaction just wrote: the
/// claims' hash, the hashes of the signatures, assertions and approver lines the receipt will
/// carry, the outcome and the devices' codes, the time, every audit row of the approval up to
/// this one with its chain hash, the quorum and the passkey settings. Nothing to sign without a
/// receipt key, or for an approval accepted before its evidence (approver lines included) was
/// kept.
fn state_outcome(
    tx: &rusqlite::Transaction<'_>,
    receipts: Option<&Receipts>,
    approval_id: &[u8],
    outcome: &str,
    time: i64,
) -> rusqlite::Result<()> {
    use ed25519_dalek::Signer as _;
    use fleetwatch_protocol::receipt;
    let Some(receipts) = receipts else {
        return Ok(());
    };
    let evidence: Option<(String, Option<String>, u32, String)> = tx
        .query_row(
            "SELECT approval, approvers, quorum, codes FROM evidence WHERE approval_id = ?1",
            params![approval_id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .optional()?;
    let Some((approval, Some(lines), quorum, codes)) = evidence else {
        return Ok(());
    };
    let (Ok(approval), Ok(lines)) = (
        serde_json::from_str::<SignedApproval>(&approval),
        serde_json::from_str::<Vec<String>>(&lines),
    ) else {
        tracing::error!("stored evidence does not read; no receipt statement signed");
        return Ok(());
    };
    let rows = audit_rows(tx, &hex::encode(approval_id), i64::MAX)?;
    let Some((audit_row, chain_hash)) = rows.last().cloned() else {
        return Ok(());
    };
    let (signatures, assertions) = receipt::evidence(&approval);
    let statement = Statement {
        claims_sha256: receipt::claims_sha256(&approval.claims),
        signatures_sha256: receipt::signatures_sha256(&signatures),
        passkeys_sha256: receipt::passkeys_sha256(&assertions),
        approvers_sha256: receipt::approvers_sha256(&lines),
        outcome: outcome.to_owned(),
        codes: serde_json::from_str(&codes).unwrap_or_default(),
        time,
        audit_row,
        chain_hash,
        audit: rows,
        quorum,
        rp_id: receipts.rp_id.clone(),
        origins: receipts.origins.clone(),
    }
    .to_text();
    let signature = receipts.key.sign(&Statement::signed_message(&statement));
    tx.execute(
        "UPDATE evidence SET statement = ?2, statement_signature = ?3 WHERE approval_id = ?1",
        params![approval_id, statement, signature.to_bytes().to_vec()],
    )?;
    Ok(())
}

/// The audit rows naming an approval (hex), up to row `last`, oldest first: `(row, chain hash
/// hex)`. What a statement binds and a receipt carries.
pub fn audit_rows(
    conn: &Connection,
    approval_hex: &str,
    last: i64,
) -> rusqlite::Result<Vec<(i64, String)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT seq, row_hash FROM audit WHERE approval_id = ?1 AND seq <= ?2 ORDER BY seq",
    )?;
    let rows = stmt.query_map(params![approval_hex, last], |r| {
        Ok((r.get(0)?, hex::encode(&r.get::<_, Vec<u8>>(1)?)))
    })?;
    rows.collect()
}

/// What an `accepted` row's detail says: `proposal N`, then `; asked by USER` when the claims name
/// who asked, then `; approved by NAME [FINGERPRINT]…`
/// when passkeys approved it. `audit show` reads the proposal number back from its start.
fn accepted_detail(proposal_id: u64, asked_by: &str, passkeys: &[CredentialUse]) -> String {
    let mut detail = proposal_detail(proposal_id);
    if !asked_by.is_empty() {
        // What the assistant reported, as the claims sign it (a checked user name).
        detail.push_str(&format!("; asked by {asked_by}"));
    }
    let by = approved_by(passkeys);
    if !by.is_empty() {
        detail.push_str(&format!("; {by}"));
    }
    detail
}

/// `proposal N`: how a row names the assistant's proposal it concerns.
pub fn proposal_detail(proposal_id: u64) -> String {
    format!("proposal {proposal_id}")
}

/// The audit detail naming who approved: each passkey's operator name and fingerprint, from
/// the approver file (never from the request). Empty when no passkey took part.
fn approved_by(passkeys: &[CredentialUse]) -> String {
    if passkeys.is_empty() {
        return String::new();
    }
    let names: Vec<String> = passkeys
        .iter()
        .map(|p| format!("{} [{}]", p.name(), p.fingerprint()))
        .collect();
    format!("approved by {}", names.join("; "))
}

/// A database's size in bytes: its page count times its page size, the pages on the free list
/// not counted (they are reused before the file grows).
pub fn size_bytes(conn: &Connection) -> rusqlite::Result<u64> {
    let pages: i64 = conn.query_row("PRAGMA page_count", [], |r| r.get(0))?;
    let free: i64 = conn.query_row("PRAGMA freelist_count", [], |r| r.get(0))?;
    let size: i64 = conn.query_row("PRAGMA page_size", [], |r| r.get(0))?;
    Ok((pages - free).max(0).unsigned_abs() * size.max(0).unsigned_abs())
}

fn read_counters(conn: &Connection) -> rusqlite::Result<BTreeMap<Vec<u8>, u32>> {
    let mut stmt = conn.prepare("SELECT credential_id, counter FROM passkey_counters")?;
    let rows = stmt.query_map([], |r| Ok((r.get::<_, Vec<u8>>(0)?, r.get::<_, i64>(1)?)))?;
    let mut out = BTreeMap::new();
    for row in rows {
        let (id, counter) = row?;
        out.insert(id, u32::try_from(counter).unwrap_or(0));
    }
    Ok(out)
}

/// Opens the database without writing anything beside it: `approvers list` and `audit show`
/// may run as root in the executor's state folder, where a file root created (a `-shm` or
/// `-wal`) would lock the executor out. With no write-ahead log present nobody is writing,
/// and the file is opened as immutable (SQLite then creates nothing); otherwise read-only,
/// beside the running executor's own files.
pub fn open_read_only(path: &Path) -> rusqlite::Result<Connection> {
    use rusqlite::OpenFlags;
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let immutable = !Path::new(&wal).exists();
    let mut uri = String::from("file:");
    for c in path.to_string_lossy().chars() {
        match c {
            '%' | '?' | '#' => uri.push_str(&format!("%{:02X}", u32::from(c))),
            c => uri.push(c),
        }
    }
    uri.push_str(if immutable {
        "?mode=ro&immutable=1"
    } else {
        "?mode=ro"
    });
    let conn = Connection::open_with_flags(
        uri,
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(std::time::Duration::from_millis(u64::from(BUSY_TIMEOUT_MS)))?;
    Ok(conn)
}

/// The stored counters, read through [`open_read_only`]. An absent database has no counters
/// yet.
pub fn counters_read_only(path: &Path) -> rusqlite::Result<BTreeMap<Vec<u8>, u32>> {
    if !path.exists() {
        return Ok(BTreeMap::new());
    }
    let conn = open_read_only(path)?;
    let exists: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'passkey_counters')",
        [],
        |r| r.get(0),
    )?;
    if !exists {
        return Ok(BTreeMap::new());
    }
    read_counters(&conn)
}

fn is_primary_key(extended: std::os::raw::c_int) -> bool {
    extended == rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY
        || extended == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
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

    #[test]
    fn nonce_is_single_use_and_recovery_marks_unknown() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("executor.db");
        let store = Store::open(&path).unwrap();
        let id = [7u8; 16];
        let approval = SignedApproval {
            claims: b"claims".to_vec(),
            signatures: Vec::new(),
            passkeys: Vec::new(),
        };
        let approved = Approved {
            proposal_id: 3,
            tool: "batch_reboot",
            targets: "abcdef0123",
            assistant_head: &[1; 32],
            passkeys: &[],
            approval: &approval,
            asked_by: "",
            approver_lines: &[],
            quorum: 1,
        };
        store.store_nonce(&id, &approved).unwrap();
        assert_eq!(store.store_nonce(&id, &approved), Err(NonceError::Replayed));
        drop(store);
        let mut store = Store::open(&path).unwrap();
        let key = ed25519_dalek::SigningKey::from_bytes(&[9; 32]);
        store.sign_receipts(Receipts {
            key: key.clone(),
            rp_id: "localhost".into(),
            origins: vec!["http://localhost:8768".into()],
        });
        assert_eq!(store.recover().unwrap(), 1);
        assert_eq!(
            store.execution_state(&id).unwrap().as_deref(),
            Some("unknown")
        );
        assert_eq!(store.recover().unwrap(), 0);
        let conn = connect(&path).unwrap();
        assert_eq!(pragmas(&conn).unwrap(), ("wal".to_string(), 2));
        let (rows, head) = audit::verify(&conn).unwrap();
        assert_eq!(rows, 2);
        // The interrupted execution's unknown outcome is stated and signed for its receipt.
        let (text, signature): (String, Vec<u8>) = conn
            .query_row(
                "SELECT statement, statement_signature FROM evidence WHERE approval_id = ?1",
                [id.to_vec()],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        let statement: Statement = serde_json::from_str(&text).unwrap();
        assert_eq!(statement.outcome, "unknown");
        assert_eq!(statement.audit_row, 2);
        assert_eq!(statement.chain_hash, hex::encode(&head));
        assert_eq!(statement.quorum, 1);
        assert_eq!(
            statement.audit,
            vec![
                (
                    1,
                    audit_rows(&conn, &hex::encode(&id), 1).unwrap()[0]
                        .1
                        .clone()
                ),
                (2, hex::encode(&head))
            ]
        );
        // An execution no longer in flight is not finished again: no row, no new statement.
        assert!(matches!(
            store.finish(&id, Final::Done, "", "", &BTreeMap::new()),
            Err(rusqlite::Error::StatementChangedRows(0))
        ));
        assert_eq!(audit::verify(&conn).unwrap().0, 2);
        let again: String = conn
            .query_row(
                "SELECT statement FROM evidence WHERE approval_id = ?1",
                [id.to_vec()],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(again, text);
        let signature = ed25519_dalek::Signature::from_slice(&signature).unwrap();
        key.verifying_key()
            .verify_strict(&Statement::signed_message(&text), &signature)
            .unwrap();
    }
}
