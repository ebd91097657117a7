//! The scrollable transcript pane: owns the [`Transcript`], the expansion toggles and the
//! scroll position, and renders the visible slice (bottom-anchored, following new output
//! unless the user scrolled up).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::Widget;

use super::transcript::{NoticeKind, RenderOptions, Transcript, render_cell};
use crate::session::Event;

/// Transcript plus view state.
#[derive(Debug, Default)]
pub struct ChatView {
    transcript: Transcript,
    options: RenderOptions,
    /// Lines scrolled up from the bottom; 0 follows new output.
    scroll_from_bottom: usize,
    /// Total line count at the last render, to keep a scrolled view steady as lines arrive.
    last_total: usize,
    /// Visible height at the last render, for page-sized scrolling.
    last_height: u16,
    cache: LineCache,
}

/// Rendered lines of finished cells for one width and option set.
#[derive(Debug, Default)]
struct LineCache {
    width: u16,
    options: RenderOptions,
    /// Per cell: the cell version it was rendered at, and its lines.
    cells: Vec<(u64, Vec<Line<'static>>)>,
}

impl ChatView {
    /// A view with the given initial expansion options.
    pub fn new(options: RenderOptions) -> Self {
        ChatView {
            options,
            ..ChatView::default()
        }
    }

    /// The transcript model.
    pub fn transcript(&self) -> &Transcript {
        &self.transcript
    }

    /// Fold one log event in.
    pub fn apply(&mut self, event: &Event) {
        self.transcript.apply(event);
    }

    /// Show a notice.
    pub fn push_notice(&mut self, kind: NoticeKind, text: impl Into<String>) {
        self.transcript.push_notice(kind, text);
    }

    /// Toggle the exact snapshot text under reference cards.
    pub fn toggle_snapshots(&mut self) {
        self.options.expand_snapshots = !self.options.expand_snapshots;
    }

    /// Toggle reasoning text.
    pub fn toggle_reasoning(&mut self) {
        self.options.expand_reasoning = !self.options.expand_reasoning;
    }

    /// Current expansion options.
    pub fn options(&self) -> RenderOptions {
        self.options
    }

    /// Scroll up (positive) or down (negative) by `lines`.
    pub fn scroll_by(&mut self, lines: isize) {
        let max = self
            .last_total
            .saturating_sub(usize::from(self.last_height));
        let next = if lines >= 0 {
            self.scroll_from_bottom.saturating_add(lines.unsigned_abs())
        } else {
            self.scroll_from_bottom.saturating_sub(lines.unsigned_abs())
        };
        self.scroll_from_bottom = next.min(max);
    }

    /// Scroll one page up.
    pub fn page_up(&mut self) {
        let page = usize::from(self.last_height.saturating_sub(1).max(1));
        self.scroll_by(isize::try_from(page).unwrap_or(isize::MAX));
    }

    /// Scroll one page down.
    pub fn page_down(&mut self) {
        let page = usize::from(self.last_height.saturating_sub(1).max(1));
        self.scroll_by(-isize::try_from(page).unwrap_or(isize::MAX));
    }

    /// Jump back to the newest output.
    pub fn scroll_to_bottom(&mut self) {
        self.scroll_from_bottom = 0;
    }

    /// Whether the view is scrolled away from the bottom.
    pub fn is_scrolled(&self) -> bool {
        self.scroll_from_bottom > 0
    }

    /// All transcript lines for `width`, using cached lines for unchanged cells.
    fn lines(&mut self, width: u16) -> Vec<Line<'static>> {
        if self.cache.width != width || self.cache.options != self.options {
            self.cache = LineCache {
                width,
                options: self.options,
                cells: Vec::new(),
            };
        }
        let cells = self.transcript.cells();
        self.cache.cells.truncate(cells.len());
        let mut out = Vec::new();
        for (i, cell) in cells.iter().enumerate() {
            let version = self.transcript.cell_version(i);
            if i > 0 {
                out.push(Line::default());
            }
            match self.cache.cells.get_mut(i) {
                Some((cached, lines)) if *cached == version => out.extend(lines.iter().cloned()),
                Some(slot) => {
                    let lines = render_cell(cell, width, self.options);
                    out.extend(lines.iter().cloned());
                    *slot = (version, lines);
                }
                None => {
                    let lines = render_cell(cell, width, self.options);
                    out.extend(lines.iter().cloned());
                    self.cache.cells.push((version, lines));
                }
            }
        }
        out
    }

    /// Render into `area`.
    pub fn render(&mut self, area: Rect, buf: &mut Buffer) {
        if area.is_empty() {
            return;
        }
        let lines = self.lines(area.width);
        let total = lines.len();
        let height = usize::from(area.height);
        if self.scroll_from_bottom > 0 && total > self.last_total {
            self.scroll_from_bottom += total - self.last_total;
        }
        self.scroll_from_bottom = self.scroll_from_bottom.min(total.saturating_sub(height));
        self.last_total = total;
        self.last_height = area.height;
        let end = total - self.scroll_from_bottom;
        let start = end.saturating_sub(height);
        for (row, line) in lines.iter().skip(start).take(end - start).enumerate() {
            let y = area.y + u16::try_from(row).unwrap_or(u16::MAX);
            line.render(Rect::new(area.x, y, area.width, 1), buf);
        }
        if self.scroll_from_bottom > 0 {
            let hint = format!(" ↓ {} more lines (PgDn) ", self.scroll_from_bottom);
            let x = area
                .right()
                .saturating_sub(super::wrap::display_width(&hint) as u16);
            buf.set_string(
                x.max(area.x),
                area.bottom().saturating_sub(1),
                hint,
                Style::new().add_modifier(Modifier::REVERSED),
            );
        }
    }
}
