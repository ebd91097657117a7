//! The composer: the draft (text with chips, caret, undo), its input history and how it is
//! drawn — soft-wrapped rows, mentions as `@label` chips, the real terminal cursor placed
//! right after the last glyph before the caret (docs/composer.md).

use std::cell::{Cell, RefCell};
use std::ops::Range;

use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::style::{Modifier, Style};

use crate::config::MentionConfig;
use crate::draft::{Draft, Fold, FoldKind};
use crate::draft_layout::{DraftLayout, Glyph, Placed};
use crate::input_history::{Entry, InputHistory};
use term_text::visible_controls_line;

/// The draft editor with history. Text is canonical: mentions stay as their syntax writes
/// them for submit, history and copy; only the screen shows them as chips.
#[derive(Debug, Clone)]
pub struct Composer {
    draft: Draft,
    history: InputHistory,
    /// Most text rows the composer asks for; longer drafts scroll inside it.
    max_text_rows: u16,
    /// Text columns of the last measure or render (Up/Down move by these rows).
    text_width: Cell<u16>,
    /// First row on screen, kept between frames so the view only scrolls to follow the caret.
    scroll_top: Cell<usize>,
    /// `(text width, text revision, layout)` of the last layout (the app asks every frame;
    /// caret moves do not lay the text out again).
    layout: RefCell<Option<(u16, u64, DraftLayout)>>,
    /// The column Up/Down aim for, valid while the draft is at this revision.
    goal: Option<(u64, usize)>,
    /// The draft's revision right after Up/Down recalled a history entry: while it is
    /// untouched, Up/Down go on through history (a recalled 3 000-line entry is not walked
    /// line by line).
    recalled: Option<u64>,
    /// A paste of more lines or chars than these is collapsed.
    collapse_lines: usize,
    collapse_chars: usize,
}

impl Composer {
    /// An empty composer with `config`'s history size, height and mention syntaxes.
    pub fn new(config: &MentionConfig) -> Self {
        Self {
            draft: Draft::new(config.grammar()),
            history: InputHistory::new(config.history_size, config.collapse_lines),
            max_text_rows: config.max_text_rows.max(1),
            text_width: Cell::new(u16::MAX),
            scroll_top: Cell::new(0),
            layout: RefCell::new(None),
            goal: None,
            recalled: None,
            collapse_lines: config.collapse_lines,
            collapse_chars: config.collapse_chars,
        }
    }

    /// The draft under edit (text, caret, chips).
    pub fn draft(&self) -> &Draft {
        &self.draft
    }

    /// The draft for editing (every edit keeps the caret off chips' insides).
    pub fn draft_mut(&mut self) -> &mut Draft {
        &mut self.draft
    }

    /// The whole draft in canonical form.
    pub fn text(&self) -> String {
        self.draft.text().to_string()
    }

    /// Whether the draft holds no text at all.
    pub fn is_empty(&self) -> bool {
        self.draft.is_empty()
    }

    /// Replaces the draft with `text` (undoable), caret at the end.
    pub fn set_text(&mut self, text: &str) {
        self.draft.set_text(text);
    }

    /// Replaces the draft with `text` with `folds` collapsed (undoable), caret at the end.
    pub fn set_text_folded(&mut self, text: &str, folds: &[Fold]) {
        self.draft.set_text_folded(text, folds);
    }

    /// Records a submitted text in the input history, with its collapsed pastes when known.
    pub fn push_history(&mut self, text: &str, folds: Option<Vec<Fold>>) {
        self.history.push(text, folds);
    }

    /// Inserts pasted `text` at the caret: collapsed into one unit when it has more lines
    /// or chars than the configured limits.
    pub fn insert_paste(&mut self, text: &str) {
        let long = text.split('\n').nth(self.collapse_lines).is_some()
            || text.chars().nth(self.collapse_chars).is_some();
        if long && self.collapse_lines != usize::MAX {
            self.draft.insert_folded(text, FoldKind::Pasted);
        } else {
            self.draft.insert(text);
        }
    }

    /// The draft and its folds as a history entry.
    fn entry(&self) -> Entry {
        Entry::new(self.draft.text(), self.draft.folds().to_vec())
    }

