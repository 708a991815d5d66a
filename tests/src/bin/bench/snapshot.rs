//! The assistant's side of a large team: the reads of one question turned into its snapshot
//! (`fleetwatch::reads::load_snapshot` over a replay folder: the same guard, redaction and
//! decoding a question runs), timed in a child process whose peak RSS is its own.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use fleetwatch_e2e::faults::proc_status_kib;
use fleetwatch_e2e::workspace_root;

/// Runs of the load inside the child; the median is reported.
const RUNS: usize = 7;

/// What the child measured.
pub struct SnapshotFigures {
    /// Median wall time of one snapshot, in ms.
    pub median_ms: f64,
    /// Peak RSS of the child, in MiB.
    pub peak_mib: f64,
}

/// Writes the team's reads as a replay folder and measures the snapshot in a child.
pub fn in_child(list: &str, status: &str, events: &str) -> Result<SnapshotFigures, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    for (tool, text) in [
        ("get_devices_in_my_team", list),
        ("get_recorder_status_for_devices", status),
        ("get_current_or_next_cms_events_for_devices", events),
    ] {
        std::fs::write(dir.path().join(format!("{tool}.json")), text).map_err(|e| e.to_string())?;
    }
    let (v, text) = super::child_figures("--child-snapshot", dir.path())?;
    match v.as_slice() {
        [median, peak] => Ok(SnapshotFigures {
            median_ms: *median,
            peak_mib: peak / 1024.0,
        }),
        _ => Err(format!("unexpected child output: {text}")),
    }
}

/// Child: loads the snapshot of the replay folder `dir` [`RUNS`] times; prints
/// `median_ms peak_kib`.
pub fn child(dir: &Path, devices: usize) {
    let text = std::fs::read_to_string(workspace_root().join("tool_policy.yaml"))
        .expect("tool_policy.yaml");
    let policy = Arc::new(
        fleetwatch_protocol::policy::Policy::from_yaml(&text).expect("the shipped policy"),
    );
    let reader =
        fleetwatch::reads::Reader::replay(dir.to_path_buf(), jiff::Timestamp::now(), policy);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let mut times = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let t = Instant::now();
        let snapshot = runtime
            .block_on(fleetwatch::reads::load_snapshot(&reader))
            .expect("snapshot");
        times.push(t.elapsed().as_secs_f64() * 1e3);
        assert_eq!(snapshot.devices.len(), devices);
        drop(snapshot);
    }
    times.sort_by(f64::total_cmp);
    let median = times.get(RUNS / 2).copied().unwrap_or(f64::NAN);
    let peak = proc_status_kib("self", "VmHWM").unwrap_or(0);
    println!("{median:.3} {peak}");
}
