//! The listing and title caches persisted in the store's cache directory
//! (`<cache>/dsh-refs/<store>/index.bin`, see [`crate::cache::store_cache_dir`]), so a fresh
//! process lists sessions and filters by title without reading every log (docs/performance.md).
//!
//! The file is a cache, never a source of truth. It only seeds the in-memory caches: every
//! project is listed again and every entry is revalidated by a stat of its own log (inode,
//! length, mtime, ctime), never by a directory mtime; a mismatch is a miss, and a header whose
//! id or cwd does not match its directories is dropped. It is read only if it is a regular file owned
//! by this user and writable by nobody else, and only up to [`MAX_INDEX_BYTES`]; anything
//! else is ignored and replaced. Written to a temp file and renamed into place.
//!
//! Layout (little-endian): a 24-byte head — magic, [`VERSION`], the body's length and its
//! CRC-32 — then the body: the line limit the digests were read with, the root's mtime, and per project a `1` tag, its name and mtime and
//! its sessions (each behind a `1` tag, closed by `0`), closed by `0`. A session holds its
//! name, its log's format and stamp, its header, and its log's digest (title, first prompt,
//! activity, where the read stopped; [`crate::log_digest`]). A file whose length,
//! checksum, tags or strings do not check out is unusable as a whole.

use std::fs;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};

use super::activity::Activity;
use super::event::SessionHeader;
use super::log_digest::{Damage, LogDigest};
use super::paths::{LOG_FILE, ZSTD_LOG_FILE};
use super::reader::{LogFormat, ScanPos};
use super::stamp::Stamp;

/// File name inside the store's cache directory.
pub const INDEX_FILE: &str = "index.bin";

/// The JSON index an earlier version kept in the cache directory; removed when the binary
/// one is written.
pub const OLD_INDEX_FILE: &str = "index.json";

/// The name an older version wrote inside the store root; never read or written now.
pub const LEGACY_INDEX_FILE: &str = ".dsh-refs-index.json";

/// Largest index file read (bytes); a bigger one is ignored (and replaced).
pub const MAX_INDEX_BYTES: u64 = 256 << 20;

/// From this size on, an index's checksum is verified in a pass of its own before anything
/// is decoded: a damaged or forged large file then costs one read, never the memory of the
/// records it claims to hold (a 100 000-session index is about 52 MB).
const CHECK_FIRST_FROM: u64 = 64 << 20;

/// Bumped whenever the layout changes; other versions are ignored (4: digests with activity
/// and where their read stopped, instead of bare titles; 5: the line limit they were read
/// with; 6: the header's recorded branch; 7: an untitled log's first prompt).
const VERSION: u32 = 7;

/// First bytes of every index file.
const MAGIC: &[u8; 8] = b"DSHRIDX\0";

/// Magic, version, body length, body CRC-32.
const HEAD_LEN: usize = 24;
const HEAD_BYTES: u64 = HEAD_LEN as u64;

/// Longest string stored (a header field, a name, a title): longer ones make the file
/// unusable, so a damaged length never asks for a huge buffer.
const MAX_STRING_BYTES: u32 = 16 << 20;

/// A point in time as whole seconds and nanoseconds since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileTime(pub u64, pub u32);

impl FileTime {
    pub fn from_system(t: SystemTime) -> Option<Self> {
        let d = t.duration_since(UNIX_EPOCH).ok()?;
        Some(FileTime(d.as_secs(), d.subsec_nanos()))
    }

    pub fn to_system(self) -> Option<SystemTime> {
        UNIX_EPOCH.checked_add(Duration::new(self.0, self.1))
    }
}

/// A stored log digest and the stamp of the log it was read from.
#[derive(Debug, Clone, PartialEq)]
pub struct DigestRecord {
    pub stamp: Stamp,
    pub digest: LogDigest,
}

/// One session directory of the header index.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionRecord {
    pub name: String,
    /// The log's format and its stamp when the header was read.
    pub log: Option<(LogFormat, Stamp)>,
    pub header: Option<SessionHeader>,
    pub digest: Option<DigestRecord>,
}

