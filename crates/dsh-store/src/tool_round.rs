//! Writing a tool round the way dsh writes one (docs/session-store.md: tool rounds): the
//! tool-call content block of the assistant message, the `tool/call` event, the
//! `tool/result` surface event whose message is a `user` message from source
//! `{kind:"tool", callId}` holding exactly one `tool-result` block, and the results dsh's
//! crash repair writes for calls a crash left without one.

use serde_json::{Map, Value, json};

use super::event::{ContentBlock, EventData, Message, Role, Source, kind};

/// dsh's code for a call that was never recorded as started (its repair, and a call this
/// project's agent did not run because the turn was cancelled first).
pub const TOOL_NOT_STARTED: &str = "TOOL_NOT_STARTED";
/// dsh's code for a call recorded as started whose result was never recorded.
pub const TOOL_OUTCOME_UNKNOWN: &str = "TOOL_OUTCOME_UNKNOWN";

/// What dsh's repair tells the model about a call that never started.
const NOT_STARTED_TEXT: &str = "The tool call was interrupted before the Harness recorded it as started. Retry it if it is still needed.";
/// What dsh's repair tells the model about a call whose outcome is unknown.
const OUTCOME_UNKNOWN_TEXT: &str = "The tool call was interrupted after it was recorded, but no \
result was durably recorded. Its outcome is unknown. Decide whether to retry from the tool \
semantics: retry only if the operation is read-only or idempotent; if it may have side effects, \
first verify external state or ask the user. Do not retry blindly.";

/// `{type:"tool-call", id, name, arguments}`: one call in an assistant message.
pub fn tool_call_block(call_id: &str, name: &str, arguments: &str) -> ContentBlock {
    let mut map = Map::new();
    map.insert("type".into(), "tool-call".into());
    map.insert("id".into(), call_id.into());
    map.insert("name".into(), name.into());
    map.insert("arguments".into(), arguments.into());
    ContentBlock::Other(map)
}

/// A call read back from an assistant message's content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCallBlock {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

impl ToolCallBlock {
    /// The call `block` holds, if it is a well-formed tool-call block.
    pub fn of(block: &ContentBlock) -> Option<Self> {
        let ContentBlock::Other(map) = block else {
            return None;
        };
        if map.get("type").and_then(Value::as_str) != Some("tool-call") {
            return None;
        }
        let text = |k: &str| map.get(k).and_then(Value::as_str).map(str::to_owned);
        Some(ToolCallBlock {
            id: text("id")?,
            name: text("name")?,
            arguments: text("arguments")?,
        })
    }
}

/// The call a `tool/result` message answers: its source's `callId` (empty when it has none).
pub fn answered_call(message: &Message) -> &str {
    message
        .source
        .as_ref()
        .and_then(|s| s.0.get("callId"))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// A result read back from a `tool/result` message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolResultBlock {
    pub call_id: String,
    /// The text blocks of its content, joined with `\n`.
    pub text: String,
    pub is_error: bool,
}

impl ToolResultBlock {
    /// The result `message` carries, if it holds a `tool-result` block.
    pub fn of(message: &Message) -> Option<Self> {
        message.content.iter().find_map(|block| {
            let ContentBlock::Other(map) = block else {
                return None;
            };
            if map.get("type").and_then(Value::as_str) != Some("tool-result") {
                return None;
            }
            let call_id = map.get("toolCallId").and_then(Value::as_str)?.to_owned();
            let texts: Vec<&str> = map
                .get("content")
                .and_then(Value::as_array)
                .map(|parts| {
                    parts
                        .iter()
                        .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
                        .filter_map(|p| p.get("text").and_then(Value::as_str))
                        .collect()
                })
                .unwrap_or_default();
            Some(ToolResultBlock {
                call_id,
                text: texts.join("\n"),
                is_error: map.get("isError") == Some(&Value::Bool(true)),
            })
        })
    }
}

/// The `user` message of a tool result: source `{kind:"tool", callId}`, one `tool-result`
/// block `{toolCallId, content:[{type:"text", text}], isError}` (dsh's
/// `createToolResultMessage`).
pub fn tool_result_message(call_id: &str, text: &str, is_error: bool) -> Message {
    let mut block = Map::new();
    block.insert("type".into(), "tool-result".into());
    block.insert("toolCallId".into(), call_id.into());
    block.insert("content".into(), json!([{"type": "text", "text": text}]));
    block.insert("isError".into(), is_error.into());
    Message::new(
        Role::User,
        vec![ContentBlock::Other(block)],
        Source::tool(call_id),
    )
}

/// `tool/call {turn, step, callId, name, arguments}` (a plain event).
pub fn tool_call_data(turn: u64, step: u64, call: &ToolCallBlock) -> EventData {
    EventData::Other {
        kind: kind::TOOL_CALL.to_owned(),
        data: json!({
            "turn": turn,
            "step": step,
            "callId": call.id,
            "name": call.name,
            "arguments": call.arguments,
        }),
    }
}

/// The `tool/result` payload answering a call (appended to the surface, citing its
/// `tool/call` when one was logged: [`crate::NewEvent::tool_result`]), with dsh's error info
/// `{name, code}` when `error` is given.
pub fn tool_result_data(
    turn: u64,
    step: u64,
    message: Message,
    error: Option<(&str, &str)>,
) -> EventData {
    let mut extra = Map::new();
    if let Some((name, code)) = error {
        extra.insert("error".into(), json!({"name": name, "code": code}));
    }
    EventData::ToolResult {
        turn,
        step,
        message,
        extra,
    }
}

/// The result of a call the model asked for that never started (no `tool/call` was
/// logged): an error with `TOOL_NOT_STARTED`, as dsh's repair writes it.
pub fn not_started_data(turn: u64, step: u64, call_id: &str) -> EventData {
    tool_result_data(
        turn,
        step,
        tool_result_message(call_id, NOT_STARTED_TEXT, true),
        Some(("ToolNotStartedError", TOOL_NOT_STARTED)),
    )
}

/// The result dsh's repair writes for a call recorded as started whose result a crash
/// lost: an error with `TOOL_OUTCOME_UNKNOWN` (cite its `tool/call`).
pub fn outcome_unknown_data(turn: u64, step: u64, call_id: &str) -> EventData {
    tool_result_data(
        turn,
        step,
        tool_result_message(call_id, OUTCOME_UNKNOWN_TEXT, true),
        Some(("ToolOutcomeUnknownError", TOOL_OUTCOME_UNKNOWN)),
    )
}
