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
    /// Scrolling back: the window of older events being read, or why it could not be.
    older: OlderState,
    /// The last frame showed the first line (reading older events is then due).
    at_top: bool,
    /// The next frame's growth in lines is at the top (older cells put in front), not at
    /// the bottom: a scrolled view keeps its distance from the bottom.
    grown_at_top: bool,
    /// Reading the log forward (the newest cells were dropped for older ones).
    newer: NewerState,
    /// Lines a scroll up asked for past the top while older events were still in the log:
    /// applied as their windows land.
    pending_up: usize,
    /// Cells from this index on were just put at the end by a forward read: the view
    /// stays on the lines it showed (it scrolls up by theirs).
    keep_view_from: Option<usize>,
    /// The next frame shows this cell at the top (an opened citation).
    focus: Option<usize>,
}

/// Reading the log's events after the transcript's last cell, as the user scrolls down a
/// transcript whose newest cells were dropped.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum NewerState {
    /// Nothing being read.
    #[default]
    Idle,
    /// A window from this seq is being read.
    Reading(u64),
    /// Nothing more to read forward (or it failed): read the whole session again.
    ReadAgain,
}

/// Most lines a scroll past the top keeps asking for (about 500 pages of a tall window).
const MAX_PENDING_UP: usize = 20_000;

/// Reading the log's events before the transcript's first cell, as the user scrolls up.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
enum OlderState {
    /// Nothing being read.
    #[default]
    Idle,
    /// A window before this seq is being read.
    Reading(u64),
    /// The last read failed (said above the cells; not retried automatically).
    Failed(String),
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
    /// The transcript's [`prepended`](Transcript::prepended) count these cells line up with.
    prepended: u64,
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

    /// Fold one log event in — unless the newest cells were dropped for older ones (the
    /// event is in the log, shown when the transcript is read again at the bottom).
    pub fn apply(&mut self, event: &Event) {
        if !self.transcript.newer_cut() {
            self.transcript.apply(event);
        }
    }

    /// The seq to read the window of older events before, once the view shows the first
    /// line and the log has events before it (asked once; answer with
    /// [`older_read`](Self::older_read)).
    pub fn wants_older(&mut self) -> Option<u64> {
        if !self.at_top || self.loading || self.older != OlderState::Idle {
            return None;
        }
        let before = self.transcript.older_than()?;
        self.older = OlderState::Reading(before);
        // Its marker line goes above the cells.
        self.grown_at_top = true;
        Some(before)
    }

    /// The window asked for by [`wants_older`](Self::wants_older) was read: its cells
    /// (`older`, built from events from seq `start_seq` on; `0`: the log's start) go in
    /// front, the view staying where it is; or why it could not be read.
    pub fn older_read(&mut self, read: Result<(Transcript, u64), String>) {
        let OlderState::Reading(before) = self.older else {
            return;
        };
        match read {
            Ok((_, start_seq)) if start_seq >= before => {
                // No progress (never for a log the store indexed): said, not retried.
                self.older = OlderState::Failed(format!("no readable events before #{before}"));
                self.grown_at_top = true;
            }
            Ok((older, start_seq)) => {
                self.older = OlderState::Idle;
                self.grown_at_top = true;
                let before = self.transcript.cells().len();
                let dropped = self.transcript.prepend(older, start_seq);
                // The newest cells' lines leave the bottom: a scrolled view moves down by
                // them to stay on the lines it shows.
                let gone: usize = self
                    .cache
                    .cells
                    .get(before.saturating_sub(dropped)..before)
                    .map_or(0, |cells| {
                        cells.iter().map(|(_, lines)| lines.len() + 1).sum()
                    });
                self.scroll_from_bottom = self.scroll_from_bottom.saturating_sub(gone);
                self.at_top = false;
            }
            Err(message) => {
                self.older = OlderState::Failed(message);
                self.grown_at_top = true;
            }
        }
    }

    /// The seq to read the log forward from, once the view is at the bottom of a
    /// transcript whose newest cells were dropped for older ones (asked once; answer with
    /// [`newer_read`](Self::newer_read)).
    pub fn wants_newer(&mut self) -> Option<u64> {
        if self.loading || self.is_scrolled() || self.newer != NewerState::Idle {
            return None;
        }
        let from = self.transcript.newer_from()?;
        self.newer = NewerState::Reading(from);
        Some(from)
    }