/// One project directory of the header index.
#[derive(Debug, Clone, PartialEq)]
pub struct ProjectRecord {
    pub name: String,
    pub mtime: Option<FileTime>,
    pub sessions: Vec<SessionRecord>,
}

/// The whole file, as plain data.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexRecord {
    /// The `store.max_line_bytes` its digests were read with.
    pub line_limit: u64,
    pub root_mtime: Option<FileTime>,
    pub projects: Vec<ProjectRecord>,
}

/// What a file holds besides its projects (shown one by one as they are decoded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decoded {
    /// The `store.max_line_bytes` its digests were read with: a digest (title, counts,
    /// damage) depends on which lines were loaded, so a store read with another limit must
    /// not take them (issue 27: a lowered limit's damage outlived the setting).
    pub line_limit: u64,
    pub root_mtime: Option<FileTime>,
}

/// One session as written, borrowed from the caches.
#[derive(Debug, Clone, Copy)]
pub struct SessionRef<'a> {
    pub name: &'a str,
    pub log: Option<(LogFormat, &'a Stamp)>,
    pub header: Option<&'a SessionHeader>,
    /// The digest's log stamp and the digest.
    pub digest: Option<(&'a Stamp, &'a LogDigest)>,
}

/// A directory or file name that is exactly one ordinary path component (so an index file
/// can never point outside the root).
pub fn plain_name(name: &str) -> bool {
    let mut parts = Path::new(name).components();
    matches!(parts.next(), Some(Component::Normal(_))) && parts.next().is_none()
}

/// The UTF-8 name of `path`'s last component, if it has one.
pub fn name_of(path: &Path) -> Option<String> {
    path.file_name()?.to_str().map(str::to_owned)
}

/// The log file name of a format.
pub fn file_of(format: LogFormat) -> &'static str {
    match format {
        LogFormat::Plain => LOG_FILE,
        LogFormat::Zstd => ZSTD_LOG_FILE,
    }
}

/// Log format from a log file name.
pub fn format_of(file: &str) -> Option<LogFormat> {
    match file {
        LOG_FILE => Some(LogFormat::Plain),
        ZSTD_LOG_FILE => Some(LogFormat::Zstd),
        _ => None,
    }
}

/// Writes the body of an index file, keeping its length and checksum.
pub struct IndexWriter<W: Write> {
    out: W,
    crc: crc32fast::Hasher,
    len: u64,
}

impl<W: Write> IndexWriter<W> {
    fn new(out: W) -> Self {
        IndexWriter {
            out,
            crc: crc32fast::Hasher::new(),
            len: 0,
        }
    }

    fn bytes(&mut self, b: &[u8]) -> io::Result<()> {
        self.crc.update(b);
        self.len += b.len() as u64;
        self.out.write_all(b)
    }

    fn u8(&mut self, v: u8) -> io::Result<()> {
        self.bytes(&[v])
    }

    fn u32(&mut self, v: u32) -> io::Result<()> {
        self.bytes(&v.to_le_bytes())
    }

    fn u64(&mut self, v: u64) -> io::Result<()> {
        self.bytes(&v.to_le_bytes())
    }

    fn i64(&mut self, v: i64) -> io::Result<()> {
        self.bytes(&v.to_le_bytes())
    }

