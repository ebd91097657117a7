//! The built-in mention syntax, a Markdown-style link after the trigger:
//! `<trigger>[label](uri)`, e.g. `@[Ada Lovelace](user:42)` or `#[ui](tag:ui)`.
//!
//! Writing, `\` and `]` in the label are escaped with a `\`, and whitespace, `)` and `%` in
//! the URI are percent-encoded (`%20`, `%29`, `%25`). Reading, the label is a run of `\`
//! followed by any character but a line break (standing for that character) or any
//! character but `\` and `]` (a raw line break included); the URI runs from `(` to the first
//! `)` or whitespace, which must be the `)`, and its `%XX` escapes are decoded. Line breaks
//! are `\n`, `\r`, U+0085, U+2028 and U+2029; whitespace is Unicode's `White_Space`.

use std::fmt;
use std::ops::Range;

use crate::mention::{Mention, MentionSpan, MentionSyntax};
use crate::uri_rule::{UriRule, uri_rule_builders};

/// The built-in [`MentionSyntax`]: `<trigger>[label](uri)` (see the crate docs for its
/// escapes). [`LinkSyntax::new`] reads `@` mentions of any URI; register the host's triggers
/// and URIs to make only those mentions finished ones.
///
/// ```
/// use ratatui_mention::{LinkSyntax, Mention, MentionSyntax};
///
/// let syntax = LinkSyntax::new().with_triggers(['@', '#']).with_uri_scheme("user:");
/// let ada = Mention::new("a]b", "user:ada lovelace");
/// assert_eq!(syntax.write(&ada), r"@[a\]b](user:ada%20lovelace)");
/// let found = syntax.find("hi @[a\\]b](user:ada%20lovelace) and @[x](other:1)");
/// assert_eq!(found.len(), 1, "other: is not a registered URI");
/// assert_eq!(found[0].mention, ada);
/// ```
#[derive(Clone)]
pub struct LinkSyntax {
    triggers: Vec<char>,
    pub(crate) uris: UriRule,
}

impl Default for LinkSyntax {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for LinkSyntax {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LinkSyntax")
            .field("triggers", &self.triggers)
            .field("uris", &self.uris)
            .finish()
    }
}

impl LinkSyntax {
    /// Reads `@` mentions of any URI.
    pub fn new() -> Self {
        LinkSyntax {
            triggers: vec!['@'],
            uris: UriRule::Any,
        }
    }

    /// Reads mentions that start with one of `triggers` (default `@`).
    #[must_use]
    pub fn with_triggers(mut self, triggers: impl IntoIterator<Item = char>) -> Self {
        self.triggers = triggers.into_iter().collect();
        self
    }

    uri_rule_builders!(
        uris,
        scheme: {
            /// Registers `scheme` (e.g. `user:`): only mentions whose decoded URI starts with
            /// a registered scheme are finished mentions, the others stay plain text. Call
            /// once per scheme; with none registered (and no predicate) every well-formed
            /// mention is one.
        },
        predicate: {
            /// Decides with `accepts` which mentions are finished ones (by their decoded
            /// URI), in place of registered schemes.
        }
    );

    /// The triggers whose mentions it reads.
    pub fn triggers(&self) -> &[char] {
        &self.triggers
    }

    /// Whether a mention of `uri` is a finished one.
    pub fn accepts_uri(&self, uri: &str) -> bool {
        self.uris.accepts(uri)
    }
}

impl MentionSyntax for LinkSyntax {
    /// `<trigger>[label](uri)`: `\` and `]` in the label escaped, whitespace, `)` and `%` in
    /// the URI percent-encoded.
    fn write(&self, mention: &Mention) -> String {
        let mut out = String::with_capacity(mention.label.len() + mention.uri.len() + 8);
        out.push(mention.trigger);
        out.push('[');
        for c in mention.label.chars() {
            if c == '\\' || c == ']' {
                out.push('\\');
            }
            out.push(c);
        }
        out.push_str("](");
        for c in mention.uri.chars() {
            if needs_percent(c) {
                let mut bytes = [0; 4];
                for b in c.encode_utf8(&mut bytes).bytes() {
                    out.push('%');
                    out.push(hex_digit(b >> 4));
                    out.push(hex_digit(b & 0xf));
                }
            } else {
                out.push(c);
            }
        }
        out.push(')');
        out
    }

