//! Gemini CLI sessions kept as one JSON document, rewritten whole on every change: chats
//! before the JSON-lines format (`session-<time>-<id8>.json`: `{sessionId, projectHash,
//! startTime, lastUpdated, messages, summary?, kind?}`) and saved chats
//! (`checkpoint-<tag>.json`: `{history: [{role, parts}], authType?}`, or the bare history
//! list in older versions).
//!
//! A document is one record: like a log line, it is read only up to the store's line limit
//! (`store.max_line_bytes`); a longer one is reported, never held. It is parsed **once** per
//! scan, its messages left raw ([`RawValue`], borrowed from the bytes read) and each parsed
//! alone; an item is read again by its span in the file ([`Span`]), never by parsing the
//! document again — so a chat of any length costs one parse and each item read again its
//! own bytes (issue 34: a 330 000-message chat was parsed again per batch of 256).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::value::RawValue;

use dsh_store::{Event, QueryError, SessionHeader, SurfaceScan, SurfaceVisitor};

use super::records::{HistoryTurn, MessageRecord};
use crate::item_surface::{ItemSource, SurfaceBuilder, changed};
use crate::json_span::Span;
use crate::log_meta::{LogMeta, TitleCleaner, title_text};
use crate::open_file::open_regular;
use crate::surface_events::{ItemKind, item_event, parse_time_ms};

/// An older chat document, its messages raw.
#[derive(Debug, Deserialize)]
struct ChatDocument<'a> {
    #[serde(rename = "sessionId")]
    session_id: Option<String>,
    #[serde(rename = "projectHash")]
    project_hash: Option<String>,
    #[serde(rename = "startTime")]
    start_time: Option<String>,
    summary: Option<String>,
    kind: Option<String>,
    #[serde(default, borrow)]
    messages: Vec<&'a RawValue>,
}

/// A saved chat wrapped with its auth type (the newer shape; the older one is the bare
/// history list).
#[derive(Debug, Deserialize)]
struct WrappedSavedChat<'a> {
    #[serde(borrow)]
    history: Vec<&'a RawValue>,
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

fn parse<'a, T: Deserialize<'a>>(path: &Path, bytes: &'a [u8]) -> Result<T, QueryError> {
    serde_json::from_slice(bytes).map_err(|e| QueryError::Corrupt {
        path: path.to_owned(),
        line: u64::try_from(e.line()).unwrap_or(0),
        reason: format!("not a Gemini CLI session document: {e}"),
    })
}

