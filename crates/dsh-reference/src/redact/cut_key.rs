//! A key cut short at the end of a label or title (docs/references.md: secret redaction): a
//! fallback title is cut to 40 bytes (dsh's rule), so `Deploy with sk-ant-api03-AbCd…` keeps
//! a known prefix and a few characters of the key — fewer than any rule asks for.

use super::{SecretKind, key_prefixes};

/// Characters a key's last word is made of.
fn is_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')
}

/// Where the last word of `label` starts and its kind, when that word (after trailing
/// whitespace) starts with a known key prefix and goes on with at least one key character
/// to the end.
pub fn cut_key_at_end(label: &str) -> Option<(usize, SecretKind)> {
    let trimmed = label.trim_end();
    let start = trimmed
        .char_indices()
        .rev()
        .take_while(|&(_, c)| is_key_char(c))
        .last()
        .map(|(i, _)| i)?;
    let word = trimmed.get(start..)?;
    // The longest prefix the word starts with names it; the word must go on past it.
    key_prefixes()
        .filter(|(prefix, _)| word.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .filter(|(prefix, _)| word.len() > prefix.len())
        .map(|(_, kind)| (start, kind))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_prefix_at_the_end_is_a_cut_key() {
        let cases: &[(&str, Option<(usize, &str)>)] = &[
            (
                "Deploy with sk-ant-api03-AbCd",
                Some((12, "anthropic-api-key")),
            ),
            (
                "Deploy with sk-ant-api03-AbCd  ",
                Some((12, "anthropic-api-key")),
            ),
            ("token ghp_abc", Some((6, "github-token"))),
            ("KEY=sk-ant-x", Some((4, "anthropic-api-key"))),
            ("key AKIAIOSF", Some((4, "aws-access-key"))),
            ("jwt eyJhbGci", Some((4, "jwt"))),
            // The prefix alone, or a word that only contains one, is no key.
            ("ends in sk-ant-", None),
            ("ask-ant-abc", None),
            ("task-sk-abc", None),
            ("Kafka consumer lag", None),
            ("", None),
        ];
        for &(label, want) in cases {
            assert_eq!(cut_key_at_end(label), want, "{label:?}");
        }
    }
}
