//! JavaScript's `\s` and line terminators, which mention syntax is defined by; both differ
//! from Rust's `char::is_whitespace` (U+0085 is not `\s`, U+FEFF is).

/// Whether `c` is in ECMAScript's `\s` set: Rust's whitespace without U+0085, plus U+FEFF.
pub fn is_js_whitespace(c: char) -> bool {
    (c.is_whitespace() && c != '\u{85}') || c == '\u{feff}'
}

/// Whether `c` is an ECMAScript line terminator (`\n`, `\r`, U+2028, U+2029).
pub fn is_line_terminator(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whitespace_set_matches_ecmascript() {
        let yes = [
            '\t', '\n', '\u{b}', '\u{c}', '\r', ' ', '\u{a0}', '\u{1680}', '\u{2000}', '\u{2005}',
            '\u{200a}', '\u{2028}', '\u{2029}', '\u{202f}', '\u{205f}', '\u{3000}', '\u{feff}',
        ];
        let no = [
            '\u{85}', '\u{180e}', '\u{200b}', 'a', ')', '\u{1f}', '\u{200c}',
        ];
        for c in yes {
            assert!(is_js_whitespace(c), "{c:?} should be whitespace");
        }
        for c in no {
            assert!(!is_js_whitespace(c), "{c:?} should not be whitespace");
        }
        let count = (0..=0x10_FFFF)
            .filter_map(char::from_u32)
            .filter(|c| is_js_whitespace(*c))
            .count();
        assert_eq!(count, 25, "ECMAScript has 25 \\s code points");
    }

    #[test]
    fn line_terminators() {
        for c in ['\n', '\r', '\u{2028}', '\u{2029}'] {
            assert!(is_line_terminator(c));
        }
        for c in ['\u{85}', '\u{b}', ' '] {
            assert!(!is_line_terminator(c));
        }
    }
}
