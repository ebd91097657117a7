//! Making untrusted text safe to print: every C0/C1 control character other than newline
//! becomes a visible `\xNN`, so nothing can move the cursor or restyle the terminal; bidi
//! controls, zero-width characters (other than ZWJ and ZWNJ, which emoji and many scripts
//! need) and the Unicode line/paragraph separators become a visible `\u{XXXX}`, so nothing
//! can reorder or hide what a reader sees or leave a stale glyph behind.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` is a C0 or C1 control character (including DEL).
pub fn is_control(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}')
}

/// Whether `c` is an invisible formatting character that can reorder, hide or break lines
/// of text: bidi embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069), the
/// bidi marks (U+200E, U+200F, U+061C), zero-width characters except ZWNJ/ZWJ (U+200B,
/// U+2060–U+2064, U+FEFF, U+180E) and U+2028/U+2029.
pub fn is_invisible_format(c: char) -> bool {
    matches!(
        c,
        '\u{202A}'..='\u{202E}'
            | '\u{2066}'..='\u{2069}'
            | '\u{200E}'
            | '\u{200F}'
            | '\u{061C}'
            | '\u{200B}'
            | '\u{2060}'..='\u{2064}'
            | '\u{FEFF}'
            | '\u{180E}'
            | '\u{2028}'
            | '\u{2029}'
    )
}

/// Whether `c` is shown escaped by [`visible_controls`] (a control other than `\n`, or an
/// invisible formatting character).
pub fn needs_escape(c: char) -> bool {
    (is_control(c) && c != '\n') || is_invisible_format(c)
}

/// `text` with every control character except `\n` written as `\xNN` and every invisible
/// formatting character as `\u{XXXX}`.
pub fn visible_controls(text: &str) -> Cow<'_, str> {
    visible_controls_impl(text, true)
}

/// `text` with every control character, newline included, written as `\xNN` (for one-line
/// fields such as titles, labels, ids and cwds).
pub fn visible_controls_line(text: &str) -> Cow<'_, str> {
    visible_controls_impl(text, false)
}

fn visible_controls_impl(text: &str, keep_newline: bool) -> Cow<'_, str> {
    let escaped = |c: char| needs_escape(c) || (!keep_newline && c == '\n');
    if !text.chars().any(escaped) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if is_invisible_format(c) {
            let _ = write!(out, "\\u{{{:04X}}}", c as u32);
        } else if escaped(c) {
            let _ = write!(out, "\\x{:02X}", c as u32);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_become_visible() {
        let cases = [
            ("plain", "plain"),
            ("a\nb", "a\nb"),
            ("\u{1b}[2J", "\\x1B[2J"),
            ("\u{9b}31m", "\\x9B31m"),
            ("bell\u{7}", "bell\\x07"),
            ("tab\t", "tab\\x09"),
            ("del\u{7f}", "del\\x7F"),
            ("漢字 😀", "漢字 😀"),
        ];
        for (input, want) in cases {
            assert_eq!(visible_controls(input), want, "{input:?}");
        }
        assert_eq!(visible_controls_line("a\nb"), "a\\x0Ab");
    }

    #[test]
    fn bidi_zero_width_and_separators_become_visible_but_zwj_and_zwnj_stay() {
        let cases = [
            ("a\u{202E}b", "a\\u{202E}b"),
            (
                "\u{202A}\u{202B}\u{202C}\u{202D}",
                "\\u{202A}\\u{202B}\\u{202C}\\u{202D}",
            ),
            (
                "\u{2066}x\u{2067}y\u{2068}z\u{2069}",
                "\\u{2066}x\\u{2067}y\\u{2068}z\\u{2069}",
            ),
            (
                "zero\u{200B}width\u{2060}\u{FEFF}",
                "zero\\u{200B}width\\u{2060}\\u{FEFF}",
            ),
            ("line\u{2028}para\u{2029}", "line\\u{2028}para\\u{2029}"),
            ("mark\u{200F}\u{200E}", "mark\\u{200F}\\u{200E}"),
            // ZWJ emoji sequence and ZWNJ in Persian stay as they are.
            ("👩\u{200D}💻", "👩\u{200D}💻"),
            ("می\u{200C}خواهم", "می\u{200C}خواهم"),
        ];
        for (input, want) in cases {
            assert_eq!(visible_controls(input), want, "{input:?}");
            assert_eq!(visible_controls_line(input), want, "{input:?}");
        }
        for c in ['\u{202E}', '\u{2067}', '\u{200B}', '\u{2028}'] {
            assert!(needs_escape(c));
        }
        assert!(!needs_escape('\u{200D}') && !needs_escape('\u{200C}') && !needs_escape('\n'));
    }
}