    fn str(&mut self, s: &str) -> io::Result<()> {
        let len = u32::try_from(s.len())
            .ok()
            .filter(|n| *n <= MAX_STRING_BYTES)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "string too long"))?;
        self.u32(len)?;
        self.bytes(s.as_bytes())
    }

    fn file_time(&mut self, t: Option<FileTime>) -> io::Result<()> {
        match t {
            None => self.u8(0),
            Some(FileTime(s, n)) => {
                self.u8(1)?;
                self.u64(s)?;
                self.u32(n)
            }
        }
    }

    fn stamp(&mut self, s: &Stamp) -> io::Result<()> {
        self.u64(s.len)?;
        self.file_time(s.mtime.and_then(FileTime::from_system))?;
        match s.file_id {
            None => self.u8(0)?,
            Some((dev, ino)) => {
                self.u8(1)?;
                self.u64(dev)?;
                self.u64(ino)?;
            }
        }
        match s.ctime {
            None => self.u8(0),
            Some((sec, nsec)) => {
                self.u8(1)?;
                self.i64(sec)?;
                self.i64(nsec)
            }
        }
    }

    /// The line limit the digests were read with; written first, by [`save`].
    pub(crate) fn line_limit(&mut self, limit: u64) -> io::Result<()> {
        self.u64(limit)
    }

    /// The root directory's mtime; written right after the line limit.
    pub fn root(&mut self, mtime: Option<FileTime>) -> io::Result<()> {
        self.file_time(mtime)
    }

    /// Start a project; its sessions follow, then [`end_project`](Self::end_project).
    pub fn project(&mut self, name: &str, mtime: Option<FileTime>) -> io::Result<()> {
        self.u8(1)?;
        self.str(name)?;
        self.file_time(mtime)
    }

    /// One session of the current project.
    pub fn session(&mut self, s: &SessionRef<'_>) -> io::Result<()> {
        self.u8(1)?;
        self.str(s.name)?;
        match s.log {
            None => self.u8(0)?,
            Some((format, stamp)) => {
                self.u8(match format {
                    LogFormat::Plain => 1,
                    LogFormat::Zstd => 2,
                })?;
                self.stamp(stamp)?;
            }
        }
        match s.header {
            None => self.u8(0)?,
            Some(h) => {
                self.u8(1)?;
                self.str(&h.kind)?;
                self.u64(h.version)?;
                self.str(&h.id)?;
                self.i64(h.created_at)?;
                match &h.cwd {
                    None => self.u8(0)?,
                    Some(cwd) => {
                        self.u8(1)?;
                        self.str(cwd)?;
                    }
                }
                match &h.branch {
                    None => self.u8(0)?,
                    Some(branch) => {
                        self.u8(1)?;
                        self.str(branch)?;
                    }
                }
                self.u64(h.delegation_depth)?;
                if h.extra.is_empty() {
                    self.str("")?;
                } else {
                    let extra = serde_json::to_string(&h.extra).map_err(io::Error::other)?;
                    self.str(&extra)?;
                }
            }
        }
        match s.digest {
            None => self.u8(0),
            Some((stamp, digest)) => {
                // The digest's stamp is nearly always the log's own: then it is not repeated.
                if s.log.is_some_and(|(_, log)| log == stamp) {
                    self.u8(1)?;
                } else {
                    self.u8(2)?;
                    self.stamp(stamp)?;
                }
                self.digest(digest)
            }
        }
    }

    fn digest(&mut self, d: &LogDigest) -> io::Result<()> {
        for text in [&d.title, &d.first_prompt] {
            match text {
                None => self.u8(0)?,
                Some(t) => {
                    self.u8(1)?;
                    self.str(t)?;
                }
            }
        }
        match d.activity.last_event_ms {
            None => self.u8(0)?,
            Some(t) => {
                self.u8(1)?;
                self.i64(t)?;
            }
        }
        self.u64(d.activity.messages)?;
        self.u64(d.end.readable_len)?;
        self.u64(d.end.next_seq)?;
        self.u64(d.end.line)?;
        match d.resume_check {
            None => self.u8(0)?,
            Some(crc) => {
                self.u8(1)?;
                self.u32(crc)?;
            }
        }
        match &d.damage {
            None => self.u8(0),
            Some(damage) => {
                self.u8(1)?;
                self.u64(damage.line)?;
                self.str(&damage.reason)
            }
        }
    }

    /// Close the current project.
    pub fn end_project(&mut self) -> io::Result<()> {
        self.u8(0)
    }

    /// Close the project list; the body is complete.
    fn finish(&mut self) -> io::Result<()> {
        self.u8(0)?;
        self.out.flush()
    }
}

#[cfg(test)]
impl<'a> IndexWriter<&'a mut Vec<u8>> {
    /// A writer of a bare body into `out` (see [`framed`]).
    pub(crate) fn for_tests(out: &'a mut Vec<u8>) -> Self {
        IndexWriter::new(out)
    }
}