    /// Every mention whose trigger and (decoded) URI are registered, leftmost first; linear
    /// in the text's length, also for hostile text full of unclosed `@[`. A mention whose URI
    /// is refused is none: reading resumes after its label, so one inside its URI may count.
    fn find(&self, text: &str) -> Vec<MentionSpan> {
        let mut found = Vec::new();
        let mut pos = 0;
        while let Some(start) = next_opener(text, pos, &self.triggers) {
            let rest = text.get(start..).unwrap_or_default();
            match scan(rest) {
                Ok(scanned) => {
                    let mention = scanned.mention(rest);
                    if self.uris.accepts(&mention.uri) {
                        pos = start + scanned.len;
                        found.push(MentionSpan {
                            range: start..start + scanned.len,
                            mention,
                        });
                    } else {
                        // Refused: its label ended at `]`, and so would that of any opener
                        // inside it.
                        pos = start + scanned.label.end;
                    }
                }
                // Every opener before `resume` would stop its label scan at the same place
                // and fail the same way, so skipping them keeps this linear.
                Err(resume) => pos = start + resume,
            }
        }
        found
    }
}

/// The byte offset of the next `<trigger>[` at or after `from`.
fn next_opener(text: &str, from: usize, triggers: &[char]) -> Option<usize> {
    let mut search = from;
    loop {
        let bracket = search + text.get(search..)?.find('[')?;
        let before = text.get(from..bracket).and_then(|t| t.chars().next_back());
        if let Some(trigger) = before.filter(|c| triggers.contains(c)) {
            return Some(bracket - trigger.len_utf8());
        }
        search = bracket + 1;
    }
}

/// Where one mention's parts lie (byte offsets from its trigger).
#[derive(Debug, Clone)]
struct Scanned {
    /// Bytes of the whole mention.
    len: usize,
    /// The label between `[` and `]`, still escaped.
    label: Range<usize>,
    /// The URI between `(` and `)`, still encoded.
    uri: Range<usize>,
    trigger: char,
}

impl Scanned {
    fn mention(&self, s: &str) -> Mention {
        let mut label = String::with_capacity(self.label.len());
        let mut chars = s.get(self.label.clone()).unwrap_or_default().chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => label.extend(chars.next()),
                c => label.push(c),
            }
        }
        Mention::new(
            label,
            decode_uri(s.get(self.uri.clone()).unwrap_or_default()),
        )
        .with_trigger(self.trigger)
    }
}

/// The mention at the start of `s` (which starts with a trigger and `[`), or where a scan
/// from any later opener before it would fail alike.
fn scan(s: &str) -> Result<Scanned, usize> {
    let mut it = s.char_indices();
    let trigger = it.next().map_or('@', |(_, c)| c);
    let _bracket = it.next();
    let label_start = it.offset();
    // Label: `\` + a char that is not a line break, or any char but `\` and `]`.
    let close = loop {
        let Some((i, c)) = it.next() else {
            return Err(s.len());
        };
        match c {
            ']' => break i,
            '\\' => match it.next() {
                Some((_, escaped)) if !is_line_break(escaped) => {}
                _ => return Err(i),
            },
            _ => {}
        }
    };
    if !matches!(it.next(), Some((_, '('))) {
        return Err(close);
    }
    let uri_start = close + 2;
    let body = s.get(uri_start..).unwrap_or_default();
    let uri_len = body
        .find(|c: char| c.is_whitespace() || c == ')')
        .unwrap_or(body.len());
    if !body.get(uri_len..).is_some_and(|r| r.starts_with(')')) {
        return Err(close);
    }
    Ok(Scanned {
        len: uri_start + uri_len + 1,
        label: label_start..close,
        uri: uri_start..uri_start + uri_len,
        trigger,
    })
}

