//! The dsh-compatible session store (SPEC §2.4, §2.5): locating logs, the single writer,
//! and the read-side [`SessionQuery`] with header and title caches.
//!
//! Caches are keyed by log path and revalidated by `(len, mtime)`, so repeated listings only
//! stat files; a log that changed is read again.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use super::error::StoreError;
use super::event::{EventData, SessionHeader};
use super::fold::SurfaceFolder;
use super::paths::{self, LOG_FILE, ZSTD_LOG_FILE};
use super::query::{QueryError, SessionQuery, Surface};
use super::reader::{self, LogFormat};
use super::writer::{self, SessionWriter};

/// A session store rooted at a directory. Cheap to clone; clones share caches.
#[derive(Debug, Clone)]
pub struct SessionStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    root: PathBuf,
    headers: Mutex<HeaderCache>,
    titles: Mutex<HashMap<PathBuf, CachedTitle>>,
}

/// File identity used for revalidation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    mtime: Option<SystemTime>,
}

impl Stamp {
    fn of(meta: &fs::Metadata) -> Self {
        Stamp {
            len: meta.len(),
            mtime: meta.modified().ok(),
        }
    }
}

#[derive(Debug, Default)]
struct HeaderCache {
    /// Per log path: its stamp and header (`None` when the header is unusable).
    entries: HashMap<PathBuf, (Stamp, Option<SessionHeader>)>,
    last: Option<Arc<Vec<SessionHeader>>>,
}

#[derive(Debug)]
struct CachedTitle {
    stamp: Stamp,
    title: Option<String>,
}

/// Where a session's log lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLocation {
    pub path: PathBuf,
    pub format: LogFormat,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The log of one session directory: the plain file if present, else the `.zstd` one.
fn log_in(dir: &Path) -> Option<(LogLocation, fs::Metadata)> {
    for (name, format) in [
        (LOG_FILE, LogFormat::Plain),
        (ZSTD_LOG_FILE, LogFormat::Zstd),
    ] {
        let path = dir.join(name);
        if let Ok(meta) = fs::metadata(&path)
            && meta.is_file()
        {
            return Some((LogLocation { path, format }, meta));
        }
    }
    None
}

fn sorted_subdirs(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let is_dir = entry.file_type().map(|t| t.is_dir()).unwrap_or(false);
        if is_dir {
            out.push(entry.path());
        }
    }
    out.sort();
    Ok(out)
}

impl SessionStore {
    /// A store rooted at `root` (which need not exist yet).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        SessionStore {
            inner: Arc::new(Inner {
                root: root.into(),
                headers: Mutex::new(HeaderCache::default()),
                titles: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// The store's root directory.
    pub fn root(&self) -> &Path {
        &self.inner.root
    }

    /// Find a session's log in any project directory (first project in name order wins).
    pub fn locate(&self, id: &str) -> Result<Option<LogLocation>, QueryError> {
        let encoded = paths::encode_session_id(id)?;
        let projects = match sorted_subdirs(self.root()) {
            Ok(p) => p,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(QueryError::Io {
                    path: self.root().to_owned(),
                    source,
                });
            }
        };
        Ok(projects
            .iter()
            .find_map(|project| log_in(&project.join(&encoded)).map(|(loc, _)| loc)))
    }

    /// Whether a session with this id has a log.
    pub fn exists(&self, id: &str) -> bool {
        matches!(self.locate(id), Ok(Some(_)))
    }

    /// Single writer. Existing session: takes the advisory lock ([`StoreError::Busy`] if held
    /// elsewhere), truncates a torn tail, loads events. Absent session and `create =
    /// Some(header)`: nothing on disk until the first append, which publishes the file
    /// atomically. Absent and `None`: [`StoreError::NotFound`].
    pub fn open_writer(
        &self,
        id: &str,
        create: Option<SessionHeader>,
    ) -> Result<SessionWriter, StoreError> {
        match self.locate(id)? {
            Some(loc) if !writer::writable(loc.format) => Err(StoreError::ReadOnly {
                id: id.to_owned(),
                path: loc.path,
            }),
            Some(loc) => SessionWriter::open_existing(loc.path, id),
            None => match create {
                None => Err(StoreError::NotFound { id: id.to_owned() }),
                Some(header) => {
                    if header.id != id {
                        return Err(StoreError::InvalidId {
                            id: id.to_owned(),
                            reason: format!("header id {:?} differs", header.id),
                        });
                    }
                    let dir = paths::session_dir(self.root(), header.cwd.as_deref(), id)?;
                    Ok(SessionWriter::pending(header, self.root().to_owned(), dir))
                }
            },
        }
    }

    fn require(&self, id: &str) -> Result<LogLocation, QueryError> {
        self.locate(id)?
            .ok_or_else(|| QueryError::NotFound { id: id.to_owned() })
    }

    fn list_uncached_paths(&self) -> Result<Vec<(PathBuf, LogLocation, fs::Metadata)>, QueryError> {
        let projects = match sorted_subdirs(self.root()) {
            Ok(p) => p,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => {
                return Err(QueryError::Io {
                    path: self.root().to_owned(),
                    source,
                });
            }
        };
        let mut out = Vec::new();
        for project in projects {
            let sessions = match sorted_subdirs(&project) {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(dir = %project.display(), error = %e, "skipping unreadable project directory");
                    continue;
                }
            };
            for dir in sessions {
                if let Some((loc, meta)) = log_in(&dir) {
                    out.push((dir, loc, meta));
                }
            }
        }
        Ok(out)
    }
}

