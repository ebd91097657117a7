//! The listing and title caches persisted next to the store (`<root>/.dsh-refs-index.json`),
//! so a fresh process lists sessions and filters by title without reading every log (docs/performance.md).
//!
//! The file only seeds the in-memory caches: every entry is revalidated by file metadata
//! exactly as a warm cache is (directory mtimes, log `(len, mtime, inode)`), so a stale,
//! foreign or damaged file can cost time but never change an answer. It is written to a temp
//! file and renamed into place; an unreadable or unparsable one is ignored and replaced.

use std::fs;
use std::io::Write;
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::event::SessionHeader;
use super::listing::Stamp;
use super::reader::{LogFormat, ScanPos};

/// File name inside the store root. A file (not a directory), so the store's project
/// listing never mistakes it for a project.
pub const INDEX_FILE: &str = ".dsh-refs-index.json";

/// Bumped whenever the layout changes; other versions are ignored.
const VERSION: u32 = 1;

/// A point in time as whole seconds and nanoseconds since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileTime(pub u64, pub u32);

impl FileTime {
    pub fn from_system(t: SystemTime) -> Option<Self> {
        let d = t.duration_since(UNIX_EPOCH).ok()?;
        Some(FileTime(d.as_secs(), d.subsec_nanos()))
    }

    pub fn to_system(self) -> Option<SystemTime> {
        UNIX_EPOCH.checked_add(Duration::new(self.0, self.1))
    }
}

/// [`Stamp`] as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StampRecord {
    pub len: u64,
    pub mtime: Option<FileTime>,
    pub file_id: Option<(u64, u64)>,
}

impl StampRecord {
    pub fn from_stamp(s: &Stamp) -> Option<Self> {
        let mtime = match s.mtime {
            Some(t) => Some(FileTime::from_system(t)?),
            None => None,
        };
        Some(StampRecord {
            len: s.len,
            mtime,
            file_id: s.file_id,
        })
    }

    pub fn to_stamp(self) -> Option<Stamp> {
        let mtime = match self.mtime {
            Some(t) => Some(t.to_system()?),
            None => None,
        };
        Some(Stamp {
            len: self.len,
            mtime,
            file_id: self.file_id,
        })
    }
}

/// One session directory of the header index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    pub name: String,
    pub dir_mtime: Option<FileTime>,
    /// Log file name (plain or `.zstd`) and its stamp when the header was read.
    pub log: Option<(String, StampRecord)>,
    pub header: Option<SessionHeader>,
}

/// One project directory of the header index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProjectRecord {
    pub name: String,
    pub mtime: Option<FileTime>,
    pub sessions: Vec<SessionRecord>,
}

/// The latest title of one log and where its scan stopped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TitleRecord {
    /// `project/session/log-file`, relative to the root.
    pub log: [String; 3],
    pub stamp: StampRecord,
    /// `(readable_len, next_seq, line)` of a clean scan that can be continued.
    pub resume: Option<(u64, u64, u64)>,
    pub title: Option<String>,
}

/// The whole file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexRecord {
    pub version: u32,
    pub root_mtime: Option<FileTime>,
    pub projects: Vec<ProjectRecord>,
    pub titles: Vec<TitleRecord>,
}

impl IndexRecord {
    pub fn new(
        root_mtime: Option<FileTime>,
        projects: Vec<ProjectRecord>,
        titles: Vec<TitleRecord>,
    ) -> Self {
        IndexRecord {
            version: VERSION,
            root_mtime,
            projects,
            titles,
        }
    }
}

/// A directory or file name that is exactly one ordinary path component (so an index file
/// can never point outside the root).
pub fn plain_name(name: &str) -> bool {
    let mut parts = Path::new(name).components();
    matches!(parts.next(), Some(Component::Normal(_))) && parts.next().is_none()
}

/// The UTF-8 name of `path`'s last component, if it has one.
pub fn name_of(path: &Path) -> Option<String> {
    path.file_name()?.to_str().map(str::to_owned)
}

/// Log format from a log file name.
pub fn format_of(file: &str) -> Option<LogFormat> {
    match file {
        super::paths::LOG_FILE => Some(LogFormat::Plain),
        super::paths::ZSTD_LOG_FILE => Some(LogFormat::Zstd),
        _ => None,
    }
}

/// `ScanPos` to and from its stored triple.
pub fn resume_record(pos: ScanPos) -> (u64, u64, u64) {
    (pos.readable_len, pos.next_seq, pos.line)
}

pub fn resume_pos((readable_len, next_seq, line): (u64, u64, u64)) -> ScanPos {
    ScanPos {
        readable_len,
        next_seq,
        line,
    }
}

/// Read the index of `root`; `None` when absent, unreadable, damaged or of another version.
pub fn load(root: &Path) -> Option<IndexRecord> {
    let bytes = fs::read(root.join(INDEX_FILE)).ok()?;
    match serde_json::from_slice::<IndexRecord>(&bytes) {
        Ok(index) if index.version == VERSION => Some(index),
        Ok(_) => None,
        Err(e) => {
            tracing::debug!(root = %root.display(), error = %e, "ignoring a damaged session index");
            None
        }
    }
}

/// Write the index of `root` atomically (temp file + rename). Only when the root exists.
pub fn save(root: &Path, index: &IndexRecord) -> std::io::Result<()> {
    if !root.is_dir() {
        return Ok(());
    }
    let bytes = serde_json::to_vec(index).map_err(std::io::Error::other)?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".dsh-refs-index.")
        .suffix(".tmp")
        .tempfile_in(root)?;
    tmp.write_all(&bytes)?;
    tmp.persist(root.join(INDEX_FILE))
        .map_err(|e| e.error)
        .map(|_| ())
}

/// Path of a stored title's log under `root`, if its parts are plain names.
pub fn title_path(root: &Path, log: &[String; 3]) -> Option<PathBuf> {
    log.iter()
        .all(|part| plain_name(part))
        .then(|| root.join(&log[0]).join(&log[1]).join(&log[2]))
}
