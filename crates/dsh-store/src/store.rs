//! The dsh-compatible session store (docs/session-store.md: on-disk layout, session query): locating logs, the single writer,
//! and the read-side [`SessionQuery`] with header and title caches.
//!
//! Caches are keyed by log path and revalidated by each log's stamp (inode, length, mtime,
//! ctime), so repeated listings only stat files; a log that changed is read again. Nothing
//! below the root is followed if it is a link, and nothing but session logs is written there.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use super::activity::SessionSummary;
use super::compact_surface::CompactSurface;
use super::encoding::Compression;
use super::error::StoreError;
use super::event::{Event, SessionHeader};
use super::fold::KeepingFolder;
use super::index_file;
use super::listing::{CachedDigest, HeaderIndex, Stamp, locate_in};
use super::log_digest::{self, LogDigest};
use super::log_index::{self, LogIndex};
use super::log_index_file;
use super::log_window::{self, LogWindow, WindowEnd, WindowLimits};
use super::paths;
use super::query::{QueryError, SessionQuery, SummaryLookup, Surface, TitleLookup};
use super::reader::{self, Limits, LogFormat, ScanPos};
use super::recent_titles::{RecentSummaries, RecentTitles};
use super::surface_scan::{self, SurfaceScan, SurfaceVisitor};
use super::writer::SessionWriter;
use super::{cache, nofollow};

pub use super::listing::LogLocation;

/// A session store rooted at a directory. Cheap to clone; clones share caches.
#[derive(Debug, Clone)]
pub struct SessionStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// The root as resolved once at construction (a symlinked home still works).
    root: PathBuf,
    /// Where the header/title index file lives (the store's cache directory).
    index_dir: Option<PathBuf>,
    limits: Limits,
    /// The session table: headers, log stamps and titles.
    headers: Mutex<HeaderIndex>,
    /// The index file has been read into the caches (once, on first use).
    loaded: OnceLock<()>,
    /// A title was scanned since the index file was read.
    titles_dirty: AtomicBool,
    /// Titles by session id with when they were last revalidated (for `read_title_recent`).
    recent_titles: RecentTitles,
    /// Summaries by session id with when they were last revalidated (for
    /// `with_recent_summaries`; apart from the titles', which `candidates` uses alone).
    recent_summaries: RecentSummaries,
    /// Whether the caches are written back to the index file (the app's own store only).
    persist: bool,
    /// `store.compression`: which encoding writers use.
    compression: Compression,
    /// A listing has checked every log: the table's lock is then always waited for.
    verified: AtomicBool,
    /// During the first full check of a store seeded from its index file: the listing the
    /// index gives with the directories listed again (see
    /// [`list_sessions_unchecked`](SessionQuery::list_sessions_unchecked)). Held while it
    /// is built, so a caller asking meanwhile waits for it, not for the whole check.
    provisional: Mutex<Option<Arc<Vec<SessionHeader>>>>,
    /// The owner checks every log in the background right after start (the app), so an
    /// early listing may be built by whoever asks first ([`SessionStore::allow_early_listing`]).
    early: AtomicBool,
    /// Line indexes of the logs read in windows lately, newest last (at most
    /// [`LOG_INDEXES`]), each with the stamp of the log it indexes.
    log_indexes: Mutex<Vec<(PathBuf, Stamp, Arc<LogIndex>)>>,
}

/// Logs whose line index is kept in memory.
const LOG_INDEXES: usize = 8;

impl Inner {
    /// Seed the caches from the index file next to the store, once.
    fn ensure_loaded(&self) {
        self.loaded.get_or_init(|| {
            let Some(dir) = self.index_dir.as_deref() else {
                return;
            };
            // Seeded project by project as the file is decoded, so it is never held twice.
            let mut seeded = HeaderIndex::default();
            // Digests read with another line limit are not this store's (a lowered limit's
            // damage or placeholders must not outlive the setting): the file is replaced.
            let decoded = index_file::load_each(dir, &mut |p| seeded.add_record(&self.root, p));
            if decoded.is_some_and(|d| d.line_limit == self.limits.max_line_bytes) {
                *lock(&self.headers) = seeded;
            }
        });
    }
}

