//! The `@` popup: the host's rows for the token being typed, in sections — the query's
//! matches (counted, paged, fetched in growing steps) and rows only offered (closest
//! matches, hits elsewhere) — with characters matching the query highlighted, a preview of
//! the selected row the host supplies, and the empty states.

use fuzzy_matcher::FuzzyMatcher;
use fuzzy_matcher::skim::SkimMatcherV2;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Widget};
use unicode_width::UnicodeWidthStr;

use crate::config::{MentionStyles, PopupLabels};
use crate::item::{Keep, MentionItem};
use crate::mention_token::MentionToken;
use crate::preview::{self, Placement, PreviewPane};
use crate::sections::{Fetch, Placed, Section, SectionKind, SectionedList, offered_section};
use crate::snippet::snippet_line;
use crate::untrusted::visible_controls_line;
use crate::wrap::{truncate_start_to_width, truncate_to_width};

/// A query the widget asked the host to answer, named by a per-widget increasing id.
pub type QueryId = u64;

/// Lines one row takes: the label and the detail line.
const ROW_HEIGHT: u16 = 2;

/// Rows only offered, under a title (e.g. "closest matches").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OfferedRows {
    pub title: String,
    pub rows: Vec<MentionItem>,
}

/// A host's answer to a query: the first matches, how many match in all, and sections of
/// rows only offered (never selected when they arrive).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResultsPage {
    pub rows: Vec<MentionItem>,
    /// Every match, not only `rows` (`>= rows.len()`).
    pub total: usize,
    pub offered: Vec<OfferedRows>,
}

impl ResultsPage {
    /// A page holding exactly `rows`.
    pub fn complete(rows: Vec<MentionItem>) -> Self {
        ResultsPage {
            total: rows.len(),
            rows,
            offered: Vec::new(),
        }
    }
}

/// What the host shows about the item `key` in the preview pane, under the item's own label
/// and detail: `lines` (one screen line each) then `body` (wrapped, newest at the bottom).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemPreview {
    pub key: String,
    pub lines: Vec<Line<'static>>,
    pub body: Vec<Line<'static>>,
}

/// An Enter or Tab waiting for the newest query's answer, as the popup shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitMark {
    /// Waiting: the popup says it is searching.
    Waiting,
    /// The wait ran out: the popup says Enter again sends the draft as text.
    GaveUp,
}

/// Where the popup's answers stand.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Listing {
    /// No answer yet for any query of this popup.
    Waiting,
    Answered,
    Failed(String),
}

/// State of an open popup: its token, the queries in flight, the sections on show and the
/// preview.
#[derive(Debug, Clone)]
pub struct MentionPopup {
    token: MentionToken,
    query_id: QueryId,
    in_flight: bool,
    /// A request for more rows of the answered query, if one is out.
    more_id: Option<QueryId>,
    listing: Listing,
    list: SectionedList<MentionItem>,
    max_visible_rows: usize,
    /// The item whose preview was asked for, and the preview once it came.
    preview_asked: Option<String>,
    preview: Option<ItemPreview>,
    /// Rows found elsewhere for the newest query that answered them (see
    /// [`MentionPopup::set_hits`]), drawn as the last section.
    hits: Option<OfferedRows>,
    /// How many sections the listing's page takes (the hits section comes after them).
    page_sections: usize,
    /// An Enter/Tab waiting for the newest query's answer (until it comes).
    wait: Option<WaitMark>,
}

fn sections_of(page: ResultsPage) -> Vec<Section<MentionItem>> {
    let mut sections = vec![Section {
        kind: SectionKind::Exact,
        title: None,
        total: page.total.max(page.rows.len()),
        rows: page.rows,
    }];
    for offered in page.offered {
        if !offered.rows.is_empty() {
            sections.push(Section::complete(
                SectionKind::Offered,
                Some(offered.title),
                offered.rows,
            ));
        }
    }
    sections
}

