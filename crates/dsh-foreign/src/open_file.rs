//! Opening another tool's log for reading only, and only if it is a regular file reached
//! without a symbolic link as its last component: the open itself never blocks (a FIFO put
//! in place of a log would otherwise wait for a writer) and never follows a link (a log
//! linked in from outside the tool's directory is not read). The listing checks the
//! directories on the way with `lstat` (docs/foreign-sources.md).

use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;

use dsh_store::QueryError;

/// Open `path` read-only without blocking or following a link, then refuse anything but a
/// regular file.
pub fn open_regular(path: &Path) -> Result<File, QueryError> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_CLOEXEC);
    }
    let file = match options.open(path) {
        Ok(f) => f,
        #[cfg(unix)]
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(QueryError::Corrupt {
                path: path.to_owned(),
                line: 0,
                reason: "a symbolic link (never followed below a foreign root)".into(),
            });
        }
        Err(e) => return Err(io_err(path, e)),
    };
    let meta = file.metadata().map_err(|e| io_err(path, e))?;
    if !meta.is_file() {
        return Err(QueryError::Corrupt {
            path: path.to_owned(),
            line: 0,
            reason: "not a regular file".into(),
        });
    }
    Ok(file)
}

fn io_err(path: &Path, source: io::Error) -> QueryError {
    QueryError::Io {
        path: path.to_owned(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let tmp = tempfile::tempdir().unwrap();
        let fifo = tmp.path().join("log.jsonl");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        assert!(matches!(
            open_regular(&fifo),
            Err(QueryError::Corrupt { reason, .. }) if reason == "not a regular file"
        ));
        assert!(matches!(
            open_regular(tmp.path()),
            Err(QueryError::Corrupt { .. } | QueryError::Io { .. })
        ));
        let file = tmp.path().join("a.jsonl");
        std::fs::write(&file, "{}\n").unwrap();
        assert!(open_regular(&file).is_ok());
        let link = tmp.path().join("link.jsonl");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(matches!(
            open_regular(&link),
            Err(QueryError::Corrupt { reason, .. }) if reason.contains("symbolic link")
        ));
    }
}