    /// Shows a history entry (or the draft set aside) in place of the draft.
    fn recall(&mut self, entry: &Entry) {
        self.draft.set_text_folded(&entry.text, &entry.folds);
        self.recalled = Some(self.draft.revision());
    }

    /// Whether the draft is a recalled history entry nobody touched since.
    fn recall_untouched(&self) -> bool {
        self.recalled == Some(self.draft.revision()) && self.history.is_recall(self.draft.text())
    }

    /// Every history entry, oldest first.
    pub fn history_entries(&self) -> Vec<String> {
        self.history.entries().map(str::to_owned).collect()
    }

    /// Forgets the history.
    pub fn clear_history(&mut self) {
        self.history.clear();
    }

    /// The caret as a char index into [`Composer::text`].
    pub fn cursor_char_index(&self) -> usize {
        let text = self.draft.text();
        text.get(..self.draft.caret())
            .map_or(0, |head| head.chars().count())
    }

    /// Moves the caret to char index `index` (clamped; never inside a chip).
    pub fn set_cursor_char_index(&mut self, index: usize) {
        let pos = char_to_byte(self.draft.text(), index);
        self.draft.set_caret(pos);
    }

    /// Inserts `text` at the caret.
    pub fn insert_str(&mut self, text: &str) {
        self.draft.insert(text);
    }

    /// Replaces the chars `token` (an `@` or `/` token) with `replacement`, as one undo step.
    pub fn replace_chars(&mut self, token: Range<usize>, replacement: &str) {
        let text = self.draft.text();
        let range = char_to_byte(text, token.start)..char_to_byte(text, token.end);
        self.draft.replace(range, replacement);
    }

    /// Replaces the chars `token` with `mention` and one space (the mention becomes a chip).
    pub fn insert_mention(&mut self, token: Range<usize>, mention: &str) {
        self.replace_chars(token, &format!("{mention} "));
    }

    /// Up: the caret moves up a (wrapped) row, aiming at the column it came from; on the
    /// first row an older history entry replaces an empty, unchanged or fresh draft. A
    /// recalled entry not touched since goes straight on to the older one.
    pub fn move_up_or_history(&mut self) -> bool {
        if !self.recall_untouched() && self.move_vertically(false) {
            return true;
        }
        match self.history.older(&self.entry()) {
            Some(entry) => {
                self.recall(&entry);
                true
            }
            None => false,
        }
    }

    /// Down: the caret moves down a row; on the last row a newer entry (or the draft set
    /// aside when browsing began) comes back. A recalled entry not touched since goes
    /// straight on to the newer one.
    pub fn move_down_or_history(&mut self) -> bool {
        if !self.recall_untouched() && self.move_vertically(true) {
            return true;
        }
        match self.history.newer(&self.entry()) {
            Some(entry) => {
                self.recall(&entry);
                true
            }
            None => false,
        }
    }

    fn move_vertically(&mut self, down: bool) -> bool {
        let width = self.text_width.get();
        let caret = self.draft.caret();
        let target = self.with_layout(width, |layout| {
            let (row, x) = layout.caret(caret);
            let to = if down { row + 1 } else { row.checked_sub(1)? };
            (to < layout.rows.len()).then_some((x, to))
        });
        let Some((x, to)) = target else {
            return false;
        };
        let goal = match self.goal {
            Some((revision, goal)) if revision == self.draft.revision() => goal,
            _ => x,
        };
        let pos = self.with_layout(width, |layout| layout.offset_at(to, goal));
        self.draft.set_caret(pos);
        self.goal = Some((self.draft.revision(), goal));
        true
    }

    fn with_layout<T>(&self, width: u16, f: impl FnOnce(&DraftLayout) -> T) -> T {
        let revision = self.draft.text_revision();
        let mut cache = self.layout.borrow_mut();
        let fresh = matches!(&*cache, Some((w, r, _)) if *w == width && *r == revision);
        if !fresh {
            let layout = DraftLayout::with_atoms(self.draft.text(), &self.atoms(), width);
            *cache = Some((width, revision, layout));
        }
        match &*cache {
            Some((_, _, layout)) => f(layout),
            None => f(&DraftLayout::with_atoms("", &[], width)),
        }
    }

