//! Windowed reads of a session log (docs/session-store.md: windowed reads): the events
//! right before a position, read from the nearest checkpoint of the log's
//! [`LogIndex`](super::log_index::LogIndex), never from the start, holding at most one
//! window — for scrolling a transcript back to the start of any session.

use std::cell::Cell;
use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, BufRead, Read};
use std::path::Path;

use super::event::{Event, EventData};
use super::log_index::{LogIndex, changed, open_at};
use super::query::QueryError;
use super::reader::{self, Limits, ScanPos};

/// Where a window ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowEnd {
    /// At the end of the log's readable prefix as it is now.
    Latest,
    /// Right before the event with this seq (the first seq of a window already shown).
    BeforeSeq(u64),
}

/// How much one window holds at most.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowLimits {
    /// Events.
    pub max_events: usize,
    /// Bytes of the log lines they come from (about what they take in memory).
    pub max_bytes: u64,
    /// Start the window at a `turn/start` when one lies inside it (the events before it
    /// come with the next window back), so a transcript built from it begins with whole
    /// turns. A turn longer than the window is cut anyway.
    pub whole_turns: bool,
}

impl Default for WindowLimits {
    fn default() -> Self {
        WindowLimits {
            max_events: 400,
            max_bytes: 4 << 20,
            whole_turns: true,
        }
    }
}

/// A stretch of a session's events.
#[derive(Debug, Clone, PartialEq)]
pub struct LogWindow {
    /// In seq order: seqs `start_seq..end_seq`, each once.
    pub events: Vec<Event>,
    /// The first seq of the window: ask for [`WindowEnd::BeforeSeq`] of it to read further
    /// back. `0`: the window starts at the log's first event.
    pub start_seq: u64,
    /// The seq the window ends before: the readable log's next seq for
    /// [`WindowEnd::Latest`].
    pub end_seq: u64,
}

impl LogWindow {
    /// Whether the window reaches the log's first event (nothing earlier to read).
    pub fn at_start(&self) -> bool {
        self.start_seq == 0
    }
}

/// A line source that ends once `stop` is set (between lines: the scan has used the line
/// it read last).
struct Stopping<'a, R> {
    inner: R,
    stop: &'a Cell<bool>,
}

impl<R: Read> Read for Stopping<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.stop.get() {
            return Ok(0);
        }
        self.inner.read(buf)
    }
}

impl<R: BufRead> BufRead for Stopping<'_, R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.stop.get() {
            return Ok(&[]);
        }
        self.inner.fill_buf()
    }

    fn consume(&mut self, amt: usize) {
        self.inner.consume(amt);
    }
}

/// The events of the log at `path` (open as `file`, indexed by `index`) before seq
/// `end_seq`, at most as many as `limits` allow, read from the nearest checkpoint.
pub fn read_window(
    path: &Path,
    file: File,
    index: &LogIndex,
    end_seq: u64,
    limits: &WindowLimits,
    read_limits: &Limits,
) -> Result<LogWindow, QueryError> {
    let end_seq = end_seq.min(index.end.next_seq);
    let empty = LogWindow {
        events: Vec::new(),
        start_seq: end_seq,
        end_seq,
    };
    let max_events = limits.max_events.max(1);
    let from_seq = end_seq.saturating_sub(u64::try_from(max_events).unwrap_or(u64::MAX));
    let Some(checkpoint) = index.checkpoint_before(from_seq).filter(|_| end_seq > 0) else {
        return Ok(empty);
    };
    let src = open_at(
        path,
        file,
        index.format,
        checkpoint.frame,
        checkpoint.offset,
        None,
    )?;
    let stop = Cell::new(false);
    let src = Stopping {
        inner: src,
        stop: &stop,
    };
    // (event, bytes of its line charged to it: the line's length for its first event).
    let mut kept: VecDeque<(Event, u64)> = VecDeque::new();
    let mut bytes = 0u64;
    let mut last_line = None;
    let start = ScanPos {
        readable_len: checkpoint.offset,
        next_seq: checkpoint.seq,
        line: checkpoint.line.saturating_sub(1),
    };
    reader::scan_events_at_limited(path, src, start, read_limits, &mut |event: Event, at| {
        if event.seq >= end_seq {
            stop.set(true);
            return Ok(());
        }
        if event.seq + 1 == end_seq {
            stop.set(true);
        }
        let charge = if last_line == Some(at.offset) {
            0
        } else {
            last_line = Some(at.offset);
            at.len
        };
        bytes += charge;
        kept.push_back((event, charge));
        while kept.len() > max_events || (bytes > limits.max_bytes && kept.len() > 1) {
            if let Some((_, freed)) = kept.pop_front() {
                bytes -= freed;
            }
        }
        Ok(())
    })?;
    if kept.back().map(|(e, _)| e.seq + 1) != Some(end_seq) {
        // The index promised these events: the log was rewritten meanwhile.
        return Err(changed(path));
    }
    let mut events: Vec<Event> = kept.into_iter().map(|(e, _)| e).collect();
    if limits.whole_turns
        && events
            .first()
            .is_some_and(|e| e.seq > 0 && !is_turn_start(e))
        && let Some(first_turn) = events.iter().position(is_turn_start)
    {
        events.drain(..first_turn);
    }
    let start_seq = events.first().map_or(end_seq, |e| e.seq);
    Ok(LogWindow {
        events,
        start_seq,
        end_seq,
    })
}

fn is_turn_start(event: &Event) -> bool {
    matches!(event.data, EventData::TurnStart { .. })
}
