//! The Chat Completions side of the model stand-in: a request in that API read as the Messages
//! API request it stands for, and a Messages API answer written as a Chat Completions one, so
//! the scripted and the rule-based stand-ins serve both APIs from one set of replies.

use serde_json::{Map, Value, json};

/// A Chat Completions request as the Messages API request it stands for: the system message as
/// `system`, functions as tools with an `input_schema`, the assistant's `tool_calls` as
/// `tool_use` blocks and each run of `tool` messages as one user message of `tool_result`
/// blocks. A user message that opens with a data block before a blank line becomes two text
/// blocks, as the Messages API side sends it.
pub fn as_messages_request(body: &Value) -> Value {
    let mut system = Vec::new();
    let mut messages: Vec<Value> = Vec::new();
    for message in body
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let content = message.get("content");
        let text = content.and_then(Value::as_str).unwrap_or_default();
        match message.get("role").and_then(Value::as_str) {
            Some("system") => system.push(json!({"type": "text", "text": text})),
            Some("user") => messages.push(json!({"role": "user", "content": user_content(text)})),
            Some("assistant") => {
                let mut blocks = Vec::new();
                if !text.is_empty() {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                for call in message
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let function = call.get("function").cloned().unwrap_or(Value::Null);
                    let raw = function.get("arguments").cloned().unwrap_or(Value::Null);
                    let input = match raw {
                        Value::String(s) => serde_json::from_str(&s).unwrap_or(Value::String(s)),
                        other => other,
                    };
                    blocks.push(json!({
                        "type": "tool_use",
                        "id": call.get("id").cloned().unwrap_or(Value::Null),
                        "name": function.get("name").cloned().unwrap_or(Value::Null),
                        "input": input,
                    }));
                }
                messages.push(json!({"role": "assistant", "content": blocks}));
            }
            Some("tool") => {
                let result = json!({
                    "type": "tool_result",
                    "tool_use_id": message.get("tool_call_id").cloned().unwrap_or(Value::Null),
                    "content": text,
                });
                let joins = messages.last().is_some_and(|m| {
                    m["role"] == "user"
                        && m["content"]
                            .as_array()
                            .is_some_and(|blocks| blocks.iter().all(|b| b["type"] == "tool_result"))
                });
                match messages.last_mut().filter(|_| joins) {
                    Some(last) => {
                        if let Some(blocks) = last["content"].as_array_mut() {
                            blocks.push(result);
                        }
                    }
                    None => messages.push(json!({"role": "user", "content": [result]})),
                }
            }
            _ => {}
        }
    }
    let mut out = json!({
        "model": body.get("model").cloned().unwrap_or(Value::Null),
        "max_tokens": body.get("max_tokens").cloned().unwrap_or(Value::Null),
        "system": system,
        "messages": messages,
    });
    if let Some(tools) = body.get("tools").and_then(Value::as_array) {
        out["tools"] = Value::Array(
            tools
                .iter()
                .map(|t| {
                    let f = &t["function"];
                    json!({
                        "name": f["name"],
                        "description": f["description"],
                        "input_schema": f["parameters"],
                    })
                })
                .collect(),
        );
    }
    out
}

fn user_content(text: &str) -> Value {
    if text.starts_with("<fleet_data")
        && let Some(end) = text.find("</fleet_data>\n\n")
    {
        let cut = end + "</fleet_data>".len();
        return json!([
            {"type": "text", "text": &text[..cut]},
            {"type": "text", "text": &text[cut + 2..]},
        ]);
    }
    json!(text)
}

/// A Messages API answer (or error) written as a Chat Completions one; any other body (a script
/// written for Chat Completions, or a deliberately broken one) is sent as it is.
pub fn as_chat_completion(reply: &Value) -> Value {
    let messages_error = reply.get("type").and_then(Value::as_str) == Some("error");
    let messages_answer = reply.get("content").is_some_and(Value::is_array);
    if !messages_answer && !messages_error {
        return reply.clone();
    }
    if messages_error {
        return json!({"error": {
            "message": reply["error"]["message"],
            "type": reply["error"]["type"],
        }});
    }
    let mut text = Vec::new();
    let mut calls = Vec::new();
    for block in reply
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => text.push(block["text"].as_str().unwrap_or_default().to_owned()),
            Some("tool_use") => calls.push(json!({
                "id": block["id"],
                "type": "function",
                "function": {"name": block["name"], "arguments": block["input"].to_string()},
            })),
            _ => {}
        }
    }
    let mut message = Map::new();
    message.insert("role".into(), json!("assistant"));
    message.insert(
        "content".into(),
        if text.is_empty() {
            Value::Null
        } else {
            json!(text.join("\n"))
        },
    );
    if !calls.is_empty() {
        message.insert("tool_calls".into(), Value::Array(calls));
    }
    let finish = match reply.get("stop_reason").and_then(Value::as_str) {
        Some("tool_use") => "tool_calls",
        Some("refusal") => "content_filter",
        Some("max_tokens") => "length",
        _ => "stop",
    };
    let usage = |field: &str| reply["usage"][field].as_u64().unwrap_or(0);
    json!({
        "id": reply.get("id").cloned().unwrap_or(Value::Null),
        "object": "chat.completion",
        "model": reply.get("model").cloned().unwrap_or(Value::Null),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": usage("input_tokens"),
            "completion_tokens": usage("output_tokens"),
            "total_tokens": usage("input_tokens") + usage("output_tokens"),
        },
    })
}
