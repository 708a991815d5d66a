//! The model loop: one operator question, a bounded conversation with a model, and tool calls
//! answered by guarded code. The loop knows nothing of the provider: an adapter turns the
//! conversation into a request and the answer into text and tool calls ([`anthropic`] for
//! Anthropic's Messages API, [`openai`] for the Chat Completions API that OpenAI and the servers
//! a team may run itself speak: Ollama, llama.cpp, vLLM, LM Studio).
//!
//! Hazards this module is shaped around:
//! * The model is not trusted. Every tool call is checked again here against what is visible
//!   *now* (grants can close between turns), and a name the model invents gets a fixed error
//!   that does not repeat it.
//! * Fleet data is hostile. Read results reach the model only through [`data_block`].
//! * A looping or stalling model must end: a cap on calls, on consecutive invalid calls of one
//!   tool, on tokens and on wall-clock time, each ending the turn with an apology.
//! * The API key must not leak: it lives in [`ApiKey`] (no `Debug`/`Display`), travels in one
//!   header marked sensitive, redirects are not followed, and failure reasons are fixed texts
//!   chosen here, never an HTTP library's message or a response body.
//! * Prompts and answers are never logged; logs carry counts only.

use std::collections::HashMap;
use std::future::Future;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::time::Instant;

use crate::datablock::data_block;
use crate::grounding::{Evidence, SetAside};
use crate::lang::{self, Lang};
use crate::toolspec::{PROPOSE_TOOL, REASON_MAX_CHARS};

pub mod anthropic;
pub mod openai;

/// Environment variable choosing the API the model speaks: `anthropic` (the default) or
/// `openai` (the Chat Completions API).
pub const ENV_API: &str = "FLEETWATCH_MODEL_API";
/// Environment variable holding the API key (either API).
pub const ENV_KEY: &str = "FLEETWATCH_MODEL_API_KEY";
/// Environment variable naming a file that holds the API key (either API).
pub const ENV_KEY_FILE: &str = "FLEETWATCH_MODEL_API_KEY_FILE";
/// Environment variable overriding the API base URL (either API).
pub const ENV_URL: &str = "FLEETWATCH_MODEL_BASE_URL";
/// The Anthropic API key, by its older name (still read for `anthropic`, never for `openai`:
/// an Anthropic key must not travel to another provider).
pub const ENV_API_KEY: &str = "FLEETWATCH_ANTHROPIC_API_KEY";
/// A file holding the Anthropic API key, by its older name (the systemd unit points it at its
/// credential). Keys in variables win over keys in files; an empty file means keyword answers
/// only.
pub const ENV_API_KEY_FILE: &str = "FLEETWATCH_ANTHROPIC_API_KEY_FILE";
/// Longest key file read; a key is about a hundred bytes.
const MAX_KEY_FILE_BYTES: u64 = 4096;
/// The Anthropic base URL, by its older name (tests and the demo).
pub const ENV_BASE_URL: &str = "FLEETWATCH_ANTHROPIC_BASE_URL";
/// Environment variable choosing the model.
pub const ENV_MODEL: &str = "FLEETWATCH_AI_MODEL";
/// Environment variable: the longest one model call may take, in seconds.
pub const ENV_CALL_TIMEOUT: &str = "FLEETWATCH_MODEL_CALL_TIMEOUT_SECS";
/// Environment variable: the longest one question may take (model calls and reads), in seconds.
pub const ENV_QUESTION_TIMEOUT: &str = "FLEETWATCH_MODEL_QUESTION_TIMEOUT_SECS";
/// Default for [`ENV_CALL_TIMEOUT`].
pub const DEFAULT_CALL_TIMEOUT_SECS: u64 = 90;
/// Default for [`ENV_QUESTION_TIMEOUT`].
pub const DEFAULT_QUESTION_TIMEOUT_SECS: u64 = 180;
/// The most either limit may be: an hour. A model slower than that cannot serve an operator,
/// and a question must end some time.
const MAX_TIMEOUT_SECS: u64 = 3600;

/// Default Anthropic API base URL.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// Default Chat Completions base URL (OpenAI's own).
pub const DEFAULT_OPENAI_BASE_URL: &str = "https://api.openai.com";
/// Default Anthropic model.
pub const DEFAULT_MODEL: &str = "claude-sonnet-4-5";
/// API version header value.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The text every unavailable tool call gets back. It never names the tool: an echoed name is
/// one more place for injected text to reach the model as if it were ours.
pub const TOOL_NOT_AVAILABLE: &str = "That tool is not available.";

/// At most this many tool calls of one model reply are run; the rest are answered
/// [`TOO_MANY_CALLS`] and never reach a read or the store. A reply with thousands of calls
/// costs a short answer each, not thousands of reads. Eight covers the widest honest reply
/// (a few reads side by side and a proposal).
pub const MAX_CALLS_PER_REPLY: usize = 8;

/// What each call beyond [`MAX_CALLS_PER_REPLY`] in one reply gets back.
pub const TOO_MANY_CALLS: &str = "Too many calls in one reply: at most 8 are run, and this one was not. Ask again for what is still needed.";

/// At most this many changes are proposed for one question; a further `propose_change` gets
/// [`TOO_MANY_PROPOSALS`] and reaches no store. An operator asks about a few rooms at a time;
/// a change to many rooms is one proposal with many targets.
pub const MAX_PROPOSALS_PER_QUESTION: usize = 3;

/// What a `propose_change` beyond [`MAX_PROPOSALS_PER_QUESTION`] gets back.
pub const TOO_MANY_PROPOSALS: &str = "Too many proposals for one question: at most 3 are made, and this one was not. Tell the operator what else you would change.";

/// The API a model speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelApi {
    /// Anthropic's Messages API (`POST /v1/messages`).
    Anthropic,
    /// The Chat Completions API (`POST /v1/chat/completions`): OpenAI, Ollama, llama.cpp's
    /// server, vLLM, LM Studio.
    OpenAi,
}

impl ModelApi {
    /// From `FLEETWATCH_MODEL_API`'s value.
    pub fn parse(text: &str) -> Option<ModelApi> {
        match text.trim().to_ascii_lowercase().as_str() {
            "anthropic" => Some(ModelApi::Anthropic),
            "openai" => Some(ModelApi::OpenAi),
            _ => None,
        }
    }

    /// The value `FLEETWATCH_MODEL_API` takes for it.
    pub fn label(self) -> &'static str {
        match self {
            ModelApi::Anthropic => "anthropic",
            ModelApi::OpenAi => "openai",
        }
    }
}

/// Reads a key file, refusing one larger than a key could be (a wrong path pointed at a big
/// file must not be sent as a header).
pub(crate) fn read_key_file(path: &std::path::Path) -> std::io::Result<String> {
    use std::io::Read as _;
    let mut text = String::new();
    std::fs::File::open(path)?
        .take(MAX_KEY_FILE_BYTES + 1)
        .read_to_string(&mut text)?;
    if text.len() as u64 > MAX_KEY_FILE_BYTES {
        return Err(std::io::Error::other(
            "larger than a key; is this the right file?",
        ));
    }
    Ok(text)
}

