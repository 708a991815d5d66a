//! A stand-in for a model's API: Anthropic's Messages API (`POST /v1/messages`) or the Chat
//! Completions API (`POST /v1/chat/completions`, [`Api::OpenAi`]). It answers either with the
//! next body of a script ([`start`]) or from fixed rules over the request itself
//! ([`start_offline`], the offline demo's model), records request bodies, and lists its model
//! at `GET /v1/models`. Scripts are written as Messages API answers and sent in the API the
//! stand-in speaks (see [`crate::chat_completions`]); a script body written for Chat
//! Completions (one with `choices`) is sent as it is.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::SimError;

/// Where replies come from.
enum Replies {
    /// Scripted bodies, answered in order.
    Script(Mutex<VecDeque<Value>>),
    /// The rule-based stand-in (see the `offline` module), with a fixed clock or the real one.
    Offline(Option<jiff::Timestamp>),
}

/// How many request bodies the offline stand-in keeps: it may serve a demo for hours, and a
/// recording that grows with every question would slowly fill memory.
const OFFLINE_KEPT_REQUESTS: usize = 64;

/// The API a stand-in speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Api {
    /// Anthropic's Messages API.
    #[default]
    Anthropic,
    /// The Chat Completions API.
    OpenAi,
}

impl Api {
    /// From `--api`'s value.
    pub fn parse(text: &str) -> Option<Api> {
        match text.trim().to_ascii_lowercase().as_str() {
            "anthropic" => Some(Api::Anthropic),
            "openai" => Some(Api::OpenAi),
            _ => None,
        }
    }

    /// The value of `FLEETWATCH_MODEL_API` for a client of this stand-in.
    pub fn label(self) -> &'static str {
        match self {
            Api::Anthropic => "anthropic",
            Api::OpenAi => "openai",
        }
    }
}

/// Each listed test function (`async fn name(api: Api)`) as two tests, once against each API's
/// stand-in: `on::name::anthropic` and `on::name::openai`, so one set of model tests covers
/// both APIs. Used at the top level of a test file.
#[macro_export]
macro_rules! both_apis {
    ($($name:ident),* $(,)?) => {
        mod on {
            $(
                pub mod $name {
                    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                    async fn anthropic() {
                        super::super::$name($crate::model::Api::Anthropic).await;
                    }

                    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                    async fn openai() {
                        super::super::$name($crate::model::Api::OpenAi).await;
                    }
                }
            )*
        }
    };
}

/// The model the scripted stand-in lists at `GET /v1/models`.
pub const SCRIPTED_MODEL: &str = "fleetwatch-scripted";

struct Script {
    api: Api,
    replies: Replies,
    requests: Mutex<VecDeque<Value>>,
}

/// A running model stand-in; stops when dropped or on [`ModelHandle::shutdown`].
pub struct ModelHandle {
    addr: SocketAddr,
    script: Arc<Script>,
    stop: CancellationToken,
    task: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for ModelHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelHandle")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl Drop for ModelHandle {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl ModelHandle {
    /// Base URL, `http://127.0.0.1:PORT` (the API path `/v1/messages` is appended by clients).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request body received, in order (a body that was not JSON is kept as a string).
    /// The offline stand-in keeps only the most recent ones.
    pub fn requests(&self) -> Vec<Value> {
        self.script
            .requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .cloned()
            .collect()
    }

    /// The API this stand-in speaks.
    pub fn api(&self) -> Api {
        self.script.api
    }

    /// [`ModelHandle::requests`] read as Messages API requests (Chat Completions ones
    /// translated), so one test can look into what either API was sent.
    pub fn requests_as_messages(&self) -> Vec<Value> {
        let requests = self.requests();
        match self.script.api {
            Api::Anthropic => requests,
            Api::OpenAi => requests
                .iter()
                .map(crate::chat_completions::as_messages_request)
                .collect(),
        }
    }

    /// Adds `replies` to the end of a scripted stand-in's script (for a test that learns what
    /// to answer only after the model had to be started). Returns false for the offline
    /// stand-in, which has no script.
    pub fn push_replies(&self, replies: Vec<Value>) -> bool {
        match &self.script.replies {
            Replies::Script(queue) => {
                queue
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .extend(replies);
                true
            }
            Replies::Offline(_) => false,
        }
    }