/// One parse of a document: its chat fields (none for a saved chat) and its messages (or
/// turns), raw, in order.
fn parse_document<'a>(
    path: &Path,
    kind: Kind,
    bytes: &'a [u8],
) -> Result<(Option<ChatDocument<'a>>, Vec<&'a RawValue>), QueryError> {
    match kind {
        Kind::Chat => {
            let mut doc: ChatDocument<'a> = parse(path, bytes)?;
            let messages = std::mem::take(&mut doc.messages);
            Ok((Some(doc), messages))
        }
        Kind::Saved => {
            let bare = bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[');
            let turns = if bare {
                parse::<Vec<&'a RawValue>>(path, bytes)?
            } else {
                parse::<WrappedSavedChat<'a>>(path, bytes)?.history
            };
            Ok((None, turns))
        }
    }
}

/// One raw message (or turn) of a document, parsed alone: its visible item, time and id.
/// `index` is its place in the document (a saved chat's turns have no id of their own); a
/// value of another shape shows nothing.
fn item_of(kind: Kind, raw: &[u8], index: usize, default_time: i64) -> Option<DocItem> {
    match kind {
        Kind::Chat => {
            let m: MessageRecord = serde_json::from_slice(raw).ok()?;
            let (kind, text) = m.item()?;
            let time = m
                .timestamp
                .as_deref()
                .and_then(parse_time_ms)
                .unwrap_or(default_time);
            Some((kind, text, time, m.id.unwrap_or_default()))
        }
        Kind::Saved => {
            let t: HistoryTurn = serde_json::from_slice(raw).ok()?;
            let (kind, text) = t.item()?;
            Some((kind, text, default_time, format!("turn-{index}")))
        }
    }
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
/// and file name, its time the file's modification time, its title its tag. Messages are
/// parsed only until the first request (and the first time) is found.
pub fn scan_meta(
    path: &Path,
    kind: Kind,
    max_bytes: u64,
    clean: TitleCleaner,
) -> Result<LogMeta, QueryError> {
    let mut file = open_regular(path)?;
    let bytes = read_document(path, &mut file, max_bytes)?;
    let (doc, raw) = parse_document(path, kind, &bytes)?;
    let mut meta = LogMeta::default();
    let mut created_at = None;
    if let Some(doc) = doc {
        meta.native_id = doc.session_id.filter(|s| !s.is_empty());
        meta.project_hash = doc.project_hash.filter(|h| !h.is_empty());
        created_at = doc.start_time.as_deref().and_then(parse_time_ms);
        meta.ai_title = doc.summary.as_deref().and_then(title_text);
        meta.hidden = doc.kind.as_deref() == Some("subagent");
    } else {
        meta.native_id = saved_chat_id(path);
        meta.custom_title = saved_chat_tag(path).as_deref().and_then(title_text);
        meta.created_at = file
            .metadata()
            .ok()
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .and_then(|d| i64::try_from(d.as_millis()).ok());
    }
    for (i, m) in raw.iter().enumerate() {
        if kind == Kind::Chat && created_at.is_none() {
            created_at = serde_json::from_str::<Stamped>(m.get())
                .ok()
                .and_then(|s| s.timestamp)
                .as_deref()
                .and_then(parse_time_ms);
        }
        if !meta.first_user_seen
            && let Some((ItemKind::User, text, ..)) = item_of(kind, m.get().as_bytes(), i, 0)
        {
            meta.see_user_text(&text, clean);
        }
        if meta.first_user_seen && (kind == Kind::Saved || created_at.is_some()) {
            break;
        }
    }
    if kind == Kind::Chat {
        meta.created_at = created_at;
    }
    Ok(meta)
}

/// A message's time alone.
#[derive(Deserialize)]
struct Stamped {
    timestamp: Option<String>,
}

/// A saved chat's id: `<project directory>/<file stem>` (a tag is unique per project).
pub fn saved_chat_id(path: &Path) -> Option<String> {
    let stem = path.file_stem()?.to_str()?;
    let project = path.parent()?.file_name()?.to_str()?;
    Some(format!("{project}/{stem}"))
}

/// Where an item is: the span of its message (or turn) in the file, its index in the
/// document, and a hash of its id and text (a document rewritten meanwhile must still hold
/// the same item there).
#[derive(Debug, Clone, Copy)]
pub struct ItemAt {
    span: Span,
    index: usize,
    print: u64,
}

/// FNV-1a over an item's id and text.
fn fingerprint(id: &str, text: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in id.bytes().chain([0]).chain(text.bytes()) {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// A visible item of a document: its kind, text, time and id.
type DocItem = (ItemKind, String, i64, String);

/// Stream the surface of the document at `path`: one parse of the document, each message
/// parsed alone and dropped once shown.
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
    {
        let (_, raw) = parse_document(path, kind, &bytes)?;
        for (index, m) in raw.into_iter().enumerate() {
            let Some((item_kind, text, time, id)) =
                item_of(kind, m.get().as_bytes(), index, default_time)
            else {
                continue;
            };
            let span = Span::within(0, &bytes, m.get())
                .ok_or_else(|| changed(path, "a message outside its document"))?;
            let at = ItemAt {
                span,
                index,
                print: fingerprint(&id, &text),
            };
            let event = item_event(item_kind, builder.next_seq(), time, id, text);
            builder.push(&event, at);
        }
    }
    drop(bytes);
    Ok(builder.finish(
        header,
        path.to_owned(),
        Document {
            path: path.to_owned(),
            file,
            kind,
            default_time,
        },
    ))
}

/// Reads items again through the file the scan opened, each by its span.
#[derive(Debug)]
struct Document {
    path: PathBuf,
    file: File,
    kind: Kind,
    default_time: i64,
}

impl ItemSource for Document {
    type At = ItemAt;

    fn read(&mut self, wanted: &[(u64, ItemAt)]) -> Result<Vec<Event>, QueryError> {
        let mut buf = Vec::new();
        wanted
            .iter()
            .map(|&(seq, at)| {
                at.span.read(&self.path, &self.file, &mut buf)?;
                item_of(self.kind, &buf, at.index, self.default_time)
                    .filter(|(_, text, _, id)| fingerprint(id, text) == at.print)
                    .map(|(kind, text, time, id)| item_event(kind, seq, time, id, text))
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
