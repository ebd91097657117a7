//! Fallback session titles (docs/session-store.md: titles): derived from the first direct user message.
//!
//! Control characters and terminal escape sequences are removed, whitespace is collapsed,
//! and the result keeps at most [`MAX_TITLE_WORDS`] words and [`MAX_TITLE_BYTES`] bytes.

/// Most words a fallback title keeps.
pub const MAX_TITLE_WORDS: usize = 8;
/// Most UTF-8 bytes a fallback title keeps (cut on a char boundary).
pub const MAX_TITLE_BYTES: usize = 80;

/// The fallback title for a message text, or `None` when nothing printable is left.
pub fn fallback_title(text: &str) -> Option<String> {
    let cleaned = strip_controls(text);
    let mut title = String::new();
    for word in cleaned.split_whitespace().take(MAX_TITLE_WORDS) {
        if !title.is_empty() {
            title.push(' ');
        }
        title.push_str(word);
    }
    let cut = floor_char_boundary(&title, MAX_TITLE_BYTES);
    title.truncate(cut);
    let trimmed = title.trim_end();
    if trimmed.is_empty() {
        None
    } else {
        Some(trimmed.to_owned())
    }
}

/// Most UTF-8 bytes a manual title keeps.
pub const MAX_MANUAL_TITLE_BYTES: usize = 200;

/// A manual title (`/title TEXT`): controls removed and whitespace collapsed like the
/// fallback, no word limit, at most [`MAX_MANUAL_TITLE_BYTES`]; `None` when empty.
pub fn clean_title(text: &str) -> Option<String> {
    let cleaned = strip_controls(text);
    let mut title = cleaned.split_whitespace().collect::<Vec<_>>().join(" ");
    title.truncate(floor_char_boundary(&title, MAX_MANUAL_TITLE_BYTES));
    let trimmed = title.trim_end();
    (!trimmed.is_empty()).then(|| trimmed.to_owned())
}

/// The largest char boundary of `s` that is at most `max` bytes in.
fn floor_char_boundary(s: &str, max: usize) -> usize {
    if s.len() <= max {
        return s.len();
    }
    (0..=max)
        .rev()
        .find(|&i| s.is_char_boundary(i))
        .unwrap_or(0)
}

/// Replace whitespace controls (tab, newline, ...) by a space and drop every other control
/// character, ANSI escape sequence (CSI, OSC, two-byte ESC) and invisible bidi/format mark.
fn strip_controls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            match chars.next() {
                // CSI: parameters and intermediates up to a final byte in 0x40..=0x7E.
                Some('[') => {
                    for p in chars.by_ref() {
                        if ('\u{40}'..='\u{7e}').contains(&p) {
                            break;
                        }
                    }
                }
                // OSC / DCS / SOS / PM / APC: up to BEL or ST (ESC \).
                Some(']' | 'P' | 'X' | '^' | '_') => {
                    while let Some(p) = chars.next() {
                        if p == '\u{7}' {
                            break;
                        }
                        if p == '\u{1b}' {
                            if chars.peek() == Some(&'\\') {
                                chars.next();
                            }
                            break;
                        }
                    }
                }
                // Any other escape is ESC plus one character; both go.
                Some(_) | None => {}
            }
        } else if c.is_whitespace() {
            out.push(' ');
        } else if c.is_control() || is_invisible_format(c) {
            // dropped
        } else {
            out.push(c);
        }
    }
    out
}

/// Zero-width and bidirectional formatting marks that would make a title lie about itself.
fn is_invisible_format(c: char) -> bool {
    matches!(
        c,
        '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{2069}' | '\u{feff}' | '\u{ad}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn fallback_titles() {
        let cases: &[(&str, Option<&str>)] = &[
            ("hello world", Some("hello world")),
            ("  leading\tand\n\ntrailing  ", Some("leading and trailing")),
            (
                "one two three four five six seven eight nine ten",
                Some("one two three four five six seven eight"),
            ),
            ("bell\u{7}ed and\u{0}null", Some("belled andnull")),
            ("\u{1b}[31mred\u{1b}[0m text", Some("red text")),
            ("title \u{1b}]0;evil\u{7}kept", Some("title kept")),
            ("osc st \u{1b}]8;;http://x\u{1b}\\link", Some("osc st link")),
            ("c1\u{9b}31m csi", Some("c131m csi")),
            ("rtl \u{202e}gnp.exe", Some("rtl gnp.exe")),
            ("", None),
            ("   \n\t ", None),
            ("\u{1b}[2J\u{7}", None),
            ("日本語 の タイトル", Some("日本語 の タイトル")),
            ("emoji 🎉🎉 party", Some("emoji 🎉🎉 party")),
            ("ideographic\u{3000}space", Some("ideographic space")),
        ];
        for (input, want) in cases {
            assert_eq!(fallback_title(input).as_deref(), *want, "input {input:?}");
        }
    }

    #[test]
    fn manual_titles_keep_all_words() {
        let cases: &[(&str, Option<&str>)] = &[
            (
                "  My   long\ttitle with many many many many words  ",
                Some("My long title with many many many many words"),
            ),
            ("\u{1b}[1mbold\u{1b}[0m", Some("bold")),
            (" \n ", None),
        ];
        for (input, want) in cases {
            assert_eq!(clean_title(input).as_deref(), *want, "input {input:?}");
        }
        assert_eq!(clean_title(&"é".repeat(150)).unwrap().len(), 200);
    }

    #[test]
    fn long_titles_cut_on_char_boundary_within_80_bytes() {
        // 30 CJK chars = 90 bytes in one word: cut to 78 bytes (26 chars), never mid-char.
        let cjk = "漢".repeat(30);
        let t = fallback_title(&cjk).unwrap();
        assert_eq!(t, "漢".repeat(26));
        assert_eq!(t.len(), 78);

        // 4-byte emoji: 80 is a boundary, exactly 20 kept.
        let emoji = "😀".repeat(25);
        assert_eq!(fallback_title(&emoji).unwrap(), "😀".repeat(20));

        // A cut right after a space leaves no trailing space.
        let words = format!("{} {}", "a".repeat(79), "bbbb");
        assert_eq!(fallback_title(&words).unwrap(), "a".repeat(79));

        // Mixed: ASCII prefix forces the cut inside a 3-byte char.
        let mixed = format!("{}漢字", "x".repeat(78));
        assert_eq!(fallback_title(&mixed).unwrap(), "x".repeat(78));
    }
}
