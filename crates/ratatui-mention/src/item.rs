//! The rows a host offers in the popup: plain data, so any source (people, files, commands)
//! can fill it. The widget sanitizes every field for display; a pick inserts the row's
//! mention, written in the syntax of the trigger it was typed with, or its plain text.

use std::ops::Range;

use ratatui::text::Line;

use crate::grammar::Grammar;
use crate::mention::Mention;
use crate::result_row::ResultRow;
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
    /// Keep both ends and cut the middle (`ab…yz`), e.g. ids that differ at the end.
    Middle,
}

/// One part of an item's dim detail line; parts are joined with ` · `.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DetailPart {
    /// What the part shows.
    pub text: String,
    /// Which end survives when the line is too narrow.
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

/// What picking a row puts in place of the token.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Insert {
    /// A mention, written in the syntax of the trigger the token was typed with (whose
    /// trigger it takes).
    Mention(Mention),
    /// Plain text (a command name, an emoji, a path to complete).
    Text(String),
}

/// One row of the popup: a label (matched against the query), an optional kind shown before
/// it, a dim detail line, and what a pick inserts in place of the token.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MentionItem {
    key: String,
    kind: String,
    label: String,
    detail: Vec<DetailPart>,
    insert: Insert,
    marked: bool,
    /// Dim text after the label (e.g. `(open)`).
    note: String,
    snippet: Option<ItemSnippet>,
    /// Byte ranges of `label` the source matched (`None`: not said, the widget guesses).
    match_ranges: Option<Vec<Range<usize>>>,
    /// Why the item cannot be picked now, if it cannot.
    blocked: Option<String>,
    /// Picking it goes on completing from its insert text (no space after it).
    continues: bool,
}

impl MentionItem {
    /// An item the host knows as `key`, shown as `label`, inserting `mention` (written by
    /// the syntax of the trigger it is picked with: a host never formats markup by hand).
    pub fn new(key: impl Into<String>, label: impl Into<String>, mention: &Mention) -> Self {
        Self::with_insert(key, label, Insert::Mention(mention.clone()))
    }

    /// An item inserting plain `text` rather than a mention (a command name, an emoji).
    pub fn plain(
        key: impl Into<String>,
        label: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        Self::with_insert(key, label, Insert::Text(text.into()))
    }

    fn with_insert(key: impl Into<String>, label: impl Into<String>, insert: Insert) -> Self {
        Self {
            key: key.into(),
            kind: String::new(),
            label: label.into(),
            detail: Vec::new(),
            insert,
            marked: false,
            note: String::new(),
            snippet: None,
            match_ranges: None,
            blocked: None,
            continues: false,
        }
    }

    /// The item cannot be picked now, for `reason` (e.g. `limit: 3 sessions per message`):
    /// it shows the reason dimmed after its label, and Enter or Tab on it insert nothing
    /// and send nothing.
    #[must_use]
    pub fn with_blocked(mut self, reason: impl Into<String>) -> Self {
        self.blocked = Some(reason.into());
        self
    }

    /// Why the item cannot be picked now, if it cannot.
    pub fn blocked(&self) -> Option<&str> {
        self.blocked.as_deref()
    }

    /// Picking the item replaces the token with its insert text and no space, and the popup
    /// stays open on it, asking for its rows (e.g. a directory: its entries come next).
    #[must_use]
    pub fn with_continue(mut self, continues: bool) -> Self {
        self.continues = continues;
        self
    }

    /// Whether picking the item goes on completing from its insert text.
    pub fn continues(&self) -> bool {
        self.continues
    }

    /// Highlights `ranges` (byte ranges of the label) as what the source matched; without
    /// them the widget highlights its own fuzzy match of the query. Ranges off char
    /// boundaries or past the label are ignored; an empty list highlights nothing.
    #[must_use]
    pub fn with_match_ranges(mut self, ranges: Vec<Range<usize>>) -> Self {
        self.match_ranges = Some(ranges);
        self
    }

    /// What the source said it matched in the label, if it said.
    pub fn match_ranges(&self) -> Option<&[Range<usize>]> {
        self.match_ranges.as_deref()
    }

    /// Shows `kind` before the label (`[claude] <label>`; include a separator of your own
    /// such as `Session ·` when you want one).
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

    /// Shows `note` dimmed after the label (and its mark), e.g. `(open)`.
    #[must_use]
    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.note = note.into();
        self
    }

    /// The note shown after the label (empty: none).
    pub fn note(&self) -> &str {
        &self.note
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

    /// The kind shown before the label, followed by a space (empty: none).
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

    /// What a pick inserts (the widget adds one space after it unless the item continues).
    pub fn insert(&self) -> &Insert {
        &self.insert
    }

    /// The text a pick of it from a popup of `trigger` inserts.
    pub(crate) fn written(&self, grammar: &Grammar, trigger: char) -> String {
        match &self.insert {
            Insert::Mention(mention) => grammar.write(&mention.clone().with_trigger(trigger)),
            Insert::Text(text) => text.clone(),
        }
    }

    /// The mention a pick inserts, if it inserts one.
    pub fn mention(&self) -> Option<&Mention> {
        match &self.insert {
            Insert::Mention(mention) => Some(mention),
            Insert::Text(_) => None,
        }
    }
}

impl ResultRow for MentionItem {
    fn key(&self) -> &str {
        &self.key
    }

    /// The label line, and a second line for the detail or snippet when there is one.
    fn lines(&self) -> u16 {
        if self.detail.is_empty() && self.snippet.is_none() {
            1
        } else {
            2
        }
    }

    fn blocked(&self) -> Option<&str> {
        self.blocked.as_deref()
    }
}

/// What the host shows about the item `key` in the preview pane, under the item's own label
/// and detail: `lines` (one screen line each) then `body` (wrapped, newest at the bottom).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemPreview {
    /// The item this previews (a preview for an item no longer selected is not shown).
    pub key: String,
    /// Lines under the label and detail, one screen line each.
    pub lines: Vec<Line<'static>>,
    /// Wrapped text after them; when it does not fit, its end stays visible.
    pub body: Vec<Line<'static>>,
}
