//! The dsh-compatible session store (SPEC §2.4, §2.5): locating logs, the single writer,
//! and the read-side [`SessionQuery`] with header and title caches.
//!
//! Caches are keyed by log path and revalidated by `(len, mtime)`, so repeated listings only
//! stat files; a log that changed is read again.

use std::collections::HashMap;
use std::fs;
use std::io::{self, BufReader, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use super::error::StoreError;
use super::event::{EventData, SessionHeader};
use super::fold::SurfaceFolder;
use super::listing::{HeaderIndex, Stamp, log_in, sorted_subdirs};
use super::paths;
use super::query::{QueryError, SessionQuery, Surface};
use super::reader::{self, LogFormat, ScanPos, UNTERMINATED};
use super::writer::{self, SessionWriter};

pub use super::listing::LogLocation;

/// A session store rooted at a directory. Cheap to clone; clones share caches.
#[derive(Debug, Clone)]
pub struct SessionStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    root: PathBuf,
    headers: Mutex<HeaderIndex>,
    titles: Mutex<HashMap<PathBuf, CachedTitle>>,
}

/// The latest title of one log as of `stamp`, and where the scan stopped, so a grown
/// append-only log is only scanned from there.
#[derive(Debug, Clone)]
struct CachedTitle {
    stamp: Stamp,
    format: LogFormat,
    /// End of the readable prefix scanned; `None` if the scan hit real damage (rescan).
    resume: Option<ScanPos>,
    title: Option<String>,
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

impl SessionStore {
    /// A store rooted at `root` (which need not exist yet).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        SessionStore {
            inner: Arc::new(Inner {
                root: root.into(),
                headers: Mutex::new(HeaderIndex::default()),
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

    /// A session's log and its metadata: the listing's location when still there, else a
    /// search of the project directories.
    fn find(&self, id: &str) -> Result<(LogLocation, fs::Metadata), QueryError> {
        paths::encode_session_id(id)?;
        let known = lock(&self.inner.headers).location_of(id).cloned();
        if let Some(loc) = known
            && loc.format == LogFormat::Plain
            && let Ok(meta) = fs::metadata(&loc.path)
            && meta.is_file()
        {
            return Ok((loc, meta));
        }
        let loc = self
            .locate(id)?
            .ok_or_else(|| QueryError::NotFound { id: id.to_owned() })?;
        let meta = fs::metadata(&loc.path).map_err(|e| io_err(&loc.path, e))?;
        Ok((loc, meta))
    }

    /// Scan for the latest title, continuing a clean earlier scan when the log only grew.
    fn scan_title(
        &self,
        id: &str,
        loc: &LogLocation,
        stamp: Stamp,
        cached: Option<CachedTitle>,
    ) -> Result<CachedTitle, QueryError> {
        let mut title = None;
        let mut on_event = |event: super::event::Event, _line: u64| {
            if let EventData::SessionTitle(t) = event.data {
                title = Some(t.title);
            }
            Ok(())
        };
        if let Some(c) = cached
            && c.format == LogFormat::Plain
            && loc.format == LogFormat::Plain
            && let Some(pos) = c.resume
            && stamp.same_file(&c.stamp)
            && stamp.len >= pos.readable_len
        {
            let mut file = fs::File::open(&loc.path).map_err(|e| io_err(&loc.path, e))?;
            file.seek(SeekFrom::Start(pos.readable_len))
                .map_err(|e| io_err(&loc.path, e))?;
            let (end, torn) = reader::scan_events(
                &loc.path,
                BufReader::with_capacity(256 * 1024, file),
                pos,
                &mut on_event,
            )?;
            let resume = resumable(torn.as_ref()).then_some(end);
            return Ok(CachedTitle {
                stamp,
                format: loc.format,
                resume,
                title: title.or(c.title),
            });
        }
        let summary = reader::scan_log(&loc.path, loc.format, &mut on_event)?;
        reader::check_header_id(&loc.path, &summary.header, id)?;
        let resume = resumable(summary.torn_tail.as_ref()).then_some(ScanPos {
            readable_len: summary.readable_len,
            next_seq: summary.next_seq,
            line: summary.lines,
        });
        Ok(CachedTitle {
            stamp,
            format: loc.format,
            resume,
            title,
        })
    }
}

/// A scan can be continued later unless it stopped at real damage (a final line still
/// being written is not damage yet).
fn resumable(torn: Option<&reader::TornTail>) -> bool {
    torn.is_none_or(|t| t.reason == UNTERMINATED)
}

impl SessionQuery for SessionStore {
    fn list_sessions(&self) -> Result<Arc<Vec<SessionHeader>>, QueryError> {
        lock(&self.inner.headers).refresh(self.root())
    }

    fn read_title(&self, id: &str) -> Result<Option<String>, QueryError> {
        let (loc, meta) = self.find(id)?;
        let stamp = Stamp::of(&meta);
        let cached = lock(&self.inner.titles).get(&loc.path).cloned();
        if let Some(c) = &cached
            && c.stamp == stamp
            && c.format == loc.format
        {
            return Ok(c.title.clone());
        }
        let fresh = self.scan_title(id, &loc, stamp, cached)?;
        let title = fresh.title.clone();
        lock(&self.inner.titles).insert(loc.path, fresh);
        Ok(title)
    }

    fn read_surface(&self, id: &str) -> Result<Surface, QueryError> {
        let (loc, _) = self.find(id)?;
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
