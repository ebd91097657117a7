//! What of a session is indexed: its folded surface projected exactly as the reference layer
//! projects it (direct user messages, steering, assistant text, compact checkpoints), read
//! from a log whole or continued from where an earlier read stopped — in pieces of bounded
//! size (docs/search.md: long sessions), so reading a session holds a fixed budget of its
//! text however long the log is.
//!
//! A whole read folds the log once, keeping the projected messages while they fit one piece
//! (every session that fits reads exactly as before: one pass, surface order). A log with
//! more text is read twice through the same open file: the first pass keeps only the folded
//! surface (a bit per event), the second hands the surface messages to a [`PieceBuilder`] in
//! log order, which passes on every full piece.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use dsh_store::compact_surface::{CompactSurface, Placed};
use dsh_store::projection::TurnRole;
use dsh_store::projection::project_event;
use dsh_store::reader::{self, LogFormat, ScanPos, UNTERMINATED};
use dsh_store::{EventData, QueryError, SessionHeader, SurfaceOp};

/// Bytes of message text a piece holds at most (docs/search.md: long sessions). A message
/// longer than this is cut into parts of at most this size, each indexed like a message.
pub const PIECE_BYTES: usize = 2 << 20;

/// Bytes before a cut searched for whitespace, so a long message is not cut inside a word.
const CUT_SLACK: usize = 256;

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
    /// The message's place in the conversation, from 1 (the parts of a message cut for
    /// being longer than a piece share it); 0 until a read numbers it.
    pub number: u64,
}

/// Number `messages`, a whole conversation in surface order, from 1.
pub fn number_from_one(messages: &mut [IndexedMessage]) {
    let mut numbering = Numbering::default();
    for m in messages {
        numbering.number(m);
    }
}

/// Gives messages their place in the conversation as they come in order: a message's parts
/// (the same seq, one after the other) share one number.
#[derive(Debug, Default)]
struct Numbering {
    /// The number given last (0: none yet).
    last: u64,
    last_seq: Option<u64>,
}

impl Numbering {
    fn number(&mut self, m: &mut IndexedMessage) {
        if self.last_seq != Some(m.seq) {
            self.last += 1;
            self.last_seq = Some(m.seq);
        }
        m.number = self.last;
    }
}

/// A session's fields as of one read of its log: everything but its messages.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionMeta {
    pub header: SessionHeader,
    pub title: Option<String>,
    /// End of the clean readable prefix; `None` when the read stopped at damage (the next
    /// read starts over) or the log is compressed.
    pub resume: Option<ScanPos>,
    /// Time of the last readable event (for recency), or the creation time.
    pub last_time: i64,
}

/// A session's indexed content as of one read of its log, all of it in memory (a session
/// that fits one piece, or a test).
#[derive(Debug, Clone, PartialEq)]
pub struct SessionText {
    pub header: SessionHeader,
    pub title: Option<String>,
    /// Surface messages in model order.
    pub messages: Vec<IndexedMessage>,
    pub resume: Option<ScanPos>,
    pub last_time: i64,
}

/// What a read hands over for every full piece: its messages. An error stops the read and
/// is returned by it.
pub type EmitPiece<'a> = dyn FnMut(Vec<IndexedMessage>) -> Result<(), QueryError> + 'a;

/// A session read in pieces: its fields and its last piece (see [`read_pieces`]).
pub type PieceRead = Result<(SessionMeta, Vec<IndexedMessage>), QueryError>;

/// What continuing a read found.
#[derive(Debug)]
pub enum Continued {
    /// Only appends: `last` holds the earlier lead messages and what followed them that did
    /// not fill a piece (full pieces were handed over); the title if one was set.
    Appended {
        last: Vec<IndexedMessage>,
        title: Option<String>,
        resume: Option<ScanPos>,
        last_time: Option<i64>,
    },
    /// A replace (compaction) changed the surface: read the whole log again (pieces handed
    /// over so far are to be dropped).
    SurfaceChanged,
}

