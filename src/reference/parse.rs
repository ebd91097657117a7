//! Finding mentions in message text (SPEC §3.3): explicit `@[label](dsh-session:…)` mentions
//! and bare `dsh-session:` URIs, matched exactly as the reference regular expressions do.

use super::error::ReferenceError;
use super::js_chars::{is_js_whitespace, is_line_terminator};
use super::uri::{SCHEME, decode_uri, is_base64url_byte};

/// A reference to another session, as written in a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    pub session_id: String,
    /// Display label; `None` means "use the id".
    pub label: Option<String>,
}

/// The readable text of a message and the references it mentions, in order of appearance
/// (duplicates kept).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedText {
    pub text: String,
    pub references: Vec<Reference>,
}

/// An explicit mention found at some position.
struct ExplicitMatch<'a> {
    /// The label as written (escapes still in).
    raw_label: &'a str,
    uri: &'a str,
    /// Byte offset just past the closing `)`.
    end: usize,
}

/// Replace every mention in `text` by `@` + its label and collect the references. Any
/// mention whose URI does not decode fails the whole text with `INVALID_REFERENCE`.
pub fn parse_text(text: &str) -> Result<ParsedText, ReferenceError> {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut references = Vec::new();
    let mut copied = 0;
    let mut at = 0;
    while at < bytes.len() {
        // Matches only start at the ASCII bytes `@` or `d`, which are always char boundaries.
        let found = match bytes.get(at) {
            Some(b'@') => match_explicit(text, at).map(|m| {
                let id = decode_uri(m.uri)?;
                Ok::<_, ReferenceError>((unescape_label(m.raw_label), id, m.end))
            }),
            Some(b'd') => match_bare(text, at).map(|(uri, end)| {
                let id = decode_uri(uri)?;
                Ok((id.clone(), id, end))
            }),
            _ => None,
        };
        match found {
            Some(result) => {
                let (label, session_id, end) = result?;
                out.push_str(text.get(copied..at).unwrap_or_default());
                out.push('@');
                out.push_str(&label);
                references.push(Reference {
                    session_id,
                    label: Some(label),
                });
                copied = end;
                at = end;
            }
            None => at += 1,
        }
    }
    out.push_str(text.get(copied..).unwrap_or_default());
    Ok(ParsedText {
        text: out,
        references,
    })
}

/// `@[label](dsh-session:…)` starting at byte `at`, if it matches there.
fn match_explicit(text: &str, at: usize) -> Option<ExplicitMatch<'_>> {
    let rest = text.get(at..)?.strip_prefix("@[")?;
    let label_start = at + 2;
    // The label is a run of `\` + non-line-terminator, or any char but `\` and `]`.
    let mut chars = rest.char_indices();
    let mut label_len = rest.len();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some((_, escaped)) if !is_line_terminator(escaped) => {}
                _ => {
                    label_len = i;
                    break;
                }
            },
            ']' => {
                label_len = i;
                break;
            }
            _ => {}
        }
    }
    let raw_label = text.get(label_start..label_start + label_len)?;
    let after_label = label_start + label_len;
    let uri_part = text.get(after_label..)?.strip_prefix("](")?;
    if !uri_part.starts_with(SCHEME) {
        return None;
    }
    let uri_len = uri_part
        .find(|c: char| c == ')' || is_js_whitespace(c))
        .filter(|&i| uri_part.get(i..).is_some_and(|s| s.starts_with(')')))?;
    let uri_start = after_label + 2;
    Some(ExplicitMatch {
        raw_label,
        uri: text.get(uri_start..uri_start + uri_len)?,
        end: uri_start + uri_len + 1,
    })
}

/// A bare `dsh-session:` + one or more base64url bytes starting at byte `at`:
/// `(uri, end)`.
fn match_bare(text: &str, at: usize) -> Option<(&str, usize)> {
    let rest = text.get(at..)?;
    let payload = rest.strip_prefix(SCHEME)?;
    let payload_len = payload
        .bytes()
        .position(|b| !is_base64url_byte(b))
        .unwrap_or(payload.len());
    if payload_len == 0 {
        return None;
    }
    let end = at + SCHEME.len() + payload_len;
    Some((text.get(at..end)?, end))
}

/// Undo the label's `\` escapes (a backslash escapes the whole next code point).
fn unescape_label(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(next) = chars.next() {
                out.push(next);
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::{ErrorCode, format_mention};

    fn r(id: &str, label: &str) -> Reference {
        Reference {
            session_id: id.into(),
            label: Some(label.into()),
        }
    }

    #[test]
    fn parses_explicit_and_bare_mentions() {
        let cases: &[(&str, &str, Vec<Reference>)] = &[
            ("no mentions", "no mentions", vec![]),
            ("x @[A](dsh-session:ImEi) y", "x @A y", vec![r("a", "A")]),
            ("dsh-session:ImEi.", "@a.", vec![r("a", "a")]),
            (
                "@[a](b](dsh-session:ImEi)",
                "@[a](b](@a)",
                vec![r("a", "a")],
            ),
            ("@[\\😀](dsh-session:ImEi)", "@😀", vec![r("a", "😀")]),
            (
                "@[a\\\nb](dsh-session:ImEi)",
                "@[a\\\nb](@a)",
                vec![r("a", "a")],
            ),
            (
                "@[x](dsh-session:ImEi\u{feff})",
                "@[x](@a\u{feff})",
                vec![r("a", "a")],
            ),
            ("dsh-session: x", "dsh-session: x", vec![]),
            ("@[", "@[", vec![]),
        ];
        for (input, text, refs) in cases {
            let parsed = parse_text(input).unwrap();
            assert_eq!(&parsed.text, text, "{input:?}");
            assert_eq!(&parsed.references, refs, "{input:?}");
        }
    }

    #[test]
    fn bad_uri_fails_the_whole_text() {
        for input in [
            "ok dsh-session:ImEix",
            "@[x](dsh-session:ImEi\u{85})",
            "@[x](dsh-session:)",
        ] {
            assert_eq!(
                parse_text(input).unwrap_err().code,
                ErrorCode::InvalidReference,
                "{input:?}"
            );
        }
    }

    #[test]
    fn formatted_mentions_parse_back() {
        for (id, label) in [("s-1", "Build ] fix \\"), ("会话", "@[x](y)"), ("a\nb", "")] {
            let text = format!("see {} now", format_mention(id, Some(label)));
            let parsed = parse_text(&text).unwrap();
            assert_eq!(parsed.text, format!("see @{label} now"));
            assert_eq!(parsed.references, vec![r(id, label)]);
        }
    }
}
