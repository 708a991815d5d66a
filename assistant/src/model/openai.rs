//! The Chat Completions API (`POST /v1/chat/completions`), as OpenAI, Ollama, llama.cpp's
//! server, vLLM and LM Studio serve it: the system prompt as the first message, tools as
//! `function`s, calls as the assistant message's `tool_calls`, their answers as `tool` messages.
//! No streaming.
//!
//! Small models on such servers send what a large one does not: arguments that are not JSON, a
//! call without an ID or with one repeated, text around the calls, content in parts. Each is
//! read into the loop's terms here so the loop answers it as it answers its Anthropic
//! equivalent (an error fed back, counted toward the invalid-call limit); nothing here decides
//! whether a call is allowed.

use serde_json::{Map, Value, json};

use super::{Call, CallError, ModelConfig, Reply, Stop, Turn};
use crate::prompt::SYSTEM_PROMPT;

/// The request body: the system prompt, the conversation and the tools as functions.
pub fn request_body(cfg: &ModelConfig, tools: &[Value], turns: &[Turn]) -> Value {
    let mut messages = vec![json!({"role": "system", "content": SYSTEM_PROMPT})];
    for turn in turns {
        match turn {
            Turn::Question { context, text } => {
                // One string: not every server takes content in parts.
                let content = match context {
                    Some(block) => format!("{block}\n\n{text}"),
                    None => text.clone(),
                };
                messages.push(json!({"role": "user", "content": content}));
            }
            Turn::Model(echo) => messages.push(echo.clone()),
            Turn::Results(results) => {
                for r in results {
                    messages.push(json!({
                        "role": "tool",
                        "tool_call_id": r.id,
                        "content": r.content,
                    }));
                }
            }
        }
    }
    let mut body = json!({
        "model": cfg.model,
        "stream": false,
        "messages": messages,
    });
    // OpenAI's own service has replaced `max_tokens` (its newer models refuse it); the servers
    // a team runs itself read `max_tokens`, and not all of them know the new name.
    let limit = if is_openai_service(&cfg.base_url) {
        "max_completion_tokens"
    } else {
        "max_tokens"
    };
    body[limit] = json!(cfg.max_tokens_per_call);
    if !tools.is_empty() {
        body["tools"] = Value::Array(tools.iter().map(function).collect());
    }
    body
}

/// Whether `base` is OpenAI's own service.
fn is_openai_service(base: &str) -> bool {
    reqwest::Url::parse(base)
        .ok()
        .and_then(|u| u.host_str().map(str::to_ascii_lowercase))
        .is_some_and(|host| host == "api.openai.com")
}

/// A tool as the tool spec makes it (`name`, `description`, `input_schema`) as a function.
fn function(tool: &Value) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": tool.get("name").cloned().unwrap_or(Value::Null),
            "description": tool.get("description").cloned().unwrap_or(Value::Null),
            "parameters": tool
                .get("input_schema")
                .cloned()
                .unwrap_or_else(|| json!({"type": "object"})),
        },
    })
}

/// The first choice's message: its text, its tool calls, why it stopped, the token counts.
pub fn parse_reply(value: &Value) -> Result<Reply, CallError> {
    if value.get("error").is_some_and(|e| !e.is_null()) {
        return Err(CallError::Failed("the model service had an error", None));
    }
    let choice = value
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .ok_or_else(CallError::unreadable)?;
    let message = choice
        .get("message")
        .and_then(Value::as_object)
        .ok_or_else(CallError::unreadable)?;
    let text = content_text(message.get("content"))?;
    let calls = match message.get("tool_calls") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(list)) => calls_of(list)?,
        Some(_) => return Err(CallError::unreadable()),
    };
    // A refusal comes as a finish reason from some servers and as the message's own
    // `refusal` text from OpenAI's.
    let refused = message
        .get("refusal")
        .and_then(Value::as_str)
        .is_some_and(|r| !r.trim().is_empty());
    let stop = match choice.get("finish_reason").and_then(Value::as_str) {
        _ if refused => Stop::Refusal,
        Some("tool_calls" | "function_call") => Stop::ToolUse,
        Some("content_filter") => Stop::Refusal,
        Some("length") => Stop::Length,
        _ => Stop::Other,
    };
    let count = |field: &str| super::token_count(value.get("usage"), field);
    let echo = echo(&text, &calls);
    Ok(Reply {
        text,
        calls,
        stop,
        input_tokens: count("prompt_tokens"),
        output_tokens: count("completion_tokens"),
        echo,
    })
}

