//! The team's channel hears that a change waits (`FLEETWATCH_NOTIFY_URL`): a message when a
//! change starts waiting, when it waits for a second person, once at half its lifetime, and
//! when it is decided or expires. Plain JSON, a Slack-compatible text message (Mattermost,
//! Rocket.Chat and Teams' incoming webhooks read it too) or an ntfy message.
//!
//! Only words the page would show leave the machine: the proposal's number, the change in
//! words, the rooms as the executor named them (redacted on arrival), who asked, how many more
//! persons it needs, the expiry and the page's address — never a token, a key or the claims.
//! A watcher reads the store every two seconds and queues messages; a sender posts them, a few
//! times with backoff, each attempt and failure in the audit. Neither blocks the model loop or
//! the page: the queue is bounded and a message that does not fit is dropped, audited.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fleetwatch_protocol::policy::Policy;
use fleetwatch_words::Lang;
use serde_json::json;

use crate::pending::{self, Waiting};
use crate::store::{self, Store};

/// How often the store is read.
pub const EVERY: Duration = Duration::from_secs(2);
/// Attempts per message, and the wait before each retry.
pub const BACKOFF: [Duration; 2] = [Duration::from_secs(1), Duration::from_secs(4)];
/// Messages waiting to be sent at most.
const QUEUE: usize = 64;

/// How messages are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// One JSON object with every field and the text.
    Json,
    /// `{"text": …}`, as Slack-compatible incoming webhooks read it.
    Slack,
    /// The text as the body, the title in a header, as ntfy reads it.
    Ntfy,
}

/// Where and how to notify.
#[derive(Debug, Clone)]
pub struct NotifyConfig {
    /// The address (https, or http on loopback).
    pub url: reqwest::Url,
    /// The format.
    pub format: Format,
    /// The approval page's address, said in each message.
    pub page: String,
    /// The language of the words.
    pub lang: Lang,
}

impl NotifyConfig {
    /// From `FLEETWATCH_NOTIFY_URL` and `FLEETWATCH_NOTIFY_FORMAT` (`json`, `slack` or `ntfy`;
    /// default `json`); `None` when no address is set. An address that is not https (or http
    /// to this machine), or an unknown format, is an error naming the variable.
    pub fn from_env(page: &str, lang: Lang) -> Result<Option<NotifyConfig>, String> {
        NotifyConfig::from_values(
            std::env::var("FLEETWATCH_NOTIFY_URL").ok().as_deref(),
            std::env::var("FLEETWATCH_NOTIFY_FORMAT").ok().as_deref(),
            page,
            lang,
        )
    }

    /// [`NotifyConfig::from_env`] on values given.
    pub fn from_values(
        url: Option<&str>,
        format: Option<&str>,
        page: &str,
        lang: Lang,
    ) -> Result<Option<NotifyConfig>, String> {
        let Some(url) = url.map(str::trim).filter(|u| !u.is_empty()) else {
            return Ok(None);
        };
        let format = match format.map(str::trim) {
            None | Some("" | "json") => Format::Json,
            Some("slack") => Format::Slack,
            Some("ntfy") => Format::Ntfy,
            Some(other) => {
                return Err(format!(
                    "FLEETWATCH_NOTIFY_FORMAT={other:?} is not json, slack or ntfy"
                ));
            }
        };
        let url = fleetwatch_epiphan::url_policy::check_url(url, true)
            .map_err(|e| format!("FLEETWATCH_NOTIFY_URL: {e}"))?;
        Ok(Some(NotifyConfig {
            url,
            format,
            page: page.to_owned(),
            lang,
        }))
    }

    /// What `doctor` says: where messages go and what they hold (it sends nothing).
    pub fn describe(&self) -> String {
        let format = match self.format {
            Format::Json => "JSON",
            Format::Slack => "Slack-compatible text",
            Format::Ntfy => "ntfy",
        };
        format!(
            "{format} messages to {} when a change waits, waits for a second person, is half-way \
             to expiring, is decided or expires: the proposal number, the change in words, the \
             rooms, who asked, persons still needed, the expiry and {}; nothing else leaves",
            self.url, self.page
        )
    }
}

