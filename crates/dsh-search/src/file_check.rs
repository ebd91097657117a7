//! Checking an index's files before tantivy reads them: every segment file's checksum is
//! verified once (a damaged file could otherwise make the engine fail in ways it does not
//! report as errors) and remembered by name, length and mtime in a small list next to the
//! index, so a warm open checks only files it has not seen. Every small file of the index
//! directory is read like a store's log is opened — never through a link, never blocking on
//! a FIFO or device, and only up to a size cap — and written only as a new file of our own
//! renamed over its name.

use std::collections::BTreeSet;
use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use tantivy::Index;
use tantivy::index::SegmentComponent;

/// The list of verified files.
pub const VERIFIED_FILE: &str = "dsh-search-verified";
/// Largest list of verified files read (a few hundred bytes per segment).
const MAX_VERIFIED_BYTES: u64 = 4 << 20;
/// Tantivy's footer is 8 bytes at least; a shorter file is damaged.
const MIN_FILE: u64 = 8;

type Seen = BTreeSet<(String, u64, u128)>;

/// A segment file's name, length and mtime; `None` when it is missing or not a regular
/// file (a link, FIFO or device is never opened: tantivy would follow it or block on it).
fn identity(dir: &Path, name: &str) -> Option<(String, u64, u128)> {
    let meta = fs::symlink_metadata(dir.join(name)).ok()?;
    if !meta.is_file() {
        return None;
    }
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    Some((name.to_owned(), meta.len(), mtime))
}

fn segment_files(index: &Index) -> Result<Vec<PathBuf>, String> {
    let metas = index
        .searchable_segment_metas()
        .map_err(|e| format!("was damaged ({e})"))?;
    let mut out = Vec::new();
    for meta in metas {
        for component in [
            SegmentComponent::Postings,
            SegmentComponent::Positions,
            SegmentComponent::Terms,
            SegmentComponent::Store,
            SegmentComponent::FastFields,
            SegmentComponent::FieldNorms,
        ] {
            out.push(meta.relative_path(component));
        }
        if meta.has_deletes() {
            out.push(meta.relative_path(SegmentComponent::Delete));
        }
    }
    Ok(out)
}

/// The bytes of the small file `path`: a regular file (a link, FIFO, device or directory is
/// refused without blocking) of at most `cap` bytes (a longer one is an error, read no
/// further than `cap` + 1 bytes).
pub fn read_small(path: &Path, cap: u64) -> io::Result<Vec<u8>> {
    let file = dsh_store::nofollow::open_regular(path)?;
    let mut bytes = Vec::new();
    file.take(cap.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} is larger than {cap} bytes", path.display()),
        ));
    }
    Ok(bytes)
}

