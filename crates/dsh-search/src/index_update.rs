//! Bringing the index up to date with the store: new logs read whole, grown logs continued
//! from where their read stopped (whole again after a compaction), removed or replaced logs
//! dropped. One writer at a time across processes (tantivy's writer lock); a second one
//! skips and searches what is committed.

use std::collections::{HashMap, HashSet};
use std::ops::Bound;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread;

use dsh_foreign::Origin;
use dsh_store::reader::{LogFormat, ScanPos};
use dsh_store::{QueryError, SessionHeader};
use tantivy::collector::TopDocs;
use tantivy::indexer::IndexWriterOptions;
use tantivy::query::{BooleanQuery, Occur, Query, RangeQuery, TermQuery};
use tantivy::schema::{IndexRecordOption, Value as _};
use tantivy::{DocAddress, IndexWriter, Searcher, TantivyDocument, TantivyError, Term};

use crate::error::SearchError;
use crate::file_check;
use crate::foreign_logs;
use crate::log_state::{Change, LogState};
use crate::merge_plan::BoundedMerges;
use crate::schema::Fields;
use crate::session_doc::{self, PiecePlace};
use crate::session_index::{Cancel, Progress, SessionIndex, lock};
use crate::session_text::{self, Continued, IndexedMessage, SessionMeta};
use crate::store_logs::{self, LogFile};
use crate::write_queue::{self, QueueBudget, Queued};

/// Sessions written between commits, so a long first build is searchable (and resumable)
/// as it goes.
const COMMIT_EVERY: usize = 2000;
/// Memory the writer may buffer before it writes a segment (all its threads together).
const WRITER_MEMORY: usize = 64 << 20;
/// Documents read ahead of the writer, at most.
const QUEUE: usize = 4;
/// Bytes of documents queued inside the writer, not yet indexed, at most.
const WRITER_QUEUE_BYTES: usize = 16 << 20;

/// What an update did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RefreshOutcome {
    /// Logs read whole.
    pub indexed: usize,
    /// Logs continued from where they were.
    pub appended: usize,
    /// Logs gone from the store, dropped from the index.
    pub removed: usize,
    pub unchanged: usize,
    /// Logs that could not be read (left out until they change).
    pub failed: usize,
    /// Pieces written before a session's lead: the long sessions' extra documents
    /// (docs/search.md: long sessions).
    pub pieces: usize,
    /// Another process was updating: nothing was done.
    pub busy: bool,
    /// Stopped early by the cancel token (what was done is committed).
    pub cancelled: bool,
}

enum Work<'a> {
    Whole(&'a LogFile),
    Continue(&'a LogFile, ScanPos, DocAddress),
}

impl Work<'_> {
    fn log(&self) -> &LogFile {
        match self {
            Work::Whole(log) | Work::Continue(log, ..) => log,
        }
    }
}

/// One piece of a log's new version, ready for the writer. The pieces of one read come in
/// text order, the lead (with `done`) last.
struct Ready {
    rel: String,
    doc: TantivyDocument,
    /// On the lead: the session is complete.
    done: Option<Done>,
}

/// What the writer does once a session's lead is added.
struct Done {
    /// Which read wrote the new version.
    read: u64,
    /// Pieces numbered below this stay (a continued read keeps its earlier pieces); the
    /// others not written by `read` are deleted.
    keep_below: u64,
    appended: bool,
    failed: bool,
}

