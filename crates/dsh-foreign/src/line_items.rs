//! What one line of a line-per-record log (Codex CLI, Qwen Code, GitHub Copilot CLI)
//! contributes to a session's surface, for the streaming reader (`surface_read.rs`).

use super::surface_events::ItemKind;

/// One visible item of a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineItem {
    pub kind: ItemKind,
    pub text: String,
    /// A request taken from a copy of another record (Codex's `event_msg` /
    /// `user_message`), shown only when its original is not.
    pub from_event: bool,
}

impl LineItem {
    pub fn new(kind: ItemKind, text: String) -> Self {
        LineItem {
            kind,
            text,
            from_event: false,
        }
    }
}

/// What one line contributes to the surface.
#[derive(Debug, PartialEq, Eq)]
pub enum LineItems {
    /// Nothing visible.
    None,
    /// Items appended to the surface.
    Append(Vec<LineItem>),
    /// A compaction: the surface so far is replaced by these items.
    Replace(Vec<LineItem>),
}

/// How a log's line is decoded: its items and its time (ms; `default_time` when it has none).
pub type DecodeLine = fn(&[u8], i64) -> Result<(LineItems, i64), String>;
