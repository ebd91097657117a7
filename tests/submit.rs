//! The submit path (parse → prepare → dispatch) with the offline provider and a real store:
//! compaction then reference, and snapshots that never nest.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a failure should stop the test
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    clippy::needless_pass_by_value,
    clippy::similar_names
)] // test code: small known values, helpers that take values for brevity

use std::sync::Arc;
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio_util::sync::CancellationToken;

use dsh_reference::{AgentRef, ReferenceConfig, SessionReferences, format_mention};
use dsh_refs::agent::{Agent, AgentEvent, DispatchPath, SubmitError, dispatch, prepare_submission};
use dsh_refs::llm::OfflineProvider;
use dsh_store::event::now_ms;
use dsh_store::{Event, EventData, SessionHeader, SessionQuery, SessionStore};

struct World {
    _dir: tempfile::TempDir,
    store: SessionStore,
    refs: SessionReferences,
}

fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path().join("store"));
    let query: Arc<dyn SessionQuery> = Arc::new(store.clone());
    let refs = SessionReferences::new(query, ReferenceConfig::default());
    World {
        _dir: dir,
        store,
        refs,
    }
}

impl World {
    fn agent(&self, id: &str) -> (Agent, UnboundedReceiver<AgentEvent>) {
        let header = SessionHeader::new(id, now_ms(), Some("/work/p".into()));
        let writer = self.store.open_writer(id, Some(header)).unwrap();
        Agent::spawn(writer, Arc::new(OfflineProvider::new()))
    }

    /// Submit `text` to `agent` exactly as `send` and the TUI do, and wait for its turn.
    async fn say(&self, agent: &Agent, rx: &mut UnboundedReceiver<AgentEvent>, text: &str) {
        let me = AgentRef {
            session_id: agent.session_id().to_owned(),
            cwd: agent.cwd().map(str::to_owned),
        };
        let sub = prepare_submission(Some(&self.refs), &me, text, &CancellationToken::new())
            .await
            .unwrap();
        dispatch(agent, sub.message, sub.context);
        wait_for(rx, "turn/end").await;
    }
}

async fn wait_for(rx: &mut UnboundedReceiver<AgentEvent>, kind: &str) {
    loop {
        let ev = tokio::time::timeout(Duration::from_secs(20), rx.recv())
            .await
            .expect("in time")
            .expect("channel open");
        if matches!(&ev, AgentEvent::Appended(e) if e.kind() == kind) {
            return;
        }
    }
}

/// The JSON array inside `<referenced-sessions>` of a context message's text.
fn snapshot_json(text: &str) -> Value {
    let start = text.find("<referenced-sessions>\n").unwrap() + "<referenced-sessions>\n".len();
    let end = text.find("\n</referenced-sessions>").unwrap();
    serde_json::from_str(&text[start..end]).unwrap()
}

