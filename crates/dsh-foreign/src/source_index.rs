//! The listing cache of a foreign source, persisted in the platform cache dir (never next to
//! the other tool's logs) so a fresh process lists thousands of sessions by `stat` alone.
//!
//! It only seeds the in-memory cache: every entry is revalidated by directory mtime and
//! file `(len, mtime, inode)`, so a stale or damaged file costs time, never a wrong answer.
//! Written to a temp file in the same directory and renamed into place.

use std::fs;
use std::io::Write;
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::log_meta::LogMeta;
use super::origin::Origin;

/// Bumped whenever the layout or the meaning of [`LogMeta`] changes; other versions are ignored.
/// 2: titles read right (issue 24: custom/AI titles, summaries of this log only, the person's
/// words only), Codex legacy rollouts, Gemini CLI. 3: issue 33: the recorded branch, titles
/// in full, Codex IDE requests, Gemini function responses not the person's.
const VERSION: u32 = 3;

/// Seconds and nanoseconds since the Unix epoch.
pub type FileTime = (u64, u32);

/// A time as stored.
pub fn from_system(t: SystemTime) -> Option<FileTime> {
    let d = t.duration_since(UNIX_EPOCH).ok()?;
    Some((d.as_secs(), d.subsec_nanos()))
}

/// A stored time.
pub fn to_system(t: FileTime) -> Option<SystemTime> {
    UNIX_EPOCH.checked_add(Duration::new(t.0, t.1))
}

/// A log file's identity for revalidation: length, mtime and (on Unix) device and inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileStamp {
    pub len: u64,
    pub mtime: Option<FileTime>,
    pub file_id: Option<(u64, u64)>,
}

impl FileStamp {
    pub fn of(meta: &fs::Metadata) -> Self {
        #[cfg(unix)]
        let file_id = {
            use std::os::unix::fs::MetadataExt;
            Some((meta.dev(), meta.ino()))
        };
        #[cfg(not(unix))]
        let file_id = None;
        FileStamp {
            len: meta.len(),
            mtime: meta.modified().ok().and_then(from_system),
            file_id,
        }
    }

    /// Whether `self` can be the same file as `earlier`, grown (same inode where known).
    pub fn same_file(&self, earlier: &FileStamp) -> bool {
        self.file_id.is_some() && self.file_id == earlier.file_id
    }

    /// The stamp, if its time is representable here.
    pub fn checked(self) -> Option<Self> {
        match self.mtime {
            Some(t) => to_system(t).map(|_| self),
            None => Some(self),
        }
    }
}

/// One log as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileRecord {
    pub name: String,
    pub stamp: FileStamp,
    pub meta: LogMeta,
}

/// One directory of logs as stored (its path relative to the source root).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DirRecord {
    pub dir: String,
    pub mtime: Option<FileTime>,
    pub files: Vec<FileRecord>,
}

/// The whole file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SourceIndex {
    version: u32,
    origin: String,
    root: String,
    pub dirs: Vec<DirRecord>,
}

impl SourceIndex {
    pub fn new(origin: &Origin, root: &Path, dirs: Vec<DirRecord>) -> Self {
        SourceIndex {
            version: VERSION,
            origin: origin.as_str().to_owned(),
            root: root.to_string_lossy().into_owned(),
            dirs,
        }
    }
}

/// The cache file for a source root under `cache_dir`: one per origin and root.
pub fn index_path(cache_dir: &Path, origin: &Origin, root: &Path) -> PathBuf {
    // FNV-1a: stable across builds, unlike std's hasher.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in root.to_string_lossy().as_bytes() {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    // Only safe file-name characters of the origin's name (an `Other` name is anything).
    let name: String = origin
        .as_str()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect();
    cache_dir.join(format!("{name}-{hash:016x}.json"))
}

/// Largest listing cache read (a few hundred bytes per session).
const MAX_CACHE_BYTES: u64 = 256 << 20;

