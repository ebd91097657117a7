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
//! Each process copies into its own directory (`copy-*`), removed when the source is
//! dropped; one left by a process that died is removed by the next after a day.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use rusqlite::{Connection, OpenFlags};

use crate::open_file::open_regular;
use crate::source_index::FileStamp;

/// Copies tried before giving up on a database that keeps changing.
pub const ATTEMPTS: usize = 4;

/// How old a `copy-*` directory must be before another process removes it.
const STALE_AFTER: Duration = Duration::from_secs(24 * 3600);

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

/// Where copies are made: a directory of this process's own. Only the files it made are
/// ever removed, each by name, and the directory itself only once it is empty
/// (docs/foreign-sources.md: nothing of ours deletes what we did not create).
#[derive(Debug)]
pub struct CopyDir {
    dir: PathBuf,
    taken: u64,
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

/// Remove the copy files in `dir` (regular files named as ours, never through a link),
/// then `dir` itself if that left it empty; anything else in it stays, and so does `dir`.
fn remove_copies(dir: &Path) {
    if let Ok(entries) = fs::read_dir(dir) {
        for entry in entries.flatten() {
            let ours = entry.file_name().to_str().is_some_and(is_copy_file);
            let regular = entry.file_type().is_ok_and(|t| t.is_file());
            if ours && regular {
                let _ = fs::remove_file(entry.path());
            }
        }
    }
    let _ = fs::remove_dir(dir);
}

impl CopyDir {
    /// A new directory for this process's copies under `parent` (the cache dir), or the
    /// system temp dir; `copy-*` directories of dead processes older than a day are
    /// removed first.
    pub fn new(parent: Option<&Path>) -> io::Result<Self> {
        let dir = match parent {
            Some(parent) => {
                fs::create_dir_all(parent)?;
                remove_stale(parent);
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
        Ok(CopyDir { dir, taken: 0 })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// A consistent copy of the database `db` (and its WAL), opened; `Ok(None)` when there
    /// is no database.
    pub fn take(&mut self, db: &Path) -> Result<Option<Snapshot>, SnapshotError> {
        let wal = wal_of(db);
        // Another process may have taken a long-idle directory of ours for a dead one's.
        fs::create_dir_all(&self.dir).map_err(|source| SnapshotError::Io {
            path: self.dir.clone(),
            source,
        })?;
        for _ in 0..ATTEMPTS {
            let before: Stamps = (stamp(db), stamp(&wal));
            if before.0.is_none() {
                return Ok(None);
            }
            self.taken += 1;
            let copy = self.dir.join(copy_name(self.taken));
            let copied = copy_file(db, &copy).and_then(|()| match before.1 {
                Some(_) => copy_file(&wal, &wal_of(&copy)),
                None => Ok(()),
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

/// Copy `from` (a regular file, never through a link) to a new file `to`.
fn copy_file(from: &Path, to: &Path) -> io::Result<()> {
    let mut src = open_regular(from).map_err(|e| io::Error::other(e.to_string()))?;
    let mut dst = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(to)?;
    io::copy(&mut src, &mut dst)?;
    Ok(())
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

/// Clear `copy-*` directories under `parent` not touched for a day (left by a process that
/// died; only directories named like ours are considered, and in them only our copy files
/// are removed: [`remove_copies`]).
fn remove_stale(parent: &Path) {
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    let now = SystemTime::now();
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.to_str().is_some_and(|n| n.starts_with("copy-")) {
            continue;
        }
        let Ok(meta) = fs::symlink_metadata(entry.path()) else {
            continue;
        };
        let old = meta
            .modified()
            .ok()
            .and_then(|m| now.duration_since(m).ok())
            .is_some_and(|age| age >= STALE_AFTER);
        if meta.is_dir() && old {
            remove_copies(&entry.path());
        }
    }
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
            "notes.txt",
            "sub/opencode-2.db",
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
        assert!(dir.join("sub/opencode-2.db").exists());
        fs::remove_file(dir.join("notes.txt")).unwrap();
        fs::remove_file(dir.join("sub/opencode-2.db")).unwrap();
        fs::remove_dir(dir.join("sub")).unwrap();
        fs::write(dir.join("opencode-3.db"), b"x").unwrap();
        remove_copies(&dir);
        assert!(!dir.exists(), "an emptied directory of ours goes");
    }
}
