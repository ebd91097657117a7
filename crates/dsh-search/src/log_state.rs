//! What the index remembers of each log: its identity and length when read, and where the
//! read stopped, so the next update knows whether the log is unchanged, only grew, or must
//! be read again.

use std::time::UNIX_EPOCH;

use dsh_store::listing::Stamp;
use dsh_store::reader::{LogFormat, ScanPos};
use serde::{Deserialize, Serialize};

/// One log's state as recorded with its document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogState {
    /// The log's key (path relative to the store root).
    pub path: String,
    pub len: u64,
    /// Modification time in nanoseconds since the epoch, when known.
    pub mtime_ns: Option<u128>,
    /// Device and inode, when known.
    pub file_id: Option<(u64, u64)>,
    pub zstd: bool,
    /// `(readable_len, next_seq, line)` of a clean read of a plain log.
    pub resume: Option<(u64, u64, u64)>,
    /// The log could not be read (corrupt): nothing of it is indexed until it changes.
    pub failed: bool,
    /// The foreign source the log belongs to (`claude-code`, `codex`); absent for dsh.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
}

/// How a log on disk compares with its recorded state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    Unchanged,
    /// The same file, not shorter, cleanly read before: continue from here (the recorded
    /// length is taken before a read; where the read stopped is what counts).
    Grew(ScanPos),
    /// Anything else: read it whole.
    Other,
}

fn mtime_ns(stamp: &Stamp) -> Option<u128> {
    stamp
        .mtime
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_nanos())
}

impl LogState {
    /// The state of a log read now.
    pub fn new(
        path: &str,
        stamp: &Stamp,
        format: LogFormat,
        resume: Option<ScanPos>,
        failed: bool,
    ) -> Self {
        LogState {
            path: path.to_owned(),
            len: stamp.len,
            mtime_ns: mtime_ns(stamp),
            file_id: stamp.file_id,
            zstd: format == LogFormat::Zstd,
            resume: resume.map(|p| (p.readable_len, p.next_seq, p.line)),
            failed,
            origin: None,
        }
    }

    /// The same state, of a log of the foreign source `origin`.
    pub fn of_origin(mut self, origin: &dsh_foreign::Origin) -> Self {
        self.origin = origin.is_foreign().then(|| origin.as_str().to_owned());
        self
    }

    /// The origin of the log: dsh unless a foreign source is recorded (one this version does
    /// not know is `Origin::Other`, which no source of this index serves).
    pub fn origin(&self) -> dsh_foreign::Origin {
        match self.origin.as_deref() {
            None => dsh_foreign::Origin::Dsh,
            Some(name) => dsh_foreign::Origin::parse(name),
        }
    }

    /// Compare with the log as it is now.
    pub fn change(&self, stamp: &Stamp, format: LogFormat) -> Change {
        let same_file = self.file_id == stamp.file_id && self.zstd == (format == LogFormat::Zstd);
        if same_file && self.len == stamp.len && self.mtime_ns == mtime_ns(stamp) {
            return Change::Unchanged;
        }
        match self.resume {
            Some((readable_len, next_seq, line))
                if same_file
                    && !self.zstd
                    && !self.failed
                    && self.file_id.is_some()
                    && stamp.len >= self.len
                    && stamp.len >= readable_len =>
            {
                Change::Grew(ScanPos {
                    readable_len,
                    next_seq,
                    line,
                })
            }
            _ => Change::Other,
        }
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        serde_json::from_slice(bytes).ok()
    }
}
