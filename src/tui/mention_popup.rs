//! The `@` session popup (docs/composer.md, the @ popup): candidate rows for the token being typed, with
//! matched characters highlighted, at most eight rows visible, and the empty states.

use chrono::{FixedOffset, Local, TimeZone};
use fuzzy_matcher::FuzzyMatcher;
use fuzzy_matcher::skim::SkimMatcherV2;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Widget};
use unicode_width::UnicodeWidthStr;

use super::mention_token::MentionToken;
use super::wrap::{truncate_start_to_width, truncate_to_width};
use dsh_reference::Candidate;
use ratatui_mention::untrusted::visible_controls_line;

/// Most candidate rows shown at once; the list scrolls to keep the selection visible.
pub const MAX_VISIBLE_ROWS: usize = 8;

/// Time zone for creation times: the user's local zone, or a fixed offset (tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DisplayZone {
    Local,
    Fixed(FixedOffset),
}

/// The last answer the popup received.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Listing {
    /// No answer yet for any query of this popup.
    Waiting,
    Rows(Vec<Candidate>),
    Failed(String),
}

/// State of an open `@` popup: its token, the query in flight and the rows on show.
#[derive(Debug, Clone)]
pub struct MentionPopup {
    token: MentionToken,
    query_id: u64,
    in_flight: bool,
    listing: Listing,
    selected: usize,
    scroll_top: usize,
    zone: DisplayZone,
}

impl MentionPopup {
    /// A popup for `token` whose first query `query_id` has just been sent.
    pub fn new(token: MentionToken, query_id: u64, zone: DisplayZone) -> Self {
        Self {
            token,
            query_id,
            in_flight: true,
            listing: Listing::Waiting,
            selected: 0,
            scroll_top: 0,
            zone,
        }
    }

    /// The token this popup completes.
    pub fn token(&self) -> &MentionToken {
        &self.token
    }

    /// The id of the newest query sent; answers to any other id are stale.
    pub fn query_id(&self) -> u64 {
        self.query_id
    }

    /// Follows the token after an edit; a changed query needs the new `query_id` sent for it.
    /// Rows stay on show until that answer arrives.
    pub fn update_token(&mut self, token: MentionToken, query_id: Option<u64>) {
        if let Some(id) = query_id {
            self.query_id = id;
            self.in_flight = true;
        }
        self.token = token;
    }

    /// Takes the answer to `query_id`; returns false (and changes nothing) if it is stale.
    pub fn set_candidates(&mut self, query_id: u64, rows: Result<Vec<Candidate>, String>) -> bool {
        if query_id != self.query_id || !self.in_flight {
            return false;
        }
        self.in_flight = false;
        self.listing = match rows {
            Ok(rows) => Listing::Rows(rows),
            Err(message) => Listing::Failed(message),
        };
        self.selected = 0;
        self.scroll_top = 0;
        true
    }

    fn rows(&self) -> &[Candidate] {
        match &self.listing {
            Listing::Rows(rows) => rows,
            Listing::Waiting | Listing::Failed(_) => &[],
        }
    }

    /// The highlighted row, if any row is on show.
    pub fn selected(&self) -> Option<&Candidate> {
        self.rows().get(self.selected)
    }

    /// The first row offered, selected or not (what Tab inserts when none is selected).
    pub fn first_row(&self) -> Option<&Candidate> {
        self.rows().first()
    }

    /// Moves the selection up one row, wrapping to the last.
    pub fn move_up(&mut self) {
        let n = self.rows().len();
        if n > 0 {
            self.selected = (self.selected + n - 1) % n;
            self.scroll_to_selection();
        }
    }

    /// Moves the selection down one row, wrapping to the first.
    pub fn move_down(&mut self) {
        let n = self.rows().len();
        if n > 0 {
            self.selected = (self.selected + 1) % n;
            self.scroll_to_selection();
        }
    }

    fn scroll_to_selection(&mut self) {
        self.scroll_top = visible_top(self.scroll_top, self.selected, MAX_VISIBLE_ROWS);
    }

    /// Rows the popup wants: two per candidate (at most eight) or one message, plus border.
    pub fn desired_height(&self) -> u16 {
        let rows = self.rows().len().min(MAX_VISIBLE_ROWS);
        let body = if rows == 0 { 1 } else { rows * 2 };
        u16::try_from(body + 2).unwrap_or(u16::MAX)
    }

