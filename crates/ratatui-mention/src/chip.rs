//! Chips: a finished mention `@[label](uri)` shown as one unit `@label`. The draft keeps the
//! canonical text; a chip is only how it is drawn and how the caret treats it.

use std::ops::Range;

use crate::mention::label_of;
use crate::mention_token::mention_spans;
use crate::untrusted::visible_controls_line;
use crate::uri_rule::UriRule;

/// Byte ranges of the chips in `text`: every finished mention whose URI `uris` accepts,
/// leftmost first.
pub fn chip_spans(text: &str, uris: &UriRule) -> Vec<Range<usize>> {
    mention_spans(text, uris)
}

/// What a chip shows: `@` and its label, control characters visible as `\xNN`; a label that
/// already begins with `@` shows it once (`@@x` would read as a typo).
pub fn chip_text(mention: &str) -> String {
    let label = visible_controls_line(&label_of(mention)).into_owned();
    if label.starts_with('@') {
        label
    } else {
        format!("@{label}")
    }
}

#[cfg(test)]
#[allow(clippy::single_range_in_vec_init)] // expected spans are lists
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn chip_text_table() {
        let cases = [
            (
                "@[Speed up the Vite build](dsh-session:ImEi)",
                "@Speed up the Vite build",
            ),
            (r"@[a\]b](dsh-session:ImEi)", "@a]b"),
            (r"@[back\\slash](dsh-session:ImEi)", r"@back\slash"),
            ("@[会话](dsh-session:ImEi)", "@会话"),
            ("@[bell\u{7}](dsh-session:ImEi)", r"@bell\x07"),
            ("@[two\nlines](dsh-session:ImEi)", r"@two\x0Alines"),
            ("@[](dsh-session:ImEi)", "@"),
            ("@[@Deploy plan](dsh-session:ImEi)", "@Deploy plan"),
            ("@[@](dsh-session:ImEi)", "@"),
        ];
        for (mention, want) in cases {
            assert_eq!(
                chip_spans(mention, &UriRule::Schemes(vec!["dsh-session:".to_owned()])),
                vec![0..mention.len()],
                "{mention:?} is one chip"
            );
            assert_eq!(chip_text(mention), want, "{mention:?}");
        }
    }
}
