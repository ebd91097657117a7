//! The provider contract (docs/llm-providers.md): a chat request in, a stream of text, reasoning and usage
//! events out. Shared by the offline and OpenAI-compatible providers and by the agent.

use std::time::Duration;

use futures_util::stream::BoxStream;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::error::LlmError;
use dsh_store::{ContentBlock, Message, Role, Source};

/// What the model is asked: folded-surface messages in model order, and the tools it may
/// call (none unless the agent offers some: docs/agent.md, tools).
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
}

impl ChatRequest {
    /// A request of `messages` offering no tool.
    pub fn new(messages: Vec<Message>) -> Self {
        ChatRequest {
            messages,
            tools: Vec::new(),
        }
    }

    /// The same request offering `tools`.
    #[must_use]
    pub fn with_tools(mut self, tools: Vec<ToolSpec>) -> Self {
        self.tools = tools;
        self
    }
}

/// A tool offered to the model: its name, what it does, and a JSON Schema of its arguments
/// (sent as an `OpenAI` `function` tool).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: serde_json::Value,
}

/// One streamed piece of a tool call. A provider numbers the calls of one reply (`index`);
/// the first piece of a call carries its id and name, every piece a fragment of its
/// arguments' JSON text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCallDelta {
    pub index: u64,
    pub id: Option<String>,
    pub name: Option<String>,
    pub arguments: String,
}

/// One increment of a streamed reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamEvent {
    /// A piece of the visible answer.
    Text(String),
    /// A piece of the model's reasoning (shown dimmed; sent back only with the tool calls
    /// of its reply, as `DeepSeek`'s thinking mode asks).
    Reasoning(String),
    /// A piece of a tool call the model makes.
    ToolCall(ToolCallDelta),
    /// Token counts; may arrive once, at the end.
    Usage(Usage),
}

/// Token accounting of one model call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// Context window assumed for a provider that states none (tokens): 64 Ki, what
/// the chat models of `DeepSeek` accept and far below what larger models do.
pub const DEFAULT_CONTEXT_TOKENS: u64 = 65_536;

/// Default of `[model] max_reply_bytes`: the most UTF-8 bytes of text plus reasoning one
/// reply may stream (4 MiB).
pub const DEFAULT_MAX_REPLY_BYTES: u64 = 4 << 20;

/// Default of `[model] max_turn_secs`: how long one turn's model calls may take in all.
pub const DEFAULT_MAX_TURN: Duration = Duration::from_secs(600);

/// Bounds of the replies of one turn (docs/llm-providers.md: reply bounds). The agent cuts a
/// stream that reaches either, keeps the partial reply and ends the turn with an error
/// (`LLM_REPLY_TOO_LARGE`, `LLM_TURN_DEADLINE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplyLimits {
    /// UTF-8 bytes of reply text plus reasoning.
    pub max_reply_bytes: u64,
    /// From the turn's start to the end of its last model call.
    pub max_turn: Duration,
}

impl Default for ReplyLimits {
    fn default() -> Self {
        ReplyLimits {
            max_reply_bytes: DEFAULT_MAX_REPLY_BYTES,
            max_turn: DEFAULT_MAX_TURN,
        }
    }
}

/// A chat model. `stream` returns at once; the work happens as the stream is polled, and
/// dropping the stream abandons the call. Cancelling `cancel` ends the stream promptly with
/// [`LlmError::Cancelled`].
pub trait Provider: Send + Sync {
    /// `"offline"` or `"openai"`.
    fn name(&self) -> &str;
    /// The model name sent to (or reported by) the provider.
    fn model(&self) -> &str;
    /// How many tokens one request may hold (input and reply); the agent sends a surface
    /// that no longer fits as a window of its newest messages.
    fn context_tokens(&self) -> u64 {
        DEFAULT_CONTEXT_TOKENS
    }
    /// How big a reply may grow and how long a turn may take (the defaults unless
    /// configured).
    fn reply_limits(&self) -> ReplyLimits {
        ReplyLimits::default()
    }
    /// Start one model call.
    fn stream(
        &self,
        request: ChatRequest,
        cancel: CancellationToken,
    ) -> BoxStream<'static, Result<StreamEvent, LlmError>>;
    /// The same provider asking for `model` instead (`/model NAME`); `None` when it has a
    /// single fixed model.
    fn with_model(&self, model: &str) -> Option<std::sync::Arc<dyn Provider>> {
        let _ = model;
        None
    }
    /// Model names worth offering (the current one first).
    fn known_models(&self) -> Vec<String> {
        vec![self.model().to_owned()]
    }
}

/// The plugin name on the instruction message that [`summarize_request`] appends.
pub const SUMMARIZE_PLUGIN: &str = "compact-request";

/// The compaction instruction, appended as the last user message of a summary request.
pub const SUMMARIZE_INSTRUCTION: &str = "Summarize the conversation above so it can replace it \
in a fresh context. Keep decisions, facts, open questions, names, file paths and the user's \
goals; drop pleasantries. Treat any referenced-session snapshots as background only. Reply with \
the summary alone, as plain text.";

/// The compaction request (docs/agent.md `/compact`): the surface messages followed by the
/// summarize instruction. Every provider answers it with the summary text.
pub fn summarize_request(mut messages: Vec<Message>) -> ChatRequest {
    messages.push(Message::new(
        Role::User,
        vec![ContentBlock::text(SUMMARIZE_INSTRUCTION)],
        Source::plugin(SUMMARIZE_PLUGIN),
    ));
    ChatRequest::new(messages)
}

/// Whether `request` was built by [`summarize_request`] (its last message is the instruction).
pub fn is_summarize_request(request: &ChatRequest) -> bool {
    request.messages.last().is_some_and(|m| {
        m.role == Role::User
            && m.source.as_ref().is_some_and(|s| {
                s.kind() == Some("plugin")
                    && s.0.get("plugin").and_then(serde_json::Value::as_str)
                        == Some(SUMMARIZE_PLUGIN)
            })
            && m.joined_text() == SUMMARIZE_INSTRUCTION
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summarize_request_appends_the_instruction_last() {
        let history = vec![Message::user_text("hello")];
        let req = summarize_request(history.clone());
        assert_eq!(req.messages.len(), 2);
        assert_eq!(req.messages.first(), history.first());
        assert!(is_summarize_request(&req));
    }

    #[test]
    fn ordinary_requests_are_not_summary_requests() {
        let cases = [
            ChatRequest::new(vec![]),
            ChatRequest::new(vec![Message::user_text(SUMMARIZE_INSTRUCTION)]),
            ChatRequest::new(vec![Message::new(
                Role::User,
                vec![ContentBlock::text("something else")],
                Source::plugin(SUMMARIZE_PLUGIN),
            )]),
        ];
        for req in cases {
            assert!(!is_summarize_request(&req), "{req:?}");
        }
    }

    #[test]
    fn usage_serializes_camel_case() {
        let u = Usage {
            input_tokens: 3,
            output_tokens: 4,
        };
        assert_eq!(
            serde_json::to_value(u).unwrap(),
            serde_json::json!({"inputTokens": 3, "outputTokens": 4})
        );
    }
}
