//! The input history on disk: what was sent (messages and command lines), newest last, one
//! JSON string per line in the platform data dir, so Up works across restarts. Capped by
//! `tui.history_size` and in bytes; rewritten atomically (temp file + rename) on each send.
//! Drafts that were never sent are not written.

use std::collections::VecDeque;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// Most bytes of history kept on disk (and read back); the oldest entries go first.
const MAX_FILE_BYTES: usize = 1024 * 1024;

/// Why the history file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum HistoryFileError {
    #[error("{path} is not a regular file")]
    NotAFile { path: PathBuf },
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
}

impl HistoryFileError {
    /// A stable code for notices and logs.
    pub fn code(&self) -> &'static str {
        match self {
            HistoryFileError::NotAFile { .. } => "HISTORY_NOT_A_FILE",
            HistoryFileError::Read { .. } => "HISTORY_READ_FAILED",
            HistoryFileError::Write { .. } => "HISTORY_WRITE_FAILED",
        }
    }
}

/// The sent inputs of earlier runs and this one, as kept on disk.
#[derive(Debug)]
pub struct HistoryFile {
    path: PathBuf,
    entries: VecDeque<String>,
    max_entries: usize,
}

impl HistoryFile {
    /// Reads `path` (a missing file is an empty history), keeping the newest `max_entries`.
    /// Lines that are not a JSON string are skipped.
    pub fn load(path: &Path, max_entries: usize) -> Result<HistoryFile, HistoryFileError> {
        let mut file = HistoryFile {
            path: path.to_owned(),
            entries: VecDeque::new(),
            max_entries,
        };
        // Opened without blocking and checked on the open file (not checked by path, then
        // opened: a FIFO swapped in between would block): a FIFO or device would block or
        // stream forever, so only regular files are read.
        let opened = match crate::regular_file::open_regular(path) {
            Ok(opened) => opened,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(file),
            Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => {
                return Err(HistoryFileError::NotAFile {
                    path: path.to_owned(),
                });
            }
            Err(source) => {
                return Err(HistoryFileError::Read {
                    path: path.to_owned(),
                    source,
                });
            }
        };
        let text = read_tail(opened).map_err(|source| HistoryFileError::Read {
            path: path.to_owned(),
            source,
        })?;
        for line in text.lines() {
            if let Ok(entry) = serde_json::from_str::<String>(line) {
                file.entries.push_back(entry);
            }
        }
        file.trim();
        Ok(file)
    }

    /// The entries, oldest first.
    pub fn entries(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(String::as_str)
    }

    /// Adds a sent `text` (unless blank or a repeat of the newest) and rewrites the file.
    pub fn record(&mut self, text: &str) -> Result<(), HistoryFileError> {
        if text.trim().is_empty() || self.max_entries == 0 {
            return Ok(());
        }
        if self.entries.back().is_some_and(|last| last == text) {
            return Ok(());
        }
        self.entries.push_back(text.to_owned());
        self.trim();
        self.save()
    }

    fn trim(&mut self) {
        while self.entries.len() > self.max_entries {
            self.entries.pop_front();
        }
        let mut bytes: usize = self.entries.iter().map(|e| encoded_len(e)).sum();
        while bytes > MAX_FILE_BYTES {
            match self.entries.pop_front() {
                Some(old) => bytes -= encoded_len(&old),
                None => break,
            }
        }
    }

    /// Writes every entry to a temp file next to the history and renames it over the old
    /// one, so a crash or a full disk leaves the previous file intact.
    fn save(&self) -> Result<(), HistoryFileError> {
        let fail = |source| HistoryFileError::Write {
            path: self.path.clone(),
            source,
        };
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(fail)?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(fail)?;
        let mut out = String::new();
        for entry in &self.entries {
            out.push_str(&encode(entry));
            out.push('\n');
        }
        tmp.write_all(out.as_bytes()).map_err(fail)?;
        tmp.as_file().sync_all().map_err(fail)?;
        tmp.persist(&self.path).map_err(|e| fail(e.error))?;
        Ok(())
    }
}

fn encode(entry: &str) -> String {
    serde_json::Value::String(entry.to_owned()).to_string()
}

