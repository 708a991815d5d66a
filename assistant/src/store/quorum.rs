//! Approvals that need more than one operator's passkey (DESIGN §9). The first approval fixes
//! the claims every signer signs — its approval row's ID, its page session and its expiry on
//! the database clock — in `quorum_waits`; each passkey that approves is kept in
//! `quorum_signers`, once per credential. The proposal stays `pending` while it waits, so a
//! denial by anyone ends it, and it moves to `approved` in the same transaction that adds the
//! passkey that makes the count, so sixteen last approvals at once still approve it once.

use rusqlite::{OptionalExtension as _, TransactionBehavior, params};
use serde_json::json;

use super::{Store, StoreError, append_audit};

/// The reason a waiting proposal expires with.
pub(super) const UNMET: &str =
    "the passkeys it needed did not all approve before the approval expired";

/// The parts of the claims fixed by the first approval (database clock).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fixed {
    /// The first approval row's ID (hex).
    pub approval_id: String,
    /// The page session tag of the first approval (hex).
    pub session: String,
    /// When the claims expire.
    pub expires_at: i64,
}

/// A proposal waiting for more passkeys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiting {
    /// What every signer signs.
    pub fixed: Fixed,
    /// The database clock when read.
    pub db_now: i64,
    /// The names of the passkeys that approved, oldest first.
    pub names: Vec<String>,
    /// Their credential IDs (as the page keeps them), in the same order.
    pub credentials: Vec<String>,
}

impl Waiting {
    /// Not yet expired on the database clock.
    pub fn live(&self) -> bool {
        self.fixed.expires_at > self.db_now
    }
}

/// One passkey's approval to keep.
pub struct NewSigner<'a> {
    /// The credential ID (base64url).
    pub credential_id: &'a str,
    /// The operator's name.
    pub name: &'a str,
    /// The page session tag it came from (hex).
    pub session: &'a str,
    /// The assertion, as JSON.
    pub assertion: &'a str,
}

/// What [`Store::gather`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gathered {
    /// Kept; the proposal waits for more. The names so far, oldest first.
    Kept(Vec<String>),
    /// This passkey had already approved; nothing changed. The names so far.
    Again(Vec<String>),
    /// Enough passkeys: the proposal moved to `approved`. Every kept assertion (JSON) and
    /// name, oldest first.
    Met {
        /// The assertions.
        assertions: Vec<String>,
        /// The names.
        names: Vec<String>,
    },
    /// This session's approval row was used already or expired; nothing changed.
    RowSpent,
    /// The proposal is no longer pending; nothing changed.
    NotPending,
    /// The claims expired before enough passkeys came: the proposal expired now.
    Expired,
    /// The claims are not the ones the proposal waits for (another approval came first);
    /// nothing changed.
    OtherClaims,
}

fn sql_id(id: u64) -> Result<i64, StoreError> {
    i64::try_from(id).map_err(|_| StoreError::Corrupt("id out of range".to_owned()))
}

fn read_waiting(conn: &rusqlite::Connection, id: i64) -> Result<Option<Waiting>, StoreError> {
    let head = conn
        .query_row(
            "SELECT approval_id, session, expires_at, unixepoch()
             FROM quorum_waits WHERE proposal_id = ?1",
            [id],
            |r| {
                Ok((
                    Fixed {
                        approval_id: r.get(0)?,
                        session: r.get(1)?,
                        expires_at: r.get(2)?,
                    },
                    r.get::<_, i64>(3)?,
                ))
            },
        )
        .optional()?;
    let Some((fixed, db_now)) = head else {
        return Ok(None);
    };
    let mut stmt = conn.prepare(
        "SELECT name, credential_id FROM quorum_signers WHERE proposal_id = ?1 ORDER BY rowid",
    )?;
    let rows = stmt.query_map([id], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
    })?;
    let (names, credentials) = rows.collect::<Result<Vec<_>, _>>()?.into_iter().unzip();
    Ok(Some(Waiting {
        fixed,
        db_now,
        names,
        credentials,
    }))
}

impl Store {
    /// The proposal's wait for more passkeys, if one has begun.
    pub fn waiting(&self, proposal_id: u64) -> Result<Option<Waiting>, StoreError> {
        read_waiting(&self.conn, sql_id(proposal_id)?)
    }

