//! Invisible format characters inside a secret (docs/references.md: secret redaction): a
//! zero-width space, joiner, soft hyphen, word joiner, byte-order mark or direction mark
//! pasted into a key splits it for the rules yet not for a reader. The rules read the text
//! without them; what they find is mapped back so the redaction covers the characters too.

use std::borrow::Cow;

/// Characters no reader sees that may sit inside a key.
pub fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{180E}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{2069}'
            | '\u{FEFF}'
    )
}

/// A text as the rules read it: without invisible characters, and where they were.
pub struct Folded<'a> {
    text: Cow<'a, str>,
    /// Per run of removed characters: its position in the folded text and how many bytes
    /// were removed up to and including it (increasing in both).
    runs: Vec<(usize, usize)>,
}

impl<'a> Folded<'a> {
    /// `text` without its invisible characters (borrowed when it has none).
    pub fn new(text: &'a str) -> Self {
        if text.is_ascii() || !text.chars().any(is_invisible) {
            return Self {
                text: Cow::Borrowed(text),
                runs: Vec::new(),
            };
        }
        let mut folded = String::with_capacity(text.len());
        let mut runs: Vec<(usize, usize)> = Vec::new();
        let mut removed = 0;
        for c in text.chars() {
            if is_invisible(c) {
                removed += c.len_utf8();
                match runs.last_mut() {
                    Some((at, total)) if *at == folded.len() => *total = removed,
                    _ => runs.push((folded.len(), removed)),
                }
            } else {
                folded.push(c);
            }
        }
        Self {
            text: Cow::Owned(folded),
            runs,
        }
    }

    /// The text the rules read.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The range in the original text of `start..end` in the folded one: invisible
    /// characters before `start` stay outside, those inside are covered.
    pub fn original(&self, start: usize, end: usize) -> (usize, usize) {
        let before = |limit: usize, inclusive: bool| {
            let n = self
                .runs
                .partition_point(|&(at, _)| if inclusive { at <= limit } else { at < limit });
            n.checked_sub(1)
                .and_then(|i| self.runs.get(i))
                .map_or(0, |&(_, total)| total)
        };
        (start + before(start, true), end + before(end, false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folded_ranges_map_back_around_the_removed_characters() {
        let text = "a\u{200B}bc\u{200B}\u{FEFF}de\u{00AD}";
        let folded = Folded::new(text);
        assert_eq!(folded.text(), "abcde");
        // "bc" covers nothing removed inside; "bcde" covers the run between c and d.
        let map = |s: usize, e: usize| {
            let (a, b) = folded.original(s, e);
            text.get(a..b).unwrap().to_owned()
        };
        assert_eq!(map(1, 3), "bc");
        assert_eq!(map(1, 5), "bc\u{200B}\u{FEFF}de");
        assert_eq!(map(0, 5), "a\u{200B}bc\u{200B}\u{FEFF}de");
        assert_eq!(map(3, 5), "de");
        let plain = Folded::new("plain ü text");
        assert!(matches!(plain.text, Cow::Borrowed(_)));
        assert_eq!(plain.original(2, 4), (2, 4));
    }
}
