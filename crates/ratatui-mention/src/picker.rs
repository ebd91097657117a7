//! A filter-and-pick overlay on the same results list as the `@` popup: the filter is the
//! widget's own editor (caret, grapheme clusters, word moves, undo), every change asks the
//! host for rows, and Enter picks the selected row — waiting, like the popup, when the
//! newest filter is unanswered. A host uses it for "open a session", "open a file".

use std::time::{Duration, Instant};

use crossterm::event::{Event, KeyEvent, KeyEventKind, MouseEvent};
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::StatefulWidget;
use unicode_width::UnicodeWidthStr;

use crate::config::{MentionStyles, PopupLabels};
use crate::draft::Draft;
use crate::grammar::Grammar;
use crate::item::{ItemPreview, MentionItem};
use crate::key_map::{Action, KeyMap, typed_char};
use crate::preview::{self, PreviewState};
use crate::results::{
    Drawn, EnterAction, Held, MoreRequest, Pointer, PopupKey, QueryId, ResultsList, ResultsPage,
    Section, Timers, WaitHost, WaitingKey, resume, tick,
};
use crate::results_view::{self, Look};
use term_text::truncate_start_to_width;
use term_text::{is_control, visible_controls_line};

/// What an event did to a [`Picker`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PickerOutcome {
    /// Not the picker's event (a key it does not bind): the host may use it.
    Ignored,
    /// Taken, nothing on screen changed.
    Consumed,
    /// Something on screen changed.
    Changed,
    /// The filter changed: answer `text` for `id` with [`Picker::set_page`].
    Query {
        /// The id to answer with.
        id: QueryId,
        /// The filter as typed.
        text: String,
    },
    /// The selection neared the end of the fetched rows: answer `text` again with up to
    /// `limit` rows, for `id`.
    More {
        /// The id to answer with.
        id: QueryId,
        /// The filter, as asked before.
        text: String,
        /// How many rows to return now.
        limit: usize,
    },
    /// Enter came before the newest filter's answer: it waits for it (see
    /// [`crate::Outcome::Waiting`]; [`Picker::tick`] gives up after the answer wait).
    Waiting {
        /// The query the Enter waits for.
        id: QueryId,
    },
    /// Enter on the selected row: its key.
    Picked(String),
    /// Esc: the host closes the picker.
    Closed,
}

impl From<MoreRequest> for PickerOutcome {
    fn from(more: MoreRequest) -> Self {
        PickerOutcome::More {
            id: more.id,
            text: more.query,
            limit: more.limit,
        }
    }
}

/// A picker's state, kept by the host while it is open: the filter editor, the results and
/// the preview of the selected row. Draw it with [`PickerView`].
#[derive(Debug, Clone)]
pub struct Picker {
    filter: Draft,
    results: ResultsList<MentionItem>,
    /// The selected row's preview: wanted, placed, and the host's content.
    preview: PreviewState,
    key_map: KeyMap,
    cursor: Option<Position>,
}

impl Default for Picker {
    fn default() -> Self {
        Self::new(KeyMap::default())
    }
}

impl Picker {
    /// A closed picker moving with `key_map`'s keys (those of the `@` popup); call
    /// [`Picker::open`] to ask for its first rows.
    pub fn new(key_map: KeyMap) -> Self {
        Picker {
            filter: Draft::new(Grammar::none()),
            results: ResultsList::new(),
            preview: PreviewState::new(false),
            key_map,
            cursor: None,
        }
    }

    /// Shows the selected row's preview where there is room (default off; see
    /// [`crate::MentionConfig::with_preview`]).
    #[must_use]
    pub fn with_preview(mut self, on: bool) -> Self {
        self.preview = PreviewState::new(on);
        self
    }

    /// An Enter waits up to `answer_wait` for the newest filter's answer, and rows of an
    /// older filter stay on show up to `slow_answer` while the newest is unanswered
    /// (defaults 1 s and 250 ms; see [`Picker::tick`]).
    #[must_use]
    pub fn with_timers(mut self, answer_wait: Duration, slow_answer: Duration) -> Self {
        self.results.set_timers(Timers {
            answer_wait,
            slow_answer,
        });
        self
    }

    /// Empties the filter and the rows and asks for the rows of the empty filter.
    pub fn open(&mut self) -> PickerOutcome {
        self.filter.set_text("");
        self.results.clear();
        self.preview.clear();
        self.ask()
    }

