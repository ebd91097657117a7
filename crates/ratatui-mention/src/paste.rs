//! Normalising pasted text before it reaches the composer (docs/composer.md: paste): line
//! endings become `\n`, control characters other than tab and newline are dropped, and
//! nothing else changes (tabs stay tabs; the composer draws them as spaces).

/// `text` with CRLF and lone CR turned into LF and C0/C1 controls other than tab and
/// newline (DEL included) removed, so a paste can neither submit nor restyle the terminal.
pub fn normalize_paste(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => {
                if chars.peek() == Some(&'\n') {
                    chars.next();
                }
                out.push('\n');
            }
            '\n' => out.push('\n'),
            '\t' => out.push('\t'),
            c if term_text::is_control(c) => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn normalisation_table() {
        let cases = [
            ("plain", "plain"),
            ("a\r\nb\r\nc", "a\nb\nc"),
            ("a\rb", "a\nb"),
            ("a\r\r\nb", "a\n\nb"),
            ("a\n\rb", "a\n\nb"),
            ("trailing\r", "trailing\n"),
            ("tab\there", "tab\there"),
            ("\t\tindented", "\t\tindented"),
            ("\u{1b}[31mred\u{1b}[0m", "[31mred[0m"),
            ("bell\u{7}del\u{7f}c1\u{9b}", "belldelc1"),
            ("nul\u{0}", "nul"),
            ("漢字 😀 İ", "漢字 😀 İ"),
            ("keep\u{3000}wide space", "keep\u{3000}wide space"),
            ("", ""),
        ];
        for (input, want) in cases {
            assert_eq!(normalize_paste(input), want, "{input:?}");
        }
    }
}
