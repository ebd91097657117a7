//! What dsh writes beyond plain JSONL (docs/session-store.md: on-disk layout): packed chunk
//! rows, read and written the way dsh's backend does, and `session.jsonl.zstd` logs made of
//! concatenated zstd frames.
//!
//! A packed row stores a run of `assistant/chunk` delta events in one line:
//! `{"type":"text-chunks"|"reasoning-chunks"|"tool-call-chunks","seq0","time0","data":{...}}`
//! with `data = {turn, step, index, dt, texts}` (tool calls: `{turn, step, index, dt, id,
//! name?, args}`). Member k is the event `assistant/chunk` with seq `seq0 + k`, time
//! `time0 + dt[0] + … + dt[k-1]` (`dt` holds the gaps between neighbours, one fewer than the
//! members) and chunk `{type:"text-delta"|"reasoning-delta", index, text}` or
//! `{type:"tool-call-delta", index, id, name?, argumentsDelta}`. A malformed row is an
//! unparsable line, never silently dropped.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::sync::Arc;

use serde_json::{Map, Value};

use super::event::{Event, EventData};

/// The packed row types.
pub const PACKED_ROW_TYPES: [&str; 3] = ["text-chunks", "reasoning-chunks", "tool-call-chunks"];

/// Whether a line's `type` is a packed chunk row.
pub fn is_packed_row(kind: &str) -> bool {
    PACKED_ROW_TYPES.contains(&kind)
}

/// Which of the three packed rows, with the delta chunk type its members expand to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RowKind {
    Text,
    Reasoning,
    ToolCall,
}

impl RowKind {
    fn of_row(kind: &str) -> Option<Self> {
        match kind {
            "text-chunks" => Some(RowKind::Text),
            "reasoning-chunks" => Some(RowKind::Reasoning),
            "tool-call-chunks" => Some(RowKind::ToolCall),
            _ => None,
        }
    }

    fn of_delta(kind: &str) -> Option<Self> {
        match kind {
            "text-delta" => Some(RowKind::Text),
            "reasoning-delta" => Some(RowKind::Reasoning),
            "tool-call-delta" => Some(RowKind::ToolCall),
            _ => None,
        }
    }

    fn row_type(self) -> &'static str {
        match self {
            RowKind::Text => "text-chunks",
            RowKind::Reasoning => "reasoning-chunks",
            RowKind::ToolCall => "tool-call-chunks",
        }
    }

    fn delta_type(self) -> &'static str {
        match self {
            RowKind::Text => "text-delta",
            RowKind::Reasoning => "reasoning-delta",
            RowKind::ToolCall => "tool-call-delta",
        }
    }

    /// The member array of the row's data, and the chunk field each member becomes.
    fn member_keys(self) -> (&'static str, &'static str) {
        match self {
            RowKind::ToolCall => ("args", "argumentsDelta"),
            RowKind::Text | RowKind::Reasoning => ("texts", "text"),
        }
    }
}

/// The validated fields of one packed row (its members and gaps are checked in place,
/// never copied out).
struct PackedRow {
    kind: RowKind,
    seq0: u64,
    time0: i64,
    turn: u64,
    step: u64,
    members: usize,
}

impl PackedRow {
    fn parse(
        row_type: &str,
        seq0: Option<u64>,
        time0: Option<i64>,
        data: &Value,
    ) -> Result<Self, String> {
        let kind = RowKind::of_row(row_type).ok_or_else(|| format!("{row_type} is not a row"))?;
        let seq0 = seq0.ok_or_else(|| format!("{row_type} row without integer seq0"))?;
        let time0 = time0.ok_or_else(|| format!("{row_type} row without integer time0"))?;
        let data = data
            .as_object()
            .ok_or_else(|| format!("{row_type} row data is not an object"))?;
        let int = |key: &str| {
            data.get(key)
                .and_then(Value::as_u64)
                .ok_or_else(|| format!("{row_type} row without integer data.{key}"))
        };
        let (turn, step) = (int("turn")?, int("step")?);
        if data.get("index").is_none() {
            return Err(format!("{row_type} row without data.index"));
        }
        let members = Self::members(row_type, kind, data)?;
        Self::gaps(row_type, data, members, seq0, time0)?;
        if kind == RowKind::ToolCall {
            Self::tool_identity(row_type, data)?;
        }
        Ok(PackedRow {
            kind,
            seq0,
            time0,
            turn,
            step,
            members,
        })
    }

    /// How many members the row has; each must be a string.
    fn members(row_type: &str, kind: RowKind, data: &Map<String, Value>) -> Result<usize, String> {
        let (key, _) = kind.member_keys();
        let members = data
            .get(key)
            .and_then(Value::as_array)
            .ok_or_else(|| format!("{row_type} row without data.{key} array"))?;
        if members.iter().any(|m| !m.is_string()) {
            return Err(format!("{row_type} row member is not a string"));
        }
        if members.is_empty() {
            return Err(format!("{row_type} row has no members"));
        }
        Ok(members.len())
    }

