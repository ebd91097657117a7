//! A sparse index of a session log's lines, so a window of its events can be read from
//! anywhere without reading it from the start (docs/session-store.md: windowed reads).
//!
//! One validated pass over the log records a *checkpoint* every [`PLAIN_SPACING`] bytes of a
//! plain log — the line's offset, number and first seq — and, for a `.zstd` log (whose
//! frames can only be decoded forward), one per frame at least [`ZSTD_SPACING`] plaintext
//! bytes after the previous one: the frame's compressed and plaintext offsets, and the first
//! line starting in it. A read then starts at the nearest checkpoint before what it wants.
//! A log that grew is indexed on from where the last pass stopped, once the bytes right
//! before that point are found unchanged; anything else is indexed again from the start.
//! Memory is 40 bytes per checkpoint, at most [`MAX_CHECKPOINTS`] (the spacing doubles when
//! a log would need more).

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use super::dsh_compat::{FrameStart, ZstdFrames};
use super::listing::Stamp;
use super::query::QueryError;
use super::reader::{self, Limits, LinePos, LogFormat, ScanPos};
use super::scanned_event::ScannedEvent;

/// Plaintext bytes between two checkpoints of a plain log (at least).
pub const PLAIN_SPACING: u64 = 64 << 10;
/// Plaintext bytes between two checkpoints of a `.zstd` log (at least; at frame starts).
pub const ZSTD_SPACING: u64 = 256 << 10;
/// Most checkpoints kept per log.
pub const MAX_CHECKPOINTS: usize = 1 << 16;
/// Bytes before a stopping point whose checksum must match for an index to be continued.
const TAIL_CHECK_BYTES: u64 = 64;

/// Where a read of the log can start: a line, and the frame to decode from to reach it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checkpoint {
    /// The frame to decode from (a plain log: the line's own offset, twice).
    pub frame: FrameStart,
    /// Plaintext offset of the line's first byte.
    pub offset: u64,
    /// 1-based line number.
    pub line: u64,
    /// Seq of the line's first event.
    pub seq: u64,
}

/// The sparse index of one log as of one pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogIndex {
    pub format: LogFormat,
    /// Device and inode of the log indexed, where known.
    pub file_id: Option<(u64, u64)>,
    /// Bytes of the file the checked tail ends at: the readable prefix of a plain log, the
    /// compressed length read of a `.zstd` one.
    pub checked_len: u64,
    /// CRC-32 of the [`TAIL_CHECK_BYTES`] before `checked_len`.
    pub tail_check: u32,
    /// End of the readable prefix when indexed.
    pub end: ScanPos,
    /// The latest frame starting at or before `end`: where indexing goes on.
    pub resume: FrameStart,
    /// Bytes between checkpoints (at least).
    pub spacing: u64,
    /// In log order; the first is the first event's line (none for a log without events).
    pub checkpoints: Vec<Checkpoint>,
}

impl LogIndex {
    /// The checkpoint to start from to read the events before `seq`: the last one at or
    /// before it (the first event's line at worst).
    pub fn checkpoint_before(&self, seq: u64) -> Option<Checkpoint> {
        let at = self.checkpoints.partition_point(|c| c.seq <= seq);
        self.checkpoints.get(at.saturating_sub(1)).copied()
    }
}

fn io_err(path: &Path, source: io::Error) -> QueryError {
    QueryError::Io {
        path: path.to_owned(),
        source,
    }
}

/// CRC-32 of the up to [`TAIL_CHECK_BYTES`] bytes of `file` before `end`; `None` when the
/// file is shorter. Moves the file's position.
fn tail_check(file: &mut File, end: u64) -> io::Result<Option<u32>> {
    let start = end.saturating_sub(TAIL_CHECK_BYTES);
    let mut buf = Vec::new();
    file.seek(SeekFrom::Start(start))?;
    file.by_ref().take(end - start).read_to_end(&mut buf)?;
    Ok((buf.len() as u64 == end - start).then(|| crc32fast::hash(&buf)))
}

/// Plaintext from a checkpoint's frame on, positioned at its line (`format`'s stream of
/// the open log `file`).
pub(crate) fn open_at(
    path: &Path,
    mut file: File,
    format: LogFormat,
    frame: FrameStart,
    offset: u64,
    starts: Option<Arc<Mutex<Vec<FrameStart>>>>,
) -> Result<Box<dyn BufRead + Send>, QueryError> {
    match format {
        LogFormat::Plain => {
            file.seek(SeekFrom::Start(offset))
                .map_err(|e| io_err(path, e))?;
            Ok(Box::new(BufReader::with_capacity(64 * 1024, file)))
        }
        LogFormat::Zstd => {
            let mut frames =
                ZstdFrames::from_file_at(file, frame.compressed).map_err(|e| io_err(path, e))?;
            if let Some(starts) = starts {
                frames.record_frames(starts);
            }
            let mut src = BufReader::with_capacity(64 * 1024, frames);
            let skip = offset.saturating_sub(frame.plain);
            let skipped = io::copy(&mut (&mut src).take(skip), &mut io::sink())
                .map_err(|e| io_err(path, e))?;
            if skipped != skip {
                return Err(changed(path));
            }
            Ok(Box::new(src))
        }
    }
}

/// The error of a log that no longer holds what its index says.
pub(crate) fn changed(path: &Path) -> QueryError {
    io_err(
        path,
        io::Error::new(
            io::ErrorKind::InvalidData,
            "the log changed while it was read; read it again",
        ),
    )
}

