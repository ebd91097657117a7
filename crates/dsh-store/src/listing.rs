//! The cached index of session headers behind `list_sessions` (docs/session-store.md: session query).
//!
//! Revalidation is by file metadata at every level: the root's and each project directory's
//! mtime say whether their entries changed, and every log is stat-ed (one `lstat` each) and
//! read again (first line only) when its stamp changed — inline on the first listing, later
//! in steps on a background sweep ([`HeaderIndex::sweep_step`]). A directory whose mtime is
//! too recent to be trusted (a change in the same clock tick would not show) is simply
//! re-read next time, so a warm call on an unchanged store costs one `stat` per project
//! directory.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::io;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use super::event::SessionHeader;
use super::id_order::compare_ids;
use super::index_file::{
    FileTime, ProjectRecord, SessionRecord, StampRecord, format_of, name_of, plain_name,
};
use super::nofollow;
use super::paths::{self, LOG_FILE, ZSTD_LOG_FILE};
use super::query::QueryError;
use super::reader::{self, LogFormat};

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

/// A file's identity for revalidation: length, mtime and (on Unix) device, inode and ctime,
/// so a log replaced by another file is never mistaken for the old one having grown, and a
/// log rewritten in place with its mtime set back still differs (nobody can set a ctime).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    pub len: u64,
    pub mtime: Option<SystemTime>,
    pub file_id: Option<(u64, u64)>,
    /// Change time as (seconds, nanoseconds) since the epoch.
    pub ctime: Option<(i64, i64)>,
}

impl Stamp {
    pub fn of(meta: &fs::Metadata) -> Self {
        #[cfg(unix)]
        let (file_id, ctime) = {
            use std::os::unix::fs::MetadataExt;
            (
                Some((meta.dev(), meta.ino())),
                Some((meta.ctime(), meta.ctime_nsec())),
            )
        };
        #[cfg(not(unix))]
        let (file_id, ctime) = (None, None);
        Stamp {
            len: meta.len(),
            mtime: meta.modified().ok(),
            file_id,
            ctime,
        }
    }

    /// Whether `self` can be the same file as `earlier` (same inode where known).
    pub fn same_file(&self, earlier: &Stamp) -> bool {
        self.file_id == earlier.file_id
    }
}

