//! The input history on disk: what was sent (messages and command lines) in every window,
//! in the platform data dir, so Up works across restarts and across windows open at once.
//! Drafts that were never sent are not written.
//!
//! One JSON object per line, `{"at":<ms since the epoch it was typed>,"text":"…"}` (a line
//! of the older format, a bare JSON string, reads as typed before any timed entry; other
//! lines are skipped). The file is shared, never rewritten from one window's copy:
//! - a window **appends** its sent inputs while holding an exclusive `flock` on the file,
//!   and first reads what other windows appended since its last read (from the offset it
//!   had reached), so it sees them too;
//! - reading (at start, and when Up begins a walk) takes a shared lock;
//! - the **merged** view orders entries by the time they were typed, whichever window
//!   typed them (a message whose references took long to prepare was appended late but
//!   still sorts by when Enter was pressed); Up recalls newest first;
//! - past [`COMPACT_AT`] bytes the window appending **compacts** it under the same lock:
//!   the newest entries (by time) up to [`MAX_FILE_BYTES`] go to a new temp file that is
//!   renamed over it. A window that waited for the lock on the replaced file sees that the
//!   path names another file now and starts again on the new one; one that had read part
//!   of the old file reads the new one and takes the entries after the last it had seen.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Most bytes a compaction keeps; the oldest entries go first.
const MAX_FILE_BYTES: usize = 1024 * 1024;
/// Size past which the window appending compacts the file.
const COMPACT_AT: u64 = 2 * MAX_FILE_BYTES as u64;
/// Most bytes read at once: the tail of a file this long (from its first whole line).
const READ_MAX: u64 = 2 * COMPACT_AT;
/// How long a window waits for another window's lock before giving up.
const LOCK_WAIT: Duration = Duration::from_secs(2);

/// Why the history file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum HistoryFileError {
    #[error("{path}: {what}")]
    NotAFile { path: PathBuf, what: String },
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} stayed locked by another window for {} s", LOCK_WAIT.as_secs())]
    Busy { path: PathBuf },
}

impl HistoryFileError {
    /// A stable code for notices and logs.
    pub fn code(&self) -> &'static str {
        match self {
            HistoryFileError::NotAFile { .. } => "HISTORY_NOT_A_FILE",
            HistoryFileError::Read { .. } => "HISTORY_READ_FAILED",
            HistoryFileError::Write { .. } => "HISTORY_WRITE_FAILED",
            HistoryFileError::Busy { .. } => "HISTORY_BUSY",
        }
    }
}

/// One sent input and when it was typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryEntry {
    /// Milliseconds since the Unix epoch; 0 for lines of the older format.
    pub at_ms: u64,
    pub text: String,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Line<'a> {
    at: u64,
    #[serde(borrow)]
    text: std::borrow::Cow<'a, str>,
}

/// Which file was read, and how far (always to the end of a whole line).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ReadMark {
    dev: u64,
    ino: u64,
    offset: u64,
}

/// The sent inputs of every window, as kept on disk, and how far this window has read.
#[derive(Debug)]
pub struct HistoryFile {
    path: PathBuf,
    entries: Vec<HistoryEntry>,
    max_entries: usize,
    mark: Option<ReadMark>,
    /// The newest entry this window has seen (found again after a compaction).
    last_seen: Option<HistoryEntry>,
}

impl HistoryFile {
    /// Reads `path` (a missing file is an empty history), keeping the newest `max_entries`
    /// by the time they were typed.
    pub fn load(path: &Path, max_entries: usize) -> Result<HistoryFile, HistoryFileError> {
        let mut file = HistoryFile {
            path: path.to_owned(),
            entries: Vec::new(),
            max_entries,
            mark: None,
            last_seen: None,
        };
        let new = file.read_new(Lock::Shared)?;
        file.entries = new;
        file.entries.sort_by_key(|e| e.at_ms);
        let keep = file.entries.len().saturating_sub(max_entries);
        file.entries.drain(..keep);
        Ok(file)
    }

    /// The entries read at load with the time each was typed, oldest first.
    pub fn timed_entries(&self) -> &[HistoryEntry] {
        &self.entries
    }

