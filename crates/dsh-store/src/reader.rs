//! Reading session logs (docs/session-store.md: on-disk layout): the header line and a streaming event scan that applies
//! the torn-tail rule.
//!
//! Damage (an unterminated, unparsable or seq-discontinuous line) after the last complete
//! `turn/end` ends the readable log: it is a torn tail, ignored here and truncated only by a
//! writer. The same damage with a complete `turn/end` at or after it is corruption, reported
//! with file and 1-based line. Only `\n`-terminated lines are ever used, so a file that grows
//! while it is read is fine. Nothing here modifies a file.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;
use std::rc::Rc;

use serde::Deserialize;
use serde_json::Value;

use super::dsh_compat::{self, ZstdFrames};
use super::event::{Event, SessionHeader, SurfaceOp, kind};
use super::line_cost;
use super::line_skim::LineSkim;
use super::lone_surrogates;
use super::message_line;
use super::not_loaded;
use super::query_error::QueryError;
use super::read_ahead::ReadAhead;

/// Longest header line accepted (bytes).
const MAX_HEADER_BYTES: u64 = 1 << 20;

/// Compressed size from which a `.zstd` log is decompressed on a thread of its own while
/// it is scanned (below it, a thread costs more than it saves).
pub(crate) const READ_AHEAD_FROM: u64 = 1 << 20;

/// Default of `store.max_line_bytes`: the longest log line read (32 MiB: room for the
/// longest line a reply of the default `[model] max_reply_bytes`, 4 MiB, can take).
pub const DEFAULT_MAX_LINE_BYTES: u64 = 32 << 20;
/// Default cap on the members of one packed chunk row.
pub const DEFAULT_MAX_PACKED_MEMBERS: usize = 65_536;

/// Bounds enforced while a log is read, so memory never depends on what a line claims: a
/// longer line, or a bigger packed row, is read as placeholders (`crate::not_loaded`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Longest line (with its `\n`) held in memory; longer lines are never buffered whole.
    pub max_line_bytes: u64,
    /// Most members of one packed row decoded into full `assistant/chunk` events; a row
    /// with more is read as placeholder chunks, one per member, made one at a time.
    pub max_packed_members: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            max_packed_members: DEFAULT_MAX_PACKED_MEMBERS,
        }
    }
}

/// How a log file is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LogFormat {
    /// `session.jsonl`.
    Plain,
    /// dsh's `session.jsonl.zstd` (read only).
    Zstd,
}

/// A torn tail found by a scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornTail {
    /// 1-based line where the readable log ends.
    pub line: u64,
    pub reason: String,
}

/// What a complete scan found besides the events it delivered.
#[derive(Debug, Clone)]
pub struct ScanSummary {
    pub header: SessionHeader,
    /// Bytes of the readable prefix (header and every readable event line) of the
    /// (decompressed) stream.
    pub readable_len: u64,
    /// Seq the next event would get (= number of readable events).
    pub next_seq: u64,
    /// Last readable line (1-based; the header is line 1).
    pub lines: u64,
    pub torn_tail: Option<TornTail>,
}

/// The torn-tail reason of a final line without `\n` (a write in progress or cut short).
pub const UNTERMINATED: &str = "unterminated line";

/// One line of a log, before it becomes events.
#[derive(Deserialize)]
struct RawRecord {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    seq: Option<u64>,
    #[serde(default)]
    time: Option<i64>,
    #[serde(default)]
    seq0: Option<u64>,
    #[serde(default)]
    time0: Option<i64>,
    #[serde(default)]
    data: Value,
    #[serde(rename = "surfaceOp", default)]
    surface_op: Option<SurfaceOp>,
    #[serde(rename = "sourceEventSeqs", default)]
    source_event_seqs: Option<Vec<u64>>,
}

fn corrupt(path: &Path, line: u64, reason: impl Into<String>) -> QueryError {
    QueryError::Corrupt {
        path: path.to_owned(),
        line,
        reason: reason.into(),
    }
}

