//! What a host may change about the widget, with neutral defaults: behaviour in
//! [`MentionConfig`] (keys, triggers and their syntaxes, sizes, history, the preview, the
//! timers), look in [`MentionStyles`] and [`PopupLabels`], given to [`crate::MentionInput`]
//! each frame (a [`Trigger`] may bring labels of its own). Policy (which keys quit, what a
//! submit does) stays with the host.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use ratatui::style::{Color, Modifier, Style};

use crate::grammar::Grammar;
use crate::key_map::KeyMap;
use crate::link_syntax::LinkSyntax;
use crate::mention::{Mention, MentionSpan, MentionSyntax};
use crate::slash_commands::CommandEntry;
use crate::uri_rule::uri_rule_builders;

/// Sets each named field with a builder method `with_<field>(value)` taking anything that
/// converts into the field's type.
macro_rules! with_fields {
    ($ty:ty, $value:ty: $($field:ident => $with:ident),* $(,)?) => {
        impl $ty {
            $(
                #[doc = concat!("Sets [`", stringify!($field), "`](Self::", stringify!($field), ").")]
                #[must_use]
                pub fn $with(mut self, value: impl Into<$value>) -> Self {
                    self.$field = value.into();
                    self
                }
            )*
        }
    };
}

/// Styles of the composer and the popup. Start from [`MentionStyles::default`] and change
/// what you want with the `with_*` methods (or by assigning a field).
///
/// ```
/// use ratatui::style::{Color, Style};
/// use ratatui_mention::MentionStyles;
///
/// let styles = MentionStyles::default().with_mention(Color::Green).with_marker(Style::new().bold());
/// assert_eq!(styles.mention, Style::new().fg(Color::Green));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
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

with_fields!(MentionStyles, Style:
    mention => with_mention,
    placeholder => with_placeholder,
    popup_border => with_popup_border,
    popup_title => with_popup_title,
    message => with_message,
    failed => with_failed,
    section_title => with_section_title,
    label => with_label,
    selected => with_selected,
    kind => with_kind,
    matched => with_matched,
    marker => with_marker,
    detail => with_detail,
    pasted => with_pasted,
);

/// Texts of the popup and of a [`crate::Picker`]. Start from [`PopupLabels::default`] and
/// change what you want with the `with_*` methods (or by assigning a field).
///
/// ```
/// use ratatui_mention::PopupLabels;
///
/// let labels = PopupLabels::default().with_title(" # tags ").with_no_match("no such tag");
/// assert_eq!(labels.no_match, "no such tag");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PopupLabels {
    /// The popup's title, on its top border; empty: the trigger between spaces (` @ `).
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
            title: String::new(),
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

with_fields!(PopupLabels, String:
    title => with_title,
    command_title => with_command_title,
    type_to_filter => with_type_to_filter,
    searching => with_searching,
    failed => with_failed,
    no_match => with_no_match,
    nothing_yet => with_nothing_yet,
    still_searching => with_still_searching,
    no_exact_match => with_no_exact_match,
    preview_title => with_preview_title,
    preview_pending => with_preview_pending,
);

impl PopupLabels {
    /// The title of a popup opened by `trigger`: [`Self::title`], or ` <trigger> ` when it
    /// is empty.
    pub fn title_for(&self, trigger: char) -> String {
        if self.title.is_empty() {
            format!(" {trigger} ")
        } else {
            self.title.clone()
        }
    }
}

/// A character that opens the popup, with the syntax its picks are written in and the
/// texts of its popup, when they are its own.
///
/// ```
/// use ratatui_mention::{LinkSyntax, MentionConfig, PopupLabels, Trigger};
///
/// let tags = Trigger::new('#')
///     .with_syntax(LinkSyntax::new().with_triggers(['#']).with_uri_scheme("tag:"))
///     .with_labels(PopupLabels::default().with_title(" # tags ").with_no_match("no such tag"));
/// let config = MentionConfig::default().with_trigger(tags);
/// assert_eq!(config.triggers(), ['@', '#']);
/// ```
#[derive(Clone)]
pub struct Trigger {
    character: char,
    syntax: Option<Arc<dyn MentionSyntax>>,
    labels: Option<PopupLabels>,
}

