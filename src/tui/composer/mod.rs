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
pub mod usage;

use std::path::Path;

use chip_hints::ChipHints;
use history_file::HistoryFile;
use ratatui_mention::{MentionInput, MentionInputState, PopupLabels};
use session_items::{DisplayZone, composer_look, composer_state, popup_labels};

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
    /// already there into Up history (older than this session's own messages).
    pub fn use_history_file(&mut self, path: &Path, max_entries: usize, chat: &mut ChatView) {
        match HistoryFile::load(path, max_entries) {
            Ok(file) => {
                let session_entries = self.input.history_entries();
                self.input.clear_history();
                for entry in file
                    .entries()
                    .chain(session_entries.iter().map(String::as_str))
                {
                    self.input.push_history(entry);
                }
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

    /// Takes a sent input typed at `typed_at_ms`: Up history now (after what other windows
    /// sent meanwhile), the draft cleared if it still is that text, and the history file
    /// for later runs (where entries are kept by the time they were typed).
    pub fn remember_sent(&mut self, text: &str, typed_at_ms: u64, chat: &mut ChatView) {
        if let Some(file) = self.history_file.as_mut() {
            match file.record(text, typed_at_ms) {
                Ok(gained) => {
                    // Other windows' entries first; this window's own comes last through
                    // take_submit, which also clears the draft if unchanged.
                    let mut own_skipped = false;
                    for entry in &gained {
                        if !own_skipped && entry == text {
                            own_skipped = true;
                            continue;
                        }
                        self.input.push_history(entry);
                    }
                }
                Err(e) => self.drop_history_file(&e, chat),
            }
        }
        self.input.take_submit(text);
    }

    /// Puts what other windows sent since this one last read the history file into Up
    /// history (newest last). Called when Up begins a walk on an empty draft.
    pub fn refresh_history(&mut self, chat: &mut ChatView) {
        let Some(file) = self.history_file.as_mut() else {
            return;
        };
        match file.refresh() {
            Ok(gained) => {
                for entry in &gained {
                    self.input.push_history(entry);
                }
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

    /// Puts a loaded session's own `typed` messages into Up history: after the older
    /// entries and before the `sent_since` inputs sent while it loaded.
    pub fn adopt_session_history(&mut self, typed: &[String], sent_since: usize) {
        let entries = self.input.history_entries();
        let split = entries.len().saturating_sub(sent_since);
        let (older, since) = entries.split_at(split);
        self.input.clear_history();
        for entry in older
            .iter()
            .map(String::as_str)
            .chain(typed.iter().map(String::as_str))
            .chain(since.iter().map(String::as_str))
        {
            self.input.push_history(entry);
        }
    }

    /// What the hint line says about the mention at the caret, if there is one.
    pub fn chip_hint(&self) -> Option<String> {
        self.chips.hint(&self.input.mention_at_caret()?)
    }
}
