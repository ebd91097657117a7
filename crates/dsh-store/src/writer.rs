//! The single writer of a session (docs/session-store.md: on-disk layout): create-on-first-event published atomically,
//! batched appends with fsync, torn-tail repair on open, and an advisory lock. Plain and zstd
//! logs alike: each flushed batch is written the way dsh's backend writes it (chunk runs
//! packed into rows; for zstd, one checksummed frame per batch after a header-only frame).
//!
//! Memory does not grow with the log: the writer keeps the next seq, the last time, the
//! folded surface's seqs and the pending batch; [`SessionWriter::read_log`] streams the
//! events back from disk for whoever needs more.
//!
//! The lock is `flock`-style on the log file itself (`File::try_lock`), held for the
//! writer's lifetime; a second writer, in this process or another, gets
//! [`StoreError::Busy`]. Readers never lock.

use std::cell::RefCell;
use std::fs::{self, File};
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use super::dsh_compat::{self, StoredLine};
use super::encoding::{self, Compression};
use super::error::StoreError;
use super::event::{Event, EventData, SessionHeader, SurfaceOp, now_ms};
use super::paths::{LOG_FILE, ZSTD_LOG_FILE};
use super::query_error::QueryError;
use super::reader::{self, LogFormat};
use super::rule_book::{Envelope, Findings, Mode, RuleBook, readable_line};
use super::zstd_stream::{self, FrameEnds, Frames, ReadAt};

/// An event to append; the writer assigns `seq` and `time`.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    pub data: EventData,
    pub surface_op: Option<SurfaceOp>,
    pub source_event_seqs: Option<Vec<u64>>,
}

impl NewEvent {
    /// A `tool/result` (`data` from [`crate::tool_round`]) appended to the surface, citing
    /// the `tool/call` it answers when one was logged.
    pub fn tool_result(data: EventData, call_seq: Option<u64>) -> Self {
        NewEvent {
            data,
            surface_op: Some(SurfaceOp::Append),
            source_event_seqs: call_seq.map(|s| vec![s]),
        }
    }

    /// A non-surface event.
    pub fn plain(data: EventData) -> Self {
        NewEvent {
            data,
            surface_op: None,
            source_event_seqs: None,
        }
    }

    /// A surface event appended to the surface.
    pub fn appended(data: EventData) -> Self {
        NewEvent {
            data,
            surface_op: Some(SurfaceOp::Append),
            source_event_seqs: None,
        }
    }
}

enum State {
    /// Nothing on disk yet: the first flush publishes the file into `dir`.
    Pending { dir: PathBuf, root: PathBuf },
    /// The locked, published log; `len` is its length.
    Open { file: File, len: u64, dirty: bool },
    /// A write failed and could not be undone.
    Poisoned,
}

/// The store-wide encoding check (dsh refuses a root holding logs of both encodings), run
/// once before a writer's first write rather than at open: it visits every session
/// directory, which at 100 000 sessions would hold up opening (and the app's first frame).
#[derive(Debug)]
enum EncodingCheck {
    /// Still to run over the store at `root`, under the `store.compression` setting.
    Due { root: PathBuf, setting: Compression },
    /// Ran and passed; the writer's format is settled.
    Done,
}

/// A writer's pending encoding check, detached from the writer so it can run off its lock.
#[derive(Debug, Clone)]
pub struct DueEncodingCheck {
    root: PathBuf,
    setting: Compression,
}

impl DueEncodingCheck {
    /// Visit the store's session directories: the encoding a write uses, or the refusal.
    pub fn run(&self) -> Result<LogFormat, StoreError> {
        encoding::write_format(&self.root, self.setting)
    }
}

/// Buffered appends above this many bytes of JSON are written (not fsynced) right away, so
/// a long unsynced stream holds bounded memory.
const MAX_PENDING_BYTES: usize = 4 << 20;

/// Events appended but not yet written, with their JSON lines (each `\n`-terminated) in one
/// buffer. They are written together, as one batch, by the next flush.
#[derive(Debug, Default)]
struct PendingBatch {
    events: Vec<Event>,
    /// End of each event's line in `lines`.
    ends: Vec<usize>,
    lines: Vec<u8>,
}