    /// `dt`: the time gaps between neighbouring members, one fewer than the members; no
    /// member's seq or time may overflow.
    fn gaps(
        row_type: &str,
        data: &Map<String, Value>,
        members: usize,
        seq0: u64,
        time0: i64,
    ) -> Result<(), String> {
        let Some(Value::Array(items)) = data.get("dt") else {
            return Err(format!("{row_type} row without data.dt array"));
        };
        let mut time = time0;
        for item in items {
            let gap = item
                .as_i64()
                .ok_or_else(|| format!("{row_type} row dt entry is not an integer"))?;
            time = time
                .checked_add(gap)
                .ok_or_else(|| format!("{row_type} row time overflows"))?;
        }
        if items.len() + 1 != members {
            return Err(format!(
                "{row_type} row has {members} members but {} dt gaps",
                items.len()
            ));
        }
        seq0.checked_add(members as u64 - 1)
            .ok_or_else(|| format!("{row_type} row seq overflows"))?;
        Ok(())
    }

    /// Tool-call rows: a string call id and, when the members carried one, a string name.
    fn tool_identity(row_type: &str, data: &Map<String, Value>) -> Result<(), String> {
        if !data.get("id").is_some_and(Value::is_string) {
            return Err(format!("{row_type} row without string data.id"));
        }
        if data.get("name").is_some_and(|n| !n.is_string()) {
            return Err(format!("{row_type} row data.name is not a string"));
        }
        Ok(())
    }
}

/// The chunk of member `text` of a row of `kind` whose data is `data`.
fn member_chunk(kind: RowKind, data: &Map<String, Value>, text: &str) -> Value {
    let mut chunk = Map::new();
    chunk.insert("type".into(), Value::String(kind.delta_type().into()));
    chunk.insert(
        "index".into(),
        data.get("index").cloned().unwrap_or(Value::Null),
    );
    if kind == RowKind::ToolCall {
        if let Some(id) = data.get("id") {
            chunk.insert("id".into(), id.clone());
        }
        if let Some(name) = data.get("name") {
            chunk.insert("name".into(), name.clone());
        }
    }
    let (_, key) = kind.member_keys();
    chunk.insert(key.into(), Value::String(text.into()));
    Value::Object(chunk)
}

/// The `assistant/chunk` events of one checked packed row, made one at a time from the
/// row's data as they are asked for: a row's members never all exist as events at once.
#[derive(Debug)]
pub struct PackedEvents {
    kind: RowKind,
    turn: u64,
    step: u64,
    seq: u64,
    time: i64,
    next: usize,
    len: usize,
    data: Map<String, Value>,
}

impl PackedEvents {
    /// Checks the row (every member and gap, and that no seq or time overflows) and
    /// returns its events to come.
    pub fn of(
        kind: &str,
        seq0: Option<u64>,
        time0: Option<i64>,
        data: Value,
    ) -> Result<Self, String> {
        let row = PackedRow::parse(kind, seq0, time0, &data)?;
        let Value::Object(data) = data else {
            return Err("row data is not an object".to_owned());
        };
        Ok(PackedEvents {
            kind: row.kind,
            turn: row.turn,
            step: row.step,
            seq: row.seq0,
            time: row.time0,
            next: 0,
            len: row.members,
            data,
        })
    }

    /// The member array (`texts` or `args`) and the gaps (`dt`).
    fn arrays(&self) -> (Option<&Vec<Value>>, Option<&Vec<Value>>) {
        let (key, _) = self.kind.member_keys();
        (
            self.data.get(key).and_then(Value::as_array),
            self.data.get("dt").and_then(Value::as_array),
        )
    }
}

impl Iterator for PackedEvents {
    type Item = Event;

    fn next(&mut self) -> Option<Event> {
        if self.next >= self.len {
            return None;
        }
        let k = self.next;
        let (members, gaps) = self.arrays();
        let text = members.and_then(|m| m.get(k)).and_then(Value::as_str)?;
        // Checked when the row was: neither overflows.
        let gap = (k > 0).then(|| {
            gaps.and_then(|g| g.get(k - 1))
                .and_then(Value::as_i64)
                .unwrap_or(0)
        });
        let chunk = member_chunk(self.kind, &self.data, text);
        if let Some(gap) = gap {
            self.time = self.time.saturating_add(gap);
            self.seq = self.seq.saturating_add(1);
        }
        self.next += 1;
        Some(Event {
            seq: self.seq,
            time: self.time,
            data: EventData::AssistantChunk {
                turn: self.turn,
                step: self.step,
                chunk,
                extra: Map::new(),
            },
            surface_op: None,
            source_event_seqs: None,
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.len - self.next.min(self.len);
        (left, Some(left))
    }
}

impl ExactSizeIterator for PackedEvents {}

/// Expand one packed row into its `assistant/chunk` events.
pub fn expand_packed_row(
    kind: &str,
    seq0: Option<u64>,
    time0: Option<i64>,
    data: &Value,
) -> Result<Vec<Event>, String> {
    Ok(PackedEvents::of(kind, seq0, time0, data.clone())?.collect())
}

/// Fewest members dsh packs into one row (its `MIN_RUN`): shorter runs stay one event per
/// line, because a row's envelope would cost about as much as the lines it replaces.
pub const MIN_PACKED_RUN: usize = 3;

/// A delta chunk event dsh's encoder would pack: an `assistant/chunk` with nothing but
/// `{turn, step, chunk}` and a chunk of exactly `{type, index, text}` (text/reasoning) or
/// `{type, index, id, name?, argumentsDelta}` (tool call). Anything else stays verbatim.
struct Packable<'a> {
    event: &'a Event,
    kind: RowKind,
    turn: u64,
    step: u64,
    chunk: &'a Map<String, Value>,
}

impl<'a> Packable<'a> {
    fn of(event: &'a Event) -> Option<Self> {
        let EventData::AssistantChunk {
            turn,
            step,
            chunk: Value::Object(chunk),
            extra,
        } = &event.data
        else {
            return None;
        };
        if !extra.is_empty() || event.surface_op.is_some() || event.source_event_seqs.is_some() {
            return None;
        }
        let kind = RowKind::of_delta(chunk.get("type")?.as_str()?)?;
        if !chunk.get("index")?.is_number() {
            return None;
        }
        let exact = |keys: &[&str]| {
            chunk.len() == keys.len()
                && keys
                    .iter()
                    .all(|k| *k == "index" || chunk.get(*k).is_some_and(Value::is_string))
        };
        let shaped = match kind {
            RowKind::Text | RowKind::Reasoning => exact(&["type", "index", "text"]),
            RowKind::ToolCall => {
                exact(&["type", "index", "id", "argumentsDelta"])
                    || exact(&["type", "index", "id", "name", "argumentsDelta"])
            }
        };
        shaped.then_some(Packable {
            event,
            kind,
            turn: *turn,
            step: *step,
            chunk,
        })
    }

