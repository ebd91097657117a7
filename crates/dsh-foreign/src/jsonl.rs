//! Bounded, streaming JSONL reading for other tools' logs, with the dsh reader's damage rules
//! adapted to files that have no `turn/end`: a line that is not JSON with more of the file
//! after it is corruption (file and 1-based line named); an unterminated, over-long or
//! unparsable *last* line is a torn tail (a write in progress) and is ignored.
//!
//! A line is never held beyond `max_line_bytes`; an over-long line is skipped in chunks.

use std::io::{self, BufRead};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::DeserializeOwned;

use dsh_store::QueryError;

/// The dsh reader's default line limit; a source is given the store's limit in force
/// (`store.max_line_bytes`), this is only the default of that setting.
pub use dsh_store::reader::DEFAULT_MAX_LINE_BYTES;

/// One complete line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineAt {
    /// 1-based line number.
    pub number: u64,
    /// Byte offset of the line's first byte.
    pub offset: u64,
    /// Length including the `\n`.
    pub len: u64,
}

/// A line that ends the readable file without being corruption.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornTail {
    pub line: u64,
    /// Byte offset where the torn line starts (a later read of a grown file resumes there).
    pub offset: u64,
    pub reason: String,
}

/// What one line's JSON turned out to be.
#[derive(Debug)]
pub enum Parsed<T> {
    /// The record, in the shape asked for.
    Record(T),
    /// Valid JSON of another shape (an unknown or changed record type): ignored.
    Other,
    /// Not JSON at all (the reason).
    NotJson(String),
}

/// Parse a line's body as the record `T` (a JSON object), telling a different shape apart
/// from damage.
pub fn parse_line<'a, T: Deserialize<'a>>(body: &'a [u8]) -> Parsed<T> {
    // serde would also build a struct from an array; records are objects only.
    if body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return match serde_json::from_slice::<serde::de::IgnoredAny>(body) {
            Ok(_) => Parsed::Other,
            Err(e) => Parsed::NotJson(e.to_string()),
        };
    }
    match serde_json::from_slice::<T>(body) {
        Ok(record) => Parsed::Record(record),
        Err(e) if e.is_data() => Parsed::Other,
        Err(e) => Parsed::NotJson(e.to_string()),
    }
}

/// A line-per-record tool's line as its record `T` and its time (Unix ms, from the
/// record's `stamp` or else `default_time`): `Ok(None)` for JSON of another shape, `Err`
/// (the reason) for a line that is not JSON at all. How every line decoder starts
/// (Codex CLI, Qwen Code, GitHub Copilot CLI).
pub fn parse_timed<'a, T: Deserialize<'a>>(
    body: &'a [u8],
    default_time: i64,
    stamp: impl FnOnce(&T) -> Option<&str>,
) -> Result<Option<(T, i64)>, String> {
    match parse_line::<T>(body) {
        Parsed::Record(record) => {
            let time = stamp(&record)
                .and_then(crate::surface_events::parse_time_ms)
                .unwrap_or(default_time);
            Ok(Some((record, time)))
        }
        Parsed::Other => Ok(None),
        Parsed::NotJson(reason) => Err(reason),
    }
}

/// Reads complete lines of one file in order, at most `max_line_bytes` each.
pub struct JsonlLines<R> {
    path: PathBuf,
    src: R,
    max_line_bytes: u64,
    buf: Vec<u8>,
    next_number: u64,
    offset: u64,
    torn: Option<TornTail>,
    done: bool,
}

impl<R: BufRead> JsonlLines<R> {
    /// Lines of `src` (the contents of `path`, named in errors), starting at byte `offset`
    /// which is the start of line `first_line`.
    pub fn new(path: &Path, src: R, max_line_bytes: u64, offset: u64, first_line: u64) -> Self {
        JsonlLines {
            path: path.to_owned(),
            src,
            max_line_bytes,
            buf: Vec::with_capacity(8192),
            next_number: first_line,
            offset,
            torn: None,
            done: false,
        }
    }

    /// The next complete line (its position and body without `\n`), or `None` at the end of
    /// the readable file. Blank lines are skipped.
    pub fn next_line(&mut self) -> Result<Option<(LineAt, &[u8])>, QueryError> {
        loop {
            if self.done {
                return Ok(None);
            }
            self.buf.clear();
            let at = LineAt {
                number: self.next_number,
                offset: self.offset,
                len: 0,
            };
            let limit = self.max_line_bytes.saturating_add(1);
            let n =
                read_until_limited(&mut self.src, &mut self.buf, limit).map_err(|e| self.io(e))?;
            if n == 0 {
                self.done = true;
                return Ok(None);
            }
            if !self.buf.ends_with(b"\n") {
                if self.buf.len() as u64 >= limit {
                    let skipped = skip_line(&mut self.src).map_err(|e| self.io(e))?;
                    let line_len = n as u64 + skipped;
                    self.offset += line_len;
                    self.next_number += 1;
                    let reason = format!("line longer than {} bytes", self.max_line_bytes);
                    self.damaged(
                        LineAt {
                            len: line_len,
                            ..at
                        },
                        reason,
                    )?;
                    continue;
                }
                self.done = true;
                self.torn = Some(TornTail {
                    line: at.number,
                    offset: at.offset,
                    reason: "unterminated line".into(),
                });
                return Ok(None);
            }
            self.offset += n as u64;
            self.next_number += 1;
            let body_len = n - 1;
            if self.buf[..body_len].iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let at = LineAt {
                len: n as u64,
                ..at
            };
            return Ok(Some((at, &self.buf[..body_len])));
        }
    }