impl PendingBatch {
    fn line(&self, i: usize) -> &[u8] {
        let start = i.checked_sub(1).and_then(|p| self.ends.get(p)).copied();
        let end = self.ends.get(i).copied().unwrap_or(0);
        self.lines.get(start.unwrap_or(0)..end).unwrap_or_default()
    }

    /// The batch as log lines, chunk runs packed into rows the way dsh's backend packs them.
    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.lines.len());
        for stored in dsh_compat::pack_batch(&self.events) {
            match stored {
                StoredLine::Event(i) => out.extend_from_slice(self.line(i)),
                StoredLine::Row { start, end } => {
                    let run = self.events.get(start..end).unwrap_or_default();
                    match packed_line(run) {
                        Some(row) => out.extend_from_slice(&row),
                        None => (start..end).for_each(|i| out.extend_from_slice(self.line(i))),
                    }
                }
            }
        }
        out
    }

    fn clear(&mut self) {
        self.events.clear();
        self.ends.clear();
        self.lines.clear();
    }
}

/// The packed row line of `run`, only if it reads back as exactly `run`.
fn packed_line(run: &[Event]) -> Option<Vec<u8>> {
    let first = run.first()?.seq;
    let mut line = serde_json::to_vec(&dsh_compat::row_value(run)?).ok()?;
    let back = reader::decode_line(&line, first).ok()?;
    (back == run).then(|| {
        line.push(b'\n');
        line
    })
}

/// The one writer of a session. Dropping it writes and syncs buffered appends and releases
/// the lock.
pub struct SessionWriter {
    header: SessionHeader,
    path: PathBuf,
    format: LogFormat,
    limits: reader::Limits,
    /// Seq the next event gets (= events in the log, buffered ones included).
    next_seq: u64,
    /// Time of the last event (`i64::MIN` before the first).
    last_time: i64,
    /// dsh's rules over the log so far (it holds the folded surface): every new batch is
    /// checked against it. Boxed: a writer moves through channels.
    rules: Box<RuleBook>,
    /// What the log broke before this writer opened it (written by an earlier version).
    inherited: Findings,
    pending: PendingBatch,
    state: State,
    encoding_check: EncodingCheck,
}

impl std::fmt::Debug for SessionWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionWriter")
            .field("id", &self.header.id)
            .field("path", &self.path)
            .field("format", &self.format)
            .field("next_seq", &self.next_seq)
            .finish_non_exhaustive()
    }
}

/// What opening an existing log found: its fold state and where its readable part ends.
struct Loaded {
    header: SessionHeader,
    next_seq: u64,
    last_time: i64,
    rules: RuleBook,
    inherited: Findings,
    /// Length the file must be cut to, and bytes (a new zstd frame) to write after the cut.
    keep_len: u64,
    rewrite: Vec<u8>,
    torn_line: Option<u64>,
}

impl SessionWriter {
    /// Open an existing log of either encoding: lock it, cut a torn tail, fold its events,
    /// showing each readable one to `observe` (the only time the loaded events are seen).
    pub(crate) fn open_existing(
        path: PathBuf,
        format: LogFormat,
        id: &str,
        store: (&Path, Compression, &reader::Limits),
        observe: &mut dyn FnMut(&Event),
    ) -> Result<Self, StoreError> {
        let (root, setting, limits) = store;
        let mut file =
            super::nofollow::open_regular_rw(&path).map_err(|e| StoreError::io(&path, e))?;
        lock(&file, &path, id)?;
        let file_len = file
            .seek(SeekFrom::End(0))
            .map_err(|e| StoreError::io(&path, e))?;
        let loaded = match format {
            LogFormat::Plain => load_plain(&path, &file, file_len, limits, observe)?,
            LogFormat::Zstd => load_zstd(&path, &file, file_len, limits, observe)?,
        };
        reader::check_header_id(&path, &loaded.header, id)?;
        if loaded.keep_len < file_len || !loaded.rewrite.is_empty() {
            tracing::warn!(
                path = %path.display(),
                line = loaded.torn_line,
                "truncating torn tail of session log"
            );
            file.set_len(loaded.keep_len)
                .and_then(|()| file.seek(SeekFrom::Start(loaded.keep_len)).map(drop))
                .and_then(|()| file.write_all(&loaded.rewrite))
                .and_then(|()| file.sync_all())
                .map_err(|e| StoreError::io(&path, e))?;
        }
        let len = loaded.keep_len + loaded.rewrite.len() as u64;
        file.seek(SeekFrom::Start(len))
            .map_err(|e| StoreError::io(&path, e))?;
        Ok(SessionWriter {
            header: loaded.header,
            path,
            format,
            limits: *limits,
            next_seq: loaded.next_seq,
            last_time: loaded.last_time,
            rules: Box::new(loaded.rules),
            inherited: loaded.inherited,
            pending: PendingBatch::default(),
            state: State::Open {
                file,
                len,
                dirty: false,
            },
            encoding_check: EncodingCheck::Due {
                root: root.to_owned(),
                setting,
            },
        })
    }

