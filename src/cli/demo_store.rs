//! `--demo`: a temporary copy of the bundled demo store, so every subcommand and the TUI can
//! be tried without touching the user's own store. The copy is removed when the run ends.

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

/// A fresh temporary copy of the demo store; its `path()` is the store root.
pub fn temporary_copy() -> Result<tempfile::TempDir, CliError> {
    let dir = tempfile::TempDir::new()
        .map_err(|e| CliError::io("cannot make a temporary directory", e))?;
    let source = demo_source()?;
    copy_tree(&source, dir.path()).map_err(|e| {
        CliError::io(
            format!("cannot copy the demo store {}", source.display()),
            e,
        )
    })?;
    Ok(dir)
}
