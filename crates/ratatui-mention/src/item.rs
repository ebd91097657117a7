//! The rows a host offers in the popup: plain data, so any source (sessions, files, commands)
//! can fill it. The widget sanitizes every field for display; the host formats the text a
//! pick inserts.

use crate::snippet::ItemSnippet;

/// How a detail part is cut when the detail line is too narrow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// Keep the start and cut the end (`abc…`), e.g. an id.
    Start,
    /// Keep the end and cut the start (`…xyz`), e.g. a path.
    End,
    /// Never cut, e.g. a time stamp.
    Whole,
}

/// One part of an item's dim detail line; parts are joined with ` · `.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DetailPart {
    pub text: String,
    pub keep: Keep,
}

impl DetailPart {
    /// A part showing `text`, cut as `keep` says when room is short.
    pub fn new(text: impl Into<String>, keep: Keep) -> Self {
        Self {
            text: text.into(),
            keep,
        }
    }
}

/// One row of the popup: a label (matched against the query), an optional kind shown before
/// it, a dim detail line, and the text inserted in place of the `@` token when picked.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MentionItem {
    key: String,
    kind: String,
    label: String,
    detail: Vec<DetailPart>,
    insert_text: String,
    marked: bool,
    snippet: Option<ItemSnippet>,
}

impl MentionItem {
    /// An item the host knows as `key`, shown as `label`, inserting `insert_text`.
    pub fn new(
        key: impl Into<String>,
        label: impl Into<String>,
        insert_text: impl Into<String>,
    ) -> Self {
        Self {
            key: key.into(),
            kind: String::new(),
            label: label.into(),
            detail: Vec::new(),
            insert_text: insert_text.into(),
            marked: false,
            snippet: None,
        }
    }

    /// Shows `kind` before the label (`Session · <label>`).
    #[must_use]
    pub fn with_kind(mut self, kind: impl Into<String>) -> Self {
        self.kind = kind.into();
        self
    }

    /// Sets the dim detail line's parts, in order.
    #[must_use]
    pub fn with_detail(mut self, detail: Vec<DetailPart>) -> Self {
        self.detail = detail;
        self
    }

    /// Marks the item with a dim `✓` after its label (e.g. already mentioned in the draft).
    #[must_use]
    pub fn with_mark(mut self, marked: bool) -> Self {
        self.marked = marked;
        self
    }

    /// Shows where the item matched (e.g. a line of a conversation) in place of the
    /// detail line.
    #[must_use]
    pub fn with_snippet(mut self, snippet: ItemSnippet) -> Self {
        self.snippet = Some(snippet);
        self
    }

    /// Where the item matched, if the host said.
    pub fn snippet(&self) -> Option<&ItemSnippet> {
        self.snippet.as_ref()
    }

    /// Whether the item is marked.
    pub fn is_marked(&self) -> bool {
        self.marked
    }

    /// The host's identity of this item (returned in [`crate::Outcome::Inserted`]).
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The kind shown before the label (empty: none).
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// The label the query is matched against.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The detail line's parts.
    pub fn detail(&self) -> &[DetailPart] {
        &self.detail
    }

    /// The text a pick inserts (the widget adds one space after it).
    pub fn insert_text(&self) -> &str {
        &self.insert_text
    }
}
