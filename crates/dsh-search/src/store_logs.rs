//! The logs of a store as the index sees them: every `<project>/<session>/session.jsonl[.zstd]`
//! with its identity, listed by reading directories only (no log is opened).

use std::io;
use std::path::{Path, PathBuf};

use dsh_foreign::Origin;
use dsh_store::QueryError;
use dsh_store::listing::{Stamp, log_in, sorted_subdirs};
use dsh_store::reader::LogFormat;

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

fn io_err(path: &Path, source: io::Error) -> QueryError {
    QueryError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Every session log under `root` (none when the root does not exist), in path order. A
/// project directory that cannot be read is skipped, so one bad directory hides only itself.
pub fn list(root: &Path) -> Result<Vec<LogFile>, QueryError> {
    let projects = match sorted_subdirs(root) {
        Ok(p) => p,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_err(root, e)),
    };
    let mut out = Vec::new();
    for project in projects {
        let Ok(sessions) = sorted_subdirs(&project) else {
            continue;
        };
        for dir in sessions {
            // A link, FIFO or device instead of a log is not a session (nothing is followed).
            let Ok(Some((loc, meta))) = log_in(&dir) else {
                continue;
            };
            let Ok(rel) = loc.path.strip_prefix(root) else {
                continue;
            };
            let parts: Option<Vec<&str>> =
                rel.components().map(|c| c.as_os_str().to_str()).collect();
            let Some(parts) = parts else {
                continue;
            };
            out.push(LogFile {
                rel: parts.join("/"),
                abs: loc.path.clone(),
                format: loc.format,
                stamp: Stamp::of(&meta),
                origin: Origin::Dsh,
                id: None,
            });
        }
    }
    Ok(out)
}

/// The current identity of one log by its key, `None` when it is gone or no longer a
/// regular file (a link is not followed).
pub fn stat(root: &Path, rel: &str) -> Option<(PathBuf, Stamp)> {
    let abs = rel.split('/').fold(root.to_owned(), |p, part| p.join(part));
    let meta = std::fs::symlink_metadata(&abs).ok()?;
    meta.is_file().then(|| (abs, Stamp::of(&meta)))
}