    /// Stops the server.
    pub async fn shutdown(mut self) {
        self.stop.cancel();
        if let Some(task) = self.task.take() {
            let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
        }
    }
}

/// Starts the stand-in on `127.0.0.1` (a free port).
pub async fn start(script: Vec<Value>) -> Result<ModelHandle, SimError> {
    start_on_port(script, 0).await
}

/// Like [`start`], on a chosen port (`0` picks a free one).
pub async fn start_on_port(script: Vec<Value>, port: u16) -> Result<ModelHandle, SimError> {
    start_api(Api::Anthropic, script, port).await
}

/// Like [`start_on_port`], speaking `api`.
pub async fn start_api(api: Api, script: Vec<Value>, port: u16) -> Result<ModelHandle, SimError> {
    serve(api, Replies::Script(Mutex::new(script.into())), port).await
}

/// Starts the rule-based offline stand-in on `127.0.0.1` (a free port).
///
/// It answers every request from the request body alone: the operator's last question, the
/// tools offered and the tool results so far. It understands a fixed set of questions and
/// requests in English and Spanish, asks for reads with `tool_use`, proposes changes through
/// `propose_change` when that tool is offered, and opens every text answer with
/// [`OFFLINE_NOTE_EN`] or [`OFFLINE_NOTE_ES`], because it is not a model.
pub async fn start_offline() -> Result<ModelHandle, SimError> {
    start_offline_on_port(0).await
}

/// Like [`start_offline`], on a chosen port (`0` picks a free one).
pub async fn start_offline_on_port(port: u16) -> Result<ModelHandle, SimError> {
    serve(Api::Anthropic, Replies::Offline(None), port).await
}

/// Like [`start_offline_on_port`] with a fixed clock, for a simulator started with a fixed
/// `now`: "starts in 13 min" and the 24-hour schedule window are measured from it.
pub async fn start_offline_at(
    now: Option<jiff::Timestamp>,
    port: u16,
) -> Result<ModelHandle, SimError> {
    start_offline_api(Api::Anthropic, now, port).await
}

/// Like [`start_offline_at`], speaking `api`.
pub async fn start_offline_api(
    api: Api,
    now: Option<jiff::Timestamp>,
    port: u16,
) -> Result<ModelHandle, SimError> {
    serve(api, Replies::Offline(now), port).await
}

/// The line every English text answer of the offline stand-in opens with.
pub const OFFLINE_NOTE_EN: &str = crate::offline::NOTE_EN;
/// The line every Spanish text answer of the offline stand-in opens with.
pub const OFFLINE_NOTE_ES: &str = crate::offline::NOTE_ES;

async fn serve(api: Api, replies: Replies, port: u16) -> Result<ModelHandle, SimError> {
    let script = Arc::new(Script {
        api,
        replies,
        requests: Mutex::new(VecDeque::new()),
    });
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let addr = listener.local_addr()?;
    // Only the stand-in's own API is served: a client that speaks the other one finds nothing.
    let app = match api {
        Api::Anthropic => Router::new().route("/v1/messages", post(messages)),
        Api::OpenAi => Router::new().route("/v1/chat/completions", post(messages)),
    }
    .route("/v1/models", get(models))
    .with_state(script.clone());
    let stop = CancellationToken::new();
    let signal = stop.clone();
    let task = tokio::spawn(async move {
        let served = axum::serve(listener, app)
            .with_graceful_shutdown(async move { signal.cancelled().await })
            .await;
        if let Err(e) = served {
            tracing::warn!("model stand-in stopped: {e}");
        }
    });
    Ok(ModelHandle {
        addr,
        script,
        stop,
        task: Some(task),
    })
}

/// `GET /v1/models`: the one model this stand-in answers as.
async fn models(State(script): State<Arc<Script>>) -> Response {
    let id = match script.replies {
        Replies::Script(_) => SCRIPTED_MODEL,
        Replies::Offline(_) => OFFLINE_MODEL,
    };
    axum::Json(json!({"object": "list", "data": [{"id": id, "object": "model"}]})).into_response()
}

