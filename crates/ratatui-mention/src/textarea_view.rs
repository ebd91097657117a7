//! Drawing a host's [`ratatui_textarea::TextArea`] with its finished mentions as chips
//! (`#[ui](tag:ui)` shown `#ui`), in the textarea's own look: its block, style, cursor and
//! cursor-line styles, selection, line numbers, placeholder, alignment and wrap mode. The
//! lines are laid out as the composer lays out a draft (a chip is one unit, never split;
//! controls are drawn escaped), so the caret sits where the chip view puts it: right before
//! or right after a chip, never inside.
//!
//! The viewport: with [`WrapMode::None`] the first line on screen is the textarea's own
//! (it scrolls by lines, which the chips do not change, so the host's `scroll` calls
//! work); the first column is the view's own, kept so the caret is visible. In a wrapping
//! mode the chip view has fewer rows than the textarea's, so the view keeps its own first
//! row, moved only as far as needed to show the caret. The textarea is still drawn into a
//! scratch buffer each frame, so its wrap map and page size follow the area on screen.

use std::ops::Range;

use ratatui::buffer::Buffer;
use ratatui::layout::{Alignment, Position, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Widget};
use ratatui_textarea::{TextArea, WrapMode};
use unicode_segmentation::UnicodeSegmentation;

use crate::config::MentionStyles;
use crate::draft_layout::{Breaks, DraftLayout, Glyph, Placed};
use crate::grammar::Grammar;
use crate::grapheme::grapheme_width;

/// What one frame of the view leaves for the next, and for the keys between frames.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ViewState {
    /// The line and its row (in a wrapping mode) at the top of the text area.
    top: (usize, usize),
    /// The first column shown (no wrapping, left-aligned).
    left: usize,
    /// The width lines were laid out at (0: the view was never drawn).
    pub(crate) width: usize,
    /// Where the caret was drawn.
    pub(crate) cursor: Option<Position>,
}

/// A [`TextArea`] drawn with its mentions as chips; built by
/// [`crate::TextAreaMentions::widget`] each frame and rendered in place of the textarea.
#[derive(Debug, Clone)]
pub struct MentionTextArea<'v> {
    textarea: &'v TextArea<'v>,
    grammar: &'v Grammar,
    state: &'v std::cell::Cell<ViewState>,
    styles: MentionStyles,
}

impl<'v> MentionTextArea<'v> {
    pub(crate) fn new(
        textarea: &'v TextArea<'v>,
        grammar: &'v Grammar,
        state: &'v std::cell::Cell<ViewState>,
    ) -> Self {
        MentionTextArea {
            textarea,
            grammar,
            state,
            styles: MentionStyles::default(),
        }
    }

    /// Draws chips in `styles.mention` (the rest of the look is the textarea's own).
    #[must_use]
    pub fn styles(mut self, styles: MentionStyles) -> Self {
        self.styles = styles;
        self
    }
}

/// How rows break in `mode`.
pub(crate) fn breaks(mode: WrapMode) -> Breaks {
    match mode {
        WrapMode::None => Breaks::Never,
        WrapMode::Word => Breaks::WordsOnly,
        WrapMode::Glyph => Breaks::Units,
        WrapMode::WordOrGlyph => Breaks::Words,
    }
}

/// Line `line` laid out at `width` with its mentions as chips.
pub(crate) fn layout_line(
    grammar: &Grammar,
    line: &str,
    width: usize,
    mode: WrapMode,
) -> DraftLayout {
    let atoms: Vec<(Range<usize>, Glyph)> = grammar
        .find(line)
        .into_iter()
        .map(|found| (found.range, Glyph::Chip(found.shown)))
        .collect();
    DraftLayout::with_breaks(line, &atoms, width, breaks(mode))
}

/// The byte offset of char column `col` in `line` (its end past the last char).
pub(crate) fn byte_of(line: &str, col: usize) -> usize {
    line.char_indices().nth(col).map_or(line.len(), |(i, _)| i)
}