/// One message to send.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// `waiting`, `second_person`, `half_life`, or the final status (`approved`, `denied`,
    /// `executed`, `failed`, `refused`, `unknown`, `expired`).
    pub event: String,
    /// The proposal.
    pub proposal: u64,
    /// The whole message in words.
    pub text: String,
    /// The fields, for the JSON format.
    pub fields: serde_json::Value,
}

/// What the watcher remembers of each waiting proposal.
#[derive(Debug, Clone, Default)]
struct Seen {
    approvals: usize,
    reminded: bool,
}

/// Turns what the store says into messages, one look at a time.
#[derive(Debug, Default)]
pub struct Watcher {
    seen: HashMap<u64, Seen>,
}

impl Watcher {
    /// The messages since the last look: `waiting` is what waits now (from
    /// [`pending::waiting`]); `store` answers where those no longer waiting went.
    pub fn look(
        &mut self,
        cfg: &NotifyConfig,
        waiting: &[Waiting],
        store: &Store,
        now: i64,
    ) -> Vec<Message> {
        let lang = cfg.lang;
        let mut out = Vec::new();
        let now_ts = jiff::Timestamp::from_second(now).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
        for w in waiting {
            let expires = jiff::Timestamp::from_second(w.expires_at)
                .map(|t| fleetwatch_words::time::clock(t, now_ts))
                .unwrap_or_default();
            let fields = json!({
                "proposal": w.proposal,
                "change": pending::change_words(&w.tool, &w.arguments, lang),
                "rooms": w.rooms,
                "asked_by": w.asked_by,
                "persons_needed": w.persons_needed,
                "approved_by": w.approved_by,
                "expires_at": jiff::Timestamp::from_second(w.expires_at).map(|t| t.to_string()).unwrap_or_default(),
                "page": cfg.page,
            });
            let line = pending::watch_lines(&[], std::slice::from_ref(w), &[], lang, now)
                .into_iter()
                .next()
                .unwrap_or_default();
            let mut push = |event: &str, text: String| {
                let mut fields = fields.clone();
                if let Some(map) = fields.as_object_mut() {
                    map.insert("event".into(), json!(event));
                    map.insert("text".into(), json!(text));
                }
                out.push(Message {
                    event: event.to_owned(),
                    proposal: w.proposal,
                    text,
                    fields,
                });
            };
            let before = self.seen.get(&w.proposal).cloned();
            let mut after = before.clone().unwrap_or_default();
            match &before {
                None => push("waiting", format!("Fleetwatch {line}. {}", cfg.page)),
                Some(b) if w.approved_by.len() > b.approvals && w.persons_needed > 0 => {
                    let earlier = [Waiting {
                        approved_by: Vec::new(),
                        ..w.clone()
                    }];
                    let text =
                        pending::watch_lines(&earlier, std::slice::from_ref(w), &[], lang, now)
                            .into_iter()
                            .next()
                            .unwrap_or_default();
                    push("second_person", format!("Fleetwatch {text}. {}", cfg.page));
                }
                Some(_) => {}
            }
            after.approvals = w.approved_by.len();
            let half = w.created_at + (w.expires_at - w.created_at) / 2;
            if !after.reminded && now >= half {
                after.reminded = true;
                if before.is_some() {
                    push(
                        "half_life",
                        match lang {
                            Lang::En => format!(
                                "Fleetwatch #{} still waits for approval; it expires {expires}. {}",
                                w.proposal, cfg.page
                            ),
                            Lang::Es => format!(
                                "Fleetwatch: #{} sigue esperando aprobación; caduca {expires}. {}",
                                w.proposal, cfg.page
                            ),
                        },
                    );
                }
            }
            self.seen.insert(w.proposal, after);
        }
        // Those no longer waiting: decided, or expired.
        let gone: Vec<u64> = self
            .seen
            .keys()
            .copied()
            .filter(|id| !waiting.iter().any(|w| w.proposal == *id))
            .collect();
        for id in gone {
            self.seen.remove(&id);
            let Ok(Some(p)) = store.proposal(id) else {
                continue;
            };
            let standing = pending::Standing::of(&p);
            if let Some(line) = pending::outcome_line(&standing, Some("pending"), lang) {
                let text = format!("Fleetwatch {line}");
                out.push(Message {
                    event: standing.status.clone(),
                    proposal: id,
                    fields: json!({
                        "event": standing.status,
                        "proposal": id,
                        "change": pending::change_words(&p.tool, &p.arguments, lang),
                        "rooms": p.names,
                        "asked_by": p.asked_by,
                        "page": cfg.page,
                        "text": text,
                    }),
                    text,
                });
            }
        }
        out
    }
}

