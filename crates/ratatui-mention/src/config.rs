//! What a host may change about the widget, with neutral defaults: behaviour in
//! [`MentionConfig`] (keys, triggers, the host's mention URIs, sizes, history), look in
//! [`MentionStyles`] and [`PopupLabels`], given to [`crate::MentionInput`] each frame. Policy
//! (which keys quit, what a submit does) stays with the host.

use std::time::Duration;

use ratatui::style::{Color, Modifier, Style};

use crate::key_map::KeyMap;
use crate::slash_commands::CommandEntry;
use crate::uri_rule::UriRule;

/// Styles of the composer and the popup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MentionStyles {
    /// A finished mention inside the composer.
    pub mention: Style,
    /// The placeholder shown in an empty composer.
    pub placeholder: Style,
    /// The popup's border and its `n/m` position.
    pub popup_border: Style,
    /// The popup's title.
    pub popup_title: Style,
    /// The line shown instead of rows (searching, no match).
    pub message: Style,
    /// The line shown when the source failed.
    pub failed: Style,
    /// A section's title line.
    pub section_title: Style,
    /// A row's label.
    pub label: Style,
    /// Patched onto the label, kind and matches of the selected row.
    pub selected: Style,
    /// Patched onto a row's kind.
    pub kind: Style,
    /// Patched onto the label chars the source matched.
    pub matched: Style,
    /// The `›` marker of the selected row.
    pub marker: Style,
    /// A row's detail line, mark and note.
    pub detail: Style,
    /// A collapsed paste inside the composer (`[pasted 3 000 lines]`).
    pub pasted: Style,
}

impl Default for MentionStyles {
    fn default() -> Self {
        let dim = Style::new().fg(Color::DarkGray);
        let message = dim.add_modifier(Modifier::ITALIC);
        Self {
            mention: Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
            placeholder: dim,
            popup_border: dim,
            popup_title: Style::new().add_modifier(Modifier::BOLD),
            message,
            failed: message,
            section_title: message,
            label: Style::new(),
            selected: Style::new().add_modifier(Modifier::BOLD),
            kind: Style::new().fg(Color::Gray),
            matched: Style::new()
                .fg(Color::Yellow)
                .add_modifier(Modifier::UNDERLINED),
            marker: Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
            detail: dim,
            pasted: Style::new().fg(Color::Magenta),
        }
    }
}

/// Texts of the popup and of a [`crate::Picker`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PopupLabels {
    /// The popup's title, on its top border.
    pub title: String,
    /// The command popup's title.
    pub command_title: String,
    /// Shown while the first query of an empty token runs.
    pub type_to_filter: String,
    /// Shown while a query runs and no rows are on show.
    pub searching: String,
    /// Prefix of a failed query's message (`<failed>: <message>`).
    pub failed: String,
    /// Shown when a query found nothing.
    pub no_match: String,
    /// Shown when an empty query found nothing (the source has no rows at all).
    pub nothing_yet: String,
    /// Shown once an Enter stopped waiting for the newest query's answer.
    pub still_searching: String,
    /// On the bottom border when nothing matches but rows are offered.
    pub no_exact_match: String,
    /// The preview pane's title.
    pub preview_title: String,
    /// Shown in the preview until the host supplies it.
    pub preview_pending: String,
}

impl Default for PopupLabels {
    fn default() -> Self {
        Self {
            title: " @ ".to_string(),
            command_title: " / ".to_string(),
            type_to_filter: "type to filter".to_string(),
            searching: "searching…".to_string(),
            failed: "could not search".to_string(),
            no_match: "no matches".to_string(),
            nothing_yet: "no matches".to_string(),
            still_searching: "still searching — Enter again sends as text".to_string(),
            no_exact_match: "no exact match".to_string(),
            preview_title: "preview".to_string(),
            preview_pending: "loading…".to_string(),
        }
    }
}

/// The widget's behaviour; [`MentionConfig::default`] is a complete one: `@` opens the
/// popup, every well-formed mention is a finished one, no commands.
#[derive(Debug, Clone)]
pub struct MentionConfig {
    pub(crate) key_map: KeyMap,
    pub(crate) history_size: usize,
    pub(crate) max_text_rows: u16,
    pub(crate) max_visible_rows: usize,
    pub(crate) uris: UriRule,
    pub(crate) triggers: Vec<char>,
    pub(crate) gap_above_composer: u16,
    /// Commands the command popup offers (none: no popup).
    pub(crate) commands: Vec<CommandEntry>,
    /// The character that opens the command popup at the start of an empty draft.
    pub(crate) command_trigger: char,
    /// How long an Enter or Tab waits for the newest query's answer.
    pub(crate) answer_wait: Duration,
    /// A paste of more lines than this collapses into one placeholder.
    pub(crate) collapse_lines: usize,
    /// A paste of more chars than this collapses into one placeholder.
    pub(crate) collapse_chars: usize,
    /// A space keeps the popup open while the query's words still match something.
    pub(crate) multi_word: bool,
}

impl Default for MentionConfig {
    fn default() -> Self {
        Self {
            key_map: KeyMap::default(),
            history_size: 100,
            max_text_rows: 8,
            max_visible_rows: 8,
            uris: UriRule::Any,
            triggers: vec!['@'],
            gap_above_composer: 0,
            commands: Vec::new(),
            command_trigger: '/',
            answer_wait: Duration::from_secs(1),
            collapse_lines: 10,
            collapse_chars: 1000,
            multi_word: false,
        }
    }
}

