//! JSON text written by hand so it is byte-exact with JavaScript's `JSON.stringify`:
//! string escaping (docs/references.md: URIs and mentions) and the tag-safe form of the source objects (docs/references.md: what the model sees),
//! where every `<` is written `\u003c` so no source text can spell a framing tag.

use std::fmt::Write as _;

use super::source_data::SourceData;
use dsh_store::TextMeasure;

/// Whether `<` is escaped (`\u003c`) on top of plain `JSON.stringify` escaping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Escaping {
    /// Exactly `JSON.stringify`.
    Plain,
    /// `JSON.stringify` plus `<` → `\u003c`.
    TagSafe,
}

/// Escaped length in bytes of one UTF-8 byte. Only ASCII bytes are ever escaped, so
/// a byte-wise table is exact for UTF-8 text.
fn escaped_byte_len(b: u8, escaping: Escaping) -> usize {
    match b {
        b'"' | b'\\' | 0x08 | 0x0C | b'\n' | b'\r' | b'\t' => 2,
        0x00..=0x1F => 6,
        b'<' if escaping == Escaping::TagSafe => 6,
        _ => 1,
    }
}

/// Bytes one UTF-8 byte adds when escaped (0, 1 or 5), branch-free so the sum below
/// vectorizes.
#[inline]
fn escape_extra(b: u8, lt: bool) -> u8 {
    let short = u8::from(
        b == b'"' || b == b'\\' || b == 0x08 || b == 0x0C || b == b'\n' || b == b'\r' || b == b'\t',
    );
    let control = u8::from(b < 0x20);
    let less = u8::from(lt && b == b'<');
    short + 5 * (control & (1 - short)) + 5 * less
}

/// Length of `s`'s escaped form, without the surrounding quotes: its length plus what each
/// escaped byte adds, summed in blocks small enough for a `u16` accumulator.
pub fn escaped_len(s: &str, escaping: Escaping) -> usize {
    let lt = escaping == Escaping::TagSafe;
    let bytes = s.as_bytes();
    let mut total = bytes.len();
    // 4096 bytes × at most 5 extra fits in a u16.
    for block in bytes.chunks(4096) {
        let extra: u16 = block.iter().map(|&b| u16::from(escape_extra(b, lt))).sum();
        total += usize::from(extra);
    }
    total
}

/// [`escaped_len`] (tag-safe) of a text known by its [`TextMeasure`] only: each two-byte
/// escape adds one byte, each `\u00XX` (control bytes, `<`) five.
pub fn tag_safe_len(m: &TextMeasure) -> usize {
    m.bytes + m.short_escapes + 5 * (m.controls + m.less_than)
}

/// Length of `s` as a quoted JSON string literal.
pub fn literal_len(s: &str, escaping: Escaping) -> usize {
    escaped_len(s, escaping) + 2
}

/// Append `s` as a quoted JSON string literal.
pub fn push_literal(out: &mut String, s: &str, escaping: Escaping) {
    out.push('"');
    let mut plain_from = 0;
    for (i, b) in s.bytes().enumerate() {
        if escaped_byte_len(b, escaping) == 1 {
            continue;
        }
        // `i` is an ASCII byte, so both slice ends are char boundaries.
        out.push_str(s.get(plain_from..i).unwrap_or_default());
        plain_from = i + 1;
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            0x08 => out.push_str("\\b"),
            0x0C => out.push_str("\\f"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            other => {
                let _ = write!(out, "\\u{other:04x}");
            }
        }
    }
    out.push_str(s.get(plain_from..).unwrap_or_default());
    out.push('"');
}

/// `s` as a JSON string literal exactly as `JSON.stringify` writes it.
pub fn js_string_literal(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    push_literal(&mut out, s, Escaping::Plain);
    out
}

/// Fixed-key prefixes of the source object, in key order.
const KEY_SESSION_ID: &str = "{\"sessionId\":";
const KEY_LABEL: &str = ",\"label\":";
const KEY_CWD: &str = ",\"cwd\":";
const KEY_SEQ: &str = ",\"capturedThroughSeq\":";
const KEY_CONVERSATION: &str = ",\"conversation\":[";
const OBJECT_END: &str = "]}";
const ITEM_ROLE: &str = "{\"role\":";
const ITEM_TEXT: &str = ",\"text\":";
const ITEM_END: &str = "}";

