//! One read of a log for the listing (docs/session-store.md: caches): its latest title, the
//! first words typed in it while it has none, and its [`Activity`], with where the read
//! stopped, so a log that only grew is read from there on — also by a later process,
//! through the index file.
//!
//! A plain log is continued only when the bytes right before the stopping point are still
//! those it read and the digest is the one read with them (a CRC-32 over the last
//! [`TAIL_CHECK_BYTES`] and the digest's own fields, so a digest edited in the index file is
//! a miss too); anything else (another file, a shorter one, other bytes there, real damage, a
//! `.zstd` log) is read again whole. A
//! `.zstd` log is decompressed from its start whenever it changed: its frames can only be
//! read forward, and a digest costs one pass, as the title alone did before.

use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::Arc;

use super::activity::Activity;
use super::event::{ContentBlock, Event, EventData};
use super::query::QueryError;
use super::reader::{self, Limits, LinePos, LogFormat, ScanPos, TornTail, UNTERMINATED};

/// Bytes before a stopping point whose checksum must match for a read to continue there.
pub const TAIL_CHECK_BYTES: usize = 64;

/// Most bytes kept of an untitled session's first message (a listing shows its leading
/// words; enough of them that a secret at the start is still recognised whole).
pub const FIRST_PROMPT_BYTES: usize = 512;

/// Corruption that stopped a read: everything before it was counted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    /// 1-based line of the damage.
    pub line: u64,
    pub reason: Box<str>,
}

/// What one read of a log found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogDigest {
    /// The latest `session/title` read.
    pub title: Option<Arc<str>>,
    /// While the log has no title: the start of the first message a person typed in it
    /// (its text, at most [`FIRST_PROMPT_BYTES`]); `None` once it has a title.
    pub first_prompt: Option<Arc<str>>,
    pub activity: Activity,
    /// End of the readable prefix read: bytes of the (decompressed) stream, the next seq,
    /// the last line.
    pub end: ScanPos,
    /// When a later read may continue from `end` (a plain log read to its end without real
    /// damage): the CRC-32 of the [`TAIL_CHECK_BYTES`] before it and of this digest's title,
    /// activity and end. `None`: read again whole.
    pub resume_check: Option<u32>,
    /// Corruption that stopped the read, if any (boxed: nearly every log has none).
    pub damage: Option<Box<Damage>>,
}

impl LogDigest {
    /// The corruption error this digest stands for, on the log at `path`, if it has one.
    pub fn damage_error(&self, path: &Path) -> Option<QueryError> {
        self.damage.as_ref().map(|d| QueryError::Corrupt {
            path: path.to_owned(),
            line: d.line,
            reason: d.reason.to_string(),
        })
    }
}

/// The resume check of a digest with these fields over a log whose readable prefix ends
/// at `end`: CRC-32 of the up to [`TAIL_CHECK_BYTES`] bytes of `file` before `end`, then the
/// fields; `None` when the file is shorter than `end`. Moves the file's position.
fn tail_check(
    file: &mut File,
    end: ScanPos,
    (title, first_prompt): (Option<&str>, Option<&str>),
    activity: &Activity,
) -> io::Result<Option<u32>> {
    let start = end.readable_len.saturating_sub(TAIL_CHECK_BYTES as u64);
    let want = usize::try_from(end.readable_len - start).unwrap_or(0);
    let mut buf = [0u8; TAIL_CHECK_BYTES];
    let Some(part) = buf.get_mut(..want) else {
        return Ok(None);
    };
    file.seek(SeekFrom::Start(start))?;
    match file.read_exact(part) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let mut crc = crc32fast::Hasher::new();
    crc.update(part);
    for n in [end.readable_len, end.next_seq, end.line, activity.messages] {
        crc.update(&n.to_le_bytes());
    }
    match activity.last_event_ms {
        None => crc.update(&[0]),
        Some(t) => {
            crc.update(&[1]);
            crc.update(&t.to_le_bytes());
        }
    }
    for text in [title, first_prompt] {
        match text {
            None => crc.update(&[0]),
            Some(t) => {
                crc.update(&[1]);
                crc.update(&(t.len() as u64).to_le_bytes());
                crc.update(t.as_bytes());
            }
        }
    }
    Ok(Some(crc.finalize()))
}

/// Whether a read that stopped this way may be continued later (a final line still being
/// written is not damage).
fn resumable(torn: Option<&TornTail>) -> bool {
    torn.is_none_or(|t| t.reason == UNTERMINATED)
}

/// Title, first prompt, activity and position as a read goes.
struct Tally {
    title: Option<Arc<str>>,
    first_prompt: Option<Arc<str>>,
    activity: Activity,
    end: ScanPos,
}

