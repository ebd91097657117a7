//! Machine (`--json`) output made safe for a terminal: `serde_json` escapes only C0
//! controls, so DEL, C1 controls and invisible formatting characters (bidi controls,
//! zero-width characters, U+2028/U+2029) are escaped here.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Serialized JSON with every DEL and C1 control and every invisible formatting character
/// (one the terminal sanitizer, [`term_text::visible_controls_line`], shows escaped)
/// written as a `\uXXXX` escape.
/// `serde_json` escapes only C0 controls, but a terminal may act on a raw U+009B (CSI);
/// such characters can only occur inside string literals, so the escaped text parses back
/// to the same values. Used for every machine (`--json`) output.
pub fn escape_json_controls(json: &str) -> Cow<'_, str> {
    // C0 controls are already escaped inside strings, and outside them only `\n` occurs.
    let del_or_c1 =
        |c: char| matches!(c, '\u{7f}'..='\u{9f}') || (!c.is_control() && shown_escaped(c));
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

/// Whether the terminal sanitizer shows `c` as an escape (an invisible formatting character
/// such as a bidi control, a zero-width character or U+2028/U+2029, or a control).
fn shown_escaped(c: char) -> bool {
    matches!(
        term_text::visible_controls_line(c.encode_utf8(&mut [0; 4])),
        Cow::Owned(_)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_output_escapes_del_and_c1_and_parses_back() {
        let value = serde_json::json!({"t": "csi \u{9b}2J del \u{7f} esc \u{1b} nl \n 漢 rlo \u{202e} zw \u{200b} ls \u{2028} zwj \u{200d}"});
        let raw = serde_json::to_string_pretty(&value).unwrap();
        assert!(raw.contains('\u{9b}'), "serde_json leaves C1 raw");
        let safe = escape_json_controls(&raw);
        assert!(!safe.chars().any(|c| c.is_control() && c != '\n'), "{safe}");
        assert!(safe.contains("\\u009b") && safe.contains("\\u007f"));
        assert!(safe.contains("\\u202e") && safe.contains("\\u200b") && safe.contains("\\u2028"));
        assert!(safe.contains('\u{200d}'), "ZWJ is kept");
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back, value);
        assert!(matches!(escape_json_controls("[1]"), Cow::Borrowed(_)));
    }
}
