//! The bottom pane: the composer plus at most one popup. Keys and pastes go in, intents
//! come out ([`InputResult`]); popup visibility is recomputed from text, caret and the
//! dismissed token after every key and paste (docs/composer.md (the @ popup), §6.2).

use crossterm::event::{KeyEvent, KeyEventKind};
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};

use super::composer::Composer;
use super::key_map::{Action, classify, typed_char};
use super::mention_popup::{DisplayZone, MentionPopup};
use super::mention_token::mention_token_at;
use super::paste::normalize_paste;
use dsh_reference::{Candidate, format_mention};
use ratatui_mention::untrusted::visible_controls_line;

/// What a key or paste asks of the app. Every variant but `None` also means "redraw".
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputResult {
    /// Nothing changed.
    None,
    /// Something on screen changed.
    Redraw,
    /// Enter on a non-blank draft: submit this canonical text. The draft is kept until the
    /// app calls [`BottomPane::clear_if_unchanged`].
    Submit(String),
    /// Enter on a draft starting with `/`.
    Command(String),
    /// The `@` token's query changed: cancel the previous query, run this one off the UI
    /// thread and answer with [`BottomPane::set_candidates`].
    QueryCandidates { query_id: u64, query: String },
    /// Esc with no popup open (cancel preparation, else the running turn).
    Escape,
    /// Ctrl+C (cancel the turn, else [`BottomPane::clear_draft_to_history`], else quit).
    Interrupt,
    /// Ctrl+D on an empty draft.
    Quit,
}

/// The one popup the pane may show.
#[derive(Debug, Clone)]
pub enum ActivePopup {
    None,
    Mention(MentionPopup),
}

/// Composer + popup, owned by the app and drawn at the bottom of the screen.
#[derive(Debug, Clone)]
pub struct BottomPane {
    composer: Composer,
    popup: ActivePopup,
    /// Char index of the `@` whose popup the user closed with Esc.
    dismissed_token: Option<usize>,
    last_query_id: u64,
    submission_locked: bool,
    zone: DisplayZone,
}

impl BottomPane {
    /// An empty pane remembering up to `history_size` submissions.
    pub fn new(history_size: usize) -> Self {
        Self::with_zone(history_size, DisplayZone::Local)
    }

    /// Like [`BottomPane::new`], showing creation times in `zone` (tests use a fixed one).
    pub fn with_zone(history_size: usize, zone: DisplayZone) -> Self {
        Self {
            composer: Composer::new(history_size),
            popup: ActivePopup::None,
            dismissed_token: None,
            last_query_id: 0,
            submission_locked: false,
            zone,
        }
    }

