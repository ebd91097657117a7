//! Session titles by dsh's `session-title` rule (docs/session-store.md: titles), as its
//! newest release (0.1.0-rc.8; the same at 6816e8a3d5) applies it with the limits its
//! shipped configuration sets:
//!
//! - the text is cleaned: terminal escape sequences (OSC up to BEL or ST, CSI, two-byte
//!   ESC), other control characters (tab, newline and carriage return aside) and invisible
//!   direction marks are removed, every run of whitespace becomes one space, and the ends are
//!   trimmed;
//! - a *fallback* title is the first [`FALLBACK_MAX_WORDS`] words of the first direct user
//!   message whose cleaned text is not empty, cut to [`FALLBACK_MAX_BYTES`] UTF-8 bytes on a
//!   character boundary, trailing space removed. Mentions stay as the message shows them
//!   (`@label`), exactly as dsh titles the same message;
//! - a user title (`/title TEXT`) is the cleaned text cut to [`MAX_TITLE_BYTES`] bytes.

/// Most whitespace-separated words of a fallback title (dsh's `fallbackMaxWords`).
pub const FALLBACK_MAX_WORDS: usize = 5;
/// Most UTF-8 bytes of a fallback title (dsh's `fallbackMaxBytes`).
pub const FALLBACK_MAX_BYTES: usize = 40;
/// Most UTF-8 bytes of any title (dsh's `maxTitleBytes`).
pub const MAX_TITLE_BYTES: usize = 80;

/// The fallback title of a direct user message's readable text (its text blocks joined with
/// `\n`), or `None` when its cleaned text is empty (dsh then titles the session by a later
/// message).
pub fn fallback_title(text: &str) -> Option<String> {
    let cleaned = clean_title_text(text);
    let words: Vec<&str> = cleaned
        .split(' ')
        .filter(|w| !w.is_empty())
        .take(FALLBACK_MAX_WORDS)
        .collect();
    let title = truncate_utf8(&words.join(" "), FALLBACK_MAX_BYTES)
        .trim_end_matches(is_js_space)
        .to_owned();
    (!title.is_empty()).then_some(title)
}

/// Another tool's session title from its first request: the whole request cleaned as dsh
/// cleans titles (escapes and controls removed, whitespace one space, ends trimmed), not cut
/// to dsh's fallback words — the tools show the whole request, and only the display cuts
/// it (docs/foreign-sources.md: titles).
pub fn one_line_title(text: &str) -> Option<String> {
    let title = clean_title_text(text);
    (!title.is_empty()).then_some(title)
}

/// A user title (`/title TEXT`): the cleaned text within [`MAX_TITLE_BYTES`]; `None` when
/// nothing visible is left.
pub fn clean_title(text: &str) -> Option<String> {
    let title = truncate_utf8(&clean_title_text(text), MAX_TITLE_BYTES)
        .trim_end_matches(is_js_space)
        .to_owned();
    (!title.is_empty()).then_some(title)
}

/// The longest prefix of `s` within `max` UTF-8 bytes that ends on a character boundary.
fn truncate_utf8(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let end = s
        .char_indices()
        .map(|(i, c)| i + c.len_utf8())
        .take_while(|&end| end <= max)
        .last()
        .unwrap_or(0);
    s.get(..end).unwrap_or_default()
}

/// JavaScript's `\s` (and what `trim` removes).
fn is_js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
    )
}

/// Control characters dsh removes (tab, newline and carriage return are whitespace).
fn is_removed_control(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{8}' | '\u{b}' | '\u{c}' | '\u{e}'..='\u{1f}' | '\u{7f}'..='\u{9f}')
}

/// Invisible direction and format marks dsh removes.
fn is_direction_mark(c: char) -> bool {
    matches!(
        c,
        '\u{200b}'
            | '\u{200e}'
            | '\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206f}'
            | '\u{feff}'
    )
}

/// dsh's cleaning, pass by pass as its replacements run: OSC sequences, CSI sequences,
/// two-byte escapes, controls, direction marks; then whitespace collapsed and trimmed.
fn clean_title_text(input: &str) -> String {
    let chars: Vec<char> = input.chars().collect();
    let chars = remove_osc(&chars);
    let chars = remove_csi(&chars);
    let chars = remove_two_byte_escapes(&chars);
    let mut out = String::with_capacity(input.len());
    let mut in_space = false;
    for c in chars {
        if is_removed_control(c) || is_direction_mark(c) {
            continue;
        }
        if is_js_space(c) {
            in_space = true;
            continue;
        }
        if in_space && !out.is_empty() {
            out.push(' ');
        }
        in_space = false;
        out.push(c);
    }
    out
}

/// `(?:ESC]|\x9d)` and everything up to and including BEL or ESC\ (or the end).
fn remove_osc(chars: &[char]) -> Vec<char> {
    let mut out = Vec::with_capacity(chars.len());
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        let opener = match (c, chars.get(i + 1)) {
            ('\u{1b}', Some(']')) => 2,
            ('\u{9d}', _) => 1,
            _ => 0,
        };
        if opener == 0 {
            out.push(c);
            i += 1;
            continue;
        }
        i += opener;
        while let Some(&p) = chars.get(i) {
            if p == '\u{7}' {
                i += 1;
                break;
            }
            if p == '\u{1b}' && chars.get(i + 1) == Some(&'\\') {
                i += 2;
                break;
            }
            i += 1;
        }
    }
    out
}

