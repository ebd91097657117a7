//! The bottom pane: the composer plus at most one popup. Keys and pastes go in, intents
//! come out ([`InputResult`]); popup visibility is recomputed from text, caret and the
//! dismissed token after every key and paste (SPEC §6.1, §6.2).

use crossterm::event::{KeyEvent, KeyEventKind};
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};

use super::composer::Composer;
use super::key_map::{Action, classify};
use super::mention_format::format_mention;
use super::mention_popup::{CandidateRow, DisplayZone, MentionPopup};
use super::mention_token::mention_token_at;
use super::paste::normalize_paste;

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
                Some(Action::Complete | Action::Submit) => return self.insert_selected(),
                Some(Action::Escape) => {
                    self.dismissed_token = Some(popup.token().start_char);
                    self.popup = ActivePopup::None;
                    return InputResult::Redraw;
                }
                Some(
                    Action::Newline
                    | Action::Interrupt
                    | Action::QuitIfEmpty
                    | Action::DeleteBackward
                    | Action::DeleteForward,
                )
                | None => {}
            }
        }
        let result = match action {
            Some(Action::Submit) => return self.submit(),
            Some(Action::Escape) => return InputResult::Escape,
            Some(Action::Interrupt) => return InputResult::Interrupt,
            Some(Action::QuitIfEmpty) if self.composer.is_empty() => return InputResult::Quit,
            Some(Action::QuitIfEmpty | Action::DeleteForward) => {
                changed(self.composer.delete_forward())
            }
            Some(Action::DeleteBackward) => changed(self.composer.delete_backward()),
            Some(Action::Newline) => {
                self.composer.insert_newline();
                InputResult::Redraw
            }
            Some(Action::Up) => changed(self.composer.move_up_or_history()),
            Some(Action::Down) => changed(self.composer.move_down_or_history()),
            Some(Action::PopupPrev | Action::PopupNext | Action::Complete) | None => {
                self.composer.input(key);
                InputResult::Redraw
            }
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
    /// Returns whether the answer was taken (and a redraw is due).
    pub fn set_candidates<R: Into<CandidateRow>>(
        &mut self,
        query_id: u64,
        rows: Result<Vec<R>, String>,
    ) -> bool {
        match &mut self.popup {
            ActivePopup::Mention(popup) => popup.set_candidates(
                query_id,
                rows.map(|rows| rows.into_iter().map(Into::into).collect()),
            ),
            ActivePopup::None => false,
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

    /// Tab/Enter in the popup: the token becomes the selected session's mention + a space.
    fn insert_selected(&mut self) -> InputResult {
        let ActivePopup::Mention(popup) = &self.popup else {
            return InputResult::None;
        };
        let Some(row) = popup.selected() else {
            return InputResult::None;
        };
        let mention = format_mention(&row.session_id, Some(&row.label));
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
