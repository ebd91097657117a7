//! The syntaxes a configuration holds, as the editors use them: which characters open a
//! popup, how a pick is written (the syntax of the trigger it was typed with), which parts
//! of a text are finished mentions (what every syntax finds, leftmost first) and what their
//! chips show, and which characters end a token.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use term_text::visible_controls_line;

use crate::mention::{Mention, MentionSpan, MentionSyntax};

/// A finished mention of a text, with what its chip shows (controls made visible).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    pub(crate) range: Range<usize>,
    pub(crate) mention: Mention,
    pub(crate) shown: String,
}

/// The triggers and their syntaxes.
#[derive(Clone)]
pub(crate) struct Grammar {
    /// Writes and finds the mentions of triggers without a syntax of their own; decides
    /// where tokens end.
    default: Arc<dyn MentionSyntax>,
    /// The triggers, each with its own syntax if it has one.
    triggers: Vec<(char, Option<Arc<dyn MentionSyntax>>)>,
}

impl fmt::Debug for Grammar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let triggers: Vec<char> = self.triggers.iter().map(|(c, _)| *c).collect();
        f.debug_struct("Grammar")
            .field("triggers", &triggers)
            .finish_non_exhaustive()
    }
}

/// A syntax with no mentions at all (a picker's filter).
struct NoMentions;

impl MentionSyntax for NoMentions {
    fn write(&self, mention: &Mention) -> String {
        mention.label.clone()
    }

    fn find(&self, _: &str) -> Vec<MentionSpan> {
        Vec::new()
    }
}

impl Grammar {
    pub(crate) fn new(
        default: Arc<dyn MentionSyntax>,
        triggers: Vec<(char, Option<Arc<dyn MentionSyntax>>)>,
    ) -> Self {
        Grammar { default, triggers }
    }

    /// No triggers, no mentions.
    pub(crate) fn none() -> Self {
        Grammar {
            default: Arc::new(NoMentions),
            triggers: Vec::new(),
        }
    }

    /// Whether `c` opens a token.
    pub(crate) fn is_trigger(&self, c: char) -> bool {
        self.triggers.iter().any(|(t, _)| *t == c)
    }

    /// Whether `c` ends a token.
    pub(crate) fn is_space(&self, c: char) -> bool {
        self.default.is_token_space(c)
    }

    /// The syntax of `trigger`'s picks.
    pub(crate) fn syntax(&self, trigger: char) -> &dyn MentionSyntax {
        self.triggers
            .iter()
            .find(|(t, _)| *t == trigger)
            .and_then(|(_, syntax)| syntax.as_deref())
            .unwrap_or(&*self.default)
    }

    /// The text standing for `mention`, written in its trigger's syntax.
    pub(crate) fn write(&self, mention: &Mention) -> String {
        self.syntax(mention.trigger).write(mention)
    }

    /// The finished mentions of `text`, leftmost first: what each syntax finds, a mention
    /// overlapping one that starts before it (or at the same place, found by a syntax
    /// listed before) left out.
    pub(crate) fn find(&self, text: &str) -> Vec<Found> {
        let mut syntaxes: Vec<&Arc<dyn MentionSyntax>> = vec![&self.default];
        for own in self.triggers.iter().filter_map(|(_, s)| s.as_ref()) {
            if !syntaxes.iter().any(|s| Arc::ptr_eq(s, own)) {
                syntaxes.push(own);
            }
        }
        let mut all: Vec<(usize, MentionSpan)> = Vec::new();
        for (order, syntax) in syntaxes.iter().enumerate() {
            all.extend(
                syntax
                    .find(text)
                    .into_iter()
                    // A careless syntax's spans off the text or empty are no mentions.
                    .filter(|s| s.range.start < s.range.end && text.get(s.range.clone()).is_some())
                    .map(|s| (order, s)),
            );
        }
        if syntaxes.len() > 1 {
            all.sort_by_key(|(order, s)| (s.range.start, *order));
        }
        let mut found: Vec<Found> = Vec::with_capacity(all.len());
        for (order, span) in all {
            if found.last().is_some_and(|f| span.range.start < f.range.end) {
                continue;
            }
            let syntax = syntaxes.get(order).map_or(&self.default, |s| *s);
            let shown = visible_controls_line(&syntax.chip_text(&span.mention)).into_owned();
            found.push(Found {
                range: span.range,
                mention: span.mention,
                shown,
            });
        }
        found
    }

    /// The byte ranges of [`Self::find`].
    pub(crate) fn spans(&self, text: &str) -> Vec<Range<usize>> {
        self.find(text).into_iter().map(|f| f.range).collect()
    }
}

#[cfg(test)]
#[allow(clippy::single_range_in_vec_init)] // expected spans are lists
mod tests {
    use super::*;
    use crate::LinkSyntax;
    use pretty_assertions::assert_eq;

    /// Tags written `#name`, found where `#` starts a word.
    struct Hash;

    impl MentionSyntax for Hash {
        fn write(&self, mention: &Mention) -> String {
            format!("#{}", mention.label)
        }
        fn find(&self, text: &str) -> Vec<MentionSpan> {
            let mut found = Vec::new();
            for (i, _) in text.match_indices("#t") {
                let len = text[i..].find(' ').unwrap_or(text.len() - i);
                let name = &text[i + 1..i + len];
                found.push(MentionSpan {
                    range: i..i + len,
                    mention: Mention::new(name, format!("tag:{name}")).with_trigger('#'),
                });
            }
            #[allow(clippy::reversed_empty_ranges)] // a careless syntax's span
            found.push(MentionSpan {
                range: 3..1,
                mention: Mention::new("bad", "x:"),
            });
            found
        }
    }

    #[test]
    fn each_trigger_writes_in_its_syntax_and_every_syntax_finds() {
        let grammar = Grammar::new(
            Arc::new(LinkSyntax::new()),
            vec![('@', None), ('#', Some(Arc::new(Hash)))],
        );
        assert!(grammar.is_trigger('#') && !grammar.is_trigger('!'));
        let tag = Mention::new("tui", "tag:tui").with_trigger('#');
        assert_eq!(grammar.write(&tag), "#tui");
        assert_eq!(grammar.write(&Mention::new("A", "u:1")), "@[A](u:1)");
        let text = "see @[A #tx](u:1) #tui #tv\u{7}";
        let found = grammar.find(text);
        let shown: Vec<(&str, &str)> = found
            .iter()
            .map(|f| (&text[f.range.clone()], f.shown.as_str()))
            .collect();
        assert_eq!(
            shown,
            [
                ("@[A #tx](u:1)", "@A #tx"),
                ("#tui", "#tui"),
                ("#tv\u{7}", "#tv\\x07")
            ],
            "a tag inside a link is none; the bad span is dropped"
        );
        assert_eq!(Grammar::none().spans(text), Vec::<Range<usize>>::new());
    }
}
