//! Sessions indexed in several pieces, matched and ranked as one (docs/search.md: long
//! sessions). This is the one place where pieces become a session hit.
//!
//! A session whose text fits one piece is one document: the whole query runs on it, as it
//! always did. A longer session is several documents, all marked `split`, and a query must not
//! run per document: the session matches when every clause matches in at least one of its
//! pieces or in its id, cwd or title (on its lead piece) — each clause may be in a different
//! piece. Its score is the sum over the clauses of each clause's best score in any of its
//! pieces, plus for each proximity part ([`query_plan::proximity`]: two consecutive clauses
//! said together) its best score in any piece, times the recency factor of the session's
//! last activity (from its lead). For a session of one piece that is exactly the score of the
//! whole query, since the score of a conjunction with optional parts is the sum of the
//! clauses' and the matching parts' scores. Proximity parts never decide a match; a phrase
//! never spans two pieces, since pieces hold whole messages (or parts of one too long for a
//! piece, cut at whitespace).

use std::collections::HashMap;

use tantivy::collector::{DocSetCollector, TopDocs};
use tantivy::columnar::StrColumn;
use tantivy::query::{BooleanQuery, BoostQuery, Occur, Query, TermQuery};
use tantivy::schema::IndexRecordOption;
use tantivy::{DocAddress, Searcher, TantivyError, Term};

use crate::query_plan;
use crate::query_syntax::ParsedQuery;
use crate::schema::Fields;

/// A session in several pieces that matches a query.
#[derive(Debug, Clone, PartialEq)]
pub struct LongHit {
    /// Sum of the clauses' best piece scores, times the session's recency factor.
    pub score: f32,
    /// The lead piece (the session's fields).
    pub lead: DocAddress,
    /// Pieces to show the match from, best first: where each clause scored best (each
    /// piece once), at most the number asked for.
    pub pieces: Vec<DocAddress>,
}

fn term_query(term: Term) -> Box<dyn Query> {
    Box::new(TermQuery::new(term, IndexRecordOption::Basic))
}

fn split_term(fields: &Fields) -> Term {
    Term::from_field_u64(fields.split, 1)
}

/// `plan` restricted to sessions of one piece (their one document holds the whole session).
pub fn one_piece_only(plan: Box<dyn Query>, fields: &Fields) -> Box<dyn Query> {
    Box::new(BooleanQuery::new(vec![
        (Occur::Must, plan),
        (Occur::MustNot, term_query(split_term(fields))),
    ]))
}

/// Pieces of long sessions in the index (deleted ones may still count): none means every
/// session is one document.
pub fn piece_count(searcher: &Searcher, fields: &Fields) -> u64 {
    searcher.doc_freq(&split_term(fields)).unwrap_or(0)
}

/// The long sessions matching every clause of `parsed`, best first; `recency` gives the
/// factor for a session's last activity time. At most `max_pieces` pieces per hit are named
/// for snippets.
pub fn search(
    searcher: &Searcher,
    fields: &Fields,
    parsed: &ParsedQuery,
    recency: &dyn Fn(i64) -> f32,
    max_pieces: usize,
) -> Result<Vec<LongHit>, TantivyError> {
    let limit = usize::try_from(piece_count(searcher, fields)).unwrap_or(usize::MAX);
    if limit == 0 || parsed.clauses.is_empty() {
        return Ok(Vec::new());
    }
    let keys = PieceKeys::open(searcher)?;
    let mut sessions: HashMap<String, Matched> = HashMap::new();
    let leads = BooleanQuery::new(vec![
        (Occur::Must, term_query(split_term(fields))),
        (
            Occur::Must,
            term_query(Term::from_field_u64(fields.lead, 1)),
        ),
    ]);
    for address in searcher.search(&leads, &DocSetCollector)? {
        let Some(key) = keys.path(address) else {
            continue;
        };
        let time = PieceKeys::time(searcher, address);
        sessions
            .entry(key)
            .or_insert_with(|| Matched::new(parsed.clauses.len()))
            .lead = Some((address, time));
    }
    for (ci, clause) in parsed.clauses.iter().enumerate() {
        let one = ParsedQuery {
            clauses: vec![clause.clone()],
        };
        // The clause as the whole query scores it, on the pieces of long sessions only.
        let query = on_pieces(query_plan::build(searcher, fields, &one), fields);
        let top = searcher.search(&query, &TopDocs::with_limit(limit).order_by_score())?;
        for (score, address) in top {
            let Some(key) = keys.path(address) else {
                continue;
            };
            let matched = sessions
                .entry(key)
                .or_insert_with(|| Matched::new(parsed.clauses.len()));
            if let Some(best) = matched.best.get_mut(ci)
                && best.is_none_or(|(s, _)| score > s)
            {
                *best = Some((score, address));
            }
        }
    }
    for part in query_plan::proximity(searcher, fields, parsed) {
        let query = on_pieces(part, fields);
        let top = searcher.search(&query, &TopDocs::with_limit(limit).order_by_score())?;
        let mut best: HashMap<String, f32> = HashMap::new();
        for (score, address) in top {
            if let Some(key) = keys.path(address) {
                let entry = best.entry(key).or_insert(score);
                *entry = entry.max(score);
            }
        }
        for (key, score) in best {
            if let Some(matched) = sessions.get_mut(&key) {
                matched.bonus += score;
            }
        }
    }
    let mut hits: Vec<LongHit> = sessions
        .into_values()
        .filter_map(|m| m.hit(recency, max_pieces))
        .collect();
    hits.sort_by(|a, b| b.score.total_cmp(&a.score));
    Ok(hits)
}