    /// The line shown instead of rows, if there are none to show.
    fn empty_message(&self) -> Option<String> {
        if !self.rows().is_empty() {
            return None;
        }
        let message = match (&self.listing, self.in_flight) {
            (Listing::Waiting, true) if self.token.query.is_empty() => {
                "type to filter sessions".to_string()
            }
            (_, true) => "searching…".to_string(),
            (Listing::Failed(message), false) => {
                format!(
                    "could not list sessions: {}",
                    visible_controls_line(message)
                )
            }
            (Listing::Rows(_) | Listing::Waiting, false) => "no matching sessions".to_string(),
        };
        Some(message)
    }

    /// Draws the popup into `area`, fitting as many rows as the area allows.
    pub fn render(&self, area: Rect, buf: &mut Buffer) {
        let dim = Style::new().fg(Color::DarkGray);
        let rows = self.rows();
        let mut block = Block::bordered()
            .border_type(BorderType::Rounded)
            .border_style(dim)
            .title(Span::styled(
                " @ sessions ",
                Style::new().add_modifier(Modifier::BOLD),
            ));
        if !rows.is_empty() {
            let position = format!(" {}/{} ", self.selected + 1, rows.len());
            block = block.title_bottom(Line::styled(position, dim).right_aligned());
        }
        let inner = block.inner(area);
        ratatui::widgets::Clear.render(area, buf);
        block.render(area, buf);
        if inner.width == 0 || inner.height == 0 {
            return;
        }
        if let Some(message) = self.empty_message() {
            let line = Line::styled(format!("  {message}"), dim.add_modifier(Modifier::ITALIC));
            buf.set_line(inner.x, inner.y, &line, inner.width);
            return;
        }
        let fit = usize::from(inner.height.div_ceil(2)).clamp(1, MAX_VISIBLE_ROWS);
        let top = visible_top(self.scroll_top, self.selected, fit);
        let matcher = SkimMatcherV2::default();
        for (i, row) in rows.iter().enumerate().skip(top).take(fit) {
            let Ok(offset) = u16::try_from((i - top) * 2) else {
                break;
            };
            let y = inner.y + offset;
            let selected = i == self.selected;
            let label = self.label_line(row, selected, &matcher, inner.width);
            buf.set_line(inner.x, y, &label, inner.width);
            if offset + 1 < inner.height {
                buf.set_line(
                    inner.x,
                    y + 1,
                    &self.detail_line(row, inner.width),
                    inner.width,
                );
            }
        }
    }

    /// `› Session · <label>` with the chars matching the query highlighted.
    fn label_line(
        &self,
        row: &Candidate,
        selected: bool,
        matcher: &SkimMatcherV2,
        width: u16,
    ) -> Line<'static> {
        let label = visible_controls_line(&row.label).into_owned();
        let matched: Vec<usize> = if self.token.query.is_empty() {
            Vec::new()
        } else {
            matcher
                .fuzzy_indices(&label, &self.token.query)
                .map(|(_, indices)| indices)
                .unwrap_or_default()
        };
        let base = if selected {
            Style::new().add_modifier(Modifier::BOLD)
        } else {
            Style::new()
        };
        let hit = base.fg(Color::Yellow).add_modifier(Modifier::UNDERLINED);
        let marker = if selected {
            Span::styled(
                "› ",
                Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
            )
        } else {
            Span::raw("  ")
        };
        let mut spans = vec![marker, Span::styled("Session · ", base.fg(Color::Gray))];
        let room = usize::from(width).saturating_sub(LABEL_PREFIX.width());
        let label = truncate_to_width(&label, room);
        let mut run = String::new();
        let mut run_hit = false;
        for (index, c) in label.chars().enumerate() {
            let is_hit = matched.contains(&index) && c != '…';
            if is_hit != run_hit && !run.is_empty() {
                spans.push(Span::styled(
                    std::mem::take(&mut run),
                    if run_hit { hit } else { base },
                ));
            }
            run_hit = is_hit;
            run.push(c);
        }
        if !run.is_empty() {
            spans.push(Span::styled(run, if run_hit { hit } else { base }));
        }
        Line::from(spans)
    }

    /// Dim `<id> · <cwd or (no cwd)> · <created, local time>`; when too wide, the id keeps
    /// its start and the cwd its end so the time stays visible.
    fn detail_line(&self, row: &Candidate, width: u16) -> Line<'static> {
        let id = visible_controls_line(&row.session_id).into_owned();
        let cwd = row.cwd.as_deref().map_or_else(
            || "(no cwd)".to_string(),
            |c| visible_controls_line(c).into_owned(),
        );
        let time = format_created(row.created_at, self.zone);
        let room = usize::from(width).saturating_sub(DETAIL_INDENT.len());
        let rest = room.saturating_sub(time.width() + 2 * SEPARATOR.width());
        let (id_room, cwd_room) = share(rest, id.width(), cwd.width());
        let id = truncate_to_width(&id, id_room.max(MIN_PART_CELLS));
        let cwd = truncate_start_to_width(&cwd, cwd_room.max(MIN_PART_CELLS));
        let text = format!("{DETAIL_INDENT}{id}{SEPARATOR}{cwd}{SEPARATOR}{time}");
        Line::styled(text, Style::new().fg(Color::DarkGray))
    }
}

