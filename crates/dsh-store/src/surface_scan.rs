//! Streaming surface reads (docs/session-store.md: session query; docs/performance.md): fold a log line by line, show each surface event
//! to a visitor once, keep of the surface only a bit per event (a [`CompactSurface`]), then
//! read again only the few events the caller kept the line position of. Memory follows
//! neither the log's size nor its number of messages.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufRead, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::compact_surface::{CompactSurface, Placed, SurfacePositions};
use super::dsh_compat::ZstdFrames;
use super::event::{Event, SessionHeader};
use super::query_error::QueryError;
use super::reader::{self, Limits, LinePos, LogFormat};
use super::scanned_event::ScannedEvent;
use super::sized_line::SizedMessage;
use super::surface::Surface;

/// Where a visited event's line is, for [`SurfaceScan::reread_at`]; empty for sources that
/// read events again another way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EventAt(Option<LinePos>);

/// Answers surface-order questions while a replace is being visited.
pub trait SurfaceOrder {
    /// Whether surface seq `a` comes before surface seq `b` (false if either is not on it).
    fn precedes(&self, a: u64, b: u64) -> bool;
}

/// Sees every surface event of a streaming read, in log order, right after it is folded.
pub trait SurfaceVisitor {
    /// `event` joined the surface at its end; `removed` are the seqs its replace took off
    /// (in surface order), which will never be on the surface again.
    fn visit(&mut self, event: &Event, removed: &[u64]);

    /// Like [`visit`](Self::visit), also told where the event's line is and, when it is a
    /// replace that took the place of the removed span instead of joining at the end, how
    /// surface seqs are ordered (`order`; `None` means: at the end).
    fn visit_at(
        &mut self,
        event: &Event,
        removed: &[u64],
        at: EventAt,
        order: Option<&dyn SurfaceOrder>,
    ) {
        let _ = (at, order);
        self.visit(event, removed);
    }

    /// Whether this visitor is content with [`visit_sized`](Self::visit_sized) for message
    /// events whose texts a streaming read only measured; otherwise (the default) it is
    /// shown every event decoded in full.
    fn takes_sized(&self) -> bool {
        false
    }

    /// Like [`visit_at`](Self::visit_at) for a message event known by its sizes only
    /// (called only when [`takes_sized`](Self::takes_sized) says so).
    fn visit_sized(
        &mut self,
        message: &SizedMessage,
        removed: &[u64],
        at: EventAt,
        order: Option<&dyn SurfaceOrder>,
    ) {
        let _ = (message, removed, at, order);
    }

    /// Whether this visitor keeps the lines of surface events ([`keep_line`](Self::keep_line)):
    /// a streaming read of a compressed log then hands them over, so that what it keeps
    /// needs no second decompression ([`SurfaceScan::reread_kept`]).
    fn keeps_lines(&self) -> bool {
        false
    }

    /// The line (with its `\n`) of the surface event `seq` visited just before.
    fn keep_line(&mut self, seq: u64, line: &[u8]) {
        let _ = (seq, line);
    }
}

impl SurfaceOrder for CompactSurface {
    fn precedes(&self, a: u64, b: u64) -> bool {
        CompactSurface::precedes(self, a, b)
    }
}

impl SurfaceOrder for SurfacePositions<'_> {
    fn precedes(&self, a: u64, b: u64) -> bool {
        match (self.position(a), self.position(b)) {
            (Some(pa), Some(pb)) => pa < pb,
            _ => false,
        }
    }
}

/// The result of a streaming surface read: the header, the final surface order, and a way
/// to read chosen surface events again.
#[derive(Debug)]
pub struct SurfaceScan {
    pub session: SessionHeader,
    /// Seq of the last event of any type in the log; `None` for an empty log.
    pub captured_through_seq: Option<u64>,
    order: Order,
    events: EventSource,
}

/// The final surface of a scan.
#[derive(Debug)]
enum Order {
    Seqs(Vec<u64>),
    Compact(CompactSurface),
}

/// Reads chosen surface events again for a [`SurfaceScan`] made by a source other than this
/// store's logs (for example another tool's session files), so it too can stream.
pub trait EventReread: Send + std::fmt::Debug {
    /// The surface events `seqs`, in the order asked; a seq not on the surface is an error.
    fn reread(&mut self, seqs: &[u64]) -> Result<Vec<Event>, QueryError>;
}