impl fmt::Debug for Trigger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Trigger")
            .field("character", &self.character)
            .field("own_syntax", &self.syntax.is_some())
            .field("labels", &self.labels)
            .finish()
    }
}

impl Trigger {
    /// `trigger` opens the popup; its picks are written in the configuration's syntax and
    /// its popup shows the widget's labels.
    pub fn new(trigger: char) -> Self {
        Trigger {
            character: trigger,
            syntax: None,
            labels: None,
        }
    }

    /// Writes this trigger's picks in `syntax` (what it finds are finished mentions too).
    #[must_use]
    pub fn with_syntax(mut self, syntax: impl MentionSyntax + 'static) -> Self {
        self.syntax = Some(Arc::new(syntax));
        self
    }

    /// Shows `labels` in this trigger's popup in place of the ones the widget is given.
    #[must_use]
    pub fn with_labels(mut self, labels: PopupLabels) -> Self {
        self.labels = Some(labels);
        self
    }

    /// The character.
    pub fn trigger(&self) -> char {
        self.character
    }

    /// The labels of its own, if it has them.
    pub fn labels(&self) -> Option<&PopupLabels> {
        self.labels.as_ref()
    }
}

/// The widget's behaviour; [`MentionConfig::default`] is a complete one: `@` opens the
/// popup, mentions are written in the built-in [`LinkSyntax`] and every well-formed one is a
/// finished one, no commands, no preview.
#[derive(Clone)]
pub struct MentionConfig {
    pub(crate) key_map: KeyMap,
    pub(crate) history_size: usize,
    pub(crate) max_text_rows: u16,
    pub(crate) max_visible_rows: usize,
    /// The built-in syntax (its triggers follow [`Self::triggers`]).
    link: LinkSyntax,
    /// The host's syntax for every trigger without its own, in place of the built-in one.
    syntax: Option<Arc<dyn MentionSyntax>>,
    triggers: Vec<Trigger>,
    pub(crate) gap_above_composer: u16,
    /// Commands the command popup offers (none: no popup).
    pub(crate) commands: Vec<CommandEntry>,
    /// The character that opens the command popup at the start of an empty draft.
    pub(crate) command_trigger: char,
    /// How long an Enter or Tab waits for the newest query's answer.
    pub(crate) answer_wait: Duration,
    /// How long the rows of an older query stay on show while the newest is unanswered.
    pub(crate) slow_answer: Duration,
    /// Whether the selected row's preview is shown (where there is room).
    pub(crate) preview: bool,
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
            link: LinkSyntax::new(),
            syntax: None,
            triggers: vec![Trigger::new('@')],
            gap_above_composer: 0,
            commands: Vec::new(),
            command_trigger: '/',
            answer_wait: Duration::from_secs(1),
            slow_answer: Duration::from_millis(250),
            preview: false,
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

    uri_rule_builders!(
        link.uris,
        scheme: {
            /// Registers `scheme` (e.g. `user:`) with the built-in [`LinkSyntax`]: only its
            /// mentions of URIs starting with a registered scheme are finished ones (chips:
            /// highlighted, deleted whole, never reopening the popup). Call once per scheme.
            /// With no scheme and no predicate registered, every well-formed mention is one.
            /// A syntax of your own ([`Self::with_syntax`]) decides that itself.
        },
        predicate: {
            /// Decides with `accepts` which mentions of the built-in [`LinkSyntax`] are
            /// finished ones (by their decoded URI), in place of registered schemes.
        }
    );

    /// Writes and finds mentions in `syntax` in place of the built-in [`LinkSyntax`], for
    /// every trigger without a syntax of its own; it also says where a token being typed
    /// ends ([`MentionSyntax::is_token_space`]).
    #[must_use]
    pub fn with_syntax(mut self, syntax: impl MentionSyntax + 'static) -> Self {
        self.syntax = Some(Arc::new(syntax));
        self
    }

