//! `fleetwatch demo --script`: a fixed scenario, each step checked. The chat steps ask the
//! assistant in this process; the page steps drive the approval page over HTTP the way a
//! browser would and read its HTML with a real parser; the write checks ask the simulator.

use fleetwatch::answer::Reply;
use fleetwatch::ask;
use fleetwatch::executor_client::ExecutorError;
use fleetwatch::store::{AnchorCheck, ChainCheck, Status};
use fleetwatch_protocol::claims::{ApprovalClaims, CLAIMS_VERSION, Slot};
use serde_json::Value;

use crate::inprocess::Running;
use crate::leftovers::Leftovers;
use crate::operator::{self, Browser, StandIn};
use crate::page_html::{Page, field};

/// The rooms the scenario uses, all on the sandbox team.
const CALM_ROOM: &str = "Test Room A";
const REBOOT_ROOM: &str = "Lab Bench 2";
const BUSY_ROOM: &str = "Lab Bench 1";

pub(crate) async fn scenario(running: &Running, leftovers: &Leftovers) -> i32 {
    let mut script = match Script::new(running, leftovers) {
        Ok(s) => s,
        Err(e) => {
            println!("FAILED: {e}");
            return 1;
        }
    };
    const STEPS: [&str; 13] = [
        "a question",
        "the same in Spanish",
        "a proposal",
        "signing in to the approval page",
        "enrolling the demo's stand-in passkeys",
        "the assistant's signature alone",
        "approving the proposal with a passkey",
        "approving it a second time",
        "a disruptive change needs a second person",
        "a refusal from the executor",
        "both audit chains",
        "a receipt anyone can check",
        "the operator's terminal",
    ];
    let total = STEPS.len();
    for (n, title) in STEPS.iter().enumerate() {
        println!("[{}/{total}] {title}", n + 1);
        let result = match n {
            0 => script.question().await,
            1 => script.spanish().await,
            2 => script.proposal().await,
            3 => script.sign_in().await,
            4 => script.enrol().await,
            5 => script.assistant_alone().await,
            6 => script.approve_calm().await,
            7 => script.approve_again().await,
            8 => script.disruptive().await,
            9 => script.refusal().await,
            10 => script.audit().await,
            11 => script.receipt().await,
            _ => script.terminal().await,
        };
        match result {
            Ok(()) => println!("      ok\n"),
            Err(e) => {
                println!("      FAILED: {e}\n");
                println!(
                    "Result: step {} of {total} did not happen as expected.",
                    n + 1
                );
                return 1;
            }
        }
    }
    println!("Result: all {total} steps happened as expected.");
    0
}

struct Script<'r> {
    running: &'r Running,
    /// The first operator's browser.
    first: Browser,
    /// A second operator's browser (its own session), for changes that need two people.
    second: Browser,
    /// The stand-in passkeys, the first operator's and the second's.
    stand_ins: Vec<StandIn>,
    /// The proposal approved in step 7, with the form used, for the second attempt.
    approved: Option<(u64, Vec<(String, String)>)>,
    /// The proposal that ran in step 7, whose receipt the last step checks.
    done: Option<u64>,
    writes: usize,
}

fn say(prefix: &str, text: &str) {
    let mut first = true;
    for line in text.lines() {
        if line.trim().is_empty() {
            println!();
        } else if first {
            println!("      {prefix}{line}");
            first = false;
        } else {
            println!("      {}{line}", " ".repeat(prefix.chars().count()));
        }
    }
}