impl MentionConfig {
    /// Uses `key_map` for every key.
    #[must_use]
    pub fn with_key_map(mut self, key_map: KeyMap) -> Self {
        self.key_map = key_map;
        self
    }

    /// Remembers up to `size` submissions for Up/Down (0: no history).
    #[must_use]
    pub fn with_history_size(mut self, size: usize) -> Self {
        self.history_size = size;
        self
    }

    /// The composer grows up to `rows` text rows, then scrolls (at least 1).
    #[must_use]
    pub fn with_max_text_rows(mut self, rows: u16) -> Self {
        self.max_text_rows = rows.max(1);
        self
    }

    /// The popup shows up to `rows` items at once, then scrolls (at least 1).
    #[must_use]
    pub fn with_max_visible_rows(mut self, rows: usize) -> Self {
        self.max_visible_rows = rows.max(1);
        self
    }

    /// Registers `scheme` (e.g. `user:`): finished mentions `@[label](<scheme>…)` are the
    /// host's (chips: highlighted, deleted whole, never reopening the popup). Call once per
    /// scheme. With no scheme and no predicate registered, every well-formed mention is one.
    #[must_use]
    pub fn with_uri_scheme(mut self, scheme: impl Into<String>) -> Self {
        self.uris = self.uris.with_scheme(scheme.into());
        self
    }

    /// Decides with `accepts` which finished mentions are the host's (by their decoded
    /// URI), in place of registered schemes.
    #[must_use]
    pub fn with_uri_predicate(
        mut self,
        accepts: impl Fn(&str) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.uris = UriRule::Predicate(std::sync::Arc::new(accepts));
        self
    }

    /// The characters that open the popup at the start of a token (default `@`); the
    /// query outcome says which one.
    #[must_use]
    pub fn with_triggers(mut self, triggers: impl IntoIterator<Item = char>) -> Self {
        self.triggers = triggers.into_iter().collect();
        self
    }

    /// Leaves `rows` rows between the popup and the composer for a row of the host's own
    /// (a status line that stays right above the composer whether or not the popup is open).
    #[must_use]
    pub fn with_gap_above_composer(mut self, rows: u16) -> Self {
        self.gap_above_composer = rows;
        self
    }

    /// Offers `commands` in a popup when the command trigger (`/`) is typed into an empty
    /// draft (filtered by the first word; Tab completes, Enter completes and submits one
    /// without argument).
    #[must_use]
    pub fn with_commands(mut self, commands: Vec<CommandEntry>) -> Self {
        self.commands = commands;
        self
    }

    /// Opens the command popup with `trigger` in place of `/`.
    #[must_use]
    pub fn with_command_trigger(mut self, trigger: char) -> Self {
        self.command_trigger = trigger;
        self
    }

    /// An Enter or Tab pressed while the newest query is unanswered waits up to `wait` for
    /// the answer (see [`crate::Outcome::Waiting`]; default 1 s).
    #[must_use]
    pub fn with_answer_wait(mut self, wait: Duration) -> Self {
        self.answer_wait = wait;
        self
    }

    /// A paste of more than `lines` lines or more than `chars` chars goes into the draft
    /// collapsed: one placeholder unit (`[pasted 3 000 lines]`) that the caret steps over
    /// and Backspace deletes whole, submitted and kept in history in full, opened for
    /// editing with [`crate::Action::ExpandPaste`] (default 10 lines, 1 000 chars;
    /// `usize::MAX` for both never collapses). A history entry recalled without its pastes
    /// known (e.g. put there by [`crate::MentionInputState::push_history`] from a file) has
    /// its middle lines collapsed the same way when it has more than `lines` lines.
    #[must_use]
    pub fn with_paste_collapse(mut self, lines: usize, chars: usize) -> Self {
        self.collapse_lines = lines;
        self.collapse_chars = chars;
        self
    }

    /// With `on`, a query may have several words: a space typed at the end of the token
    /// keeps the popup open while the rows on show answer the words so far (or their
    /// answer is still to come), the next words refine it, and two spaces, Esc or a space
    /// when nothing matched close it (default off: a space ends the token). The query the
    /// host gets holds the words with single spaces between them.
    #[must_use]
    pub fn with_multi_word_queries(mut self, on: bool) -> Self {
        self.multi_word = on;
        self
    }

    /// How long an Enter or Tab waits for the newest query's answer before the host calls
    /// [`crate::MentionInputState::stop_waiting`].
    pub fn answer_wait(&self) -> Duration {
        self.answer_wait
    }

    /// The commands the command popup offers.
    pub fn commands(&self) -> &[CommandEntry] {
        &self.commands
    }

    /// The characters that open the popup.
    pub fn triggers(&self) -> &[char] {
        &self.triggers
    }

    /// Whether a finished mention of `uri` is one of the host's (a chip).
    pub fn accepts_uri(&self, uri: &str) -> bool {
        self.uris.accepts(uri)
    }

    /// The key map in use (for a help screen).
    pub fn key_map(&self) -> &KeyMap {
        &self.key_map
    }
}

impl From<PopupLabels> for std::borrow::Cow<'_, PopupLabels> {
    fn from(labels: PopupLabels) -> Self {
        std::borrow::Cow::Owned(labels)
    }
}

impl<'a> From<&'a PopupLabels> for std::borrow::Cow<'a, PopupLabels> {
    fn from(labels: &'a PopupLabels) -> Self {
        std::borrow::Cow::Borrowed(labels)
    }
}
