//! JavaScript strings may hold lone UTF-16 surrogates, and dsh writes them as `\udXXX`
//! escapes (a cut emoji is enough). Rust strings cannot hold them, so before a log line is
//! parsed every lone surrogate escape becomes `\ufffd` (U+FFFD), and the rest of the line
//! parses normally.
//!
//! The replacement has the same length (6 bytes) as what it replaces, so byte offsets into
//! the line stay valid. A session id is still checked against its directory name afterwards,
//! so an id that really held a lone surrogate never matches and is not listed.

use std::borrow::Cow;

/// The escape every lone surrogate escape is replaced by.
const REPLACEMENT: &[u8; 6] = b"\\ufffd";

/// `line` with every lone surrogate `\uXXXX` escape replaced by `\ufffd`; borrowed (no copy)
/// when there is none, which is every line this project writes.
pub fn repair(line: &[u8]) -> Cow<'_, [u8]> {
    if !may_hold_surrogate(line) {
        return Cow::Borrowed(line);
    }
    let mut out: Option<Vec<u8>> = None;
    let mut i = 0;
    while let Some(&byte) = line.get(i) {
        if byte != b'\\' {
            i += 1;
            continue;
        }
        let Some(unit) = escaped_unit(line, i) else {
            // `\"`, `\\`, `\n`, …: skip the escaped character so `\\u` is never misread.
            i += 2;
            continue;
        };
        let unpaired = match unit {
            0xD800..=0xDBFF => !matches!(escaped_unit(line, i + 6), Some(0xDC00..=0xDFFF)),
            0xDC00..=0xDFFF => true,
            _ => false,
        };
        if unpaired {
            let buf = out.get_or_insert_with(|| line.to_vec());
            if let Some(slot) = buf.get_mut(i..i + 6) {
                slot.copy_from_slice(REPLACEMENT);
            }
            i += 6;
        } else if (0xD800..=0xDBFF).contains(&unit) {
            i += 12; // a valid pair: both halves
        } else {
            i += 6;
        }
    }
    out.map_or(Cow::Borrowed(line), Cow::Owned)
}

/// Cheap pre-check: a surrogate escape starts `\ud` or `\uD`.
fn may_hold_surrogate(line: &[u8]) -> bool {
    memchr::memmem::find_iter(line, b"\\u")
        .any(|at| line.get(at + 2).is_some_and(|&b| (b | 0x20) == b'd'))
}

/// The code unit of a `\uXXXX` escape starting at `at`, if there is one.
fn escaped_unit(line: &[u8], at: usize) -> Option<u16> {
    let escape = line.get(at..at + 6)?;
    if escape.get(..2)? != b"\\u" {
        return None;
    }
    let hex = std::str::from_utf8(escape.get(2..)?).ok()?;
    u16::from_str_radix(hex, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn text_of(json: &str) -> Result<String, String> {
        let repaired = repair(json.as_bytes());
        serde_json::from_slice::<String>(&repaired).map_err(|e| e.to_string())
    }

    #[test]
    fn lone_surrogates_read_as_replacement_characters() {
        let cases = [
            (r#""a\ud800b""#, "a\u{FFFD}b"),
            (r#""a\uDC00b""#, "a\u{FFFD}b"),
            (r#""\ud83d""#, "\u{FFFD}"),
            (r#""\ud83d\ud83d\ude00""#, "\u{FFFD}😀"),
            (r#""\ude00\ud83d""#, "\u{FFFD}\u{FFFD}"),
            (r#""\ud83d\ude00""#, "😀"),
            (r#""\ud83dx\ude00""#, "\u{FFFD}x\u{FFFD}"),
            (r#""\\ud800""#, "\\ud800"),
            (r#""\\\ud800""#, "\\\u{FFFD}"),
            (r#""\u00e9\n""#, "é\n"),
            (r#""plain""#, "plain"),
        ];
        for (json, want) in cases {
            assert_eq!(text_of(json).as_deref(), Ok(want), "{json}");
        }
    }

    #[test]
    fn lines_without_lone_surrogates_are_not_copied() {
        for line in [&br#"{"a":"\ud83d\ude00"}"#[..], b"{\"a\":1}", b"\\"] {
            assert!(matches!(repair(line), Cow::Borrowed(_)));
        }
        let fixed = repair(br#"{"a":"\ud800","b":"\udfff"}"#);
        assert_eq!(&*fixed, &br#"{"a":"\ufffd","b":"\ufffd"}"#[..]);
    }

    #[test]
    fn truncated_escapes_are_left_to_the_parser() {
        for line in [&br#""\ud8"#[..], br#""\ud800\u"#, br#""\ud800\udc"#] {
            let repaired = repair(line);
            assert!(serde_json::from_slice::<String>(&repaired).is_err());
        }
    }

    proptest::proptest! {
        #[test]
        fn repair_keeps_length_and_valid_json(s in proptest::collection::vec(proptest::num::u16::ANY, 0..20)) {
            let mut json = String::from("\"");
            for unit in &s {
                std::fmt::Write::write_fmt(&mut json, format_args!("\\u{unit:04x}")).unwrap();
            }
            json.push('"');
            let repaired = repair(json.as_bytes());
            proptest::prop_assert_eq!(repaired.len(), json.len());
            let parsed: String = serde_json::from_slice(&repaired).unwrap();
            let want: String = char::decode_utf16(s.iter().copied())
                .map(|c| c.unwrap_or('\u{FFFD}'))
                .collect();
            proptest::prop_assert_eq!(parsed, want);
        }
    }
}
