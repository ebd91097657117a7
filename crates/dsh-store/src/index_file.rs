//! The listing and title caches persisted in the store's cache directory
//! (`<cache>/dsh-refs/<store>/index.json`, see [`crate::cache::store_cache_dir`]), so a fresh
//! process lists sessions and filters by title without reading every log (docs/performance.md).
//!
//! The file is a cache, never a source of truth. It only seeds the in-memory caches: every
//! project is listed again and every entry is revalidated by a stat of its own log (inode,
//! length, mtime, ctime), never by a directory mtime; a mismatch is a miss, and a header whose
//! id or cwd does not match its directories is dropped. It is read only if it is a regular file owned
//! by this user and writable by nobody else, and only up to [`MAX_INDEX_BYTES`]; anything
//! else is ignored and replaced. Written to a temp file and renamed into place.

use std::fs;
use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::event::SessionHeader;
use super::listing::Stamp;
use super::reader::{LogFormat, ScanPos};

/// File name inside the store's cache directory.
pub const INDEX_FILE: &str = "index.json";

/// The name an older version wrote inside the store root; never read or written now.
pub const LEGACY_INDEX_FILE: &str = ".dsh-refs-index.json";

/// Largest index file read (bytes); a bigger one is ignored (and replaced).
pub const MAX_INDEX_BYTES: u64 = 256 << 20;

/// Bumped whenever the layout changes; other versions are ignored.
const VERSION: u32 = 2;

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
    #[serde(default)]
    pub ctime: Option<(i64, i64)>,
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
            ctime: s.ctime,
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
            ctime: self.ctime,
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

/// Why an index file was not used.
fn unusable(path: &Path, why: &str) -> Option<IndexRecord> {
    tracing::debug!(path = %path.display(), why, "ignoring the session index");
    None
}

/// Read the index in `dir`; `None` when absent, not a regular file, not this user's, too
/// large, unreadable, damaged or of another version.
pub fn load(dir: &Path) -> Option<IndexRecord> {
    let path = dir.join(INDEX_FILE);
    let file = match super::nofollow::open_regular(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => return unusable(&path, &e.to_string()),
    };
    let meta = file.metadata().ok()?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        // Only this user's own cache is believed, and only if nobody else can write it.
        let me = rustix::process::geteuid().as_raw();
        let dir_meta = fs::symlink_metadata(dir).ok()?;
        if meta.uid() != me
            || dir_meta.uid() != me
            || meta.mode() & 0o022 != 0
            || dir_meta.mode() & 0o022 != 0
        {
            return unusable(&path, "owned by another user or writable by others");
        }
    }
    if meta.len() > MAX_INDEX_BYTES {
        return unusable(&path, "larger than the index size limit");
    }
    // Parsed as it is read (never held whole); a file grown past the limit meanwhile is
    // cut there, which no valid index survives.
    let reader = std::io::BufReader::with_capacity(256 * 1024, file.take(MAX_INDEX_BYTES));
    match serde_json::from_reader::<_, IndexRecord>(reader) {
        Ok(index) if index.version == VERSION => Some(index),
        Ok(_) | Err(_) => unusable(&path, "unreadable, damaged or of another version"),
    }
}

/// Parse index file bytes; `None` when damaged or of another version.
pub fn parse(bytes: &[u8]) -> Option<IndexRecord> {
    match serde_json::from_slice::<IndexRecord>(bytes) {
        Ok(index) if index.version == VERSION => Some(index),
        Ok(_) | Err(_) => None,
    }
}

/// Write the index into `dir` atomically (temp file + rename), creating `dir` (mode 0700)
/// if needed. Refuses a `dir` that is a symbolic link.
pub fn save(dir: &Path, index: &IndexRecord) -> std::io::Result<()> {
    create_private_dir(dir)?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".index.")
        .suffix(".tmp")
        .tempfile_in(dir)?;
    {
        // Serialized as it is written, never held whole.
        let mut out = std::io::BufWriter::with_capacity(256 * 1024, tmp.as_file_mut());
        serde_json::to_writer(&mut out, index).map_err(std::io::Error::other)?;
        out.flush()?;
    }
    tmp.persist(dir.join(INDEX_FILE))
        .map_err(|e| e.error)
        .map(|_| ())
}

/// Create `dir` and its parents; the last component is private to this user.
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    if let Some(parent) = dir.parent() {
        fs::create_dir_all(parent)?;
    }
    let mut builder = fs::DirBuilder::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    match builder.create(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let meta = fs::symlink_metadata(dir)?;
            if meta.is_dir() {
                Ok(())
            } else {
                Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("{} is not a directory", dir.display()),
                ))
            }
        }
        Err(e) => Err(e),
    }
}

/// Path of a stored title's log under `root`, if its parts are plain names.
pub fn title_path(root: &Path, log: &[String; 3]) -> Option<PathBuf> {
    log.iter()
        .all(|part| plain_name(part))
        .then(|| root.join(&log[0]).join(&log[1]).join(&log[2]))
}