/// A whole file around a body written by [`IndexWriter::for_tests`] (the closing tag added).
#[cfg(test)]
pub(crate) fn framed(body: &[u8]) -> Vec<u8> {
    let mut body = body.to_vec();
    body.push(0);
    let mut out = head(body.len() as u64, crc32fast::hash(&body)).to_vec();
    out.extend_from_slice(&body);
    out
}

/// The 24-byte head for a body of `len` bytes with checksum `crc`.
fn head(len: u64, crc: u32) -> [u8; HEAD_LEN] {
    let mut out = [0u8; HEAD_LEN];
    out[..8].copy_from_slice(MAGIC);
    out[8..12].copy_from_slice(&VERSION.to_le_bytes());
    out[12..20].copy_from_slice(&len.to_le_bytes());
    out[20..24].copy_from_slice(&crc.to_le_bytes());
    out
}

/// Write every record of `index` through `w`.
fn write_record<W: Write>(w: &mut IndexWriter<W>, index: &IndexRecord) -> io::Result<()> {
    w.line_limit(index.line_limit)?;
    w.root(index.root_mtime)?;
    for p in &index.projects {
        w.project(&p.name, p.mtime)?;
        for s in &p.sessions {
            w.session(&SessionRef {
                name: &s.name,
                log: s.log.as_ref().map(|(f, st)| (*f, st)),
                header: s.header.as_ref(),
                digest: s.digest.as_ref().map(|d| (&d.stamp, &d.digest)),
            })?;
        }
        w.end_project()?;
    }
    Ok(())
}

/// The bytes of an index file holding `index` (the format the store writes).
pub fn encode(index: &IndexRecord) -> Vec<u8> {
    let mut w = IndexWriter::new(Vec::new());
    // Writing to memory cannot fail but for an over-long string, which makes the index empty.
    if write_record(&mut w, index)
        .and_then(|()| w.finish())
        .is_err()
    {
        return Vec::new();
    }
    let mut out = head(w.len, w.crc.finalize()).to_vec();
    out.extend_from_slice(&w.out);
    out
}

/// Why a body could not be decoded.
type Bad = ();

/// Reads a body, counting what is left.
struct BodyReader<R> {
    src: R,
    left: u64,
}

/// Hashes what is read through it (in the buffer's large chunks, not field by field).
struct Hashing<R> {
    src: R,
    crc: crc32fast::Hasher,
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.src.read(buf)?;
        self.crc.update(buf.get(..n).unwrap_or_default());
        Ok(n)
    }
}

impl<R: BufRead> BodyReader<R> {
    fn bytes(&mut self, n: usize) -> Result<Vec<u8>, Bad> {
        if n as u64 > self.left {
            return Err(());
        }
        let mut buf = vec![0u8; n];
        self.src.read_exact(&mut buf).map_err(|_| ())?;
        self.left -= n as u64;
        Ok(buf)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], Bad> {
        if N as u64 > self.left {
            return Err(());
        }
        let mut buf = [0u8; N];
        self.src.read_exact(&mut buf).map_err(|_| ())?;
        self.left -= N as u64;
        Ok(buf)
    }

    fn u8(&mut self) -> Result<u8, Bad> {
        Ok(self.array::<1>()?[0])
    }

    fn u32(&mut self) -> Result<u32, Bad> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64, Bad> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    fn i64(&mut self) -> Result<i64, Bad> {
        Ok(i64::from_le_bytes(self.array()?))
    }

