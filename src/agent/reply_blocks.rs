//! A provider reply as content blocks, and the dsh-shaped stream chunks that log it:
//! `block-start`, then `text-delta` / `reasoning-delta` / `tool-call-delta` per delta,
//! `block-end` with the finished block. A text or reasoning block ends when the kind of
//! content changes; tool-call blocks stay open until the reply ends (a provider may stream
//! the pieces of several calls in turn), as dsh's own translation of a stream does.

use serde_json::Value;

use crate::llm::ToolCallDelta;
use dsh_store::ContentBlock;
use dsh_store::chunk::{self, BlockType};
use dsh_store::tool_round::{ToolCallBlock, tool_call_block};

/// One block of the reply.
#[derive(Debug)]
enum Block {
    Prose {
        kind: BlockType,
        text: String,
        closed: bool,
    },
    Call {
        /// The provider's number for the call within the reply.
        provider_index: u64,
        id: String,
        name: String,
        arguments: String,
        closed: bool,
    },
}

impl Block {
    fn closed(&self) -> bool {
        match self {
            Block::Prose { closed, .. } | Block::Call { closed, .. } => *closed,
        }
    }

    fn content(&self) -> ContentBlock {
        match self {
            Block::Prose { kind, text, .. } => prose(*kind, text),
            Block::Call {
                id,
                name,
                arguments,
                ..
            } => tool_call_block(id, name, arguments),
        }
    }
}

/// The blocks of one reply so far, in stream order.
#[derive(Debug, Default)]
pub(crate) struct ReplyBlocks {
    blocks: Vec<Block>,
    /// The reply was cut short: its tool calls are not part of it.
    cut: bool,
}

impl ReplyBlocks {
    /// Add a text or reasoning delta of `kind`; returns the chunks to log for it (a new
    /// block opens when the newest open prose block is of another kind).
    pub(crate) fn push(&mut self, kind: BlockType, delta: &str) -> Vec<Value> {
        let mut chunks = Vec::with_capacity(3);
        let open = self
            .blocks
            .iter()
            .rposition(|b| matches!(b, Block::Prose { closed: false, .. }));
        let same = open.and_then(|i| match self.blocks.get(i) {
            Some(Block::Prose { kind: k, .. }) if *k == kind => Some(i),
            _ => None,
        });
        let at = if let Some(i) = same {
            i
        } else {
            if let Some(i) = open {
                chunks.extend(self.close_at(i));
            }
            self.blocks.push(Block::Prose {
                kind,
                text: String::new(),
                closed: false,
            });
            let i = self.blocks.len() - 1;
            chunks.push(chunk::block_start(i as u64, kind));
            i
        };
        if let Some(Block::Prose { text, .. }) = self.blocks.get_mut(at) {
            text.push_str(delta);
        }
        chunks.push(chunk::delta(at as u64, kind, delta));
        chunks
    }

    /// Add a piece of a tool call; returns the chunks to log for it. The call's first piece
    /// opens its block; its id is the provider's (`fallback_id()` when the provider sent
    /// none with the first piece), its name the first one sent.
    pub(crate) fn push_call(
        &mut self,
        delta: &ToolCallDelta,
        fallback_id: impl FnOnce() -> String,
    ) -> Vec<Value> {
        let mut chunks = Vec::with_capacity(2);
        let found = self.blocks.iter().position(|b| {
            matches!(b, Block::Call { provider_index, closed: false, .. } if *provider_index == delta.index)
        });
        let at = if let Some(i) = found {
            i
        } else {
            self.blocks.push(Block::Call {
                provider_index: delta.index,
                id: delta.id.clone().unwrap_or_else(fallback_id),
                name: String::new(),
                arguments: String::new(),
                closed: false,
            });
            let i = self.blocks.len() - 1;
            chunks.push(chunk::tool_call_start(i as u64));
            i
        };
        let Some(Block::Call {
            id,
            name,
            arguments,
            ..
        }) = self.blocks.get_mut(at)
        else {
            return chunks;
        };
        let named = match &delta.name {
            Some(n) if name.is_empty() => {
                n.clone_into(name);
                Some(n.as_str())
            }
            _ => None,
        };
        arguments.push_str(&delta.arguments);
        chunks.push(chunk::tool_call_delta(
            at as u64,
            id,
            named,
            &delta.arguments,
        ));
        chunks
    }