/// Checkpoints as a pass finds lines.
struct Builder {
    format: LogFormat,
    spacing: u64,
    checkpoints: Vec<Checkpoint>,
    /// Frame starts reported by the decoder, not yet passed (plaintext offsets relative to
    /// `base`).
    starts: Option<Arc<Mutex<Vec<FrameStart>>>>,
    base: u64,
    /// The latest frame starting at or before the line being looked at.
    current: FrameStart,
    last_line: Option<u64>,
}

impl Builder {
    /// Absorb the frames that start at or before plaintext offset `at`.
    fn frames_up_to(&mut self, at: u64) {
        let Some(starts) = &self.starts else {
            return;
        };
        let mut pending = starts.lock().unwrap_or_else(PoisonError::into_inner);
        let taken = pending
            .iter()
            .take_while(|f| self.base + f.plain <= at)
            .count();
        for f in pending.drain(..taken) {
            self.current = FrameStart {
                compressed: f.compressed,
                plain: self.base + f.plain,
            };
        }
    }

    fn see(&mut self, seq: u64, at: LinePos) {
        if self.last_line == Some(at.offset) {
            return;
        }
        self.last_line = Some(at.offset);
        let frame = match self.format {
            LogFormat::Plain => FrameStart {
                compressed: at.offset,
                plain: at.offset,
            },
            LogFormat::Zstd => {
                self.frames_up_to(at.offset);
                self.current
            }
        };
        let due = match self.checkpoints.last() {
            None => true,
            Some(last) => {
                at.offset >= last.offset.saturating_add(self.spacing)
                    && (self.format == LogFormat::Plain
                        || frame.compressed != last.frame.compressed)
            }
        };
        if !due {
            return;
        }
        self.checkpoints.push(Checkpoint {
            frame,
            offset: at.offset,
            line: at.line,
            seq,
        });
        if self.checkpoints.len() > MAX_CHECKPOINTS {
            // Every other one goes (the first stays): twice the spacing.
            let mut n = 0usize;
            self.checkpoints.retain(|_| {
                n += 1;
                n % 2 == 1
            });
            self.spacing = self.spacing.saturating_mul(2);
        }
    }
}

/// Index the log at `path` (already open as `file`, whose metadata is `meta`), going on
/// from `earlier` when it is an index of the same file that only grew. A corrupt log is an
/// error; a torn tail simply ends the index.
pub fn update(
    path: &Path,
    mut file: File,
    meta: &std::fs::Metadata,
    format: LogFormat,
    limits: &Limits,
    earlier: Option<LogIndex>,
) -> Result<LogIndex, QueryError> {
    let id = Stamp::of(meta).file_id;
    let len = meta.len();
    let go_on = match earlier {
        Some(e)
            if e.format == format
                && e.file_id == id
                && len >= e.checked_len
                && tail_check(&mut file, e.checked_len).map_err(|x| io_err(path, x))?
                    == Some(e.tail_check) =>
        {
            Some(e)
        }
        _ => None,
    };
    let starts = (format == LogFormat::Zstd).then(|| Arc::new(Mutex::new(Vec::new())));
    let (mut builder, end, read_len) = if let Some(e) = go_on {
        if len == e.checked_len {
            // Nothing was appended (a plain log's torn tail aside, read on below).
            if format == LogFormat::Zstd || e.end.readable_len == len {
                return Ok(e);
            }
        }
        let src = open_at(
            path,
            file.try_clone().map_err(|x| io_err(path, x))?,
            format,
            e.resume,
            e.end.readable_len,
            starts.clone(),
        )?;
        let mut builder = Builder {
            format,
            spacing: e.spacing,
            checkpoints: e.checkpoints,
            starts,
            base: e.resume.plain,
            current: e.resume,
            last_line: None,
        };
        let (end, _torn) = reader::scan_events_at_limited(
            path,
            src,
            e.end,
            limits,
            &mut |ev: ScannedEvent, at| {
                builder.see(ev.seq(), at);
                Ok(())
            },
        )?;
        (builder, end, len)
    } else {
        file.seek(SeekFrom::Start(0)).map_err(|x| io_err(path, x))?;
        let first = FrameStart {
            compressed: 0,
            plain: 0,
        };
        let src = open_at(
            path,
            file.try_clone().map_err(|x| io_err(path, x))?,
            format,
            first,
            0,
            starts.clone(),
        )?;
        let mut builder = Builder {
            format,
            spacing: match format {
                LogFormat::Plain => PLAIN_SPACING,
                LogFormat::Zstd => ZSTD_SPACING,
            },
            checkpoints: Vec::new(),
            starts,
            base: 0,
            current: first,
            last_line: None,
        };
        let summary = reader::scan_at_limited(path, src, limits, &mut |ev: ScannedEvent, at| {
            builder.see(ev.seq(), at);
            Ok(())
        })?;
        let end = ScanPos {
            readable_len: summary.readable_len,
            next_seq: summary.next_seq,
            line: summary.lines,
        };
        (builder, end, len)
    };
    let resume = match format {
        LogFormat::Plain => FrameStart {
            compressed: end.readable_len,
            plain: end.readable_len,
        },
        LogFormat::Zstd => {
            builder.frames_up_to(end.readable_len);
            builder.current
        }
    };
    // A plain log is checked where its readable prefix ends (a torn tail after it may be
    // rewritten); a `.zstd` one where its compressed bytes read ended.
    let checked_len = match format {
        LogFormat::Plain => end.readable_len,
        LogFormat::Zstd => read_len,
    };
    let tail = tail_check(&mut file, checked_len)
        .map_err(|x| io_err(path, x))?
        .ok_or_else(|| changed(path))?;
    Ok(LogIndex {
        format,
        file_id: id,
        checked_len,
        tail_check: tail,
        end,
        resume,
        spacing: builder.spacing,
        checkpoints: builder.checkpoints,
    })
}
