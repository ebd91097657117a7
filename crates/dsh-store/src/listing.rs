//! The cached index of session headers behind `list_sessions` (docs/session-store.md: session query).
//!
//! Revalidation is by file metadata at every level: the root's and each project directory's
//! mtime say whether their entries changed, and every log is stat-ed (one `lstat` each) and
//! read again (first line only) when its stamp changed — inline on the first listing, later
//! in steps on a background sweep ([`HeaderIndex::sweep_step`]). A directory whose mtime is
//! too recent to be trusted (a change in the same clock tick would not show) is simply
//! re-read next time, so a warm call on an unchanged store costs one `stat` per project
//! directory.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs;
use std::hash::BuildHasher;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use hashbrown::HashTable;

use super::event::SessionHeader;
use super::id_order::compare_ids;
use super::index_file::{FileTime, IndexWriter, ProjectRecord, SessionRef, file_of, plain_name};
use super::log_digest::LogDigest;
use super::nofollow;
use super::paths::{self, LOG_FILE, ZSTD_LOG_FILE};
use super::query_error::QueryError;
use super::reader::{self, LogFormat};
pub use super::stamp::Stamp;

/// How old an mtime must be before an unchanged value proves an unchanged directory.
const TRUST_AFTER: Duration = Duration::from_secs(2);
/// How long a round of log stats vouches for unchanged logs (so a listing per keystroke
/// does not stat every log; a log rewritten in place shows within this time).
const LOGS_CHECKED_FOR: Duration = Duration::from_secs(1);

/// Where a session's log lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLocation {
    pub path: PathBuf,
    pub format: LogFormat,
}

/// The order of `list_sessions`: newest `createdAt` first, ties by id as dsh orders them. Other sources merged
/// into one listing (another tool's sessions) use it too, so ties sort the same everywhere.
pub fn newest_first(a: &SessionHeader, b: &SessionHeader) -> std::cmp::Ordering {
    b.created_at
        .cmp(&a.created_at)
        .then_with(|| compare_ids(&a.id, &b.id))
}

/// `SessionStore::locate` under `root`.
pub(crate) fn locate_in(root: &Path, id: &str) -> Result<Option<LogLocation>, QueryError> {
    let encoded = paths::encode_session_id(id)?;
    let projects = match sorted_subdirs(root) {
        Ok(p) => p,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(QueryError::Io {
                path: root.to_owned(),
                source,
            });
        }
    };
    let mut found: Option<LogLocation> = None;
    for project in projects {
        let dir = project.join(&encoded);
        let here = log_in(&dir).map_err(|warning| QueryError::Io {
            path: dir.clone(),
            source: io::Error::new(io::ErrorKind::InvalidInput, warning),
        })?;
        let Some((loc, _)) = here else {
            continue;
        };
        if let Some(first) = found {
            return Err(QueryError::Duplicate {
                id: id.to_owned(),
                first: first.path,
                second: loc.path,
            });
        }
        found = Some(loc);
    }
    Ok(found)
}

/// The log of one session directory: the plain file if present, else the `.zstd` one.
/// Nothing is followed: a session directory or log that is a symbolic link, or a log that
/// is a FIFO, device or socket, is `Err` with the warning to show (not a session).
pub fn log_in(dir: &Path) -> Result<Option<(LogLocation, fs::Metadata)>, String> {
    match fs::symlink_metadata(dir) {
        Ok(meta) if meta.is_dir() => {}
        Ok(meta) => {
            return Err(format!(
                "{} is {}, not a session directory; skipped",
                dir.display(),
                nofollow::describe(&meta)
            ));
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}; skipped", dir.display())),
    }
    log_in_listed(dir)
}

/// [`log_in`] for a directory its project's listing just showed to be a directory (not a
/// link): one `lstat` of the log instead of two.
fn log_in_listed(dir: &Path) -> Result<Option<(LogLocation, fs::Metadata)>, String> {
    for (name, format) in [
        (LOG_FILE, LogFormat::Plain),
        (ZSTD_LOG_FILE, LogFormat::Zstd),
    ] {
        let path = dir.join(name);
        match fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_file() => return Ok(Some((LogLocation { path, format }, meta))),
            Ok(meta) => {
                return Err(format!(
                    "{} is {}, not a session log; skipped",
                    path.display(),
                    nofollow::describe(&meta)
                ));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            // The directory itself is gone or no longer one: not a session (any more).
            Err(e) if e.kind() == io::ErrorKind::NotADirectory => return Ok(None),
            Err(e) => return Err(format!("{}: {e}; skipped", path.display())),
        }
    }
    Ok(None)
}

/// The entries of one directory: the names of its subdirectories, sorted, and its entries
/// that are links or special files as warnings (never followed). One pass, no `stat` per
/// entry where the file system reports entry types.
fn list_names(dir: &Path) -> io::Result<(Vec<Box<OsStr>>, Vec<String>)> {
    let mut subdirs: Vec<Box<OsStr>> = Vec::new();
    let mut odd = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            subdirs.push(entry.file_name().into_boxed_os_str());
        } else if !kind.is_file()
            && let Ok(meta) = fs::symlink_metadata(entry.path())
        {
            odd.push(format!(
                "{} is {}, not a directory of the store; skipped",
                entry.path().display(),
                nofollow::describe(&meta)
            ));
        }
    }
    subdirs.sort();
    odd.sort();
    Ok((subdirs, odd))
}

/// Subdirectories of `dir`, sorted by name (entries that are links are not directories).
pub fn sorted_subdirs(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            out.push(entry.path());
        }
    }
    out.sort();
    Ok(out)
}

/// A directory mtime that can vouch for an unchanged directory next time.
fn trusted_mtime(meta: &fs::Metadata) -> Option<SystemTime> {
    let mtime = meta.modified().ok()?;
    let age = SystemTime::now().duration_since(mtime).ok()?;
    (age >= TRUST_AFTER).then_some(mtime)
}

