//! The `@` session popup (docs/composer.md, the @ popup): sections of sessions for the token
//! being typed — exact matches (counted, paged, fetched in growing steps), closest matches
//! when nothing matches exactly — with a preview of the selected session and the empty
//! states.

use std::collections::HashSet;
use std::sync::Arc;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Widget};

use super::mention_token::MentionToken;
use super::session_preview::{PreviewRequest, PreviewState};
use super::session_rows::{ROW_HEIGHT, RowContext, position_label, render_list};
use dsh_reference::{Candidate, CandidatePage, ReferenceEstimate};
use ratatui_mention::preview::{self, Placement, PreviewPane};
use ratatui_mention::sections::{Fetch, Section, SectionKind, SectionedList};
use ratatui_mention::untrusted::visible_controls_line;

pub use super::session_rows::{DisplayZone, format_created};

/// Most candidate rows shown at once; the list scrolls to keep the selection visible.
pub const MAX_VISIBLE_ROWS: usize = 8;

/// Title of the section offered when nothing matches exactly.
pub const CLOSEST_TITLE: &str = "closest matches";

/// Where the popup's answers stand.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Listing {
    /// No answer yet for any query of this popup.
    Waiting,
    Answered,
    Failed(String),
}

/// The sections of one listing answer.
pub fn sections_of(page: CandidatePage) -> Vec<Section<Candidate>> {
    let mut sections = vec![Section {
        kind: SectionKind::Exact,
        title: None,
        rows: page.rows,
        total: page.total,
    }];
    if !page.closest.is_empty() {
        sections.push(Section::complete(
            SectionKind::Offered,
            Some(CLOSEST_TITLE.to_string()),
            page.closest.into_iter().map(|c| c.candidate).collect(),
        ));
    }
    sections
}

/// State of an open `@` popup: its token, the queries in flight and the rows on show.
#[derive(Debug, Clone)]
pub struct MentionPopup {
    token: MentionToken,
    query_id: u64,
    in_flight: bool,
    /// A request for more rows of the answered query, if one is out.
    more_id: Option<u64>,
    listing: Listing,
    list: SectionedList<Candidate>,
    zone: DisplayZone,
    preview: PreviewState,
}

impl MentionPopup {
    /// A popup for `token` whose first query `query_id` has just been sent.
    pub fn new(token: MentionToken, query_id: u64, zone: DisplayZone) -> Self {
        Self {
            token,
            query_id,
            in_flight: true,
            more_id: None,
            listing: Listing::Waiting,
            list: SectionedList::new(ROW_HEIGHT),
            zone,
            preview: PreviewState::default(),
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
            self.more_id = None;
        }
        self.token = token;
    }

    /// Takes the answer to `query_id` (a new query, or more rows of the answered one);
    /// returns false (and changes nothing) if it is stale.
    pub fn set_candidates(&mut self, query_id: u64, page: Result<CandidatePage, String>) -> bool {
        if self.more_id == Some(query_id) {
            self.more_id = None;
            if let Ok(page) = page {
                self.list.extend_section(
                    0,
                    Section {
                        kind: SectionKind::Exact,
                        title: None,
                        rows: page.rows,
                        total: page.total,
                    },
                );
            }
            return true;
        }
        if query_id != self.query_id || !self.in_flight {
            return false;
        }
        self.in_flight = false;
        match page {
            Ok(page) => {
                self.listing = Listing::Answered;
                self.list.set_sections(sections_of(page));
            }
            Err(message) => {
                self.listing = Listing::Failed(message);
                self.list.set_sections(Vec::new());
            }
        }
        true
    }

    /// Records that `query_id` asks for more rows of the answered query.
    pub fn fetching_more(&mut self, query_id: u64) {
        self.more_id = Some(query_id);
    }

    /// Whether more rows may be asked for now: the current query is answered (a newer
    /// fetch replaces one still out).
    pub fn can_fetch(&self) -> bool {
        !self.in_flight
    }

    /// The highlighted row, if any.
    pub fn selected(&self) -> Option<&Candidate> {
        self.list.selected_row()
    }