/// Numbers this process's temporary files (threads may write at once).
static TEMPS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Write `bytes` as `dir/name`: into a new file of our own (`create_new`: nothing that is
/// there, a link included, is ever opened for writing) renamed over `name`. The temporary
/// file is `.<name>.<pid>.<n>.tmp`.
pub fn write_replacing(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<()> {
    let n = TEMPS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let temp = dir.join(temp_name(name, n));
    let written = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temp)
        .and_then(|mut f| f.write_all(bytes));
    match written {
        // Not ours to remove: another process's file (or a link) has that name.
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(e),
        Err(e) => {
            let _ = fs::remove_file(&temp);
            Err(e)
        }
        Ok(()) => fs::rename(&temp, dir.join(name)).inspect_err(|_| {
            let _ = fs::remove_file(&temp);
        }),
    }
}

/// The temporary name [`write_replacing`] uses for `name`.
fn temp_name(name: &str, n: u64) -> String {
    format!(".{name}.{}.{n}.tmp", std::process::id())
}

/// Whether `file` is a temporary file [`write_replacing`] made for `name` (of any process).
pub fn is_temp_of(file: &str, name: &str) -> bool {
    file.strip_prefix('.')
        .and_then(|f| f.strip_prefix(name))
        .and_then(|f| f.strip_prefix('.'))
        .and_then(|f| f.strip_suffix(".tmp"))
        .is_some_and(|rest| {
            let mut parts = rest.split('.');
            let numbers = parts
                .by_ref()
                .take(2)
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
            numbers && parts.next().is_none() && rest.contains('.')
        })
}

fn load(dir: &Path) -> Seen {
    read_small(&dir.join(VERIFIED_FILE), MAX_VERIFIED_BYTES)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// Verify every segment file of `index` in `dir` not verified before.
pub fn verify(index: &Index, dir: &Path) -> Result<(), String> {
    let seen = load(dir);
    let mut now = Seen::new();
    let mut fresh = false;
    for rel in segment_files(index)? {
        let name = rel.to_string_lossy().into_owned();
        let Some(id) = identity(dir, &name) else {
            return Err(format!(
                "was damaged ({name} is missing or not a regular file)"
            ));
        };
        if !seen.contains(&id) {
            if id.1 < MIN_FILE {
                return Err(format!("was damaged ({name} is truncated)"));
            }
            match index.directory().validate_checksum(&rel) {
                Ok(true) => {}
                Ok(false) => return Err(format!("was damaged ({name} fails its checksum)")),
                Err(e) => return Err(format!("was damaged ({e})")),
            }
            fresh = true;
        }
        now.insert(id);
    }
    if fresh || now != seen {
        remember(dir, &now);
    }
    Ok(())
}

/// After this process committed: every current segment file is its own or was verified.
pub fn trust_current(index: &Index, dir: &Path) {
    let Ok(files) = segment_files(index) else {
        return;
    };
    let now: Seen = files
        .iter()
        .filter_map(|rel| identity(dir, &rel.to_string_lossy()))
        .collect();
    remember(dir, &now);
}

/// Write the list atomically (a lost race only means a file is verified again).
fn remember(dir: &Path, seen: &Seen) {
    let Ok(bytes) = serde_json::to_vec(seen) else {
        return;
    };
    if let Err(e) = write_replacing(dir, VERIFIED_FILE, &bytes) {
        tracing::debug!(dir = %dir.display(), error = %e, "verified files not remembered");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temporary_names_are_recognised_exactly() {
        let name = temp_name("dsh-search-verified", 7);
        assert!(is_temp_of(&name, "dsh-search-verified"));
        let cases = [
            (".dsh-search-verified.12.0.tmp", true),
            (".dsh-search-verified.12.tmp", false),
            (".dsh-search-verified.a.0.tmp", false),
            (".dsh-search-verified.1.2.3.tmp", false),
            ("dsh-search-verified.12.0.tmp", false),
            (".dsh-search-verified.12.0", false),
            (".dsh-search-format.12.0.tmp", false),
        ];
        for (file, want) in cases {
            assert_eq!(is_temp_of(file, "dsh-search-verified"), want, "{file}");
        }
    }

    #[test]
    fn small_reads_refuse_links_fifos_and_long_files_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        fs::write(&file, b"12345").unwrap();
        assert_eq!(read_small(&file, 5).unwrap(), b"12345");
        assert!(read_small(&file, 4).is_err());
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(read_small(&link, 100).is_err());
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            assert!(read_small(&fifo, 100).is_err(), "a FIFO is refused at once");
        }
        assert!(read_small(dir.path(), 100).is_err());
    }

    #[test]
    fn replacing_never_writes_through_a_planted_name() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        fs::write(&victim, b"precious").unwrap();
        // Plant every temporary name this process could pick next as a link to the victim.
        let next = TEMPS.load(std::sync::atomic::Ordering::Relaxed);
        for n in next..next + 4 {
            let _ = std::os::unix::fs::symlink(&victim, dir.path().join(temp_name("list", n)));
        }
        let _ = write_replacing(dir.path(), "list", b"ours");
        assert_eq!(fs::read(&victim).unwrap(), b"precious");
    }
}
