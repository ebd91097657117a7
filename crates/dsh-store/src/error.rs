//! The session layer's error type for writers (readers use [`QueryError`]).

use std::path::PathBuf;

use super::fold::FoldError;
use super::query_error::QueryError;

/// Why opening or appending to a session failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Not found, invalid id, corrupt log or I/O failure: the same cases a reader reports.
    #[error(transparent)]
    Query(#[from] QueryError),
    /// Another writer (this or another process) holds the session's lock.
    #[error("session {id:?} is busy: another writer has it open ({path})", path = path.display())]
    Busy { id: String, path: PathBuf },
    /// The store holds logs of both encodings; dsh would refuse it, and writing either
    /// encoding would keep it that way.
    #[error(
        "the store {root} holds both plain and zstd session logs (e.g. {plain} and {zstd}); \
         dsh refuses such a store, so it is not written: move one kind elsewhere",
        root = root.display(), plain = plain.display(), zstd = zstd.display()
    )]
    MixedEncoding {
        root: PathBuf,
        plain: PathBuf,
        zstd: PathBuf,
    },
    /// `store.compression` names one encoding but the store already uses the other.
    #[error(
        "store.compression = \"{setting}\" but the store already holds {path}, a log of the \
         other encoding; writing would give it two encodings (use \"auto\" or a separate store)",
        path = path.display()
    )]
    EncodingMismatch {
        setting: &'static str,
        path: PathBuf,
    },
    /// The batch would make the log invalid; nothing was written.
    #[error("invalid event for session {id:?}: {reason}")]
    InvalidEvent { id: String, reason: String },
    /// The batch breaks a rule of dsh's log format (docs/session-store.md: the rule book):
    /// a bug in the caller; nothing was written.
    #[error(
        "refused to write to session {id:?}: {violation}{}",
        if *more > 0 { format!(" (and {more} more)") } else { String::new() }
    )]
    RuleBroken {
        id: String,
        violation: Box<crate::rule_book::Violation>,
        /// Further violations of the same batch.
        more: usize,
    },
    /// The event's line would be longer than `store.max_line_bytes`, so the reader would
    /// refuse it; nothing was written.
    #[error(
        "refused to write to session {id:?}: event seq {seq} is a {len}-byte line, more than \
         store.max_line_bytes ({max})"
    )]
    LineTooLong {
        id: String,
        seq: u64,
        len: u64,
        max: u64,
    },
    /// The event's line would be too dense for the reader to decode within its memory
    /// budget (`crate::line_cost`), so it would read back as a placeholder; nothing was
    /// written.
    #[error(
        "refused to write to session {id:?}: event seq {seq} is a {len}-byte line of so many \
         small values that reading it back would cost more than {}× its bytes",
        crate::line_cost::DECODE_FACTOR
    )]
    LineTooDense { id: String, seq: u64, len: u64 },
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