/// Whether a `\` may not escape `c`.
fn is_line_break(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// Whether `c` is written `%XX` in a URI: it would end the URI (whitespace, `)`) or be read
/// as an escape (`%`).
fn needs_percent(c: char) -> bool {
    c == '%' || c == ')' || c.is_whitespace()
}

fn hex_digit(n: u8) -> char {
    char::from(b"0123456789ABCDEF"[usize::from(n & 0xf)])
}

/// `uri` with its `%XX` escapes decoded; a run of escapes that is not UTF-8, or a `%` not
/// followed by two hex digits, stays as written.
fn decode_uri(uri: &str) -> String {
    if !uri.contains('%') {
        return uri.to_owned();
    }
    let bytes = uri.as_bytes();
    let mut out = String::with_capacity(uri.len());
    let mut i = 0;
    while i < bytes.len() {
        // A run of `%XX` escapes decodes as one byte string (a character may take several).
        let mut run = Vec::new();
        let mut j = i;
        while let Some(b) = escaped_byte(bytes, j) {
            run.push(b);
            j += 3;
        }
        if run.is_empty() {
            let next = uri
                .get(i..)
                .and_then(|r| r.chars().next())
                .map_or(1, char::len_utf8);
            out.push_str(uri.get(i..i + next).unwrap_or_default());
            i += next;
            continue;
        }
        match String::from_utf8(run) {
            Ok(decoded) => out.push_str(&decoded),
            Err(_) => out.push_str(uri.get(i..j).unwrap_or_default()),
        }
        i = j;
    }
    out
}

/// The byte `%XX` at `at` stands for, if it is one.
fn escaped_byte(bytes: &[u8], at: usize) -> Option<u8> {
    if *bytes.get(at)? != b'%' {
        return None;
    }
    let hi = char::from(*bytes.get(at + 1)?).to_digit(16)?;
    let lo = char::from(*bytes.get(at + 2)?).to_digit(16)?;
    u8::try_from(hi * 16 + lo).ok()
}

#[cfg(test)]
#[allow(clippy::single_range_in_vec_init)] // expected spans are lists
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use proptest::prelude::*;

    fn ranges(found: &[MentionSpan]) -> Vec<Range<usize>> {
        found.iter().map(|s| s.range.clone()).collect()
    }

    /// The one mention `text` is, if it is exactly one.
    fn parse(text: &str) -> Option<Mention> {
        let found = LinkSyntax::new().with_triggers(['@', '#']).find(text);
        match found.as_slice() {
            [one] if one.range == (0..text.len()) => Some(one.mention.clone()),
            _ => None,
        }
    }

    #[test]
    fn writes_and_reads_the_syntax() {
        let cases: &[(&str, &str, &str)] = &[
            ("a", "user:1", "@[a](user:1)"),
            ("", "user:1", "@[](user:1)"),
            ("x]y\\z[)", "user:1", r"@[x\]y\\z[)](user:1)"),
            ("two\nlines", "u:1", "@[two\nlines](u:1)"),
            ("会话", "u:1", "@[会话](u:1)"),
            (
                "a",
                "file:///my notes/a(1).md",
                "@[a](file:///my%20notes/a(1%29.md)",
            ),
            ("a", "u:100%", "@[a](u:100%25)"),
            ("a", "u:\u{3000}x\n", "@[a](u:%E3%80%80x%0A)"),
            ("a", "", "@[a]()"),
        ];
        for (label, uri, text) in cases {
            let mention = Mention::new(*label, *uri);
            assert_eq!(LinkSyntax::new().write(&mention), *text);
            assert_eq!(parse(text), Some(mention), "{text:?}");
        }
        let tag = Mention::new("ui", "tag:ui").with_trigger('#');
        assert_eq!(LinkSyntax::new().write(&tag), "#[ui](tag:ui)");
        assert_eq!(parse("#[ui](tag:ui)"), Some(tag));
        assert_eq!(
            LinkSyntax::new().find("#[ui](tag:ui)"),
            [],
            "# not registered"
        );
    }

    #[test]
    fn reading_is_tolerant_of_what_it_never_writes() {
        let ok: &[(&str, &str, &str)] = &[
            // Escapes of any char but a line break; `[` needs none.
            (r"@[\a\[b](u:1)", "a[b", "u:1"),
            // A `%` not followed by two hex digits, and escapes that are not UTF-8, stay.
            ("@[a](u:%zz%4)", "a", "u:%zz%4"),
            ("@[a](u:%FF%41)", "a", "u:%FF%41"),
            ("@[a](u:%41%42)", "a", "u:AB"),
        ];
        for (text, label, uri) in ok {
            assert_eq!(parse(text), Some(Mention::new(*label, *uri)), "{text:?}");
        }
        for bad in [
            "",
            "a @[b](u:1)",
            "@[a",
            "@[a\\\nb](u:1)",
            "@[a]",
            "@[a](u:1",
            "@[a](u: 1)",
            "@[a](u:1) ",
        ] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn finds_every_mention_and_filters_by_uri() {
        let text = "see @[A](user:a) and @[B](other:b), @[C](user:c)";
        let found = LinkSyntax::new().find(text);
        assert_eq!(ranges(&found), [4..16, 21..34, 36..48]);
        assert_eq!(found[1].mention, Mention::new("B", "other:b"));
        let users = LinkSyntax::new().with_uri_scheme("user:");
        assert_eq!(ranges(&users.find(text)), [4..16, 36..48]);
        // A refused mention's URI may hold one that is accepted.
        assert_eq!(ranges(&users.find("@[x](o:@[y](user:1))")), [7..19]);
        let files = LinkSyntax::new().with_uri_predicate(|u| u.starts_with("file:src/"));
        assert!(files.accepts_uri("file:src/main.rs") && !files.accepts_uri("file:README.md"));
        // A trigger right before another's opener: the nearer one opens.
        let both = LinkSyntax::new().with_triggers(['@', '#']);
        assert_eq!(ranges(&both.find("#@[a](u:1)")), [1..10]);
        assert_eq!(ranges(&both.find("x[a](u:1) é#[b](u:2)")), [12..21]);
    }

    #[test]
    fn many_unclosed_openers_are_read_in_linear_time() {
        // Quadratic, 80 KB of `@[` took 90 s in a debug build on every keystroke.
        let text = "@[".repeat(100_000) + "\\\n@[" + &"#[".repeat(100_000);
        let syntax = LinkSyntax::new().with_triggers(['@', '#']);
        let started = std::time::Instant::now();
        assert_eq!(syntax.find(&text), []);
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        let closed = format!("{text}](u:1)");
        assert_eq!(syntax.find(&closed).len(), 1);
    }

    proptest! {
        #[test]
        fn any_label_and_uri_round_trip(label in "\\PC*|.*|[\\\\\\]\\[()% \n@#]*", uri in "\\PC*|.*|[\\\\\\]\\[()% \n%@0-9A-F]*", hash: bool) {
            let trigger = if hash { '#' } else { '@' };
            let mention = Mention::new(label, uri).with_trigger(trigger);
            let syntax = LinkSyntax::new().with_triggers(['@', '#']);
            let text = syntax.write(&mention);
            prop_assert_eq!(parse(&text), Some(mention.clone()));
            let found = syntax.find(&format!("x {text} y"));
            prop_assert_eq!(found.len(), 1);
            prop_assert_eq!(&found[0].mention, &mention);
            prop_assert_eq!(found[0].range.clone(), 2..2 + text.len());
        }

        #[test]
        fn reading_never_panics_and_spans_are_in_the_text(text in "\\PC*|[@#\\[\\]()\\\\% a\n]*") {
            let found = LinkSyntax::new().with_triggers(['@', '#']).find(&text);
            let mut end = 0;
            for span in found {
                prop_assert!(text.get(span.range.clone()).is_some());
                prop_assert!(span.range.start >= end);
                end = span.range.end;
            }
        }
    }
}