/// The char column of byte offset `byte` in `line`.
pub(crate) fn col_of(line: &str, byte: usize) -> usize {
    line.get(..byte).map_or(0, |head| head.chars().count())
}

/// The caret's byte offset on `line`: a caret inside a mention (only the host can put it
/// there) is drawn at its start.
pub(crate) fn caret_byte(grammar: &Grammar, line: &str, col: usize) -> usize {
    let byte = byte_of(line, col);
    grammar
        .spans(line)
        .into_iter()
        .find(|span| span.start < byte && byte < span.end)
        .map_or(byte, |span| span.start)
}

/// The lines of one frame, laid out once each.
struct LaidOut<'a> {
    lines: &'a [String],
    grammar: &'a Grammar,
    width: usize,
    mode: WrapMode,
    cache: std::collections::HashMap<usize, DraftLayout>,
}

impl LaidOut<'_> {
    fn get(&mut self, line: usize) -> Option<&DraftLayout> {
        let text = self.lines.get(line)?;
        let (grammar, width, mode) = (self.grammar, self.width, self.mode);
        Some(
            self.cache
                .entry(line)
                .or_insert_with(|| layout_line(grammar, text, width, mode)),
        )
    }

    fn rows(&mut self, line: usize) -> usize {
        self.get(line).map_or(1, |l| l.rows.len().max(1))
    }

    /// The row after `pos`.
    fn next(&mut self, (line, row): (usize, usize)) -> (usize, usize) {
        if row + 1 < self.rows(line) {
            (line, row + 1)
        } else {
            (line + 1, 0)
        }
    }

    /// The row before `pos` (`pos` itself at the top).
    fn prev(&mut self, (line, row): (usize, usize)) -> (usize, usize) {
        if row > 0 {
            (line, row - 1)
        } else if line > 0 {
            (line - 1, self.rows(line - 1) - 1)
        } else {
            (0, 0)
        }
    }
}

/// The first row on screen for a caret on row `caret`: `top` moved only as far as needed.
fn follow(
    lines: &mut LaidOut<'_>,
    top: (usize, usize),
    caret: (usize, usize),
    height: usize,
) -> (usize, usize) {
    let last = lines.lines.len().saturating_sub(1);
    let mut top = (top.0.min(last), top.1);
    top.1 = top.1.min(lines.rows(top.0) - 1);
    if caret <= top {
        return caret;
    }
    let mut pos = top;
    for _ in 1..height {
        pos = lines.next(pos);
        if pos == caret {
            return top;
        }
    }
    let mut top = caret;
    for _ in 1..height {
        top = lines.prev(top);
    }
    top
}

/// Where and how one frame draws the text.
struct Frame {
    text: Rect,
    gutter: u16,
    left: usize,
    alignment: Alignment,
}

impl Frame {
    /// The screen column of line column `x` on a row `row_width` wide (None: off screen).
    fn column(&self, x: usize, row_width: usize) -> Option<u16> {
        let width = usize::from(self.text.width);
        let x = match self.alignment {
            Alignment::Left => x.checked_sub(self.left)?,
            Alignment::Center => x + width.saturating_sub(row_width) / 2,
            Alignment::Right => x + width.saturating_sub(row_width),
        };
        (x < width).then(|| self.text.x + u16::try_from(x).unwrap_or(u16::MAX))
    }

    /// Draws `shown` (the unit at line column `x`) in `style`; a wide grapheme cut by an
    /// edge becomes blank cells, so the others keep their columns.
    fn draw(
        &self,
        buf: &mut Buffer,
        y: u16,
        x: usize,
        row_width: usize,
        shown: &str,
        style: Style,
    ) {
        let mut at = x;
        for g in shown.graphemes(true) {
            let w = grapheme_width(g);
            let cells: Vec<Option<u16>> = (at..at + w).map(|c| self.column(c, row_width)).collect();
            if cells.iter().all(Option::is_some) {
                if let Some(Some(first)) = cells.first() {
                    buf.set_string(*first, y, g, style);
                }
            } else {
                for col in cells.into_iter().flatten() {
                    buf.set_string(col, y, " ", style);
                }
            }
            at += w;
        }
    }
}

