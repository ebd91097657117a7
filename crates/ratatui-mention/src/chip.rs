//! Chips: a finished mention `@[label](uri)` shown as one unit `@label`. The draft keeps the
//! canonical text; a chip is only how it is drawn and how the caret treats it.

use std::ops::Range;

use crate::mention_token::mention_spans;
use crate::untrusted::visible_controls_line;

/// Byte ranges of the chips in `text`: every explicit mention with URI scheme `scheme`,
/// leftmost first.
pub fn chip_spans(text: &str, scheme: &str) -> Vec<Range<usize>> {
    mention_spans(text, scheme)
}

/// The label of the canonical mention `mention` with its escapes undone (`\]` → `]`).
pub fn mention_label(mention: &str) -> String {
    let mut label = String::new();
    let mut chars = mention.strip_prefix("@[").unwrap_or(mention).chars();
    while let Some(c) = chars.next() {
        match c {
            ']' => break,
            '\\' => {
                if let Some(escaped) = chars.next() {
                    label.push(escaped);
                }
            }
            c => label.push(c),
        }
    }
    label
}

/// The URI of the canonical mention `mention` (between the parentheses).
pub fn mention_uri(mention: &str) -> &str {
    let Some(body) = mention.strip_suffix(')') else {
        return "";
    };
    body.rfind("](")
        .map_or("", |at| body.get(at + 2..).unwrap_or(""))
}

/// What a chip shows: `@` and its label, control characters visible as `\xNN`.
pub fn chip_text(mention: &str) -> String {
    format!("@{}", visible_controls_line(&mention_label(mention)))
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
        ];
        for (mention, want) in cases {
            assert_eq!(
                chip_spans(mention, "dsh-session:"),
                vec![0..mention.len()],
                "{mention:?} is one chip"
            );
            assert_eq!(chip_text(mention), want, "{mention:?}");
        }
        assert_eq!(
            mention_uri(r"@[a\](x](dsh-session:ImEi)"),
            "dsh-session:ImEi"
        );
    }
}
