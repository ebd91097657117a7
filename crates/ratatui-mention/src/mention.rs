//! The mention format's writer and reader in one type: [`Mention`] writes `@[label](uri)`
//! with its escapes ([`std::fmt::Display`]), reads one back ([`Mention::parse`]) and finds
//! every one in a text ([`find_mentions`]), so a host never writes markup by hand.
//!
//! The label follows dsh's mention grammar byte for byte: `\` and `]` are escaped with a
//! `\`; reading, `\` followed by any character but a line terminator stands for that
//! character, and any other character but `\` and `]` stands for itself (a raw line break
//! is allowed). The URI runs from `(` to the first `)` or JavaScript whitespace, which must be
//! a `)`. A URI holding whitespace, `)` or `%` is written percent-encoded (`%20`, `%29`,
//! `%25`) — outside dsh's grammar, whose URIs never hold them — and read back decoded.

use std::fmt;
use std::ops::Range;

use crate::js_chars::{is_js_whitespace, is_line_terminator};

/// A finished mention: what the user sees (`label`) and what it refers to (`uri`).
///
/// ```
/// use ratatui_mention::Mention;
///
/// let m = Mention::new("a]b", "user:ada lovelace");
/// assert_eq!(m.to_string(), r"@[a\]b](user:ada%20lovelace)");
/// assert_eq!(Mention::parse(&m.to_string()), Ok(m));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Mention {
    /// The text shown for the mention (a chip shows `@label`).
    pub label: String,
    /// What the mention refers to, e.g. `user:ada` or `dsh-session:…`.
    pub uri: String,
}

/// Why a text is not one mention.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParseMentionError {
    /// The text does not start with `@[`.
    NoOpening,
    /// The label has no closing `]`, or a `\` escapes a line break or nothing.
    BadLabel,
    /// No `(uri)` right after the label, or whitespace inside it.
    BadUri,
    /// Something follows the mention's `)`.
    TrailingText,
}

impl fmt::Display for ParseMentionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ParseMentionError::NoOpening => "a mention starts with @[",
            ParseMentionError::BadLabel => "the mention's label is not closed by ]",
            ParseMentionError::BadUri => "the mention's label is not followed by (uri)",
            ParseMentionError::TrailingText => "text follows the mention",
        })
    }
}

impl std::error::Error for ParseMentionError {}

/// A mention found in a text: where it is (byte range) and what it says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MentionSpan {
    /// Byte range of `@[…](…)` in the text searched.
    pub range: Range<usize>,
    /// The mention read from it.
    pub mention: Mention,
}

impl Mention {
    /// A mention of `uri` shown as `label`.
    pub fn new(label: impl Into<String>, uri: impl Into<String>) -> Self {
        Mention {
            label: label.into(),
            uri: uri.into(),
        }
    }

    /// Reads `text` as exactly one mention (the inverse of `to_string`).
    pub fn parse(text: &str) -> Result<Mention, ParseMentionError> {
        let scanned = scan(text).map_err(|e| e.error)?;
        if scanned.len != text.len() {
            return Err(ParseMentionError::TrailingText);
        }
        Ok(scanned.mention(text))
    }
}

impl std::str::FromStr for Mention {
    type Err = ParseMentionError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Mention::parse(text)
    }
}

impl fmt::Display for Mention {
    /// `@[label](uri)`: `\` and `]` in the label escaped, whitespace, `)` and `%` in the
    /// URI percent-encoded.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::with_capacity(self.label.len() + self.uri.len() + 6);
        out.push_str("@[");
        for c in self.label.chars() {
            if c == '\\' || c == ']' {
                out.push('\\');
            }
            out.push(c);
        }
        out.push_str("](");
        for c in self.uri.chars() {
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
        f.write_str(&out)
    }
}

/// Every mention in `text`, leftmost first (a host filters by URI itself). Linear in the
/// text's length, also for hostile text full of unclosed `@[`.
pub fn find_mentions(text: &str) -> Vec<MentionSpan> {
    let mut found = Vec::new();
    scan_all(text, &mut |start, scanned| {
        found.push(MentionSpan {
            range: start..start + scanned.len,
            mention: scanned.mention(text.get(start..).unwrap_or_default()),
        });
        true
    });
    found
}

