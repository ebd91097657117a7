//! One log per id (docs/session-store.md, on-disk layout): creating a session takes an
//! advisory `flock` on the store root directory itself (no file is added to the store), then
//! checks every project directory for the id before the new log is published.
//!
//! A creator that finds the id already logged, or cannot get the lock within
//! [`LOCK_WAIT`], gets [`StoreError::Busy`] and writes nothing.

use std::fs::{self, File};
use std::path::Path;
use std::time::{Duration, Instant};

use super::error::StoreError;
use super::listing::locate_in;
use super::nofollow;

/// How long a creator waits for another creator's short critical section.
const LOCK_WAIT: Duration = Duration::from_secs(5);
/// Pause between attempts.
const RETRY_PAUSE: Duration = Duration::from_millis(10);

/// The store-wide creation lock, released on drop (with the file handle).
#[derive(Debug)]
pub(crate) struct CreateLock {
    _root: File,
}

/// Lock `root` for creating session `id` whose directory will be `dir`: the root is
/// created if missing, no component of `dir` may be a link, and no project may hold the id.
pub(crate) fn lock_for_create(root: &Path, dir: &Path, id: &str) -> Result<CreateLock, StoreError> {
    fs::create_dir_all(root).map_err(|e| StoreError::io(root, e))?;
    let handle = File::open(root).map_err(|e| StoreError::io(root, e))?;
    let started = Instant::now();
    loop {
        match handle.try_lock() {
            Ok(()) => break,
            Err(fs::TryLockError::WouldBlock) if started.elapsed() < LOCK_WAIT => {
                std::thread::sleep(RETRY_PAUSE);
            }
            Err(fs::TryLockError::WouldBlock) => {
                return Err(StoreError::Busy {
                    id: id.to_owned(),
                    path: root.to_owned(),
                });
            }
            Err(fs::TryLockError::Error(e)) => return Err(StoreError::io(root, e)),
        }
    }
    nofollow::check_below(root, dir).map_err(|e| StoreError::io(dir, e))?;
    if let Some(existing) = locate_in(root, id)? {
        return Err(StoreError::Busy {
            id: id.to_owned(),
            path: existing.path,
        });
    }
    Ok(CreateLock { _root: handle })
}
