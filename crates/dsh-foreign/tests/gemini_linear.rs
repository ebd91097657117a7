//! Gemini CLI sessions kept as one JSON value (an older `.json` chat, a saved chat, a
//! `.jsonl` line holding a whole history) cost one parse, whatever their length: reading
//! every item again (as indexing a long session does, in batches of 256) reads each item's
//! own bytes, never the whole document again (issue 34: a 330 000-message chat took 438 s).
//!
//! The work is counted as the bytes this process reads (`rchar` of `/proc/self/io`), so this
//! file holds one test: no other test's reads are counted.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod support;

use std::fs;
use std::path::Path;

use dsh_foreign::Origin;
use dsh_store::SessionQuery;

const MESSAGES: usize = 20_000;

fn message(i: usize) -> String {
    let (kind, text) = if i.is_multiple_of(2) {
        ("user", format!("request {i} about the ledger"))
    } else {
        ("gemini", format!("reply {i}: the ledger balances"))
    };
    format!(
        r#"{{"id":"m{i}","timestamp":"2025-10-01T08:00:00.000Z","type":"{kind}","content":[{{"text":"{text}"}}]}}"#
    )
}

fn history() -> String {
    (0..MESSAGES).map(message).collect::<Vec<_>>().join(",")
}

/// Bytes this process has read so far.
fn bytes_read() -> u64 {
    let io = fs::read_to_string("/proc/self/io").expect("/proc/self/io (Linux)");
    io.lines()
        .find_map(|l| l.strip_prefix("rchar: "))
        .and_then(|n| n.trim().parse().ok())
        .expect("rchar")
}

/// Scan `id` and read every item again in batches of 256 (after listing the home); the
/// bytes read for that, and the items.
fn read_all(home: &Path, id: &str) -> (u64, usize) {
    let src = support::source(Origin::Gemini, home);
    let list = src.list_sessions().unwrap();
    assert!(list.iter().any(|h| h.id == id), "{id} listed");
    let before = bytes_read();
    let mut scan = src.scan_surface(id, &mut support::Seen::default()).unwrap();
    let seqs = scan.surface_seqs();
    let mut items = 0;
    for batch in seqs.chunks(256) {
        let events = scan.reread(batch).unwrap();
        assert_eq!(
            events.iter().map(|e| e.seq).collect::<Vec<_>>(),
            batch,
            "{id}"
        );
        items += events.len();
    }
    (bytes_read() - before, items)
}

#[test]
fn long_gemini_documents_are_parsed_once_and_items_read_again_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join(".gemini");
    let chats = home.join("tmp/shop/chats");
    fs::create_dir_all(&chats).unwrap();
    let doc = format!(
        r#"{{"sessionId":"doc-1","projectHash":"h","startTime":"2025-10-01T08:00:00.000Z","messages":[{}]}}"#,
        history()
    );
    fs::write(chats.join("session-2025-10-01T08-00-doc00001.json"), &doc).unwrap();
    let lines = format!(
        "{}\n{}\n{}\n",
        r#"{"sessionId":"lines-1","projectHash":"h","startTime":"2025-10-02T08:00:00.000Z"}"#,
        message(0).replace("\"m0\"", "\"first\""),
        format_args!(r#"{{"$set":{{"messages":[{}]}}}}"#, history())
    );
    fs::write(
        chats.join("session-2025-10-02T08-00-lines001.jsonl"),
        &lines,
    )
    .unwrap();
    let saved = format!(r#"{{"history":[{}]}}"#, {
        let turns: Vec<String> = (0..MESSAGES)
            .map(|i| {
                let role = if i % 2 == 0 { "user" } else { "model" };
                format!(r#"{{"role":"{role}","parts":[{{"text":"turn {i} of the plan"}}]}}"#)
            })
            .collect();
        turns.join(",")
    });
    fs::write(home.join("tmp/shop/checkpoint-plan.json"), &saved).unwrap();

    for (id, size) in [
        ("gemini:doc-1", doc.len()),
        ("gemini:lines-1", lines.len()),
        ("gemini:shop/checkpoint-plan", saved.len()),
    ] {
        let (read, items) = read_all(&home, id);
        assert_eq!(items, MESSAGES, "{id}: every message is an item");
        // The scan reads the document once; every item read again reads its own bytes:
        // about twice the file. Reading the whole document again per batch would be 80
        // times.
        let bound = 3 * size as u64 + (1 << 20);
        assert!(
            read <= bound,
            "{id}: {read} bytes read for a {size}-byte session (bound {bound})"
        );
    }
}