fn io_err(path: &Path, source: io::Error) -> QueryError {
    QueryError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Parse a header line (without its `\n`).
pub fn parse_header(path: &Path, line: &[u8]) -> Result<SessionHeader, QueryError> {
    let header: SessionHeader = serde_json::from_slice(&lone_surrogates::repair(line))
        .map_err(|e| corrupt(path, 1, format!("invalid header line: {e}")))?;
    if header.kind != "session" {
        return Err(corrupt(
            path,
            1,
            format!("header type is {:?}, expected \"session\"", header.kind),
        ));
    }
    Ok(header)
}

/// Read only the header line of a log (for a `.zstd` log, only as much as it takes to
/// decompress the first line).
pub fn read_header(path: &Path, format: LogFormat) -> Result<SessionHeader, QueryError> {
    let file = open_file(path)?;
    let mut line = Vec::new();
    let read = match format {
        LogFormat::Plain => BufReader::new(file)
            .take(MAX_HEADER_BYTES)
            .read_until(b'\n', &mut line),
        LogFormat::Zstd => zstd::stream::read::Decoder::new(file).and_then(|d| {
            BufReader::new(d)
                .take(MAX_HEADER_BYTES)
                .read_until(b'\n', &mut line)
        }),
    };
    match read {
        Ok(_) => {}
        Err(e) if format == LogFormat::Zstd && line.ends_with(b"\n") => {
            // The header decoded; later damage is not this function's business.
            let _ = e;
        }
        Err(e) if format == LogFormat::Zstd => {
            return Err(corrupt(path, 1, format!("cannot decompress header: {e}")));
        }
        Err(e) => return Err(io_err(path, e)),
    }
    match line.strip_suffix(b"\n") {
        Some(body) => parse_header(path, body),
        None if line.is_empty() => Err(corrupt(path, 1, "missing header line")),
        None => Err(corrupt(path, 1, "header line is not terminated")),
    }
}

/// Open a log file for reading: never through a symbolic link, and only a regular file
/// (a FIFO or device would block or never end).
pub fn open_file(path: &Path) -> Result<File, QueryError> {
    super::nofollow::open_regular(path).map_err(|e| io_err(path, e))
}

/// Open a log for a streaming scan.
pub fn open_log(path: &Path, format: LogFormat) -> Result<Box<dyn BufRead + Send>, QueryError> {
    let file = open_file(path)?;
    open_stream(path, file, format)
}

/// A line source over the already open log `file` (for a `.zstd` log: decompressed as it is
/// read, never held whole).
pub fn open_stream(
    path: &Path,
    file: File,
    format: LogFormat,
) -> Result<Box<dyn BufRead + Send>, QueryError> {
    Ok(match format {
        LogFormat::Plain => Box::new(BufReader::with_capacity(256 * 1024, file)),
        LogFormat::Zstd => {
            let frames = ZstdFrames::from_file(file).map_err(|e| io_err(path, e))?;
            if frames.compressed_len() >= READ_AHEAD_FROM {
                Box::new(ReadAhead::spawn(frames).map_err(|e| io_err(path, e))?)
            } else {
                Box::new(BufReader::with_capacity(256 * 1024, frames))
            }
        }
    })
}

/// Scan a whole log, calling `on_event(event, line)` for every readable event in seq order.
/// An error from `on_event` stops the scan and is returned.
pub fn scan_log(
    path: &Path,
    format: LogFormat,
    on_event: &mut dyn FnMut(Event, u64) -> Result<(), QueryError>,
) -> Result<ScanSummary, QueryError> {
    scan_log_limited(path, format, &Limits::default(), on_event)
}

/// [`scan_log`] with explicit [`Limits`].
pub fn scan_log_limited(
    path: &Path,
    format: LogFormat,
    limits: &Limits,
    on_event: &mut dyn FnMut(Event, u64) -> Result<(), QueryError>,
) -> Result<ScanSummary, QueryError> {
    let reader = open_log(path, format)?;
    scan_limited(path, reader, limits, on_event)
}

/// Scan a log from any line source (see [`scan_log`]).
pub fn scan(
    path: &Path,
    src: impl BufRead,
    on_event: &mut dyn FnMut(Event, u64) -> Result<(), QueryError>,
) -> Result<ScanSummary, QueryError> {
    scan_limited(path, src, &Limits::default(), on_event)
}

/// [`scan`] with explicit [`Limits`].
pub fn scan_limited(
    path: &Path,
    src: impl BufRead,
    limits: &Limits,
    on_event: &mut dyn FnMut(Event, u64) -> Result<(), QueryError>,
) -> Result<ScanSummary, QueryError> {
    scan_at_limited(path, src, limits, &mut |event, pos| {
        on_event(event, pos.line)
    })
}

/// Where an event's line sits in the (decompressed) log: 1-based line, byte offset, length
/// with its `\n`. Lets a streaming reader re-read a few chosen events later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinePos {
    pub line: u64,
    pub offset: u64,
    pub len: u64,
}

