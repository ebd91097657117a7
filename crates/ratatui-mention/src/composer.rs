//! The composer: a multi-line, soft-wrapped editor over `ratatui_textarea` with input
//! history, atomic `@[label](<scheme>…)` mentions and the caret position for the real
//! terminal cursor.

use std::cell::Cell;
use std::ops::Range;

use crossterm::event::KeyEvent;
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::style::Style;
use ratatui::widgets::{Block, BorderType, Widget};
use ratatui_textarea::{CursorMove, TextArea, WrapMode};
use unicode_width::UnicodeWidthChar;

use crate::config::MentionConfig;
use crate::input_history::InputHistory;
use crate::mention_token::mention_char_spans;
use crate::untrusted::visible_controls_line;

/// The draft editor. Text is canonical: mentions stay `@[label](uri)` for history and copy.
#[derive(Debug, Clone)]
pub struct Composer {
    textarea: TextArea<'static>,
    history: InputHistory,
    /// Bumped by every operation that may change the text (keys for the cache below).
    revision: u64,
    /// `(width, revision, height)` of the last [`Composer::desired_height`]: measuring wraps
    /// the whole text, and the app asks every frame.
    height_cache: Cell<Option<(u16, u64, u16)>>,
    /// Most text rows the composer asks for; longer drafts scroll inside it.
    max_text_rows: u16,
    mention_style: Style,
    border_style: Style,
    /// URI scheme of finished mentions.
    scheme: String,
}

impl Composer {
    /// An empty composer with `config`'s history size, placeholder, styles and height.
    pub fn new(config: &MentionConfig) -> Self {
        let mut textarea = TextArea::default();
        textarea.set_wrap_mode(WrapMode::WordOrGlyph);
        // The real terminal cursor marks the caret, so the textarea draws none.
        textarea.set_cursor_style(Style::default());
        textarea.set_cursor_line_style(Style::default());
        textarea.set_placeholder_text(visible_controls_line(&config.placeholder));
        textarea.set_placeholder_style(config.styles.placeholder);
        Self {
            textarea,
            history: InputHistory::new(config.history_size),
            revision: 0,
            height_cache: Cell::new(None),
            max_text_rows: config.max_text_rows,
            mention_style: config.styles.mention,
            border_style: config.styles.composer_border,
            scheme: config.uri_scheme.clone(),
        }
    }

    /// The whole draft, lines joined with `\n`.
    pub fn text(&self) -> String {
        self.textarea.lines().join("\n")
    }

    /// Whether the draft holds no text at all.
    pub fn is_empty(&self) -> bool {
        self.textarea.is_empty()
    }

    /// Replaces the draft with `text` (undoable), caret at the end.
    pub fn set_text(&mut self, text: &str) {
        self.revision += 1;
        self.textarea.cancel_selection();
        let yank = self.textarea.yank_text();
        self.textarea.clear();
        self.textarea.insert_str(text);
        self.textarea.set_yank_text(yank);
    }

    /// Records a submitted text in the input history.
    pub fn push_history(&mut self, text: &str) {
        self.history.push(text);
    }

    /// The caret as a char index into [`Composer::text`].
    pub fn cursor_char_index(&self) -> usize {
        let (row, col) = (self.textarea.cursor().0, self.textarea.cursor().1);
        let before: usize = self
            .textarea
            .lines()
            .iter()
            .take(row)
            .map(|l| l.chars().count() + 1)
            .sum();
        before + col
    }

    /// Moves the caret to char index `index` of [`Composer::text`] (clamped to the end).
    pub fn set_cursor_char_index(&mut self, index: usize) {
        let mut remaining = index;
        let lines = self.textarea.lines();
        let last = lines.len().saturating_sub(1);
        let mut target = (last, lines.last().map_or(0, |l| l.chars().count()));
        for (row, line) in lines.iter().enumerate() {
            let len = line.chars().count();
            if remaining <= len {
                target = (row, remaining);
                break;
            }
            remaining -= len + 1;
        }
        self.jump(target.0, target.1);
    }

