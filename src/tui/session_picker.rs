//! The `/resume` session picker: type to filter (the `@` popup's matching: exact, then
//! closest matches, then sessions whose conversation holds the query), a count, paging and
//! fetching more, the same preview, Enter to open and Esc to close.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Clear, Widget};

use super::conversation_hits::ConversationHit;
use super::session_items::{CLOSEST_TITLE, OriginOf};
use super::session_preview::{PreviewRequest, PreviewState};
use super::session_rows::{DisplayZone, ROW_HEIGHT, RowContext, position_label, render_list};
use dsh_foreign::Origin;
use dsh_reference::{Candidate, CandidatePage, ReferenceEstimate};
use ratatui_mention::ItemSnippet;
use ratatui_mention::key_map::{Action, KeyMap};
use ratatui_mention::preview::{self, Placement, PreviewPane};
use ratatui_mention::sections::{Fetch, Section, SectionKind, SectionedList, offered_section};
use ratatui_mention::untrusted::visible_controls_line;
use ratatui_mention::wrap::truncate_to_width;

/// What a key did to the picker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PickerOutcome {
    /// Still open (maybe moved).
    Continue,
    /// List sessions for `query` (`limit`: `None` = the configured first page) off the UI
    /// thread and answer with [`SessionPicker::set_page`]; the previous listing is stale.
    Query {
        query_id: u64,
        query: String,
        limit: Option<usize>,
    },
    /// Open this session.
    Open(String),
    /// Closed without choosing.
    Close,
}

/// Where the listing stands.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Listing {
    Waiting,
    Answered,
    Failed(String),
}

/// Picker state: the filter, the listing and the selection.
#[derive(Debug, Clone)]
pub struct SessionPicker {
    /// The session currently open, marked in the list.
    current: String,
    query: String,
    query_id: u64,
    in_flight: bool,
    more_id: Option<u64>,
    listing: Listing,
    list: SectionedList<Candidate>,
    /// Where the listed foreign sessions come from (their badges); dsh rows are absent.
    origins: HashMap<String, Origin>,
    preview: PreviewState,
    preview_enabled: bool,
    zone: DisplayZone,
    /// The widget's default key map: the picker moves with the same keys as the popup.
    keys: KeyMap,
    /// Sessions found in conversations for the newest filter that answered them, and the
    /// section's title (see [`SessionPicker::set_hits`]).
    hits: Option<(String, Vec<Candidate>)>,
    /// The matching line of each conversation hit, by session id.
    snippets: HashMap<String, ItemSnippet>,
    /// How many sections the listing's page takes (the hits section comes after them).
    page_sections: usize,
}

