//! A foreign tool that keeps one file per session (Claude Code, Codex CLI, Gemini CLI) as a
//! read-only [`SessionQuery`]: listing with a cache revalidated by file metadata (persisted
//! to the platform cache dir, never next to the logs), titles, and streaming surface reads.
//! Nothing here ever writes under the root, and nothing below the root is reached through
//! a symbolic link (`lstat` on the way, `O_NOFOLLOW` at the open).

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

use super::gemini::{self, projects::ProjectDirs};
use super::log_meta::LogMeta;
use super::origin::Origin;
use super::source::SourceConfig;
use super::source_index::{self, DirRecord, FileRecord, FileStamp, SourceIndex};
use super::{claude_code, codex, copilot, qwen, surface_read};

/// How old a directory's mtime must be before an unchanged value proves an unchanged
/// directory (a change within the same clock tick would not show).
const TRUST_AFTER: Duration = Duration::from_secs(2);

/// A read-only session source over another tool's session files.
#[derive(Debug)]
pub struct LogFiles {
    inner: Inner,
}

#[derive(Debug)]
struct Inner {
    config: SourceConfig,
    format: Format,
    state: Mutex<State>,
    loaded: OnceLock<()>,
    recent: RecentTitles,
    /// Gemini CLI: what is known of its project directories (the chats' cwds).
    projects: Mutex<ProjectDirs>,
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
    /// The project directories' state the listing was built with (Gemini CLI).
    projects_generation: u64,
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

/// Subdirectories of `dir` (a link to one is not followed), sorted.
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

/// How one tool lays out and writes its session files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    ClaudeCode,
    Codex,
    Gemini,
    Qwen,
    Copilot,
}

impl Format {
    fn of(origin: &Origin) -> Option<Format> {
        match origin {
            Origin::ClaudeCode => Some(Format::ClaudeCode),
            Origin::Codex => Some(Format::Codex),
            Origin::Gemini => Some(Format::Gemini),
            Origin::Qwen => Some(Format::Qwen),
            Origin::Copilot => Some(Format::Copilot),
            Origin::Dsh | Origin::OpenCode | Origin::Other(_) => None,
        }
    }
}