/// The order of `list_sessions`: newest `createdAt` first, ties by id as dsh orders them. Other sources merged
/// into one listing (another tool's sessions) use it too, so ties sort the same everywhere.
pub fn newest_first(a: &SessionHeader, b: &SessionHeader) -> std::cmp::Ordering {
    b.created_at
        .cmp(&a.created_at)
        .then_with(|| compare_ids(&a.id, &b.id))
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

/// The entries of one directory: its subdirectories sorted by name, and its entries that
/// are links or special files as warnings (never followed). One pass, no `stat` per entry
/// where the file system reports entry types.
fn list_dir(dir: &Path) -> io::Result<(Vec<PathBuf>, Vec<String>)> {
    let mut subdirs = Vec::new();
    let mut odd = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            subdirs.push(entry.path());
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

#[derive(Debug, Default)]
struct SessionEntry {
    log: Option<(LogLocation, Stamp)>,
    header: Option<SessionHeader>,
    /// Why this directory is not listed (unreadable, a link, a bad header), as a warning.
    skipped: Option<String>,
}

#[derive(Debug, Default)]
struct ProjectEntry {
    mtime: Option<SystemTime>,
    sessions: BTreeMap<PathBuf, SessionEntry>,
    /// Why this project directory could not be read, as a warning.
    skipped: Option<String>,
    /// Links among its entries, as warnings.
    odd: Vec<String>,
    /// When every log of this project was last stat-ed (the check began).
    logs_checked: Option<Instant>,
}

/// The header index; one per store, behind a mutex.
#[derive(Debug, Default)]
pub struct HeaderIndex {
    root_mtime: Option<SystemTime>,
    projects: BTreeMap<PathBuf, ProjectEntry>,
    last: Option<Arc<Vec<SessionHeader>>>,
    /// Every listed log by session id, with its stamp as of the last check.
    by_id: HashMap<String, (LogLocation, Stamp)>,
    /// Ids with logs under two projects: the first two paths found (reads refuse them).
    duplicates: HashMap<String, (PathBuf, PathBuf)>,
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

/// Progress of a background stat of every log ([`HeaderIndex::sweep_step`]).
#[derive(Debug)]
struct Sweep {
    started: Instant,
    /// The last session directory checked; the next step starts after it.
    after: Option<PathBuf>,
    changed: bool,
    read: bool,
    /// Time spent in its steps so far.
    cost: Duration,
}

impl HeaderIndex {
    /// Whether anything was read from disk since the last call (the persisted copy is
    /// then worth rewriting); resets the flag.
    pub fn take_touched(&mut self) -> bool {
        std::mem::take(&mut self.touched)
    }

    /// Plain-data copy for the index file; a project holding a name that cannot be stored
    /// is stored without its mtime, so the next process lists it again.
    pub fn to_records(&self) -> (Option<FileTime>, Vec<ProjectRecord>) {
        let mut projects = Vec::with_capacity(self.projects.len());
        let mut root_complete = true;
        for (dir, project) in &self.projects {
            let Some(name) = name_of(dir) else {
                root_complete = false;
                continue;
            };
            let mut complete = true;
            let mut sessions = Vec::with_capacity(project.sessions.len());
            for (session_dir, entry) in &project.sessions {
                let log = match &entry.log {
                    None => None,
                    Some((loc, stamp)) => {
                        if let (Some(file), Some(stamp)) =
                            (name_of(&loc.path), StampRecord::from_stamp(stamp))
                        {
                            Some((file, stamp))
                        } else {
                            complete = false;
                            continue;
                        }
                    }
                };
                let Some(name) = name_of(session_dir) else {
                    complete = false;
                    continue;
                };
                sessions.push(SessionRecord {
                    name,
                    dir_mtime: None,
                    log,
                    header: entry.header.clone(),
                });
            }
            projects.push(ProjectRecord {
                name,
                mtime: project
                    .mtime
                    .filter(|_| complete)
                    .and_then(FileTime::from_system),
                sessions,
            });
        }
        let root_mtime = self
            .root_mtime
            .filter(|_| root_complete)
            .and_then(FileTime::from_system);
        (root_mtime, projects)
    }

    /// An index seeded from stored records under `root`; everything is revalidated by the
    /// next [`refresh`](Self::refresh). Directory times from a file are never trusted (every
    /// project is listed again, every log stat-ed); only headers whose log stamp still
    /// matches are reused. Records with unsafe names or a header of another id are dropped.
    pub fn from_records(root: &Path, records: Vec<ProjectRecord>) -> Self {
        let mut index = HeaderIndex::default();
        for record in records {
            if !plain_name(&record.name) {
                index.root_mtime = None;
                continue;
            }
            let dir = root.join(&record.name);
            let mut project = ProjectEntry::default();
            for session in record.sessions {
                let log = match session.log {
                    None => None,
                    Some((file, stamp)) => match (format_of(&file), stamp.to_stamp()) {
                        (Some(format), Some(stamp)) => Some((
                            LogLocation {
                                path: dir.join(&session.name).join(&file),
                                format,
                            },
                            stamp,
                        )),
                        _ => None,
                    },
                };
                if !plain_name(&session.name) {
                    project.mtime = None;
                    continue;
                }
                // A stored header must belong to its directories (its id to the session's,
                // its cwd to the project's), or it is dropped.
                let header = session.header.filter(|h| {
                    log.is_some()
                        && paths::encode_session_id(&h.id).is_ok_and(|enc| enc == session.name)
                        && paths::project_dir_name(h.cwd.as_deref()) == record.name
                });
                // Without a usable header the log is read again.
                let log = log.filter(|_| header.is_some());
                project.sessions.insert(
                    dir.join(&session.name),
                    SessionEntry {
                        header,
                        log,
                        skipped: None,
                    },
                );
            }
            index.projects.insert(dir, project);
        }
        index
    }

    /// Logs of every listed session, as of the last refresh.
    pub fn locations(&self) -> impl Iterator<Item = &LogLocation> {
        self.by_id.values().map(|(loc, _)| loc)
    }

    /// The log of a listed session, as of the last refresh.
    pub fn location_of(&self, id: &str) -> Option<&LogLocation> {
        self.by_id.get(id).map(|(loc, _)| loc)
    }

    /// The log of a listed session and its stamp, if every log was stat-ed less than
    /// `max_age` ago (so the stamp is that fresh).
    /// Also returns when that check began (per project: a check of 100 000 logs can take
    /// longer than `max_age` as a whole).
    pub fn checked_stamp(
        &self,
        id: &str,
        max_age: Duration,
    ) -> Option<(&LogLocation, Stamp, Instant)> {
        let (loc, stamp) = self.by_id.get(id)?;
        let project = loc.path.parent()?.parent()?;
        let checked = self
            .projects
            .get(project)?
            .logs_checked
            .filter(|t| t.elapsed() < max_age)?;
        Some((loc, *stamp, checked))
    }

    /// The two logs of an id found under two projects by the last refresh.
    pub fn duplicate_of(&self, id: &str) -> Option<&(PathBuf, PathBuf)> {
        self.duplicates.get(id)
    }

    /// Everything the last refresh left out and why (unreadable or skipped directories,
    /// links, special files, bad headers, duplicate ids), one warning each, in path order.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = self.odd.clone();
        for project in self.projects.values() {
            out.extend(project.skipped.iter().cloned());
            out.extend(project.odd.iter().cloned());
            for entry in project.sessions.values() {
                out.extend(entry.skipped.iter().cloned());
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
        self.refresh_with(root, false)
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
        self.refresh_with(root, true)
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
        let (mut changed, mut read) = (false, false);
        let mut left = budget;
        let mut last_seen = None;
        let after = sweep.after.clone();
        let from_project = after.as_deref().and_then(Path::parent).map(Path::to_owned);
        let projects = match &from_project {
            Some(p) => self.projects.range_mut(p.clone()..),
            None => self.projects.range_mut::<PathBuf, _>(..),
        };
        'projects: for (project_dir, project) in projects {
            let sessions = match &after {
                Some(a) if Some(project_dir) == from_project.as_ref() => project
                    .sessions
                    .range_mut::<PathBuf, _>((Bound::Excluded(a.clone()), Bound::Unbounded)),
                _ => project.sessions.range_mut::<PathBuf, _>(..),
            };
            for (session_dir, entry) in sessions {
                if left == 0 {
                    break 'projects;
                }
                left -= 1;
                changed |= refresh_session(session_dir, entry, &mut read);
                last_seen = Some(session_dir.clone());
            }
        }
        sweep.changed |= changed;
        sweep.read |= read;
        sweep.cost += step_started.elapsed();
        if left == 0 && last_seen.is_some() {
            sweep.after = last_seen;
            return false;
        }
        let done = self.sweep.take();
        if let Some(done) = done {
            self.logs_checked = Some(done.started);
            self.sweep_cost = done.cost;
            for project in self.projects.values_mut() {
                project.logs_checked = Some(done.started);
            }
            self.stale |= done.changed;
            self.touched |= done.read;
            if done.read && !done.changed {
                self.restamp();
            }
        }
        true
    }

    /// Bring every listed log's stamp in `by_id` up to date (same sessions, some log changed).
    fn restamp(&mut self) {
        for entry in self.projects.values().flat_map(|p| p.sessions.values()) {
            if let (Some(h), Some((loc, stamp))) = (&entry.header, &entry.log)
                && let Some(known) = self.by_id.get_mut(&h.id)
                && known.0 == *loc
            {
                known.1 = *stamp;
            }
        }
    }

    fn refresh_with(
        &mut self,
        root: &Path,
        defer_sweep: bool,
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
            let (names, odd) = list_dir(root).map_err(|e| io_err(root, e))?;
            // Relisting the root alone is not worth persisting (writing the index file
            // itself changes the root's mtime); a different set of projects is.
            self.touched |= !names.iter().eq(self.projects.keys());
            let mut projects = BTreeMap::new();
            for name in names {
                let entry = self.projects.remove(&name).unwrap_or_default();
                projects.insert(name, entry);
            }
            self.projects = projects;
            self.root_mtime = trusted_mtime(&root_meta);
            self.odd = odd;
            changed = true;
        }
        // A sweep is due once a second, but never sooner than ten times its own cost after
        // the last one, so a very large store is not stat-ed continuously.
        let period = LOGS_CHECKED_FOR.max(self.sweep_cost * 10);
        let due = self.logs_checked.is_none_or(|t| t.elapsed() >= period);
        let check_logs = due && !(defer_sweep && self.last.is_some());
        if check_logs {
            self.logs_checked = Some(Instant::now());
            // Checked here and now: a sweep still running adds nothing.
            self.sweep = None;
        } else if due && self.sweep.is_none() {
            self.sweep = Some(Sweep {
                started: Instant::now(),
                after: None,
                changed: false,
                read: false,
                cost: Duration::ZERO,
            });
            self.sweep_wanted = true;
        }
        changed |= std::mem::take(&mut self.stale);
        let mut restamped = false;
        for (project_dir, project) in &mut self.projects {
            let (project_changed, read) = refresh_project(project_dir, project, check_logs);
            changed |= project_changed;
            self.touched |= read;
            restamped |= read;
        }
        if !changed && let Some(last) = self.last.clone() {
            if restamped {
                // Same sessions, but some log changed: keep the stamps current.
                self.restamp();
            }
            return Ok(last);
        }
        let mut by_id: HashMap<String, (LogLocation, Stamp)> = HashMap::new();
        let mut duplicates = HashMap::new();
        let mut headers = Vec::new();
        for project in self.projects.values() {
            for entry in project.sessions.values() {
                let (Some(h), Some((loc, stamp))) = (&entry.header, &entry.log) else {
                    continue;
                };
                if let Some((first, _)) = by_id.get(&h.id) {
                    duplicates
                        .entry(h.id.clone())
                        .or_insert_with(|| (first.path.clone(), loc.path.clone()));
                } else {
                    by_id.insert(h.id.clone(), (loc.clone(), *stamp));
                    headers.push(h.clone());
                }
            }
        }
        self.duplicates = duplicates;
        headers.sort_by(newest_first);
        self.by_id = by_id;
        if let Some(last) = &self.last
            && **last == headers
        {
            return Ok(Arc::clone(last));
        }
        let list = Arc::new(headers);
        self.last = Some(Arc::clone(&list));
        Ok(list)
    }
}

/// Revalidate one project directory; returns whether anything listed may have changed and
/// whether more than its metadata was read.
fn refresh_project(dir: &Path, project: &mut ProjectEntry, check_logs: bool) -> (bool, bool) {
    let meta = match fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) => {
            let had = !project.sessions.is_empty();
            *project = ProjectEntry {
                skipped: Some(format!(
                    "cannot read project directory {}: {e}; its sessions are not listed",
                    dir.display()
                )),
                ..ProjectEntry::default()
            };
            return (had, true);
        }
    };
    let mut read = false;
    let mut changed = false;
    let rescan = project.mtime.is_none() || project.mtime != meta.modified().ok();
    if rescan {
        match list_dir(dir) {
            // The same session directories as before (a fresh process relisting what its
            // index knew): nothing to rebuild, nothing new to persist.
            Ok((names, odd)) if names.iter().eq(project.sessions.keys()) => {
                project.skipped = None;
                project.odd = odd;
            }
            Ok((names, odd)) => {
                read = true;
                let mut sessions = BTreeMap::new();
                for name in names {
                    let entry = project.sessions.remove(&name).unwrap_or_default();
                    sessions.insert(name, entry);
                }
                changed |= !project.sessions.is_empty();
                project.sessions = sessions;
                project.skipped = None;
                project.odd = odd;
            }
            Err(e) => {
                project.sessions.clear();
                project.mtime = None;
                project.skipped = Some(format!(
                    "cannot read project directory {}: {e}; its sessions are not listed",
                    dir.display()
                ));
                return (true, true);
            }
        }
        project.mtime = trusted_mtime(&meta);
    }
    if rescan || check_logs {
        project.logs_checked = Some(Instant::now());
    }
    for (session_dir, entry) in &mut project.sessions {
        // Every log is stat-ed (at most once per `LOGS_CHECKED_FOR` when nothing else
        // changed): a log rewritten in place, same directory mtime, is noticed by its stamp.
        let settled = entry.log.is_some() && entry.skipped.is_none();
        if !rescan && !check_logs && settled {
            continue;
        }
        changed |= refresh_session(session_dir, entry, &mut read);
    }
    (changed, read)
}

