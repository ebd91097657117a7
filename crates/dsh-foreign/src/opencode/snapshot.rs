//! Reading OpenCode's database without touching it (docs/foreign-sources.md, OpenCode).
//!
//! OpenCode (1.2 and later) keeps its sessions in `opencode.db`, an SQLite database in WAL
//! mode: recent changes live in `opencode.db-wal` until OpenCode checkpoints them, and any
//! SQLite reader of the database itself would create or write `opencode.db-shm` (and take
//! locks) next to it. So the database is never opened where it is: `opencode.db` and its
//! `-wal` are *copied* (plain reads, `O_NOFOLLOW`) into a directory of ours in the cache
//! dir, and that copy is opened; SQLite replays the copied WAL there, so rows OpenCode has
//! not checkpointed yet are read too. A copy is trusted only if neither file changed while
//! it was taken (length, mtime, inode before and after); else it is taken again (at most
//! [`ATTEMPTS`] times). A new copy is taken when either file changed since the last one.
//!
//! Copies are bounded ([`CopyLimits`]): a database larger than `max_copy_bytes` (with its
//! WAL) is not copied, and no copy is taken that would bring all copies of every process
//! past `max_total_bytes`. Each process copies into its own directory (`copy-*`) and holds
//! a lock on the `lock` file in it for as long as it lives; the directory is removed when the
//! source is dropped. One whose lock is free belongs to a process that is gone (killed,
//! crashed mid-copy): the next process to copy removes it at once. A directory without a
//! lock (an earlier version's) is removed after a day, as before. Only files we create are
//! ever removed, each by name.
use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use dsh_store::not_loaded::size;

use rusqlite::{Connection, OpenFlags};

use crate::open_file::open_regular;
use crate::source_index::FileStamp;

/// Copies tried before giving up on a database that keeps changing.
pub const ATTEMPTS: usize = 4;

/// How old a `copy-*` directory without a lock (an earlier version's) must be before
/// another process removes it.
const STALE_AFTER: Duration = Duration::from_secs(24 * 3600);

/// The file in a `copy-*` directory its process holds locked while it lives. It is created
/// as [`NEW_LOCK_FILE`], locked, then renamed, so a `lock` is locked from the moment it
/// exists: one found free is a dead process's, however young.
const LOCK_FILE: &str = "lock";

/// The lock file before it is locked and renamed into place.
const NEW_LOCK_FILE: &str = "lock-new";

/// How much room copies of OpenCode's database may take (`[sources]
/// opencode_max_copy_mib`, `opencode_max_copies_mib`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyLimits {
    /// The largest database (with its WAL) copied; a larger one is not read, with a
    /// warning.
    pub max_copy_bytes: u64,
    /// What the copies of every dsh-refs process may take together.
    pub max_total_bytes: u64,
}

impl Default for CopyLimits {
    /// 1 GiB a copy, 3 GiB for all.
    fn default() -> Self {
        CopyLimits {
            max_copy_bytes: 1 << 30,
            max_total_bytes: 3 << 30,
        }
    }
}

/// The database file's name in OpenCode's data dir.
pub const DB_FILE: &str = "opencode.db";

/// Why a copy could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("{path}: the database changed during each of {ATTEMPTS} copies; try again")]
    Busy { path: PathBuf },
    #[error("{path}: {source}")]
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("{path}: {}", too_large(*.len, *.max))]
    TooLarge { path: PathBuf, len: u64, max: u64 },
    #[error("{path}: {}", no_room(*.len, *.used, *.max))]
    NoRoom {
        path: PathBuf,
        len: u64,
        used: u64,
        max: u64,
    },
}

impl SnapshotError {
    /// Why a copy was not taken, for a read that needs it.
    pub fn into_query_error(self) -> dsh_store::QueryError {
        use dsh_store::QueryError;
        let other = |path, reason: String| QueryError::Io {
            path,
            source: io::Error::other(reason),
        };
        match self {
            SnapshotError::Io { path, source } => QueryError::Io { path, source },
            SnapshotError::Busy { path } => QueryError::Corrupt {
                path,
                line: 0,
                reason: format!("the database changed during each of {ATTEMPTS} copies"),
            },
            SnapshotError::Sqlite { path, source } => QueryError::Corrupt {
                path,
                line: 0,
                reason: format!("OpenCode database: {source}"),
            },
            SnapshotError::TooLarge { path, len, max } => other(path, too_large(len, max)),
            SnapshotError::NoRoom {
                path,
                len,
                used,
                max,
            } => other(path, no_room(len, used, max)),
        }
    }
}