    /// The forward window asked for by [`wants_newer`](Self::wants_newer) was read: its
    /// cells (`newer`, events up to `end_seq`) go at the end, the view staying on the lines
    /// it shows; an empty window (the log's end) or a failure reads the session again.
    pub fn newer_read(&mut self, read: Result<(Transcript, u64), String>) {
        let NewerState::Reading(from) = self.newer else {
            return;
        };
        match read {
            Ok((newer, end_seq)) if end_seq > from && !newer.cells().is_empty() => {
                self.newer = NewerState::Idle;
                let (count, hidden) = (self.transcript.cells().len(), self.transcript.hidden());
                self.transcript.append_window(newer, end_seq);
                let dropped = usize::try_from(self.transcript.hidden() - hidden).unwrap_or(count);
                self.keep_view_from = Some(count.saturating_sub(dropped));
            }
            Ok((_, end_seq)) if end_seq > from => {
                // Events without cells of their own: on past them.
                self.transcript
                    .append_window(Transcript::default(), end_seq);
                self.newer = NewerState::Idle;
            }
            Ok(_) | Err(_) => self.newer = NewerState::ReadAgain,
        }
    }

    /// Whether a window of older events is being read.
    pub fn is_reading_older(&self) -> bool {
        matches!(self.older, OlderState::Reading(_))
    }

