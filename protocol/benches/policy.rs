//! The policy: loading `tool_policy.yaml` (schemas compiled) and validating proposal arguments,
//! which both the assistant and the executor do for every change.
#![forbid(unsafe_code)]
// A benchmark harness, not shipped code: a failed setup should stop the run loudly, and
// criterion's macros generate undocumented public items.
#![allow(clippy::expect_used, missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use fleetwatch_protocol::policy::Policy;
use serde_json::json;

fn benches(c: &mut Criterion) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tool_policy.yaml");
    let yaml = std::fs::read_to_string(&path).expect("tool_policy.yaml");
    let policy = Policy::from_yaml(&yaml).expect("policy");

    c.bench_function("Policy::from_yaml (tool_policy.yaml)", |b| {
        b.iter(|| Policy::from_yaml(black_box(&yaml)).expect("policy"))
    });
    let start = json!({"action": "start", "device_ids": ["3f9a2c41d7-1"]});
    c.bench_function("Policy::validate (batch_recording, one channel)", |b| {
        b.iter(|| {
            policy
                .validate("batch_recording", black_box(&start))
                .expect("valid")
        })
    });
    let reboot = json!({"device_ids": ["3f9a2c41d7"]});
    c.bench_function("Policy::validate (batch_reboot, one device)", |b| {
        b.iter(|| {
            policy
                .validate("batch_reboot", black_box(&reboot))
                .expect("valid")
        })
    });
    let bad = json!({"action": "erase", "device_ids": ["3f9a2c41d7-1"]});
    c.bench_function("Policy::validate (refused arguments)", |b| {
        b.iter(|| policy.validate("batch_recording", black_box(&bad)).is_err())
    });
    c.bench_function("Policy::digest (one entry)", |b| {
        b.iter(|| policy.digest(black_box("batch_recording")))
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