/// `(?:ESC[|\x9b)[0-?]*[ -/]*[@-~]`; an opener without its final byte stays.
fn remove_csi(chars: &[char]) -> Vec<char> {
    let mut out = Vec::with_capacity(chars.len());
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        let opener = match (c, chars.get(i + 1)) {
            ('\u{1b}', Some('[')) => 2,
            ('\u{9b}', _) => 1,
            _ => 0,
        };
        if opener > 0 {
            let mut j = i + opener;
            while chars.get(j).is_some_and(|p| ('0'..='?').contains(p)) {
                j += 1;
            }
            while chars.get(j).is_some_and(|p| (' '..='/').contains(p)) {
                j += 1;
            }
            if chars.get(j).is_some_and(|p| ('@'..='~').contains(p)) {
                i = j + 1;
                continue;
            }
        }
        out.push(c);
        i += 1;
    }
    out
}

/// `ESC[@-_]`.
fn remove_two_byte_escapes(chars: &[char]) -> Vec<char> {
    let mut out = Vec::with_capacity(chars.len());
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        if c == '\u{1b}' && chars.get(i + 1).is_some_and(|p| ('@'..='_').contains(p)) {
            i += 2;
            continue;
        }
        out.push(c);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn foreign_titles_are_whole_requests_on_one_line() {
        assert_eq!(
            one_line_title("  Write a migration for the orders table\nand add VPC peering notes ")
                .as_deref(),
            Some("Write a migration for the orders table and add VPC peering notes")
        );
        assert_eq!(
            one_line_title("fix \u{1b}[31mred\u{1b}[0m text").as_deref(),
            Some("fix red text")
        );
        assert_eq!(one_line_title(" \n\t "), None);
    }

    #[test]
    fn fallback_titles_follow_dsh() {
        let cases: &[(&str, Option<&str>)] = &[
            ("hello world", Some("hello world")),
            ("  leading\tand\n\ntrailing  ", Some("leading and trailing")),
            // Five words.
            (
                "one two three four five six seven eight nine ten",
                Some("one two three four five"),
            ),
            // The examples: mentions stay as `@label`.
            (
                "beta new referencing @new-alpha",
                Some("beta new referencing @new-alpha"),
            ),
            (
                "@A and @B vs @C compare these three",
                Some("@A and @B vs @C"),
            ),
            (
                "@Speed up the Vite build  what did we decide?",
                Some("@Speed up the Vite build"),
            ),
            // Controls go (tab/newline/CR are whitespace), escapes go whole.
            ("bell\u{7}ed and\u{0}null", Some("belled andnull")),
            ("\u{1b}[31mred\u{1b}[0m text", Some("red text")),
            ("title \u{1b}]0;evil\u{7}kept", Some("title kept")),
            ("osc st \u{1b}]8;;http://x\u{1b}\\link", Some("osc st link")),
            // An OSC without its end takes the rest of the text.
            ("keep \u{1b}]0;never ends", Some("keep")),
            // C1 CSI is a CSI.
            ("c1\u{9b}31m csi", Some("c1 csi")),
            // ESC plus one byte of @-_ goes; ESC alone is a control.
            ("a\u{1b}Mb \u{1b}", Some("ab")),
            ("rtl \u{202e}gnp.exe", Some("rtl gnp.exe")),
            // The soft hyphen is not one of dsh's marks (it stays), zero-width joiner too.
            ("soft\u{ad}hyphen", Some("soft\u{ad}hyphen")),
            ("", None),
            ("   \n\t ", None),
            ("\u{1b}[2J\u{7}", None),
            ("日本語 の タイトル", Some("日本語 の タイトル")),
            ("emoji 🎉🎉 party", Some("emoji 🎉🎉 party")),
            ("ideographic\u{3000}space", Some("ideographic space")),
            ("nbsp\u{a0}too", Some("nbsp too")),
        ];
        for (input, want) in cases {
            assert_eq!(fallback_title(input).as_deref(), *want, "input {input:?}");
        }
    }

    #[test]
    fn fallback_titles_are_cut_at_40_bytes_on_a_char_boundary() {
        // 30 CJK chars = 90 bytes in one word: 13 chars (39 bytes), never mid-char.
        assert_eq!(fallback_title(&"漢".repeat(30)).unwrap(), "漢".repeat(13));
        // 4-byte emoji: 40 is a boundary, exactly 10 kept.
        assert_eq!(fallback_title(&"😀".repeat(25)).unwrap(), "😀".repeat(10));
        // Cut inside a word (dsh cuts bytes, not words), trailing space removed.
        let words = format!("{} {}", "a".repeat(39), "bbbb");
        assert_eq!(fallback_title(&words).unwrap(), "a".repeat(39));
        assert_eq!(
            fallback_title("alpha beta gamma delta epsilonepsilonepsilon").unwrap(),
            "alpha beta gamma delta epsilonepsiloneps"
        );
    }

    #[test]
    fn user_titles_keep_80_bytes() {
        let cases: &[(&str, Option<&str>)] = &[
            (
                "  My   long\ttitle with many many many many words  ",
                Some("My long title with many many many many words"),
            ),
            ("\u{1b}[1mbold\u{1b}[0m", Some("bold")),
            (" \n ", None),
        ];
        for (input, want) in cases {
            assert_eq!(clean_title(input).as_deref(), *want, "input {input:?}");
        }
        assert_eq!(clean_title(&"é".repeat(150)).unwrap().len(), 80);
        assert_eq!(clean_title(&"漢".repeat(30)).unwrap(), "漢".repeat(26));
    }
}
