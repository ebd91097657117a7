//! Gemini CLI chats as JSON lines (`session-<time>-<id8>.jsonl`, Gemini CLI from spring
//! 2026): a first metadata line `{sessionId, projectHash, startTime, lastUpdated, kind?}`,
//! then message records (a message written again under the same `id` is an update of it),
//! `{"$set": {…}}` metadata updates (`summary`; `messages` replaces the whole history, as a
//! compression does) and `{"$rewindTo": id}` (that message and every later one are gone).
//! A migrated older chat may also have the whole record on its first line.
//!
//! A line holding a whole history (a migrated record, a compression's `$set`) is parsed once,
//! its messages left raw and each parsed alone; an item is read again by its span in the
//! file ([`Span`]), never by parsing its line again.

use std::collections::HashMap;
use std::fs::File;
use std::hash::{BuildHasher, RandomState};
use std::io::{BufReader, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::value::RawValue;

use dsh_store::{Event, QueryError, SessionHeader, SurfaceScan, SurfaceVisitor};

use super::records::{MessageRecord, PartList};
use crate::item_surface::{ItemSource, SurfaceBuilder, changed};
use crate::json_span::Span;
use crate::jsonl::{JsonlLines, Parsed, parse_line};
use crate::log_meta::{LogMeta, TitleCleaner, title_text};
use crate::open_file::open_regular;
use crate::surface_events::{ItemKind, item_event, parse_time_ms};

/// The fields of any line: metadata, a message, an update or a rewind.
#[derive(Debug, Deserialize)]
struct ChatLine<'a> {
    #[serde(rename = "sessionId")]
    session_id: Option<String>,
    #[serde(rename = "projectHash")]
    project_hash: Option<String>,
    #[serde(rename = "startTime")]
    start_time: Option<String>,
    summary: Option<String>,
    kind: Option<String>,
    /// A whole older record on one line (its messages raw).
    #[serde(borrow)]
    messages: Option<Vec<&'a RawValue>>,
    // A message record.
    id: Option<String>,
    timestamp: Option<String>,
    #[serde(rename = "type")]
    message_type: Option<String>,
    content: Option<PartList>,
    #[serde(rename = "displayContent")]
    display_content: Option<PartList>,
    #[serde(rename = "$set", borrow)]
    set: Option<SetRecord<'a>>,
    #[serde(rename = "$rewindTo")]
    rewind_to: Option<String>,
}

/// `{"$set": {…}}`: the metadata fields it changes.
#[derive(Debug, Deserialize)]
struct SetRecord<'a> {
    summary: Option<String>,
    kind: Option<String>,
    #[serde(borrow)]
    messages: Option<Vec<&'a RawValue>>,
}

/// What a line is.
enum Line<'a> {
    Meta {
        session_id: Option<String>,
        project_hash: Option<String>,
        start_time: Option<String>,
        summary: Option<String>,
        kind: Option<String>,
        messages: Option<Vec<&'a RawValue>>,
    },
    Message(MessageRecord),
    Set(SetRecord<'a>),
    Rewind(String),
    Other,
}

impl<'a> ChatLine<'a> {
    /// Classified the way Gemini CLI reads its lines: a rewind, a message (a string `id`),
    /// an update, metadata.
    fn into_line(self) -> Line<'a> {
        if let Some(to) = self.rewind_to {
            return Line::Rewind(to);
        }
        if self.id.is_some() {
            return Line::Message(MessageRecord {
                id: self.id,
                timestamp: self.timestamp,
                kind: self.message_type,
                content: self.content,
                display_content: self.display_content,
            });
        }
        if let Some(set) = self.set {
            return Line::Set(set);
        }
        if self.session_id.is_some() && self.project_hash.is_some() {
            return Line::Meta {
                session_id: self.session_id,
                project_hash: self.project_hash,
                start_time: self.start_time,
                summary: self.summary,
                kind: self.kind,
                messages: self.messages,
            };
        }
        Line::Other
    }
}

fn parse(body: &[u8]) -> Result<Line<'_>, String> {
    match parse_line::<ChatLine>(body) {
        Parsed::Record(l) => Ok(l.into_line()),
        Parsed::Other => Ok(Line::Other),
        Parsed::NotJson(reason) => Err(reason),
    }
}

fn see_first_request(meta: &mut LogMeta, message: &MessageRecord, clean: TitleCleaner) {
    if meta.first_user_seen {
        return;
    }
    if let Some((ItemKind::User, text)) = message.item() {
        meta.see_user_text(&text, clean);
    }
}

/// The first request among raw messages, parsed one by one until it is found.
fn see_first_request_raw(meta: &mut LogMeta, messages: &[&RawValue], clean: TitleCleaner) {
    for m in messages {
        if meta.first_user_seen {
            return;
        }
        if let Ok(message) = serde_json::from_str::<MessageRecord>(m.get()) {
            see_first_request(meta, &message, clean);
        }
    }
}

