//! The composer: the `ratatui-mention` widget fed with sessions — its state and look, the
//! Up history (with the history file), the hints about the mention at the caret, the
//! listing behind the `@` popup and the submit flow (docs/composer.md).

pub mod candidates;
pub mod chip_hints;
pub mod draft_limits;
pub mod dsh_syntax;
pub mod file_section;
pub mod history_file;
pub mod listed_page;
pub mod remembered_page;
pub mod session_items;
pub mod submit_flow;
pub mod up_history;
pub mod usage;

use std::path::Path;

use chip_hints::ChipHints;
use history_file::{HistoryEntry, HistoryFile};
use ratatui_mention::{MentionInput, MentionInputState, PopupLabels};
use session_items::{DisplayZone, composer_look, composer_state, popup_labels};
use up_history::{Timed, UpHistory};

use crate::tui::transcript::NoticeKind;
use crate::tui::transcript::chat_view::ChatView;

/// The composer's state across frames.
pub struct Composer {
    /// The widget's state: draft, caret, popup, history.
    pub input: MentionInputState,
    /// The popup's texts.
    pub labels: PopupLabels,
    /// Time zone of the creation times in the popup.
    pub zone: DisplayZone,
    /// Hints about the mention at the caret.
    pub chips: ChipHints,
    /// Sent inputs on disk (Up across restarts); `None` when there is no data dir.
    history_file: Option<HistoryFile>,
    /// Most entries of Up history (`[tui] history_size`).
    history_size: usize,
    /// Where Up history's entries come from, with their times.
    up: UpHistory,
}

impl Composer {
    /// An empty composer remembering `history_size` inputs.
    pub fn new(history_size: usize) -> Self {
        Composer {
            input: composer_state(history_size),
            labels: popup_labels(),
            zone: DisplayZone::Local,
            chips: ChipHints::default(),
            history_file: None,
            history_size,
            up: UpHistory::new(history_size),
        }
    }

    /// Most entries of Up history.
    pub fn history_size(&self) -> usize {
        self.history_size
    }

    /// The widget drawn the app's way this frame.
    pub fn look(&self, focused: bool) -> MentionInput<'_> {
        composer_look(&self.labels, focused)
    }

    /// Keeps sent inputs in the history file at `path` from now on, and puts the entries
    /// already there into Up history, merged by time with what it holds.
    pub fn use_history_file(&mut self, path: &Path, max_entries: usize, chat: &mut ChatView) {
        match HistoryFile::load(path, max_entries) {
            Ok(file) => {
                self.up.add_sent(file.timed_entries().iter().map(timed));
                self.up.sync(&mut self.input, None);
                self.history_file = Some(file);
            }
            Err(e) => chat.push_notice(
                NoticeKind::Error,
                format!(
                    "{}: {e} (input history is kept for this run only)",
                    e.code()
                ),
            ),
        }
    }

    /// Takes a sent input typed at `typed_at_ms`: Up history now (merged by time with what
    /// other windows sent meanwhile), the draft cleared if it still is that text, and the
    /// history file for later runs (where entries are kept by the time they were typed).
    pub fn remember_sent(&mut self, text: &str, typed_at_ms: u64, chat: &mut ChatView) {
        let own = (text.to_owned(), ms(typed_at_ms));
        let mut gained = vec![own.clone()];
        if let Some(file) = self.history_file.as_mut() {
            match file.record(text, typed_at_ms) {
                // Other windows' entries and this one's, each at its time.
                Ok(entries) => gained = entries.iter().map(timed).collect(),
                Err(e) => self.drop_history_file(&e, chat),
            }
        }
        self.up.add_sent(gained);
        // This window's own entry is pushed by take_submit (its pastes stay collapsed),
        // which also clears the draft if unchanged.
        self.up.sync(&mut self.input, Some(&own));
        self.input.take_submit(text);
        self.up.took(own);
    }

    /// Puts what other windows sent since this one last read the history file into Up
    /// history, by the time each was typed. Called when Up begins a walk on an empty draft.
    pub fn refresh_history(&mut self, chat: &mut ChatView) {
        let Some(file) = self.history_file.as_mut() else {
            return;
        };
        match file.refresh() {
            Ok(gained) if gained.is_empty() => {}
            Ok(gained) => {
                self.up.add_sent(gained.iter().map(timed));
                self.up.sync(&mut self.input, None);
            }
            Err(e) => self.drop_history_file(&e, chat),
        }
    }

    /// Reported once; the rest of this run keeps history in memory only.
    fn drop_history_file(&mut self, e: &history_file::HistoryFileError, chat: &mut ChatView) {
        self.history_file = None;
        chat.push_notice(
            NoticeKind::Error,
            format!(
                "{}: {e} (input history is kept for this run only)",
                e.code()
            ),
        );
    }

    /// Puts an opened session's own `typed` messages (each with the time it was logged)
    /// into Up history, merged by time with every window's inputs: one sent from this app
    /// is there once, at the time it was typed; inputs sent while the session loaded stay.
    pub fn adopt_session_history(&mut self, typed: &[Timed]) {
        self.up.add_opened(typed);
        self.up.sync(&mut self.input, None);
    }

    /// What the hint line says about the mention at the caret, if there is one.
    pub fn chip_hint(&self) -> Option<String> {
        self.chips.hint(&self.input.mention_at_caret()?)
    }
}

/// A history file entry as an Up history entry.
fn timed(entry: &HistoryEntry) -> Timed {
    (entry.text.clone(), ms(entry.at_ms))
}

/// Milliseconds since the epoch as Up history keeps them.
fn ms(at_ms: u64) -> i64 {
    i64::try_from(at_ms).unwrap_or(i64::MAX)
}