/// Revalidate one session directory by a stat of its log; returns whether its header may
/// have changed, and sets `read` when more than metadata was read.
fn refresh_session(dir: &Path, entry: &mut SessionEntry, read: &mut bool) -> bool {
    let found = match log_in_listed(dir) {
        Ok(found) => found,
        Err(warning) => {
            // Never settled: looked at again next time (permissions may come back).
            entry.skipped = Some(warning);
            None
        }
    };
    let Some((loc, meta)) = found else {
        let had = entry.header.is_some();
        entry.log = None;
        entry.header = None;
        return had;
    };
    let stamp = Stamp::of(&meta);
    if let Some((old_loc, old_stamp)) = &entry.log
        && *old_loc == loc
        && *old_stamp == stamp
    {
        return false;
    }
    entry.skipped = None;
    *read = true;
    let header = match reader::read_header(&loc.path, loc.format) {
        Ok(h) => {
            let dir_name = dir.file_name().and_then(|n| n.to_str());
            let matches_dir = paths::encode_session_id(&h.id)
                .ok()
                .is_some_and(|enc| Some(enc.as_str()) == dir_name);
            if matches_dir {
                Some(h)
            } else {
                entry.skipped = Some(format!(
                    "{}: header id {:?} does not match its directory; skipped",
                    loc.path.display(),
                    h.id
                ));
                None
            }
        }
        Err(e) => {
            entry.skipped = Some(format!("{e}; skipped"));
            None
        }
    };
    entry.log = Some((loc, stamp));
    let changed = entry.header != header;
    entry.header = header;
    changed
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