/// The model API key: the protocol's one secret wrapper, which has neither `Debug` nor
/// `Display`, so the key cannot slip into a log line, an error or an audit row by formatting.
pub type ApiKey = fleetwatch_protocol::secret::Secret;

/// A header value carrying the key, marked sensitive (so HTTP tooling never prints it).
fn header_value(text: &str) -> Option<reqwest::header::HeaderValue> {
    let mut value = reqwest::header::HeaderValue::from_str(text).ok()?;
    value.set_sensitive(true);
    Some(value)
}

/// How to reach the model and how far one question may go.
pub struct ModelConfig {
    /// The API the model speaks.
    pub api: ModelApi,
    /// API base URL (`FLEETWATCH_MODEL_BASE_URL`), without the `/v1/…` path.
    pub base_url: String,
    /// The API key; `None` for a Chat Completions server on the team's own machine that asks
    /// for none.
    pub api_key: Option<ApiKey>,
    /// Model name (`FLEETWATCH_AI_MODEL`).
    pub model: String,
    /// Most model calls per question.
    pub max_calls: u32,
    /// `max_tokens` sent with each call.
    pub max_tokens_per_call: u32,
    /// Input plus output tokens one question may use before the turn ends.
    pub token_budget: u64,
    /// Longest one question may take, model calls and reads together.
    pub wall_clock: Duration,
    /// Longest one model call may take.
    pub request_timeout: Duration,
}

impl std::fmt::Debug for ModelConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key is left out on purpose.
        f.debug_struct("ModelConfig")
            .field("api", &self.api)
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("max_calls", &self.max_calls)
            .field("max_tokens_per_call", &self.max_tokens_per_call)
            .field("token_budget", &self.token_budget)
            .field("wall_clock", &self.wall_clock)
            .field("request_timeout", &self.request_timeout)
            .finish_non_exhaustive()
    }
}

impl ModelConfig {
    /// An Anthropic configuration with the default bounds.
    pub fn new(base_url: impl Into<String>, api_key: ApiKey, model: impl Into<String>) -> Self {
        ModelConfig::with_api(ModelApi::Anthropic, base_url, Some(api_key), model)
    }

    /// A configuration for `api` with the default bounds.
    pub fn with_api(
        api: ModelApi,
        base_url: impl Into<String>,
        api_key: Option<ApiKey>,
        model: impl Into<String>,
    ) -> Self {
        ModelConfig {
            api,
            base_url: base_url.into(),
            api_key,
            model: model.into(),
            max_calls: 8,
            max_tokens_per_call: 2_048,
            token_budget: 200_000,
            wall_clock: Duration::from_secs(DEFAULT_QUESTION_TIMEOUT_SECS),
            request_timeout: Duration::from_secs(DEFAULT_CALL_TIMEOUT_SECS),
        }
    }

    /// The time limits from the environment's lookup, defaults when unset; an error naming the
    /// variable when a value is not a whole number of seconds from 1 to 3600, or when a call
    /// may take longer than the whole question.
    fn with_limits(mut self, lookup: &impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let seconds = |name: &str, default: u64| -> Result<u64, String> {
            let Some(text) = lookup(name).map(|v| v.trim().to_owned()) else {
                return Ok(default);
            };
            if text.is_empty() {
                return Ok(default);
            }
            match text.parse::<u64>() {
                Ok(n) if (1..=MAX_TIMEOUT_SECS).contains(&n) => Ok(n),
                _ => Err(format!(
                    "{name}={}: give a whole number of seconds from 1 to {MAX_TIMEOUT_SECS}",
                    crate::page::card::show_text(&text, 40)
                )),
            }
        };
        let call = seconds(ENV_CALL_TIMEOUT, DEFAULT_CALL_TIMEOUT_SECS)?;
        let question = seconds(
            ENV_QUESTION_TIMEOUT,
            DEFAULT_QUESTION_TIMEOUT_SECS.max(call),
        )?;
        if call > question {
            return Err(format!(
                "{ENV_CALL_TIMEOUT}={call} is longer than {ENV_QUESTION_TIMEOUT}={question}: one \
                 call cannot take longer than the whole question"
            ));
        }
        self.request_timeout = Duration::from_secs(call);
        self.wall_clock = Duration::from_secs(question);
        Ok(self)
    }

    /// Reads the environment (and the key file it names); `Ok(None)` when no model is
    /// configured (keyword answers only), an error naming the variable or file otherwise.
    pub fn from_env() -> Result<Option<ModelConfig>, String> {
        Self::from_lookup(|name| std::env::var(name).ok(), read_key_file)
    }

    /// Like [`ModelConfig::from_env`] over any lookup and file reader, so it can be tested
    /// without touching the process environment.
    ///
    /// `anthropic` needs a key (`FLEETWATCH_MODEL_API_KEY`, or the older
    /// `FLEETWATCH_ANTHROPIC_API_KEY`, or a file named by either `…_FILE`). `openai` is on when
    /// a key or `FLEETWATCH_MODEL_BASE_URL` is given (a server on the team's own machine may
    /// ask for no key) and needs `FLEETWATCH_AI_MODEL`: there is no model every such server
    /// serves.
    pub fn from_lookup(
        lookup: impl Fn(&str) -> Option<String>,
        read_file: impl Fn(&std::path::Path) -> std::io::Result<String>,
    ) -> Result<Option<ModelConfig>, String> {
        let non_empty = |name: &str| {
            lookup(name)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let api = match non_empty(ENV_API) {
            None => ModelApi::Anthropic,
            Some(v) => ModelApi::parse(&v)
                .ok_or_else(|| format!("{ENV_API}={v}: give anthropic or openai"))?,
        };
        // The older Anthropic names are read for Anthropic only.
        let (key_vars, file_vars, url_vars): (&[&str], &[&str], &[&str]) = match api {
            ModelApi::Anthropic => (
                &[ENV_KEY, ENV_API_KEY],
                &[ENV_KEY_FILE, ENV_API_KEY_FILE],
                &[ENV_URL, ENV_BASE_URL],
            ),
            ModelApi::OpenAi => (&[ENV_KEY], &[ENV_KEY_FILE], &[ENV_URL]),
        };
        let key = match key_vars
            .iter()
            .find_map(|name| non_empty(name).map(|v| (*name, v)))
        {
            Some(found) => Some(found),
            None => match file_vars
                .iter()
                .find_map(|name| non_empty(name).map(|p| (*name, p)))
            {
                Some((name, path)) => Some((
                    name,
                    read_file(std::path::Path::new(&path))
                        .map_err(|e| format!("{name}={path}: cannot read it: {e}"))?,
                )),
                None => None,
            },
        };
        let key = key.filter(|(_, k)| !k.trim().is_empty());
        // A key a header cannot carry is a mistake to report, not a reason to fall back to
        // keyword answers without saying so. The message never quotes the key.
        let key = match key {
            Some((name, text)) => Some(ApiKey::new(&text).ok_or_else(|| {
                format!("{name}: the key holds spaces, control characters or non-ASCII text")
            })?),
            None => None,
        };
        let base = url_vars.iter().find_map(|name| non_empty(name));
        let model = non_empty(ENV_MODEL);
        let config: Option<ModelConfig> = match api {
            ModelApi::Anthropic => key.map(|key| {
                ModelConfig::new(
                    base.unwrap_or_else(|| DEFAULT_BASE_URL.to_owned()),
                    key,
                    model.unwrap_or_else(|| DEFAULT_MODEL.to_owned()),
                )
            }),
            ModelApi::OpenAi => {
                if key.is_none() && base.is_none() {
                    return Err(format!(
                        "{ENV_API}=openai: set {ENV_URL} to your server (for example \
                         http://127.0.0.1:11434 for Ollama), or {ENV_KEY} for OpenAI's own"
                    ));
                }
                let model = model.ok_or_else(|| {
                    format!(
                        "{ENV_API}=openai: set {ENV_MODEL} to the model your server serves \
                         (`fleetwatch doctor` lists them)"
                    )
                })?;
                Some(ModelConfig::with_api(
                    ModelApi::OpenAi,
                    base.unwrap_or_else(|| DEFAULT_OPENAI_BASE_URL.to_owned()),
                    key,
                    model,
                ))
            }
        };
        config.map(|c| c.with_limits(&lookup)).transpose()
    }

    /// Why the base URL cannot be used, if it cannot: the key would travel in the clear to
    /// anything but `https://` or a loopback address.
    ///
    /// The one URL policy both processes apply (fleetwatch-epiphan), with loopback `http://`
    /// always allowed: a model stand-in on loopback never takes the key off the machine.
    pub fn base_url_problem(&self) -> Option<&'static str> {
        match fleetwatch_epiphan::check_url(self.base_url.trim_end_matches('/'), true) {
            Ok(_) => None,
            Err(fleetwatch_epiphan::UrlRefusal::NotAUrl) => {
                Some("the model base URL is not a valid URL")
            }
            Err(fleetwatch_epiphan::UrlRefusal::UserInfo) => {
                Some("the model base URL must not carry a user name or password")
            }
            Err(fleetwatch_epiphan::UrlRefusal::Fragment) => {
                Some("the model base URL must not carry a fragment")
            }
            Err(fleetwatch_epiphan::UrlRefusal::Whitespace) => {
                Some("the model base URL must not contain spaces or control characters")
            }
            Err(_) => Some("the model base URL must use https:// (http:// only on loopback)"),
        }
    }