    /// Adds one passkey's approval, in one transaction: the proposal must be pending, its wait
    /// (if one began) live and over `fixed`, the passkey new to it, and this session's approval
    /// row `approval` unused and unexpired — then the row is consumed, the wait begun when this
    /// is the first passkey, the passkey kept, and, when `needed` are now kept, the proposal
    /// moved to `approved`.
    pub fn gather(
        &mut self,
        proposal_id: u64,
        approval: &str,
        fixed: &Fixed,
        signer: &NewSigner<'_>,
        needed: usize,
        now: i64,
    ) -> Result<Gathered, StoreError> {
        let id = sql_id(proposal_id)?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let pending: bool = tx
            .query_row(
                "SELECT status = 'pending' FROM proposals WHERE id = ?1",
                [id],
                |r| r.get(0),
            )
            .optional()?
            .unwrap_or(false);
        if !pending {
            return Ok(Gathered::NotPending);
        }
        let waiting = read_waiting(&tx, id)?;
        if let Some(w) = &waiting {
            if !w.live() {
                tx.execute(
                    "UPDATE proposals SET status = 'expired', decided_at = ?1 WHERE id = ?2",
                    params![now, id],
                )?;
                append_audit(
                    &tx,
                    now,
                    "expired",
                    Some(proposal_id),
                    &json!({"reason": UNMET}),
                )?;
                tx.commit()?;
                return Ok(Gathered::Expired);
            }
            if w.fixed != *fixed {
                return Ok(Gathered::OtherClaims);
            }
            if w.credentials.iter().any(|c| c == signer.credential_id) {
                return Ok(Gathered::Again(w.names.clone()));
            }
        } else if fixed.approval_id != approval {
            return Ok(Gathered::OtherClaims);
        }
        let consumed = tx.execute(
            "UPDATE approvals SET used = 1
             WHERE id = ?1 AND proposal_id = ?2 AND used = 0 AND expires_at > unixepoch()",
            params![approval, id],
        )?;
        if consumed != 1 {
            return Ok(Gathered::RowSpent);
        }
        if waiting.is_none() {
            tx.execute(
                "INSERT INTO quorum_waits (proposal_id, approval_id, session, expires_at)
                 VALUES (?1, ?2, ?3, ?4)",
                params![id, fixed.approval_id, fixed.session, fixed.expires_at],
            )?;
        }
        tx.execute(
            "INSERT INTO quorum_signers
                 (proposal_id, credential_id, name, session, assertion, added_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                id,
                signer.credential_id,
                signer.name,
                signer.session,
                signer.assertion,
                now
            ],
        )?;
        let (assertions, names): (Vec<String>, Vec<String>) = {
            let mut stmt = tx.prepare(
                "SELECT assertion, name FROM quorum_signers WHERE proposal_id = ?1 ORDER BY rowid",
            )?;
            let rows = stmt.query_map([id], |r| Ok((r.get(0)?, r.get(1)?)))?;
            rows.collect::<Result<Vec<_>, _>>()?.into_iter().unzip()
        };
        append_audit(
            &tx,
            now,
            "page_passkey_approval",
            Some(proposal_id),
            &json!({
                "approval_id": approval,
                "claims_approval_id": fixed.approval_id,
                "name": signer.name,
                "page_session": signer.session,
                "kept": names.len(),
                "needed": needed,
            }),
        )?;
        let met = names.len() >= needed;
        if met {
            tx.execute(
                "UPDATE proposals SET status = 'approved', decided_at = ?1
                 WHERE id = ?2 AND status = 'pending'",
                params![now, id],
            )?;
            append_audit(
                &tx,
                now,
                "approved",
                Some(proposal_id),
                &json!({"reason": format!(
                    "approved on the approval page by {} passkeys", names.len()
                )}),
            )?;
        }
        tx.commit()?;
        Ok(if met {
            Gathered::Met { assertions, names }
        } else {
            Gathered::Kept(names)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{NewProposal, Status};

    fn proposal(store: &mut Store) -> u64 {
        store
            .insert_proposal(
                &NewProposal {
                    tool: "batch_reboot".into(),
                    arguments: "{}".into(),
                    targets: vec!["d".into()],
                    fingerprint: "f".into(),
                    schema_version: 1,
                    policy_digest: [0; 32],
                    slot: "sandbox".into(),
                    reason: "r".into(),
                },
                crate::store::now_secs(),
            )
            .unwrap()
    }

    fn signer<'a>(credential: &'a str, name: &'a str, session: &'a str) -> NewSigner<'a> {
        NewSigner {
            credential_id: credential,
            name,
            session,
            assertion: "{}",
        }
    }

    #[test]
    fn the_count_is_met_once_per_distinct_passkey_and_each_row_is_spent_once() {
        let mut store = Store::in_memory().unwrap();
        let id = proposal(&mut store);
        let now = crate::store::now_secs();
        store.create_approval("a1", id, "s1", 300).unwrap();
        store.create_approval("a2", id, "s2", 300).unwrap();
        store.create_approval("a3", id, "s2", 300).unwrap();
        let expires_at = store.approval("a1").unwrap().unwrap().expires_at;
        let fixed = Fixed {
            approval_id: "a1".into(),
            session: "s1".into(),
            expires_at,
        };
        // A second session cannot begin the wait over the first one's claims.
        assert_eq!(
            store
                .gather(id, "a2", &fixed, &signer("k1", "Ana", "s2"), 2, now)
                .unwrap(),
            Gathered::OtherClaims
        );
        let kept = store
            .gather(id, "a1", &fixed, &signer("k1", "Ana", "s1"), 2, now)
            .unwrap();
        assert_eq!(kept, Gathered::Kept(vec!["Ana".into()]));
        assert_eq!(store.proposal(id).unwrap().unwrap().status, Status::Pending);
        // The first row is spent.
        assert_eq!(
            store
                .gather(id, "a1", &fixed, &signer("k2", "Bo", "s1"), 2, now)
                .unwrap(),
            Gathered::RowSpent
        );
        // The same passkey again counts once and spends nothing.
        assert_eq!(
            store
                .gather(id, "a2", &fixed, &signer("k1", "Ana", "s2"), 2, now)
                .unwrap(),
            Gathered::Again(vec!["Ana".into()])
        );
        assert!(!store.approval("a2").unwrap().unwrap().used);
        // Other claims are refused.
        let other = Fixed {
            approval_id: "a2".into(),
            ..fixed.clone()
        };
        assert_eq!(
            store
                .gather(id, "a2", &other, &signer("k2", "Bo", "s2"), 2, now)
                .unwrap(),
            Gathered::OtherClaims
        );
        let met = store
            .gather(id, "a2", &fixed, &signer("k2", "Bo", "s2"), 2, now)
            .unwrap();
        assert_eq!(
            met,
            Gathered::Met {
                assertions: vec!["{}".into(), "{}".into()],
                names: vec!["Ana".into(), "Bo".into()],
            }
        );
        assert_eq!(
            store.proposal(id).unwrap().unwrap().status,
            Status::Approved
        );
        assert_eq!(
            store
                .gather(id, "a3", &fixed, &signer("k3", "Cy", "s2"), 2, now)
                .unwrap(),
            Gathered::NotPending
        );
    }

    #[test]
    fn a_wait_past_its_expiry_expires_the_proposal() {
        let mut store = Store::in_memory().unwrap();
        let id = proposal(&mut store);
        let now = crate::store::now_secs();
        store.create_approval("a1", id, "s1", 300).unwrap();
        store.create_approval("a2", id, "s2", 300).unwrap();
        let expires_at = store.approval("a1").unwrap().unwrap().expires_at;
        let fixed = Fixed {
            approval_id: "a1".into(),
            session: "s1".into(),
            expires_at,
        };
        store
            .gather(id, "a1", &fixed, &signer("k1", "Ana", "s1"), 2, now)
            .unwrap();
        store
            .connection()
            .execute("UPDATE quorum_waits SET expires_at = unixepoch() - 1", [])
            .unwrap();
        assert_eq!(store.expire_due(now).unwrap(), 1);
        assert_eq!(store.proposal(id).unwrap().unwrap().status, Status::Expired);
        assert_eq!(
            store
                .gather(id, "a2", &fixed, &signer("k2", "Bo", "s2"), 2, now)
                .unwrap(),
            Gathered::NotPending
        );
    }
}
