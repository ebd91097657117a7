//! The JSON body of a streamed chat-completions request (docs/llm-providers.md: tools on the
//! wire): messages in `OpenAI`'s roles, the offered tools as `function` tools.
//!
//! A session's messages are dsh's: an assistant message holds `tool-call` blocks, and each
//! result is a `user` message from source `{kind:"tool", callId}` holding one `tool-result`
//! block. On the wire a call is an entry of the assistant message's `tool_calls` and its
//! result a `{role:"tool", tool_call_id}` message right after it. A request window may cut
//! a round in two (the oldest messages left out), and servers refuse a call without its
//! result or a result without its call: such halves are left out.

use std::collections::HashSet;

use serde_json::{Value, json};

use super::provider::ToolSpec;
use super::text_only_images::images_as_text;
use dsh_store::tool_round::{ToolCallBlock, ToolResultBlock};
use dsh_store::{ContentBlock, Message, Role};

/// What an empty tool result says on the wire (servers refuse empty content).
const NO_OUTPUT: &str = "(no output)";

/// The body of a streamed request for `model`. Text blocks are joined with `\n`, an image
/// given as its placeholder line ([`images_as_text`]: only text is sent); reasoning
/// is sent back only with the tool calls of its reply (`reasoning_content`, as `DeepSeek`'s
/// thinking mode requires for a tool round; servers that never stream reasoning never get
/// it); other messages without text are left out.
pub fn request_body(model: &str, messages: &[Message], tools: &[ToolSpec]) -> Vec<u8> {
    let messages = images_as_text(messages);
    let messages: &[Message] = &messages;
    let answered: HashSet<String> = messages
        .iter()
        .filter_map(ToolResultBlock::of)
        .map(|r| r.call_id)
        .collect();
    let mut called: HashSet<String> = HashSet::new();
    let mut wire: Vec<Value> = Vec::with_capacity(messages.len());
    for m in messages {
        if let Some(result) = tool_result(m) {
            // A result whose call was left out of the window goes too.
            if called.contains(&result.call_id) {
                let content = if result.text.is_empty() {
                    NO_OUTPUT.to_owned()
                } else {
                    result.text
                };
                wire.push(
                    json!({"role": "tool", "tool_call_id": result.call_id, "content": content}),
                );
            }
            continue;
        }
        let role = match m.role {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::System => "system",
            Role::Tool => continue,
        };
        let text = m.joined_text();
        let calls: Vec<ToolCallBlock> = if m.role == Role::Assistant {
            m.content
                .iter()
                .filter_map(ToolCallBlock::of)
                .filter(|c| answered.contains(&c.id))
                .collect()
        } else {
            Vec::new()
        };
        if calls.is_empty() {
            if !text.is_empty() {
                wire.push(json!({"role": role, "content": text}));
            }
            continue;
        }
        let mut entry = json!({
            "role": "assistant",
            // Never null: servers refuse an assistant message without content.
            "content": text,
            "tool_calls": calls.iter().map(|c| json!({
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            })).collect::<Vec<_>>(),
        });
        let reasoning = reasoning_of(m);
        if !reasoning.is_empty() {
            entry["reasoning_content"] = Value::String(reasoning);
        }
        called.extend(calls.into_iter().map(|c| c.id));
        wire.push(entry);
    }
    let mut body = json!({
        "model": model,
        "messages": wire,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if !tools.is_empty() {
        body["tools"] = tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                }})
            })
            .collect();
    }
    body.to_string().into_bytes()
}

/// The result a message carries, when it is dsh's tool result (source kind `tool`, or the
/// older `tool` role).
fn tool_result(m: &Message) -> Option<ToolResultBlock> {
    let from_tool =
        m.role == Role::Tool || m.source.as_ref().and_then(|s| s.kind()) == Some("tool");
    if !from_tool {
        return None;
    }
    ToolResultBlock::of(m).or_else(|| {
        // An older tool message: its text, answering the call its source names.
        let call_id = m
            .source
            .as_ref()
            .and_then(|s| s.0.get("callId"))
            .and_then(Value::as_str)?;
        Some(ToolResultBlock {
            call_id: call_id.to_owned(),
            text: m.joined_text(),
            is_error: false,
        })
    })
}

fn reasoning_of(m: &Message) -> String {
    m.content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Reasoning { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_store::Source;
    use dsh_store::tool_round::{tool_call_block, tool_result_message};
    use pretty_assertions::assert_eq;

    fn body(messages: &[Message], tools: &[ToolSpec]) -> Value {
        serde_json::from_slice(&request_body("deepseek-chat", messages, tools)).unwrap()
    }

    #[test]
    fn request_body_maps_messages() {
        let assistant = Message::new(
            Role::Assistant,
            vec![
                ContentBlock::reasoning("secret thoughts"),
                ContentBlock::text("a"),
                ContentBlock::text("b"),
            ],
            Source::model("openai", "m"),
        );
        let reasoning_only = Message::new(
            Role::Assistant,
            vec![ContentBlock::reasoning("only")],
            Source::model("openai", "m"),
        );
        let tool = Message::new(
            Role::Tool,
            vec![ContentBlock::text("out")],
            Source::tool("c"),
        );
        let v = body(
            &[
                Message::user_text("q"),
                assistant,
                reasoning_only,
                tool,
                Message::user_text("again"),
            ],
            &[],
        );
        assert_eq!(
            v,
            json!({
                "model": "deepseek-chat",
                "messages": [
                    {"role": "user", "content": "q"},
                    {"role": "assistant", "content": "a\nb"},
                    {"role": "user", "content": "again"},
                ],
                "stream": true,
                "stream_options": {"include_usage": true},
            })
        );
    }

    fn asking(ids: &[&str]) -> Message {
        let mut content = vec![ContentBlock::reasoning("look it up")];
        content.extend(
            ids.iter()
                .map(|id| tool_call_block(id, "search_references", r#"{"ref":1,"query":"x"}"#)),
        );
        Message::new(Role::Assistant, content, Source::model("openai", "m"))
    }

    #[test]
    fn a_tool_round_goes_out_as_tool_calls_and_tool_messages() {
        let tools = [ToolSpec {
            name: "search_references".into(),
            description: "d".into(),
            parameters: json!({"type": "object"}),
        }];
        let v = body(
            &[
                Message::user_text("q"),
                asking(&["c1", "c2"]),
                tool_result_message("c1", "found it", false),
                tool_result_message("c2", "", true),
            ],
            &tools,
        );
        assert_eq!(
            v["messages"],
            json!([
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": "", "reasoning_content": "look it up", "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "search_references", "arguments": "{\"ref\":1,\"query\":\"x\"}"}},
                    {"id": "c2", "type": "function", "function": {"name": "search_references", "arguments": "{\"ref\":1,\"query\":\"x\"}"}},
                ]},
                {"role": "tool", "tool_call_id": "c1", "content": "found it"},
                {"role": "tool", "tool_call_id": "c2", "content": "(no output)"},
            ])
        );
        assert_eq!(
            v["tools"],
            json!([{"type": "function", "function": {"name": "search_references", "description": "d", "parameters": {"type": "object"}}}])
        );
    }

    #[test]
    fn halves_of_a_round_cut_by_the_window_are_left_out() {
        // The window starts at a result whose call was left out; a call has no result yet.
        let v = body(
            &[
                tool_result_message("c0", "old", false),
                Message::user_text("q"),
                asking(&["c1"]),
            ],
            &[],
        );
        assert_eq!(v["messages"], json!([{"role": "user", "content": "q"}]));
        assert!(v.get("tools").is_none());
    }
}