fn encoded_len(entry: &str) -> usize {
    encode(entry).len() + 1
}

/// The last [`MAX_FILE_BYTES`] of the open regular file, from the first whole line on.
fn read_tail(mut file: std::fs::File) -> std::io::Result<String> {
    let len = file.metadata()?.len();
    let max = MAX_FILE_BYTES as u64;
    let skip = len.saturating_sub(max);
    file.seek(SeekFrom::Start(skip))?;
    let mut bytes = Vec::new();
    file.take(max).read_to_end(&mut bytes)?;
    let text = String::from_utf8_lossy(&bytes);
    Ok(match (skip > 0, text.find('\n')) {
        (true, Some(at)) => text.get(at + 1..).unwrap_or_default().to_owned(),
        (true, None) => String::new(),
        (false, _) => text.into_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn entries(file: &HistoryFile) -> Vec<&str> {
        file.entries().collect()
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
        for t in texts {
            file.record(t).unwrap();
        }
        file.record("plain2").unwrap();
        file.record("plain2").unwrap();
        file.record("   ").unwrap();
        let again = HistoryFile::load(&path, 10).unwrap();
        let mut want = texts.to_vec();
        want.push("plain2");
        assert_eq!(entries(&again), want);
    }

    #[test]
    fn capped_by_entries_and_bad_lines_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("history.jsonl");
        // The last line has no newline; the one before is cut off mid-string (a crash).
        std::fs::write(
            &path,
            "\"a\"\nnot json\n{\"x\":1}\n\"b\"\n\"c\"\n\"cut\n\"d\"",
        )
        .unwrap();
        let mut file = HistoryFile::load(&path, 2).unwrap();
        assert_eq!(entries(&file), ["c", "d"]);
        file.record("e").unwrap();
        assert_eq!(entries(&HistoryFile::load(&path, 5).unwrap()), ["d", "e"]);
        let none = HistoryFile::load(&path, 0).unwrap();
        assert!(entries(&none).is_empty());
    }

    #[test]
    fn capped_by_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("history.jsonl");
        let mut file = HistoryFile::load(&path, 1000).unwrap();
        let big = "x".repeat(MAX_FILE_BYTES / 3);
        for _ in 0..5 {
            file.record(&big).unwrap();
            file.record("small").unwrap();
        }
        let len = std::fs::metadata(&path).unwrap().len();
        assert!(len <= MAX_FILE_BYTES as u64, "{len}");
        let again = HistoryFile::load(&path, 1000).unwrap();
        assert_eq!(again.entries().last(), Some("small"));
    }

    #[test]
    fn a_huge_file_is_read_from_its_tail() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("history.jsonl");
        let mut text = String::new();
        for i in 0..200_000 {
            text.push_str(&encode(&format!("entry {i}")));
            text.push('\n');
        }
        std::fs::write(&path, &text).unwrap();
        let file = HistoryFile::load(&path, 3).unwrap();
        assert_eq!(
            entries(&file),
            ["entry 199997", "entry 199998", "entry 199999"]
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_or_directory_is_an_error_not_a_hang() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            let err = HistoryFile::load(&fifo, 10).unwrap_err();
            assert_eq!(err.code(), "HISTORY_NOT_A_FILE");
        }
        let err = HistoryFile::load(dir.path(), 10).unwrap_err();
        assert_eq!(err.code(), "HISTORY_NOT_A_FILE");
    }

    #[test]
    fn a_failed_write_is_reported_and_leaves_no_temp_file() {
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
            entries: VecDeque::new(),
            max_entries: 10,
        };
        let err = file.record("lost?").unwrap_err();
        assert_eq!(err.code(), "HISTORY_WRITE_FAILED");
        // The target is a directory: the rename fails, and the temp file is cleaned up.
        let path = dir.path().join("history.jsonl");
        std::fs::create_dir(&path).unwrap();
        let mut file = HistoryFile {
            path: path.clone(),
            entries: VecDeque::new(),
            max_entries: 10,
        };
        assert_eq!(file.record("x").unwrap_err().code(), "HISTORY_WRITE_FAILED");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(
            names.len(),
            2,
            "only the blocker and the directory: {names:?}"
        );
    }
}