    fn flag(&mut self) -> Result<bool, Bad> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(()),
        }
    }

    fn str(&mut self) -> Result<String, Bad> {
        let len = self.u32()?;
        if len > MAX_STRING_BYTES {
            return Err(());
        }
        String::from_utf8(self.bytes(len as usize)?).map_err(|_| ())
    }

    fn file_time(&mut self) -> Result<Option<FileTime>, Bad> {
        if !self.flag()? {
            return Ok(None);
        }
        let secs = self.u64()?;
        let nanos = self.u32()?;
        if nanos >= 1_000_000_000 {
            return Err(());
        }
        Ok(Some(FileTime(secs, nanos)))
    }

    fn stamp(&mut self) -> Result<Stamp, Bad> {
        let len = self.u64()?;
        let mtime = match self.file_time()? {
            None => None,
            Some(t) => Some(t.to_system().ok_or(())?),
        };
        let file_id = if self.flag()? {
            Some((self.u64()?, self.u64()?))
        } else {
            None
        };
        let ctime = if self.flag()? {
            Some((self.i64()?, self.i64()?))
        } else {
            None
        };
        Ok(Stamp {
            len,
            mtime,
            file_id,
            ctime,
        })
    }

    fn header(&mut self) -> Result<SessionHeader, Bad> {
        let kind = self.str()?;
        let version = self.u64()?;
        let id = self.str()?;
        let created_at = self.i64()?;
        let cwd = if self.flag()? {
            Some(self.str()?)
        } else {
            None
        };
        let branch = if self.flag()? {
            Some(self.str()?)
        } else {
            None
        };
        let delegation_depth = self.u64()?;
        let extra = self.str()?;
        let extra = if extra.is_empty() {
            Map::new()
        } else {
            match serde_json::from_str::<Value>(&extra) {
                Ok(Value::Object(map)) => map,
                _ => return Err(()),
            }
        };
        Ok(SessionHeader {
            kind,
            version,
            id,
            created_at,
            cwd,
            branch,
            delegation_depth,
            extra,
        })
    }

    fn session(&mut self) -> Result<SessionRecord, Bad> {
        let name = self.str()?;
        let log = match self.u8()? {
            0 => None,
            1 => Some((LogFormat::Plain, self.stamp()?)),
            2 => Some((LogFormat::Zstd, self.stamp()?)),
            _ => return Err(()),
        };
        let header = if self.flag()? {
            Some(self.header()?)
        } else {
            None
        };
        let digest_stamp = match self.u8()? {
            0 => None,
            1 => Some(log.as_ref().ok_or(())?.1),
            2 => Some(self.stamp()?),
            _ => return Err(()),
        };
        let digest = match digest_stamp {
            None => None,
            Some(stamp) => Some(DigestRecord {
                stamp,
                digest: self.digest()?,
            }),
        };
        Ok(SessionRecord {
            name,
            log,
            header,
            digest,
        })
    }

    fn digest(&mut self) -> Result<LogDigest, Bad> {
        let title = if self.flag()? {
            Some(self.str()?.into())
        } else {
            None
        };
        let first_prompt = if self.flag()? {
            Some(self.str()?.into())
        } else {
            None
        };
        let last_event_ms = if self.flag()? {
            Some(self.i64()?)
        } else {
            None
        };
        let messages = self.u64()?;
        let end = ScanPos {
            readable_len: self.u64()?,
            next_seq: self.u64()?,
            line: self.u64()?,
        };
        let resume_check = if self.flag()? {
            Some(self.u32()?)
        } else {
            None
        };
        let damage = if self.flag()? {
            Some(Box::new(Damage {
                line: self.u64()?,
                reason: self.str()?.into(),
            }))
        } else {
            None
        };
        Ok(LogDigest {
            title,
            first_prompt,
            activity: Activity {
                last_event_ms,
                messages,
            },
            end,
            resume_check,
            damage,
        })
    }

    /// The line limit and the root's mtime; each project is shown to `each` as soon as it
    /// is decoded.
    fn index(&mut self, each: &mut dyn FnMut(ProjectRecord)) -> Result<Decoded, Bad> {
        let line_limit = self.u64()?;
        let root_mtime = self.file_time()?;
        while self.flag()? {
            let name = self.str()?;
            let mtime = self.file_time()?;
            let mut sessions = Vec::new();
            while self.flag()? {
                sessions.push(self.session()?);
            }
            each(ProjectRecord {
                name,
                mtime,
                sessions,
            });
        }
        Ok(Decoded {
            line_limit,
            root_mtime,
        })
    }
}

