//! Gemini CLI chats as JSON lines (`session-<time>-<id8>.jsonl`, Gemini CLI from spring
//! 2026): a first metadata line `{sessionId, projectHash, startTime, lastUpdated, kind?}`,
//! then message records (a message written again under the same `id` is an update of it),
//! `{"$set": {…}}` metadata updates (`summary`; `messages` replaces the whole history, as a
//! compression does) and `{"$rewindTo": id}` (that message and every later one are gone).
//! A migrated older chat may also have the whole record on its first line.

use std::collections::HashMap;
use std::fs::File;
use std::hash::{BuildHasher, RandomState};
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use dsh_store::{Event, QueryError, SessionHeader, SurfaceScan, SurfaceVisitor};

use super::records::{MessageRecord, PartList};
use crate::item_surface::{ItemSource, SurfaceBuilder, changed};
use crate::jsonl::{JsonlLines, LineAt, Parsed, parse_line};
use crate::log_meta::{LogMeta, TitleCleaner, title_text};
use crate::open_file::open_regular;
use crate::surface_events::{ItemKind, item_event, parse_time_ms};

/// The fields of any line: metadata, a message, an update or a rewind.
#[derive(Debug, Deserialize)]
struct ChatLine {
    #[serde(rename = "sessionId")]
    session_id: Option<String>,
    #[serde(rename = "projectHash")]
    project_hash: Option<String>,
    #[serde(rename = "startTime")]
    start_time: Option<String>,
    summary: Option<String>,
    kind: Option<String>,
    /// A whole older record on one line.
    messages: Option<Vec<MessageRecord>>,
    // A message record.
    id: Option<String>,
    timestamp: Option<String>,
    #[serde(rename = "type")]
    message_type: Option<String>,
    content: Option<PartList>,
    #[serde(rename = "displayContent")]
    display_content: Option<PartList>,
    #[serde(rename = "$set")]
    set: Option<SetRecord>,
    #[serde(rename = "$rewindTo")]
    rewind_to: Option<String>,
}

/// `{"$set": {…}}`: the metadata fields it changes.
#[derive(Debug, Deserialize)]
struct SetRecord {
    summary: Option<String>,
    kind: Option<String>,
    messages: Option<Vec<MessageRecord>>,
}

/// What a line is.
enum Line {
    Meta {
        session_id: Option<String>,
        project_hash: Option<String>,
        start_time: Option<String>,
        summary: Option<String>,
        kind: Option<String>,
        messages: Option<Vec<MessageRecord>>,
    },
    Message(MessageRecord),
    Set(SetRecord),
    Rewind(String),
    Other,
}

impl ChatLine {
    /// Classified the way Gemini CLI reads its lines: a rewind, a message (a string `id`),
    /// an update, metadata.
    fn into_line(self) -> Line {
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

fn parse(body: &[u8]) -> Result<Line, String> {
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
        let record = match lines.next_record::<ChatLine>() {
            Err(e @ QueryError::Io { .. }) => return Err(e),
            Err(e) => {
                tracing::warn!(error = %e, "Gemini CLI chat damaged; listed with what was read");
                damaged = true;
                break;
            }
            Ok(None) => break,
            Ok(Some((_, record))) => record,
        };
        match record.into_line() {
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
                for m in messages.iter().flatten() {
                    see_first_request(&mut meta, m, clean);
                }
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
                for m in set.messages.iter().flatten() {
                    see_first_request(&mut meta, m, clean);
                }
            }
            Line::Rewind(_) | Line::Other => {}
        }
    }
    meta.resume = (!damaged).then(|| lines.resume_at());
    Ok(meta)
}

/// Where an item is: its line and, for a line holding a list of messages, the index.
#[derive(Debug, Clone, Copy)]
pub struct ItemAt {
    line: LineAt,
    sub: usize,
    /// The message id's hash, checked when read again.
    id: u64,
}