/// Gathers messages into pieces of at most `budget` bytes of text, handing each full piece
/// to `emit` and keeping the last one. Messages come with a sort key: a piece's messages are
/// put in key order before it is handed over (a stable sort, so the parts of a cut message
/// stay in order), then numbered on from the pieces before it, so every message carries its
/// place in the conversation however many pieces came first.
pub struct PieceBuilder<'e, 'f> {
    budget: usize,
    current: Vec<((usize, u64), IndexedMessage)>,
    bytes: usize,
    emitted: usize,
    numbering: Numbering,
    emit: &'e mut EmitPiece<'f>,
}

impl<'e, 'f> PieceBuilder<'e, 'f> {
    pub fn new(budget: usize, emit: &'e mut EmitPiece<'f>) -> Self {
        PieceBuilder {
            budget: budget.max(1),
            current: Vec::new(),
            bytes: 0,
            emitted: 0,
            numbering: Numbering::default(),
            emit,
        }
    }

    /// The first message pushed is number `first` (a read continued after earlier pieces).
    #[must_use]
    pub fn numbered_from(mut self, first: u64) -> Self {
        self.numbering.last = first.saturating_sub(1);
        self
    }

    /// Add `message` (cut into parts when it is longer than a piece).
    pub fn push(&mut self, key: (usize, u64), message: IndexedMessage) -> Result<(), QueryError> {
        if message.text.len() <= self.budget {
            return self.push_part(key, message);
        }
        let IndexedMessage {
            role,
            checkpoint,
            seq,
            time,
            text,
            number,
        } = message;
        let mut rest = text.as_str();
        while !rest.is_empty() {
            let cut = cut_point(rest, self.budget);
            let (part, after) = rest.split_at(cut);
            self.push_part(
                key,
                IndexedMessage {
                    role,
                    checkpoint,
                    seq,
                    time,
                    text: part.to_owned(),
                    number,
                },
            )?;
            rest = after;
        }
        Ok(())
    }

    fn push_part(&mut self, key: (usize, u64), message: IndexedMessage) -> Result<(), QueryError> {
        if !self.current.is_empty() && self.bytes + message.text.len() > self.budget {
            let full = std::mem::take(&mut self.current);
            self.bytes = 0;
            self.emitted += 1;
            let piece = self.ordered(full);
            (self.emit)(piece)?;
        }
        self.bytes += message.text.len();
        self.current.push((key, message));
        Ok(())
    }

    /// Pieces handed over so far.
    pub fn emitted(&self) -> usize {
        self.emitted
    }

    /// The last piece (never handed over), in key order.
    pub fn finish(mut self) -> Vec<IndexedMessage> {
        let last = std::mem::take(&mut self.current);
        self.ordered(last)
    }

    /// A piece's messages in key order, numbered on.
    fn ordered(&mut self, mut keyed: Vec<((usize, u64), IndexedMessage)>) -> Vec<IndexedMessage> {
        keyed.sort_by_key(|(key, _)| *key);
        keyed
            .into_iter()
            .map(|(_, mut m)| {
                self.numbering.number(&mut m);
                m
            })
            .collect()
    }
}

/// Where to cut `text` so the first part has at most `max` bytes: a char boundary, after
/// whitespace when there is some shortly before; never 0 for a non-empty text.
fn cut_point(text: &str, max: usize) -> usize {
    if text.len() <= max {
        return text.len();
    }
    let mut end = max;
    while end > 0 && !text.is_char_boundary(end) {
        end -= 1;
    }
    if end == 0 {
        // A budget smaller than one char: take the char whole.
        return text.chars().next().map_or(text.len(), char::len_utf8);
    }
    let mut from = end.saturating_sub(CUT_SLACK);
    while from < end && !text.is_char_boundary(from) {
        from += 1;
    }
    let window = text.get(from..end).unwrap_or_default();
    match window.char_indices().rfind(|(_, c)| c.is_whitespace()) {
        Some((i, ws)) => from + i + ws.len_utf8(),
        None => end,
    }
}

fn corrupt(path: &Path, seq: u64, reason: impl std::fmt::Display) -> QueryError {
    QueryError::Corrupt {
        path: path.to_owned(),
        line: 0,
        reason: format!("event {seq}: {reason}"),
    }
}

fn io_err(path: &Path, source: std::io::Error) -> QueryError {
    QueryError::Io {
        path: path.to_owned(),
        source,
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
        number: 0,
    })
}

