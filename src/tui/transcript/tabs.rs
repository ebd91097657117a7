//! Tabs in the transcript. In the user's own messages and the model's replies a tab is
//! expanded as a terminal would: spaces up to the next multiple of [`TAB_WIDTH`] columns of
//! the line as shown. Text from other sessions and other tools' logs keeps it visible as
//! `\x09`, like every other control character there.

use std::borrow::Cow;

use term_text::visible_controls;

use crate::tui::text_width::display_width;

/// Columns between tab stops.
pub const TAB_WIDTH: usize = 4;

/// `text` as the transcript shows the user's own messages and the model's replies: controls
/// other than newline made visible (as [`visible_controls`] does), tabs expanded to the next
/// tab stop of the line as shown (a `\x1B` shown counts its four columns, a CJK character
/// two). At most [`TAB_WIDTH`] columns per tab, so the text grows by a bounded factor.
pub fn visible_expanding_tabs(text: &str) -> Cow<'_, str> {
    if !text.contains('\t') {
        return visible_controls(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let mut column = 0;
        for (j, part) in line.split('\t').enumerate() {
            if j > 0 {
                let pad = TAB_WIDTH - column % TAB_WIDTH;
                out.extend(std::iter::repeat_n(' ', pad));
                column += pad;
            }
            let shown = visible_controls(part);
            column += display_width(&shown);
            out.push_str(&shown);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn tabs_go_to_the_next_stop_of_the_line_as_shown() {
        let cases = [
            ("no tabs", "no tabs"),
            ("a\tb", "a   b"),
            ("\tx", "    x"),
            ("abcd\te", "abcd    e"),
            ("abc\t\td", "abc     d"),
            ("a\tb\n\tc", "a   b\n    c"),
            // A CJK character takes two columns.
            ("漢\tx", "漢  x"),
            // A control shown as `\x1B` takes four.
            ("\u{1b}\tx", "\\x1B    x"),
            ("ab\u{7}\tx", "ab\\x07  x"),
            // Carriage returns stay visible and count.
            ("a\r\tb", "a\\x0D   b"),
            ("\t", "    "),
        ];
        for (text, want) in cases {
            assert_eq!(visible_expanding_tabs(text), want, "{text:?}");
        }
    }

    #[test]
    fn nothing_but_spaces_and_visible_text_comes_out() {
        let text = "x\t\u{1b}[2J\t\u{202e}y\u{9b}\t";
        let shown = visible_expanding_tabs(text);
        assert!(
            matches!(visible_controls(&shown), Cow::Borrowed(_)),
            "{shown:?}"
        );
    }
}
