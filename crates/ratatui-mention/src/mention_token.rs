//! Finding trigger tokens (`@…`) in composer text: pure scans the composer, the popup and
//! the textarea mount share, so chips and popup detection agree. Tokens are delimited by
//! the whitespace of the configured syntax ([`crate::MentionSyntax::is_token_space`]) and by
//! finished mentions.

use std::ops::Range;

use crate::grammar::Grammar;

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
/// inside it or just after it) that starts with one of `grammar`'s triggers, unless it lies
/// in a finished mention.
pub fn mention_token_at(
    text: &str,
    cursor_char_index: usize,
    grammar: &Grammar,
) -> Option<MentionToken> {
    let chars: Vec<char> = text.chars().collect();
    let cursor = cursor_char_index.min(chars.len());
    let mentions = mention_char_spans(text, grammar);
    let space = |c: &char| grammar.is_space(*c);
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
    while start > floor && chars.get(start - 1).is_some_and(|c| !space(c)) {
        start -= 1;
    }
    let mut end = cursor;
    while end < ceiling && chars.get(end).is_some_and(|c| !space(c)) {
        end += 1;
    }
    let trigger = *chars.get(start).filter(|c| grammar.is_trigger(**c))?;
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
    grammar: &Grammar,
    multi: MultiWord,
) -> Option<MentionToken> {
    let start = multi.start;
    let chars: Vec<char> = text.chars().collect();
    let cursor = cursor_char_index.min(chars.len());
    let trigger = *chars.get(start).filter(|c| grammar.is_trigger(**c))?;
    let end = chars.len().checked_sub(multi.after)?;
    let mentions = mention_char_spans(text, grammar);
    let space = |c: char| grammar.is_space(c);
    let opens = start == 0
        || chars.get(start - 1).is_some_and(|c| space(*c))
        || mentions.iter().any(|m| m.end == start);
    let crosses_mention = mentions.iter().any(|m| m.start < end && start < m.end);
    let rest_apart = chars
        .get(end)
        .is_none_or(|c| space(*c) || mentions.iter().any(|m| m.start == end));
    if !opens || crosses_mention || !rest_apart || cursor <= start || cursor > end {
        return None;
    }
    let words = chars.get(start + 1..end)?;
    let open_quote = words.first() == Some(&'"') && !words.iter().skip(1).any(|&c| c == '"');
    let mut previous = None;
    for (i, &c) in words.iter().enumerate() {
        if space(c) {
            let joins = c == ' ' && (open_quote || previous.is_some_and(|p| !space(p)));
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

/// The finished mentions of `text` as char ranges, leftmost first, for cursor arithmetic.
pub fn mention_char_spans(text: &str, grammar: &Grammar) -> Vec<Range<usize>> {
    char_ranges(text, grammar.spans(text))
}

/// Byte ranges of `text` (leftmost first, not overlapping) as char ranges.
pub fn char_ranges(text: &str, byte_spans: Vec<Range<usize>>) -> Vec<Range<usize>> {
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

    /// Chips of `contact-uri:` URIs, and the `@` trigger.
    fn users() -> Grammar {
        crate::MentionConfig::default()
            .with_uri_scheme("contact-uri:")
            .grammar()
    }

    fn mention_spans(text: &str, grammar: &Grammar) -> Vec<Range<usize>> {
        grammar.spans(text)
    }

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
        let mention = "@[Old chat](contact-uri:ImEi)";
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
            ("BOM is no whitespace", "a\u{feff}@q", 4, None),
            ("NEL is whitespace", "a\u{85}@q", 4, token(2, 4, "q")),
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
                "@[a b](contact-uri:Ig)",
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
                mention_token_at(text, cursor, &users()),
                want,
                "{name}: {text:?} @ {cursor}"
            );
        }
    }

    #[test]
    fn mention_span_table() {
        let cases: Vec<(&str, Vec<Range<usize>>)> = vec![
            ("", vec![]),
            ("@[a](contact-uri:Ig)", vec![0..20]),
            ("x @[a](contact-uri:Ig) y", vec![2..22]),
            ("@[a\\]b](contact-uri:Ig)", vec![0..23]),
            ("@[a](contact-uri:)", vec![0..18]),
            ("@[a](contact-uri:Ig", vec![]),
            ("@[a](other:Ig)", vec![]),
            ("@[a\\\nb](contact-uri:Ig)", vec![]),
            ("@[a\nb](contact-uri:Ig)", vec![0..22]),
            ("@[a](contact-uri:I g)", vec![]),
            (
                "@[a](contact-uri:Ig)@[b](contact-uri:Iw)",
                vec![0..20, 20..40],
            ),
            ("@[@[a](contact-uri:Ig)", vec![0..22]),
            ("@[会话](contact-uri:Ig)", vec![0..25]),
            ("@[a](contact-uri:Ig\u{3000})", vec![]),
        ];
        for (text, want) in cases {
            assert_eq!(mention_spans(text, &users()), want, "{text:?}");
        }
    }

    #[test]
    fn other_schemes_are_mentions_only_when_configured() {
        let text = "ask @[Ada](team:ada) and @[b](contact-uri:Ig)";
        let teams = crate::MentionConfig::default()
            .with_uri_scheme("team:")
            .grammar();
        assert_eq!(mention_spans(text, &teams), vec![4..20]);
        assert_eq!(mention_spans(text, &users()), vec![25..45]);
        assert_eq!(
            mention_token_at(text, 6, &teams),
            None,
            "inside a team mention"
        );
        assert_eq!(
            mention_token_at(text, 6, &users()),
            token(4, 20, "[Ada](team:ada)"),
            "not a mention of a registered scheme: an ordinary token"
        );
    }

    #[test]
    fn char_spans_count_chars_not_bytes() {
        let text = "会话 @[记录](contact-uri:Ig) x";
        assert_eq!(mention_char_spans(text, &users()), vec![3..24]);
        let span = mention_spans(text, &users())[0].clone();
        assert_eq!(&text[span], "@[记录](contact-uri:Ig)");
    }

    #[test]
    fn the_syntax_says_where_tokens_end() {
        /// The built-in syntax's mentions, tokens ending at `,` too.
        struct Commas(crate::LinkSyntax);
        impl crate::MentionSyntax for Commas {
            fn write(&self, mention: &crate::Mention) -> String {
                self.0.write(mention)
            }
            fn find(&self, text: &str) -> Vec<crate::MentionSpan> {
                self.0.find(text)
            }
            fn is_token_space(&self, c: char) -> bool {
                c == ',' || c.is_whitespace()
            }
        }
        let grammar = crate::MentionConfig::default()
            .with_syntax(Commas(crate::LinkSyntax::new()))
            .grammar();
        assert_eq!(mention_token_at("a,@q", 4, &grammar), token(2, 4, "q"));
        assert_eq!(mention_token_at("@q,x", 1, &grammar), token(0, 2, "q"));
        assert_eq!(mention_token_at("a,@q", 4, &users()), None);
    }

    proptest! {
        #[test]
        fn never_panics(text in "\\PC*|[@\\[\\]()\\\\ a\u{3000}\n]*", cursor in 0usize..64) {
            if let Some(t) = mention_token_at(&text, cursor, &users()) {
                prop_assert!(t.start_char <= cursor.min(text.chars().count()));
                prop_assert!(t.end_char >= t.start_char);
            }
            for span in mention_spans(&text, &users()) {
                prop_assert!(text.get(span).is_some());
            }
        }

        #[test]
        fn tokens_and_char_spans_are_consistent(
            text in "\\PC{0,30}|[@\\[\\]()\\\\ a\u{3000}\n漢😀]{0,30}|.{0,30}",
            cursor in 0usize..80,
        ) {
            let chars: Vec<char> = text.chars().collect();
            if let Some(token) = mention_token_at(&text, cursor, &users()) {
                let cursor = cursor.min(chars.len());
                prop_assert!(token.start_char <= cursor && cursor <= token.end_char);
                prop_assert!(token.end_char <= chars.len());
                prop_assert_eq!(chars[token.start_char], '@');
                let query: String = chars[token.start_char + 1..token.end_char].iter().collect();
                prop_assert_eq!(&token.query, &query);
                prop_assert!(!chars[token.start_char..token.end_char]
                    .iter()
                    .any(|&c| c.is_whitespace()));
            }
            let spans = mention_spans(&text, &users());
            let char_spans = mention_char_spans(&text, &users());
            prop_assert_eq!(spans.len(), char_spans.len());
            for (bytes, chars_range) in spans.iter().zip(&char_spans) {
                let via_chars: String = chars[chars_range.clone()].iter().collect();
                prop_assert_eq!(via_chars.as_str(), &text[bytes.clone()]);
            }
        }

        #[test]
        fn skipping_failed_starts_finds_the_same_spans_as_trying_every_start(
            text in "[@\\[\\]()\\\\ a\n]{0,40}|(@\\[|\\]|\\(|contact-uri:|ImEi|\\)|\\\\|\n|x| )*"
        ) {
            // The reference: at every `@[`, the one prefix that reads as a whole mention of the
            // scheme (if any); a refused one is skipped one byte at a time.
            let mut naive = Vec::new();
            let mut pos = 0;
            while let Some(offset) = text.get(pos..).and_then(|rest| rest.find("@[")) {
                let start = pos + offset;
                let whole = (start + 1..=text.len()).find_map(|end| {
                    let piece = text.get(start..end)?;
                    let found = users().spans(piece);
                    (found == [0..piece.len()]).then_some(end)
                });
                match whole {
                    Some(end) => {
                        naive.push(start..end);
                        pos = end;
                    }
                    None => pos = start + 1,
                }
            }
            prop_assert_eq!(mention_spans(&text, &users()), naive);
        }
    }

    #[test]
    fn many_unclosed_openers_are_scanned_in_linear_time() {
        // Was quadratic: 80 KB of `@[` took 90 s in a debug build (5.8 s optimized), on
        // every keystroke of the composer. Linear, this is a few milliseconds.
        let text = "@[".repeat(100_000) + "\\\n@[";
        let started = std::time::Instant::now();
        assert_eq!(mention_spans(&text, &users()), Vec::<Range<usize>>::new());
        assert_eq!(
            mention_char_spans(&text, &users()),
            Vec::<Range<usize>>::new()
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        let closed = format!("{text}](contact-uri:ImEi)");
        assert_eq!(mention_spans(&closed, &users()).len(), 1);
    }

    #[test]
    fn multi_word_token_table() {
        let mention = "@[Old chat](contact-uri:ImEi)";
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
                multi_word_token_at(text, cursor, &users(), multi),
                want,
                "{text:?} cursor {cursor} {multi:?}"
            );
        }
    }
}