    /// `CursorMove::Jump` takes u16 coordinates; walk the rest for very long texts.
    fn jump(&mut self, row: usize, col: usize) {
        let clamp = |v: usize| u16::try_from(v).unwrap_or(u16::MAX);
        self.textarea
            .move_cursor(CursorMove::Jump(clamp(row), clamp(col)));
        while self.textarea.cursor().0 < row {
            let before = self.textarea.cursor();
            self.textarea.move_cursor(CursorMove::End);
            self.textarea.move_cursor(CursorMove::Forward);
            if self.textarea.cursor() == before {
                break;
            }
        }
        if self.textarea.cursor().0 == row && self.textarea.cursor().1 > col {
            self.textarea.move_cursor(CursorMove::Head);
        }
        while self.textarea.cursor().0 == row && self.textarea.cursor().1 < col {
            let before = self.textarea.cursor();
            self.textarea.move_cursor(CursorMove::Forward);
            if self.textarea.cursor() == before || self.textarea.cursor().0 != row {
                break;
            }
        }
    }

    /// Inserts `text` at the caret (replacing any selection).
    pub fn insert_str(&mut self, text: &str) {
        self.revision += 1;
        self.textarea.insert_str(text);
    }

    /// Inserts a line break at the caret.
    pub fn insert_newline(&mut self) {
        self.revision += 1;
        self.textarea.insert_newline();
    }

    /// Replaces the chars `token` (an `@` token) with `mention` and one space, through the
    /// textarea's edit operations so undo works and the yank buffer is kept.
    pub fn insert_mention(&mut self, token: Range<usize>, mention: &str) {
        self.delete_chars(token);
        self.textarea.insert_str(format!("{mention} "));
    }

    /// Deletes the chars in `range` with one edit, keeping the yank buffer.
    fn delete_chars(&mut self, range: Range<usize>) {
        self.revision += 1;
        self.textarea.cancel_selection();
        self.set_cursor_char_index(range.start);
        let yank = self.textarea.yank_text();
        self.textarea
            .delete_str(range.end.saturating_sub(range.start));
        self.textarea.set_yank_text(yank);
    }

    /// Backspace: a whole mention when the caret sits right after one, else one char.
    pub fn delete_backward(&mut self) -> bool {
        if !self.textarea.is_selecting() {
            let cursor = self.cursor_char_index();
            let hit = mention_char_spans(&self.text(), &self.scheme)
                .into_iter()
                .find(|span| span.end == cursor);
            if let Some(span) = hit {
                self.delete_chars(span);
                return true;
            }
        }
        self.revision += 1;
        self.textarea.delete_char()
    }

    /// Delete: a whole mention when the caret sits right before one, else one char.
    pub fn delete_forward(&mut self) -> bool {
        if !self.textarea.is_selecting() {
            let cursor = self.cursor_char_index();
            let hit = mention_char_spans(&self.text(), &self.scheme)
                .into_iter()
                .find(|span| span.start == cursor);
            if let Some(span) = hit {
                self.delete_chars(span);
                return true;
            }
        }
        self.revision += 1;
        self.textarea.delete_next_char()
    }

    /// Up: the caret moves up a (wrapped) row; on the first row an older history entry
    /// replaces an empty, unchanged or fresh draft. Returns whether anything changed.
    pub fn move_up_or_history(&mut self) -> bool {
        let before = self.textarea.cursor();
        self.textarea.move_cursor(CursorMove::Up);
        if self.textarea.cursor() != before {
            return true;
        }
        match self.history.older(&self.text()) {
            Some(entry) => {
                self.set_text(&entry);
                true
            }
            None => false,
        }
    }

    /// Down: the caret moves down a row; on the last row a newer entry (or the draft set
    /// aside when browsing began) comes back.
    pub fn move_down_or_history(&mut self) -> bool {
        let before = self.textarea.cursor();
        self.textarea.move_cursor(CursorMove::Down);
        if self.textarea.cursor() != before {
            return true;
        }
        match self.history.newer(&self.text()) {
            Some(entry) => {
                self.set_text(&entry);
                true
            }
            None => false,
        }
    }

    /// Hands a key the composer does not handle itself to the text editor; returns whether
    /// the text, caret or selection changed (false: the key means nothing to the editor).
    pub fn input(&mut self, key: KeyEvent) -> bool {
        self.revision += 1;
        let before = (self.textarea.cursor(), self.textarea.selection_range());
        let modified = self.textarea.input(key);
        modified || before != (self.textarea.cursor(), self.textarea.selection_range())
    }