/// Decode a whole file from `src` (`file_len` bytes), showing each project to `each` as it
/// is decoded (so the file is never held whole): the head must name this version and the
/// exact body length, the body must decode completely and match its checksum, or the
/// answer is `None` and whatever `each` saw must be dropped.
fn decode_each<R: Read>(
    mut src: R,
    file_len: u64,
    each: &mut dyn FnMut(ProjectRecord),
) -> Option<Decoded> {
    let mut head_bytes = [0u8; HEAD_LEN];
    src.read_exact(&mut head_bytes).ok()?;
    let field = |range: std::ops::Range<usize>| head_bytes.get(range);
    if field(0..8)? != MAGIC {
        return None;
    }
    let version = u32::from_le_bytes(field(8..12)?.try_into().ok()?);
    let len = u64::from_le_bytes(field(12..20)?.try_into().ok()?);
    let crc = u32::from_le_bytes(field(20..24)?.try_into().ok()?);
    if version != VERSION || Some(len) != file_len.checked_sub(HEAD_BYTES) {
        return None;
    }
    let mut body = BodyReader {
        src: BufReader::with_capacity(
            256 * 1024,
            Hashing {
                src: src.take(len),
                crc: crc32fast::Hasher::new(),
            },
        ),
        left: len,
    };
    let decoded = body.index(each).ok()?;
    // Every byte of the body was decoded, so every byte went through the hasher.
    let hashed = body.src.into_inner().crc.finalize();
    (body.left == 0 && hashed == crc).then_some(decoded)
}

/// [`decode_each`] collecting every project.
fn decode<R: Read>(src: R, file_len: u64) -> Option<IndexRecord> {
    let mut projects = Vec::new();
    let Decoded {
        line_limit,
        root_mtime,
    } = decode_each(src, file_len, &mut |p| projects.push(p))?;
    Some(IndexRecord {
        line_limit,
        root_mtime,
        projects,
    })
}

/// Parse index file bytes; `None` when damaged or of another version.
pub fn parse(bytes: &[u8]) -> Option<IndexRecord> {
    decode(bytes, bytes.len() as u64)
}

/// Why an index file was not used.
fn unusable<T>(path: &Path, why: &str) -> Option<T> {
    tracing::debug!(path = %path.display(), why, "ignoring the session index");
    None
}

/// Read the index in `dir`; `None` when absent, not a regular file, not this user's, too
/// large, unreadable, damaged or of another version.
pub fn load(dir: &Path) -> Option<IndexRecord> {
    let mut projects = Vec::new();
    let Decoded {
        line_limit,
        root_mtime,
    } = load_each(dir, &mut |p| projects.push(p))?;
    Some(IndexRecord {
        line_limit,
        root_mtime,
        projects,
    })
}

/// [`load`], showing each project to `each` as it is decoded; on `None` (absent or
/// unusable, possibly found out only at the end) whatever `each` saw must be dropped.
pub fn load_each(dir: &Path, each: &mut dyn FnMut(ProjectRecord)) -> Option<Decoded> {
    load_each_checked(dir, each, CHECK_FIRST_FROM)
}

/// [`load_each`], verifying the checksum before decoding a file of `check_from` bytes or
/// more.
fn load_each_checked(
    dir: &Path,
    each: &mut dyn FnMut(ProjectRecord),
    check_from: u64,
) -> Option<Decoded> {
    let path = dir.join(INDEX_FILE);
    let file = match super::nofollow::open_regular(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return None,
        Err(e) => return unusable(&path, &e.to_string()),
    };
    let meta = file.metadata().ok()?;
    if !own_cache_file(&meta, dir) {
        return unusable(&path, "owned by another user or writable by others");
    }
    if meta.len() > MAX_INDEX_BYTES {
        return unusable(&path, "larger than the index size limit");
    }
    if meta.len() >= check_from && !checksum_matches(&file) {
        return unusable(&path, "damaged (its checksum does not match)");
    }
    // Decoded as it is read (never held whole); a file that grows or shrinks meanwhile no
    // longer matches its length and checksum.
    decode_each(file.take(MAX_INDEX_BYTES), meta.len(), each)
        .or_else(|| unusable(&path, "unreadable, damaged or of another version"))
}

