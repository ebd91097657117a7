//! Mention autocomplete on a host's own [`ratatui_textarea::TextArea`] (feature
//! `textarea`): the token at the textarea's cursor opens the same popup over the same
//! results list as [`crate::MentionInputState`], with the same query lifecycle (stale
//! answers dropped, `More` paging, Enter/Tab waiting for the newest answer); a pick replaces
//! the token through the textarea's own edit operations, so its undo and yank keep working.
//!
//! Finished mentions (what the configured [`crate::MentionSyntax`] finds on a line) are
//! atomic here too: the caret steps over a mention in one move (it never rests inside
//! one); one Backspace before it or one Delete after it removes the whole mention, and a
//! word or line deletion that would cut into one removes it whole, each as one undoable
//! edit. Drawn with [`TextAreaMentions::widget`] (in place of the textarea itself) a
//! mention shows as its chip (`#ui`), and Up/Down move by the rows the chips make. The host
//! reads the mentions back with [`crate::MentionConfig::find_mentions`].

use std::cell::Cell;
use std::ops::Range;
use std::time::Instant;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::widgets::StatefulWidget;
use ratatui_textarea::{CursorMove, TextArea};

use crate::config::{MentionConfig, MentionStyles, PopupLabels};
use crate::grammar::Grammar;
use crate::item::MentionItem;
use crate::mention_token::{MentionToken, mention_token_at};
use crate::preview::Placement;
use crate::results::{
    EnterAction, Held, PopupKey, QueryId, ResultsList, ResultsPage, Section, Timers, WaitHost,
    WaitingKey, resume, tick,
};
use crate::results_view::{self, Look};
use crate::state::Outcome;
use crate::textarea_view::{MentionTextArea, ViewState, byte_of, caret_byte, col_of, layout_line};
use term_text::visible_controls_line;

/// The mention popup of one textarea, kept by the host next to it.
#[derive(Debug, Clone)]
pub struct TextAreaMentions {
    config: MentionConfig,
    /// The triggers and syntaxes of `config`.
    grammar: Grammar,
    results: ResultsList<MentionItem>,
    /// The token the popup completes: its row, and the token within that line.
    token: Option<(usize, MentionToken)>,
    /// The `(row, start)` of the token whose popup the user closed with Esc.
    dismissed: Option<(usize, usize)>,
    /// What the last [`Self::widget`] drawing left: its viewport and the caret's cell.
    view: Cell<ViewState>,
}

impl Default for TextAreaMentions {
    fn default() -> Self {
        Self::new(MentionConfig::default())
    }
}

impl TextAreaMentions {
    /// Mentions with `config`'s triggers, popup keys, URIs and answer wait (its composer
    /// settings do not apply: the textarea is the editor).
    pub fn new(config: MentionConfig) -> Self {
        let mut results = ResultsList::new();
        results.set_timers(Timers {
            answer_wait: config.answer_wait,
            slow_answer: config.slow_answer,
        });
        TextAreaMentions {
            grammar: config.grammar(),
            config,
            results,
            token: None,
            dismissed: None,
            view: Cell::new(ViewState::default()),
        }
    }

