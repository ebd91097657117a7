//! A parsed query as a tantivy query: every clause must match the conversation or the
//! session's id/cwd/title; a clause is a term, a phrase, or (while typing) a prefix.
//!
//! Proximity counts: for each two consecutive clauses, the session scores more when it says
//! the last word of the first right before the first word of the second — as a phrase
//! ([`PHRASE_BOOST`]), or near each other ([`NEAR_BOOST`]: within [`NEAR_SLOP`] positions by
//! tantivy's measure, where a swapped pair costs 2, so "redis … kafka" close by counts a
//! little too) — in one message (a phrase never spans two messages) or in its id/cwd/title.
//! A word still being typed (the last clause, a prefix) stands for its
//! [`PROXIMITY_EXPANSIONS`] most frequent completions here, each pair scored by BM25 like a
//! typed phrase (tantivy's phrase-prefix query scores every match a flat 1, whatever its
//! boost, so it is not used for ranking). These parts are
//! optional: they never decide whether a session matches, only how it ranks, so `rate
//! limiter` finds every session with both words and puts the one saying "rate limiter"
//! above newer ones saying them apart. Each such part is its own query ([`proximity`]), so
//! a session indexed in several pieces can add each one's best piece score like a clause's.
//!
//! A typed word expands to the [`MAX_PREFIX_EXPANSIONS`] indexed words starting with it
//! that occur in the most sessions (not the first ones alphabetically, which for a short
//! prefix would be rare words such as `kaa…` rather than `kafka`).

use std::collections::HashMap;

use tantivy::query::{
    BooleanQuery, BoostQuery, Occur, PhrasePrefixQuery, PhraseQuery, Query, TermQuery,
};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{Searcher, Term};

use crate::query_syntax::{Clause, ParsedQuery};
use crate::schema::Fields;

/// Terms a typed prefix may expand to, at most (per field).
const MAX_PREFIX_EXPANSIONS: u32 = 64;
/// Dictionary entries looked at per segment when expanding a prefix, at most.
const PREFIX_SCAN: usize = 20_000;
/// Weight of a match in the id, cwd or title over one in the conversation.
const META_BOOST: f32 = 1.5;
/// Weight of two consecutive query words said as a phrase.
pub const PHRASE_BOOST: f32 = 2.0;
/// Words allowed between two consecutive query words still said "near" (in order).
pub const NEAR_SLOP: u32 = 3;
/// Weight of two consecutive query words said near each other (a phrase is near too).
pub const NEAR_BOOST: f32 = 0.5;
/// Completions of a word being typed that proximity is scored for, at most (per field).
pub const PROXIMITY_EXPANSIONS: usize = 8;

/// The tantivy query for `parsed` (which must not be empty): every clause must match;
/// the [`proximity`] parts add to the score.
pub fn build(searcher: &Searcher, fields: &Fields, parsed: &ParsedQuery) -> Box<dyn Query> {
    let mut parts: Vec<(Occur, Box<dyn Query>)> = parsed
        .clauses
        .iter()
        .map(|clause| {
            let either: Box<dyn Query> = Box::new(BooleanQuery::new(vec![
                (Occur::Should, in_field(searcher, fields.body, clause)),
                (
                    Occur::Should,
                    Box::new(BoostQuery::new(
                        in_field(searcher, fields.meta, clause),
                        META_BOOST,
                    )),
                ),
            ]));
            (Occur::Must, either)
        })
        .collect();
    parts.extend(
        proximity(searcher, fields, parsed)
            .into_iter()
            .map(|q| (Occur::Should, q)),
    );
    Box::new(BooleanQuery::new(parts))
}

