//! The `@` popup: the host's rows for the token being typed, with characters matching the
//! query highlighted, a bounded number of rows visible, and the empty states.

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
use crate::untrusted::visible_controls_line;
use crate::wrap::{truncate_start_to_width, truncate_to_width};

/// A query the widget asked the host to answer, named by a per-widget increasing id.
pub type QueryId = u64;

/// The last answer the popup received.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Listing {
    /// No answer yet for any query of this popup.
    Waiting,
    Rows(Vec<MentionItem>),
    Failed(String),
}

/// State of an open popup: its token, the query in flight and the rows on show.
#[derive(Debug, Clone)]
pub struct MentionPopup {
    token: MentionToken,
    query_id: QueryId,
    in_flight: bool,
    listing: Listing,
    selected: usize,
    scroll_top: usize,
    max_visible_rows: usize,
}

impl MentionPopup {
    /// A popup for `token` whose first query `query_id` has just been asked, showing up to
    /// `max_visible_rows` rows at once.
    pub fn new(token: MentionToken, query_id: QueryId, max_visible_rows: usize) -> Self {
        Self {
            token,
            query_id,
            in_flight: true,
            listing: Listing::Waiting,
            selected: 0,
            scroll_top: 0,
            max_visible_rows: max_visible_rows.max(1),
        }
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
        }
        self.token = token;
    }

    /// Takes the rows answering `query_id`; returns false (and changes nothing) if stale.
    pub fn set_results(&mut self, query_id: QueryId, rows: Vec<MentionItem>) -> bool {
        self.answer(query_id, Listing::Rows(rows))
    }

    /// Takes the failure of `query_id` (shown in place of rows); false if stale.
    pub fn set_failed(&mut self, query_id: QueryId, message: String) -> bool {
        self.answer(query_id, Listing::Failed(message))
    }

    fn answer(&mut self, query_id: QueryId, listing: Listing) -> bool {
        if query_id != self.query_id || !self.in_flight {
            return false;
        }
        self.in_flight = false;
        self.listing = listing;
        self.selected = 0;
        self.scroll_top = 0;
        true
    }

    /// The rows on show (the newest answer's, or an older one's while a query runs).
    pub fn rows(&self) -> &[MentionItem] {
        match &self.listing {
            Listing::Rows(rows) => rows,
            Listing::Waiting | Listing::Failed(_) => &[],
        }
    }

    /// Whether the newest query is still unanswered.
    pub fn in_flight(&self) -> bool {
        self.in_flight
    }

    /// The highlighted row, if any row is on show.
    pub fn selected(&self) -> Option<&MentionItem> {
        self.rows().get(self.selected)
    }

    /// The highlighted row's index into [`MentionPopup::rows`].
    pub fn selected_index(&self) -> usize {
        self.selected
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
        self.scroll_top = visible_top(self.scroll_top, self.selected, self.max_visible_rows);
    }

    /// Rows the popup wants: two per item (at most the visible maximum) or one message,
    /// plus the border.
    pub fn desired_height(&self) -> u16 {
        let rows = self.rows().len().min(self.max_visible_rows);
        let body = if rows == 0 { 1 } else { rows * 2 };
        u16::try_from(body + 2).unwrap_or(u16::MAX)
    }

    /// The line shown instead of rows, if there are none to show.
    fn empty_message(&self, labels: &PopupLabels) -> Option<String> {
        if !self.rows().is_empty() {
            return None;
        }
        let message = match (&self.listing, self.in_flight) {
            (Listing::Waiting, true) if self.token.query.is_empty() => {
                labels.type_to_filter.clone()
            }
            (_, true) => labels.searching.clone(),
            (Listing::Failed(message), false) => {
                format!("{}: {}", labels.failed, visible_controls_line(message))
            }
            (Listing::Rows(_) | Listing::Waiting, false) => labels.no_match.clone(),
        };
        Some(message)
    }

    /// Draws the popup into `area`, fitting as many rows as the area allows.
    pub fn render(
        &self,
        area: Rect,
        buf: &mut Buffer,
        styles: &MentionStyles,
        labels: &PopupLabels,
    ) {
        let rows = self.rows();
        let mut block = Block::bordered()
            .border_type(BorderType::Rounded)
            .border_style(styles.popup_border)
            .title(Span::styled(
                visible_controls_line(&labels.title).into_owned(),
                styles.popup_title,
            ));
        if !rows.is_empty() {
            let position = format!(" {}/{} ", self.selected + 1, rows.len());
            block = block.title_bottom(Line::styled(position, styles.popup_border).right_aligned());
        }
        let inner = block.inner(area);
        ratatui::widgets::Clear.render(area, buf);
        block.render(area, buf);
        if inner.width == 0 || inner.height == 0 {
            return;
        }
        if let Some(message) = self.empty_message(labels) {
            let line = Line::styled(
                format!("  {}", visible_controls_line(&message)),
                styles.message,
            );
            buf.set_line(inner.x, inner.y, &line, inner.width);
            return;
        }
        let fit = usize::from(inner.height.div_ceil(2)).clamp(1, self.max_visible_rows);
        let top = visible_top(self.scroll_top, self.selected, fit);
        let matcher = SkimMatcherV2::default();
        for (i, row) in rows.iter().enumerate().skip(top).take(fit) {
            let Ok(offset) = u16::try_from((i - top) * 2) else {
                break;
            };
            let y = inner.y + offset;
            let selected = i == self.selected;
            let label = self.label_line(row, selected, &matcher, inner.width, styles);
            buf.set_line(inner.x, y, &label, inner.width);
            if offset + 1 < inner.height {
                buf.set_line(
                    inner.x,
                    y + 1,
                    &detail_line(row, inner.width, styles.detail),
                    inner.width,
                );
            }
        }
    }

    /// `› <kind> · <label>` with the chars matching the query highlighted.
    fn label_line(
        &self,
        row: &MentionItem,
        selected: bool,
        matcher: &SkimMatcherV2,
        width: u16,
        styles: &MentionStyles,
    ) -> Line<'static> {
        let label = visible_controls_line(row.label()).into_owned();
        let hit_chars: Vec<usize> = if self.token.query.is_empty() {
            Vec::new()
        } else {
            matcher
                .fuzzy_indices(&label, &self.token.query)
                .map(|(_, indices)| indices)
                .unwrap_or_default()
        };
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
        let room = usize::from(width).saturating_sub(prefix_width);
        let label = truncate_to_width(&label, room);
        let mut run = String::new();
        let mut run_hit = false;
        for (index, c) in label.chars().enumerate() {
            let is_hit = hit_chars.contains(&index) && c != '…';
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
}

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