impl Drop for Inner {
    /// Persist the caches when this process read anything the index file did not know.
    fn drop(&mut self) {
        if !self.persist || self.loaded.get().is_none() {
            return;
        }
        let touched = self
            .headers
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take_touched();
        if !touched && !*self.titles_dirty.get_mut() {
            return;
        }
        let Some(dir) = self.index_dir.clone() else {
            return;
        };
        if !self.root.is_dir() {
            return;
        }
        let headers = self
            .headers
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Err(e) = index_file::save(&dir, self.limits.max_line_bytes, |w| {
            headers.write_records(w)
        }) {
            tracing::debug!(root = %self.root.display(), error = %e, "session index not saved");
        }
    }
}

/// The table, waited for once a listing has checked every log; before that only if free
/// (the first full check holds it for a while, and callers that can do without it — a
/// title read from its own log, a log found by a search — do not wait for it).
fn headers_if_free(inner: &Inner) -> Option<MutexGuard<'_, HeaderIndex>> {
    if inner.verified.load(Ordering::Acquire) {
        return Some(lock(&inner.headers));
    }
    match inner.headers.try_lock() {
        Ok(guard) => Some(guard),
        Err(std::sync::TryLockError::Poisoned(p)) => Some(p.into_inner()),
        Err(std::sync::TryLockError::WouldBlock) => None,
    }
}

/// Logs a background sweep stats per hold of the header index's lock (a few ms at most).
const SWEEP_CHUNK: usize = 1024;
/// The sweep's pause between two holds of the lock, so others waiting for it get it.
const SWEEP_PAUSE: Duration = Duration::from_micros(200);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn io_err(path: &Path, source: io::Error) -> QueryError {
    QueryError::Io {
        path: path.to_owned(),
        source,
    }
}