impl MentionPopup {
    /// A popup for `token` whose first query `query_id` has just been asked, showing up to
    /// `max_visible_rows` rows at once.
    pub fn new(token: MentionToken, query_id: QueryId, max_visible_rows: usize) -> Self {
        Self {
            token,
            query_id,
            in_flight: true,
            more_id: None,
            listing: Listing::Waiting,
            list: SectionedList::new(ROW_HEIGHT),
            max_visible_rows: max_visible_rows.max(1),
            preview_asked: None,
            preview: None,
            hits: None,
            page_sections: 0,
            wait: None,
        }
    }

    /// Shows that an Enter or Tab waits for the newest query's answer (or gave up); the
    /// mark goes once an answer arrives or the query changes.
    pub(crate) fn set_wait(&mut self, wait: Option<WaitMark>) {
        self.wait = wait;
    }

    /// The token this popup completes.
    pub fn token(&self) -> &MentionToken {
        &self.token
    }

    /// The id of the newest query asked; answers to any other id are stale.
    pub fn query_id(&self) -> QueryId {
        self.query_id
    }

    /// Follows the token after an edit; a changed query needs the new `query_id` asked for
    /// it. Rows stay on show until that answer arrives.
    pub fn update_token(&mut self, token: MentionToken, query_id: Option<QueryId>) {
        if let Some(id) = query_id {
            self.query_id = id;
            self.in_flight = true;
            self.more_id = None;
            self.wait = None;
        }
        self.token = token;
    }

    /// Takes the rows answering `query_id` (all there are); returns false if stale.
    pub fn set_results(&mut self, query_id: QueryId, rows: Vec<MentionItem>) -> bool {
        self.set_page(query_id, ResultsPage::complete(rows))
    }

    /// Takes the page answering `query_id` — a new query, or more rows of the answered one
    /// (then the selection stays); returns false (and changes nothing) if stale.
    pub fn set_page(&mut self, query_id: QueryId, page: ResultsPage) -> bool {
        if self.more_id == Some(query_id) {
            self.more_id = None;
            self.list.extend_section(
                0,
                Section {
                    kind: SectionKind::Exact,
                    title: None,
                    total: page.total.max(page.rows.len()),
                    rows: page.rows,
                },
            );
            return true;
        }
        if query_id != self.query_id || !self.in_flight {
            return false;
        }
        self.in_flight = false;
        self.wait = None;
        self.listing = Listing::Answered;
        let mut sections = sections_of(page);
        self.page_sections = sections.len();
        if let Some(hits) = self.hits_section(&sections[0].rows) {
            sections.push(hits);
        }
        self.list.set_sections(sections);
        true
    }

    /// Replaces the answer already on show for `query_id` with a fresher `page` (e.g. rows
    /// first answered from a remembered page, then from the checked listing); the selected
    /// row stays selected when the new page has it. False (nothing changes) for another
    /// query, before its first answer, or while more rows of it are being fetched.
    pub fn refresh_page(&mut self, query_id: QueryId, page: ResultsPage) -> bool {
        if query_id != self.query_id || self.in_flight || self.more_id.is_some() {
            return false;
        }
        let selected = self.list.selected_row().map(|r| r.key().to_owned());
        let mut sections = sections_of(page);
        self.page_sections = sections.len();
        if let Some(hits) = self.hits_section(&sections[0].rows) {
            sections.push(hits);
        }
        self.list.set_sections(sections);
        if let Some(key) = selected {
            self.list.select_where(|r| r.key() == key);
        }
        true
    }

    /// Takes rows found elsewhere for `query_id` (e.g. sessions whose conversation holds
    /// the query), shown as the last section under `hits.title`, never selected when they
    /// arrive; rows the matches already list are left out. A title with no rows still shows
    /// (e.g. "index building"); no title and no rows removes the section. The rows on show
    /// stay until the newest query answers; returns false (and changes nothing) for an
    /// older query's answer.
    pub fn set_hits(&mut self, query_id: QueryId, hits: OfferedRows) -> bool {
        if query_id != self.query_id {
            return false;
        }
        self.hits = (!hits.title.is_empty() || !hits.rows.is_empty()).then_some(hits);
        self.place_hits();
        true
    }

