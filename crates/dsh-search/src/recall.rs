//! Recall: the best-matching exchanges of one session for a query (docs/references.md: the
//! tool `search_references`). The session's user and assistant text is searched — every
//! message ever appended, those a compaction replaced included; never tool results,
//! reasoning, plugin messages or compaction summaries. Words are matched as the index
//! matches them (the same analyzer and clause rules; the last word is a whole word, not a
//! prefix); a message ranks by how many of the query's words and phrases it holds, then by
//! how often, then older first. An exchange is the matched message with its partner: the
//! reply that followed a user message, the user message an assistant reply answered.
//!
//! Two ways to the same answer: [`SessionIndex::recall_indexed`] answers from the index when
//! it holds every such message of the log as it is now (indexed, unchanged since, and no
//! compaction on its surface — a compaction's replaced messages are not indexed), reading
//! only the pieces where a clause matches best; [`recall_from_log`] reads the log once,
//! streaming, and serves every other case. [`recall`] picks.

use std::cmp::Ordering;
use std::path::Path;

use dsh_store::projection::{TurnRole, project_event};
use dsh_store::{Event, QueryError, SessionQuery, SurfaceVisitor};
use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::IndexRecordOption;
use tantivy::tokenizer::TextAnalyzer;
use tantivy::{DocAddress, TantivyDocument, Term};

use crate::error::SearchError;
use crate::log_state::{Change, LogState};
use crate::query_syntax::{self, Clause, ParsedQuery};
use crate::session_doc;
use crate::session_index::SessionIndex;
use crate::store_logs;

/// Pieces of a long session read to answer from the index, at most: each clause's best
/// pieces by BM25, so a common word costs a few pieces, never the whole session.
const MAX_PIECES: usize = 3;

/// Logs whose surface starts with a compaction checkpoint, by store, key and state (a
/// changed log is a new entry): at most this many remembered.
const CHECKPOINT_CACHE: usize = 256;

/// Per log state: whether its surface starts with a compaction checkpoint.
type CheckpointKey = (std::path::PathBuf, String, u64, Option<u128>);
static CHECKPOINT_FIRST: std::sync::LazyLock<
    std::sync::Mutex<std::collections::HashMap<CheckpointKey, bool>>,
> = std::sync::LazyLock::new(|| std::sync::Mutex::new(std::collections::HashMap::new()));

/// The indexed state of the lead piece at `address`, from its fast field.
fn fast_state(
    searcher: &tantivy::Searcher,
    address: DocAddress,
) -> Result<Option<LogState>, SearchError> {
    let Some(segment) = searcher
        .segment_readers()
        .get(usize::try_from(address.segment_ord).unwrap_or(usize::MAX))
    else {
        return Ok(None);
    };
    let Some(states) = segment.fast_fields().bytes("state")? else {
        return Ok(None);
    };
    let Some(ord) = states.term_ords(address.doc_id).next() else {
        return Ok(None);
    };
    let mut buf = Vec::new();
    if !states
        .ord_to_bytes(ord, &mut buf)
        .map_err(tantivy::TantivyError::from)?
    {
        return Ok(None);
    }
    Ok(LogState::from_bytes(&buf))
}

/// One message of an exchange.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecalledMessage {
    /// The event's seq in its log.
    pub seq: u64,
    pub role: TurnRole,
    pub text: String,
    /// Whether this message matched (its partner may not).
    pub matched: bool,
}

/// One matched message with its partner, in log order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exchange {
    pub messages: Vec<RecalledMessage>,
    rank: Rank,
}

impl Exchange {
    /// The matched message's seq.
    pub fn matched_seq(&self) -> Option<u64> {
        self.messages.iter().find(|m| m.matched).map(|m| m.seq)
    }
}

/// What a recall found.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Recalled {
    /// The best exchanges, best first.
    pub exchanges: Vec<Exchange>,
    /// Messages that matched in all (the exchanges are the best of them).
    pub matched: usize,
    /// Whether the index answered (else the log was read).
    pub from_index: bool,
}

/// How well a message matched: clauses found, then matches in all, then older first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Rank {
    clauses: usize,
    hits: usize,
    seq: u64,
}

impl Ord for Rank {
    fn cmp(&self, other: &Self) -> Ordering {
        self.clauses
            .cmp(&other.clauses)
            .then(self.hits.cmp(&other.hits))
            .then(other.seq.cmp(&self.seq))
    }
}