impl SessionStore {
    /// A store rooted at `root` (which need not exist yet). Starts from the index file in the
    /// store's cache directory when there is one, but never writes it.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        let root = resolve_root(root.into());
        let dir = cache::store_cache_dir(&root);
        Self::build(root, dir, false, Limits::default())
    }

    /// Like [`new`](Self::new), also writing the header/title caches back to the store's
    /// cache directory ([`cache::store_cache_dir`]) when the last handle is dropped, so the
    /// next process starts warm. For the app's own store; a store only inspected uses `new`.
    pub fn with_persisted_index(root: impl Into<PathBuf>) -> Self {
        let root = resolve_root(root.into());
        let dir = cache::store_cache_dir(&root);
        Self::build(root, dir, true, Limits::default())
    }

    /// A store with every option explicit: where its index file lives (`None`: no index),
    /// whether it is written back, and the reading limits.
    pub fn with_options(
        root: impl Into<PathBuf>,
        index_dir: Option<PathBuf>,
        persist: bool,
        limits: Limits,
    ) -> Self {
        Self::build(resolve_root(root.into()), index_dir, persist, limits)
    }

    /// The same store with other reading limits (`store.max_line_bytes`); caches start empty.
    #[must_use]
    pub fn with_limits(self, limits: Limits) -> Self {
        let inner = &self.inner;
        let compression = inner.compression;
        Self::build(
            inner.root.clone(),
            inner.index_dir.clone(),
            inner.persist,
            limits,
        )
        .with_compression(compression)
    }

    /// The reading limits in force.
    pub fn limits(&self) -> Limits {
        self.inner.limits
    }

    /// Warnings of the last listing: sessions left out and why (unreadable, links, special
    /// files, bad headers, an id with two logs), one line each.
    pub fn listing_warnings(&self) -> Vec<String> {
        lock(&self.inner.headers).warnings()
    }

    fn build(root: PathBuf, index_dir: Option<PathBuf>, persist: bool, limits: Limits) -> Self {
        SessionStore {
            inner: Arc::new(Inner {
                root,
                index_dir,
                limits,
                headers: Mutex::new(HeaderIndex::default()),
                loaded: OnceLock::new(),
                titles_dirty: AtomicBool::new(false),
                recent_titles: RecentTitles::new(),
                recent_summaries: RecentSummaries::new(),
                verified: AtomicBool::new(false),
                provisional: Mutex::new(None),
                early: AtomicBool::new(false),
                log_indexes: Mutex::new(Vec::new()),
                persist,
                compression: Compression::Auto,
            }),
        }
    }

    /// The same store with `store.compression` set (default [`Compression::Auto`]), with
    /// fresh caches; clones made before keep their own setting.
    #[must_use]
    pub fn with_compression(self, compression: Compression) -> Self {
        let inner = &self.inner;
        let mut store = Self::build(
            inner.root.clone(),
            inner.index_dir.clone(),
            inner.persist,
            inner.limits,
        );
        if let Some(fresh) = Arc::get_mut(&mut store.inner) {
            fresh.compression = compression;
        }
        store
    }

    /// Let [`list_sessions_unchecked`](SessionQuery::list_sessions_unchecked) build the
    /// early listing itself when it asks before anyone started the first check: for the
    /// app, whose warm-up checks every log right after start (so a `@` typed before that
    /// warm-up began does not wait for the whole check). Shared by every clone.
    pub fn allow_early_listing(&self) {
        self.inner.early.store(true, Ordering::Release);
    }

    /// The store's root directory.
    pub fn root(&self) -> &Path {
        &self.inner.root
    }

    /// A window of session `id`'s events ending at `end` (docs/session-store.md: windowed
    /// reads): at most `limits.max_events` events of at most `limits.max_bytes` bytes of
    /// log lines, read from the nearest checkpoint of the log's line index, never from the
    /// start — for scrolling a transcript back to the beginning of any session. The first
    /// window of a log (or of its part appended since) indexes it in one pass; a `.zstd`
    /// log's index is kept in the cache directory for later processes. Errors as
    /// [`read_surface`](SessionQuery::read_surface); a log rewritten while it is read is an
    /// `Io` error to retry.
    pub fn read_window(
        &self,
        id: &str,
        end: WindowEnd,
        limits: WindowLimits,
    ) -> Result<LogWindow, QueryError> {
        let (loc, _) = self.find(id)?;
        let index = self.log_index(&loc)?;
        let end_seq = match end {
            WindowEnd::Latest => index.end.next_seq,
            WindowEnd::BeforeSeq(seq) => seq.min(index.end.next_seq),
        };
        let file = reader::open_file(&loc.path)?;
        log_window::read_window(
            &loc.path,
            file,
            &index,
            end_seq,
            &limits,
            &self.inner.limits,
        )
    }

    /// The line index of the log at `loc`, brought up to date: from memory while the log's
    /// stamp is unchanged, else extended (or built) by reading what it lacks.
    fn log_index(&self, loc: &LogLocation) -> Result<Arc<LogIndex>, QueryError> {
        let file = reader::open_file(&loc.path)?;
        let meta = file.metadata().map_err(|e| io_err(&loc.path, e))?;
        let stamp = Stamp::of(&meta);
        let earlier = {
            let mut held = lock(&self.inner.log_indexes);
            let at = held.iter().position(|(p, _, _)| *p == loc.path);
            match at.map(|at| held.remove(at)) {
                Some((path, known, index)) if known == stamp => {
                    held.push((path, known, Arc::clone(&index)));
                    return Ok(index);
                }
                Some((_, _, index)) => Some(Arc::unwrap_or_clone(index)),
                None => None,
            }
        };
        let frames_dir = (loc.format == LogFormat::Zstd)
            .then(|| self.inner.index_dir.as_deref().map(log_index_file::dir_in))
            .flatten();
        let earlier = earlier.or_else(|| {
            frames_dir
                .as_deref()
                .and_then(|dir| log_index_file::load(dir, &loc.path))
        });
        let before = earlier.clone();
        let index = log_index::update(
            &loc.path,
            file,
            &meta,
            loc.format,
            &self.inner.limits,
            earlier,
        )?;
        if self.inner.persist
            && before.as_ref() != Some(&index)
            && let Some(dir) = &frames_dir
            && let Err(e) = log_index_file::save(dir, &loc.path, &index)
        {
            tracing::debug!(log = %loc.path.display(), error = %e, "frame index not saved");
        }
        let index = Arc::new(index);
        let mut held = lock(&self.inner.log_indexes);
        if held.len() >= LOG_INDEXES {
            held.remove(0);
        }
        held.push((loc.path.clone(), stamp, Arc::clone(&index)));
        Ok(index)
    }

    /// Find a session's log in any project directory. The same id under two projects is
    /// [`QueryError::Duplicate`]; a project directory that cannot be searched, or a session
    /// directory or log that is a link or special file, is an error too (never a reason to
    /// look elsewhere or to create a second log).
    pub fn locate(&self, id: &str) -> Result<Option<LogLocation>, QueryError> {
        locate_in(self.root(), id)
    }

    /// Check session `id`'s log against dsh's rules (docs/session-store.md: the rule book):
    /// one streaming read with the store's limits, nothing written. `NotFound` when it has
    /// no log.
    pub fn check_session(&self, id: &str) -> Result<crate::log_check::LogReport, QueryError> {
        let loc = self
            .locate(id)?
            .ok_or_else(|| QueryError::NotFound { id: id.to_owned() })?;
        let report = crate::log_check::check_log(&loc.path, loc.format, &self.inner.limits)?;
        reader::check_header_id(&loc.path, &report.header, id)?;
        Ok(report)
    }

    /// Where the store's own listing, as of its last refresh
    /// ([`list_sessions`](SessionQuery::list_sessions)), has session `id`'s log; `None` when
    /// it leaves the session out — no such session, a header that cannot be read or whose id
    /// does not match its directory, a link. For what found a session elsewhere (a search
    /// index walking the directories) and must answer only what the store lists.
    pub fn listed_location(&self, id: &str) -> Option<LogLocation> {
        self.inner.ensure_loaded();
        lock(&self.inner.headers).location_of(id)
    }

    /// Every session log of the store, each stat-ed after this call began (one `lstat` a
    /// log; a directory is listed again only when its mtime says it changed), with its
    /// stamp, in path order: every regular log in a session directory, listed or not. The
    /// listing is brought up to date on the way, so [`listed_location`](Self::listed_location)
    /// answers from the same check. For a search index that must see a message appended a
    /// moment ago without a stat walk of its own (docs/search.md: freshness). Once the
    /// store has a checked listing the logs are stat-ed in steps of a sweep, the table's
    /// lock released between steps, so listings asked meanwhile are not held up by it.
    pub fn checked_logs(&self) -> Result<Vec<(LogLocation, Stamp)>, QueryError> {
        let began = std::time::Instant::now();
        // A fresh process checks every log inline here, once.
        self.list_sessions()?;
        loop {
            let mut headers = lock(&self.inner.headers);
            if headers.logs_checked_since(began) {
                // What the check found shows in this listing (never a second inline stat of
                // every log: a check that comes due meanwhile is left to a sweep).
                headers.refresh_deferring(self.root())?;
                let logs = headers.logs();
                let sweep = headers.take_sweep_wanted();
                drop(headers);
                if sweep {
                    self.sweep_in_background();
                }
                return Ok(logs);
            }
            let done = headers.sweep_since(began, SWEEP_CHUNK);
            drop(headers);
            if !done {
                std::thread::sleep(SWEEP_PAUSE);
            }
        }
    }

    /// Whether a session with this id has a log.
    pub fn exists(&self, id: &str) -> bool {
        matches!(self.locate(id), Ok(Some(_)))
    }

    /// Whether session `id`'s log is held by a writer — another process's (a second app
    /// window, `send`) or another writer of this one: a shared lock is tried on the log and
    /// let go at once, nothing is read or written. `false` for a session without a log. For
    /// pickers that mark busy sessions: the answer may be stale by the time it is shown.
    pub fn writer_busy(&self, id: &str) -> Result<bool, QueryError> {
        let Some(loc) = self.locate(id)? else {
            return Ok(false);
        };
        let file = reader::open_file(&loc.path)?;
        match file.try_lock_shared() {
            // Closing the file lets the lock go.
            Ok(()) => Ok(false),
            Err(std::fs::TryLockError::WouldBlock) => Ok(true),
            Err(std::fs::TryLockError::Error(source)) => Err(QueryError::Io {
                path: loc.path,
                source,
            }),
        }
    }

    /// Single writer. Existing session: takes the advisory lock ([`StoreError::Busy`] if held
    /// elsewhere), truncates a torn tail, folds its events. Absent session and `create =
    /// Some(header)`: nothing on disk until the first append, which publishes the file
    /// atomically. Absent and `None`: [`QueryError::NotFound`] (as [`StoreError::Query`]).
    /// The store-wide encoding check waits for the first append
    /// ([`SessionWriter::check_encoding`]), so opening never visits every session directory.
    pub fn open_writer(
        &self,
        id: &str,
        create: Option<SessionHeader>,
    ) -> Result<SessionWriter, StoreError> {
        self.open_writer_observing(id, create, &mut |_| {})
    }

    /// [`open_writer`](Self::open_writer), showing every readable event of an existing log
    /// to `observe` as it is loaded (one pass; the writer keeps none of them).
    pub fn open_writer_observing(
        &self,
        id: &str,
        create: Option<SessionHeader>,
        observe: &mut dyn FnMut(&crate::Event),
    ) -> Result<SessionWriter, StoreError> {
        // The store-wide encoding check runs before the writer's first write, not here.
        let setting = self.inner.compression;
        match self.locate(id)? {
            Some(loc) => {
                nofollow::check_below(self.root(), &loc.path)
                    .map_err(|e| StoreError::io(&loc.path, e))?;
                SessionWriter::open_existing(
                    loc.path,
                    loc.format,
                    id,
                    (self.root(), setting, &self.inner.limits),
                    observe,
                )
            }
            None => match create {
                None => Err(QueryError::NotFound { id: id.to_owned() }.into()),
                Some(header) => {
                    if header.kind != "session" {
                        return Err(StoreError::InvalidEvent {
                            id: id.to_owned(),
                            reason: format!("header type {:?} is not \"session\"", header.kind),
                        });
                    }
                    if let Some(cwd) = &header.cwd
                        && !Path::new(cwd).is_absolute()
                    {
                        return Err(StoreError::InvalidEvent {
                            id: id.to_owned(),
                            reason: format!("header cwd {cwd:?} is not an absolute path"),
                        });
                    }
                    // A header dsh would not take for a session header is never written.
                    let mut broken = crate::rule_book::check_header(&header).into_iter();
                    if let Some(first) = broken.next() {
                        return Err(StoreError::RuleBroken {
                            id: id.to_owned(),
                            violation: Box::new(first),
                            more: broken.count(),
                        });
                    }
                    if header.id != id {
                        return Err(QueryError::InvalidId {
                            id: id.to_owned(),
                            reason: format!("header id {:?} differs", header.id),
                        }
                        .into());
                    }
                    let dir = paths::session_dir(self.root(), header.cwd.as_deref(), id)?;
                    Ok(SessionWriter::pending(
                        header,
                        self.root().to_owned(),
                        dir,
                        setting,
                        &self.inner.limits,
                    ))
                }
            },
        }
    }

    /// A session's log and its metadata: the listing's location when still there, else a
    /// search of the project directories.
    fn find(&self, id: &str) -> Result<(LogLocation, fs::Metadata), QueryError> {
        paths::encode_session_id(id)?;
        self.inner.ensure_loaded();
        let known = 'known: {
            let Some(headers) = headers_if_free(&self.inner) else {
                // The first check runs: the search below finds the log (and a duplicate).
                break 'known None;
            };
            if let Some((first, second)) = headers.duplicate_of(id) {
                return Err(QueryError::Duplicate {
                    id: id.to_owned(),
                    first: first.clone(),
                    second: second.clone(),
                });
            }
            headers.location_of(id)
        };
        if let Some(loc) = known
            && loc.format == LogFormat::Plain
            && let Ok(meta) = fs::symlink_metadata(&loc.path)
            && meta.is_file()
        {
            return Ok((loc, meta));
        }
        let loc = self
            .locate(id)?
            .ok_or_else(|| QueryError::NotFound { id: id.to_owned() })?;
        let meta = fs::symlink_metadata(&loc.path).map_err(|e| io_err(&loc.path, e))?;
        Ok((loc, meta))
    }

    /// The summary of a listed session whose log every listing stat-ed less than `max_age`
    /// ago, if the digest cache holds it for that very stamp: no syscall (but for the path
    /// of a damaged log). `None`: ask [`read_summary`](SessionQuery::read_summary).
    fn summary_from_last_check(&self, id: &str, max_age: Duration) -> Option<SessionSummary> {
        let headers = headers_if_free(&self.inner)?;
        let (mut summary, damage) = headers.vouched_digest(id, max_age, |d| {
            (
                SessionSummary {
                    first_prompt: d.first_prompt.clone(),
                    ..SessionSummary::of_log(d.title.clone(), &d.activity)
                },
                d.damage.is_some().then(|| d.clone()),
            )
        })?;
        if let Some(digest) = damage {
            let path = headers.location_of(id)?.path;
            summary.damage = digest.damage_error(&path).map(|e| e.to_string().into());
        }
        Some(summary)
    }

    /// Run the header index's periodic stat of every log on a thread of its own, a chunk
    /// per hold of the lock, so a listing never waits for it (docs/session-store.md:
    /// caches). The thread holds the store only while it works on a chunk.
    fn sweep_in_background(&self) {
        let store = Arc::downgrade(&self.inner);
        let run = move || {
            while let Some(inner) = store.upgrade() {
                if lock(&inner.headers).sweep_step(SWEEP_CHUNK) {
                    return;
                }
                drop(inner);
                // A mutex is not handed over on unlock: without a pause this loop takes it
                // straight back, and a listing waiting for it waits for the whole sweep.
                std::thread::sleep(SWEEP_PAUSE);
            }
        };
        if let Err(e) = std::thread::Builder::new()
            .name("dsh-store-sweep".into())
            .spawn(run)
        {
            tracing::debug!(error = %e, "no sweep thread; checking every log now");
            while !lock(&self.inner.headers).sweep_step(SWEEP_CHUNK) {}
        }
    }

    /// The digest of session `id`'s log (latest title, activity, damage): from the cache
    /// while the log's stamp is unchanged, else read — only what was appended when the log
    /// just grew (docs/session-store.md: caches).
    fn read_digest(&self, id: &str) -> Result<(LogLocation, LogDigest), QueryError> {
        let (loc, meta) = self.find(id)?;
        let stamp = Stamp::of(&meta);
        let cached = headers_if_free(&self.inner).and_then(|h| h.cached_digest(&loc));
        if let Some(c) = &cached
            && c.stamp == stamp
            && c.format == loc.format
        {
            return Ok((loc, c.digest.clone()));
        }
        let same_file = cached.as_ref().is_some_and(|c| stamp.same_file(&c.stamp));
        let digest = log_digest::read_digest(
            &loc.path,
            loc.format,
            &self.inner.limits,
            id,
            cached.as_ref().map(|c| &c.digest),
            same_file,
        )?;
        self.inner.titles_dirty.store(true, Ordering::Relaxed);
        if let Some(mut headers) = headers_if_free(&self.inner) {
            headers.remember_digest(
                &loc,
                CachedDigest {
                    stamp,
                    format: loc.format,
                    digest: digest.clone(),
                },
            );
        }
        Ok((loc, digest))
    }

    /// The listing's title of `id`: the latest title as far as its log could be read (a
    /// log damaged after its title is listed with it).
    fn listed_title(&self, id: &str, max_age: Duration) -> Result<Option<Arc<str>>, QueryError> {
        match self.summary_from_last_check(id, max_age) {
            Some(summary) => Ok(summary.title),
            None => Ok(self.read_digest(id)?.1.title),
        }
    }
}

