//! A log file's identity, for revalidating what was read from it (a leaf: it depends on
//! nothing else in the crate, so the listing, the index file and the read contract can all
//! use it without depending on each other).

use std::fs;
use std::time::SystemTime;

/// A file's identity for revalidation: length, mtime and (on Unix) device, inode and ctime,
/// so a log replaced by another file is never mistaken for the old one having grown, and a
/// log rewritten in place with its mtime set back still differs (nobody can set a ctime).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    pub len: u64,
    pub mtime: Option<SystemTime>,
    pub file_id: Option<(u64, u64)>,
    /// Change time as (seconds, nanoseconds) since the epoch.
    pub ctime: Option<(i64, i64)>,
}

impl Stamp {
    pub fn of(meta: &fs::Metadata) -> Self {
        #[cfg(unix)]
        let (file_id, ctime) = {
            use std::os::unix::fs::MetadataExt;
            (
                Some((meta.dev(), meta.ino())),
                Some((meta.ctime(), meta.ctime_nsec())),
            )
        };
        #[cfg(not(unix))]
        let (file_id, ctime) = (None, None);
        Stamp {
            len: meta.len(),
            mtime: meta.modified().ok(),
            file_id,
            ctime,
        }
    }

    /// Whether `self` can be the same file as `earlier` (same inode where known).
    pub fn same_file(&self, earlier: &Stamp) -> bool {
        self.file_id == earlier.file_id
    }
}