/// Continue (or start) the listing scan of the chat at `path` from `meta.resume`.
pub fn scan_meta(
    path: &Path,
    mut meta: LogMeta,
    max_line_bytes: u64,
    clean: TitleCleaner,
) -> Result<LogMeta, QueryError> {
    let (offset, line) = meta.resume.unwrap_or((0, 1));
    if meta.resume.is_none() {
        meta = LogMeta::default();
    }
    let mut file = open_regular(path)?;
    file.seek(SeekFrom::Start(offset))
        .map_err(|e| io_err(path, e))?;
    let mut lines = JsonlLines::new(
        path,
        BufReader::with_capacity(64 * 1024, file),
        max_line_bytes,
        offset,
        line,
    );
    let mut damaged = false;
    loop {
        let (at, body) = match lines.next_line() {
            Err(e @ QueryError::Io { .. }) => return Err(e),
            Err(e) => {
                tracing::warn!(error = %e, "Gemini CLI chat damaged; listed with what was read");
                damaged = true;
                break;
            }
            Ok(None) => break,
            Ok(Some(line)) => line,
        };
        let line = match parse(body) {
            Ok(line) => line,
            Err(reason) => match lines.damaged(at, format!("not JSON: {reason}")) {
                Ok(()) => continue,
                Err(e) => {
                    tracing::warn!(error = %e, "Gemini CLI chat damaged; listed with what was read");
                    damaged = true;
                    break;
                }
            },
        };
        match line {
            Line::Meta {
                session_id,
                project_hash,
                start_time,
                summary,
                kind,
                messages,
            } => {
                if meta.native_id.is_none() {
                    meta.native_id = session_id.filter(|s| !s.is_empty());
                }
                if meta.project_hash.is_none() {
                    meta.project_hash = project_hash.filter(|h| !h.is_empty());
                }
                if let Some(t) = start_time.as_deref().and_then(parse_time_ms) {
                    meta.created_at = Some(t);
                }
                if let Some(s) = summary.as_deref().and_then(title_text) {
                    meta.ai_title = Some(s);
                }
                meta.hidden |= kind.as_deref() == Some("subagent");
                see_first_request_raw(&mut meta, messages.as_deref().unwrap_or_default(), clean);
            }
            Line::Message(m) => {
                if meta.created_at.is_none() {
                    meta.created_at = m.timestamp.as_deref().and_then(parse_time_ms);
                }
                see_first_request(&mut meta, &m, clean);
            }
            Line::Set(set) => {
                if let Some(s) = set.summary.as_deref().and_then(title_text) {
                    meta.ai_title = Some(s);
                }
                if let Some(kind) = set.kind {
                    meta.hidden = kind == "subagent";
                }
                see_first_request_raw(
                    &mut meta,
                    set.messages.as_deref().unwrap_or_default(),
                    clean,
                );
            }
            Line::Rewind(_) | Line::Other => {}
        }
    }
    meta.resume = (!damaged).then(|| lines.resume_at());
    Ok(meta)
}

/// Where an item is: the span of its message record in the file (a whole line, or one
/// message of a line holding a list of them), that line's number, and the message id's
/// hash, checked when it is read again.
#[derive(Debug, Clone, Copy)]
pub struct ItemAt {
    span: Span,
    line: u64,
    /// The span is a whole line (a message record), not one message of a list.
    whole: bool,
    id: u64,
}

/// One message of the current history: its id's hash and its item, if it shows one.
type Placed = (u64, Option<u64>);

/// The history being folded: the surface, each message in order (16 bytes a message) and
/// where each id is in it.
struct History<'v> {
    builder: SurfaceBuilder<'v, ItemAt>,
    hasher: RandomState,
    order: Vec<Placed>,
    position: HashMap<u64, usize>,
}

impl History<'_> {
    /// A line holding a whole history (`messages`, raw, on line `line` of `body`, which
    /// starts at byte `base`): it replaces the history; each message is parsed alone.
    fn replace(&mut self, base: u64, body: &[u8], line: u64, messages: &[&RawValue]) {
        self.builder.clear();
        self.order.clear();
        self.position.clear();
        for raw in messages {
            let Some(span) = Span::within(base, body, raw.get()) else {
                continue;
            };
            let Ok(m) = serde_json::from_str::<MessageRecord>(raw.get()) else {
                continue;
            };
            let id = self.hasher.hash_one(m.id.as_deref().unwrap_or_default());
            let at = ItemAt {
                span,
                line,
                whole: false,
                id,
            };
            let seq = show(&mut self.builder, &m, at);
            self.position.insert(id, self.order.len());
            self.order.push((id, seq));
        }
    }
}