    /// The next line whose JSON has the shape `T`, with its position: lines of another
    /// shape are skipped, a non-JSON line goes through the damage rule ([`Self::damaged`]).
    pub fn next_record<T: DeserializeOwned>(&mut self) -> Result<Option<(LineAt, T)>, QueryError> {
        loop {
            let Some((at, body)) = self.next_line()? else {
                return Ok(None);
            };
            match parse_line::<T>(body) {
                Parsed::Record(record) => return Ok(Some((at, record))),
                Parsed::Other => {}
                Parsed::NotJson(reason) => self.damaged(at, format!("not JSON: {reason}"))?,
            }
        }
    }

    /// Report damage on the line `at` (already read): corruption when anything follows it,
    /// else the torn tail that ends the file.
    pub fn damaged(&mut self, at: LineAt, reason: String) -> Result<(), QueryError> {
        let line = at.number;
        let more = loop {
            match self.src.fill_buf() {
                Ok(b) => break !b.is_empty(),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.io(e)),
            }
        };
        if more {
            return Err(QueryError::Corrupt {
                path: self.path.clone(),
                line,
                reason: format!("{reason} (not the last line)"),
            });
        }
        self.done = true;
        self.torn = Some(TornTail {
            line,
            offset: at.offset,
            reason,
        });
        Ok(())
    }

    /// The torn tail found, once the end was reached.
    pub fn torn_tail(&self) -> Option<&TornTail> {
        self.torn.as_ref()
    }

    /// Byte offset just past the last complete line read.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Where a later read of this file, grown, should start: the torn line if there is
    /// one (it may be complete by then), else just past the last line read.
    pub fn resume_at(&self) -> (u64, u64) {
        match &self.torn {
            Some(t) => (t.offset, t.line),
            None => (self.offset, self.next_number),
        }
    }

    /// The number the next line would get.
    pub fn next_number(&self) -> u64 {
        self.next_number
    }

    fn io(&self, source: io::Error) -> QueryError {
        QueryError::Io {
            path: self.path.clone(),
            source,
        }
    }
}

/// `read_until(b'\n')` that stops after `limit` bytes.
fn read_until_limited(src: &mut impl BufRead, buf: &mut Vec<u8>, limit: u64) -> io::Result<usize> {
    let mut total = 0usize;
    loop {
        let available = match src.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok(total);
        }
        let room = usize::try_from(limit.saturating_sub(total as u64)).unwrap_or(usize::MAX);
        let window = &available[..available.len().min(room)];
        let (take, found) = match window.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (window.len(), false),
        };
        buf.extend_from_slice(&window[..take]);
        src.consume(take);
        total += take;
        if found || total as u64 >= limit {
            return Ok(total);
        }
    }
}

/// Skip the rest of a line (through its `\n`, or to the end); returns the bytes skipped.
fn skip_line(src: &mut impl BufRead) -> io::Result<u64> {
    let mut skipped = 0u64;
    loop {
        let available = match src.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok(skipped);
        }
        let (take, found) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (available.len(), false),
        };
        src.consume(take);
        skipped += take as u64;
        if found {
            return Ok(skipped);
        }
    }
}

/// Continue (or start) the listing scan of the log at `path` from `meta.resume` (from the
/// beginning, with `meta` cleared to `path_id` as its id, when there is none): every record
/// of shape `T` goes to
/// `see` with its line until `see` says it has all it needs. Damage ends the scan with
/// what was read (logged, nothing resumed); an I/O error is returned. The one loop of the
/// line-per-record tools' listing scans (Codex CLI, Qwen Code, GitHub Copilot CLI).
pub fn scan_listing<T: DeserializeOwned>(
    path: &Path,
    mut meta: crate::log_meta::LogMeta,
    max_line_bytes: u64,
    (tool, path_id): (&str, Option<String>),
    see: &mut dyn FnMut(&mut crate::log_meta::LogMeta, LineAt, T) -> bool,
) -> Result<crate::log_meta::LogMeta, QueryError> {
    use std::io::{Seek, SeekFrom};
    let (offset, line) = meta.resume.unwrap_or((0, 1));
    if meta.resume.is_none() {
        meta = crate::log_meta::LogMeta::default();
        meta.native_id = path_id;
    }
    let io = |source| QueryError::Io {
        path: path.to_owned(),
        source,
    };
    let mut file = crate::open_file::open_regular(path)?;
    file.seek(SeekFrom::Start(offset)).map_err(io)?;
    let mut lines = JsonlLines::new(
        path,
        io::BufReader::with_capacity(64 * 1024, file),
        max_line_bytes,
        offset,
        line,
    );
    let mut damaged = false;
    loop {
        let (at, record) = match lines.next_record::<T>() {
            Err(e @ QueryError::Io { .. }) => return Err(e),
            Err(e) => {
                tracing::warn!(tool, error = %e, "foreign log damaged; listed with what was read");
                damaged = true;
                break;
            }
            Ok(None) => break,
            Ok(Some(found)) => found,
        };
        if !see(&mut meta, at, record) {
            break;
        }
    }
    meta.resume = (!damaged).then(|| lines.resume_at());
    Ok(meta)
}

