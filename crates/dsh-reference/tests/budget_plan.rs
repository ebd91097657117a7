//! One budget for all references (issue 37 item 1), through `prepare_planned` over logs on
//! disk: two and three references in one message get one plan that fits the share of what
//! the window has left, each keeping its checkpoints and newest exchange whole; references
//! that fit keep `max_reference_bytes` and their entries stay dsh's; minimums that do not
//! fit are refused naming the plan.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a failure should stop the test

use std::fs;
use std::path::Path;
use std::sync::Arc;

use dsh_reference::budget_plan::{PlanRoom, share_bytes};
use dsh_reference::{
    AgentRef, ErrorCode, Mentioned, ReferenceConfig, SessionReferences, decode_snapshot,
    format_mention, parse_text,
};
use dsh_store::{ContentBlock, SessionHeader, SessionQuery, SessionStore};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// A session `id` of `n` exchanges, each message about `size` bytes; its newest question
/// ends in `last`.
fn session(root: &Path, id: &str, n: u64, size: usize, last: &str) {
    let dir = dsh_store::paths::session_dir(root, Some("/w"), id).unwrap();
    fs::create_dir_all(&dir).unwrap();
    let mut text = serde_json::to_string(&SessionHeader::new(id, 1, Some("/w".into()))).unwrap();
    text.push('\n');
    let filler = "lorem ipsum ".repeat(size / 12);
    for i in 0..n {
        let (q, a) = (2 * i, 2 * i + 1);
        let question = if i + 1 == n {
            format!("{filler} {last}")
        } else {
            format!("q{i} {filler}")
        };
        let lines = [
            json!({"type": "user/message", "seq": q, "time": q, "surfaceOp": "append",
                "data": {"id": format!("m{q}"), "role": "user", "source": {"kind": "user"},
                    "content": [{"type": "text", "text": question}]}}),
            json!({"type": "assistant/message", "seq": a, "time": a, "surfaceOp": "append",
                "data": {"turn": 1, "step": 0, "message": {"id": format!("m{a}"), "role": "assistant",
                    "source": {"kind": "model", "provider": "p", "model": "m"},
                    "content": [{"type": "text", "text": format!("a{i} {filler}")}]}}}),
        ];
        for l in lines {
            text.push_str(&l.to_string());
            text.push('\n');
        }
    }
    fs::write(dir.join("session.jsonl"), text).unwrap();
}

struct World {
    _dir: tempfile::TempDir,
    refs: SessionReferences,
}

/// Sessions `a`, `b`, `c` of 60 exchanges of about 1 KiB messages (about 120 KiB each).
fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    for id in ["a", "b", "c"] {
        session(
            dir.path(),
            id,
            60,
            1024,
            &format!("newest question of {id}"),
        );
    }
    let store: Arc<dyn SessionQuery> = Arc::new(SessionStore::new(dir.path()));
    let config = ReferenceConfig::default().with_redaction(false);
    World {
        _dir: dir,
        refs: SessionReferences::new(store, config),
    }
}

fn mentions(ids: &[&str]) -> Vec<Mentioned> {
    let text: Vec<String> = ids.iter().map(|id| format_mention(id, None)).collect();
    parse_text(&text.join(" "))
        .unwrap()
        .references
        .into_iter()
        .map(Mentioned::Session)
        .collect()
}

fn room(left: u64) -> PlanRoom {
    PlanRoom {
        input_tokens: left + 1000,
        window_tokens: 900,
        draft_tokens: 100,
    }
}

fn me() -> AgentRef {
    AgentRef {
        session_id: "me".into(),
        cwd: None,
    }
}

async fn prepare(
    w: &World,
    ids: &[&str],
    room: Option<PlanRoom>,
) -> Result<dsh_reference::Prepared, dsh_reference::ReferenceError> {
    w.refs
        .prepare_planned(
            &me(),
            &[ContentBlock::text("what now?")],
            &mentions(ids),
            &[],
            room,
            &CancellationToken::new(),
        )
        .await
}