    /// The base URL with any trailing `/` and `/v1` taken off (LM Studio and others print
    /// their address with `/v1`), so the API paths are appended once.
    fn root(&self) -> &str {
        let base = self.base_url.trim_end_matches('/');
        base.strip_suffix("/v1").unwrap_or(base)
    }

    /// Where each turn's request goes.
    fn endpoint(&self) -> String {
        match self.api {
            ModelApi::Anthropic => format!("{}/v1/messages", self.root()),
            ModelApi::OpenAi => format!("{}/v1/chat/completions", self.root()),
        }
    }

    /// The headers that carry the key (and Anthropic's version), the key marked sensitive.
    fn auth_headers(&self) -> Result<reqwest::header::HeaderMap, CallError> {
        use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};
        let mut headers = HeaderMap::new();
        let unusable = CallError::Failed("the model API key is not usable", None);
        match (self.api, &self.api_key) {
            (ModelApi::Anthropic, Some(key)) => {
                headers.insert("x-api-key", header_value(key.expose()).ok_or(unusable)?);
                headers.insert(
                    "anthropic-version",
                    HeaderValue::from_static(ANTHROPIC_VERSION),
                );
            }
            (ModelApi::Anthropic, None) => return Err(unusable),
            (ModelApi::OpenAi, Some(key)) => {
                let bearer = format!("Bearer {}", key.expose());
                headers.insert(AUTHORIZATION, header_value(&bearer).ok_or(unusable)?);
            }
            (ModelApi::OpenAi, None) => {}
        }
        Ok(headers)
    }

    /// Whether the model server is on this machine (a loopback base URL): then nothing it is
    /// sent leaves the machine.
    pub fn is_local(&self) -> bool {
        reqwest::Url::parse(&self.base_url)
            .is_ok_and(|url| fleetwatch_epiphan::url_policy::is_loopback(&url))
    }

    /// Who receives the questions and the redacted fleet data, in words.
    pub fn recipient(&self) -> String {
        match (self.api, self.is_local()) {
            (_, true) => format!("the model server on this machine at {}", self.base_url),
            (ModelApi::Anthropic, false) => format!("Anthropic at {}", self.base_url),
            (ModelApi::OpenAi, false) => {
                format!("the Chat Completions server at {}", self.base_url)
            }
        }
    }
}

/// What the loop asks of the rest of the assistant.
pub trait ToolHandler: Send + Sync {
    /// Called for read tools already checked visible; returns the redacted JSON result or a
    /// short error text. The error text goes to the model, so it must be written by code (it is
    /// shortened and stripped of markup characters here, but not otherwise trusted).
    fn read(&self, tool: &str, args: Value) -> impl Future<Output = Result<Value, String>> + Send;

    /// Called for `propose_change` when it is visible.
    fn propose(
        &self,
        tool: &str,
        args: Value,
        reason: &str,
    ) -> impl Future<Output = ProposeResult> + Send;
}

/// What a proposal attempt came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProposeResult {
    /// Shown to the model: "Not proposed: …" or "Proposal #N is waiting for a person to approve
    /// it on the approval page. Nothing has changed."
    pub message: String,
    /// The stored proposal, if one was stored.
    pub proposal_id: Option<u64>,
    /// The call itself was invalid (unknown tool, bad arguments); counts toward the
    /// consecutive-invalid bound. A valid call refused by a limit is not invalid.
    pub invalid: bool,
}

/// Which bound ended a turn early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoopBound {
    /// `max_calls` model calls were made without a final answer.
    CallLimit,
    /// Two consecutive invalid calls of one tool.
    InvalidCalls,
    /// The token budget was spent.
    TokenBudget,
    /// The wall-clock limit passed.
    WallClock,
}

impl LoopBound {
    /// A short fixed label for audit rows.
    pub fn label(self) -> &'static str {
        match self {
            LoopBound::CallLimit => "call_limit",
            LoopBound::InvalidCalls => "invalid_calls",
            LoopBound::TokenBudget => "token_budget",
            LoopBound::WallClock => "wall_clock",
        }
    }
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnEnd {
    /// The model gave a final answer.
    Answered,
    /// A loop bound ended the turn; the answer is an apology ([`TurnOutcome::stopped_by`] says
    /// which bound).
    Apologised,
    /// A model call failed; the reason is a short fixed text safe to show. The caller falls
    /// back to the keyword answer and expires the proposals listed in the outcome.
    Failed(String),
    /// The model's answer did not rest on what the question read ([`crate::grounding`]); it is
    /// not kept. The caller answers with code's own answer or says what to try. Proposals the
    /// turn stored stand: each was checked by code and is shown by its number.
    SetAside(SetAside),
}