    /// A writer for a session that does not exist yet (nothing on disk until the first
    /// flush). Its encoding follows `setting` and the store, settled by
    /// [`check_encoding`](Self::check_encoding) at the latest before the first append.
    pub(crate) fn pending(
        header: SessionHeader,
        root: PathBuf,
        dir: PathBuf,
        setting: Compression,
        limits: &reader::Limits,
    ) -> Self {
        // Provisional until the check: what an empty store gets under `setting`.
        let format = match setting {
            Compression::Zstd => LogFormat::Zstd,
            Compression::Auto | Compression::None => LogFormat::Plain,
        };
        SessionWriter {
            path: dir.join(log_name(format)),
            header,
            format,
            limits: *limits,
            next_seq: 0,
            last_time: i64::MIN,
            rules: Box::default(),
            inherited: Findings::default(),
            pending: PendingBatch::default(),
            encoding_check: EncodingCheck::Due {
                root: root.clone(),
                setting,
            },
            state: State::Pending { dir, root },
        }
    }

    /// Run the store-wide encoding check if it has not run: a new session's encoding is
    /// settled (`auto` follows the logs already there), and a store holding both encodings,
    /// or the other one than the setting asks for, is refused
    /// ([`StoreError::MixedEncoding`], [`StoreError::EncodingMismatch`]). The first append
    /// runs it; call it earlier to learn of a refusal before there is anything to write.
    pub fn check_encoding(&mut self) -> Result<LogFormat, StoreError> {
        match self.encoding_check_due() {
            Some(due) => {
                let verdict = due.run();
                self.settle_encoding(verdict)
            }
            None => Ok(self.format),
        }
    }

    /// The encoding check this writer still owes, to run elsewhere (it visits every session
    /// directory: a caller sharing the writer behind a lock runs it without holding the lock)
    /// and hand back with [`settle_encoding`](Self::settle_encoding). `None` once it ran.
    pub fn encoding_check_due(&self) -> Option<DueEncodingCheck> {
        match &self.encoding_check {
            EncodingCheck::Due { root, setting } => Some(DueEncodingCheck {
                root: root.clone(),
                setting: *setting,
            }),
            EncodingCheck::Done => None,
        }
    }

    /// Take the verdict of [`DueEncodingCheck::run`]: settles a new session's encoding; a
    /// refusal is returned and the check stays due (the next append runs it again). A
    /// verdict arriving after the check already ran here changes nothing.
    pub fn settle_encoding(
        &mut self,
        verdict: Result<LogFormat, StoreError>,
    ) -> Result<LogFormat, StoreError> {
        if matches!(self.encoding_check, EncodingCheck::Done) {
            return Ok(self.format);
        }
        let format = verdict?;
        if let State::Pending { dir, .. } = &self.state {
            self.format = format;
            self.path = dir.join(log_name(format));
        }
        self.encoding_check = EncodingCheck::Done;
        Ok(self.format)
    }

    /// The session header.
    pub fn header(&self) -> &SessionHeader {
        &self.header
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.header.id
    }