/// A Messages API body sent in the stand-in's API.
fn answer(api: Api, status: StatusCode, body: &Value) -> Response {
    let body = match api {
        Api::Anthropic => body.clone(),
        Api::OpenAi => crate::chat_completions::as_chat_completion(body),
    };
    (status, axum::Json(body)).into_response()
}

fn api_error(api: Api, status: StatusCode, kind: &str, message: &str) -> Response {
    answer(
        api,
        status,
        &json!({"type": "error", "error": {"type": kind, "message": message}}),
    )
}

async fn messages(State(script): State<Arc<Script>>, body: Bytes) -> Response {
    let api = script.api;
    let parsed = serde_json::from_slice::<Value>(&body);
    let recorded = match &parsed {
        Ok(value) => value.clone(),
        Err(_) => Value::String(String::from_utf8_lossy(&body).into_owned()),
    };
    {
        let mut requests = script.requests.lock().unwrap_or_else(|p| p.into_inner());
        requests.push_back(recorded);
        if matches!(script.replies, Replies::Offline(_)) {
            while requests.len() > OFFLINE_KEPT_REQUESTS {
                requests.pop_front();
            }
        }
    }
    let body = match parsed {
        Ok(body) => body,
        Err(_) => {
            return api_error(
                api,
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                "request body is not JSON",
            );
        }
    };
    let queue = match &script.replies {
        Replies::Script(queue) => queue,
        Replies::Offline(now) => {
            let body = match api {
                Api::Anthropic => body,
                Api::OpenAi => crate::chat_completions::as_messages_request(&body),
            };
            return offline_reply(api, &body, now.unwrap_or_else(jiff::Timestamp::now));
        }
    };
    let next = queue.lock().unwrap_or_else(|p| p.into_inner()).pop_front();
    match next {
        Some(reply) => answer(api, StatusCode::OK, &reply),
        None => api_error(
            api,
            StatusCode::INTERNAL_SERVER_ERROR,
            "api_error",
            "the scripted conversation has no more replies",
        ),
    }
}

fn offline_reply(api: Api, body: &Value, now: jiff::Timestamp) -> Response {
    let mut next_id = || {
        format!(
            "toolu_offline_{:08}",
            NEXT_ID.fetch_add(1, Ordering::Relaxed)
        )
    };
    match crate::offline::respond(body, now, &mut next_id) {
        Ok((content, stop_reason)) => {
            let words = content
                .as_array()
                .into_iter()
                .flatten()
                .map(|b| {
                    b.get("text")
                        .and_then(Value::as_str)
                        .map_or(20, |t| t.split_whitespace().count())
                })
                .sum::<usize>();
            let mut reply = reply(
                content,
                stop_reason,
                u64::try_from(words).unwrap_or(u64::MAX).max(1),
            );
            reply["model"] = json!(OFFLINE_MODEL);
            answer(api, StatusCode::OK, &reply)
        }
        Err(problem) => api_error(
            api,
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            problem,
        ),
    }
}

/// The `model` the offline stand-in reports: plainly not a real model's name.
pub const OFFLINE_MODEL: &str = "fleetwatch-offline-rules";

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

fn message_id() -> String {
    format!("msg_sim_{:08}", NEXT_ID.fetch_add(1, Ordering::Relaxed))
}

fn reply(content: Value, stop_reason: &str, output_tokens: u64) -> Value {
    json!({
        "id": message_id(),
        "type": "message",
        "role": "assistant",
        "model": "claude-sim",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": null,
        "usage": {"input_tokens": 100, "output_tokens": output_tokens},
    })
}

/// A full Messages API response holding one text block, `stop_reason: end_turn`.
pub fn text_reply(text: &str) -> Value {
    let tokens = u64::try_from(text.split_whitespace().count())
        .unwrap_or(u64::MAX)
        .max(1);
    reply(json!([{"type": "text", "text": text}]), "end_turn", tokens)
}

/// A full Messages API response asking for one tool call, `stop_reason: tool_use`.
pub fn tool_use_reply(id: &str, name: &str, input: Value) -> Value {
    reply(
        json!([{"type": "tool_use", "id": id, "name": name, "input": input}]),
        "tool_use",
        20,
    )
}