/// The result of one question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnOutcome {
    /// The text for the operator (empty when the turn failed).
    pub answer: String,
    /// Proposals stored during this turn, in order.
    pub proposals: Vec<u64>,
    /// Model calls made.
    pub model_calls: u32,
    /// Input tokens reported (cache reads and writes included).
    pub input_tokens: u64,
    /// Output tokens reported.
    pub output_tokens: u64,
    /// Tool calls the model made (answered or refused).
    pub tools_called: u32,
    /// How the turn ended.
    pub outcome: TurnEnd,
    /// The bound that ended the turn, when it was [`TurnEnd::Apologised`].
    pub stopped_by: Option<LoopBound>,
}

/// One message of the conversation, as the loop keeps it, whatever the API.
#[derive(Debug, Clone)]
pub enum Turn {
    /// The operator's question, after the chat's data block when there is one.
    Question {
        /// The chat's record as a data block ([`data_block`]), if any.
        context: Option<String>,
        /// The question.
        text: String,
    },
    /// What the model answered, as its API must be sent it back (opaque to the loop).
    Model(Value),
    /// The answers to the previous answer's tool calls, in order.
    Results(Vec<CallResult>),
}

/// One tool call the model made.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The call's ID, to answer it by.
    pub id: String,
    /// The tool's name as the model gave it.
    pub name: String,
    /// The arguments; a string when the model sent arguments that are not JSON (answered
    /// with an error, as any other invalid call).
    pub input: Value,
}

/// The answer to one tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallResult {
    /// The call's ID.
    pub id: String,
    /// What the model reads: a data block, a store message or an error text.
    pub content: String,
    /// The call failed or was refused.
    pub is_error: bool,
}

/// Why the model stopped, in the loop's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// It asked for tool calls.
    ToolUse,
    /// It declined (Anthropic's `refusal`, a content filter).
    Refusal,
    /// It reached `max_tokens` (Anthropic's `max_tokens`, Chat Completions' `length`): what it
    /// wrote may be cut off mid-sentence.
    Length,
    /// Anything else: an answer.
    Other,
}

/// One answer of the model, whatever the API.
#[derive(Debug, Clone)]
pub struct Reply {
    /// Its text parts, in order.
    pub text: Vec<String>,
    /// Its tool calls, in order.
    pub calls: Vec<Call>,
    /// Why it stopped.
    pub stop: Stop,
    /// Input tokens reported (cache reads and writes included).
    pub input_tokens: u64,
    /// Output tokens reported.
    pub output_tokens: u64,
    /// The answer as the API must be sent it back in the next request.
    pub echo: Value,
}

/// The request body for one call, in `cfg`'s API. The system prompt and tools come first and
/// never change within a process, so a cached prefix stays byte-identical from turn to turn.
pub fn request_body(cfg: &ModelConfig, tools: &[Value], turns: &[Turn]) -> Value {
    match cfg.api {
        ModelApi::Anthropic => anthropic::request_body(cfg, tools, turns),
        ModelApi::OpenAi => openai::request_body(cfg, tools, turns),
    }
}

/// A token count from an answer's `usage` object (0 when the server gave none).
fn token_count(usage: Option<&Value>, field: &str) -> u64 {
    usage
        .and_then(|u| u.get(field))
        .and_then(Value::as_u64)
        .unwrap_or(0)
}

/// The model's answer read from a response body in `api`'s shape.
fn parse_reply(api: ModelApi, bytes: &[u8]) -> Result<Reply, CallError> {
    let value: Value = serde_json::from_slice(bytes).map_err(|_| CallError::unreadable())?;
    match api {
        ModelApi::Anthropic => anthropic::parse_reply(&value),
        ModelApi::OpenAi => openai::parse_reply(&value),
    }
}

/// Why a model call did not give a usable reply.
#[derive(Debug)]
pub enum CallError {
    /// A fixed reason safe to show the operator.
    Failed(&'static str, Option<u16>),
    /// The turn's wall clock ran out during the call.
    OutOfTime,
}

impl CallError {
    /// The reply did not have the shape its API gives.
    fn unreadable() -> CallError {
        CallError::Failed("the model's reply could not be read", None)
    }

    fn reason(&self) -> String {
        match self {
            CallError::Failed(text, Some(status)) => format!("{text} (HTTP {status})"),
            CallError::Failed(text, None) => (*text).to_owned(),
            CallError::OutOfTime => String::from("out of time"),
        }
    }
}

fn build_client(cfg: &ModelConfig) -> Result<reqwest::Client, CallError> {
    let mut builder = fleetwatch_signin::tls::client_builder()
        // Following a redirect would carry the key to wherever the answer points.
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(cfg.request_timeout.min(Duration::from_secs(15)));
    if cfg.is_local() {
        builder = builder.no_proxy();
    }
    builder
        .build()
        .map_err(|_| CallError::Failed("the model client could not be set up", None))
}

async fn call_model(
    client: &reqwest::Client,
    cfg: &ModelConfig,
    body: &Value,
    deadline: Instant,
) -> Result<Reply, CallError> {
    let headers = cfg.auth_headers()?;
    let now = Instant::now();
    if now >= deadline {
        return Err(CallError::OutOfTime);
    }
    let remaining = deadline - now;
    let limit = remaining.min(cfg.request_timeout);
    let wall_clock_bound = remaining <= cfg.request_timeout;
    let request = async {
        let response = client
            .post(cfg.endpoint())
            .headers(headers)
            .header("content-type", "application/json")
            .json(body)
            .send()
            .await
            .map_err(|e| {
                if e.is_timeout() {
                    CallError::Failed("the model service did not answer in time", None)
                } else {
                    CallError::Failed("could not reach the model service", None)
                }
            })?;
        let status = response.status();
        let bytes = read_bounded(response).await?;
        Ok::<_, CallError>((status, bytes))
    };
    let (status, bytes) = match tokio::time::timeout(limit, request).await {
        Ok(result) => result?,
        Err(_) if wall_clock_bound => return Err(CallError::OutOfTime),
        Err(_) => {
            return Err(CallError::Failed(
                "the model service did not answer in time",
                None,
            ));
        }
    };
    if !status.is_success() {
        let code = Some(status.as_u16());
        let text = match status.as_u16() {
            401 | 403 => "the model service refused the API key",
            429 => "the model service is limiting requests",
            400..=499 => "the model service rejected the request",
            _ => "the model service had an error",
        };
        return Err(CallError::Failed(text, code));
    }
    parse_reply(cfg.api, &bytes)
}

/// The models the server lists (`GET /v1/models`, `{"data": [{"id": …}]}` in both APIs), or
/// why it did not answer, in words. For `fleetwatch doctor`.
pub async fn list_models(cfg: &ModelConfig) -> Result<Vec<String>, String> {
    if let Some(problem) = cfg.base_url_problem() {
        return Err(problem.to_owned());
    }
    let client = build_client(cfg).map_err(|e| e.reason())?;
    let headers = cfg.auth_headers().map_err(|e| e.reason())?;
    let url = format!("{}/v1/models", cfg.root());
    let response = tokio::time::timeout(
        cfg.request_timeout.min(Duration::from_secs(10)),
        client.get(&url).headers(headers).send(),
    )
    .await
    .map_err(|_| format!("{url} did not answer in time"))?
    .map_err(|_| format!("could not reach {url}"))?;
    let status = response.status();
    if !status.is_success() {
        return Err(match status.as_u16() {
            401 | 403 => format!("{url} refused the API key (HTTP {status})"),
            404 => format!(
                "{url} is not there (HTTP 404): is this a Chat Completions server, and is the \
                 base URL its root?"
            ),
            _ => format!("{url} answered HTTP {status}"),
        });
    }
    let bytes = read_bounded(response).await.map_err(|e| e.reason())?;
    let value: Value = serde_json::from_slice(&bytes)
        .map_err(|_| format!("{url} answered something other than JSON"))?;
    let list = value
        .get("data")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("{url} answered without a list of models"))?;
    Ok(list
        .iter()
        .filter_map(|m| m.get("id").and_then(Value::as_str))
        .map(|id| crate::page::card::show_text(id, 120))
        .collect())
}