impl PartialOrd for Rank {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// A query ready to match messages.
pub struct RecallQuery {
    analyzer: TextAnalyzer,
    parsed: ParsedQuery,
    /// Every clause is one ASCII word: an ASCII message is matched without the analyzer.
    single_words: bool,
}

impl RecallQuery {
    /// Parse `query` (the index's language; the last word is a whole word). A query that
    /// holds nothing searchable is [`SearchError::InvalidQuery`].
    pub fn new(query: &str) -> Result<Self, SearchError> {
        let mut analyzer = crate::text_analysis::analyzer();
        // A trailing space: a query the model sends is complete, not being typed.
        let parsed = query_syntax::parse(&mut analyzer, &format!("{query} "))?;
        if parsed.is_empty() {
            return Err(SearchError::InvalidQuery {
                reason: "the query holds no word to search for".into(),
            });
        }
        let single_words = parsed
            .clauses
            .iter()
            .all(|c| !c.prefix && c.terms.len() == 1 && c.terms.iter().all(|t| t.is_ascii()));
        Ok(RecallQuery {
            analyzer,
            parsed,
            single_words,
        })
    }

    /// The rank of a message with `text`, if it matches at least one clause.
    fn rank(&mut self, seq: u64, text: &str) -> Option<Rank> {
        let found = if text.is_ascii() && self.single_words {
            ascii_hits(&text.to_ascii_lowercase(), &self.parsed.clauses)
        } else {
            crate::snippets::clause_hits(&mut self.analyzer, &self.parsed.clauses, text)
        };
        let clauses = found.iter().filter(|&&n| n > 0).count();
        (clauses > 0).then(|| Rank {
            clauses,
            hits: found.iter().sum(),
            seq,
        })
    }

    fn clauses(&self) -> &[Clause] {
        &self.parsed.clauses
    }
}

/// How often each one-word clause occurs in `folded` (an ASCII text, lowercased) as a whole
/// word: what the analyzer finds there (on ASCII text it lowercases runs of ASCII letters
/// and digits; a term is such a run), without analyzing it.
fn ascii_hits(folded: &str, clauses: &[Clause]) -> Vec<usize> {
    let bytes = folded.as_bytes();
    let word = |i: usize| bytes.get(i).is_some_and(u8::is_ascii_alphanumeric);
    clauses
        .iter()
        .map(|c| {
            let Some(term) = c.terms.first() else {
                return 0;
            };
            folded
                .match_indices(term.as_str())
                .filter(|(at, t)| !(word(at + t.len()) || *at > 0 && word(at - 1)))
                .count()
        })
        .collect()
}

/// The best `limit` exchanges of a stream of a session's messages, in log order: each
/// message is ranked as it comes; an exchange's partner is the message before (for an
/// assistant reply) or after (for a user message); a question and its reply that both match
/// are one exchange.
struct Collector<'q> {
    query: &'q mut RecallQuery,
    limit: usize,
    best: Vec<Exchange>,
    matched: usize,
    /// The message before the current one.
    previous: Option<RecalledMessage>,
    /// Indexes into `best` of exchanges still waiting for the message after their match.
    waiting: Vec<usize>,
}

impl<'q> Collector<'q> {
    fn new(query: &'q mut RecallQuery, limit: usize) -> Self {
        Collector {
            query,
            limit,
            best: Vec::new(),
            matched: 0,
            previous: None,
            waiting: Vec::new(),
        }
    }

    /// The next message of the session (compaction summaries are not the session's text).
    fn push(&mut self, seq: u64, role: TurnRole, checkpoint: bool, text: &str) {
        if checkpoint {
            return;
        }
        let message = || RecalledMessage {
            seq,
            role,
            text: text.to_owned(),
            matched: false,
        };
        // The exchange of a matched question this reply completes.
        let mut completed = None;
        for i in std::mem::take(&mut self.waiting) {
            if let Some(exchange) = self.best.get_mut(i)
                && role == TurnRole::Assistant
            {
                exchange.messages.push(message());
                completed = Some(i);
            }
        }
        let rank = self.query.rank(seq, text);
        if let Some(rank) = rank {
            self.matched += 1;
            // A reply that matches too is part of its question's exchange, not a second
            // exchange of the same two messages.
            if let Some(exchange) = completed.and_then(|i| self.best.get_mut(i)) {
                if let Some(reply) = exchange.messages.last_mut() {
                    reply.matched = true;
                }
                exchange.rank = exchange.rank.max(rank);
                return;
            }
            let worst = self.best.iter().map(|e| e.rank).min();
            let enters = self.best.len() < self.limit || worst.is_some_and(|w| rank > w);
            if enters && self.limit > 0 {
                let mut messages = Vec::with_capacity(2);
                if role == TurnRole::Assistant
                    && let Some(p) = self.previous.clone()
                {
                    messages.push(p);
                }
                messages.push(RecalledMessage {
                    matched: true,
                    ..message()
                });
                let exchange = Exchange { messages, rank };
                let at = if self.best.len() < self.limit {
                    self.best.push(exchange);
                    self.best.len() - 1
                } else {
                    let Some(at) = self
                        .best
                        .iter()
                        .enumerate()
                        .min_by_key(|(_, e)| e.rank)
                        .map(|(i, _)| i)
                    else {
                        return;
                    };
                    if let Some(slot) = self.best.get_mut(at) {
                        *slot = exchange;
                    }
                    at
                };
                if role == TurnRole::User {
                    self.waiting.push(at);
                }
            }
        }
        // An assistant reply's partner is the newest message a person typed before it.
        if role == TurnRole::User {
            self.previous = Some(message());
        }
    }