/// The request body and headers of a message in `format`.
pub fn body(format: Format, message: &Message) -> (String, &'static str, Option<String>) {
    match format {
        Format::Json => (message.fields.to_string(), "application/json", None),
        Format::Slack => (
            json!({"text": message.text}).to_string(),
            "application/json",
            None,
        ),
        Format::Ntfy => (
            message.text.clone(),
            "text/plain; charset=utf-8",
            Some(format!("Fleetwatch #{}", message.proposal)),
        ),
    }
}

/// Posts one message, retrying after the [`BACKOFF`] waits; every attempt's result goes to the
/// audit (`notify_sent`, `notify_failed`). True when one attempt was answered 2xx.
pub async fn send(
    client: &reqwest::Client,
    cfg: &NotifyConfig,
    message: &Message,
    store: &Mutex<Store>,
) -> bool {
    let (text, content_type, title) = body(cfg.format, message);
    for attempt in 0..=BACKOFF.len() {
        let mut request = client
            .post(cfg.url.clone())
            .header(reqwest::header::CONTENT_TYPE, content_type)
            .body(text.clone());
        if let Some(title) = &title {
            request = request.header("Title", title.as_str());
        }
        let result = request.send().await;
        let (ok, said) = match &result {
            Ok(r) if r.status().is_success() => (true, r.status().as_u16().to_string()),
            Ok(r) => (false, r.status().as_u16().to_string()),
            Err(e) if e.is_timeout() => (false, "timeout".to_owned()),
            Err(_) => (false, "unreachable".to_owned()),
        };
        if let Ok(mut store) = store.lock() {
            let _ = store.audit(
                if ok { "notify_sent" } else { "notify_failed" },
                Some(message.proposal),
                &json!({"event": message.event, "attempt": attempt + 1, "answer": said}),
            );
        }
        if ok {
            return true;
        }
        if let Some(wait) = BACKOFF.get(attempt) {
            tokio::time::sleep(*wait).await;
        }
    }
    false
}

/// Runs the watcher and the sender until the process ends.
pub fn spawn(
    cfg: NotifyConfig,
    store: Arc<Mutex<Store>>,
    policy: Arc<Policy>,
    executor: crate::executor_client::ExecutorClient,
) {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Message>(QUEUE);
    let sender_cfg = cfg.clone();
    let sender_store = Arc::clone(&store);
    tokio::spawn(async move {
        let client = match reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(10))
            .build()
        {
            Ok(client) => client,
            Err(e) => {
                tracing::warn!("notify: no HTTP client: {e}");
                return;
            }
        };
        while let Some(message) = rx.recv().await {
            send(&client, &sender_cfg, &message, &sender_store).await;
        }
    });
    tokio::spawn(async move {
        let mut watcher = Watcher::default();
        let mut status = None;
        let mut status_at = std::time::Instant::now() - Duration::from_secs(3600);
        loop {
            tokio::time::sleep(EVERY).await;
            if status_at.elapsed() > Duration::from_secs(30) {
                status = executor.status().await.ok();
                status_at = std::time::Instant::now();
            }
            let messages = {
                let Ok(mut guard) = store.lock() else {
                    continue;
                };
                let now = store::now_secs();
                let Ok(waiting) = pending::waiting(&mut guard, &policy, status.as_ref(), now)
                else {
                    continue;
                };
                watcher.look(&cfg, &waiting, &guard, now)
            };
            for message in messages {
                if tx.try_send(message.clone()).is_err()
                    && let Ok(mut guard) = store.lock()
                {
                    let _ = guard.audit(
                        "notify_dropped",
                        Some(message.proposal),
                        &json!({"event": message.event, "why": "queue full"}),
                    );
                }
            }
        }
    });
}