/// Fold one scanned event; a log that breaks the folding rules is corrupt at `line`.
fn fold_at<T>(
    folder: &mut KeepingFolder<T>,
    path: &Path,
    event: &Event,
    line: u64,
) -> Result<bool, QueryError> {
    folder.fold(event).map_err(|e| QueryError::Corrupt {
        path: path.to_owned(),
        line,
        reason: e.to_string(),
    })
}

/// The root resolved once (links in its own path are fine); as given if it does not exist.
fn resolve_root(root: PathBuf) -> PathBuf {
    fs::canonicalize(&root).unwrap_or(root)
}

impl SessionQuery for SessionStore {
    fn list_sessions(&self) -> Result<Arc<Vec<SessionHeader>>, QueryError> {
        let first = !self.inner.verified.load(Ordering::Acquire);
        let mut provisional = first.then(|| lock(&self.inner.provisional));
        self.inner.ensure_loaded();
        let mut headers = lock(&self.inner.headers);
        if let Some(slot) = provisional.as_mut()
            && slot.is_none()
            && !headers.is_verified()
            && headers.has_rows()
        {
            // Seeded from the index and not checked yet: publish the listing the index
            // gives (directories listed again) before checking every log.
            **slot = Some(headers.refresh_unchecked(self.root())?);
        }
        drop(provisional);
        let listed = headers.refresh_deferring(self.root());
        let verified = headers.is_verified();
        let sweep = headers.take_sweep_wanted();
        drop(headers);
        if first {
            // The provisional listing is for the time of the first check only.
            *lock(&self.inner.provisional) = None;
            if verified {
                self.inner.verified.store(true, Ordering::Release);
            }
        }
        if sweep {
            self.sweep_in_background();
        }
        listed
    }

