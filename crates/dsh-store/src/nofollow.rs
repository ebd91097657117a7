//! Opening files below the store root without following symbolic links and without ever
//! blocking on a special file (docs/session-store.md, on-disk layout).
//!
//! The root itself is resolved once by the store; every component below it is checked with
//! `lstat` and the final open uses `O_NOFOLLOW | O_NONBLOCK`, then `fstat` must show a
//! regular file. A link or special file is an error naming it, which callers report as a
//! skipped session.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Component, Path};

/// Why a path below the root was refused.
fn refused(path: &Path, what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "{} is {what}; dsh-refs never follows or opens it",
            path.display()
        ),
    )
}

/// The kind of a non-regular, non-directory entry, for messages.
pub fn describe(meta: &fs::Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_symlink() {
        return "a symbolic link";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_socket() {
            return "a socket";
        }
        if t.is_block_device() || t.is_char_device() {
            return "a device";
        }
    }
    if t.is_dir() {
        return "a directory";
    }
    "not a regular file"
}

/// Open `path` with `options` plus `O_NOFOLLOW | O_NONBLOCK`; refused unless the open file
/// is a regular one.
pub(crate) fn open_with(path: &Path, options: &mut OpenOptions) -> io::Result<File> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC);
    }
    let file = match options.open(path) {
        Ok(f) => f,
        #[cfg(unix)]
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(refused(path, "a symbolic link"));
        }
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(refused(path, describe(&meta)));
    }
    Ok(file)
}

/// Open `path` for reading: refused if it is a link, FIFO, device, socket or directory.
pub fn open_regular(path: &Path) -> io::Result<File> {
    open_with(path, OpenOptions::new().read(true))
}

/// Open `path` for reading and writing, with the same refusals as [`open_regular`].
pub fn open_regular_rw(path: &Path) -> io::Result<File> {
    open_with(path, OpenOptions::new().read(true).write(true))
}

/// Check that no existing component of `path` below `root` is a symbolic link or a
/// non-directory (the last component may be a regular file). Missing components are fine
/// (they are created later as real directories).
pub fn check_below(root: &Path, path: &Path) -> io::Result<()> {
    let Ok(rest) = path.strip_prefix(root) else {
        return Err(refused(path, "outside the store root"));
    };
    let mut at = root.to_path_buf();
    let parts: Vec<Component<'_>> = rest.components().collect();
    for (i, part) in parts.iter().enumerate() {
        let Component::Normal(name) = part else {
            return Err(refused(path, "not a plain path below the root"));
        };
        at.push(name);
        let meta = match fs::symlink_metadata(&at) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        let last = i + 1 == parts.len();
        if meta.is_dir() || (last && meta.is_file()) {
            continue;
        }
        return Err(refused(&at, describe(&meta)));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn links_and_fifos_are_refused_regular_files_open() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("f"), "x").unwrap();
        fs::create_dir_all(root.join("p/s")).unwrap();
        fs::write(root.join("p/s/file"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path().join("f"), root.join("p/s/link")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("p/linkdir")).unwrap();
        let fifo = root.join("p/s/fifo");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );

        assert!(open_regular(&root.join("p/s/file")).is_ok());
        let err = open_regular(&root.join("p/s/link"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("symbolic link"), "{err}");
        let err = open_regular(&fifo).unwrap_err().to_string();
        assert!(err.contains("FIFO"), "{err}");
        assert!(check_below(root, &root.join("p/s/file")).is_ok());
        assert!(check_below(root, &root.join("p/new/file")).is_ok());
        let err = check_below(root, &root.join("p/linkdir/f"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("linkdir") && err.contains("symbolic link"),
            "{err}"
        );
        assert!(check_below(root, Path::new("/elsewhere")).is_err());
    }
}
