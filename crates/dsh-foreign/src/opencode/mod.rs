//! OpenCode sessions (docs/foreign-sources.md, OpenCode) under its data dir
//! (`$XDG_DATA_HOME/opencode`, else `~/.local/share/opencode`): the database `opencode.db`
//! (1.2 and later, read through a copy: [`snapshot`]) and the JSON storage before it
//! ([`files`]). A session in both (the database was migrated from the files) is read from
//! the database. Sub-agent sessions (those with a parent) are not listed.

pub mod db;
pub mod db_v2;
pub mod files;
pub mod items;
pub mod snapshot;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, UNIX_EPOCH};

use dsh_store::listing::{Stamp, newest_first};
use dsh_store::query::TitleLookup;
use dsh_store::{
    Event, QueryError, RecentTitles, SessionHeader, SessionQuery, Surface, SurfaceScan,
    SurfaceVisitor,
};

use self::items::{MessageInfo, PartInfo, Step, Stepper, is_placeholder_title, item_text};
use self::snapshot::{CopyDir, DB_FILE, Snapshot, SnapshotError};
use crate::item_surface::{ItemSource, SurfaceBuilder, changed};
use crate::log_meta::title_text;
use crate::origin::Origin;
use crate::source::SourceConfig;
use crate::source_index::FileStamp;
use crate::surface_events::{ItemKind, item_event};
use crate::surface_read::Nothing;

/// Where a listed session is kept.
#[derive(Debug, Clone)]
enum Place {
    Db,
    File(PathBuf),
}

#[derive(Debug, Default)]
struct State {
    copies: Option<CopyDir>,
    snapshot: Option<Arc<Snapshot>>,
    /// Per session of the current snapshot: what changes with its conversation.
    fingerprints: Option<Arc<HashMap<String, (u64, i64)>>>,
    db_sessions: HashMap<String, db::SessionRow>,
    /// Session files of the JSON storage, parsed (`None`: unreadable).
    files: BTreeMap<PathBuf, (FileStamp, Option<files::SessionFile>)>,
    by_id: HashMap<String, Place>,
    last: Option<Arc<Vec<SessionHeader>>>,
    warnings: Vec<String>,
}

/// OpenCode's sessions as a read-only source.
#[derive(Debug)]
pub struct OpenCodeSource {
    config: SourceConfig,
    recent: RecentTitles,
    state: Mutex<State>,
    /// A source for an origin that keeps no sessions this way: lists nothing.
    empty: bool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn db_err(path: &Path, e: &rusqlite::Error) -> QueryError {
    QueryError::Corrupt {
        path: path.to_owned(),
        line: 0,
        reason: format!("OpenCode database: {e}"),
    }
}

fn snapshot_err(e: SnapshotError) -> QueryError {
    e.into_query_error()
}

impl OpenCodeSource {
    pub fn new(config: SourceConfig) -> Self {
        OpenCodeSource {
            config,
            recent: RecentTitles::new(),
            state: Mutex::new(State::default()),
            empty: false,
        }
    }

    /// A source that lists nothing (an origin no backend reads).
    pub fn empty(config: SourceConfig) -> Self {
        OpenCodeSource {
            empty: true,
            ..OpenCodeSource::new(config)
        }
    }

    pub fn origin(&self) -> &Origin {
        &self.config.origin
    }

    pub fn root(&self) -> &Path {
        &self.config.root
    }

    fn db_path(&self) -> PathBuf {
        self.root().join(DB_FILE)
    }

    fn max(&self) -> u64 {
        self.config.max_line_bytes
    }

    /// Where a listed session is kept: the database (`<db>#<id>`) or its session file.
    pub fn path_of(&self, id: &str) -> Option<PathBuf> {
        let native = self.native(id)?;
        match lock(&self.state).by_id.get(id)? {
            Place::Db => {
                let mut p = self.db_path().into_os_string();
                p.push("#");
                p.push(native);
                Some(PathBuf::from(p))
            }
            Place::File(path) => Some(path.clone()),
        }
    }