/// Where [`SurfaceScan::reread`] finds events.
#[derive(Debug)]
enum EventSource {
    /// Everything in memory (the default `scan_surface` over `read_surface`).
    Memory(HashMap<u64, Event>),
    /// Another source's own way of reading events again.
    External(Box<dyn EventReread>),
    /// The scanned log, kept open so a file replaced meanwhile cannot be mixed in.
    Log(LogHandle),
}

/// The open log of a scan and what the scan found in it.
#[derive(Debug)]
struct LogHandle {
    path: PathBuf,
    format: LogFormat,
    file: File,
    limits: Limits,
    /// Readable bytes of the (decompressed) log the scan used; a second read stops there.
    readable_len: u64,
    /// Events the scan read.
    next_seq: u64,
}

impl SurfaceScan {
    /// Like [`reread_at`](Self::reread_at), for events some of whose lines the visitor kept
    /// during the scan (`Some(line)`): those are decoded from the kept bytes, checked as a
    /// line read again is; only the others are read again.
    pub fn reread_kept(
        &mut self,
        wanted: &[(u64, EventAt, Option<&[u8]>)],
    ) -> Result<Vec<Event>, QueryError> {
        let missing: Vec<(u64, EventAt)> = wanted
            .iter()
            .filter(|w| w.2.is_none())
            .map(|w| (w.0, w.1))
            .collect();
        if missing.len() == wanted.len() {
            return self.reread_at(&missing);
        }
        let path = match &self.events {
            EventSource::Log(log) => log.path.clone(),
            _ => PathBuf::new(),
        };
        if let Order::Compact(surface) = &self.order
            && let Some(&(seq, ..)) = wanted.iter().find(|w| !surface.contains(w.0))
        {
            return Err(not_on_surface(&path, seq));
        }
        // Nothing to read again: the log is not even reopened.
        let again = if missing.is_empty() {
            Vec::new()
        } else {
            self.reread_at(&missing)?
        };
        let mut again = again.into_iter();
        wanted
            .iter()
            .map(|&(seq, EventAt(pos), line)| match (line, pos) {
                (None, _) => again.next().ok_or_else(|| not_on_surface(&path, seq)),
                (Some(line), Some(pos)) if line.len() as u64 == pos.len => {
                    decode_again(&path, seq, pos, line)
                }
                (Some(_), _) => Err(changed(&path, pos.map_or(0, |p| p.line), "kept line")),
            })
            .collect()
    }

    /// A scan over an already folded surface: every event is visited in order.
    pub fn from_surface(surface: Surface, visitor: &mut dyn SurfaceVisitor) -> Self {
        let mut seqs = Vec::with_capacity(surface.events.len());
        let mut events = HashMap::with_capacity(surface.events.len());
        for event in surface.events {
            visitor.visit_at(&event, &[], EventAt::default(), None);
            seqs.push(event.seq);
            events.insert(event.seq, event);
        }
        SurfaceScan {
            session: surface.session,
            captured_through_seq: surface.captured_through_seq,
            order: Order::Seqs(seqs),
            events: EventSource::Memory(events),
        }
    }

    /// A scan whose surface events `surface` are read again by `source`.
    pub fn from_reread(
        session: SessionHeader,
        captured_through_seq: Option<u64>,
        surface: Vec<u64>,
        source: Box<dyn EventReread>,
    ) -> Self {
        SurfaceScan {
            session,
            captured_through_seq,
            order: Order::Seqs(surface),
            events: EventSource::External(source),
        }
    }

    /// The surface seqs in folded (model) order (built on demand: a long surface is not
    /// held as a list).
    pub fn surface_seqs(&self) -> Vec<u64> {
        match &self.order {
            Order::Seqs(seqs) => seqs.clone(),
            Order::Compact(c) => c.seqs(),
        }
    }

    /// Number of events on the surface.
    pub fn surface_len(&self) -> usize {
        match &self.order {
            Order::Seqs(seqs) => seqs.len(),
            Order::Compact(c) => c.len(),
        }
    }