    fn finish(mut self, from_index: bool) -> Recalled {
        self.best.sort_by_key(|e| std::cmp::Reverse(e.rank));
        Recalled {
            exchanges: self.best,
            matched: self.matched,
            from_index,
        }
    }
}

/// Every message ever appended to a surface, shown to the collector as it comes.
struct LogVisitor<'c, 'q> {
    collector: &'c mut Collector<'q>,
}

impl SurfaceVisitor for LogVisitor<'_, '_> {
    fn visit(&mut self, event: &Event, _removed: &[u64]) {
        if let Some(item) = project_event(event) {
            self.collector
                .push(event.seq, item.role, item.checkpoint, &item.text);
        }
    }
}

/// Recall from the log of `session_id`, read once (streaming): every message ever appended,
/// those a compaction replaced included.
pub fn recall_from_log(
    store: &dyn SessionQuery,
    session_id: &str,
    query: &mut RecallQuery,
    limit: usize,
) -> Result<Recalled, QueryError> {
    let mut collector = Collector::new(query, limit);
    store.scan_surface(
        session_id,
        &mut LogVisitor {
            collector: &mut collector,
        },
    )?;
    Ok(collector.finish(false))
}

impl SessionIndex {
    /// Recall from the index, for the log at `log_path` (in this index's store): `None`
    /// when the index does not hold every message of the log as it is now (not indexed, the
    /// log changed since, or its surface starts with a compaction checkpoint: what that
    /// compaction replaced is not indexed) — then read the log ([`recall_from_log`]).
    pub fn recall_indexed(
        &self,
        log_path: &Path,
        query: &mut RecallQuery,
        limit: usize,
    ) -> Result<Option<Recalled>, SearchError> {
        let Some(rel) = key_of(self.store_root(), log_path) else {
            return Ok(None);
        };
        let Some((_, stamp)) = store_logs::stat(self.store_root(), &rel) else {
            return Ok(None);
        };
        let engine = self.engine();
        engine.reader.reload()?;
        let searcher = engine.reader.searcher();
        let fields = &engine.fields;
        let path_term = || -> Box<dyn Query> {
            Box::new(TermQuery::new(
                Term::from_field_text(fields.path, &rel),
                IndexRecordOption::Basic,
            ))
        };
        let with_path = |q: Box<dyn Query>| -> BooleanQuery {
            BooleanQuery::new(vec![(Occur::Must, path_term()), (Occur::Must, q)])
        };
        let one = |q: BooleanQuery| -> Result<Option<TantivyDocument>, SearchError> {
            let top = searcher.search(&q, &TopDocs::with_limit(1).order_by_score())?;
            match top.first() {
                Some((_, address)) => Ok(Some(searcher.doc(*address)?)),
                None => Ok(None),
            }
        };
        let u64_term = |field, n| -> Box<dyn Query> {
            Box::new(TermQuery::new(
                Term::from_field_u64(field, n),
                IndexRecordOption::Basic,
            ))
        };
        // The lead: is the log as it was indexed? (Its state is a fast field: no stored
        // text is read.)
        let lead_query = with_path(u64_term(fields.lead, 1));
        let Some((_, lead)) = searcher
            .search(&lead_query, &TopDocs::with_limit(1).order_by_score())?
            .first()
            .copied()
        else {
            return Ok(None);
        };
        let Some(state) = fast_state(&searcher, lead)?.filter(|s| !s.failed) else {
            return Ok(None);
        };
        let format = if state.zstd {
            dsh_store::reader::LogFormat::Zstd
        } else {
            dsh_store::reader::LogFormat::Plain
        };
        if state.change(&stamp, format) != Change::Unchanged {
            return Ok(None);
        }
        // Does the surface start with a compaction checkpoint? (Remembered per log state:
        // reading the first piece costs more than the rest of a warm search.)
        let key = (
            self.store_root().to_owned(),
            rel.clone(),
            state.len,
            state.mtime_ns,
        );
        let remembered = CHECKPOINT_FIRST
            .lock()
            .ok()
            .and_then(|m| m.get(&key).copied());
        let starts_compacted = if let Some(known) = remembered {
            known
        } else {
            let first = one(with_path(u64_term(fields.piece, 0)))?;
            let compacted = first
                .as_ref()
                .and_then(|d| session_doc::stored_messages(fields, d))
                .as_ref()
                .and_then(|m| m.first())
                .is_none_or(|m| m.checkpoint);
            if let Ok(mut known) = CHECKPOINT_FIRST.lock() {
                if known.len() >= CHECKPOINT_CACHE {
                    known.clear();
                }
                known.insert(key, compacted);
            }
            compacted
        };
        if starts_compacted {
            return Ok(None);
        }
        // The pieces where some clause matches best.
        let mut pieces: Vec<(f32, DocAddress)> = Vec::new();
        for clause in query.clauses() {
            let q = with_path(crate::query_plan::in_body(&searcher, fields, clause));
            for (score, address) in
                searcher.search(&q, &TopDocs::with_limit(MAX_PIECES).order_by_score())?
            {
                match pieces.iter_mut().find(|(_, a)| *a == address) {
                    Some(p) => p.0 += score,
                    None => pieces.push((score, address)),
                }
            }
        }
        pieces.sort_by(|a, b| b.0.total_cmp(&a.0));
        pieces.truncate(MAX_PIECES);
        // Best piece first; a piece is a stretch of the conversation, so a partner across
        // its ends is left out. Reading stops once the best exchanges all hold every word.
        let mut collector = Collector::new(query, limit);
        let every = collector.query.clauses().len();
        for (_, address) in &pieces {
            let doc: TantivyDocument = searcher.doc(*address)?;
            collector.previous = None;
            collector.waiting.clear();
            for m in session_doc::stored_messages(fields, &doc).unwrap_or_default() {
                collector.push(m.seq, m.role, m.checkpoint, &m.text);
            }
            if collector.best.len() == limit
                && collector.best.iter().all(|e| e.rank.clauses == every)
            {
                break;
            }
        }
        Ok(Some(collector.finish(true)))
    }
}

