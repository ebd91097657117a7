//! One foreign tool's session directory as a read-only [`SessionQuery`]: listing with a cache
//! revalidated by file metadata (persisted to the platform cache dir, never next to the
//! logs), titles, and streaming surface reads. Nothing here ever writes under the root.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, SystemTime};

use dsh_store::listing::{Stamp, newest_first};
use dsh_store::query::TitleLookup;
use dsh_store::{
    QueryError, RecentTitles, SessionHeader, SessionQuery, Surface, SurfaceScan, SurfaceVisitor,
};

use super::log_meta::{LogMeta, TitleCleaner};
use super::origin::Origin;
use super::source_index::{self, DirRecord, FileRecord, FileStamp, SourceIndex};
use super::{claude_code, codex, surface_read};

/// How old a directory's mtime must be before an unchanged value proves an unchanged
/// directory (a change within the same clock tick would not show).
const TRUST_AFTER: Duration = Duration::from_secs(2);

/// How to read one foreign source.
#[derive(Debug, Clone)]
pub struct SourceConfig {
    pub origin: Origin,
    /// The directory holding the logs: Claude Code's `projects` dir, Codex's `sessions` dir.
    pub root: PathBuf,
    /// Longest line read (the dsh store's limit).
    pub max_line_bytes: u64,
    /// Turns a first user message into a title.
    pub clean_title: TitleCleaner,
    /// Where the listing cache is kept between processes (`None`: memory only).
    pub index_file: Option<PathBuf>,
}

impl SourceConfig {
    /// The logs directory for a configured path: `<path>/projects` (Claude Code) or
    /// `<path>/sessions` (Codex) when that exists, so both the tool's home and the logs
    /// directory itself are accepted.
    pub fn logs_dir(origin: &Origin, configured: &Path) -> PathBuf {
        let sub = match origin {
            Origin::ClaudeCode => "projects",
            Origin::Codex => "sessions",
            Origin::Dsh | Origin::Other(_) => return configured.to_owned(),
        };
        let nested = configured.join(sub);
        if nested.is_dir() {
            nested
        } else {
            configured.to_owned()
        }
    }
}

/// A read-only session source over another tool's logs. Cheap to clone; clones share caches.
#[derive(Debug, Clone)]
pub struct ForeignSource {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: SourceConfig,
    state: Mutex<State>,
    loaded: OnceLock<()>,
    recent: RecentTitles,
}

#[derive(Debug, Default)]
struct State {
    dirs: BTreeMap<PathBuf, DirState>,
    last: Option<Arc<Vec<SessionHeader>>>,
    by_id: HashMap<String, PathBuf>,
    /// Ids held by more than one log: (id, the log listed, a log left out).
    duplicates: Vec<(String, PathBuf, PathBuf)>,
    /// Read from disk since the index file was loaded (worth saving).
    touched: bool,
}

#[derive(Debug, Default)]
struct DirState {
    /// Trusted mtime when last listed.
    mtime: Option<SystemTime>,
    files: BTreeMap<PathBuf, FileState>,
}