/// The selection as `(line, byte)` bounds.
type Selection = ((usize, usize), (usize, usize));

impl Widget for MentionTextArea<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let ta = self.textarea;
        let mut state = self.state.get();
        state.cursor = None;
        // The textarea lays itself out for this area: its wrap map, its viewport (the
        // first line with no wrapping, the page its scroll keys move by).
        let mut scratch = Buffer::empty(area);
        ta.render(area, &mut scratch);
        if ta.mask_char().is_some() {
            // A masked field shows no text, so no chips: the textarea's own drawing.
            buf.merge(&scratch);
            self.state.set(state);
            return;
        }
        let inner = ta.block().map_or(area, |b| b.inner(area));
        if let Some(block) = ta.block() {
            block.clone().render(area, buf);
        }
        Clear.render(inner, buf);
        buf.set_style(inner, ta.style());
        if inner.is_empty() {
            self.state.set(state);
            return;
        }
        if ta.is_empty() && !ta.placeholder().lines.is_empty() {
            let mut placeholder = ta.placeholder().clone();
            let cursor = Span::styled(" ", ta.cursor_style());
            match placeholder.lines.first_mut() {
                Some(first) => first.spans.insert(0, cursor),
                None => placeholder.lines.push(Line::from(vec![cursor])),
            }
            Paragraph::new(placeholder)
                .alignment(ta.alignment())
                .render(inner, buf);
            state.cursor = Some(inner.as_position());
            self.state.set(state);
            return;
        }
        let gutter = ta.line_number_width().min(inner.width.saturating_sub(1));
        let text = Rect {
            x: inner.x + gutter,
            width: inner.width - gutter,
            ..inner
        };
        let mode = ta.wrap_mode();
        let lines = ta.lines();
        let mut laid = LaidOut {
            lines,
            grammar: self.grammar,
            width: usize::from(text.width),
            mode,
            cache: std::collections::HashMap::new(),
        };
        let (caret_line, caret_col) = (ta.cursor().0, ta.cursor().1);
        let caret_text = lines.get(caret_line).map_or("", String::as_str);
        let caret_at = caret_byte(self.grammar, caret_text, caret_col);
        let (caret_row, caret_x, caret_w) = laid.get(caret_line).map_or((0, 0, 1), |l| {
            let (row, x) = l.caret(caret_at);
            let w = l
                .rows
                .get(row)
                .and_then(|r| r.units.iter().find(|u| u.range.start == caret_at))
                .and_then(|u| first_grapheme_width(u, caret_text))
                .unwrap_or(1);
            (row, x, w)
        });
        // A caret after a blank hanging at a wrapped row's edge stays on its last cell.
        let caret_x = if mode == WrapMode::None {
            caret_x
        } else {
            caret_x.min(usize::from(text.width) - 1)
        };
        let height = usize::from(text.height);
        let top = if mode == WrapMode::None {
            let own = usize::from(ta.scroll_offset().0);
            if own <= caret_line && caret_line < own + height {
                (own, 0)
            } else {
                follow(&mut laid, state.top, (caret_line, 0), height)
            }
        } else {
            follow(&mut laid, state.top, (caret_line, caret_row), height)
        };
        let alignment = ta.alignment();
        let left = if mode == WrapMode::None && alignment == Alignment::Left {
            let width = usize::from(text.width);
            let mut left = state.left;
            if caret_x < left {
                left = caret_x;
            }
            if caret_x + caret_w > left + width {
                left = (caret_x + caret_w).saturating_sub(width);
            }
            left
        } else {
            0
        };
        let frame = Frame {
            text,
            gutter,
            left,
            alignment,
        };
        let selection = ta.selection_range().map(|((sr, sc), (er, ec))| {
            let at = |row: usize, col: usize| (row, lines.get(row).map_or(0, |l| byte_of(l, col)));
            (at(sr, sc), at(er, ec))
        });
        // Upstream reads the selection style with `&mut self` only: a copy is asked.
        let selection_style = selection.map(|_| ta.clone().selection_style());
        let mut pos = top;
        for dy in 0..text.height {
            let y = text.y + dy;
            let Some(layout) = laid.get(pos.0) else { break };
            let row = layout.rows.get(pos.1).cloned().unwrap_or_default();
            let last_row = pos.1 + 1 >= layout.rows.len();
            let line = lines.get(pos.0).map_or("", String::as_str);
            if let Some(style) = ta.line_number_style().filter(|_| frame.gutter > 0) {
                let digits = ta.line_number_width().saturating_sub(2);
                let number = if pos.1 == 0 {
                    format!(" {:>w$} ", pos.0 + 1, w = usize::from(digits))
                } else {
                    " ".repeat(usize::from(digits) + 2)
                };
                buf.set_stringn(inner.x, y, number, usize::from(frame.gutter), style);
            }
            self.draw_row(
                buf,
                &frame,
                y,
                (pos.0, &row, line),
                selection.zip(selection_style),
            );
            let row_width = row.width();
            if let Some((sel, style)) = selection.zip(selection_style)
                && last_row
                && sel.0.0 <= pos.0
                && pos.0 < sel.1.0
                && let Some(x) = frame.column(row_width, row_width)
            {
                buf.set_string(x, y, " ", style);
            }
            if pos == (caret_line, caret_row) {
                for cell in caret_x..caret_x + caret_w {
                    if let Some(x) = frame.column(cell, row_width) {
                        if cell == caret_x
                            && buf.cell((x, y)).is_some_and(|c| c.symbol().is_empty())
                        {
                            buf.set_string(x, y, " ", Style::new());
                        }
                        buf.set_style(Rect::new(x, y, 1, 1), ta.cursor_style());
                        if cell == caret_x {
                            state.cursor = Some(Position::new(x, y));
                        }
                    }
                }
            }
            pos = laid.next(pos);
        }
        state.top = top;
        state.left = left;
        state.width = usize::from(text.width);
        self.state.set(state);
    }
}