/// Like [`scan`], telling `on_event` where each event's line is.
pub fn scan_at(
    path: &Path,
    src: impl BufRead,
    on_event: &mut dyn FnMut(Event, LinePos) -> Result<(), QueryError>,
) -> Result<ScanSummary, QueryError> {
    scan_at_limited(path, src, &Limits::default(), on_event)
}

/// [`scan_at`] with explicit [`Limits`], handing `on_event` each event as `E`: a decoded
/// [`Event`], or a [`ScannedEvent`] that may only measure a message (a streaming surface read).
pub fn scan_at_limited<E: ScanItem + 'static>(
    path: &Path,
    mut src: impl BufRead,
    limits: &Limits,
    on_event: &mut dyn FnMut(E, LinePos) -> Result<(), QueryError>,
) -> Result<ScanSummary, QueryError> {
    let mut buf = Vec::with_capacity(4096);
    let max_header = limits.max_line_bytes.min(MAX_HEADER_BYTES);
    let line = read_line(path, &mut src, &mut buf, 1, max_header, false)?;
    if line.oversized {
        return Err(corrupt(
            path,
            1,
            format!("header line is longer than {max_header} bytes"),
        ));
    }
    let n = line.len;
    let header = match buf.strip_suffix(b"\n") {
        Some(body) => parse_header(path, body)?,
        None if n == 0 => return Err(corrupt(path, 1, "missing header line")),
        None => return Err(corrupt(path, 1, "header line is not terminated")),
    };
    let start = ScanPos {
        readable_len: n,
        next_seq: 0,
        line: 1,
    };
    let (end, torn_tail) = scan_events_at_limited(path, src, start, limits, on_event)?;
    Ok(ScanSummary {
        header,
        readable_len: end.readable_len,
        next_seq: end.next_seq,
        lines: end.line,
        torn_tail,
    })
}

/// Where a scan stands: bytes readable so far, the next seq, the last line read (1-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanPos {
    pub readable_len: u64,
    pub next_seq: u64,
    pub line: u64,
}

/// Scan event lines from `src`, which starts right after the readable prefix `start`
/// describes. Used for whole logs and to continue a clean earlier scan of a growing log.
pub fn scan_events(
    path: &Path,
    src: impl BufRead,
    start: ScanPos,
    on_event: &mut dyn FnMut(Event, u64) -> Result<(), QueryError>,
) -> Result<(ScanPos, Option<TornTail>), QueryError> {
    scan_events_limited(path, src, start, &Limits::default(), on_event)
}

/// [`scan_events`] with explicit [`Limits`].
pub fn scan_events_limited(
    path: &Path,
    src: impl BufRead,
    start: ScanPos,
    limits: &Limits,
    on_event: &mut dyn FnMut(Event, u64) -> Result<(), QueryError>,
) -> Result<(ScanPos, Option<TornTail>), QueryError> {
    scan_events_at_limited(path, src, start, limits, &mut |event, pos| {
        on_event(event, pos.line)
    })
}

/// Like [`scan_events`], telling `on_event` where each event's line is.
pub fn scan_events_at(
    path: &Path,
    src: impl BufRead,
    start: ScanPos,
    on_event: &mut dyn FnMut(Event, LinePos) -> Result<(), QueryError>,
) -> Result<(ScanPos, Option<TornTail>), QueryError> {
    scan_events_at_limited(path, src, start, &Limits::default(), on_event)
}