    /// The characters that open the popup at the start of a token (default `@`); the
    /// query outcome says which one. A character given before with [`Self::with_trigger`]
    /// keeps its syntax and labels.
    #[must_use]
    pub fn with_triggers(mut self, triggers: impl IntoIterator<Item = char>) -> Self {
        let old = std::mem::take(&mut self.triggers);
        self.triggers = triggers
            .into_iter()
            .map(|c| {
                old.iter()
                    .find(|t| t.character == c)
                    .cloned()
                    .unwrap_or_else(|| Trigger::new(c))
            })
            .collect();
        self
    }

    /// Adds `trigger` (or replaces the one of its character): its syntax and its labels.
    #[must_use]
    pub fn with_trigger(mut self, trigger: Trigger) -> Self {
        match self
            .triggers
            .iter_mut()
            .find(|t| t.character == trigger.character)
        {
            Some(slot) => *slot = trigger,
            None => self.triggers.push(trigger),
        }
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

    /// The rows of an older query stay on show up to `after` while the newest query is
    /// unanswered, so fast answers never flicker; then the popup says it is searching (the
    /// rows would be taken for an answer). Default 250 ms; see
    /// [`crate::MentionInputState::tick`].
    #[must_use]
    pub fn with_slow_answer(mut self, after: Duration) -> Self {
        self.slow_answer = after;
        self
    }

    /// With `on`, the selected row's preview is shown where there is room (right of the
    /// list from 100 columns, below it in a tall area) and the host is asked for it
    /// ([`crate::MentionInputState::want_preview`]); Alt+P hides and shows it. Default off.
    #[must_use]
    pub fn with_preview(mut self, on: bool) -> Self {
        self.preview = on;
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

    /// How long an Enter or Tab waits for the newest query's answer (see
    /// [`crate::MentionInputState::tick`]).
    pub fn answer_wait(&self) -> Duration {
        self.answer_wait
    }

    /// Whether the preview is on.
    pub fn preview(&self) -> bool {
        self.preview
    }

    /// The commands the command popup offers.
    pub fn commands(&self) -> &[CommandEntry] {
        &self.commands
    }

    /// The characters that open the popup.
    pub fn triggers(&self) -> Vec<char> {
        self.triggers.iter().map(|t| t.character).collect()
    }

    /// The trigger of `c`, with its syntax and labels, if `c` is one.
    pub fn trigger(&self, c: char) -> Option<&Trigger> {
        self.triggers.iter().find(|t| t.character == c)
    }

    /// Every finished mention of `text`, leftmost first, as the composer finds its chips (in
    /// every syntax the configuration holds): read a submitted draft with it.
    pub fn find_mentions(&self, text: &str) -> Vec<MentionSpan> {
        self.grammar()
            .find(text)
            .into_iter()
            .map(|f| MentionSpan {
                range: f.range,
                mention: f.mention,
            })
            .collect()
    }

    /// The text standing for `mention`, written in the syntax of its trigger (what a pick
    /// inserts).
    pub fn write_mention(&self, mention: &Mention) -> String {
        self.grammar().write(mention)
    }

    /// The triggers and syntaxes as the editors use them.
    pub(crate) fn grammar(&self) -> Grammar {
        let default: Arc<dyn MentionSyntax> = match &self.syntax {
            Some(syntax) => Arc::clone(syntax),
            None => Arc::new(self.link.clone().with_triggers(self.triggers())),
        };
        Grammar::new(
            default,
            self.triggers
                .iter()
                .map(|t| (t.character, t.syntax.clone()))
                .collect(),
        )
    }

    /// The key map in use (for a help screen).
    pub fn key_map(&self) -> &KeyMap {
        &self.key_map
    }
}

impl fmt::Debug for MentionConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MentionConfig")
            .field("triggers", &self.triggers)
            .field("link", &self.link)
            .field("own_syntax", &self.syntax.is_some())
            .field("history_size", &self.history_size)
            .field("commands", &self.commands.len())
            .field("multi_word", &self.multi_word)
            .field("preview", &self.preview)
            .finish_non_exhaustive()
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