    /// Rows the composer wants at `width` columns: wrapped text rows (at most the
    /// configured maximum) plus the border.
    pub fn desired_height(&self, width: u16) -> u16 {
        if let Some((w, revision, height)) = self.height_cache.get()
            && w == width
            && revision == self.revision
        {
            return height;
        }
        let inner = Rect::new(0, 0, width.saturating_sub(2).max(1), 1);
        let mut probe = self.textarea.clone();
        probe.move_cursor(CursorMove::Bottom);
        probe.move_cursor(CursorMove::End);
        (&probe).render(inner, &mut Buffer::empty(inner));
        let rows = u16::try_from(probe.screen_cursor().row + 1).unwrap_or(u16::MAX);
        let height = rows.clamp(1, self.max_text_rows) + 2;
        self.height_cache.set(Some((width, self.revision, height)));
        height
    }

    /// Draws the composer in `area` and returns where the terminal cursor belongs.
    pub fn render(&self, area: Rect, buf: &mut Buffer) -> Option<Position> {
        let block = Block::bordered()
            .border_type(BorderType::Rounded)
            .border_style(self.border_style);
        let inner = block.inner(area);
        block.render(area, buf);
        if inner.width == 0 || inner.height == 0 {
            return None;
        }
        (&self.textarea).render(inner, buf);
        self.highlight_mentions(inner, buf);
        let caret = self.textarea.screen_cursor();
        let (top, _) = self.textarea.scroll_offset();
        let row = u16::try_from(caret.row.checked_sub(usize::from(top))?).ok()?;
        if row >= inner.height {
            return None;
        }
        let col = u16::try_from(caret.col)
            .unwrap_or(u16::MAX)
            .min(inner.width - 1);
        Some(Position::new(inner.x + col, inner.y + row))
    }

    /// Restyles the cells of mentions the textarea just drew, walking its wrapped rows.
    fn highlight_mentions(&self, inner: Rect, buf: &mut Buffer) {
        let text = self.text();
        let spans = mention_char_spans(&text, &self.scheme);
        if spans.is_empty() {
            return;
        }
        let lines = self.textarea.lines();
        let mut line_start = Vec::with_capacity(lines.len());
        let mut offset = 0;
        for line in lines {
            line_start.push(offset);
            offset += line.chars().count() + 1;
        }
        let top = usize::from(self.textarea.scroll_offset().0);
        let row_start = |r: usize| self.textarea.screen_to_data(r, 0);
        let mut prev = top.checked_sub(1).map(row_start);
        for dy in 0..inner.height {
            let screen_row = top + usize::from(dy);
            let start = row_start(screen_row);
            // `screen_to_data` clamps past the last row, so a repeat means no more rows.
            if prev == Some(start) {
                break;
            }
            prev = Some(start);
            let next = row_start(screen_row + 1);
            let Some(line) = lines.get(start.0) else {
                break;
            };
            let end_col = if next != start && next.0 == start.0 {
                next.1
            } else {
                line.chars().count()
            };
            let first = line_start.get(start.0).copied().unwrap_or(0);
            let mut x = 0usize;
            for (col, c) in line
                .chars()
                .enumerate()
                .skip(start.1)
                .take(end_col.saturating_sub(start.1))
            {
                let width = cell_width(c, x, self.textarea.tab_length());
                let index = first + col;
                // Spans are sorted and disjoint: the first not ending at or before `index`.
                let at = spans.partition_point(|s| s.end <= index);
                if spans.get(at).is_some_and(|s| s.contains(&index)) {
                    for cx in x..x + width {
                        let Ok(cx) = u16::try_from(cx) else { break };
                        if cx >= inner.width {
                            break;
                        }
                        if let Some(cell) = buf.cell_mut((inner.x + cx, inner.y + dy)) {
                            cell.set_style(self.mention_style);
                        }
                    }
                }
                x += width;
            }
        }
    }
}

/// Cells the textarea gives `c` at column `x`: controls none, tabs to the next stop.
fn cell_width(c: char, x: usize, tab_len: u8) -> usize {
    if c == '\t' {
        let tab = usize::from(tab_len.max(1));
        tab - x % tab
    } else if c.is_control() {
        0
    } else {
        c.width().unwrap_or(0)
    }
}
