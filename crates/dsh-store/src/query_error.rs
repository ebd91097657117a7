//! Why a read of the store failed (docs/session-store.md: session query). A leaf: every
//! reader of the store returns it, and it depends on nothing else in the crate.

use std::path::PathBuf;

/// Why a query failed. Not-found is distinct from damage.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    #[error("session {id:?} not found")]
    NotFound { id: String },
    #[error("invalid session id {id:?}: {reason}")]
    InvalidId { id: String, reason: String },
    #[error("{path}:{line}: corrupt session log: {reason}", path = path.display())]
    Corrupt {
        path: PathBuf,
        line: u64,
        reason: String,
    },
    /// The same id has logs under two project directories; neither is picked silently.
    #[error(
        "session {id:?} has two logs, {first} and {second}; remove or rename one",
        first = first.display(),
        second = second.display()
    )]
    Duplicate {
        id: String,
        first: PathBuf,
        second: PathBuf,
    },
    #[error("{path}: {source}", path = path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}
