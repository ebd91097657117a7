//! File mentions in message text (docs/references.md: file references): `@path` and
//! `@"path with spaces"`, as dsh's TUI writes them.
//!
//! A mention starts with `@` at the start of the text or after whitespace. Quoted, it runs to
//! the next `"` on the same line; bare, to the next whitespace. Text taken by a session or
//! excerpt mention is skipped. Which bare mentions name files is decided against the working
//! directory ([`super::file_context::resolve_file_mentions`]); a quoted one always means a file.

use std::ops::Range;

use super::js_chars::{is_js_whitespace, is_line_terminator};

/// One `@path` or `@"path"` in a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileMention {
    /// The path as written (quotes removed).
    pub path: String,
    /// Written as `@"…"`: the user certainly meant a file.
    pub quoted: bool,
    /// Byte range of the whole mention in the text.
    pub span: Range<usize>,
}

/// Every file mention of `text` outside the `skip` ranges (sorted, non-overlapping), in order.
pub fn scan_file_mentions(text: &str, skip: &[Range<usize>]) -> Vec<FileMention> {
    let mut out = Vec::new();
    let mut skip = skip.iter().peekable();
    let mut previous: Option<char> = None;
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        while skip.peek().is_some_and(|r| r.end <= at) {
            skip.next();
        }
        let skipped = skip.peek().is_some_and(|r| r.start <= at);
        let starts = c == '@' && previous.is_none_or(is_js_whitespace) && !skipped;
        previous = Some(c);
        if !starts {
            continue;
        }
        let rest = text.get(at + 1..).unwrap_or_default();
        let found = if let Some(quoted) = rest.strip_prefix('"') {
            quoted
                .find(|ch: char| ch == '"' || is_line_terminator(ch))
                .filter(|&end| quoted.get(end..).is_some_and(|s| s.starts_with('"')))
                .filter(|&end| end > 0)
                .map(|end| {
                    (
                        quoted.get(..end).unwrap_or_default(),
                        true,
                        at + 2 + end + 1,
                    )
                })
        } else {
            let end = rest.find(is_js_whitespace).unwrap_or(rest.len());
            (end > 0).then(|| (rest.get(..end).unwrap_or_default(), false, at + 1 + end))
        };
        let Some((path, quoted, end)) = found else {
            continue;
        };
        if skip.peek().is_some_and(|r| r.start < end) {
            continue;
        }
        out.push(FileMention {
            path: path.to_owned(),
            quoted,
            span: at..end,
        });
        while chars.peek().is_some_and(|&(i, _)| i < end) {
            if let Some((_, ch)) = chars.next() {
                previous = Some(ch);
            }
        }
    }
    out
}

/// The insertion text for a file or directory path: `@path`, or `@"path"` when it holds
/// whitespace; `None` when the grammar cannot carry it (a `"` or a control character).
/// Directories end with `/` so completion can go on below them.
pub fn format_file_mention(path: &str, directory: bool, keep_quote: bool) -> Option<String> {
    if path.chars().any(|c| c == '"' || c.is_control()) {
        return None;
    }
    let slash = if directory && !path.ends_with('/') {
        "/"
    } else {
        ""
    };
    if keep_quote || path.chars().any(is_js_whitespace) {
        Some(format!("@\"{path}{slash}\""))
    } else {
        Some(format!("@{path}{slash}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(text: &str, skip: &[Range<usize>]) -> Vec<(String, bool)> {
        scan_file_mentions(text, skip)
            .into_iter()
            .map(|m| (m.path, m.quoted))
            .collect()
    }

    #[test]
    fn bare_and_quoted_mentions() {
        let cases: &[(&str, &[(&str, bool)])] = &[
            ("see @src/main.rs now", &[("src/main.rs", false)]),
            (
                "@a.md and @\"My Notes/plan b.md\"",
                &[("a.md", false), ("My Notes/plan b.md", true)],
            ),
            ("mail me@example.com", &[]),
            ("@", &[]),
            ("@\"\" x", &[]),
            ("@\"open quote\nnext", &[]),
            ("tab\t@x\u{3000}@y", &[("x", false), ("y", false)]),
            ("@@x", &[("@x", false)]),
            ("漢字 @文件.txt。", &[("文件.txt。", false)]),
        ];
        for (text, want) in cases {
            let want: Vec<(String, bool)> =
                want.iter().map(|(p, q)| ((*p).to_owned(), *q)).collect();
            assert_eq!(paths(text, &[]), want, "{text:?}");
        }
    }

    #[test]
    fn spans_and_skipped_session_mentions() {
        let text = "x @[A](dsh-session:ImEi) @b @\"c d\"";
        let found = scan_file_mentions(text, std::slice::from_ref(&(2..24)));
        let spans: Vec<&str> = found.iter().map(|m| &text[m.span.clone()]).collect();
        assert_eq!(spans, ["@b", "@\"c d\""]);
        // A label is not a path even when it looks like one.
        assert_eq!(paths("@[x](y) z", std::slice::from_ref(&(0..7))), vec![]);
    }

    #[test]
    fn insertion_text() {
        assert_eq!(
            format_file_mention("src/a.rs", false, false).as_deref(),
            Some("@src/a.rs")
        );
        assert_eq!(
            format_file_mention("src", true, false).as_deref(),
            Some("@src/")
        );
        assert_eq!(
            format_file_mention("My Docs", true, false).as_deref(),
            Some("@\"My Docs/\"")
        );
        assert_eq!(
            format_file_mention("a", false, true).as_deref(),
            Some("@\"a\"")
        );
        assert_eq!(format_file_mention("a\"b", false, false), None);
        assert_eq!(format_file_mention("a\u{1b}b", false, false), None);
    }
}