    fn list_sessions_unchecked(&self) -> Result<Arc<Vec<SessionHeader>>, QueryError> {
        if !self.inner.verified.load(Ordering::Acquire) {
            // Waits only while the provisional listing is being built.
            let mut provisional = lock(&self.inner.provisional);
            if let Some(list) = provisional.clone() {
                return Ok(list);
            }
            if self.inner.early.load(Ordering::Acquire) {
                // Asked before the owner's check began: build the early listing here and
                // leave the check to the owner.
                self.inner.ensure_loaded();
                let mut headers = lock(&self.inner.headers);
                if !headers.is_verified() && headers.has_rows() {
                    let list = headers.refresh_unchecked(self.root())?;
                    *provisional = Some(Arc::clone(&list));
                    return Ok(list);
                }
            }
        }
        self.list_sessions()
    }

    fn read_title(&self, id: &str) -> Result<Option<String>, QueryError> {
        let (loc, digest) = self.read_digest(id)?;
        if let Some(e) = digest.damage_error(&loc.path) {
            return Err(e);
        }
        Ok(digest.title.as_deref().map(str::to_owned))
    }

    /// The listing's title: a log damaged after its title is listed with that title.
    fn read_title_recent(
        &self,
        id: &str,
        max_age: Duration,
    ) -> Result<Option<Arc<str>>, QueryError> {
        self.inner.ensure_loaded();
        // As in a listing: a title the listing's own check of its log vouches for needs no
        // stat (a popup building its view title by title costs no syscall per session).
        self.inner
            .recent_titles
            .get_shared(id, max_age, |id| self.listed_title(id, max_age))
    }

