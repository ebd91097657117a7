//! How a listing query matches a session: dsh's way — the whole query one case-insensitive
//! substring of the session's id, cwd or title — or, for the app's pickers, word by word,
//! the cwd only by its trailing segments, and ranked by how closely the title or id is what
//! was typed (docs/references.md: candidates).

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
    /// case-insensitive substring of the id or the latest title (each word on its own:
    /// `memory leak` matches the title `Leak in memory pool`), or names the cwd's trailing
    /// segments ([`names_cwd_tail`]: `billing` and `ana/billing` match `/home/ana/billing`,
    /// `ana` or `src/` inside it do not). A query of none matches every session.
    Words,
}

/// Whether `word` (lowercased) names the trailing segment(s) of `cwd` (lowercased): the
/// cwd is the word, or ends with `/` and the word (trailing slashes of both aside).
pub fn names_cwd_tail(cwd: &[u8], word: &[u8]) -> bool {
    let (cwd, word) = (trim_slashes(cwd), trim_slashes(word));
    if word.is_empty() || !cwd.ends_with(word) {
        return false;
    }
    let before = cwd.len() - word.len();
    before == 0 || word.first() == Some(&b'/') || cwd.get(before - 1) == Some(&b'/')
}

/// `path` without its trailing slashes (a lone `/` stays).
pub(crate) fn trim_slashes(mut path: &[u8]) -> &[u8] {
    while let [rest @ .., b'/'] = path {
        if rest.is_empty() {
            break;
        }
        path = rest;
    }
    path
}

/// How closely a session matches a picker's query, best first: its title or id is the
/// query, begins with it, or the query matches only somewhere (the pickers list the tiers
/// in this order, each in their usual order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MatchTier {
    Exact,
    Prefix,
    Other,
}

/// The query as the tiers compare it: lowercased, its words joined by single spaces; empty
/// for a query of no words (no tiers then).
pub fn tier_query(query: &str) -> String {
    let mut out = String::with_capacity(query.len());
    for word in query.split(is_js_whitespace).filter(|w| !w.is_empty()) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out.to_lowercase()
}

/// The tier of a session whose lowercased id and title are `id` and `title`, for a query
/// made by [`tier_query`].
pub fn tier_of(query: &[u8], id: &[u8], title: &[u8]) -> MatchTier {
    if query.is_empty() {
        MatchTier::Other
    } else if title == query || id == query {
        MatchTier::Exact
    } else if title.starts_with(query) || id.starts_with(query) {
        MatchTier::Prefix
    } else {
        MatchTier::Other
    }
}

/// The tier of a session with `id` and `title` (as listed) for a picker's `query`.
pub fn match_tier(query: &str, id: &str, title: &str) -> MatchTier {
    let query = tier_query(query);
    tier_of(
        query.as_bytes(),
        id.to_lowercase().as_bytes(),
        title.to_lowercase().as_bytes(),
    )
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
    fn a_word_names_the_cwd_only_by_its_trailing_segments() {
        let cases = [
            ("/home/ana/billing", "billing", true),
            ("/home/ana/billing", "ana/billing", true),
            ("/home/ana/billing", "/home/ana/billing", true),
            ("/home/ana/billing/", "billing/", true),
            ("/home/ana/billing", "illing", false),
            ("/home/ana/billing", "ana", false),
            ("/home/ana/src/app", "src/", false),
            ("/home/ana/src", "src/", true),
            ("/", "/", true),
            ("/home/ana/billing", "", false),
        ];
        for (cwd, word, want) in cases {
            assert_eq!(
                names_cwd_tail(cwd.as_bytes(), word.as_bytes()),
                want,
                "{cwd:?} {word:?}"
            );
        }
    }

    #[test]
    fn tiers_follow_what_was_typed() {
        let cases = [
            ("Deploy plan", "s-1", "Deploy plan", MatchTier::Exact),
            ("deploy  PLAN ", "s-1", "Deploy plan", MatchTier::Exact),
            ("s-1", "s-1", "Deploy plan", MatchTier::Exact),
            ("deploy", "s-1", "Deploy plan", MatchTier::Prefix),
            ("s-", "s-1", "Deploy plan", MatchTier::Prefix),
            (
                "Deploy plan",
                "s-2",
                "@Deploy plan what now",
                MatchTier::Other,
            ),
            ("plan", "s-1", "Deploy plan", MatchTier::Other),
            ("", "s-1", "Deploy plan", MatchTier::Other),
        ];
        for (query, id, title, want) in cases {
            assert_eq!(match_tier(query, id, title), want, "{query:?} {title:?}");
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
