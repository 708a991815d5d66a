//! Approval claims: encoding, signing, and the executor's strict verification.
#![forbid(unsafe_code)]
// A benchmark harness, not shipped code: a failed setup should stop the run loudly, and
// criterion's macros generate undocumented public items.
#![allow(clippy::expect_used, missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use ed25519_dalek::SigningKey;
use fleetwatch_protocol::claims::{self, ApprovalClaims, CLAIMS_VERSION, Slot, TrustedKeys};

fn sample() -> ApprovalClaims {
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
}

fn benches(c: &mut Criterion) {
    let key = SigningKey::from_bytes(&[7; 32]);
    // Several installed keys, the signer's last, so the lookup is not the trivial case.
    let keys = TrustedKeys::from_keys(
        (1..=4u8)
            .map(|s| SigningKey::from_bytes(&[s; 32]).verifying_key())
            .chain([key.verifying_key()]),
    );
    let claims = sample();
    let bytes = claims.encode().expect("encode");
    let signed = claims::sign(bytes.clone(), &key);

    c.bench_function("ApprovalClaims::encode", |b| {
        b.iter(|| black_box(&claims).encode().expect("encode"))
    });
    c.bench_function("ApprovalClaims::decode", |b| {
        b.iter(|| ApprovalClaims::decode(black_box(&bytes)).expect("decode"))
    });
    c.bench_function("claims::sign (Ed25519)", |b| {
        b.iter(|| claims::sign(black_box(bytes.clone()), &key))
    });
    c.bench_function("TrustedKeys::verify (verify_strict, 5 keys)", |b| {
        b.iter(|| keys.verify(black_box(&signed)).expect("verifies").len())
    });
    let mut forged = signed.clone();
    if let Some(byte) = forged.claims.first_mut() {
        *byte ^= 1;
    }
    c.bench_function("TrustedKeys::verify (bad signature refused)", |b| {
        b.iter(|| keys.verify(black_box(&forged)).is_err())
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