#[derive(Debug, Clone)]
struct FileState {
    stamp: FileStamp,
    meta: LogMeta,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn io_err(path: &Path, source: io::Error) -> QueryError {
    QueryError::Io {
        path: path.to_owned(),
        source,
    }
}

fn trusted_mtime(meta: &fs::Metadata) -> Option<SystemTime> {
    let mtime = meta.modified().ok()?;
    let age = SystemTime::now().duration_since(mtime).ok()?;
    (age >= TRUST_AFTER).then_some(mtime)
}

/// Subdirectories of `dir`, sorted.
fn subdirs(dir: &Path) -> io::Result<Vec<PathBuf>> {
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

impl ForeignSource {
    /// A source reading `config.root` (which need not exist).
    pub fn new(config: SourceConfig) -> Self {
        ForeignSource {
            inner: Arc::new(Inner {
                config,
                state: Mutex::new(State::default()),
                loaded: OnceLock::new(),
                recent: RecentTitles::new(),
            }),
        }
    }

    /// The tool this source reads.
    pub fn origin(&self) -> &Origin {
        &self.inner.config.origin
    }

    /// What the last listing left out and why: one line per session id held by more than
    /// one log (the first in path order is listed). Lists the source first if it never was.
    pub fn listing_warnings(&self) -> Vec<String> {
        if let Err(e) = self.refresh() {
            return vec![format!(
                "{} sessions not listed: {e}",
                self.origin().tool_name()
            )];
        }
        let state = lock(&self.inner.state);
        state
            .duplicates
            .iter()
            .map(|(id, listed, other)| {
                format!(
                    "{} session {id:?} has two logs, {} and {}; only the first is listed",
                    self.origin().tool_name(),
                    listed.display(),
                    other.display()
                )
            })
            .collect()
    }

    /// The logs directory.
    pub fn root(&self) -> &Path {
        &self.inner.config.root
    }

    /// The log file of a listed session (as of the last listing).
    pub fn path_of(&self, id: &str) -> Option<PathBuf> {
        lock(&self.inner.state).by_id.get(id).cloned()
    }

    fn config(&self) -> &SourceConfig {
        &self.inner.config
    }

    /// Seed the cache from the index file, once.
    fn ensure_loaded(&self) {
        self.inner.loaded.get_or_init(|| {
            let Some(file) = &self.config().index_file else {
                return;
            };
            let Some(index) = source_index::load(file, self.origin(), self.root()) else {
                return;
            };
            let mut state = lock(&self.inner.state);
            for dir in index.dirs {
                let Some(path) = source_index::child(self.root(), &dir.dir) else {
                    continue;
                };
                let mut files = BTreeMap::new();
                for f in dir.files {
                    if let (Some(file_path), Some(stamp)) =
                        (source_index::child(&path, &f.name), f.stamp.checked())
                    {
                        files.insert(
                            file_path,
                            FileState {
                                stamp,
                                meta: f.meta,
                            },
                        );
                    }
                }
                state.dirs.insert(
                    path,
                    DirState {
                        mtime: dir.mtime.and_then(source_index::to_system),
                        files,
                    },
                );
            }
        });
    }

    /// The directories that hold logs: Claude Code's project dirs, Codex's day dirs.
    fn leaf_dirs(&self) -> Result<Vec<PathBuf>, QueryError> {
        let root = self.root();
        let top = subdirs(root).map_err(|e| io_err(root, e))?;
        if *self.origin() != Origin::Codex {
            return Ok(top);
        }
        let mut days = Vec::new();
        for year in top {
            let months = match subdirs(&year) {
                Ok(m) => m,
                Err(e) => {
                    tracing::warn!(dir = %year.display(), error = %e, "skipping unreadable directory");
                    continue;
                }
            };
            for month in months {
                match subdirs(&month) {
                    Ok(d) => days.extend(d),
                    Err(e) => {
                        tracing::warn!(dir = %month.display(), error = %e, "skipping unreadable directory");
                    }
                }
            }
        }
        Ok(days)
    }

    /// Whether a file name is a session log of this source (sub-agent files are not).
    fn is_log_name(&self, name: &str) -> bool {
        let Some(stem) = name.strip_suffix(".jsonl") else {
            return false;
        };
        match self.origin() {
            Origin::ClaudeCode => !stem.is_empty() && !stem.starts_with("agent-"),
            Origin::Codex => stem.starts_with("rollout-"),
            Origin::Dsh | Origin::Other(_) => false,
        }
    }

    /// Scan (or continue scanning) a log's listing facts.
    fn scan_meta(&self, path: &Path, prior: Option<&FileState>, stamp: FileStamp) -> LogMeta {
        let meta = match prior {
            Some(p) if p.stamp.same_file(&stamp) && stamp.len >= p.stamp.len => p.meta.clone(),
            _ => LogMeta::default(),
        };
        let config = self.config();
        let result = match self.origin() {
            Origin::ClaudeCode => {
                claude_code::scan_meta(path, meta, config.max_line_bytes, config.clean_title)
            }
            Origin::Codex => {
                codex::scan_meta(path, meta, config.max_line_bytes, config.clean_title)
            }
            Origin::Dsh | Origin::Other(_) => Ok(LogMeta::default()),
        };
        result.unwrap_or_else(|e| {
            tracing::warn!(error = %e, "unreadable foreign log; skipped");
            LogMeta::default()
        })
    }

    /// Re-list one directory; returns whether anything in it may have changed.
    fn refresh_dir(&self, dir: &Path, state: &mut DirState) -> bool {
        let meta = match fs::metadata(dir) {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!(dir = %dir.display(), error = %e, "skipping unreadable directory");
                let had = !state.files.is_empty();
                *state = DirState::default();
                return had;
            }
        };
        if state.mtime.is_some() && state.mtime == meta.modified().ok() {
            return false;
        }
        let entries = match fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) => {
                tracing::warn!(dir = %dir.display(), error = %e, "skipping unreadable directory");
                state.files.clear();
                return true;
            }
        };
        let mut files = BTreeMap::new();
        for entry in entries.flatten() {
            let name = entry.file_name();
            if !name.to_str().is_some_and(|n| self.is_log_name(n)) {
                continue;
            }
            let path = entry.path();
            // Follows a symlink; anything but a regular file (FIFO, device, dir) is skipped.
            let Ok(file_meta) = fs::metadata(&path) else {
                continue;
            };
            if !file_meta.is_file() {
                continue;
            }
            let stamp = FileStamp::of(&file_meta);
            let prior = state.files.remove(&path);
            let entry = match prior {
                Some(p) if p.stamp == stamp => p,
                other => FileState {
                    meta: self.scan_meta(&path, other.as_ref(), stamp),
                    stamp,
                },
            };
            files.insert(path, entry);
        }
        state.files = files;
        state.mtime = trusted_mtime(&meta);
        true
    }

    /// Bring the listing up to date.
    fn refresh(&self) -> Result<Arc<Vec<SessionHeader>>, QueryError> {
        self.ensure_loaded();
        let mut state = lock(&self.inner.state);
        if !self.root().is_dir() {
            state.dirs.clear();
            state.by_id.clear();
            let empty = Arc::new(Vec::new());
            state.last = Some(Arc::clone(&empty));
            return Ok(empty);
        }
        let leaves = self.leaf_dirs()?;
        let mut changed = state.last.is_none() || leaves.len() != state.dirs.len();
        let mut dirs = BTreeMap::new();
        for leaf in leaves {
            let mut dir = state.dirs.remove(&leaf).unwrap_or_default();
            let relisted = self.refresh_dir(&leaf, &mut dir);
            changed |= relisted;
            state.touched |= relisted;
            dirs.insert(leaf, dir);
        }
        let removed = !state.dirs.is_empty();
        changed |= removed;
        state.touched |= removed;
        state.dirs = dirs;
        if !changed && let Some(last) = &state.last {
            return Ok(Arc::clone(last));
        }
        let mut by_id: HashMap<String, PathBuf> = HashMap::new();
        let mut duplicates = Vec::new();
        let mut headers = Vec::new();
        for dir in state.dirs.values() {
            for (path, file) in &dir.files {
                let (Some(native), Some(created_at)) = (&file.meta.native_id, file.meta.created_at)
                else {
                    continue;
                };
                let id = self.origin().namespaced(native);
                if let Some(listed) = by_id.get(&id) {
                    // The first in path order is listed; the others are reported.
                    duplicates.push((id, listed.clone(), path.clone()));
                    continue;
                }
                by_id.insert(id.clone(), path.clone());
                headers.push(SessionHeader::new(id, created_at, file.meta.cwd.clone()));
            }
        }
        headers.sort_by(newest_first);
        state.by_id = by_id;
        state.duplicates = duplicates;
        if let Some(last) = &state.last
            && **last == headers
        {
            return Ok(Arc::clone(last));
        }
        let list = Arc::new(headers);
        state.last = Some(Arc::clone(&list));
        Ok(list)
    }

    /// A listed session's log and its current listing facts (revalidated by metadata).
    fn locate(&self, id: &str) -> Result<(PathBuf, LogMeta), QueryError> {
        if Origin::split_id(id).map(|(o, _)| o).as_ref() != Some(self.origin()) {
            return Err(QueryError::NotFound { id: id.to_owned() });
        }
        if self.path_of(id).is_none() {
            self.refresh()?;
        }
        let path = self
            .path_of(id)
            .ok_or_else(|| QueryError::NotFound { id: id.to_owned() })?;
        let file_meta = match fs::metadata(&path) {
            Ok(m) if m.is_file() => m,
            Ok(_) => return Err(QueryError::NotFound { id: id.to_owned() }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(QueryError::NotFound { id: id.to_owned() });
            }
            Err(e) => return Err(io_err(&path, e)),
        };
        let stamp = FileStamp::of(&file_meta);
        let mut state = lock(&self.inner.state);
        let Some(parent) = path.parent().map(Path::to_path_buf) else {
            return Err(QueryError::NotFound { id: id.to_owned() });
        };
        let dir = state.dirs.entry(parent).or_default();
        let prior = dir.files.get(&path).cloned();
        let meta = match prior {
            Some(p) if p.stamp == stamp => p.meta,
            other => {
                let meta = self.scan_meta(&path, other.as_ref(), stamp);
                dir.files.insert(
                    path.clone(),
                    FileState {
                        stamp,
                        meta: meta.clone(),
                    },
                );
                state.touched = true;
                meta
            }
        };
        Ok((path, meta))
    }

    fn header(id: &str, meta: &LogMeta) -> Result<SessionHeader, QueryError> {
        let created_at = meta
            .created_at
            .ok_or_else(|| QueryError::NotFound { id: id.to_owned() })?;
        Ok(SessionHeader::new(id, created_at, meta.cwd.clone()))
    }

    /// The cache as an index file.
    fn snapshot(state: &State, root: &Path) -> Vec<DirRecord> {
        state
            .dirs
            .iter()
            .filter_map(|(dir, d)| {
                let name = source_index::relative(root, dir)?;
                let files = d
                    .files
                    .iter()
                    .filter_map(|(path, f)| {
                        Some(FileRecord {
                            name: path.file_name()?.to_str()?.to_owned(),
                            stamp: f.stamp,
                            meta: f.meta.clone(),
                        })
                    })
                    .collect();
                Some(DirRecord {
                    dir: name,
                    mtime: d.mtime.and_then(source_index::from_system),
                    files,
                })
            })
            .collect()
    }
}

