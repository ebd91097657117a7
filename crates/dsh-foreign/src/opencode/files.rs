//! OpenCode's JSON storage before 1.2 (docs/foreign-sources.md, OpenCode), under its data
//! dir: `storage/session/<project>/<session>.json` (`{id, parentID?, directory, title,
//! time: {created, updated}}`), `storage/message/<session>/<message>.json` and
//! `storage/part/<message>/<part>.json` — the same message and part JSON the database
//! keeps in its `data` column. Every file is one record, read only up to the line limit;
//! nothing is reached through a symbolic link.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use dsh_store::QueryError;

use super::items::{MessageInfo, PartInfo};
use crate::open_file::open_regular;

/// A session file.
#[derive(Debug, Clone, Deserialize)]
pub struct SessionFile {
    pub id: Option<String>,
    #[serde(rename = "parentID")]
    pub parent_id: Option<Value>,
    pub directory: Option<Value>,
    pub title: Option<Value>,
    pub time: Option<Times>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Times {
    pub created: Option<Value>,
    pub completed: Option<Value>,
}

impl SessionFile {
    pub fn is_child(&self) -> bool {
        self.parent_id.as_ref().is_some_and(|p| !p.is_null())
    }

    pub fn directory(&self) -> Option<String> {
        self.directory
            .as_ref()
            .and_then(Value::as_str)
            .filter(|d| !d.is_empty())
            .map(str::to_owned)
    }

    pub fn title(&self) -> Option<&str> {
        self.title.as_ref().and_then(Value::as_str)
    }

    pub fn created(&self) -> Option<i64> {
        self.time.as_ref()?.created.as_ref()?.as_i64()
    }
}

#[derive(Debug, Deserialize)]
struct MessageFile {
    id: Option<String>,
    role: Option<Value>,
    summary: Option<Value>,
    finish: Option<Value>,
    error: Option<Value>,
    #[serde(rename = "parentID")]
    parent_id: Option<Value>,
    time: Option<Times>,
}

#[derive(Debug, Deserialize)]
struct PartFile {
    #[serde(rename = "type")]
    kind: Option<Value>,
    text: Option<Value>,
    synthetic: Option<Value>,
    ignored: Option<Value>,
    tail_start_id: Option<Value>,
}

/// Read one JSON record of at most `max` bytes.
pub fn read_record<T: for<'de> Deserialize<'de>>(path: &Path, max: u64) -> Result<T, QueryError> {
    let file = open_regular(path)?;
    let mut buf = Vec::new();
    file.take(max.saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(|source| QueryError::Io {
            path: path.to_owned(),
            source,
        })?;
    if buf.len() as u64 > max {
        return Err(QueryError::Corrupt {
            path: path.to_owned(),
            line: 1,
            reason: format!("record longer than {max} bytes"),
        });
    }
    serde_json::from_slice(&buf).map_err(|e| QueryError::Corrupt {
        path: path.to_owned(),
        line: u64::try_from(e.line()).unwrap_or(0),
        reason: format!("not an OpenCode record: {e}"),
    })
}

/// Real subdirectories (links not followed), sorted.
pub fn real_subdirs(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

/// The `*.json` regular files of `dir` (links not followed), sorted by name.
pub fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    out.sort();
    out
}

/// The session files under the data dir `root`.
pub fn session_files(root: &Path) -> Vec<PathBuf> {
    let dir = root.join("storage/session");
    if !fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) {
        return Vec::new();
    }
    real_subdirs(&dir)
        .iter()
        .flat_map(|project| json_files(project))
        .collect()
}

fn truthy(v: Option<&Value>) -> bool {
    v.is_some_and(|v| v.as_bool() == Some(true))
}

fn text(v: Option<&Value>) -> Option<String> {
    v.and_then(Value::as_str).map(str::to_owned)
}

/// The messages of session `id`, in order (creation time, then id), with their files.
pub fn messages(
    root: &Path,
    id: &str,
    max: u64,
) -> Result<Vec<(PathBuf, MessageInfo)>, QueryError> {
    let dir = root.join("storage/message").join(id);
    let mut out = Vec::new();
    if !fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) {
        return Ok(out);
    }
    for path in json_files(&dir) {
        let m = read_message(&path, max)?;
        out.push((path, m));
    }
    out.sort_by(|a, b| (a.1.time, &a.1.id).cmp(&(b.1.time, &b.1.id)));
    Ok(out)
}

/// One message file.
pub fn read_message(path: &Path, max: u64) -> Result<MessageInfo, QueryError> {
    let m: MessageFile = read_record(path, max)?;
    let complete_time = m
        .time
        .as_ref()
        .and_then(|t| t.completed.as_ref())
        .is_some_and(Value::is_number);
    let finished = m.finish.as_ref().is_some_and(|f| !f.is_null());
    let failed = m.error.as_ref().is_some_and(|e| !e.is_null());
    Ok(MessageInfo {
        id: m.id.unwrap_or_else(|| {
            path.file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or_default()
                .to_owned()
        }),
        role: text(m.role.as_ref()).unwrap_or_default(),
        summary: truthy(m.summary.as_ref()),
        complete: (finished || complete_time) && !failed,
        parent_id: text(m.parent_id.as_ref()),
        time: m
            .time
            .as_ref()
            .and_then(|t| t.created.as_ref())
            .and_then(Value::as_i64)
            .unwrap_or(0),
    })
}

/// The `text` and `compaction` parts of message `id`, in order.
pub fn parts(root: &Path, id: &str, max: u64) -> Result<Vec<PartInfo>, QueryError> {
    let dir = root.join("storage/part").join(id);
    let mut out = Vec::new();
    if !fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) {
        return Ok(out);
    }
    for path in json_files(&dir) {
        let p: PartFile = read_record(&path, max)?;
        let kind = text(p.kind.as_ref()).unwrap_or_default();
        if kind != "text" && kind != "compaction" {
            continue;
        }
        out.push(PartInfo {
            kind,
            text: text(p.text.as_ref()),
            synthetic: truthy(p.synthetic.as_ref()),
            ignored: truthy(p.ignored.as_ref()),
            tail_start_id: text(p.tail_start_id.as_ref()),
        });
    }
    Ok(out)
}

/// What changes whenever session `id`'s conversation does: its file, its message
/// directory and its messages' part directories (files are replaced by rename, which
/// changes the directory).
pub fn fingerprint(root: &Path, session_file: &Path, id: &str) -> Option<(u64, i64)> {
    let mtime_ms = |p: &Path| -> Option<(u64, i64)> {
        let m = fs::symlink_metadata(p).ok()?;
        let t = m
            .modified()
            .ok()?
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?;
        Some((
            m.len(),
            i64::try_from(t.as_nanos() / 1000).unwrap_or(i64::MAX),
        ))
    };
    let (len, mut newest) = mtime_ms(session_file)?;
    let mut count = len;
    let message_dir = root.join("storage/message").join(id);
    if let Some((_, t)) = mtime_ms(&message_dir) {
        newest = newest.max(t);
    }
    for message in json_files(&message_dir) {
        count += 1;
        let Some(stem) = message.file_stem() else {
            continue;
        };
        if let Some((_, t)) = mtime_ms(&root.join("storage/part").join(stem)) {
            newest = newest.max(t);
        }
        if let Some((l, t)) = mtime_ms(&message) {
            count = count.wrapping_add(l);
            newest = newest.max(t);
        }
    }
    Some((count, newest))
}
