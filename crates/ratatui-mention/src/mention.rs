//! A finished mention ([`Mention`]: the trigger it was typed with, what it shows, what it
//! refers to) and the host's say over how mentions are written in its text
//! ([`MentionSyntax`]): the widget writes a pick with the syntax of the trigger it was typed
//! with, finds the finished mentions of the draft with it (its chips) and asks it what a chip
//! shows. [`crate::LinkSyntax`] is the built-in one.

use std::ops::Range;

/// A finished mention: the trigger it was typed with, what the user sees (`label`) and what
/// it refers to (`uri`, the host's identity of it: `user:42`, `tag:ui`, a path…).
///
/// ```
/// use ratatui_mention::Mention;
///
/// let tag = Mention::new("ui", "tag:ui").with_trigger('#');
/// assert_eq!((tag.trigger, tag.label.as_str(), tag.uri.as_str()), ('#', "ui", "tag:ui"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Mention {
    /// The character it was typed with (`@`, `#`); its chip shows it before the label.
    pub trigger: char,
    /// The text shown for the mention.
    pub label: String,
    /// What the mention refers to.
    pub uri: String,
}

impl Mention {
    /// A mention of `uri` shown as `label`, typed with `@` (a pick from a popup takes the
    /// popup's trigger).
    pub fn new(label: impl Into<String>, uri: impl Into<String>) -> Self {
        Mention {
            trigger: '@',
            label: label.into(),
            uri: uri.into(),
        }
    }

    /// The mention typed with `trigger`.
    #[must_use]
    pub fn with_trigger(mut self, trigger: char) -> Self {
        self.trigger = trigger;
        self
    }
}

/// A mention found in a text: where it is (byte range) and what it says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MentionSpan {
    /// Byte range of the mention's markup in the text searched.
    pub range: Range<usize>,
    /// The mention read from it.
    pub mention: Mention,
}

/// How mentions are written in the host's text and found in it again: the stored form is
/// the host's (`@[Ada](user:42)`, `<@U42>`, `#ui`, `issue:7`…), the widget only writes a
/// pick through [`MentionSyntax::write`], takes what [`MentionSyntax::find`] finds as
/// finished mentions (chips: drawn as [`MentionSyntax::chip_text`], stepped over and deleted
/// whole, never reopening the popup) and leaves everything else plain text.
///
/// Give one to [`crate::MentionConfig::with_syntax`] (every trigger) or to a
/// [`crate::Trigger`] (that trigger's picks). [`crate::LinkSyntax`] is the built-in one.
///
/// ```
/// use ratatui_mention::{Mention, MentionSpan, MentionSyntax};
///
/// /// Tags stored as `{#name}`.
/// struct Braces;
///
/// impl MentionSyntax for Braces {
///     fn write(&self, mention: &Mention) -> String {
///         format!("{{#{}}}", mention.label)
///     }
///     fn find(&self, text: &str) -> Vec<MentionSpan> {
///         let mut found = Vec::new();
///         let mut at = 0;
///         while let Some(start) = text[at..].find("{#").map(|i| at + i) {
///             let Some(len) = text[start..].find('}') else { break };
///             let name = &text[start + 2..start + len];
///             let mention = Mention::new(name, format!("tag:{name}")).with_trigger('#');
///             found.push(MentionSpan { range: start..start + len + 1, mention });
///             at = start + len + 1;
///         }
///         found
///     }
/// }
///
/// let text = Braces.write(&Mention::new("ui", "tag:ui").with_trigger('#'));
/// assert_eq!(text, "{#ui}");
/// let found = Braces.find(&format!("see {text}"));
/// assert_eq!((found[0].range.clone(), Braces.chip_text(&found[0].mention)), (4..9, "#ui".into()));
/// ```
pub trait MentionSyntax: Send + Sync {
    /// The text standing for `mention` in the draft (a pick inserts it and a space).
    fn write(&self, mention: &Mention) -> String;

    /// Every finished mention in `text`, leftmost first and not overlapping. Called on every
    /// edit of the draft: keep it linear in the text's length, also for hostile text.
    fn find(&self, text: &str) -> Vec<MentionSpan>;

    /// What the chip of `mention` shows: its trigger and label, a label that already begins
    /// with the trigger showing it once (`@@x` would read as a typo). The widget makes the
    /// controls of whatever this returns visible.
    fn chip_text(&self, mention: &Mention) -> String {
        if mention.label.starts_with(mention.trigger) {
            mention.label.clone()
        } else {
            format!("{}{}", mention.trigger, mention.label)
        }
    }

    /// Whether `c` ends a token being typed (`@que` stops at it): Unicode whitespace unless
    /// the syntax says otherwise. The syntax given to [`crate::MentionConfig::with_syntax`]
    /// decides for every trigger.
    fn is_token_space(&self, c: char) -> bool {
        c.is_whitespace()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    struct Plain;

    impl MentionSyntax for Plain {
        fn write(&self, mention: &Mention) -> String {
            mention.label.clone()
        }
        fn find(&self, _: &str) -> Vec<MentionSpan> {
            Vec::new()
        }
    }

    #[test]
    fn a_chip_shows_its_trigger_and_label_once() {
        let cases = [
            (Mention::new("Ada", "u:1"), "@Ada"),
            (Mention::new("ui", "tag:ui").with_trigger('#'), "#ui"),
            (Mention::new("@Deploy plan", "u:1"), "@Deploy plan"),
            (Mention::new("#x", "u:1").with_trigger('#'), "#x"),
            (Mention::new("@x", "u:1").with_trigger('#'), "#@x"),
            (Mention::new("", "u:1"), "@"),
        ];
        for (mention, want) in cases {
            assert_eq!(Plain.chip_text(&mention), want, "{mention:?}");
        }
        assert!(Plain.is_token_space('\u{3000}') && !Plain.is_token_space('x'));
    }
}