    /// Handles one key: popup keys first, then the composer.
    pub fn handle_key(&mut self, key: KeyEvent) -> InputResult {
        if key.kind == KeyEventKind::Release {
            return InputResult::None;
        }
        let action = classify(&key);
        if let ActivePopup::Mention(popup) = &mut self.popup {
            match action {
                Some(Action::Up | Action::PopupPrev) => {
                    popup.move_up();
                    return InputResult::Redraw;
                }
                Some(Action::Down | Action::PopupNext) => {
                    popup.move_down();
                    return InputResult::Redraw;
                }
                // Tab inserts the selected row, else the first one offered.
                Some(Action::Complete) => return self.insert_selected(true),
                // Enter inserts only a selected row; with none, the draft is submitted.
                Some(Action::Submit) if popup.selected().is_some() => {
                    return self.insert_selected(false);
                }
                Some(Action::Escape) => {
                    self.dismissed_token = Some(popup.token().start_char);
                    self.popup = ActivePopup::None;
                    return InputResult::Redraw;
                }
                _ => {}
            }
        }
        let draft = self.composer.draft_mut();
        let result = match action {
            Some(Action::Submit) => return self.submit(),
            Some(Action::Escape) => return InputResult::Escape,
            Some(Action::Interrupt) => return InputResult::Interrupt,
            Some(Action::QuitIfEmpty) if draft.is_empty() => return InputResult::Quit,
            Some(Action::QuitIfEmpty | Action::DeleteForward) => changed(draft.delete_forward()),
            Some(Action::DeleteBackward) => changed(draft.delete_backward()),
            Some(Action::Newline) => {
                draft.insert("\n");
                InputResult::Redraw
            }
            Some(Action::Complete) => {
                draft.insert("\t");
                InputResult::Redraw
            }
            Some(Action::Left) => changed(draft.move_left()),
            Some(Action::Right) => changed(draft.move_right()),
            Some(Action::WordLeft) => changed(draft.move_word_left()),
            Some(Action::WordRight) => changed(draft.move_word_right()),
            Some(Action::LineStart) => changed(draft.move_line_start()),
            Some(Action::LineEnd) => changed(draft.move_line_end()),
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
                    draft.insert(c.encode_utf8(&mut [0; 4]));
                    InputResult::Redraw
                }
                None => return InputResult::None,
            },
        };
        self.sync_popup(result)
    }

    /// Inserts pasted text (normalised); a paste never submits.
    pub fn handle_paste(&mut self, text: &str) -> InputResult {
        let text = normalize_paste(text);
        if text.is_empty() {
            return InputResult::None;
        }
        self.composer.insert_str(&text);
        self.sync_popup(InputResult::Redraw)
    }

    /// Delivers the answer to query `query_id`; answers to stale queries are dropped.
    pub fn set_candidates(&mut self, query_id: u64, rows: Result<Vec<Candidate>, String>) {
        if let ActivePopup::Mention(popup) = &mut self.popup {
            popup.set_candidates(query_id, rows);
        }
    }

    /// While locked (references being prepared), Enter submits nothing.
    pub fn set_submission_locked(&mut self, locked: bool) {
        self.submission_locked = locked;
    }

    /// The draft in canonical form.
    pub fn draft(&self) -> String {
        self.composer.text()
    }

    /// Puts `text` back into the composer (after a failed or cancelled submit). The popup
    /// stays closed for a token under the caret until the user moves elsewhere.
    pub fn restore_draft(&mut self, text: &str) {
        self.composer.set_text(text);
        self.popup = ActivePopup::None;
        self.dismissed_token =
            mention_token_at(&self.composer.text(), self.composer.cursor_char_index())
                .map(|t| t.start_char);
    }

    /// Clears the draft if it still equals `submitted`; returns whether it did.
    pub fn clear_if_unchanged(&mut self, submitted: &str) -> bool {
        if self.composer.text() != submitted {
            return false;
        }
        self.clear();
        true
    }

    /// Records a submitted text in the input history.
    pub fn push_history(&mut self, text: &str) {
        self.composer.push_history(text);
    }

    /// Ctrl+C on a draft: moves it into history (Up brings it back) and clears the composer.
    /// Returns false when there was nothing to clear.
    pub fn clear_draft_to_history(&mut self) -> bool {
        if self.composer.is_empty() {
            return false;
        }
        let draft = self.composer.text();
        self.composer.push_history(&draft);
        self.clear();
        true
    }

    /// Every Up-history entry, oldest first.
    pub fn history_entries(&self) -> Vec<String> {
        self.composer.history_entries()
    }

    /// Forgets the Up history (before it is refilled in a different order).
    pub fn clear_history(&mut self) {
        self.composer.clear_history();
    }

    /// The canonical text of the mention the caret is on or next to, if any.
    pub fn mention_at_caret(&self) -> Option<String> {
        let draft = self.composer.draft();
        let chip = draft.chip_at_caret()?;
        draft.text().get(chip).map(str::to_owned)
    }

    /// Whether a popup is open (Esc goes to it first).
    pub fn popup_active(&self) -> bool {
        matches!(self.popup, ActivePopup::Mention(_))
    }

    /// The popup on show, if any.
    pub fn active_popup(&self) -> &ActivePopup {
        &self.popup
    }

    /// Draws the popup (above) and the composer (at the bottom) inside `area`; returns the
    /// caret's screen position for the terminal cursor.
    pub fn render(&self, area: Rect, buf: &mut Buffer) -> Option<Position> {
        let composer_height = self.composer.desired_height(area.width).min(area.height);
        let composer_area = Rect {
            y: area.y + (area.height - composer_height),
            height: composer_height,
            ..area
        };
        let popup_height = self.popup_height().min(area.height - composer_height);
        if let ActivePopup::Mention(popup) = &self.popup
            && popup_height > 0
        {
            let popup_area = Rect {
                y: composer_area.y - popup_height,
                height: popup_height,
                ..area
            };
            popup.render(popup_area, buf);
        }
        self.composer.render(composer_area, buf)
    }

    /// Rows the pane wants at `width`: composer plus popup.
    pub fn desired_height(&self, width: u16) -> u16 {
        self.composer
            .desired_height(width)
            .saturating_add(self.popup_height())
    }

    /// Rows the popup wants (0 when none is open).
    pub fn popup_height(&self) -> u16 {
        match &self.popup {
            ActivePopup::Mention(popup) => popup.desired_height(),
            ActivePopup::None => 0,
        }
    }

    fn clear(&mut self) {
        self.composer.set_text("");
        self.popup = ActivePopup::None;
        self.dismissed_token = None;
    }

    fn submit(&mut self) -> InputResult {
        if self.submission_locked {
            return InputResult::None;
        }
        let text = self.composer.text();
        if text.trim().is_empty() {
            InputResult::None
        } else if text.starts_with('/') {
            InputResult::Command(text)
        } else {
            InputResult::Submit(text)
        }
    }

    /// Tab/Enter in the popup: the token becomes the selected session's mention + a space
    /// (with `or_first`, the first row's when none is selected).
    fn insert_selected(&mut self, or_first: bool) -> InputResult {
        let ActivePopup::Mention(popup) = &self.popup else {
            return InputResult::None;
        };
        let row = match popup.selected() {
            Some(row) => row,
            None if or_first => match popup.first_row() {
                Some(row) => row,
                None => return InputResult::None,
            },
            None => return InputResult::None,
        };
        // The label is an untrusted title: its control characters go into the draft as
        // visible `\xNN`, never as raw bytes hidden inside the user's own message.
        let label = visible_controls_line(&row.label);
        let mention = format_mention(&row.session_id, Some(&label));
        let token = popup.token().start_char..popup.token().end_char;
        self.composer.insert_mention(token, &mention);
        self.popup = ActivePopup::None;
        self.sync_popup(InputResult::Redraw)
    }

    /// Recomputes the popup from the text and caret; a new or changed `@` query is returned
    /// as [`InputResult::QueryCandidates`] in place of `result`.
    fn sync_popup(&mut self, result: InputResult) -> InputResult {
        let token = mention_token_at(&self.composer.text(), self.composer.cursor_char_index());
        let Some(token) = token else {
            self.popup = ActivePopup::None;
            self.dismissed_token = None;
            return result;
        };
        if self.dismissed_token == Some(token.start_char) {
            self.popup = ActivePopup::None;
            return result;
        }
        self.dismissed_token = None;
        if let ActivePopup::Mention(popup) = &mut self.popup
            && popup.token().start_char == token.start_char
        {
            if popup.token().query == token.query {
                popup.update_token(token, None);
                return result;
            }
            self.last_query_id += 1;
            let query = token.query.clone();
            popup.update_token(token, Some(self.last_query_id));
            return InputResult::QueryCandidates {
                query_id: self.last_query_id,
                query,
            };
        }
        self.last_query_id += 1;
        let query = token.query.clone();
        self.popup = ActivePopup::Mention(MentionPopup::new(token, self.last_query_id, self.zone));
        InputResult::QueryCandidates {
            query_id: self.last_query_id,
            query,
        }
    }
}