    /// A membership test for the final surface (a visitor that was not told of a removal can
    /// check what it kept).
    pub fn on_surface(&self) -> Box<dyn Fn(u64) -> bool + '_> {
        match &self.order {
            Order::Compact(c) => Box::new(|s| c.contains(s)),
            Order::Seqs(surface) => {
                let on: std::collections::HashSet<u64> = surface.iter().copied().collect();
                Box::new(move |s| on.contains(&s))
            }
        }
    }

    /// Read the surface events `seqs` again, returned in the order asked. A seq that is not
    /// on the surface, or a line that no longer holds its event, is an error. For a store
    /// log this reads the log again; [`reread_at`](Self::reread_at) seeks instead.
    pub fn reread(&mut self, seqs: &[u64]) -> Result<Vec<Event>, QueryError> {
        let wanted: Vec<(u64, EventAt)> = seqs.iter().map(|&s| (s, EventAt(None))).collect();
        self.reread_at(&wanted)
    }

    /// Read the surface events `wanted` again by where their lines are (as the visitor was
    /// told), returned in the order asked. Same errors as [`reread`](Self::reread).
    pub fn reread_at(&mut self, wanted: &[(u64, EventAt)]) -> Result<Vec<Event>, QueryError> {
        if let (EventSource::Log(log), Order::Compact(surface)) = (&self.events, &self.order)
            && let Some(&(seq, _)) = wanted.iter().find(|(s, _)| !surface.contains(*s))
        {
            return Err(not_on_surface(&log.path, seq));
        }
        match &mut self.events {
            EventSource::External(source) => {
                let seqs: Vec<u64> = wanted.iter().map(|w| w.0).collect();
                source.reread(&seqs)
            }
            EventSource::Memory(events) => wanted
                .iter()
                .map(|(seq, _)| {
                    events
                        .get(seq)
                        .cloned()
                        .ok_or_else(|| not_on_surface(Path::new(""), *seq))
                })
                .collect(),
            EventSource::Log(log) => {
                let located: Option<Vec<(u64, LinePos)>> = wanted
                    .iter()
                    .map(|&(seq, EventAt(pos))| pos.map(|p| (seq, p)))
                    .collect();
                match (located, log.format) {
                    (Some(located), LogFormat::Plain) => reread_plain(log, &located),
                    (Some(located), LogFormat::Zstd) => reread_stream(log, &located),
                    (None, _) => {
                        let seqs: Vec<u64> = wanted.iter().map(|w| w.0).collect();
                        reread_by_scan(log, &seqs)
                    }
                }
            }
        }
    }

    /// Read the whole log again through the handle of this scan and show `visitor` only the
    /// events of the final surface, in log order, each with the final surface's order: for
    /// a visitor that needs the final order (a second pass). A log that no longer folds to
    /// the same surface is a read failure.
    pub fn rescan(&mut self, visitor: &mut dyn SurfaceVisitor) -> Result<(), QueryError> {
        match (&mut self.events, &self.order) {
            (EventSource::Log(log), Order::Compact(surface)) => rescan_log(log, surface, visitor),
            (EventSource::Memory(events), Order::Seqs(seqs)) => {
                for seq in seqs {
                    if let Some(event) = events.get(seq) {
                        visitor.visit_at(event, &[], EventAt::default(), None);
                    }
                }
                Ok(())
            }
            (EventSource::External(source), Order::Seqs(seqs)) => {
                for (seq, event) in seqs.iter().zip(source.reread(seqs)?) {
                    debug_assert_eq!(*seq, event.seq);
                    visitor.visit_at(&event, &[], EventAt::default(), None);
                }
                Ok(())
            }
            (_, _) => Err(QueryError::Corrupt {
                path: PathBuf::new(),
                line: 0,
                reason: "scan cannot be repeated".into(),
            }),
        }
    }

    /// A scan of the open log at `path`, which the streaming read folded to `surface`.
    pub(crate) fn from_log(
        session: SessionHeader,
        surface: CompactSurface,
        log: (PathBuf, LogFormat, File),
        limits: Limits,
        end: reader::ScanPos,
    ) -> Self {
        let (path, format, file) = log;
        SurfaceScan {
            session,
            captured_through_seq: end.next_seq.checked_sub(1),
            order: Order::Compact(surface),
            events: EventSource::Log(LogHandle {
                path,
                format,
                file,
                limits,
                readable_len: end.readable_len,
                next_seq: end.next_seq,
            }),
        }
    }
}