    fn native<'i>(&self, id: &'i str) -> Option<&'i str> {
        match Origin::split_id(id) {
            Some((o, native)) if o == Origin::OpenCode && !self.empty => Some(native),
            _ => None,
        }
    }

    /// The current stamp of a place [`path_of`](Self::path_of) gave: for a database
    /// session, its messages' and parts' count and newest update; for a session file, its
    /// files' and directories' sizes and times. `None` when it is gone.
    pub fn stamp_at(&self, path: &Path) -> Option<Stamp> {
        let text = path.to_str()?;
        let db = self.db_path();
        let in_db = text
            .strip_prefix(db.to_str()?)
            .and_then(|rest| rest.strip_prefix('#'));
        let (count, newest) = if let Some(native) = in_db {
            let mut state = lock(&self.state);
            self.ensure_snapshot(&mut state).ok()?;
            if !state.db_sessions.contains_key(native) {
                return None;
            }
            let prints = Self::fingerprints(&mut state)?;
            prints.get(native).copied().unwrap_or((0, 0))
        } else {
            dsh_store::nofollow::check_below(self.root(), path).ok()?;
            let native = path.file_stem()?.to_str()?;
            let (count, micros) = files::fingerprint(self.root(), path, native)?;
            (count, micros / 1000)
        };
        let mtime = UNIX_EPOCH.checked_add(Duration::from_millis(u64::try_from(newest).ok()?));
        Some(Stamp {
            len: count,
            mtime,
            file_id: None,
            ctime: None,
        })
    }

    fn fingerprints(state: &mut State) -> Option<Arc<HashMap<String, (u64, i64)>>> {
        if let Some(f) = &state.fingerprints {
            return Some(Arc::clone(f));
        }
        let snapshot = state.snapshot.clone()?;
        let prints = db::fingerprints(&snapshot.conn()).ok()?;
        let prints = Arc::new(prints);
        state.fingerprints = Some(Arc::clone(&prints));
        Some(prints)
    }

    /// Take a new copy of the database if it changed since the last one; its sessions. A
    /// database too large to copy is left out (no copy answers for it); when a copy cannot
    /// be taken otherwise, the last one keeps answering.
    fn ensure_snapshot(&self, state: &mut State) -> Result<(), SnapshotError> {
        let db = self.db_path();
        if state.snapshot.as_ref().is_some_and(|s| s.is_current(&db)) {
            return Ok(());
        }
        if !std::fs::symlink_metadata(&db).is_ok_and(|m| m.is_file()) {
            state.snapshot = None;
            state.fingerprints = None;
            state.db_sessions.clear();
            return Ok(());
        }
        if state.copies.is_none() {
            let parent = self
                .config
                .index_file
                .as_ref()
                .and_then(|f| f.parent())
                .map(|p| p.join("opencode-copies"));
            let dir =
                CopyDir::new(parent.as_deref(), self.config.copy_limits).map_err(|source| {
                    SnapshotError::Io {
                        path: parent.unwrap_or_default(),
                        source,
                    }
                })?;
            state.copies = Some(dir);
        }
        let Some(copies) = state.copies.as_mut() else {
            return Ok(());
        };
        let snapshot = match copies.take(&db) {
            Ok(s) => s,
            Err(e @ SnapshotError::TooLarge { .. }) => {
                state.snapshot = None;
                state.fingerprints = None;
                state.db_sessions.clear();
                return Err(e);
            }
            Err(e) => return Err(e),
        };
        let sessions = match &snapshot {
            Some(s) => db::sessions(&s.conn()).map_err(|source| SnapshotError::Sqlite {
                path: db.clone(),
                source,
            })?,
            None => Vec::new(),
        };
        state.db_sessions = sessions.into_iter().map(|s| (s.id.clone(), s)).collect();
        state.snapshot = snapshot.map(Arc::new);
        state.fingerprints = None;
        Ok(())
    }

    fn refresh(&self) -> Arc<Vec<SessionHeader>> {
        let mut state = lock(&self.state);
        if self.empty {
            return Arc::new(Vec::new());
        }
        state.warnings.clear();
        if let Err(e) = self.ensure_snapshot(&mut state) {
            // The last good copy (if any) keeps answering.
            tracing::warn!(error = %e, "OpenCode database not read");
            state
                .warnings
                .push(format!("OpenCode database not read: {e}"));
        }
        let mut by_id: HashMap<String, Place> = HashMap::new();
        let mut headers = Vec::new();
        for row in state.db_sessions.values() {
            if row.id.is_empty() {
                continue;
            }
            let id = Origin::OpenCode.namespaced(&row.id);
            let cwd = row.directory.clone().filter(|d| !d.is_empty());
            headers.push(SessionHeader::new(&id, row.created, cwd));
            by_id.insert(id, Place::Db);
        }
        // The JSON storage, re-read where a file changed.
        let mut kept = BTreeMap::new();
        for path in files::session_files(self.root()) {
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            let stamp = FileStamp::of(&meta);
            let entry = match state.files.remove(&path) {
                Some(e) if e.0 == stamp => e,
                _ => {
                    let parsed = files::read_record::<files::SessionFile>(&path, self.max())
                        .map_err(|e| tracing::warn!(error = %e, "OpenCode session file skipped"))
                        .ok();
                    (stamp, parsed)
                }
            };
            kept.insert(path, entry);
        }
        state.files = kept;
        for (path, (_, file)) in &state.files {
            let Some(file) = file else { continue };
            let native = file
                .id
                .clone()
                .or_else(|| path.file_stem().and_then(|s| s.to_str()).map(str::to_owned));
            let (Some(native), Some(created)) = (native, file.created()) else {
                continue;
            };
            if file.is_child() || native.is_empty() || state.db_sessions.contains_key(&native) {
                continue;
            }
            let id = Origin::OpenCode.namespaced(&native);
            if by_id.contains_key(&id) {
                continue;
            }
            headers.push(SessionHeader::new(&id, created, file.directory()));
            by_id.insert(id, Place::File(path.clone()));
        }
        headers.sort_by(newest_first);
        state.by_id = by_id;
        if let Some(last) = &state.last
            && **last == headers
        {
            return Arc::clone(last);
        }
        let list = Arc::new(headers);
        state.last = Some(Arc::clone(&list));
        list
    }

    /// What the last listing could not read, one line each.
    pub fn listing_warnings(&self) -> Vec<String> {
        self.refresh();
        lock(&self.state).warnings.clone()
    }

    /// Where session `id` is, listing first if it is not known yet.
    fn place(&self, id: &str) -> Result<(String, Place), QueryError> {
        let not_found = || QueryError::NotFound { id: id.to_owned() };
        let native = self.native(id).ok_or_else(not_found)?.to_owned();
        if !lock(&self.state).by_id.contains_key(id) {
            self.refresh();
        }
        let place = lock(&self.state)
            .by_id
            .get(id)
            .cloned()
            .ok_or_else(not_found)?;
        Ok((native, place))
    }

    fn header(&self, id: &str, native: &str, place: &Place) -> Result<SessionHeader, QueryError> {
        let not_found = || QueryError::NotFound { id: id.to_owned() };
        let state = lock(&self.state);
        match place {
            Place::Db => {
                let row = state.db_sessions.get(native).ok_or_else(not_found)?;
                let cwd = row.directory.clone().filter(|d| !d.is_empty());
                Ok(SessionHeader::new(id, row.created, cwd))
            }
            Place::File(path) => {
                let file = state
                    .files
                    .get(path)
                    .and_then(|(_, f)| f.as_ref())
                    .ok_or_else(not_found)?;
                let created = file.created().ok_or_else(not_found)?;
                Ok(SessionHeader::new(id, created, file.directory()))
            }
        }
    }

    /// The session's own title (OpenCode names sessions itself), else its first request.
    fn title(&self, id: &str) -> Result<Option<String>, QueryError> {
        let (native, place) = self.place(id)?;
        let own = {
            let state = lock(&self.state);
            match &place {
                Place::Db => state.db_sessions.get(&native).and_then(|r| r.title.clone()),
                Place::File(path) => state
                    .files
                    .get(path)
                    .and_then(|(_, f)| f.as_ref())
                    .and_then(|f| f.title().map(str::to_owned)),
            }
        };
        if let Some(title) = own
            .filter(|t| !is_placeholder_title(t))
            .and_then(|t| title_text(&t))
        {
            return Ok(Some(title));
        }
        let first = self.first_request(&native, &place)?;
        Ok(first
            .and_then(|t| (self.config.clean_title)(&t))
            .and_then(|t| title_text(&t)))
    }

    fn first_request(&self, native: &str, place: &Place) -> Result<Option<String>, QueryError> {
        let mut stepper = Stepper::default();
        let mut found = None;
        match place {
            Place::Db => {
                let snapshot = lock(&self.state).snapshot.clone();
                let Some(snapshot) = snapshot else {
                    return Ok(None);
                };
                let conn = snapshot.conn();
                let db = self.db_path();
                let fail = |e| db_err(&db, &e);
                if db_v2::has_messages(&conn, native).map_err(fail)? {
                    db_v2::for_each_message(&conn, native, self.max(), &fail, &mut |_, m| {
                        if let Ok(db_v2::V2Message {
                            step: Step::Show(ItemKind::User, text),
                            ..
                        }) = m
                        {
                            found = Some(text);
                            return Ok(false);
                        }
                        Ok(true)
                    })?;
                    return Ok(found);
                }
                db::for_each_message(&conn, native, &fail, &mut |_, message| {
                    let Ok(parts) = db::parts(&conn, &message.id, self.max()).map_err(fail)? else {
                        return Ok(true);
                    };
                    if let Step::Show(ItemKind::User, text) = stepper.step(&message, &parts) {
                        found = Some(text);
                        return Ok(false);
                    }
                    Ok(true)
                })?;
            }
            Place::File(_) => {
                for (_, message) in files::messages(self.root(), native, self.max())? {
                    let parts = files::parts(self.root(), &message.id, self.max())?;
                    if let Step::Show(ItemKind::User, text) = stepper.step(&message, &parts) {
                        found = Some(text);
                        break;
                    }
                }
            }
        }
        Ok(found)
    }

    fn scan(&self, id: &str, visitor: &mut dyn SurfaceVisitor) -> Result<SurfaceScan, QueryError> {
        let (native, place) = self.place(id)?;
        if matches!(place, Place::Db) {
            // A reference reads the session as it is now; when there is no room for a new
            // copy, as of the last one.
            let mut state = lock(&self.state);
            match self.ensure_snapshot(&mut state) {
                Ok(()) => {}
                Err(SnapshotError::NoRoom { .. }) if state.snapshot.is_some() => {}
                Err(e) => return Err(snapshot_err(e)),
            }
        }
        let header = self.header(id, &native, &place)?;
        match place {
            Place::Db => {
                let snapshot = lock(&self.state)
                    .snapshot
                    .clone()
                    .ok_or_else(|| QueryError::NotFound { id: id.to_owned() })?;
                scan_db(
                    snapshot,
                    &self.db_path(),
                    &native,
                    header,
                    self.max(),
                    visitor,
                )
            }
            Place::File(_) => scan_files(self.root(), &native, header, self.max(), visitor),
        }
    }
}