    /// Whether `next` extends a run ending in `self`: same kind and block, the very next
    /// seq, and (tool calls) the same call id and name.
    fn continued_by(&self, next: &Packable<'_>) -> bool {
        let same = |key: &str| self.chunk.get(key) == next.chunk.get(key);
        next.kind == self.kind
            && Some(next.event.seq) == self.event.seq.checked_add(1)
            && next.event.time.checked_sub(self.event.time).is_some()
            && next.turn == self.turn
            && next.step == self.step
            && same("index")
            && (self.kind != RowKind::ToolCall || (same("id") && same("name")))
    }
}

/// The row for a run of at least [`MIN_PACKED_RUN`] packable events, as dsh builds it:
/// `{type, seq0, time0, data:{turn, step, index, dt, texts}}` or, for tool calls,
/// `{…, data:{turn, step, index, dt, id, name?, args}}`.
fn packed_row(run: &[Packable<'_>]) -> Option<Value> {
    let first = run.first()?;
    let dt: Vec<Value> = run
        .windows(2)
        .map(|w| Value::from(w[1].event.time.saturating_sub(w[0].event.time)))
        .collect();
    let (array_key, field) = first.kind.member_keys();
    let members: Vec<Value> = run
        .iter()
        .map(|p| p.chunk.get(field).cloned().unwrap_or(Value::Null))
        .collect();
    let mut data = Map::new();
    data.insert("turn".into(), first.turn.into());
    data.insert("step".into(), first.step.into());
    data.insert("index".into(), first.chunk.get("index")?.clone());
    data.insert("dt".into(), Value::Array(dt));
    if first.kind == RowKind::ToolCall {
        data.insert("id".into(), first.chunk.get("id")?.clone());
        if let Some(name) = first.chunk.get("name") {
            data.insert("name".into(), name.clone());
        }
    }
    data.insert(array_key.into(), Value::Array(members));
    let mut row = Map::new();
    row.insert("type".into(), Value::String(first.kind.row_type().into()));
    row.insert("seq0".into(), first.event.seq.into());
    row.insert("time0".into(), first.event.time.into());
    row.insert("data".into(), Value::Object(data));
    Some(Value::Object(row))
}

/// One line of a batch as dsh's backend (`packChunks` on) stores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoredLine {
    /// Event `i` of the batch, on its own line.
    Event(usize),
    /// Events `start..end` of the batch, packed into one row.
    Row { start: usize, end: usize },
}

/// Group a batch the way dsh's `packChunkRuns` does: every run of at least
/// [`MIN_PACKED_RUN`] consecutive packable delta chunks of one block becomes a row, every
/// other event stays on its own line, in order.
pub fn pack_batch(events: &[Event]) -> Vec<StoredLine> {
    let mut out = Vec::with_capacity(events.len());
    let mut run: Vec<(usize, Packable<'_>)> = Vec::new();
    let flush = |run: &mut Vec<(usize, Packable<'_>)>, out: &mut Vec<StoredLine>| {
        match (run.first(), run.last()) {
            (Some((start, _)), Some((last, _))) if run.len() >= MIN_PACKED_RUN => {
                out.push(StoredLine::Row {
                    start: *start,
                    end: last + 1,
                });
            }
            _ => out.extend(run.iter().map(|(i, _)| StoredLine::Event(*i))),
        }
        run.clear();
    };
    for (i, event) in events.iter().enumerate() {
        let Some(packable) = Packable::of(event) else {
            flush(&mut run, &mut out);
            out.push(StoredLine::Event(i));
            continue;
        };
        if !run
            .last()
            .is_some_and(|(_, last)| last.continued_by(&packable))
        {
            flush(&mut run, &mut out);
        }
        run.push((i, packable));
    }
    flush(&mut run, &mut out);
    out
}

/// The JSON of a packed row over `events` (a run [`pack_batch`] found).
pub fn row_value(events: &[Event]) -> Option<Value> {
    let run: Option<Vec<Packable<'_>>> = events.iter().map(Packable::of).collect();
    packed_row(&run?)
}

/// The compressed bytes of a `.zstd` log: in memory, or an open file read by offset so
/// nothing but the frame being decoded is buffered.
#[derive(Debug, Clone)]
enum Compressed {
    Memory(Arc<[u8]>),
    File(Arc<File>),
}

impl Compressed {
    /// Read up to `buf.len()` bytes at `at` (fewer only at the end).
    fn read_at(&self, at: u64, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Compressed::Memory(data) => {
                let from = usize::try_from(at).unwrap_or(usize::MAX).min(data.len());
                let src = data.get(from..).unwrap_or_default();
                let n = src.len().min(buf.len());
                buf.get_mut(..n)
                    .unwrap_or_default()
                    .copy_from_slice(src.get(..n).unwrap_or_default());
                Ok(n)
            }
            Compressed::File(file) => {
                let mut file: &File = file;
                file.seek(SeekFrom::Start(at))?;
                let mut filled = 0;
                while filled < buf.len() {
                    match file.read(buf.get_mut(filled..).unwrap_or_default()) {
                        Ok(0) => break,
                        Ok(n) => filled += n,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(e),
                    }
                }
                Ok(filled)
            }
        }
    }

    /// Exactly `buf.len()` bytes at `at`, or `false` when the data ends first.
    fn read_exact_at(&self, at: u64, buf: &mut [u8]) -> io::Result<bool> {
        Ok(self.read_at(at, buf)? == buf.len())
    }
}

/// One byte range of the compressed data, read sequentially (the input of one frame's
/// decoder).
struct Region {
    data: Compressed,
    pos: u64,
    end: u64,
}

impl Read for Region {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let room = usize::try_from(self.end.saturating_sub(self.pos)).unwrap_or(usize::MAX);
        let want = buf.len().min(room);
        if want == 0 {
            return Ok(0);
        }
        let n = self
            .data
            .read_at(self.pos, buf.get_mut(..want).unwrap_or_default())?;
        self.pos += n as u64;
        Ok(n)
    }
}

