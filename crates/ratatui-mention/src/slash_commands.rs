//! The `/` command popup's data: the host's command table as plain entries, the `/name`
//! token at the start of a draft, and the entries a typed prefix offers. The popup itself
//! is the same [`crate::MentionPopup`] the `@` token uses.

use crate::item::{DetailPart, Keep, MentionItem};
use crate::mention_token::MentionToken;

/// One command the host runs, as the popup offers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandEntry {
    /// The name without the slash (`help`), matched case-insensitively by prefix.
    pub name: String,
    /// How the popup shows it (`/resume [ID]`).
    pub usage: String,
    /// One line of help under it.
    pub help: String,
    /// Whether the command wants an argument: then Enter completes `/name ` and waits,
    /// else Enter completes and submits.
    pub takes_argument: bool,
}

impl CommandEntry {
    /// An entry for `/name`, shown as `usage` with `help` under it.
    pub fn new(
        name: impl Into<String>,
        usage: impl Into<String>,
        help: impl Into<String>,
        takes_argument: bool,
    ) -> Self {
        Self {
            name: name.into(),
            usage: usage.into(),
            help: help.into(),
            takes_argument,
        }
    }

    /// The popup row: the usage over the help line; picking it inserts `<trigger>name`.
    pub(crate) fn item(&self, trigger: char) -> MentionItem {
        MentionItem::plain(&self.name, &self.usage, format!("{trigger}{}", self.name))
            .with_detail(vec![DetailPart::new(&self.help, Keep::End)])
    }
}

/// The `/name` token (`trigger` is `/` unless configured) when the draft starts with the
/// trigger and the caret (a char index) is inside or right after its first word; none once
/// the word holds a second trigger (a path).
pub fn command_token_at(
    text: &str,
    cursor_char_index: usize,
    trigger: char,
) -> Option<MentionToken> {
    if !text.starts_with(trigger) || cursor_char_index == 0 {
        return None;
    }
    let end = text
        .chars()
        .position(char::is_whitespace)
        .unwrap_or_else(|| text.chars().count());
    if cursor_char_index > end {
        return None;
    }
    let query: String = text.chars().take(end).skip(1).collect();
    if query.contains(trigger) {
        return None;
    }
    Some(MentionToken {
        trigger,
        start_char: 0,
        end_char: end,
        query,
    })
}

/// The entries whose name starts with `query` (any case), in table order.
pub fn matching<'a>(commands: &'a [CommandEntry], query: &str) -> Vec<&'a CommandEntry> {
    let query = query.to_lowercase();
    commands
        .iter()
        .filter(|c| c.name.to_lowercase().starts_with(&query))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn token(end_char: usize, query: &str) -> MentionToken {
        MentionToken {
            trigger: '/',
            start_char: 0,
            end_char,
            query: query.to_owned(),
        }
    }

    #[test]
    fn token_table() {
        let cases = [
            ("/", 1, Some(token(1, ""))),
            ("/he", 3, Some(token(3, "he"))),
            ("/he", 1, Some(token(3, "he"))),
            ("/help me", 5, Some(token(5, "help"))),
            ("/help me", 6, None),
            ("/etc/hosts", 4, None),
            (" /help", 2, None),
            ("hello", 3, None),
            ("/x", 0, None),
            ("", 0, None),
            ("/title\nnext", 6, Some(token(6, "title"))),
        ];
        for (text, cursor, want) in cases {
            assert_eq!(
                command_token_at(text, cursor, '/'),
                want,
                "{text:?} @ {cursor}"
            );
        }
        // Another trigger character, if the host configured one.
        assert_eq!(
            command_token_at(":he", 3, ':'),
            Some(MentionToken {
                trigger: ':',
                ..token(3, "he")
            })
        );
        assert_eq!(command_token_at("/he", 3, ':'), None);
    }

    #[test]
    fn prefix_matching_ignores_case() {
        let commands = vec![
            CommandEntry::new("help", "/help", "show help", false),
            CommandEntry::new("new", "/new", "new session", false),
            CommandEntry::new("New-thing", "/New-thing", "x", false),
        ];
        let names = |q: &str| -> Vec<&str> {
            matching(&commands, q)
                .iter()
                .map(|c| c.name.as_str())
                .collect()
        };
        assert_eq!(names(""), ["help", "new", "New-thing"]);
        assert_eq!(names("NE"), ["new", "New-thing"]);
        assert_eq!(names("h"), ["help"]);
        assert_eq!(names("x"), Vec::<&str>::new());
    }
}