    /// Changes only the title of the hits section on show (e.g. a progress count), keeping
    /// its rows and the selection.
    pub fn set_hits_title(&mut self, title: impl Into<String>) {
        let Some(hits) = self.hits.as_mut() else {
            return;
        };
        hits.title = title.into();
        let title = hits.title.clone();
        self.list.set_title(self.page_sections, Some(title));
    }

    /// The hits on show, as the host gave them.
    pub fn hits(&self) -> Option<&OfferedRows> {
        self.hits.as_ref()
    }

    /// The hits section, without rows already among `listed`.
    fn hits_section(&self, listed: &[MentionItem]) -> Option<Section<MentionItem>> {
        let hits = self.hits.as_ref()?;
        offered_section(&hits.title, &hits.rows, listed, MentionItem::key)
    }

    /// Puts the hits section after the page's sections.
    fn place_hits(&mut self) {
        let (title, rows) = self
            .hits
            .as_ref()
            .map_or(("", &[][..]), |h| (h.title.as_str(), h.rows.as_slice()));
        self.list
            .place_offered(&mut self.page_sections, title, rows, MentionItem::key);
    }

    /// Takes the failure of `query_id` (shown in place of rows); false if stale.
    pub fn set_failed(&mut self, query_id: QueryId, message: String) -> bool {
        if self.more_id == Some(query_id) {
            // More rows could not be had: the ones on show stay.
            self.more_id = None;
            return true;
        }
        if query_id != self.query_id || !self.in_flight {
            return false;
        }
        self.in_flight = false;
        self.wait = None;
        self.listing = Listing::Failed(message);
        self.list.set_sections(Vec::new());
        self.page_sections = 0;
        if self.hits.is_some() {
            self.place_hits();
        }
        true
    }

    /// Records that `query_id` asks for more rows of the answered query (replacing an
    /// earlier such request).
    pub fn fetching_more(&mut self, query_id: QueryId) {
        self.more_id = Some(query_id);
    }

    /// Whether more rows may be asked for now (the newest query is answered).
    pub fn can_fetch(&self) -> bool {
        !self.in_flight
    }

    /// The matching rows on show (the newest answer's, or an older one's while a query
    /// runs); offered rows are in [`MentionPopup::sections`].
    pub fn rows(&self) -> &[MentionItem] {
        self.list
            .sections()
            .first()
            .map_or(&[], |s| s.rows.as_slice())
    }

    /// Every section on show.
    pub fn sections(&self) -> &[Section<MentionItem>] {
        self.list.sections()
    }

    /// How many rows match in all (not only those fetched).
    pub fn total(&self) -> usize {
        self.list.sections().first().map_or(0, |s| s.total)
    }

    /// Whether the newest query is still unanswered.
    pub fn in_flight(&self) -> bool {
        self.in_flight
    }

    /// The highlighted row, if any: the first match when results arrive, nothing when no
    /// row matches (offered rows are selected only by moving onto them).
    pub fn selected(&self) -> Option<&MentionItem> {
        self.list.selected_row()
    }

    /// What Tab inserts: the selected row, else the first row offered.
    pub fn tab_target(&self) -> Option<&MentionItem> {
        self.list.selected_row().or_else(|| self.list.first_row())
    }

    /// Previous row (wrapping).
    pub fn move_up(&mut self) -> Fetch {
        self.list.move_up()
    }
    /// Next row (wrapping unless more matches can be fetched).
    pub fn move_down(&mut self) -> Fetch {
        self.list.move_down()
    }
    /// A page up.
    pub fn page_up(&mut self) -> Fetch {
        self.list.page_up()
    }
    /// A page down.
    pub fn page_down(&mut self) -> Fetch {
        self.list.page_down()
    }
    /// The first row.
    pub fn home(&mut self) -> Fetch {
        self.list.home()
    }
    /// The last (oldest) match, fetching all of them.
    pub fn end(&mut self) -> Fetch {
        self.list.end()
    }