#[tokio::test]
async fn two_and_three_references_get_one_plan_that_fits_the_window() {
    let w = world();
    for ids in [&["a", "b"][..], &["a", "b", "c"][..]] {
        // 40 000 tokens left: a share of 60 000 bytes for sources of about 64 KiB each.
        let left = 40_000;
        let prepared = prepare(&w, ids, Some(room(left))).await.unwrap();
        let plan = prepared.plan.as_ref().unwrap();
        assert!(plan.lowered());
        let share = share_bytes(left, 0.5, ids.len());
        assert_eq!(plan.share_bytes, share);
        let context = prepared.context.unwrap();
        let sources = decode_snapshot(&context.joined_text()).unwrap();
        let total: usize = sources.iter().map(|s| s.serialized_bytes).sum();
        assert!(total <= share, "{total} > {share}");
        // The whole context message fits share of the tokens left (3 bytes a token).
        assert!(context.joined_text().len() <= usize::try_from(left / 2 * 3).unwrap());
        let entries = context.source.as_ref().unwrap().0["references"]
            .as_array()
            .unwrap()
            .clone();
        for ((source, entry), line) in sources.iter().zip(&entries).zip(&plan.sources) {
            // The newest exchange whole, the budget recorded after dsh's keys.
            let newest = &source.conversation[source.conversation.len() - 2];
            assert!(
                newest
                    .text
                    .ends_with(&format!("newest question of {}", source.session_id))
            );
            assert!(!newest.text.contains("omitted"), "{}", newest.text);
            assert_eq!(entry["budgetBytes"], json!(line.budget_bytes));
            let keys: Vec<&String> = entry.as_object().unwrap().keys().collect();
            assert_eq!(
                keys[..10],
                [
                    "sessionId",
                    "label",
                    "capturedThroughSeq",
                    "compacted",
                    "originalMessages",
                    "retainedMessages",
                    "omittedMessages",
                    "omittedBytes",
                    "truncated",
                    "inputIndex"
                ]
            );
            assert_eq!(*keys.last().unwrap(), "budgetBytes");
            assert!(source.serialized_bytes <= line.budget_bytes);
            assert_eq!(line.retained_messages, source.conversation.len());
        }
        // Shared in proportion: equal sessions get equal budgets.
        let budgets: Vec<usize> = plan.sources.iter().map(|s| s.budget_bytes).collect();
        assert!(budgets.windows(2).all(|p| p[0] == p[1]), "{budgets:?}");
    }
}

#[tokio::test]
async fn references_that_fit_keep_their_maximum_and_dsh_s_entries() {
    let w = world();
    let planned = prepare(&w, &["a", "b", "c"], Some(room(10_000_000)))
        .await
        .unwrap();
    let plan = planned.plan.as_ref().unwrap();
    assert!(!plan.lowered());
    assert!(plan.sources.iter().all(|s| s.budget_bytes == 65_536));
    // Byte for byte what prepare without a plan gives, no key of the plan in it.
    let unplanned = prepare(&w, &["a", "b", "c"], None).await.unwrap();
    assert_eq!(unplanned.plan, None);
    let text = |p: &dsh_reference::Prepared| p.context.as_ref().unwrap().joined_text();
    assert_eq!(text(&planned), text(&unplanned));
    let source = |p: &dsh_reference::Prepared| p.context.as_ref().unwrap().source.clone();
    assert_eq!(source(&planned), source(&unplanned));
    assert!(
        !serde_json::to_string(&source(&planned))
            .unwrap()
            .contains("budget")
    );
}

#[tokio::test]
async fn minimums_that_do_not_fit_are_refused_naming_the_plan() {
    let w = world();
    let err = prepare(&w, &["a", "b"], Some(room(1_000)))
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::BudgetExceeded);
    for part in ["a needs", "b needs", "/compact"] {
        assert!(err.message.contains(part), "{}", err.message);
    }
    // A single source is planned the same way.
    let one = prepare(&w, &["a"], Some(room(3_000))).await.unwrap();
    let only = decode_snapshot(&one.context.unwrap().joined_text()).unwrap();
    assert!(only[0].serialized_bytes <= share_bytes(3_000, 0.5, 1));
}

#[tokio::test]
async fn a_preview_s_plan_reads_nothing_when_every_source_keeps_its_maximum() {
    let w = world();
    let plan_for = |ids: &'static [&'static str], left: u64| {
        let refs = w.refs.clone();
        async move {
            refs.plan_for(
                &me(),
                &mentions(ids),
                &[],
                room(left),
                &CancellationToken::new(),
            )
            .await
        }
    };
    // Three sources at 64 KiB fit 10 M tokens: no plan, and a session that is not there is
    // not read to say so.
    assert_eq!(
        plan_for(&["a", "b", "ghost"], 10_000_000).await.unwrap(),
        None
    );
    // A tight window: the plan prepare would make, the same budgets.
    let plan = plan_for(&["a", "b", "c"], 40_000).await.unwrap().unwrap();
    let prepared = prepare(&w, &["a", "b", "c"], Some(room(40_000)))
        .await
        .unwrap();
    assert!(plan.lowered());
    assert_eq!(Some(plan), prepared.plan);
    // Refused as prepare refuses.
    let err = plan_for(&["a", "b"], 1_000).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::BudgetExceeded);
}