    /// The `block-end` of block `i`, if it is open.
    fn close_at(&mut self, i: usize) -> Option<Value> {
        let block = self.blocks.get_mut(i)?;
        if block.closed() {
            return None;
        }
        match block {
            Block::Prose { closed, .. } | Block::Call { closed, .. } => *closed = true,
        }
        Some(chunk::block_end(i as u64, &block.content()))
    }

    /// The `block-end`s of every open block, in block order.
    pub(crate) fn close(&mut self) -> Vec<Value> {
        (0..self.blocks.len())
            .filter_map(|i| self.close_at(i))
            .collect()
    }

    /// The `block-end`s of a reply cut short: its prose blocks close with what arrived; its
    /// tool calls are dropped (their arguments may be cut; dsh keeps no call of an
    /// interrupted reply, since a call without its result cannot be sent again).
    pub(crate) fn close_cut(&mut self) -> Vec<Value> {
        self.cut = true;
        let prose: Vec<usize> = (0..self.blocks.len())
            .filter(|&i| matches!(self.blocks.get(i), Some(Block::Prose { .. })))
            .collect();
        prose.into_iter().filter_map(|i| self.close_at(i)).collect()
    }

    /// The blocks that are part of the reply (a cut reply's calls are not).
    fn kept(&self) -> impl Iterator<Item = &Block> {
        self.blocks
            .iter()
            .filter(|b| !(self.cut && matches!(b, Block::Call { .. })))
    }

