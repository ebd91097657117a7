//! The budget plan for three references (docs/performance.md, the budget plan): the plan
//! itself over three sources, and `prepare_planned` of a message referencing three
//! 60-exchange sessions (about 120 KiB of text each) warm — with room for all of them at
//! `max_reference_bytes`, and with a room that lowers all three budgets (each retained twice).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // bench code: a failure should stop it

use std::fs;
use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use dsh_reference::budget_plan::{PlanInput, PlanRoom, plan, share_bytes};
use dsh_reference::{
    AgentRef, Mentioned, ReferenceConfig, SessionReferences, format_mention, parse_text,
};
use dsh_store::{ContentBlock, SessionHeader, SessionQuery, SessionStore};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// A session `id` of 60 exchanges of about 1 KiB messages.
fn session(root: &Path, id: &str) {
    let dir = dsh_store::paths::session_dir(root, Some("/w"), id).unwrap();
    fs::create_dir_all(&dir).unwrap();
    let mut text = serde_json::to_string(&SessionHeader::new(id, 1, Some("/w".into()))).unwrap();
    text.push('\n');
    let filler = "the cache warms from the hot keys ".repeat(30);
    for seq in 0..120u64 {
        let line = if seq % 2 == 0 {
            json!({"type": "user/message", "seq": seq, "time": seq, "surfaceOp": "append",
                "data": {"id": format!("m{seq}"), "role": "user", "source": {"kind": "user"},
                    "content": [{"type": "text", "text": format!("q{seq} {filler}")}]}})
        } else {
            json!({"type": "assistant/message", "seq": seq, "time": seq, "surfaceOp": "append",
                "data": {"turn": 1, "step": 0, "message": {"id": format!("m{seq}"), "role": "assistant",
                    "source": {"kind": "model", "provider": "p", "model": "m"},
                    "content": [{"type": "text", "text": format!("a{seq} {filler}")}]}}})
        };
        text.push_str(&line.to_string());
        text.push('\n');
    }
    fs::write(dir.join("session.jsonl"), text).unwrap();
}

fn bench(c: &mut Criterion) {
    let inputs: Vec<PlanInput> = (0..3)
        .map(|i| PlanInput {
            session_id: format!("s{i}"),
            label: format!("Session {i}"),
            holds: 60_000 + i * 1_000,
            minimum: 2_000 + i * 100,
        })
        .collect();
    c.bench_function("plan/three_sources", |b| {
        b.iter(|| black_box(plan(black_box(&inputs), 40_000, 65_536).unwrap()));
    });

    let tmp = tempfile::tempdir().unwrap();
    for id in ["a", "b", "c"] {
        session(tmp.path(), id);
    }
    let store: Arc<dyn SessionQuery> = Arc::new(SessionStore::new(tmp.path()));
    let refs = SessionReferences::new(store, ReferenceConfig::default());
    let text = ["a", "b", "c"].map(|id| format_mention(id, None)).join(" ");
    let mentions: Vec<Mentioned> = parse_text(&text)
        .unwrap()
        .references
        .into_iter()
        .map(Mentioned::Session)
        .collect();
    let me = AgentRef {
        session_id: "me".into(),
        cwd: None,
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let room = |tokens: u64| PlanRoom {
        input_tokens: tokens,
        window_tokens: 0,
        draft_tokens: 0,
    };
    let prepare = |tokens: u64| {
        runtime
            .block_on(refs.prepare_planned(
                &me,
                &[ContentBlock::text("x")],
                &mentions,
                &[],
                Some(room(tokens)),
                &CancellationToken::new(),
            ))
            .unwrap()
    };
    for (name, tokens) in [("fits", 1_000_000), ("lowered", 40_000)] {
        assert_eq!(
            prepare(tokens).plan.unwrap().lowered(),
            name == "lowered",
            "{name}: share {}",
            share_bytes(tokens, 0.5, 3)
        );
        c.bench_function(&format!("plan/prepare_three_references_{name}"), |b| {
            b.iter(|| black_box(prepare(tokens)));
        });
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
