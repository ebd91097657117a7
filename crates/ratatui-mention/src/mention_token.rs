//! Finding trigger tokens (`@…`) and finished mentions in composer text: pure scans the
//! composer and the popup share, so highlighting and popup detection agree. Tokens are
//! delimited by JavaScript whitespace ([`crate::js_chars`]).

use std::ops::Range;

use crate::js_chars::is_js_whitespace;
use crate::mention::mention_ranges;
use crate::uri_rule::UriRule;

/// The trigger token under the cursor: char offsets into the whole text, the trigger and
/// the query after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MentionToken {
    /// The trigger character the token starts with (`@`).
    pub trigger: char,
    /// Char index of the trigger.
    pub start_char: usize,
    /// Char index one past the token's last char.
    pub end_char: usize,
    /// The token's text after the `@`.
    pub query: String,
}

/// The token under a cursor placed before char `cursor_char_index` (on its first char,
/// inside it or just after it) that starts with one of `triggers`, unless it lies in a
/// finished mention `uris` accepts.
pub fn mention_token_at(
    text: &str,
    cursor_char_index: usize,
    uris: &UriRule,
    triggers: &[char],
) -> Option<MentionToken> {
    let chars: Vec<char> = text.chars().collect();
    let cursor = cursor_char_index.min(chars.len());
    let mentions = mention_char_spans(text, uris);
    if mentions.iter().any(|m| m.start < cursor && cursor < m.end) {
        return None;
    }
    // A finished mention bounds the token like whitespace does: a token never swallows one.
    let floor = mentions
        .iter()
        .filter(|m| m.end <= cursor)
        .map(|m| m.end)
        .max()
        .unwrap_or(0);
    let ceiling = mentions
        .iter()
        .find(|m| m.start >= cursor)
        .map_or(chars.len(), |m| m.start);
    let mut start = cursor;
    while start > floor && chars.get(start - 1).is_some_and(|c| !is_js_whitespace(*c)) {
        start -= 1;
    }
    let mut end = cursor;
    while end < ceiling && chars.get(end).is_some_and(|c| !is_js_whitespace(*c)) {
        end += 1;
    }
    let trigger = *chars.get(start).filter(|c| triggers.contains(c))?;
    if mentions.iter().any(|m| m.start == start) {
        return None;
    }
    Some(MentionToken {
        trigger,
        start_char: start,
        end_char: end,
        query: chars
            .get(start + 1..end)
            .unwrap_or_default()
            .iter()
            .collect(),
    })
}

/// A token a space did not end (multi-word queries): the char index of its trigger, and
/// how many chars of the text follow the token — the rest of the draft, which typing in the
/// token does not change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MultiWord {
    pub start: usize,
    pub after: usize,
}

/// The token of several words whose trigger is at `multi.start` and which the last
/// `multi.after` chars of the text follow: words joined by single spaces (a space right
/// before the end, being typed, included; any spacing inside a quote still open), after a
/// first word that is not empty. Two spaces, any other whitespace, or a finished mention
/// inside it end it: `None` then, and also unless a trigger opens a token at the start and
/// the cursor lies after it and within the words. The query is the words after the
/// trigger, without a trailing space.
pub fn multi_word_token_at(
    text: &str,
    cursor_char_index: usize,
    uris: &UriRule,
    triggers: &[char],
    multi: MultiWord,
) -> Option<MentionToken> {
    let start = multi.start;
    let chars: Vec<char> = text.chars().collect();
    let cursor = cursor_char_index.min(chars.len());
    let trigger = *chars.get(start).filter(|c| triggers.contains(c))?;
    let end = chars.len().checked_sub(multi.after)?;
    let mentions = mention_char_spans(text, uris);
    let opens = start == 0
        || chars.get(start - 1).is_some_and(|c| is_js_whitespace(*c))
        || mentions.iter().any(|m| m.end == start);
    let crosses_mention = mentions.iter().any(|m| m.start < end && start < m.end);
    let rest_apart = chars
        .get(end)
        .is_none_or(|c| is_js_whitespace(*c) || mentions.iter().any(|m| m.start == end));
    if !opens || crosses_mention || !rest_apart || cursor <= start || cursor > end {
        return None;
    }
    let words = chars.get(start + 1..end)?;
    let open_quote = words.first() == Some(&'"') && !words.iter().skip(1).any(|&c| c == '"');
    let mut previous = None;
    for (i, &c) in words.iter().enumerate() {
        if is_js_whitespace(c) {
            let joins = c == ' ' && (open_quote || previous.is_some_and(|p| !is_js_whitespace(p)));
            let first_word_empty = i == 0;
            if !joins || first_word_empty {
                return None;
            }
        }
        previous = Some(c);
    }
    let mut query: String = words.iter().collect();
    if query.ends_with(' ') && !open_quote {
        query.pop();
    }
    Some(MentionToken {
        trigger,
        start_char: start,
        end_char: end,
        query,
    })
}

