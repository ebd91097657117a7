//! The window of the surface sent to the model (docs/agent.md): the newest messages whose
//! estimated size fits the provider's context window, so a session that outgrew the model is
//! sent trimmed (with a notice) instead of whole, and a request never holds more than fits.

use dsh_store::{ContentBlock, Message};

/// Share of the context window kept for the model's reply.
const REPLY_SHARE_DIVISOR: u64 = 8;
/// Estimated tokens of a message's framing (role, separators).
const MESSAGE_OVERHEAD_TOKENS: u64 = 4;
/// Bytes per token assumed for the estimate (a conservative 3, below English's ~4).
const BYTES_PER_TOKEN: u64 = 3;

/// Tokens available for the request's messages in a context window of `context_tokens`.
pub(crate) fn input_budget(context_tokens: u64) -> u64 {
    context_tokens.saturating_sub(context_tokens / REPLY_SHARE_DIVISOR)
}

/// A cheap upper-leaning estimate of a message's tokens (from its bytes, no tokenizer).
pub(crate) fn estimate_tokens(message: &Message) -> u64 {
    let bytes: usize = message
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::Text { text, .. } | ContentBlock::Reasoning { text, .. } => text.len(),
            ContentBlock::Other(map) => serde_json::to_string(map).map_or(0, |s| s.len()),
        })
        .sum();
    (bytes as u64).div_ceil(BYTES_PER_TOKEN) + MESSAGE_OVERHEAD_TOKENS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(n: usize) -> Message {
        Message::user_text("x".repeat(n))
    }

    #[test]
    fn estimates_follow_bytes_and_the_reply_keeps_an_eighth() {
        // 30 / 3 + 4 = 14 tokens; 31 bytes round up.
        assert_eq!(estimate_tokens(&text(30)), 14);
        assert_eq!(estimate_tokens(&text(31)), 15);
        assert_eq!(input_budget(65_536), 57_344);
    }
}
