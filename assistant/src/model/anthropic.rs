//! Anthropic's Messages API (`POST /v1/messages`): the conversation as `messages` of content
//! blocks, tool calls as `tool_use` blocks, their answers as `tool_result` blocks in a user
//! message.

use serde_json::{Value, json};

use super::{Call, CallError, ModelConfig, Reply, Stop, Turn};
use crate::prompt::SYSTEM_PROMPT;

/// The request body: the system prompt (marked for caching), the tools as the tool spec makes
/// them, and the conversation.
pub fn request_body(cfg: &ModelConfig, tools: &[Value], turns: &[Turn]) -> Value {
    let messages: Vec<Value> = turns
        .iter()
        .map(|turn| match turn {
            Turn::Question {
                context: None,
                text,
            } => json!({"role": "user", "content": text}),
            Turn::Question {
                context: Some(block),
                text,
            } => json!({"role": "user", "content": [
                {"type": "text", "text": block},
                {"type": "text", "text": text},
            ]}),
            Turn::Model(echo) => json!({"role": "assistant", "content": echo}),
            Turn::Results(results) => {
                let blocks: Vec<Value> = results
                    .iter()
                    .map(|r| {
                        let mut block = json!({
                            "type": "tool_result",
                            "tool_use_id": r.id,
                            "content": r.content,
                        });
                        if r.is_error {
                            block["is_error"] = Value::Bool(true);
                        }
                        block
                    })
                    .collect();
                json!({"role": "user", "content": blocks})
            }
        })
        .collect();
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

/// The answer: text blocks, `tool_use` blocks (each must carry its ID), the stop reason and
/// the token counts. The content goes back as it came.
pub fn parse_reply(value: &Value) -> Result<Reply, CallError> {
    if value.get("type").and_then(Value::as_str) == Some("error") {
        return Err(CallError::Failed("the model service had an error", None));
    }
    let content = value
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(CallError::unreadable)?;
    if content.iter().any(|block| !block.is_object()) {
        return Err(CallError::unreadable());
    }
    let mut text = Vec::new();
    let mut calls = Vec::new();
    for block in content {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                if let Some(t) = block.get("text").and_then(Value::as_str) {
                    text.push(t.to_owned());
                }
            }
            Some("tool_use") => {
                let id = block
                    .get("id")
                    .and_then(Value::as_str)
                    .ok_or_else(CallError::unreadable)?;
                calls.push(Call {
                    id: id.to_owned(),
                    name: block
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                    input: block.get("input").cloned().unwrap_or(Value::Null),
                });
            }
            _ => {}
        }
    }
    let stop = match value.get("stop_reason").and_then(Value::as_str) {
        Some("tool_use") => Stop::ToolUse,
        Some("refusal") => Stop::Refusal,
        Some("max_tokens") => Stop::Length,
        _ => Stop::Other,
    };
    let count = |field: &str| super::token_count(value.get("usage"), field);
    Ok(Reply {
        text,
        calls,
        stop,
        input_tokens: count("input_tokens")
            .saturating_add(count("cache_creation_input_tokens"))
            .saturating_add(count("cache_read_input_tokens")),
        output_tokens: count("output_tokens"),
        echo: Value::Array(content.clone()),
    })
}
