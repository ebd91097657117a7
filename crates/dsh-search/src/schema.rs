//! The index schema: a session log is one document, or — when its text is longer than a
//! piece (docs/search.md: long sessions) — several, all keyed by the log's path in the store.
//!
//! The conversation is a multi-valued `body` (one value per projected message, so a phrase
//! never spans two messages); `msgs` holds each value's role, seq and time; `state` records
//! the log's identity and where its read stopped, as a fast field so an update can compare
//! every session without loading any stored text. The session's own fields (id, cwd, title,
//! times, `meta`, `state`) are on its *lead* document, the last piece; the other pieces hold
//! only their messages.

use tantivy::schema::{
    BytesOptions, FAST, Field, INDEXED, IndexRecordOption, STORED, STRING, Schema,
    TextFieldIndexing, TextOptions,
};

use crate::text_analysis::ANALYZER;

/// Bumped whenever the schema, the analyzer or the meaning of a field changes: an index of
/// another format is rebuilt. 2: long sessions in bounded pieces (issue 23); 4: as 2, with
/// compaction summaries kept as such (message kind 2 in `msgs`) and indexed without their
/// `<compacted-summary>` framing (issue 24); 5: each message record in `msgs` carries the
/// message's place in the conversation, so a snippet of a long session's piece is numbered
/// right (issue 34).
pub const FORMAT: &str = "dsh-search 5";

/// The fields, looked up once.
#[derive(Debug, Clone, Copy)]
pub struct Fields {
    /// Log path relative to the store root (`project/session/session.jsonl`): the key, on
    /// every piece (a fast field: pieces are grouped by it).
    pub path: Field,
    /// The piece's number: pieces of a session are numbered in text order (with gaps).
    pub piece: Field,
    /// 1 on every piece of a session indexed in several pieces.
    pub split: Field,
    /// 1 on the lead piece (the one with the session's fields).
    pub lead: Field,
    /// Which read of the log wrote the piece: when a read's lead is added, the session's
    /// pieces of other reads are deleted.
    pub read: Field,
    pub id: Field,
    pub cwd: Field,
    pub title: Field,
    /// Header `createdAt`, Unix ms.
    pub created: Field,
    /// Id, cwd and title, analyzed (searchable, not stored).
    pub meta: Field,
    /// One value per projected message, analyzed with positions and stored.
    pub body: Field,
    /// Per `body` value: role (1 byte), seq (8), time (8), little-endian.
    pub msgs: Field,
    /// Time of the last event, Unix ms (recency boost).
    pub time: Field,
    /// [`crate::log_state::LogState`] as JSON.
    pub state: Field,
}

/// The schema and its fields.
pub fn build() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let analyzed = TextFieldIndexing::default()
        .set_tokenizer(ANALYZER)
        .set_index_option(IndexRecordOption::WithFreqsAndPositions);
    let fields = Fields {
        path: b.add_text_field("path", STRING | STORED | FAST),
        piece: b.add_u64_field("piece", INDEXED | STORED),
        split: b.add_u64_field("split", INDEXED | STORED),
        lead: b.add_u64_field("lead", INDEXED),
        read: b.add_u64_field("read", INDEXED),
        id: b.add_text_field("id", STORED),
        cwd: b.add_text_field("cwd", STORED),
        title: b.add_text_field("title", STORED),
        created: b.add_i64_field("created", STORED),
        meta: b.add_text_field(
            "meta",
            TextOptions::default().set_indexing_options(analyzed.clone()),
        ),
        body: b.add_text_field(
            "body",
            TextOptions::default()
                .set_indexing_options(analyzed)
                .set_stored(),
        ),
        msgs: b.add_bytes_field("msgs", STORED),
        time: b.add_i64_field("time", FAST | STORED | INDEXED),
        state: b.add_bytes_field("state", BytesOptions::default().set_fast().set_stored()),
    };
    (b.build(), fields)
}
