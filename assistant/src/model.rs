//! The model loop: one operator question, a bounded conversation with the Anthropic Messages
//! API, and tool calls answered by guarded code.
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
use crate::lang::{self, Lang};
use crate::prompt::SYSTEM_PROMPT;
use crate::toolspec::{PROPOSE_TOOL, REASON_MAX_CHARS};

/// Environment variable holding the API key; empty or unset means keyword answers only.
pub const ENV_API_KEY: &str = "FLEETWATCH_ANTHROPIC_API_KEY";
/// Environment variable naming a file that holds the API key (the systemd unit points it at
/// its credential); read only when [`ENV_API_KEY`] is unset or empty. An empty file means
/// keyword answers only.
pub const ENV_API_KEY_FILE: &str = "FLEETWATCH_ANTHROPIC_API_KEY_FILE";
/// Longest key file read; a key is about a hundred bytes.
const MAX_KEY_FILE_BYTES: u64 = 4096;
/// Environment variable overriding the API base URL (tests and the demo).
pub const ENV_BASE_URL: &str = "FLEETWATCH_ANTHROPIC_BASE_URL";
/// Environment variable choosing the model.
pub const ENV_MODEL: &str = "FLEETWATCH_AI_MODEL";

/// Default API base URL.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// Default model.
pub const DEFAULT_MODEL: &str = "claude-sonnet-4-5";
/// API version header value.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The text every unavailable tool call gets back. It never names the tool: an echoed name is
/// one more place for injected text to reach the model as if it were ours.
pub const TOOL_NOT_AVAILABLE: &str = "That tool is not available.";

