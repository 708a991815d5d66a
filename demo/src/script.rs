//! `fleetwatch demo --script`: a fixed scenario, each step checked. The chat steps ask the
//! assistant in this process; the page steps drive the approval page over HTTP the way a
//! browser would and read its HTML with a real parser; the write checks ask the simulator.

use std::process::{Command, Stdio};
use std::time::Duration;

use fleetwatch::answer::Reply;
use fleetwatch::ask;
use fleetwatch::store::{AnchorCheck, ChainCheck, Status};
use serde_json::Value;

use crate::inprocess::Running;
use crate::leftovers::Leftovers;
use crate::page_html::{Page, field, form_body};

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
    const STEPS: [&str; 9] = [
        "a question",
        "the same in Spanish",
        "a proposal",
        "signing in to the approval page",
        "approving the proposal",
        "approving it a second time",
        "a disruptive change, confirmed",
        "a refusal from the executor",
        "both audit chains",
    ];
    let total = STEPS.len();
    for (n, title) in STEPS.iter().enumerate() {
        println!("[{}/{total}] {title}", n + 1);
        let result = match n {
            0 => script.question().await,
            1 => script.spanish().await,
            2 => script.proposal().await,
            3 => script.sign_in().await,
            4 => script.approve_calm().await,
            5 => script.approve_again().await,
            6 => script.disruptive().await,
            7 => script.refusal().await,
            _ => script.audit().await,
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
    http: reqwest::Client,
    origin: String,
    secret: String,
    /// This "tab"'s value, as the page's script keeps it in `sessionStorage`: sent at sign-in
    /// and with every form.
    tab: String,
    cookie: Option<String>,
    /// The proposal approved in step 5, with the form used, for the second attempt.
    approved: Option<(u64, Vec<(String, String)>)>,
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
        let http = fleetwatch_epiphan::tls::client_builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(150))
            .build()
            .map_err(|e| e.to_string())?;
        let mut tab = [0u8; 32];
        getrandom::fill(&mut tab).map_err(|e| format!("no randomness for the tab value: {e}"))?;
        Ok(Script {
            running,
            http,
            origin: format!("http://localhost:{}", running.page.addr.port()),
            secret,
            tab: fleetwatch_protocol::hex::encode(&tab),
            cookie: None,
            approved: None,
            writes: 0,
        })
    }

    async fn ask(&self, question: &str) -> Reply {
        println!("      operator> {question}");
        let reply = self.running.assistant.ask(question, false).await;
        say("", &ask::render(&reply));
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

    async fn page_get(&self) -> Result<(u16, Page), String> {
        let mut request = self.http.get(format!("{}/", self.origin));
        if let Some(cookie) = &self.cookie {
            request = request.header("cookie", cookie);
        }
        let response = request
            .header("accept-language", "en")
            .send()
            .await
            .map_err(|e| format!("GET /: {e}"))?;
        let status = response.status().as_u16();
        let body = response.text().await.map_err(|e| e.to_string())?;
        Ok((status, Page::parse(&body)))
    }

    async fn page_post(
        &self,
        path: &str,
        fields: &[(String, String)],
        origin: bool,
    ) -> Result<reqwest::Response, String> {
        // Every form the page's script sends carries the tab's value.
        let fields: Vec<(String, String)> = fields
            .iter()
            .cloned()
            .chain([("tab".to_owned(), self.tab.clone())])
            .collect();
        let mut request = self
            .http
            .post(format!("{}{path}", self.origin))
            .header("content-type", "application/x-www-form-urlencoded")
            .header("accept-language", "en")
            .body(form_body(&fields));
        if origin {
            request = request.header("origin", &self.origin);
        }
        if let Some(cookie) = &self.cookie {
            request = request.header("cookie", cookie);
        }
        request
            .send()
            .await
            .map_err(|e| format!("POST {path}: {e}"))
    }

    async fn post_text(
        &self,
        path: &str,
        fields: &[(String, String)],
    ) -> Result<(u16, Page), String> {
        let response = self.page_post(path, fields, true).await?;
        let status = response.status().as_u16();
        let body = response.text().await.map_err(|e| e.to_string())?;
        Ok((status, Page::parse(&body)))
    }

    /// The card now on the page, which must be for proposal `id`; returns its approve form.
    async fn card(&self, id: u64) -> Result<Vec<(String, String)>, String> {
        let (status, page) = self.page_get().await?;
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
        Ok(fields)
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
        let (status, page) = self.page_get().await?;
        if status != 200 || page.form_fields("/login").is_none() {
            return Err(format!(
                "GET / without a session answered {status} without a sign-in form"
            ));
        }
        println!("      page: GET / → 200, the sign-in form");
        let secret = vec![("secret".to_owned(), self.secret.clone())];
        let refused = self.page_post("/login", &secret, false).await?;
        if refused.status().as_u16() != 403 {
            return Err(format!(
                "POST /login without an Origin header answered {}",
                refused.status()
            ));
        }
        println!("      page: POST /login without an Origin header → 403");
        let response = self.page_post("/login", &secret, true).await?;
        let status = response.status().as_u16();
        let cookie = response
            .headers()
            .get("set-cookie")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .map(str::to_owned);
        match (status, cookie) {
            (303, Some(cookie)) => {
                println!("      page: POST /login with the secret → 303, session cookie set");
                self.cookie = Some(cookie);
                Ok(())
            }
            (status, _) => Err(format!("POST /login with the secret answered {status}")),
        }
    }

    async fn approve_calm(&mut self) -> Result<(), String> {
        let Some((id, _)) = self.approved.take() else {
            return Err("no proposal to approve".to_owned());
        };
        let fields = self.card(id).await?;
        let (status, page) = self.post_text("/approve", &fields).await?;
        let heading = page.text_by_id("heading").unwrap_or_default();
        println!("      page: POST /approve → {status}, \"{heading}\"");
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
        Ok(())
    }

    async fn approve_again(&mut self) -> Result<(), String> {
        let Some((id, fields)) = self.approved.take() else {
            return Err("no approved proposal to try again".to_owned());
        };
        let (status, page) = self.post_text("/approve", &fields).await?;
        println!(
            "      page: POST /approve with the same form again → {status}, \"{}\"",
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

    async fn disruptive(&mut self) -> Result<(), String> {
        let id = self
            .propose(&format!("reboot {REBOOT_ROOM}"), "batch_reboot")
            .await?;
        let fields = self.card(id).await?;
        let (status, page) = self.post_text("/approve", &fields).await?;
        let confirm = page.form_fields("/confirm");
        println!(
            "      page: POST /approve → {status}, \"{}\"",
            page.text_by_id("confirm-text").unwrap_or_default()
        );
        let Some(confirm) = confirm.filter(|_| status == 200) else {
            return Err(format!("no confirmation was asked:\n{}", page.main_text()));
        };
        if !self.new_writes().await?.is_empty() {
            return Err("the reboot ran before it was confirmed".to_owned());
        }
        println!("      simulator: nothing written yet");
        let (status, page) = self.post_text("/confirm", &confirm).await?;
        let heading = page.text_by_id("heading").unwrap_or_default();
        println!("      page: POST /confirm → {status}, \"{heading}\"");
        if status != 200 || heading != "Done" {
            return Err(format!(
                "the confirmed reboot did not run:\n{}",
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
        println!("      proposal #{id}: executed");
        Ok(())
    }

    async fn refusal(&mut self) -> Result<(), String> {
        let id = self
            .propose(&format!("reboot {BUSY_ROOM}"), "batch_reboot")
            .await?;
        let fields = self.card(id).await?;
        let (status, page) = self.post_text("/approve", &fields).await?;
        let Some(confirm) = page.form_fields("/confirm").filter(|_| status == 200) else {
            return Err(format!("no confirmation was asked:\n{}", page.main_text()));
        };
        println!("      page: POST /approve → {status}, confirmation asked");
        let (status, page) = self.post_text("/confirm", &confirm).await?;
        let heading = page.text_by_id("heading").unwrap_or_default();
        println!("      page: POST /confirm → {status}, \"{heading}\"");
        for line in page.paragraphs() {
            say("      ", &line);
        }
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

    /// Runs `fleetwatch-executor audit ARGS` on the demo's executor configuration with `input`
    /// on standard input; its standard output, or why it failed.
    fn executor_audit(&self, args: &[&str], input: &str) -> Result<String, String> {
        use std::io::Write as _;
        let mut child = Command::new(&self.running.executor_program)
            .arg("audit")
            .args(args)
            .env_clear()
            .env("FLEETWATCH_EXECUTOR_CONFIG", &self.running.executor_config)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("fleetwatch-executor audit: {e}"))?;
        if let Some(mut stdin) = child.stdin.take() {
            stdin
                .write_all(input.as_bytes())
                .map_err(|e| format!("fleetwatch-executor audit: {e}"))?;
        }
        let output = child
            .wait_with_output()
            .map_err(|e| format!("fleetwatch-executor audit: {e}"))?;
        if !output.status.success() {
            return Err(format!(
                "fleetwatch-executor audit {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        }
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
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
