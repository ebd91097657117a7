//! The frame-offset index of a `.zstd` log persisted in the store's cache directory
//! (`<cache>/dsh-refs/<store>/frames/<hash of the log's path>.idx`; never in the store), so a
//! later process scrolls back through a compressed log without decompressing it from the
//! start first (docs/session-store.md: windowed reads).
//!
//! A cache, never a source of truth: it is used only while its log is the same file (device
//! and inode) and the bytes before where it stopped are unchanged, every read from it is
//! checked as it goes, and a file that is absent, damaged, of another version, larger than
//! [`MAX_FILE_BYTES`], not a regular file, or not this user's own is ignored and replaced.
//! It is opened without blocking (a FIFO is refused). Deleting it only costs one pass over
//! the log. At most [`MAX_FILES`] are kept per store; the oldest go first.
//!
//! Layout (little-endian): magic `DSHRLIX\0`, [`VERSION`], the body's length and CRC-32
//! (a 24-byte head), then the body: format, file id, checked length and tail checksum, end
//! (readable length, next seq, last line), resume frame, spacing, and the checkpoints
//! (count, then compressed and plaintext frame offsets, line offset, line, seq of each).

use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use super::dsh_compat::FrameStart;
use super::log_index::{Checkpoint, LogIndex, MAX_CHECKPOINTS};
use super::reader::{LogFormat, ScanPos};

/// Subdirectory of the store's cache directory holding these files.
pub const FRAMES_DIR: &str = "frames";
/// Largest file read or written.
pub const MAX_FILE_BYTES: u64 = 4 << 20;
/// Most files kept per store.
pub const MAX_FILES: usize = 64;
/// Bumped whenever the layout changes.
const VERSION: u32 = 1;
const MAGIC: &[u8; 8] = b"DSHRLIX\0";
const HEAD_LEN: usize = 24;
/// File name suffix.
const SUFFIX: &str = ".idx";

/// The file name for the log at `log`: 16 hex digits of a stable hash of its path.
pub fn file_name(log: &Path) -> String {
    format!(
        "{:016x}{SUFFIX}",
        super::cache::stable_hash(log.as_os_str().as_encoded_bytes())
    )
}

/// Whether `name` is one of these files' names.
fn is_ours(name: &str) -> bool {
    name.strip_suffix(SUFFIX)
        .is_some_and(|h| h.len() == 16 && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn put(out: &mut Vec<u8>, n: u64) {
    out.extend_from_slice(&n.to_le_bytes());
}

/// The file's bytes; `None` when the index holds more checkpoints than a file may.
pub fn encode(index: &LogIndex) -> Option<Vec<u8>> {
    if index.checkpoints.len() > MAX_CHECKPOINTS {
        return None;
    }
    let mut body = Vec::with_capacity(96 + index.checkpoints.len() * 40);
    body.push(match index.format {
        LogFormat::Plain => 1,
        LogFormat::Zstd => 2,
    });
    match index.file_id {
        None => body.push(0),
        Some((dev, ino)) => {
            body.push(1);
            put(&mut body, dev);
            put(&mut body, ino);
        }
    }
    put(&mut body, index.checked_len);
    body.extend_from_slice(&index.tail_check.to_le_bytes());
    for n in [
        index.end.readable_len,
        index.end.next_seq,
        index.end.line,
        index.resume.compressed,
        index.resume.plain,
        index.spacing,
    ] {
        put(&mut body, n);
    }
    body.extend_from_slice(&u32::try_from(index.checkpoints.len()).ok()?.to_le_bytes());
    for c in &index.checkpoints {
        for n in [c.frame.compressed, c.frame.plain, c.offset, c.line, c.seq] {
            put(&mut body, n);
        }
    }
    let mut out = Vec::with_capacity(HEAD_LEN + body.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    put(&mut out, body.len() as u64);
    out.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
    out.extend_from_slice(&body);
    (out.len() as u64 <= MAX_FILE_BYTES).then_some(out)
}

/// Reads fields off a body.
struct Fields<'a>(&'a [u8]);

impl Fields<'_> {
    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let (head, rest) = self.0.split_first_chunk::<N>()?;
        self.0 = rest;
        Some(*head)
    }
    fn u8(&mut self) -> Option<u8> {
        Some(self.take::<1>()?[0])
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take()?))
    }
}