impl LogFiles {
    /// A source reading `config.root` (which need not exist); `None` for an origin that
    /// does not keep one file per session.
    pub fn new(config: SourceConfig) -> Option<Self> {
        Some(LogFiles {
            inner: Inner {
                format: Format::of(&config.origin)?,
                config,
                state: Mutex::new(State::default()),
                loaded: OnceLock::new(),
                recent: RecentTitles::new(),
                projects: Mutex::new(ProjectDirs::default()),
            },
        })
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

    /// The directories that hold logs: Claude Code's project dirs, Codex's day dirs (and
    /// the sessions dir itself, where the earliest rollouts are), Gemini CLI's project and
    /// chats dirs.
    fn leaf_dirs(&self) -> Result<Vec<PathBuf>, QueryError> {
        let root = self.root();
        match self.inner.format {
            Format::Gemini => return gemini::leaf_dirs(root).map_err(|e| io_err(root, e)),
            Format::ClaudeCode => return subdirs(root).map_err(|e| io_err(root, e)),
            // `<projects>/<sanitized cwd>/chats`.
            Format::Qwen => {
                let projects = subdirs(root).map_err(|e| io_err(root, e))?;
                return Ok(projects
                    .into_iter()
                    .map(|p| p.join("chats"))
                    .filter(|c| fs::symlink_metadata(c).is_ok_and(|m| m.is_dir()))
                    .collect());
            }
            // `<session-state>/<id>/events.jsonl`, and the older `<session-state>/<id>.jsonl`.
            Format::Copilot => {
                let mut dirs = vec![root.to_owned()];
                dirs.extend(subdirs(root).map_err(|e| io_err(root, e))?);
                return Ok(dirs);
            }
            Format::Codex => {}
        }
        let top = subdirs(root).map_err(|e| io_err(root, e))?;
        let mut days = vec![root.to_owned()];
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
        match self.inner.format {
            Format::ClaudeCode => name
                .strip_suffix(".jsonl")
                .is_some_and(|stem| !stem.is_empty() && !stem.starts_with("agent-")),
            Format::Codex => name
                .strip_suffix(".jsonl")
                .is_some_and(|stem| stem.starts_with("rollout-")),
            Format::Gemini => gemini::is_log_name(name),
            Format::Qwen => name
                .strip_suffix(".jsonl")
                .is_some_and(|stem| !stem.is_empty()),
            // A session's `events.jsonl`, or an older release's `<uuid>.jsonl`.
            Format::Copilot => {
                name == "events.jsonl"
                    || name.strip_suffix(".jsonl").is_some_and(|stem| {
                        stem.len() == 36 && stem.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-')
                    })
            }
        }
    }

    /// Scan (or continue scanning) a log's listing facts.
    fn scan_meta(&self, path: &Path, prior: Option<&FileState>, stamp: FileStamp) -> LogMeta {
        let meta = match prior {
            Some(p) if p.stamp.same_file(&stamp) && stamp.len >= p.stamp.len => p.meta.clone(),
            _ => LogMeta::default(),
        };
        let config = self.config();
        let (max, clean) = (config.max_line_bytes, config.clean_title);
        let result = match self.inner.format {
            Format::ClaudeCode => claude_code::scan_meta(path, meta, max, clean),
            Format::Codex => codex::scan_meta(path, meta, max, clean),
            Format::Gemini => gemini::scan_meta(path, meta, max, clean),
            Format::Qwen => qwen::scan_meta(path, meta, max, clean),
            Format::Copilot => copilot::scan_meta(path, meta, max, clean),
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
        let entries: Vec<fs::DirEntry> = entries.flatten().collect();
        let names: std::collections::HashSet<std::ffi::OsString> =
            entries.iter().map(fs::DirEntry::file_name).collect();
        for entry in entries {
            let name = entry.file_name();
            let Some(name) = name.to_str() else {
                continue;
            };
            if !self.is_log_name(name) {
                continue;
            }
            if self.inner.format == Format::Gemini
                && gemini::is_superseded(name, &|n| names.contains(std::ffi::OsStr::new(n)))
            {
                continue;
            }
            let path = entry.path();
            // Never follows a link; anything but a regular file (link, FIFO, device, dir)
            // is skipped.
            let Ok(file_meta) = fs::symlink_metadata(&path) else {
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
        let projects = self.refresh_projects();
        let mut changed = state.last.is_none()
            || leaves.len() != state.dirs.len()
            || projects != state.projects_generation;
        state.projects_generation = projects;
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
                if !file.meta.listable() {
                    continue;
                }
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
                headers.push(
                    SessionHeader::new(id, created_at, self.cwd_of(path, &file.meta))
                        .with_branch(file.meta.branch.clone()),
                );
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
        if dsh_store::nofollow::check_below(self.root(), &path).is_err() {
            return Err(QueryError::NotFound { id: id.to_owned() });
        }
        let file_meta = match fs::symlink_metadata(&path) {
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

    fn header(&self, id: &str, path: &Path, meta: &LogMeta) -> Result<SessionHeader, QueryError> {
        let created_at = meta
            .created_at
            .filter(|_| meta.listable())
            .ok_or_else(|| QueryError::NotFound { id: id.to_owned() })?;
        Ok(SessionHeader::new(id, created_at, self.cwd_of(path, meta))
            .with_branch(meta.branch.clone()))
    }

    /// A session's cwd: its own, or (Gemini CLI) the one its project directory stands for.
    fn cwd_of(&self, path: &Path, meta: &LogMeta) -> Option<String> {
        if meta.cwd.is_some() || self.inner.format != Format::Gemini {
            return meta.cwd.clone();
        }
        let dir = gemini::project_dir_name(path)?;
        lock(&self.inner.projects).cwd_for(dir, meta.project_hash.as_deref())
    }

    /// Read Gemini CLI's project registry again if it changed; its state's generation.
    fn refresh_projects(&self) -> u64 {
        if self.inner.format != Format::Gemini {
            return 0;
        }
        let dirs = gemini::project_dirs(self.root());
        let mut projects = lock(&self.inner.projects);
        projects.refresh(self.root(), &dirs);
        projects.generation()
    }

    /// Working directories known from elsewhere (other sessions' cwds), matched against
    /// the project hashes Gemini CLI records; whether any was new.
    pub fn learn_dirs(&self, dirs: &mut dyn Iterator<Item = &str>) -> bool {
        self.inner.format == Format::Gemini && lock(&self.inner.projects).learn(dirs)
    }

    /// Whether this source wants to learn working directories ([`Self::learn_dirs`]).
    pub fn wants_dirs(&self) -> bool {
        self.inner.format == Format::Gemini
    }

    /// The stamp of a session file this source lists (links are not followed).
    pub fn stamp_at(&self, path: &Path) -> Option<Stamp> {
        dsh_store::nofollow::check_below(self.root(), path).ok()?;
        let meta = fs::symlink_metadata(path).ok()?;
        meta.is_file().then(|| Stamp::of(&meta))
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
            LogFiles::snapshot(state, &self.config.root),
        );
        if let Err(e) = source_index::save(file, &index) {
            tracing::debug!(file = %file.display(), error = %e, "foreign listing cache not saved");
        }
    }
}

impl SessionQuery for LogFiles {
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
        let mut scan = self.scan_surface(id, &mut surface_read::Nothing)?;
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
        let (path, meta) = self.locate(id)?;
        let header = self.header(id, &path, &meta)?;
        let max = self.config().max_line_bytes;
        match self.inner.format {
            Format::Gemini => gemini::scan(&path, header, max, visitor),
            Format::ClaudeCode | Format::Codex | Format::Qwen | Format::Copilot => {
                surface_read::scan(self.origin(), &path, header, max, visitor)
            }
        }
    }
}