/// The surface rules applied to messages in order, shown to `builder`.
struct Fold<'v, A> {
    builder: SurfaceBuilder<'v, A>,
    stepper: Stepper,
    /// The messages in order: hash of the id, and the item shown for it.
    history: Vec<(u64, Option<u64>)>,
}

fn id_hash(id: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in id.bytes() {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

impl<'v, A: Copy> Fold<'v, A> {
    fn new(visitor: &'v mut dyn SurfaceVisitor) -> Self {
        Fold {
            builder: SurfaceBuilder::new(visitor),
            stepper: Stepper::default(),
            history: Vec::new(),
        }
    }

    /// Apply one message; `at(kind)` says where its item is.
    fn message(
        &mut self,
        message: &MessageInfo,
        parts: &[items::PartInfo],
        at: impl Fn(ItemKind) -> A,
    ) {
        let step = self.stepper.step(message, parts);
        self.apply(&message.id, message.time, step, at);
    }

    /// Apply what message `id` (at `time`) does to the surface.
    fn apply(&mut self, id: &str, time: i64, step: Step, at: impl Fn(ItemKind) -> A) {
        let hash = id_hash(id);
        let shown = match step {
            Step::Nothing => None,
            Step::Show(kind, text) => Some((kind, text)),
            Step::Compact { keep_from, text } => {
                let from =
                    keep_from.and_then(|k| self.history.iter().position(|h| h.0 == id_hash(&k)));
                let before = from.unwrap_or(self.history.len());
                let gone: Vec<u64> = self
                    .history
                    .get(..before)
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|h| h.1)
                    .collect();
                self.builder.remove(&gone);
                for h in self.history.iter_mut().take(before) {
                    h.1 = None;
                }
                Some((ItemKind::Checkpoint, text))
            }
        };
        let seq = shown.map(|(kind, text)| {
            let event = item_event(kind, self.builder.next_seq(), time, id.to_owned(), text);
            self.builder.push(&event, at(kind));
            event.seq
        });
        self.history.push((hash, seq));
    }
}

/// Where a database item is: its message's rowid in the copy, its kind, and whether the
/// row is a 2.x `session_message`.
#[derive(Debug, Clone, Copy)]
struct DbItem(i64, ItemKind, bool);

fn too_long(db: &Path, message: &str, t: &db::TooLong) -> QueryError {
    QueryError::Corrupt {
        path: db.to_owned(),
        line: 0,
        reason: format!(
            "message {message}: part {} text of {} bytes is longer than the line limit",
            t.part, t.len
        ),
    }
}

fn scan_db(
    snapshot: Arc<Snapshot>,
    db: &Path,
    native: &str,
    header: SessionHeader,
    max: u64,
    visitor: &mut dyn SurfaceVisitor,
) -> Result<SurfaceScan, QueryError> {
    let mut fold: Fold<'_, DbItem> = Fold::new(visitor);
    {
        let conn = snapshot.conn();
        let fail = |e| db_err(db, &e);
        if db_v2::has_messages(&conn, native).map_err(fail)? {
            db_v2::for_each_message(&conn, native, max, &fail, &mut |rowid, message| {
                let message = message.map_err(|t| too_long(db, &t.part, &t))?;
                fold.apply(&message.id, message.time, message.step, |kind| {
                    DbItem(rowid, kind, true)
                });
                Ok(true)
            })?;
        } else {
            db::for_each_message(&conn, native, &fail, &mut |rowid, message| {
                let parts = db::parts(&conn, &message.id, max)
                    .map_err(fail)?
                    .map_err(|t| too_long(db, &message.id, &t))?;
                fold.message(&message, &parts, |kind| DbItem(rowid, kind, false));
                Ok(true)
            })?;
        }
    }
    Ok(fold.builder.finish(
        header,
        db.to_owned(),
        DbItems {
            snapshot,
            db: db.to_owned(),
            max,
        },
    ))
}

/// Reads database items again from the copy the scan used.
#[derive(Debug)]
struct DbItems {
    snapshot: Arc<Snapshot>,
    db: PathBuf,
    max: u64,
}

impl DbItems {
    fn read_one(
        &self,
        conn: &rusqlite::Connection,
        seq: u64,
        at: DbItem,
    ) -> Result<Event, QueryError> {
        let DbItem(rowid, kind, v2) = at;
        let gone = || changed(&self.db, &format!("item {seq} is gone"));
        if v2 {
            let message = db_v2::message(conn, rowid, self.max)
                .map_err(|e| db_err(&self.db, &e))?
                .ok_or_else(gone)?
                .map_err(|t| too_long(&self.db, &t.part, &t))?;
            let text = match message.step {
                Step::Show(k, text) if k == kind => text,
                Step::Compact { text, .. } if kind == ItemKind::Checkpoint => text,
                _ => return Err(gone()),
            };
            return Ok(item_event(kind, seq, message.time, message.id, text));
        }
        let message = db::message(conn, rowid)
            .map_err(|e| db_err(&self.db, &e))?
            .ok_or_else(gone)?;
        let parts = db::parts(conn, &message.id, self.max)
            .map_err(|e| db_err(&self.db, &e))?
            .map_err(|t| too_long(&self.db, &message.id, &t))?;
        Ok(message_event(kind, seq, &message, &parts))
    }
}

/// The item `kind` of a 1.x message (database or files) read again: its parts' text.
fn message_event(kind: ItemKind, seq: u64, message: &MessageInfo, parts: &[PartInfo]) -> Event {
    let text = item_text(kind, parts);
    item_event(kind, seq, message.time, message.id.clone(), text)
}

impl ItemSource for DbItems {
    type At = DbItem;

    fn read(&mut self, wanted: &[(u64, DbItem)]) -> Result<Vec<Event>, QueryError> {
        let conn = self.snapshot.conn();
        wanted
            .iter()
            .map(|&(seq, at)| self.read_one(&conn, seq, at))
            .collect()
    }
}

/// Where a file item is: its message's place in the scan's list, and its kind.
#[derive(Debug, Clone, Copy)]
struct FileItem(usize, ItemKind);

fn scan_files(
    root: &Path,
    native: &str,
    header: SessionHeader,
    max: u64,
    visitor: &mut dyn SurfaceVisitor,
) -> Result<SurfaceScan, QueryError> {
    let messages = files::messages(root, native, max)?;
    let mut fold: Fold<'_, FileItem> = Fold::new(visitor);
    for (i, (_, message)) in messages.iter().enumerate() {
        let parts = files::parts(root, &message.id, max)?;
        fold.message(message, &parts, |kind| FileItem(i, kind));
    }
    let paths = messages.into_iter().map(|(p, _)| p).collect();
    Ok(fold.builder.finish(
        header,
        root.join("storage/message").join(native),
        FileItems {
            root: root.to_owned(),
            messages: paths,
            max,
        },
    ))
}

/// Reads file items again.
#[derive(Debug)]
struct FileItems {
    root: PathBuf,
    messages: Vec<PathBuf>,
    max: u64,
}

impl ItemSource for FileItems {
    type At = FileItem;

    fn read(&mut self, wanted: &[(u64, FileItem)]) -> Result<Vec<Event>, QueryError> {
        wanted
            .iter()
            .map(|&(seq, FileItem(index, kind))| {
                let path = self
                    .messages
                    .get(index)
                    .ok_or_else(|| changed(&self.root, &format!("item {seq} is gone")))?;
                let message = files::read_message(path, self.max)?;
                let parts = files::parts(&self.root, &message.id, self.max)?;
                Ok(message_event(kind, seq, &message, &parts))
            })
            .collect()
    }
}

impl SessionQuery for OpenCodeSource {
    fn list_sessions(&self) -> Result<Arc<Vec<SessionHeader>>, QueryError> {
        Ok(self.refresh())
    }

    fn read_title(&self, id: &str) -> Result<Option<String>, QueryError> {
        self.title(id)
    }

    fn read_title_recent(
        &self,
        id: &str,
        max_age: Duration,
    ) -> Result<Option<Arc<str>>, QueryError> {
        self.recent.get(id, max_age, |id| self.read_title(id))
    }

    fn with_recent_titles(&self, max_age: Duration, f: &mut dyn FnMut(&mut TitleLookup<'_>)) {
        self.recent
            .with_lookup(max_age, &|id| self.read_title(id), f);
    }

    fn log_stamp(&self, id: &str) -> Result<Option<Stamp>, QueryError> {
        self.place(id)?;
        let path = self
            .path_of(id)
            .ok_or_else(|| QueryError::NotFound { id: id.to_owned() })?;
        Ok(self.stamp_at(&path))
    }

    fn read_surface(&self, id: &str) -> Result<Surface, QueryError> {
        let mut scan = self.scan(id, &mut Nothing)?;
        let seqs = scan.surface_seqs();
        let events = scan.reread(&seqs)?;
        Ok(Surface {
            session: scan.session,
            captured_through_seq: scan.captured_through_seq,
            events,
        })
    }

    fn scan_surface(
        &self,
        id: &str,
        visitor: &mut dyn SurfaceVisitor,
    ) -> Result<SurfaceScan, QueryError> {
        self.scan(id, visitor)
    }
}
