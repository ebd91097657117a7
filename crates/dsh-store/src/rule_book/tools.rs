//! The shapes of a tool round as dsh writes one (its agent loop, `tool-calls.ts`, and its
//! crash repair, `repair.ts`; the same at 6816e8a3d5, 0.1.0-rc.8 and 0.1.1-rc.2).
//!
//! A step that calls tools logs the model's reply first: `assistant/chunk`s whose tool-call
//! deltas are `{type:"tool-call-delta", index, id, name?, argumentsDelta}` (strings; packed
//! as `tool-call-chunks` rows), and the `assistant/message` holding one
//! `{type:"tool-call", id, name, arguments}` block per call (`arguments` the raw JSON text).
//! Then, per call it runs, a `tool/call {turn, step, callId, name, arguments}` and the
//! `tool/result` that answers it; a call that never started gets only its result (an
//! `isError` one whose `error.code` is `TOOL_NOT_STARTED`). The step ends when every call
//! the model asked for is answered: providers refuse a request holding a call without its
//! result, so a step left with one cannot be resumed (dsh's repair only closes the open
//! turn a crash left).
//!
//! The session invariant (`turns.rs`) checks the turn, step and call id of these events;
//! this module checks their shapes and that calls and results pair up as the model asked.
//! No reader refuses a log that breaks these (its consumers do: clients, the provider
//! serializer, resume), so they are contracts ([`super::Effect::Contract`]).

use serde_json::{Map, Value};

use super::{Rule, Versions, Violation};
use crate::event::{ContentBlock, Event, EventData, kind};
use crate::kinds::ChunkKind;

/// A call the model asked for in the open step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestedCall {
    /// The call's id (the tool-call block's `id`).
    pub call_id: String,
    /// The step whose assistant message asked for it.
    pub step: u64,
    /// The seq of its `tool/call`, once logged.
    pub call_seq: Option<u64>,
}

/// The calls of the open step, in the order the model asked for them.
#[derive(Debug, Clone, Default)]
pub(super) struct ToolRules {
    requested: Vec<RequestedCall>,
}

impl ToolRules {
    /// The calls asked for in the open step that have no result yet, in order.
    pub(super) fn pending(&self) -> &[RequestedCall] {
        &self.requested
    }

    pub(super) fn admit(&mut self, event: &Event, out: &mut Vec<Violation>) {
        let seq = event.seq;
        let mut fail = |why: String| {
            out.push(Violation::new(Rule::ToolShape, Versions::BOTH, seq, why));
        };
        match &event.data {
            EventData::TurnStart { .. }
            | EventData::TurnEnd { .. }
            | EventData::StepStart { .. } => {
                self.requested.clear();
            }
            EventData::StepEnd { step, .. } => {
                for call in &self.requested {
                    fail(format!(
                        "step/end {step} while tool call {} has no tool/result",
                        call.call_id
                    ));
                }
                self.requested.clear();
            }
            EventData::AssistantChunk { chunk, .. } => {
                if let Err(why) = chunk_shape(chunk) {
                    fail(why);
                }
            }
            EventData::AssistantMessage { step, message, .. } => {
                for block in &message.content {
                    let ContentBlock::Other(map) = block else {
                        continue;
                    };
                    if map.get("type").and_then(Value::as_str) != Some("tool-call") {
                        continue;
                    }
                    match tool_call_block(map) {
                        Err(why) => fail(why),
                        Ok(id) if self.requested.iter().any(|c| c.call_id == id) => {
                            fail(format!("tool call id {id} is asked for twice in one step"));
                        }
                        Ok(id) => self.requested.push(RequestedCall {
                            call_id: id.to_owned(),
                            step: *step,
                            call_seq: None,
                        }),
                    }
                }
            }
            EventData::Other { kind: k, data } if k == kind::TOOL_CALL => {
                let id = match tool_call_data(data) {
                    Ok(id) => id,
                    Err(why) => {
                        fail(why);
                        return;
                    }
                };
                match self.requested.iter_mut().find(|c| c.call_id == id) {
                    None => fail(format!(
                        "tool/call {id} was not asked for by this step's assistant message"
                    )),
                    Some(call) if call.call_seq.is_some() => {
                        fail(format!("tool/call {id} is logged twice"));
                    }
                    Some(call) => call.call_seq = Some(seq),
                }
            }
            EventData::ToolResult { message, extra, .. }
                if event.surface_op == Some(crate::SurfaceOp::Append) =>
            {
                if let Err(why) = result_error(extra) {
                    fail(why);
                }
                let call_id = crate::tool_round::answered_call(message);
                match self.requested.iter().position(|c| c.call_id == call_id) {
                    Some(i) => {
                        self.requested.remove(i);
                    }
                    None => fail(format!(
                        "tool/result {call_id} answers no call this step's assistant message \
                         asked for"
                    )),
                }
            }
            _ => {}
        }
    }
}

