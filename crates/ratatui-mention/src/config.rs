//! Everything a host may change about the widget, with defaults: key bindings, placeholder,
//! styles, popup labels and sizes. Policy (which keys quit, what a submit does) stays with
//! the host.

use std::time::Duration;

use ratatui::style::{Color, Modifier, Style};

use crate::key_map::KeyMap;
use crate::mention_token::DEFAULT_URI_SCHEME;
use crate::slash_commands::CommandEntry;

/// Styles of the composer and the popup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MentionStyles {
    /// A finished mention inside the composer.
    pub mention: Style,
    /// The composer's border.
    pub composer_border: Style,
    /// The placeholder shown in an empty composer.
    pub placeholder: Style,
    /// The popup's border and its `n/m` position.
    pub popup_border: Style,
    /// The popup's title.
    pub popup_title: Style,
    /// The line shown instead of rows (searching, no match, failed).
    pub message: Style,
    /// A row's label.
    pub label: Style,
    /// Patched onto the label, kind and matches of the selected row.
    pub selected: Style,
    /// Patched onto a row's kind (`Session · `).
    pub kind: Style,
    /// Patched onto the label chars matching the query.
    pub matched: Style,
    /// The `›` marker of the selected row.
    pub marker: Style,
    /// A row's detail line.
    pub detail: Style,
}

impl Default for MentionStyles {
    fn default() -> Self {
        let dim = Style::new().fg(Color::DarkGray);
        Self {
            mention: Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
            composer_border: dim,
            placeholder: dim,
            popup_border: dim,
            popup_title: Style::new().add_modifier(Modifier::BOLD),
            message: dim.add_modifier(Modifier::ITALIC),
            label: Style::new(),
            selected: Style::new().add_modifier(Modifier::BOLD),
            kind: Style::new().fg(Color::Gray),
            matched: Style::new()
                .fg(Color::Yellow)
                .add_modifier(Modifier::UNDERLINED),
            marker: Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
            detail: dim,
        }
    }
}

/// Texts of the popup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PopupLabels {
    /// The popup's title, on its top border.
    pub title: String,
    /// Shown while the first query of an empty token runs.
    pub type_to_filter: String,
    /// Shown while a query runs and no rows are on show.
    pub searching: String,
    /// Prefix of a failed query's message (`<failed>: <message>`).
    pub failed: String,
    /// Shown when a query found nothing.
    pub no_match: String,
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
            type_to_filter: "type to filter".to_string(),
            searching: "searching…".to_string(),
            failed: "could not search".to_string(),
            no_match: "no matches".to_string(),
            still_searching: "still searching — Enter again sends as text".to_string(),
            no_exact_match: "no exact match".to_string(),
            preview_title: "preview".to_string(),
            preview_pending: "loading…".to_string(),
        }
    }
}

/// The widget's configuration; [`MentionConfig::default`] is a complete one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MentionConfig {
    pub(crate) key_map: KeyMap,
    pub(crate) placeholder: String,
    pub(crate) styles: MentionStyles,
    pub(crate) labels: PopupLabels,
    pub(crate) history_size: usize,
    pub(crate) max_text_rows: u16,
    pub(crate) max_visible_rows: usize,
    pub(crate) uri_scheme: String,
    pub(crate) gap_above_composer: u16,
    /// Commands the `/` popup offers (none: no popup).
    pub(crate) commands: Vec<CommandEntry>,
    /// The `/` popup's title.
    pub(crate) command_title: String,
    /// How long an Enter or Tab waits for the newest query's answer.
    pub(crate) answer_wait: Duration,
}

impl Default for MentionConfig {
    fn default() -> Self {
        Self {
            key_map: KeyMap::default(),
            placeholder: "Type a message · @ mentions".to_string(),
            styles: MentionStyles::default(),
            labels: PopupLabels::default(),
            history_size: 100,
            max_text_rows: 8,
            max_visible_rows: 8,
            uri_scheme: DEFAULT_URI_SCHEME.to_string(),
            gap_above_composer: 0,
            commands: Vec::new(),
            command_title: " / ".to_string(),
            answer_wait: Duration::from_secs(1),
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

    /// Shows `placeholder` in an empty composer.
    #[must_use]
    pub fn with_placeholder(mut self, placeholder: impl Into<String>) -> Self {
        self.placeholder = placeholder.into();
        self
    }

    /// Draws with `styles`.
    #[must_use]
    pub fn with_styles(mut self, styles: MentionStyles) -> Self {
        self.styles = styles;
        self
    }

    /// Shows `labels` in the popup.
    #[must_use]
    pub fn with_labels(mut self, labels: PopupLabels) -> Self {
        self.labels = labels;
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

    /// Treats `@[label](<scheme>…)` as a finished mention (highlighted, deleted whole, never
    /// reopening the popup); the default is [`DEFAULT_URI_SCHEME`].
    #[must_use]
    pub fn with_uri_scheme(mut self, scheme: impl Into<String>) -> Self {
        self.uri_scheme = scheme.into();
        self
    }

    /// Leaves `rows` rows between the popup and the composer for a row of the host's own
    /// (a status line that stays right above the composer whether or not the popup is open).
    /// [`crate::MentionInputState::desired_height`] includes them.
    #[must_use]
    pub fn with_gap_above_composer(mut self, rows: u16) -> Self {
        self.gap_above_composer = rows;
        self
    }

    /// Offers `commands` in a popup when `/` is typed into an empty draft (filtered by the
    /// first word; Tab completes, Enter completes and submits one without argument), with
    /// `title` on its border.
    #[must_use]
    pub fn with_commands(mut self, commands: Vec<CommandEntry>, title: impl Into<String>) -> Self {
        self.commands = commands;
        self.command_title = title.into();
        self
    }

    /// An Enter or Tab pressed while the newest query is unanswered waits up to `wait` for
    /// the answer (see [`crate::Outcome::Waiting`]; default 1 s).
    #[must_use]
    pub fn with_answer_wait(mut self, wait: Duration) -> Self {
        self.answer_wait = wait;
        self
    }

    /// How long an Enter or Tab waits for the newest query's answer before the host calls
    /// [`crate::MentionInputState::stop_waiting`].
    pub fn answer_wait(&self) -> Duration {
        self.answer_wait
    }

    /// The commands the `/` popup offers.
    pub fn commands(&self) -> &[CommandEntry] {
        &self.commands
    }

    /// The URI scheme of finished mentions.
    pub fn uri_scheme(&self) -> &str {
        &self.uri_scheme
    }

    /// The key map in use (for a help screen).
    pub fn key_map(&self) -> &KeyMap {
        &self.key_map
    }

    /// The styles in use.
    pub fn styles(&self) -> &MentionStyles {
        &self.styles
    }

    /// The popup labels in use.
    pub fn labels(&self) -> &PopupLabels {
        &self.labels
    }
}