/// Decoder of one frame.
type FrameDecoder = zstd::stream::read::Decoder<'static, io::BufReader<Region>>;

/// What is at an offset where a frame should start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FrameAt {
    /// A frame whose structure is complete, ending at this offset; `skippable` frames
    /// carry no log data.
    Complete { end: u64, skippable: bool },
    /// Nothing usable: end of data, a frame cut short, or bytes that are no frame.
    End,
}

/// Walk the frame starting at `at` through its header and block headers only, to find
/// where it ends without buffering it.
fn walk_frame(data: &Compressed, at: u64, len: u64) -> io::Result<FrameAt> {
    let span =
        super::zstd_frame_walk::walk_frame(|pos, buf| data.read_exact_at(pos, buf), at, len)?;
    Ok(match span {
        Some(s) => FrameAt::Complete {
            end: s.end,
            skippable: s.skippable,
        },
        None => FrameAt::End,
    })
}

/// A reader over the concatenated zstd frames of a `.zstd` log, in memory or streamed from
/// an open file (then only one frame's decoder state is held, whatever the log's size).
///
/// Each frame's end is found by walking its block headers before it is decoded: a frame cut
/// short (a torn write) simply ends the stream, so its partial line becomes a torn tail; a
/// complete frame that fails to decode is an `InvalidData` error (corruption) unless it is
/// the last one. Bytes after the length the file had when it was opened are not read, so a
/// log growing meanwhile is read as the prefix it was.
pub struct ZstdFrames {
    data: Compressed,
    len: u64,
    /// Where the next frame starts.
    next: u64,
    /// The frame being decoded and whether it is the last complete one.
    current: Option<(FrameDecoder, bool)>,
    /// Frames opened so far (for error messages).
    frames: usize,
    done: bool,
    /// Plaintext bytes produced so far.
    produced: u64,
    /// Where each frame with data began, once asked for ([`record_frames`](Self::record_frames)).
    starts: Option<Arc<std::sync::Mutex<Vec<FrameStart>>>>,
}

/// Where a frame of a `.zstd` log begins: its compressed offset and the plaintext offset of
/// its first byte (decoding can start there).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameStart {
    pub compressed: u64,
    pub plain: u64,
}

impl ZstdFrames {
    /// Frames of a whole log held in memory.
    pub fn new(data: Vec<u8>) -> Self {
        let len = data.len() as u64;
        Self::over(Compressed::Memory(data.into()), len)
    }

    /// Frames of the open log `file`, read by offset up to its current length.
    pub fn from_file(file: File) -> io::Result<Self> {
        let len = file.metadata()?.len();
        Ok(Self::over(Compressed::File(Arc::new(file)), len))
    }

    /// Frames of the open log `file` read from the frame that begins at compressed offset
    /// `start` (found by an earlier read), as if the log began there.
    pub fn from_file_at(file: File, start: u64) -> io::Result<Self> {
        let mut frames = Self::from_file(file)?;
        frames.next = start;
        Ok(frames)
    }

    /// From now on, push where each frame with data begins to `starts` as it is opened
    /// (plaintext offsets counted from where this reader began).
    pub fn record_frames(&mut self, starts: Arc<std::sync::Mutex<Vec<FrameStart>>>) {
        self.starts = Some(starts);
    }

    /// Length of the compressed log read.
    pub fn compressed_len(&self) -> u64 {
        self.len
    }