impl SessionIndex {
    /// Bring the index up to date with the store, calling `progress` after every session
    /// (`done` counts unchanged ones too). Returns at once with `busy` when another process
    /// is updating. Never writes to the store.
    pub fn refresh(
        &self,
        cancel: &Cancel,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<RefreshOutcome, SearchError> {
        match self.refresh_once(None, cancel, progress) {
            Err(SearchError::Engine(e)) if is_damage(&e) => {
                self.rebuild(&format!("was damaged ({e})"))?;
                self.refresh_once(None, cancel, progress)
            }
            other => other,
        }
    }

    /// A cheap change check, then [`refresh`](Self::refresh) only if something changed: the
    /// store is listed (directory reads and one `stat` per log) and compared with the
    /// listing of the last complete update; `None` when every log is as it was. For a
    /// process that keeps the index open while others write to the store.
    pub fn refresh_if_changed(
        &self,
        cancel: &Cancel,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Option<RefreshOutcome>, SearchError> {
        let (logs, _) = self.list_all()?;
        if lock(&self.last_listing).as_deref() == Some(listing_of(&logs).as_slice()) {
            return Ok(None);
        }
        self.refresh(cancel, progress).map(Some)
    }

    /// Bring only the sessions `ids` up to date (for a process that knows what it just
    /// wrote, e.g. the app after a turn): no listing of the whole store. An id without a
    /// log is skipped (a full [`refresh`](Self::refresh) drops removed logs).
    pub fn refresh_sessions(&self, ids: &[&str]) -> Result<RefreshOutcome, SearchError> {
        let store = dsh_store::SessionStore::new(&self.root);
        let mut logs = Vec::with_capacity(ids.len());
        for id in ids {
            let Some(loc) = store.locate(id)? else {
                continue;
            };
            let Some(rel) = store_logs::key_of(&self.root, &loc.path) else {
                continue;
            };
            if let Some((abs, stamp)) = store_logs::stat(&self.root, &rel) {
                logs.push(LogFile {
                    rel,
                    abs,
                    format: loc.format,
                    stamp,
                    origin: Origin::Dsh,
                    id: None,
                });
            }
        }
        self.refresh_once(Some(logs), &Cancel::new(), &mut |_| {})
    }

    /// Update every log of the store (`only: None`) or just the logs `only`.
    fn refresh_once(
        &self,
        only: Option<Vec<LogFile>>,
        cancel: &Cancel,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<RefreshOutcome, SearchError> {
        let engine = self.engine();
        let whole_store = only.is_none();
        let (logs, unlisted) = match only {
            None => self.list_all()?,
            Some(logs) => (logs, HashSet::new()),
        };
        let known_now = |searcher: &Searcher| {
            if whole_store {
                known_logs(searcher)
            } else {
                known_of(searcher, engine.fields, &logs)
            }
        };
        // Compared with the committed index first: when nothing changed, no writer is
        // taken at all (no lock file, no threads, nothing written).
        engine.reader.reload()?;
        let before = plan(
            &logs,
            &known_now(&engine.reader.searcher())?,
            whole_store,
            &unlisted,
        );
        if before.work.is_empty() && before.removed.is_empty() {
            lock(&self.status).busy_elsewhere = false;
            if whole_store {
                *lock(&self.last_listing) = Some(listing_of(&logs));
            }
            progress(Progress {
                done: before.unchanged,
                total: logs.len(),
            });
            return Ok(RefreshOutcome {
                unchanged: before.unchanged,
                ..RefreshOutcome::default()
            });
        }
        drop(before);
        let threads = thread::available_parallelism().map_or(1, |n| n.get().min(2));
        let options = IndexWriterOptions::builder()
            .memory_budget_per_thread(WRITER_MEMORY / threads)
            .num_worker_threads(threads)
            // One merge at a time: its inputs bound the mapped files merging adds.
            .num_merge_threads(1)
            .build();
        let mut writer: IndexWriter<Queued> = match engine.index.writer_with_options(options) {
            Ok(w) => w,
            Err(TantivyError::LockFailure(..)) => {
                lock(&self.status).busy_elsewhere = true;
                return Ok(RefreshOutcome {
                    busy: true,
                    ..RefreshOutcome::default()
                });
            }
            Err(e) => return Err(e.into()),
        };
        lock(&self.status).busy_elsewhere = false;
        writer.set_merge_policy(Box::new(BoundedMerges::new(engine.dir.clone())));
        // Again with the writer held: another process may have committed meanwhile.
        engine.reader.reload()?;
        let searcher = engine.reader.searcher();
        let Plan {
            work,
            removed,
            unchanged,
        } = plan(&logs, &known_now(&searcher)?, whole_store, &unlisted);
        let mut outcome = RefreshOutcome {
            unchanged,
            ..RefreshOutcome::default()
        };
        for rel in &removed {
            writer.delete_term(Term::from_field_text(engine.fields.path, rel));
            outcome.removed += 1;
        }
        let mut done = Progress {
            done: outcome.unchanged,
            total: logs.len(),
        };
        if work.is_empty() && outcome.removed == 0 {
            // Nothing changed: no commit (and no fsync) at all.
            if whole_store {
                *lock(&self.last_listing) = Some(listing_of(&logs));
            }
            progress(done);
            return Ok(outcome);
        }
        self.set_progress(true, done);
        progress(done);
        let fields = engine.fields;
        let next = AtomicUsize::new(0);
        let (tx, rx) = mpsc::sync_channel::<Ready>(QUEUE);
        let mut failure = None;
        let piece_bytes = self.piece_bytes;
        thread::scope(|scope| {
            for _ in 0..threads {
                let tx = tx.clone();
                let (work, next, searcher) = (&work, &next, &searcher);
                scope.spawn(move || {
                    let reading = Reading {
                        fields: &fields,
                        searcher,
                        foreign: &self.foreign,
                        piece_bytes,
                        tx: &tx,
                    };
                    while !cancel.is_cancelled() {
                        let Some(item) = work.get(next.fetch_add(1, Ordering::Relaxed)) else {
                            break;
                        };
                        if reading.send(item).is_err() {
                            break;
                        }
                    }
                });
            }
            drop(tx);
            let mut since_commit = 0;
            // Sessions with pieces added but not yet their lead: no commit until none is.
            let mut open: HashSet<String> = HashSet::new();
            let budget = QueueBudget::new(WRITER_QUEUE_BYTES);
            for ready in &rx {
                let bytes = write_queue::doc_bytes(&ready.doc);
                let queued = budget.admit(ready.doc, bytes, &|| cancel.is_cancelled());
                if let Err(e) = writer.add_document(queued) {
                    failure = Some(e);
                    break;
                }
                let Some(end) = ready.done else {
                    outcome.pieces += 1;
                    open.insert(ready.rel);
                    continue;
                };
                open.remove(&ready.rel);
                if let Err(e) = writer.delete_query(other_versions(&fields, &ready.rel, &end)) {
                    failure = Some(e);
                    break;
                }
                match (end.appended, end.failed) {
                    (_, true) => outcome.failed += 1,
                    (true, false) => outcome.appended += 1,
                    (false, false) => outcome.indexed += 1,
                }
                since_commit += 1;
                if since_commit >= COMMIT_EVERY && open.is_empty() {
                    since_commit = 0;
                    if let Err(e) = writer.commit().and_then(|_| engine.reader.reload()) {
                        failure = Some(e);
                        break;
                    }
                }
                done.done += 1;
                self.set_progress(true, done);
                progress(done);
                if cancel.is_cancelled() {
                    break;
                }
            }
            // Unblock readers still sending.
            drop(rx);
        });
        let result = match failure {
            Some(e) => Err(e.into()),
            None => writer
                .commit()
                .and_then(|_| {
                    if outcome.indexed + outcome.appended > COMMIT_EVERY {
                        writer.wait_merging_threads()
                    } else {
                        Ok(())
                    }
                })
                .and_then(|()| engine.reader.reload())
                .map_err(SearchError::from),
        };
        if result.is_ok()
            && let Some(dir) = &engine.dir
        {
            file_check::trust_current(&engine.index, dir);
        }
        outcome.cancelled = cancel.is_cancelled();
        self.set_progress(false, done);
        if whole_store && result.is_ok() && !outcome.cancelled {
            *lock(&self.last_listing) = Some(listing_of(&logs));
        }
        result.map(|()| outcome)
    }

    fn set_progress(&self, updating: bool, progress: Progress) {
        let mut status = lock(&self.status);
        status.updating = updating;
        status.progress = progress;
    }
}

impl SessionIndex {
    /// How much of the store the committed index covers: `done` of the `total` listed logs
    /// have a document (as of some read; an update may be running). For a process that
    /// found another one updating: while a first build runs, a search finds only `done`.
    pub fn coverage(&self) -> Result<Progress, SearchError> {
        let engine = self.engine();
        engine.reader.reload()?;
        let known = known_logs(&engine.reader.searcher())?;
        let (logs, _) = self.list_all()?;
        Ok(Progress {
            done: logs.iter().filter(|l| known.contains_key(&l.rel)).count(),
            total: logs.len(),
        })
    }

    /// Every log of the store and of the foreign sources, and the foreign origins whose
    /// listing failed.
    fn list_all(&self) -> Result<(Vec<LogFile>, HashSet<Origin>), SearchError> {
        // The store's own check: one `lstat` per log, shared with the listing hits are
        // checked against (docs/search.md: freshness).
        let mut logs = store_logs::of_store(&self.store)?;
        let (foreign, unlisted) = foreign_logs::list(&self.foreign);
        // A dsh session with a foreign session's id wins (docs/foreign-sources.md): compare
        // the store's session directory names with the foreign ids encoded the same way.
        let dsh_dirs: HashSet<&str> = if foreign.is_empty() {
            HashSet::new()
        } else {
            logs.iter()
                .filter_map(|l| l.rel.split('/').nth(1))
                .collect()
        };
        let shown: Vec<LogFile> = foreign
            .into_iter()
            .filter(|l| {
                l.id.as_deref()
                    .and_then(|id| dsh_store::paths::encode_session_id(id).ok())
                    .is_none_or(|dir| !dsh_dirs.contains(dir.as_str()))
            })
            .collect();
        logs.extend(shown);
        Ok((logs, unlisted))
    }
}

/// What an update has to do: the logs to read, the keys to drop, how many are as indexed.
struct Plan<'a> {
    work: Vec<Work<'a>>,
    removed: Vec<String>,
    unchanged: usize,
}

/// Compare `logs` with what the index `known`: a log not known or changed is read (continued
/// when it only grew), a known log no longer listed is dropped when the whole store was
/// listed — unless its source could not be listed (`unlisted`): it keeps its sessions
/// until it can be.
fn plan<'a>(
    logs: &'a [LogFile],
    known: &HashMap<String, (LogState, DocAddress)>,
    whole_store: bool,
    unlisted: &HashSet<Origin>,
) -> Plan<'a> {
    let mut out = Plan {
        work: Vec::new(),
        removed: Vec::new(),
        unchanged: 0,
    };
    for log in logs {
        match known.get(&log.rel) {
            None => out.work.push(Work::Whole(log)),
            Some((state, address)) => match state.change(&log.stamp, log.format) {
                Change::Unchanged => out.unchanged += 1,
                Change::Grew(pos) => out.work.push(Work::Continue(log, pos, *address)),
                Change::Other => out.work.push(Work::Whole(log)),
            },
        }
    }
    if whole_store {
        let listed: HashSet<&str> = logs.iter().map(|l| l.rel.as_str()).collect();
        out.removed = known
            .iter()
            .filter(|(k, (state, _))| {
                !listed.contains(String::as_str(k)) && !unlisted.contains(&state.origin())
            })
            .map(|(k, _)| k.clone())
            .collect();
    }
    out
}

