//! Opening the files we keep for ourselves — in the platform data and cache dirs (input
//! history, usage book, listing index, search index marks) — the way the store's logs are
//! opened: never through a symbolic link, never blocking on a FIFO or device (opened
//! `O_NONBLOCK`, then `fstat` must show a regular file), created owner-only.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;

/// Open `path` for reading and appending, creating it (mode 0600) when missing: refused
/// without blocking if it is a link, FIFO, device, socket or directory.
pub fn open_append(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true).append(true).create(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    super::nofollow::open_with(path, &mut options)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[cfg(unix)]
    #[test]
    fn append_creates_owner_only_and_refuses_links_fifos_and_directories() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("history");
        open_append(&path).unwrap().write_all(b"a\n").unwrap();
        open_append(&path).unwrap().write_all(b"b\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "a\nb\n");
        let bits = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(bits & 0o777, 0o600);

        let target = dir.path().join("target");
        std::fs::write(&target, "kept").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let dangling = dir.path().join("dangling");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).unwrap();
        for path in [&link, &dangling] {
            let err = open_append(path).unwrap_err().to_string();
            assert!(err.contains("symbolic link"), "{err}");
        }
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "kept");
        assert!(!dir.path().join("nowhere").exists());

        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|s| s.success()));
        let err = open_append(&fifo).unwrap_err().to_string();
        assert!(err.contains("FIFO"), "{err}");
        assert!(open_append(dir.path()).is_err());
    }
}
