//! The tool `search_references {ref, query}` (docs/references.md: recall): the model reads
//! more of a session the turn's message references — its best-matching exchanges, from the
//! search index where it holds the session's text, from the log for the rest — redacted and
//! fenced like the snapshot, bounded per call and per turn.

use std::sync::Arc;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::{ToolBox, ToolOutcome, TurnTools};
use crate::llm::ToolSpec;
use dsh_reference::recall_result::{
    MAX_CALLS_PER_TURN, MAX_EXCHANGES, MAX_QUERY_BYTES, RECALL_INVALID_QUERY,
    RECALL_INVALID_REFERENCE, RECALL_LIMIT, RECALL_READ_FAILED, RecallExchange, RecallMessage,
    RecallView, TOOL_NAME, recall_text, tool_description, tool_parameters,
};
use dsh_search::recall::{Recalled, recall};
use dsh_search::{SearchError, SessionIndex};
use dsh_store::projection::TurnRole;
use dsh_store::{SessionQuery, SessionStore};

/// Gives the search index when one is open (it may open later, or never).
pub type IndexSource = Arc<dyn Fn() -> Option<Arc<SessionIndex>> + Send + Sync>;

/// The recall tool over every session source (`sources`), with the dsh store (`store`:
/// where the index's logs are) and, when there is one, its search index.
#[derive(Clone)]
pub struct RecallTool {
    sources: Arc<dyn SessionQuery>,
    store: SessionStore,
    index: Option<IndexSource>,
    redact: bool,
}

impl RecallTool {
    /// Over `sources` and the dsh `store`; results redacted when `redact` (the
    /// `[references] redact_secrets` setting).
    pub fn new(sources: Arc<dyn SessionQuery>, store: SessionStore, redact: bool) -> Self {
        RecallTool {
            sources,
            store,
            index: None,
            redact,
        }
    }

    /// Answer from the search index `index` gives, where it holds a session's text.
    #[must_use]
    pub fn with_index(mut self, index: IndexSource) -> Self {
        self.index = Some(index);
        self
    }

    /// One search of `session_id` (blocking): the index when it answers, else the log.
    fn search(&self, session_id: &str, query: &str) -> Result<Recalled, SearchError> {
        let index = self.index.as_ref().and_then(|f| f());
        let path = index
            .as_ref()
            .and_then(|_| self.store.locate(session_id).ok().flatten())
            .map(|loc| loc.path);
        let with_index = index.as_deref().zip(path.as_deref());
        recall(
            with_index,
            self.sources.as_ref(),
            session_id,
            query,
            MAX_EXCHANGES,
        )
    }
}

impl ToolBox for RecallTool {
    fn offered(&self, turn: &TurnTools) -> Vec<ToolSpec> {
        let n = turn.references.len();
        if n == 0 {
            return Vec::new();
        }
        vec![ToolSpec {
            name: TOOL_NAME.to_owned(),
            description: tool_description(n),
            parameters: tool_parameters(n),
        }]
    }