/// Byte ranges of the mentions in `text` whose (decoded) URI `accepts`, leftmost first. A
/// mention whose URI is refused is no mention: scanning resumes after its label, so `@[`
/// inside its URI may still open one.
pub(crate) fn mention_ranges(text: &str, accepts: &dyn Fn(&str) -> bool) -> Vec<Range<usize>> {
    let mut spans = Vec::new();
    scan_all(text, &mut |start, scanned| {
        let rest = text.get(start..).unwrap_or_default();
        let uri = decode_uri(rest.get(scanned.uri.clone()).unwrap_or_default());
        if accepts(&uri) {
            spans.push(start..start + scanned.len);
            true
        } else {
            false
        }
    });
    spans
}

/// The label of the mention `markup` (its escapes undone); empty when it is no mention.
pub(crate) fn label_of(markup: &str) -> String {
    scan(markup).map(|s| s.label(markup)).unwrap_or_default()
}

/// Where one mention's parts lie (byte offsets from its `@`).
#[derive(Debug, Clone)]
struct Scanned {
    /// Bytes of the whole `@[…](…)`.
    len: usize,
    /// The label between `@[` and `]`, still escaped.
    label: Range<usize>,
    /// The URI between `(` and `)`, still encoded.
    uri: Range<usize>,
}

impl Scanned {
    fn mention(&self, s: &str) -> Mention {
        Mention {
            label: self.label(s),
            uri: decode_uri(s.get(self.uri.clone()).unwrap_or_default()),
        }
    }

    fn label(&self, s: &str) -> String {
        let mut label = String::with_capacity(self.label.len());
        let mut chars = s.get(self.label.clone()).unwrap_or_default().chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => label.extend(chars.next()),
                c => label.push(c),
            }
        }
        label
    }
}

/// Why the scan at an `@[` failed, and where a scan begun at any later `@[` before `resume`
/// would fail the same way (so the caller may skip to it).
#[derive(Debug, Clone, Copy)]
struct ScanError {
    error: ParseMentionError,
    resume: usize,
}

/// Calls `found(start, scanned)` for each mention in `text` (leftmost first); when it returns
/// false the mention is not taken and scanning resumes after its label.
fn scan_all(text: &str, found: &mut dyn FnMut(usize, &Scanned) -> bool) {
    let mut pos = 0;
    while let Some(offset) = text.get(pos..).and_then(|rest| rest.find("@[")) {
        let start = pos + offset;
        match scan(text.get(start..).unwrap_or_default()) {
            Ok(scanned) if found(start, &scanned) => pos = start + scanned.len,
            // Refused: its label scan ended at `]`; any `@[` inside the label ends there too.
            Ok(scanned) => pos = start + scanned.label.end.max(1),
            // Every `@[` before `resume` would stop its label scan at the same place and fail
            // the same way, so skipping them keeps this linear (and the result equal).
            Err(e) => pos = start + e.resume.max(1),
        }
    }
}

/// The mention at the start of `s`.
fn scan(s: &str) -> Result<Scanned, ScanError> {
    let fail = |error, resume| ScanError { error, resume };
    let mut it = s.char_indices();
    let opens = matches!(it.next(), Some((_, '@'))) && matches!(it.next(), Some((_, '[')));
    if !opens {
        return Err(fail(ParseMentionError::NoOpening, 1));
    }
    // Label: `\` + a char that is not a line terminator, or any char but `\` and `]`.
    let close = loop {
        let Some((i, c)) = it.next() else {
            return Err(fail(ParseMentionError::BadLabel, s.len()));
        };
        match c {
            ']' => break i,
            '\\' => match it.next() {
                Some((_, escaped)) if !is_line_terminator(escaped) => {}
                _ => return Err(fail(ParseMentionError::BadLabel, i)),
            },
            _ => {}
        }
    };
    if !matches!(it.next(), Some((_, '('))) {
        return Err(fail(ParseMentionError::BadUri, close));
    }
    let uri_start = close + 2;
    let body = s.get(uri_start..).unwrap_or_default();
    let uri_len = body
        .find(|c: char| is_js_whitespace(c) || c == ')')
        .unwrap_or(body.len());
    if !body.get(uri_len..).is_some_and(|r| r.starts_with(')')) {
        return Err(fail(ParseMentionError::BadUri, close));
    }
    Ok(Scanned {
        len: uri_start + uri_len + 1,
        label: 2..close,
        uri: uri_start..uri_start + uri_len,
    })
}