/// What precedes the label on a row (the marker is as wide as its blank stand-in).
const LABEL_PREFIX: &str = "› Session · ";
const DETAIL_INDENT: &str = "    ";
const SEPARATOR: &str = " · ";
/// Fewest cells an id or cwd is cut down to.
const MIN_PART_CELLS: usize = 8;

/// Splits `room` cells between two parts that want `a` and `b`: a part that fits in half
/// keeps its width and the other gets the rest; otherwise half each.
fn share(room: usize, a: usize, b: usize) -> (usize, usize) {
    let half = room / 2;
    if a + b <= room {
        (a, b)
    } else if a <= half {
        (a, room - a)
    } else if b <= half {
        (room - b, b)
    } else {
        (half, room - half)
    }
}

/// First visible row so that `selected` is on screen with `fit` rows, moving `top` least.
fn visible_top(top: usize, selected: usize, fit: usize) -> usize {
    let fit = fit.max(1);
    if selected < top {
        selected
    } else if selected >= top + fit {
        selected + 1 - fit
    } else {
        top
    }
}

/// `created_at` (ms since the epoch) as `%Y-%m-%d %H:%M` in `zone`.
pub fn format_created(created_at: i64, zone: DisplayZone) -> String {
    const FORMAT: &str = "%Y-%m-%d %H:%M";
    let formatted = match zone {
        DisplayZone::Local => Local
            .timestamp_millis_opt(created_at)
            .single()
            .map(|t| t.format(FORMAT).to_string()),
        DisplayZone::Fixed(offset) => offset
            .timestamp_millis_opt(created_at)
            .single()
            .map(|t| t.format(FORMAT).to_string()),
    };
    formatted.unwrap_or_else(|| "unknown time".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn truncation_table() {
        let cases = [
            ("short", 10, "short", "short"),
            ("exactly10!", 10, "exactly10!", "exactly10!"),
            ("/home/ana/src/billing", 10, "/home/ana…", "…c/billing"),
            ("会话记录整理", 7, "会话记…", "…录整理"),
            ("abc", 0, "", ""),
        ];
        for (text, cells, end, start) in cases {
            assert_eq!(truncate_to_width(text, cells), end, "end {text:?} {cells}");
            assert_eq!(
                truncate_start_to_width(text, cells),
                start,
                "start {text:?} {cells}"
            );
            assert!(truncate_to_width(text, cells).width() <= cells);
            assert!(truncate_start_to_width(text, cells).width() <= cells);
        }
    }

    #[test]
    fn room_is_shared_between_id_and_cwd() {
        let cases = [
            ((40, 10, 10), (10, 10)),
            ((40, 5, 50), (5, 35)),
            ((40, 50, 5), (35, 5)),
            ((40, 30, 30), (20, 20)),
            ((41, 30, 30), (20, 21)),
            ((0, 3, 3), (0, 0)),
        ];
        for ((room, a, b), want) in cases {
            assert_eq!(share(room, a, b), want, "{room} {a} {b}");
        }
    }

    #[test]
    fn times_use_the_given_zone() {
        let plus_two = DisplayZone::Fixed(FixedOffset::east_opt(2 * 3600).unwrap());
        assert_eq!(format_created(0, plus_two), "1970-01-01 02:00");
        assert_eq!(format_created(i64::MAX, plus_two), "unknown time");
    }
}