    /// Handles one terminal event (keys and pastes).
    pub fn handle_event(&mut self, event: &Event) -> PickerOutcome {
        match event {
            Event::Key(key) => self.handle_key(*key),
            Event::Paste(text) => self.handle_paste(text),
            Event::Mouse(mouse) => self.handle_mouse(mouse, Instant::now()),
            Event::FocusGained | Event::FocusLost | Event::Resize(_, _) => PickerOutcome::Ignored,
        }
    }

    /// Handles a mouse event that happened at `now`, over the list as the last frame drew
    /// it: the wheel moves the selection a row (stopping at the ends), a click selects the
    /// row under it, a double click picks it. Anything elsewhere is
    /// [`PickerOutcome::Ignored`].
    pub fn handle_mouse(&mut self, mouse: &MouseEvent, now: Instant) -> PickerOutcome {
        if self.results.is_waiting() {
            return PickerOutcome::Ignored;
        }
        match self.results.pointer(*mouse, now) {
            Pointer::Outside => PickerOutcome::Ignored,
            Pointer::Consumed => PickerOutcome::Consumed,
            Pointer::Moved(more) => more.map_or(PickerOutcome::Changed, PickerOutcome::from),
            Pointer::Activate => self.pick(),
        }
    }

    /// Whether the last frame drew the picker (a window too small for it does not: keys
    /// would act on rows nobody sees).
    pub fn is_drawn(&self) -> bool {
        self.cursor.is_some()
    }

    /// Handles one key: moves, Enter, Esc, the preview key, then the filter's edits.
    pub fn handle_key(&mut self, key: KeyEvent) -> PickerOutcome {
        if key.kind == KeyEventKind::Release {
            return PickerOutcome::Ignored;
        }
        if self.results.hold(Held::Key(key)) {
            return PickerOutcome::Consumed;
        }
        let action = self.key_map.classify(&key);
        // Tab picks nothing here: Enter opens.
        if action == Some(Action::Complete) {
            return PickerOutcome::Consumed;
        }
        match self.results.popup_key(action) {
            PopupKey::Moved(more) => {
                return more.map_or(PickerOutcome::Changed, PickerOutcome::from);
            }
            PopupKey::Wait(id) => return PickerOutcome::Waiting { id },
            PopupKey::Take => return self.pick(),
            PopupKey::Nothing | PopupKey::AsTyped => return PickerOutcome::Consumed,
            PopupKey::TogglePreview if self.preview.toggle() => return PickerOutcome::Changed,
            PopupKey::TogglePreview => return PickerOutcome::Ignored,
            PopupKey::Escape => return PickerOutcome::Closed,
            PopupKey::Pass => {}
        }
        let filter = &mut self.filter;
        let edited = match action {
            Some(
                Action::Escape
                | Action::Submit
                | Action::TogglePreview
                | Action::Newline
                | Action::Complete,
            ) => return PickerOutcome::Consumed,
            Some(Action::ExpandPaste) => return PickerOutcome::Ignored,
            Some(Action::Left) => return moved(filter.move_left()),
            Some(Action::Right) => return moved(filter.move_right()),
            Some(Action::WordLeft) => return moved(filter.move_word_left()),
            Some(Action::WordRight) => return moved(filter.move_word_right()),
            Some(Action::LineStart) => return moved(filter.move_line_start()),
            Some(Action::LineEnd) => return moved(filter.move_line_end()),
            Some(Action::DeleteBackward) => filter.delete_backward(),
            Some(Action::DeleteForward) => filter.delete_forward(),
            Some(Action::DeleteWordBackward) => filter.delete_word_backward(),
            Some(Action::DeleteWordForward) => filter.delete_word_forward(),
            Some(Action::KillLineStart) => filter.kill_to_line_start(),
            Some(Action::KillLineEnd) => filter.kill_to_line_end(),
            Some(Action::Undo) => filter.undo(),
            Some(Action::Yank) => filter.yank(),
            Some(
                Action::Up
                | Action::Down
                | Action::PopupPrev
                | Action::PopupNext
                | Action::PopupPageUp
                | Action::PopupPageDown
                | Action::PopupFirst
                | Action::PopupLast,
            ) => return PickerOutcome::Changed,
            None => match typed_char(&key) {
                Some(c) => {
                    filter.insert(c.encode_utf8(&mut [0; 4]));
                    true
                }
                None => return PickerOutcome::Ignored,
            },
        };
        if edited {
            self.ask()
        } else {
            PickerOutcome::Consumed
        }
    }

