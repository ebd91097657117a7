//! Stream chunks as logged in `assistant/chunk` events, in dsh's `StreamChunk` vocabulary:
//! `block-start`, `text-delta`, `reasoning-delta`, `tool-call-delta`, `block-end`, `usage`,
//! `finish`. Built here for writing; read back as text deltas, old shapes included.

use serde_json::{Value, json};

use super::event::ContentBlock;
use super::kinds::ChunkKind;

/// The kind of content block a `block-start` opens (`blockType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockType {
    Text,
    Reasoning,
}

impl BlockType {
    fn as_str(self) -> &'static str {
        match self {
            BlockType::Text => "text",
            BlockType::Reasoning => "reasoning",
        }
    }
}

/// `{type:"block-start", index, blockType}`.
pub fn block_start(index: u64, block: BlockType) -> Value {
    json!({"type": ChunkKind::BlockStart.as_str(), "index": index, "blockType": block.as_str()})
}

/// `{type:"text-delta" | "reasoning-delta", index, text}`.
pub fn delta(index: u64, block: BlockType, text: &str) -> Value {
    let kind = match block {
        BlockType::Text => ChunkKind::TextDelta,
        BlockType::Reasoning => ChunkKind::ReasoningDelta,
    };
    json!({"type": kind.as_str(), "index": index, "text": text})
}

/// `{type:"block-start", index, blockType:"tool-call"}`: a tool call begins.
pub fn tool_call_start(index: u64) -> Value {
    json!({"type": ChunkKind::BlockStart.as_str(), "index": index, "blockType": "tool-call"})
}

/// `{type:"tool-call-delta", index, id, name?, argumentsDelta}`: a fragment of a tool call's
/// arguments (dsh's shape: `name` only where the provider sent it, on the call's first piece).
pub fn tool_call_delta(index: u64, id: &str, name: Option<&str>, arguments: &str) -> Value {
    let mut chunk = serde_json::Map::new();
    chunk.insert("type".into(), ChunkKind::ToolCallDelta.as_str().into());
    chunk.insert("index".into(), index.into());
    chunk.insert("id".into(), id.into());
    if let Some(name) = name {
        chunk.insert("name".into(), name.into());
    }
    chunk.insert("argumentsDelta".into(), arguments.into());
    Value::Object(chunk)
}

/// `{type:"block-end", index, block}` with the finished block.
pub fn block_end(index: u64, block: &ContentBlock) -> Value {
    json!({"type": ChunkKind::BlockEnd.as_str(), "index": index, "block": block})
}

/// `{type:"usage", usage:{inputTokens, outputTokens}}`.
pub fn usage(input_tokens: u64, output_tokens: u64) -> Value {
    json!({
        "type": ChunkKind::Usage.as_str(),
        "usage": {"inputTokens": input_tokens, "outputTokens": output_tokens},
    })
}

/// `{type:"finish", reason:{kind:"stop"}}`: the stream ended normally.
pub fn finish_stop() -> Value {
    json!({"type": ChunkKind::Finish.as_str(), "reason": {"kind": "stop"}})
}

/// `{type:"finish", reason:{kind:"tool-calls"}}`: the stream ended with tool calls to run.
pub fn finish_tool_calls() -> Value {
    json!({"type": ChunkKind::Finish.as_str(), "reason": {"kind": "tool-calls"}})
}

/// `{type:"finish", reason:{kind:"error", failure:{code, message}}}`: the stream was cut
/// short (dsh's `FinishReason` `error` with its `LlmFailure`, the same in 6816e8a3d5 and
/// 0.1.0-rc.8).
pub fn finish_error(code: &str, message: &str) -> Value {
    json!({
        "type": ChunkKind::Finish.as_str(),
        "reason": {"kind": "error", "failure": {"code": code, "message": message}},
    })
}

/// The text a chunk adds to the reply, and whether it is reasoning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextDelta<'a> {
    pub reasoning: bool,
    pub text: &'a str,
}

/// The text delta of a chunk, if it is one: dsh's `text-delta` / `reasoning-delta`, this
/// project's older `{type:"text"|"reasoning", text}`, an untyped `{text | delta}` or a bare
/// string. Block boundaries, usage, finish, tool-call arguments and unknown types add no text.
pub fn text_delta(chunk: &Value) -> Option<TextDelta<'_>> {
    let map = match chunk {
        Value::String(text) => {
            return Some(TextDelta {
                reasoning: false,
                text,
            });
        }
        Value::Object(map) => map,
        _ => return None,
    };
    let kind = match map.get("type") {
        None => ChunkKind::LegacyText,
        Some(Value::String(kind)) => ChunkKind::from(kind.as_str()),
        Some(_) => return None,
    };
    let reasoning = match kind {
        ChunkKind::TextDelta | ChunkKind::LegacyText => false,
        ChunkKind::ReasoningDelta | ChunkKind::LegacyReasoning => true,
        _ => return None,
    };
    let text = map
        .get("text")
        .or_else(|| map.get("delta"))
        .and_then(Value::as_str)?;
    Some(TextDelta { reasoning, text })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn text_delta_table() {
        let text = |t| {
            Some(TextDelta {
                reasoning: false,
                text: t,
            })
        };
        let reasoning = |t| {
            Some(TextDelta {
                reasoning: true,
                text: t,
            })
        };
        let cases = [
            (delta(0, BlockType::Text, "a"), text("a")),
            (delta(1, BlockType::Reasoning, "r"), reasoning("r")),
            (json!({"type": "text", "text": "old"}), text("old")),
            (
                json!({"type": "reasoning", "text": "why"}),
                reasoning("why"),
            ),
            (json!({"delta": "d"}), text("d")),
            (json!("bare"), text("bare")),
            (block_start(0, BlockType::Text), None),
            (block_end(0, &ContentBlock::text("a")), None),
            (usage(1, 2), None),
            (finish_stop(), None),
            (
                json!({"type": "tool-call-delta", "index": 0, "id": "c", "argumentsDelta": "{"}),
                None,
            ),
            (json!({"type": "reasoning-summary", "text": "x"}), None),
            (json!({"type": 3, "text": "x"}), None),
            (json!(7), None),
        ];
        for (chunk, want) in cases {
            assert_eq!(text_delta(&chunk), want, "{chunk}");
        }
    }

    #[test]
    fn builders_use_dsh_shapes() {
        assert_eq!(
            block_start(2, BlockType::Reasoning),
            json!({"type": "block-start", "index": 2, "blockType": "reasoning"})
        );
        assert_eq!(
            block_end(0, &ContentBlock::text("hi")),
            json!({"type": "block-end", "index": 0, "block": {"type": "text", "text": "hi"}})
        );
        assert_eq!(
            usage(3, 4),
            json!({"type": "usage", "usage": {"inputTokens": 3, "outputTokens": 4}})
        );
        assert_eq!(
            finish_stop(),
            json!({"type": "finish", "reason": {"kind": "stop"}})
        );
    }
}