/// The one tool a probe offers: named and shaped as the fleet tool the model is asked to use
/// first, so the probe asks what a question asks.
pub const PROBE_TOOL: &str = "fleet_overview";

/// What one probe of the model found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe {
    /// The model answered with a call of the one tool it was offered, arguments an object.
    pub called_tool: bool,
    /// How long the call took.
    pub elapsed: Duration,
}

/// One short request as a question makes it (the system prompt, one tool, a question that
/// needs it), within the per-call limit: whether the server answers with a real tool call, and
/// how long it takes. For `fleetwatch doctor`; nothing read from the fleet is sent.
pub async fn probe(cfg: &ModelConfig) -> Result<Probe, String> {
    if let Some(problem) = cfg.base_url_problem() {
        return Err(problem.to_owned());
    }
    let client = build_client(cfg).map_err(|e| e.reason())?;
    let tools = [json!({
        "name": PROBE_TOOL,
        "description": "Counts of the team's rooms: how many there are, online, offline and \
                        recording.",
        "input_schema": {"type": "object", "properties": {}, "additionalProperties": false},
    })];
    let turns = [Turn::Question {
        context: None,
        text: String::from("How many rooms are offline? Use the tool to find out."),
    }];
    let body = request_body(cfg, &tools, &turns);
    let start = Instant::now();
    let reply = call_model(&client, cfg, &body, start + cfg.request_timeout)
        .await
        .map_err(|e| match e {
            CallError::OutOfTime => format!(
                "no answer within the call limit of {} s ({ENV_CALL_TIMEOUT})",
                cfg.request_timeout.as_secs()
            ),
            CallError::Failed(..) => e.reason(),
        })?;
    Ok(Probe {
        called_tool: reply
            .calls
            .iter()
            .any(|c| c.name == PROBE_TOOL && c.input.is_object()),
        elapsed: start.elapsed(),
    })
}

/// Largest reply body read; a real reply is a few kilobytes, and a broken or hostile endpoint
/// must not be able to fill memory.
const MAX_REPLY_BYTES: usize = 4 * 1024 * 1024;

async fn read_bounded(mut response: reqwest::Response) -> Result<Vec<u8>, CallError> {
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if body.len().saturating_add(chunk.len()) > MAX_REPLY_BYTES {
                    return Err(CallError::Failed("the model's reply was too large", None));
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => return Ok(body),
            Err(_) => {
                return Err(CallError::Failed(
                    "the model service's reply was cut off",
                    None,
                ));
            }
        }
    }
}

/// The answer as the terminal will show it: no control characters other than line breaks and
/// tabs, and no bidirectional overrides. The model may copy them from a hostile device name,
/// and a terminal would act on them (escape sequences) or display text reordered.
pub fn clean_answer(text: &str) -> String {
    text.chars()
        .filter(|c| {
            *c == '\n'
                || *c == '\t'
                || !(c.is_control()
                    || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'))
        })
        .collect()
}

/// The apology a bounded turn ends with, in the operator's language.
pub fn apology(bound: LoopBound, lang: Lang) -> String {
    let why = match (bound, lang) {
        (LoopBound::CallLimit, Lang::En) => "it needed more steps than one question may take",
        (LoopBound::InvalidCalls, Lang::En) => "my tool calls kept failing",
        (LoopBound::TokenBudget, Lang::En) => "it needed more data than one question may use",
        (LoopBound::WallClock, Lang::En) => "it took longer than one question may take",
        (LoopBound::CallLimit, Lang::Es) => "necesitaba más pasos de los permitidos por pregunta",
        (LoopBound::InvalidCalls, Lang::Es) => "mis consultas a las herramientas seguían fallando",
        (LoopBound::TokenBudget, Lang::Es) => "necesitaba más datos de los permitidos por pregunta",
        (LoopBound::WallClock, Lang::Es) => "tardaba más de lo permitido por pregunta",
    };
    match lang {
        Lang::En => format!(
            "Sorry, I could not finish this answer: {why}. Nothing has been changed. Try a \
             narrower question, for example about one room."
        ),
        Lang::Es => format!(
            "Lo siento, no pude terminar esta respuesta: {why}. No se ha cambiado nada. Prueba \
             con una pregunta más concreta, por ejemplo sobre una sola sala."
        ),
    }
}

/// The line after an answer the model ended at its token limit.
pub fn cut_off(lang: Lang) -> &'static str {
    lang.pick(
        "(This answer reached the model's length limit and may be cut off.)",
        "(Esta respuesta llegó al límite de longitud del modelo y puede estar incompleta.)",
    )
}

/// A read failure text for the model: shortened, on one line, with no markup characters, so
/// that even an error that quotes the server cannot pose as a data block or an instruction tag.
fn read_failure(text: &str) -> String {
    let cleaned: String = text
        .chars()
        .map(|c| match c {
            '<' | '>' | '&' => ' ',
            c if c.is_control() => ' ',
            c => c,
        })
        .take(300)
        .collect();
    format!("The read failed: {}", cleaned.trim())
}

struct ToolAnswer {
    content: String,
    is_error: bool,
    invalid: bool,
}

impl ToolAnswer {
    fn unavailable() -> Self {
        ToolAnswer {
            content: TOOL_NOT_AVAILABLE.to_owned(),
            is_error: true,
            invalid: true,
        }
    }
}

/// Where the turn stands; shared by every exit so the counts are always reported.
struct Tally {
    proposals: Vec<u64>,
    model_calls: u32,
    input_tokens: u64,
    output_tokens: u64,
    tools_called: u32,
    /// What the turn read, for judging its answer.
    evidence: Evidence,
}