    /// Where the log is (or will be, before the first append; a new session's name follows
    /// its encoding, settled by [`check_encoding`](Self::check_encoding)).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The encoding this writer writes (for a new session, settled by
    /// [`check_encoding`](Self::check_encoding) or the first append).
    pub fn format(&self) -> LogFormat {
        self.format
    }

    /// The limits the log is read with (`store.max_line_bytes`): no line is written that
    /// they would refuse.
    pub fn limits(&self) -> &reader::Limits {
        &self.limits
    }

    /// How many events the log holds so far (buffered appends included): the next seq.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Stream every event of the log so far, in seq order, buffered appends included: the
    /// written part is read again from disk through the locked handle (never held whole).
    /// An error from `on_event` stops the read and is returned.
    pub fn read_log(
        &self,
        on_event: &mut dyn FnMut(Event) -> Result<(), QueryError>,
    ) -> Result<(), StoreError> {
        let written = self.next_seq - self.pending.events.len() as u64;
        if let State::Open { file, len, .. } = &self.state {
            let path = &self.path;
            let mut seen = 0u64;
            let mut deliver = |event: Event, _: u64| {
                seen += 1;
                on_event(event)
            };
            let summary = match self.format {
                LogFormat::Plain => {
                    let src =
                        std::io::BufReader::with_capacity(256 * 1024, ReadAt::new(file, 0, *len));
                    reader::scan_limited(path, src, &self.limits, &mut deliver)?
                }
                LogFormat::Zstd => {
                    let src = std::io::BufReader::with_capacity(
                        256 * 1024,
                        Frames::new(file, 0, *len, Rc::default()),
                    );
                    reader::scan_limited(path, src, &self.limits, &mut deliver)?
                }
            };
            if summary.next_seq != written || summary.torn_tail.is_some() {
                return Err(QueryError::Corrupt {
                    path: path.clone(),
                    line: summary.lines,
                    reason: format!(
                        "log changed under its writer: {} readable events, {written} written",
                        summary.next_seq
                    ),
                }
                .into());
            }
        } else if written > 0 {
            return Err(self.poisoned());
        }
        for event in &self.pending.events {
            on_event(event.clone())?;
        }
        Ok(())
    }

    /// Every event of the log so far, collected from [`read_log`](Self::read_log): memory
    /// grows with the log, so this is for tests and small logs, never a long session.
    pub fn read_all_events(&self) -> Result<Vec<Event>, StoreError> {
        let mut events = Vec::new();
        self.read_log(&mut |e| {
            events.push(e);
            Ok(())
        })?;
        Ok(events)
    }

    /// Current surface seqs (docs/session-store.md: surface folding).
    pub fn surface(&self) -> &[u64] {
        self.rules.surface()
    }

    /// dsh's rules over the log so far: the open turn, step and compaction, the next turn.
    pub fn rules(&self) -> &RuleBook {
        &self.rules
    }

    /// The events that close what a crash left open at the end of the log, in the order
    /// dsh's rules want them: an open compaction ends with an error, an open step ends, an
    /// open turn ends `interrupted` (as dsh closes an interrupted turn when it loads a log).
    /// Empty when nothing is open. Append them before anything else.
    pub fn interrupted_closers(&self) -> Vec<NewEvent> {
        let mut closers = Vec::new();
        if let Some((id, turn)) = self.rules.open_compaction() {
            closers.push(NewEvent::plain(EventData::Other {
                kind: super::event::kind::COMPACTION_END.to_owned(),
                data: serde_json::json!({
                    "compactionId": id,
                    "turn": turn,
                    "error": "interrupted: the compaction did not finish",
                }),
            }));
        }
        if let Some(turn) = self.rules.open_turn() {
            // Calls the open step asked for and never answered, before the step closes (dsh's
            // repair: providers refuse a call without its result).
            for call in self.rules.pending_tool_calls() {
                closers.push(match call.call_seq {
                    None => NewEvent::tool_result(
                        super::tool_round::not_started_data(turn, call.step, &call.call_id),
                        None,
                    ),
                    Some(seq) => NewEvent::tool_result(
                        super::tool_round::outcome_unknown_data(turn, call.step, &call.call_id),
                        Some(seq),
                    ),
                });
            }
            if let Some(step) = self.rules.open_step() {
                closers.push(NewEvent::plain(EventData::StepEnd {
                    turn,
                    step,
                    extra: serde_json::Map::new(),
                }));
            }
            closers.push(NewEvent::plain(EventData::TurnEnd {
                turn,
                reason: super::event::TurnEndReason::of(super::kinds::TurnEndKind::Interrupted),
                extra: serde_json::Map::new(),
            }));
        }
        closers
    }