/// The digest of one log (latest title, activity, where the read stopped) as of `stamp`,
/// so a grown append-only log is only read from there.
#[derive(Debug, Clone)]
pub struct CachedDigest {
    pub stamp: Stamp,
    pub format: LogFormat,
    pub digest: LogDigest,
}

/// Digests of logs the table does not hold (a session written after the last listing) are
/// remembered up to this many; then that memo starts over.
const LOOSE_DIGESTS: usize = 1024;

/// Where a row's header is: nowhere, at a position of the current listing (kept once,
/// there), at a position of the headers read (from the index file or a log) since the last
/// listing, which the next one takes, or held by the row itself (an id listed under
/// another project first).
#[derive(Debug, Default)]
enum Slot {
    #[default]
    None,
    Listed(u32),
    Pending(u32),
    Own(Box<SessionHeader>),
}

/// The two places a [`Slot`] can point into.
#[derive(Clone, Copy)]
struct Held<'a> {
    listed: &'a [SessionHeader],
    pending: &'a [SessionHeader],
}

impl Slot {
    fn get<'a>(&'a self, held: Held<'a>) -> Option<&'a SessionHeader> {
        match self {
            Slot::None => None,
            Slot::Listed(at) => held.listed.get(*at as usize),
            Slot::Pending(at) => held.pending.get(*at as usize),
            Slot::Own(h) => Some(h),
        }
    }
}

/// A header holding nothing, left where a pending one was taken from.
fn taken_header() -> SessionHeader {
    SessionHeader {
        kind: String::new(),
        version: 0,
        id: String::new(),
        created_at: 0,
        cwd: None,
        branch: None,
        delegation_depth: 0,
        extra: serde_json::Map::new(),
    }
}

/// One session directory: its name (the encoded id), its log's format and stamp as of the
/// last check, its header and its digest cache. The path is rebuilt from the project's.
#[derive(Debug)]
struct Row {
    name: Box<OsStr>,
    log: Option<(LogFormat, Stamp)>,
    header: Slot,
    /// Why this directory is not listed (unreadable, a link, a bad header), as a warning.
    skipped: Option<Box<str>>,
    digest: Option<CachedDigest>,
}

impl Row {
    fn new(name: Box<OsStr>) -> Self {
        Row {
            name,
            log: None,
            header: Slot::None,
            skipped: None,
            digest: None,
        }
    }
}

#[derive(Debug)]
struct Project {
    name: Box<OsStr>,
    dir: PathBuf,
    mtime: Option<SystemTime>,
    /// Its session directories, sorted by name.
    rows: Vec<Row>,
    /// Why this project directory could not be read, as a warning.
    skipped: Option<String>,
    /// Links among its entries, as warnings.
    odd: Vec<String>,
    /// When every log of this project was last stat-ed (the check began).
    logs_checked: Option<Instant>,
}

impl Project {
    fn new(name: Box<OsStr>, dir: PathBuf) -> Self {
        Project {
            name,
            dir,
            mtime: None,
            rows: Vec::new(),
            skipped: None,
            odd: Vec::new(),
            logs_checked: None,
        }
    }

    fn row(&self, name: &OsStr) -> Option<usize> {
        self.rows.binary_search_by(|r| (*r.name).cmp(name)).ok()
    }
}

/// The header index: one flat table of session rows per project; one per store, behind a
/// mutex. Each session's header is held once (in the listing it answers), its path is
/// rebuilt from its project's directory and its name.
#[derive(Debug, Default)]
pub struct HeaderIndex {
    root_mtime: Option<SystemTime>,
    /// Project directories, sorted by name.
    projects: Vec<Project>,
    last: Option<Arc<Vec<SessionHeader>>>,
    /// Headers read (from the index file, or from logs) since the last listing, which
    /// moves them into `last`: one block, so nothing is left scattered once they are moved.
    pending: Vec<SessionHeader>,
    /// For each position of `last`: its project and row.
    rows_of: Vec<(u32, u32)>,
    /// Positions in `last`, found by id.
    by_id: HashTable<u32>,
    hasher: foldhash::fast::RandomState,
    /// Ids with logs under two projects: the first two paths found (reads refuse them).
    duplicates: HashMap<String, (PathBuf, PathBuf)>,
    /// Digests of logs that are not rows of the table.
    loose_digests: HashMap<PathBuf, CachedDigest>,
    /// Links at the root level, as warnings.
    odd: Vec<String>,
    /// Something was read from disk since the last [`take_touched`](Self::take_touched).
    touched: bool,
    /// When every log was last stat-ed.
    logs_checked: Option<Instant>,
    /// A stat of every log running in steps on another thread.
    sweep: Option<Sweep>,
    /// A sweep was started and needs a thread.
    sweep_wanted: bool,
    /// A sweep found a change the listing does not show yet.
    stale: bool,
    /// Time the last sweep spent stat-ing (the sum of its steps).
    sweep_cost: Duration,
}

/// How much a refresh checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    /// Every log (once a second), inline.
    Full,
    /// Every log inline only until there is a checked listing; later on the sweep.
    Deferring,
    /// Directories only: rows already known keep their stamps unchecked.
    Unchecked,
}

/// Progress of a background stat of every log ([`HeaderIndex::sweep_step`]).
#[derive(Debug)]
struct Sweep {
    started: Instant,
    /// The last session directory checked (project and row names); the next step starts
    /// after it.
    after: Option<(Box<OsStr>, Box<OsStr>)>,
    changed: bool,
    read: bool,
    /// Time spent in its steps so far.
    cost: Duration,
}

impl Sweep {
    /// A sweep starting now, at the first log.
    fn new() -> Self {
        Sweep {
            started: Instant::now(),
            after: None,
            changed: false,
            read: false,
            cost: Duration::ZERO,
        }
    }
}

impl HeaderIndex {
    /// Whether anything was read from disk since the last call (the persisted copy is
    /// then worth rewriting); resets the flag.
    pub fn take_touched(&mut self) -> bool {
        std::mem::take(&mut self.touched)
    }

