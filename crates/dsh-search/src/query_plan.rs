//! A parsed query as a tantivy query: every clause must match the conversation or the
//! session's id/cwd/title; a clause is a term, a phrase, or (while typing) a prefix.

use tantivy::Term;
use tantivy::query::{
    BooleanQuery, BoostQuery, Occur, PhrasePrefixQuery, PhraseQuery, Query, TermQuery,
};
use tantivy::schema::{Field, IndexRecordOption};

use crate::query_syntax::{Clause, ParsedQuery};
use crate::schema::Fields;

/// Terms a typed prefix may expand to, at most (per field).
const MAX_PREFIX_EXPANSIONS: u32 = 64;
/// Weight of a match in the id, cwd or title over one in the conversation.
const META_BOOST: f32 = 1.5;

/// The tantivy query for `parsed` (which must not be empty).
pub fn build(fields: &Fields, parsed: &ParsedQuery) -> Box<dyn Query> {
    let clauses = parsed
        .clauses
        .iter()
        .map(|clause| {
            let either: Box<dyn Query> = Box::new(BooleanQuery::new(vec![
                (Occur::Should, in_field(fields.body, clause)),
                (
                    Occur::Should,
                    Box::new(BoostQuery::new(in_field(fields.meta, clause), META_BOOST)),
                ),
            ]));
            (Occur::Must, either)
        })
        .collect();
    Box::new(BooleanQuery::new(clauses))
}

fn in_field(field: Field, clause: &Clause) -> Box<dyn Query> {
    let terms: Vec<Term> = clause
        .terms
        .iter()
        .map(|t| Term::from_field_text(field, t))
        .collect();
    match (terms.as_slice(), clause.prefix) {
        ([one], false) => Box::new(TermQuery::new(one.clone(), IndexRecordOption::WithFreqs)),
        ([one], true) => {
            // The exact word ranks by BM25; longer words starting with it match too.
            let mut prefix = PhrasePrefixQuery::new(vec![one.clone()]);
            prefix.set_max_expansions(MAX_PREFIX_EXPANSIONS);
            Box::new(BooleanQuery::new(vec![
                (
                    Occur::Should,
                    Box::new(TermQuery::new(one.clone(), IndexRecordOption::WithFreqs)),
                ),
                (Occur::Should, Box::new(prefix)),
            ]))
        }
        (_, false) => Box::new(PhraseQuery::new(terms)),
        (_, true) => {
            let mut prefix = PhrasePrefixQuery::new(terms);
            prefix.set_max_expansions(MAX_PREFIX_EXPANSIONS);
            Box::new(prefix)
        }
    }
}