    /// Types pasted text into the filter (line breaks become spaces, controls go).
    pub fn handle_paste(&mut self, text: &str) -> PickerOutcome {
        if self.results.hold(Held::Paste(text.to_owned())) {
            return PickerOutcome::Consumed;
        }
        let line: String = text
            .chars()
            .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
            .filter(|c| !is_control(*c))
            .collect();
        if line.is_empty() {
            return PickerOutcome::Consumed;
        }
        self.filter.insert(&line);
        self.ask()
    }

    /// The filter as typed.
    pub fn filter(&self) -> &str {
        self.filter.text()
    }

    /// The results (query, id, rows, hits, selection).
    pub fn results(&self) -> &ResultsList<MentionItem> {
        &self.results
    }

    /// Takes the page answering `id` (see [`ResultsList::set_page`]); returns what an
    /// Enter waiting for it did (a [`PickerOutcome::Picked`]) and the inputs held after it.
    #[must_use = "an Enter that waited for this answer may have picked a row"]
    pub fn set_page(&mut self, id: QueryId, page: ResultsPage) -> Vec<PickerOutcome> {
        if !self.results.set_page(id, page) {
            return Vec::new();
        }
        resume(self, id)
    }

    /// Replaces the rows on show for `id` with a fresher page, the selected row kept when
    /// it is still there (see [`ResultsList::refresh_page`]); false for another query.
    pub fn refresh_page(&mut self, id: QueryId, page: ResultsPage) -> bool {
        self.results.refresh_page(id, page)
    }

    /// Takes the failure of `id`; returns what a waiting Enter did.
    #[must_use = "an Enter that waited for this answer may have picked a row"]
    pub fn set_failed(&mut self, id: QueryId, message: impl Into<String>) -> Vec<PickerOutcome> {
        if !self.results.set_failed(id, message) {
            return Vec::new();
        }
        resume(self, id)
    }

    /// Takes rows found elsewhere for `id` (see [`ResultsList::set_late_section`]); returns what an
    /// Enter that waited for them did (see [`Picker::expect_late_section`]).
    #[must_use = "an Enter that waited for these rows may have picked one"]
    pub fn set_late_section(&mut self, id: QueryId, hits: Section) -> Vec<PickerOutcome> {
        if !self.results.set_late_section(id, hits) {
            return Vec::new();
        }
        resume(self, id)
    }

    /// Says that a late section for `id` will come: while the page shows no row, an Enter
    /// waits for it too (see [`crate::MentionInputState::expect_late_section`]).
    pub fn expect_late_section(&mut self, id: QueryId) {
        self.results.expect_late_section(id);
    }

    /// Changes the title of the late section on show.
    pub fn set_late_title(&mut self, title: &str) {
        self.results.set_late_title(title);
    }

    /// Runs the picker's timers at `now` (see [`crate::MentionInputState::tick`]): an
    /// Enter that waited too long gives up (Enter again picks the selected row on show),
    /// rows of an older filter on show too long make way for "searching…".
    #[must_use = "held inputs may have picked a row"]
    pub fn tick(&mut self, now: Instant) -> Vec<PickerOutcome> {
        tick(self, now)
    }

    /// When [`Self::tick`] has something to do next.
    pub fn next_tick(&self) -> Option<Instant> {
        self.results.next_tick()
    }

    /// Whether an Enter waits for the newest filter's answer.
    pub fn is_waiting(&self) -> bool {
        self.results.is_waiting()
    }

    /// The key of the selected row when the visible preview needs the host's content for
    /// it (asked once per selection); answer with [`Picker::set_preview`].
    pub fn want_preview(&mut self) -> Option<String> {
        self.preview.want(&mut self.results)
    }

    /// Delivers the preview of a row; one for a row no longer asked about is dropped.
    pub fn set_preview(&mut self, preview: ItemPreview) {
        self.preview.set(&self.results, preview);
    }

    /// Where the last render put the filter's caret, for the terminal cursor.
    pub fn cursor_position(&self) -> Option<Position> {
        self.cursor
    }

    fn ask(&mut self) -> PickerOutcome {
        let text = self.filter.text().to_owned();
        let id = self.results.ask(text.clone());
        PickerOutcome::Query { id, text }
    }

    /// The highlighted row's key, unless it is blocked.
    fn pick(&self) -> PickerOutcome {
        match self.results.selected().filter(|r| r.blocked().is_none()) {
            Some(row) => PickerOutcome::Picked(row.key().to_owned()),
            None => PickerOutcome::Consumed,
        }
    }
}

impl WaitHost for Picker {
    type Out = PickerOutcome;