fn too_large(len: u64, max: u64) -> String {
    format!(
        "{} with its WAL, more than the {} dsh-refs copies at most to read it: its sessions \
         are left out (raise [sources] opencode_max_copy_mib to read them)",
        size(len),
        size(max)
    )
}

fn no_room(len: u64, used: u64, max: u64) -> String {
    format!(
        "a copy of {} would take dsh-refs' copies of OpenCode's database past {} ({} taken \
         by running dsh-refs processes); not copied this time (raise [sources] \
         opencode_max_copies_mib to allow more)",
        size(len),
        size(max),
        size(used)
    )
}

/// The stamps of the database and its WAL (`None`: absent).
type Stamps = (Option<FileStamp>, Option<FileStamp>);

fn stamp(path: &Path) -> Option<FileStamp> {
    let meta = fs::symlink_metadata(path).ok()?;
    meta.is_file().then(|| FileStamp::of(&meta))
}

fn wal_of(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push("-wal");
    PathBuf::from(name)
}

/// One consistent copy of the database, opened read-only in spirit (`query_only`).
#[derive(Debug)]
pub struct Snapshot {
    stamps: Stamps,
    copy: PathBuf,
    conn: Mutex<Connection>,
}

impl Snapshot {
    /// The connection to the copy.
    pub fn conn(&self) -> MutexGuard<'_, Connection> {
        self.conn
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether the database and its WAL are still as copied.
    pub fn is_current(&self, db: &Path) -> bool {
        (stamp(db), stamp(&wal_of(db))) == self.stamps
    }
}

impl Drop for Snapshot {
    /// Remove the copy (ours; the tool's files are never touched).
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let mut name = self.copy.as_os_str().to_owned();
            name.push(suffix);
            let _ = fs::remove_file(PathBuf::from(name));
        }
    }
}

/// Where copies are made: a directory of this process's own, with its lock held. Only the
/// files it made are ever removed, each by name, and the directory itself only once it is
/// empty (docs/foreign-sources.md: nothing of ours deletes what we did not create).
#[derive(Debug)]
pub struct CopyDir {
    dir: PathBuf,
    /// Where every process's `copy-*` directory is (`None`: a temp dir of its own).
    parent: Option<PathBuf>,
    taken: u64,
    limits: CopyLimits,
    /// The lock on `dir/lock`, held while this process lives.
    lock: Option<File>,
}

impl Drop for CopyDir {
    fn drop(&mut self) {
        remove_copies(&self.dir);
    }
}

/// The name of this process's `n`-th copy of the database.
fn copy_name(n: u64) -> String {
    format!("opencode-{n}.db")
}

/// Whether `name` is one of the files a copy is made of: `opencode-<n>.db` and SQLite's
/// `-wal`, `-shm` and `-journal` beside it.
fn is_copy_file(name: &str) -> bool {
    let base = ["-wal", "-shm", "-journal"]
        .iter()
        .find_map(|suffix| name.strip_suffix(suffix))
        .unwrap_or(name);
    base.strip_prefix("opencode-")
        .and_then(|rest| rest.strip_suffix(".db"))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The regular files of ours in `dir` (copy files and the lock), with their lengths.
fn our_files(dir: &Path) -> Vec<(PathBuf, u64, bool)> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name();
            let name = name.to_str()?;
            let copy = is_copy_file(name);
            let meta = entry.metadata().ok()?;
            let lock = name == LOCK_FILE || name == NEW_LOCK_FILE;
            ((copy || lock) && meta.is_file()).then(|| (entry.path(), meta.len(), copy))
        })
        .collect()
}

/// Remove the copy files and the lock in `dir` (regular files named as ours, never through
/// a link), then `dir` itself if that left it empty; anything else in it stays, and so does
/// `dir`.
fn remove_copies(dir: &Path) {
    for (path, _, _) in our_files(dir) {
        let _ = fs::remove_file(path);
    }
    let _ = fs::remove_dir(dir);
}

/// Whether the process that made a `copy-*` directory is still there.
enum Owner {
    /// Its lock is held.
    Alive,
    /// Its lock was free and is now ours (held until its directory is removed).
    Gone(File),
    /// No lock to tell (an earlier version's directory, a filesystem without locks).
    Unknown,
}

fn owner(dir: &Path) -> Owner {
    let Ok(file) = open_regular(&dir.join(LOCK_FILE)) else {
        return Owner::Unknown;
    };
    match file.try_lock() {
        Ok(()) => Owner::Gone(file),
        Err(std::fs::TryLockError::WouldBlock) => Owner::Alive,
        Err(std::fs::TryLockError::Error(_)) => Owner::Unknown,
    }
}