/// The index in `bytes`; `None` unless they are a whole, undamaged file of this version.
pub fn decode(bytes: &[u8]) -> Option<LogIndex> {
    let mut head = Fields(bytes);
    if &head.take::<8>()? != MAGIC || head.u32()? != VERSION {
        return None;
    }
    let len = head.u64()?;
    let crc = head.u32()?;
    let body = head.0;
    if body.len() as u64 != len || crc32fast::hash(body) != crc {
        return None;
    }
    let mut f = Fields(body);
    let format = match f.u8()? {
        1 => LogFormat::Plain,
        2 => LogFormat::Zstd,
        _ => return None,
    };
    let file_id = match f.u8()? {
        0 => None,
        1 => Some((f.u64()?, f.u64()?)),
        _ => return None,
    };
    let checked_len = f.u64()?;
    let tail_check = f.u32()?;
    let end = ScanPos {
        readable_len: f.u64()?,
        next_seq: f.u64()?,
        line: f.u64()?,
    };
    let resume = FrameStart {
        compressed: f.u64()?,
        plain: f.u64()?,
    };
    let spacing = f.u64()?;
    let count = usize::try_from(f.u32()?).ok()?;
    if count > MAX_CHECKPOINTS || f.0.len() != count.checked_mul(40)? {
        return None;
    }
    let mut checkpoints = Vec::with_capacity(count);
    for _ in 0..count {
        checkpoints.push(Checkpoint {
            frame: FrameStart {
                compressed: f.u64()?,
                plain: f.u64()?,
            },
            offset: f.u64()?,
            line: f.u64()?,
            seq: f.u64()?,
        });
    }
    // Checkpoints in log order, none past the end: anything else is not a file we wrote.
    let ordered = checkpoints.windows(2).all(|w| {
        w.first()
            .zip(w.get(1))
            .is_some_and(|(a, b)| a.offset < b.offset && a.seq < b.seq && a.line < b.line)
    });
    let within = checkpoints
        .iter()
        .all(|c| c.offset < end.readable_len && c.frame.plain <= c.offset && c.seq < end.next_seq);
    (ordered && within && resume.plain <= end.readable_len).then_some(LogIndex {
        format,
        file_id,
        checked_len,
        tail_check,
        end,
        resume,
        spacing,
        checkpoints,
    })
}

/// The index stored in `dir` for the log at `log`, if there is a usable one.
pub fn load(dir: &Path, log: &Path) -> Option<LogIndex> {
    let path = dir.join(file_name(log));
    let file = super::nofollow::open_regular(&path).ok()?;
    let meta = file.metadata().ok()?;
    if !super::index_file::own_cache_file(&meta, dir) {
        return None;
    }
    if meta.len() > MAX_FILE_BYTES {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES).read_to_end(&mut bytes).ok()?;
    decode(&bytes)
}

/// Store `index` for the log at `log` in `dir` (created private to this user), replacing
/// the file atomically; then the oldest files beyond [`MAX_FILES`] go.
pub fn save(dir: &Path, log: &Path, index: &LogIndex) -> io::Result<()> {
    let Some(bytes) = encode(index) else {
        return Ok(());
    };
    super::index_file::create_private_dir(dir)?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".frames.")
        .suffix(".tmp")
        .tempfile_in(dir)?;
    tmp.write_all(&bytes)?;
    tmp.persist(dir.join(file_name(log))).map_err(|e| e.error)?;
    prune(dir)
}