    /// Pass over whole frames, without decoding them, while they end at or before the
    /// plaintext offset `target`, as far as their headers declare their plaintext size;
    /// returns the plaintext offset reached (where the next read starts). For reading a few
    /// lines near the end of a long log again: a frame is only decoded if it holds them.
    pub fn skip_frames_before(&mut self, target: u64) -> io::Result<u64> {
        let mut reached = 0u64;
        if self.current.is_some() || self.done {
            return Ok(reached);
        }
        while let Some(span) = super::zstd_frame_walk::walk_frame(
            |pos, buf| self.data.read_exact_at(pos, buf),
            self.next,
            self.len,
        )? {
            match span.content_size {
                Some(size) if reached + size <= target => {
                    reached += size;
                    self.produced += size;
                    self.next = span.end;
                    self.frames += 1;
                }
                _ => break,
            }
        }
        Ok(reached)
    }

    fn over(data: Compressed, len: u64) -> Self {
        ZstdFrames {
            data,
            len,
            next: 0,
            current: None,
            frames: 0,
            done: false,
            produced: 0,
            starts: None,
        }
    }

    /// Open the next frame with data; `false` at the end of the stream.
    fn open_next(&mut self) -> io::Result<bool> {
        loop {
            if self.done {
                return Ok(false);
            }
            match walk_frame(&self.data, self.next, self.len)? {
                FrameAt::End => {
                    self.done = true;
                    return Ok(false);
                }
                FrameAt::Complete { end, skippable } => {
                    let start = self.next;
                    self.next = end;
                    self.frames += 1;
                    if skippable {
                        continue;
                    }
                    let last = matches!(walk_frame(&self.data, end, self.len)?, FrameAt::End);
                    let region = || Region {
                        data: self.data.clone(),
                        pos: start,
                        end,
                    };
                    if last
                        && super::zstd_frame_walk::check_whole(start, end)
                        && !super::zstd_frame_walk::decodes_whole(region())?
                    {
                        // A damaged last frame is a torn tail: none of it is read.
                        self.done = true;
                        return Ok(false);
                    }
                    let region = region();
                    let decoder = zstd::stream::read::Decoder::new(region)?.single_frame();
                    self.current = Some((decoder, last));
                    if let Some(starts) = &self.starts {
                        starts
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner)
                            .push(FrameStart {
                                compressed: start,
                                plain: self.produced,
                            });
                    }
                    return Ok(true);
                }
            }
        }
    }
}

impl Read for ZstdFrames {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            let Some((decoder, last)) = self.current.as_mut() else {
                if !self.open_next()? {
                    return Ok(0);
                }
                continue;
            };
            let last = *last;
            match decoder.read(buf) {
                Ok(0) => self.current = None,
                Ok(n) => {
                    self.produced += n as u64;
                    return Ok(n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.current = None;
                    if last {
                        // A damaged final frame is a torn tail: end the stream here.
                        self.done = true;
                        return Ok(0);
                    }
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("zstd frame {} cannot be decoded: {e}", self.frames),
                    ));
                }
            }
        }
    }
}

/// zstd level of the frames this project writes (zstd's own default).
const FRAME_LEVEL: i32 = 3;

/// One checksummed zstd frame holding `plaintext`, as dsh writes each batch.
pub fn encode_frame(plaintext: &[u8]) -> io::Result<Vec<u8>> {
    let mut encoder = zstd::stream::write::Encoder::new(Vec::new(), FRAME_LEVEL)?;
    encoder.include_checksum(true)?;
    encoder.set_pledged_src_size(Some(plaintext.len() as u64))?;
    encoder.include_contentsize(true)?;
    io::Write::write_all(&mut encoder, plaintext)?;
    encoder.finish()
}

/// A whole `.zstd` log decoded frame by frame, for a writer that must know where each
/// frame ends in both the file and the plaintext.
#[derive(Debug, Default)]
pub struct DecodedFrames {
    /// The plaintext of every decodable frame, concatenated.
    pub plaintext: Vec<u8>,
    /// For each decoded frame: its end in the file and in `plaintext`.
    pub ends: Vec<(u64, u64)>,
}

impl DecodedFrames {
    /// Decode `data`. A truncated or undecodable final frame (a torn write) is left out;
    /// an undecodable frame before the last one is corruption: the error names the frame
    /// and the 1-based line where its plaintext would start.
    pub fn decode(data: &[u8]) -> Result<Self, FrameError> {
        let mut out = DecodedFrames::default();
        let spans = frame_spans(data);
        for (k, &(start, end)) in spans.iter().enumerate() {
            let frame = data.get(start..end).unwrap_or_default();
            match zstd::stream::decode_all(frame) {
                Ok(plain) => {
                    out.plaintext.extend_from_slice(&plain);
                    out.ends.push((end as u64, out.plaintext.len() as u64));
                }
                Err(_) if k + 1 == spans.len() => break,
                Err(source) => {
                    // Lines decoded so far: one fewer than the pieces between newlines.
                    let lines = out.plaintext.split(|&b| b == b'\n').count();
                    return Err(FrameError {
                        frame: k,
                        line: lines as u64,
                        source,
                    });
                }
            }
        }
        Ok(out)
    }

