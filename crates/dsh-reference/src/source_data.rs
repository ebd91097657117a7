//! The source object of the prepared context, `{sessionId, label, cwd, capturedThroughSeq,
//! conversation}`, as retention builds it and the JSON writer writes it: a leaf, so both use
//! it without importing each other.

use super::projection::TurnRole;

/// One `{role, text}` entry of a retained conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConversationTurn {
    pub role: TurnRole,
    pub text: String,
}

/// The source object `{sessionId, label, cwd, capturedThroughSeq, conversation}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceData {
    pub session_id: String,
    pub label: String,
    pub cwd: Option<String>,
    pub captured_through_seq: Option<u64>,
    pub conversation: Vec<ConversationTurn>,
}
