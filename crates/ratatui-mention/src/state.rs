//! The state a host keeps: the composer plus at most one popup over one results list.
//! Events go in, outcomes come out ([`Outcome`]); popup visibility is recomputed from text,
//! caret and the dismissed token after every key and paste.

use std::time::Instant;

use crossterm::event::{Event, KeyEvent, KeyEventKind, MouseEvent};
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::style::Style;

use crate::composer::Composer;
use crate::config::{MentionConfig, Trigger};
use crate::draft::Fold;
use crate::input_history::{Entry, long_text_folds};
use crate::item::{ItemPreview, MentionItem};
use crate::key_map::{Action, typed_char};
use crate::mention::Mention;
use crate::mention_token::{MentionToken, MultiWord, mention_token_at, multi_word_token_at};
use crate::paste::normalize_paste;
use crate::preview::{self, Placement, PreviewState};
use crate::results::{
    Drawn, EnterAction, Held, MoreRequest, Pointer, PopupKey, QueryId, ResultsList, ResultsPage,
    Section, Timers, WaitHost, WaitingKey, resume, tick,
};
use crate::results_view::{self, Look};
use crate::slash_commands::{CommandEntry, command_token_at, matching};
use term_text::visible_controls_line;

/// What an event did, for the host to act on.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// Not the widget's event (an unbound key with no editing meaning, Esc with no popup
    /// open, a key release, a mouse event): the host may use it.
    Ignored,
    /// Taken, but nothing on screen changed (Up at the oldest history entry, Enter on a
    /// blank draft, a key held while Enter waits).
    Consumed,
    /// Something on screen changed.
    Changed,
    /// The token's query changed: the host answers with [`MentionInputState::set_page`]
    /// (or [`MentionInputState::set_failed`]) for `id`, preferably off the UI thread; an
    /// earlier query still running may be cancelled, its answer would be dropped.
    #[non_exhaustive]
    Query {
        /// The id to answer with.
        id: QueryId,
        /// What was typed after the trigger.
        text: String,
        /// The trigger the token starts with (`@`).
        trigger: char,
    },
    /// The selection moved near the end of the fetched matches (or to the last one): the
    /// host answers query `text` again with up to `limit` rows, for `id`, with
    /// [`MentionInputState::set_page`]; the selection stays.
    #[non_exhaustive]
    More {
        /// The id to answer with.
        id: QueryId,
        /// The query, as asked before.
        text: String,
        /// How many rows to return now.
        limit: usize,
    },
    /// The selected item replaced the token (its insert text and one space went in).
    #[non_exhaustive]
    Inserted {
        /// The item's key.
        key: String,
        /// The text that went in (without the space).
        text: String,
    },
    /// Enter or Tab came while query `id` was unanswered, so the rows on show do not answer
    /// what was typed: the key waits for that answer (the answer methods then return what
    /// it did), and keys and pastes arriving meanwhile are held and applied after it, in
    /// order. When no answer came within [`MentionConfig::answer_wait`],
    /// [`MentionInputState::tick`] gives up: nothing is sent and the popup says Enter again
    /// sends the draft as text.
    #[non_exhaustive]
    Waiting {
        /// The query whose answer the key waits for.
        id: QueryId,
    },
    /// Enter on a non-blank draft with no popup row on show — no popup, or one showing no
    /// row (nothing matched, the source failed, or Enter again after a wait gave up): the
    /// draft, as typed. It stays in the composer until the host takes it with
    /// [`MentionInputState::take_submit`] once really sent (then Up brings it back), so a
    /// failed send loses nothing. Read its mentions with
    /// [`MentionConfig::find_mentions`].
    Submit(String),
}

impl Outcome {
    /// Whether the widget took the event (anything but [`Outcome::Ignored`]): the host
    /// does not use it for itself.
    pub fn is_consumed(&self) -> bool {
        !matches!(self, Outcome::Ignored)
    }

    /// Whether the screen changed and a frame should be drawn.
    pub fn needs_redraw(&self) -> bool {
        !matches!(self, Outcome::Ignored | Outcome::Consumed)
    }
}

impl From<MoreRequest> for Outcome {
    fn from(more: MoreRequest) -> Self {
        Outcome::More {
            id: more.id,
            text: more.query,
            limit: more.limit,
        }
    }
}

/// The one popup the widget may show: over the `@` (or other trigger) token, or over the
/// command token at the start of the draft.
#[derive(Debug, Clone)]
enum Popup {
    None,
    Mention(MentionToken),
    Command(MentionToken),
}

/// Composer + popup, kept by the host across frames and drawn with [`crate::MentionInput`].
#[derive(Debug, Clone)]
pub struct MentionInputState {
    config: MentionConfig,
    composer: Composer,
    popup: Popup,
    /// The rows of the open popup (the host's answers, or the matching commands).
    results: ResultsList<MentionItem>,
    /// The selected row's preview: wanted, placed, and the host's content.
    preview: PreviewState,
    /// Char index of the token whose popup the user closed with Esc.
    dismissed_token: Option<usize>,
    /// The command trigger was typed into an empty draft: the command popup follows the
    /// first word until the caret leaves it or Esc closes it.
    command_armed: bool,
    /// Where the last render put the caret.
    cursor: Option<Position>,
    /// The draft last submitted, with its folds: pushed to history and restored with them.
    submitted: Option<Entry>,
    /// The token a space did not end (multi-word queries): where its `@` is and how much
    /// text follows it.
    multi_word: Option<MultiWord>,
}

impl Default for MentionInputState {
    fn default() -> Self {
        Self::new(MentionConfig::default())
    }
}

impl MentionInputState {
    /// An empty widget state with `config`.
    pub fn new(config: MentionConfig) -> Self {
        let mut results = ResultsList::new();
        results.set_timers(Timers {
            answer_wait: config.answer_wait,
            slow_answer: config.slow_answer,
        });
        Self {
            composer: Composer::new(&config),
            preview: PreviewState::new(config.preview),
            config,
            popup: Popup::None,
            results,
            dismissed_token: None,
            command_armed: false,
            cursor: None,
            submitted: None,
            multi_word: None,
        }
    }

    /// The configuration in use.
    pub fn config(&self) -> &MentionConfig {
        &self.config
    }

    /// Handles one terminal event: keys (presses and repeats) and pastes; anything else is
    /// [`Outcome::Ignored`].
    pub fn handle_event(&mut self, event: &Event) -> Outcome {
        match event {
            Event::Key(key) => self.handle_key(*key),
            Event::Paste(text) => self.handle_paste(text),
            Event::Mouse(mouse) => self.handle_mouse(mouse, Instant::now()),
            Event::FocusGained | Event::FocusLost | Event::Resize(_, _) => Outcome::Ignored,
        }
    }

    /// Handles a mouse event that happened at `now`, over the popup as the last frame drew
    /// it: the wheel moves the selection a row (stopping at the ends), a click selects the
    /// row under it, a double click inserts it. Anything elsewhere is
    /// [`Outcome::Ignored`].
    pub fn handle_mouse(&mut self, mouse: &MouseEvent, now: Instant) -> Outcome {
        if matches!(self.popup, Popup::None) || self.results.is_waiting() {
            return Outcome::Ignored;
        }
        match self.results.pointer(*mouse, now) {
            Pointer::Outside => Outcome::Ignored,
            Pointer::Consumed => Outcome::Consumed,
            Pointer::Moved(more) => more.map_or(Outcome::Changed, Outcome::from),
            Pointer::Activate if matches!(self.popup, Popup::Command(_)) => {
                self.complete_command(true)
            }
            Pointer::Activate => self.insert_selected(),
        }
    }

