//! A provider reply as content blocks, and the dsh-shaped stream chunks that log it:
//! `block-start`, then `text-delta` / `reasoning-delta` per delta, `block-end` with the
//! finished block whenever the kind of content changes and at the end.

use serde_json::Value;

use dsh_store::ContentBlock;
use dsh_store::chunk::{self, BlockType};

/// The blocks of one reply so far, in stream order; the last one is still open.
#[derive(Debug, Default)]
pub(crate) struct ReplyBlocks {
    blocks: Vec<(BlockType, String)>,
    /// Whether the last block has had its `block-end`.
    closed: bool,
}

impl ReplyBlocks {
    /// Add a delta of `kind`; returns the chunks to log for it (a new block opens when the
    /// kind differs from the open block's).
    pub(crate) fn push(&mut self, kind: BlockType, delta: &str) -> Vec<Value> {
        let mut chunks = Vec::with_capacity(3);
        let open = !self.closed && self.blocks.last().is_some_and(|(k, _)| *k == kind);
        if !open {
            chunks.extend(self.close());
            self.blocks.push((kind, String::new()));
            self.closed = false;
            chunks.push(chunk::block_start(self.index(), kind));
        }
        if let Some((_, text)) = self.blocks.last_mut() {
            text.push_str(delta);
        }
        chunks.push(chunk::delta(self.index(), kind, delta));
        chunks
    }

    /// The `block-end` of the open block, if there is one.
    pub(crate) fn close(&mut self) -> Option<Value> {
        if self.closed {
            return None;
        }
        let (kind, text) = self.blocks.last()?;
        self.closed = true;
        Some(chunk::block_end(self.index(), &block(*kind, text)))
    }

    fn index(&self) -> u64 {
        self.blocks.len().saturating_sub(1) as u64
    }

    /// All text (not reasoning) of the reply.
    pub(crate) fn text(&self) -> String {
        self.blocks
            .iter()
            .filter(|(k, _)| *k == BlockType::Text)
            .map(|(_, t)| t.as_str())
            .collect()
    }

    /// The assistant message content: the blocks in stream order, ending in a text block
    /// (an empty one when the reply had no text).
    pub(crate) fn content(self) -> Vec<ContentBlock> {
        let has_text = self.blocks.iter().any(|(k, _)| *k == BlockType::Text);
        let mut content: Vec<ContentBlock> = self
            .blocks
            .into_iter()
            .map(|(kind, text)| block(kind, &text))
            .collect();
        if !has_text {
            content.push(ContentBlock::text(""));
        }
        content
    }
}

fn block(kind: BlockType, text: &str) -> ContentBlock {
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
        assert_eq!(blocks.close(), None);
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
}
