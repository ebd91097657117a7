//! JavaScript's character classes as the reference regular expressions see them: `\s`
//! and the line terminators. Both differ from Rust's `char::is_whitespace`.

/// Whether `c` is in ECMAScript's `\s` set (`WhiteSpace` + `LineTerminator`). Includes U+FEFF,
/// excludes U+0085.
pub fn is_js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202F}'
                | '\u{205F}'
                | '\u{3000}'
                | '\u{FEFF}'
    )
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
    }

    #[test]
    fn line_terminators() {
        for c in ['\n', '\r', '\u{2028}', '\u{2029}'] {
            assert!(is_line_terminator(c));
        }
        for c in ['\u{85}', '\u{b}', '\u{c}', ' '] {
            assert!(!is_line_terminator(c));
        }
    }
}