/// Fold one scanned event into `surface` and show a surface event to `visitor` with where
/// its line is; a log that breaks the folding rules is corrupt at its line.
/// A message the scan only measured is shown as such to a visitor that
/// [takes sized](SurfaceVisitor::takes_sized) events, and decoded from its line for others.
/// With `lines`, a visitor that [keeps lines](SurfaceVisitor::keeps_lines) is then handed it.
pub(crate) fn fold_and_visit(
    path: &Path,
    surface: &mut CompactSurface,
    removed: &mut Vec<u64>,
    (event, pos): (&ScannedEvent, LinePos),
    visitor: &mut dyn SurfaceVisitor,
    lines: bool,
) -> Result<(), QueryError> {
    removed.clear();
    let corrupt = |reason: String| QueryError::Corrupt {
        path: path.to_owned(),
        line: pos.line,
        reason,
    };
    let placed = surface
        .push_op(event.seq(), event.surface_op(), removed)
        .map_err(|e| corrupt(e.to_string()))?;
    let at = EventAt(Some(pos));
    let order: Option<&dyn SurfaceOrder> = match placed {
        Placed::Not => return Ok(()),
        Placed::End => None,
        Placed::Span => Some(&*surface),
    };
    match event {
        ScannedEvent::Sized { message, .. } if visitor.takes_sized() => {
            visitor.visit_sized(message, removed, at, order);
        }
        _ => visitor.visit_at(&*event.to_event().map_err(corrupt)?, removed, at, order),
    }
    if lines && visitor.keeps_lines() {
        visitor.keep_line(event.seq(), event.line());
    }
    Ok(())
}

fn not_on_surface(path: &Path, seq: u64) -> QueryError {
    QueryError::Corrupt {
        path: path.to_owned(),
        line: 0,
        reason: format!("event {seq} is not on the scanned surface"),
    }
}

fn changed(path: &Path, line: u64, why: &str) -> QueryError {
    QueryError::Corrupt {
        path: path.to_owned(),
        line,
        reason: format!("log changed while being read: {why}"),
    }
}

/// The log of `log` from its start again, through the scan's own handle, cut at the
/// readable length the scan found (a log that grew meanwhile reads as it was).
fn reopen(log: &LogHandle) -> Result<impl BufRead, QueryError> {
    let file = log.file.try_clone().map_err(|e| io_err(&log.path, e))?;
    (&file)
        .seek(SeekFrom::Start(0))
        .map_err(|e| io_err(&log.path, e))?;
    Ok(reader::open_stream(&log.path, file, log.format)?.take(log.readable_len))
}

/// The decompressed log of `log` again, through the scan's own handle, from a frame start
/// at or before the plaintext offset `target` (returned with it), cut at the readable length.
fn reopen_from(log: &LogHandle, target: u64) -> Result<(Box<dyn BufRead>, u64), QueryError> {
    let file = log.file.try_clone().map_err(|e| io_err(&log.path, e))?;
    let mut frames = ZstdFrames::from_file(file).map_err(|e| io_err(&log.path, e))?;
    let at = frames
        .skip_frames_before(target)
        .map_err(|e| io_err(&log.path, e))?;
    let rest = log.readable_len.saturating_sub(at);
    // A large log is decompressed on a second thread here too, as in the first pass.
    if frames.compressed_len() >= reader::READ_AHEAD_FROM {
        let ahead =
            super::read_ahead::ReadAhead::spawn(frames).map_err(|e| io_err(&log.path, e))?;
        return Ok((Box::new(ahead.take(rest)), at));
    }
    let src = io::BufReader::with_capacity(256 * 1024, frames).take(rest);
    Ok((Box::new(src), at))
}

/// Scan the log of `log` again from its start; `on_event` sees every event with its line.
fn scan_again(
    log: &LogHandle,
    on_event: &mut dyn FnMut(Event, LinePos) -> Result<(), QueryError>,
) -> Result<(), QueryError> {
    let src = reopen(log)?;
    let summary =
        reader::scan_at_limited(&log.path, src, &log.limits, on_event).map_err(|e| match e {
            QueryError::Corrupt { path, line, reason } if !reason.starts_with("log changed") => {
                changed(&path, line, &reason)
            }
            other => other,
        })?;
    if summary.readable_len != log.readable_len || summary.next_seq != log.next_seq {
        return Err(changed(
            &log.path,
            summary.lines,
            "it no longer reads to the same events",
        ));
    }
    Ok(())
}

