//! Making untrusted text safe to print (docs/tui-app.md: transcript): every C0/C1 control character other
//! than newline becomes a visible `\xNN`, so nothing can move the cursor or restyle the
//! terminal. Used by the TUI and by every human-readable CLI output.

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

/// Serialized JSON with every DEL and C1 control written as a `\uXXXX` escape.
/// `serde_json` escapes only C0 controls, but a terminal may act on a raw U+009B (CSI);
/// such characters can only occur inside string literals, so the escaped text parses back
/// to the same values. Used for every machine (`--json`) output.
pub fn escape_json_controls(json: &str) -> Cow<'_, str> {
    // C0 controls are already escaped inside strings, and outside them only `\n` occurs.
    let del_or_c1 = |c: char| matches!(c, '\u{7f}'..='\u{9f}');
    if !json.chars().any(del_or_c1) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if del_or_c1(c) {
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
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

    #[test]
    fn json_output_escapes_del_and_c1_and_parses_back() {
        let value = serde_json::json!({"t": "csi \u{9b}2J del \u{7f} esc \u{1b} nl \n 漢"});
        let raw = serde_json::to_string_pretty(&value).unwrap();
        assert!(raw.contains('\u{9b}'), "serde_json leaves C1 raw");
        let safe = escape_json_controls(&raw);
        assert!(!safe.chars().any(|c| is_control(c) && c != '\n'), "{safe}");
        assert!(safe.contains("\\u009b") && safe.contains("\\u007f"));
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back, value);
        assert!(matches!(escape_json_controls("[1]"), Cow::Borrowed(_)));
    }
}
