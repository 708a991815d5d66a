//! Operator passkeys: the executor's verification of one assertion (ES256 and Ed25519), of a
//! two-person approval, and the approver file parse it does at start-up.
#![forbid(unsafe_code)]
// A benchmark harness, not shipped code: a failed setup should stop the run loudly, and
// criterion's macros generate undocumented public items.
#![allow(clippy::expect_used, missing_docs)]

#[path = "../tests/support/authenticator.rs"]
mod authenticator;

use std::hint::black_box;
use std::time::Duration;

use authenticator::{ORIGIN, RP_ID, SoftPasskey};
use criterion::{Criterion, criterion_group, criterion_main};
use fleetwatch_protocol::claims::{ApprovalClaims, CLAIMS_VERSION, Slot};
use fleetwatch_protocol::passkey::{self, Approvers, RelyingParty};

fn claims() -> Vec<u8> {
    ApprovalClaims {
        version: CLAIMS_VERSION,
        approval_id: [0x42; 16],
        proposal_id: 17,
        tool: "batch_recording".into(),
        arguments: r#"{"action":"start","device_ids":["3f9a2c41d7-1"]}"#.into(),
        targets: vec!["3f9a2c41d7".into()],
        names: Vec::new(),
        fingerprint: r#"{"3f9a2c41d7":{"next_event_start":null,"online":true,"recording":false}}"#
            .into(),
        schema_version: 1,
        policy_digest: [7; 32],
        slot: Slot::Sandbox,
        approved_at: 1_800_000_000,
        expires_at: 1_800_000_300,
        page_session: [9; 16],
        asked_by: String::new(),
    }
    .encode()
    .expect("encode")
}

fn benches(c: &mut Criterion) {
    let bytes = claims();
    // Several enrolled passkeys, the signers last, so the lookup is not the trivial case.
    let mut es = SoftPasskey::es256(9);
    let mut ed = SoftPasskey::ed25519(10);
    let others: Vec<SoftPasskey> = (1..=4u8).map(SoftPasskey::es256).collect();
    let file: String = others
        .iter()
        .map(|k| k.line("Operator") + "\n")
        .chain([es.line("Ana") + "\n", ed.line("Bo") + "\n"])
        .collect();
    let approvers = Approvers::parse(&file).expect("approver file");
    let rp = RelyingParty::new(RP_ID, [ORIGIN]);
    let es_assertion = es.assert(&bytes);
    let ed_assertion = ed.assert(&bytes);

    c.bench_function("passkey::verify_assertion (ES256)", |b| {
        b.iter(|| {
            passkey::verify_assertion(black_box(&es_assertion), &bytes, &approvers, &rp)
                .expect("verifies")
                .counter()
        })
    });
    c.bench_function("passkey::verify_assertion (Ed25519)", |b| {
        b.iter(|| {
            passkey::verify_assertion(black_box(&ed_assertion), &bytes, &approvers, &rp)
                .expect("verifies")
                .counter()
        })
    });
    let both = [es_assertion.clone(), ed_assertion.clone()];
    c.bench_function(
        "passkey::verify_assertions + require(2) (ES256 + Ed25519)",
        |b| {
            b.iter(|| {
                passkey::verify_assertions(black_box(&both), &bytes, &approvers, &rp)
                    .expect("verifies")
                    .require(2)
                    .expect("quorum")
            })
        },
    );
    let mut forged = es_assertion;
    if let Some(byte) = forged.signature.get_mut(12) {
        *byte ^= 1;
    }
    c.bench_function(
        "passkey::verify_assertion (ES256, bad signature refused)",
        |b| {
            b.iter(|| {
                passkey::verify_assertion(black_box(&forged), &bytes, &approvers, &rp).is_err()
            })
        },
    );
    c.bench_function("Approvers::parse (6 passkeys)", |b| {
        b.iter(|| Approvers::parse(black_box(&file)).expect("parses").len())
    });
}

criterion_group! {
    name = group;
    // Short runs: these guard against order-of-magnitude regressions, not single percents.
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30);
    targets = benches
}
criterion_main!(group);