    /// The widget that draws `textarea` with its mentions as chips (`#[ui](tag:ui)` shown
    /// `#ui`): render it where you rendered the textarea, in the textarea's own look (block,
    /// styles, selection, line numbers, placeholder, wrap mode). It keeps the caret on
    /// screen, at the cell the chips put it in.
    ///
    /// ```
    /// use ratatui::{buffer::Buffer, layout::Rect, widgets::Widget};
    /// use ratatui_mention::{MentionConfig, TextAreaMentions};
    /// use ratatui_textarea::TextArea;
    ///
    /// let textarea = TextArea::from(["see #[ui](tag:ui) now"]);
    /// let mentions = TextAreaMentions::new(
    ///     MentionConfig::default().with_triggers(['#']).with_uri_scheme("tag:"),
    /// );
    /// let area = Rect::new(0, 0, 20, 1);
    /// let mut buf = Buffer::empty(area);
    /// mentions.widget(&textarea).render(area, &mut buf);
    /// let shown: String = buf.content.iter().map(|cell| cell.symbol()).collect();
    /// assert_eq!(shown, "see #ui now         ");
    /// ```
    pub fn widget<'v>(&'v self, textarea: &'v TextArea<'_>) -> MentionTextArea<'v> {
        MentionTextArea::new(textarea, &self.grammar, &self.view)
    }

    /// Where [`Self::widget`] last drew the caret (for the terminal cursor, e.g. an input
    /// method's window); `None` before the first drawing or when it was off screen.
    pub fn cursor_position(&self) -> Option<Position> {
        self.view.get().cursor
    }

    /// The configuration in use.
    pub fn config(&self) -> &MentionConfig {
        &self.config
    }

    /// Handles one terminal event for `textarea`: with the popup open its keys (moves, Tab,
    /// Enter, Esc) go to the popup; everything else is the textarea's input. Returns what
    /// happened, as [`crate::MentionInputState::handle_event`] does (`Query` when the
    /// token's query changed; `Ignored` for events neither takes).
    pub fn handle_event(&mut self, textarea: &mut TextArea<'_>, event: &Event) -> Outcome {
        match event {
            Event::Key(key) => self.handle_key(textarea, *key),
            Event::Paste(text) => {
                if self.results.hold(Held::Paste(text.clone())) {
                    return Outcome::Consumed;
                }
                textarea.insert_str(text);
                self.sync(textarea, Outcome::Changed)
            }
            Event::FocusGained | Event::FocusLost | Event::Mouse(_) | Event::Resize(_, _) => {
                Outcome::Ignored
            }
        }
    }

    fn handle_key(&mut self, textarea: &mut TextArea<'_>, key: KeyEvent) -> Outcome {
        if key.kind == KeyEventKind::Release {
            return Outcome::Ignored;
        }
        if self.results.hold(Held::Key(key)) {
            return Outcome::Consumed;
        }
        if let Some((row, token)) = &self.token {
            let dismissed = (*row, token.start_char);
            let action = self.config.key_map.classify(&key);
            // Enter with no row, and the preview key, are the textarea's.
            match self.results.popup_key(action) {
                PopupKey::Moved(more) => return more.map_or(Outcome::Changed, Outcome::from),
                PopupKey::Wait(id) => return Outcome::Waiting { id },
                PopupKey::Take => return self.insert(textarea),
                PopupKey::Nothing => return Outcome::Consumed,
                PopupKey::Escape => {
                    self.dismissed = Some(dismissed);
                    self.close();
                    return Outcome::Changed;
                }
                PopupKey::AsTyped | PopupKey::TogglePreview | PopupKey::Pass => {}
            }
        }
        if textarea.selection_range().is_none()
            && let Some((row, chip)) = self.chip_deleted_by(textarea, &key)
        {
            // One edit removes the whole mention (one undo brings it back).
            if let (Ok(r), Ok(c)) = (u16::try_from(row), u16::try_from(chip.start)) {
                textarea.move_cursor(CursorMove::Jump(r, c));
                textarea.delete_str(chip.len());
                return self.sync(textarea, Outcome::Changed);
            }
        }
        if let Some((row, col)) = self.vertical_target(textarea, &key) {
            if key.modifiers.contains(KeyModifiers::SHIFT) {
                if textarea.selection_range().is_none() {
                    textarea.start_selection();
                }
            } else {
                textarea.cancel_selection();
            }
            if let (Ok(r), Ok(c)) = (u16::try_from(row), u16::try_from(col)) {
                textarea.move_cursor(CursorMove::Jump(r, c));
                return self.sync(textarea, Outcome::Changed);
            }
        }
        let before = (textarea.cursor().0, textarea.cursor().1);
        let lines_before = textarea.lines().len();
        let edited_line = textarea.lines().get(before.0).cloned().unwrap_or_default();
        let modified = textarea.input(key);
        if modified {
            self.keep_mentions_whole(textarea, before.0, &edited_line, lines_before);
        }
        self.step_over_chip(textarea, before);
        let after = (textarea.cursor().0, textarea.cursor().1);
        if !modified && before == after && lines_before == textarea.lines().len() {
            return Outcome::Ignored;
        }
        self.sync(textarea, Outcome::Changed)
    }

    /// The char columns of the finished mentions on line `row`.
    fn chips_on(&self, textarea: &TextArea<'_>, row: usize) -> Vec<Range<usize>> {
        let line = textarea.lines().get(row).map_or("", String::as_str);
        self.grammar
            .spans(line)
            .into_iter()
            .map(|span| col_of(line, span.start)..col_of(line, span.end))
            .collect()
    }

    /// Where Up or Down (Ctrl+P, Ctrl+N) takes the caret in the chip view [`Self::widget`]
    /// last drew: the row above or below, the column nearest the caret's (`None`: the
    /// view was never drawn, the key is another, or there is no row there).
    fn vertical_target(&self, textarea: &TextArea<'_>, key: &KeyEvent) -> Option<(usize, usize)> {
        let width = self.view.get().width;
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if width == 0 || key.modifiers.contains(KeyModifiers::ALT) {
            return None;
        }
        let up = match key.code {
            KeyCode::Up if !ctrl => true,
            KeyCode::Down if !ctrl => false,
            KeyCode::Char('p') if ctrl => true,
            KeyCode::Char('n') if ctrl => false,
            _ => return None,
        };
        let (line, col) = (textarea.cursor().0, textarea.cursor().1);
        let lines = textarea.lines();
        let mode = textarea.wrap_mode();
        let text = lines.get(line)?;
        let layout = layout_line(&self.grammar, text, width, mode);
        let (row, x) = layout.caret(caret_byte(&self.grammar, text, col));
        let (to_line, to_row) = match up {
            true if row > 0 => (line, row - 1),
            true => (line.checked_sub(1)?, usize::MAX),
            false if row + 1 < layout.rows.len() => (line, row + 1),
            false if line + 1 < lines.len() => (line + 1, 0),
            false => return None,
        };
        let to_text = lines.get(to_line)?;
        let to_layout = if to_line == line {
            layout
        } else {
            layout_line(&self.grammar, to_text, width, mode)
        };
        let to_row = to_row.min(to_layout.rows.len().saturating_sub(1));
        Some((to_line, col_of(to_text, to_layout.offset_at(to_row, x))))
    }

    /// After an edit of line `row` (`before` its text, `lines_before` the line count): a
    /// deletion that cut into a mention (a word or line deletion, a cut) is made again so
    /// it removes the mention whole, as one undoable edit.
    fn keep_mentions_whole(
        &self,
        textarea: &mut TextArea<'_>,
        row: usize,
        before: &str,
        lines_before: usize,
    ) {
        let (r, col) = (textarea.cursor().0, textarea.cursor().1);
        let Some(after) = textarea.lines().get(row) else {
            return;
        };
        let cut = before.chars().count().saturating_sub(after.chars().count());
        if r != row || textarea.lines().len() != lines_before || cut == 0 {
            return;
        }
        let start = byte_of(before, col);
        let end = byte_of(before, col + cut);
        let pure_deletion =
            before.get(..start) == after.get(..start) && before.get(end..) == after.get(start..);
        if !pure_deletion {
            return;
        }
        let mut whole = start..end;
        for span in self.grammar.spans(before) {
            if span.start < whole.end && whole.start < span.end {
                whole = whole.start.min(span.start)..whole.end.max(span.end);
            }
        }
        if whole == (start..end) {
            return;
        }
        let chars = before.get(whole.clone()).map_or(0, |t| t.chars().count());
        if let (Ok(r), Ok(c)) = (
            u16::try_from(row),
            u16::try_from(col_of(before, whole.start)),
        ) {
            textarea.undo();
            textarea.move_cursor(CursorMove::Jump(r, c));
            textarea.delete_str(chars);
        }
    }

    /// The mention `key` deletes as a whole (its row and char columns): Backspace (or
    /// Ctrl+H) right after one, Delete (or Ctrl+D) right before one.
    fn chip_deleted_by(
        &self,
        textarea: &TextArea<'_>,
        key: &KeyEvent,
    ) -> Option<(usize, Range<usize>)> {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        if alt {
            return None;
        }
        let backward = match key.code {
            KeyCode::Backspace if !ctrl => true,
            KeyCode::Char('h') if ctrl => true,
            KeyCode::Delete if !ctrl => false,
            KeyCode::Char('d') if ctrl => false,
            _ => return None,
        };
        let (row, col) = (textarea.cursor().0, textarea.cursor().1);
        self.chips_on(textarea, row)
            .into_iter()
            .find(|chip| {
                if backward {
                    chip.end == col
                } else {
                    chip.start == col
                }
            })
            .map(|chip| (row, chip))
    }

    /// A caret that came to rest inside a mention moves on to its edge: its end when it
    /// moved forward from `before`, its start when it moved back.
    fn step_over_chip(&self, textarea: &mut TextArea<'_>, before: (usize, usize)) {
        let (row, col) = (textarea.cursor().0, textarea.cursor().1);
        let Some(chip) = self
            .chips_on(textarea, row)
            .into_iter()
            .find(|chip| chip.start < col && col < chip.end)
        else {
            return;
        };
        let edge = if (row, col) > before {
            chip.end
        } else {
            chip.start
        };
        if let (Ok(r), Ok(c)) = (u16::try_from(row), u16::try_from(edge)) {
            textarea.move_cursor(CursorMove::Jump(r, c));
        }
    }

    /// Delivers the page answering query `id` (see [`crate::MentionInputState::set_page`]);
    /// returns what an Enter or Tab waiting for it did, and the inputs held meanwhile.
    #[must_use = "a Tab that waited for this answer may have inserted a mention"]
    pub fn set_page(
        &mut self,
        textarea: &mut TextArea<'_>,
        id: QueryId,
        page: ResultsPage,
    ) -> Vec<Outcome> {
        if self.token.is_none() || !self.results.set_page(id, page) {
            return Vec::new();
        }
        resume(&mut Bound(self, textarea), id)
    }

    /// [`Self::set_page`] with exactly `rows`.
    #[must_use = "a Tab that waited for this answer may have inserted a mention"]
    pub fn set_results(
        &mut self,
        textarea: &mut TextArea<'_>,
        id: QueryId,
        rows: Vec<MentionItem>,
    ) -> Vec<Outcome> {
        self.set_page(textarea, id, ResultsPage::complete(rows))
    }

    /// Delivers the failure of query `id`.
    #[must_use = "held inputs may have changed the text"]
    pub fn set_failed(
        &mut self,
        textarea: &mut TextArea<'_>,
        id: QueryId,
        message: impl Into<String>,
    ) -> Vec<Outcome> {
        if self.token.is_none() || !self.results.set_failed(id, message) {
            return Vec::new();
        }
        resume(&mut Bound(self, textarea), id)
    }

    /// Delivers rows found elsewhere for query `id`, as the popup's last section; returns
    /// what an Enter or Tab waiting for them did (see
    /// [`crate::MentionInputState::expect_late_section`]).
    #[must_use = "a Tab that waited for these rows may have inserted a mention"]
    pub fn set_late_section(
        &mut self,
        textarea: &mut TextArea<'_>,
        id: QueryId,
        hits: Section,
    ) -> Vec<Outcome> {
        if self.token.is_none() || !self.results.set_late_section(id, hits) {
            return Vec::new();
        }
        resume(&mut Bound(self, textarea), id)
    }

    /// Says that rows found elsewhere for query `id` will come (see
    /// [`crate::MentionInputState::expect_late_section`]).
    pub fn expect_late_section(&mut self, id: QueryId) {
        if self.token.is_some() {
            self.results.expect_late_section(id);
        }
    }

    /// Runs the popup's timers at `now` (see [`crate::MentionInputState::tick`]): a Tab
    /// or Enter that waited too long gives up, rows of an older query on show too long make
    /// way for "searching…".
    #[must_use = "held inputs may have changed the text"]
    pub fn tick(&mut self, textarea: &mut TextArea<'_>, now: Instant) -> Vec<Outcome> {
        if self.token.is_none() {
            return Vec::new();
        }
        tick(&mut Bound(self, textarea), now)
    }

    /// When [`Self::tick`] has something to do next (`None`: no timer runs).
    pub fn next_tick(&self) -> Option<Instant> {
        self.token.as_ref().and_then(|_| self.results.next_tick())
    }

    /// The open popup's results (query and id, rows, selection).
    pub fn results(&self) -> Option<&ResultsList<MentionItem>> {
        self.token.as_ref().map(|_| &self.results)
    }

    /// Whether the popup is open (Esc and the move keys go to it first).
    pub fn popup_active(&self) -> bool {
        self.token.is_some()
    }

    /// Rows the popup wants (0 when closed).
    pub fn popup_height(&self) -> u16 {
        if self.token.is_none() {
            return 0;
        }
        let body = results_view::body_height(&self.results, self.config.max_visible_rows);
        u16::try_from(body + 2).unwrap_or(u16::MAX)
    }

    fn close(&mut self) {
        self.token = None;
        self.results.clear();
    }

    /// The token becomes the highlighted row's text and a space (no space for a row that
    /// continues: the popup then asks for its rows), through the textarea's own edits: jump
    /// to the token, delete it, insert (each undoable). Nothing for a blocked row.
    fn insert(&mut self, textarea: &mut TextArea<'_>) -> Outcome {
        let Some((row, token)) = self.token.clone() else {
            return Outcome::Consumed;
        };
        let Some(item) = self.results.selected().filter(|r| r.blocked().is_none()) else {
            return Outcome::Consumed;
        };
        let written = item.written(&self.grammar, token.trigger);
        let text = visible_controls_line(&written).into_owned();
        let key = item.key().to_owned();
        let space = if item.continues() { "" } else { " " };
        let (Ok(r), Ok(c)) = (u16::try_from(row), u16::try_from(token.start_char)) else {
            return Outcome::Consumed;
        };
        textarea.cancel_selection();
        textarea.move_cursor(CursorMove::Jump(r, c));
        textarea.delete_str(token.end_char - token.start_char);
        textarea.insert_str(format!("{text}{space}"));
        self.close();
        self.sync(textarea, Outcome::Inserted { key, text })
    }

    /// Recomputes the popup from the token at the textarea's cursor; a new or changed query
    /// is returned in place of `result`.
    fn sync(&mut self, textarea: &TextArea<'_>, result: Outcome) -> Outcome {
        let (row, col) = (textarea.cursor().0, textarea.cursor().1);
        let line = textarea.lines().get(row).map_or("", String::as_str);
        let Some(token) = mention_token_at(line, col, &self.grammar) else {
            if self.token.is_some() {
                self.close();
            }
            self.dismissed = None;
            return result;
        };
        if self.dismissed == Some((row, token.start_char)) {
            if self.token.is_some() {
                self.close();
            }
            return result;
        }
        self.dismissed = None;
        match &self.token {
            Some((open_row, open))
                if *open_row == row
                    && open.start_char == token.start_char
                    && open.trigger == token.trigger =>
            {
                let same = open.query == token.query;
                self.token = Some((row, token.clone()));
                if same {
                    return result;
                }
            }
            _ => {
                self.close();
                self.token = Some((row, token.clone()));
            }
        }
        let id = self.results.ask(token.query.clone());
        Outcome::Query {
            id,
            text: token.query,
            trigger: token.trigger,
        }
    }
}