/// The `copy-*` directories under `parent` (real directories, links never followed).
fn copy_dirs(parent: &Path) -> Vec<(PathBuf, fs::Metadata)> {
    let Ok(entries) = fs::read_dir(parent) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.starts_with("copy-"))
        })
        .filter_map(|e| {
            let meta = fs::symlink_metadata(e.path()).ok()?;
            meta.is_dir().then(|| (e.path(), meta))
        })
        .collect()
}

/// Remove the `copy-*` directories under `parent` whose process is gone (their lock is
/// free), and those without a lock not touched for a day; `keep` (ours) is never looked at.
/// Only our files in them are removed ([`remove_copies`]).
fn remove_dead(parent: &Path, keep: Option<&Path>) {
    let now = SystemTime::now();
    for (dir, meta) in copy_dirs(parent) {
        if keep == Some(dir.as_path()) {
            continue;
        }
        match owner(&dir) {
            Owner::Alive => {}
            Owner::Gone(lock) => {
                remove_copies(&dir);
                drop(lock);
            }
            Owner::Unknown => {
                let old = meta
                    .modified()
                    .ok()
                    .and_then(|m| now.duration_since(m).ok())
                    .is_some_and(|age| age >= STALE_AFTER);
                if old {
                    remove_copies(&dir);
                }
            }
        }
    }
}

/// Bytes the copy files under `parent` take (every process's).
fn used_bytes(parent: &Path) -> u64 {
    copy_dirs(parent)
        .iter()
        .flat_map(|(dir, _)| our_files(dir))
        .filter(|(_, _, copy)| *copy)
        .map(|(_, len, _)| len)
        .fold(0, u64::saturating_add)
}

/// Lock `dir/lock`: made as `lock-new`, locked, then renamed into place (never written
/// through a link planted there).
fn hold_lock(dir: &Path) -> io::Result<File> {
    let new = dir.join(NEW_LOCK_FILE);
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW);
    }
    let file = options.open(&new)?;
    file.try_lock().map_err(io::Error::from)?;
    fs::rename(&new, dir.join(LOCK_FILE))?;
    Ok(file)
}

impl CopyDir {
    /// A new directory for this process's copies under `parent` (the cache dir), or the
    /// system temp dir, its lock held; directories of processes that are gone are removed
    /// first.
    pub fn new(parent: Option<&Path>, limits: CopyLimits) -> io::Result<Self> {
        let dir = match parent {
            Some(parent) => {
                fs::create_dir_all(parent)?;
                remove_dead(parent, None);
                tempfile::Builder::new()
                    .prefix("copy-")
                    .tempdir_in(parent)?
                    .keep()
            }
            None => tempfile::Builder::new()
                .prefix("dsh-refs-opencode-")
                .tempdir()?
                .keep(),
        };
        let lock = hold_lock(&dir);
        let mut copies = CopyDir {
            dir,
            parent: parent.map(Path::to_owned),
            taken: 0,
            limits,
            lock: None,
        };
        copies.lock = Some(lock?);
        Ok(copies)
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The directory, made again (with its lock) if something removed it.
    fn ensure_dir(&mut self) -> io::Result<()> {
        fs::create_dir_all(&self.dir)?;
        if !fs::symlink_metadata(self.dir.join(LOCK_FILE)).is_ok_and(|m| m.is_file()) {
            self.lock = Some(hold_lock(&self.dir)?);
        }
        Ok(())
    }

    /// Refuse a copy of `len` bytes beyond the limits (after removing what dead processes
    /// left, so it does not count).
    fn check_room(&self, db: &Path, len: u64) -> Result<(), SnapshotError> {
        let max = self.limits.max_copy_bytes;
        if len > max {
            return Err(SnapshotError::TooLarge {
                path: db.to_owned(),
                len,
                max,
            });
        }
        let used = match &self.parent {
            Some(parent) => {
                remove_dead(parent, Some(&self.dir));
                used_bytes(parent)
            }
            None => our_files(&self.dir)
                .iter()
                .filter(|f| f.2)
                .map(|f| f.1)
                .sum(),
        };
        let total = self.limits.max_total_bytes;
        if used.saturating_add(len) > total {
            return Err(SnapshotError::NoRoom {
                path: db.to_owned(),
                len,
                used,
                max: total,
            });
        }
        Ok(())
    }

    /// A consistent copy of the database `db` (and its WAL), opened; `Ok(None)` when there
    /// is no database.
    pub fn take(&mut self, db: &Path) -> Result<Option<Snapshot>, SnapshotError> {
        let wal = wal_of(db);
        // Another process may have removed a long-idle directory of ours.
        self.ensure_dir().map_err(|source| SnapshotError::Io {
            path: self.dir.clone(),
            source,
        })?;
        for _ in 0..ATTEMPTS {
            let before: Stamps = (stamp(db), stamp(&wal));
            let Some(db_stamp) = &before.0 else {
                return Ok(None);
            };
            let len = db_stamp
                .len
                .saturating_add(before.1.as_ref().map_or(0, |w| w.len));
            self.check_room(db, len)?;
            self.taken += 1;
            let copy = self.dir.join(copy_name(self.taken));
            let bound = self.limits.max_copy_bytes;
            let copied = copy_file(db, &copy, bound).and_then(|n| match before.1 {
                Some(_) => copy_file(&wal, &wal_of(&copy), bound.saturating_sub(n)),
                None => Ok(0),
            });
            let after: Stamps = (stamp(db), stamp(&wal));
            if let Err(e) = copied {
                remove_copy(&copy);
                // A file that vanished or changed under us is a change: try again.
                if before != after {
                    continue;
                }
                return Err(SnapshotError::Io {
                    path: db.to_owned(),
                    source: e,
                });
            }
            if before != after {
                remove_copy(&copy);
                continue;
            }
            let conn = open_copy(&copy).map_err(|source| SnapshotError::Sqlite {
                path: db.to_owned(),
                source,
            });
            let conn = match conn {
                Ok(c) => c,
                Err(e) => {
                    remove_copy(&copy);
                    return Err(e);
                }
            };
            return Ok(Some(Snapshot {
                stamps: before,
                copy,
                conn: Mutex::new(conn),
            }));
        }
        Err(SnapshotError::Busy {
            path: db.to_owned(),
        })
    }
}

/// Copy `from` (a regular file, never through a link) to a new file `to`, at most `max`
/// bytes (a file that grew past it while being copied is an error: it changed); the bytes
/// copied.
fn copy_file(from: &Path, to: &Path, max: u64) -> io::Result<u64> {
    let src = open_regular(from).map_err(|e| io::Error::other(e.to_string()))?;
    let mut dst = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(to)?;
    let n = io::copy(&mut src.take(max.saturating_add(1)), &mut dst)?;
    if n > max {
        return Err(io::Error::other(format!(
            "{} grew while copied",
            from.display()
        )));
    }
    Ok(n)
}

fn remove_copy(copy: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let mut name = copy.as_os_str().to_owned();
        name.push(suffix);
        let _ = fs::remove_file(PathBuf::from(name));
    }
}

