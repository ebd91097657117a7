//! Gemini CLI sessions kept as one JSON document, rewritten whole on every change: chats
//! before the JSON-lines format (`session-<time>-<id8>.json`: `{sessionId, projectHash,
//! startTime, lastUpdated, messages, summary?, kind?}`) and saved chats
//! (`checkpoint-<tag>.json`: `{history: [{role, parts}], authType?}`, or the bare history
//! list in older versions).
//!
//! A document is one record: like a log line, it is read only up to the store's line limit
//! (`store.max_line_bytes`); a longer one is reported, never held.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use dsh_store::{Event, QueryError, SessionHeader, SurfaceScan, SurfaceVisitor};

use super::records::{HistoryTurn, MessageRecord};
use crate::item_surface::{ItemSource, SurfaceBuilder, changed};
use crate::log_meta::{LogMeta, TitleCleaner, title_text};
use crate::open_file::open_regular;
use crate::surface_events::{ItemKind, item_event, parse_time_ms};

/// An older chat document.
#[derive(Debug, Deserialize)]
struct ChatDocument {
    #[serde(rename = "sessionId")]
    session_id: Option<String>,
    #[serde(rename = "projectHash")]
    project_hash: Option<String>,
    #[serde(rename = "startTime")]
    start_time: Option<String>,
    summary: Option<String>,
    kind: Option<String>,
    #[serde(default)]
    messages: Vec<MessageRecord>,
}

/// A saved chat: the history itself, or wrapped with its auth type.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum SavedChat {
    Wrapped { history: Vec<HistoryTurn> },
    Bare(Vec<HistoryTurn>),
}

impl SavedChat {
    fn turns(self) -> Vec<HistoryTurn> {
        match self {
            SavedChat::Wrapped { history } | SavedChat::Bare(history) => history,
        }
    }
}

/// Which kind of document a file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Chat,
    Saved,
}

/// Read a whole document of at most `max_bytes` from `file` (from its start).
fn read_document(path: &Path, file: &mut File, max_bytes: u64) -> Result<Vec<u8>, QueryError> {
    file.seek(SeekFrom::Start(0)).map_err(|e| io_err(path, e))?;
    let mut buf = Vec::new();
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(|e| io_err(path, e))?;
    if buf.len() as u64 > max_bytes {
        return Err(QueryError::Corrupt {
            path: path.to_owned(),
            line: 1,
            reason: format!("document longer than {max_bytes} bytes"),
        });
    }
    Ok(buf)
}

fn parse<T: for<'de> Deserialize<'de>>(path: &Path, bytes: &[u8]) -> Result<T, QueryError> {
    serde_json::from_slice(bytes).map_err(|e| QueryError::Corrupt {
        path: path.to_owned(),
        line: u64::try_from(e.line()).unwrap_or(0),
        reason: format!("not a Gemini CLI session document: {e}"),
    })
}

