//! Issue 24 items 7 and 8: what a hit's snippets say (a compaction summary is labelled as
//! one, its framing tags are not shown, a message is numbered by its place in the
//! conversation) and how hits rank (two words said as a phrase outrank the same words said
//! apart, even in newer sessions).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a failure should stop the test

mod support;

use std::path::Path;

use dsh_search::{Cancel, IndexOptions, SessionIndex};
use pretty_assertions::assert_eq;
use support::Log;

fn index(root: &Path, cache: &Path) -> SessionIndex {
    let index = SessionIndex::open(
        root,
        &IndexOptions {
            index_dir: Some(cache.join("search")),
        },
    )
    .unwrap();
    index.refresh(&Cancel::new(), &mut |_| {}).unwrap();
    index
}

const DAY_MS: i64 = 86_400_000;

/// Move every event of `log` to `at` (Unix ms) plus its seq: when the session was active.
fn active_at(log: &Log, at: i64) {
    let text = std::fs::read_to_string(&log.path).unwrap();
    let lines: Vec<String> = text
        .lines()
        .map(|line| {
            let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
            if let Some(seq) = v.get("seq").and_then(serde_json::Value::as_i64) {
                v["time"] = (at + seq).into();
            }
            v.to_string()
        })
        .collect();
    std::fs::write(&log.path, lines.join("\n") + "\n").unwrap();
}

fn now_ms() -> i64 {
    i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

/// Item 7: a compaction summary's snippet is labelled `summary`, shows the summary without
/// its `<compacted-summary>` framing, and snippets are numbered by their place in the
/// conversation (not by the event's seq).
#[test]
fn item7_snippets_label_summaries_and_number_messages_in_the_conversation() {
    let store = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let mut log = Log::create(store.path(), "s1", "/src/app", 1);
    let first = log.user("old question");
    for i in 0..40 {
        log.assistant(&format!("reply {i}"), "thinking");
        log.tool_result("tool output");
    }
    let last = log.user("another old question");
    log.compact(
        first,
        last,
        "Continue from this checkpoint.\n\n<compacted-summary>\nThe limiter keeps one token bucket per key.\n</compacted-summary>",
    );
    log.user("make the bucketsize configurable");
    log.assistant("done: bucketsize is in the config", "");
    log.user("and document the zebra option");
    let index = index(store.path(), cache.path());

    let hit = &index.search("token bucket ", 5).unwrap()[0];
    let s = &hit.snippets[0];
    assert_eq!(s.role.as_str(), "summary", "not labelled user");
    assert_eq!(
        s.number, 1,
        "the summary is the conversation's first message"
    );
    assert!(
        !s.text.contains("compacted-summary") && !s.text.contains("Continue from"),
        "{:?}",
        s.text
    );
    assert!(s.text.contains("one token bucket per key"), "{:?}", s.text);

    let hit = &index.search("zebra ", 5).unwrap()[0];
    let s = &hit.snippets[0];
    assert_eq!(s.role.as_str(), "user");
    assert_eq!(s.number, 4, "fourth message of the conversation");
    assert!(s.seq > 80, "its event seq is far larger: {}", s.seq);
}

/// Item 8: an unquoted two-word query ranks the session that says the phrase above newer
/// sessions that say the two words apart.
#[test]
fn item8_a_phrase_said_outranks_the_words_said_apart_in_newer_sessions() {
    let store = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let now = now_ms();
    let mut phrase = Log::create(store.path(), "phrase", "/src/api", 1);
    phrase.user("The rate limiter drops requests under load; can we find out why?");
    phrase.assistant(
        "The limiter refills its bucket too slowly for bursts of requests.",
        "",
    );
    active_at(&phrase, now - 400 * DAY_MS);
    for (id, days) in [("apart-1", 1), ("apart-2", 2), ("apart-3", 3)] {
        let mut log = Log::create(store.path(), id, "/src/api", 1);
        log.user("What rate do we bill at? Also the limiter config file is missing.");
        log.assistant(
            "Billing uses the monthly rate; the limiter config lives in ops/.",
            "",
        );
        active_at(&log, now - days * DAY_MS);
    }
    let index = index(store.path(), cache.path());
    for query in ["rate limiter ", "rate limiter", "limiter rate "] {
        let hits = index.search(query, 10).unwrap();
        let order: Vec<&str> = hits.iter().map(|h| h.session_id.as_str()).collect();
        assert_eq!(order.len(), 4, "{query:?}: {order:?}");
        if query.starts_with("rate") {
            assert_eq!(order[0], "phrase", "{query:?}: {order:?}");
        } else {
            // The words in the other order are no phrase: recency decides.
            assert_eq!(order[3], "phrase", "{query:?}: {order:?}");
        }
    }
    // The snippet shows the phrase.
    let hit = &index.search("rate limiter ", 1).unwrap()[0];
    assert!(
        hit.snippets[0].text.contains("rate limiter"),
        "{:?}",
        hit.snippets
    );
}

/// Item 8 while typing: the last word of a query is a prefix, and proximity still ranks by
/// how closely the words are said — a phrase first, then the words a word apart, then the
/// words far apart (messages of the same length, so only proximity differs).
#[test]
fn item8_proximity_ranks_while_the_last_word_is_typed() {
    let store = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let said = [
        ("phrase", "we chose kafka redis for the event bus today"),
        ("near", "we chose kafka over redis for the event bus"),
        ("apart", "we chose kafka for the event bus over redis"),
    ];
    for (id, text) in said {
        Log::create(store.path(), id, "/src/app", 1).user(text);
    }
    let index = index(store.path(), cache.path());
    for query in ["kafka redis", "kafka redi", "kafka redis "] {
        let hits = index.search(query, 10).unwrap();
        let order: Vec<&str> = hits.iter().map(|h| h.session_id.as_str()).collect();
        assert_eq!(order, ["phrase", "near", "apart"], "{query:?}");
        assert!(
            hits[0].score > hits[1].score && hits[1].score > hits[2].score,
            "{query:?}: {:?}",
            hits.iter().map(|h| h.score).collect::<Vec<_>>()
        );
    }
}
