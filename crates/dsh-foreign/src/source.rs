//! One foreign tool's sessions as a read-only [`SessionQuery`] (docs/foreign-sources.md):
//! tools that keep a file per session ([`LogFiles`]: Claude Code, Codex CLI, Gemini CLI)
//! and OpenCode, which keeps its sessions in a database ([`OpenCodeSource`]). Nothing here
//! ever writes under a tool's directory.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use dsh_store::listing::Stamp;
use dsh_store::query::{SummaryLookup, TitleLookup};
use dsh_store::{
    QueryError, RecentSummaries, SessionHeader, SessionQuery, SessionSummary, Surface, SurfaceScan,
    SurfaceVisitor,
};

use super::log_files::LogFiles;
use super::log_meta::TitleCleaner;
use super::opencode::OpenCodeSource;
pub use super::opencode::snapshot::CopyLimits;
use super::origin::Origin;

/// How to read one foreign source.
#[derive(Debug, Clone)]
pub struct SourceConfig {
    pub origin: Origin,
    /// The directory holding the sessions: Claude Code's `projects` dir, Codex's `sessions`
    /// dir, Gemini CLI's home (`~/.gemini`), OpenCode's data dir, Qwen Code's `projects`
    /// dir, GitHub Copilot CLI's `session-state` dir.
    pub root: PathBuf,
    /// Longest line (or whole JSON document) read (the dsh store's limit).
    pub max_line_bytes: u64,
    /// Turns a first user message into a title.
    pub clean_title: TitleCleaner,
    /// Where the listing cache is kept between processes (`None`: memory only); OpenCode
    /// keeps its copy of the tool's database next to it.
    pub index_file: Option<PathBuf>,
    /// How much room OpenCode's database copies may take (other sources ignore it).
    pub copy_limits: CopyLimits,
}

impl SourceConfig {
    /// The sessions directory for a configured path, so both the tool's home and the
    /// sessions directory itself are accepted: `<path>/projects` (Claude Code, Qwen Code),
    /// `<path>/sessions` (Codex) or `<path>/session-state` (GitHub Copilot CLI) when that
    /// exists; for Gemini CLI the home (the parent of a
    /// configured `tmp`), for OpenCode the data dir (the parent of a configured `storage`).
    pub fn logs_dir(origin: &Origin, configured: &Path) -> PathBuf {
        let (sub, home_of) = match origin {
            Origin::ClaudeCode | Origin::Qwen => ("projects", false),
            Origin::Codex => ("sessions", false),
            Origin::Gemini => ("tmp", true),
            Origin::OpenCode => ("storage", true),
            Origin::Copilot => ("session-state", false),
            Origin::Dsh | Origin::Other(_) => return configured.to_owned(),
        };
        if home_of {
            let named_sub = configured.file_name().is_some_and(|n| n == sub);
            return match configured.parent() {
                Some(parent) if named_sub && !configured.join(sub).is_dir() => parent.to_owned(),
                _ => configured.to_owned(),
            };
        }
        let nested = configured.join(sub);
        if nested.is_dir() {
            nested
        } else {
            configured.to_owned()
        }
    }
}

/// A read-only session source over another tool's sessions. Cheap to clone; clones share
/// caches.
#[derive(Debug, Clone)]
pub struct ForeignSource {
    backend: Arc<Backend>,
    /// Summaries by session id with when they were read (for interactive listings).
    summaries: Arc<RecentSummaries>,
}

#[derive(Debug)]
enum Backend {
    Files(LogFiles),
    OpenCode(OpenCodeSource),
}

impl ForeignSource {
    /// A source reading `config.root` (which need not exist).
    pub fn new(config: SourceConfig) -> Self {
        let backend = match config.origin {
            Origin::OpenCode => Backend::OpenCode(OpenCodeSource::new(config)),
            _ => match LogFiles::new(config.clone()) {
                Some(files) => Backend::Files(files),
                // No tool keeps its sessions like this: a source that lists nothing.
                None => Backend::OpenCode(OpenCodeSource::empty(config)),
            },
        };
        ForeignSource {
            backend: Arc::new(backend),
            summaries: Arc::new(RecentSummaries::new()),
        }
    }

    fn query(&self) -> &dyn SessionQuery {
        match &*self.backend {
            Backend::Files(f) => f,
            Backend::OpenCode(o) => o,
        }
    }

    /// The tool this source reads.
    pub fn origin(&self) -> &Origin {
        match &*self.backend {
            Backend::Files(f) => f.origin(),
            Backend::OpenCode(o) => o.origin(),
        }
    }

