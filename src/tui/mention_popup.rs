//! The `@` session popup (SPEC §6.1): candidate rows for the token being typed, with
//! matched characters highlighted, at most eight rows visible, and the empty states.

use chrono::{FixedOffset, Local, TimeZone};
use fuzzy_matcher::FuzzyMatcher;
use fuzzy_matcher::skim::SkimMatcherV2;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Widget};

use super::mention_token::MentionToken;
use crate::session::untrusted::visible_controls_line;

/// Most candidate rows shown at once; the list scrolls to keep the selection visible.
pub const MAX_VISIBLE_ROWS: usize = 8;

/// One session the popup offers. Mirrors `reference::Candidate` (SPEC §3.4) so the popup
/// does not depend on the reference service being built; the app converts with `Into`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CandidateRow {
    pub session_id: String,
    /// Latest title, or the id when the session has none.
    pub label: String,
    pub cwd: Option<String>,
    /// Creation time, milliseconds since the Unix epoch.
    pub created_at: i64,
}

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
    Rows(Vec<CandidateRow>),
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
    pub fn set_candidates(
        &mut self,
        query_id: u64,
        rows: Result<Vec<CandidateRow>, String>,
    ) -> bool {
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

    fn rows(&self) -> &[CandidateRow] {
        match &self.listing {
            Listing::Rows(rows) => rows,
            Listing::Waiting | Listing::Failed(_) => &[],
        }
    }

    /// The highlighted row, if any row is on show.
    pub fn selected(&self) -> Option<&CandidateRow> {
        self.rows().get(self.selected)
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
            let label = self.label_line(row, selected, &matcher);
            buf.set_line(inner.x, y, &label, inner.width);
            if offset + 1 < inner.height {
                buf.set_line(inner.x, y + 1, &self.detail_line(row), inner.width);
            }
        }
    }

    /// `› Session · <label>` with the chars matching the query highlighted.
    fn label_line(
        &self,
        row: &CandidateRow,
        selected: bool,
        matcher: &SkimMatcherV2,
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
        let mut run = String::new();
        let mut run_hit = false;
        for (index, c) in label.chars().enumerate() {
            let is_hit = matched.contains(&index);
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

    /// Dim `<id> · <cwd or (no cwd)> · <created, local time>`.
    fn detail_line(&self, row: &CandidateRow) -> Line<'static> {
        let cwd = row.cwd.as_deref().map_or_else(
            || "(no cwd)".to_string(),
            |c| visible_controls_line(c).into_owned(),
        );
        let text = format!(
            "    {} · {} · {}",
            visible_controls_line(&row.session_id),
            cwd,
            format_created(row.created_at, self.zone)
        );
        Line::styled(text, Style::new().fg(Color::DarkGray))
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
