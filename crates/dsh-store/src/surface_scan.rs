//! Streaming surface reads (docs/session-store.md: session query; docs/performance.md): fold a log line by line, show each surface event
//! to a visitor once and keep nothing of it but where its line is, then read again only the
//! few events the caller still needs. Memory follows the surface's length, not the log's size.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::event::{Event, SessionHeader};
use super::query::{QueryError, Surface};
use super::reader::{self, LinePos, LogFormat};

/// Sees every surface event of a streaming read, in log order, right after it is folded.
pub trait SurfaceVisitor {
    /// `event` joined the surface; `removed` are the seqs its replace took off (in surface
    /// order), which will never be on the surface again.
    fn visit(&mut self, event: &Event, removed: &[u64]);
}

/// The result of a streaming surface read: the header, the final surface order, and a way
/// to read chosen surface events again.
#[derive(Debug)]
pub struct SurfaceScan {
    pub session: SessionHeader,
    /// Seq of the last event of any type in the log; `None` for an empty log.
    pub captured_through_seq: Option<u64>,
    /// Current surface seqs in folded (model) order.
    pub surface: Vec<u64>,
    events: EventSource,
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
    /// The scanned log, kept open so a file replaced meanwhile cannot be mixed in, and the
    /// line of every surface event.
    Log {
        path: PathBuf,
        format: LogFormat,
        file: File,
        lines: HashMap<u64, LinePos>,
    },
}

impl SurfaceScan {
    /// A scan over an already folded surface: every event is visited in order.
    pub fn from_surface(surface: Surface, visitor: &mut dyn SurfaceVisitor) -> Self {
        let mut seqs = Vec::with_capacity(surface.events.len());
        let mut events = HashMap::with_capacity(surface.events.len());
        for event in surface.events {
            visitor.visit(&event, &[]);
            seqs.push(event.seq);
            events.insert(event.seq, event);
        }
        SurfaceScan {
            session: surface.session,
            captured_through_seq: surface.captured_through_seq,
            surface: seqs,
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
            surface,
            events: EventSource::External(source),
        }
    }

    /// A scan of the log at `path` whose surface events' lines are `lines`.
    pub(crate) fn from_log(
        session: SessionHeader,
        captured_through_seq: Option<u64>,
        surface: Vec<u64>,
        log: (PathBuf, LogFormat, File),
        lines: HashMap<u64, LinePos>,
    ) -> Self {
        let (path, format, file) = log;
        SurfaceScan {
            session,
            captured_through_seq,
            surface,
            events: EventSource::Log {
                path,
                format,
                file,
                lines,
            },
        }
    }

    /// Read the surface events `seqs` again, returned in the order asked. A seq that is not
    /// on the surface, or a line that no longer holds its event, is an error.
    pub fn reread(&mut self, seqs: &[u64]) -> Result<Vec<Event>, QueryError> {
        match &mut self.events {
            EventSource::External(source) => source.reread(seqs),
            EventSource::Memory(events) => seqs
                .iter()
                .map(|seq| {
                    events.get(seq).cloned().ok_or_else(|| QueryError::Corrupt {
                        path: PathBuf::new(),
                        line: 0,
                        reason: format!("event {seq} is not on the scanned surface"),
                    })
                })
                .collect(),
            EventSource::Log {
                path,
                format,
                file,
                lines,
            } => {
                let mut wanted = Vec::with_capacity(seqs.len());
                for &seq in seqs {
                    let pos = lines
                        .get(&seq)
                        .copied()
                        .ok_or_else(|| QueryError::Corrupt {
                            path: path.clone(),
                            line: 0,
                            reason: format!("event {seq} is not on the scanned surface"),
                        })?;
                    wanted.push((seq, pos));
                }
                match format {
                    LogFormat::Plain => reread_plain(path, file, &wanted),
                    LogFormat::Zstd => reread_stream(path, *format, &wanted),
                }
            }
        }
    }
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
fn reread_plain(
    path: &Path,
    mut file: &File,
    wanted: &[(u64, LinePos)],
) -> Result<Vec<Event>, QueryError> {
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

/// Read lines of a compressed log by (decompressed) offset, decompressing it once more.
fn reread_stream(
    path: &Path,
    format: LogFormat,
    wanted: &[(u64, LinePos)],
) -> Result<Vec<Event>, QueryError> {
    let mut by_offset: Vec<(u64, LinePos)> = wanted.to_vec();
    by_offset.sort_by_key(|w| w.1.offset);
    by_offset.dedup_by_key(|w| w.1.offset);
    let mut src = reader::open_log(path, format)?;
    let mut at = 0u64;
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
