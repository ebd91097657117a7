//! Closest matches for a query the exact filter finds nothing for: a fuzzy score over each
//! session's label, id and its cwd's last segment, so `@kfk` or `@kafka-redis` still offers
//! "Kafka vs Redis" (and letters scattered over a long path offer nothing).
//! The query is split into words at whitespace, `-`, `_`, `/` and `.`; every word must match
//! one of the three fields (its letters in order), and the best field scores are summed.

use std::cell::RefCell;

use nucleo_matcher::pattern::{Atom, AtomKind, CaseMatching, Normalization};
use nucleo_matcher::{Config, Matcher, Utf32Str};

/// How a query is split into words.
fn words(query: &str) -> Vec<&str> {
    query
        .split(|c: char| c.is_whitespace() || matches!(c, '-' | '_' | '/' | '.'))
        .filter(|w| !w.is_empty())
        .collect()
}

/// A fuzzy scorer for one query (`nucleo-matcher`, case-insensitive); cheap to build once
/// per listing.
pub struct FuzzyQuery<'q> {
    words: Vec<&'q str>,
    atoms: Vec<Atom>,
    /// The matcher and a field's chars, reused between fields.
    scratch: RefCell<(Matcher, Vec<char>)>,
}

impl std::fmt::Debug for FuzzyQuery<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FuzzyQuery")
            .field("words", &self.words)
            .finish_non_exhaustive()
    }
}

impl<'q> FuzzyQuery<'q> {
    /// A scorer for `query` (case-insensitive).
    pub fn new(query: &'q str) -> Self {
        let words = words(query);
        let atoms = words
            .iter()
            .map(|w| {
                Atom::new(
                    w,
                    CaseMatching::Ignore,
                    Normalization::Smart,
                    AtomKind::Fuzzy,
                    false,
                )
            })
            .collect();
        FuzzyQuery {
            words,
            atoms,
            scratch: RefCell::new((Matcher::new(Config::DEFAULT), Vec::new())),
        }
    }

    /// Whether the query has any word to match.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// The summed best score of every word over `fields`, or `None` when a word matches none.
    pub fn score(&self, fields: &[&str]) -> Option<i64> {
        if self.atoms.is_empty() {
            return None;
        }
        let mut scratch = self.scratch.borrow_mut();
        let (matcher, chars) = &mut *scratch;
        let mut total: i64 = 0;
        for atom in &self.atoms {
            let mut best = None;
            for field in fields {
                chars.clear();
                chars.extend(field.chars());
                best = best.max(atom.score(Utf32Str::Unicode(chars), matcher));
            }
            total = total.saturating_add(i64::from(best?));
        }
        Some(total)
    }

    /// Char indices of `text` matched by any word (sorted, deduplicated), for highlighting.
    pub fn indices(&self, text: &str) -> Vec<usize> {
        let mut scratch = self.scratch.borrow_mut();
        let (matcher, chars) = &mut *scratch;
        chars.clear();
        chars.extend(text.chars());
        let mut found: Vec<u32> = Vec::new();
        for atom in &self.atoms {
            let mut hits = Vec::new();
            if atom
                .indices(Utf32Str::Unicode(chars), matcher, &mut hits)
                .is_some()
            {
                found.extend(hits);
            }
        }
        let mut out: Vec<usize> = found
            .into_iter()
            .filter_map(|i| usize::try_from(i).ok())
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KAFKA: &str = "Kafka vs Redis for the event bus";

    #[test]
    fn words_split_at_separators() {
        assert_eq!(
            words(" kafka-redis_x/y.z  w "),
            ["kafka", "redis", "x", "y", "z", "w"]
        );
        assert!(words(" -_ ").is_empty());
    }

    #[test]
    fn abbreviations_and_joined_words_match_the_label() {
        for query in ["kfk", "kafka-redis", "KAFKA redis", "evbus", "redis kafka"] {
            assert!(
                FuzzyQuery::new(query).score(&[KAFKA]).is_some(),
                "{query:?} should match"
            );
        }
        for query in ["zzz", "kafka-zzz", "", "--"] {
            assert!(
                FuzzyQuery::new(query).score(&[KAFKA]).is_none(),
                "{query:?} should not match"
            );
        }
    }

    #[test]
    fn each_word_may_match_a_different_field() {
        let q = FuzzyQuery::new("kafka atlas");
        assert!(q.score(&[KAFKA]).is_none());
        assert!(q.score(&[KAFKA, "s-1", "/home/ana/atlas"]).is_some());
    }

    #[test]
    fn closer_matches_score_higher() {
        let q = FuzzyQuery::new("kafka");
        let tight = q.score(&["Kafka vs Redis"]).unwrap();
        let loose = q.score(&["Keep all files kept apart"]).unwrap();
        assert!(tight > loose, "{tight} vs {loose}");
    }

    #[test]
    fn indices_cover_every_word() {
        let q = FuzzyQuery::new("kafka-redis");
        let hits = q.indices(KAFKA);
        let chars: Vec<char> = KAFKA.chars().collect();
        let matched: String = hits.iter().map(|&i| chars[i]).collect();
        assert_eq!(matched.to_lowercase(), "kafkaredis");
    }
}