    fn run(
        &self,
        _name: &str,
        arguments: Map<String, Value>,
        turn: &TurnTools,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, ToolOutcome> {
        let checked = check_call(&arguments, turn);
        let tool = self.clone();
        async move {
            let (reference, target, query) = match checked {
                Ok(c) => c,
                Err(outcome) => return outcome,
            };
            let session_id = target.session_id.clone();
            let q = query.clone();
            let task = tokio::task::spawn_blocking(move || {
                if cancel.is_cancelled() {
                    return Err(SearchError::Cancelled);
                }
                tool.search(&session_id, &q)
                    .map(|found| (tool.redact, found))
            });
            match task.await {
                Ok(Ok((redact, found))) => {
                    let view = view_of(reference, &target, query, &found);
                    ToolOutcome::ok(recall_text(view, redact).text)
                }
                Ok(Err(e @ SearchError::InvalidQuery { .. })) => {
                    ToolOutcome::error(RECALL_INVALID_QUERY, &e.to_string())
                }
                Ok(Err(why)) => ToolOutcome::error(
                    RECALL_READ_FAILED,
                    &format!("reference {reference} could not be searched: {why}"),
                ),
                Err(e) => ToolOutcome::error(RECALL_READ_FAILED, &e.to_string()),
            }
        }
        .boxed()
    }
}

/// The reference's place, the reference, and the query of a call — or the error result
/// that answers it (over the turn's limit, a `ref` the message does not have, a bad query).
fn check_call(
    arguments: &Map<String, Value>,
    turn: &TurnTools,
) -> Result<(usize, super::TurnReference, String), ToolOutcome> {
    if turn.calls >= MAX_CALLS_PER_TURN {
        return Err(ToolOutcome::error(
            RECALL_LIMIT,
            &format!("{MAX_CALLS_PER_TURN} searches per turn at most; answer with what you found"),
        ));
    }
    let n = turn.references.len();
    let reference = arguments
        .get("ref")
        .and_then(Value::as_u64)
        .and_then(|r| usize::try_from(r).ok());
    let Some((reference, target)) = reference.and_then(|r| {
        r.checked_sub(1)
            .and_then(|i| turn.references.get(i))
            .map(|t| (r, t.clone()))
    }) else {
        let given = arguments.get("ref").map_or_else(
            || "nothing".to_owned(),
            |v| crate::llm::offline::excerpt(&v.to_string()),
        );
        return Err(ToolOutcome::error(
            RECALL_INVALID_REFERENCE,
            &format!("ref must be a number from 1 to {n} (the message's references); got {given}"),
        ));
    };
    let query = arguments
        .get("query")
        .and_then(Value::as_str)
        .map(str::trim)
        .unwrap_or_default();
    if query.is_empty() {
        return Err(ToolOutcome::error(
            RECALL_INVALID_QUERY,
            "query must be a non-empty string of words to look for",
        ));
    }
    if query.len() > MAX_QUERY_BYTES {
        return Err(ToolOutcome::error(
            RECALL_INVALID_QUERY,
            &format!("query is {} bytes; at most {MAX_QUERY_BYTES}", query.len()),
        ));
    }
    Ok((reference, target, query.to_owned()))
}

/// What the model reads of `found`.
fn view_of(
    reference: usize,
    target: &super::TurnReference,
    query: String,
    found: &Recalled,
) -> RecallView {
    let exchanges = found
        .exchanges
        .iter()
        .map(|e| RecallExchange {
            matched: e.matched_seq().unwrap_or_default(),
            messages: e
                .messages
                .iter()
                .map(|m| RecallMessage {
                    seq: m.seq,
                    role: match m.role {
                        TurnRole::User => "user",
                        TurnRole::Assistant => "assistant",
                    }
                    .to_owned(),
                    text: m.text.clone(),
                })
                .collect(),
        })
        .collect();
    RecallView {
        reference,
        session_id: target.session_id.clone(),
        label: target.label.clone(),
        query,
        matched: found.matched,
        omitted: 0,
        exchanges,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    /// The code a call is answered with before any search (`None`: it searches).
    fn refused(calls: usize, arguments: Value) -> Option<&'static str> {
        let turn = TurnTools {
            references: vec![
                super::super::TurnReference {
                    session_id: "a".into(),
                    label: "A".into(),
                },
                super::super::TurnReference {
                    session_id: "b".into(),
                    label: "B".into(),
                },
            ],
            calls,
        };
        let Value::Object(arguments) = arguments else {
            return Some("not an object");
        };
        match check_call(&arguments, &turn) {
            Ok((reference, target, query)) => {
                assert_eq!(
                    (target.session_id.as_str(), query.as_str()),
                    (if reference == 1 { "a" } else { "b" }, "login")
                );
                None
            }
            Err(outcome) => {
                assert!(outcome.is_error);
                outcome.code
            }
        }
    }

    #[test]
    fn calls_over_the_turn_s_limit_or_with_a_bad_ref_or_query_are_error_results() {
        let long = "x".repeat(MAX_QUERY_BYTES + 1);
        let last = MAX_CALLS_PER_TURN - 1;
        let cases = [
            (0, json!({"ref": 1, "query": "login"}), None),
            (last, json!({"ref": 2, "query": " login "}), None),
            (
                MAX_CALLS_PER_TURN,
                json!({"ref": 1, "query": "login"}),
                Some(RECALL_LIMIT),
            ),
            (
                0,
                json!({"ref": 3, "query": "login"}),
                Some(RECALL_INVALID_REFERENCE),
            ),
            (
                0,
                json!({"ref": 0, "query": "login"}),
                Some(RECALL_INVALID_REFERENCE),
            ),
            (
                0,
                json!({"ref": "1", "query": "login"}),
                Some(RECALL_INVALID_REFERENCE),
            ),
            (0, json!({"query": "login"}), Some(RECALL_INVALID_REFERENCE)),
            (
                0,
                json!({"ref": 1, "query": "  "}),
                Some(RECALL_INVALID_QUERY),
            ),
            (0, json!({"ref": 1, "query": 7}), Some(RECALL_INVALID_QUERY)),
            (
                0,
                json!({"ref": 1, "query": long}),
                Some(RECALL_INVALID_QUERY),
            ),
        ];
        for (calls, arguments, want) in cases {
            assert_eq!(
                refused(calls, arguments.clone()),
                want,
                "{calls} {arguments}"
            );
        }
    }
}
