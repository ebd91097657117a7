//! Recall within one session (issue 37 item 2): every user and assistant message ever
//! appended is found — the first of thousands, and one a compaction replaced — never tool
//! results, reasoning or summaries; the index answers when it holds everything, the log
//! otherwise, and both give the same exchanges.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a failure should stop the test

mod support;

use std::path::Path;

use dsh_search::recall::{RecallQuery, Recalled, recall, recall_from_log};
use dsh_search::{Cancel, IndexOptions, SessionIndex};
use dsh_store::projection::TurnRole;
use dsh_store::{SessionQuery, SessionStore};
use pretty_assertions::assert_eq;
use support::Log;

/// The store's index in `cache`, built, in 4 KiB pieces (a long session is many).
fn index(root: &Path, cache: &Path) -> SessionIndex {
    let options = IndexOptions {
        index_dir: Some(cache.join("search")),
    };
    let built = SessionIndex::open(root, &options)
        .unwrap()
        .with_piece_bytes(4096);
    built.refresh(&Cancel::new(), &mut |_| {}).unwrap();
    built
}

/// `(matched seq, [(seq, role)])` per exchange, best first.
fn shape(r: &Recalled) -> Vec<(u64, Vec<(u64, &'static str)>)> {
    r.exchanges
        .iter()
        .map(|e| {
            (
                e.matched_seq().unwrap(),
                e.messages
                    .iter()
                    .map(|m| {
                        let role = match m.role {
                            TurnRole::User => "user",
                            TurnRole::Assistant => "assistant",
                        };
                        (m.seq, role)
                    })
                    .collect(),
            )
        })
        .collect()
}

fn log_path(store: &SessionStore, id: &str) -> std::path::PathBuf {
    store.locate(id).unwrap().unwrap().path
}

#[test]
fn the_first_message_of_a_long_session_is_found_by_index_and_log_alike() {
    let root = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let mut log = Log::create(root.path(), "long", "/w", 1);
    let first = log.user("we chose the zeppelin protocol for the uplink");
    let reply = log.assistant("zeppelin it is", "thinking about zeppelin quietly");
    for i in 0..2_000 {
        log.user(&format!("question {i} about the cache"));
        log.assistant(&format!("answer {i} about the cache"), "");
        log.tool_result("zeppelin in a tool result is never found");
    }
    let store = SessionStore::new(root.path());
    let idx = index(root.path(), cache.path());
    let path = log_path(&store, "long");

    let from_index = idx
        .recall_indexed(&path, &mut RecallQuery::new("zeppelin").unwrap(), 3)
        .unwrap()
        .expect("the index holds every message");
    assert!(from_index.from_index);
    let from_log = recall_from_log(
        &store,
        "long",
        &mut RecallQuery::new("zeppelin").unwrap(),
        3,
    )
    .unwrap();
    assert!(!from_log.from_index);
    // Both messages match: one exchange, the question with its reply, both marked (it was
    // twice the same two messages).
    let want = vec![(first, vec![(first, "user"), (reply, "assistant")])];
    assert_eq!(shape(&from_index), want);
    assert_eq!(shape(&from_log), want);
    for found in [&from_index, &from_log] {
        assert!(found.exchanges[0].messages.iter().all(|m| m.matched));
    }
    assert_eq!((from_index.matched, from_log.matched), (2, 2));
    // Reasoning and tool results were never text to find.
    let none =
        recall_from_log(&store, "long", &mut RecallQuery::new("quietly").unwrap(), 3).unwrap();
    assert_eq!(none.matched, 0);
}

#[test]
fn text_a_compaction_replaced_is_found_in_the_log() {
    let root = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let mut log = Log::create(root.path(), "c", "/w", 1);
    let old = log.user("the quokka budget is 40 units");
    log.assistant("noted", "");
    let last = log.user("more");
    log.compact(
        old,
        last,
        "<compacted-summary>\nA budget was set.\n</compacted-summary>",
    );
    log.user("what now");
    let store = SessionStore::new(root.path());
    let idx = index(root.path(), cache.path());
    let path = log_path(&store, "c");
    // The index holds the surface only: it declines.
    assert_eq!(
        idx.recall_indexed(&path, &mut RecallQuery::new("quokka").unwrap(), 3)
            .unwrap(),
        None
    );
    let found = recall(Some((&idx, &path)), &store, "c", "quokka budget", 3).unwrap();
    assert!(!found.from_index);
    assert_eq!(shape(&found)[0].0, old);
    assert!(found.exchanges[0].messages[0].text.contains("quokka"));
    // The summary is not the session's text.
    let summary = recall(Some((&idx, &path)), &store, "c", "set", 3).unwrap();
    assert_eq!(summary.matched, 0);
}

#[test]
fn ranking_counts_words_then_matches_and_a_changed_log_is_read_again() {
    let root = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let mut log = Log::create(root.path(), "r", "/w", 1);
    let one_word = log.user("kafka kafka kafka");
    let both = log.user("kafka retention is seven days");
    log.assistant("ok", "");
    let store = SessionStore::new(root.path());
    let idx = index(root.path(), cache.path());
    let path = log_path(&store, "r");
    let found = recall(Some((&idx, &path)), &store, "r", "kafka retention", 5).unwrap();
    assert!(found.from_index);
    let order: Vec<u64> = shape(&found).iter().map(|e| e.0).collect();
    assert_eq!(order, vec![both, one_word]);
    // The log grew after indexing: the index declines, the log has the new message.
    let newer = log.user("retention went to nine days");
    let found = recall(Some((&idx, &path)), &store, "r", "retention", 5).unwrap();
    assert!(!found.from_index);
    assert!(shape(&found).iter().any(|e| e.0 == newer));
    // Nothing searchable is an error, not an empty answer.
    assert!(RecallQuery::new("  \"\" ").is_err());
    assert!(store.list_sessions().is_ok());
}
