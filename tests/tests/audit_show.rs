//! Both `audit show` commands read back after a real run: a change proposed through the model
//! loop, shown, approved and executed; a second one shown Deny-only and denied; a third the
//! executor refused on live state; a row holding a secret-shaped string. The words and the
//! JSON lines of each side tell each proposal's story in order, `--proposal` and `--since`
//! filter, `--lang es` speaks Spanish, and the secret never shows.

use fleetwatch_e2e::page::{PagePath, form, form_body};
use fleetwatch_e2e::{printed, sandbox_devices, sign};
use fleetwatch_protocol::refusal::Refusal;
use fleetwatch_protocol::wire::Response;
use fleetwatch_sim::model::{text_reply, tool_use_reply};
use serde_json::{Value, json};

/// `fleetwatch audit show ARGS`.
fn show(path: &PagePath, args: &[&str]) -> String {
    let all = [&["audit", "show"][..], args].concat();
    printed(path.state.run(&all, ""), args)
}

/// `fleetwatch-executor audit show ARGS`.
fn executor_show(path: &PagePath, args: &[&str]) -> String {
    let all = [&["audit", "show"][..], args].concat();
    printed(path.h.cli(&all, None), args)
}

fn kinds_of(lines: &[Value], proposal: u64) -> Vec<String> {
    lines
        .iter()
        .filter(|l| l["proposal"] == json!(proposal))
        .map(|l| l["kind"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn audit_show_tells_each_proposals_story_in_words_and_json() {
    let model = fleetwatch_sim::model::start(Vec::new())
        .await
        .expect("model stand-in");
    let path = PagePath::start_with_model(model).await;
    let room = sandbox_devices(&path.h.sim)[0].clone();
    let channel = format!("{room}-1");
    assert!(path.h.sim.set_recording("sandbox", &channel, false));
    let arguments = json!({"action": "start", "device_ids": [channel]});
    assert!(path.page.model.push_replies(vec![
        tool_use_reply(
            "toolu_1",
            "propose_change",
            json!({"tool": "batch_recording", "arguments": arguments, "reason": "the lecture starts"}),
        ),
        text_reply("Proposed."),
    ]));
    let asked = path
        .state
        .run(&["ask", "start recording in Test Room A"], "");
    assert!(asked.status.success());

    // Proposal 1: shown, approved, executed.
    let card = path.page.front().await;
    let (status, done) = path
        .page
        .post_text("/approve", &form_body(&form(&card, "/approve")))
        .await;
    assert_eq!(status, 200, "{done}");
    assert!(done.contains(">Done<"), "{done}");

    // Proposal 2: the same start, now pointless: Deny only, denied.
    path.state
        .propose(&path.h, "batch_recording", &arguments)
        .await;
    let card = path.page.front().await;
    assert!(!card.contains("action=\"/approve\""), "{card}");
    assert!(
        card.contains("id=\"pace\">Your last hour: 1 approved, 0 denied; a median of "),
        "{card}"
    );
    let (status, denied) = path
        .page
        .post_text("/deny", &form_body(&form(&card, "/deny")))
        .await;
    assert!(status == 303 || status == 200, "{status}: {denied}");

    // The header counts this person's own decisions of the last hour.
    let front = path.page.front().await;
    assert!(
        front.contains("Your last hour: 1 approved, 1 denied; a median of "),
        "{front}"
    );

    // A row holding a secret-shaped string.
    path.state
        .store()
        .audit(
            "operator_note",
            None,
            &json!({"text": "the stream key is live_9f8e7d6c5b4a"}),
        )
        .expect("audit row");

    let words = show(&path, &["--lang", "en"]);
    assert!(
        words.starts_with("Audit log of the assistant: ") && words.contains("intact"),
        "{words}"
    );
    let story: Vec<&str> = words.lines().filter(|l| l.contains("  #1  ")).collect();
    let expected = [
        "proposed batch_recording on Test Room A (",
        "card shown (page session ",
        "decision recorded: approved (",
        "approved by page session ",
        "sent to the executor",
        "executed: the change ran",
    ];
    assert_eq!(story.len(), expected.len(), "{words}");
    for (line, want) in story.iter().zip(expected) {
        assert!(line.contains(want), "{line:?} should say {want:?}\n{words}");
        assert!(line.contains(" UTC  #1  "), "{line}");
    }
    assert!(words.contains("#2  card shown, Deny only"), "{words}");
    assert!(words.contains("#2  denied: "), "{words}");
    let denial = words
        .lines()
        .find(|l| l.contains("#2  denied: "))
        .unwrap_or_default();
    assert!(denial.contains("page session"), "who denied: {denial}");
    assert!(!words.contains("live_9f8e7d6c5b4a"), "{words}");
    assert!(words.contains("[redacted]"), "{words}");

    let spanish = show(&path, &["--lang", "es"]);
    assert!(
        spanish.contains("ejecutada: el cambio se hizo"),
        "{spanish}"
    );
    assert!(spanish.contains("#2  denegada: "), "{spanish}");
    assert!(!spanish.contains("executed"), "{spanish}");

    let json_text = show(&path, &["--json"]);
    let lines: Vec<Value> = json_text
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object a line"))
        .collect();
    assert_eq!(
        kinds_of(&lines, 1),
        [
            "proposed",
            "page_card_shown",
            "approved",
            "page_approval",
            "page_execute_sent",
            "page_result"
        ]
    );
    let result = lines
        .iter()
        .find(|l| l["kind"] == "page_result")
        .expect("a result row");
    assert_eq!(result["outcome"], "done");
    assert_eq!(result["tool"], "batch_recording");
    assert_eq!(result["targets"][0]["name"], "Test Room A");
    assert_eq!(result["chain"], "intact");
    let approval = lines
        .iter()
        .find(|l| l["kind"] == "page_approval")
        .expect("an approval row");
    assert!(
        approval["decided_by"]
            .as_str()
            .is_some_and(|w| w.starts_with("page session ")),
        "{approval}"
    );
    assert!(kinds_of(&lines, 2).contains(&"denied".to_owned()));
    assert!(!json_text.contains("live_9f8e7d6c5b4a"), "{json_text}");
    for line in &lines {
        for field in [
            "row", "time", "unix", "kind", "proposal", "targets", "words",
        ] {
            assert!(line.get(field).is_some(), "{field} missing: {line}");
        }
    }

    // A change that ran names the command for its receipt; a denied one does not.
    let one = show(&path, &["--proposal", "1", "--lang", "en"]);
    assert!(
        one.contains("sudo fleetwatch-executor receipt 1 > receipt-1.json"),
        "{one}"
    );
    let two = show(&path, &["--proposal", "2", "--lang", "en"]);
    assert!(!two.contains("fleetwatch-executor receipt"), "{two}");
    let only_two = show(&path, &["--json", "--proposal", "2"]);
    let only_two: Vec<Value> = only_two
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    assert!(!only_two.is_empty());
    assert!(
        only_two.iter().all(|l| l["proposal"] == json!(2)),
        "{only_two:?}"
    );

    let future = show(&path, &["--since", "2099-01-01", "--lang", "en"]);
    assert_eq!(future.lines().count(), 1, "only the chain line: {future}");
    let recent = show(&path, &["--since", "1h", "--lang", "en"]);
    assert_eq!(recent, words, "everything happened in the last hour");

    let bad = path
        .state
        .run(&["audit", "show", "--since", "yesterday"], "");
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--since"));

    // The executor's side: the same proposal accepted and executed, and a refusal on live
    // state (the room now records) with its reason in words.
    let mut claims = path
        .h
        .claims("batch_reboot", &json!({"device_ids": [room]}))
        .await;
    claims.proposal_id = 9;
    let answer = path.h.execute(sign(&claims, 7)).await;
    assert!(
        matches!(answer, Some(Response::Refused(Refusal::Recording))),
        "{answer:?}"
    );
    let executor = executor_show(&path, &["--lang", "en"]);
    assert!(
        executor.starts_with("Audit log of the executor: ") && executor.contains("intact"),
        "{executor}"
    );
    let accepted = executor
        .lines()
        .find(|l| l.contains("#1  accepted batch_recording on "))
        .unwrap_or_else(|| panic!("no accepted row for #1:\n{executor}"));
    assert!(
        accepted.contains("approved by the assistant's key only"),
        "{accepted}"
    );
    assert!(
        executor.contains("#1  executed batch_recording on "),
        "{executor}"
    );
    assert!(
        executor.contains(&format!(
            "#9  refused batch_reboot on {room}: a device was recording; nothing ran"
        )),
        "{executor}"
    );
    let executor_es = executor_show(&path, &["--lang", "es"]);
    assert!(
        executor_es.contains(&format!(
            "#9  rechazada batch_reboot en {room}: un equipo estaba grabando; no se ejecutó nada"
        )),
        "{executor_es}"
    );
    let only_nine: Vec<Value> = executor_show(&path, &["--json", "--proposal", "9"])
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    // The approval was spent before the live read refused it.
    let kinds: Vec<&str> = only_nine
        .iter()
        .filter_map(|l| l["kind"].as_str())
        .collect();
    assert_eq!(kinds, ["accepted", "refused"], "{only_nine:?}");
    assert_eq!(only_nine[1]["refusal"], "recording");
    assert_eq!(only_nine[1]["proposal"], 9);
    assert_eq!(only_nine[1]["targets"], json!([room]));
    let one: Vec<Value> = executor_show(&path, &["--json", "--proposal", "1"])
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    let kinds: Vec<&str> = one.iter().filter_map(|l| l["kind"].as_str()).collect();
    assert_eq!(kinds, ["accepted", "outcome"], "{one:?}");
    assert_eq!(one[1]["outcome"], "done");
    let future = executor_show(&path, &["--since", "2099-01-01"]);
    assert_eq!(future.lines().count(), 1, "only the chain line: {future}");
    let bad = path.h.cli(&["audit", "show", "--proposal", "x"], None);
    assert_eq!(bad.status.code(), Some(2));

    // Rows changed behind the programs' backs: both commands say so first, and still show.
    let tamper = |db: std::path::PathBuf, table_change: &str| {
        let conn = rusqlite::Connection::open(db).expect("db");
        conn.execute_batch(&format!("DROP TRIGGER audit_no_update; {table_change}"))
            .expect("tamper");
    };
    tamper(
        path.state.path().join("assistant.db"),
        "UPDATE audit SET detail = '{\"reason\":\"nothing to see\"}' WHERE kind = 'denied';",
    );
    let broken = show(&path, &["--lang", "en"]);
    assert!(
        broken.starts_with("WARNING: the audit chain is broken at row "),
        "{broken}"
    );
    assert!(broken.contains("#1  executed: the change ran"), "{broken}");
    let broken_json = show(&path, &["--json"]);
    let first: Value =
        serde_json::from_str(broken_json.lines().next().unwrap_or_default()).expect("JSON");
    assert_eq!(first["chain"], "broken");
    tamper(
        path.h.state.join("executor.db"),
        "UPDATE audit SET reason = 'done' WHERE kind = 'refused';",
    );
    let broken = executor_show(&path, &["--lang", "es"]);
    assert!(
        broken.starts_with("AVISO: la cadena de auditoría está rota"),
        "{broken}"
    );
}
