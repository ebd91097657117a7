//! What of a session is indexed: its folded surface projected exactly as the reference layer
//! projects it (direct user messages, steering, assistant text, compact checkpoints), read
//! from a log whole or continued from where an earlier read stopped.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Seek, SeekFrom};
use std::path::Path;

use dsh_reference::TurnRole;
use dsh_reference::projection::project_event;
use dsh_store::reader::{self, LogFormat, ScanPos, UNTERMINATED};
use dsh_store::{EventData, QueryError, SessionHeader, SurfaceFolder, SurfaceOp};

use crate::checkpoint_text;

/// One projected message as indexed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexedMessage {
    pub role: TurnRole,
    /// A compaction summary (a checkpoint standing for what it replaced); its text is the
    /// summary without its framing (`checkpoint_text`).
    pub checkpoint: bool,
    pub seq: u64,
    /// Event time, Unix milliseconds.
    pub time: i64,
    pub text: String,
}

/// A session's indexed content as of one read of its log.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionText {
    pub header: SessionHeader,
    pub title: Option<String>,
    /// Surface messages in model order.
    pub messages: Vec<IndexedMessage>,
    /// End of the clean readable prefix; `None` when the read stopped at damage (the next
    /// read starts over).
    pub resume: Option<ScanPos>,
    /// Time of the last readable event (for recency), or the creation time.
    pub last_time: i64,
}

/// What continuing a read found.
#[derive(Debug)]
pub enum Continued {
    /// Only appends: these messages follow the earlier ones; the title if one was set.
    Appended {
        messages: Vec<IndexedMessage>,
        title: Option<String>,
        resume: Option<ScanPos>,
        last_time: Option<i64>,
    },
    /// A replace (compaction) changed the surface: read the whole log again.
    SurfaceChanged,
}

fn corrupt(path: &Path, seq: u64, reason: impl std::fmt::Display) -> QueryError {
    QueryError::Corrupt {
        path: path.to_owned(),
        line: 0,
        reason: format!("event {seq}: {reason}"),
    }
}

fn resumable(end: ScanPos, torn: Option<&reader::TornTail>) -> Option<ScanPos> {
    torn.is_none_or(|t| t.reason == UNTERMINATED).then_some(end)
}

pub(crate) fn message_of(event: &dsh_store::Event) -> Option<IndexedMessage> {
    let item = project_event(event)?;
    let text = if item.checkpoint {
        checkpoint_text::summary_of(&item.text).to_owned()
    } else {
        item.text.into_owned()
    };
    Some(IndexedMessage {
        role: item.role,
        checkpoint: item.checkpoint,
        seq: event.seq,
        time: event.time,
        text,
    })
}

/// Read a whole log: fold its surface and project the surface events.
pub fn read_whole(path: &Path, format: LogFormat) -> Result<SessionText, QueryError> {
    let mut folder = SurfaceFolder::new();
    let mut removed = Vec::new();
    let mut by_seq: HashMap<u64, IndexedMessage> = HashMap::new();
    let mut title = None;
    let mut last_time = None;
    let summary = reader::scan_log(path, format, &mut |event, _line| {
        last_time = Some(event.time);
        if let EventData::SessionTitle(t) = &event.data {
            title = Some(t.title.clone());
        }
        if event.surface_op.is_none() {
            return Ok(());
        }
        removed.clear();
        folder
            .push_collecting(&event, &mut removed)
            .map_err(|e| corrupt(path, event.seq, e))?;
        for seq in &removed {
            by_seq.remove(seq);
        }
        if let Some(m) = message_of(&event) {
            by_seq.insert(event.seq, m);
        }
        Ok(())
    })?;
    let messages = folder
        .surface()
        .iter()
        .filter_map(|seq| by_seq.remove(seq))
        .collect();
    let end = ScanPos {
        readable_len: summary.readable_len,
        next_seq: summary.next_seq,
        line: summary.lines,
    };
    Ok(SessionText {
        last_time: last_time.unwrap_or(summary.header.created_at),
        resume: if format == LogFormat::Plain {
            resumable(end, summary.torn_tail.as_ref())
        } else {
            None
        },
        header: summary.header,
        title,
        messages,
    })
}

/// Continue a clean earlier read of a plain log at `from`; the log only grew since.
pub fn read_continued(path: &Path, from: ScanPos) -> Result<Continued, QueryError> {
    let io = |source| QueryError::Io {
        path: path.to_owned(),
        source,
    };
    let mut file = File::open(path).map_err(io)?;
    file.seek(SeekFrom::Start(from.readable_len)).map_err(io)?;
    let mut messages = Vec::new();
    let mut title = None;
    let mut last_time = None;
    let mut changed = false;
    let (end, torn) = reader::scan_events(
        path,
        BufReader::with_capacity(256 * 1024, file),
        from,
        &mut |event, _line| {
            last_time = Some(event.time);
            if let EventData::SessionTitle(t) = &event.data {
                title = Some(t.title.clone());
            }
            match event.surface_op {
                None => {}
                Some(SurfaceOp::Append) => messages.extend(message_of(&event)),
                Some(SurfaceOp::Replace { .. }) => changed = true,
            }
            Ok(())
        },
    )?;
    if changed {
        return Ok(Continued::SurfaceChanged);
    }
    Ok(Continued::Appended {
        messages,
        title,
        resume: resumable(end, torn.as_ref()),
        last_time,
    })
}
