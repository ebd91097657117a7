//! Excerpt references and secret redaction through `prepare`, over logs on disk: windows at
//! the start, end and middle of a session and across a compaction, the reference entry's
//! extra keys, and redaction on and off.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a failure should stop the test
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::needless_pass_by_value,
    clippy::type_complexity
)] // test code: small known values, helpers that take values for brevity, case tables

use std::fs;
use std::path::Path;
use std::sync::Arc;

use dsh_reference::excerpt_read::read_excerpt;
use dsh_reference::{
    AgentRef, ErrorCode, ExcerptRange, ReferenceConfig, SessionReferences, decode_snapshot,
    format_excerpt_mention, format_mention, parse_text,
};
use dsh_store::{ContentBlock, SessionHeader, SessionQuery, SessionStore};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

fn message(seq: u64, role: &str, source: Value, text: &str) -> Value {
    json!({"id": format!("m{seq}"), "role": role, "content": [{"type": "text", "text": text}], "source": source})
}

/// A log of `n` conversation messages `u0, a1, u2, …` (seqs 0..n).
fn conversation(n: u64) -> Vec<Value> {
    let mut lines = Vec::new();
    for seq in 0..n {
        let line = if seq % 2 == 0 {
            json!({"type": "user/message", "seq": seq, "time": seq, "surfaceOp": "append",
                   "data": message(seq, "user", json!({"kind": "user"}), &format!("u{seq}"))})
        } else {
            json!({"type": "assistant/message", "seq": seq, "time": seq, "surfaceOp": "append",
                   "data": {"turn": 1, "step": 0, "message": message(seq, "assistant", json!({"kind": "model", "provider": "p", "model": "m"}), &format!("a{seq}"))}})
        };
        lines.push(line);
    }
    lines
}

fn write_log(root: &Path, id: &str, lines: &[Value]) {
    let dir = dsh_store::paths::session_dir(root, Some("/src"), id).unwrap();
    fs::create_dir_all(&dir).unwrap();
    let mut text = serde_json::to_string(&SessionHeader::new(id, 1, Some("/src".into()))).unwrap();
    text.push('\n');
    for l in lines {
        text.push_str(&l.to_string());
        text.push('\n');
    }
    fs::write(dir.join("session.jsonl"), text).unwrap();
}

fn range(id: &str, seq: u64, before: u32, after: u32) -> ExcerptRange {
    ExcerptRange {
        session_id: id.into(),
        seq,
        before,
        after,
    }
}

/// The texts of an excerpt window, and its `(first, last, of)`.
fn window(store: &SessionStore, r: &ExcerptRange) -> (Vec<String>, (usize, usize, usize)) {
    let got = read_excerpt(store, r, "L".into(), 65_536, true).unwrap();
    let w = got.excerpt.unwrap();
    let texts = got.data.conversation.into_iter().map(|t| t.text).collect();
    (texts, (w.first, w.last, w.of))
}

#[test]
fn windows_at_the_start_end_and_middle() {
    let dir = tempfile::tempdir().unwrap();
    write_log(dir.path(), "s", &conversation(10));
    let store = SessionStore::new(dir.path());
    let cases: [(u64, u32, u32, &[&str], (usize, usize, usize)); 5] = [
        (0, 2, 2, &["u0", "a1", "u2"], (1, 3, 10)),
        (9, 2, 2, &["a7", "u8", "a9"], (8, 10, 10)),
        (5, 2, 2, &["a3", "u4", "a5", "u6", "a7"], (4, 8, 10)),
        (5, 0, 0, &["a5"], (6, 6, 10)),
        (4, 50, 1, &["u0", "a1", "u2", "a3", "u4", "a5"], (1, 6, 10)),
    ];
    for (seq, before, after, want, pos) in cases {
        let (texts, got_pos) = window(&store, &range("s", seq, before, after));
        assert_eq!(texts, want, "seq {seq}");
        assert_eq!(got_pos, pos, "seq {seq}");
    }
}

#[test]
fn a_window_across_a_compaction_follows_the_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let mut lines = conversation(8);
    // seq 8 replaces u0..a5 with a checkpoint; then two more messages.
    lines.push(json!({"type": "user/message", "seq": 8, "time": 8,
        "surfaceOp": {"op": "replace", "start": 0, "end": 5}, "sourceEventSeqs": [0, 1, 2, 3, 4, 5],
        "data": message(8, "user", json!({"kind": "plugin", "plugin": "compact"}), "summary of u0-a5")}));
    lines.push(
        json!({"type": "user/message", "seq": 9, "time": 9, "surfaceOp": "append",
        "data": message(9, "user", json!({"kind": "user"}), "u9")}),
    );
    write_log(dir.path(), "c", &lines);
    let store = SessionStore::new(dir.path());
    // The shadowed message is stood for by the checkpoint.
    let got = read_excerpt(&store, &range("c", 3, 1, 1), "L".into(), 65_536, true).unwrap();
    let w = got.excerpt.unwrap();
    assert_eq!((w.match_seq, w.first_seq, w.last_seq), (8, 8, 6));
    assert_eq!((w.first, w.last, w.of), (1, 2, 4));
    assert!(got.stats.compacted);
    let texts: Vec<&str> = got
        .data
        .conversation
        .iter()
        .map(|t| t.text.as_str())
        .collect();
    assert_eq!(texts, ["summary of u0-a5", "u6"]);
    // A window around a message after the compaction reaches back into the checkpoint.
    let (texts, pos) = window(&store, &range("c", 7, 2, 2));
    assert_eq!(texts, ["summary of u0-a5", "u6", "a7", "u9"]);
    assert_eq!(pos, (1, 4, 4));
}