/// Whether the body of the index in `file` hashes to the checksum its head names; reads it
/// in pieces and keeps none, then leaves `file` at its start again.
fn checksum_matches(mut file: &fs::File) -> bool {
    let mut head = [0u8; HEAD_LEN];
    if file.read_exact(&mut head).is_err() {
        return false;
    }
    let Some(crc) = head
        .get(20..24)
        .and_then(|b| b.try_into().ok())
        .map(u32::from_le_bytes)
    else {
        return false;
    };
    let mut hasher = crc32fast::Hasher::new();
    let mut buf = vec![0u8; 256 * 1024];
    let mut left = MAX_INDEX_BYTES;
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                hasher.update(buf.get(..n).unwrap_or_default());
                left = left.saturating_sub(n as u64);
                if left == 0 {
                    return false;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    hasher.finalize() == crc && file.seek(SeekFrom::Start(0)).is_ok()
}

/// Whether a cache file (its metadata `meta`, in `dir`) is this user's own and nobody else
/// can write it or its directory: only then is what it says believed.
pub(crate) fn own_cache_file(meta: &fs::Metadata, dir: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let me = rustix::process::geteuid().as_raw();
        let Ok(dir_meta) = fs::symlink_metadata(dir) else {
            return false;
        };
        meta.uid() == me
            && dir_meta.uid() == me
            && meta.mode() & 0o022 == 0
            && dir_meta.mode() & 0o022 == 0
    }
    #[cfg(not(unix))]
    {
        let _ = (meta, dir);
        true
    }
}

/// Write the index into `dir` atomically (temp file + rename), creating `dir` (mode 0700)
/// if needed; `body` writes the records. Refuses a `dir` that is a symbolic link. The JSON
/// index of an earlier version is removed.
pub fn save(
    dir: &Path,
    line_limit: u64,
    body: impl FnOnce(&mut IndexWriter<&mut io::BufWriter<&mut fs::File>>) -> io::Result<()>,
) -> io::Result<()> {
    create_private_dir(dir)?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".index.")
        .suffix(".tmp")
        .tempfile_in(dir)?;
    let (len, crc) = {
        let file = tmp.as_file_mut();
        file.write_all(&head(0, 0))?;
        // Written as it is produced, never held whole.
        let mut out = io::BufWriter::with_capacity(256 * 1024, file);
        let mut w = IndexWriter::new(&mut out);
        w.line_limit(line_limit)?;
        body(&mut w)?;
        w.finish()?;
        (w.len, w.crc.finalize())
    };
    let file = tmp.as_file_mut();
    file.seek(SeekFrom::Start(0))?;
    file.write_all(&head(len, crc))?;
    tmp.persist(dir.join(INDEX_FILE)).map_err(|e| e.error)?;
    match fs::remove_file(dir.join(OLD_INDEX_FILE)) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => {
            tracing::debug!(error = %e, "old JSON index not removed");
        }
        _ => {}
    }
    Ok(())
}

/// Create `dir` and its parents; the last component is private to this user.
pub(crate) fn create_private_dir(dir: &Path) -> io::Result<()> {
    if let Some(parent) = dir.parent() {
        fs::create_dir_all(parent)?;
    }
    let mut builder = fs::DirBuilder::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    match builder.create(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            let meta = fs::symlink_metadata(dir)?;
            if meta.is_dir() {
                Ok(())
            } else {
                Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{} is not a directory", dir.display()),
                ))
            }
        }
        Err(e) => Err(e),
    }
}