/// The message's text: a string, nothing, or parts of which the text ones count; a reasoning
/// model's leading `<think>…</think>` (as some servers leave it in the content) is not part of
/// the answer.
fn content_text(content: Option<&Value>) -> Result<Vec<String>, CallError> {
    let texts: Vec<&str> = match content {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(text)) => vec![text.as_str()],
        Some(Value::Array(parts)) => parts
            .iter()
            .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        Some(_) => return Err(CallError::unreadable()),
    };
    Ok(texts
        .into_iter()
        .map(without_thinking)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .collect())
}

/// `text` without a leading `<think>…</think>` block. An unclosed one is all thinking: the
/// answer was cut off before it began.
fn without_thinking(text: &str) -> &str {
    let trimmed = text.trim_start();
    let Some(rest) = trimmed.strip_prefix("<think>") else {
        return text;
    };
    match rest.find("</think>") {
        Some(end) => rest[end + "</think>".len()..].trim_start(),
        None => "",
    }
}

/// The calls, each with an ID unique in the message (one is made when the server gave none or
/// repeated one, so every answer can name its call) and its arguments read as JSON. Arguments
/// that are not JSON stay a string, which the loop answers as invalid arguments; empty
/// arguments are none.
fn calls_of(list: &[Value]) -> Result<Vec<Call>, CallError> {
    let mut calls: Vec<Call> = Vec::with_capacity(list.len());
    for (i, item) in list.iter().enumerate() {
        let item = item.as_object().ok_or_else(CallError::unreadable)?;
        let function = item
            .get("function")
            .and_then(Value::as_object)
            .ok_or_else(CallError::unreadable)?;
        let name = function
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let input = match function.get("arguments") {
            None | Some(Value::Null) => Value::Null,
            Some(Value::String(raw)) if raw.trim().is_empty() => Value::Null,
            Some(Value::String(raw)) => {
                serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.clone()))
            }
            // Some servers send the object itself rather than its JSON text.
            Some(other) => other.clone(),
        };
        let given = item.get("id").and_then(Value::as_str).unwrap_or("");
        let id = if given.is_empty() || calls.iter().any(|c| c.id == given) {
            format!("call_fleetwatch_{i}")
        } else {
            given.to_owned()
        };
        calls.push(Call { id, name, input });
    }
    Ok(calls)
}

