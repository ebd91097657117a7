//! A session as an index document, and back: the stored fields a hit is shown from.

use dsh_reference::TurnRole;
use tantivy::TantivyDocument;
use tantivy::schema::Value;

use crate::log_state::LogState;
use crate::schema::Fields;
use crate::session_text::{IndexedMessage, SessionText};

/// Bytes per message record in the `msgs` field: the kind (0 a user message, 1 an assistant
/// message, 2 a compaction summary), the seq, the time.
const MSG_RECORD: usize = 17;

/// A session document's stored content.
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
}

/// The document for `text` read from the log at `path` in state `state`.
pub fn document(f: &Fields, path: &str, text: &SessionText, state: &LogState) -> TantivyDocument {
    let mut doc = TantivyDocument::new();
    doc.add_text(f.path, path);
    doc.add_text(f.id, &text.header.id);
    let mut meta = text.header.id.clone();
    if let Some(cwd) = &text.header.cwd {
        doc.add_text(f.cwd, cwd);
        meta.push('\n');
        meta.push_str(cwd);
    }
    if let Some(title) = &text.title {
        doc.add_text(f.title, title);
        meta.push('\n');
        meta.push_str(title);
    }
    doc.add_text(f.meta, &meta);
    doc.add_i64(f.created, text.header.created_at);
    doc.add_i64(f.time, text.last_time);
    let mut records = Vec::with_capacity(text.messages.len() * MSG_RECORD);
    for m in &text.messages {
        doc.add_text(f.body, &m.text);
        records.push(match (m.role, m.checkpoint) {
            (_, true) => 2u8,
            (TurnRole::User, false) => 0u8,
            (TurnRole::Assistant, false) => 1u8,
        });
        records.extend_from_slice(&m.seq.to_le_bytes());
        records.extend_from_slice(&m.time.to_le_bytes());
    }
    doc.add_bytes(f.msgs, &records);
    doc.add_bytes(f.state, &state.to_bytes());
    doc
}

/// The document of a log that could not be read: only its path and state, nothing found.
pub fn failed_document(f: &Fields, path: &str, state: &LogState) -> TantivyDocument {
    let mut doc = TantivyDocument::new();
    doc.add_text(f.path, path);
    doc.add_i64(f.time, 0);
    doc.add_bytes(f.state, &state.to_bytes());
    doc
}

/// Read a stored document back; `None` when it is not a session document of this format.
pub fn stored(f: &Fields, doc: &TantivyDocument) -> Option<StoredSession> {
    let text = |field| {
        doc.get_first(field)
            .and_then(|v| v.as_str().map(str::to_owned))
    };
    let records = doc.get_first(f.msgs).and_then(|v| v.as_bytes())?;
    let bodies: Vec<&str> = doc.get_all(f.body).filter_map(|v| v.as_str()).collect();
    if records.len() != bodies.len() * MSG_RECORD {
        return None;
    }
    let mut messages = Vec::with_capacity(bodies.len());
    for (rec, body) in records.chunks_exact(MSG_RECORD).zip(bodies) {
        let (role, checkpoint) = match rec[0] {
            0 => (TurnRole::User, false),
            1 => (TurnRole::Assistant, false),
            2 => (TurnRole::User, true),
            _ => return None,
        };
        let seq = u64::from_le_bytes(rec[1..9].try_into().ok()?);
        let time = i64::from_le_bytes(rec[9..17].try_into().ok()?);
        messages.push(IndexedMessage {
            role,
            checkpoint,
            seq,
            time,
            text: body.to_owned(),
        });
    }
    Some(StoredSession {
        path: text(f.path)?,
        id: text(f.id)?,
        cwd: text(f.cwd),
        title: text(f.title),
        created_at: doc.get_first(f.created).and_then(|v| v.as_i64())?,
        last_time: doc.get_first(f.time).and_then(|v| v.as_i64())?,
        messages,
        state: doc
            .get_first(f.state)
            .and_then(|v| v.as_bytes())
            .and_then(LogState::from_bytes),
    })
}