    /// The key of the selected item when its preview is neither here nor asked for yet
    /// (then it counts as asked).
    pub fn want_preview(&mut self) -> Option<String> {
        let key = self.list.selected_row()?.key().to_string();
        if self.preview_asked.as_deref() == Some(key.as_str()) {
            return None;
        }
        self.preview_asked = Some(key.clone());
        self.preview = None;
        Some(key)
    }

    /// Takes the host's preview; one for an item no longer asked about is dropped.
    pub fn set_preview(&mut self, preview: ItemPreview) -> bool {
        if self.preview_asked.as_deref() != Some(preview.key.as_str()) {
            return false;
        }
        self.preview = Some(preview);
        true
    }

    /// Rows the list wants: two per row plus section titles (at most the visible maximum)
    /// or one message, plus the border.
    pub fn desired_height(&self) -> u16 {
        let body = if self.list.is_empty() {
            1 + self.list.height()
        } else {
            let rows = self.list.row_count();
            let titles = self.list.height() - rows * usize::from(ROW_HEIGHT);
            (rows.min(self.max_visible_rows) * usize::from(ROW_HEIGHT) + titles)
                .min(self.max_visible_rows * usize::from(ROW_HEIGHT) + 1)
        };
        u16::try_from(body + 2).unwrap_or(u16::MAX)
    }

    /// The line shown instead of rows, if there are none to show.
    fn empty_message(&self, labels: &PopupLabels) -> Option<String> {
        if !self.list.is_empty() {
            return None;
        }
        if let Some(wait) = self.wait {
            return Some(wait_label(wait, labels));
        }
        let message = match (&self.listing, self.in_flight) {
            (Listing::Waiting, true) if self.token.query.is_empty() => {
                labels.type_to_filter.clone()
            }
            (_, true) => labels.searching.clone(),
            (Listing::Failed(message), false) => {
                format!("{}: {}", labels.failed, visible_controls_line(message))
            }
            (Listing::Answered | Listing::Waiting, false) => labels.no_match.clone(),
        };
        Some(message)
    }

    /// The bottom-border count: `3/106` on a match, `2/20 <title>` on an offered row,
    /// `<no exact match>` when only offered rows are on show.
    fn position(&self, labels: &PopupLabels) -> Option<String> {
        if let Some(wait) = self.wait.filter(|_| !self.list.is_empty()) {
            return Some(wait_label(wait, labels));
        }
        let total = self.total();
        match self.list.selected() {
            Some(sel) => {
                let section = self.list.sections().get(sel.section)?;
                Some(match &section.title {
                    Some(title) if sel.section > 0 => format!(
                        "{}/{} {}",
                        sel.row + 1,
                        section.total,
                        visible_controls_line(title)
                    ),
                    _ => format!("{}/{}", sel.row + 1, section.total),
                })
            }
            None if total == 0 && !self.list.is_empty() => Some(labels.no_exact_match.clone()),
            None if total > 0 => Some(format!("–/{total}")),
            None => None,
        }
    }

