//! Opening another tool's log for reading only, and only if it is a regular file: the open
//! itself never blocks (a FIFO put in place of a log would otherwise wait for a writer).

use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;

use dsh_store::QueryError;

/// Open `path` read-only without blocking, then refuse anything but a regular file.
pub fn open_regular(path: &Path) -> Result<File, QueryError> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path).map_err(|e| io_err(path, e))?;
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
    }
}