/// Read every line of `src` as `T`, calling `on_record` for each record of that shape;
/// lines of another shape are skipped and non-JSON lines handled by the damage rule.
pub fn for_each_record<T: DeserializeOwned, R: BufRead>(
    lines: &mut JsonlLines<R>,
    on_record: &mut dyn FnMut(LineAt, T) -> Result<(), QueryError>,
) -> Result<(), QueryError> {
    while let Some((at, record)) = lines.next_record::<T>()? {
        on_record(at, record)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    struct Rec {
        n: u64,
    }

    type Read = (Vec<(u64, u64)>, Option<TornTail>);
    type Case = (&'static str, &'static str, Vec<(u64, u64)>, Option<u64>);

    fn run(text: &str, max: u64) -> Result<Read, QueryError> {
        let mut lines = JsonlLines::new(Path::new("/x/log.jsonl"), text.as_bytes(), max, 0, 1);
        let mut got = Vec::new();
        for_each_record::<Rec, _>(&mut lines, &mut |at, r| {
            got.push((at.number, r.n));
            Ok(())
        })?;
        Ok((got, lines.torn_tail().cloned()))
    }

    #[test]
    fn damage_table() {
        let cases: Vec<Case> = vec![
            (
                "clean",
                "{\"n\":1}\n{\"n\":2}\n",
                vec![(1, 1), (2, 2)],
                None,
            ),
            (
                "other shapes ignored",
                "{\"n\":1}\n[1]\n{\"m\":2}\n\n{\"n\":3}\n",
                vec![(1, 1), (5, 3)],
                None,
            ),
            (
                "unterminated last",
                "{\"n\":1}\n{\"n\":2}",
                vec![(1, 1)],
                Some(2),
            ),
            (
                "not JSON last",
                "{\"n\":1}\n{\"n\":\n",
                vec![(1, 1)],
                Some(2),
            ),
            (
                "over-long last",
                "{\"n\":1}\n{\"n\":22222222}\n",
                vec![(1, 1)],
                Some(2),
            ),
        ];
        for (name, text, want, torn) in cases {
            let (got, t) = run(text, 12).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(got, want, "{name}");
            assert_eq!(t.map(|t| t.line), torn, "{name}");
        }
    }

    #[test]
    fn damage_before_the_last_line_is_corruption() {
        for (text, line) in [
            ("{\"n\":1}\nnot json\n{\"n\":2}\n", 2),
            ("{\"n\":1}\n{\"n\":22222222}\n{\"n\":2}\n", 2),
            ("{oops\n{\"n\":2}", 1),
        ] {
            match run(text, 12) {
                Err(QueryError::Corrupt {
                    line: got, path, ..
                }) => {
                    assert_eq!(got, line, "{text}");
                    assert_eq!(path, Path::new("/x/log.jsonl"));
                }
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn offsets_cover_every_line() {
        let text = "{\"n\":1}\n\n{\"n\":2}\n";
        let mut lines = JsonlLines::new(Path::new("/x"), text.as_bytes(), 100, 0, 1);
        let mut seen = Vec::new();
        while let Some((at, body)) = lines.next_line().unwrap() {
            seen.push((at, body.to_vec()));
        }
        assert_eq!(seen.len(), 2);
        let (second, body) = &seen[1];
        assert_eq!(second.number, 3);
        let start = usize::try_from(second.offset).unwrap();
        let end = start + usize::try_from(second.len).unwrap();
        assert_eq!(&text.as_bytes()[start..end - 1], body.as_slice());
        assert_eq!(lines.offset(), text.len() as u64);
    }

    proptest::proptest! {
        #[test]
        fn any_cut_reads_a_prefix_or_reports_damage_without_panic(cut in 0usize..60, max in 1u64..40) {
            let text = "{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n{\"n\":4}\n{\"n\":5}\n";
            let _ = run(&text[..cut.min(text.len())], max);
            let (got, torn) = run(&text[..cut.min(text.len())], 100).unwrap();
            let complete = text[..cut.min(text.len())].matches('\n').count();
            proptest::prop_assert_eq!(got.len(), complete);
            proptest::prop_assert_eq!(torn.is_some(), !text[..cut.min(text.len())].ends_with('\n') && cut > 0);
        }
    }
}