impl SessionQuery for SessionStore {
    fn list_sessions(&self) -> Result<Arc<Vec<SessionHeader>>, QueryError> {
        let found = self.list_uncached_paths()?;
        let mut cache = lock(&self.inner.headers);
        let mut live = HashSet::with_capacity(found.len());
        let mut headers = Vec::with_capacity(found.len());
        let mut seen_ids = HashSet::new();
        for (dir, loc, meta) in found {
            let stamp = Stamp::of(&meta);
            let cached = match cache.entries.get(&loc.path) {
                Some((s, h)) if *s == stamp => h.clone(),
                _ => {
                    let header = match reader::read_header(&loc.path, loc.format) {
                        Ok(h) => {
                            let dir_name = dir.file_name().and_then(|n| n.to_str());
                            let matches_dir = paths::encode_session_id(&h.id)
                                .ok()
                                .is_some_and(|enc| Some(enc.as_str()) == dir_name);
                            if matches_dir {
                                Some(h)
                            } else {
                                tracing::warn!(path = %loc.path.display(), id = %h.id, "header id does not match its directory; skipped");
                                None
                            }
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, "unreadable session header; skipped");
                            None
                        }
                    };
                    cache
                        .entries
                        .insert(loc.path.clone(), (stamp, header.clone()));
                    header
                }
            };
            live.insert(loc.path);
            if let Some(h) = cached
                && seen_ids.insert(h.id.clone())
            {
                headers.push(h);
            }
        }
        cache.entries.retain(|p, _| live.contains(p));
        headers.sort_by(|a, b| {
            b.created_at
                .cmp(&a.created_at)
                .then_with(|| a.id.as_bytes().cmp(b.id.as_bytes()))
        });
        if let Some(last) = &cache.last
            && **last == headers
        {
            return Ok(Arc::clone(last));
        }
        let list = Arc::new(headers);
        cache.last = Some(Arc::clone(&list));
        Ok(list)
    }

    fn read_title(&self, id: &str) -> Result<Option<String>, QueryError> {
        let loc = self.require(id)?;
        let meta = fs::metadata(&loc.path).map_err(|source| QueryError::Io {
            path: loc.path.clone(),
            source,
        })?;
        let stamp = Stamp::of(&meta);
        if let Some(c) = lock(&self.inner.titles).get(&loc.path)
            && c.stamp == stamp
        {
            return Ok(c.title.clone());
        }
        let mut title = None;
        let summary = reader::scan_log(&loc.path, loc.format, &mut |event, _| {
            if let EventData::SessionTitle(t) = event.data {
                title = Some(t.title);
            }
            Ok(())
        })?;
        reader::check_header_id(&loc.path, &summary.header, id)?;
        lock(&self.inner.titles).insert(
            loc.path,
            CachedTitle {
                stamp,
                title: title.clone(),
            },
        );
        Ok(title)
    }

    fn read_surface(&self, id: &str) -> Result<Surface, QueryError> {
        let loc = self.require(id)?;
        let mut folder = SurfaceFolder::new();
        let mut kept = HashMap::new();
        let mut removed = Vec::new();
        let summary = reader::scan_log(&loc.path, loc.format, &mut |event, line| {
            if event.surface_op.is_none() {
                return Ok(());
            }
            removed.clear();
            folder
                .push_collecting(&event, &mut removed)
                .map_err(|e| QueryError::Corrupt {
                    path: loc.path.clone(),
                    line,
                    reason: e.to_string(),
                })?;
            for seq in &removed {
                kept.remove(seq);
            }
            kept.insert(event.seq, event);
            Ok(())
        })?;
        reader::check_header_id(&loc.path, &summary.header, id)?;
        let events = folder
            .surface()
            .iter()
            .filter_map(|seq| kept.remove(seq))
            .collect();
        Ok(Surface {
            session: summary.header,
            captured_through_seq: summary.next_seq.checked_sub(1),
            events,
        })
    }
}