/// Stream the surface of the chat at `path`.
pub fn scan(
    path: &Path,
    header: SessionHeader,
    max_line_bytes: u64,
    visitor: &mut dyn SurfaceVisitor,
) -> Result<SurfaceScan, QueryError> {
    let file = open_regular(path)?;
    let reading = file.try_clone().map_err(|e| io_err(path, e))?;
    let mut lines = JsonlLines::new(
        path,
        BufReader::with_capacity(256 * 1024, reading),
        max_line_bytes,
        0,
        1,
    );
    let mut h = History {
        builder: SurfaceBuilder::new(visitor),
        hasher: RandomState::new(),
        order: Vec::new(),
        position: HashMap::new(),
    };
    while let Some((at, body)) = lines.next_line()? {
        let line = match parse(body) {
            Ok(l) => l,
            Err(reason) => {
                lines.damaged(at, format!("not JSON: {reason}"))?;
                continue;
            }
        };
        match line {
            Line::Meta {
                messages: Some(messages),
                ..
            }
            | Line::Set(SetRecord {
                messages: Some(messages),
                ..
            }) => h.replace(at.offset, body, at.number, &messages),
            Line::Message(m) => {
                let id = h.hasher.hash_one(m.id.as_deref().unwrap_or_default());
                let item_at = ItemAt {
                    span: Span {
                        offset: at.offset,
                        len: at.len,
                    },
                    line: at.number,
                    whole: true,
                    id,
                };
                match h.position.get(&id).copied() {
                    None => {
                        let seq = show(&mut h.builder, &m, item_at);
                        h.position.insert(id, h.order.len());
                        h.order.push((id, seq));
                    }
                    // An update of the last message that now shows something; any other
                    // update keeps the item first shown (its text does not change).
                    Some(i)
                        if i + 1 == h.order.len()
                            && h.order.get(i).is_some_and(|p| p.1.is_none()) =>
                    {
                        let seq = show(&mut h.builder, &m, item_at);
                        if let Some(slot) = h.order.get_mut(i) {
                            slot.1 = seq;
                        }
                    }
                    Some(_) => {}
                }
            }
            Line::Rewind(to) => {
                let id = h.hasher.hash_one(to.as_str());
                // An unknown id rewinds everything, as Gemini CLI does.
                let from = h.position.get(&id).copied().unwrap_or(0);
                let gone: Vec<Placed> = h.order.split_off(from.min(h.order.len()));
                for (id, _) in &gone {
                    h.position.remove(id);
                }
                let seqs: Vec<u64> = gone.iter().filter_map(|(_, s)| *s).collect();
                h.builder.remove(&seqs);
            }
            Line::Meta { .. } | Line::Set(_) | Line::Other => {}
        }
    }
    Ok(h.builder.finish(
        header,
        path.to_owned(),
        Lines {
            path: path.to_owned(),
            file,
            hasher: h.hasher,
        },
    ))
}

/// Show `message`'s item, if it has one; its seq.
fn show(
    builder: &mut SurfaceBuilder<'_, ItemAt>,
    message: &MessageRecord,
    at: ItemAt,
) -> Option<u64> {
    let event = event_of(message, builder.next_seq())?;
    builder.push(&event, at);
    Some(event.seq)
}

fn event_of(message: &MessageRecord, seq: u64) -> Option<Event> {
    let (kind, text) = message.item()?;
    let time = message
        .timestamp
        .as_deref()
        .and_then(parse_time_ms)
        .unwrap_or(0);
    Some(item_event(
        kind,
        seq,
        time,
        message.id.clone().unwrap_or_default(),
        text,
    ))
}

/// Reads items again through the file the scan opened.
#[derive(Debug)]
struct Lines {
    path: PathBuf,
    file: File,
    hasher: RandomState,
}

impl ItemSource for Lines {
    type At = ItemAt;

    fn read(&mut self, wanted: &[(u64, ItemAt)]) -> Result<Vec<Event>, QueryError> {
        let mut out = Vec::with_capacity(wanted.len());
        let mut buf = Vec::new();
        for &(seq, at) in wanted {
            at.span.read(&self.path, &self.file, &mut buf)?;
            let message = if at.whole {
                let body = buf
                    .strip_suffix(b"\n")
                    .ok_or_else(|| changed(&self.path, "line is no longer terminated"))?;
                match parse(body) {
                    Ok(Line::Message(m)) => Some(m),
                    _ => None,
                }
            } else {
                serde_json::from_slice::<MessageRecord>(&buf).ok()
            };
            let event = message
                .filter(|m| self.hasher.hash_one(m.id.as_deref().unwrap_or_default()) == at.id)
                .and_then(|m| event_of(&m, seq))
                .ok_or_else(|| {
                    changed(
                        &self.path,
                        &format!("line {} no longer holds item {seq}", at.line),
                    )
                })?;
            out.push(event);
        }
        Ok(out)
    }
}

fn io_err(path: &Path, source: std::io::Error) -> QueryError {
    QueryError::Io {
        path: path.to_owned(),
        source,
    }
}