impl<'r> Script<'r> {
    fn new(running: &'r Running, leftovers: &Leftovers) -> Result<Script<'r>, String> {
        let secret_file = running
            .page
            .secret_file
            .clone()
            .ok_or_else(|| "the page secret was not written to a file".to_owned())?;
        if !secret_file.starts_with(leftovers.folder()) {
            return Err("the page secret file is outside the demo folder".to_owned());
        }
        let secret = std::fs::read_to_string(&secret_file)
            .map_err(|e| format!("{}: {e}", secret_file.display()))?
            .trim()
            .to_owned();
        let origin = format!("http://localhost:{}", running.page.addr.port());
        Ok(Script {
            running,
            first: Browser::new(
                origin.clone(),
                running.confirm_origin.clone(),
                secret.clone(),
            )?,
            second: Browser::new(origin, running.confirm_origin.clone(), secret)?,
            stand_ins: Vec::new(),
            approved: None,
            done: None,
            writes: 0,
        })
    }

    async fn ask(&self, question: &str) -> Reply {
        println!("      operator> {question}");
        let reply = self.running.assistant.ask(question, false).await;
        say("", &ask::render(&reply, question));
        reply
    }

    fn status(&self, id: u64) -> Result<Status, String> {
        let store = self
            .running
            .store
            .lock()
            .map_err(|_| "the store lock is poisoned".to_owned())?;
        store
            .proposal(id)
            .map_err(|e| e.to_string())?
            .map(|p| p.status)
            .ok_or_else(|| format!("proposal #{id} is not stored"))
    }

    /// Asks for a change and expects exactly one pending proposal for `tool`.
    async fn propose(&self, question: &str, tool: &str) -> Result<u64, String> {
        let reply = self.ask(question).await;
        let [id] = reply.proposals.as_slice() else {
            return Err(format!("expected one proposal, got {:?}", reply.proposals));
        };
        let stored = {
            let store = self
                .running
                .store
                .lock()
                .map_err(|_| "the store lock is poisoned".to_owned())?;
            store.proposal(*id).map_err(|e| e.to_string())?
        };
        match stored {
            Some(p) if p.status == Status::Pending && p.tool == tool => Ok(*id),
            Some(p) => Err(format!(
                "proposal #{id} is {} for {}, expected pending {tool}",
                p.status.as_str(),
                p.tool
            )),
            None => Err(format!("proposal #{id} is not stored")),
        }
    }

    async fn new_writes(&mut self) -> Result<Vec<Value>, String> {
        let all = self.running.sim.writes().await?;
        let fresh = all.get(self.writes..).unwrap_or_default().to_vec();
        self.writes = all.len();
        Ok(fresh)
    }

    /// The card now on the first operator's page, which must be for proposal `id`.
    async fn card(&self, id: u64) -> Result<Page, String> {
        let (status, page) = self.first.get("/").await?;
        if status != 200 {
            return Err(format!("GET / answered {status}"));
        }
        let fields = page
            .form_fields("/approve")
            .ok_or_else(|| format!("the card has no approve form:\n{}", page.main_text()))?;
        if field(&fields, "proposal") != Some(id.to_string().as_str()) {
            return Err(format!("the card is not for proposal #{id}"));
        }
        println!(
            "      page: GET / → 200, {}",
            page.text_by_id("card-heading").unwrap_or_default()
        );
        if let Some(tool) = page.text_by_id("tool") {
            println!("            tool: {tool}");
        }
        for line in page.list_items("effects") {
            println!("            effect: {line}");
        }
        for line in page.list_items("window") {
            println!("            schedule: {line}");
        }
        Ok(page)
    }

    async fn question(&mut self) -> Result<(), String> {
        let reply = self.ask("what needs attention?").await;
        if !reply.proposals.is_empty() {
            return Err("a question raised a proposal".to_owned());
        }
        if !reply.answer.contains("not AI") {
            return Err("the answer does not say the model is a stand-in".to_owned());
        }
        Ok(())
    }

    async fn spanish(&mut self) -> Result<(), String> {
        let reply = self.ask("¿qué salas están grabando?").await;
        if !reply.proposals.is_empty() {
            return Err("a question raised a proposal".to_owned());
        }
        if !reply.answer.contains("no es IA") || !reply.answer.contains("Sala de Pruebas 1") {
            return Err("the Spanish answer does not name the recording room".to_owned());
        }
        Ok(())
    }

    async fn proposal(&mut self) -> Result<(), String> {
        let id = self
            .propose(
                &format!("start recording in {CALM_ROOM}"),
                "batch_recording",
            )
            .await?;
        if !self.new_writes().await?.is_empty() {
            return Err("something was written before anyone approved".to_owned());
        }
        println!("      proposal #{id} stored, pending; the simulator recorded no write");
        self.approved = Some((id, Vec::new()));
        Ok(())
    }

    async fn sign_in(&mut self) -> Result<(), String> {
        let (status, page) = self.first.get("/").await?;
        if status != 200 || page.form_fields("/login").is_none() {
            return Err(format!(
                "GET / without a session answered {status} without a sign-in form"
            ));
        }
        println!("      page: GET / → 200, the sign-in form");
        let refused = self
            .first
            .post("/login", &self.first.secret_field(), false)
            .await?;
        if refused.status().as_u16() != 403 {
            return Err(format!(
                "POST /login without an Origin header answered {}",
                refused.status()
            ));
        }
        println!("      page: POST /login without an Origin header → 403");
        self.first.sign_in().await?;
        println!("      page: POST /login with the secret → 303, session cookie set");
        Ok(())
    }

    async fn enrol(&mut self) -> Result<(), String> {
        println!(
            "      The demo makes two software passkeys, stand-ins for two operators' security \
             keys, enrols each with fleetwatch-confirm enrol as an administrator would, and \
             pipes the line it prints into the executor's approvers add -."
        );
        self.stand_ins = operator::enrol_stand_ins(self.running, "      ").await?;
        let status = self
            .running
            .executor
            .status()
            .await
            .map_err(|e| format!("the executor's Status: {e}"))?;
        let quorum = status
            .quorums
            .iter()
            .find(|q| q.tool == "batch_reboot")
            .ok_or_else(|| "the executor reports no quorum for batch_reboot".to_owned())?;
        println!(
            "      executor: {} persons' passkeys enrolled; a calm change needs 1 person, a \
             disruptive change needs {}",
            status.passkeys_enrolled, quorum.disruptive
        );
        if status.passkeys_enrolled != 2 || quorum.disruptive != 2 {
            return Err("the executor does not require the stand-in passkeys".to_owned());
        }
        Ok(())
    }

    /// What a compromised assistant could try: an `Execute` for the pending proposal, signed
    /// with the assistant's own key and no person's passkey. The executor refuses it.
    async fn assistant_alone(&mut self) -> Result<(), String> {
        let Some((id, _)) = self.approved.clone() else {
            return Err("no pending proposal".to_owned());
        };
        let (proposal, head) = {
            let store = self
                .running
                .store
                .lock()
                .map_err(|_| "the store lock is poisoned".to_owned())?;
            let proposal = store
                .proposal(id)
                .map_err(|e| e.to_string())?
                .ok_or_else(|| format!("proposal #{id} is not stored"))?;
            (proposal, store.chain_head().map_err(|e| e.to_string())?)
        };
        let mut ids = [0u8; 32];
        getrandom::fill(&mut ids).map_err(|e| e.to_string())?;
        let (approval_id, page_session) = ids.split_at(16);
        let now = fleetwatch::store::now_secs();
        let claims = ApprovalClaims {
            version: CLAIMS_VERSION,
            approval_id: approval_id
                .try_into()
                .map_err(|_| "approval ID".to_owned())?,
            proposal_id: id,
            tool: proposal.tool.clone(),
            arguments: proposal.arguments.clone(),
            targets: proposal.targets.clone(),
            // Refused before any name is compared: no person confirmed it.
            names: Vec::new(),
            fingerprint: proposal.fingerprint.clone(),
            schema_version: proposal.schema_version,
            policy_digest: proposal.policy_digest,
            slot: Slot::Sandbox,
            approved_at: now,
            expires_at: now + 300,
            page_session: page_session.try_into().map_err(|_| "session".to_owned())?,
            asked_by: proposal.asked_by.clone(),
        };
        let bytes = claims.encode().map_err(|e| e.to_string())?;
        let signed = self.running.key.sign(bytes);
        println!(
            "      Execute for proposal #{id}, signed by the assistant's key, with no passkey \
             (what a compromised assistant could send)"
        );
        match self.running.executor.execute(signed, head).await {
            Err(ExecutorError::Refused(refusal)) => {
                println!("      executor: refused ({})", refusal.code());
                say("      ", &refusal.message());
            }
            Ok(_) => return Err("the executor ran an approval no person signed".to_owned()),
            Err(e) => return Err(format!("the executor did not answer: {e}")),
        }
        if !self.new_writes().await?.is_empty() {
            return Err("the assistant alone wrote something".to_owned());
        }
        println!("      simulator: no write");
        if self.status(id)? != Status::Pending {
            return Err(format!("proposal #{id} is no longer pending"));
        }
        Ok(())
    }

    async fn approve_calm(&mut self) -> Result<(), String> {
        let Some((id, _)) = self.approved.take() else {
            return Err("no proposal to approve".to_owned());
        };
        let page = self.card(id).await?;
        if let Some(hint) = page.text_by_id("passkey-status") {
            say("page: ", &hint);
        }
        let Some(stand_in) = self.stand_ins.first_mut() else {
            return Err("no stand-in passkey".to_owned());
        };
        let fields = page
            .form_fields("/approve")
            .ok_or_else(|| "the card has no approve form".to_owned())?;
        // The page asks no passkey itself: Approve hands the tab to the confirm page.
        let (status, handoff) = self.first.post_page("/approve", &fields).await?;
        println!("      page: POST /approve → {status}, hands the tab to the confirm page");
        let (status, page, fields) =
            operator::through_confirm_page(&self.first, stand_in, &handoff, "      ").await?;
        let heading = page.text_by_id("heading").unwrap_or_default();
        if status != 200 || heading != "Done" {
            return Err(format!("the approval did not run:\n{}", page.main_text()));
        }
        let writes = self.new_writes().await?;
        let [write] = writes.as_slice() else {
            return Err(format!(
                "expected one write, the simulator recorded {}",
                writes.len()
            ));
        };
        show_write(write);
        let args = write.get("arguments").cloned().unwrap_or_default();
        if write.get("tool").and_then(Value::as_str) != Some("batch_recording")
            || args.get("action").and_then(Value::as_str) != Some("start")
            || write.get("team").and_then(Value::as_str) != Some("sandbox")
        {
            return Err("the recorded write is not the approved change".to_owned());
        }
        if self.status(id)? != Status::Executed {
            return Err(format!("proposal #{id} is not marked executed"));
        }
        println!("      proposal #{id}: executed");
        self.approved = Some((id, fields));
        self.done = Some(id);
        Ok(())
    }

    async fn approve_again(&mut self) -> Result<(), String> {
        let Some((id, fields)) = self.approved.take() else {
            return Err("no approved proposal to try again".to_owned());
        };
        let (status, page) = self
            .first
            .post_to(
                &format!("{}/confirmed", self.first.origin),
                &fields,
                &self.first.confirm_origin,
            )
            .await?;
        println!(
            "      page: POST /confirmed with the same passkey answer again → {status}, \"{}\"",
            page.paragraphs().into_iter().next().unwrap_or_default()
        );
        if status != 409 {
            return Err(format!(
                "a second approval of proposal #{id} answered {status}"
            ));
        }
        if !self.new_writes().await?.is_empty() {
            return Err("the second approval wrote something".to_owned());
        }
        println!("      simulator: no new write");
        Ok(())
    }

    /// Approves `id` from one operator's browser with one stand-in passkey (Approve, then
    /// Confirm); the last page's status, heading and lines.
    async fn decide(
        &mut self,
        second_browser: bool,
        stand_in: usize,
        id: u64,
    ) -> Result<(u16, String, Page), String> {
        let browser = if second_browser {
            &self.second
        } else {
            &self.first
        };
        let passkey = self
            .stand_ins
            .get_mut(stand_in)
            .ok_or_else(|| "no such stand-in passkey".to_owned())?;
        let (status, page) = operator::approve_as(browser, passkey, id, "      ").await?;
        for line in page.paragraphs() {
            say("  ", &line);
        }
        Ok((status, page.text_by_id("heading").unwrap_or_default(), page))
    }

    async fn disruptive(&mut self) -> Result<(), String> {
        let id = self
            .propose(&format!("reboot {REBOOT_ROOM}"), "batch_reboot")
            .await?;
        self.card(id).await?;
        println!("      The first operator approves and confirms with their passkey:");
        let (status, heading, _) = self.decide(false, 0, id).await?;
        if status != 200 || heading != "Your approval is kept" {
            return Err(format!(
                "the first approval was not kept: {status} {heading}"
            ));
        }
        if !self.new_writes().await?.is_empty() {
            return Err("the reboot ran with one passkey".to_owned());
        }
        println!("      simulator: nothing written yet");
        self.second.sign_in().await?;
        println!("      A second operator signs in on their own browser session:");
        let (status, page) = self.second.get("/").await?;
        let waiting = page.text_by_id("waiting").unwrap_or_default();
        say("page: GET / → ", &format!("{status}, {waiting}"));
        if !waiting.contains("waiting for a second person") {
            return Err("the second operator's card does not say it waits for them".to_owned());
        }
        println!("      The first operator's passkey again, from the second session:");
        let (status, _, _) = self.decide(true, 0, id).await?;
        if status != 409 || !self.new_writes().await?.is_empty() {
            return Err("the same passkey counted twice".to_owned());
        }
        println!("      The second operator approves and confirms with their own passkey:");
        let (status, heading, page) = self.decide(true, 1, id).await?;
        if status != 200 || heading != "Done" {
            return Err(format!(
                "the reboot did not run with two passkeys:\n{}",
                page.main_text()
            ));
        }
        let writes = self.new_writes().await?;
        let [write] = writes.as_slice() else {
            return Err(format!(
                "expected one write, the simulator recorded {}",
                writes.len()
            ));
        };
        show_write(write);
        if write.get("tool").and_then(Value::as_str) != Some("batch_reboot") {
            return Err("the recorded write is not the reboot".to_owned());
        }
        if self.status(id)? != Status::Executed {
            return Err(format!("proposal #{id} is not marked executed"));
        }
        println!("      proposal #{id}: executed, approved by both stand-in passkeys");
        Ok(())
    }

    async fn refusal(&mut self) -> Result<(), String> {
        let id = self
            .propose(&format!("reboot {BUSY_ROOM}"), "batch_reboot")
            .await?;
        self.card(id).await?;
        let (status, heading, _) = self.decide(false, 0, id).await?;
        if status != 200 || heading != "Your approval is kept" {
            return Err(format!(
                "the first approval was not kept: {status} {heading}"
            ));
        }
        let (status, heading, page) = self.decide(true, 1, id).await?;
        if status != 200 || heading != "Nothing ran" {
            return Err(format!(
                "the executor did not refuse:\n{}",
                page.main_text()
            ));
        }
        if !page.main_text().contains("event") {
            return Err("the refusal does not say an event is the reason".to_owned());
        }
        if !self.new_writes().await?.is_empty() {
            return Err("the refused reboot wrote something".to_owned());
        }
        println!("      simulator: no new write");
        if self.status(id)? != Status::Refused {
            return Err(format!("proposal #{id} is not marked refused"));
        }
        println!("      proposal #{id}: refused by the executor");
        Ok(())
    }

    /// Both chains verify, and each still contains every head the other recorded of it.
    async fn audit(&mut self) -> Result<(), String> {
        let (check, own_heads) = {
            let store = self
                .running
                .store
                .lock()
                .map_err(|_| "the store lock is poisoned".to_owned())?;
            let check = store.verify_audit().map_err(|e| e.to_string())?;
            let heads = store.audit_heads().map_err(|e| e.to_string())?;
            (check, heads)
        };
        match check {
            ChainCheck::Intact { rows, .. } => {
                println!("      fleetwatch audit verify: intact, {rows} rows");
            }
            ChainCheck::Broken { row, problem } => {
                return Err(format!(
                    "the assistant's audit chain is broken at row {row}: {problem}"
                ));
            }
        }
        let executor_heads = self.executor_audit(&["heads"], "")?;
        let anchors = {
            let store = self
                .running
                .store
                .lock()
                .map_err(|_| "the store lock is poisoned".to_owned())?;
            store.check_executor_anchors(&executor_heads)?
        };
        println!("      fleetwatch audit verify --against <executor heads>: {anchors}");
        if !matches!(anchors, AnchorCheck::Intact { anchors: 1.., .. }) {
            return Err("the assistant's record of the executor's chain does not match".into());
        }
        let listing: Vec<String> = own_heads
            .iter()
            .map(|(id, hash)| fleetwatch_protocol::anchor::heads_line(*id, hash))
            .collect();
        let text = self.executor_audit(&["verify", "--against", "-"], &listing.join("\n"))?;
        println!(
            "      fleetwatch-executor audit verify --against <assistant heads>: {}",
            text.replace('\n', "\n      ")
        );
        Ok(())
    }

    /// The receipt of the change step 7 ran, written by the executor and checked by
    /// `fleetwatch-confirm verify` from public inputs alone; then the same receipt with its
    /// outcome changed, which the verifier refuses.
    async fn receipt(&mut self) -> Result<(), String> {
        let id = self.done.ok_or("no change ran, so there is no receipt")?;
        let executor = |args: &[&str]| {
            operator::executor_cli(
                &self.running.executor_program,
                &self.running.executor_config,
                args,
                "",
            )
        };
        let key = executor(&["receipt", "--key"])?;
        let receipt = executor(&["receipt", &id.to_string()])?;
        let folder = self
            .running
            .executor_approvers
            .parent()
            .ok_or("the approver file has no folder")?;
        let file = folder.join(format!("receipt-{id}.json"));
        std::fs::write(&file, &receipt).map_err(|e| format!("{}: {e}", file.display()))?;
        println!(
            "      fleetwatch-executor receipt {id} > receipt-{id}.json ({} bytes); receipt --key: {key}",
            receipt.len()
        );
        let verify = |file: &std::path::Path| {
            std::process::Command::new(&self.running.confirm_program)
                .arg("verify")
                .arg(file)
                .args(["--receipt-key", &key])
                .arg("--approvers")
                .arg(&self.running.executor_approvers)
                .arg("--policy")
                .arg(folder.join("tool_policy.yaml"))
                .output()
                .map_err(|e| format!("fleetwatch-confirm verify: {e}"))
        };
        let checked = verify(&file)?;
        let said = String::from_utf8_lossy(&checked.stdout).trim().to_owned();
        say("fleetwatch-confirm verify: ", &said);
        if !checked.status.success() {
            return Err("the receipt of a change that ran did not verify".to_owned());
        }
        let tampered = receipt.replacen(
            "\\\"outcome\\\":\\\"done\\\"",
            "\\\"outcome\\\":\\\"failed\\\"",
            1,
        );
        if tampered == receipt {
            return Err("the receipt's statement does not say done".to_owned());
        }
        let file = folder.join(format!("receipt-{id}-edited.json"));
        std::fs::write(&file, &tampered).map_err(|e| format!("{}: {e}", file.display()))?;
        let checked = verify(&file)?;
        let said = String::from_utf8_lossy(&checked.stdout);
        // The verdict, then the first check that failed.
        let failed = said
            .lines()
            .take(1)
            .chain(said.lines().find(|l| l.starts_with("FAILED")))
            .collect::<Vec<_>>()
            .join("\n");
        say(
            "the same receipt with \"done\" edited to \"failed\": ",
            &failed,
        );
        if checked.status.code() != Some(1) || !failed.contains("FAILED") {
            return Err("an edited receipt verified".to_owned());
        }
        Ok(())
    }

    /// A change asked over the chat socket as `fleetwatch ask` asks it, so the assistant knows
    /// who asked; listed by the real `fleetwatch pending`, denied with a reason by the real
    /// `fleetwatch deny`, and the line the asking prompt prints for it.
    async fn terminal(&mut self) -> Result<(), String> {
        use fleetwatch::chat::{self, ChatCommand, ChatRequest, ChatResponse};
        let socket = self.running.chat_socket();
        let question = format!("stop recording in {CALM_ROOM}");
        println!("      operator> {question}");
        let request = ChatRequest {
            question: question.clone(),
            no_ai: false,
        };
        let reply = chat::ask(&socket, &request).await?;
        say("", &ask::render(&reply, &question));
        let [id] = reply.proposals.as_slice() else {
            return Err(format!("expected one proposal, got {:?}", reply.proposals));
        };
        let fleetwatch = crate::pieces::sibling("fleetwatch")?;
        let run = |args: &[&str]| {
            let out = std::process::Command::new(&fleetwatch)
                .args(args)
                .env("FLEETWATCH_CHAT_SOCKET", &socket)
                // The scenario speaks English whatever this terminal's language.
                .env("LC_ALL", "C.UTF-8")
                .output()
                .map_err(|e| format!("fleetwatch {}: {e}", args.join(" ")))?;
            let text = String::from_utf8_lossy(&out.stdout).trim_end().to_owned();
            if !out.status.success() {
                return Err(format!(
                    "fleetwatch {} failed: {text}{}",
                    args.join(" "),
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
            Ok(text)
        };
        let listed = run(&["pending"])?;
        println!("      $ fleetwatch pending");
        say("  ", &listed);
        if !listed.contains(&format!("#{id}  stop recording in “{CALM_ROOM}”"))
            || !listed.contains("asked by ")
        {
            return Err(format!(
                "pending does not list proposal #{id} and who asked"
            ));
        }
        // Another terminal follows what waits, as an approver leaves it open.
        let mut watch = std::process::Command::new(&fleetwatch)
            .args(["pending", "--watch", "--lang", "en"])
            .env("FLEETWATCH_CHAT_SOCKET", &socket)
            .env("LC_ALL", "C.UTF-8")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .map_err(|e| format!("fleetwatch pending --watch: {e}"))?;
        let (lines_tx, lines_rx) = std::sync::mpsc::channel::<String>();
        if let Some(stdout) = watch.stdout.take() {
            std::thread::spawn(move || {
                use std::io::BufRead as _;
                for line in std::io::BufReader::new(stdout)
                    .lines()
                    .map_while(Result::ok)
                {
                    if lines_tx.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        let watched = |needle: &str| -> Option<String> {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
            while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
                match lines_rx.recv_timeout(left) {
                    Ok(line) if line.contains(needle) => return Some(line),
                    Ok(_) => {}
                    Err(_) => return None,
                }
            }
            None
        };
        // The watch has printed the list before anything is denied.
        let started = watched("Watching for changes");
        let reason = "the keynote runs until 11:00; ask again after it";
        let denied = run(&["deny", &id.to_string(), "--reason", reason])?;
        println!("      $ fleetwatch deny {id} --reason \"{reason}\"");
        say("  ", &denied);
        let followed = watched(&format!("#{id} was denied"));
        let _ = watch.kill();
        let _ = watch.wait();
        match (started, followed) {
            (Some(_), Some(line)) => {
                say(
                    "$ fleetwatch pending --watch, open in another terminal, printed: ",
                    &line,
                );
            }
            _ => return Err("fleetwatch pending --watch did not print the denial".to_owned()),
        }
        if self.status(*id)? != Status::Denied {
            return Err(format!("proposal #{id} is not denied"));
        }
        // What the asking prompt's watcher asks and prints.
        let standings = ChatCommand::Standings {
            proposals: vec![*id],
        };
        let line = match chat::command(&socket, &standings).await? {
            ChatResponse::Standings(list) => list.iter().find_map(|s| {
                fleetwatch::pending::outcome_line(s, Some("pending"), fleetwatch::lang::Lang::En)
            }),
            _ => None,
        }
        .ok_or("the chat socket did not say where the proposal stands")?;
        say("the asking prompt prints: ", &line);
        if !line.contains(reason) {
            return Err("the prompt's line does not carry the reason".to_owned());
        }
        if !self.new_writes().await?.is_empty() {
            return Err("a denied change was written".to_owned());
        }
        println!("      simulator: no new write");
        Ok(())
    }

    /// Runs `fleetwatch-executor audit ARGS` on the demo's executor configuration.
    fn executor_audit(&self, args: &[&str], input: &str) -> Result<String, String> {
        let args: Vec<&str> = ["audit"].into_iter().chain(args.iter().copied()).collect();
        operator::executor_cli(
            &self.running.executor_program,
            &self.running.executor_config,
            &args,
            input,
        )
    }
}

fn show_write(write: &Value) {
    println!(
        "      simulator: write recorded on team {}: {} {}",
        write.get("team").and_then(Value::as_str).unwrap_or("?"),
        write.get("tool").and_then(Value::as_str).unwrap_or("?"),
        write.get("arguments").cloned().unwrap_or_default()
    );
}