/// The mentions of one textarea bound to it, for a key that waited and the inputs held.
struct Bound<'a, 'b, 't>(&'a mut TextAreaMentions, &'b mut TextArea<'t>);

impl WaitHost for Bound<'_, '_, '_> {
    type Out = Outcome;

    fn results(&mut self) -> &mut ResultsList<MentionItem> {
        &mut self.0.results
    }

    /// Enter or Tab inserts the highlighted row (none: nothing to do but redraw).
    fn act(&mut self, _: WaitingKey) -> Outcome {
        let Bound(mentions, textarea) = self;
        let acted = match mentions.results.enter_action() {
            EnterAction::Take => mentions.insert(textarea),
            _ => Outcome::Changed,
        };
        if acted == Outcome::Consumed {
            Outcome::Changed
        } else {
            acted
        }
    }

    fn key(&mut self, key: KeyEvent) -> Outcome {
        self.0.handle_key(self.1, key)
    }

    fn paste(&mut self, text: &str) -> Outcome {
        self.0.handle_event(self.1, &Event::Paste(text.to_owned()))
    }

    fn changed() -> Outcome {
        Outcome::Changed
    }
}

/// Draws a [`TextAreaMentions`] popup next to the textarea: above `anchor` (the textarea's
/// area) when the area given has the room, else below it; nothing while it is closed.
#[derive(Debug, Clone)]
pub struct TextAreaPopup<'a> {
    anchor: Rect,
    styles: MentionStyles,
    labels: std::borrow::Cow<'a, PopupLabels>,
}