#[test]
fn a_seq_that_is_not_a_message_is_an_invalid_reference() {
    let dir = tempfile::tempdir().unwrap();
    let mut lines = conversation(4);
    lines.push(json!({"type": "tool/result", "seq": 4, "time": 4, "surfaceOp": "append",
        "data": {"turn": 1, "step": 0, "message": message(4, "user", json!({"kind": "tool", "callId": "c"}), "out")}}));
    write_log(dir.path(), "t", &lines);
    let store = SessionStore::new(dir.path());
    for seq in [4, 99] {
        let err =
            read_excerpt(&store, &range("t", seq, 1, 1), "L".into(), 65_536, true).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidReference, "seq {seq}");
        assert!(err.message.contains("not a message"), "{}", err.message);
    }
    let err = read_excerpt(&store, &range("nope", 0, 1, 1), "L".into(), 100, true).unwrap_err();
    assert_eq!(err.code, ErrorCode::ReadFailed);
}

fn service(root: &Path, config: ReferenceConfig) -> SessionReferences {
    let store: Arc<dyn SessionQuery> = Arc::new(SessionStore::new(root));
    SessionReferences::new(store, config)
}

async fn prepare(refs: &SessionReferences, text: &str) -> dsh_reference::Prepared {
    let parsed = parse_text(text).unwrap();
    let agent = AgentRef {
        session_id: "target".into(),
        cwd: None,
    };
    refs.prepare_mentions(
        &agent,
        &[ContentBlock::text(parsed.text)],
        &parsed.mentions,
        &[],
        &CancellationToken::new(),
    )
    .await
    .unwrap()
}

#[tokio::test]
async fn prepare_mixes_sessions_and_excerpts_with_the_range_recorded() {
    let dir = tempfile::tempdir().unwrap();
    write_log(dir.path(), "s", &conversation(10));
    let refs = service(dir.path(), ReferenceConfig::default());
    let text = format!(
        "{} and {} and again {}",
        format_mention("s", Some("Whole")),
        format_excerpt_mention(&range("s", 5, 1, 1), "Part"),
        format_excerpt_mention(&range("s", 5, 1, 1), "Dup"),
    );
    let prepared = prepare(&refs, &text).await;
    assert_eq!(
        prepared.content[0].as_text(),
        Some("@Whole and @Part and again @Dup")
    );
    let context = prepared.context.unwrap();
    assert!(prepared.file_context.is_none());
    let source = context.source.clone().unwrap();
    let entries = source.0["references"].as_array().unwrap().clone();
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[0].get("excerpt"), None);
    assert_eq!(entries[0]["originalMessages"], 10);
    assert_eq!(
        entries[1]["excerpt"],
        json!({"seq": 5, "before": 1, "after": 1, "matchSeq": 5, "firstSeq": 4, "lastSeq": 6,
               "first": 5, "last": 7, "of": 10})
    );
    assert_eq!(entries[1]["originalMessages"], 3);
    assert_eq!(entries[1]["inputIndex"], 1);
    // The same source-object shape as a whole session.
    let sources = decode_snapshot(&context.joined_text()).unwrap();
    assert_eq!(sources[1].label, "Part");
    let texts: Vec<&str> = sources[1]
        .conversation
        .iter()
        .map(|t| t.text.as_str())
        .collect();
    assert_eq!(texts, ["u4", "a5", "u6"]);
    // No extra keys in an entry without excerpt or secrets: dsh's shape exactly.
    let keys: Vec<&String> = entries[0].as_object().unwrap().keys().collect();
    assert_eq!(keys.len(), 10);
}