/// The keys and stamps of `logs`, for a change check.
fn listing_of(logs: &[LogFile]) -> Vec<(String, dsh_store::listing::Stamp)> {
    logs.iter().map(|l| (l.rel.clone(), l.stamp)).collect()
}

/// Whether an engine error means the index files cannot be trusted.
fn is_damage(e: &TantivyError) -> bool {
    matches!(
        e,
        TantivyError::DataCorruption(_)
            | TantivyError::OpenReadError(_)
            | TantivyError::OpenDirectoryError(_)
            | TantivyError::IncompatibleIndex(_)
    )
}

/// Every indexed log's state and lead document (the only piece with a state), by key.
fn known_logs(searcher: &Searcher) -> Result<HashMap<String, (LogState, DocAddress)>, SearchError> {
    let mut out = HashMap::new();
    let mut buf = Vec::new();
    for (ordinal, segment) in searcher.segment_readers().iter().enumerate() {
        let Some(states) = segment.fast_fields().bytes("state")? else {
            continue;
        };
        let segment_ord = u32::try_from(ordinal).unwrap_or(u32::MAX);
        for doc in segment.doc_ids_alive() {
            let Some(ord) = states.term_ords(doc).next() else {
                continue;
            };
            buf.clear();
            if !states
                .ord_to_bytes(ord, &mut buf)
                .map_err(TantivyError::from)?
            {
                continue;
            }
            if let Some(state) = LogState::from_bytes(&buf) {
                out.insert(
                    state.path.clone(),
                    (state, DocAddress::new(segment_ord, doc)),
                );
            }
        }
    }
    Ok(out)
}

