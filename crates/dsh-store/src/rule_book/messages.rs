//! The message a message event carries.
//!
//! 6816e8a3d5: `user/message`, `assistant/message`, `tool/result` and `steering/message`
//! carry a message with a non-empty string `id`. 0.1.0-rc.8 (after converting a
//! `steering/message` into the `user/message` it carries): the `id` as well, the role the
//! type declares (`assistant` for `assistant/message`, else `user`), a `source` object with
//! a non-empty `kind`; an assistant message's source is a model with `provider` and
//! `model`; a tool result's source is a tool with a `callId`, and its content is exactly one
//! `tool-result` block for that call.

use serde_json::Value;

use super::{Rule, Versions, Violation};
use crate::event::{ContentBlock, Event, EventData, Message, Role};

fn non_empty_str(v: Option<&Value>) -> Option<&str> {
    v.and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// The message-shape rules of both versions.
pub(super) fn check(event: &Event, out: &mut Vec<Violation>) {
    let seq = event.seq;
    let (message, expected_role) = match &event.data {
        EventData::UserMessage(m) | EventData::SteeringMessage { message: m, .. } => {
            (m, Role::User)
        }
        EventData::AssistantMessage { message, .. } => (message, Role::Assistant),
        EventData::ToolResult { message, .. } => (message, Role::User),
        _ => return,
    };
    if message.id.is_empty() {
        out.push(Violation::new(
            Rule::MessageShape,
            Versions::BOTH,
            seq,
            format!("{} lacks an identified message (empty id)", event.kind()),
        ));
    }
    let mut release = |why: String| {
        out.push(Violation::new(
            Rule::MessageShape,
            Versions::RELEASE,
            seq,
            why,
        ));
    };
    if message.role != expected_role {
        release(format!(
            "{} message must have role \"{}\"",
            event.kind(),
            role_name(expected_role)
        ));
    }
    let source = message.source.as_ref().map(|s| &s.0);
    let kind = non_empty_str(source.and_then(|s| s.get("kind")));
    let Some(kind) = kind.filter(|_| source.is_some_and(Value::is_object)) else {
        release(format!(
            "{} message has no source with a kind",
            event.kind()
        ));
        return;
    };
    match &event.data {
        EventData::AssistantMessage { .. } => {
            let provider = non_empty_str(source.and_then(|s| s.get("provider")));
            let model = non_empty_str(source.and_then(|s| s.get("model")));
            if kind != "model" || provider.is_none() || model.is_none() {
                release(
                    "assistant/message must have a model source with provider and model".to_owned(),
                );
            }
        }
        EventData::ToolResult { .. } => {
            let call_id = non_empty_str(source.and_then(|s| s.get("callId")));
            if kind != "tool" || call_id.is_none() {
                release("tool/result must have a tool source with a callId".to_owned());
                return;
            }
            if let Err(why) = one_tool_result_block(message, call_id) {
                release(why);
            }
        }
        _ => {}
    }
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
        Role::System => "system",
    }
}

fn one_tool_result_block(message: &Message, call_id: Option<&str>) -> Result<(), String> {
    let [ContentBlock::Other(block)] = message.content.as_slice() else {
        return Err("tool/result must contain exactly one tool-result block".to_owned());
    };
    if block.get("type").and_then(Value::as_str) != Some("tool-result")
        || !block.get("content").is_some_and(Value::is_array)
    {
        return Err("tool/result must contain exactly one tool-result block".to_owned());
    }
    if block.get("toolCallId").and_then(Value::as_str) != call_id {
        return Err("tool/result has mismatched tool call ids".to_owned());
    }
    Ok(())
}