    /// Appends a sent `text` typed at `at_ms` (unless blank or a repeat of the newest
    /// entry) under the lock. Returns what Up history gains, oldest first: the entries
    /// other windows appended since this one last read, and `text` among them by time.
    pub fn record(
        &mut self,
        text: &str,
        at_ms: u64,
    ) -> Result<Vec<HistoryEntry>, HistoryFileError> {
        if text.trim().is_empty() || self.max_entries == 0 {
            return Ok(Vec::new());
        }
        let path = self.path.clone();
        let fail = |source| HistoryFileError::Write {
            path: path.clone(),
            source,
        };
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(fail)?;
        let mut file = self.open_locked(Lock::Exclusive)?.ok_or_else(|| {
            fail(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "the file vanished",
            ))
        })?;
        let mut gained = self.read_from(&mut file)?;
        let ours = HistoryEntry {
            at_ms,
            text: text.to_owned(),
        };
        let repeat = self.last_seen.as_ref().is_some_and(|e| e.text == text);
        if !repeat {
            let len = file.metadata().map_err(fail)?.len();
            let mut line = String::new();
            // A line cut short by a crash stays a line of its own (skipped when read).
            if self.mark.is_some_and(|m| m.offset < len) {
                line.push('\n');
            }
            line.push_str(&encode(&ours));
            line.push('\n');
            file.write_all(line.as_bytes()).map_err(fail)?;
            file.sync_data().map_err(fail)?;
            if let Some(mark) = self.mark.as_mut() {
                mark.offset = len + line.len() as u64;
            }
            if self.last_seen.as_ref().is_none_or(|s| at_ms >= s.at_ms) {
                self.last_seen = Some(ours.clone());
            }
            if len + line.len() as u64 > COMPACT_AT {
                self.compact(&mut file)?;
            }
        }
        gained.push(ours);
        gained.sort_by_key(|e| e.at_ms);
        Ok(gained)
    }

    /// What other windows appended since this one last read, oldest first.
    pub fn refresh(&mut self) -> Result<Vec<HistoryEntry>, HistoryFileError> {
        let mut gained = self.read_new(Lock::Shared)?;
        gained.sort_by_key(|e| e.at_ms);
        Ok(gained)
    }

    /// Opens the file (creating it for an exclusive lock) and locks it; `None` when it does
    /// not exist and was not to be created. A compaction renames a new file over the path:
    /// the lock taken on the old one is worth nothing, so the open starts again.
    fn open_locked(&self, lock: Lock) -> Result<Option<File>, HistoryFileError> {
        let deadline = Instant::now() + LOCK_WAIT;
        loop {
            let opened = match lock {
                Lock::Exclusive => dsh_store::own_file::open_append(&self.path),
                Lock::Shared => dsh_store::nofollow::open_regular(&self.path),
            };
            let file = match opened {
                Ok(file) => file,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => {
                    return Err(HistoryFileError::NotAFile {
                        path: self.path.clone(),
                        what: e.to_string(),
                    });
                }
                Err(source) => {
                    return Err(HistoryFileError::Read {
                        path: self.path.clone(),
                        source,
                    });
                }
            };
            loop {
                let locked = match lock {
                    Lock::Exclusive => file.try_lock(),
                    Lock::Shared => file.try_lock_shared(),
                };
                match locked {
                    Ok(()) => break,
                    Err(std::fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    Err(std::fs::TryLockError::WouldBlock) => {
                        return Err(HistoryFileError::Busy {
                            path: self.path.clone(),
                        });
                    }
                    Err(std::fs::TryLockError::Error(source)) => {
                        return Err(HistoryFileError::Read {
                            path: self.path.clone(),
                            source,
                        });
                    }
                }
            }
            if names_the_path(&file, &self.path) {
                return Ok(Some(file));
            }
            if Instant::now() >= deadline {
                return Err(HistoryFileError::Busy {
                    path: self.path.clone(),
                });
            }
        }
    }

    /// Opens and locks the file, then reads what this window has not read yet.
    fn read_new(&mut self, lock: Lock) -> Result<Vec<HistoryEntry>, HistoryFileError> {
        match self.open_locked(lock)? {
            Some(mut file) => self.read_from(&mut file),
            None => Ok(Vec::new()),
        }
    }

    /// The entries of the locked `file` this window has not read yet: from its mark on in
    /// the file it read last, else (a new file: first read, or a compaction) those after
    /// the newest entry it has seen.
    fn read_from(&mut self, file: &mut File) -> Result<Vec<HistoryEntry>, HistoryFileError> {
        let fail = |source| HistoryFileError::Read {
            path: self.path.clone(),
            source,
        };
        let meta = file.metadata().map_err(fail)?;
        let (dev, ino) = identity(&meta);
        let len = meta.len();
        let same = self
            .mark
            .filter(|m| m.dev == dev && m.ino == ino && m.offset <= len);
        let from = same.map_or(0, |m| m.offset);
        let (mut entries, end) = read_lines(file, from, len).map_err(fail)?;
        if same.is_none()
            && let Some(seen) = &self.last_seen
        {
            entries = match entries.iter().rposition(|e| e == seen) {
                Some(at) => entries.split_off(at + 1),
                None => entries
                    .into_iter()
                    .filter(|e| e.at_ms > seen.at_ms)
                    .collect(),
            };
        }
        self.mark = Some(ReadMark {
            dev,
            ino,
            offset: end,
        });
        if let Some(newest) = entries.iter().max_by_key(|e| e.at_ms)
            && self
                .last_seen
                .as_ref()
                .is_none_or(|s| newest.at_ms >= s.at_ms)
        {
            self.last_seen = Some(newest.clone());
        }
        Ok(entries)
    }

    /// Under the exclusive lock on `file`: its newest entries by time, up to
    /// [`MAX_FILE_BYTES`], written to a new temp file renamed over it.
    fn compact(&mut self, file: &mut File) -> Result<(), HistoryFileError> {
        let fail = |source| HistoryFileError::Write {
            path: self.path.clone(),
            source,
        };
        let len = file.metadata().map_err(fail)?.len();
        let (mut entries, _) = read_lines(file, 0, len).map_err(fail)?;
        entries.sort_by_key(|e| e.at_ms);
        let mut out = Vec::new();
        let mut kept = 0;
        for entry in entries.iter().rev() {
            let line = encode(entry);
            if kept + line.len() + 1 > MAX_FILE_BYTES {
                break;
            }
            kept += line.len() + 1;
            out.push(line);
        }
        let mut text = String::with_capacity(kept);
        for line in out.iter().rev() {
            text.push_str(line);
            text.push('\n');
        }
        let dir = self.path.parent().unwrap_or(Path::new("."));
        // Created new (O_EXCL: never a link or another's file), named for what it holds.
        let mut tmp = tempfile::Builder::new()
            .prefix(".input-history.")
            .suffix(".tmp")
            .tempfile_in(dir)
            .map_err(fail)?;
        tmp.write_all(text.as_bytes()).map_err(fail)?;
        tmp.as_file().sync_all().map_err(fail)?;
        let replaced = tmp.persist(&self.path).map_err(|e| fail(e.error))?;
        let (dev, ino) = identity(&replaced.metadata().map_err(fail)?);
        self.mark = Some(ReadMark {
            dev,
            ino,
            offset: text.len() as u64,
        });
        Ok(())
    }
}

