//! The scrollable transcript pane: owns the [`Transcript`], the expansion toggles and the
//! scroll position, and renders the visible slice (bottom-anchored, following new output
//! unless the user scrolled up).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::Widget;

use super::{NoticeKind, RenderOptions, Transcript, render_cell};
use dsh_store::Event;

/// The separator between cells.
static BLANK: Line<'static> = Line {
    style: Style::new(),
    alignment: None,
    spans: Vec::new(),
};

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
    /// The session's log is being read into a transcript off the UI thread.
    loading: bool,
}

/// Rendered lines of finished cells for one width and option set.
#[derive(Debug, Default)]
struct LineCache {
    width: u16,
    options: RenderOptions,
    /// Per cell: the cell version it was rendered at, and its lines.
    cells: Vec<(u64, Vec<Line<'static>>)>,
    /// The transcript's [`hidden`](Transcript::hidden) count these cells line up with.
    hidden: u64,
    /// The line above the kept cells saying how many older ones are not shown.
    marker: Option<Line<'static>>,
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

    /// Tell where referenced sessions come from with `sessions` (the cards name it).
    pub fn set_sessions(&mut self, sessions: std::sync::Arc<dsh_foreign::SessionSources>) {
        self.transcript.set_sessions(sessions);
    }

    /// Fold one log event in.
    pub fn apply(&mut self, event: &Event) {
        self.transcript.apply(event);
    }

    /// Show that the session's conversation is being read (a line above the cells).
    pub fn set_loading(&mut self, loading: bool) {
        self.loading = loading;
    }

    /// Whether the conversation is still being read.
    pub fn is_loading(&self) -> bool {
        self.loading
    }

    /// Show `loaded`, read from the session log off the UI thread; the notices and errors
    /// shown meanwhile follow its cells.
    pub fn adopt(&mut self, loaded: Transcript) {
        let shown = std::mem::replace(&mut self.transcript, loaded);
        self.transcript.append_notices_from(shown);
        self.cache = LineCache::default();
        self.scroll_from_bottom = 0;
        self.loading = false;
    }

    /// Show a notice.
    pub fn push_notice(&mut self, kind: NoticeKind, text: impl Into<String>) {
        self.transcript.push_notice(kind, text);
    }

    /// Cycle what reference cards show (rows → readable conversations → exact bytes);
    /// with no card in the transcript, a notice says so and nothing changes.
    pub fn toggle_snapshots(&mut self) {
        if self.transcript.has_reference_cards() {
            self.options.snapshots = self.options.snapshots.next();
        } else {
            self.transcript.push_notice(
                NoticeKind::Info,
                "Ctrl+O: no referenced sessions in this conversation yet (mention one with @)",
            );
        }
    }

    /// Expand or collapse tool results and long messages; a notice when none is long.
    pub fn toggle_expand(&mut self) {
        if self.options.expand_long || self.transcript.has_collapsible() {
            self.options.expand_long = !self.options.expand_long;
        } else {
            self.transcript
                .push_notice(NoticeKind::Info, "nothing collapsed to expand");
        }
    }

    /// Show an error with its code.
    pub fn push_error(&mut self, code: impl Into<String>, message: impl Into<String>) {
        self.transcript.push_error(code, message);
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

    /// Bring the line cache up to date for `width` (re-rendering only cells that changed)
    /// and return the total number of transcript lines, blank separators included.
    fn layout(&mut self, width: u16) -> usize {
        let hidden = self.transcript.hidden();
        if self.cache.width != width || self.cache.options != self.options {
            self.cache = LineCache {
                width,
                options: self.options,
                ..LineCache::default()
            };
            self.cache.hidden = hidden;
        }
        if hidden != self.cache.hidden {
            // The transcript dropped its oldest cells: drop their cached lines alike.
            let dropped = usize::try_from(hidden.saturating_sub(self.cache.hidden))
                .unwrap_or(usize::MAX)
                .min(self.cache.cells.len());
            self.cache.cells.drain(..dropped);
            self.cache.hidden = hidden;
        }
        self.cache.marker = if self.loading {
            Some(Line::styled(
                "⋯ reading the conversation from the session log…",
                Style::new().add_modifier(Modifier::DIM),
            ))
        } else {
            (hidden > 0).then(|| hidden_marker(hidden))
        };
        let cells = self.transcript.cells();
        self.cache.cells.truncate(cells.len());
        let mut total = 0;
        for (i, cell) in cells.iter().enumerate() {
            let version = self.transcript.cell_version(i);
            match self.cache.cells.get_mut(i) {
                Some((cached, _)) if *cached == version => {}
                Some(slot) => *slot = (version, render_cell(cell, width, self.options)),
                None => self
                    .cache
                    .cells
                    .push((version, render_cell(cell, width, self.options))),
            }
            total += self.cache.cells.get(i).map_or(0, |(_, lines)| lines.len());
        }
        // One blank line between cells; the marker and its blank line above them.
        total + cells.len().saturating_sub(1) + if self.cache.marker.is_some() { 2 } else { 0 }
    }

    /// The transcript lines `start..end` (after [`ChatView::layout`]), without copying the rest.
    fn visible_lines(&self, start: usize, end: usize) -> Vec<&Line<'static>> {
        let blank: &Line<'static> = &BLANK;
        let mut out = Vec::with_capacity(end.saturating_sub(start));
        let mut index = 0;
        if let Some(marker) = &self.cache.marker {
            for line in [marker, blank] {
                if index >= start && index < end {
                    out.push(line);
                }
                index += 1;
            }
        }
        for (i, (_, lines)) in self.cache.cells.iter().enumerate() {
            if index >= end {
                break;
            }
            let cell_len = lines.len() + usize::from(i > 0);
            if index + cell_len <= start {
                index += cell_len;
                continue;
            }
            let rows = (i > 0).then_some(blank).into_iter().chain(lines.iter());
            for line in rows {
                if index >= start && index < end {
                    out.push(line);
                }
                index += 1;
            }
        }
        out
    }

    /// Render into `area`.
    pub fn render(&mut self, area: Rect, buf: &mut Buffer) {
        if area.is_empty() {
            return;
        }
        let total = self.layout(area.width);
        let height = usize::from(area.height);
        if self.scroll_from_bottom > 0 && total > self.last_total {
            self.scroll_from_bottom += total - self.last_total;
        }
        self.scroll_from_bottom = self.scroll_from_bottom.min(total.saturating_sub(height));
        self.last_total = total;
        self.last_height = area.height;
        let end = total - self.scroll_from_bottom;
        let start = end.saturating_sub(height);
        for (row, line) in self.visible_lines(start, end).into_iter().enumerate() {
            let y = area.y + u16::try_from(row).unwrap_or(u16::MAX);
            line.render(Rect::new(area.x, y, area.width, 1), buf);
        }
        if self.scroll_from_bottom > 0 {
            let hint = format!(" ↓ {} more lines (PgDn) ", self.scroll_from_bottom);
            let x = area.right().saturating_sub(
                u16::try_from(crate::tui::text_width::display_width(&hint)).unwrap_or(u16::MAX),
            );
            buf.set_string(
                x.max(area.x),
                area.bottom().saturating_sub(1),
                hint,
                Style::new().add_modifier(Modifier::REVERSED),
            );
        }
    }
}

/// The dim line above the kept cells once older ones were dropped.
fn hidden_marker(hidden: u64) -> Line<'static> {
    let noun = if hidden == 1 { "entry" } else { "entries" };
    Line::styled(
        format!("⋯ {hidden} earlier {noun} not shown here (they stay in the session log)"),
        Style::new().add_modifier(Modifier::DIM),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn rows(view: &mut ChatView, width: u16, height: u16) -> Vec<String> {
        let area = Rect::new(0, 0, width, height);
        let mut buf = Buffer::empty(area);
        view.render(area, &mut buf);
        (0..height)
            .map(|y| {
                (0..width)
                    .map(|x| buf[(x, y)].symbol().to_owned())
                    .collect::<String>()
                    .trim_end()
                    .to_owned()
            })
            .collect()
    }

    fn view_with(n: usize) -> ChatView {
        let mut view = ChatView::default();
        for i in 0..n {
            view.push_notice(NoticeKind::Info, format!("n{i}"));
        }
        view
    }

    #[test]
    fn shows_the_newest_lines_and_scrolls_by_pages() {
        // 6 one-line cells → 11 lines with separators.
        let mut view = view_with(6);
        assert_eq!(rows(&mut view, 12, 3), vec!["ℹ n4", "", "ℹ n5"]);
        view.page_up();
        assert_eq!(
            rows(&mut view, 12, 3)[..2],
            ["ℹ n3".to_owned(), String::new()]
        );
        assert!(view.is_scrolled());
        // New output while scrolled up does not move the view.
        let before = rows(&mut view, 12, 3);
        view.push_notice(NoticeKind::Info, "n6");
        assert_eq!(rows(&mut view, 12, 3)[..2], before[..2]);
        view.scroll_to_bottom();
        assert_eq!(rows(&mut view, 12, 3), vec!["ℹ n5", "", "ℹ n6"]);
        // Scrolling never goes past the top.
        for _ in 0..10 {
            view.page_up();
        }
        assert_eq!(rows(&mut view, 12, 3)[0], "ℹ n0");
        view.scroll_by(-1000);
        assert!(!view.is_scrolled());
    }

    #[test]
    fn visible_slice_matches_the_full_layout() {
        let mut view = view_with(4);
        let total = view.layout(10);
        assert_eq!(total, 7);
        let all: Vec<String> = view
            .visible_lines(0, total)
            .iter()
            .map(std::string::ToString::to_string)
            .collect();
        assert_eq!(all, vec!["ℹ n0", "", "ℹ n1", "", "ℹ n2", "", "ℹ n3"]);
        for start in 0..total {
            for end in start..=total {
                let part: Vec<String> = view
                    .visible_lines(start, end)
                    .iter()
                    .map(std::string::ToString::to_string)
                    .collect();
                assert_eq!(part, all[start..end].to_vec(), "{start}..{end}");
            }
        }
    }

    #[test]
    fn dropped_cells_leave_a_marker_and_the_cache_lines_up() {
        // Rendered before and after the transcript drops its oldest cells: the cached lines
        // follow the cells that are left, and the top shows how many were dropped.
        let mut view = view_with(10);
        assert_eq!(rows(&mut view, 80, 1), vec!["ℹ n9"]);
        for i in 10..2_100 {
            view.push_notice(NoticeKind::Info, format!("n{i}"));
        }
        let hidden = view.transcript().hidden();
        assert!(hidden > 0);
        assert_eq!(rows(&mut view, 80, 3), vec!["ℹ n2098", "", "ℹ n2099"]);
        for _ in 0..3_000 {
            view.page_up();
        }
        let top = rows(&mut view, 80, 4);
        assert_eq!(
            top[..3],
            vec![
                format!("⋯ {hidden} earlier entries not shown here (they stay in the session log)"),
                String::new(),
                format!("ℹ n{hidden}"),
            ][..]
        );
        // Every slice of the layout agrees with the whole, marker included.
        let total = view.layout(80);
        let all: Vec<String> = view
            .visible_lines(0, total)
            .iter()
            .map(std::string::ToString::to_string)
            .collect();
        assert_eq!(all.len(), total);
        for start in (0..total).step_by(97) {
            let part: Vec<String> = view
                .visible_lines(start, (start + 5).min(total))
                .iter()
                .map(std::string::ToString::to_string)
                .collect();
            assert_eq!(part, all[start..(start + 5).min(total)].to_vec(), "{start}");
        }
    }
}