/// [`scan_events_at`] with explicit [`Limits`], handing out each event as `E`.
pub fn scan_events_at_limited<E: ScanItem + 'static>(
    path: &Path,
    mut src: impl BufRead,
    start: ScanPos,
    limits: &Limits,
    on_event: &mut dyn FnMut(E, LinePos) -> Result<(), QueryError>,
) -> Result<(ScanPos, Option<TornTail>), QueryError> {
    // Shared with the items of the line being handed out (a measured message can still be
    // decoded from it); by the next line they are gone, so the buffer is reused.
    let mut shared: Rc<Vec<u8>> = Rc::new(Vec::with_capacity(4096));
    let mut pos = start;
    loop {
        let buf = Rc::make_mut(&mut shared);
        buf.clear();
        let line = read_line(
            path,
            &mut src,
            buf,
            pos.line + 1,
            limits.max_line_bytes,
            true,
        )?;
        let n = line.len;
        if n == 0 {
            return Ok((pos, None));
        }
        let line_no = pos.line + 1;
        let decoded = if line.oversized {
            match line.skim {
                // A complete line too long to load: a placeholder keeps its place.
                Some(skim) if line.terminated => not_loaded::placeholders(
                    &skim.finish(),
                    pos.next_seq,
                    n,
                    not_loaded::Why::Long,
                    (limits.max_line_bytes, limits.max_packed_members),
                )
                .map(|events| LineItems::from(events).map(E::not_loaded)),
                _ => Err(UNTERMINATED.to_owned()),
            }
        } else {
            let complete = buf
                .strip_suffix(b"\n")
                .map(|body| (body.len(), line_cost::fits(body)));
            match complete {
                Some((body_len, true)) => E::decode(&shared, body_len, pos.next_seq, limits),
                // A complete line too dense to decode within its budget: the same.
                Some((body_len, false)) => dense_placeholders(
                    shared.get(..body_len).unwrap_or_default(),
                    pos.next_seq,
                    limits,
                )
                .map(|events| events.map(E::not_loaded)),
                None => Err(UNTERMINATED.to_owned()),
            }
        };
        match decoded {
            Ok(events) => {
                pos.next_seq += events.len() as u64;
                let at = LinePos {
                    line: line_no,
                    offset: pos.readable_len,
                    len: n,
                };
                for event in events {
                    on_event(event, at)?;
                }
                pos.readable_len += n;
                pos.line = line_no;
            }
            Err(reason) => {
                let buf = Rc::make_mut(&mut shared);
                // An unterminated line ended at end of file: whatever a later read finds
                // was appended since (a writer at work), so it is a torn tail, never corruption.
                let at_end = !line.terminated;
                let complete_turn_end_follows = !at_end
                    && ((!line.oversized && buf.ends_with(b"\n") && is_turn_end(buf))
                        || turn_end_follows(path, &mut src, buf, line_no, limits)?);
                if complete_turn_end_follows {
                    return Err(corrupt(
                        path,
                        line_no,
                        format!("{reason} (before the last complete turn/end)"),
                    ));
                }
                return Ok((
                    pos,
                    Some(TornTail {
                        line: line_no,
                        reason,
                    }),
                ));
            }
        }
    }
}

/// One line as read by [`read_line`].
#[derive(Debug)]
struct LineRead {
    /// Bytes the line took in the stream, with its `\n` (all of them, even when oversized).
    len: u64,
    /// Longer than the limit: `buf` is empty, the line was skipped unbuffered.
    oversized: bool,
    /// The line ended with `\n` (else it ended at the end of the stream).
    terminated: bool,
    /// What an oversized line said of itself (when asked for).
    skim: Option<LineSkim>,
}

/// Read one line into `buf`, holding at most `max` bytes of it: the rest of a longer line is
/// consumed without being stored, so a line without an end costs no memory. With `skim`, an
/// oversized line's bytes go through a [`LineSkim`] as they are skipped.
fn read_line(
    path: &Path,
    src: &mut impl BufRead,
    buf: &mut Vec<u8>,
    line: u64,
    max: u64,
    skim: bool,
) -> Result<LineRead, QueryError> {
    let max = usize::try_from(max).unwrap_or(usize::MAX);
    let mut read = LineRead {
        len: 0,
        oversized: false,
        terminated: false,
        skim: None,
    };
    loop {
        let chunk = match src.fill_buf() {
            Ok(chunk) => chunk,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                return Err(corrupt(path, line, e.to_string()));
            }
            Err(e) => return Err(io_err(path, e)),
        };
        if chunk.is_empty() {
            return Ok(read);
        }
        let (take, done) = match memchr::memchr(b'\n', chunk) {
            Some(at) => (at + 1, true),
            None => (chunk.len(), false),
        };
        let piece = chunk.get(..take).unwrap_or_default();
        if read.oversized {
            if let Some(skim) = &mut read.skim {
                skim.feed(piece.strip_suffix(b"\n").unwrap_or(piece));
            }
        } else {
            let room = max.saturating_sub(buf.len());
            if take > room {
                read.oversized = true;
                if skim {
                    let mut s = LineSkim::new();
                    s.feed(buf);
                    s.feed(piece.strip_suffix(b"\n").unwrap_or(piece));
                    read.skim = Some(s);
                }
                buf.clear();
            } else {
                buf.extend_from_slice(piece);
            }
        }
        src.consume(take);
        read.len += take as u64;
        if done {
            read.terminated = true;
            return Ok(read);
        }
    }
}

/// Whether any later `\n`-terminated line is a complete `turn/end` event.
fn turn_end_follows(
    path: &Path,
    src: &mut impl BufRead,
    buf: &mut Vec<u8>,
    mut line: u64,
    limits: &Limits,
) -> Result<bool, QueryError> {
    loop {
        buf.clear();
        line += 1;
        let read = read_line(path, src, buf, line, limits.max_line_bytes, false)?;
        if read.len == 0 {
            return Ok(false);
        }
        if !read.oversized && read.terminated && is_turn_end(buf) {
            return Ok(true);
        }
    }
}