/// One message of the current history: its id's hash and its item, if it shows one.
type Placed = (u64, Option<u64>);

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
    let hasher = RandomState::new();
    let mut builder: SurfaceBuilder<'_, ItemAt> = SurfaceBuilder::new(visitor);
    // The history in order (16 bytes a message) and where each id is in it.
    let mut history: Vec<Placed> = Vec::new();
    let mut position: HashMap<u64, usize> = HashMap::new();
    while let Some((at, body)) = lines.next_line()? {
        let line = match parse(body) {
            Ok(l) => l,
            Err(reason) => {
                lines.damaged(at, format!("not JSON: {reason}"))?;
                continue;
            }
        };
        let replace = |messages: Vec<MessageRecord>,
                       builder: &mut SurfaceBuilder<'_, ItemAt>,
                       history: &mut Vec<Placed>,
                       position: &mut HashMap<u64, usize>| {
            builder.clear();
            history.clear();
            position.clear();
            for (sub, m) in messages.into_iter().enumerate() {
                let id = hasher.hash_one(m.id.as_deref().unwrap_or_default());
                let seq = show(builder, &m, ItemAt { line: at, sub, id });
                position.insert(id, history.len());
                history.push((id, seq));
            }
        };
        match line {
            Line::Meta { messages, .. } => {
                if let Some(messages) = messages {
                    replace(messages, &mut builder, &mut history, &mut position);
                }
            }
            Line::Set(SetRecord {
                messages: Some(messages),
                ..
            }) => replace(messages, &mut builder, &mut history, &mut position),
            Line::Message(m) => {
                let id = hasher.hash_one(m.id.as_deref().unwrap_or_default());
                let item_at = ItemAt {
                    line: at,
                    sub: 0,
                    id,
                };
                match position.get(&id).copied() {
                    None => {
                        let seq = show(&mut builder, &m, item_at);
                        position.insert(id, history.len());
                        history.push((id, seq));
                    }
                    // An update of the last message that now shows something; any other
                    // update keeps the item first shown (its text does not change).
                    Some(i)
                        if i + 1 == history.len()
                            && history.get(i).is_some_and(|h| h.1.is_none()) =>
                    {
                        let seq = show(&mut builder, &m, item_at);
                        if let Some(slot) = history.get_mut(i) {
                            slot.1 = seq;
                        }
                    }
                    Some(_) => {}
                }
            }
            Line::Rewind(to) => {
                let id = hasher.hash_one(to.as_str());
                // An unknown id rewinds everything, as Gemini CLI does.
                let from = position.get(&id).copied().unwrap_or(0);
                let gone: Vec<Placed> = history.split_off(from.min(history.len()));
                for (id, _) in &gone {
                    position.remove(id);
                }
                let seqs: Vec<u64> = gone.iter().filter_map(|(_, s)| *s).collect();
                builder.remove(&seqs);
            }
            Line::Set(_) | Line::Other => {}
        }
    }
    Ok(builder.finish(
        header,
        path.to_owned(),
        Lines {
            path: path.to_owned(),
            file,
            hasher,
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
            let len =
                usize::try_from(at.line.len).map_err(|_| changed(&self.path, "line length"))?;
            buf.resize(len, 0);
            (&self.file)
                .seek(SeekFrom::Start(at.line.offset))
                .and_then(|_| (&self.file).read_exact(&mut buf))
                .map_err(|e| io_err(&self.path, e))?;
            let body = buf
                .strip_suffix(b"\n")
                .ok_or_else(|| changed(&self.path, "line is no longer terminated"))?;
            let message = match parse(body) {
                Ok(Line::Message(m)) if at.sub == 0 => Some(m),
                Ok(
                    Line::Set(SetRecord {
                        messages: Some(list),
                        ..
                    })
                    | Line::Meta {
                        messages: Some(list),
                        ..
                    },
                ) => list.into_iter().nth(at.sub),
                _ => None,
            };
            let event = message
                .filter(|m| self.hasher.hash_one(m.id.as_deref().unwrap_or_default()) == at.id)
                .and_then(|m| event_of(&m, seq))
                .ok_or_else(|| {
                    changed(
                        &self.path,
                        &format!("line {} no longer holds item {seq}", at.line.number),
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
