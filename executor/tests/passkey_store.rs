//! The passkey counters live in the nonce's transaction: a counter that did not increase
//! stores no nonce, a replayed nonce moves no counter, and a failure anywhere in the
//! transaction leaves neither the nonce nor the counter behind.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

#[path = "../../protocol/tests/support/authenticator.rs"]
mod authenticator;

use authenticator::{Ceremony, ORIGIN, RP_ID, SoftPasskey};
use fleetwatch_executor::store::{Approved, NonceError, Store};
use fleetwatch_protocol::claims::SignedApproval;
use fleetwatch_protocol::passkey::{self, Approvers, CredentialUse, RelyingParty};

const CLAIMS: &[u8] = b"\x01 some claims bytes";

/// The distinct passkeys of one approval, as the verifier hands them to the store.
fn uses(keys: &mut [&mut SoftPasskey]) -> (Approvers, Vec<CredentialUse>) {
    let text: String = keys
        .iter()
        .enumerate()
        .map(|(i, k)| k.line(&format!("Operator {i}")) + "\n")
        .collect();
    let approvers = Approvers::parse(&text).unwrap();
    let assertions: Vec<_> = keys.iter_mut().map(|k| k.assert(CLAIMS)).collect();
    let verified = passkey::verify_assertions(
        &assertions,
        CLAIMS,
        &approvers,
        &RelyingParty::new(RP_ID, [ORIGIN]),
    )
    .unwrap();
    (approvers, verified.uses())
}

fn store_nonce(store: &Store, id: u8, used: &[CredentialUse]) -> Result<(), NonceError> {
    store.store_nonce(
        &[id; 16],
        &Approved {
            proposal_id: u64::from(id),
            tool: "batch_reboot",
            targets: "abcdef0123",
            assistant_head: &[0; 32],
            passkeys: used,
            approval: &SignedApproval {
                claims: vec![id],
                signatures: Vec::new(),
                passkeys: Vec::new(),
            },
            asked_by: "",
            approver_lines: &[],
            quorum: 1,
        },
    )
}

/// Whether `nonces` holds this approval ID.
fn nonce_stored(path: &std::path::Path, id: u8) -> bool {
    let conn = fleetwatch_executor::store::connect(path).unwrap();
    let rows: i64 = conn
        .query_row(
            "SELECT count(*) FROM nonces WHERE approval_id = ?1",
            [vec![id; 16]],
            |r| r.get(0),
        )
        .unwrap();
    rows > 0
}

#[test]
fn counters_and_nonces_are_written_together_or_not_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("executor.db");
    let store = Store::open(&path).unwrap();
    let mut key = SoftPasskey::es256(3);
    let credential = key.credential_id.clone();

    // Counter 1: stored with the nonce.
    let (_, first) = uses(&mut [&mut key]);
    store_nonce(&store, 1, &first).unwrap();
    assert_eq!(store.counters().unwrap().get(&credential), Some(&1));

    // A new approval whose assertion reuses counter 1: refused, and no nonce was spent.
    key.counter = 0;
    let (_, reused) = uses(&mut [&mut key]);
    assert_eq!(
        store_nonce(&store, 2, &reused),
        Err(NonceError::CounterNotIncreased)
    );
    assert!(!nonce_stored(&path, 2), "a refused counter stores no nonce");
    assert_eq!(store.execution_state(&[2; 16]).unwrap(), None);

    // The first approval again with a counter that did advance: a replay, and the counter
    // stays where it was.
    let (_, advanced) = uses(&mut [&mut key]);
    assert_eq!(advanced[0].highest_counter(), 2);
    assert_eq!(store_nonce(&store, 1, &advanced), Err(NonceError::Replayed));
    assert_eq!(store.counters().unwrap().get(&credential), Some(&1));

    // A failure after the nonce and the counter were written in the transaction (here the
    // execution row cannot be inserted, as on a full disk): neither is left behind.
    let side = fleetwatch_executor::store::connect(&path).unwrap();
    side.execute_batch(
        "CREATE TRIGGER fail_open BEFORE INSERT ON executions \
         BEGIN SELECT RAISE(ABORT, 'no room'); END;",
    )
    .unwrap();
    assert_eq!(
        store_nonce(&store, 3, &advanced),
        Err(NonceError::NotStored)
    );
    assert!(!nonce_stored(&path, 3), "no nonce without its counter");
    assert_eq!(
        store.counters().unwrap().get(&credential),
        Some(&1),
        "no counter without its nonce"
    );

    // Once the failure is gone the same approval goes through, counter and all.
    side.execute_batch("DROP TRIGGER fail_open;").unwrap();
    store_nonce(&store, 3, &advanced).unwrap();
    assert!(nonce_stored(&path, 3));
    assert_eq!(store.counters().unwrap().get(&credential), Some(&2));
}

#[test]
fn authenticators_without_a_counter_and_two_people_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("executor.db");
    let store = Store::open(&path).unwrap();
    // A synced passkey keeps no counter (always zero); the nonce alone stops its replays.
    let synced = SoftPasskey::ed25519(4);
    let mut counting = SoftPasskey::es256(5);
    counting.counter = 41;
    let approvers = Approvers::parse(&format!(
        "{}\n{}\n",
        synced.line("Ana"),
        counting.line("Bo")
    ))
    .unwrap();
    let rp = RelyingParty::new(RP_ID, [ORIGIN]);
    for id in 1..=2u8 {
        let assertions = vec![
            synced.assert_with(&Ceremony::for_claims(CLAIMS, 0)),
            counting.assert(CLAIMS),
        ];
        let verified = passkey::verify_assertions(&assertions, CLAIMS, &approvers, &rp).unwrap();
        assert_eq!(verified.distinct(), 2);
        store_nonce(&store, id, &verified.uses()).unwrap();
    }
    let counters = store.counters().unwrap();
    assert_eq!(counters.get(&synced.credential_id), Some(&0));
    assert_eq!(counters.get(&counting.credential_id), Some(&43));

    // `approvers list` reads them as root beside a stopped executor: it must create no file
    // in the state folder (a root-owned -wal or -shm would lock the executor out).
    drop(store);
    let wal = dir.path().join("executor.db-wal");
    let shm = dir.path().join("executor.db-shm");
    assert!(
        !wal.exists() && !shm.exists(),
        "a clean close leaves no log"
    );
    let read = fleetwatch_executor::store::counters_read_only(&path).unwrap();
    assert_eq!(read, counters);
    assert!(!wal.exists() && !shm.exists(), "reading created a file");
    // No database yet: no counters, no error.
    let none = fleetwatch_executor::store::counters_read_only(&dir.path().join("absent.db"));
    assert!(none.unwrap().is_empty());
}