/// The indexed state and lead document of just `logs`, looked up by key.
fn known_of(
    searcher: &Searcher,
    fields: Fields,
    logs: &[LogFile],
) -> Result<HashMap<String, (LogState, DocAddress)>, SearchError> {
    let mut out = HashMap::new();
    for log in logs {
        let term = |t| -> Box<dyn Query> { Box::new(TermQuery::new(t, IndexRecordOption::Basic)) };
        let query = BooleanQuery::new(vec![
            (
                Occur::Must,
                term(Term::from_field_text(fields.path, &log.rel)),
            ),
            (Occur::Must, term(Term::from_field_u64(fields.lead, 1))),
        ]);
        let top = searcher.search(&query, &TopDocs::with_limit(1).order_by_score())?;
        let Some((_, address)) = top.first() else {
            continue;
        };
        let doc: TantivyDocument = searcher.doc(*address)?;
        if let Some(state) = doc
            .get_first(fields.state)
            .and_then(|v| v.as_bytes())
            .and_then(LogState::from_bytes)
        {
            out.insert(log.rel.clone(), (state, *address));
        }
    }
    Ok(out)
}

/// The pieces of the log `rel` that the new version `end` does not keep: those numbered
/// from `end.keep_below` on that another read wrote.
fn other_versions(fields: &Fields, rel: &str, end: &Done) -> Box<dyn Query> {
    let mut clauses: Vec<(Occur, Box<dyn Query>)> = vec![
        (
            Occur::Must,
            Box::new(TermQuery::new(
                Term::from_field_text(fields.path, rel),
                IndexRecordOption::Basic,
            )),
        ),
        (
            Occur::MustNot,
            Box::new(TermQuery::new(
                Term::from_field_u64(fields.read, end.read),
                IndexRecordOption::Basic,
            )),
        ),
    ];
    if end.keep_below > 0 {
        clauses.push((
            Occur::Must,
            Box::new(RangeQuery::new(
                Bound::Included(Term::from_field_u64(fields.piece, end.keep_below)),
                Bound::Unbounded,
            )),
        ));
    }
    Box::new(BooleanQuery::new(clauses))
}

