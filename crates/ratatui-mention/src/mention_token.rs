//! Finding `@` tokens and finished mentions `@[label](<scheme>…)` in composer text: pure
//! scans the composer and the popup share, so highlighting and popup detection agree.
//! Tokens are delimited by JavaScript whitespace ([`crate::js_chars`]).

use std::ops::Range;

use crate::js_chars::{is_js_whitespace, is_line_terminator};

/// The URI scheme of finished mentions unless configured otherwise (dsh's session URIs).
pub const DEFAULT_URI_SCHEME: &str = "dsh-session:";

/// The `@…` token under the cursor: char offsets into the whole text and the query after `@`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MentionToken {
    /// Char index of the `@`.
    pub start_char: usize,
    /// Char index one past the token's last char.
    pub end_char: usize,
    /// The token's text after the `@`.
    pub query: String,
}

/// The `@` token under a cursor placed before char `cursor_char_index` (on the `@`, inside
/// the token or just after it), unless the token lies in a finished mention of `scheme`.
pub fn mention_token_at(
    text: &str,
    cursor_char_index: usize,
    scheme: &str,
) -> Option<MentionToken> {
    let chars: Vec<char> = text.chars().collect();
    let cursor = cursor_char_index.min(chars.len());
    let mut start = cursor;
    while start > 0 && chars.get(start - 1).is_some_and(|c| !is_js_whitespace(*c)) {
        start -= 1;
    }
    let mut end = cursor;
    while chars.get(end).is_some_and(|c| !is_js_whitespace(*c)) {
        end += 1;
    }
    if chars.get(start) != Some(&'@') {
        return None;
    }
    let inside_mention = mention_char_spans(text, scheme)
        .iter()
        .any(|span| span.start <= start && start < span.end);
    if inside_mention {
        return None;
    }
    Some(MentionToken {
        start_char: start,
        end_char: end,
        query: chars
            .get(start + 1..end)
            .unwrap_or_default()
            .iter()
            .collect(),
    })
}

/// Byte ranges of the finished mentions `@[label](<scheme>…)` in `text`, leftmost first: a
/// label with `\`-escapes, then the scheme and a body up to `)` without whitespace (the
/// URI is not decoded).
pub fn mention_spans(text: &str, scheme: &str) -> Vec<Range<usize>> {
    let mut spans = Vec::new();
    let mut pos = 0;
    while let Some(offset) = text.get(pos..).and_then(|rest| rest.find("@[")) {
        let start = pos + offset;
        match explicit_mention_len(text.get(start..).unwrap_or_default(), scheme) {
            Ok(len) => {
                spans.push(start..start + len);
                pos = start + len;
            }
            // Every `@[` before `resume` would stop its label scan at the same place and
            // fail the same way, so skipping them keeps this linear (and the result equal).
            Err(resume) => pos = start + resume.max(1),
        }
    }
    spans
}

/// [`mention_spans`] as char ranges, for cursor arithmetic on the textarea.
pub fn mention_char_spans(text: &str, scheme: &str) -> Vec<Range<usize>> {
    let byte_spans = mention_spans(text, scheme);
    if byte_spans.is_empty() {
        return byte_spans;
    }
    let mut out = Vec::with_capacity(byte_spans.len());
    let mut chars_before = 0;
    let mut last_byte = 0;
    for span in byte_spans {
        chars_before += text
            .get(last_byte..span.start)
            .unwrap_or_default()
            .chars()
            .count();
        let len = text.get(span.clone()).unwrap_or_default().chars().count();
        out.push(chars_before..chars_before + len);
        chars_before += len;
        last_byte = span.end;
    }
    out
}

/// Length in bytes of the explicit mention at the start of `s` (`Ok`), or where its label
/// scan stopped (`Err`): a label scan begun at any later `@[` before that offset ends at the
/// same place (backslash pairing resynchronizes after the `[`), so none of them can match.
fn explicit_mention_len(s: &str, scheme: &str) -> Result<usize, usize> {
    let mut it = s.char_indices();
    let opens = matches!(it.next(), Some((_, '@'))) && matches!(it.next(), Some((_, '[')));
    if !opens {
        return Err(1);
    }
    // Label: `\` + a char that is not a line terminator, or any char but `\` and `]`.
    let close = loop {
        let Some((i, c)) = it.next() else {
            return Err(s.len());
        };
        match c {
            ']' => break i,
            '\\' => match it.next() {
                Some((_, escaped)) if !is_line_terminator(escaped) => {}
                _ => return Err(i),
            },
            _ => {}
        }
    };
    match it.next() {
        Some((_, '(')) => {}
        _ => return Err(close),
    }
    let uri_start = close + 2;
    let rest = s.get(uri_start..).ok_or(close)?;
    if !rest.starts_with(scheme) {
        return Err(close);
    }
    let body = rest.get(scheme.len()..).ok_or(close)?;
    let body_len = body
        .find(|c: char| is_js_whitespace(c) || c == ')')
        .unwrap_or(body.len());
    if body.get(body_len..).is_some_and(|r| r.starts_with(')')) {
        Ok(uri_start + scheme.len() + body_len + 1)
    } else {
        Err(close)
    }
}