    /// Draws the popup into `area`: the list, and the preview where `placement` puts it
    /// (only while a row is selected).
    pub fn render(
        &self,
        area: Rect,
        buf: &mut Buffer,
        styles: &MentionStyles,
        labels: &PopupLabels,
        placement: Placement,
    ) {
        let placement = if self.list.selected_row().is_some() {
            placement
        } else {
            Placement::Hidden
        };
        let (list_area, preview_area) = preview::split(area, placement);
        let mut block = Block::bordered()
            .border_type(BorderType::Rounded)
            .border_style(styles.popup_border)
            .title(Span::styled(
                visible_controls_line(&labels.title).into_owned(),
                styles.popup_title,
            ));
        if let Some(position) = self.position(labels) {
            block = block.title_bottom(
                Line::styled(format!(" {position} "), styles.popup_border).right_aligned(),
            );
        }
        let inner = block.inner(list_area);
        ratatui::widgets::Clear.render(list_area, buf);
        block.render(list_area, buf);
        if inner.width == 0 || inner.height == 0 {
            return;
        }
        if let Some(message) = self.empty_message(labels) {
            let line = Line::styled(
                format!("  {}", visible_controls_line(&message)),
                styles.message,
            );
            buf.set_line(inner.x, inner.y, &line, inner.width);
            // Titles of sections with no rows yet (e.g. "index building") follow.
            let titles = self
                .list
                .sections()
                .iter()
                .filter_map(|s| s.title.as_deref());
            for (y, title) in (1..inner.height).zip(titles) {
                let line = Line::styled(
                    format!("  {}", visible_controls_line(title)),
                    styles.message,
                );
                buf.set_line(inner.x, inner.y + y, &line, inner.width);
            }
            return;
        }
        let matcher = SkimMatcherV2::default().ignore_case();
        let visible = inner
            .height
            .min(u16::try_from(self.max_visible_rows * 2 + 1).unwrap_or(u16::MAX));
        for placed in self.list.layout(visible) {
            match placed {
                Placed::Title { section, y } => {
                    let title = self
                        .list
                        .sections()
                        .get(section)
                        .and_then(|s| s.title.as_deref())
                        .unwrap_or_default();
                    let line = Line::styled(
                        format!("  {}", visible_controls_line(title)),
                        styles.message,
                    );
                    buf.set_line(inner.x, inner.y + y, &line, inner.width);
                }
                Placed::Row { at, y, selected } => {
                    let Some(section) = self.list.sections().get(at.section) else {
                        continue;
                    };
                    let Some(row) = section.rows.get(at.row) else {
                        continue;
                    };
                    let exact = section.kind == SectionKind::Exact;
                    let label =
                        self.label_line(row, selected, exact, &matcher, inner.width, styles);
                    buf.set_line(inner.x, inner.y + y, &label, inner.width);
                    if y + 1 < inner.height {
                        let second = match row.snippet() {
                            Some(snippet) => snippet_line(
                                snippet,
                                inner.width,
                                styles.detail,
                                styles.detail.patch(styles.matched),
                            ),
                            None => detail_line(row, inner.width, styles.detail),
                        };
                        buf.set_line(inner.x, inner.y + y + 1, &second, inner.width);
                    }
                }
            }
        }
        if let (Some(preview_area), Some(row)) = (preview_area, self.list.selected_row()) {
            let mut lines = vec![
                Line::styled(
                    visible_controls_line(row.label()).into_owned(),
                    styles.popup_title,
                ),
                detail_line(row, preview_area.width.saturating_sub(2), styles.detail),
            ];
            let mut body = Vec::new();
            match self.preview.as_ref().filter(|p| p.key == row.key()) {
                Some(preview) => {
                    lines.extend(preview.lines.iter().cloned());
                    body.clone_from(&preview.body);
                }
                None => lines.push(Line::styled(labels.preview_pending.clone(), styles.message)),
            }
            PreviewPane {
                title: &labels.preview_title,
                header: lines,
                body,
            }
            .render(preview_area, buf);
        }
    }

    /// `› <kind> · <label> ✓` with the chars matching the query highlighted (each word of
    /// the query on its own for offered rows, which need not hold it as typed).
    fn label_line(
        &self,
        row: &MentionItem,
        selected: bool,
        exact: bool,
        matcher: &SkimMatcherV2,
        width: u16,
        styles: &MentionStyles,
    ) -> Line<'static> {
        let label = visible_controls_line(row.label()).into_owned();
        let mut hit_chars: Vec<usize> = if self.token.query.is_empty() {
            Vec::new()
        } else if exact {
            matcher
                .fuzzy_indices(&label, &self.token.query)
                .map(|(_, indices)| indices)
                .unwrap_or_default()
        } else {
            self.token
                .query
                .split(|c: char| c.is_whitespace() || matches!(c, '-' | '_' | '/' | '.'))
                .filter(|w| !w.is_empty())
                .filter_map(|w| matcher.fuzzy_indices(&label, w))
                .flat_map(|(_, indices)| indices)
                .collect()
        };
        hit_chars.sort_unstable();
        hit_chars.dedup();
        let base = if selected {
            styles.label.patch(styles.selected)
        } else {
            styles.label
        };
        let hit = base.patch(styles.matched);
        let marker = if selected {
            Span::styled(MARKER, styles.marker)
        } else {
            Span::raw(" ".repeat(MARKER.width()))
        };
        let mut spans = vec![marker];
        let mut prefix_width = MARKER.width();
        if !row.kind().is_empty() {
            let kind = format!("{}{SEPARATOR}", visible_controls_line(row.kind()));
            prefix_width += kind.width();
            spans.push(Span::styled(kind, base.patch(styles.kind)));
        }
        let mark = if row.is_marked() { MARK } else { "" };
        let room = usize::from(width).saturating_sub(prefix_width + mark.width());
        let label = truncate_to_width(&label, room);
        let mut run = String::new();
        let mut run_hit = false;
        for (index, c) in label.chars().enumerate() {
            let is_hit = hit_chars.binary_search(&index).is_ok() && c != '…';
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
        if !mark.is_empty() {
            spans.push(Span::styled(mark, styles.detail));
        }
        Line::from(spans)
    }
}