/// `query` on the pieces of long sessions only (the filter adds nothing to the score).
fn on_pieces(query: Box<dyn Query>, fields: &Fields) -> BooleanQuery {
    BooleanQuery::new(vec![
        (Occur::Must, query),
        (
            Occur::Must,
            Box::new(BoostQuery::new(term_query(split_term(fields)), 0.0)),
        ),
    ])
}

/// What one long session matched so far.
struct Matched {
    /// The lead piece and the session's last activity time.
    lead: Option<(DocAddress, i64)>,
    /// Per clause: its best score and the piece it came from.
    best: Vec<Option<(f32, DocAddress)>>,
    /// The proximity parts' best piece scores, summed (they never decide a match).
    bonus: f32,
}

impl Matched {
    fn new(clauses: usize) -> Self {
        Matched {
            lead: None,
            best: vec![None; clauses],
            bonus: 0.0,
        }
    }

    /// The hit, when every clause matched and the lead is there (pieces of a read still
    /// being written have none yet).
    fn hit(self, recency: &dyn Fn(i64) -> f32, max_pieces: usize) -> Option<LongHit> {
        let (lead, time) = self.lead?;
        let best: Vec<(f32, DocAddress)> = self.best.into_iter().collect::<Option<_>>()?;
        let sum: f32 = best.iter().map(|(s, _)| s).sum::<f32>() + self.bonus;
        let mut ranked = best;
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0));
        let mut pieces: Vec<DocAddress> = Vec::with_capacity(max_pieces);
        for (_, address) in ranked {
            if pieces.len() < max_pieces && !pieces.contains(&address) {
                pieces.push(address);
            }
        }
        Some(LongHit {
            score: sum * recency(time),
            lead,
            pieces,
        })
    }
}

/// The `path` fast column of every segment: which session a piece belongs to.
struct PieceKeys {
    paths: Vec<Option<StrColumn>>,
}

impl PieceKeys {
    fn open(searcher: &Searcher) -> Result<Self, TantivyError> {
        let mut paths = Vec::with_capacity(searcher.segment_readers().len());
        for segment in searcher.segment_readers() {
            paths.push(segment.fast_fields().str("path")?);
        }
        Ok(PieceKeys { paths })
    }

    fn path(&self, address: DocAddress) -> Option<String> {
        let segment = usize::try_from(address.segment_ord).ok()?;
        let column = self.paths.get(segment)?.as_ref()?;
        let ord = column.term_ords(address.doc_id).next()?;
        let mut out = String::new();
        column.ord_to_str(ord, &mut out).ok()?.then_some(out)
    }

    /// The lead's `time` (last activity), 0 when unknown.
    fn time(searcher: &Searcher, address: DocAddress) -> i64 {
        let segment = usize::try_from(address.segment_ord).unwrap_or(usize::MAX);
        searcher
            .segment_readers()
            .get(segment)
            .and_then(|s| s.fast_fields().i64("time").ok())
            .and_then(|c| c.first(address.doc_id))
            .unwrap_or(0)
    }
}
