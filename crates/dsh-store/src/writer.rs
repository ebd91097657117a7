//! The single writer of a session (docs/session-store.md: on-disk layout): create-on-first-event published atomically,
//! batched appends with fsync, torn-tail repair on open, and an advisory lock.
//!
//! The lock is `flock`-style on the log file itself (`File::try_lock`), held for the
//! writer's lifetime; a second writer, in this process or another, gets
//! [`StoreError::Busy`]. Readers never lock.

use std::fs::{self, File};
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::error::StoreError;
use super::event::{Event, EventData, SessionHeader, SurfaceOp, now_ms};
use super::fold::SurfaceFolder;
use super::paths::LOG_FILE;
use super::query::QueryError;
use super::reader::{self, LogFormat};

/// An event to append; the writer assigns `seq` and `time`.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    pub data: EventData,
    pub surface_op: Option<SurfaceOp>,
    pub source_event_seqs: Option<Vec<u64>>,
}

impl NewEvent {
    /// A non-surface event.
    pub fn plain(data: EventData) -> Self {
        NewEvent {
            data,
            surface_op: None,
            source_event_seqs: None,
        }
    }

    /// A surface event appended to the surface.
    pub fn appended(data: EventData) -> Self {
        NewEvent {
            data,
            surface_op: Some(SurfaceOp::Append),
            source_event_seqs: None,
        }
    }
}

enum State {
    /// Nothing on disk yet: the first append publishes the file into `dir`.
    Pending { dir: PathBuf, root: PathBuf },
    /// The locked, published log; `len` is its length.
    Open { file: File, len: u64, dirty: bool },
    /// A write failed and could not be undone.
    Poisoned,
}

/// The one writer of a session. Dropping it syncs buffered appends and releases the lock.
pub struct SessionWriter {
    header: SessionHeader,
    path: PathBuf,
    events: Vec<Event>,
    folder: SurfaceFolder,
    state: State,
}

impl std::fmt::Debug for SessionWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionWriter")
            .field("id", &self.header.id)
            .field("path", &self.path)
            .field("events", &self.events.len())
            .finish_non_exhaustive()
    }
}

impl SessionWriter {
    /// Open an existing plain log: lock it, truncate a torn tail, load its events.
    pub(crate) fn open_existing(
        path: PathBuf,
        id: &str,
        limits: &reader::Limits,
    ) -> Result<Self, StoreError> {
        let mut file =
            super::nofollow::open_regular_rw(&path).map_err(|e| StoreError::io(&path, e))?;
        lock(&file, &path, id)?;
        let mut events = Vec::new();
        let mut folder = SurfaceFolder::new();
        let mut fold_failure = None;
        let summary = reader::scan_limited(
            &path,
            std::io::BufReader::with_capacity(256 * 1024, &file),
            limits,
            &mut |event, line| {
                if let Err(e) = folder.push(&event) {
                    fold_failure.get_or_insert((line, e));
                }
                events.push(event);
                Ok(())
            },
        )?;
        if let Some((line, e)) = fold_failure {
            return Err(QueryError::Corrupt {
                path,
                line,
                reason: e.to_string(),
            }
            .into());
        }
        reader::check_header_id(&path, &summary.header, id)?;
        let file_len = file
            .seek(SeekFrom::End(0))
            .map_err(|e| StoreError::io(&path, e))?;
        if summary.readable_len < file_len {
            tracing::warn!(
                path = %path.display(),
                line = summary.torn_tail.as_ref().map(|t| t.line),
                "truncating torn tail of session log"
            );
            file.set_len(summary.readable_len)
                .and_then(|()| file.sync_all())
                .map_err(|e| StoreError::io(&path, e))?;
        }
        file.seek(SeekFrom::Start(summary.readable_len))
            .map_err(|e| StoreError::io(&path, e))?;
        Ok(SessionWriter {
            header: summary.header,
            path,
            events,
            folder,
            state: State::Open {
                file,
                len: summary.readable_len,
                dirty: false,
            },
        })
    }