/// What the popup says while an Enter/Tab waits, or once the wait ran out.
fn wait_label(wait: WaitMark, labels: &PopupLabels) -> String {
    match wait {
        WaitMark::Waiting => labels.searching.clone(),
        WaitMark::GaveUp => labels.still_searching.clone(),
    }
}

/// Shown after the label of an item the host marked (e.g. already mentioned).
const MARK: &str = " ✓";

/// The dim detail line, parts joined with ` · `; when too wide, the parts that may be cut
/// share the room left by the whole ones, each cut from the side its [`Keep`] gives up.
fn detail_line(row: &MentionItem, width: u16, style: Style) -> Line<'static> {
    let parts: Vec<(String, Keep)> = row
        .detail()
        .iter()
        .map(|p| (visible_controls_line(&p.text).into_owned(), p.keep))
        .collect();
    let room = usize::from(width).saturating_sub(DETAIL_INDENT.len());
    let fixed: usize = parts
        .iter()
        .filter(|(_, keep)| *keep == Keep::Whole)
        .map(|(text, _)| text.width())
        .sum::<usize>()
        + parts.len().saturating_sub(1) * SEPARATOR.width();
    let rest = room.saturating_sub(fixed);
    let flexible: Vec<usize> = parts
        .iter()
        .filter(|(_, keep)| *keep != Keep::Whole)
        .map(|(text, _)| text.width())
        .collect();
    let mut shares = share(rest, &flexible).into_iter();
    let mut text = String::from(DETAIL_INDENT);
    for (i, (part, keep)) in parts.iter().enumerate() {
        if i > 0 {
            text.push_str(SEPARATOR);
        }
        match keep {
            Keep::Whole => text.push_str(part),
            Keep::Start => {
                let cells = shares.next().unwrap_or(0).max(MIN_PART_CELLS);
                text.push_str(&truncate_to_width(part, cells));
            }
            Keep::End => {
                let cells = shares.next().unwrap_or(0).max(MIN_PART_CELLS);
                text.push_str(&truncate_start_to_width(part, cells));
            }
        }
    }
    Line::styled(text, style)
}

/// The selected row's marker (an unselected row has as many spaces).
const MARKER: &str = "› ";
const DETAIL_INDENT: &str = "    ";
const SEPARATOR: &str = " · ";
/// Fewest cells a cut detail part is cut down to.
const MIN_PART_CELLS: usize = 8;

