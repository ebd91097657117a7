//! Reading a small file of ours — the config file — the way the store's logs are opened: a
//! regular file only (opened without blocking, then checked, so a FIFO or a device is refused
//! at once instead of hanging or streaming for ever), links followed (a config is often a
//! link into a dotfiles repository), and never more than a size cap.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::path::Path;

/// Open `path` for reading: refused (without blocking) unless it is a regular file.
pub fn open_regular(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC);
    }
    let file = options.open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{}, not a regular file",
                dsh_store::nofollow::describe(&meta)
            ),
        ));
    }
    Ok(file)
}

/// The bytes of the regular file `path`, at most `cap` of them: a longer file is an error
/// (read no further than `cap` + 1 bytes).
pub fn read_capped(path: &Path, cap: u64) -> io::Result<Vec<u8>> {
    let file = open_regular(path)?;
    let mut bytes = Vec::new();
    file.take(cap.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than {cap} bytes, the most a file of this kind may hold"),
        ));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_files_and_links_to_them_are_read_up_to_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.toml");
        std::fs::write(&file, b"[model]\n").unwrap();
        let link = dir.path().join("link.toml");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert_eq!(read_capped(&file, 8).unwrap(), b"[model]\n");
        assert_eq!(read_capped(&link, 8).unwrap(), b"[model]\n");
        let long = read_capped(&file, 7).unwrap_err();
        assert_eq!(long.kind(), io::ErrorKind::InvalidData);
    }

    #[test]
    fn fifos_devices_and_directories_are_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|s| s.success()));
        for path in [fifo.as_path(), Path::new("/dev/zero"), dir.path()] {
            let err = read_capped(path, 1 << 20).unwrap_err();
            assert!(
                err.to_string().contains("not a regular file")
                    || err.kind() == io::ErrorKind::IsADirectory,
                "{}: {err}",
                path.display()
            );
        }
    }
}