fn is_turn_end(line: &[u8]) -> bool {
    let body = line.strip_suffix(b"\n").unwrap_or(line);
    if !line_cost::fits(body) {
        // A `turn/end` is a few small values; a line this dense is none.
        return false;
    }
    match serde_json::from_slice::<RawRecord>(&lone_surrogates::repair(body)) {
        Ok(raw) if raw.kind == kind::TURN_END && raw.seq.is_some() && raw.time.is_some() => {
            Event::parse_data(kind::TURN_END, raw.data).is_ok()
        }
        Ok(_) | Err(_) => false,
    }
}

/// The events of one line, without a `Vec` for the usual single event, and made one at a
/// time for a packed row (whose members never all exist as events at once).
pub enum LineItems<E> {
    One(E),
    Many(Vec<E>),
    /// `len` events made as they are taken.
    Lazy {
        len: usize,
        events: Box<dyn Iterator<Item = E>>,
    },
}

impl<E> std::fmt::Debug for LineItems<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LineItems({} events)", self.len())
    }
}

impl<E> LineItems<E> {
    /// Number of events.
    pub fn len(&self) -> usize {
        match self {
            LineItems::One(_) => 1,
            LineItems::Many(v) => v.len(),
            LineItems::Lazy { len, .. } => *len,
        }
    }

    /// Whether the line holds no event.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<E: 'static> LineItems<E> {
    /// The events with `f` applied (as they are taken, for a lazy line).
    pub fn map<F: 'static>(self, mut f: impl FnMut(E) -> F + 'static) -> LineItems<F> {
        match self {
            LineItems::One(e) => LineItems::One(f(e)),
            LineItems::Many(v) => LineItems::Many(v.into_iter().map(f).collect()),
            LineItems::Lazy { len, events } => LineItems::Lazy {
                len,
                events: Box::new(events.map(f)),
            },
        }
    }

    /// The events in a `Vec` (every one made now).
    pub fn collect_vec(self) -> Vec<E> {
        self.into_iter().collect()
    }
}

impl From<not_loaded::Placeholders> for LineItems<Event> {
    fn from(placeholders: not_loaded::Placeholders) -> Self {
        match placeholders {
            not_loaded::Placeholders::One(event) => LineItems::One(event),
            not_loaded::Placeholders::Members { len, events } => LineItems::Lazy { len, events },
        }
    }
}

/// The events of a [`LineItems`], in order.
pub enum LineItemsIter<E> {
    One(Option<E>),
    Many(std::vec::IntoIter<E>),
    Lazy(Box<dyn Iterator<Item = E>>),
}

impl<E> Iterator for LineItemsIter<E> {
    type Item = E;
    fn next(&mut self) -> Option<E> {
        match self {
            LineItemsIter::One(e) => e.take(),
            LineItemsIter::Many(v) => v.next(),
            LineItemsIter::Lazy(events) => events.next(),
        }
    }
}

impl<E> IntoIterator for LineItems<E> {
    type Item = E;
    type IntoIter = LineItemsIter<E>;
    fn into_iter(self) -> Self::IntoIter {
        match self {
            LineItems::One(e) => LineItemsIter::One(Some(e)),
            LineItems::Many(v) => LineItemsIter::Many(v.into_iter()),
            LineItems::Lazy { events, .. } => LineItemsIter::Lazy(events),
        }
    }
}

/// What a scan hands its caller for each event, decoded from the line it is read from.
pub trait ScanItem: Sized {
    /// The events of the line `line[..body_len]` (without its `\n`), whose first seq must
    /// be `next_seq`; the error is the reason the line is damaged.
    fn decode(
        line: &Rc<Vec<u8>>,
        body_len: usize,
        next_seq: u64,
        limits: &Limits,
    ) -> Result<LineItems<Self>, String>;

    /// A placeholder for an event whose line was too long to load
    /// ([`crate::not_loaded`]).
    fn not_loaded(event: Event) -> Self;
}

impl ScanItem for Event {
    fn not_loaded(event: Event) -> Self {
        event
    }

    fn decode(
        line: &Rc<Vec<u8>>,
        body_len: usize,
        next_seq: u64,
        limits: &Limits,
    ) -> Result<LineItems<Event>, String> {
        decode_items(line.get(..body_len).unwrap_or_default(), next_seq, limits)
    }
}

