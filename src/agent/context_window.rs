//! The window of the surface sent to the model (docs/agent.md): the newest messages whose
//! estimated size fits the provider's context window, so a session that outgrew the model is
//! sent trimmed (with a notice) instead of whole, and a request never holds more than fits.

use dsh_store::{ContentBlock, Message};

use dsh_reference::budget_plan::message_tokens;

/// Share of the context window kept for the model's reply.
const REPLY_SHARE_DIVISOR: u64 = 8;

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
    message_tokens(bytes as u64)
}

/// The estimate of one message holding `text` (bytes / 3 + 4: the reference layer's budget
/// plan counts the same way).
pub(crate) fn estimate_text_tokens(text: &str) -> u64 {
    message_tokens(text.len() as u64)
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