/// The index key of `log_path` under `root`: its path relative to the root with `/`.
fn key_of(root: &Path, log_path: &Path) -> Option<String> {
    let rel = log_path.strip_prefix(root).ok()?;
    let parts: Option<Vec<&str>> = rel.components().map(|c| c.as_os_str().to_str()).collect();
    Some(parts?.join("/"))
}

/// Recall from the index when it can answer exactly ([`SessionIndex::recall_indexed`]),
/// else from the log.
pub fn recall(
    index: Option<(&SessionIndex, &Path)>,
    store: &dyn SessionQuery,
    session_id: &str,
    query: &str,
    limit: usize,
) -> Result<Recalled, SearchError> {
    let mut query = RecallQuery::new(query)?;
    if let Some((index, log_path)) = index
        && let Some(found) = index.recall_indexed(log_path, &mut query, limit)?
    {
        return Ok(found);
    }
    Ok(recall_from_log(store, session_id, &mut query, limit)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// The ASCII shortcut counts exactly what the analyzer finds.
    #[test]
    fn ascii_words_are_counted_as_the_analyzer_counts_them() {
        let texts = [
            "Kafka kafka KAFKA kafkas ikafka kafka_x kafka-x 2kafka kafka2",
            "the cache, the CACHE! cached? (cache) cache",
            "redis:kafka/redis.kafka",
            "",
            "no match here",
        ];
        for query in ["kafka", "cache redis", "kafka x", "2"] {
            let mut q = RecallQuery::new(query).unwrap();
            assert!(q.single_words, "{query}");
            for text in texts {
                let fast = ascii_hits(&text.to_ascii_lowercase(), &q.parsed.clauses);
                let slow = crate::snippets::clause_hits(&mut q.analyzer, &q.parsed.clauses, text);
                assert_eq!(fast, slow, "{query:?} in {text:?}");
            }
        }
        // Phrases take the analyzer; a word that folds to ASCII is one, and a non-ASCII
        // message is always analyzed (it folds to the same term).
        assert!(!RecallQuery::new("\"kafka lag\"").unwrap().single_words);
        let mut cafe = RecallQuery::new("café").unwrap();
        assert!(cafe.single_words);
        assert!(cafe.rank(1, "Le Café est ouvert").is_some());
        assert!(cafe.rank(2, "the cafe is open").is_some());
        assert!(cafe.rank(3, "the cafeteria").is_none());
    }
}
