//! The label an untitled session is listed by in the `@` popup and `/resume` (docs/references.md:
//! candidates): the leading words of the first message typed in it — what people recognise —
//! with its secrets redacted and made neutral like every label a picker inserts. The
//! `candidates` contract keeps dsh's label (the title, else the id).

use super::neutral_label::{NEUTRAL_LABEL_MAX_CHARS, neutral_label};
use super::redact::redact;

/// What ends a label cut short of the message.
const CUT_MARK: char = '…';

/// The label of an untitled session whose first message starts with `first_prompt`: its
/// words with every run of whitespace as one space, secrets redacted (when
/// `redact_secrets`, before the cut, so a secret near the cut is still recognised whole),
/// cut after the last whole word that fits [`NEUTRAL_LABEL_MAX_CHARS`] (a longer first word
/// is cut inside) ending in `…`, then neutral ([`neutral_label`]). `None` when it has no
/// words.
pub fn untitled_label(first_prompt: &str, redact_secrets: bool) -> Option<String> {
    let words = first_prompt
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    if words.is_empty() {
        return None;
    }
    let text = if redact_secrets {
        redact(&words).0.into_owned()
    } else {
        words
    };
    Some(neutral_label(&leading_words(&text)))
}

/// `text` (single-spaced) within [`NEUTRAL_LABEL_MAX_CHARS`]: whole, else its leading words
/// and `…`.
fn leading_words(text: &str) -> String {
    if text.chars().nth(NEUTRAL_LABEL_MAX_CHARS).is_none() {
        return text.to_owned();
    }
    let room = NEUTRAL_LABEL_MAX_CHARS - 1;
    let mut out = String::new();
    let mut used = 0;
    for word in text.split(' ') {
        let len = word.chars().count();
        let gap = usize::from(used > 0);
        if used + gap + len > room {
            break;
        }
        if gap == 1 {
            out.push(' ');
        }
        out.push_str(word);
        used += gap + len;
    }
    if out.is_empty() {
        out = text.chars().take(room).collect();
    }
    out.push(CUT_MARK);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn leading_words_cut_to_the_row_redacted_and_neutral() {
        let long = format!("{} tail", "word ".repeat(20));
        let cut = format!("{}…", "word ".repeat(16).trim_end());
        let key = "sk-ant-api03-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
        let xs = "x".repeat(100);
        let cases: Vec<(&str, bool, Option<String>)> = vec![
            ("", true, None),
            (" \n\t ", true, None),
            (
                "  Why does\n\nlogin   fail?  ",
                true,
                Some("Why does login fail?".into()),
            ),
            (long.as_str(), true, Some(cut)),
            (xs.as_str(), true, Some(format!("{}…", "x".repeat(79)))),
            // Markup and controls read as a name, never as markup.
            (
                "<b>bold</b>\u{1b}[2J \u{202e}evil",
                true,
                Some("‹b›bold‹/b› [2J  evil".into()),
            ),
        ];
        for (prompt, redact, want) in cases {
            assert_eq!(untitled_label(prompt, redact), want, "{prompt:?}");
        }
        let with_key = format!("use {key} for the deploy");
        let shown = untitled_label(&with_key, true).unwrap();
        assert!(!shown.contains("aaaaaaaa"), "{shown}");
        assert!(shown.starts_with("use [redacted"), "{shown}");
        assert_eq!(untitled_label(&with_key, false), Some(with_key.clone()));
        // A label is already neutral: inserting it as a mention changes nothing.
        assert_eq!(crate::mention_label(&shown, true), shown);
    }
}