#[derive(Clone, Copy)]
enum Lock {
    Shared,
    Exclusive,
}

/// Whether `path` still names the open `file` (no compaction replaced it meanwhile).
fn names_the_path(file: &File, path: &Path) -> bool {
    match (file.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(open), Ok(named)) => identity(&open) == identity(&named),
        _ => false,
    }
}

#[cfg(unix)]
fn identity(meta: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

#[cfg(not(unix))]
fn identity(meta: &std::fs::Metadata) -> (u64, u64) {
    (meta.len(), 0)
}

fn encode(entry: &HistoryEntry) -> String {
    let line = Line {
        at: entry.at_ms,
        text: std::borrow::Cow::Borrowed(&entry.text),
    };
    serde_json::to_string(&line).unwrap_or_default()
}

fn decode(line: &str) -> Option<HistoryEntry> {
    if let Ok(line) = serde_json::from_str::<Line<'_>>(line) {
        return Some(HistoryEntry {
            at_ms: line.at,
            text: line.text.into_owned(),
        });
    }
    let text = serde_json::from_str::<String>(line).ok()?;
    Some(HistoryEntry { at_ms: 0, text })
}

/// The whole lines of `file` between `from` and `len` (at most the last [`READ_MAX`]
/// bytes, from the first whole line in them), and the offset after the last whole line.
fn read_lines(file: &mut File, from: u64, len: u64) -> std::io::Result<(Vec<HistoryEntry>, u64)> {
    let start = from.max(len.saturating_sub(READ_MAX));
    file.seek(SeekFrom::Start(start))?;
    let mut bytes = Vec::new();
    file.take(len - start.min(len)).read_to_end(&mut bytes)?;
    let mut body: &[u8] = &bytes;
    let mut offset = start;
    if start > from {
        // Started inside a line: it begins after the first line break.
        match body.iter().position(|&b| b == b'\n') {
            Some(at) => {
                body = body.get(at + 1..).unwrap_or_default();
                offset += at as u64 + 1;
            }
            None => return Ok((Vec::new(), from)),
        }
    }
    let mut entries = Vec::new();
    while let Some(at) = body.iter().position(|&b| b == b'\n') {
        let (line, rest) = body.split_at(at);
        if let Some(entry) = std::str::from_utf8(line).ok().and_then(decode) {
            entries.push(entry);
        }
        body = rest.get(1..).unwrap_or_default();
        offset += at as u64 + 1;
    }
    Ok((entries, offset))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn entries(file: &HistoryFile) -> Vec<&str> {
        file.timed_entries()
            .iter()
            .map(|e| e.text.as_str())
            .collect()
    }

    fn gained_texts(gained: Vec<HistoryEntry>) -> Vec<String> {
        gained.into_iter().map(|e| e.text).collect()
    }

    #[test]
    fn round_trip_keeps_text_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("history.jsonl");
        let mut file = HistoryFile::load(&path, 10).unwrap();
        assert!(entries(&file).is_empty(), "missing file: empty");
        let texts = [
            "plain",
            "two\nlines\twith a tab",
            "@[A \\] b](dsh-session:ImEi) see",
            "quote \" and \\ backslash",
        ];
        for (i, t) in texts.iter().enumerate() {
            assert_eq!(gained_texts(file.record(t, i as u64 + 1).unwrap()), [*t]);
        }
        file.record("plain2", 10).unwrap();
        file.record("plain2", 11).unwrap();
        assert!(gained_texts(file.record("   ", 12).unwrap()).is_empty());
        let again = HistoryFile::load(&path, 10).unwrap();
        let mut want = texts.to_vec();
        want.push("plain2");
        assert_eq!(entries(&again), want);
    }

    #[test]
    fn capped_by_entries_and_bad_lines_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("history.jsonl");
        // Older-format lines, a timed one, junk, and a last line cut short by a crash.
        std::fs::write(
            &path,
            "\"a\"\nnot json\n{\"x\":1}\n\"b\"\n{\"at\":5,\"text\":\"c\"}\n\"d\"\n\"cut",
        )
        .unwrap();
        let mut file = HistoryFile::load(&path, 2).unwrap();
        assert_eq!(entries(&file), ["d", "c"], "older-format lines come first");
        file.record("e", 6).unwrap();
        assert_eq!(
            entries(&HistoryFile::load(&path, 5).unwrap()),
            ["a", "b", "d", "c", "e"],
            "the cut line stayed junk, the next entry a line of its own"
        );
        let none = HistoryFile::load(&path, 0).unwrap();
        assert!(entries(&none).is_empty());
    }

    /// Issue 34 item 9: with two windows open, each appends; neither's entries vanish, and
    /// every window reads them all in the order they were typed.
    #[test]
    fn two_windows_sending_in_turn_keep_every_entry_in_typed_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("input-history.jsonl");
        let mut one = HistoryFile::load(&path, 50).unwrap();
        let mut two = HistoryFile::load(&path, 50).unwrap();
        assert_eq!(
            gained_texts(one.record("one: first", 100).unwrap()),
            ["one: first"]
        );
        assert_eq!(
            gained_texts(two.record("two: first", 200).unwrap()),
            ["one: first", "two: first"],
            "the other window's entry comes along"
        );
        assert_eq!(
            gained_texts(one.record("one: second", 300).unwrap()),
            ["two: first", "one: second"]
        );
        // Enter pressed in window two before window one's last, appended after it (its
        // references took long to prepare): ordered by when it was typed.
        assert_eq!(
            gained_texts(two.record("two: slow", 250).unwrap()),
            ["two: slow", "one: second"]
        );
        assert_eq!(gained_texts(one.refresh().unwrap()), ["two: slow"]);
        assert!(gained_texts(one.refresh().unwrap()).is_empty(), "read once");
        assert!(
            gained_texts(two.refresh().unwrap()).is_empty(),
            "its own entry is not read back"
        );
        let third = HistoryFile::load(&path, 50).unwrap();
        assert_eq!(
            entries(&third),
            ["one: first", "two: first", "two: slow", "one: second"]
        );
    }

    #[test]
    fn windows_appending_at_once_lose_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("input-history.jsonl");
        let threads: Vec<_> = (0..4u64)
            .map(|w| {
                let path = path.clone();
                std::thread::spawn(move || {
                    let mut file = HistoryFile::load(&path, 1000).unwrap();
                    for i in 0..50u64 {
                        file.record(&format!("w{w} m{i}"), i * 10 + w).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let all = HistoryFile::load(&path, 1000).unwrap();
        assert_eq!(entries(&all).len(), 200);
        let want: Vec<String> = (0..50u64)
            .flat_map(|i| (0..4).map(move |w| format!("w{w} m{i}")))
            .collect();
        assert_eq!(entries(&all), want, "ordered by the time they were typed");
    }

    #[test]
    fn compaction_keeps_the_newest_and_other_windows_carry_on_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("input-history.jsonl");
        let mut one = HistoryFile::load(&path, 1000).unwrap();
        let mut two = HistoryFile::load(&path, 1000).unwrap();
        let big = "x".repeat(MAX_FILE_BYTES / 3);
        let mut at = 0;
        let mut len_before = 0;
        let mut compacted = false;
        for i in 0..12 {
            at += 1;
            one.record(&format!("{i} {big}"), at).unwrap();
            let len = std::fs::metadata(&path).unwrap().len();
            compacted |= len < len_before;
            len_before = len;
            assert!(len <= COMPACT_AT + big.len() as u64 + 64, "{len}");
        }
        assert!(compacted, "the file was compacted");
        let len = std::fs::metadata(&path).unwrap().len();
        assert!(len <= COMPACT_AT, "{len}");
        // Window two read the file before it was replaced: it gets the entries after the
        // newest it had seen (none yet: those still in the file), then its own is kept.
        let gained = gained_texts(two.refresh().unwrap());
        assert!(
            gained.last().is_some_and(|t| t.starts_with("11 ")),
            "{}",
            gained.len()
        );
        at += 1;
        assert_eq!(gained_texts(two.record("after", at).unwrap()), ["after"]);
        assert_eq!(gained_texts(one.refresh().unwrap()), ["after"]);
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "no temp file left: {names:?}");
        let again = HistoryFile::load(&path, 1000).unwrap();
        assert_eq!(entries(&again).last().copied(), Some("after"));
        assert!(entries(&again).iter().any(|t| t.starts_with("11 ")));
    }

    #[test]
    fn a_huge_file_is_read_from_its_tail() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("history.jsonl");
        let mut text = String::new();
        for i in 0..400_000u64 {
            text.push_str(&encode(&HistoryEntry {
                at_ms: i,
                text: format!("entry {i}"),
            }));
            text.push('\n');
        }
        assert!(text.len() as u64 > READ_MAX);
        std::fs::write(&path, &text).unwrap();
        let file = HistoryFile::load(&path, 3).unwrap();
        assert_eq!(
            entries(&file),
            ["entry 399997", "entry 399998", "entry 399999"]
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_directory_or_link_is_an_error_not_a_hang() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            let err = HistoryFile::load(&fifo, 10).unwrap_err();
            assert_eq!(err.code(), "HISTORY_NOT_A_FILE");
        }
        let err = HistoryFile::load(dir.path(), 10).unwrap_err();
        assert_eq!(err.code(), "HISTORY_NOT_A_FILE");
        // A link is never read or written through.
        let target = dir.path().join("elsewhere");
        std::fs::write(&target, "kept\n").unwrap();
        let link = dir.path().join("history.jsonl");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert_eq!(
            HistoryFile::load(&link, 10).unwrap_err().code(),
            "HISTORY_NOT_A_FILE"
        );
        let mut file = HistoryFile {
            path: link.clone(),
            entries: Vec::new(),
            max_entries: 10,
            mark: None,
            last_seen: None,
        };
        assert_eq!(
            file.record("x", 1).unwrap_err().code(),
            "HISTORY_NOT_A_FILE"
        );
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "kept\n");
    }

    #[test]
    fn a_lock_held_by_another_window_is_waited_for_then_reported() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("history.jsonl");
        let mut file = HistoryFile::load(&path, 10).unwrap();
        file.record("a", 1).unwrap();
        let held = std::fs::File::open(&path).unwrap();
        held.lock().unwrap();
        let err = file.record("b", 2).unwrap_err();
        assert_eq!(err.code(), "HISTORY_BUSY");
        held.unlock().unwrap();
        assert_eq!(gained_texts(file.record("b", 3).unwrap()), ["b"]);
    }

    #[test]
    fn a_failed_write_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("not-a-dir");
        std::fs::write(&blocker, "x").unwrap();
        let under_a_file = blocker.join("history.jsonl");
        assert_eq!(
            HistoryFile::load(&under_a_file, 10).unwrap_err().code(),
            "HISTORY_READ_FAILED"
        );
        let mut file = HistoryFile {
            path: under_a_file,
            entries: Vec::new(),
            max_entries: 10,
            mark: None,
            last_seen: None,
        };
        let err = file.record("lost?", 1).unwrap_err();
        assert_eq!(err.code(), "HISTORY_WRITE_FAILED");
    }
}