impl<'a> TextAreaPopup<'a> {
    /// A popup beside `anchor`, the area the textarea is drawn in.
    pub fn new(anchor: Rect) -> Self {
        TextAreaPopup {
            anchor,
            styles: MentionStyles::default(),
            labels: std::borrow::Cow::Owned(PopupLabels::default()),
        }
    }

    /// Draws with `styles`.
    #[must_use]
    pub fn styles(mut self, styles: MentionStyles) -> Self {
        self.styles = styles;
        self
    }

    /// Shows `labels`.
    #[must_use]
    pub fn labels(mut self, labels: impl Into<std::borrow::Cow<'a, PopupLabels>>) -> Self {
        self.labels = labels.into();
        self
    }
}

impl StatefulWidget for TextAreaPopup<'_> {
    type State = TextAreaMentions;

    /// Draws the popup inside `area` (usually the frame), beside the anchor.
    fn render(self, area: Rect, buf: &mut Buffer, state: &mut TextAreaMentions) {
        let wanted = state.popup_height();
        if wanted == 0 {
            return;
        }
        let above = self.anchor.y.saturating_sub(area.y);
        let below = area.bottom().saturating_sub(self.anchor.bottom());
        let rect = if above >= wanted || above >= below {
            let height = wanted.min(above);
            Rect::new(
                self.anchor.x,
                self.anchor.y - height,
                self.anchor.width,
                height,
            )
        } else {
            Rect::new(
                self.anchor.x,
                self.anchor.bottom(),
                self.anchor.width,
                wanted.min(below),
            )
        };
        let rect = rect.intersection(area);
        if rect.height == 0 {
            return;
        }
        let look = Look {
            styles: &self.styles,
            labels: &self.labels,
        };
        if rect.height < results_view::FRAMED_MIN_HEIGHT {
            // No room for the frame: the highlighted row on one line, as the composer does.
            let _ = results_view::render_compact(&state.results, rect, buf, look);
            return;
        }
        let title = match &state.token {
            Some((_, token)) => self.labels.title_for(token.trigger),
            None => self.labels.title.clone(),
        };
        let (_, inner) = results_view::render_frame(
            &state.results,
            &title,
            Placement::Hidden,
            None,
            rect,
            buf,
            look,
        );
        let _ = results_view::render_rows(&state.results, inner, buf, look);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mention::Mention;
    use crossterm::event::{KeyCode, KeyModifiers};
    use pretty_assertions::assert_eq;

    fn key(code: KeyCode) -> Event {
        Event::Key(KeyEvent::new(code, KeyModifiers::NONE))
    }

    fn row(key: &str, label: &str) -> MentionItem {
        MentionItem::new(key, label, &Mention::new(label, format!("user:{key}")))
    }

    fn type_str(m: &mut TextAreaMentions, t: &mut TextArea<'_>, text: &str) -> Vec<Outcome> {
        text.chars()
            .map(|c| m.handle_event(t, &key(KeyCode::Char(c))))
            .collect()
    }

    #[test]
    fn the_token_at_the_textarea_cursor_asks_and_tab_inserts_through_its_edits() {
        let mut textarea = TextArea::from(["first line", ""]);
        textarea.move_cursor(CursorMove::Bottom);
        let mut m = TextAreaMentions::new(MentionConfig::default().with_uri_scheme("user:"));
        let asked = type_str(&mut m, &mut textarea, "hi @ad");
        let Some(Outcome::Query { id, text, .. }) = asked.last().cloned() else {
            panic!("{asked:?}")
        };
        assert_eq!((id, text.as_str()), (3, "ad"));
        assert!(m.popup_active());
        let _ = m.set_results(&mut textarea, id, vec![row("ada", "Ada Lovelace")]);
        let tab = m.handle_event(&mut textarea, &key(KeyCode::Tab));
        assert!(matches!(tab, Outcome::Inserted { .. }), "{tab:?}");
        assert_eq!(
            textarea.lines(),
            ["first line", "hi @[Ada Lovelace](user:ada) "]
        );
        assert!(!m.popup_active());
        // The textarea's own undo takes the edits back: the token comes back.
        textarea.undo();
        textarea.undo();
        assert_eq!(textarea.lines(), ["first line", "hi @ad"]);
    }

    #[test]
    fn popup_keys_go_to_the_popup_and_the_rest_to_the_textarea() {
        let mut textarea = TextArea::default();
        let mut m = TextAreaMentions::default();
        type_str(&mut m, &mut textarea, "@a");
        let id = m.results().map(ResultsList::query_id).unwrap_or_default();
        let _ = m.set_results(&mut textarea, id, vec![row("a", "A"), row("b", "B")]);
        assert_eq!(
            m.handle_event(&mut textarea, &key(KeyCode::Down)),
            Outcome::Changed
        );
        assert_eq!(
            m.results().and_then(|r| r.selected()).map(MentionItem::key),
            Some("b")
        );
        assert_eq!(textarea.lines(), ["@a"], "the move went to the popup");
        assert_eq!(
            m.handle_event(&mut textarea, &key(KeyCode::Esc)),
            Outcome::Changed
        );
        assert!(!m.popup_active());
        type_str(&mut m, &mut textarea, "b");
        assert!(!m.popup_active(), "the dismissed token stays closed");
        assert_eq!(textarea.lines(), ["@ab"]);
        // Enter with no popup is the textarea's (a new line).
        m.handle_event(&mut textarea, &key(KeyCode::Enter));
        assert_eq!(textarea.lines(), ["@ab", ""]);
    }

    #[test]
    fn tab_before_the_answer_waits_for_it() {
        let mut textarea = TextArea::default();
        let mut m = TextAreaMentions::default();
        type_str(&mut m, &mut textarea, "@ad");
        let wait = m.handle_event(&mut textarea, &key(KeyCode::Tab));
        assert_eq!(wait, Outcome::Waiting { id: 3 });
        type_str(&mut m, &mut textarea, "x");
        assert_eq!(textarea.lines(), ["@ad"], "held");
        let acted = m.set_results(&mut textarea, 3, vec![row("ada", "Ada")]);
        assert!(
            matches!(acted.first(), Some(Outcome::Inserted { .. })),
            "{acted:?}"
        );
        assert_eq!(textarea.lines(), ["@[Ada](user:ada) x"]);
    }

    /// The textarea's text and caret column, the caret shown as `|`.
    fn shown(textarea: &TextArea<'_>) -> String {
        let (row, col) = (textarea.cursor().0, textarea.cursor().1);
        let line = &textarea.lines()[row];
        let at = line.char_indices().nth(col).map_or(line.len(), |(i, _)| i);
        format!("{}|{}", &line[..at], &line[at..])
    }

    #[test]
    fn a_mention_is_stepped_over_and_deleted_whole_on_a_real_textarea() {
        let mut textarea = TextArea::default();
        let config = MentionConfig::default()
            .with_triggers(['@', '#'])
            .with_uri_scheme("user:")
            .with_uri_scheme("tag:");
        let mut m = TextAreaMentions::new(config);
        type_str(&mut m, &mut textarea, "hi @[Ada](user:ada) #[ui](tag:ui) x");
        assert!(!m.popup_active(), "a finished mention opens no popup");
        let mut press = |code| {
            let _ = m.handle_event(&mut textarea, &key(code));
            shown(&textarea)
        };
        // Left from the end: one press over each mention, never inside one.
        assert_eq!(press(KeyCode::Left), "hi @[Ada](user:ada) #[ui](tag:ui) |x");
        assert_eq!(press(KeyCode::Left), "hi @[Ada](user:ada) #[ui](tag:ui)| x");
        assert_eq!(press(KeyCode::Left), "hi @[Ada](user:ada) |#[ui](tag:ui) x");
        assert_eq!(press(KeyCode::Left), "hi @[Ada](user:ada)| #[ui](tag:ui) x");
        assert_eq!(press(KeyCode::Left), "hi |@[Ada](user:ada) #[ui](tag:ui) x");
        assert_eq!(
            press(KeyCode::Right),
            "hi @[Ada](user:ada)| #[ui](tag:ui) x"
        );
        // Delete before a mention and Backspace after one remove it whole.
        assert_eq!(
            press(KeyCode::Right),
            "hi @[Ada](user:ada) |#[ui](tag:ui) x"
        );
        assert_eq!(press(KeyCode::Delete), "hi @[Ada](user:ada) | x");
        assert_eq!(press(KeyCode::Backspace), "hi @[Ada](user:ada)| x");
        assert_eq!(press(KeyCode::Backspace), "hi | x");
        assert_eq!(
            press(KeyCode::Backspace),
            "hi| x",
            "plain text: one character"
        );
        // The textarea's own undo brings a deleted mention back whole.
        textarea.undo();
        textarea.undo();
        assert_eq!(textarea.lines(), ["hi @[Ada](user:ada) x"]);
        // Text that is no finished mention is edited a character at a time.
        let mut plain = TextArea::from(["@[Ada](other:1)"]);
        plain.move_cursor(CursorMove::End);
        let _ = m.handle_event(&mut plain, &key(KeyCode::Backspace));
        assert_eq!(plain.lines(), ["@[Ada](other:1"]);
    }

    fn tag_mentions() -> TextAreaMentions {
        TextAreaMentions::new(
            MentionConfig::default()
                .with_triggers(['#'])
                .with_uri_scheme("tag:"),
        )
    }

    #[test]
    fn word_deletions_and_cuts_remove_a_mention_whole() {
        let mut m = tag_mentions();
        let chord = |code, mods| Event::Key(KeyEvent::new(code, mods));
        let text = "see #[user interface](tag:ui) ok";
        // Ctrl+W and Alt+Backspace right after the mention, Alt+D and Alt+Delete right
        // before it: the whole mention goes, one undo brings it back.
        for (col, event) in [
            (29, chord(KeyCode::Char('w'), KeyModifiers::CONTROL)),
            (29, chord(KeyCode::Backspace, KeyModifiers::ALT)),
            (4, chord(KeyCode::Char('d'), KeyModifiers::ALT)),
            (4, chord(KeyCode::Delete, KeyModifiers::ALT)),
        ] {
            let mut t = TextArea::from([text]);
            t.move_cursor(CursorMove::Jump(0, col));
            let _ = m.handle_event(&mut t, &event);
            assert_eq!(shown(&t), "see | ok", "{event:?}");
            t.undo();
            assert_eq!(t.lines(), [text], "{event:?}");
        }
        // A cut of a selection that ends inside a mention takes it whole.
        let mut t = TextArea::from([text]);
        t.move_cursor(CursorMove::Jump(0, 1));
        t.start_selection();
        t.move_cursor(CursorMove::Jump(0, 9));
        let _ = m.handle_event(&mut t, &chord(KeyCode::Char('x'), KeyModifiers::CONTROL));
        assert_eq!(shown(&t), "s| ok");
        // Word deletion in plain text is unchanged.
        let mut t = TextArea::from(["plain words"]);
        t.move_cursor(CursorMove::End);
        let _ = m.handle_event(&mut t, &chord(KeyCode::Char('w'), KeyModifiers::CONTROL));
        assert_eq!(shown(&t), "plain |");
    }

    #[test]
    fn up_and_down_keep_the_column_the_chips_show() {
        use ratatui::widgets::Widget;
        let mut m = tag_mentions();
        let mut t = TextArea::from(["ab #[ui](tag:ui) cd", "0123456789012345"]);
        t.move_cursor(CursorMove::Jump(0, 16));
        // Before the view is drawn the textarea moves by its own columns.
        let mut probe = t.clone();
        let _ = m.handle_event(&mut probe, &key(KeyCode::Down));
        assert_eq!(probe.cursor(), (1, 16));
        let area = Rect::new(0, 0, 20, 2);
        m.widget(&t).render(area, &mut Buffer::empty(area));
        // `ab #ui|` is column 6 on screen: Down goes to column 6, Up comes back after the chip.
        let _ = m.handle_event(&mut t, &key(KeyCode::Down));
        assert_eq!(t.cursor(), (1, 6));
        let _ = m.handle_event(&mut t, &key(KeyCode::Up));
        assert_eq!(t.cursor(), (0, 16));
        // Shift+Down selects.
        let shift_down = Event::Key(KeyEvent::new(KeyCode::Down, KeyModifiers::SHIFT));
        let _ = m.handle_event(&mut t, &shift_down);
        assert_eq!(t.selection_range(), Some(((0, 16), (1, 6))));
    }

    #[test]
    fn a_popup_squeezed_to_one_row_shows_the_highlighted_row() {
        let mut textarea = TextArea::default();
        let mut m = tag_mentions();
        type_str(&mut m, &mut textarea, "#d");
        let id = m.results().map(ResultsList::query_id).unwrap_or_default();
        let docs = MentionItem::new("docs", "docs", &Mention::new("docs", "tag:docs"));
        let _ = m.set_results(&mut textarea, id, vec![docs]);
        // One row above the textarea, none below.
        let frame = Rect::new(0, 0, 24, 6);
        let anchor = Rect::new(0, 1, 24, 5);
        let mut buf = Buffer::empty(frame);
        TextAreaPopup::new(anchor).render(frame, &mut buf, &mut m);
        let top: String = (0..24).map(|x| buf[(x, 0)].symbol()).collect();
        assert!(top.contains("docs"), "{top:?}");
        // With room: the frame titled for the trigger.
        let frame = Rect::new(0, 0, 24, 9);
        let anchor = Rect::new(0, 6, 24, 3);
        let mut buf = Buffer::empty(frame);
        TextAreaPopup::new(anchor).render(frame, &mut buf, &mut m);
        let title: String = (0..24).map(|x| buf[(x, 3)].symbol()).collect();
        let want = PopupLabels::default().title_for('#');
        assert!(title.contains(want.trim()), "{title:?} / {want:?}");
    }

    #[test]
    fn the_wait_gives_up_at_a_tick() {
        let mut textarea = TextArea::default();
        let mut m = TextAreaMentions::default();
        type_str(&mut m, &mut textarea, "@ad");
        assert_eq!(m.next_tick(), None, "no timer before a tick saw the query");
        let start = Instant::now();
        let _ = m.tick(&mut textarea, start);
        let _ = m.handle_event(&mut textarea, &key(KeyCode::Tab));
        type_str(&mut m, &mut textarea, "x");
        assert!(m.tick(&mut textarea, start).is_empty());
        let later = start + std::time::Duration::from_secs(1);
        assert_eq!(m.next_tick().map(|at| at <= later), Some(true));
        let gave_up = m.tick(&mut textarea, later);
        assert_eq!(gave_up.first(), Some(&Outcome::Changed), "{gave_up:?}");
        assert_eq!(
            textarea.lines(),
            ["@adx"],
            "nothing inserted, the held key applied"
        );
    }
}