    /// Handles one key: popup keys first, then the composer.
    pub fn handle_key(&mut self, key: KeyEvent) -> Outcome {
        if key.kind == KeyEventKind::Release {
            return Outcome::Ignored;
        }
        if self.results.hold(Held::Key(key)) {
            return Outcome::Consumed;
        }
        let action = self.config.key_map.classify(&key);
        if matches!(self.popup, Popup::Command(_)) {
            if matches!(
                action,
                Some(Action::Up | Action::PopupPrev | Action::Down | Action::PopupNext)
            ) {
                // The commands are all there is: a move never asks for more.
                let _ = self.results.navigate(action);
                return Outcome::Changed;
            }
            match action {
                Some(Action::Complete) => return self.complete_command(false),
                Some(Action::Submit) if self.results.selected().is_some() => {
                    return self.complete_command(true);
                }
                Some(Action::Escape) => {
                    self.command_armed = false;
                    self.close_popup();
                    return Outcome::Changed;
                }
                _ => {}
            }
        }
        if let Popup::Mention(token) = &self.popup {
            let start = token.start_char;
            if action.is_none()
                && self.config.multi_word
                && typed_char(&key) == Some(' ')
                && self.composer.cursor_char_index() == token.end_char
            {
                self.multi_word = self.space_continues(token);
            }
            match self.results.popup_key(action) {
                PopupKey::Moved(more) => return more.map_or(Outcome::Changed, Outcome::from),
                PopupKey::Wait(id) => return Outcome::Waiting { id },
                PopupKey::Take => return self.insert_selected(),
                PopupKey::Nothing => return Outcome::Consumed,
                PopupKey::AsTyped => return self.submit(),
                PopupKey::TogglePreview if self.preview.toggle() => return Outcome::Changed,
                PopupKey::Escape => {
                    self.dismissed_token = Some(start);
                    self.close_popup();
                    return Outcome::Changed;
                }
                PopupKey::TogglePreview | PopupKey::Pass => {}
            }
        }
        let draft = self.composer.draft_mut();
        let result = match action {
            Some(Action::Submit) => return self.submit(),
            // With no popup open, PgUp/PgDn are the host's (and so is Esc).
            Some(Action::Escape | Action::PopupPageUp | Action::PopupPageDown) => {
                return Outcome::Ignored;
            }
            Some(Action::DeleteForward) => changed(draft.delete_forward()),
            Some(Action::DeleteBackward) => changed(draft.delete_backward()),
            Some(Action::Newline) => {
                draft.insert("\n");
                Outcome::Changed
            }
            Some(Action::Complete) => {
                draft.insert("\t");
                Outcome::Changed
            }
            Some(Action::ExpandPaste) if draft.fold_at_caret().is_none() => {
                return Outcome::Ignored;
            }
            Some(Action::ExpandPaste) => changed(draft.expand_fold_at_caret()),
            Some(Action::Left) => changed(draft.move_left()),
            Some(Action::Right) => changed(draft.move_right()),
            Some(Action::WordLeft) => changed(draft.move_word_left()),
            Some(Action::WordRight) => changed(draft.move_word_right()),
            // Home/End: the popup's first/last row when it is open, else the line's ends.
            Some(Action::LineStart | Action::PopupFirst) => changed(draft.move_line_start()),
            Some(Action::LineEnd | Action::PopupLast) => changed(draft.move_line_end()),
            Some(Action::KillLineStart) => changed(draft.kill_to_line_start()),
            Some(Action::KillLineEnd) => changed(draft.kill_to_line_end()),
            Some(Action::DeleteWordBackward) => changed(draft.delete_word_backward()),
            Some(Action::DeleteWordForward) => changed(draft.delete_word_forward()),
            Some(Action::Undo) => changed(draft.undo()),
            Some(Action::Yank) => changed(draft.yank()),
            Some(Action::Up | Action::PopupPrev) => changed(self.composer.move_up_or_history()),
            Some(Action::Down | Action::PopupNext) => changed(self.composer.move_down_or_history()),
            None => match typed_char(&key) {
                Some(c) => {
                    // The command trigger typed into an empty draft opens the command popup.
                    if c == self.config.command_trigger && draft.is_empty() {
                        self.command_armed = true;
                    }
                    draft.insert(c.encode_utf8(&mut [0; 4]));
                    Outcome::Changed
                }
                None => return Outcome::Ignored,
            },
            Some(Action::TogglePreview) if self.preview.toggle() => Outcome::Changed,
            Some(Action::TogglePreview) => return Outcome::Ignored,
        };
        self.sync_popup(result)
    }

    /// Inserts pasted text (normalised: line endings, no controls but tab and newline); a
    /// paste never submits.
    pub fn handle_paste(&mut self, text: &str) -> Outcome {
        if self.results.hold(Held::Paste(text.to_owned())) {
            return Outcome::Consumed;
        }
        let text = normalize_paste(text);
        if text.is_empty() {
            return Outcome::Consumed;
        }
        self.composer.insert_paste(&text);
        self.sync_popup(Outcome::Changed)
    }

    // ----- answers from the host ----------------------------------------------------------

    /// Delivers the page answering query `id`: the first matches, their total and rows
    /// offered besides them (see [`ResultsPage`]); also the answer to an [`Outcome::More`]. Answers
    /// to stale queries are dropped, and the rows on show stay until the newest query is
    /// answered. Returns what an Enter or Tab waiting for this answer did, and the held
    /// inputs after it (see [`Outcome::Waiting`]); act on each as on
    /// [`Self::handle_event`]'s outcome.
    #[must_use = "an Enter that waited for this answer may have submitted"]
    pub fn set_page(&mut self, id: QueryId, page: ResultsPage) -> Vec<Outcome> {
        if !matches!(self.popup, Popup::Mention(_)) || !self.results.set_page(id, page) {
            return Vec::new();
        }
        resume(self, id)
    }

    /// [`Self::set_page`] with exactly `rows`.
    #[must_use = "an Enter that waited for this answer may have submitted"]
    pub fn set_results(&mut self, id: QueryId, rows: Vec<MentionItem>) -> Vec<Outcome> {
        self.set_page(id, ResultsPage::complete(rows))
    }

    /// Delivers the failure of query `id` (shown in the popup, sanitized); stale ids are
    /// dropped. Returns what a waiting Enter or Tab did, as [`Self::set_page`] does.
    #[must_use = "an Enter that waited for this answer may have submitted"]
    pub fn set_failed(&mut self, id: QueryId, message: impl Into<String>) -> Vec<Outcome> {
        if !matches!(self.popup, Popup::Mention(_)) || !self.results.set_failed(id, message) {
            return Vec::new();
        }
        resume(self, id)
    }

    /// Replaces the answer on show for query `id` with a fresher page, keeping the selected
    /// row when it is still there; an older query's or an unanswered one's is dropped.
    pub fn refresh_page(&mut self, id: QueryId, page: ResultsPage) {
        if matches!(self.popup, Popup::Mention(_)) {
            self.results.refresh_page(id, page);
        }
    }

    /// Delivers rows found elsewhere for query `id` (e.g. in conversations), shown as the
    /// popup's last section (its first row highlighted when no other row is on show); an
    /// older query's answer is dropped. Returns what an Enter or Tab waiting for them did
    /// (see [`Self::expect_late_section`]), as [`Self::set_page`] does.
    #[must_use = "an Enter that waited for these rows may have inserted one"]
    pub fn set_late_section(&mut self, id: QueryId, hits: Section) -> Vec<Outcome> {
        if !matches!(self.popup, Popup::Mention(_)) || !self.results.set_late_section(id, hits) {
            return Vec::new();
        }
        resume(self, id)
    }