/// Remove the oldest of these files while there are more than [`MAX_FILES`] (only names
/// this module writes; anything else in the directory is left alone).
fn prune(dir: &Path) -> io::Result<()> {
    let mut ours: Vec<(std::time::SystemTime, PathBuf)> = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        if !name.to_str().is_some_and(is_ours) || !entry.file_type()?.is_file() {
            continue;
        }
        let modified = entry
            .metadata()?
            .modified()
            .unwrap_or(std::time::UNIX_EPOCH);
        ours.push((modified, entry.path()));
    }
    if ours.len() <= MAX_FILES {
        return Ok(());
    }
    ours.sort();
    for (_, path) in ours.iter().take(ours.len() - MAX_FILES) {
        match fs::remove_file(path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

/// The directory of these files for a store whose cache directory is `store_cache`.
pub fn dir_in(store_cache: &Path) -> PathBuf {
    store_cache.join(FRAMES_DIR)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> LogIndex {
        LogIndex {
            format: LogFormat::Zstd,
            file_id: Some((3, 4)),
            checked_len: 900,
            tail_check: 0xfeed,
            end: ScanPos {
                readable_len: 5000,
                next_seq: 70,
                line: 71,
            },
            resume: FrameStart {
                compressed: 800,
                plain: 4000,
            },
            spacing: 256,
            checkpoints: vec![
                Checkpoint {
                    frame: FrameStart {
                        compressed: 60,
                        plain: 80,
                    },
                    offset: 80,
                    line: 2,
                    seq: 0,
                },
                Checkpoint {
                    frame: FrameStart {
                        compressed: 400,
                        plain: 2000,
                    },
                    offset: 2010,
                    line: 30,
                    seq: 28,
                },
            ],
        }
    }

    #[test]
    fn round_trip_and_every_damage_is_refused() {
        let index = sample();
        let bytes = encode(&index).unwrap();
        assert_eq!(decode(&bytes), Some(index));
        for cut in 0..bytes.len() {
            assert_eq!(decode(&bytes[..cut]), None, "cut at {cut}");
        }
        for at in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x01;
            assert_eq!(decode(&damaged), None, "byte {at}");
        }
        // Well-formed but impossible: checkpoints out of order or past the end.
        let mut odd = sample();
        odd.checkpoints.swap(0, 1);
        assert_eq!(decode(&encode(&odd).unwrap()), None);
        let mut past = sample();
        past.end.next_seq = 10;
        assert_eq!(decode(&encode(&past).unwrap()), None);
    }

    #[test]
    fn saved_files_are_capped_and_only_ours_are_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("frames");
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("notes.txt"), "keep").unwrap();
        fs::write(dir.join("0123.idx"), "keep too").unwrap();
        let index = sample();
        for n in 0..MAX_FILES + 5 {
            let log = PathBuf::from(format!("/store/p/s{n}/session.jsonl.zstd"));
            save(&dir, &log, &index).unwrap();
        }
        let names: Vec<String> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.iter().filter(|n| is_ours(n)).count(), MAX_FILES);
        assert!(names.contains(&"notes.txt".to_owned()));
        assert!(names.contains(&"0123.idx".to_owned()));
        let last = PathBuf::from(format!("/store/p/s{}/session.jsonl.zstd", MAX_FILES + 4));
        assert_eq!(load(&dir, &last), Some(index));
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_or_a_file_others_may_write_is_not_read() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("frames");
        let log = Path::new("/store/p/s/session.jsonl.zstd");
        save(&dir, log, &sample()).unwrap();
        let path = dir.join(file_name(log));
        fs::set_permissions(&path, fs::Permissions::from_mode(0o666)).unwrap();
        assert_eq!(load(&dir, log), None, "writable by others");
        fs::remove_file(&path).unwrap();
        let made = std::process::Command::new("mkfifo").arg(&path).status();
        if made.is_ok_and(|s| s.success()) {
            assert_eq!(load(&dir, log), None, "a FIFO is refused without blocking");
        }
    }
}
