//! The reference layer's error type (docs/references.md: errors): a stable code plus a human message;
//! `READ_FAILED` keeps the storage error that caused it.

use std::fmt;
use std::sync::Arc;

use dsh_store::QueryError;

/// Stable error codes of the session-reference service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    InvalidConfig,
    InvalidReference,
    SelfReference,
    TooMany,
    ReadFailed,
    BudgetExceeded,
    Cancelled,
    /// A text references sessions but the host has no reference service to attach them.
    Unavailable,
    /// A mentioned file cannot be attached (binary, oversized, outside the working
    /// directory, not a regular file, unreadable).
    FileRefused,
    /// More distinct files than `max_files`.
    TooManyFiles,
}

impl ErrorCode {
    /// The wire spelling, e.g. `SESSION_REFERENCE_TOO_MANY`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidConfig => "SESSION_REFERENCE_INVALID_CONFIG",
            ErrorCode::InvalidReference => "SESSION_REFERENCE_INVALID_REFERENCE",
            ErrorCode::SelfReference => "SESSION_REFERENCE_SELF_REFERENCE",
            ErrorCode::TooMany => "SESSION_REFERENCE_TOO_MANY",
            ErrorCode::ReadFailed => "SESSION_REFERENCE_READ_FAILED",
            ErrorCode::BudgetExceeded => "SESSION_REFERENCE_BUDGET_EXCEEDED",
            ErrorCode::Cancelled => "SESSION_REFERENCE_CANCELLED",
            ErrorCode::Unavailable => "SESSION_REFERENCE_UNAVAILABLE",
            ErrorCode::FileRefused => "FILE_REFERENCE_REFUSED",
            ErrorCode::TooManyFiles => "FILE_REFERENCE_TOO_MANY",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A session-reference failure: code, human message and (for `READ_FAILED`) the cause.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct ReferenceError {
    pub code: ErrorCode,
    pub message: String,
    /// The storage error behind a `READ_FAILED`.
    #[source]
    pub source: Option<Arc<QueryError>>,
}

impl ReferenceError {
    /// An error with no underlying cause.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ReferenceError {
            code,
            message: message.into(),
            source: None,
        }
    }

    /// `INVALID_CONFIG` naming the offending key.
    pub fn invalid_config(key: &str, rule: &str, got: i64) -> Self {
        Self::new(
            ErrorCode::InvalidConfig,
            format!("invalid reference setting `{key}`: {rule} (got {got})"),
        )
    }

    /// `INVALID_REFERENCE` with a reason.
    pub fn invalid_reference(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidReference, message)
    }

    /// `READ_FAILED` for session `id`, keeping `cause`.
    pub fn read_failed(id: &str, cause: QueryError) -> Self {
        ReferenceError {
            code: ErrorCode::ReadFailed,
            message: format!("could not read referenced session {id:?}: {cause}"),
            source: Some(Arc::new(cause)),
        }
    }

    /// `READ_FAILED` for the session list itself, keeping `cause`.
    pub fn list_failed(cause: QueryError) -> Self {
        ReferenceError {
            code: ErrorCode::ReadFailed,
            message: format!("could not list sessions: {cause}"),
            source: Some(Arc::new(cause)),
        }
    }

    /// `READ_FAILED` for a storage task that died (it panicked or was shut down).
    pub fn task_failed(err: &tokio::task::JoinError) -> Self {
        Self::new(
            ErrorCode::ReadFailed,
            format!("reading the session store failed: {err}"),
        )
    }

    /// `CANCELLED`.
    pub fn cancelled() -> Self {
        Self::new(
            ErrorCode::Cancelled,
            "session reference request was cancelled",
        )
    }

    /// The underlying storage error, if any.
    pub fn query_error(&self) -> Option<&QueryError> {
        self.source.as_deref()
    }
}