    /// Says that rows found elsewhere for query `id` will come ([`Self::set_late_section`]): while
    /// the page shows no row, Enter and Tab wait for them too (a burst of keys would
    /// otherwise send the draft as typed a moment before they show).
    pub fn expect_late_section(&mut self, id: QueryId) {
        if matches!(self.popup, Popup::Mention(_)) {
            self.results.expect_late_section(id);
        }
    }

    /// Shows `page` for query `id` as the first part of its answer (rows found at once,
    /// before slower sections): Enter and Tab still wait for [`Self::set_page`] with the
    /// whole page.
    pub fn set_partial_page(&mut self, id: QueryId, page: ResultsPage) {
        if matches!(self.popup, Popup::Mention(_)) {
            self.results.set_partial_page(id, page);
        }
    }

    /// Changes the title of the popup's hits section (e.g. a progress count), if one is on
    /// show.
    pub fn set_late_title(&mut self, title: &str) {
        if matches!(self.popup, Popup::Mention(_)) {
            self.results.set_late_title(title);
        }
    }

    /// Runs the widget's timers at `now`; call it after handing the widget events (a timer
    /// an event starts runs from that tick) and again at [`Self::next_tick`]. An Enter or
    /// Tab that waited [`MentionConfig::answer_wait`] for an answer gives up (see
    /// [`Outcome::Waiting`]; the inputs held meanwhile are applied), and rows of an older
    /// query on show [`MentionConfig::with_slow_answer`] long while the newest is unanswered
    /// make way for "searching…". Returns what that did, acted on like any outcome
    /// ([`Outcome::Changed`]: redraw).
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
    /// use ratatui_mention::{MentionInputState, Outcome};
    ///
    /// let mut state = MentionInputState::default();
    /// let key = |code| Event::Key(KeyEvent::new(code, KeyModifiers::NONE));
    /// for c in "@ad".chars() {
    ///     let _ = state.handle_event(&key(KeyCode::Char(c)));
    /// }
    /// // Enter before the answer to `@ad` came: it waits for it.
    /// assert!(matches!(state.handle_event(&key(KeyCode::Enter)), Outcome::Waiting { .. }));
    /// let start = Instant::now();
    /// assert!(state.tick(start).is_empty());
    /// assert_eq!(state.next_tick(), Some(start + Duration::from_secs(1)));
    /// // No answer within a second: the wait gives up and nothing was sent.
    /// assert_eq!(state.tick(start + Duration::from_secs(1)), [Outcome::Changed]);
    /// assert_eq!(state.draft(), "@ad");
    /// ```
    #[must_use = "held inputs may have submitted"]
    pub fn tick(&mut self, now: Instant) -> Vec<Outcome> {
        if !matches!(self.popup, Popup::Mention(_)) {
            return Vec::new();
        }
        tick(self, now)
    }

    /// When [`Self::tick`] has something to do next (`None`: no timer runs).
    pub fn next_tick(&self) -> Option<Instant> {
        matches!(self.popup, Popup::Mention(_))
            .then(|| self.results.next_tick())
            .flatten()
    }

    /// Whether an Enter or Tab is waiting for the newest query's answer.
    pub fn is_waiting(&self) -> bool {
        self.results.is_waiting()
    }

    /// The key of the selected item when the visible preview needs the host's content for
    /// it (asked once per selection); answer with [`MentionInputState::set_preview`].
    pub fn want_preview(&mut self) -> Option<String> {
        if !matches!(self.popup, Popup::Mention(_)) {
            return None;
        }
        self.preview.want(&mut self.results)
    }

    /// Delivers the preview of an item; one for an item no longer asked about is dropped.
    pub fn set_preview(&mut self, preview: ItemPreview) {
        self.preview.set(&self.results, preview);
    }

    // ----- what the host reads --------------------------------------------------------------

    /// The draft, as typed (mentions in their canonical text).
    pub fn draft(&self) -> String {
        self.composer.text()
    }

    /// Whether the draft holds no text at all.
    pub fn is_empty(&self) -> bool {
        self.composer.is_empty()
    }

    /// The results of the open `@` popup (none while no popup or the command popup is
    /// open): its query and id, rows, hits and selection.
    pub fn results(&self) -> Option<&ResultsList<MentionItem>> {
        matches!(self.popup, Popup::Mention(_)).then_some(&self.results)
    }

    /// The trigger of the open `@` popup's token.
    pub fn trigger(&self) -> Option<char> {
        match &self.popup {
            Popup::Mention(token) => Some(token.trigger),
            Popup::Command(_) | Popup::None => None,
        }
    }

    /// The finished mention the caret is on or next to, if any (a host shows what it
    /// refers to).
    pub fn mention_at_caret(&self) -> Option<Mention> {
        self.composer.draft().chip_at_caret().cloned()
    }

    /// Whether the last key or paste was not applied because it would have changed the
    /// mention beside the caret (a host says why).
    pub fn edit_refused(&self) -> bool {
        self.composer.draft().last_edit_refused()
    }

    /// Whether a collapsed paste sits beside the caret ([`Action::ExpandPaste`] opens it).
    pub fn collapsed_at_caret(&self) -> bool {
        self.composer.draft().fold_at_caret().is_some()
    }

    /// Whether a popup is open (Esc goes to it first).
    pub fn popup_active(&self) -> bool {
        !matches!(self.popup, Popup::None)
    }

    /// Whether the command popup is the one open.
    pub fn command_popup_active(&self) -> bool {
        matches!(self.popup, Popup::Command(_))
    }

    /// Where the last render placed the caret, for the terminal cursor (`None` when hidden).
    pub fn cursor_position(&self) -> Option<Position> {
        self.cursor
    }

    /// Every Up-history entry, oldest first.
    pub fn history_entries(&self) -> Vec<String> {
        self.composer.history_entries()
    }

    // ----- programmatic edits ---------------------------------------------------------------

    /// Replaces the draft with `text`, caret at the end (one undoable edit); the popup
    /// follows as after a key. Hands back a query for a token under the caret.
    pub fn set_draft(&mut self, text: &str) -> Outcome {
        self.results.drop_wait();
        self.composer.set_text(text);
        self.sync_popup(Outcome::Changed)
    }

    /// Inserts `text` at the caret as typed (no normalisation; nothing submits).
    pub fn insert_text(&mut self, text: &str) -> Outcome {
        if text.is_empty() {
            return Outcome::Consumed;
        }
        self.results.drop_wait();
        self.composer.insert_str(text);
        self.sync_popup(Outcome::Changed)
    }

    /// Inserts `mention`, written in the syntax of its trigger, and one space at the caret
    /// (it becomes a chip when the syntax finds it again).
    pub fn insert_mention(&mut self, mention: &Mention) -> Outcome {
        let written = self.composer.draft().grammar().write(mention);
        self.insert_text(&format!("{written} "))
    }

    /// With the popup open, replaces its token with `text` and one space, as Tab does with
    /// a row's insert text — for a mention the host builds for the selected row itself (an
    /// excerpt of it, say) — and closes the popup. [`Outcome::Inserted`] with the selected
    /// row's key; [`Outcome::Consumed`] (nothing changed) without an open mention popup or
    /// a selected row.
    pub fn replace_token(&mut self, text: &str) -> Outcome {
        let Popup::Mention(token) = &self.popup else {
            return Outcome::Consumed;
        };
        let Some(key) = self.results.selected().map(|r| r.key().to_owned()) else {
            return Outcome::Consumed;
        };
        self.results.drop_wait();
        let text = visible_controls_line(text).into_owned();
        let token = token.start_char..token.end_char;
        self.composer.insert_mention(token, &text);
        self.close_popup();
        let _ = self.sync_popup(Outcome::Changed);
        Outcome::Inserted { key, text }
    }