    /// The directory read.
    pub fn root(&self) -> &Path {
        match &*self.backend {
            Backend::Files(f) => f.root(),
            Backend::OpenCode(o) => o.root(),
        }
    }

    /// What the last listing left out and why, one line each. Lists the source first if
    /// it never was.
    pub fn listing_warnings(&self) -> Vec<String> {
        match &*self.backend {
            Backend::Files(f) => f.listing_warnings(),
            Backend::OpenCode(o) => o.listing_warnings(),
        }
    }

    /// Where a listed session is kept (as of the last listing): its log file; for an
    /// OpenCode session in the database, the database path with `#<session id>` appended.
    /// It names the session in the search index; [`stamp_at`](Self::stamp_at) tells when
    /// it changed.
    pub fn path_of(&self, id: &str) -> Option<PathBuf> {
        match &*self.backend {
            Backend::Files(f) => f.path_of(id),
            Backend::OpenCode(o) => o.path_of(id),
        }
    }

    /// The current stamp of what [`path_of`](Self::path_of) named: `None` when it is gone.
    pub fn stamp_at(&self, path: &Path) -> Option<Stamp> {
        match &*self.backend {
            Backend::Files(f) => f.stamp_at(path),
            Backend::OpenCode(o) => o.stamp_at(path),
        }
    }

    /// Whether this source matches sessions to working directories known from elsewhere
    /// (Gemini CLI records only a hash of its project root).
    pub fn wants_dirs(&self) -> bool {
        matches!(&*self.backend, Backend::Files(f) if f.wants_dirs())
    }

    /// Working directories known from elsewhere; whether any was new (the listing may
    /// then change).
    pub fn learn_dirs(&self, dirs: &mut dyn Iterator<Item = &str>) -> bool {
        match &*self.backend {
            Backend::Files(f) => f.learn_dirs(dirs),
            Backend::OpenCode(_) => false,
        }
    }
}

impl SessionQuery for ForeignSource {
    fn list_sessions(&self) -> Result<Arc<Vec<SessionHeader>>, QueryError> {
        self.query().list_sessions()
    }

    fn read_title(&self, id: &str) -> Result<Option<String>, QueryError> {
        self.query().read_title(id)
    }

    fn read_title_recent(
        &self,
        id: &str,
        max_age: Duration,
    ) -> Result<Option<Arc<str>>, QueryError> {
        self.query().read_title_recent(id, max_age)
    }

    fn with_recent_titles(&self, max_age: Duration, f: &mut dyn FnMut(&mut TitleLookup<'_>)) {
        self.query().with_recent_titles(max_age, f);
    }

    /// The title, and as the time of last activity when the session was last changed as
    /// its tool records it: the log file's modification time (Claude Code, Codex CLI and
    /// Gemini CLI append to it as the conversation goes), OpenCode's newest `time_updated`
    /// of its messages and parts — one `stat` or a lookup, never a read of the log. No
    /// message count: counting would mean reading whole logs, and the tools' records are
    /// not messages one for one.
    fn read_summary(&self, id: &str) -> Result<SessionSummary, QueryError> {
        let title = self.query().read_title(id)?;
        let last_active_ms = self
            .query()
            .log_stamp(id)?
            .and_then(|s| s.mtime)
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .and_then(|d| i64::try_from(d.as_millis()).ok());
        Ok(SessionSummary {
            title: title.map(Arc::from),
            last_active_ms,
            messages: None,
            damage: None,
            // Its title falls back to its first message already.
            first_prompt: None,
        })
    }

    fn read_summary_recent(
        &self,
        id: &str,
        max_age: Duration,
    ) -> Result<SessionSummary, QueryError> {
        self.summaries.get(id, max_age, |id| self.read_summary(id))
    }

    fn with_recent_summaries(&self, max_age: Duration, f: &mut dyn FnMut(&mut SummaryLookup<'_>)) {
        self.summaries
            .with_lookup(max_age, &|id| self.read_summary(id), f);
    }

    fn log_stamp(&self, id: &str) -> Result<Option<Stamp>, QueryError> {
        self.query().log_stamp(id)
    }

    fn read_surface(&self, id: &str) -> Result<Surface, QueryError> {
        self.query().read_surface(id)
    }

    fn scan_surface(
        &self,
        id: &str,
        visitor: &mut dyn SurfaceVisitor,
    ) -> Result<SurfaceScan, QueryError> {
        self.query().scan_surface(id, visitor)
    }
}