/// Path of a stored log under `root`, if its parts are plain names.
pub fn log_path(root: &Path, project: &str, session: &str, format: LogFormat) -> Option<PathBuf> {
    (plain_name(project) && plain_name(session))
        .then(|| root.join(project).join(session).join(file_of(format)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> IndexRecord {
        let stamp = Stamp {
            len: 42,
            mtime: FileTime(1_700_000_000, 5).to_system(),
            file_id: Some((1, 2)),
            ctime: Some((1_700_000_001, 7)),
        };
        let other = Stamp {
            len: 7,
            mtime: None,
            file_id: None,
            ctime: None,
        };
        let mut header =
            SessionHeader::new("a", 5, Some("/p".into())).with_branch(Some("feature/x".into()));
        header
            .extra
            .insert("x".into(), serde_json::json!({"k": [1, 2]}));
        IndexRecord {
            line_limit: 1 << 20,
            root_mtime: Some(FileTime(9, 9)),
            projects: vec![
                ProjectRecord {
                    name: "--p--".into(),
                    mtime: None,
                    sessions: vec![
                        SessionRecord {
                            name: "a".into(),
                            log: Some((LogFormat::Plain, stamp)),
                            header: Some(header),
                            digest: Some(DigestRecord {
                                stamp,
                                digest: LogDigest {
                                    title: Some("Ä title".into()),
                                    first_prompt: None,
                                    activity: Activity {
                                        last_event_ms: Some(-3),
                                        messages: 12,
                                    },
                                    end: ScanPos {
                                        readable_len: 900,
                                        next_seq: 30,
                                        line: 31,
                                    },
                                    resume_check: Some(0xdead_beef),
                                    damage: None,
                                },
                            }),
                        },
                        SessionRecord {
                            name: "b".into(),
                            log: Some((LogFormat::Zstd, other)),
                            header: None,
                            digest: Some(DigestRecord {
                                stamp,
                                digest: LogDigest {
                                    title: None,
                                    first_prompt: Some("what went wrong?".into()),
                                    activity: Activity::default(),
                                    end: ScanPos {
                                        readable_len: 10,
                                        next_seq: 0,
                                        line: 1,
                                    },
                                    resume_check: None,
                                    damage: Some(Box::new(Damage {
                                        line: 14,
                                        reason: "unparsable line".into(),
                                    })),
                                },
                            }),
                        },
                        SessionRecord {
                            name: "pending".into(),
                            log: None,
                            header: None,
                            digest: None,
                        },
                    ],
                },
                ProjectRecord {
                    name: "_no-cwd".into(),
                    mtime: Some(FileTime(3, 4)),
                    sessions: Vec::new(),
                },
            ],
        }
    }

    #[test]
    fn records_round_trip() {
        let index = sample();
        let bytes = encode(&index);
        assert_eq!(parse(&bytes), Some(index));
    }

    #[test]
    fn every_truncation_and_every_flipped_byte_is_refused() {
        let bytes = encode(&sample());
        for cut in 0..bytes.len() {
            assert_eq!(parse(&bytes[..cut]), None, "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(parse(&longer), None);
        for at in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x10;
            assert_eq!(parse(&damaged), None, "byte {at} flipped");
        }
    }

    #[test]
    fn a_large_index_with_a_wrong_checksum_shows_no_record() {
        // Issue 23, break 7: a forged 240 MiB index.bin cost 514 MB before the checksum at
        // its end refused it. From `check_from` bytes on, the checksum comes first.
        let dir = tempfile::tempdir().unwrap();
        let mut bytes = encode(&sample());
        let last = bytes.len() - 1;
        bytes[last] ^= 0x10;
        std::fs::write(dir.path().join(INDEX_FILE), &bytes).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let private = std::fs::Permissions::from_mode(0o700);
            std::fs::set_permissions(dir.path(), private).unwrap();
        }
        let mut shown = 0;
        let checked = load_each_checked(dir.path(), &mut |_| shown += 1, 0);
        assert_eq!((checked.is_none(), shown), (true, 0));
        // Below the size where the checksum comes first: records are shown as decoded, and
        // the caller drops them when the end refuses the file.
        let mut shown = 0;
        let streamed = load_each_checked(dir.path(), &mut |_| shown += 1, u64::MAX);
        assert_eq!((streamed.is_none(), shown), (true, 2));
        // Intact, checked first or not: the same records.
        std::fs::write(dir.path().join(INDEX_FILE), encode(&sample())).unwrap();
        let (mut a, mut b) = (0, 0);
        assert!(load_each_checked(dir.path(), &mut |_| a += 1, 0).is_some());
        assert!(load_each_checked(dir.path(), &mut |_| b += 1, u64::MAX).is_some());
        assert_eq!((a, b), (2, 2));
    }

    #[test]
    fn a_huge_string_length_is_refused_without_allocating_it() {
        // A body holding a root time and a project whose name claims 4 GiB.
        let mut body = vec![0u8, 1];
        body.extend_from_slice(&u32::MAX.to_le_bytes());
        let crc = crc32fast::hash(&body);
        let mut bytes = head(body.len() as u64, crc).to_vec();
        bytes.extend_from_slice(&body);
        assert_eq!(parse(&bytes), None);
    }
}