    /// What the log broke before this writer opened it: rules of dsh that an earlier
    /// version did not follow. The log is left as it is; only new batches must be valid.
    pub fn inherited(&self) -> &Findings {
        &self.inherited
    }

    /// Append a batch and write it, with everything buffered before it, as one batch
    /// (one zstd frame), then fsync: durable when this returns `Ok`. A failed write leaves
    /// the file as it was and the events queued: the next sync writes them again, so an
    /// `Err` batch must not be appended a second time.
    pub fn append(&mut self, batch: Vec<NewEvent>) -> Result<Vec<Event>, StoreError> {
        let events = self.queue(batch)?;
        self.sync()?;
        Ok(events)
    }

    /// Append a batch without writing it yet (streaming chunks): it is written with the next
    /// [`sync`](Self::sync) or [`append`](Self::append), so what lands in one flush is one
    /// write batch, packed and framed as dsh does.
    pub fn append_buffered(&mut self, batch: Vec<NewEvent>) -> Result<Vec<Event>, StoreError> {
        self.queue(batch)
    }

    /// Write buffered appends and fsync them.
    pub fn sync(&mut self) -> Result<(), StoreError> {
        self.flush()?;
        match &mut self.state {
            State::Open { file, dirty, .. } => {
                if *dirty {
                    file.sync_data()
                        .map_err(|e| StoreError::io(&self.path, e))?;
                    *dirty = false;
                }
                Ok(())
            }
            State::Pending { .. } => Ok(()),
            State::Poisoned => Err(self.poisoned()),
        }
    }

    fn poisoned(&self) -> StoreError {
        StoreError::Poisoned {
            id: self.header.id.clone(),
        }
    }

    /// Assign seqs and times, validate, and add the batch to the pending batch.
    fn queue(&mut self, batch: Vec<NewEvent>) -> Result<Vec<Event>, StoreError> {
        if matches!(self.state, State::Poisoned) {
            return Err(self.poisoned());
        }
        if batch.is_empty() {
            return Ok(Vec::new());
        }
        self.check_encoding()?;
        if self.pending.lines.len() > MAX_PENDING_BYTES {
            // Bounded memory: a batch is only queued once what is pending could be written.
            self.flush()?;
        }
        let id = self.header.id.clone();
        let events = self.stamp(batch)?;
        // Judge the batch against dsh's rules; a batch that breaks one changes nothing.
        let savepoint = self.rules.begin();
        let mut broken = Vec::new();
        for e in &events {
            broken.extend(self.rules.admit(e, &Envelope::of_event(e), Mode::Append));
            if let Some(err) = self.rules.take_fold_error() {
                self.rules.rollback(savepoint);
                return Err(StoreError::fold(&id, &err));
            }
        }
        if let Some(first) = broken.first().cloned() {
            self.rules.rollback(savepoint);
            return Err(StoreError::RuleBroken {
                id,
                violation: Box::new(first),
                more: broken.len() - 1,
            });
        }
        let mut lines = Vec::new();
        let mut ends = Vec::with_capacity(events.len());
        for e in &events {
            let start = lines.len();
            if let Err(err) = append_line(&mut lines, e, &id) {
                self.rules.rollback(savepoint);
                return Err(err);
            }
            // The rule book's own rule: no line the reader would not load.
            let len = (lines.len() - start) as u64;
            if !readable_line::readable(len, &self.limits) {
                self.rules.rollback(savepoint);
                return Err(StoreError::LineTooLong {
                    id,
                    seq: e.seq,
                    len,
                    max: self.limits.max_line_bytes,
                });
            }
            // Nor one it would read back as a placeholder (crate::line_cost).
            let body = lines.get(start..lines.len() - 1).unwrap_or_default();
            if !crate::line_cost::fits(body) {
                self.rules.rollback(savepoint);
                return Err(StoreError::LineTooDense {
                    id,
                    seq: e.seq,
                    len,
                });
            }
            ends.push(lines.len());
        }
        self.rules.commit(savepoint);
        let base = self.pending.lines.len();
        self.pending.lines.extend_from_slice(&lines);
        self.pending
            .ends
            .extend(ends.into_iter().map(|end| base + end));
        self.pending.events.extend(events.iter().cloned());
        self.next_seq += events.len() as u64;
        if let Some(last) = events.last() {
            self.last_time = last.time;
        }
        Ok(events)
    }