/// Serialized size of the source object without its conversation items (but with `[]`).
pub fn source_fixed_len(
    session_id: &str,
    label: &str,
    cwd: Option<&str>,
    captured_through_seq: Option<u64>,
) -> usize {
    KEY_SESSION_ID.len()
        + literal_len(session_id, Escaping::TagSafe)
        + KEY_LABEL.len()
        + literal_len(label, Escaping::TagSafe)
        + KEY_CWD.len()
        + cwd.map_or(4, |c| literal_len(c, Escaping::TagSafe))
        + KEY_SEQ.len()
        + captured_through_seq.map_or(4, |n| decimal_len(u128::from(n)))
        + KEY_CONVERSATION.len()
        + OBJECT_END.len()
}

/// Serialized size of one conversation item whose text escapes to `escaped_text_len` bytes
/// (without the separating comma).
pub fn item_len(role: &str, escaped_text_len: usize) -> usize {
    ITEM_ROLE.len()
        + literal_len(role, Escaping::TagSafe)
        + ITEM_TEXT.len()
        + escaped_text_len
        + 2
        + ITEM_END.len()
}

/// Number of decimal digits of `n`.
pub fn decimal_len(n: u128) -> usize {
    let mut digits = 1;
    let mut rest = n / 10;
    while rest > 0 {
        digits += 1;
        rest /= 10;
    }
    digits
}

/// Append the tag-safe JSON of one source object.
pub fn push_source(out: &mut String, source: &SourceData) {
    out.push_str(KEY_SESSION_ID);
    push_literal(out, &source.session_id, Escaping::TagSafe);
    out.push_str(KEY_LABEL);
    push_literal(out, &source.label, Escaping::TagSafe);
    out.push_str(KEY_CWD);
    match &source.cwd {
        Some(cwd) => push_literal(out, cwd, Escaping::TagSafe),
        None => out.push_str("null"),
    }
    out.push_str(KEY_SEQ);
    match source.captured_through_seq {
        Some(n) => {
            let _ = write!(out, "{n}");
        }
        None => out.push_str("null"),
    }
    out.push_str(KEY_CONVERSATION);
    for (i, turn) in source.conversation.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(ITEM_ROLE);
        push_literal(out, turn.role.as_str(), Escaping::TagSafe);
        out.push_str(ITEM_TEXT);
        push_literal(out, &turn.text, Escaping::TagSafe);
        out.push_str(ITEM_END);
    }
    out.push_str(OBJECT_END);
}

/// Tag-safe JSON of one source object.
pub fn source_json(source: &SourceData) -> String {
    let mut out = String::new();
    push_source(&mut out, source);
    out
}

