//! A session as index documents, and back: the lead piece with the session's fields and its
//! last messages, the other pieces with their messages only (docs/search.md: long sessions).

use dsh_store::projection::TurnRole;
use tantivy::TantivyDocument;
use tantivy::schema::Value;

use crate::log_state::LogState;
use crate::schema::Fields;
use crate::session_text::{IndexedMessage, SessionMeta};

/// Bytes per message record in the `msgs` field: the kind (0 a user message, 1 an assistant
/// message, 2 a compaction summary), the seq, the time, the message's place in the
/// conversation.
const MSG_RECORD: usize = 25;

/// Where a piece sits among its session's documents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PiecePlace {
    /// The piece's number (text order).
    pub piece: u64,
    /// The session has more than one piece.
    pub split: bool,
    /// The read that wrote it.
    pub read: u64,
}

/// A session's lead document as stored: its fields and its own messages.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredSession {
    pub path: String,
    pub id: String,
    pub cwd: Option<String>,
    pub title: Option<String>,
    pub created_at: i64,
    pub last_time: i64,
    pub messages: Vec<IndexedMessage>,
    pub state: Option<LogState>,
    /// The lead's piece number.
    pub piece: u64,
    /// The session has pieces before the lead.
    pub split: bool,
}

fn placed(f: &Fields, path: &str, place: PiecePlace) -> TantivyDocument {
    let mut doc = TantivyDocument::new();
    doc.add_text(f.path, path);
    doc.add_u64(f.piece, place.piece);
    doc.add_u64(f.split, u64::from(place.split));
    doc.add_u64(f.read, place.read);
    doc
}

fn add_messages(f: &Fields, doc: &mut TantivyDocument, messages: &[IndexedMessage]) {
    let mut records = Vec::with_capacity(messages.len() * MSG_RECORD);
    for m in messages {
        doc.add_text(f.body, &m.text);
        records.push(match (m.role, m.checkpoint) {
            (_, true) => 2u8,
            (TurnRole::User, false) => 0u8,
            (TurnRole::Assistant, false) => 1u8,
        });
        records.extend_from_slice(&m.seq.to_le_bytes());
        records.extend_from_slice(&m.time.to_le_bytes());
        records.extend_from_slice(&m.number.to_le_bytes());
    }
    doc.add_bytes(f.msgs, &records);
}

/// A piece before the lead: its messages only.
pub fn piece_document(
    f: &Fields,
    path: &str,
    place: PiecePlace,
    messages: &[IndexedMessage],
) -> TantivyDocument {
    let mut doc = placed(f, path, place);
    add_messages(f, &mut doc, messages);
    doc
}

/// The lead document of the session `meta` read from the log at `path` in state `state`,
/// with the messages of its last piece.
pub fn lead_document(
    f: &Fields,
    path: &str,
    place: PiecePlace,
    meta: &SessionMeta,
    messages: &[IndexedMessage],
    state: &LogState,
) -> TantivyDocument {
    let mut doc = placed(f, path, place);
    doc.add_u64(f.lead, 1);
    doc.add_text(f.id, &meta.header.id);
    let mut meta_text = meta.header.id.clone();
    if let Some(cwd) = &meta.header.cwd {
        doc.add_text(f.cwd, cwd);
        meta_text.push('\n');
        meta_text.push_str(cwd);
    }
    if let Some(title) = &meta.title {
        doc.add_text(f.title, title);
        meta_text.push('\n');
        meta_text.push_str(title);
    }
    doc.add_text(f.meta, &meta_text);
    doc.add_i64(f.created, meta.header.created_at);
    doc.add_i64(f.time, meta.last_time);
    add_messages(f, &mut doc, messages);
    doc.add_bytes(f.state, &state.to_bytes());
    doc
}

/// The lead document of a log that could not be read: only its path and state, nothing
/// found.
pub fn failed_document(f: &Fields, path: &str, read: u64, state: &LogState) -> TantivyDocument {
    let mut doc = placed(
        f,
        path,
        PiecePlace {
            piece: 0,
            split: false,
            read,
        },
    );
    doc.add_u64(f.lead, 1);
    doc.add_i64(f.time, 0);
    doc.add_bytes(f.state, &state.to_bytes());
    doc
}

/// The messages a piece holds; `None` when it is not a piece of this format.
pub fn stored_messages(f: &Fields, doc: &TantivyDocument) -> Option<Vec<IndexedMessage>> {
    let records = doc.get_first(f.msgs).and_then(|v| v.as_bytes())?;
    let bodies: Vec<&str> = doc.get_all(f.body).filter_map(|v| v.as_str()).collect();
    if records.len() != bodies.len() * MSG_RECORD {
        return None;
    }
    let mut messages = Vec::with_capacity(bodies.len());
    for (rec, body) in records.chunks_exact(MSG_RECORD).zip(bodies) {
        let (role, checkpoint) = match rec.first()? {
            0 => (TurnRole::User, false),
            1 => (TurnRole::Assistant, false),
            2 => (TurnRole::User, true),
            _ => return None,
        };
        let seq = u64::from_le_bytes(rec.get(1..9)?.try_into().ok()?);
        let time = i64::from_le_bytes(rec.get(9..17)?.try_into().ok()?);
        let number = u64::from_le_bytes(rec.get(17..25)?.try_into().ok()?);
        messages.push(IndexedMessage {
            role,
            checkpoint,
            seq,
            time,
            text: body.to_owned(),
            number,
        });
    }
    Some(messages)
}

/// Read a stored lead document back; `None` when it is not a session document of this
/// format.
pub fn stored(f: &Fields, doc: &TantivyDocument) -> Option<StoredSession> {
    let text = |field| {
        doc.get_first(field)
            .and_then(|v| v.as_str().map(str::to_owned))
    };
    Some(StoredSession {
        path: text(f.path)?,
        id: text(f.id)?,
        cwd: text(f.cwd),
        title: text(f.title),
        created_at: doc.get_first(f.created).and_then(|v| v.as_i64())?,
        last_time: doc.get_first(f.time).and_then(|v| v.as_i64())?,
        messages: stored_messages(f, doc)?,
        state: doc
            .get_first(f.state)
            .and_then(|v| v.as_bytes())
            .and_then(LogState::from_bytes),
        piece: doc.get_first(f.piece).and_then(|v| v.as_u64())?,
        split: doc.get_first(f.split).and_then(|v| v.as_u64())? == 1,
    })
}