impl Tally {
    fn see(&mut self, event: Event, at: LinePos) {
        self.activity.see(&event);
        self.end = ScanPos {
            readable_len: at.offset + at.len,
            next_seq: event.seq + 1,
            line: at.line,
        };
        match event.data {
            EventData::SessionTitle(t) => {
                self.title = Some(Arc::from(t.title));
                self.first_prompt = None;
            }
            EventData::UserMessage(m)
                if self.title.is_none() && self.first_prompt.is_none() && m.is_direct_user() =>
            {
                self.first_prompt = first_words(&m.content);
            }
            _ => {}
        }
    }

    /// The resume check of what was read so far, ending at `end`.
    fn check(&self, file: &mut File, end: ScanPos) -> io::Result<Option<u32>> {
        let texts = (self.title.as_deref(), self.first_prompt.as_deref());
        tail_check(file, end, texts, &self.activity)
    }

    /// The digest of a read that ended in corruption: what came before it.
    fn damaged(self, line: u64, reason: String) -> LogDigest {
        LogDigest {
            title: self.title,
            first_prompt: self.first_prompt,
            activity: self.activity,
            end: self.end,
            resume_check: None,
            damage: Some(Box::new(Damage {
                line,
                reason: reason.into(),
            })),
        }
    }
}

fn io_err(path: &Path, source: io::Error) -> QueryError {
    QueryError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Read the digest of session `id`'s log at `path`. `earlier` is a digest of the same log
/// (`same_file`: the caller's stamps say it is the same inode) to continue from when it
/// allows; `id` is checked against the header of a log read from its start. A corrupt log
/// is `Ok` with [`LogDigest::damage`]; only an unreadable one (or a bad header) is `Err`.
pub fn read_digest(
    path: &Path,
    format: LogFormat,
    limits: &Limits,
    id: &str,
    earlier: Option<&LogDigest>,
    same_file: bool,
) -> Result<LogDigest, QueryError> {
    let mut file = reader::open_file(path)?;
    if format == LogFormat::Plain
        && same_file
        && let Some(earlier) = earlier
        && let Some(check) = earlier.resume_check
        && tail_check(
            &mut file,
            earlier.end,
            (earlier.title.as_deref(), earlier.first_prompt.as_deref()),
            &earlier.activity,
        )
        .map_err(|e| io_err(path, e))?
            == Some(check)
    {
        return continue_digest(path, file, limits, earlier);
    }
    let mut tally = Tally {
        title: None,
        first_prompt: None,
        activity: Activity::default(),
        end: ScanPos {
            readable_len: 0,
            next_seq: 0,
            line: 1,
        },
    };
    let scanned = match format {
        LogFormat::Plain => {
            file.seek(SeekFrom::Start(0)).map_err(|e| io_err(path, e))?;
            let mut src = BufReader::with_capacity(256 * 1024, file);
            let scanned = reader::scan_at_limited(path, &mut src, limits, &mut |e: Event, at| {
                tally.see(e, at);
                Ok(())
            });
            scanned.map(|summary| (summary, Some(src.into_inner())))
        }
        LogFormat::Zstd => {
            let src = reader::open_stream(path, file, format)?;
            reader::scan_at_limited(path, src, limits, &mut |e: Event, at| {
                tally.see(e, at);
                Ok(())
            })
            .map(|summary| (summary, None))
        }
    };
    let (summary, plain) = match scanned {
        Ok(done) => done,
        Err(QueryError::Corrupt { line, reason, .. }) if line > 1 => {
            // The header was read and parsed; it must still be this session's.
            let header = reader::read_header(path, format)?;
            reader::check_header_id(path, &header, id)?;
            return Ok(tally.damaged(line, reason));
        }
        Err(e) => return Err(e),
    };
    reader::check_header_id(path, &summary.header, id)?;
    let end = ScanPos {
        readable_len: summary.readable_len,
        next_seq: summary.next_seq,
        line: summary.lines,
    };
    let resume_check = match plain {
        Some(mut file) if resumable(summary.torn_tail.as_ref()) => {
            tally.check(&mut file, end).map_err(|e| io_err(path, e))?
        }
        _ => None,
    };
    Ok(LogDigest {
        title: tally.title,
        first_prompt: tally.first_prompt,
        activity: tally.activity,
        end,
        resume_check,
        damage: None,
    })
}

/// The start of a message's text (its text blocks joined with line breaks), at most
/// [`FIRST_PROMPT_BYTES`] cut on a character boundary; `None` when it has no visible text.
fn first_words(content: &[ContentBlock]) -> Option<Arc<str>> {
    let mut out = String::new();
    for block in content {
        let ContentBlock::Text { text, .. } = block else {
            continue;
        };
        if !out.is_empty() {
            out.push('\n');
        }
        for c in text.chars() {
            if out.len() + c.len_utf8() > FIRST_PROMPT_BYTES {
                break;
            }
            out.push(c);
        }
        if out.len() + 4 > FIRST_PROMPT_BYTES {
            break;
        }
    }
    let trimmed = out.trim();
    (!trimmed.is_empty()).then(|| Arc::from(trimmed))
}

/// Read on from where `earlier` stopped (the bytes before it checked by the caller).
fn continue_digest(
    path: &Path,
    mut file: File,
    limits: &Limits,
    earlier: &LogDigest,
) -> Result<LogDigest, QueryError> {
    file.seek(SeekFrom::Start(earlier.end.readable_len))
        .map_err(|e| io_err(path, e))?;
    let mut tally = Tally {
        title: earlier.title.clone(),
        first_prompt: earlier.first_prompt.clone(),
        activity: earlier.activity,
        end: earlier.end,
    };
    let mut src = BufReader::with_capacity(256 * 1024, file);
    let scanned =
        reader::scan_events_at_limited(path, &mut src, earlier.end, limits, &mut |e: Event, at| {
            tally.see(e, at);
            Ok(())
        });
    let (end, torn) = match scanned {
        Ok(done) => done,
        Err(QueryError::Corrupt { line, reason, .. }) => return Ok(tally.damaged(line, reason)),
        Err(e) => return Err(e),
    };
    let resume_check = if resumable(torn.as_ref()) {
        tally
            .check(src.get_mut(), end)
            .map_err(|e| io_err(path, e))?
    } else {
        None
    };
    Ok(LogDigest {
        title: tally.title,
        first_prompt: tally.first_prompt,
        activity: tally.activity,
        end,
        resume_check,
        damage: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    const H: &str = r#"{"type":"session","version":0,"id":"s","createdAt":5,"delegationDepth":0}"#;

    fn ts(seq: u64, time: i64) -> String {
        format!(
            r#"{{"type":"turn/start","seq":{seq},"time":{time},"data":{{"turn":1,"trigger":{{"kind":"user"}}}}}}"#
        )
    }
    fn user(seq: u64, time: i64) -> String {
        format!(
            r#"{{"type":"user/message","seq":{seq},"time":{time},"data":{{"id":"u{seq}","role":"user","content":[{{"type":"text","text":"hi"}}],"source":{{"kind":"user"}}}},"surfaceOp":"append"}}"#
        )
    }
    fn title(seq: u64, text: &str) -> String {
        format!(
            r#"{{"type":"session/title","seq":{seq},"time":9,"data":{{"title":"{text}","messageSeqs":[],"source":{{"kind":"user"}}}}}}"#
        )
    }
    fn te(seq: u64, time: i64) -> String {
        format!(
            r#"{{"type":"turn/end","seq":{seq},"time":{time},"data":{{"turn":1,"reason":{{"kind":"completed"}}}}}}"#
        )
    }

    fn read(path: &Path, earlier: Option<&LogDigest>) -> LogDigest {
        read_digest(
            path,
            LogFormat::Plain,
            &Limits::default(),
            "s",
            earlier,
            true,
        )
        .unwrap()
    }

    /// A digest read on from an earlier one equals one read whole, and reads only what was
    /// appended (the earlier part is replaced by bytes that do not parse: a continued read
    /// never looks at them, a whole one would fail).
    #[test]
    fn a_grown_log_is_read_from_where_the_last_read_stopped() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("session.jsonl");
        let first = format!("{H}\n{}\n{}\n{}\n", ts(0, 10), user(1, 11), title(2, "One"));
        std::fs::write(&path, &first).unwrap();
        let d1 = read(&path, None);
        assert_eq!(d1.title.as_deref(), Some("One"));
        assert_eq!(d1.activity.messages, 1);
        assert_eq!(d1.end.next_seq, 3);
        assert_eq!(d1.end.readable_len, first.len() as u64);
        assert!(d1.resume_check.is_some());
        let more = format!("{}\n{}\n", user(3, 20), te(4, 21));
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(more.as_bytes())
            .unwrap();
        let d2 = read(&path, Some(&d1));
        assert_eq!(d2, read(&path, None), "continued = whole");
        assert_eq!(d2.activity.messages, 2);
        assert_eq!(d2.activity.last_event_ms, Some(21));
        assert_eq!(d2.title.as_deref(), Some("One"));
        // Proof that the continued read skipped the start: the middle of the first part
        // made unreadable (the checked tail kept) is never seen by it.
        let mut bytes = std::fs::read(&path).unwrap();
        let tail_from = first.len() - TAIL_CHECK_BYTES;
        for b in bytes.get_mut(H.len() + 1..tail_from).unwrap() {
            *b = b'#';
        }
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(read(&path, Some(&d1)), d2);
        // Another tail: read whole (and here the damage shows).
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[first.len() - 2] = b'#';
        std::fs::write(&path, &bytes).unwrap();
        let whole = read(&path, Some(&d1));
        assert_eq!(whole.damage.map(|d| d.line), Some(2), "read whole");
        assert_eq!(whole.end.next_seq, 0);
    }

    /// Issue 32 item 9: an untitled log keeps the start of the first message typed in it,
    /// through a continued read, until it gets a title.
    #[test]
    fn an_untitled_log_keeps_its_first_prompt_until_titled() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("session.jsonl");
        let context = r#"{"type":"user/message","seq":1,"time":11,"data":{"id":"c","role":"user","content":[{"type":"text","text":"<referenced-sessions>"}],"source":{"kind":"session-reference"}},"surfaceOp":"append"}"#;
        let typed = format!(
            r#"{{"type":"user/message","seq":2,"time":12,"data":{{"id":"u","role":"user","content":[{{"type":"text","text":"  Why does é{} fail"}}],"source":{{"kind":"user"}}}},"surfaceOp":"append"}}"#,
            "é".repeat(600)
        );
        let first = format!("{H}\n{}\n{context}\n{typed}\n", ts(0, 10));
        std::fs::write(&path, &first).unwrap();
        let d1 = read(&path, None);
        let prompt = d1.first_prompt.clone().unwrap();
        assert!(prompt.starts_with("Why does éé"), "{prompt}");
        assert!(prompt.len() <= FIRST_PROMPT_BYTES && prompt.len() > FIRST_PROMPT_BYTES - 4);
        // A later message does not replace it; a title does.
        let more = format!("{}\n", user(3, 20));
        let mut log = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        log.write_all(more.as_bytes()).unwrap();
        let d2 = read(&path, Some(&d1));
        assert_eq!(d2, read(&path, None), "continued = whole");
        assert_eq!(d2.first_prompt, d1.first_prompt);
        log.write_all(format!("{}\n", title(4, "Named")).as_bytes())
            .unwrap();
        let d3 = read(&path, Some(&d2));
        assert_eq!(d3, read(&path, None));
        assert_eq!(
            (d3.title.as_deref(), d3.first_prompt),
            (Some("Named"), None)
        );
        // An edited prompt is a miss, read again whole.
        let edited = LogDigest {
            first_prompt: Some("spoofed".into()),
            ..d2.clone()
        };
        std::fs::write(&path, format!("{first}{more}")).unwrap();
        assert_eq!(read(&path, Some(&edited)), d2);
    }

    #[test]
    fn an_edited_digest_is_not_continued_from() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("session.jsonl");
        std::fs::write(&path, format!("{H}\n{}\n{}\n", ts(0, 10), title(1, "Real"))).unwrap();
        let real = read(&path, None);
        for edit in [
            LogDigest {
                title: Some("Spoofed".into()),
                ..real.clone()
            },
            LogDigest {
                activity: Activity {
                    messages: 99,
                    ..real.activity
                },
                ..real.clone()
            },
        ] {
            assert_eq!(read(&path, Some(&edit)), real);
        }
    }

    #[test]
    fn a_log_damaged_after_its_title_keeps_the_title() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("session.jsonl");
        let text = format!(
            "{H}\n{}\n{}\n{}\nnot json\n{}\n",
            ts(0, 10),
            user(1, 11),
            title(2, "Before the damage"),
            te(4, 30)
        );
        std::fs::write(&path, text).unwrap();
        let d = read(&path, None);
        assert_eq!(d.title.as_deref(), Some("Before the damage"));
        assert_eq!(d.activity.last_event_ms, Some(9));
        assert_eq!(d.activity.messages, 1);
        assert_eq!(d.damage.as_ref().map(|d| d.line), Some(5));
        assert_eq!(d.resume_check, None);
        assert!(matches!(
            d.damage_error(&path),
            Some(QueryError::Corrupt { line: 5, .. })
        ));
        // Another session's log is still refused.
        let other = read_digest(&path, LogFormat::Plain, &Limits::default(), "x", None, true);
        assert!(matches!(other, Err(QueryError::Corrupt { line: 1, .. })));
    }

    #[test]
    fn a_line_being_written_is_read_once_it_is_complete() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("session.jsonl");
        let done = format!("{H}\n{}\n", ts(0, 10));
        let line = user(1, 11);
        let (head, rest) = line.split_at(20);
        std::fs::write(&path, format!("{done}{head}")).unwrap();
        let d1 = read(&path, None);
        assert_eq!(d1.end.readable_len, done.len() as u64);
        assert!(
            d1.resume_check.is_some(),
            "an unterminated line is not damage"
        );
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(format!("{rest}\n").as_bytes())
            .unwrap();
        let d2 = read(&path, Some(&d1));
        assert_eq!(d2.activity.messages, 1);
        assert_eq!(d2, read(&path, None));
    }
}