    /// The listing's titles (as [`read_title_recent`](Self::read_title_recent)).
    fn with_recent_titles(&self, max_age: Duration, f: &mut dyn FnMut(&mut TitleLookup<'_>)) {
        self.inner.ensure_loaded();
        // A title the listing's own check of its log vouches for needs no stat. The memo
        // then remembers it as of this lookup, so it may be up to twice `max_age` old.
        let read = |id: &str| self.listed_title(id, max_age);
        self.inner
            .recent_titles
            .with_shared_lookup(max_age, &read, f);
    }

    fn read_summary(&self, id: &str) -> Result<SessionSummary, QueryError> {
        let (loc, digest) = self.read_digest(id)?;
        let mut summary = SessionSummary::of_log(digest.title.clone(), &digest.activity);
        summary.damage = digest.damage_error(&loc.path).map(|e| e.to_string().into());
        summary.first_prompt.clone_from(&digest.first_prompt);
        Ok(summary)
    }

    fn read_summary_recent(
        &self,
        id: &str,
        max_age: Duration,
    ) -> Result<SessionSummary, QueryError> {
        self.inner.ensure_loaded();
        self.inner.recent_summaries.get(id, max_age, |id| {
            match self.summary_from_last_check(id, max_age) {
                Some(summary) => Ok(summary),
                None => self.read_summary(id),
            }
        })
    }

    fn with_recent_summaries(&self, max_age: Duration, f: &mut dyn FnMut(&mut SummaryLookup<'_>)) {
        self.inner.ensure_loaded();
        let read = |id: &str| match self.summary_from_last_check(id, max_age) {
            Some(summary) => Ok(summary),
            None => self.read_summary(id),
        };
        self.inner.recent_summaries.with_lookup(max_age, &read, f);
    }

    fn log_stamp(&self, id: &str) -> Result<Option<Stamp>, QueryError> {
        let (_, meta) = self.find(id)?;
        Ok(Some(Stamp::of(&meta)))
    }

    fn read_surface(&self, id: &str) -> Result<Surface, QueryError> {
        let (loc, _) = self.find(id)?;
        let mut folder = KeepingFolder::default();
        let limits = self.inner.limits;
        let summary =
            reader::scan_log_limited(&loc.path, loc.format, &limits, &mut |event, line| {
                if fold_at(&mut folder, &loc.path, &event, line)? {
                    folder.keep(event.seq, event);
                }
                Ok(())
            })?;
        reader::check_header_id(&loc.path, &summary.header, id)?;
        let (surface, mut kept) = folder.finish();
        let events = surface.iter().filter_map(|seq| kept.remove(seq)).collect();
        Ok(Surface {
            session: summary.header,
            captured_through_seq: summary.next_seq.checked_sub(1),
            events,
        })
    }

    fn scan_surface(
        &self,
        id: &str,
        visitor: &mut dyn SurfaceVisitor,
    ) -> Result<SurfaceScan, QueryError> {
        let (loc, _) = self.find(id)?;
        let file = reader::open_file(&loc.path)?;
        let reading = file.try_clone().map_err(|e| io_err(&loc.path, e))?;
        let src = reader::open_stream(&loc.path, reading, loc.format)?;
        let mut surface = CompactSurface::new();
        let mut removed = Vec::new();
        let limits = self.inner.limits;
        // Kept lines spare a compressed log its second decompression; a plain log's kept
        // lines are cheaper to read again by offset than to copy while scanning.
        let lines = loc.format == LogFormat::Zstd;
        let summary = reader::scan_at_limited(&loc.path, src, &limits, &mut |event, pos| {
            surface_scan::fold_and_visit(
                &loc.path,
                &mut surface,
                &mut removed,
                (&event, pos),
                visitor,
                lines,
            )
        })?;
        reader::check_header_id(&loc.path, &summary.header, id)?;
        let end = ScanPos {
            readable_len: summary.readable_len,
            next_seq: summary.next_seq,
            line: summary.lines,
        };
        Ok(SurfaceScan::from_log(
            summary.header,
            surface,
            (loc.path, loc.format, file),
            limits,
            end,
        ))
    }
}
