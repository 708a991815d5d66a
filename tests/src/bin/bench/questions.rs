//! What a question costs with a model: bytes sent to the model and model calls per question,
//! through the real engine (`fleetwatch::answer::Assistant`) over a replay folder of a
//! generated team, with the offline stand-in answering as a model would. "before" runs the same
//! question with the team-wide reads shown to the model (the registry without its `team_wide`
//! marks), as Fleetwatch did before the fleet tools.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use fleetwatch_e2e::workspace_root;
use fleetwatch_protocol::policy::Policy;

/// The sizes a question is asked at.
pub const SIZES: [usize; 3] = [31, 1_000, 10_000];

/// The questions asked at each size.
pub const QUESTIONS: [&str; 3] = [
    "what's offline?",
    "what needs attention?",
    "is Room 7 ready for its next event?",
];

/// One question at one size.
pub struct Cost {
    /// Rooms in the team.
    pub rooms: usize,
    /// The question.
    pub question: &'static str,
    /// Bytes of every request body sent to the model, summed, and the largest.
    pub bytes: usize,
    /// The largest request body.
    pub largest: usize,
    /// Model calls.
    pub calls: usize,
    /// Wall time of the question, in ms.
    pub ms: f64,
}

fn policy(team_wide: bool) -> Arc<Policy> {
    let text = std::fs::read_to_string(workspace_root().join("tool_policy.yaml"))
        .expect("tool_policy.yaml");
    let text = if team_wide {
        text
    } else {
        text.replace("    team_wide: true\n", "")
    };
    Arc::new(Policy::from_yaml(&text).expect("the shipped policy"))
}

/// Asks every question at every size, with the fleet tools (`team_wide` marks kept) or
/// without them.
pub async fn costs(
    team_wide: bool,
    texts: &dyn Fn(usize) -> (String, String, String),
) -> Vec<Cost> {
    let policy = policy(team_wide);
    let mut out = Vec::new();
    for rooms in SIZES {
        let folder = tempfile::tempdir().expect("replay folder");
        let (list, status, events) = texts(rooms);
        for (tool, text) in [
            ("get_devices_in_my_team", &list),
            ("get_recorder_status_for_devices", &status),
            ("get_current_or_next_cms_events_for_devices", &events),
        ] {
            std::fs::write(folder.path().join(format!("{tool}.json")), text).expect("write");
        }
        for question in QUESTIONS {
            out.push(ask(&policy, folder.path(), rooms, question).await);
        }
    }
    out
}

async fn ask(
    policy: &Arc<Policy>,
    folder: &std::path::Path,
    rooms: usize,
    question: &'static str,
) -> Cost {
    let state = tempfile::tempdir().expect("state folder");
    for category in ["fleet", "schedule"] {
        fleetwatch::grants::open(state.path(), policy, category).expect("grant");
    }
    let pairs = [
        (
            "FLEETWATCH_POLICY".to_owned(),
            workspace_root()
                .join("tool_policy.yaml")
                .display()
                .to_string(),
        ),
        (
            "FLEETWATCH_STATE_DIR".to_owned(),
            state.path().display().to_string(),
        ),
    ];
    let config = fleetwatch::config::Config::from_lookup(move |name| {
        pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    })
    .expect("config");
    let now = jiff::Timestamp::now();
    let reader = Arc::new(fleetwatch::reads::Reader::replay(
        folder.to_path_buf(),
        now,
        Arc::clone(policy),
    ));
    let store = Arc::new(Mutex::new(
        fleetwatch::store::Store::open(state.path()).expect("store"),
    ));
    let model = fleetwatch_sim::model::start_offline_at(Some(now), 0)
        .await
        .expect("model stand-in");
    let cfg = fleetwatch::model::ModelConfig::new(
        model.url(),
        fleetwatch::model::ApiKey::new("bench-key").expect("key"),
        "stand-in",
    );
    let engine = fleetwatch::answer::Assistant::from_config(
        &config,
        Arc::clone(policy),
        reader,
        store,
        Some(cfg),
        false,
    );
    let t = Instant::now();
    let reply = engine.ask(question, false).await;
    let ms = t.elapsed().as_secs_f64() * 1e3;
    assert!(reply.note.is_none(), "{question} at {rooms}: {reply:?}");
    let sizes: Vec<usize> = model
        .requests()
        .iter()
        .map(|r| serde_json::to_vec(r).map_or(0, |b| b.len()))
        .collect();
    Cost {
        rooms,
        question,
        bytes: sizes.iter().sum(),
        largest: sizes.iter().copied().max().unwrap_or(0),
        calls: sizes.len(),
        ms,
    }
}