/// Read a whole log, all of it in memory (for tests and small logs).
pub fn read_whole(path: &Path, format: LogFormat) -> Result<SessionText, QueryError> {
    let mut messages = Vec::new();
    let (meta, last) = read_pieces(path, format, usize::MAX, &mut |piece| {
        messages.extend(piece);
        Ok(())
    })?;
    messages.extend(last);
    Ok(SessionText {
        header: meta.header,
        title: meta.title,
        messages,
        resume: meta.resume,
        last_time: meta.last_time,
    })
}

/// Read a whole log in pieces of at most `budget` bytes of text: every full piece goes to
/// `emit`, and the last piece comes back with the session's fields. A log whose text fits
/// one piece is read once and comes back whole, in surface order.
pub fn read_pieces(
    path: &Path,
    format: LogFormat,
    budget: usize,
    emit: &mut EmitPiece<'_>,
) -> PieceRead {
    let file = reader::open_file(path)?;
    let first = file.try_clone().map_err(|e| io_err(path, e))?;
    let mut surface = CompactSurface::new();
    let mut removed = Vec::new();
    let mut kept: HashMap<u64, IndexedMessage> = HashMap::new();
    let mut kept_bytes = 0usize;
    let mut overflow = false;
    let mut title = None;
    let mut last_time = None;
    let src = reader::open_stream(path, first, format)?;
    let summary = reader::scan(path, src, &mut |event, _line| {
        last_time = Some(event.time);
        if let EventData::SessionTitle(t) = &event.data {
            title = Some(t.title.clone());
        }
        removed.clear();
        let placed = surface
            .push(&event, &mut removed)
            .map_err(|e| corrupt(path, event.seq, e))?;
        if placed == Placed::Not || overflow {
            return Ok(());
        }
        for seq in &removed {
            if let Some(m) = kept.remove(seq) {
                kept_bytes -= m.text.len();
            }
        }
        if let Some(m) = message_of(&event) {
            kept_bytes += m.text.len();
            kept.insert(event.seq, m);
        }
        if kept_bytes > budget {
            // Too much for one piece: only the surface is kept; a second pass reads it.
            overflow = true;
            kept = HashMap::new();
        }
        Ok(())
    })?;
    let end = ScanPos {
        readable_len: summary.readable_len,
        next_seq: summary.next_seq,
        line: summary.lines,
    };
    let meta = SessionMeta {
        last_time: last_time.unwrap_or(summary.header.created_at),
        resume: if format == LogFormat::Plain {
            resumable(end, summary.torn_tail.as_ref())
        } else {
            None
        },
        header: summary.header,
        title,
    };
    if !overflow {
        let mut messages: Vec<IndexedMessage> = surface
            .seqs()
            .into_iter()
            .filter_map(|seq| kept.remove(&seq))
            .collect();
        number_from_one(&mut messages);
        return Ok((meta, messages));
    }
    let last = second_pass(path, file, format, &surface, end, budget, emit)?;
    Ok((meta, last))
}

/// Read the surface messages of the log in `file` again, up to where the first pass stopped,
/// into pieces (each in surface order).
fn second_pass(
    path: &Path,
    mut file: File,
    format: LogFormat,
    surface: &CompactSurface,
    end: ScanPos,
    budget: usize,
    emit: &mut EmitPiece<'_>,
) -> Result<Vec<IndexedMessage>, QueryError> {
    file.seek(SeekFrom::Start(0)).map_err(|e| io_err(path, e))?;
    let src = reader::open_stream(path, file, format)?.take(end.readable_len);
    let positions = surface.positions();
    let mut builder = PieceBuilder::new(budget, emit);
    let again = reader::scan(path, src, &mut |event, _line| {
        if event.seq >= end.next_seq {
            return Ok(());
        }
        if let Some(position) = positions.position(event.seq)
            && let Some(m) = message_of(&event)
        {
            builder.push(position, m)?;
        }
        Ok(())
    })?;
    if again.readable_len != end.readable_len || again.next_seq != end.next_seq {
        return Err(QueryError::Corrupt {
            path: path.to_owned(),
            line: again.lines,
            reason: "log changed while being read: it no longer reads to the same events".into(),
        });
    }
    Ok(builder.finish())
}