    fn held(&self) -> Held<'_> {
        Held {
            listed: self.last.as_deref().map_or(&[], Vec::as_slice),
            pending: &self.pending,
        }
    }

    /// Write the table through `w` (the index file's body): headers, and the digests of the
    /// logs still listed. A project holding a name that cannot be stored is stored without
    /// its mtime, so the next process lists it again.
    pub fn write_records<W: io::Write>(&self, w: &mut IndexWriter<W>) -> io::Result<()> {
        let held = self.held();
        let root_complete = self.projects.iter().all(|p| p.name.to_str().is_some());
        w.root(
            self.root_mtime
                .filter(|_| root_complete)
                .and_then(FileTime::from_system),
        )?;
        for project in &self.projects {
            let Some(name) = project.name.to_str() else {
                continue;
            };
            let complete = project.rows.iter().all(|r| r.name.to_str().is_some());
            w.project(
                name,
                project
                    .mtime
                    .filter(|_| complete)
                    .and_then(FileTime::from_system),
            )?;
            for row in &project.rows {
                let Some(name) = row.name.to_str() else {
                    continue;
                };
                let digest = row
                    .digest
                    .as_ref()
                    .filter(|d| row.log.is_some_and(|(f, _)| f == d.format))
                    .map(|d| (&d.stamp, &d.digest));
                w.session(&SessionRef {
                    name,
                    log: row.log.as_ref().map(|(f, s)| (*f, s)),
                    header: row.header.get(held),
                    digest,
                })?;
            }
            w.end_project()?;
        }
        Ok(())
    }

    /// An index seeded from stored records under `root` (see [`add_record`](Self::add_record)).
    pub fn from_records(root: &Path, records: Vec<ProjectRecord>) -> Self {
        let mut index = HeaderIndex::default();
        for record in records {
            index.add_record(root, record);
        }
        index
    }

    /// Seed one project from its stored record under `root`; everything is revalidated by
    /// the next [`refresh`](Self::refresh). Directory times from a file are never trusted
    /// (every project is listed again, every log stat-ed); only headers whose log stamp
    /// still matches are reused, and digests while their log's stamp matches exactly, or
    /// continued from where they stopped when the log only grew (the bytes before that
    /// point checked, [`crate::log_digest`]). Records with unsafe names or a header of
    /// another id are dropped, and so is a project seeded before.
    pub fn add_record(&mut self, root: &Path, record: ProjectRecord) {
        if !plain_name(&record.name) {
            return;
        }
        let name: Box<OsStr> = OsStr::new(&record.name).into();
        let Err(at) = self.projects.binary_search_by(|p| p.name.cmp(&name)) else {
            return;
        };
        let mut project = Project::new(name, root.join(&record.name));
        let mut rows = Vec::with_capacity(record.sessions.len());
        for session in record.sessions {
            if !plain_name(&session.name) {
                continue;
            }
            // A stored header must belong to its directories (its id to the session's,
            // its cwd to the project's), or it is dropped.
            let header = session.header.filter(|h| {
                session.log.is_some()
                    && paths::encode_session_id(&h.id).is_ok_and(|enc| enc == session.name)
                    && paths::project_dir_name(h.cwd.as_deref()) == record.name
            });
            // Without a usable header the log is read again.
            let log = session.log.filter(|_| header.is_some());
            let digest = match (session.digest, &log) {
                (Some(d), Some((format, _))) => Some(CachedDigest {
                    stamp: d.stamp,
                    format: *format,
                    digest: d.digest,
                }),
                _ => None,
            };
            let mut row = Row::new(OsStr::new(&session.name).into());
            row.log = log;
            row.header = match header {
                Some(h) => {
                    self.pending.push(h);
                    Slot::Pending(to_u32(self.pending.len() - 1))
                }
                None => Slot::None,
            };
            row.digest = digest;
            rows.push(row);
        }
        rows.sort_by(|a, b| a.name.cmp(&b.name));
        rows.dedup_by(|a, b| a.name == b.name);
        project.rows = rows;
        self.projects.insert(at, project);
    }

    /// The project and row of a log path of this table.
    fn row_of_path(&self, path: &Path) -> Option<(usize, usize)> {
        let session_dir = path.parent()?;
        let project_dir = session_dir.parent()?;
        let project_name = project_dir.file_name()?;
        let p = self
            .projects
            .binary_search_by(|p| (*p.name).cmp(project_name))
            .ok()?;
        let project = &self.projects[p];
        if project.dir != project_dir {
            return None;
        }
        Some((p, project.row(session_dir.file_name()?)?))
    }

    /// The position in the listing of a listed session.
    fn position_of(&self, id: &str) -> Option<usize> {
        let listed = self.held().listed;
        let hash = self.hasher.hash_one(id);
        self.by_id
            .find(hash, |at| {
                listed.get(*at as usize).is_some_and(|h| h.id == id)
            })
            .map(|at| *at as usize)
    }

    fn location_at(&self, p: usize, r: usize) -> Option<(LogLocation, Stamp)> {
        let project = self.projects.get(p)?;
        let row = project.rows.get(r)?;
        let (format, stamp) = row.log?;
        let path = project.dir.join(&*row.name).join(file_of(format));
        Some((LogLocation { path, format }, stamp))
    }

    fn listed_row(&self, id: &str) -> Option<(usize, usize)> {
        let at = self.position_of(id)?;
        let (p, r) = *self.rows_of.get(at)?;
        Some((p as usize, r as usize))
    }

    /// The log of a listed session, as of the last refresh.
    pub fn location_of(&self, id: &str) -> Option<LogLocation> {
        let (p, r) = self.listed_row(id)?;
        self.location_at(p, r).map(|(loc, _)| loc)
    }

    /// The digest of a listed session whose log the listing stat-ed less than `max_age` ago
    /// (per project: a check of 100 000 logs can take longer than `max_age` as a whole), if
    /// the digest cache holds it for that very stamp: no syscall. `f` sees it in place.
    pub fn vouched_digest<T>(
        &self,
        id: &str,
        max_age: Duration,
        f: impl FnOnce(&LogDigest) -> T,
    ) -> Option<T> {
        if self.duplicates.contains_key(id) {
            return None;
        }
        let (p, r) = self.listed_row(id)?;
        let project = &self.projects[p];
        project.logs_checked.filter(|t| t.elapsed() < max_age)?;
        let row = &project.rows[r];
        let (format, stamp) = row.log?;
        let cached = row.digest.as_ref()?;
        (cached.stamp == stamp && cached.format == format).then(|| f(&cached.digest))
    }

    /// The digest cached for the log at `loc`, if any (whatever its stamp).
    pub fn cached_digest(&self, loc: &LogLocation) -> Option<CachedDigest> {
        let cached = match self.row_of_path(&loc.path) {
            Some((p, r)) => self.projects[p].rows[r].digest.as_ref(),
            None => self.loose_digests.get(&loc.path),
        };
        cached.filter(|c| c.format == loc.format).cloned()
    }

    /// Remember the digest of the log at `loc`.
    pub fn remember_digest(&mut self, loc: &LogLocation, digest: CachedDigest) {
        if let Some((p, r)) = self.row_of_path(&loc.path) {
            self.projects[p].rows[r].digest = Some(digest);
            return;
        }
        if self.loose_digests.len() >= LOOSE_DIGESTS {
            self.loose_digests.clear();
        }
        self.loose_digests.insert(loc.path.clone(), digest);
    }

    /// The two logs of an id found under two projects by the last refresh.
    pub fn duplicate_of(&self, id: &str) -> Option<&(PathBuf, PathBuf)> {
        self.duplicates.get(id)
    }

    /// Everything the last refresh left out and why (unreadable or skipped directories,
    /// links, special files, bad headers, duplicate ids), one warning each, in path order.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = self.odd.clone();
        for project in &self.projects {
            out.extend(project.skipped.iter().cloned());
            out.extend(project.odd.iter().cloned());
            for row in &project.rows {
                out.extend(row.skipped.iter().map(ToString::to_string));
            }
        }
        let mut dups: Vec<_> = self.duplicates.iter().collect();
        dups.sort();
        for (id, (a, b)) in dups {
            out.push(
                QueryError::Duplicate {
                    id: id.clone(),
                    first: a.clone(),
                    second: b.clone(),
                }
                .to_string(),
            );
        }
        out
    }

    /// Bring the index up to date and return every header, newest first, ties ordered like dsh
    /// (see [`compare_ids`]).
    pub fn refresh(&mut self, root: &Path) -> Result<Arc<Vec<SessionHeader>>, QueryError> {
        self.refresh_with(root, Check::Full)
    }

    /// Whether any session directory is known (listed, or seeded from the index file).
    pub fn has_rows(&self) -> bool {
        self.projects.iter().any(|p| !p.rows.is_empty())
    }

    /// Whether every listed log has been stat-ed by a refresh (see
    /// [`refresh_unchecked`](Self::refresh_unchecked)).
    pub fn is_verified(&self) -> bool {
        // Set only by a refresh or sweep that stat-ed every log.
        self.logs_checked.is_some()
    }

    /// A listing before the logs are checked: the directories are listed again (sessions
    /// added or removed show, new ones are read) but the rows seeded from the index file
    /// keep their stored stamps and headers unchecked, so it may hold a header rewritten
    /// since or a log deleted inside a directory that is still there. For a first answer
    /// while the full check runs; [`is_verified`](Self::is_verified) stays false and titles
    /// are not vouched for by it.
    pub fn refresh_unchecked(
        &mut self,
        root: &Path,
    ) -> Result<Arc<Vec<SessionHeader>>, QueryError> {
        self.refresh_with(root, Check::Unchecked)
    }

    /// Like [`refresh`](Self::refresh), but once there is a listing, the periodic stat of
    /// every log is left to [`sweep_step`](Self::sweep_step) calls on another thread (see
    /// [`take_sweep_wanted`](Self::take_sweep_wanted)): directories are still checked, so
    /// sessions added or removed show at once; a log rewritten in place shows once the sweep
    /// has reached it.
    pub fn refresh_deferring(
        &mut self,
        root: &Path,
    ) -> Result<Arc<Vec<SessionHeader>>, QueryError> {
        self.refresh_with(root, Check::Deferring)
    }

    /// Whether every log has been stat-ed by a check that began at `since` or later (a
    /// refresh's inline check or a finished sweep).
    pub fn logs_checked_since(&self, since: Instant) -> bool {
        self.logs_checked.is_some_and(|t| t >= since)
    }

    /// Stat up to `budget` logs of a sweep that began at `since` or later, starting one
    /// when none runs or the running one began earlier (its stats may predate `since`);
    /// true when it is over. Its changes show in the next refresh.
    pub fn sweep_since(&mut self, since: Instant, budget: usize) -> bool {
        if self.sweep.as_ref().is_none_or(|s| s.started < since) {
            self.sweep = Some(Sweep::new());
        }
        self.sweep_step(budget)
    }

    /// Every session log of the table as of its last check: every regular log in a session
    /// directory, listed or not (a header that cannot be read, or of another id, included),
    /// with its stamp, in path order.
    pub fn logs(&self) -> Vec<(LogLocation, Stamp)> {
        let mut out = Vec::with_capacity(self.projects.iter().map(|p| p.rows.len()).sum());
        for (p, project) in self.projects.iter().enumerate() {
            for r in 0..project.rows.len() {
                out.extend(self.location_at(p, r));
            }
        }
        out
    }

    /// Whether a background sweep was started by the last refresh and needs a thread to
    /// run it; resets the flag.
    pub fn take_sweep_wanted(&mut self) -> bool {
        std::mem::take(&mut self.sweep_wanted)
    }

    /// Stat up to `budget` logs of the running sweep; true when it is over (or none runs).
    /// Changes it finds show in the next refresh.
    pub fn sweep_step(&mut self, budget: usize) -> bool {
        let step_started = Instant::now();
        let Some(sweep) = self.sweep.as_mut() else {
            return true;
        };
        let listed = self.last.clone();
        let listed = listed.as_deref().map_or(&[][..], Vec::as_slice);
        let (mut changed, mut read) = (false, false);
        let mut left = budget;
        let mut last_seen = None;
        // Where to go on: the first row after the last one checked (names, since rows may
        // have moved meanwhile).
        let (mut p, mut r) = (0, 0);
        if let Some((project, row)) = &sweep.after {
            p = self.projects.partition_point(|x| *x.name < **project);
            if let Some(at) = self.projects.get(p)
                && at.name == *project
            {
                r = at.rows.partition_point(|x| *x.name <= **row);
            }
        }
        'projects: while let Some(project) = self.projects.get_mut(p) {
            while let Some(row) = project.rows.get_mut(r) {
                if left == 0 {
                    break 'projects;
                }
                left -= 1;
                changed |= refresh_session(&project.dir, row, listed, &mut self.pending, &mut read);
                last_seen = Some((project.name.clone(), row.name.clone()));
                r += 1;
            }
            p += 1;
            r = 0;
        }
        sweep.changed |= changed;
        sweep.read |= read;
        sweep.cost += step_started.elapsed();
        if left == 0 && last_seen.is_some() {
            sweep.after = last_seen;
            return false;
        }
        if let Some(done) = self.sweep.take() {
            self.logs_checked = Some(done.started);
            self.sweep_cost = done.cost;
            for project in &mut self.projects {
                project.logs_checked = Some(done.started);
            }
            self.stale |= done.changed;
            self.touched |= done.read;
        }
        true
    }

    fn refresh_with(
        &mut self,
        root: &Path,
        check: Check,
    ) -> Result<Arc<Vec<SessionHeader>>, QueryError> {
        let io_err = |path: &Path, source| QueryError::Io {
            path: path.to_owned(),
            source,
        };
        let root_meta = match fs::metadata(root) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                *self = HeaderIndex::default();
                let empty = Arc::new(Vec::new());
                self.last = Some(Arc::clone(&empty));
                return Ok(empty);
            }
            Err(e) => return Err(io_err(root, e)),
        };
        let mut changed = self.last.is_none();
        let root_mtime = root_meta.modified().ok();
        if self.root_mtime.is_none() || self.root_mtime != root_mtime {
            let (names, odd) = list_names(root).map_err(|e| io_err(root, e))?;
            // Relisting the root alone is not worth persisting (writing the index file
            // itself changes the root's mtime); a different set of projects is.
            let same = names.iter().eq(self.projects.iter().map(|p| &p.name));
            if !same {
                self.touched = true;
                changed = true;
                let mut old = std::mem::take(&mut self.projects).into_iter().peekable();
                let mut projects = Vec::with_capacity(names.len());
                for name in names {
                    while old.next_if(|p| p.name < name).is_some() {}
                    let project = match old.next_if(|p| p.name == name) {
                        Some(p) => p,
                        None => Project::new(name.clone(), root.join(&*name)),
                    };
                    projects.push(project);
                }
                self.projects = projects;
            }
            self.root_mtime = trusted_mtime(&root_meta);
            self.odd = odd;
        }
        // A sweep is due once a second, but never sooner than ten times its own cost after
        // the last one, so a very large store is not stat-ed continuously.
        let period = LOGS_CHECKED_FOR.max(self.sweep_cost * 10);
        let due = self.logs_checked.is_none_or(|t| t.elapsed() >= period);
        let check_logs = match check {
            Check::Full => due,
            // Until a checked listing exists, every log is checked inline.
            Check::Deferring => due && !(self.last.is_some() && self.is_verified()),
            Check::Unchecked => false,
        };
        if check == Check::Unchecked {
            // Neither a check nor a sweep: the full check follows.
        } else if check_logs {
            self.logs_checked = Some(Instant::now());
            // Checked here and now: a sweep still running adds nothing.
            self.sweep = None;
        } else if due && self.sweep.is_none() {
            self.sweep = Some(Sweep::new());
            self.sweep_wanted = true;
        }
        changed |= std::mem::take(&mut self.stale);
        let listed = self.last.clone();
        let listed = listed.as_deref().map_or(&[][..], Vec::as_slice);
        let stat = if check == Check::Unchecked {
            Stat::New
        } else if check_logs {
            Stat::All
        } else {
            Stat::Changed
        };
        for project in &mut self.projects {
            let (project_changed, read) = refresh_project(project, stat, listed, &mut self.pending);
            changed |= project_changed;
            self.touched |= read;
        }
        if !changed && let Some(last) = self.last.clone() {
            return Ok(last);
        }
        Ok(self.rebuild())
    }

    /// Build the listing from the rows: every row with a log and a header, an id found
    /// under a second project left out as a duplicate, newest first. Rows then point at
    /// their header's position; the previous listing is kept if nothing in it changed.
    fn rebuild(&mut self) -> Arc<Vec<SessionHeader>> {
        let old = self.last.take();
        let old_list = old.as_deref().map_or(&[][..], Vec::as_slice);
        let mut pending = std::mem::take(&mut self.pending);
        let held = Held {
            listed: old_list,
            pending: &pending,
        };
        let hasher = &self.hasher;
        // First pass: which rows are listed (the first of each id), which are duplicates.
        let rows = self.projects.iter().map(|p| p.rows.len()).sum();
        let mut seen: HashTable<(u32, u32)> = HashTable::with_capacity(rows);
        let mut picked: Vec<(u32, u32)> = Vec::new();
        let mut duplicates = HashMap::new();
        for (p, project) in self.projects.iter().enumerate() {
            for (r, row) in project.rows.iter().enumerate() {
                let (Some(h), Some(_)) = (row.header.get(held), &row.log) else {
                    continue;
                };
                let hash = hasher.hash_one(h.id.as_str());
                let first = seen.find(hash, |&(fp, fr)| {
                    self.projects[fp as usize].rows[fr as usize]
                        .header
                        .get(held)
                        .is_some_and(|o| o.id == h.id)
                });
                if let Some(&(fp, fr)) = first {
                    let path_of = |p: usize, r: usize| {
                        self.location_at(p, r)
                            .map(|(l, _)| l.path)
                            .unwrap_or_default()
                    };
                    duplicates
                        .entry(h.id.clone())
                        .or_insert_with(|| (path_of(fp as usize, fr as usize), path_of(p, r)));
                    continue;
                }
                let at = (to_u32(p), to_u32(r));
                seen.insert_unique(hash, at, |&(fp, fr)| {
                    self.projects[fp as usize].rows[fr as usize]
                        .header
                        .get(held)
                        .map_or(0, |o| hasher.hash_one(o.id.as_str()))
                });
                picked.push(at);
            }
        }
        drop(seen);
        // Second pass: take the picked headers out of their rows (a copy where the old
        // listing holds them); a duplicate row keeps a header of its own.
        let mut taken: Vec<Option<SessionHeader>> = Vec::with_capacity(picked.len());
        for &(p, r) in &picked {
            let row = &mut self.projects[p as usize].rows[r as usize];
            taken.push(match std::mem::take(&mut row.header) {
                Slot::Own(h) => Some(*h),
                Slot::Listed(at) => old_list.get(at as usize).cloned(),
                Slot::Pending(at) => pending
                    .get_mut(at as usize)
                    .map(|h| std::mem::replace(h, taken_header())),
                Slot::None => None,
            });
        }
        // Rows not listed (a duplicate id) must not point into either list any more.
        for row in self.projects.iter_mut().flat_map(|p| p.rows.iter_mut()) {
            let kept = match row.header {
                Slot::Listed(at) => old_list.get(at as usize),
                Slot::Pending(at) => pending.get(at as usize),
                _ => continue,
            };
            row.header = kept.map_or(Slot::None, |h| Slot::Own(Box::new(h.clone())));
        }
        // Every pending header has been taken or copied.
        drop(pending);
        self.duplicates = duplicates;
        // Sort positions, then lay the headers out in that order.
        let mut order: Vec<u32> = (0..to_u32(taken.len())).collect();
        order.sort_by(|&a, &b| match (&taken[a as usize], &taken[b as usize]) {
            (Some(x), Some(y)) => newest_first(x, y),
            (x, y) => y.is_some().cmp(&x.is_some()),
        });
        let mut list = Vec::with_capacity(order.len());
        let mut rows_of = Vec::with_capacity(order.len());
        for &i in &order {
            if let Some(h) = taken[i as usize].take() {
                list.push(h);
                rows_of.push(picked[i as usize]);
            }
        }
        drop(taken);
        for (at, &(p, r)) in rows_of.iter().enumerate() {
            self.projects[p as usize].rows[r as usize].header = Slot::Listed(to_u32(at));
        }
        let mut by_id = HashTable::with_capacity(list.len());
        for (at, h) in list.iter().enumerate() {
            by_id.insert_unique(self.hasher.hash_one(h.id.as_str()), to_u32(at), |&i| {
                self.hasher.hash_one(list[i as usize].id.as_str())
            });
        }
        self.by_id = by_id;
        self.rows_of = rows_of;
        let list = match old {
            Some(old) if *old == list => old,
            _ => Arc::new(list),
        };
        self.last = Some(Arc::clone(&list));
        list
    }
}