/// The cells of the first grapheme `unit` shows.
fn first_grapheme_width(unit: &Placed, line: &str) -> Option<usize> {
    let shown = shown(unit, line);
    shown
        .graphemes(true)
        .next()
        .map(grapheme_width)
        .filter(|w| *w > 0)
}

/// What `unit` of `line` shows.
fn shown<'a>(unit: &'a Placed, line: &'a str) -> std::borrow::Cow<'a, str> {
    match &unit.glyph {
        Glyph::Text => line.get(unit.range.clone()).unwrap_or_default().into(),
        Glyph::Tab => " ".repeat(unit.width).into(),
        Glyph::Newline => "".into(),
        Glyph::Control(shown) | Glyph::Chip(shown) | Glyph::Fold(shown) => shown.as_str().into(),
    }
}

impl MentionTextArea<'_> {
    fn draw_row(
        &self,
        buf: &mut Buffer,
        frame: &Frame,
        y: u16,
        (line_no, row, line): (usize, &crate::draft_layout::Row, &str),
        selection: Option<(Selection, Style)>,
    ) {
        let ta = self.textarea;
        let row_width = row.width();
        let on_caret_line = line_no == ta.cursor().0;
        for unit in &row.units {
            let mut style = Style::new();
            if on_caret_line {
                style = style.patch(ta.cursor_line_style());
            }
            match unit.glyph {
                Glyph::Chip(_) => style = style.patch(self.styles.mention),
                Glyph::Control(_) => style = style.add_modifier(Modifier::DIM),
                _ => {}
            }
            if let Some(((start, end), selected)) = selection
                && (line_no, unit.range.start) < end
                && (line_no, unit.range.end) > start
            {
                style = style.patch(selected);
            }
            let shown = shown(unit, line);
            if unit.width > 0 {
                frame.draw(buf, y, unit.x, row_width, &shown, style);
            }
        }
    }
}

#[cfg(test)]
#[path = "textarea_view_tests.rs"]
mod tests;
