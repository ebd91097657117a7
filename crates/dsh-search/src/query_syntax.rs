//! The query language: words and `"quoted phrases"`, all of which must occur in a session;
//! the last bare word matches as a prefix while the query is still being typed (no trailing
//! space). Words are analyzed like the indexed text, so case, accents and CJK work alike.
//!
//! A last word of a single character is too short to be a useful prefix (it would expand
//! to the first few of thousands of words, alphabetically): after other words it is left
//! out until the next keystroke, so the results of the words before stay; alone (or as
//! the end of a phrase) it matches as a whole word.

use tantivy::tokenizer::TextAnalyzer;

use crate::error::SearchError;
use crate::text_analysis;

/// Characters the last word needs before it matches as a prefix.
pub const MIN_PREFIX_CHARS: usize = 2;

/// One thing a session must contain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clause {
    /// Analyzed terms, consecutive in the text (one for a plain word; several for a phrase,
    /// a CJK word or a word with inner punctuation such as `e-mail`).
    pub terms: Vec<String>,
    /// The last term may be the start of a longer term.
    pub prefix: bool,
}

/// A parsed query: every clause must match.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ParsedQuery {
    pub clauses: Vec<Clause>,
}

impl ParsedQuery {
    /// Whether nothing searchable is left (empty, or only punctuation).
    pub fn is_empty(&self) -> bool {
        self.clauses.is_empty()
    }
}

/// Parse `query`. An unbalanced `"` is an error; words that analyze to nothing are dropped.
pub fn parse(analyzer: &mut TextAnalyzer, query: &str) -> Result<ParsedQuery, SearchError> {
    if query.matches('"').count() % 2 == 1 {
        return Err(SearchError::InvalidQuery {
            reason: "unbalanced quote: a phrase opened with \" is never closed".into(),
        });
    }
    let mut clauses = Vec::new();
    let typing = !query.ends_with(char::is_whitespace);
    let mut last_bare: Option<usize> = None;
    for (i, part) in query.split('"').enumerate() {
        if i % 2 == 1 {
            let terms = analyzed(analyzer, part);
            if !terms.is_empty() {
                clauses.push(Clause {
                    terms,
                    prefix: false,
                });
            }
            last_bare = None;
            continue;
        }
        for word in part.split_whitespace() {
            let terms = analyzed(analyzer, word);
            if !terms.is_empty() {
                clauses.push(Clause {
                    terms,
                    prefix: false,
                });
                last_bare = Some(clauses.len() - 1);
            }
        }
        // A word directly followed by the next quote is complete.
        if !part.ends_with(|c: char| !c.is_whitespace()) {
            last_bare = None;
        }
    }
    if typing
        && let Some(i) = last_bare
        && i + 1 == clauses.len()
        && query.ends_with(|c: char| c != '"')
        && let Some(clause) = clauses.get_mut(i)
    {
        let short = clause
            .terms
            .last()
            .is_some_and(|t| t.chars().count() < MIN_PREFIX_CHARS);
        if !short {
            clause.prefix = true;
        } else if clause.terms.len() == 1 && clauses.len() > 1 {
            clauses.pop();
        }
    }
    Ok(ParsedQuery { clauses })
}

fn analyzed(analyzer: &mut TextAnalyzer, text: &str) -> Vec<String> {
    text_analysis::terms(analyzer, text)
        .into_iter()
        .map(|t| t.text)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn clause(terms: &[&str], prefix: bool) -> Clause {
        Clause {
            terms: terms.iter().map(|t| (*t).to_owned()).collect(),
            prefix,
        }
    }

    fn p(q: &str) -> Result<ParsedQuery, SearchError> {
        parse(&mut text_analysis::analyzer(), q)
    }

    #[test]
    fn query_table() {
        let cases: Vec<(&str, Vec<Clause>)> = vec![
            ("kaf", vec![clause(&["kaf"], true)]),
            ("kafka ", vec![clause(&["kafka"], false)]),
            (
                "Kafka Redis",
                vec![clause(&["kafka"], false), clause(&["redis"], true)],
            ),
            (
                "\"chose Kafka\" redis",
                vec![clause(&["chose", "kafka"], false), clause(&["redis"], true)],
            ),
            (
                "redis \"chose Kafka\"",
                vec![
                    clause(&["redis"], false),
                    clause(&["chose", "kafka"], false),
                ],
            ),
            ("结账页", vec![clause(&["结账", "账页"], true)]),
            ("CAFÉ", vec![clause(&["cafe"], true)]),
            ("e-mail", vec![clause(&["e", "mail"], true)]),
            // One letter: not a prefix; after other words, left out while typing.
            ("k", vec![clause(&["k"], false)]),
            ("kafka r", vec![clause(&["kafka"], false)]),
            (
                "\"chose kafka\" r",
                vec![clause(&["chose", "kafka"], false)],
            ),
            (
                "kafka r ",
                vec![clause(&["kafka"], false), clause(&["r"], false)],
            ),
            (
                "kafka re",
                vec![clause(&["kafka"], false), clause(&["re"], true)],
            ),
            ("e-m", vec![clause(&["e", "m"], false)]),
            ("结", vec![clause(&["结"], false)]),
            ("结账", vec![clause(&["结账"], true)]),
            ("... ,", vec![]),
            ("", vec![]),
            ("\"\"", vec![]),
        ];
        for (q, want) in cases {
            assert_eq!(p(q).unwrap().clauses, want, "{q:?}");
        }
    }

    #[test]
    fn unbalanced_quote_is_an_error() {
        for q in ["\"kafka", "a \"b\" \"c", "\""] {
            assert!(
                matches!(p(q), Err(SearchError::InvalidQuery { .. })),
                "{q:?}"
            );
        }
    }
}
