//! The session layer's error type for writers (readers use [`QueryError`]).

use std::path::PathBuf;

use super::fold::FoldError;
use super::query::QueryError;

/// Why opening or appending to a session failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Not found, invalid id, corrupt log or I/O failure: the same cases a reader reports.
    #[error(transparent)]
    Query(#[from] QueryError),
    /// Another writer (this or another process) holds the session's lock.
    #[error("session {id:?} is busy: another writer has it open ({path})", path = path.display())]
    Busy { id: String, path: PathBuf },
    /// dsh's compressed logs are read only.
    #[error("session {id:?} is a compressed dsh log and cannot be written ({path})", path = path.display())]
    ReadOnly { id: String, path: PathBuf },
    /// The batch would make the log invalid; nothing was written.
    #[error("invalid event for session {id:?}: {reason}")]
    InvalidEvent { id: String, reason: String },
    /// A failed write could not be rolled back; the writer refuses further appends.
    #[error("session {id:?}: writer disabled after an unrecoverable write failure")]
    Poisoned { id: String },
}

impl StoreError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        StoreError::Query(QueryError::Io {
            path: path.into(),
            source,
        })
    }

    pub(crate) fn fold(id: &str, err: &FoldError) -> Self {
        StoreError::InvalidEvent {
            id: id.to_owned(),
            reason: err.to_string(),
        }
    }
}