    fn results(&mut self) -> &mut ResultsList<MentionItem> {
        &mut self.results
    }

    /// The waiting Enter picks the highlighted row (none: the new rows still need a frame).
    fn act(&mut self, _: WaitingKey) -> PickerOutcome {
        match (self.results.enter_action(), self.pick()) {
            (EnterAction::Take, picked @ PickerOutcome::Picked(_)) => picked,
            _ => PickerOutcome::Changed,
        }
    }

    fn key(&mut self, key: KeyEvent) -> PickerOutcome {
        self.handle_key(key)
    }

    fn paste(&mut self, text: &str) -> PickerOutcome {
        self.handle_paste(text)
    }

    fn changed() -> PickerOutcome {
        PickerOutcome::Changed
    }
}

fn moved(did: bool) -> PickerOutcome {
    if did {
        PickerOutcome::Changed
    } else {
        PickerOutcome::Consumed
    }
}

/// Draws a [`Picker`] filling its area: a bordered list titled `title` whose first line is
/// the filter (`prompt` and the text, or the placeholder while empty), then the rows, and
/// the preview of the selected row beside or below. Put the terminal cursor at
/// [`Picker::cursor_position`] after rendering.
#[derive(Debug, Clone)]
pub struct PickerView<'a> {
    title: &'a str,
    prompt: &'a str,
    placeholder: &'a str,
    styles: MentionStyles,
    labels: std::borrow::Cow<'a, PopupLabels>,
    below_min_height: u16,
}

impl Default for PickerView<'_> {
    fn default() -> Self {
        PickerView {
            title: "",
            prompt: "filter: ",
            placeholder: "type to filter",
            styles: MentionStyles::default(),
            labels: std::borrow::Cow::Owned(PopupLabels::default()),
            below_min_height: preview::BELOW_MIN_HEIGHT,
        }
    }
}

impl<'a> PickerView<'a> {
    /// A picker titled `title`.
    pub fn new(title: &'a str) -> Self {
        PickerView {
            title,
            ..Self::default()
        }
    }

    /// Shows `prompt` before the filter text (default `filter: `).
    #[must_use]
    pub fn prompt(mut self, prompt: &'a str) -> Self {
        self.prompt = prompt;
        self
    }

    /// Shows `placeholder` while the filter is empty.
    #[must_use]
    pub fn placeholder(mut self, placeholder: &'a str) -> Self {
        self.placeholder = placeholder;
        self
    }

    /// Draws with `styles`.
    #[must_use]
    pub fn styles(mut self, styles: MentionStyles) -> Self {
        self.styles = styles;
        self
    }

    /// Uses `labels` for the empty states, the position and the preview.
    #[must_use]
    pub fn labels(mut self, labels: impl Into<std::borrow::Cow<'a, PopupLabels>>) -> Self {
        self.labels = labels.into();
        self
    }

    /// Below this many rows a picker narrower than 100 columns has no preview.
    #[must_use]
    pub fn preview_below_min_height(mut self, rows: u16) -> Self {
        self.below_min_height = rows;
        self
    }
}

impl StatefulWidget for PickerView<'_> {
    type State = Picker;

    fn render(self, area: Rect, buf: &mut Buffer, picker: &mut Picker) {
        picker
            .preview
            .remember_area(area.width, area.height, self.below_min_height);
        picker.cursor = None;
        picker.results.set_drawn(Drawn::default());
        if area.height < 4 || area.width < 20 {
            return;
        }
        let look = Look {
            styles: &self.styles,
            labels: &self.labels,
        };
        let placement = preview::placement(
            picker.preview.enabled(),
            area.width,
            area.height,
            self.below_min_height,
        );
        let (list_area, inner) = results_view::render_frame(
            &picker.results,
            self.title,
            placement,
            picker.preview.shown(),
            area,
            buf,
            look,
        );
        if inner.height == 0 || inner.width == 0 {
            return;
        }
        picker.cursor = Some(render_filter(
            &picker.filter,
            self.prompt,
            self.placeholder,
            Rect { height: 1, ..inner },
            buf,
            &self.styles,
        ));
        let rows = Rect {
            y: inner.y + 1,
            height: inner.height - 1,
            ..inner
        };
        let rows = results_view::render_rows(&picker.results, rows, buf, look);
        picker.results.set_drawn(Drawn {
            area: list_area,
            rows,
        });
    }
}