    /// Whether the view is back at the bottom of a transcript whose newest cells were
    /// dropped for older ones: the session should be read again to show them.
    pub fn wants_latest(&self) -> bool {
        self.transcript.newer_cut()
            && !self.loading
            && !self.is_scrolled()
            && (self.newer == NewerState::ReadAgain || self.transcript.newer_from().is_none())
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
        self.older = OlderState::Idle;
        self.newer = NewerState::Idle;
        self.keep_view_from = None;
        self.pending_up = 0;
        self.at_top = false;
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

    /// Take what a staleness check of the cards' sources found (see
    /// [`Transcript::set_newer`]).
    pub fn set_newer(&mut self, answers: &[(String, Option<u64>, usize)]) {
        self.transcript.set_newer(answers);
    }

    /// Show a help table (`/help`).
    pub fn push_help(&mut self, sections: Vec<super::HelpSection>) {
        self.transcript.push_help(sections);
    }

    /// Show an error with its code.
    pub fn push_error(&mut self, code: impl Into<String>, message: impl Into<String>) {
        self.transcript.push_error(code, message);
    }

    /// Toggle reasoning text.
    pub fn toggle_reasoning(&mut self) {
        self.options.expand_reasoning = !self.options.expand_reasoning;
    }

    /// Show tabs as `\x09` in messages and replies too (a log of another tool, shown
    /// read-only), or expand them (the default: the user's own sessions).
    pub fn set_tabs_visible(&mut self, visible: bool) {
        self.options.tabs_visible = visible;
    }

    /// Current expansion options.
    pub fn options(&self) -> RenderOptions {
        self.options
    }

    /// Scroll up (positive) or down (negative) by `lines`.
    pub fn scroll_by(&mut self, lines: isize) {
        let max = max_scroll(self.last_total, usize::from(self.last_height));
        let next = if lines >= 0 {
            self.scroll_from_bottom.saturating_add(lines.unsigned_abs())
        } else {
            self.scroll_from_bottom.saturating_sub(lines.unsigned_abs())
        };
        if lines > 0 && next > max && self.transcript.older_than().is_some() {
            // Past the top with older events in the log: the rest of the move waits for
            // the windows that bring them (a burst of PgUp goes as far as it asks).
            self.pending_up = self
                .pending_up
                .saturating_add(next - max)
                .min(MAX_PENDING_UP);
        } else if lines < 0 {
            self.pending_up = 0;
        }
        self.scroll_from_bottom = next.min(max);
    }

    /// Lines a page moves the view: the rows that show text while scrolled, less one kept
    /// for context.
    fn page(&self) -> usize {
        let rows = text_rows(usize::from(self.last_height), true);
        rows.saturating_sub(1).max(1)
    }

    /// Scroll one page up: the top line moves up a page (from the bottom one more, for the
    /// row the "more lines" marker then takes).
    pub fn page_up(&mut self) {
        let lines = self.page() + usize::from(!self.is_scrolled());
        self.scroll_by(isize::try_from(lines).unwrap_or(isize::MAX));
    }

    /// Scroll one page down (to the bottom when less than a page and the marker's row
    /// are left).
    pub fn page_down(&mut self) {
        let page = self.page();
        self.pending_up = 0;
        if self.scroll_from_bottom <= page + 1 {
            self.scroll_from_bottom = 0;
        } else {
            self.scroll_by(-isize::try_from(page).unwrap_or(isize::MAX));
        }
    }

    /// Show the cell of log event `seq` at the top from the next frame on; false when no
    /// kept cell shows it.
    pub fn focus_seq(&mut self, seq: u64) -> bool {
        self.focus = self.transcript.index_of_seq(seq);
        self.focus.is_some()
    }

    /// Jump back to the newest output.
    pub fn scroll_to_bottom(&mut self) {
        self.scroll_from_bottom = 0;
        self.pending_up = 0;
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
        if self.transcript.prepended() != self.cache.prepended {
            // Older cells went in front: render them all again.
            self.cache.cells.clear();
            self.cache.prepended = self.transcript.prepended();
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
        let dim = Style::new().add_modifier(Modifier::DIM);
        self.cache.marker = if self.loading {
            Some(Line::styled(
                "⋯ reading the conversation from the session log…",
                dim,
            ))
        } else {
            match &self.older {
                OlderState::Idle => None,
                OlderState::Reading(_) => Some(Line::styled(
                    "⋯ reading earlier entries from the session log…",
                    dim,
                )),
                OlderState::Failed(why) => Some(Line::styled(
                    format!(
                        "⋯ earlier entries could not be read: {}",
                        term_text::visible_controls_line(why)
                    ),
                    dim,
                )),
            }
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

    /// The transcript, to change what it remembers (the citation the open key goes to).
    pub fn transcript_mut(&mut self) -> &mut Transcript {
        &mut self.transcript
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
        if let Some(from) = self.keep_view_from.take() {
            // Cells a forward read put at the end: the view stays on its lines.
            let added: usize = self.cache.cells.get(from..).map_or(0, |cells| {
                cells.iter().map(|(_, lines)| lines.len() + 1).sum()
            });
            self.scroll_from_bottom += added;
        } else if self.scroll_from_bottom > 0 && total > self.last_total && !self.grown_at_top {
            self.scroll_from_bottom += total - self.last_total;
        }
        if self.grown_at_top && !self.is_reading_older() && self.pending_up > 0 {
            // A window landed: the move that went past the top goes on into it, and what
            // is left past its top waits for the next one.
            let max = max_scroll(total, height);
            let wanted = self.scroll_from_bottom.saturating_add(self.pending_up);
            self.pending_up = if self.transcript.older_than().is_some() {
                wanted.saturating_sub(max)
            } else {
                0
            };
            self.scroll_from_bottom = wanted;
        }
        self.grown_at_top = false;
        if let Some(cell) = self.focus.take() {
            // Lines above the cell: the marker's two, then each cell and its blank line.
            let above: usize = usize::from(self.cache.marker.is_some()) * 2
                + self
                    .cache
                    .cells
                    .iter()
                    .take(cell)
                    .map(|(_, lines)| lines.len() + 1)
                    .sum::<usize>();
            self.scroll_from_bottom = total.saturating_sub(above + text_rows(height, true));
            self.pending_up = 0;
        }
        self.scroll_from_bottom = self.scroll_from_bottom.min(max_scroll(total, height));
        self.last_total = total;
        self.last_height = area.height;
        let scrolled = self.scroll_from_bottom > 0;
        let rows = text_rows(height, scrolled);
        let end = total - self.scroll_from_bottom;
        let start = end.saturating_sub(rows);
        self.at_top = start == 0;
        for (row, line) in self.visible_lines(start, end).into_iter().enumerate() {
            let y = area.y + u16::try_from(row).unwrap_or(u16::MAX);
            line.render(Rect::new(area.x, y, area.width, 1), buf);
        }
        if scrolled && rows < height {
            // The bottom row is the marker's own: it never covers a line of the transcript.
            let hint = more_marker(self.scroll_from_bottom, usize::from(area.width));
            let width = crate::tui::text_width::display_width(&hint);
            let x = area
                .right()
                .saturating_sub(u16::try_from(width).unwrap_or(u16::MAX));
            buf.set_stringn(
                x.max(area.x),
                area.bottom().saturating_sub(1),
                hint,
                usize::from(area.width),
                Style::new().add_modifier(Modifier::REVERSED),
            );
        }
    }
}

/// The marker under a view scrolled up `below` lines, as long as `width` columns allow:
/// ` ↓ 12 more lines (PgDn) `, else ` ↓ 12 more `, else ` ↓ 12 `.
fn more_marker(below: usize, width: usize) -> String {
    let noun = if below == 1 { "line" } else { "lines" };
    [
        format!(" ↓ {below} more {noun} (PgDn) "),
        format!(" ↓ {below} more "),
        format!(" ↓ {below} "),
    ]
    .into_iter()
    .find(|m| crate::tui::text_width::display_width(m) <= width)
    .unwrap_or_else(|| format!("↓{below}"))
}

/// Rows of a `height`-row view that show transcript lines: all of them, except the bottom
/// row while scrolled up (the "more lines" marker has it), when there are at least two.
fn text_rows(height: usize, scrolled: bool) -> usize {
    if scrolled && height >= 2 {
        height - 1
    } else {
        height
    }
}

/// How far a view of `height` rows over `total` lines scrolls up: until the first line is at
/// the top, with the marker's row at the bottom.
fn max_scroll(total: usize, height: usize) -> usize {
    if total <= height {
        0
    } else {
        total - text_rows(height, true)
    }
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
        assert_eq!(rows(&mut view, 12, 4), vec!["", "ℹ n4", "", "ℹ n5"]);
        // A page (the 3 text rows while scrolled, less one) up: the top line moves up 2.
        view.page_up();
        let shown = rows(&mut view, 12, 4);
        assert_eq!(
            shown[..3],
            [String::new(), "ℹ n3".to_owned(), String::new()]
        );
        assert_eq!(
            shown[3], "   ↓ 3 more",
            "narrow: the short marker; {shown:?}"
        );
        assert!(view.is_scrolled());
        // New output while scrolled up does not move the view.
        let before = rows(&mut view, 12, 4);
        view.push_notice(NoticeKind::Info, "n6");
        assert_eq!(rows(&mut view, 12, 4)[..3], before[..3]);
        view.scroll_to_bottom();
        assert_eq!(rows(&mut view, 12, 4), vec!["", "ℹ n5", "", "ℹ n6"]);
        // Scrolling never goes past the top.
        for _ in 0..10 {
            view.page_up();
        }
        assert_eq!(rows(&mut view, 12, 4)[0], "ℹ n0");
        // Pages down come back to the bottom, the marker gone.
        for _ in 0..10 {
            view.page_down();
        }
        assert!(!view.is_scrolled());
        assert_eq!(rows(&mut view, 12, 4), vec!["", "ℹ n5", "", "ℹ n6"]);
        view.page_up();
        view.scroll_by(-1000);
        assert!(!view.is_scrolled());
    }

    /// Issue 27 minor 13: the "↓ N more lines" marker had the bottom row drawn over the
    /// transcript's line there. At every scroll position the rows above the marker are the
    /// layout's lines in order, the marker row holds the marker alone, and every line is seen.
    #[test]
    fn the_more_lines_marker_has_a_row_of_its_own() {
        let mut view = ChatView::default();
        let body: Vec<String> = (0..30)
            .map(|i| format!("line {i:02} of a long notice"))
            .collect();
        view.push_notice(NoticeKind::Info, body.join("\n"));
        let (width, height) = (40, 6);
        let total = view.layout(width);
        let all: Vec<String> = view
            .visible_lines(0, total)
            .iter()
            .map(|l| l.to_string().trim_end().to_owned())
            .collect();
        let mut seen = vec![false; total];
        let mut positions = 0;
        loop {
            let shown = rows(&mut view, width, height);
            let below = view.scroll_from_bottom;
            let text = if below > 0 {
                let marker = shown.last().unwrap();
                let noun = if below == 1 { "line" } else { "lines" };
                assert_eq!(
                    marker.trim(),
                    format!("↓ {below} more {noun} (PgDn)"),
                    "the marker row holds the marker alone: {shown:?}"
                );
                &shown[..shown.len() - 1]
            } else {
                &shown[..]
            };
            let end = total - below;
            let start = end - text.len();
            assert_eq!(text, &all[start..end], "scrolled {below}: {shown:?}");
            for flag in &mut seen[start..end] {
                *flag = true;
            }
            positions += 1;
            if view.scroll_from_bottom >= total || positions > total {
                break;
            }
            let before = view.scroll_from_bottom;
            view.scroll_by(1);
            if view.scroll_from_bottom == before {
                break;
            }
        }
        assert!(seen.iter().all(|s| *s), "every line is seen: {seen:?}");
        assert_eq!(
            rows(&mut view, width, height)[0],
            all[0],
            "up to the first line"
        );
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
    fn dropped_cells_leave_the_cache_lined_up() {
        // Rendered before and after the transcript drops its oldest cells: the cached lines
        // follow the cells that are left. The app's own cells are not in the log: nothing
        // is read back for them, and no marker stays above the cells.
        let mut view = view_with(10);
        assert_eq!(rows(&mut view, 80, 1), vec!["ℹ n9"]);
        for i in 10..2_100 {
            view.push_notice(NoticeKind::Info, format!("n{i}"));
        }
        let hidden = view.transcript().hidden();
        assert!(hidden > 0);
        assert_eq!(rows(&mut view, 80, 3), vec!["ℹ n2098", "", "ℹ n2099"]);
        for _ in 0..10_000 {
            view.page_up();
        }
        let top = rows(&mut view, 80, 4);
        assert_eq!(top[..1], vec![format!("ℹ n{hidden}")][..]);
        assert_eq!(view.wants_older(), None, "nothing to read back");
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