    /// The batch as events with the next seqs and non-decreasing times.
    fn stamp(&self, batch: Vec<NewEvent>) -> Result<Vec<Event>, StoreError> {
        let id = &self.header.id;
        let mut time = self.last_time.max(now_ms());
        let mut events = Vec::with_capacity(batch.len());
        for (next_seq, new) in (self.next_seq..).zip(batch) {
            let event = Event {
                seq: next_seq,
                time,
                data: new.data,
                surface_op: new.surface_op,
                source_event_seqs: new.source_event_seqs,
            };
            if Event::is_surface_type(event.kind()) && event.surface_op.is_none() {
                return Err(StoreError::InvalidEvent {
                    id: id.clone(),
                    reason: format!("`{}` event needs a surfaceOp", event.kind()),
                });
            }
            if event.kind().is_empty() {
                return Err(StoreError::InvalidEvent {
                    id: id.clone(),
                    reason: "event type must not be empty".into(),
                });
            }
            events.push(event);
            time = time.max(now_ms());
        }
        Ok(events)
    }

    /// Write the pending batch: packed lines, as one zstd frame for a zstd log. On failure
    /// the pending events stay pending (a retry writes them again).
    fn flush(&mut self) -> Result<(), StoreError> {
        if self.pending.events.is_empty() {
            return Ok(());
        }
        let lines = self.pending.encode();
        let bytes = match self.format {
            LogFormat::Plain => lines,
            LogFormat::Zstd => {
                dsh_compat::encode_frame(&lines).map_err(|e| StoreError::io(&self.path, e))?
            }
        };
        self.write_bytes(&bytes)?;
        self.pending.clear();
        Ok(())
    }

    fn write_bytes(&mut self, bytes: &[u8]) -> Result<(), StoreError> {
        match &mut self.state {
            State::Pending { dir, root } => {
                let header = header_bytes(&self.header, self.format)?;
                let (file, len) = publish(&self.header.id, root, dir, &self.path, &header, bytes)?;
                self.state = State::Open {
                    file,
                    len,
                    dirty: false,
                };
                Ok(())
            }
            State::Open { file, len, dirty } => match file.write_all(bytes) {
                Ok(()) => {
                    *len += bytes.len() as u64;
                    *dirty = true;
                    Ok(())
                }
                Err(e) => {
                    // Undo a partial write so the log stays readable; if that fails too,
                    // refuse further appends rather than write after garbage.
                    let undo = file
                        .set_len(*len)
                        .and_then(|()| file.seek(SeekFrom::Start(*len)).map(drop));
                    if undo.is_err() {
                        self.state = State::Poisoned;
                    }
                    Err(StoreError::io(&self.path, e))
                }
            },
            State::Poisoned => Err(self.poisoned()),
        }
    }
}

impl Drop for SessionWriter {
    fn drop(&mut self) {
        if let Err(e) = self.sync() {
            tracing::warn!(path = %self.path.display(), error = %e, "buffered session events not written");
        }
    }
}

/// A log's file name in `format`.
fn log_name(format: LogFormat) -> &'static str {
    match format {
        LogFormat::Plain => LOG_FILE,
        LogFormat::Zstd => ZSTD_LOG_FILE,
    }
}