/// The stored cache of `origin` at `root`, if the file exists, parses and matches. Only a
/// regular file of at most [`MAX_CACHE_BYTES`] is read (a FIFO or device never blocks it).
pub fn load(file: &Path, origin: &Origin, root: &Path) -> Option<SourceIndex> {
    use std::io::Read;
    let mut text = Vec::new();
    super::open_file::open_regular(file)
        .ok()?
        .take(MAX_CACHE_BYTES + 1)
        .read_to_end(&mut text)
        .ok()?;
    if text.len() as u64 > MAX_CACHE_BYTES {
        return None;
    }
    let index: SourceIndex = serde_json::from_slice(&text).ok()?;
    (index.version == VERSION
        && index.origin == origin.as_str()
        && index.root == root.to_string_lossy())
    .then_some(index)
}

/// Write the cache atomically (temp file, then rename).
pub fn save(file: &Path, index: &SourceIndex) -> std::io::Result<()> {
    let dir = file
        .parent()
        .ok_or_else(|| std::io::Error::other("cache file has no directory"))?;
    fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    serde_json::to_writer(&mut tmp, index)?;
    tmp.flush()?;
    tmp.persist(file).map_err(|e| e.error)?;
    Ok(())
}

/// `child` joined to `dir` if it is plain relative path components (no `..`, no root).
pub fn child(dir: &Path, child: &str) -> Option<PathBuf> {
    let rel = Path::new(child);
    rel.components()
        .all(|c| matches!(c, Component::Normal(_)))
        .then(|| dir.join(rel))
}

/// `path` relative to `root`, as stored.
pub fn relative(root: &Path, path: &Path) -> Option<String> {
    path.strip_prefix(root).ok()?.to_str().map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_as_the_cache_is_ignored_at_once() {
        let tmp = tempfile::tempdir().unwrap();
        let root = Path::new("/logs/projects");
        let file = index_path(tmp.path(), &Origin::ClaudeCode, root);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(&file)
            .status()
            .unwrap();
        assert!(made.success());
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(load(&file, &Origin::ClaudeCode, root).is_none());
        });
        let ignored = rx.recv_timeout(std::time::Duration::from_secs(60));
        assert_eq!(ignored, Ok(true), "blocked on the FIFO");
    }

    #[test]
    fn round_trip_and_mismatches_are_ignored() {
        let tmp = tempfile::tempdir().unwrap();
        let root = Path::new("/logs/projects");
        let file = index_path(tmp.path(), &Origin::ClaudeCode, root);
        let index = SourceIndex::new(
            &Origin::ClaudeCode,
            root,
            vec![DirRecord {
                dir: "-x".into(),
                mtime: Some((5, 6)),
                files: vec![FileRecord {
                    name: "a.jsonl".into(),
                    stamp: FileStamp {
                        len: 3,
                        mtime: None,
                        file_id: Some((1, 2)),
                    },
                    meta: LogMeta::default(),
                }],
            }],
        );
        save(&file, &index).unwrap();
        assert_eq!(load(&file, &Origin::ClaudeCode, root), Some(index));
        assert_eq!(load(&file, &Origin::Codex, root), None);
        assert_eq!(load(&file, &Origin::ClaudeCode, Path::new("/other")), None);
        fs::write(&file, "{not json").unwrap();
        assert_eq!(load(&file, &Origin::ClaudeCode, root), None);
        assert_ne!(
            index_path(tmp.path(), &Origin::ClaudeCode, root),
            index_path(tmp.path(), &Origin::ClaudeCode, Path::new("/logs/x"))
        );
    }

    #[test]
    fn stored_names_cannot_escape() {
        let dir = Path::new("/r");
        assert_eq!(child(dir, "a/b"), Some(PathBuf::from("/r/a/b")));
        assert_eq!(child(dir, "../x"), None);
        assert_eq!(child(dir, "/etc"), None);
    }
}
