//! The popup's size estimate agrees with what `prepare` builds (kept/total messages, bytes,
//! truncated) and is cached until the session's log changes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a failure should stop the test

use std::sync::Arc;

use dsh_reference::prompt::serialized_sources;
use dsh_reference::{AgentRef, Reference, ReferenceConfig, SessionReferences};
use dsh_store::{
    ContentBlock, EventData, Message, NewEvent, Role, SessionHeader, SessionStore, Source,
};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

fn user(text: &str) -> NewEvent {
    NewEvent::appended(EventData::UserMessage(Message::user_text(text)))
}

fn assistant(text: &str) -> NewEvent {
    NewEvent::appended(EventData::AssistantMessage {
        turn: 1,
        step: 0,
        message: Message::new(
            Role::Assistant,
            vec![ContentBlock::text(text)],
            Source::model("offline", "m"),
        ),
        usage: None,
        extra: Map::new(),
    })
}

fn conversation(n: usize) -> Vec<NewEvent> {
    (0..n)
        .map(|i| {
            let text = format!(
                "message {i}: {}",
                "words <and> \"quotes\" ".repeat(i % 7 + 1)
            );
            if i % 2 == 0 {
                user(&text)
            } else {
                assistant(&text)
            }
        })
        .collect()
}

fn service(store: &SessionStore, budget: i64) -> SessionReferences {
    SessionReferences::new(
        Arc::new(store.clone()),
        ReferenceConfig::new(3, 50, budget).unwrap(),
    )
}

/// `(kept, total, bytes, truncated)` of the one source `prepare` builds for `id` as `label`.
async fn prepared(refs: &SessionReferences, id: &str, label: &str) -> (u64, u64, usize, bool) {
    let agent = AgentRef {
        session_id: "agent".into(),
        cwd: None,
    };
    let reference = Reference {
        session_id: id.into(),
        label: Some(label.into()),
    };
    let p = refs
        .prepare(&agent, &[], &[reference], &CancellationToken::new())
        .await
        .unwrap();
    let context = p.context.unwrap();
    let text = match &context.content[0] {
        ContentBlock::Text { text, .. } => text.clone(),
        other => panic!("{other:?}"),
    };
    // One source: the array is `[` + the object + `]`.
    let bytes = serialized_sources(&text).unwrap().len() - 2;
    let source = serde_json::to_value(&context.source).unwrap();
    let entry: &Value = &source["references"][0];
    (
        entry["retainedMessages"].as_u64().unwrap(),
        entry["originalMessages"].as_u64().unwrap(),
        bytes,
        entry["truncated"].as_bool().unwrap(),
    )
}

#[tokio::test]
async fn estimate_matches_prepare_truncated_or_not() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path());
    let header = SessionHeader::new("big", 1, Some("/src".into()));
    let mut w = store.open_writer("big", Some(header)).unwrap();
    w.append(dsh_store::layout::in_turns(1, conversation(60)))
        .unwrap();
    for (budget, truncated) in [(65_536, false), (2_000, true), (700, true)] {
        let refs = service(&store, budget);
        let estimate = refs
            .estimate("big", "Big one", &CancellationToken::new())
            .await
            .unwrap();
        let (kept, total, bytes, was_truncated) = prepared(&refs, "big", "Big one").await;
        assert_eq!(estimate.kept_messages as u64, kept, "budget {budget}");
        assert_eq!(estimate.total_messages as u64, total);
        assert_eq!(estimate.total_messages, 60);
        assert_eq!(estimate.bytes, bytes);
        assert!(estimate.bytes <= estimate.budget);
        assert_eq!(estimate.truncated, was_truncated);
        assert_eq!(estimate.truncated, truncated, "budget {budget}");
        assert!(!estimate.recent.is_empty());
        assert!(estimate.recent.len() <= dsh_reference::estimate::PREVIEW_TURNS);
        assert!(
            estimate
                .recent
                .last()
                .unwrap()
                .text
                .starts_with("message 59")
        );
    }
}

#[tokio::test]
async fn estimate_is_cached_until_the_log_changes() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path());
    let header = SessionHeader::new("s", 1, None);
    let mut w = store.open_writer("s", Some(header)).unwrap();
    w.append(dsh_store::layout::in_turns(1, conversation(4)))
        .unwrap();
    let refs = service(&store, 65_536);
    let cancel = CancellationToken::new();
    let first = refs.estimate("s", "S", &cancel).await.unwrap();
    let again = refs.estimate("s", "S", &cancel).await.unwrap();
    assert!(Arc::ptr_eq(&first, &again), "unchanged log: cached");
    let other_label = refs.estimate("s", "Another label", &cancel).await.unwrap();
    assert!(
        !Arc::ptr_eq(&first, &other_label),
        "the label is part of the size"
    );
    assert_eq!(other_label.bytes, first.bytes + "Another label".len() - 1);
    w.append(vec![user("one more")]).unwrap();
    let grown = refs.estimate("s", "S", &cancel).await.unwrap();
    assert_eq!(grown.total_messages, 5);
    assert_eq!(grown.recent.last().unwrap().text, "one more");
}

#[tokio::test]
async fn missing_session_and_cancel_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path());
    let refs = service(&store, 65_536);
    let err = refs
        .estimate("nope", "x", &CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(err.code, dsh_reference::ErrorCode::ReadFailed);
    let cancel = CancellationToken::new();
    cancel.cancel();
    let err = refs.estimate("nope", "x", &cancel).await.unwrap_err();
    assert_eq!(err.code, dsh_reference::ErrorCode::Cancelled);
}