fn changed(did: bool) -> InputResult {
    if did {
        InputResult::Redraw
    } else {
        InputResult::None
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

    fn type_str(pane: &mut BottomPane, text: &str) -> Vec<InputResult> {
        text.chars()
            .map(|c| pane.handle_key(key(KeyCode::Char(c))))
            .collect()
    }

    fn row(id: &str, label: &str) -> Candidate {
        Candidate {
            session_id: id.to_string(),
            label: label.to_string(),
            cwd: Some("/work".to_string()),
            created_at: 0,
        }
    }

    fn query(query_id: u64, query: &str) -> InputResult {
        InputResult::QueryCandidates {
            query_id,
            query: query.to_string(),
        }
    }

    /// A pane with `@fo` typed and three rows answered.
    fn pane_with_rows() -> BottomPane {
        let mut pane = BottomPane::new(10);
        type_str(&mut pane, "@fo");
        pane.set_candidates(
            3,
            Ok(vec![row("a", "Foo"), row("b", "Food"), row("c", "Fox")]),
        );
        pane
    }

    fn selected_id(pane: &BottomPane) -> Option<String> {
        match pane.active_popup() {
            ActivePopup::Mention(p) => p.selected().map(|r| r.session_id.clone()),
            ActivePopup::None => None,
        }
    }

    #[test]
    fn typing_an_at_token_queries_each_change() {
        let mut pane = BottomPane::new(10);
        let results = type_str(&mut pane, "hi @fo");
        assert_eq!(
            results,
            [
                InputResult::Redraw,
                InputResult::Redraw,
                InputResult::Redraw,
                query(1, ""),
                query(2, "f"),
                query(3, "fo"),
            ]
        );
        assert!(pane.popup_active());
        // Moving the caret inside the token keeps the query: no new request.
        assert_eq!(pane.handle_key(key(KeyCode::Left)), InputResult::Redraw);
        assert!(pane.popup_active());
        // Backspace shortens the query.
        assert_eq!(pane.handle_key(key(KeyCode::End)), InputResult::Redraw);
        assert_eq!(pane.handle_key(key(KeyCode::Backspace)), query(4, "f"));
    }

    #[test]
    fn shifted_and_altgr_at_signs_open_the_popup() {
        let mut pane = BottomPane::new(10);
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
        let mut pane = BottomPane::new(10);
        let results = type_str(&mut pane, "foo@bar");
        assert!(
            results.iter().all(|r| *r == InputResult::Redraw),
            "{results:?}"
        );
        assert!(!pane.popup_active());
    }

    #[test]
    fn stale_answers_are_dropped_and_old_rows_stay() {
        let mut pane = BottomPane::new(10);
        type_str(&mut pane, "@f");
        pane.set_candidates(1, Ok(vec![row("old", "Old")]));
        assert_eq!(selected_id(&pane), None, "stale id 1 dropped");
        pane.set_candidates(2, Ok(vec![row("a", "Foo")]));
        assert_eq!(selected_id(&pane).as_deref(), Some("a"));
        assert_eq!(pane.handle_key(key(KeyCode::Char('o'))), query(3, "fo"));
        assert_eq!(
            selected_id(&pane).as_deref(),
            Some("a"),
            "old rows stay while in flight"
        );
        pane.set_candidates(2, Ok(vec![row("x", "X")]));
        assert_eq!(
            selected_id(&pane).as_deref(),
            Some("a"),
            "id 2 is stale now"
        );
        pane.set_candidates(3, Ok(Vec::new()));
        assert_eq!(selected_id(&pane), None);
        // Answers after the popup closed go nowhere.
        pane.handle_key(key(KeyCode::Char(' ')));
        pane.set_candidates(3, Ok(vec![row("late", "Late")]));
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
            assert_eq!(pane.handle_key(k), InputResult::Redraw);
            assert_eq!(selected_id(&pane).as_deref(), Some(want), "{k:?}");
        }
        assert_eq!(pane.draft(), "@fo", "moving never edits the draft");
    }

    #[test]
    fn enter_inserts_mention_and_does_not_submit() {
        let mut pane = pane_with_rows();
        pane.handle_key(key(KeyCode::Down));
        assert_eq!(pane.handle_key(key(KeyCode::Enter)), InputResult::Redraw);
        assert_eq!(pane.draft(), "@[Food](dsh-session:ImIi) ");
        assert!(!pane.popup_active());
        type_str(&mut pane, "why?");
        assert_eq!(
            pane.handle_key(key(KeyCode::Enter)),
            InputResult::Submit("@[Food](dsh-session:ImIi) why?".to_string())
        );
    }

    #[test]
    fn inserted_label_shows_control_characters_visibly() {
        let mut pane = BottomPane::new(10);
        type_str(&mut pane, "@x");
        let id = match pane.active_popup() {
            ActivePopup::Mention(p) => p.query_id(),
            ActivePopup::None => unreachable!(),
        };
        pane.set_candidates(id, Ok(vec![row("s1", "\u{1b}[31mred\u{7}")]));
        assert_eq!(pane.handle_key(key(KeyCode::Tab)), InputResult::Redraw);
        assert_eq!(pane.draft(), r"@[\\x1B[31mred\\x07](dsh-session:InMxIg) ");
        assert!(
            !pane
                .draft()
                .chars()
                .any(ratatui_mention::untrusted::is_control)
        );
    }

    #[test]
    fn tab_replaces_the_whole_token_mid_text() {
        let mut pane = BottomPane::new(10);
        type_str(&mut pane, "ask @foo now");
        for _ in 0.." now".len() + 2 {
            pane.handle_key(key(KeyCode::Left));
        }
        assert!(pane.popup_active(), "caret inside @foo");
        let id = match pane.active_popup() {
            ActivePopup::Mention(p) => p.query_id(),
            ActivePopup::None => unreachable!(),
        };
        pane.set_candidates(id, Ok(vec![row("s1", "a]b")]));
        assert_eq!(pane.handle_key(key(KeyCode::Tab)), InputResult::Redraw);
        assert_eq!(pane.draft(), "ask @[a\\]b](dsh-session:InMxIg)  now");
    }

    #[test]
    fn enter_with_nothing_selected_submits_the_draft_as_typed() {
        let submit = |s: &str| InputResult::Submit(s.to_owned());
        let mut pane = BottomPane::new(10);
        type_str(&mut pane, "@zz");
        // "searching…": nothing selected.
        assert_eq!(pane.handle_key(key(KeyCode::Enter)), submit("@zz"));
        pane.set_candidates(3, Ok(Vec::new()));
        // "no matching sessions": nothing selected.
        assert_eq!(pane.handle_key(key(KeyCode::Enter)), submit("@zz"));
        assert_eq!(
            pane.handle_key(key(KeyCode::Tab)),
            InputResult::None,
            "no row to insert"
        );
        assert_eq!(pane.draft(), "@zz");
    }

    #[test]
    fn tab_inserts_the_first_row_when_none_is_selected() {
        let mut pane = BottomPane::new(10);
        type_str(&mut pane, "@zz");
        pane.set_candidates(3, Ok(Vec::new()));
        type_str(&mut pane, "z");
        pane.set_candidates(4, Ok(vec![row("a", "Zzz"), row("b", "Zzzz")]));
        assert_eq!(pane.handle_key(key(KeyCode::Tab)), InputResult::Redraw);
        assert_eq!(pane.draft(), "@[Zzz](dsh-session:ImEi) ");
    }

    #[test]
    fn backspace_after_mention_removes_it_and_undo_restores() {
        let mut pane = pane_with_rows();
        pane.handle_key(key(KeyCode::Enter));
        let with_mention = pane.draft();
        assert_eq!(
            pane.handle_key(key(KeyCode::Backspace)),
            InputResult::Redraw
        );
        assert_eq!(pane.draft(), "@[Foo](dsh-session:ImEi)", "first the space");
        pane.handle_key(key(KeyCode::Backspace));
        assert_eq!(pane.draft(), "", "then the whole mention");
        pane.handle_key(ctrl('z'));
        assert_eq!(
            pane.draft(),
            "@[Foo](dsh-session:ImEi)",
            "undo brings it back"
        );
        assert!(
            !pane.popup_active(),
            "a finished mention never opens the popup"
        );
        pane.handle_key(ctrl('z'));
        assert_eq!(pane.draft(), with_mention, "and the space");
    }

    #[test]
    fn delete_before_mention_removes_it() {
        let mut pane = BottomPane::new(10);
        pane.handle_paste("x @[A](dsh-session:IkEi) y");
        // Left steps over `y`, the space and then the whole mention.
        for _ in 0..3 {
            pane.handle_key(key(KeyCode::Left));
        }
        pane.handle_key(key(KeyCode::Delete));
        assert_eq!(pane.draft(), "x  y");
    }

    #[test]
    fn esc_closes_and_stays_closed_for_that_token() {
        let mut pane = BottomPane::new(10);
        type_str(&mut pane, "@se");
        assert_eq!(pane.handle_key(key(KeyCode::Esc)), InputResult::Redraw);
        assert!(!pane.popup_active());
        assert_eq!(type_str(&mut pane, "x"), [InputResult::Redraw]);
        assert!(!pane.popup_active(), "still the dismissed token");
        assert_eq!(
            pane.handle_key(key(KeyCode::Enter)),
            InputResult::Submit("@sex".into())
        );
        assert_eq!(
            pane.handle_key(key(KeyCode::Esc)),
            InputResult::Escape,
            "no popup: app's Esc"
        );
        assert_eq!(
            type_str(&mut pane, " @"),
            [InputResult::Redraw, query(4, "")]
        );
        assert!(pane.popup_active(), "a new token opens again");
    }

    #[test]
    fn paste_normalises_and_never_submits() {
        let mut pane = BottomPane::new(10);
        assert_eq!(
            pane.handle_paste("one\r\ntwo\rthree\u{1b}[2J\n"),
            InputResult::Redraw
        );
        assert_eq!(pane.draft(), "one\ntwo\nthree[2J\n");
        assert_eq!(pane.handle_paste("\u{7}"), InputResult::None);
        assert_eq!(pane.handle_paste("@ses"), query(1, "ses"));
    }

    #[test]
    fn newline_keys_do_not_submit() {
        let mut pane = BottomPane::new(10);
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
        let mut pane = BottomPane::new(10);
        assert_eq!(
            pane.handle_key(key(KeyCode::Enter)),
            InputResult::None,
            "empty"
        );
        type_str(&mut pane, "  ");
        assert_eq!(
            pane.handle_key(key(KeyCode::Enter)),
            InputResult::None,
            "blank"
        );
        pane.restore_draft("/title New name");
        assert_eq!(
            pane.handle_key(key(KeyCode::Enter)),
            InputResult::Command("/title New name".into())
        );
        pane.restore_draft("hello");
        pane.set_submission_locked(true);
        assert_eq!(
            pane.handle_key(key(KeyCode::Enter)),
            InputResult::None,
            "locked"
        );
        pane.set_submission_locked(false);
        assert_eq!(
            pane.handle_key(key(KeyCode::Enter)),
            InputResult::Submit("hello".into())
        );
        assert_eq!(pane.draft(), "hello", "the app clears after dispatch");
        assert!(!pane.clear_if_unchanged("other"));
        assert!(pane.clear_if_unchanged("hello"));
        assert_eq!(pane.draft(), "");
    }

    #[test]
    fn ctrl_c_and_ctrl_d() {
        let mut pane = BottomPane::new(10);
        assert_eq!(pane.handle_key(ctrl('d')), InputResult::Quit);
        type_str(&mut pane, "ab");
        pane.handle_key(key(KeyCode::Left));
        assert_eq!(pane.handle_key(ctrl('d')), InputResult::Redraw);
        assert_eq!(pane.draft(), "a", "Ctrl+D deletes forward on a draft");
        assert_eq!(pane.handle_key(ctrl('c')), InputResult::Interrupt);
        assert!(pane.clear_draft_to_history());
        assert_eq!(pane.draft(), "");
        assert!(!pane.clear_draft_to_history(), "nothing left to clear");
        assert_eq!(pane.handle_key(key(KeyCode::Up)), InputResult::Redraw);
        assert_eq!(pane.draft(), "a", "Up brings the cleared draft back");
    }

    #[test]
    fn history_browses_at_edges_and_keeps_the_draft() {
        let mut pane = BottomPane::new(10);
        pane.push_history("first\nsecond line");
        pane.push_history("@[X](dsh-session:IngiXQ) hi");
        type_str(&mut pane, "draft");
        pane.handle_key(key(KeyCode::Up));
        assert_eq!(pane.draft(), "@[X](dsh-session:IngiXQ) hi");
        pane.handle_key(key(KeyCode::Up));
        assert_eq!(pane.draft(), "first\nsecond line");
        // Caret at the end (second line): Up moves to the first line, not further back.
        pane.handle_key(key(KeyCode::Up));
        assert_eq!(pane.draft(), "first\nsecond line");
        assert_eq!(
            pane.handle_key(key(KeyCode::Up)),
            InputResult::None,
            "oldest"
        );
        pane.handle_key(key(KeyCode::Down));
        pane.handle_key(key(KeyCode::Down));
        assert_eq!(pane.draft(), "@[X](dsh-session:IngiXQ) hi");
        pane.handle_key(key(KeyCode::Down));
        assert_eq!(pane.draft(), "draft");
    }

    #[test]
    fn desired_height_follows_edits() {
        let mut pane = BottomPane::new(10);
        assert_eq!(pane.desired_height(20), 3, "one row plus border");
        pane.handle_paste("a\nb\nc");
        assert_eq!(pane.desired_height(20), 5);
        pane.handle_key(ctrl('z'));
        assert_eq!(pane.draft(), "");
        assert_eq!(pane.desired_height(20), 3, "undo shrinks it again");
        pane.handle_paste(&"x".repeat(100));
        assert_eq!(pane.desired_height(20), 8, "100 chars wrap to 6 rows of 18");
        assert_eq!(pane.desired_height(60), 4, "and to 2 rows of 58");
        pane.handle_paste(&"\n".repeat(20));
        assert_eq!(pane.desired_height(20), 10, "capped at 8 text rows");
        pane.handle_paste(" @");
        assert_eq!(
            pane.desired_height(20),
            10 + 3,
            "plus the popup's message row"
        );
    }

    #[test]
    fn release_events_are_ignored() {
        let mut pane = BottomPane::new(10);
        let mut k = key(KeyCode::Char('x'));
        k.kind = KeyEventKind::Release;
        assert_eq!(pane.handle_key(k), InputResult::None);
        assert_eq!(pane.draft(), "");
    }

    #[test]
    fn restore_draft_keeps_popup_closed_until_edit_elsewhere() {
        let mut pane = BottomPane::new(10);
        pane.restore_draft("look at @ses");
        assert!(!pane.popup_active());
        assert_eq!(pane.draft(), "look at @ses");
        assert_eq!(
            type_str(&mut pane, " @"),
            [InputResult::Redraw, query(1, "")]
        );
    }

    #[test]
    fn failed_listing_is_shown_not_fatal() {
        let mut pane = BottomPane::new(10);
        type_str(&mut pane, "@");
        pane.set_candidates(1, Err("disk\u{7} busy".into()));
        assert!(pane.popup_active());
        assert_eq!(
            pane.handle_key(key(KeyCode::Enter)),
            InputResult::Submit("@".into()),
            "nothing to select: Enter sends the draft"
        );
    }
}