#[tokio::test]
async fn secrets_are_redacted_unless_turned_off() {
    let dir = tempfile::tempdir().unwrap();
    let key = format!("sk-ant-api03-{}", "Zq8x".repeat(10));
    let mut lines = conversation(2);
    lines.push(json!({"type": "user/message", "seq": 2, "time": 2, "surfaceOp": "append",
        "data": message(2, "user", json!({"kind": "user"}), &format!("my key is {key}\nDB_PASSWORD=hunter22"))}));
    write_log(dir.path(), "k", &lines);
    let mention = format_mention("k", Some("K"));

    // A title holding a secret is redacted as the label of the snapshot and of its entry.
    let titled = prepare(
        &service(dir.path(), ReferenceConfig::default()),
        &format_mention("k", Some(&format!("use {key}"))),
    )
    .await;
    let context = titled.context.unwrap();
    assert!(!context.joined_text().contains(&key));
    let entry = &context.source.unwrap().0["references"][0];
    assert_eq!(entry["label"], "use [redacted: anthropic-api-key]");
    assert_eq!(entry["redactedSecrets"], 3);

    let on = prepare(&service(dir.path(), ReferenceConfig::default()), &mention).await;
    let text = on.context.as_ref().unwrap().joined_text();
    assert!(!text.contains(&key) && !text.contains("hunter22"));
    assert!(
        text.contains("my key is [redacted: anthropic-api-key]\\nDB_PASSWORD=[redacted: password]")
    );
    let entry = &on.context.unwrap().source.unwrap().0["references"][0];
    assert_eq!(entry["redactedSecrets"], 2);

    let off = prepare(
        &service(dir.path(), ReferenceConfig::default().with_redaction(false)),
        &mention,
    )
    .await;
    let text = off.context.as_ref().unwrap().joined_text();
    assert!(text.contains(&key) && text.contains("hunter22"));
    assert_eq!(
        off.context.unwrap().source.unwrap().0["references"][0].get("redactedSecrets"),
        None
    );

    // The preview counts them too.
    let refs = service(dir.path(), ReferenceConfig::default());
    let estimate = refs
        .estimate("k", "K", &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(estimate.redacted_secrets, 2);
    assert!(estimate.recent.iter().all(|t| !t.text.contains(&key)));
}

#[tokio::test]
async fn redaction_that_grows_a_message_still_fits_by_cutting() {
    let dir = tempfile::tempdir().unwrap();
    let mut lines = conversation(1);
    let body = "password=abcd ".repeat(40);
    lines.push(
        json!({"type": "user/message", "seq": 1, "time": 1, "surfaceOp": "append",
        "data": message(1, "user", json!({"kind": "user"}), &body)}),
    );
    write_log(dir.path(), "g", &lines);
    let budget = 700;
    let config = ReferenceConfig::new(3, 50, budget).unwrap();
    let prepared = prepare(&service(dir.path(), config), &format_mention("g", None)).await;
    let context = prepared.context.unwrap();
    let sources = decode_snapshot(&context.joined_text()).unwrap();
    assert!(sources[0].serialized_bytes <= budget as usize);
    let entry = &context.source.unwrap().0["references"][0];
    assert_eq!(entry["truncated"], true);
    assert_eq!(entry["redactedSecrets"], 40);
    assert!(!context_contains(&sources[0].conversation, "abcd"));
}

fn context_contains(turns: &[dsh_reference::SnapshotTurn], needle: &str) -> bool {
    turns.iter().any(|t| t.text.contains(needle))
}

#[tokio::test]
async fn staleness_counts_messages_appended_after_the_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    write_log(dir.path(), "s", &conversation(6));
    let refs = service(dir.path(), ReferenceConfig::default());
    let prepared = prepare(&refs, &format_mention("s", None)).await;
    let entry = &prepared.context.unwrap().source.unwrap().0["references"][0];
    let captured = entry["capturedThroughSeq"].as_u64();
    assert_eq!(captured, Some(5));
    let cancel = CancellationToken::new();
    assert_eq!(
        refs.newer_messages("s", captured, &cancel).await.unwrap(),
        0
    );
    // Three more messages (one a tool result, which a snapshot leaves out) are appended.
    let mut lines = conversation(8);
    lines.push(json!({"type": "tool/result", "seq": 8, "time": 8, "surfaceOp": "append",
        "data": {"turn": 1, "step": 0, "message": message(8, "user", json!({"kind": "tool", "callId": "c"}), "out")}}));
    write_log(dir.path(), "s", &lines);
    assert_eq!(
        refs.newer_messages("s", captured, &cancel).await.unwrap(),
        2
    );
    assert_eq!(refs.newer_messages("s", None, &cancel).await.unwrap(), 8);
    // A compaction that replaces old messages does not count as new ones beyond its
    // checkpoint.
    lines.push(json!({"type": "user/message", "seq": 9, "time": 9,
        "surfaceOp": {"op": "replace", "start": 0, "end": 3}, "sourceEventSeqs": [0, 1, 2, 3],
        "data": message(9, "user", json!({"kind": "plugin", "plugin": "compact"}), "sum")}));
    write_log(dir.path(), "s", &lines);
    assert_eq!(
        refs.newer_messages("s", captured, &cancel).await.unwrap(),
        3
    );
    let err = refs
        .newer_messages("gone", None, &cancel)
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::ReadFailed);
}