    /// All text (not reasoning) of the reply.
    pub(crate) fn text(&self) -> String {
        self.blocks
            .iter()
            .filter_map(|b| match b {
                Block::Prose {
                    kind: BlockType::Text,
                    text,
                    ..
                } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The tool calls of the reply, in stream order.
    pub(crate) fn calls(&self) -> Vec<ToolCallBlock> {
        self.kept()
            .filter_map(|b| match b {
                Block::Call {
                    id,
                    name,
                    arguments,
                    ..
                } => Some(ToolCallBlock {
                    id: id.clone(),
                    name: name.clone(),
                    arguments: arguments.clone(),
                }),
                Block::Prose { .. } => None,
            })
            .collect()
    }

    /// The assistant message's content: the blocks in stream order; a reply with neither
    /// text nor a tool call ends in an empty text block.
    pub(crate) fn content(self) -> Vec<ContentBlock> {
        let has_text_or_call = self.kept().any(|b| {
            matches!(
                b,
                Block::Call { .. }
                    | Block::Prose {
                        kind: BlockType::Text,
                        ..
                    }
            )
        });
        let mut content: Vec<ContentBlock> = self.kept().map(Block::content).collect();
        if !has_text_or_call {
            content.push(ContentBlock::text(""));
        }
        content
    }
}

fn prose(kind: BlockType, text: &str) -> ContentBlock {
    match kind {
        BlockType::Text => ContentBlock::text(text),
        BlockType::Reasoning => ContentBlock::reasoning(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn a_reply_streams_as_dsh_blocks() {
        let mut blocks = ReplyBlocks::default();
        let mut chunks = blocks.push(BlockType::Reasoning, "think");
        chunks.extend(blocks.push(BlockType::Text, "Hel"));
        chunks.extend(blocks.push(BlockType::Text, "lo"));
        chunks.extend(blocks.close());
        assert_eq!(blocks.close(), Vec::<Value>::new());
        assert_eq!(
            chunks,
            vec![
                json!({"type": "block-start", "index": 0, "blockType": "reasoning"}),
                json!({"type": "reasoning-delta", "index": 0, "text": "think"}),
                json!({"type": "block-end", "index": 0, "block": {"type": "reasoning", "text": "think"}}),
                json!({"type": "block-start", "index": 1, "blockType": "text"}),
                json!({"type": "text-delta", "index": 1, "text": "Hel"}),
                json!({"type": "text-delta", "index": 1, "text": "lo"}),
                json!({"type": "block-end", "index": 1, "block": {"type": "text", "text": "Hello"}}),
            ]
        );
        assert_eq!(blocks.text(), "Hello");
        assert_eq!(
            blocks.content(),
            vec![
                ContentBlock::reasoning("think"),
                ContentBlock::text("Hello")
            ]
        );
    }

    #[test]
    fn a_reply_without_text_still_ends_in_a_text_block() {
        assert_eq!(
            ReplyBlocks::default().content(),
            vec![ContentBlock::text("")]
        );
        let mut blocks = ReplyBlocks::default();
        blocks.push(BlockType::Reasoning, "r");
        assert_eq!(
            blocks.content(),
            vec![ContentBlock::reasoning("r"), ContentBlock::text("")]
        );
    }

    fn piece(index: u64, id: Option<&str>, name: Option<&str>, args: &str) -> ToolCallDelta {
        ToolCallDelta {
            index,
            id: id.map(str::to_owned),
            name: name.map(str::to_owned),
            arguments: args.to_owned(),
        }
    }

    #[test]
    fn tool_calls_stream_as_dsh_tool_call_blocks() {
        let mut blocks = ReplyBlocks::default();
        let mut chunks = blocks.push(BlockType::Text, "Let me look.");
        chunks.extend(blocks.push_call(
            &piece(0, Some("c1"), Some("search_references"), "{\"ref\""),
            || "x".to_owned(),
        ));
        chunks.extend(blocks.push_call(
            &piece(1, Some("c2"), Some("search_references"), "{}"),
            || "x".to_owned(),
        ));
        chunks.extend(blocks.push_call(&piece(0, None, None, ":1}"), || "x".to_owned()));
        chunks.extend(blocks.close());
        assert_eq!(
            chunks,
            vec![
                json!({"type": "block-start", "index": 0, "blockType": "text"}),
                json!({"type": "text-delta", "index": 0, "text": "Let me look."}),
                json!({"type": "block-start", "index": 1, "blockType": "tool-call"}),
                json!({"type": "tool-call-delta", "index": 1, "id": "c1", "name": "search_references", "argumentsDelta": "{\"ref\""}),
                json!({"type": "block-start", "index": 2, "blockType": "tool-call"}),
                json!({"type": "tool-call-delta", "index": 2, "id": "c2", "name": "search_references", "argumentsDelta": "{}"}),
                json!({"type": "tool-call-delta", "index": 1, "id": "c1", "argumentsDelta": ":1}"}),
                json!({"type": "block-end", "index": 0, "block": {"type": "text", "text": "Let me look."}}),
                json!({"type": "block-end", "index": 1, "block": {"type": "tool-call", "id": "c1", "name": "search_references", "arguments": "{\"ref\":1}"}}),
                json!({"type": "block-end", "index": 2, "block": {"type": "tool-call", "id": "c2", "name": "search_references", "arguments": "{}"}}),
            ]
        );
        let calls: Vec<String> = blocks.calls().into_iter().map(|c| c.id).collect();
        assert_eq!(calls, ["c1", "c2"]);
        let content = blocks.content();
        assert_eq!(content.len(), 3);
        assert_eq!(content[0], ContentBlock::text("Let me look."));
    }

    #[test]
    fn a_cut_reply_keeps_its_prose_and_drops_its_calls() {
        let mut blocks = ReplyBlocks::default();
        blocks.push(BlockType::Text, "partial");
        blocks.push_call(&piece(0, None, Some("search_references"), "{\"re"), || {
            "fallback-1".to_owned()
        });
        let ends = blocks.close_cut();
        assert_eq!(
            ends,
            vec![
                json!({"type": "block-end", "index": 0, "block": {"type": "text", "text": "partial"}})
            ]
        );
        assert!(blocks.calls().is_empty());
        assert_eq!(blocks.content(), vec![ContentBlock::text("partial")]);
    }
}