/// Continue a clean earlier read of a plain log at `from`; the log only grew since. `lead`
/// holds the messages of the session's last piece so far: what follows joins them, full
/// pieces go to `emit`.
pub fn read_continued(
    path: &Path,
    from: ScanPos,
    lead: Vec<IndexedMessage>,
    budget: usize,
    emit: &mut EmitPiece<'_>,
) -> Result<Continued, QueryError> {
    let mut file = reader::open_file(path)?;
    file.seek(SeekFrom::Start(from.readable_len))
        .map_err(|e| io_err(path, e))?;
    let first = lead.first().map_or(1, |m| m.number.max(1));
    let mut builder = PieceBuilder::new(budget, emit).numbered_from(first);
    let mut order = 0u64;
    for m in lead {
        builder.push((0, order), m)?;
        order += 1;
    }
    let mut title = None;
    let mut last_time = None;
    let mut changed = false;
    let (end, torn) = reader::scan_events(
        path,
        BufReader::with_capacity(256 * 1024, file),
        from,
        &mut |event, _line| {
            if changed {
                return Ok(());
            }
            last_time = Some(event.time);
            if let EventData::SessionTitle(t) = &event.data {
                title = Some(t.title.clone());
            }
            match event.surface_op {
                None => {}
                Some(SurfaceOp::Append) => {
                    if let Some(m) = message_of(&event) {
                        builder.push((0, order), m)?;
                        order += 1;
                    }
                }
                Some(SurfaceOp::Replace { .. }) => changed = true,
            }
            Ok(())
        },
    )?;
    if changed {
        return Ok(Continued::SurfaceChanged);
    }
    Ok(Continued::Appended {
        last: builder.finish(),
        title,
        resume: resumable(end, torn.as_ref()),
        last_time,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(seq: u64, text: &str) -> IndexedMessage {
        IndexedMessage {
            role: TurnRole::User,
            checkpoint: false,
            seq,
            time: 0,
            text: text.to_owned(),
            number: 0,
        }
    }

    #[test]
    fn pieces_hold_at_most_the_budget_and_cut_long_messages_between_words() {
        let mut pieces: Vec<Vec<IndexedMessage>> = Vec::new();
        let mut emit = |p: Vec<IndexedMessage>| {
            pieces.push(p);
            Ok(())
        };
        let mut b = PieceBuilder::new(10, &mut emit);
        b.push((0, 0), msg(0, "aaaa")).unwrap();
        b.push((0, 1), msg(1, "bbbb")).unwrap();
        b.push((0, 2), msg(2, "cccc")).unwrap();
        b.push((0, 3), msg(3, "one two three four")).unwrap();
        b.push((0, 4), msg(4, "ééééééé")).unwrap();
        let emitted = b.emitted();
        let last = b.finish();
        pieces.push(last);
        let texts: Vec<Vec<(u64, &str)>> = pieces
            .iter()
            .map(|p| p.iter().map(|m| (m.seq, m.text.as_str())).collect())
            .collect();
        assert_eq!(
            texts,
            [
                vec![(0, "aaaa"), (1, "bbbb")],
                vec![(2, "cccc")],
                vec![(3, "one two ")],
                vec![(3, "three four")],
                vec![(4, "ééééé")],
                vec![(4, "éé")],
            ]
        );
        assert_eq!(emitted, 5);
        assert!(
            pieces
                .iter()
                .all(|p| p.iter().map(|m| m.text.len()).sum::<usize>() <= 10)
        );
    }

    #[test]
    fn a_piece_is_ordered_by_its_keys() {
        let mut emit = |_: Vec<IndexedMessage>| Ok(());
        let mut b = PieceBuilder::new(100, &mut emit);
        b.push((1, 5), msg(5, "later")).unwrap();
        b.push((0, 9), msg(9, "checkpoint")).unwrap();
        let seqs: Vec<u64> = b.finish().iter().map(|m| m.seq).collect();
        assert_eq!(seqs, [9, 5]);
    }

    #[test]
    fn cut_points_stay_on_char_boundaries() {
        let cases: &[(&str, usize, usize)] = &[
            ("abc", 5, 3),
            ("abcdef", 4, 4),
            ("ab cdef", 5, 3),
            ("éé", 3, 2),
            ("é", 1, 2),
            ("中文", 4, 3),
        ];
        for &(text, max, want) in cases {
            assert_eq!(cut_point(text, max), want, "{text:?} {max}");
        }
    }
}