/// Open our copy: SQLite replays its WAL and keeps its `-shm` here, in our directory.
fn open_copy(copy: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        copy,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.pragma_update(None, "query_only", true)?;
    // Force the WAL to be read now, so a copy SQLite cannot use fails here.
    conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| {
        r.get::<_, i64>(0)
    })?;
    Ok(conn)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_file_names() {
        let cases = [
            ("opencode-1.db", true),
            ("opencode-12.db-wal", true),
            ("opencode-3.db-shm", true),
            ("opencode-3.db-journal", true),
            ("opencode-.db", false),
            ("opencode-1x.db", false),
            ("opencode-1.db.bak", false),
            ("opencode.db", false),
            ("thesis.txt", false),
            ("opencode-1.db-wal-shm", false),
        ];
        for (name, want) in cases {
            assert_eq!(is_copy_file(name), want, "{name}");
        }
    }

    #[test]
    #[allow(clippy::unwrap_used)] // test code
    fn only_our_copies_are_removed_and_the_directory_only_when_empty() {
        let parent = tempfile::tempdir().unwrap();
        let dir = parent.path().join("copy-abc");
        fs::create_dir_all(dir.join("sub")).unwrap();
        for name in [
            "opencode-1.db",
            "opencode-1.db-wal",
            "lock",
            "notes.txt",
            "sub/opencode-2.db",
            "sub/lock",
        ] {
            fs::write(dir.join(name), b"x").unwrap();
        }
        remove_copies(&dir);
        let mut left: Vec<String> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(left, ["notes.txt", "sub"]);
        assert!(dir.join("sub/opencode-2.db").exists() && dir.join("sub/lock").exists());
        fs::remove_file(dir.join("notes.txt")).unwrap();
        fs::remove_file(dir.join("sub/opencode-2.db")).unwrap();
        fs::remove_file(dir.join("sub/lock")).unwrap();
        fs::remove_dir(dir.join("sub")).unwrap();
        fs::write(dir.join("opencode-3.db"), b"x").unwrap();
        remove_copies(&dir);
        assert!(!dir.exists(), "an emptied directory of ours goes");
    }
}