/// A number for one read of a log, different from every other read's (across processes
/// and runs: the pieces of an unfinished read may stay in the index until the next one).
fn new_read_id() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_usize(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u32(std::process::id());
    if let Ok(now) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        h.write_u128(now.as_nanos());
    }
    h.finish()
}

/// The writer stopped taking pieces (cancelled or failed): the reader stops too.
#[derive(Debug)]
struct Stopped;

/// What a reading thread needs to turn logs into pieces for the writer.
struct Reading<'a> {
    fields: &'a Fields,
    searcher: &'a Searcher,
    foreign: &'a [dsh_foreign::ForeignSource],
    piece_bytes: usize,
    tx: &'a mpsc::SyncSender<Ready>,
}

impl Reading<'_> {
    /// Read one log (continued when it only grew, else whole) and send its pieces, the lead
    /// last.
    fn send(&self, work: &Work<'_>) -> Result<(), Stopped> {
        let log = work.log();
        if let Work::Continue(_, pos, address) = work
            && log.origin == Origin::Dsh
            && log.format == LogFormat::Plain
            && self.continued(log, *pos, *address)?
        {
            return Ok(());
        }
        self.whole(log)
    }

    /// A sender of the non-lead pieces of one read, numbered from `first`: a closed
    /// channel is recorded in `stopped` and stops the read.
    fn piece_sender<'s>(
        &'s self,
        rel: &'s str,
        read: u64,
        next: &'s mut u64,
        stopped: &'s mut bool,
    ) -> impl FnMut(Vec<IndexedMessage>) -> Result<(), QueryError> + 's {
        move |messages| {
            let place = PiecePlace {
                piece: *next,
                split: true,
                read,
            };
            *next += 1;
            let doc = session_doc::piece_document(self.fields, rel, place, &messages);
            drop(messages);
            let ready = Ready {
                rel: rel.to_owned(),
                doc,
                done: None,
            };
            if self.tx.send(ready).is_err() {
                *stopped = true;
                return Err(QueryError::Io {
                    path: rel.into(),
                    source: std::io::Error::other("the index update stopped"),
                });
            }
            Ok(())
        }
    }

    fn lead(&self, rel: &str, doc: TantivyDocument, end: Done) -> Result<(), Stopped> {
        self.tx
            .send(Ready {
                rel: rel.to_owned(),
                doc,
                done: Some(end),
            })
            .map_err(|_| Stopped)
    }

    /// Read a log whole, in pieces.
    fn whole(&self, log: &LogFile) -> Result<(), Stopped> {
        let read = new_read_id();
        let mut next = 0u64;
        let mut stopped = false;
        let result = {
            let mut emit = self.piece_sender(&log.rel, read, &mut next, &mut stopped);
            match (
                &log.id,
                self.foreign.iter().find(|s| *s.origin() == log.origin),
            ) {
                (Some(id), Some(source)) if log.origin != Origin::Dsh => {
                    foreign_logs::read_pieces(source, id, self.piece_bytes, &mut emit)
                }
                _ => session_text::read_pieces(&log.abs, log.format, self.piece_bytes, &mut emit),
            }
        };
        if stopped {
            return Err(Stopped);
        }
        let end = |failed| Done {
            read,
            keep_below: 0,
            appended: false,
            failed,
        };
        match result {
            Ok((meta, last)) => {
                let state = LogState::new(&log.rel, &log.stamp, log.format, meta.resume, false)
                    .of_origin(&log.origin);
                let place = PiecePlace {
                    piece: next,
                    split: next > 0,
                    read,
                };
                let doc =
                    session_doc::lead_document(self.fields, &log.rel, place, &meta, &last, &state);
                drop(last);
                self.lead(&log.rel, doc, end(false))
            }
            Err(e) => {
                tracing::debug!(log = %log.abs.display(), error = %e, "session not indexed");
                let state = LogState::new(&log.rel, &log.stamp, log.format, None, true)
                    .of_origin(&log.origin);
                let doc = session_doc::failed_document(self.fields, &log.rel, read, &state);
                self.lead(&log.rel, doc, end(true))
            }
        }
    }

    /// Continue the read of a log that only grew from its old lead piece; `Ok(false)` when
    /// it must be read whole instead (pieces already sent are then replaced by that read).
    fn continued(&self, log: &LogFile, pos: ScanPos, address: DocAddress) -> Result<bool, Stopped> {
        let Some(old) = self
            .searcher
            .doc::<TantivyDocument>(address)
            .ok()
            .and_then(|doc| session_doc::stored(self.fields, &doc))
        else {
            return Ok(false);
        };
        let read = new_read_id();
        let mut next = old.piece + 1;
        let mut stopped = false;
        let result = {
            let mut emit = self.piece_sender(&log.rel, read, &mut next, &mut stopped);
            session_text::read_continued(&log.abs, pos, old.messages, self.piece_bytes, &mut emit)
        };
        if stopped {
            return Err(Stopped);
        }
        let Ok(Continued::Appended {
            last,
            title,
            resume,
            last_time,
        }) = result
        else {
            return Ok(false);
        };
        let meta = SessionMeta {
            header: SessionHeader::new(old.id, old.created_at, old.cwd),
            title: title.or(old.title),
            resume,
            last_time: last_time.unwrap_or(old.last_time),
        };
        let state = LogState::new(&log.rel, &log.stamp, log.format, resume, false);
        let place = PiecePlace {
            piece: next,
            split: old.split || next > old.piece + 1,
            read,
        };
        let doc = session_doc::lead_document(self.fields, &log.rel, place, &meta, &last, &state);
        drop(last);
        self.lead(
            &log.rel,
            doc,
            Done {
                read,
                keep_below: old.piece,
                appended: true,
                failed: false,
            },
        )?;
        Ok(true)
    }
}