/// Splits `room` cells between parts that want `wants` cells: the narrowest parts that fit
/// in an equal share keep their width, the others split what is left equally (the later
/// ones get the odd cells).
fn share(room: usize, wants: &[usize]) -> Vec<usize> {
    let mut out = vec![0; wants.len()];
    let mut order: Vec<usize> = (0..wants.len()).collect();
    order.sort_by_key(|&i| wants[i]);
    let mut left = room;
    for (k, &i) in order.iter().enumerate() {
        let fair = left / (wants.len() - k);
        if wants[i] <= fair {
            out[i] = wants[i];
            left -= wants[i];
            continue;
        }
        let mut rest: Vec<usize> = order[k..].to_vec();
        rest.sort_unstable();
        let (each, odd) = (left / rest.len(), left % rest.len());
        for (j, &index) in rest.iter().enumerate() {
            out[index] = each + usize::from(j >= rest.len() - odd);
        }
        break;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::item::DetailPart;
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
    fn room_is_shared_between_parts() {
        let cases: &[(usize, &[usize], &[usize])] = &[
            (40, &[10, 10], &[10, 10]),
            (40, &[5, 50], &[5, 35]),
            (40, &[50, 5], &[35, 5]),
            (40, &[30, 30], &[20, 20]),
            (41, &[30, 30], &[20, 21]),
            (40, &[15, 30], &[15, 25]),
            (40, &[25, 10], &[25, 10]),
            (0, &[3, 3], &[0, 0]),
            (30, &[4, 40, 40], &[4, 13, 13]),
            (31, &[40, 4, 40], &[13, 4, 14]),
            (10, &[], &[]),
            (10, &[30], &[10]),
        ];
        for (room, wants, want) in cases {
            assert_eq!(share(*room, wants), *want, "{room} {wants:?}");
        }
    }

    fn item(label: &str) -> MentionItem {
        MentionItem::new(label, label, format!("@{label}"))
    }

    fn token(query: &str) -> MentionToken {
        MentionToken {
            start_char: 0,
            end_char: query.chars().count() + 1,
            query: query.to_string(),
        }
    }

    #[test]
    fn stale_and_repeated_answers_are_dropped() {
        let mut popup = MentionPopup::new(token("a"), 1, 8);
        assert!(!popup.set_results(0, vec![item("old")]), "older id");
        assert!(popup.set_results(1, vec![item("a")]));
        assert!(!popup.set_results(1, vec![item("b")]), "answered already");
        popup.update_token(token("ab"), Some(2));
        assert_eq!(
            popup.selected().map(MentionItem::key),
            Some("a"),
            "kept while in flight"
        );
        assert!(popup.set_failed(2, "down".into()));
        assert_eq!(popup.selected(), None);
        assert_eq!(popup.desired_height(), 3, "one message row");
    }

    #[test]
    fn a_refreshed_page_replaces_the_answer_and_keeps_the_selected_row() {
        let mut popup = MentionPopup::new(token(""), 1, 8);
        let page = |keys: &[&str], total: usize| ResultsPage {
            rows: keys.iter().map(|k| item(k)).collect(),
            total,
            offered: Vec::new(),
        };
        assert!(!popup.refresh_page(1, page(&["x"], 1)), "not answered yet");
        assert!(popup.set_page(1, page(&["a", "b", "c"], 3)));
        popup.move_down();
        assert_eq!(popup.selected().map(MentionItem::key), Some("b"));
        assert!(!popup.refresh_page(0, page(&["x"], 1)), "another query");
        assert!(popup.refresh_page(1, page(&["new", "a", "b", "c"], 40)));
        assert_eq!(popup.selected().map(MentionItem::key), Some("b"), "still b");
        assert_eq!(popup.total(), 40);
        assert!(popup.refresh_page(1, page(&["p", "q"], 2)));
        assert_eq!(
            popup.selected().map(MentionItem::key),
            Some("p"),
            "b is gone: the first row, as for a new answer"
        );
    }

    #[test]
    fn detail_parts_keep_their_ends() {
        let row = item("x").with_detail(vec![
            DetailPart::new("2026-11-20T09-30-00-very-long-id", Keep::Start),
            DetailPart::new("/home/ana/src/billing-service", Keep::End),
            DetailPart::new("2026-11-20 09:30", Keep::Whole),
        ]);
        let line = detail_line(&row, 60, Style::new()).to_string();
        assert_eq!(
            line,
            "    2026-11-20T09-30… · …/billing-service · 2026-11-20 09:30"
        );
        assert_eq!(line.width(), 60);
        let bare = detail_line(&item("y"), 20, Style::new()).to_string();
        assert_eq!(bare, "    ");
    }
}
