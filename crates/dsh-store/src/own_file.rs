//! Opening the files we keep for ourselves — in the platform data and cache dirs (input
//! history, usage book, the app's log, remembered pages) — the way the store's logs are
//! opened: never through a symbolic link, never blocking on a FIFO or device (opened
//! `O_NONBLOCK`, then `fstat` must show a regular file), created owner-only; and written
//! whole through a temporary file created new, never through whatever has a name already.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::Path;

/// Open `path` for reading: refused without blocking if it is a link, FIFO, device, socket
/// or directory.
pub fn open_read(path: &Path) -> io::Result<File> {
    super::nofollow::open_regular(path)
}

/// The bytes of the regular file `path` (opened as [`open_read`] does), at most `cap` of
/// them: a longer file is an error, read no further than `cap` + 1 bytes.
pub fn read_capped(path: &Path, cap: u64) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    open_read(path)?
        .take(cap.saturating_add(1))
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} is larger than {cap} bytes", path.display()),
        ));
    }
    Ok(bytes)
}

/// Write `bytes` as `path`, whole or not at all: into a temporary file created new beside
/// it (`O_CREAT | O_EXCL`, mode 0600: whatever already has a name there — a link planted
/// under a temporary-looking name included — is never opened, written through or removed),
/// synced, then renamed over `path` (a link at `path` itself is replaced, not followed).
pub fn write_replacing(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut temp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .tempfile_in(dir)?;
    temp.write_all(bytes)?;
    temp.as_file().sync_all()?;
    temp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

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
    fn a_replacing_write_never_goes_through_a_link_and_reads_refuse_specials() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("elsewhere");
        std::fs::write(&target, "kept").unwrap();
        let path = dir.path().join("usage.json");
        // Links at every name an old writer used for its temporary file.
        for name in ["usage.json.tmp", ".usage.json.tmp"] {
            std::os::unix::fs::symlink(&target, dir.path().join(name)).unwrap();
        }
        write_replacing(&path, b"{}").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "kept");
        assert_eq!(read_capped(&path, 2).unwrap(), b"{}");
        assert!(read_capped(&path, 1).is_err(), "over the cap");
        // A link at the file itself is replaced, not written through.
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(&target, &path).unwrap();
        assert!(read_capped(&path, 100).is_err(), "a link is not read");
        write_replacing(&path, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "kept");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|s| s.success()));
        let err = read_capped(&fifo, 100).unwrap_err().to_string();
        assert!(err.contains("FIFO"), "{err}");
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(".usage.json.") && n != ".usage.json.tmp")
            .collect();
        assert!(left.is_empty(), "no temporary file left: {left:?}");
    }

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