    /// The draft's chips and folds with what they show, leftmost first.
    fn atoms(&self) -> Vec<(Range<usize>, Glyph)> {
        let text = self.draft.text();
        let shown = |r: &Range<usize>| text.get(r.clone()).unwrap_or_default();
        let mut atoms: Vec<(Range<usize>, Glyph)> = self
            .draft
            .found()
            .iter()
            .map(|c| (c.range.clone(), Glyph::Chip(c.shown.clone())))
            .chain(
                self.draft
                    .folds()
                    .iter()
                    .map(|f| (f.range.clone(), Glyph::Fold(f.label(shown(&f.range))))),
            )
            .collect();
        atoms.sort_by_key(|(r, _)| r.start);
        atoms
    }

    /// Text rows the composer wants at `width` text columns: the wrapped rows, at most the
    /// configured maximum (longer drafts scroll).
    pub fn text_rows(&self, width: u16) -> u16 {
        let width = width.max(1);
        self.text_width.set(width);
        let rows = self.with_layout(width, |layout| layout.rows.len());
        u16::try_from(rows)
            .unwrap_or(u16::MAX)
            .clamp(1, self.max_text_rows)
    }

    /// Draws the draft's text in `inner` (the placeholder when empty) and returns where the
    /// terminal cursor belongs.
    pub fn render_text(
        &self,
        inner: Rect,
        buf: &mut Buffer,
        placeholder: (&str, Style),
        (mention_style, pasted_style): (Style, Style),
    ) -> Option<Position> {
        if inner.width == 0 || inner.height == 0 {
            return None;
        }
        self.text_width.set(inner.width);
        if self.draft.is_empty() {
            let (text, style) = placeholder;
            // One cell in, so the terminal cursor at the first column does not hide a letter.
            let room = usize::from(inner.width - 1);
            let text = visible_controls_line(text);
            buf.set_stringn(inner.x + 1, inner.y, &text, room, style);
            return Some(Position::new(inner.x, inner.y));
        }
        let caret = self.draft.caret();
        self.with_layout(inner.width, |layout| {
            let (row, x) = layout.caret(caret);
            let height = usize::from(inner.height);
            let mut top = self
                .scroll_top
                .get()
                .min(layout.rows.len().saturating_sub(height));
            if row < top {
                top = row;
            } else if row >= top + height {
                top = row + 1 - height;
            }
            self.scroll_top.set(top);
            for (dy, r) in layout.rows.iter().skip(top).take(height).enumerate() {
                let y = inner.y + u16::try_from(dy).unwrap_or(u16::MAX);
                for unit in &r.units {
                    self.draw_unit(unit, inner, y, buf, (mention_style, pasted_style));
                }
            }
            let dy = u16::try_from(row - top).ok()?;
            let col = u16::try_from(x).unwrap_or(u16::MAX).min(inner.width - 1);
            Some(Position::new(inner.x + col, inner.y + dy))
        })
    }

    fn draw_unit(
        &self,
        unit: &Placed,
        inner: Rect,
        y: u16,
        buf: &mut Buffer,
        (mention, pasted): (Style, Style),
    ) {
        let Ok(x) = u16::try_from(unit.x) else {
            return;
        };
        if x >= inner.width {
            return;
        }
        let room = usize::from(inner.width - x);
        let x = inner.x + x;
        match &unit.glyph {
            Glyph::Text => {
                let g = self
                    .draft
                    .text()
                    .get(unit.range.clone())
                    .unwrap_or_default();
                if unit.width > 0 {
                    buf.set_stringn(x, y, g, room, Style::new());
                }
            }
            Glyph::Tab => {
                buf.set_stringn(x, y, " ".repeat(unit.width), room, Style::new());
            }
            Glyph::Newline => {}
            Glyph::Control(shown) => {
                buf.set_stringn(x, y, shown, room, Style::new().add_modifier(Modifier::DIM));
            }
            Glyph::Chip(shown) => {
                buf.set_stringn(x, y, shown, room, mention);
            }
            Glyph::Fold(shown) => {
                buf.set_stringn(x, y, shown, room, pasted);
            }
        }
    }
}

/// Byte offset of char index `index` in `text` (clamped to the end).
fn char_to_byte(text: &str, index: usize) -> usize {
    text.char_indices()
        .nth(index)
        .map_or(text.len(), |(i, _)| i)
}