/// Whether `c` is written `%XX` in a URI: it would end the URI (whitespace, `)`) or be read
/// as an escape (`%`).
fn needs_percent(c: char) -> bool {
    c == '%' || c == ')' || is_js_whitespace(c)
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

    #[test]
    fn writes_and_reads_the_grammar() {
        let cases: &[(&str, &str, &str)] = &[
            ("a", "dsh-session:ImEi", "@[a](dsh-session:ImEi)"),
            ("", "dsh-session:ImEi", "@[](dsh-session:ImEi)"),
            (
                "x]y\\z[)",
                "dsh-session:ImEi",
                r"@[x\]y\\z[)](dsh-session:ImEi)",
            ),
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
            assert_eq!(mention.to_string(), *text);
            assert_eq!(Mention::parse(text), Ok(mention), "{text:?}");
        }
    }

    #[test]
    fn reading_is_dshs_and_tolerant_of_what_it_never_writes() {
        let ok: &[(&str, &str, &str)] = &[
            // Escapes of any char but a line terminator; `[` needs none.
            (r"@[\a\[b](u:1)", "a[b", "u:1"),
            // A `%` not followed by two hex digits, and escapes that are not UTF-8, stay.
            ("@[a](u:%zz%4)", "a", "u:%zz%4"),
            ("@[a](u:%FF%41)", "a", "u:%FF%41"),
            ("@[a](u:%41%42)", "a", "u:AB"),
        ];
        for (text, label, uri) in ok {
            assert_eq!(
                Mention::parse(text),
                Ok(Mention::new(*label, *uri)),
                "{text:?}"
            );
        }
        let bad: &[(&str, ParseMentionError)] = &[
            ("", ParseMentionError::NoOpening),
            ("a @[b](u:1)", ParseMentionError::NoOpening),
            ("@[a", ParseMentionError::BadLabel),
            ("@[a\\\nb](u:1)", ParseMentionError::BadLabel),
            ("@[a]", ParseMentionError::BadUri),
            ("@[a](u:1", ParseMentionError::BadUri),
            ("@[a](u: 1)", ParseMentionError::BadUri),
            ("@[a](u:1) ", ParseMentionError::TrailingText),
        ];
        for (text, want) in bad {
            assert_eq!(Mention::parse(text), Err(*want), "{text:?}");
        }
        assert_eq!("@[a](u:1)".parse::<Mention>(), Ok(Mention::new("a", "u:1")));
    }

    #[test]
    fn finds_every_mention_and_filters_by_uri() {
        let text = "see @[A](user:a) and @[B](other:b), @[C](user:c)";
        let found = find_mentions(text);
        let ranges: Vec<Range<usize>> = found.iter().map(|s| s.range.clone()).collect();
        assert_eq!(ranges, [4..16, 21..34, 36..48]);
        assert_eq!(found[1].mention, Mention::new("B", "other:b"));
        let users = mention_ranges(text, &|uri| uri.starts_with("user:"));
        assert_eq!(users, [4..16, 36..48]);
        // A refused mention's URI may hold one that is accepted.
        let nested = "@[x](o:@[y](user:1))";
        assert_eq!(mention_ranges(nested, &|u| u.starts_with("user:")), [7..19]);
        assert_eq!(label_of(r"@[a\]b](u:1)"), "a]b");
        assert_eq!(label_of("no mention"), "");
    }

    #[test]
    fn many_unclosed_openers_are_scanned_in_linear_time() {
        // Quadratic, 80 KB of `@[` took 90 s in a debug build on every keystroke.
        let text = "@[".repeat(100_000) + "\\\n@[";
        let started = std::time::Instant::now();
        assert_eq!(find_mentions(&text), []);
        assert_eq!(mention_ranges(&text, &|_| true), Vec::<Range<usize>>::new());
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        let closed = format!("{text}](u:1)");
        assert_eq!(find_mentions(&closed).len(), 1);
    }

    proptest! {
        #[test]
        fn any_label_and_uri_round_trip(label in "\\PC*|.*|[\\\\\\]\\[()% \n@]*", uri in "\\PC*|.*|[\\\\\\]\\[()% \n%@0-9A-F]*") {
            let mention = Mention::new(label, uri);
            let text = mention.to_string();
            prop_assert_eq!(Mention::parse(&text), Ok(mention.clone()));
            let found = find_mentions(&format!("x {text} y"));
            prop_assert_eq!(found.len(), 1);
            prop_assert_eq!(&found[0].mention, &mention);
            prop_assert_eq!(found[0].range.clone(), 2..2 + text.len());
        }

        #[test]
        fn reading_never_panics_and_spans_are_in_the_text(text in "\\PC*|[@\\[\\]()\\\\% a\n]*") {
            for span in find_mentions(&text) {
                prop_assert!(text.get(span.range).is_some());
            }
            let _ = Mention::parse(&text);
        }
    }
}
