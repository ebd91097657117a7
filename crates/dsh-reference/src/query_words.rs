//! How a listing query matches a session: dsh's way — the whole query one case-insensitive
//! substring of the session's id, cwd or title — or, for the app's pickers, word by word
//! (docs/references.md: candidates).

use std::ops::Range;

use crate::js_chars::is_js_whitespace;
use crate::label_match::label_match_ranges;

/// How a listing query matches a session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum QueryMatch {
    /// dsh's `candidates` contract: the whole query (spaces included) is a case-insensitive
    /// substring of the id, the cwd or the latest title.
    #[default]
    Substring,
    /// What a picker types: every whitespace-separated word of the query is a
    /// case-insensitive substring of the id, the cwd or the latest title (each word on its
    /// own: `memory leak` matches the title `Leak in memory pool`). A query of one word
    /// matches like [`Substring`](Self::Substring) without its surrounding whitespace; a
    /// query of none matches every session.
    Words,
}

/// A listing query and how it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListingQuery<'a> {
    pub text: &'a str,
    pub matching: QueryMatch,
}

impl<'a> ListingQuery<'a> {
    /// `text` matched as dsh does: one substring.
    pub fn substring(text: &'a str) -> Self {
        ListingQuery {
            text,
            matching: QueryMatch::Substring,
        }
    }

    /// `text` matched word by word.
    pub fn words(text: &'a str) -> Self {
        ListingQuery {
            text,
            matching: QueryMatch::Words,
        }
    }
}

/// The lowercased words of `query` (split at JavaScript whitespace), each once, longest
/// first: the longest word is the rarest in practice, so it is searched for first.
pub fn query_words(query: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for word in query.to_lowercase().split(is_js_whitespace) {
        if !word.is_empty() && !words.iter().any(|w| w == word) {
            words.push(word.to_owned());
        }
    }
    // Stable: equal lengths keep the query's order.
    words.sort_by_key(|w| std::cmp::Reverse(w.len()));
    words
}

/// The byte ranges of `label` matching `query` as `matching` says, sorted and merged where
/// they overlap or touch: the query's occurrences, or every word's.
pub fn query_match_ranges(label: &str, query: &str, matching: QueryMatch) -> Vec<Range<usize>> {
    match matching {
        QueryMatch::Substring => label_match_ranges(label, query),
        QueryMatch::Words => {
            let mut ranges: Vec<Range<usize>> = query
                .split(is_js_whitespace)
                .filter(|w| !w.is_empty())
                .flat_map(|word| label_match_ranges(label, word))
                .collect();
            ranges.sort_by_key(|r| (r.start, r.end));
            let mut merged: Vec<Range<usize>> = Vec::with_capacity(ranges.len());
            for range in ranges {
                match merged.last_mut() {
                    Some(last) if range.start <= last.end => last.end = last.end.max(range.end),
                    _ => merged.push(range),
                }
            }
            merged
        }
    }
}

#[cfg(test)]
#[allow(clippy::single_range_in_vec_init)] // expected ranges are lists
mod tests {
    use super::*;

    #[test]
    fn words_of_queries() {
        let cases: &[(&str, &[&str])] = &[
            ("", &[]),
            ("   ", &[]),
            ("memory", &["memory"]),
            (" memory ", &["memory"]),
            ("Investgate memry leak", &["investgate", "memry", "leak"]),
            ("a  bb\tccc", &["ccc", "bb", "a"]),
            ("Kafka kafka KAFKA", &["kafka"]),
            ("会话\u{3000}记录", &["会话", "记录"]),
            ("x\u{a0}y", &["x", "y"]),
        ];
        for (query, want) in cases {
            assert_eq!(query_words(query), *want, "{query:?}");
        }
    }

    #[test]
    fn ranges_of_words_are_merged() {
        let cases: &[(&str, &str, QueryMatch, &[Range<usize>])] = &[
            (
                "Leak in memory pool",
                "memory leak",
                QueryMatch::Words,
                &[0..4, 8..14],
            ),
            (
                "Leak in memory pool",
                "memory leak",
                QueryMatch::Substring,
                &[],
            ),
            (
                "memory leak",
                "memory leak",
                QueryMatch::Substring,
                &[0..11],
            ),
            ("abcdef", "abc cde", QueryMatch::Words, &[0..5]),
            ("abcdef", "abc def", QueryMatch::Words, &[0..6]),
            ("ab ab", "ab b", QueryMatch::Words, &[0..2, 3..5]),
            ("anything", "  ", QueryMatch::Words, &[]),
        ];
        for (label, query, matching, want) in cases {
            assert_eq!(
                query_match_ranges(label, query, *matching),
                *want,
                "{label:?} {query:?} {matching:?}"
            );
        }
    }
}