    /// Moves the caret to char index `index` of the draft (clamped; never inside a chip).
    pub fn set_caret(&mut self, index: usize) -> Outcome {
        self.results.drop_wait();
        self.composer.set_cursor_char_index(index);
        self.sync_popup(Outcome::Changed)
    }

    /// The caret as a char index of the draft.
    pub fn caret(&self) -> usize {
        self.composer.cursor_char_index()
    }

    /// Puts `text` into the composer (e.g. after a failed or cancelled submit), caret at
    /// the end; the pastes that were collapsed when it was submitted are again (a long text
    /// submitted elsewhere has its middle lines collapsed). The popup stays closed for a
    /// token under the caret until the user moves elsewhere.
    pub fn restore_draft(&mut self, text: &str) {
        let folds = self.folds_of(text);
        self.composer.set_text_folded(text, &folds);
        self.close_popup();
        self.command_armed = false;
        self.dismissed_token = mention_token_at(
            &self.composer.text(),
            self.composer.cursor_char_index(),
            self.composer.draft().grammar(),
        )
        .map(|t| t.start_char);
    }

    /// Takes a submitted text the host really sent ([`Outcome::Submit`]): records it in the
    /// input history (Up brings it back, its collapsed pastes too) and clears the draft if
    /// it still is that text (the user may have typed on while it was sent). Returns
    /// whether the draft was cleared.
    pub fn take_submit(&mut self, submitted: &str) -> bool {
        self.push_history(submitted);
        if self.composer.text() != submitted {
            return false;
        }
        self.clear();
        true
    }

    /// Records a submitted text in the input history (Up brings it back): with the pastes
    /// collapsed in it when it is the draft last submitted, else with its middle lines
    /// collapsed when it is long.
    pub fn push_history(&mut self, text: &str) {
        let folds = self
            .submitted
            .as_ref()
            .filter(|s| s.text == text)
            .map(|s| s.folds.clone());
        self.composer.push_history(text, folds);
    }

    /// Moves the draft into history (Up brings it back) and clears the composer. Returns
    /// false when there was nothing to clear.
    pub fn clear_draft_to_history(&mut self) -> bool {
        if self.composer.is_empty() {
            return false;
        }
        let draft = self.composer.text();
        let folds = self.composer.draft().folds().to_vec();
        self.composer.push_history(&draft, Some(folds));
        self.clear();
        true
    }

    /// Forgets the Up history (e.g. before refilling it from a file, oldest first).
    pub fn clear_history(&mut self) {
        self.composer.clear_history();
    }

    // ----- for the widget -------------------------------------------------------------------

    pub(crate) fn composer_text_rows(&self, width: u16) -> u16 {
        self.composer.text_rows(width)
    }

    pub(crate) fn has_selected_row(&self) -> bool {
        matches!(self.popup, Popup::Mention(_)) && self.results.selected().is_some()
    }

    pub(crate) fn preview_enabled(&self) -> bool {
        self.preview.enabled()
    }

    /// Rows the popup wants with the preview at `placement` (0 when none is open).
    pub(crate) fn popup_height(&self, placement: Placement) -> u16 {
        if matches!(self.popup, Popup::None) {
            return 0;
        }
        let body = results_view::body_height(&self.results, self.config.max_visible_rows);
        let list = u16::try_from(body + 2).unwrap_or(u16::MAX);
        match placement {
            Placement::Hidden => list,
            Placement::Right => list.max(preview::RIGHT_MIN_HEIGHT),
            Placement::Below => list.saturating_add(preview::BELOW_HEIGHT),
        }
    }

    pub(crate) fn remember_area(&mut self, area: Rect, below_min_height: u16) {
        self.preview
            .remember_area(area.width, area.height, below_min_height);
    }

    pub(crate) fn set_cursor(&mut self, cursor: Option<Position>) {
        self.cursor = cursor;
    }

    /// Draws the open popup into `area` with the preview at `placement` (squeezed into one
    /// line when `area` is lower than its frame); an empty `area` draws nothing.
    pub(crate) fn render_popup(
        &mut self,
        area: Rect,
        placement: Placement,
        buf: &mut Buffer,
        look: Look<'_>,
    ) {
        // A trigger's own labels, else the widget's; the title names the trigger.
        let own = match &self.popup {
            Popup::Mention(token) => self
                .config
                .trigger(token.trigger)
                .and_then(Trigger::labels)
                .cloned(),
            Popup::Command(_) | Popup::None => None,
        };
        let look = Look {
            styles: look.styles,
            labels: own.as_ref().unwrap_or(look.labels),
        };
        let (title, placement) = match &self.popup {
            Popup::None => return,
            Popup::Mention(token) => (look.labels.title_for(token.trigger), placement),
            Popup::Command(_) => (look.labels.command_title.clone(), Placement::Hidden),
        };
        if area.height == 0 {
            self.results.set_drawn(Drawn::default());
            return;
        }
        if area.height < results_view::FRAMED_MIN_HEIGHT {
            let rows = results_view::render_compact(&self.results, area, buf, look);
            self.results.set_drawn(Drawn { area, rows });
            return;
        }
        let (list_area, inner) = results_view::render_frame(
            &self.results,
            &title,
            placement,
            self.preview.shown(),
            area,
            buf,
            look,
        );
        let body = results_view::body_height(&self.results, self.config.max_visible_rows);
        let rows = Rect {
            height: inner.height.min(u16::try_from(body).unwrap_or(u16::MAX)),
            ..inner
        };
        let rows = results_view::render_rows(&self.results, rows, buf, look);
        self.results.set_drawn(Drawn {
            area: list_area,
            rows,
        });
    }

    pub(crate) fn render_composer(
        &self,
        inner: Rect,
        buf: &mut Buffer,
        placeholder: (&str, Style),
        styles: (Style, Style),
    ) -> Option<Position> {
        self.composer.render_text(inner, buf, placeholder, styles)
    }

    // ----- internals --------------------------------------------------------------------

    /// Whether a space typed at the end of `token` continues its query (multi-word
    /// queries): after a first word that is not empty, while the popup shows rows or their
    /// answer is still to come, or inside a quote still open (`@"my notes`). Where the
    /// token is then is remembered with the text after it (the rest of the draft).
    fn space_continues(&self, token: &MentionToken) -> Option<MultiWord> {
        let open_quote = token
            .query
            .strip_prefix('"')
            .is_some_and(|rest| !rest.contains('"'));
        let rows = self.results.in_flight() || !self.results.is_empty();
        let first_word = !token.query.is_empty();
        (first_word && (open_quote || rows)).then(|| MultiWord {
            start: token.start_char,
            after: self
                .composer
                .text()
                .chars()
                .count()
                .saturating_sub(token.end_char),
        })
    }

    fn close_popup(&mut self) {
        self.popup = Popup::None;
        self.multi_word = None;
        self.results.clear();
        self.preview.clear();
    }

    fn clear(&mut self) {
        self.composer.set_text("");
        self.close_popup();
        self.dismissed_token = None;
        self.command_armed = false;
    }