/// Which logs of a project a refresh stats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stat {
    /// Every log.
    All,
    /// Every log if the directory changed, else only those not settled.
    Changed,
    /// Only those not settled (new rows, rows without a usable log); the others are
    /// trusted as they are, and the project's check time is left alone.
    New,
}

/// A table position as stored (a store of more than 4 billion sessions is not listed whole).
fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Revalidate one project directory; returns whether anything listed may have changed and
/// whether more than its metadata was read.
fn refresh_project(
    project: &mut Project,
    stat: Stat,
    listed: &[SessionHeader],
    pending: &mut Vec<SessionHeader>,
) -> (bool, bool) {
    let meta = match fs::symlink_metadata(&project.dir) {
        Ok(m) => m,
        Err(e) => {
            let had = !project.rows.is_empty();
            project.rows = Vec::new();
            project.mtime = None;
            project.odd = Vec::new();
            project.logs_checked = None;
            project.skipped = Some(format!(
                "cannot read project directory {}: {e}; its sessions are not listed",
                project.dir.display()
            ));
            return (had, true);
        }
    };
    let mut read = false;
    let mut changed = false;
    let rescan = project.mtime.is_none() || project.mtime != meta.modified().ok();
    if rescan {
        match list_names(&project.dir) {
            // The same session directories as before (a fresh process relisting what its
            // index knew): nothing to rebuild, nothing new to persist.
            Ok((names, odd)) if names.iter().eq(project.rows.iter().map(|r| &r.name)) => {
                project.skipped = None;
                project.odd = odd;
            }
            Ok((names, odd)) => {
                read = true;
                // Rows move: the listing is rebuilt so that it points at them again.
                changed = true;
                let mut old = std::mem::take(&mut project.rows).into_iter().peekable();
                let mut rows = Vec::with_capacity(names.len());
                for name in names {
                    while old.next_if(|r| r.name < name).is_some() {}
                    rows.push(match old.next_if(|r| r.name == name) {
                        Some(row) => row,
                        None => Row::new(name),
                    });
                }
                project.rows = rows;
                project.skipped = None;
                project.odd = odd;
            }
            Err(e) => {
                let had = !project.rows.is_empty();
                project.rows = Vec::new();
                project.mtime = None;
                project.skipped = Some(format!(
                    "cannot read project directory {}: {e}; its sessions are not listed",
                    project.dir.display()
                ));
                return (had, true);
            }
        }
        project.mtime = trusted_mtime(&meta);
    }
    let stat_all = stat == Stat::All || (rescan && stat == Stat::Changed);
    if stat_all {
        project.logs_checked = Some(Instant::now());
    }
    for row in &mut project.rows {
        // Every log is stat-ed (at most once per `LOGS_CHECKED_FOR` when nothing else
        // changed): a log rewritten in place, same directory mtime, is noticed by its stamp.
        let settled = row.log.is_some() && row.skipped.is_none();
        if !stat_all && settled {
            continue;
        }
        changed |= refresh_session(&project.dir, row, listed, pending, &mut read);
    }
    (changed, read)
}