    /// What Tab inserts: the selected row, else the first row offered.
    pub fn tab_target(&self) -> Option<&Candidate> {
        self.list.selected_row().or_else(|| self.list.first_row())
    }

    /// The sections and selection.
    pub fn list(&self) -> &SectionedList<Candidate> {
        &self.list
    }

    /// Moves: Up/Down wrap, PgUp/PgDn page, Home/End jump; may ask for more rows.
    pub fn move_up(&mut self) -> Fetch {
        self.list.move_up()
    }
    pub fn move_down(&mut self) -> Fetch {
        self.list.move_down()
    }
    pub fn page_up(&mut self) -> Fetch {
        self.list.page_up()
    }
    pub fn page_down(&mut self) -> Fetch {
        self.list.page_down()
    }
    pub fn home(&mut self) -> Fetch {
        self.list.home()
    }
    pub fn end(&mut self) -> Fetch {
        self.list.end()
    }

    /// The estimate to compute for the selected row, if it is not here or asked for yet.
    pub fn want_preview(&mut self) -> Option<PreviewRequest> {
        let selected = self.list.selected_row().cloned();
        self.preview.want(selected.as_ref())
    }

    /// Delivers an estimate; stale ones are dropped.
    pub fn set_preview(
        &mut self,
        request: &PreviewRequest,
        answer: Result<Arc<ReferenceEstimate>, String>,
    ) -> bool {
        self.preview.set(request, answer)
    }

    /// Rows the list wants: two per row plus section titles (at most eight rows) or one
    /// message, plus border.
    pub fn desired_height(&self) -> u16 {
        let body = if self.list.is_empty() {
            1
        } else {
            let titles = self.list.height() - self.list.row_count() * usize::from(ROW_HEIGHT);
            (self.list.row_count().min(MAX_VISIBLE_ROWS) * usize::from(ROW_HEIGHT) + titles)
                .min(MAX_VISIBLE_ROWS * usize::from(ROW_HEIGHT) + 1)
        };
        u16::try_from(body + 2).unwrap_or(u16::MAX)
    }

    /// The line shown instead of rows, if there are none to show.
    fn empty_message(&self) -> Option<String> {
        if !self.list.is_empty() {
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
            (Listing::Answered | Listing::Waiting, false) => "no matching sessions".to_string(),
        };
        Some(message)
    }

    /// Draws the popup into `area` (list, and the preview where `placement` puts it).
    pub fn render(
        &self,
        area: Rect,
        buf: &mut Buffer,
        placement: Placement,
        mentioned: &HashSet<String>,
    ) {
        let placement = if self.list.selected_row().is_some() {
            placement
        } else {
            Placement::Hidden
        };
        let (list_area, preview_area) = preview::split(area, placement);
        let dim = Style::new().fg(Color::DarkGray);
        let mut block = Block::bordered()
            .border_type(BorderType::Rounded)
            .border_style(dim)
            .title(Span::styled(
                " @ sessions ",
                Style::new().add_modifier(Modifier::BOLD),
            ));
        if let Some(position) = position_label(&self.list) {
            block = block.title_bottom(Line::styled(format!(" {position} "), dim).right_aligned());
        }
        let inner = block.inner(list_area);
        ratatui::widgets::Clear.render(list_area, buf);
        block.render(list_area, buf);
        if inner.width == 0 || inner.height == 0 {
            return;
        }
        if let Some(message) = self.empty_message() {
            let line = Line::styled(format!("  {message}"), dim.add_modifier(Modifier::ITALIC));
            buf.set_line(inner.x, inner.y, &line, inner.width);
            return;
        }
        let ctx = RowContext {
            query: &self.token.query,
            zone: self.zone,
            mentioned,
            current: None,
        };
        render_list(&self.list, inner, buf, &ctx);
        if let (Some(preview_area), Some(row)) = (preview_area, self.list.selected_row()) {
            let (header, body) = self.preview.lines(row, self.zone);
            PreviewPane {
                title: "preview",
                header,
                body,
            }
            .render(preview_area, buf);
        }
    }
}