fn rescan_log(
    log: &LogHandle,
    surface: &CompactSurface,
    visitor: &mut dyn SurfaceVisitor,
) -> Result<(), QueryError> {
    let positions = surface.positions();
    let mut again = CompactSurface::new();
    let mut removed = Vec::new();
    scan_again(log, &mut |event, pos| {
        removed.clear();
        again
            .push(&event, &mut removed)
            .map_err(|e| changed(&log.path, pos.line, &e.to_string()))?;
        if surface.contains(event.seq) {
            visitor.visit_at(&event, &[], EventAt(Some(pos)), Some(&positions));
        }
        Ok(())
    })?;
    if &again != surface {
        return Err(changed(
            &log.path,
            0,
            "it no longer folds to the same surface",
        ));
    }
    Ok(())
}

/// Read the surface events `seqs` by scanning the log again (no line positions known).
fn reread_by_scan(log: &LogHandle, seqs: &[u64]) -> Result<Vec<Event>, QueryError> {
    let mut found: HashMap<u64, Event> = HashMap::with_capacity(seqs.len());
    let wanted: std::collections::HashSet<u64> = seqs.iter().copied().collect();
    scan_again(log, &mut |event, _| {
        if wanted.contains(&event.seq) {
            found.insert(event.seq, event);
        }
        Ok(())
    })?;
    seqs.iter()
        .map(|seq| {
            found
                .get(seq)
                .cloned()
                .ok_or_else(|| changed(&log.path, 0, &format!("event {seq} missing")))
        })
        .collect()
}

fn io_err(path: &Path, source: io::Error) -> QueryError {
    QueryError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Decode the line read again for `seq` at `pos`, which must still hold that event.
fn decode_again(path: &Path, seq: u64, pos: LinePos, line: &[u8]) -> Result<Event, QueryError> {
    let changed = |why: String| QueryError::Corrupt {
        path: path.to_owned(),
        line: pos.line,
        reason: format!("log changed while being read: {why}"),
    };
    let body = line
        .strip_suffix(b"\n")
        .ok_or_else(|| changed("line is no longer terminated".into()))?;
    reader::decode_line(body, seq)
        .map_err(changed)?
        .into_iter()
        .find(|e| e.seq == seq && e.surface_op.is_some())
        .ok_or_else(|| changed(format!("line no longer holds surface event {seq}")))
}

/// Read lines of a plain log by offset through the open file.
fn reread_plain(log: &LogHandle, wanted: &[(u64, LinePos)]) -> Result<Vec<Event>, QueryError> {
    let path = &log.path;
    let mut file = &log.file;
    let mut buf = Vec::new();
    let mut out = Vec::with_capacity(wanted.len());
    for &(seq, pos) in wanted {
        let len = usize::try_from(pos.len)
            .map_err(|_| io_err(path, io::ErrorKind::InvalidData.into()))?;
        buf.resize(len, 0);
        file.seek(SeekFrom::Start(pos.offset))
            .and_then(|_| file.read_exact(&mut buf))
            .map_err(|e| io_err(path, e))?;
        out.push(decode_again(path, seq, pos, &buf)?);
    }
    Ok(out)
}

/// Read lines of a compressed log by (decompressed) offset, decompressing it once more
/// through the scan's own handle.
fn reread_stream(log: &LogHandle, wanted: &[(u64, LinePos)]) -> Result<Vec<Event>, QueryError> {
    let path = &log.path;
    let mut by_offset: Vec<(u64, LinePos)> = wanted.to_vec();
    by_offset.sort_by_key(|w| w.1.offset);
    by_offset.dedup_by_key(|w| w.1.offset);
    // Frames wholly before the first wanted line are passed over undecoded.
    let first = by_offset.first().map_or(0, |w| w.1.offset);
    let (mut src, mut at) = reopen_from(log, first)?;
    let mut found: HashMap<u64, Event> = HashMap::with_capacity(by_offset.len());
    let mut buf = Vec::new();
    for (seq, pos) in by_offset {
        let skip = pos.offset.saturating_sub(at);
        io::copy(&mut (&mut src).take(skip), &mut io::sink()).map_err(|e| io_err(path, e))?;
        buf.clear();
        (&mut src)
            .take(pos.len)
            .read_to_end(&mut buf)
            .map_err(|e| io_err(path, e))?;
        at = pos.offset + buf.len() as u64;
        found.insert(seq, decode_again(path, seq, pos, &buf)?);
    }
    wanted
        .iter()
        .map(|&(seq, pos)| {
            found.get(&seq).cloned().ok_or_else(|| QueryError::Corrupt {
                path: path.to_owned(),
                line: pos.line,
                reason: format!("log changed while being read: event {seq} missing"),
            })
        })
        .collect()
}