    /// Where to cut the file so it holds exactly the first `plain_len` plaintext bytes:
    /// the file offset of the last frame boundary at or before it, and the plaintext
    /// after that boundary that must be written again as a new frame (empty when
    /// `plain_len` is itself a boundary).
    pub fn cut_at(&self, plain_len: u64) -> (u64, &[u8]) {
        let (file_end, plain_end) = self
            .ends
            .iter()
            .rev()
            .find(|&&(_, plain_end)| plain_end <= plain_len)
            .copied()
            .unwrap_or((0, 0));
        let rest = usize::try_from(plain_end)
            .ok()
            .zip(usize::try_from(plain_len).ok())
            .and_then(|(from, to)| self.plaintext.get(from..to))
            .unwrap_or_default();
        (file_end, rest)
    }
}

/// A complete zstd frame before the last one that cannot be decoded.
#[derive(Debug, thiserror::Error)]
#[error("zstd frame {frame} cannot be decoded: {source}")]
pub struct FrameError {
    /// 0-based index of the frame.
    pub frame: usize,
    /// 1-based line of the log where the frame's plaintext would start.
    pub line: u64,
    pub source: io::Error,
}

/// The `(start, end)` byte spans of the complete frames at the start of `data`.
fn frame_spans(data: &[u8]) -> Vec<(usize, usize)> {
    let mut frames = Vec::new();
    let mut at = 0usize;
    while let Some(rest) = data.get(at..) {
        if rest.is_empty() {
            break;
        }
        match zstd::zstd_safe::find_frame_compressed_size(rest) {
            Ok(size) if size > 0 && size <= rest.len() => {
                frames.push((at, at + size));
                at += size;
            }
            _ => break,
        }
    }
    frames
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_before_an_offset_are_passed_over_by_their_declared_sizes() {
        // Frames of 10, 300 and 70 000 bytes (one-, two- and four-byte size fields), one
        // without a declared size (streamed), and a skippable frame.
        let pieces: Vec<Vec<u8>> = [10usize, 300, 70_000, 5, 1234]
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                (0..n)
                    .map(|j| b'a' + u8::try_from((i * 7 + j) % 26).unwrap())
                    .collect()
            })
            .collect();
        let mut data = Vec::new();
        for (i, piece) in pieces.iter().enumerate() {
            if i == 3 {
                data.extend(zstd::encode_all(&piece[..], 1).unwrap());
                data.extend([0x50, 0x2A, 0x4D, 0x18, 2, 0, 0, 0, 9, 9]);
            } else {
                data.extend(encode_frame(piece).unwrap());
            }
        }
        let plain: Vec<u8> = pieces.concat();
        let starts = [0u64, 10, 310, 70_310, 70_315];
        for target in [
            0u64, 5, 10, 11, 309, 310, 70_309, 70_310, 70_314, 70_315, 71_000,
        ] {
            let mut frames = ZstdFrames::new(data.clone());
            let reached = frames.skip_frames_before(target).unwrap();
            // The last frame start at or before the target, but never past a frame whose
            // size is not declared (the fourth).
            let want = starts
                .iter()
                .copied()
                .filter(|&s| s <= target && s <= 70_310)
                .max()
                .unwrap();
            assert_eq!(reached, want, "target {target}");
            let mut rest = Vec::new();
            frames.read_to_end(&mut rest).unwrap();
            assert_eq!(
                rest,
                plain[usize::try_from(reached).unwrap()..],
                "target {target}"
            );
        }
    }
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn chunk_line(ev: &Event) -> Value {
        serde_json::to_value(ev).unwrap()
    }

    #[test]
    fn text_row_expands_to_chunks_with_times() {
        let data = json!({"turn":1,"step":2,"index":0,"dt":[3,-1],"texts":["a","b","c"]});
        let events = expand_packed_row("text-chunks", Some(5), Some(100), &data).unwrap();
        let got: Vec<Value> = events.iter().map(chunk_line).collect();
        assert_eq!(
            got,
            vec![
                json!({"type":"assistant/chunk","seq":5,"time":100,"data":{"turn":1,"step":2,"chunk":{"type":"text-delta","index":0,"text":"a"}}}),
                json!({"type":"assistant/chunk","seq":6,"time":103,"data":{"turn":1,"step":2,"chunk":{"type":"text-delta","index":0,"text":"b"}}}),
                json!({"type":"assistant/chunk","seq":7,"time":102,"data":{"turn":1,"step":2,"chunk":{"type":"text-delta","index":0,"text":"c"}}}),
            ]
        );
    }

    #[test]
    fn reasoning_and_tool_rows_expand() {
        let data = json!({"turn":1,"step":1,"index":1,"dt":[1],"texts":["why ","now"]});
        let events = expand_packed_row("reasoning-chunks", Some(0), Some(10), &data).unwrap();
        assert_eq!(
            chunk_line(&events[1])["data"]["chunk"],
            json!({"type":"reasoning-delta","index":1,"text":"now"})
        );
        let data = json!({"turn":1,"step":1,"index":2,"dt":[1],"id":"call-2","name":"bash","args":["{\"c\"",":1}"]});
        let events = expand_packed_row("tool-call-chunks", Some(9), Some(14), &data).unwrap();
        assert_eq!(events.len(), 2);
        assert_eq!(events[1].seq, 10);
        assert_eq!(events[1].time, 15);
        assert_eq!(
            chunk_line(&events[0])["data"]["chunk"],
            json!({"type":"tool-call-delta","index":2,"id":"call-2","name":"bash","argumentsDelta":"{\"c\""})
        );
        let data = json!({"turn":1,"step":1,"index":2,"dt":[],"id":"c","args":["x"]});
        let events = expand_packed_row("tool-call-chunks", Some(0), Some(0), &data).unwrap();
        assert_eq!(
            chunk_line(&events[0])["data"]["chunk"],
            json!({"type":"tool-call-delta","index":2,"id":"c","argumentsDelta":"x"})
        );
    }

    #[test]
    fn malformed_rows_are_errors() {
        let good = json!({"turn":1,"step":1,"index":0,"dt":[1],"texts":["a","b"]});
        assert!(expand_packed_row("text-chunks", None, Some(0), &good).is_err());
        assert!(expand_packed_row("text-chunks", Some(0), None, &good).is_err());
        for bad in [
            json!({"turn":1,"step":1,"index":0,"dt":[],"texts":["a","b"]}),
            json!({"turn":1,"step":1,"index":0,"dt":[1],"texts":["a",2]}),
            json!({"turn":1,"step":1,"index":0,"texts":["a"]}),
            json!({"turn":1,"step":1,"index":0,"dt":[],"texts":[]}),
            json!({"step":1,"index":0,"dt":[],"texts":["a"]}),
            json!("nope"),
        ] {
            assert!(
                expand_packed_row("text-chunks", Some(0), Some(0), &bad).is_err(),
                "{bad}"
            );
        }
        let no_id = json!({"turn":1,"step":1,"index":0,"dt":[],"args":["a"]});
        assert!(expand_packed_row("tool-call-chunks", Some(0), Some(0), &no_id).is_err());
    }

    #[test]
    fn zstd_frames_concatenate_and_torn_final_frame_ends_stream() {
        let a = zstd::encode_all(&b"line one\n"[..], 3).unwrap();
        let b = zstd::encode_all(&b"line two\n"[..], 3).unwrap();
        let mut all = a.clone();
        all.extend_from_slice(&b);
        let mut out = String::new();
        ZstdFrames::new(all.clone())
            .read_to_string(&mut out)
            .unwrap();
        assert_eq!(out, "line one\nline two\n");

        let mut torn = all.clone();
        torn.truncate(a.len() + b.len() / 2);
        let mut out = String::new();
        ZstdFrames::new(torn).read_to_string(&mut out).unwrap();
        assert_eq!(out, "line one\n");

        // A complete frame that fails its checksum, followed by a good one, is an error.
        let mut enc = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
        enc.include_checksum(true).unwrap();
        std::io::Write::write_all(&mut enc, b"line one\n").unwrap();
        let mut damaged = enc.finish().unwrap();
        if let Some(last) = damaged.last_mut() {
            *last ^= 0xFF;
        }
        let mut bad = damaged.clone();
        bad.extend_from_slice(&b);
        let err = ZstdFrames::new(bad)
            .read_to_end(&mut Vec::new())
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        // The same damaged frame at the very end is a torn tail: the stream just ends.
        let mut tail = a.clone();
        tail.extend_from_slice(&damaged);
        let mut out = Vec::new();
        ZstdFrames::new(tail).read_to_end(&mut out).unwrap();
        assert_eq!(out, b"line one\n", "none of the damaged frame is read");
    }

    #[test]
    fn frames_stream_from_a_file_across_blocks_skippable_frames_and_a_torn_end() {
        // A frame of many blocks (over 128 KiB, incompressible in parts), a skippable
        // frame, a small frame, then a frame cut short.
        let mut rng = fastrand::Rng::with_seed(5);
        let big: Vec<u8> = (0..600_000)
            .map(|i| {
                if i % 97 == 0 {
                    b'\n'
                } else {
                    rng.alphanumeric() as u8
                }
            })
            .collect();
        let mut data = zstd::encode_all(&big[..], 3).unwrap();
        data.extend_from_slice(&0x184D_2A53u32.to_le_bytes());
        data.extend_from_slice(&5u32.to_le_bytes());
        data.extend_from_slice(b"12345");
        data.extend(encode_frame(b"tail line\n").unwrap());
        let whole_len = data.len();
        let cut = encode_frame(b"never seen\n").unwrap();
        data.extend_from_slice(&cut[..cut.len() - 3]);
        let mut want = big.clone();
        want.extend_from_slice(b"tail line\n");
        for bytes in [data.clone(), data[..whole_len].to_vec()] {
            let file = tempfile::tempfile().unwrap();
            std::io::Write::write_all(&mut &file, &bytes).unwrap();
            let mut out = Vec::new();
            ZstdFrames::from_file(file)
                .unwrap()
                .read_to_end(&mut out)
                .unwrap();
            assert!(out == want, "{} bytes read", out.len());
            let mut out = Vec::new();
            ZstdFrames::new(bytes).read_to_end(&mut out).unwrap();
            assert!(out == want);
        }
        // Walking agrees with zstd's own frame size on every frame.
        let spans: Vec<u64> = frame_spans(&data[..whole_len])
            .iter()
            .map(|(a, b)| (b - a) as u64)
            .collect();
        let data = Compressed::Memory(data.into());
        let mut at = 0u64;
        let mut sizes = Vec::new();
        while let FrameAt::Complete { end, .. } = walk_frame(&data, at, whole_len as u64).unwrap() {
            sizes.push(end - at);
            at = end;
        }
        assert_eq!(at, whole_len as u64);
        assert_eq!(sizes, spans);
    }

    #[test]
    fn decoded_frames_know_their_boundaries() {
        let a = encode_frame(b"h\n").unwrap();
        let b = encode_frame(b"one\ntwo\n").unwrap();
        assert_eq!(a[4] & 0x04, 0x04, "checksummed");
        let mut data = a.clone();
        data.extend_from_slice(&b);
        let frames = DecodedFrames::decode(&data).unwrap();
        assert_eq!(frames.plaintext, b"h\none\ntwo\n");
        let (a_end, b_end) = (a.len() as u64, data.len() as u64);
        assert_eq!(frames.ends, vec![(a_end, 2), (b_end, 10)]);
        assert_eq!(frames.cut_at(10), (b_end, &b""[..]));
        assert_eq!(frames.cut_at(2), (a_end, &b""[..]));
        // Inside the second frame: cut after the first, keep "one\n" to write again.
        assert_eq!(frames.cut_at(6), (a_end, &b"one\n"[..]));

        // A torn last frame is left out; a damaged middle one names its line.
        let mut torn = data.clone();
        torn.extend_from_slice(&b[..b.len() / 2]);
        assert_eq!(DecodedFrames::decode(&torn).unwrap().ends.len(), 2);
        let mut damaged = a.clone();
        let mut bad = b.clone();
        if let Some(last) = bad.last_mut() {
            *last ^= 0xFF;
        }
        damaged.extend_from_slice(&bad);
        damaged.extend_from_slice(&a);
        let err = DecodedFrames::decode(&damaged).unwrap_err();
        assert_eq!((err.frame, err.line), (1, 2));
    }

    fn chunk_event(seq: u64, step: u64, chunk: Value) -> Event {
        Event {
            seq,
            time: 100 + i64::try_from(seq).unwrap(),
            data: EventData::AssistantChunk {
                turn: 1,
                step,
                chunk,
                extra: Map::new(),
            },
            surface_op: None,
            source_event_seqs: None,
        }
    }

    #[test]
    fn packing_follows_dsh_run_rules() {
        let text = |i: u64| json!({"type": "text-delta", "index": i, "text": "t"});
        let tool = |name: Option<&str>| match name {
            Some(n) => {
                json!({"type": "tool-call-delta", "index": 0, "id": "c", "name": n, "argumentsDelta": "a"})
            }
            None => {
                json!({"type": "tool-call-delta", "index": 0, "id": "c", "argumentsDelta": "a"})
            }
        };
        let row = |start, end| StoredLine::Row { start, end };
        let cases: Vec<(&str, Vec<Value>, Vec<StoredLine>)> = vec![
            (
                "three pack",
                vec![text(0), text(0), text(0)],
                vec![row(0, 3)],
            ),
            (
                "two stay lines",
                vec![text(0), text(0)],
                vec![StoredLine::Event(0), StoredLine::Event(1)],
            ),
            (
                "a block change splits runs",
                vec![text(0), text(0), text(0), text(1), text(1), text(1)],
                vec![row(0, 3), row(3, 6)],
            ),
            (
                "a boundary chunk splits runs",
                vec![
                    text(0),
                    text(0),
                    json!({"type": "usage", "usage": {}}),
                    text(0),
                    text(0),
                    text(0),
                ],
                vec![
                    StoredLine::Event(0),
                    StoredLine::Event(1),
                    StoredLine::Event(2),
                    row(3, 6),
                ],
            ),
            (
                "an extra key is stored verbatim",
                vec![
                    text(0),
                    json!({"type": "text-delta", "index": 0, "text": "t", "x": 1}),
                    text(0),
                    text(0),
                    text(0),
                ],
                vec![StoredLine::Event(0), StoredLine::Event(1), row(2, 5)],
            ),
            (
                "tool calls pack only with one name",
                vec![
                    tool(Some("a")),
                    tool(Some("a")),
                    tool(Some("a")),
                    tool(None),
                    tool(None),
                ],
                vec![row(0, 3), StoredLine::Event(3), StoredLine::Event(4)],
            ),
        ];
        for (name, chunks, want) in cases {
            let events: Vec<Event> = (0u64..)
                .zip(chunks)
                .map(|(seq, c)| chunk_event(seq, 1, c))
                .collect();
            assert_eq!(pack_batch(&events), want, "{name}");
        }
        // A gap in seqs or a step change ends a run too.
        let mut events: Vec<Event> = (0..3).map(|s| chunk_event(s, 1, text(0))).collect();
        events.push(chunk_event(9, 1, text(0)));
        events.push(chunk_event(10, 2, text(0)));
        assert_eq!(
            pack_batch(&events),
            vec![row(0, 3), StoredLine::Event(3), StoredLine::Event(4)]
        );
        // The row reads back as exactly its events.
        let value = row_value(&events[..3]).unwrap();
        let back = expand_packed_row(
            "text-chunks",
            value["seq0"].as_u64(),
            value["time0"].as_i64(),
            &value["data"],
        )
        .unwrap();
        assert_eq!(back, events[..3]);
        assert_eq!(value["data"]["dt"], json!([1, 1]));
    }
}