/// Serialize one event as a `\n`-terminated line, refusing a line the reader would reject
/// (e.g. a known type with a foreign payload, or a type that reads as a packed row).
fn append_line(out: &mut Vec<u8>, event: &Event, id: &str) -> Result<(), StoreError> {
    let invalid = |reason: String| StoreError::InvalidEvent {
        id: id.to_owned(),
        reason,
    };
    let start = out.len();
    serde_json::to_writer(&mut *out, event).map_err(|err| invalid(err.to_string()))?;
    let line = out.get(start..).unwrap_or_default();
    match reader::decode_line(line, event.seq) {
        Ok(back) if back.len() == 1 => {}
        Ok(_) => {
            return Err(invalid(format!(
                "`{}` reads back as a packed row",
                event.kind()
            )));
        }
        Err(reason) => return Err(invalid(reason)),
    }
    out.push(b'\n');
    Ok(())
}

/// The header as it starts a new log: its line, alone in the first frame of a zstd log
/// (dsh reads the header frame on its own when listing).
fn header_bytes(header: &SessionHeader, format: LogFormat) -> Result<Vec<u8>, StoreError> {
    let mut line = serde_json::to_vec(header).map_err(|e| StoreError::InvalidEvent {
        id: header.id.clone(),
        reason: e.to_string(),
    })?;
    line.push(b'\n');
    match format {
        LogFormat::Plain => Ok(line),
        LogFormat::Zstd => dsh_compat::encode_frame(&line).map_err(|e| {
            StoreError::Query(QueryError::Io {
                path: PathBuf::from(ZSTD_LOG_FILE),
                source: e,
            })
        }),
    }
}

/// Scan a plain log: its fold state, and the length of its readable prefix.
fn load_plain(
    path: &Path,
    file: &File,
    file_len: u64,
    limits: &reader::Limits,
    observe: &mut dyn FnMut(&Event),
) -> Result<Loaded, StoreError> {
    let src = std::io::BufReader::with_capacity(256 * 1024, ReadAt::new(file, 0, file_len));
    let (fold, summary) = scan_events(path, src, limits, observe, &mut |_| {})?;
    Ok(Loaded {
        header: summary.header,
        next_seq: summary.next_seq,
        last_time: fold.last_time,
        rules: fold.rules,
        inherited: fold.inherited,
        keep_len: summary.readable_len,
        rewrite: Vec::new(),
        torn_line: summary.torn_tail.map(|t| t.line),
    })
}

/// Decode a zstd log frame by frame while scanning it: the cut keeps whole frames; when the
/// readable part ends inside a frame, that frame's readable lines are written again as a new
/// frame. Only the frame boundaries after the last readable line are remembered.
fn load_zstd(
    path: &Path,
    file: &File,
    file_len: u64,
    limits: &reader::Limits,
    observe: &mut dyn FnMut(&Event),
) -> Result<Loaded, StoreError> {
    let ends: FrameEnds = Rc::new(RefCell::new(vec![(0, 0)]));
    let src = std::io::BufReader::with_capacity(
        256 * 1024,
        Frames::new(file, 0, file_len, Rc::clone(&ends)),
    );
    let mut prune = |readable: u64| {
        let mut ends = ends.borrow_mut();
        // The cut is the last boundary at or before the readable end, which only grows.
        let keep_from = ends.iter().rposition(|&(_, plain)| plain <= readable);
        if let Some(i) = keep_from.filter(|&i| i > 0) {
            ends.drain(..i);
        }
    };
    let (fold, summary) = scan_events(path, src, limits, observe, &mut prune)?;
    let (file_end, plain_end) = ends
        .borrow()
        .iter()
        .rev()
        .find(|&&(_, plain)| plain <= summary.readable_len)
        .copied()
        .unwrap_or((0, 0));
    let rewrite = if plain_end < summary.readable_len {
        zstd_stream::reframe_prefix(file, file_end, file_len, summary.readable_len - plain_end)
            .map_err(|e| StoreError::io(path, e))?
    } else {
        Vec::new()
    };
    Ok(Loaded {
        header: summary.header,
        next_seq: summary.next_seq,
        last_time: fold.last_time,
        rules: fold.rules,
        inherited: fold.inherited,
        keep_len: file_end,
        rewrite,
        torn_line: summary.torn_tail.map(|t| t.line),
    })
}