/// The sections of one listing answer: the exact matches, then the closest ones.
fn sections_of(page: CandidatePage) -> Vec<Section<Candidate>> {
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

impl SessionPicker {
    /// A picker waiting for the answer to its first listing, `query_id` (empty filter).
    pub fn loading(current: impl Into<String>, query_id: u64, zone: DisplayZone) -> Self {
        SessionPicker {
            current: current.into(),
            query: String::new(),
            query_id,
            in_flight: true,
            more_id: None,
            listing: Listing::Waiting,
            list: SectionedList::new(ROW_HEIGHT),
            origins: HashMap::new(),
            preview: PreviewState::default(),
            preview_enabled: true,
            zone,
            keys: KeyMap::default(),
            hits: None,
            snippets: HashMap::new(),
            page_sections: 0,
        }
    }

    /// The id of the newest filter's listing (conversation hits for any other are stale).
    pub fn query_id(&self) -> u64 {
        self.query_id
    }

    /// Takes the conversation hits for filter `query_id` under `title` (a title with no
    /// rows still shows, e.g. "index building"; neither removes the section); rows the
    /// exact matches list are left out. Returns false for an older filter's answer.
    pub fn set_hits(&mut self, query_id: u64, title: &str, hits: Vec<ConversationHit>) -> bool {
        if query_id != self.query_id {
            return false;
        }
        self.snippets = hits
            .iter()
            .filter_map(|h| Some((h.candidate.session_id.clone(), h.snippet.clone()?)))
            .collect();
        let rows: Vec<Candidate> = hits.into_iter().map(|h| h.candidate).collect();
        self.hits = (!title.is_empty() || !rows.is_empty()).then(|| (title.to_owned(), rows));
        self.place_hits();
        true
    }

    /// Changes only the conversation section's title (e.g. progress), keeping its rows and
    /// the selection.
    pub fn set_hits_title(&mut self, title: &str) {
        if let Some((t, _)) = self.hits.as_mut() {
            title.clone_into(t);
            self.list
                .set_title(self.page_sections, Some(title.to_owned()));
        }
    }

    /// The conversation section, without rows among `listed`.
    fn hits_section(&self, listed: &[Candidate]) -> Option<Section<Candidate>> {
        let (title, rows) = self.hits.as_ref()?;
        offered_section(title, rows, listed, candidate_key)
    }

    /// Puts the conversation section after the page's sections.
    fn place_hits(&mut self) {
        let (title, rows) = self
            .hits
            .as_ref()
            .map_or(("", &[][..]), |(t, r)| (t.as_str(), r.as_slice()));
        self.list
            .place_offered(&mut self.page_sections, title, rows, candidate_key);
    }

    /// The filter typed so far.
    pub fn query(&self) -> &str {
        &self.query
    }

    /// The sections and selection.
    pub fn list(&self) -> &SectionedList<Candidate> {
        &self.list
    }

    /// Takes the answer to listing `query_id` (a new filter, or more rows of the answered
    /// one); returns false for a stale answer.
    pub fn set_page(&mut self, query_id: u64, page: Result<CandidatePage, String>) -> bool {
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
                let mut sections = sections_of(page);
                self.page_sections = sections.len();
                if let Some(hits) = self.hits_section(&sections[0].rows) {
                    sections.push(hits);
                }
                self.list.set_sections(sections);
            }
            Err(message) => {
                self.listing = Listing::Failed(message);
                self.list.set_sections(Vec::new());
                self.page_sections = 0;
                if self.hits.is_some() {
                    self.place_hits();
                }
            }
        }
        true
    }

    /// Asks `origin_of` (the sources) where each listed row comes from, for its badge.
    pub fn set_origins(&mut self, origin_of: &OriginOf<'_>) {
        self.origins = self
            .list
            .sections()
            .iter()
            .flat_map(|section| &section.rows)
            .filter_map(|row| {
                let origin = origin_of(&row.session_id);
                origin
                    .is_foreign()
                    .then(|| (row.session_id.clone(), origin))
            })
            .collect();
    }

    /// Handles one key; `next_id` gives a fresh listing id when one is needed.
    pub fn handle_key(&mut self, key: &KeyEvent, next_id: &mut u64) -> PickerOutcome {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        if key.code == KeyCode::Esc || (ctrl && key.code == KeyCode::Char('c')) {
            return PickerOutcome::Close;
        }
        let action = self.keys.classify(key);
        let fetch = match action {
            Some(Action::Up | Action::PopupPrev) => Some(self.list.move_up()),
            Some(Action::Down | Action::PopupNext) => Some(self.list.move_down()),
            Some(Action::PopupPageUp) => Some(self.list.page_up()),
            Some(Action::PopupPageDown) => Some(self.list.page_down()),
            Some(Action::PopupFirst) => Some(self.list.home()),
            Some(Action::PopupLast) => Some(self.list.end()),
            _ => None,
        };
        if let Some(fetch) = fetch {
            return match fetch {
                Fetch::Rows(limit) if !self.in_flight => {
                    *next_id += 1;
                    self.more_id = Some(*next_id);
                    PickerOutcome::Query {
                        query_id: *next_id,
                        query: self.query.clone(),
                        limit: Some(limit),
                    }
                }
                Fetch::Rows(_) | Fetch::None => PickerOutcome::Continue,
            };
        }
        match (action, key.code) {
            (Some(Action::TogglePreview), _) => {
                self.preview_enabled = !self.preview_enabled;
                PickerOutcome::Continue
            }
            (Some(Action::Submit), _) => match self.list.selected_row() {
                Some(row) => PickerOutcome::Open(row.session_id.clone()),
                None => PickerOutcome::Continue,
            },
            (Some(Action::DeleteBackward), _) => {
                if self.query.pop().is_some() {
                    self.requery(next_id)
                } else {
                    PickerOutcome::Continue
                }
            }
            (_, KeyCode::Char('u')) if ctrl => {
                if self.query.is_empty() {
                    PickerOutcome::Continue
                } else {
                    self.query.clear();
                    self.requery(next_id)
                }
            }
            (None, KeyCode::Char(c)) if !ctrl && !alt && !c.is_control() => {
                self.query.push(c);
                self.requery(next_id)
            }
            _ => PickerOutcome::Continue,
        }
    }

    /// A new listing for the changed filter; rows stay on show until it is answered.
    fn requery(&mut self, next_id: &mut u64) -> PickerOutcome {
        *next_id += 1;
        self.query_id = *next_id;
        self.in_flight = true;
        self.more_id = None;
        PickerOutcome::Query {
            query_id: self.query_id,
            query: self.query.clone(),
            limit: None,
        }
    }

    /// Where the preview goes on a `width`×`height` overlay.
    pub fn placement(&self, width: u16, height: u16) -> Placement {
        preview::placement(self.preview_enabled, width, height)
    }

    /// The estimate to compute for the selected row on a `width`×`height` overlay, if any.
    pub fn want_preview(&mut self, width: u16, height: u16) -> Option<PreviewRequest> {
        if self.placement(width, height) == Placement::Hidden {
            return None;
        }
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

    /// Render as a bordered overlay filling `area`.
    pub fn render(&self, area: Rect, buf: &mut Buffer) {
        if area.height < 4 || area.width < 20 {
            return;
        }
        Clear.render(area, buf);
        let placement = if self.list.selected_row().is_some() {
            self.placement(area.width, area.height)
        } else {
            Placement::Hidden
        };
        let (list_area, preview_area) = preview::split(area, placement);
        let dim = Style::new().fg(Color::DarkGray);
        let mut block = Block::bordered()
            .border_type(BorderType::Rounded)
            .border_style(dim)
            .title(Span::styled(
                " Resume a session ",
                Style::new().add_modifier(Modifier::BOLD),
            ));
        if let Some(position) = position_label(&self.list) {
            block = block.title_bottom(Line::styled(format!(" {position} "), dim).right_aligned());
        }
        let inner = block.inner(list_area);
        block.render(list_area, buf);
        let width = usize::from(inner.width);
        let filter = if self.query.is_empty() {
            Line::styled(
                "  type to filter by title, id, cwd or what was said",
                dim.add_modifier(Modifier::ITALIC),
            )
        } else {
            Line::from(vec![
                Span::styled("  filter: ", dim),
                Span::raw(truncate_to_width(
                    &visible_controls_line(&self.query),
                    width.saturating_sub(11),
                )),
                Span::styled("▏", Style::new().fg(Color::Cyan)),
            ])
        };
        buf.set_line(inner.x, inner.y, &filter, inner.width);
        let rows_area = Rect {
            y: inner.y + 1,
            height: inner.height.saturating_sub(1),
            ..inner
        };
        if rows_area.height == 0 {
            return;
        }
        let message = match (&self.listing, self.in_flight) {
            _ if !self.list.is_empty() => None,
            (Listing::Waiting, _) => Some("loading sessions…".to_string()),
            (_, true) => Some("searching…".to_string()),
            (Listing::Failed(e), false) => Some(format!(
                "could not list sessions: {}",
                visible_controls_line(e)
            )),
            (Listing::Answered, false) if self.query.is_empty() => {
                Some("no sessions yet".to_string())
            }
            (Listing::Answered, false) => Some("no matching sessions".to_string()),
        };
        if let Some(message) = message {
            let style = if matches!(self.listing, Listing::Failed(_)) {
                Style::new().fg(Color::Red)
            } else {
                dim.add_modifier(Modifier::ITALIC)
            };
            let text = truncate_to_width(&format!("  {message}"), width);
            buf.set_line(
                rows_area.x,
                rows_area.y,
                &Line::styled(text, style),
                rows_area.width,
            );
            // Titles of sections with no rows yet (e.g. "index building") follow.
            let titles = self
                .list
                .sections()
                .iter()
                .filter_map(|s| s.title.as_deref());
            for (y, title) in (1..rows_area.height).zip(titles) {
                let line = Line::styled(
                    truncate_to_width(&format!("  {}", visible_controls_line(title)), width),
                    dim.add_modifier(Modifier::ITALIC),
                );
                buf.set_line(rows_area.x, rows_area.y + y, &line, rows_area.width);
            }
            return;
        }
        let none = HashSet::new();
        let ctx = RowContext {
            query: &self.query,
            zone: self.zone,
            mentioned: &none,
            current: Some(&self.current),
            snippets: Some((self.page_sections, &self.snippets)),
            origins: &self.origins,
        };
        render_list(&self.list, rows_area, buf, &ctx);
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

/// A candidate's identity among the picker's rows.
fn candidate_key(c: &Candidate) -> &str {
    &c.session_id
}

#[cfg(test)]
#[path = "session_picker_tests.rs"]
mod tests;