impl Drop for Inner {
    /// Save the listing cache when this process read anything it did not hold.
    fn drop(&mut self) {
        let Some(file) = &self.config.index_file else {
            return;
        };
        let state = self
            .state
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !state.touched {
            return;
        }
        let index = SourceIndex::new(
            &self.config.origin,
            &self.config.root,
            ForeignSource::snapshot(state, &self.config.root),
        );
        if let Err(e) = source_index::save(file, &index) {
            tracing::debug!(file = %file.display(), error = %e, "foreign listing cache not saved");
        }
    }
}

impl SessionQuery for ForeignSource {
    fn list_sessions(&self) -> Result<Arc<Vec<SessionHeader>>, QueryError> {
        self.refresh()
    }

    fn read_title(&self, id: &str) -> Result<Option<String>, QueryError> {
        let (_, meta) = self.locate(id)?;
        Ok(meta.title().map(str::to_owned))
    }

    fn read_title_recent(
        &self,
        id: &str,
        max_age: Duration,
    ) -> Result<Option<Arc<str>>, QueryError> {
        self.inner.recent.get(id, max_age, |id| self.read_title(id))
    }

    fn with_recent_titles(&self, max_age: Duration, f: &mut dyn FnMut(&mut TitleLookup<'_>)) {
        self.inner
            .recent
            .with_lookup(max_age, &|id| self.read_title(id), f);
    }

    fn log_stamp(&self, id: &str) -> Result<Option<Stamp>, QueryError> {
        let (path, _) = self.locate(id)?;
        let meta = fs::metadata(&path).map_err(|e| io_err(&path, e))?;
        Ok(Some(Stamp::of(&meta)))
    }

    fn read_surface(&self, id: &str) -> Result<Surface, QueryError> {
        let (path, meta) = self.locate(id)?;
        let header = Self::header(id, &meta)?;
        surface_read::read(self.origin(), &path, header, self.config().max_line_bytes)
    }

    fn scan_surface(
        &self,
        id: &str,
        visitor: &mut dyn SurfaceVisitor,
    ) -> Result<SurfaceScan, QueryError> {
        let (path, meta) = self.locate(id)?;
        let header = Self::header(id, &meta)?;
        surface_read::scan(
            self.origin(),
            &path,
            header,
            self.config().max_line_bytes,
            visitor,
        )
    }
}