/// The assistant message to send back: its text and its calls as they were read (with the IDs
/// their answers name).
fn echo(text: &[String], calls: &[Call]) -> Value {
    let mut message = Map::new();
    message.insert("role".into(), json!("assistant"));
    let joined = text.join("\n");
    message.insert(
        "content".into(),
        if joined.is_empty() {
            Value::Null
        } else {
            json!(joined)
        },
    );
    if !calls.is_empty() {
        let list: Vec<Value> = calls
            .iter()
            .map(|c| {
                let arguments = match &c.input {
                    Value::String(raw) => raw.clone(),
                    Value::Null => "{}".to_owned(),
                    other => other.to_string(),
                };
                json!({
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": arguments},
                })
            })
            .collect();
        message.insert("tool_calls".into(), Value::Array(list));
    }
    Value::Object(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(message: Value, finish: &str) -> Value {
        json!({
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 120, "completion_tokens": 7},
        })
    }

    #[test]
    fn a_text_answer_reads_with_its_counts() {
        let r = parse_reply(&reply(
            json!({"role": "assistant", "content": "Two rooms."}),
            "stop",
        ))
        .unwrap();
        assert_eq!(r.text, vec!["Two rooms."]);
        assert!(r.calls.is_empty());
        assert_eq!(r.stop, Stop::Other);
        assert_eq!((r.input_tokens, r.output_tokens), (120, 7));
    }

    #[test]
    fn what_small_models_send_reads_into_the_loops_terms() {
        let r = parse_reply(&reply(
            json!({
                "role": "assistant",
                "content": [{"type": "text", "text": "Let me look."}],
                "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "get_x", "arguments": "{\"k\":1}"}},
                    {"id": "a", "type": "function", "function": {"name": "get_y", "arguments": "not json"}},
                    {"type": "function", "function": {"name": "get_z", "arguments": ""}},
                    {"id": "d", "type": "function", "function": {"name": "get_w", "arguments": {"k": 2}}},
                ],
            }),
            "tool_calls",
        ))
        .unwrap();
        assert_eq!(r.text, vec!["Let me look."]);
        assert_eq!(r.stop, Stop::ToolUse);
        let ids: Vec<&str> = r.calls.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["a", "call_fleetwatch_1", "call_fleetwatch_2", "d"]);
        assert_eq!(r.calls[0].input, json!({"k": 1}));
        assert_eq!(r.calls[1].input, json!("not json"));
        assert_eq!(r.calls[2].input, Value::Null);
        assert_eq!(r.calls[3].input, json!({"k": 2}));
        // Sent back with the IDs the answers name, arguments as text.
        assert_eq!(r.echo["tool_calls"][1]["id"], json!("call_fleetwatch_1"));
        assert_eq!(
            r.echo["tool_calls"][1]["function"]["arguments"],
            json!("not json")
        );
        assert_eq!(
            r.echo["tool_calls"][3]["function"]["arguments"],
            json!("{\"k\":2}")
        );
    }

    #[test]
    fn a_reasoning_models_thinking_is_not_its_answer() {
        let r = parse_reply(&reply(
            json!({"content": "<think>The user wants rooms.</think>\n\nTwo rooms are offline."}),
            "stop",
        ))
        .unwrap();
        assert_eq!(r.text, vec!["Two rooms are offline."]);
        let cut = parse_reply(&reply(
            json!({"content": "<think>still thinking"}),
            "length",
        ))
        .unwrap();
        assert!(cut.text.is_empty(), "{:?}", cut.text);
        let plain =
            parse_reply(&reply(json!({"content": "A <think> tag inside."}), "stop")).unwrap();
        assert_eq!(plain.text, vec!["A <think> tag inside."]);
    }

    #[test]
    fn openais_own_service_gets_its_newer_token_limit_and_other_servers_the_common_one() {
        let body = |base: &str| {
            let cfg = ModelConfig::with_api(super::super::ModelApi::OpenAi, base, None, "m");
            request_body(&cfg, &[], &[])
        };
        let openai = body("https://api.openai.com");
        assert_eq!(openai["max_completion_tokens"], json!(2048));
        assert!(openai.get("max_tokens").is_none());
        let local = body("http://127.0.0.1:11434/v1");
        assert_eq!(local["max_tokens"], json!(2048));
        assert!(local.get("max_completion_tokens").is_none());
    }

    #[test]
    fn shapes_that_are_not_an_answer_are_unreadable_or_errors() {
        for body in [
            json!({}),
            json!({"choices": []}),
            json!({"choices": [{"message": "text"}]}),
            json!({"choices": [{"message": {"content": 3}}]}),
            json!({"choices": [{"message": {"tool_calls": {"id": "x"}}}]}),
            json!({"choices": [{"message": {"tool_calls": [{"id": "x"}]}}]}),
            json!({"error": {"message": "model not found"}}),
        ] {
            assert!(parse_reply(&body).is_err(), "{body}");
        }
        let filtered = parse_reply(&reply(json!({"content": null}), "content_filter")).unwrap();
        assert_eq!(filtered.stop, Stop::Refusal);
        let declined = parse_reply(&reply(
            json!({"content": null, "refusal": "I can't help with that."}),
            "stop",
        ))
        .unwrap();
        assert_eq!(declined.stop, Stop::Refusal);
        let none = parse_reply(&reply(json!({"content": "ok", "refusal": null}), "stop")).unwrap();
        assert_eq!(none.stop, Stop::Other);
    }

    #[test]
    fn the_request_carries_the_prompt_tools_question_and_answers() {
        let cfg = ModelConfig::with_api(
            super::super::ModelApi::OpenAi,
            "http://127.0.0.1:1",
            None,
            "m",
        );
        let tools = [
            json!({"name": "get_x", "description": "d", "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral"}}),
        ];
        let turns = [
            Turn::Question {
                context: Some("<fleet_data tool=\"chat_context\">{}</fleet_data>".into()),
                text: "what is up?".into(),
            },
            Turn::Model(json!({"role": "assistant", "content": null, "tool_calls": []})),
            Turn::Results(vec![super::super::CallResult {
                id: "a".into(),
                content: "data".into(),
                is_error: false,
            }]),
        ];
        let body = request_body(&cfg, &tools, &turns);
        assert_eq!(body["messages"][0]["role"], json!("system"));
        assert_eq!(
            body["messages"][1]["content"],
            json!("<fleet_data tool=\"chat_context\">{}</fleet_data>\n\nwhat is up?")
        );
        assert_eq!(
            body["messages"][3],
            json!({"role": "tool", "tool_call_id": "a", "content": "data"})
        );
        assert_eq!(
            body["tools"][0],
            json!({"type": "function", "function": {"name": "get_x", "description": "d", "parameters": {"type": "object"}}})
        );
        assert_eq!(body["stream"], json!(false));
    }
}