fn conversation(snapshot: &Value, index: usize) -> Vec<(String, String)> {
    snapshot[index]["conversation"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["role"].as_str().unwrap().to_owned(),
                i["text"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn me(id: &str) -> AgentRef {
    AgentRef {
        session_id: id.into(),
        cwd: Some("/work/p".into()),
    }
}

#[tokio::test]
async fn submission_without_references_is_the_readable_text() {
    let w = world();
    let sub = prepare_submission(None, &me("t"), "plain words", &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(sub.message.joined_text(), "plain words");
    assert!(sub.message.is_direct_user());
    assert_eq!(sub.context, None);
    drop(w);
}

#[tokio::test]
async fn references_without_a_service_or_with_bad_mentions_are_errors() {
    let w = world();
    let text = format!("see {}", format_mention("a", Some("A")));
    let err = prepare_submission(None, &me("t"), &text, &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(err, SubmitError::NoReferenceService));
    assert_eq!(err.code(), "SESSION_REFERENCE_UNAVAILABLE");

    let err = prepare_submission(
        Some(&w.refs),
        &me("t"),
        "@[x](dsh-session:%%%)",
        &CancellationToken::new(),
    )
    .await
    .unwrap_err();
    assert_eq!(err.code(), "SESSION_REFERENCE_INVALID_REFERENCE");

    // A missing session cannot be read.
    let err = prepare_submission(Some(&w.refs), &me("t"), &text, &CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "SESSION_REFERENCE_READ_FAILED");
}

#[tokio::test]
async fn referencing_a_compacted_session_yields_the_checkpoint_and_later_messages_only() {
    let w = world();
    let (a, mut arx) = w.agent("a");
    w.say(&a, &mut arx, "early detail one").await;
    w.say(&a, &mut arx, "early detail two").await;
    a.compact();
    wait_for(&mut arx, "compaction/end").await;
    wait_for(&mut arx, "turn/end").await;
    w.say(&a, &mut arx, "after the compaction").await;
    drop(a);

    let text = format!("what about {}?", format_mention("a", Some("Alpha")));
    let sub = prepare_submission(Some(&w.refs), &me("b"), &text, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(sub.message.joined_text(), "what about @Alpha?");
    let context = sub.context.unwrap();
    let source = &context.source.as_ref().unwrap().0;
    assert_eq!(source["references"][0]["compacted"], json!(true));
    let snap = snapshot_json(&context.joined_text());
    let conv = conversation(&snap, 0);
    assert_eq!(conv.len(), 3, "{conv:?}");
    assert_eq!(conv[0].0, "user");
    assert!(conv[0].1.starts_with("<compacted-summary>"), "{conv:?}");
    assert_eq!(conv[1], ("user".into(), "after the compaction".into()));
    assert_eq!(conv[2].0, "assistant");
    for (_, t) in &conv[1..] {
        assert!(!t.contains("early detail"), "{conv:?}");
    }
}

#[tokio::test]
async fn a_referencing_session_carries_direct_messages_but_never_a_nested_snapshot() {
    let w = world();
    let (a, mut arx) = w.agent("a");
    w.say(&a, &mut arx, "alpha decided to use postgres").await;
    drop(a);

    // t references a while idle: the one-shot hook logs the snapshot right before the prompt.
    let (t, mut trx) = w.agent("t");
    let mention = format_mention("a", Some("Alpha"));
    let me_t = me("t");
    let sub = prepare_submission(
        Some(&w.refs),
        &me_t,
        &format!("what did {mention} decide?"),
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    assert_eq!(
        dispatch(&t, sub.message, sub.context),
        DispatchPath::FollowupWithContext
    );
    wait_for(&mut trx, "turn/end").await;
    let log: Vec<Event> = t.snapshot_events();
    let users: Vec<(bool, String)> = log
        .iter()
        .filter_map(|e| match &e.data {
            EventData::UserMessage(m) => Some((m.is_direct_user(), m.joined_text())),
            _ => None,
        })
        .collect();
    assert_eq!(users.len(), 2);
    assert!(!users[0].0 && users[0].1.starts_with("## Referenced sessions"));
    assert_eq!(users[1], (true, "what did @Alpha decide?".into()));
    drop(t);

    // c references t: t's direct messages and replies, not the snapshot of a inside t.
    let sub = prepare_submission(
        Some(&w.refs),
        &me("c"),
        &format!("and {}", format_mention("t", Some("Tee"))),
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    let snap = snapshot_json(&sub.context.unwrap().joined_text());
    let conv = conversation(&snap, 0);
    assert_eq!(conv[0], ("user".into(), "what did @Alpha decide?".into()));
    assert_eq!(conv[1].0, "assistant");
    assert_eq!(conv.len(), 2, "{conv:?}");
    let all = serde_json::to_string(&snap).unwrap();
    assert!(!all.contains("postgres"), "nested snapshot leaked: {all}");
    assert!(!all.contains("referenced-sessions"), "{all}");
}