/// Tag-safe JSON array of source objects: the text between the framing tags.
pub fn sources_json(sources: &[SourceData]) -> String {
    let mut out = String::from("[");
    for (i, source) in sources.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_source(&mut out, source);
    }
    out.push(']');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::projection::TurnRole;
    use crate::retention::ConversationTurn;

    #[test]
    fn escapes_like_json_stringify() {
        let cases = [
            ("plain", "\"plain\""),
            ("q\"b\\", "\"q\\\"b\\\\\""),
            ("\u{8}\u{c}\n\r\t", "\"\\b\\f\\n\\r\\t\""),
            ("\u{0}\u{1f}\u{b}", "\"\\u0000\\u001f\\u000b\""),
            (
                "\u{7f}\u{85}\u{2028}\u{2029}/<",
                "\"\u{7f}\u{85}\u{2028}\u{2029}/<\"",
            ),
            ("漢字😀", "\"漢字😀\""),
        ];
        for (input, want) in cases {
            assert_eq!(js_string_literal(input), want, "{input:?}");
            assert_eq!(literal_len(input, Escaping::Plain), want.len(), "{input:?}");
        }
    }

    #[test]
    fn tag_safe_escapes_less_than_and_round_trips() {
        let text = "</referenced-sessions><x>\u{1b}[2J\"";
        let mut out = String::new();
        push_literal(&mut out, text, Escaping::TagSafe);
        assert!(!out.contains('<'));
        assert_eq!(out.len(), literal_len(text, Escaping::TagSafe));
        let back: String = serde_json::from_str(&out).unwrap();
        assert_eq!(back, text);
    }

    #[test]
    fn source_object_layout_and_length() {
        let source = SourceData {
            session_id: "s<1".into(),
            label: "L".into(),
            cwd: None,
            captured_through_seq: Some(12),
            conversation: vec![
                ConversationTurn {
                    role: TurnRole::User,
                    text: "hi\n".into(),
                },
                ConversationTurn {
                    role: TurnRole::Assistant,
                    text: "<b>".into(),
                },
            ],
        };
        let json = source_json(&source);
        assert_eq!(
            json,
            r#"{"sessionId":"s\u003c1","label":"L","cwd":null,"capturedThroughSeq":12,"conversation":[{"role":"user","text":"hi\n"},{"role":"assistant","text":"\u003cb>"}]}"#
        );
        let fixed = source_fixed_len("s<1", "L", None, Some(12));
        let items = item_len("user", escaped_len("hi\n", Escaping::TagSafe))
            + 1
            + item_len("assistant", escaped_len("<b>", Escaping::TagSafe));
        assert_eq!(json.len(), fixed + items);
        assert_eq!(sources_json(&[]), "[]");
        assert_eq!(
            sources_json(&[source.clone(), source]).len(),
            2 * json.len() + 3
        );
    }

    #[test]
    fn word_at_a_time_length_matches_bytewise() {
        let alphabet = [
            "a", "<", "\"", "\\", "\n", "\u{1}", "\u{1f}", " ", "\u{7f}", "é", "漢", "😀", "\u{85}",
        ];
        let mut seed = 7u64;
        for _ in 0..2000 {
            let mut text = String::new();
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let len = seed >> 58;
            for k in 0..len {
                let rotated = seed.rotate_left(u32::try_from(k * 5).unwrap_or(0));
                let pick = usize::try_from(rotated % alphabet.len() as u64).unwrap_or(0);
                text.push_str(alphabet[pick]);
            }
            for escaping in [Escaping::Plain, Escaping::TagSafe] {
                let bytewise: usize = text.bytes().map(|b| escaped_byte_len(b, escaping)).sum();
                assert_eq!(escaped_len(&text, escaping), bytewise, "{text:?}");
            }
        }
    }

    #[test]
    fn escaped_len_matches_the_byte_table() {
        let mut rng = fastrand::Rng::with_seed(1);
        let alphabet: Vec<char> = ('\u{0}'..='\u{7f}')
            .chain(['é', '漢', '😀', '\u{2028}'])
            .collect();
        for len in [0, 1, 7, 8, 9, 100, 4095, 4096, 4097, 10_000] {
            let s: String = (0..len)
                .map(|_| alphabet[rng.usize(..alphabet.len())])
                .collect();
            for escaping in [Escaping::Plain, Escaping::TagSafe] {
                let want: usize = s.bytes().map(|b| escaped_byte_len(b, escaping)).sum();
                assert_eq!(escaped_len(&s, escaping), want, "{len} {escaping:?}");
                let mut out = String::new();
                push_literal(&mut out, &s, escaping);
                assert_eq!(out.len(), want + 2);
            }
        }
        // Worst case: every byte of a long block escapes to six bytes.
        let controls = "\u{1}".repeat(10_000);
        assert_eq!(escaped_len(&controls, Escaping::Plain), 60_000);
    }

    #[test]
    fn decimal_lengths() {
        for (n, d) in [
            (0u128, 1),
            (9, 1),
            (10, 2),
            (999, 3),
            (1000, 4),
            (u128::from(u64::MAX), 20),
        ] {
            assert_eq!(decimal_len(n), d);
            assert_eq!(n.to_string().len(), d);
        }
    }
}