/// Byte ranges of the finished mentions in `text` whose URI `uris` accepts, leftmost
/// first.
pub fn mention_spans(text: &str, uris: &UriRule) -> Vec<Range<usize>> {
    mention_ranges(text, &|uri| uris.accepts(uri))
}

/// [`mention_spans`] as char ranges, for cursor arithmetic on the textarea.
pub fn mention_char_spans(text: &str, uris: &UriRule) -> Vec<Range<usize>> {
    let byte_spans = mention_spans(text, uris);
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

#[cfg(test)]
#[allow(clippy::single_range_in_vec_init)] // expected spans are lists
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use proptest::prelude::*;

    /// The URI rule of the app's chips, and the `@` trigger.
    fn dsh() -> UriRule {
        UriRule::Schemes(vec!["dsh-session:".to_owned()])
    }
    const AT: &[char] = &['@'];

    #[allow(clippy::unnecessary_wraps)] // reads as the expected value in the tables
    fn token(start_char: usize, end_char: usize, query: &str) -> Option<MentionToken> {
        Some(MentionToken {
            trigger: '@',
            start_char,
            end_char,
            query: query.to_string(),
        })
    }

    #[test]
    fn token_detection_table() {
        let mention = "@[Old chat](dsh-session:ImEi)";
        let after_mention = format!("{mention} @x");
        let before_mention = format!("@x{mention}");
        let glued_after = format!("{mention}@x");
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
            (
                "a token right before a mention stops at it",
                before_mention.as_str(),
                2,
                token(0, 2, "x"),
            ),
            (
                "a token right after a mention starts after it",
                glued_after.as_str(),
                31,
                token(29, 31, "x"),
            ),
        ];
        for (name, text, cursor, want) in cases {
            assert_eq!(
                mention_token_at(text, cursor, &dsh(), AT),
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
            assert_eq!(mention_spans(text, &dsh()), want, "{text:?}");
        }
    }

    #[test]
    fn other_schemes_are_mentions_only_when_configured() {
        let text = "ask @[Ada](user:ada) and @[b](dsh-session:Ig)";
        assert_eq!(
            mention_spans(text, &UriRule::Schemes(vec!["user:".to_owned()])),
            vec![4..20]
        );
        assert_eq!(mention_spans(text, &dsh()), vec![25..45]);
        assert_eq!(
            mention_token_at(text, 6, &UriRule::Schemes(vec!["user:".to_owned()]), AT),
            None,
            "inside a user mention"
        );
        assert_eq!(
            mention_token_at(text, 6, &dsh(), AT),
            token(4, 20, "[Ada](user:ada)"),
            "not a mention under the default scheme: an ordinary token"
        );
    }

    #[test]
    fn char_spans_count_chars_not_bytes() {
        let text = "会话 @[记录](dsh-session:Ig) x";
        assert_eq!(mention_char_spans(text, &dsh()), vec![3..24]);
        let span = mention_spans(text, &dsh())[0].clone();
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
            if let Some(t) = mention_token_at(&text, cursor, &dsh(), AT) {
                prop_assert!(t.start_char <= cursor.min(text.chars().count()));
                prop_assert!(t.end_char >= t.start_char);
            }
            for span in mention_spans(&text, &dsh()) {
                prop_assert!(text.get(span).is_some());
            }
        }

        #[test]
        fn tokens_and_char_spans_are_consistent(
            text in "\\PC{0,30}|[@\\[\\]()\\\\ a\u{3000}\n漢😀]{0,30}|.{0,30}",
            cursor in 0usize..80,
        ) {
            let chars: Vec<char> = text.chars().collect();
            if let Some(token) = mention_token_at(&text, cursor, &dsh(), AT) {
                let cursor = cursor.min(chars.len());
                prop_assert!(token.start_char <= cursor && cursor <= token.end_char);
                prop_assert!(token.end_char <= chars.len());
                prop_assert_eq!(chars[token.start_char], '@');
                let query: String = chars[token.start_char + 1..token.end_char].iter().collect();
                prop_assert_eq!(&token.query, &query);
                prop_assert!(!chars[token.start_char..token.end_char]
                    .iter()
                    .any(|&c| is_js_whitespace(c)));
            }
            let spans = mention_spans(&text, &dsh());
            let char_spans = mention_char_spans(&text, &dsh());
            prop_assert_eq!(spans.len(), char_spans.len());
            for (bytes, chars_range) in spans.iter().zip(&char_spans) {
                let via_chars: String = chars[chars_range.clone()].iter().collect();
                prop_assert_eq!(via_chars.as_str(), &text[bytes.clone()]);
            }
        }

        #[test]
        fn skipping_failed_starts_finds_the_same_spans_as_trying_every_start(
            text in "[@\\[\\]()\\\\ a\n]{0,40}|(@\\[|\\]|\\(|dsh-session:|ImEi|\\)|\\\\|\n|x| )*"
        ) {
            // The reference: at every `@[`, the one prefix that reads as a whole mention of the
            // scheme (if any); a refused one is skipped one byte at a time.
            let mut naive = Vec::new();
            let mut pos = 0;
            while let Some(offset) = text.get(pos..).and_then(|rest| rest.find("@[")) {
                let start = pos + offset;
                let whole = (start + 1..=text.len()).find_map(|end| {
                    let m = crate::Mention::parse(text.get(start..end)?).ok()?;
                    m.uri.starts_with("dsh-session:").then_some(end)
                });
                match whole {
                    Some(end) => {
                        naive.push(start..end);
                        pos = end;
                    }
                    None => pos = start + 1,
                }
            }
            prop_assert_eq!(mention_spans(&text, &dsh()), naive);
        }
    }

    #[test]
    fn many_unclosed_openers_are_scanned_in_linear_time() {
        // Was quadratic: 80 KB of `@[` took 90 s in a debug build (5.8 s optimized), on
        // every keystroke of the composer. Linear, this is a few milliseconds.
        let text = "@[".repeat(100_000) + "\\\n@[";
        let started = std::time::Instant::now();
        assert_eq!(mention_spans(&text, &dsh()), Vec::<Range<usize>>::new());
        assert_eq!(
            mention_char_spans(&text, &dsh()),
            Vec::<Range<usize>>::new()
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        let closed = format!("{text}](dsh-session:ImEi)");
        assert_eq!(mention_spans(&closed, &dsh()).len(), 1);
    }

    #[test]
    fn multi_word_token_table() {
        let mention = "@[Old chat](dsh-session:ImEi)";
        let after = format!("@a b{mention}");
        let inside = format!("@a {mention} b");
        let at = |start, after| MultiWord { start, after };
        let cases: Vec<(&str, usize, MultiWord, Option<MentionToken>)> = vec![
            ("@alice", 6, at(0, 0), token(0, 6, "alice")),
            ("@alice ", 7, at(0, 0), token(0, 7, "alice")),
            (
                "@Investigate memry leak",
                23,
                at(0, 0),
                token(0, 23, "Investigate memry leak"),
            ),
            (
                "@Investigate memry leak",
                5,
                at(0, 0),
                token(0, 23, "Investigate memry leak"),
            ),
            ("say @two words", 14, at(4, 0), token(4, 14, "two words")),
            ("@two  ", 6, at(0, 0), None),
            ("@two  words", 11, at(0, 0), None),
            ("@two\nnext", 4, at(0, 5), token(0, 4, "two")),
            ("@two \nnext", 5, at(0, 5), token(0, 5, "two")),
            ("@two\tx", 6, at(0, 0), None),
            ("@two words", 0, at(0, 0), None),
            ("x@two words", 11, at(1, 0), None),
            ("@a b", 4, at(1, 0), None),
            ("@ b", 3, at(0, 0), None),
            (after.as_str(), 4, at(0, 29), token(0, 4, "a b")),
            (inside.as_str(), 33, at(0, 0), None),
            // In the middle of a draft: the rest stays text, even after the space typed.
            ("see @two  rest", 9, at(4, 5), token(4, 9, "two")),
            (
                "see @two words rest",
                14,
                at(4, 5),
                token(4, 14, "two words"),
            ),
            ("see @two wordsrest", 14, at(4, 4), None),
            // A quote still open holds any spacing.
            ("@\"my  dir/", 10, at(0, 0), token(0, 10, "\"my  dir/")),
        ];
        for (text, cursor, multi, want) in cases {
            assert_eq!(
                multi_word_token_at(text, cursor, &dsh(), AT, multi),
                want,
                "{text:?} cursor {cursor} {multi:?}"
            );
        }
    }
}
