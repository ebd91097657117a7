//! `--demo`: a temporary copy of the bundled demo store, so every subcommand and the TUI can
//! be tried without touching the user's own store. The copy is removed when the run ends,
//! and so is everything the run put in the cache dir for it (its listing index, its
//! full-text index): a demo run leaves nothing behind.

use std::path::{Path, PathBuf};

use super::CliError;

/// Where the bundled demo store lives: the source tree, else next to the executable.
fn demo_source() -> Result<PathBuf, CliError> {
    let built = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/assets/demo/store"));
    if built.is_dir() {
        return Ok(built);
    }
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("assets/demo/store")));
    match beside {
        Some(dir) if dir.is_dir() => Ok(dir),
        _ => Err(CliError::DemoMissing { looked: built }),
    }
}

/// Copy a directory tree (files and directories only; symlinks and special files skipped).
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        let kind = entry.file_type()?;
        if kind.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// The demo store of one run: a temporary copy, and the store's cache directory when this
/// run is the one that may create it. Dropping it removes both.
#[derive(Debug)]
pub struct DemoCopy {
    dir: Option<tempfile::TempDir>,
    /// `<cache dir>/dsh-refs/<copy>-<hash>`: named after the copy, so nothing but this run
    /// uses it; `None` when it existed before the run (then it is not ours to remove).
    cache: Option<PathBuf>,
}

impl DemoCopy {
    /// The store root.
    pub fn root(&self) -> &Path {
        self.dir
            .as_ref()
            .map_or(Path::new(""), tempfile::TempDir::path)
    }
}

impl Drop for DemoCopy {
    fn drop(&mut self) {
        // The store goes first: a store handle dropped after this finds its root gone and
        // writes no index into the cache dir.
        drop(self.dir.take());
        if let Some(cache) = self.cache.take() {
            match std::fs::remove_dir_all(&cache) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    tracing::debug!(dir = %cache.display(), error = %e, "demo cache not removed");
                }
                _ => {}
            }
        }
    }
}

/// A fresh temporary copy of the demo store.
pub fn temporary_copy() -> Result<DemoCopy, CliError> {
    let dir = tempfile::TempDir::new()
        .map_err(|e| CliError::io("cannot make a temporary directory", e))?;
    let source = demo_source()?;
    copy_tree(&source, dir.path()).map_err(|e| {
        CliError::io(
            format!("cannot copy the demo store {}", source.display()),
            e,
        )
    })?;
    // Named while the copy exists (the name hashes its canonical path).
    let cache = dsh_store::cache::store_cache_dir(dir.path())
        .filter(|c| std::fs::symlink_metadata(c).is_err());
    Ok(DemoCopy {
        dir: Some(dir),
        cache,
    })
}
