//! The agent layer's error type, with stable codes for the UI and `send`.

use crate::llm::LlmError;
use dsh_store::FoldError;
use dsh_store::StoreError;

/// Why a turn, compaction or title write failed.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("could not write the session log: {0}")]
    Store(#[from] StoreError),
    #[error("the session log is corrupt: {0}")]
    Fold(#[from] FoldError),
    #[error("{0}")]
    Llm(#[from] LlmError),
    #[error("cancelled")]
    Cancelled,
    #[error("the model returned an empty summary")]
    EmptySummary,
    #[error("nothing to compact: the conversation is empty")]
    NothingToCompact,
    #[error("a title needs some visible text")]
    EmptyTitle,
    #[error("the session log cannot be read back: {0}")]
    LogRead(String),
    #[error("agent background task failed: {0}")]
    Task(String),
    #[error("the {provider} provider cannot switch models")]
    ModelFixed { provider: String },
}

impl AgentError {
    /// Stable code; provider errors keep the provider's code (`LLM_…`).
    pub fn code(&self) -> &'static str {
        match self {
            AgentError::Store(StoreError::RuleBroken { .. }) => "AGENT_LOG_RULE_BROKEN",
            AgentError::Store(StoreError::LineTooLong { .. }) => "AGENT_LOG_LINE_TOO_LONG",
            AgentError::Store(StoreError::LineTooDense { .. }) => "AGENT_LOG_LINE_TOO_DENSE",
            AgentError::Store(_) => "AGENT_LOG_WRITE_FAILED",
            AgentError::Fold(_) => "AGENT_LOG_CORRUPT",
            AgentError::Llm(e) => e.code(),
            AgentError::Cancelled => "AGENT_CANCELLED",
            AgentError::EmptySummary => "AGENT_EMPTY_SUMMARY",
            AgentError::NothingToCompact => "AGENT_NOTHING_TO_COMPACT",
            AgentError::EmptyTitle => "AGENT_EMPTY_TITLE",
            AgentError::LogRead(_) => "AGENT_LOG_READ_FAILED",
            AgentError::Task(_) => "AGENT_TASK_FAILED",
            AgentError::ModelFixed { .. } => "AGENT_MODEL_FIXED",
        }
    }
}