/// The optional scoring parts for consecutive clauses said together: per pair of clauses,
/// one query (the phrase and the near match, in the conversation and in the id/cwd/title).
/// Empty for a query of one clause.
pub fn proximity(
    searcher: &Searcher,
    fields: &Fields,
    parsed: &ParsedQuery,
) -> Vec<Box<dyn Query>> {
    parsed
        .clauses
        .windows(2)
        .filter_map(|pair| {
            let [a, b] = pair else { return None };
            // A prefix can only end a phrase (it is the last clause anyway).
            if a.prefix {
                return None;
            }
            let first = a.terms.last()?;
            let second = b.terms.first()?;
            let mut parts: Vec<(Occur, Box<dyn Query>)> = Vec::new();
            for (field, weight) in [(fields.body, 1.0), (fields.meta, META_BOOST)] {
                let typed = Term::from_field_text(field, second);
                let seconds = if b.prefix && b.terms.len() == 1 {
                    let mut words = expansions(searcher, field, &typed);
                    words.truncate(PROXIMITY_EXPANSIONS);
                    words
                } else {
                    vec![typed]
                };
                for second in seconds {
                    let terms = vec![Term::from_field_text(field, first), second];
                    let mut near = PhraseQuery::new(terms.clone());
                    near.set_slop(NEAR_SLOP);
                    parts.push((
                        Occur::Should,
                        Box::new(BoostQuery::new(
                            Box::new(PhraseQuery::new(terms)),
                            PHRASE_BOOST * weight,
                        )),
                    ));
                    parts.push((
                        Occur::Should,
                        Box::new(BoostQuery::new(Box::new(near), NEAR_BOOST * weight)),
                    ));
                }
            }
            let q: Box<dyn Query> = Box::new(BooleanQuery::new(parts));
            Some(q)
        })
        .collect()
}

/// `clause` in the conversation only (not the id, cwd or title): recall within one session.
pub fn in_body(searcher: &Searcher, fields: &Fields, clause: &Clause) -> Box<dyn Query> {
    in_field(searcher, fields.body, clause)
}

fn in_field(searcher: &Searcher, field: Field, clause: &Clause) -> Box<dyn Query> {
    let terms: Vec<Term> = clause
        .terms
        .iter()
        .map(|t| Term::from_field_text(field, t))
        .collect();
    match (terms.as_slice(), clause.prefix) {
        ([one], false) => Box::new(TermQuery::new(one.clone(), IndexRecordOption::WithFreqs)),
        ([one], true) => {
            // The exact word and its most frequent completions, each ranked by BM25.
            let words = expansions(searcher, field, one);
            Box::new(BooleanQuery::new(
                words
                    .into_iter()
                    .map(|t| {
                        let q: Box<dyn Query> =
                            Box::new(TermQuery::new(t, IndexRecordOption::WithFreqs));
                        (Occur::Should, q)
                    })
                    .collect(),
            ))
        }
        (_, false) => Box::new(PhraseQuery::new(terms)),
        (_, true) => {
            let mut prefix = PhrasePrefixQuery::new(terms);
            prefix.set_max_expansions(MAX_PREFIX_EXPANSIONS);
            Box::new(prefix)
        }
    }
}

/// `prefix` itself and the indexed words of `field` starting with it that occur in the most
/// sessions (summed over segments), at most [`MAX_PREFIX_EXPANSIONS`] in all.
fn expansions(searcher: &Searcher, field: Field, prefix: &Term) -> Vec<Term> {
    let start = prefix.serialized_value_bytes();
    let mut freq: HashMap<Vec<u8>, u64> = HashMap::new();
    for segment in searcher.segment_readers() {
        let Ok(inverted) = segment.inverted_index(field) else {
            continue;
        };
        let range = inverted.terms().range().ge(start);
        let range = match prefix_end(start) {
            Some(end) => range.lt(end),
            None => range,
        };
        let Ok(mut stream) = range.into_stream() else {
            continue;
        };
        let mut seen = 0;
        while seen < PREFIX_SCAN && stream.advance() {
            seen += 1;
            *freq.entry(stream.key().to_vec()).or_default() += u64::from(stream.value().doc_freq);
        }
    }
    let mut ranked: Vec<(Vec<u8>, u64)> = freq.into_iter().filter(|(k, _)| k != start).collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let keep = usize::try_from(MAX_PREFIX_EXPANSIONS).unwrap_or(usize::MAX) - 1;
    std::iter::once(prefix.clone())
        .chain(ranked.into_iter().take(keep).filter_map(|(k, _)| {
            std::str::from_utf8(&k)
                .ok()
                .map(|text| Term::from_field_text(field, text))
        }))
        .collect()
}

/// The smallest byte string above every string starting with `prefix` (`None`: no bound).
fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < u8::MAX {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::prefix_end;

    #[test]
    fn prefix_ends() {
        assert_eq!(prefix_end(b"ka"), Some(b"kb".to_vec()));
        assert_eq!(prefix_end(&[b'a', 0xff]), Some(b"b".to_vec()));
        assert_eq!(prefix_end(&[0xff, 0xff]), None);
        assert_eq!(prefix_end(b""), None);
    }
}