    /// Tab/Enter in the command popup: the first word becomes the selected (else the
    /// first) command. With `run` and a command without argument the draft is submitted;
    /// otherwise a space follows for the argument.
    fn complete_command(&mut self, run: bool) -> Outcome {
        let Popup::Command(token) = &self.popup else {
            return Outcome::Consumed;
        };
        let Some(row) = self.results.selected() else {
            return Outcome::Consumed;
        };
        let name = row.key().to_string();
        let insert = row.written(self.composer.draft().grammar(), '/');
        let token = token.start_char..token.end_char;
        let takes_argument = self
            .config
            .commands
            .iter()
            .any(|c| c.name == name && c.takes_argument);
        self.command_armed = false;
        self.close_popup();
        if run && !takes_argument {
            self.composer.replace_chars(token, &insert);
            return self.submit();
        }
        self.composer.replace_chars(token, &format!("{insert} "));
        let _ = self.sync_popup(Outcome::Changed);
        Outcome::Inserted {
            key: name,
            text: insert,
        }
    }

    /// The command popup for the draft's first word, while armed and some command matches.
    fn sync_command_popup(&mut self) -> bool {
        if !self.command_armed {
            return false;
        }
        let trigger = self.config.command_trigger;
        let Some(token) = command_token_at(
            &self.composer.text(),
            self.composer.cursor_char_index(),
            trigger,
        ) else {
            self.command_armed = false;
            return false;
        };
        let rows: Vec<MentionItem> = matching(&self.config.commands, &token.query)
            .into_iter()
            .map(|c| CommandEntry::item(c, trigger))
            .collect();
        if rows.is_empty() {
            // Stays armed: deleting back to a known prefix shows it again.
            self.close_popup();
            return true;
        }
        let same = matches!(&self.popup, Popup::Command(p) if p.query == token.query);
        if !same {
            if !matches!(self.popup, Popup::Command(_)) {
                self.close_popup();
            }
            let id = self.results.ask(token.query.clone());
            self.results.set_page(id, ResultsPage::complete(rows));
            self.popup = Popup::Command(token);
        }
        true
    }

    fn submit(&mut self) -> Outcome {
        let text = self.composer.text();
        if text.trim().is_empty() {
            return Outcome::Consumed;
        }
        self.submitted = Some(Entry::new(&text, self.composer.draft().folds().to_vec()));
        Outcome::Submit(text)
    }

    /// The folds `text` gets back: those it had when last submitted, else its long middle.
    fn folds_of(&self, text: &str) -> Vec<Fold> {
        match self.submitted.as_ref().filter(|s| s.text == text) {
            Some(submitted) => submitted.folds.clone(),
            None => long_text_folds(text, self.config.collapse_lines),
        }
    }

    /// Tab/Enter in the popup: the token becomes the highlighted item's insert text and a
    /// space — or, for an item that continues, its insert text alone with the popup open on
    /// it (a [`Outcome::Query`] for it then). Nothing for a blocked item.
    fn insert_selected(&mut self) -> Outcome {
        let Popup::Mention(token) = &self.popup else {
            return Outcome::Consumed;
        };
        let Some(row) = self.results.selected().filter(|r| r.blocked().is_none()) else {
            return Outcome::Consumed;
        };
        // The host's text; control characters still never go into the draft raw.
        let written = row.written(self.composer.draft().grammar(), token.trigger);
        let text = visible_controls_line(&written).into_owned();
        let key = row.key().to_string();
        let continues = row.continues();
        let token = token.start_char..token.end_char;
        if continues {
            let after = self
                .composer
                .text()
                .chars()
                .count()
                .saturating_sub(token.end);
            self.composer.replace_chars(token.clone(), &text);
            self.close_popup();
            // The text may hold spaces (`@"my dir/`): it stays one token.
            self.multi_word = Some(MultiWord {
                start: token.start,
                after,
            });
            return self.sync_popup(Outcome::Inserted { key, text });
        }
        self.composer.insert_mention(token, &text);
        self.close_popup();
        // The caret now follows the inserted space, and the token ended at whitespace or
        // the end of the text, so no token (and no query) is under it.
        let _ = self.sync_popup(Outcome::Changed);
        Outcome::Inserted { key, text }
    }

    /// Recomputes the popup from the text and caret; a new or changed query is returned as
    /// [`Outcome::Query`] in place of `result`.
    fn sync_popup(&mut self, result: Outcome) -> Outcome {
        if self.sync_command_popup() {
            return result;
        }
        if matches!(self.popup, Popup::Command(_)) {
            self.close_popup();
        }
        let (text, caret) = (self.composer.text(), self.composer.cursor_char_index());
        let multi_word = self.multi_word.and_then(|multi| {
            multi_word_token_at(&text, caret, self.composer.draft().grammar(), multi)
        });
        let multi = multi_word.is_some();
        let token =
            multi_word.or_else(|| mention_token_at(&text, caret, self.composer.draft().grammar()));
        let Some(token) = token else {
            if !matches!(self.popup, Popup::None) {
                self.close_popup();
            }
            self.dismissed_token = None;
            return result;
        };
        if self.dismissed_token == Some(token.start_char) {
            if !matches!(self.popup, Popup::None) {
                self.close_popup();
            }
            return result;
        }
        self.dismissed_token = None;
        if !multi {
            self.multi_word = None;
        }
        if let Popup::Mention(open) = &self.popup
            && open.start_char == token.start_char
            && open.trigger == token.trigger
        {
            let same_query = open.query == token.query;
            self.popup = Popup::Mention(token.clone());
            if same_query {
                return result;
            }
        } else {
            let multi_word = self.multi_word.take();
            self.close_popup();
            self.multi_word = multi_word;
            self.popup = Popup::Mention(token.clone());
        }
        let id = self.results.ask(token.query.clone());
        Outcome::Query {
            id,
            text: token.query,
            trigger: token.trigger,
        }
    }
}

impl WaitHost for MentionInputState {
    type Out = Outcome;

    fn results(&mut self) -> &mut ResultsList<MentionItem> {
        &mut self.results
    }

    /// Enter or Tab inserts the highlighted row; with no row on show Enter submits the
    /// draft as typed (Tab: the new rows still need a frame).
    fn act(&mut self, key: WaitingKey) -> Outcome {
        let acted = match self.results.enter_action() {
            EnterAction::Take => self.insert_selected(),
            EnterAction::AsTyped if key == WaitingKey::Enter => self.submit(),
            _ => Outcome::Changed,
        };
        if acted == Outcome::Consumed {
            Outcome::Changed
        } else {
            acted
        }
    }

    fn key(&mut self, key: KeyEvent) -> Outcome {
        self.handle_key(key)
    }

    fn paste(&mut self, text: &str) -> Outcome {
        self.handle_paste(text)
    }

    fn changed() -> Outcome {
        Outcome::Changed
    }
}