#[cfg(test)]
#[allow(clippy::single_range_in_vec_init)] // expected spans are lists
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use proptest::prelude::*;

    #[allow(clippy::unnecessary_wraps)] // reads as the expected value in the tables
    fn token(start_char: usize, end_char: usize, query: &str) -> Option<MentionToken> {
        Some(MentionToken {
            start_char,
            end_char,
            query: query.to_string(),
        })
    }

    #[test]
    fn token_detection_table() {
        let mention = "@[Old chat](dsh-session:ImEi)";
        let after_mention = format!("{mention} @x");
        let cases: Vec<(&str, &str, usize, Option<MentionToken>)> = vec![
            ("lone @ at end", "@", 1, token(0, 1, "")),
            ("cursor on the @", "@abc", 0, token(0, 4, "abc")),
            ("cursor inside", "@abc", 2, token(0, 4, "abc")),
            ("cursor at end", "hi @abc", 7, token(3, 7, "abc")),
            ("cursor after space", "@abc ", 5, None),
            ("foo@bar never opens", "foo@bar", 7, None),
            ("foo@bar cursor on @", "foo@bar", 3, None),
            ("plain word", "hello", 3, None),
            ("empty text", "", 0, None),
            ("cursor past end is clamped", "@ab", 99, token(0, 3, "ab")),
            (
                "Turkish dotted I",
                "selam @İstanbul",
                15,
                token(6, 15, "İstanbul"),
            ),
            ("Cyrillic", "привет @Москва", 14, token(7, 14, "Москва")),
            ("CJK", "看看 @会话记录", 8, token(3, 8, "会话记录")),
            ("emoji", "🎉 @😀x", 5, token(2, 5, "😀x")),
            ("emoji before cursor only", "@🎉", 2, token(0, 2, "🎉")),
            (
                "full-width space delimits",
                "文字\u{3000}@検索",
                6,
                token(3, 6, "検索"),
            ),
            (
                "full-width space before @",
                "x\u{3000}@",
                3,
                token(2, 3, ""),
            ),
            ("BOM is whitespace", "a\u{feff}@q", 4, token(2, 4, "q")),
            ("no-break space delimits", "a\u{a0}@q", 4, token(2, 4, "q")),
            (
                "multiline second line",
                "first line\n@sec",
                15,
                token(11, 15, "sec"),
            ),
            ("multiline first line", "@one\ntwo", 2, token(0, 4, "one")),
            ("newline ends token", "@one\ntwo", 5, None),
            ("double @", "@@x", 3, token(0, 3, "@x")),
            ("completed mention", mention, 5, None),
            ("right after completed mention", mention, 29, None),
            (
                "new token after mention",
                after_mention.as_str(),
                32,
                token(30, 32, "x"),
            ),
            (
                "label with space inside mention",
                "@[a b](dsh-session:Ig)",
                1,
                None,
            ),
        ];
        for (name, text, cursor, want) in cases {
            assert_eq!(
                mention_token_at(text, cursor, DEFAULT_URI_SCHEME),
                want,
                "{name}: {text:?} @ {cursor}"
            );
        }
    }

    #[test]
    fn mention_span_table() {
        let cases: Vec<(&str, Vec<Range<usize>>)> = vec![
            ("", vec![]),
            ("@[a](dsh-session:Ig)", vec![0..20]),
            ("x @[a](dsh-session:Ig) y", vec![2..22]),
            ("@[a\\]b](dsh-session:Ig)", vec![0..23]),
            ("@[a](dsh-session:)", vec![0..18]),
            ("@[a](dsh-session:Ig", vec![]),
            ("@[a](other:Ig)", vec![]),
            ("@[a\\\nb](dsh-session:Ig)", vec![]),
            ("@[a\nb](dsh-session:Ig)", vec![0..22]),
            ("@[a](dsh-session:I g)", vec![]),
            (
                "@[a](dsh-session:Ig)@[b](dsh-session:Iw)",
                vec![0..20, 20..40],
            ),
            ("@[@[a](dsh-session:Ig)", vec![0..22]),
            ("@[会话](dsh-session:Ig)", vec![0..25]),
            ("@[a](dsh-session:Ig\u{3000})", vec![]),
        ];
        for (text, want) in cases {
            assert_eq!(mention_spans(text, DEFAULT_URI_SCHEME), want, "{text:?}");
        }
    }

    #[test]
    fn other_schemes_are_mentions_only_when_configured() {
        let text = "ask @[Ada](user:ada) and @[b](dsh-session:Ig)";
        assert_eq!(mention_spans(text, "user:"), vec![4..20]);
        assert_eq!(mention_spans(text, DEFAULT_URI_SCHEME), vec![25..45]);
        assert_eq!(
            mention_token_at(text, 6, "user:"),
            None,
            "inside a user mention"
        );
        assert_eq!(
            mention_token_at(text, 6, DEFAULT_URI_SCHEME),
            token(4, 20, "[Ada](user:ada)"),
            "not a mention under the default scheme: an ordinary token"
        );
    }

    #[test]
    fn char_spans_count_chars_not_bytes() {
        let text = "会话 @[记录](dsh-session:Ig) x";
        assert_eq!(mention_char_spans(text, DEFAULT_URI_SCHEME), vec![3..24]);
        let span = mention_spans(text, DEFAULT_URI_SCHEME)[0].clone();
        assert_eq!(&text[span], "@[记录](dsh-session:Ig)");
    }

    #[test]
    fn whitespace_set_is_javascripts() {
        assert!(is_js_whitespace('\u{feff}'));
        assert!(is_js_whitespace('\u{3000}'));
        assert!(!is_js_whitespace('\u{85}'));
        assert!(!is_js_whitespace('\u{200b}'));
        assert!(!is_js_whitespace('x'));
    }

    proptest! {
        #[test]
        fn never_panics(text in "\\PC*|[@\\[\\]()\\\\ a\u{3000}\n]*", cursor in 0usize..64) {
            if let Some(t) = mention_token_at(&text, cursor, DEFAULT_URI_SCHEME) {
                prop_assert!(t.start_char <= cursor.min(text.chars().count()));
                prop_assert!(t.end_char >= t.start_char);
            }
            for span in mention_spans(&text, DEFAULT_URI_SCHEME) {
                prop_assert!(text.get(span).is_some());
            }
        }

        #[test]
        fn skipping_failed_starts_finds_the_same_spans_as_trying_every_start(
            text in "[@\\[\\]()\\\\ a\n]{0,40}|(@\\[|\\]|\\(|dsh-session:|ImEi|\\)|\\\\|\n|x| )*"
        ) {
            // The reference: try an explicit mention at every `@[`, one byte further on failure.
            let mut naive = Vec::new();
            let mut pos = 0;
            while let Some(offset) = text.get(pos..).and_then(|rest| rest.find("@[")) {
                let start = pos + offset;
                match explicit_mention_len(&text[start..], DEFAULT_URI_SCHEME) {
                    Ok(len) => {
                        naive.push(start..start + len);
                        pos = start + len;
                    }
                    Err(_) => pos = start + 1,
                }
            }
            prop_assert_eq!(mention_spans(&text, DEFAULT_URI_SCHEME), naive);
        }
    }

    #[test]
    fn many_unclosed_openers_are_scanned_in_linear_time() {
        // Was quadratic: 80 KB of `@[` took 90 s in a debug build (5.8 s optimized), on
        // every keystroke of the composer. Linear, this is a few milliseconds.
        let text = "@[".repeat(100_000) + "\\\n@[";
        let started = std::time::Instant::now();
        assert_eq!(
            mention_spans(&text, DEFAULT_URI_SCHEME),
            Vec::<Range<usize>>::new()
        );
        assert_eq!(
            mention_char_spans(&text, DEFAULT_URI_SCHEME),
            Vec::<Range<usize>>::new()
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        let closed = format!("{text}](dsh-session:ImEi)");
        assert_eq!(mention_spans(&closed, DEFAULT_URI_SCHEME).len(), 1);
    }
}
