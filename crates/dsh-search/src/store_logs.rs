//! The logs of a store as the index sees them: every `<project>/<session>/session.jsonl[.zstd]`
//! with its identity, from the store's own check of its logs (one `lstat` each; a log is
//! opened only for its header, when new or changed).

use std::path::{Path, PathBuf};

use dsh_foreign::Origin;
use dsh_store::listing::Stamp;
use dsh_store::reader::LogFormat;
use dsh_store::{QueryError, SessionStore};

/// One session log in the store (or of a foreign source).
#[derive(Debug, Clone)]
pub struct LogFile {
    /// The index key: the path relative to the root with `/` separators for a dsh log,
    /// `<origin>:<path>` for a foreign one.
    pub rel: String,
    pub abs: PathBuf,
    pub format: LogFormat,
    pub stamp: Stamp,
    pub origin: Origin,
    /// The namespaced session id of a foreign log (a dsh log's id is in its header).
    pub id: Option<String>,
}

/// Every session log of `store`, each stat-ed now ([`SessionStore::checked_logs`]), in
/// path order; a log whose path is not UTF-8 below the root is left out (it has no key).
pub fn of_store(store: &SessionStore) -> Result<Vec<LogFile>, QueryError> {
    let root = store.root();
    let logs = store.checked_logs()?;
    let mut out = Vec::with_capacity(logs.len());
    for (loc, stamp) in logs {
        let Some(rel) = key_of(root, &loc.path) else {
            continue;
        };
        out.push(LogFile {
            rel,
            abs: loc.path,
            format: loc.format,
            stamp,
            origin: Origin::Dsh,
            id: None,
        });
    }
    Ok(out)
}

/// The index key of the log at `path` under `root`: its relative path with `/` separators.
pub fn key_of(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).ok()?;
    let parts: Option<Vec<&str>> = rel.components().map(|c| c.as_os_str().to_str()).collect();
    parts.map(|p| p.join("/"))
}

/// The current identity of one log by its key, `None` when it is gone or no longer a
/// regular file (a link is not followed).
pub fn stat(root: &Path, rel: &str) -> Option<(PathBuf, Stamp)> {
    let abs = rel.split('/').fold(root.to_owned(), |p, part| p.join(part));
    let meta = std::fs::symlink_metadata(&abs).ok()?;
    meta.is_file().then(|| (abs, Stamp::of(&meta)))
}