/// The decoded tag of a saved chat's file name (Gemini CLI percent-encodes it).
pub fn saved_chat_tag(path: &Path) -> Option<String> {
    let stem = path.file_stem()?.to_str()?.strip_prefix("checkpoint-")?;
    let bytes = stem.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        if let (b'%', Some(v)) = (b, hex) {
            out.push(v);
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}

/// The listing facts of a document (read whole; it is rewritten whole, so nothing is
/// resumed). A saved chat has no id or time of its own: its id is its project directory
/// and file name, its time the file's modification time, its title its tag.
pub fn scan_meta(
    path: &Path,
    kind: Kind,
    max_bytes: u64,
    clean: TitleCleaner,
) -> Result<LogMeta, QueryError> {
    let mut file = open_regular(path)?;
    let bytes = read_document(path, &mut file, max_bytes)?;
    let mut meta = LogMeta::default();
    match kind {
        Kind::Chat => {
            let doc: ChatDocument = parse(path, &bytes)?;
            meta.native_id = doc.session_id.filter(|s| !s.is_empty());
            meta.project_hash = doc.project_hash.filter(|h| !h.is_empty());
            meta.created_at = doc
                .start_time
                .as_deref()
                .and_then(parse_time_ms)
                .or_else(|| {
                    doc.messages
                        .iter()
                        .find_map(|m| m.timestamp.as_deref().and_then(parse_time_ms))
                });
            meta.ai_title = doc.summary.as_deref().and_then(title_text);
            meta.hidden = doc.kind.as_deref() == Some("subagent");
            if let Some(text) = doc.messages.iter().find_map(|m| match m.item() {
                Some((ItemKind::User, t)) => Some(t),
                _ => None,
            }) {
                meta.see_user_text(&text, clean);
            }
        }
        Kind::Saved => {
            let turns = parse::<SavedChat>(path, &bytes)?.turns();
            meta.native_id = saved_chat_id(path);
            meta.custom_title = saved_chat_tag(path).as_deref().and_then(title_text);
            meta.created_at = file
                .metadata()
                .ok()
                .and_then(|m| m.modified().ok())
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .and_then(|d| i64::try_from(d.as_millis()).ok());
            if let Some(text) = turns.iter().find_map(|t| match t.item() {
                Some((ItemKind::User, t)) => Some(t),
                _ => None,
            }) {
                meta.see_user_text(&text, clean);
            }
        }
    }
    Ok(meta)
}

/// A saved chat's id: `<project directory>/<file stem>` (a tag is unique per project).
pub fn saved_chat_id(path: &Path) -> Option<String> {
    let stem = path.file_stem()?.to_str()?;
    let project = path.parent()?.file_name()?.to_str()?;
    Some(format!("{project}/{stem}"))
}

/// Where an item is: its message (or turn) index in the document, and a hash of its id and
/// text (a document rewritten meanwhile must still hold the same item there).
#[derive(Debug, Clone, Copy)]
pub struct ItemAt(usize, u64);

/// FNV-1a over an item's id and text.
fn fingerprint(id: &str, text: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in id.bytes().chain([0]).chain(text.bytes()) {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// A visible item of a document: its index, kind, text, time and id.
type DocItem = (usize, ItemKind, String, i64, String);

/// The visible items of a document, each with its index and time.
fn items(
    path: &Path,
    kind: Kind,
    bytes: &[u8],
    default_time: i64,
) -> Result<Vec<DocItem>, QueryError> {
    Ok(match kind {
        Kind::Chat => parse::<ChatDocument>(path, bytes)?
            .messages
            .into_iter()
            .enumerate()
            .filter_map(|(i, m)| {
                let (kind, text) = m.item()?;
                let time = m
                    .timestamp
                    .as_deref()
                    .and_then(parse_time_ms)
                    .unwrap_or(default_time);
                Some((i, kind, text, time, m.id.unwrap_or_default()))
            })
            .collect(),
        Kind::Saved => parse::<SavedChat>(path, bytes)?
            .turns()
            .into_iter()
            .enumerate()
            .filter_map(|(i, t)| {
                let (kind, text) = t.item()?;
                Some((i, kind, text, default_time, format!("turn-{i}")))
            })
            .collect(),
    })
}

/// Stream the surface of the document at `path`.
pub fn scan(
    path: &Path,
    kind: Kind,
    header: SessionHeader,
    max_bytes: u64,
    visitor: &mut dyn SurfaceVisitor,
) -> Result<SurfaceScan, QueryError> {
    let mut file = open_regular(path)?;
    let bytes = read_document(path, &mut file, max_bytes)?;
    let default_time = header.created_at;
    let mut builder: SurfaceBuilder<'_, ItemAt> = SurfaceBuilder::new(visitor);
    for (i, kind, text, time, id) in items(path, kind, &bytes, default_time)? {
        let at = ItemAt(i, fingerprint(&id, &text));
        let event = item_event(kind, builder.next_seq(), time, id, text);
        builder.push(&event, at);
    }
    Ok(builder.finish(
        header,
        path.to_owned(),
        Document {
            path: path.to_owned(),
            file,
            kind,
            max_bytes,
            default_time,
        },
    ))
}

/// Reads items again through the file the scan opened.
#[derive(Debug)]
struct Document {
    path: PathBuf,
    file: File,
    kind: Kind,
    max_bytes: u64,
    default_time: i64,
}

impl ItemSource for Document {
    type At = ItemAt;

    fn read(&mut self, wanted: &[(u64, ItemAt)]) -> Result<Vec<Event>, QueryError> {
        let bytes = read_document(&self.path, &mut self.file, self.max_bytes)?;
        let all = items(&self.path, self.kind, &bytes, self.default_time)?;
        wanted
            .iter()
            .map(|&(seq, ItemAt(index, print))| {
                all.iter()
                    .find(|item| item.0 == index && fingerprint(&item.4, &item.2) == print)
                    .map(|(_, kind, text, time, id)| {
                        item_event(*kind, seq, *time, id.clone(), text.clone())
                    })
                    .ok_or_else(|| changed(&self.path, &format!("item {seq} is gone")))
            })
            .collect()
    }
}

fn io_err(path: &Path, source: std::io::Error) -> QueryError {
    QueryError::Io {
        path: path.to_owned(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saved_chat_tags_are_decoded() {
        let tag = |name: &str| saved_chat_tag(Path::new(name));
        assert_eq!(
            tag("/t/p/checkpoint-release%20plan.json").as_deref(),
            Some("release plan")
        );
        assert_eq!(
            tag("/t/p/checkpoint-%E7%B5%90%E5%B8%B3.json").as_deref(),
            Some("結帳")
        );
        assert_eq!(tag("/t/p/checkpoint-50%.json").as_deref(), Some("50%"));
        assert_eq!(tag("/t/p/session-x.json"), None);
        assert_eq!(
            saved_chat_id(Path::new("/h/.gemini/tmp/shop/checkpoint-a.json")).as_deref(),
            Some("shop/checkpoint-a")
        );
    }
}