    /// A writer for a session that does not exist yet (nothing on disk until the first append).
    pub(crate) fn pending(header: SessionHeader, root: PathBuf, dir: PathBuf) -> Self {
        SessionWriter {
            path: dir.join(LOG_FILE),
            header,
            events: Vec::new(),
            folder: SurfaceFolder::new(),
            state: State::Pending { dir, root },
        }
    }

    /// The session header.
    pub fn header(&self) -> &SessionHeader {
        &self.header
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.header.id
    }

    /// Where the log is (or will be, before the first append).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Everything in the log so far.
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// Current surface seqs (docs/session-store.md: surface folding).
    pub fn surface(&self) -> &[u64] {
        self.folder.surface()
    }

    /// Append a batch and fsync: durable when this returns `Ok`.
    pub fn append(&mut self, batch: Vec<NewEvent>) -> Result<Vec<Event>, StoreError> {
        let events = self.write_batch(batch)?;
        self.sync()?;
        Ok(events)
    }

    /// Append a batch without fsync (streaming chunks); [`sync`](Self::sync) makes it durable.
    pub fn append_buffered(&mut self, batch: Vec<NewEvent>) -> Result<Vec<Event>, StoreError> {
        self.write_batch(batch)
    }

    /// Flush and fsync buffered appends.
    pub fn sync(&mut self) -> Result<(), StoreError> {
        match &mut self.state {
            State::Open { file, dirty, .. } => {
                if *dirty {
                    file.sync_data()
                        .map_err(|e| StoreError::io(&self.path, e))?;
                    *dirty = false;
                }
                Ok(())
            }
            State::Pending { .. } => Ok(()),
            State::Poisoned => Err(StoreError::Poisoned {
                id: self.header.id.clone(),
            }),
        }
    }

    fn write_batch(&mut self, batch: Vec<NewEvent>) -> Result<Vec<Event>, StoreError> {
        if matches!(self.state, State::Poisoned) {
            return Err(StoreError::Poisoned {
                id: self.header.id.clone(),
            });
        }
        if batch.is_empty() {
            return Ok(Vec::new());
        }
        let id = self.header.id.clone();
        let mut time = self
            .events
            .last()
            .map_or(i64::MIN, |e| e.time)
            .max(now_ms());
        let mut events = Vec::with_capacity(batch.len());
        for (next_seq, new) in (self.events.len() as u64..).zip(batch) {
            let event = Event {
                seq: next_seq,
                time,
                data: new.data,
                surface_op: new.surface_op,
                source_event_seqs: new.source_event_seqs,
            };
            if Event::is_surface_type(event.kind()) && event.surface_op.is_none() {
                return Err(StoreError::InvalidEvent {
                    id,
                    reason: format!("`{}` event needs a surfaceOp", event.kind()),
                });
            }
            if event.kind().is_empty() {
                return Err(StoreError::InvalidEvent {
                    id,
                    reason: "event type must not be empty".into(),
                });
            }
            events.push(event);
            time = time.max(now_ms());
        }
        // Validate surface ops on a copy so a bad batch changes nothing.
        let mut folder = None;
        if events.iter().any(|e| e.surface_op.is_some()) {
            let mut scratch = self.folder.clone();
            for e in &events {
                scratch.push(e).map_err(|err| StoreError::fold(&id, &err))?;
            }
            folder = Some(scratch);
        }
        let mut bytes = Vec::new();
        for e in &events {
            let start = bytes.len();
            serde_json::to_writer(&mut bytes, e).map_err(|err| StoreError::InvalidEvent {
                id: id.clone(),
                reason: err.to_string(),
            })?;
            // Never write a line the reader would reject (e.g. a known type with a foreign
            // payload, or a type that reads as a packed row).
            let line = bytes.get(start..).unwrap_or_default();
            match reader::decode_line(line, e.seq) {
                Ok(back) if back.len() == 1 => {}
                Ok(_) => {
                    return Err(StoreError::InvalidEvent {
                        id,
                        reason: format!("`{}` reads back as a packed row", e.kind()),
                    });
                }
                Err(reason) => return Err(StoreError::InvalidEvent { id, reason }),
            }
            bytes.push(b'\n');
        }
        self.write_bytes(&bytes)?;
        if let Some(f) = folder {
            self.folder = f;
        }
        self.events.extend(events.iter().cloned());
        Ok(events)
    }