/// Revalidate one session directory by a stat of its log; returns whether its header may
/// have changed, and sets `read` when more than metadata was read.
/// A header read anew goes into `pending` (unless it equals the one the row has).
fn refresh_session(
    project_dir: &Path,
    row: &mut Row,
    listed: &[SessionHeader],
    pending: &mut Vec<SessionHeader>,
    read: &mut bool,
) -> bool {
    let dir = project_dir.join(&*row.name);
    let found = match log_in_listed(&dir) {
        Ok(found) => found,
        Err(warning) => {
            // Never settled: looked at again next time (permissions may come back).
            row.skipped = Some(warning.into());
            None
        }
    };
    let Some((loc, meta)) = found else {
        let had = !matches!(row.header, Slot::None);
        row.log = None;
        row.header = Slot::None;
        return had;
    };
    let stamp = Stamp::of(&meta);
    if row.log == Some((loc.format, stamp)) {
        return false;
    }
    row.skipped = None;
    *read = true;
    let header = match reader::read_header(&loc.path, loc.format) {
        Ok(h) => {
            let matches_dir = paths::encode_session_id(&h.id)
                .ok()
                .is_some_and(|enc| OsStr::new(&enc) == &*row.name);
            if matches_dir {
                Some(h)
            } else {
                row.skipped = Some(
                    format!(
                        "{}: header id {:?} does not match its directory; skipped",
                        loc.path.display(),
                        h.id
                    )
                    .into(),
                );
                None
            }
        }
        Err(e) => {
            row.skipped = Some(format!("{e}; skipped").into());
            None
        }
    };
    row.log = Some((loc.format, stamp));
    let held = Held { listed, pending };
    if row.header.get(held) == header.as_ref() {
        // The same header (a log that grew): the row keeps the one it has.
        return false;
    }
    row.header = match header {
        Some(h) => {
            pending.push(h);
            Slot::Pending(to_u32(pending.len() - 1))
        }
        None => Slot::None,
    };
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use std::time::Duration;

    fn write_session(root: &Path, project: &str, id: &str, created: i64) -> PathBuf {
        let dir = root
            .join(project)
            .join(paths::encode_session_id(id).unwrap());
        fs::create_dir_all(&dir).unwrap();
        let header = SessionHeader::new(id, created, None);
        let path = dir.join(LOG_FILE);
        fs::write(
            &path,
            format!("{}\n", serde_json::to_string(&header).unwrap()),
        )
        .unwrap();
        path
    }

    /// Make every directory under `root` (and `root`) look an hour old, so it is trusted.
    fn backdate(root: &Path) {
        let old = SystemTime::now() - Duration::from_secs(3600);
        let mut stack = vec![root.to_owned()];
        while let Some(dir) = stack.pop() {
            for entry in fs::read_dir(&dir).unwrap() {
                let entry = entry.unwrap();
                if entry.file_type().unwrap().is_dir() {
                    stack.push(entry.path());
                }
            }
            fs::File::open(&dir).unwrap().set_modified(old).unwrap();
        }
    }

    fn ids(list: &[SessionHeader]) -> Vec<&str> {
        list.iter().map(|h| h.id.as_str()).collect()
    }

    #[test]
    fn trusted_directories_are_revalidated_by_mtime() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        write_session(root, "--p--", "a", 1);
        write_session(root, "--q--", "b", 2);
        fs::create_dir_all(root.join("--p--/pending")).unwrap();
        backdate(root);
        let mut index = HeaderIndex::default();
        let first = index.refresh(root).unwrap();
        assert_eq!(ids(&first), vec!["b", "a"]);
        let again = index.refresh(root).unwrap();
        assert!(Arc::ptr_eq(&first, &again));

        // A new session in an existing project.
        write_session(root, "--q--", "c", 3);
        backdate(root);
        assert_eq!(ids(&index.refresh(root).unwrap()), vec!["c", "b", "a"]);

        // A log appearing in a session directory seen empty before (only that dir changes).
        let path = root.join("--p--/pending").join(LOG_FILE);
        let header = SessionHeader::new("pending", 9, None);
        fs::write(
            &path,
            format!("{}\n", serde_json::to_string(&header).unwrap()),
        )
        .unwrap();
        assert_eq!(
            ids(&index.refresh(root).unwrap()),
            vec!["pending", "c", "b", "a"]
        );
        assert_eq!(
            index.location_of("pending").map(|l| l.path.clone()),
            Some(path)
        );

        // A whole project removed, then the store itself.
        fs::remove_dir_all(root.join("--q--")).unwrap();
        backdate(root);
        assert_eq!(ids(&index.refresh(root).unwrap()), vec!["pending", "a"]);
        assert_eq!(index.location_of("b"), None);
        let gone = root.join("gone");
        assert!(index.refresh(&gone).unwrap().is_empty());
    }

    #[test]
    fn a_deferred_sweep_notices_a_log_rewritten_in_place_in_steps() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        for (n, id) in ["a", "b", "c", "d", "e"].iter().enumerate() {
            write_session(
                root,
                if n % 2 == 0 { "--p--" } else { "--q--" },
                id,
                i64::try_from(n).unwrap(),
            );
        }
        backdate(root);
        let mut index = HeaderIndex::default();
        let first = index.refresh_deferring(root).unwrap();
        assert_eq!(ids(&first), vec!["e", "d", "c", "b", "a"]);
        assert!(
            !index.take_sweep_wanted(),
            "the first listing checks every log itself"
        );
        // Rewritten in place: no directory changes.
        write_session(root, "--p--", "a", 9);
        let again = index.refresh_deferring(root).unwrap();
        assert!(
            Arc::ptr_eq(&first, &again),
            "logs are not re-checked within a second"
        );
        index.logs_checked = Instant::now().checked_sub(Duration::from_secs(2));
        let stale = index.refresh_deferring(root).unwrap();
        assert!(
            Arc::ptr_eq(&first, &stale),
            "the check is left to the sweep"
        );
        assert!(index.take_sweep_wanted());
        assert!(!index.take_sweep_wanted(), "one sweep at a time");
        let mut steps = 1;
        while !index.sweep_step(2) {
            steps += 1;
            assert!(
                index.refresh_deferring(root).is_ok(),
                "listings go on meanwhile"
            );
        }
        assert_eq!(steps, 3, "five logs, two per step");
        assert_eq!(
            ids(&index.refresh_deferring(root).unwrap()),
            vec!["a", "e", "d", "c", "b"]
        );
        assert!(!index.take_sweep_wanted());
        assert!(index.sweep_step(2), "no sweep running");
    }

    #[test]
    fn an_id_under_two_projects_is_listed_once_across_rebuilds() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        write_session(root, "--q--", "a", 5);
        write_session(root, "--q--", "b", 2);
        backdate(root);
        let mut index = HeaderIndex::default();
        assert_eq!(ids(&index.refresh(root).unwrap()), vec!["a", "b"]);
        // The same id under a project listed before: that one is listed, the other one
        // (listed until now) becomes the duplicate and keeps its own header.
        write_session(root, "--p--", "a", 1);
        backdate(root);
        let list = index.refresh(root).unwrap();
        assert_eq!(ids(&list), vec!["b", "a"]);
        assert_eq!(list[1].created_at, 1);
        assert!(index.duplicate_of("a").is_some());
        // Another rebuild keeps both.
        write_session(root, "--p--", "c", 3);
        backdate(root);
        let list = index.refresh(root).unwrap();
        assert_eq!(ids(&list), vec!["c", "b", "a"]);
        assert_eq!(list[2].created_at, 1);
        assert_eq!(index.warnings().len(), 1, "{:?}", index.warnings());
        // The first log gone: the other one is listed again, with its header.
        fs::remove_dir_all(root.join("--p--/a")).unwrap();
        backdate(root);
        let list = index.refresh(root).unwrap();
        assert_eq!(ids(&list), vec!["a", "c", "b"]);
        assert_eq!(list[0].created_at, 5);
        assert!(index.duplicate_of("a").is_none());
        assert_eq!(
            index.location_of("a").map(|l| l.path),
            Some(root.join("--q--/a").join(LOG_FILE))
        );
    }

    #[test]
    fn a_session_moved_away_and_back_is_listed_again() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("store");
        write_session(&root, "--p--", "a", 1);
        write_session(&root, "--p--", "b", 2);
        backdate(&root);
        let mut index = HeaderIndex::default();
        assert_eq!(
            ids(&index.refresh_deferring(&root).unwrap()),
            vec!["b", "a"]
        );
        let away = tmp.path().join("away");
        fs::rename(root.join("--p--/a"), &away).unwrap();
        assert_eq!(ids(&index.refresh_deferring(&root).unwrap()), vec!["b"]);
        backdate(&root);
        assert_eq!(ids(&index.refresh_deferring(&root).unwrap()), vec!["b"]);
        fs::rename(&away, root.join("--p--/a")).unwrap();
        assert_eq!(
            ids(&index.refresh_deferring(&root).unwrap()),
            vec!["b", "a"]
        );
        assert_eq!(
            ids(&index.refresh_deferring(&root).unwrap()),
            vec!["b", "a"]
        );
    }

    #[test]
    fn an_unchecked_refresh_trusts_seeded_rows_until_the_full_check() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        // Headers without a cwd belong under `_no-cwd` (a seeded header must fit its
        // project directory).
        let gone = write_session(root, "_no-cwd", "gone", 1);
        write_session(root, "_no-cwd", "kept", 2);
        backdate(root);
        let mut first = HeaderIndex::default();
        first.refresh(root).unwrap();
        let mut file = Vec::new();
        let mut w = crate::index_file::IndexWriter::for_tests(&mut file);
        w.line_limit(crate::reader::Limits::default().max_line_bytes)
            .unwrap();
        first.write_records(&mut w).unwrap();
        let record = crate::index_file::parse(&crate::index_file::framed(&file)).unwrap();
        // After the index was written: a log deleted inside its directory, a session added.
        fs::remove_file(&gone).unwrap();
        write_session(root, "--q--", "new", 3);
        let mut seeded = HeaderIndex::from_records(root, record.projects);
        let early = seeded.refresh_unchecked(root).unwrap();
        assert_eq!(ids(&early), vec!["new", "kept", "gone"]);
        assert!(!seeded.is_verified());
        let checked = seeded.refresh_deferring(root).unwrap();
        assert_eq!(ids(&checked), vec!["new", "kept"]);
        assert!(seeded.is_verified());
    }

    #[test]
    fn stamps_tell_files_apart() {
        let tmp = tempfile::tempdir().unwrap();
        let a = tmp.path().join("a");
        fs::write(&a, "x").unwrap();
        let first = Stamp::of(&fs::metadata(&a).unwrap());
        fs::write(&a, "xy").unwrap();
        let grown = Stamp::of(&fs::metadata(&a).unwrap());
        assert!(grown.same_file(&first));
        assert_ne!(grown, first);
        let b = tmp.path().join("b");
        fs::write(&b, "xyz").unwrap();
        fs::rename(&b, &a).unwrap();
        let replaced = Stamp::of(&fs::metadata(&a).unwrap());
        if cfg!(unix) {
            assert!(!replaced.same_file(&first));
        }
    }
}
