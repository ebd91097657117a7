//! Making untrusted text safe to print: every C0/C1 control character other than newline
//! becomes a visible `\xNN`, so nothing can move the cursor or restyle the terminal.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` is a C0 or C1 control character (including DEL).
pub fn is_control(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}')
}

/// `text` with every control character except `\n` written as `\xNN`.
pub fn visible_controls(text: &str) -> Cow<'_, str> {
    visible_controls_impl(text, true)
}

/// `text` with every control character, newline included, written as `\xNN` (for one-line
/// fields such as titles, labels, ids and cwds).
pub fn visible_controls_line(text: &str) -> Cow<'_, str> {
    visible_controls_impl(text, false)
}

fn visible_controls_impl(text: &str, keep_newline: bool) -> Cow<'_, str> {
    let needs = text
        .chars()
        .any(|c| is_control(c) && !(keep_newline && c == '\n'));
    if !needs {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if is_control(c) && !(keep_newline && c == '\n') {
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
}