/// [`decode_line_limited`] without a `Vec` for a single event, and with a packed row's
/// events made as they are taken. The caller has checked that the line fits its decoding
/// budget ([`crate::line_cost`]).
pub(crate) fn decode_items(
    body: &[u8],
    next_seq: u64,
    limits: &Limits,
) -> Result<LineItems<Event>, String> {
    let body = lone_surrogates::repair(body);
    if let Some(event) = message_line::decode(&body, next_seq) {
        return Ok(LineItems::One(event));
    }
    decode_record(&body, next_seq, limits)
}

/// Decode one event line (or packed row) whose first seq must be `next_seq`.
pub(crate) fn decode_line(body: &[u8], next_seq: u64) -> Result<Vec<Event>, String> {
    decode_line_limited(body, next_seq, &Limits::default())
}

/// [`decode_line`] refusing packed rows of more than `limits.max_packed_members` members
/// before any of them is expanded. A line over its decoding budget ([`crate::line_cost`])
/// is not decoded: its placeholders stand for it, as in a scan.
pub(crate) fn decode_line_limited(
    body: &[u8],
    next_seq: u64,
    limits: &Limits,
) -> Result<Vec<Event>, String> {
    if !line_cost::fits(body) {
        return Ok(dense_placeholders(body, next_seq, limits)?.collect_vec());
    }
    Ok(decode_items(body, next_seq, limits)?.collect_vec())
}

/// The placeholders of a complete line too dense to decode (`body` without its `\n`).
fn dense_placeholders(
    body: &[u8],
    next_seq: u64,
    limits: &Limits,
) -> Result<LineItems<Event>, String> {
    skimmed_placeholders(body, next_seq, not_loaded::Why::Dense, limits)
}

/// The placeholders of the complete line `body` (without its `\n`), not decoded for `why`.
fn skimmed_placeholders(
    body: &[u8],
    next_seq: u64,
    why: not_loaded::Why,
    limits: &Limits,
) -> Result<LineItems<Event>, String> {
    let mut skim = LineSkim::new();
    skim.feed(body);
    not_loaded::placeholders(
        &skim.finish(),
        next_seq,
        body.len() as u64 + 1,
        why,
        (limits.max_line_bytes, limits.max_packed_members),
    )
    .map(LineItems::from)
}

/// The record of a line: one UTF-8 check of the whole line, then a parse that does not
/// check each string piece again; a line that is not UTF-8 is parsed from its bytes so the
/// error says where.
fn parse_record(body: &[u8]) -> serde_json::Result<RawRecord> {
    match simdutf8::basic::from_utf8(body) {
        Ok(text) => serde_json::from_str(text),
        Err(_) => serde_json::from_slice(body),
    }
}

/// [`decode_line_limited`] without the fast path for message lines: the reference decoder,
/// on a line already repaired of lone surrogates.
#[cfg(test)]
pub(crate) fn decode_exact(
    body: &[u8],
    next_seq: u64,
    limits: &Limits,
) -> Result<Vec<Event>, String> {
    Ok(decode_record(body, next_seq, limits)?.collect_vec())
}

/// [`decode_exact`] with a packed row's events made as they are taken.
fn decode_record(body: &[u8], next_seq: u64, limits: &Limits) -> Result<LineItems<Event>, String> {
    let raw = parse_record(body).map_err(|e| format!("unparsable line: {e}"))?;
    if dsh_compat::is_packed_row(&raw.kind) {
        if raw.seq0 != Some(next_seq) {
            return Err(format!(
                "{} row starts at seq {:?}, expected {next_seq}",
                raw.kind, raw.seq0
            ));
        }
        let members = ["texts", "args"]
            .iter()
            .filter_map(|key| raw.data.get(key).and_then(Value::as_array))
            .map(Vec::len)
            .max()
            .unwrap_or(0);
        if members > limits.max_packed_members {
            // More members than are decoded in full: one placeholder chunk per member, made
            // as they are taken (never damage: dsh reads the row).
            return skimmed_placeholders(body, next_seq, not_loaded::Why::ManyMembers, limits);
        }
        let events = dsh_compat::PackedEvents::of(&raw.kind, raw.seq0, raw.time0, raw.data)?;
        return Ok(LineItems::Lazy {
            len: events.len(),
            events: Box::new(events),
        });
    }
    let seq = raw.seq.ok_or("event without integer seq")?;
    let time = raw.time.ok_or("event without integer time")?;
    if seq != next_seq {
        return Err(format!("seq {seq} breaks continuity, expected {next_seq}"));
    }
    if Event::is_surface_type(&raw.kind) && raw.surface_op.is_none() {
        return Err(format!("`{}` event {seq} has no surfaceOp", raw.kind));
    }
    let data = Event::parse_data(&raw.kind, raw.data)
        .map_err(|e| format!("invalid `{}` event {seq}: {e}", raw.kind))?;
    Ok(LineItems::One(Event {
        seq,
        time,
        data,
        surface_op: raw.surface_op,
        source_event_seqs: raw.source_event_seqs,
    }))
}