/// `  <prompt><filter>` on one line, scrolled so the caret stays visible (the placeholder
/// while empty); returns the caret's position.
fn render_filter(
    filter: &Draft,
    prompt: &str,
    placeholder: &str,
    line: Rect,
    buf: &mut Buffer,
    styles: &MentionStyles,
) -> Position {
    const INDENT: &str = "  ";
    if filter.is_empty() {
        let text = format!("{INDENT}{}", visible_controls_line(placeholder));
        buf.set_line(
            line.x,
            line.y,
            &Line::styled(text, styles.message),
            line.width,
        );
        return Position::new(line.x + 1, line.y);
    }
    let lead = format!("{INDENT}{}", visible_controls_line(prompt));
    let room = usize::from(line.width).saturating_sub(lead.width() + 1);
    let text = filter.text();
    let before = visible_controls_line(text.get(..filter.caret()).unwrap_or_default());
    let after = visible_controls_line(text.get(filter.caret()..).unwrap_or_default());
    // The caret stays on screen: text before it is cut at the front when it is too wide.
    let before = truncate_start_to_width(&before, room);
    let caret_x = lead.width() + before.width();
    let rest = term_text::truncate_to_width(&after, room.saturating_sub(before.width()));
    let spans = vec![
        Span::styled(lead, styles.detail),
        Span::styled(before, Style::new()),
        Span::styled(rest, Style::new()),
    ];
    buf.set_line(line.x, line.y, &Line::from(spans), line.width);
    let x = u16::try_from(caret_x)
        .unwrap_or(u16::MAX)
        .min(line.width - 1);
    Position::new(line.x + x, line.y)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mention::Mention;
    use crossterm::event::{KeyCode, KeyModifiers};
    use pretty_assertions::assert_eq;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn row(key: &str) -> MentionItem {
        MentionItem::new(key, key, &Mention::new(key, format!("file:{key}")))
    }

    fn type_str(picker: &mut Picker, text: &str) -> Vec<PickerOutcome> {
        text.chars()
            .map(|c| picker.handle_key(key(KeyCode::Char(c))))
            .collect()
    }

    #[test]
    fn the_filter_is_an_editor_and_every_change_asks() {
        let mut picker = Picker::default();
        assert_eq!(
            picker.open(),
            PickerOutcome::Query {
                id: 1,
                text: String::new()
            }
        );
        let asked = type_str(&mut picker, "naïve");
        assert_eq!(asked.len(), 5);
        // Left twice over grapheme clusters, then a word delete and undo.
        picker.handle_key(key(KeyCode::Left));
        picker.handle_key(key(KeyCode::Left));
        assert_eq!(
            picker.handle_key(key(KeyCode::Backspace)),
            PickerOutcome::Query {
                id: 7,
                text: "nave".into()
            }
        );
        let ctrl = |c| KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL);
        assert!(matches!(
            picker.handle_key(ctrl('z')),
            PickerOutcome::Query { .. }
        ));
        assert_eq!(picker.filter(), "naïve");
        assert!(matches!(
            picker.handle_key(ctrl('w')),
            PickerOutcome::Query { .. }
        ));
        assert_eq!(picker.filter(), "ve", "the word before the caret went");
        assert_eq!(
            picker.handle_key(ctrl('c')),
            PickerOutcome::Ignored,
            "the host's"
        );
        assert_eq!(picker.handle_key(key(KeyCode::Esc)), PickerOutcome::Closed);
        assert!(matches!(
            picker.handle_paste("a\nb\u{7}"),
            PickerOutcome::Query { .. }
        ));
        assert_eq!(picker.filter(), "a bve");
    }

    #[test]
    fn enter_picks_the_selected_row_once_the_filter_is_answered() {
        let mut picker = Picker::default();
        let PickerOutcome::Query { id, .. } = picker.open() else {
            unreachable!()
        };
        assert_eq!(
            picker.set_page(id, ResultsPage::complete(vec![row("a"), row("b")])),
            []
        );
        picker.handle_key(key(KeyCode::Down));
        assert_eq!(
            picker.handle_key(key(KeyCode::Enter)),
            PickerOutcome::Picked("b".into())
        );
        // A filter typed and Enter in one burst: Enter waits for the filter's answer.
        let asked = type_str(&mut picker, "zz");
        let PickerOutcome::Query { id, .. } = asked[1].clone() else {
            unreachable!()
        };
        assert_eq!(
            picker.handle_key(key(KeyCode::Enter)),
            PickerOutcome::Waiting { id }
        );
        assert_eq!(
            picker.set_page(id, ResultsPage::complete(vec![row("zz")])),
            [PickerOutcome::Picked("zz".into())]
        );
    }
}