    fn write_bytes(&mut self, bytes: &[u8]) -> Result<(), StoreError> {
        match &mut self.state {
            State::Pending { dir, root } => {
                let (file, len) = publish(&self.header, root, dir, &self.path, bytes)?;
                self.state = State::Open {
                    file,
                    len,
                    dirty: false,
                };
                Ok(())
            }
            State::Open { file, len, dirty } => match file.write_all(bytes) {
                Ok(()) => {
                    *len += bytes.len() as u64;
                    *dirty = true;
                    Ok(())
                }
                Err(e) => {
                    // Undo a partial line so the log stays readable; if that fails too,
                    // refuse further appends rather than write after garbage.
                    let undo = file
                        .set_len(*len)
                        .and_then(|()| file.seek(SeekFrom::Start(*len)).map(drop));
                    if undo.is_err() {
                        self.state = State::Poisoned;
                    }
                    Err(StoreError::io(&self.path, e))
                }
            },
            State::Poisoned => Err(StoreError::Poisoned {
                id: self.header.id.clone(),
            }),
        }
    }
}

impl Drop for SessionWriter {
    fn drop(&mut self) {
        if let State::Open {
            file, dirty: true, ..
        } = &mut self.state
        {
            let _ = file.sync_data();
        }
    }
}

fn lock(file: &File, path: &Path, id: &str) -> Result<(), StoreError> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(std::fs::TryLockError::WouldBlock) => Err(StoreError::Busy {
            id: id.to_owned(),
            path: path.to_owned(),
        }),
        Err(std::fs::TryLockError::Error(e)) => Err(StoreError::io(path, e)),
    }
}

/// Write header + first batch to a temp file, fsync, lock, hard-link it into place without
/// overwriting, and fsync the directories. Returns the locked handle and the file length.
fn publish(
    header: &SessionHeader,
    root: &Path,
    dir: &Path,
    path: &Path,
    batch: &[u8],
) -> Result<(File, u64), StoreError> {
    let project = dir.parent().unwrap_or(root);
    let created_root = !root.exists();
    // Held until the log is published: no other creator can add this id anywhere meanwhile.
    let _creating = super::create_lock::lock_for_create(root, dir, &header.id)?;
    let created_project = !project.exists();
    fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))?;
    let mut bytes = serde_json::to_vec(header).map_err(|e| StoreError::InvalidEvent {
        id: header.id.clone(),
        reason: e.to_string(),
    })?;
    bytes.push(b'\n');
    bytes.extend_from_slice(batch);
    let tmp = dir.join(format!(
        ".{LOG_FILE}.{}-{:016x}.tmp",
        std::process::id(),
        fastrand::u64(..)
    ));
    let result = (|| {
        let mut file = File::create_new(&tmp).map_err(|e| StoreError::io(&tmp, e))?;
        file.write_all(&bytes)
            .and_then(|()| file.sync_all())
            .map_err(|e| StoreError::io(&tmp, e))?;
        lock(&file, path, &header.id)?;
        match fs::hard_link(&tmp, path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(StoreError::Busy {
                    id: header.id.clone(),
                    path: path.to_owned(),
                });
            }
            Err(e) => return Err(StoreError::io(path, e)),
        }
        Ok(file)
    })();
    let _ = fs::remove_file(&tmp);
    let file = result?;
    sync_dir(dir)?;
    if created_project {
        sync_dir(project)?;
    }
    if created_root || created_project {
        sync_dir(root)?;
    }
    Ok((file, bytes.len() as u64))
}

fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    #[cfg(unix)]
    {
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| StoreError::io(dir, e))
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

/// Whether a log format can be written.
pub(crate) fn writable(format: LogFormat) -> bool {
    matches!(format, LogFormat::Plain)
}