fn is_index(v: Option<&Value>) -> bool {
    v.and_then(Value::as_u64).is_some()
}

fn has_exactly(map: &Map<String, Value>, keys: &[&str]) -> bool {
    map.len() == keys.len() && keys.iter().all(|k| map.contains_key(*k))
}

/// A `tool-call-delta` chunk is exactly `{type, index, id, name?, argumentsDelta}` with
/// strings (dsh's `StreamChunk`; its packer stores any other shape verbatim, and its
/// assembler reads these keys). A `block-end` carrying a tool-call block carries a valid one.
fn chunk_shape(chunk: &Value) -> Result<(), String> {
    let Some(map) = chunk.as_object() else {
        return Ok(());
    };
    let kind = map.get("type").and_then(Value::as_str).map(ChunkKind::from);
    match kind {
        Some(ChunkKind::ToolCallDelta) => {
            let keys_ok = has_exactly(map, &["type", "index", "id", "argumentsDelta"])
                || (has_exactly(map, &["type", "index", "id", "name", "argumentsDelta"])
                    && map.get("name").is_some_and(Value::is_string));
            if keys_ok
                && is_index(map.get("index"))
                && map.get("id").is_some_and(Value::is_string)
                && map.get("argumentsDelta").is_some_and(Value::is_string)
            {
                Ok(())
            } else {
                Err(
                    "a tool-call-delta chunk must be {type, index, id, name?, argumentsDelta} \
                     with string id, name and argumentsDelta"
                        .to_owned(),
                )
            }
        }
        Some(ChunkKind::BlockEnd) => match map.get("block").and_then(Value::as_object) {
            Some(block) if block.get("type").and_then(Value::as_str) == Some("tool-call") => {
                tool_call_block(block).map(|_| ())
            }
            _ => Ok(()),
        },
        _ => Ok(()),
    }
}

/// A tool-call content block `{type:"tool-call", id, name, arguments}`: its id.
fn tool_call_block(block: &Map<String, Value>) -> Result<&str, String> {
    let id = block
        .get("id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty());
    match id {
        Some(id)
            if block.get("name").is_some_and(Value::is_string)
                && block.get("arguments").is_some_and(Value::is_string) =>
        {
            Ok(id)
        }
        _ => Err(
            "a tool-call block must be {type:\"tool-call\", id, name, arguments} with a \
             non-empty id and string name and arguments"
                .to_owned(),
        ),
    }
}

/// `tool/call` data is exactly `{turn, step, callId, name, arguments}` (dsh's
/// `SessionEventMap`): its call id.
fn tool_call_data(data: &Value) -> Result<&str, String> {
    let shape_ok = data.as_object().is_some_and(|m| {
        has_exactly(m, &["turn", "step", "callId", "name", "arguments"])
            && is_index(m.get("turn"))
            && is_index(m.get("step"))
            && m.get("name").is_some_and(Value::is_string)
            && m.get("arguments").is_some_and(Value::is_string)
    });
    let id = data
        .get("callId")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty());
    match id {
        Some(id) if shape_ok => Ok(id),
        _ => Err(
            "tool/call must be exactly {turn, step, callId, name, arguments} with a non-empty \
             callId and string name and arguments"
                .to_owned(),
        ),
    }
}

/// A result's `error`, when present, is dsh's error info: an object with a string `code`.
fn result_error(extra: &Map<String, Value>) -> Result<(), String> {
    match extra.get("error") {
        None => Ok(()),
        Some(Value::Object(e)) if e.get("code").is_none_or(Value::is_string) => Ok(()),
        Some(_) => Err("a tool/result's error must be an object with a string code".to_owned()),
    }
}