/// Reads a key file, refusing one larger than a key could be (a wrong path pointed at a big
/// file must not be sent as a header).
fn read_key_file(path: &std::path::Path) -> std::io::Result<String> {
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

/// The Anthropic API key: the protocol's one secret wrapper, which has neither `Debug` nor
/// `Display`, so the key cannot slip into a log line, an error or an audit row by formatting.
pub type ApiKey = fleetwatch_protocol::secret::Secret;

/// The key as a header value marked sensitive (so HTTP tooling never prints it).
fn header_value(key: &ApiKey) -> Option<reqwest::header::HeaderValue> {
    let mut value = reqwest::header::HeaderValue::from_str(key.expose()).ok()?;
    value.set_sensitive(true);
    Some(value)
}

/// How to reach the model and how far one question may go.
pub struct ModelConfig {
    /// API base URL (`FLEETWATCH_ANTHROPIC_BASE_URL`), without the `/v1/messages` path.
    pub base_url: String,
    /// The API key.
    pub api_key: ApiKey,
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
    /// A configuration with the default bounds.
    pub fn new(base_url: impl Into<String>, api_key: ApiKey, model: impl Into<String>) -> Self {
        ModelConfig {
            base_url: base_url.into(),
            api_key,
            model: model.into(),
            max_calls: 8,
            max_tokens_per_call: 2_048,
            token_budget: 200_000,
            wall_clock: Duration::from_secs(180),
            request_timeout: Duration::from_secs(90),
        }
    }

    /// Reads the environment (and the key file it names); `Ok(None)` when there is no key
    /// (keyword answers only), an error naming the file when a key file cannot be read.
    pub fn from_env() -> Result<Option<ModelConfig>, String> {
        Self::from_lookup(|name| std::env::var(name).ok(), read_key_file)
    }

    /// Like [`ModelConfig::from_env`] over any lookup and file reader, so it can be tested
    /// without touching the process environment.
    pub fn from_lookup(
        lookup: impl Fn(&str) -> Option<String>,
        read_file: impl Fn(&std::path::Path) -> std::io::Result<String>,
    ) -> Result<Option<ModelConfig>, String> {
        let key = match lookup(ENV_API_KEY).filter(|k| !k.trim().is_empty()) {
            Some(key) => key,
            None => match lookup(ENV_API_KEY_FILE).filter(|p| !p.trim().is_empty()) {
                Some(path) => read_file(std::path::Path::new(&path))
                    .map_err(|e| format!("{ENV_API_KEY_FILE}={path}: cannot read it: {e}"))?,
                None => return Ok(None),
            },
        };
        if key.trim().is_empty() {
            return Ok(None);
        }
        // A key a header cannot carry is a mistake to report, not a reason to fall back to
        // keyword answers without saying so. The message never quotes the key.
        let key = ApiKey::new(&key).ok_or_else(|| {
            format!("{ENV_API_KEY}: the key holds spaces, control characters or non-ASCII text")
        })?;
        let non_empty = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        let base = non_empty(ENV_BASE_URL).unwrap_or_else(|| DEFAULT_BASE_URL.to_owned());
        let model = non_empty(ENV_MODEL).unwrap_or_else(|| DEFAULT_MODEL.to_owned());
        Ok(Some(ModelConfig::new(base.trim(), key, model.trim())))
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

    fn endpoint(&self) -> String {
        format!("{}/v1/messages", self.base_url.trim_end_matches('/'))
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

/// The request body for one call. The system prompt and tools come first and never change
/// within a process, so the cached prefix stays byte-identical from turn to turn.
pub fn request_body(cfg: &ModelConfig, tools: &[Value], messages: &[Value]) -> Value {
    let mut body = json!({
        "model": cfg.model,
        "max_tokens": cfg.max_tokens_per_call,
        "system": [{
            "type": "text",
            "text": SYSTEM_PROMPT,
            "cache_control": {"type": "ephemeral"},
        }],
        "messages": messages,
    });
    if !tools.is_empty() {
        body["tools"] = Value::Array(tools.to_vec());
    }
    body
}

/// Why a model call did not give a usable reply.
enum CallError {
    /// A fixed reason safe to show the operator.
    Failed(&'static str, Option<u16>),
    /// The turn's wall clock ran out during the call.
    OutOfTime,
}

impl CallError {
    fn reason(&self) -> String {
        match self {
            CallError::Failed(text, Some(status)) => format!("{text} (HTTP {status})"),
            CallError::Failed(text, None) => (*text).to_owned(),
            CallError::OutOfTime => String::from("out of time"),
        }
    }
}

struct Reply {
    content: Vec<Value>,
    stop_reason: String,
    input_tokens: u64,
    output_tokens: u64,
}

fn build_client(cfg: &ModelConfig) -> Result<reqwest::Client, CallError> {
    let mut builder = fleetwatch_signin::tls::client_builder()
        // Following a redirect would carry the key to wherever the answer points.
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(cfg.request_timeout.min(Duration::from_secs(15)));
    if let Ok(url) = reqwest::Url::parse(&cfg.base_url)
        && fleetwatch_epiphan::url_policy::is_loopback(&url)
    {
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
    let key = header_value(&cfg.api_key)
        .ok_or(CallError::Failed("the model API key is not usable", None))?;
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
            .header("x-api-key", key)
            .header("anthropic-version", ANTHROPIC_VERSION)
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
    parse_reply(&bytes)
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

fn parse_reply(bytes: &[u8]) -> Result<Reply, CallError> {
    let unreadable = CallError::Failed("the model's reply could not be read", None);
    let value: Value = serde_json::from_slice(bytes).map_err(|_| unreadable)?;
    let unreadable = || CallError::Failed("the model's reply could not be read", None);
    if value.get("type").and_then(Value::as_str) == Some("error") {
        return Err(CallError::Failed("the model service had an error", None));
    }
    let content = value
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(unreadable)?
        .clone();
    if content.iter().any(|block| !block.is_object()) {
        return Err(unreadable());
    }
    let stop_reason = value
        .get("stop_reason")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let usage = value.get("usage");
    let count = |field: &str| {
        usage
            .and_then(|u| u.get(field))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    Ok(Reply {
        content,
        stop_reason,
        input_tokens: count("input_tokens")
            .saturating_add(count("cache_creation_input_tokens"))
            .saturating_add(count("cache_read_input_tokens")),
        output_tokens: count("output_tokens"),
    })
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
    };
    if let Some(problem) = cfg.base_url_problem() {
        return tally.finish(String::new(), TurnEnd::Failed(problem.to_owned()), None);
    }
    let client = match build_client(cfg) {
        Ok(client) => client,
        Err(e) => return tally.finish(String::new(), TurnEnd::Failed(e.reason()), None),
    };
    let first = match context {
        None => json!(question),
        Some(context) => json!([
            {"type": "text", "text": data_block(CHAT_CONTEXT, context)},
            {"type": "text", "text": question},
        ]),
    };
    let mut messages = vec![json!({"role": "user", "content": first})];
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
        let body = request_body(cfg, tools, &messages);
        tally.model_calls += 1;
        let reply = match call_model(&client, cfg, &body, deadline).await {
            Ok(reply) => reply,
            Err(CallError::OutOfTime) => return tally.apologise(LoopBound::WallClock, lang),
            Err(e) => return tally.finish(String::new(), TurnEnd::Failed(e.reason()), None),
        };
        tally.input_tokens = tally.input_tokens.saturating_add(reply.input_tokens);
        tally.output_tokens = tally.output_tokens.saturating_add(reply.output_tokens);
        if reply.stop_reason == "refusal" {
            return tally.finish(
                String::new(),
                TurnEnd::Failed(String::from("the model declined to answer")),
                None,
            );
        }

        let uses: Vec<&Value> = reply
            .content
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"))
            .collect();
        if uses.is_empty() {
            if reply.stop_reason == "tool_use" {
                return tally.finish(
                    String::new(),
                    TurnEnd::Failed(String::from("the model's reply could not be read")),
                    None,
                );
            }
            let answer = reply
                .content
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n");
            let answer = clean_answer(&answer).trim().to_owned();
            if answer.is_empty() {
                return tally.finish(
                    String::new(),
                    TurnEnd::Failed(String::from("the model gave an empty answer")),
                    None,
                );
            }
            return tally.finish(answer, TurnEnd::Answered, None);
        }

        let mut results = Vec::with_capacity(uses.len());
        for block in uses {
            let Some(id) = block.get("id").and_then(Value::as_str) else {
                return tally.finish(
                    String::new(),
                    TurnEnd::Failed(String::from("the model's reply could not be read")),
                    None,
                );
            };
            let name = block.get("name").and_then(Value::as_str).unwrap_or("");
            let input = block.get("input").cloned().unwrap_or(Value::Null);
            tally.tools_called += 1;
            let Some(answer) = answer_call(
                name,
                input,
                visible,
                handler,
                &mut tally.proposals,
                deadline,
            )
            .await
            else {
                return tally.apologise(LoopBound::WallClock, lang);
            };
            // The streak key is bounded so an invented name cannot grow the map's keys.
            let key: String = name.chars().take(64).collect();
            if answer.invalid {
                let streak = invalid_streak.entry(key).or_insert(0);
                *streak += 1;
                if *streak >= 2 {
                    return tally.apologise(LoopBound::InvalidCalls, lang);
                }
            } else {
                invalid_streak.remove(&key);
            }
            let mut result = json!({
                "type": "tool_result",
                "tool_use_id": id,
                "content": answer.content,
            });
            if answer.is_error {
                result["is_error"] = Value::Bool(true);
            }
            results.push(result);
        }
        messages.push(json!({"role": "assistant", "content": reply.content}));
        messages.push(json!({"role": "user", "content": results}));
    }
}

/// Answers one tool call; `None` when the wall clock ran out during a read.
async fn answer_call<H: ToolHandler>(
    name: &str,
    input: Value,
    visible: &(dyn Fn(&str) -> bool + Send + Sync),
    handler: &H,
    proposals: &mut Vec<u64>,
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
        return Some(answer_propose(input, handler, proposals).await);
    }
    tokio::time::timeout_at(deadline, answer_read(name, input, handler))
        .await
        .ok()
}

async fn answer_read<H: ToolHandler>(name: &str, input: Value, handler: &H) -> ToolAnswer {
    if !(name.starts_with("get_") || name.starts_with("kb_")) || name == "get_channel_image" {
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
        Ok(value) => ToolAnswer {
            content: data_block(name, &value),
            is_error: false,
            invalid: false,
        },
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
) -> ToolAnswer {
    let tool = input.get("tool").and_then(Value::as_str);
    let arguments = input.get("arguments").filter(|a| a.is_object());
    let reason = input.get("reason").and_then(Value::as_str);
    let extra = input.as_object().is_some_and(|o| {
        o.keys()
            .any(|k| !matches!(k.as_str(), "tool" | "arguments" | "reason"))
    });
    let (Some(tool), Some(arguments), Some(reason), false) = (tool, arguments, reason, extra)
    else {
        return ToolAnswer {
            content: format!(
                "Not proposed: propose_change takes exactly tool (text), arguments (an object) \
                 and reason (text, at most {REASON_MAX_CHARS} characters)."
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
    ToolAnswer {
        content: result.message,
        is_error: result.proposal_id.is_none(),
        invalid: result.invalid,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_rules() {
        assert!(ApiKey::new("").is_none());
        assert!(ApiKey::new("   ").is_none());
        assert!(ApiKey::new("sk-ant-x").is_some());
        assert!(ApiKey::new("bad\nkey").is_none());
        assert!(header_value(&ApiKey::new("sk-ant-x").unwrap()).is_some());
    }

    #[test]
    fn config_from_lookup() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| (*v).to_owned())
            }
        };
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
        assert_eq!(c.api_key.expose(), "sk-ant-from-file");
        // The variable, when set, wins over the file.
        let c = ModelConfig::from_lookup(lookup(Some("sk-ant-env"), path.clone()), read_key_file)
            .unwrap()
            .unwrap();
        assert_eq!(c.api_key.expose(), "sk-ant-env");
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