impl Tally {
    fn finish(
        self,
        answer: String,
        outcome: TurnEnd,
        stopped_by: Option<LoopBound>,
    ) -> TurnOutcome {
        let result = TurnOutcome {
            answer,
            proposals: self.proposals,
            model_calls: self.model_calls,
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            tools_called: self.tools_called,
            outcome,
            stopped_by,
        };
        // Counts only: the question, the data and the answer never reach a log.
        tracing::info!(
            model_calls = result.model_calls,
            input_tokens = result.input_tokens,
            output_tokens = result.output_tokens,
            tools_called = result.tools_called,
            proposals = result.proposals.len(),
            outcome = match &result.outcome {
                TurnEnd::Answered => "answered",
                TurnEnd::Apologised => "apologised",
                TurnEnd::Failed(_) => "failed",
                TurnEnd::SetAside(_) => "set_aside",
            },
            "model turn ended"
        );
        result
    }

    fn apologise(self, bound: LoopBound, lang: Lang) -> TurnOutcome {
        self.finish(apology(bound, lang), TurnEnd::Apologised, Some(bound))
    }
}

/// Runs one question through the model.
///
/// `tools` is what the model is shown (from [`crate::toolspec::tools`]); `visible` is asked
/// again for every call the model makes, so a tool whose grant closed since `tools` was built,
/// or one the model invents, is refused. Neither the question nor any answer is written
/// anywhere by this function.
pub async fn run_turn<H: ToolHandler>(
    cfg: &ModelConfig,
    tools: &[Value],
    visible: &(dyn Fn(&str) -> bool + Send + Sync),
    question: &str,
    handler: &H,
) -> TurnOutcome {
    run_turn_in_chat(cfg, tools, visible, question, None, handler).await
}

/// The name of the data block that carries the chat's own record to the model.
pub const CHAT_CONTEXT: &str = "chat_context";

/// [`run_turn`] with the chat's own record (who asks, what became of the proposals they raised,
/// such as a denial and its reason) given to the model as a data block before the question:
/// escaped and capped like every read result, never as an instruction.
pub async fn run_turn_in_chat<H: ToolHandler>(
    cfg: &ModelConfig,
    tools: &[Value],
    visible: &(dyn Fn(&str) -> bool + Send + Sync),
    question: &str,
    context: Option<&Value>,
    handler: &H,
) -> TurnOutcome {
    let lang = lang::detect(question);
    let deadline = Instant::now() + cfg.wall_clock;
    let mut tally = Tally {
        proposals: Vec::new(),
        model_calls: 0,
        input_tokens: 0,
        output_tokens: 0,
        tools_called: 0,
        evidence: Evidence::new(question, context),
    };
    if let Some(problem) = cfg.base_url_problem() {
        return tally.finish(String::new(), TurnEnd::Failed(problem.to_owned()), None);
    }
    let client = match build_client(cfg) {
        Ok(client) => client,
        Err(e) => return tally.finish(String::new(), TurnEnd::Failed(e.reason()), None),
    };
    let mut turns = vec![Turn::Question {
        context: context.map(|c| data_block(CHAT_CONTEXT, c)),
        text: question.to_owned(),
    }];
    // Consecutive invalid calls per tool name; a valid call of that tool resets its count.
    let mut invalid_streak: HashMap<String, u32> = HashMap::new();

    loop {
        if tally.model_calls >= cfg.max_calls {
            return tally.apologise(LoopBound::CallLimit, lang);
        }
        if tally.input_tokens.saturating_add(tally.output_tokens) >= cfg.token_budget {
            return tally.apologise(LoopBound::TokenBudget, lang);
        }
        if Instant::now() >= deadline {
            return tally.apologise(LoopBound::WallClock, lang);
        }
        let body = request_body(cfg, tools, &turns);
        tally.model_calls += 1;
        let reply = match call_model(&client, cfg, &body, deadline).await {
            Ok(reply) => reply,
            Err(CallError::OutOfTime) => return tally.apologise(LoopBound::WallClock, lang),
            Err(e) => return tally.finish(String::new(), TurnEnd::Failed(e.reason()), None),
        };
        tally.input_tokens = tally.input_tokens.saturating_add(reply.input_tokens);
        tally.output_tokens = tally.output_tokens.saturating_add(reply.output_tokens);
        if reply.stop == Stop::Refusal {
            return tally.finish(
                String::new(),
                TurnEnd::Failed(String::from("the model declined to answer")),
                None,
            );
        }

        if reply.calls.is_empty() {
            if reply.stop == Stop::ToolUse {
                return tally.finish(
                    String::new(),
                    TurnEnd::Failed(CallError::unreadable().reason()),
                    None,
                );
            }
            let mut answer = clean_answer(&reply.text.join("\n")).trim().to_owned();
            if answer.is_empty() {
                return tally.finish(
                    String::new(),
                    TurnEnd::Failed(String::from("the model gave an empty answer")),
                    None,
                );
            }
            if let Some(why) = tally.evidence.judge(&answer, question) {
                return tally.finish(String::new(), TurnEnd::SetAside(why), None);
            }
            if reply.stop == Stop::Length {
                answer.push_str("\n\n");
                answer.push_str(cut_off(lang));
            }
            return tally.finish(answer, TurnEnd::Answered, None);
        }

        let mut results = Vec::with_capacity(reply.calls.len());
        for (n, call) in reply.calls.into_iter().enumerate() {
            if n >= MAX_CALLS_PER_REPLY
                || (call.name == PROPOSE_TOOL
                    && tally.proposals.len() >= MAX_PROPOSALS_PER_QUESTION)
            {
                // Answered as data, not run; not an invalid call (the model did nothing wrong
                // per call), and not counted as a tool called.
                results.push(CallResult {
                    id: call.id,
                    content: if n >= MAX_CALLS_PER_REPLY {
                        TOO_MANY_CALLS
                    } else {
                        TOO_MANY_PROPOSALS
                    }
                    .to_owned(),
                    is_error: true,
                });
                continue;
            }
            tally.tools_called += 1;
            let Some(answer) = answer_call(
                &call.name,
                call.input,
                visible,
                handler,
                (&mut tally.proposals, &mut tally.evidence),
                deadline,
            )
            .await
            else {
                return tally.apologise(LoopBound::WallClock, lang);
            };
            // The streak key is bounded so an invented name cannot grow the map's keys.
            let key: String = call.name.chars().take(64).collect();
            if answer.invalid {
                let streak = invalid_streak.entry(key).or_insert(0);
                *streak += 1;
                if *streak >= 2 {
                    return tally.apologise(LoopBound::InvalidCalls, lang);
                }
            } else {
                invalid_streak.remove(&key);
            }
            results.push(CallResult {
                id: call.id,
                content: answer.content,
                is_error: answer.is_error,
            });
        }
        turns.push(Turn::Model(reply.echo));
        turns.push(Turn::Results(results));
    }
}

/// Answers one tool call; `None` when the wall clock ran out during a read.
async fn answer_call<H: ToolHandler>(
    name: &str,
    input: Value,
    visible: &(dyn Fn(&str) -> bool + Send + Sync),
    handler: &H,
    (proposals, evidence): (&mut Vec<u64>, &mut Evidence),
    deadline: Instant,
) -> Option<ToolAnswer> {
    // The call-time gate: what the model was shown earlier does not matter here.
    if name.is_empty() || !visible(name) {
        return Some(ToolAnswer::unavailable());
    }
    if name == PROPOSE_TOOL {
        // Not cut short by the wall clock: dropping a proposal half-way could leave one stored
        // whose number this turn never learns, so the caller could not expire it. The store
        // bounds its own waits.
        return Some(answer_propose(input, handler, proposals, evidence).await);
    }
    tokio::time::timeout_at(deadline, answer_read(name, input, handler, evidence))
        .await
        .ok()
}