fn changed(did: bool) -> Outcome {
    if did {
        Outcome::Changed
    } else {
        Outcome::Consumed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::{KeyCode, KeyModifiers};
    use pretty_assertions::assert_eq;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn ctrl(c: char) -> KeyEvent {
        KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
    }

    fn new_pane() -> MentionInputState {
        MentionInputState::new(MentionConfig::default().with_history_size(10))
    }

    fn type_str(pane: &mut MentionInputState, text: &str) -> Vec<Outcome> {
        text.chars()
            .map(|c| pane.handle_key(key(KeyCode::Char(c))))
            .collect()
    }

    /// A row inserting the mention dsh-refs writes for a one-letter id (`ImEi` is `"a"`).
    fn row(id: &str, label: &str) -> MentionItem {
        let body = match id {
            "a" => "ImEi",
            "b" => "ImIi",
            "c" => "ImMi",
            _ => "InMxIg",
        };
        MentionItem::new(id, label, &Mention::new(label, format!("user:{body}")))
    }

    fn query(id: u64, text: &str) -> Outcome {
        Outcome::Query {
            id,
            text: text.to_string(),
            trigger: '@',
        }
    }

    fn inserted(key: &str, text: &str) -> Outcome {
        Outcome::Inserted {
            key: key.to_string(),
            text: text.to_string(),
        }
    }

    /// A pane with `@fo` typed and three rows answered.
    fn pane_with_rows() -> MentionInputState {
        let mut pane = new_pane();
        type_str(&mut pane, "@fo");
        let _ = pane.set_results(3, vec![row("a", "Foo"), row("b", "Food"), row("c", "Fox")]);
        pane
    }

    fn selected_id(pane: &MentionInputState) -> Option<String> {
        pane.results()
            .and_then(|r| r.selected())
            .map(|r| r.key().to_string())
    }

    #[test]
    fn the_host_replaces_the_token_with_its_own_text_for_the_selected_row() {
        let mut pane = pane_with_rows();
        let _ = pane.handle_key(key(KeyCode::Down));
        let text = "@[Food, part](part:WyJiIiw3LDIsMl0)";
        assert_eq!(pane.replace_token(text), inserted("b", text));
        assert_eq!(pane.draft(), format!("{text} "));
        assert!(!pane.popup_active());
        // Nothing open, nothing replaced; controls never go in raw.
        assert_eq!(pane.replace_token("x"), Outcome::Consumed);
        let mut pane = pane_with_rows();
        let _ = pane.replace_token("a\u{1b}[2Jb");
        assert_eq!(pane.draft(), "a\\x1B[2Jb ");
    }

    #[test]
    fn typing_an_at_token_queries_each_change() {
        let mut pane = new_pane();
        let results = type_str(&mut pane, "hi @fo");
        assert_eq!(
            results,
            [
                Outcome::Changed,
                Outcome::Changed,
                Outcome::Changed,
                query(1, ""),
                query(2, "f"),
                query(3, "fo"),
            ]
        );
        assert!(pane.popup_active());
        // Moving the caret inside the token keeps the query: no new request.
        assert_eq!(pane.handle_key(key(KeyCode::Left)), Outcome::Changed);
        assert!(pane.popup_active());
        // Backspace shortens the query.
        // (End would jump to the popup's last row: the caret goes right instead.)
        assert_eq!(pane.handle_key(key(KeyCode::Right)), Outcome::Changed);
        assert_eq!(pane.handle_key(key(KeyCode::Backspace)), query(4, "f"));
    }

    #[test]
    fn shifted_and_altgr_at_signs_open_the_popup() {
        let mut pane = new_pane();
        let shifted = KeyEvent::new(KeyCode::Char('@'), KeyModifiers::SHIFT);
        assert_eq!(pane.handle_key(shifted), query(1, ""));
        pane.handle_key(key(KeyCode::Char(' ')));
        let altgr = KeyEvent::new(
            KeyCode::Char('@'),
            KeyModifiers::CONTROL | KeyModifiers::ALT,
        );
        assert_eq!(pane.handle_key(altgr), query(2, ""));
        assert_eq!(pane.draft(), "@ @");
    }

    #[test]
    fn foo_at_bar_never_opens() {
        let mut pane = new_pane();
        let results = type_str(&mut pane, "foo@bar");
        assert!(
            results.iter().all(|r| *r == Outcome::Changed),
            "{results:?}"
        );
        assert!(!pane.popup_active());
    }

    #[test]
    fn stale_answers_are_dropped_and_old_rows_stay() {
        let mut pane = new_pane();
        type_str(&mut pane, "@f");
        let _ = pane.set_results(1, vec![row("old", "Old")]);
        assert_eq!(selected_id(&pane), None, "stale id 1 dropped");
        let _ = pane.set_results(2, vec![row("a", "Foo")]);
        assert_eq!(selected_id(&pane).as_deref(), Some("a"));
        assert_eq!(pane.handle_key(key(KeyCode::Char('o'))), query(3, "fo"));
        assert_eq!(
            selected_id(&pane).as_deref(),
            Some("a"),
            "old rows stay while in flight"
        );
        let _ = pane.set_results(2, vec![row("x", "X")]);
        assert_eq!(
            selected_id(&pane).as_deref(),
            Some("a"),
            "id 2 is stale now"
        );
        let _ = pane.set_results(3, Vec::new());
        assert_eq!(selected_id(&pane), None);
        // Answers after the popup closed go nowhere.
        pane.handle_key(key(KeyCode::Char(' ')));
        let _ = pane.set_results(3, vec![row("late", "Late")]);
        assert!(!pane.popup_active());
    }

    #[test]
    fn selection_moves_and_wraps() {
        let mut pane = pane_with_rows();
        assert_eq!(selected_id(&pane).as_deref(), Some("a"));
        let steps = [
            (key(KeyCode::Down), "b"),
            (ctrl('n'), "c"),
            (key(KeyCode::Down), "a"),
            (key(KeyCode::Up), "c"),
            (ctrl('p'), "b"),
        ];
        for (k, want) in steps {
            assert_eq!(pane.handle_key(k), Outcome::Changed);
            assert_eq!(selected_id(&pane).as_deref(), Some(want), "{k:?}");
        }
        assert_eq!(pane.draft(), "@fo", "moving never edits the draft");
    }

    #[test]
    fn enter_inserts_mention_and_does_not_submit() {
        let mut pane = pane_with_rows();
        pane.handle_key(key(KeyCode::Down));
        assert_eq!(
            pane.handle_key(key(KeyCode::Enter)),
            inserted("b", "@[Food](user:ImIi)")
        );
        assert_eq!(pane.draft(), "@[Food](user:ImIi) ");
        assert!(!pane.popup_active());
        type_str(&mut pane, "why?");
        assert_eq!(
            pane.handle_key(key(KeyCode::Enter)),
            Outcome::Submit("@[Food](user:ImIi) why?".to_string())
        );
    }

    #[test]
    fn inserted_text_shows_control_characters_visibly() {
        let mut pane = new_pane();
        type_str(&mut pane, "@x");
        let id = pane
            .results()
            .map(ResultsList::query_id)
            .unwrap_or_default();
        let _ = pane.set_results(id, vec![row("s1", "\u{1b}[31mred\u{7}")]);
        // A careless host's raw controls still never reach the draft.
        let want = r"@[\x1B[31mred\x07](user:InMxIg)";
        assert_eq!(pane.handle_key(key(KeyCode::Tab)), inserted("s1", want));
        assert_eq!(pane.draft(), format!("{want} "));
        assert!(!pane.draft().chars().any(term_text::is_control));
    }

    #[test]
    fn tab_replaces_the_whole_token_mid_text() {
        let mut pane = new_pane();
        type_str(&mut pane, "ask @foo now");
        for _ in 0.." now".len() + 2 {
            pane.handle_key(key(KeyCode::Left));
        }
        assert!(pane.popup_active(), "caret inside @foo");
        let id = pane
            .results()
            .map(ResultsList::query_id)
            .unwrap_or_default();
        let mention = "@[a\\]b](user:InMxIg)";
        let item = MentionItem::new("s1", "a]b", &Mention::new("a]b", "user:InMxIg"));
        let _ = pane.set_results(id, vec![item]);
        assert_eq!(pane.handle_key(key(KeyCode::Tab)), inserted("s1", mention));
        assert_eq!(pane.draft(), "ask @[a\\]b](user:InMxIg)  now");
    }

    #[test]
    fn enter_with_nothing_selected_submits_the_draft_as_typed() {
        let submit = |s: &str| Outcome::Submit(s.to_owned());
        let mut pane = new_pane();
        type_str(&mut pane, "@zz");
        // "searching…": Enter waits for the answer, which has nothing to select.
        assert_eq!(
            pane.handle_key(key(KeyCode::Enter)),
            Outcome::Waiting { id: 3 }
        );
        assert_eq!(pane.set_results(3, Vec::new()), [submit("@zz")]);
        // "no matches": nothing selected.
        assert_eq!(pane.handle_key(key(KeyCode::Enter)), submit("@zz"));
        assert_eq!(
            pane.handle_key(key(KeyCode::Tab)),
            Outcome::Consumed,
            "no row to insert"
        );
        assert_eq!(pane.draft(), "@zz");
    }

    #[test]
    fn tab_inserts_the_first_row_when_none_is_selected() {
        let mut pane = new_pane();
        type_str(&mut pane, "@zz");
        let _ = pane.set_results(3, Vec::new());
        type_str(&mut pane, "z");
        let _ = pane.set_results(4, vec![row("a", "Zzz"), row("b", "Zzzz")]);
        assert!(matches!(
            pane.handle_key(key(KeyCode::Tab)),
            Outcome::Inserted { .. }
        ));
        assert_eq!(pane.draft(), "@[Zzz](user:ImEi) ");
    }

    #[test]
    fn editing_keys_follow_the_shell() {
        let alt = |c| KeyEvent::new(KeyCode::Char(c), KeyModifiers::ALT);
        let mut pane = new_pane();
        pane.handle_paste("one @[A](user:IkEi) two three");
        pane.handle_key(ctrl('w'));
        assert_eq!(pane.draft(), "one @[A](user:IkEi) two ");
        pane.handle_key(alt('b'));
        pane.handle_key(alt('b'));
        pane.handle_key(ctrl('k'));
        assert_eq!(
            pane.draft(),
            "one ",
            "Alt+B twice: before the mention; Ctrl+K kills it"
        );
        pane.handle_key(ctrl('a'));
        pane.handle_key(ctrl('y'));
        assert_eq!(
            pane.draft(),
            "@[A](user:IkEi) two one ",
            "Ctrl+Y yanks it back"
        );
        pane.handle_key(ctrl('e'));
        pane.handle_key(ctrl('u'));
        assert_eq!(pane.draft(), "", "Ctrl+U deletes to the line start");
        pane.handle_key(ctrl('z'));
        assert_eq!(pane.draft(), "@[A](user:IkEi) two one ");
        pane.handle_key(KeyEvent::new(KeyCode::Char('7'), KeyModifiers::CONTROL));
        assert_eq!(pane.draft(), "one ", "Ctrl+_ (sent as Ctrl+7) undoes too");
        assert_eq!(
            pane.handle_key(ctrl('q')),
            Outcome::Ignored,
            "unbound: the host's"
        );
        pane.handle_key(ctrl('e'));
        pane.handle_key(key(KeyCode::Tab));
        assert_eq!(pane.draft(), "one \t", "Tab without a popup types a tab");
    }

    #[test]
    fn backspace_after_mention_removes_it_and_undo_restores() {
        let mut pane = pane_with_rows();
        pane.handle_key(key(KeyCode::Enter));
        let with_mention = pane.draft();
        assert_eq!(pane.handle_key(key(KeyCode::Backspace)), Outcome::Changed);
        assert_eq!(pane.draft(), "@[Foo](user:ImEi)", "first the space");
        pane.handle_key(key(KeyCode::Backspace));
        assert_eq!(pane.draft(), "", "then the whole mention");
        pane.handle_key(ctrl('z'));
        assert_eq!(pane.draft(), "@[Foo](user:ImEi)", "undo brings it back");
        assert!(
            !pane.popup_active(),
            "a finished mention never opens the popup"
        );
        pane.handle_key(ctrl('z'));
        assert_eq!(pane.draft(), with_mention, "and the space");
    }

    #[test]
    fn delete_before_mention_removes_it() {
        let mut pane = new_pane();
        pane.handle_paste("x @[A](user:IkEi) y");
        // Left steps over `y`, the space and then the whole mention.
        for _ in 0..3 {
            pane.handle_key(key(KeyCode::Left));
        }
        pane.handle_key(key(KeyCode::Delete));
        assert_eq!(pane.draft(), "x  y");
    }

    #[test]
    fn esc_closes_and_stays_closed_for_that_token() {
        let mut pane = new_pane();
        type_str(&mut pane, "@se");
        assert_eq!(pane.handle_key(key(KeyCode::Esc)), Outcome::Changed);
        assert!(!pane.popup_active());
        assert_eq!(type_str(&mut pane, "x"), [Outcome::Changed]);
        assert!(!pane.popup_active(), "still the dismissed token");
        assert_eq!(
            pane.handle_key(key(KeyCode::Enter)),
            Outcome::Submit("@sex".into())
        );
        assert_eq!(
            pane.handle_key(key(KeyCode::Esc)),
            Outcome::Ignored,
            "no popup: the host's Esc"
        );
        assert_eq!(type_str(&mut pane, " @"), [Outcome::Changed, query(4, "")]);
        assert!(pane.popup_active(), "a new token opens again");
    }

    #[test]
    fn paste_normalises_and_never_submits() {
        let mut pane = new_pane();
        assert_eq!(
            pane.handle_paste("one\r\ntwo\rthree\u{1b}[2J\n"),
            Outcome::Changed
        );
        assert_eq!(pane.draft(), "one\ntwo\nthree[2J\n");
        assert_eq!(pane.handle_paste("\u{7}"), Outcome::Consumed);
        assert_eq!(pane.handle_paste("@ses"), query(1, "ses"));
    }

    #[test]
    fn newline_keys_do_not_submit() {
        let mut pane = new_pane();
        type_str(&mut pane, "a");
        pane.handle_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::SHIFT));
        type_str(&mut pane, "b");
        pane.handle_key(ctrl('j'));
        type_str(&mut pane, "c");
        pane.handle_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::ALT));
        assert_eq!(pane.draft(), "a\nb\nc\n");
    }

    #[test]
    fn submit_rules() {
        let mut pane = new_pane();
        assert_eq!(
            pane.handle_key(key(KeyCode::Enter)),
            Outcome::Consumed,
            "empty"
        );
        type_str(&mut pane, "  ");
        assert_eq!(
            pane.handle_key(key(KeyCode::Enter)),
            Outcome::Consumed,
            "blank"
        );
        pane.restore_draft("/title New name");
        assert_eq!(
            pane.handle_key(key(KeyCode::Enter)),
            Outcome::Submit("/title New name".into()),
            "commands are the host's business"
        );
        pane.restore_draft("hello");
        assert_eq!(
            pane.handle_key(key(KeyCode::Enter)),
            Outcome::Submit("hello".into())
        );
        assert_eq!(pane.draft(), "hello", "the host takes it once sent");
        assert!(!pane.take_submit("other"), "the draft is not that text");
        assert_eq!(pane.draft(), "hello");
        assert!(pane.take_submit("hello"));
        assert_eq!(pane.draft(), "");
        assert_eq!(pane.history_entries(), ["other", "hello"], "both recorded");
        pane.handle_key(key(KeyCode::Up));
        assert_eq!(pane.draft(), "hello", "Up brings the sent text back");
    }

    #[test]
    fn ctrl_c_and_ctrl_d_are_left_to_the_host() {
        let mut pane = new_pane();
        assert_eq!(
            pane.handle_key(ctrl('d')),
            Outcome::Consumed,
            "nothing to delete"
        );
        type_str(&mut pane, "ab");
        pane.handle_key(key(KeyCode::Left));
        assert_eq!(pane.handle_key(ctrl('d')), Outcome::Changed);
        assert_eq!(pane.draft(), "a", "Ctrl+D deletes forward on a draft");
        assert_eq!(pane.handle_key(ctrl('c')), Outcome::Ignored);
        assert_eq!(pane.handle_key(key(KeyCode::F(5))), Outcome::Ignored);
        assert_eq!(pane.draft(), "a");
        assert!(pane.clear_draft_to_history());
        assert_eq!(pane.draft(), "");
        assert!(!pane.clear_draft_to_history(), "nothing left to clear");
        assert_eq!(pane.handle_key(key(KeyCode::Up)), Outcome::Changed);
        assert_eq!(pane.draft(), "a", "Up brings the cleared draft back");
    }

    #[test]
    fn history_browses_at_edges_and_keeps_the_draft() {
        let mut pane = new_pane();
        pane.push_history("first\nsecond line");
        pane.push_history("@[X](user:IngiXQ) hi");
        type_str(&mut pane, "draft");
        pane.handle_key(key(KeyCode::Up));
        assert_eq!(pane.draft(), "@[X](user:IngiXQ) hi");
        pane.handle_key(key(KeyCode::Up));
        assert_eq!(pane.draft(), "first\nsecond line");
        // An untouched recall: Up goes on through history, not up its lines.
        assert_eq!(
            pane.handle_key(key(KeyCode::Up)),
            Outcome::Consumed,
            "oldest"
        );
        // Touched (the caret moved): Up moves to the first line, not further back.
        pane.handle_key(key(KeyCode::Left));
        assert_eq!(pane.handle_key(key(KeyCode::Up)), Outcome::Changed);
        assert_eq!(pane.draft(), "first\nsecond line");
        assert_eq!(pane.caret(), 5, "on the first line");
        // On the first row Down moves down a row; on the last, to the newer entry.
        pane.handle_key(key(KeyCode::Down));
        pane.handle_key(key(KeyCode::Down));
        assert_eq!(pane.draft(), "@[X](user:IngiXQ) hi");
        pane.handle_key(key(KeyCode::Down));
        assert_eq!(pane.draft(), "draft");
    }

    /// Rows the widget wants at `width` in a bordered block, with room to spare.
    fn height(pane: &MentionInputState, width: u16) -> u16 {
        crate::MentionInput::new()
            .block(ratatui::widgets::Block::bordered())
            .desired_height(pane, width, u16::MAX)
    }

    #[test]
    fn desired_height_follows_edits() {
        let mut pane = new_pane();
        assert_eq!(height(&pane, 20), 3, "one row plus border");
        pane.handle_paste("a\nb\nc");
        assert_eq!(height(&pane, 20), 5);
        pane.handle_key(ctrl('z'));
        assert_eq!(pane.draft(), "");
        assert_eq!(height(&pane, 20), 3, "undo shrinks it again");
        pane.handle_paste(&"x".repeat(100));
        assert_eq!(height(&pane, 20), 8, "100 chars wrap to 6 rows of 18");
        assert_eq!(height(&pane, 60), 4, "and to 2 rows of 58");
        for _ in 0..20 {
            pane.handle_key(ctrl('j'));
        }
        assert_eq!(height(&pane, 20), 10, "capped at 8 text rows");
        pane.handle_paste(" @");
        assert_eq!(height(&pane, 20), 10 + 3, "plus the popup's message row");
    }

    #[test]
    fn release_events_are_ignored() {
        let mut pane = new_pane();
        let mut k = key(KeyCode::Char('x'));
        k.kind = KeyEventKind::Release;
        assert_eq!(pane.handle_key(k), Outcome::Ignored);
        assert_eq!(pane.handle_event(&Event::Key(k)), Outcome::Ignored);
        assert_eq!(pane.handle_event(&Event::FocusLost), Outcome::Ignored);
        assert_eq!(pane.draft(), "");
    }

    #[test]
    fn restore_draft_keeps_popup_closed_until_edit_elsewhere() {
        let mut pane = new_pane();
        pane.restore_draft("look at @ses");
        assert!(!pane.popup_active());
        assert_eq!(pane.draft(), "look at @ses");
        assert_eq!(type_str(&mut pane, " @"), [Outcome::Changed, query(1, "")]);
    }

    #[test]
    fn failed_listing_is_shown_not_fatal() {
        let mut pane = new_pane();
        type_str(&mut pane, "@");
        let _ = pane.set_failed(1, "disk\u{7} busy");
        assert!(pane.popup_active());
        assert_eq!(
            pane.handle_key(key(KeyCode::Enter)),
            Outcome::Submit("@".into()),
            "nothing to select: Enter sends the draft"
        );
    }

    fn with_commands() -> MentionInputState {
        let commands = vec![
            CommandEntry::new("help", "/help", "show help", false),
            CommandEntry::new("title", "/title TEXT", "set the title", true),
            CommandEntry::new("theme", "/theme", "switch colours", false),
        ];
        MentionInputState::new(MentionConfig::default().with_commands(commands))
    }

    fn command_rows(pane: &MentionInputState) -> Vec<String> {
        if !pane.command_popup_active() {
            return Vec::new();
        }
        pane.results
            .rows()
            .iter()
            .map(|r| r.key().to_owned())
            .collect()
    }

    #[test]
    fn slash_on_an_empty_draft_opens_the_command_popup_and_filters() {
        let mut pane = with_commands();
        assert_eq!(
            type_str(&mut pane, "/"),
            [Outcome::Changed],
            "no host query"
        );
        assert!(pane.command_popup_active());
        assert_eq!(command_rows(&pane), ["help", "title", "theme"]);
        type_str(&mut pane, "T");
        assert_eq!(command_rows(&pane), ["title", "theme"], "prefix, any case");
        type_str(&mut pane, "x");
        assert!(!pane.popup_active(), "nothing matches: no popup");
        pane.handle_key(key(KeyCode::Backspace));
        assert_eq!(command_rows(&pane), ["title", "theme"], "back again");
        type_str(&mut pane, "i ");
        assert!(!pane.popup_active(), "the first word ended");
        // A `/` typed later, or a draft recalled or pasted, opens nothing.
        let mut pane = with_commands();
        type_str(&mut pane, "a /");
        assert!(!pane.popup_active());
        pane.handle_paste("/help");
        assert!(!pane.popup_active());
        let mut pane = with_commands();
        type_str(&mut pane, "/etc/");
        assert!(!pane.popup_active(), "a path is no command");
    }

    #[test]
    fn tab_completes_and_enter_runs_a_command_without_argument() {
        let mut pane = with_commands();
        type_str(&mut pane, "/he");
        assert!(matches!(
            pane.handle_key(key(KeyCode::Tab)),
            Outcome::Inserted { .. }
        ));
        assert_eq!(pane.draft(), "/help ");
        assert!(!pane.popup_active());

        let mut pane = with_commands();
        type_str(&mut pane, "/h");
        assert_eq!(
            pane.handle_key(key(KeyCode::Enter)),
            Outcome::Submit("/help".into())
        );

        // A command with an argument waits for it.
        let mut pane = with_commands();
        type_str(&mut pane, "/t");
        assert_eq!(pane.handle_key(key(KeyCode::Down)), Outcome::Changed);
        assert_eq!(pane.handle_key(key(KeyCode::Up)), Outcome::Changed);
        assert!(matches!(
            pane.handle_key(key(KeyCode::Enter)),
            Outcome::Inserted { .. }
        ));
        assert_eq!(pane.draft(), "/title ");

        // Esc closes it for good; Enter then submits the draft as typed.
        let mut pane = with_commands();
        type_str(&mut pane, "/he");
        assert_eq!(pane.handle_key(key(KeyCode::Esc)), Outcome::Changed);
        type_str(&mut pane, "l");
        assert!(!pane.popup_active());
        assert_eq!(
            pane.handle_key(key(KeyCode::Enter)),
            Outcome::Submit("/hel".into())
        );
    }
}