/// What folding a whole log leaves the writer.
struct Folded {
    rules: RuleBook,
    inherited: Findings,
    last_time: i64,
}

/// Fold every readable event of a log through the rule book, showing each to `observe` and
/// the end of its line to `readable`; a log that breaks the folding rules is corrupt, one
/// that breaks dsh's other rules is only counted (`inherited`).
fn scan_events(
    path: &Path,
    src: impl std::io::BufRead,
    limits: &reader::Limits,
    observe: &mut dyn FnMut(&Event),
    readable: &mut dyn FnMut(u64),
) -> Result<(Folded, reader::ScanSummary), StoreError> {
    let mut folded = Folded {
        rules: RuleBook::new(),
        inherited: Findings::default(),
        last_time: i64::MIN,
    };
    let mut fold_failure = None;
    let summary = reader::scan_at_limited(path, src, limits, &mut |event, pos| {
        let broken = folded
            .rules
            .admit(&event, &Envelope::of_event(&event), Mode::Scan);
        folded.inherited.extend(broken);
        if let Some(e) = folded.rules.take_fold_error() {
            fold_failure.get_or_insert((pos.line, e));
        }
        folded.last_time = event.time;
        readable(pos.offset + pos.len);
        observe(&event);
        Ok(())
    })?;
    let tail = folded.rules.finish();
    folded.inherited.extend(tail);
    if let Some((line, e)) = fold_failure {
        return Err(QueryError::Corrupt {
            path: path.to_owned(),
            line,
            reason: e.to_string(),
        }
        .into());
    }
    Ok((folded, summary))
}

fn lock(file: &File, path: &Path, id: &str) -> Result<(), StoreError> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(std::fs::TryLockError::WouldBlock) => Err(StoreError::Busy {
            id: id.to_owned(),
            path: path.to_owned(),
        }),
        Err(std::fs::TryLockError::Error(e)) => Err(StoreError::io(path, e)),
    }
}

/// Write header + first batch to a temp file, fsync, lock, hard-link it into place without
/// overwriting, and fsync the directories. Returns the locked handle and the file length.
fn publish(
    id: &str,
    root: &Path,
    dir: &Path,
    path: &Path,
    header: &[u8],
    batch: &[u8],
) -> Result<(File, u64), StoreError> {
    let project = dir.parent().unwrap_or(root);
    let created_root = !root.exists();
    // Held until the log is published: no other creator can add this id anywhere meanwhile.
    let _creating = super::create_lock::lock_for_create(root, dir, id)?;
    let created_project = !project.exists();
    let created_dir = !dir.exists();
    fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))?;
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(LOG_FILE);
    let tmp = dir.join(format!(
        ".{name}.{}-{:016x}.tmp",
        std::process::id(),
        fastrand::u64(..)
    ));
    let result = (|| {
        let mut file = File::create_new(&tmp).map_err(|e| StoreError::io(&tmp, e))?;
        file.write_all(header)
            .and_then(|()| file.write_all(batch))
            .and_then(|()| file.sync_all())
            .map_err(|e| StoreError::io(&tmp, e))?;
        lock(&file, path, id)?;
        match fs::hard_link(&tmp, path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(StoreError::Busy {
                    id: id.to_owned(),
                    path: path.to_owned(),
                });
            }
            Err(e) => return Err(StoreError::io(path, e)),
        }
        Ok(file)
    })();
    let _ = fs::remove_file(&tmp);
    if result.is_err() {
        // Nothing was published (a full disk, a write error): the session and project
        // directories this call made go again. `remove_dir` removes only an empty
        // directory, and no other creator is inside while the create lock is held.
        if created_dir {
            let _ = fs::remove_dir(dir);
        }
        if created_project {
            let _ = fs::remove_dir(project);
        }
    }
    let file = result?;
    sync_dir(dir)?;
    if created_project {
        sync_dir(project)?;
    }
    if created_root || created_project {
        sync_dir(root)?;
    }
    Ok((file, (header.len() + batch.len()) as u64))
}

fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    #[cfg(unix)]
    {
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| StoreError::io(dir, e))
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}