/// Read a whole log into memory (header, every readable event with its line, summary).
pub fn read_all(
    path: &Path,
    format: LogFormat,
) -> Result<(Vec<(Event, u64)>, ScanSummary), QueryError> {
    let mut events = Vec::new();
    let summary = scan_log(path, format, &mut |event, line| {
        events.push((event, line));
        Ok(())
    })?;
    Ok((events, summary))
}

/// The path of a log's corruption errors when a header id does not match the requested id.
pub fn check_header_id(path: &Path, header: &SessionHeader, id: &str) -> Result<(), QueryError> {
    if header.id == id {
        Ok(())
    } else {
        Err(corrupt(
            path,
            1,
            format!("header id {:?} does not match session {id:?}", header.id),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use std::fmt::Write as _;

    fn bytecount_newlines(bytes: &[u8]) -> usize {
        bytes.iter().fold(0, |n, &b| n + usize::from(b == b'\n'))
    }

    const H: &str = r#"{"type":"session","version":0,"id":"s","createdAt":5,"delegationDepth":0}"#;

    fn ts(seq: u64) -> String {
        format!(
            r#"{{"type":"turn/start","seq":{seq},"time":1,"data":{{"turn":1,"trigger":{{"kind":"user"}}}}}}"#
        )
    }
    fn te(seq: u64) -> String {
        format!(
            r#"{{"type":"turn/end","seq":{seq},"time":1,"data":{{"turn":1,"reason":{{"kind":"completed"}}}}}}"#
        )
    }

    fn run(text: &str) -> Result<(Vec<u64>, ScanSummary), QueryError> {
        let mut seqs = Vec::new();
        let summary = scan(
            Path::new("/x/session.jsonl"),
            text.as_bytes(),
            &mut |e, _| {
                seqs.push(e.seq);
                Ok(())
            },
        )?;
        Ok((seqs, summary))
    }

    #[test]
    fn torn_tail_table() {
        let h = format!("{H}\n");
        let cases: Vec<(&str, String, Vec<u64>, Option<u64>)> = vec![
            ("header only", h.clone(), vec![], None),
            (
                "clean",
                format!("{h}{}\n{}\n", ts(0), te(1)),
                vec![0, 1],
                None,
            ),
            (
                "unterminated last line",
                format!("{h}{}\n{}\n{}", ts(0), te(1), ts(2)),
                vec![0, 1],
                Some(4),
            ),
            (
                "garbage after turn end",
                format!("{h}{}\n{}\n{{\"ty\n{}\n", ts(0), te(1), ts(3)),
                vec![0, 1],
                Some(4),
            ),
            (
                "seq gap with no turn end at all",
                format!("{h}{}\n{}\n", ts(0), ts(5)),
                vec![0],
                Some(3),
            ),
            (
                "unterminated turn end is not complete",
                format!("{h}{}\n{{bad\n{}", ts(0), te(2)),
                vec![0],
                Some(3),
            ),
        ];
        for (name, text, want_seqs, want_torn) in cases {
            let (seqs, summary) = run(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(seqs, want_seqs, "{name}");
            assert_eq!(summary.torn_tail.map(|t| t.line), want_torn, "{name}");
            let readable: usize = text
                .split_inclusive('\n')
                .take(1 + want_seqs.len())
                .map(str::len)
                .sum();
            assert_eq!(summary.readable_len, readable as u64, "{name}");
        }
    }

    #[test]
    fn damage_before_a_complete_turn_end_is_corruption_with_line() {
        let h = format!("{H}\n");
        let cases = [
            (format!("{h}{}\n{{oops\n{}\n", ts(0), te(2)), 3),
            (format!("{h}{}\n{}\n{}\n", ts(0), ts(2), te(3)), 3),
            (format!("{h}{}\n{}\n", ts(0), te(5)), 3),
            ("{\"type\":\"nope\"}\n".to_owned(), 1),
            (String::new(), 1),
            (H.to_owned(), 1),
        ];
        for (text, line) in cases {
            match run(&text) {
                Err(QueryError::Corrupt {
                    line: got, path, ..
                }) => {
                    assert_eq!(got, line, "{text}");
                    assert_eq!(path, Path::new("/x/session.jsonl"));
                }
                other => panic!("{text}: expected corruption, got {other:?}"),
            }
        }
    }

    fn sample_log() -> String {
        let mut text = format!("{H}\n");
        let mut seq = 0;
        for _ in 0..3 {
            text.push_str(&ts(seq));
            text.push('\n');
            let _ = write!(
                text,
                r#"{{"type":"user/message","seq":{},"time":2,"data":{{"id":"u","role":"user","content":[{{"type":"text","text":"héllo 😀"}}],"source":{{"kind":"user"}}}},"surfaceOp":"append"}}"#,
                seq + 1
            );
            text.push('\n');
            text.push_str(&te(seq + 2));
            text.push('\n');
            seq += 3;
        }
        text
    }

    proptest::proptest! {
        #[test]
        fn any_cut_of_a_valid_log_reads_as_a_prefix(cut in 0usize..2000) {
            let text = sample_log();
            let bytes = text.as_bytes();
            let cut = cut.min(bytes.len());
            let mut seqs = Vec::new();
            let result = scan(Path::new("/x"), &bytes[..cut], &mut |e, _| {
                seqs.push(e.seq);
                Ok(())
            });
            let header_len = H.len() + 1;
            if cut < header_len {
                let is_header_corruption = matches!(result, Err(QueryError::Corrupt { line: 1, .. }));
                proptest::prop_assert!(is_header_corruption);
            } else {
                let summary = result.unwrap();
                let complete = bytecount_newlines(&bytes[..cut]) - 1;
                proptest::prop_assert_eq!(seqs, (0..complete as u64).collect::<Vec<_>>());
                proptest::prop_assert_eq!(summary.torn_tail.is_some(), !bytes[..cut].ends_with(b"\n"));
            }
        }

        /// A damaged log scans alike whether its lines are measured and checked (as a
        /// streaming surface read does) or decoded: the same events, end, torn tail or error.
        #[test]
        fn damaged_logs_scan_alike_measured_or_decoded(at in 0usize..2000, byte in proptest::num::u8::ANY, cut in 0usize..2000) {
            let mut bytes = sample_log().into_bytes();
            let len = bytes.len();
            if let Some(b) = bytes.get_mut(at % len) {
                *b = byte;
            }
            bytes.truncate(len - cut % 200);
            let mut decoded = Vec::new();
            let full = scan_at_limited(Path::new("/x"), &bytes[..], &Limits::default(), &mut |e: Event, pos| {
                decoded.push((e.seq, e.surface_op, pos));
                Ok(())
            });
            let mut scanned = Vec::new();
            let lean = scan_at_limited(Path::new("/x"), &bytes[..], &Limits::default(), &mut |e: crate::ScannedEvent, pos| {
                scanned.push((e.seq(), e.surface_op(), pos));
                Ok(())
            });
            proptest::prop_assert_eq!(decoded, scanned);
            let outcome = |r: Result<ScanSummary, QueryError>| {
                r.map(|s| (s.readable_len, s.next_seq, s.lines, s.torn_tail)).map_err(|e| e.to_string())
            };
            proptest::prop_assert_eq!(outcome(full), outcome(lean));
        }

        #[test]
        fn damaged_bytes_never_panic(at in 0usize..2000, byte in proptest::num::u8::ANY) {
            let mut bytes = sample_log().into_bytes();
            let len = bytes.len();
            if let Some(b) = bytes.get_mut(at % len) {
                *b = byte;
            }
            let _ = scan(Path::new("/x"), &bytes[..], &mut |_, _| Ok(()));
        }
    }

    #[test]
    fn packed_rows_expand_in_scan() {
        let text = format!(
            "{H}\n{}\n{}\n{}\n",
            ts(0),
            r#"{"type":"text-chunks","seq0":1,"time0":7,"data":{"turn":1,"step":0,"index":0,"dt":[1,1],"texts":["a","b","c"]}}"#,
            te(4)
        );
        let (seqs, summary) = run(&text).unwrap();
        assert_eq!(seqs, vec![0, 1, 2, 3, 4]);
        assert_eq!(summary.next_seq, 5);
        let bad = text.replace("\"seq0\":1", "\"seq0\":2");
        assert!(matches!(
            run(&bad),
            Err(QueryError::Corrupt { line: 3, .. })
        ));
    }
}