async fn answer_read<H: ToolHandler>(
    name: &str,
    input: Value,
    handler: &H,
    evidence: &mut Evidence,
) -> ToolAnswer {
    let shaped = name.starts_with("get_") || name.starts_with("kb_") || name.starts_with("fleet_");
    if !shaped || name == "get_channel_image" {
        // `visible` should never allow these; refuse even if a caller's check is wrong.
        return ToolAnswer::unavailable();
    }
    let args = match input {
        Value::Object(_) => input,
        Value::Null => json!({}),
        _ => {
            return ToolAnswer {
                content: String::from("The arguments must be a JSON object."),
                is_error: true,
                invalid: true,
            };
        }
    };
    match handler.read(name, args).await {
        Ok(value) => {
            evidence.read(&value);
            ToolAnswer {
                content: data_block(name, &value),
                is_error: false,
                invalid: false,
            }
        }
        Err(text) => ToolAnswer {
            content: read_failure(&text),
            is_error: true,
            invalid: true,
        },
    }
}

async fn answer_propose<H: ToolHandler>(
    input: Value,
    handler: &H,
    proposals: &mut Vec<u64>,
    evidence: &mut Evidence,
) -> ToolAnswer {
    let tool = input.get("tool").and_then(Value::as_str);
    let arguments = input.get("arguments").filter(|a| a.is_object());
    // The reason is optional: small models often leave it out, and the card says the assistant
    // gave none. A reason that is there must be text. (The schema the model is shown still
    // asks for one: that is guidance, this is the rule.)
    let reason = match input.get("reason") {
        None | Some(Value::Null) => Some(""),
        Some(Value::String(text)) => Some(text.as_str()),
        Some(_) => None,
    };
    let extra = input.as_object().is_some_and(|o| {
        o.keys()
            .any(|k| !matches!(k.as_str(), "tool" | "arguments" | "reason"))
    });
    let (Some(tool), Some(arguments), Some(reason), false) = (tool, arguments, reason, extra)
    else {
        return ToolAnswer {
            content: format!(
                "Not proposed: propose_change takes tool (text), arguments (an object) and, if \
                 you give one, reason (text, at most {REASON_MAX_CHARS} characters), nothing else."
            ),
            is_error: true,
            invalid: true,
        };
    };
    if reason.chars().count() > REASON_MAX_CHARS {
        return ToolAnswer {
            content: format!(
                "Not proposed: the reason is longer than {REASON_MAX_CHARS} characters."
            ),
            is_error: true,
            invalid: true,
        };
    }
    let result = handler.propose(tool, arguments.clone(), reason).await;
    if let Some(id) = result.proposal_id {
        proposals.push(id);
    }
    // Code answered a valid call (stored, waiting, or refused by a rule): an answer explaining
    // that rests on code's words. An invalid call rests on nothing.
    if !result.invalid {
        evidence.proposed(&result.message);
    }
    ToolAnswer {
        content: result.message,
        is_error: result.proposal_id.is_none(),
        invalid: result.invalid,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A lookup over fixed pairs, as the environment would answer.
    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name: &str| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn key_rules() {
        assert!(ApiKey::new("").is_none());
        assert!(ApiKey::new("   ").is_none());
        assert!(ApiKey::new("sk-ant-x").is_some());
        assert!(ApiKey::new("bad\nkey").is_none());
        assert!(header_value(ApiKey::new("sk-ant-x").unwrap().expose()).is_some());
    }

    #[test]
    fn config_from_lookup() {
        let no_file = |_: &std::path::Path| -> std::io::Result<String> {
            panic!("no key file is named, so none is read")
        };
        let cfg = |pairs| ModelConfig::from_lookup(env(pairs), no_file).unwrap();
        assert!(cfg(&[]).is_none());
        assert!(cfg(&[(ENV_API_KEY, "")]).is_none());
        let c = cfg(&[(ENV_API_KEY, "sk-ant-abc")]).unwrap();
        assert_eq!(c.base_url, DEFAULT_BASE_URL);
        assert_eq!(c.model, DEFAULT_MODEL);
        assert_eq!(c.max_calls, 8);
        let c = cfg(&[
            (ENV_API_KEY, "sk-ant-abc"),
            (ENV_BASE_URL, "http://127.0.0.1:9999/"),
            (ENV_MODEL, "claude-test"),
        ])
        .unwrap();
        assert_eq!(c.base_url, "http://127.0.0.1:9999/");
        assert_eq!(c.endpoint(), "http://127.0.0.1:9999/v1/messages");
        assert_eq!(c.model, "claude-test");
        assert!(!format!("{c:?}").contains("sk-ant-abc"));
        // A key a header cannot carry is an error that does not quote it, not keyword mode.
        let err = ModelConfig::from_lookup(env(&[(ENV_API_KEY, "sk-ant-abc def")]), no_file)
            .err()
            .unwrap();
        assert!(
            err.contains(ENV_API_KEY) && !err.contains("sk-ant"),
            "{err}"
        );
    }

    #[test]
    fn the_chat_completions_api_is_chosen_by_name_and_never_takes_the_anthropic_key() {
        let no_file = |_: &std::path::Path| -> std::io::Result<String> { panic!("no file") };
        let cfg = |pairs| ModelConfig::from_lookup(env(pairs), no_file);
        // A local server: no key, a base URL, a model.
        let c = cfg(&[
            (ENV_API, "OpenAI"),
            (ENV_URL, "http://127.0.0.1:11434/v1/"),
            (ENV_MODEL, "qwen2.5:7b"),
            (ENV_API_KEY, "sk-ant-secret"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(c.api, ModelApi::OpenAi);
        assert!(
            c.api_key.is_none(),
            "the Anthropic key is not sent to another provider"
        );
        assert_eq!(c.endpoint(), "http://127.0.0.1:11434/v1/chat/completions");
        assert!(c.auth_headers().unwrap().is_empty());
        assert_eq!(c.model, "qwen2.5:7b");
        // OpenAI's own: a key, the default base URL, the key as a bearer token.
        let c = cfg(&[(ENV_API, "openai"), (ENV_KEY, "sk-o"), (ENV_MODEL, "m")])
            .unwrap()
            .unwrap();
        assert_eq!(c.endpoint(), "https://api.openai.com/v1/chat/completions");
        let headers = c.auth_headers().unwrap();
        assert_eq!(headers["authorization"], "Bearer sk-o");
        assert!(headers["authorization"].is_sensitive());
        // Missing pieces are said, not guessed.
        let err = cfg(&[(ENV_API, "openai"), (ENV_MODEL, "m")]).err().unwrap();
        assert!(err.contains(ENV_URL), "{err}");
        let err = cfg(&[(ENV_API, "openai"), (ENV_URL, "http://127.0.0.1:8080")])
            .err()
            .unwrap();
        assert!(err.contains(ENV_MODEL), "{err}");
        let err = cfg(&[(ENV_API, "gemini")]).err().unwrap();
        assert!(err.contains("anthropic or openai"), "{err}");
        // The new names serve Anthropic too, and win over the older ones.
        let c = cfg(&[
            (ENV_KEY, "sk-new"),
            (ENV_API_KEY, "sk-old"),
            (ENV_URL, "http://[::1]:9"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(c.api, ModelApi::Anthropic);
        assert_eq!(c.api_key.as_ref().unwrap().expose(), "sk-new");
        assert_eq!(c.endpoint(), "http://[::1]:9/v1/messages");
        assert_eq!(c.auth_headers().unwrap()["x-api-key"], "sk-new");
    }

    #[test]
    fn the_time_limits_are_settings_with_todays_defaults_and_said_errors() {
        let no_file = |_: &std::path::Path| -> std::io::Result<String> { panic!("no file") };
        let limits = |pairs| {
            ModelConfig::from_lookup(env(pairs), no_file)
                .map(|c| c.map(|c| (c.request_timeout.as_secs(), c.wall_clock.as_secs())))
        };
        assert_eq!(limits(&[(ENV_KEY, "k")]), Ok(Some((90, 180))));
        assert_eq!(
            limits(&[
                (ENV_KEY, "k"),
                (ENV_CALL_TIMEOUT, "300"),
                (ENV_QUESTION_TIMEOUT, "900")
            ]),
            Ok(Some((300, 900)))
        );
        // A longer call alone lengthens the question to hold it.
        assert_eq!(
            limits(&[(ENV_KEY, "k"), (ENV_CALL_TIMEOUT, "240")]),
            Ok(Some((240, 240)))
        );
        for (name, value) in [
            (ENV_CALL_TIMEOUT, "0"),
            (ENV_CALL_TIMEOUT, "90s"),
            (ENV_QUESTION_TIMEOUT, "-5"),
            (ENV_QUESTION_TIMEOUT, "3601"),
        ] {
            let err =
                ModelConfig::from_lookup(env_owned(&[(ENV_KEY, "k"), (name, value)]), no_file)
                    .err()
                    .unwrap();
            assert!(err.starts_with(name) && err.contains("1 to 3600"), "{err}");
        }
        let err = limits(&[
            (ENV_KEY, "k"),
            (ENV_CALL_TIMEOUT, "200"),
            (ENV_QUESTION_TIMEOUT, "100"),
        ])
        .err()
        .unwrap();
        assert!(err.contains("longer than"), "{err}");
        // No model, no limits read.
        assert_eq!(limits(&[(ENV_CALL_TIMEOUT, "x")]), Ok(None));
    }

    /// [`env`] over pairs built at run time.
    fn env_owned(pairs: &[(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name: &str| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        }
    }

    #[test]
    fn the_key_file_is_read_when_the_variable_is_unset_and_a_bad_one_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("anthropic-api-key");
        let lookup = |key: Option<&'static str>, path: String| {
            move |name: &str| match name {
                ENV_API_KEY => key.map(str::to_owned),
                ENV_API_KEY_FILE => Some(path.clone()),
                _ => None,
            }
        };
        let path = file.display().to_string();
        std::fs::write(&file, "sk-ant-from-file\n").unwrap();
        let c = ModelConfig::from_lookup(lookup(None, path.clone()), read_key_file)
            .unwrap()
            .unwrap();
        assert_eq!(c.api_key.unwrap().expose(), "sk-ant-from-file");
        // The variable, when set, wins over the file.
        let c = ModelConfig::from_lookup(lookup(Some("sk-ant-env"), path.clone()), read_key_file)
            .unwrap()
            .unwrap();
        assert_eq!(c.api_key.unwrap().expose(), "sk-ant-env");
        // An empty file (as the installer creates it) means keyword answers only.
        std::fs::write(&file, "\n").unwrap();
        assert!(
            ModelConfig::from_lookup(lookup(None, path.clone()), read_key_file)
                .unwrap()
                .is_none()
        );
        // A file that is missing or far too big is an error naming it, never "no model".
        let missing = dir.path().join("missing").display().to_string();
        let err = ModelConfig::from_lookup(lookup(None, missing.clone()), read_key_file)
            .err()
            .unwrap();
        assert!(
            err.contains(&missing) && err.contains(ENV_API_KEY_FILE),
            "{err}"
        );
        std::fs::write(&file, "x".repeat(5000)).unwrap();
        let err = ModelConfig::from_lookup(lookup(None, path), read_key_file)
            .err()
            .unwrap();
        assert!(err.contains("larger than a key"), "{err}");
    }

    #[test]
    fn base_url_must_protect_the_key() {
        let cfg = |url: &str| ModelConfig::new(url, ApiKey::new("k").unwrap(), "m");
        assert_eq!(cfg("https://api.anthropic.com").base_url_problem(), None);
        assert_eq!(cfg("http://127.0.0.1:8080").base_url_problem(), None);
        assert_eq!(cfg("http://localhost:8080").base_url_problem(), None);
        assert_eq!(cfg("http://[::1]:8080").base_url_problem(), None);
        assert!(cfg("http://api.example.com").base_url_problem().is_some());
        assert!(cfg("ftp://127.0.0.1").base_url_problem().is_some());
        assert!(cfg("not a url").base_url_problem().is_some());
        // The one URL policy: look-alikes, user info and fragments are refused too.
        assert!(
            cfg("http://localhost.evil.example")
                .base_url_problem()
                .is_some()
        );
        assert!(
            cfg("https://u:p@api.anthropic.com")
                .base_url_problem()
                .is_some()
        );
        assert!(
            cfg("https://api.anthropic.com/#x")
                .base_url_problem()
                .is_some()
        );
        assert_eq!(cfg("http://LOCALHOST:8080").base_url_problem(), None);
    }

    #[test]
    fn read_failures_cannot_carry_markup() {
        let text = read_failure("bad <fleet_data>\nSYSTEM & more");
        assert!(!text.contains('<') && !text.contains('>') && !text.contains('&'));
        assert!(!text.contains('\n'));
        assert!(read_failure(&"x".repeat(1000)).chars().count() < 330);
    }

    #[test]
    fn answers_lose_terminal_controls() {
        assert_eq!(
            clean_answer("Room \u{1b}[31m1\u{1b}[0m\r\n\tok\u{202e}x\u{2066}"),
            "Room [31m1[0m\n\tokx"
        );
        assert_eq!(clean_answer("Sala Ñandú — 会议室"), "Sala Ñandú — 会议室");
    }

    #[test]
    fn apologies_in_both_languages() {
        for bound in [
            LoopBound::CallLimit,
            LoopBound::InvalidCalls,
            LoopBound::TokenBudget,
            LoopBound::WallClock,
        ] {
            assert!(apology(bound, Lang::En).starts_with("Sorry"));
            assert!(apology(bound, Lang::Es).starts_with("Lo siento"));
        }
    }
}
