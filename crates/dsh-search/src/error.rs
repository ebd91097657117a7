//! Errors of the search layer, each with a stable code for machine output.

use std::path::PathBuf;

/// Why a search or an index update failed.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    /// The query cannot be understood (for example an unbalanced quote).
    #[error("invalid query: {reason}")]
    InvalidQuery { reason: String },
    /// The index directory cannot be created, opened or written.
    #[error("search index at {path}: {reason}", path = path.display())]
    IndexUnavailable { path: PathBuf, reason: String },
    /// The index directory is not one this project may use: it holds files that are not
    /// an index of ours, or it lies inside, at or above the store. Nothing in it was
    /// touched.
    #[error("search index directory {path} refused: {reason}", path = path.display())]
    IndexDirRefused { path: PathBuf, reason: String },
    /// The search engine failed on an opened index.
    #[error("search index: {0}")]
    Engine(#[from] tantivy::TantivyError),
    /// The store could not be listed.
    #[error("session store: {0}")]
    Store(#[from] dsh_store::QueryError),
    /// The caller cancelled the operation.
    #[error("cancelled")]
    Cancelled,
}

/// Stable codes of [`SearchError`] variants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    InvalidQuery,
    IndexUnavailable,
    IndexDirRefused,
    Engine,
    Store,
    Cancelled,
}

impl ErrorCode {
    /// The code as printed in machine output.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidQuery => "SEARCH_INVALID_QUERY",
            ErrorCode::IndexUnavailable => "SEARCH_INDEX_UNAVAILABLE",
            ErrorCode::IndexDirRefused => "SEARCH_INDEX_DIR_REFUSED",
            ErrorCode::Engine => "SEARCH_ENGINE_FAILED",
            ErrorCode::Store => "SEARCH_STORE_UNREADABLE",
            ErrorCode::Cancelled => "SEARCH_CANCELLED",
        }
    }
}

impl SearchError {
    /// This error's stable code.
    pub fn code(&self) -> ErrorCode {
        match self {
            SearchError::InvalidQuery { .. } => ErrorCode::InvalidQuery,
            SearchError::IndexUnavailable { .. } => ErrorCode::IndexUnavailable,
            SearchError::IndexDirRefused { .. } => ErrorCode::IndexDirRefused,
            SearchError::Engine(_) => ErrorCode::Engine,
            SearchError::Store(_) => ErrorCode::Store,
            SearchError::Cancelled => ErrorCode::Cancelled,
        }
    }

    pub(crate) fn refused(path: &std::path::Path, reason: impl std::fmt::Display) -> Self {
        SearchError::IndexDirRefused {
            path: path.to_owned(),
            reason: reason.to_string(),
        }
    }

    pub(crate) fn unavailable(path: &std::path::Path, reason: impl std::fmt::Display) -> Self {
        SearchError::IndexUnavailable {
            path: path.to_owned(),
            reason: reason.to_string(),
        }
    }
}
