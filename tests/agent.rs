//! Agent behaviour against a scripted provider and a temporary store.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a failure should stop the test
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    clippy::needless_pass_by_value,
    clippy::similar_names
)] // test code: small known values, helpers that take values for brevity

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::{self, BoxStream};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use dsh_refs::agent::{
    Admission, Agent, AgentEvent, AgentStatus, DispatchPath, HookError, HookFuture, Next,
    PromptSubmit, PromptSubmitHook, dispatch,
};
use dsh_refs::llm::{ChatRequest, LlmError, Provider, StreamEvent, Usage};
use dsh_store::SessionStore;
use dsh_store::event::{EventData, now_ms};
use dsh_store::{Event, Message, Role, SessionHeader};

// ---------------------------------------------------------------------------------------
// Scripted provider

/// One scripted reply.
enum Script {
    /// Stream these events.
    Reply(Vec<StreamEvent>),
    /// Stream the first events, then wait for the gate, then the rest.
    Gated(Vec<StreamEvent>, oneshot::Receiver<()>, Vec<StreamEvent>),
    /// Stream the events, then never finish.
    Hang(Vec<StreamEvent>),
    /// Fail.
    Fail(LlmError),
}

/// Replays scripts in order and records every request; a request with no script left
/// gets a plain "ok" reply.
struct Scripted {
    scripts: Mutex<VecDeque<Script>>,
    requests: Mutex<Vec<Vec<Message>>>,
    /// Told (with the request index) each time the model is called.
    called: mpsc::UnboundedSender<usize>,
    /// Runs at call time, before streaming (e.g. to inspect the file on disk).
    on_call: Box<dyn Fn(&ChatRequest) + Send + Sync>,
}

impl Scripted {
    fn new(scripts: Vec<Script>) -> (Arc<Scripted>, mpsc::UnboundedReceiver<usize>) {
        Self::with_hook(scripts, Box::new(|_| {}))
    }

    fn with_hook(
        scripts: Vec<Script>,
        on_call: Box<dyn Fn(&ChatRequest) + Send + Sync>,
    ) -> (Arc<Scripted>, mpsc::UnboundedReceiver<usize>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let p = Scripted {
            scripts: Mutex::new(scripts.into()),
            requests: Mutex::new(Vec::new()),
            called: tx,
            on_call,
        };
        (Arc::new(p), rx)
    }

    fn requests(&self) -> Vec<Vec<Message>> {
        self.requests.lock().unwrap().clone()
    }

    /// Script the next unscripted request.
    fn push(&self, script: Script) {
        self.scripts.lock().unwrap().push_back(script);
    }
}

fn ok_events(text: &str) -> Vec<StreamEvent> {
    vec![
        StreamEvent::Text(text.to_owned()),
        StreamEvent::Usage(Usage {
            input_tokens: 10,
            output_tokens: 2,
        }),
    ]
}

impl Provider for Scripted {
    fn name(&self) -> &'static str {
        "scripted"
    }
    fn model(&self) -> &'static str {
        "test-1"
    }
    fn stream(
        &self,
        request: ChatRequest,
        _cancel: CancellationToken,
    ) -> BoxStream<'static, Result<StreamEvent, LlmError>> {
        (self.on_call)(&request);
        let index = {
            let mut reqs = self.requests.lock().unwrap();
            reqs.push(request.messages.clone());
            reqs.len() - 1
        };
        let _ = self.called.send(index);
        let script = self
            .scripts
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_else(|| Script::Reply(ok_events("ok")));
        match script {
            Script::Reply(events) => stream::iter(events.into_iter().map(Ok)).boxed(),
            Script::Gated(first, gate, rest) => {
                let rest = async move {
                    let _ = gate.await;
                    stream::iter(rest.into_iter().map(Ok))
                };
                stream::iter(first.into_iter().map(Ok))
                    .chain(stream::once(rest).flatten())
                    .boxed()
            }
            Script::Hang(first) => stream::iter(first.into_iter().map(Ok))
                .chain(stream::pending())
                .boxed(),
            Script::Fail(e) => stream::iter([Err(e)]).boxed(),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Helpers

/// A provider failure with a stable code.
fn test_llm_error() -> LlmError {
    LlmError::Unauthorized {
        status: 401,
        message: "bad key".into(),
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    store: SessionStore,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    Fixture {
        store: SessionStore::new(&root),
        root,
        _dir: dir,
    }
}

impl Fixture {
    fn spawn(
        &self,
        id: &str,
        provider: Arc<dyn Provider>,
    ) -> (Agent, mpsc::UnboundedReceiver<AgentEvent>) {
        let header = SessionHeader::new(id, now_ms(), Some("/work/project".into()));
        let writer = self.store.open_writer(id, Some(header)).unwrap();
        Agent::spawn(writer, provider)
    }
}

/// Every `session.jsonl` under `root`, concatenated (whatever the store's layout).
fn files_on_disk(root: &Path) -> String {
    let mut out = String::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.file_name().is_some_and(|n| n == "session.jsonl") {
                out.push_str(&std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    out
}

const PATIENCE: Duration = Duration::from_secs(20);

/// Receive events until `stop` matches one (returned last). Panics if the channel closes
/// or nothing matching arrives in time (a hang guard, not a synchronisation device).
async fn until(
    rx: &mut mpsc::UnboundedReceiver<AgentEvent>,
    stop: impl Fn(&AgentEvent) -> bool,
) -> Vec<AgentEvent> {
    let mut seen = Vec::new();
    loop {
        let ev = tokio::time::timeout(PATIENCE, rx.recv())
            .await
            .expect("agent event in time")
            .expect("agent channel open");
        let done = stop(&ev);
        seen.push(ev);
        if done {
            return seen;
        }
    }
}

fn is_turn_end(ev: &AgentEvent) -> bool {
    matches!(
        ev,
        AgentEvent::Appended(Event {
            data: EventData::TurnEnd { .. },
            ..
        })
    )
}

fn is_kind(kind: &'static str) -> impl Fn(&AgentEvent) -> bool {
    move |ev| matches!(ev, AgentEvent::Appended(e) if e.kind() == kind)
}

/// `type` of each event, with the message text for surface events.
fn shape(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .map(|e| match (&e.data, e.message()) {
            (_, Some(m)) => format!("{} {}", e.kind(), m.joined_text()),
            (EventData::AssistantChunk { chunk, .. }, None) => {
                format!("{} {}", e.kind(), chunk["type"].as_str().unwrap_or("?"))
            }
            (_, None) => e.kind().to_owned(),
        })
        .collect()
}

/// `shape` without streaming chunks.
fn shape_no_chunks(events: &[Event]) -> Vec<String> {
    shape(events)
        .into_iter()
        .filter(|s| !s.starts_with("assistant/chunk"))
        .collect()
}

fn texts(messages: &[Message]) -> Vec<String> {
    messages.iter().map(Message::joined_text).collect()
}

fn user(text: &str) -> Message {
    Message::user_text(text)
}

fn context(text: &str) -> Message {
    Message::new(
        Role::User,
        vec![dsh_store::ContentBlock::text(text)],
        dsh_store::Source::session_reference(json!([])),
    )
}

/// The notices of discards (no dsh version declares a log record for them: nothing is
/// logged).
fn discard_notices(events: &[AgentEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Warning {
                code: "AGENT_MESSAGE_DISCARDED",
                message,
            } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

/// Every rule of both dsh versions holds for `log` (docs/session-store.md: the rule book).
fn assert_dsh_valid(log: &[Event]) {
    let mut book = dsh_store::RuleBook::new();
    let mut broken = Vec::new();
    for e in log {
        broken.extend(book.admit(e, &dsh_store::Envelope::of_event(e), dsh_store::Mode::Scan));
    }
    broken.extend(book.finish());
    assert!(broken.is_empty(), "{broken:#?}");
}

fn discarded_events(events: &[AgentEvent]) -> Vec<Vec<String>> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Discarded { message_ids } => Some(message_ids.clone()),
            _ => None,
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// Hooks

/// Adds a context and rewrites the prompt's text.
struct Rewriting;
impl PromptSubmitHook for Rewriting {
    fn on_prompt_submit(&self, ctx: PromptSubmit, next: Next) -> HookFuture {
        Box::pin(async move {
            match next.run(ctx).await? {
                Admission::Allow {
                    mut additional_contexts,
                    ..
                } => {
                    additional_contexts.push(context("hook context"));
                    Ok(Admission::Allow {
                        content: Some(vec![dsh_store::ContentBlock::text("rewritten")]),
                        additional_contexts,
                    })
                }
                block @ Admission::Block { .. } => Ok(block),
            }
        })
    }
}

struct Blocking;
impl PromptSubmitHook for Blocking {
    fn on_prompt_submit(&self, _ctx: PromptSubmit, _next: Next) -> HookFuture {
        Box::pin(async {
            Ok(Admission::Block {
                reason: "policy says no".into(),
            })
        })
    }
}

struct Failing;
impl PromptSubmitHook for Failing {
    fn on_prompt_submit(&self, _ctx: PromptSubmit, _next: Next) -> HookFuture {
        Box::pin(async { Err(HookError::new("hook crashed")) })
    }
}

#[tokio::test]
async fn allowing_hook_logs_contexts_before_the_rewritten_prompt_and_a_fallback_title() {
    let fx = fixture();
    let (provider, _called) = Scripted::new(vec![Script::Reply(vec![
        StreamEvent::Reasoning("think".into()),
        StreamEvent::Text("hel".into()),
        StreamEvent::Text("lo".into()),
        StreamEvent::Usage(Usage {
            input_tokens: 7,
            output_tokens: 3,
        }),
    ])]);
    let (agent, mut rx) = fx.spawn("s1", provider.clone());
    let _guard = agent.add_prompt_submit_hook(Arc::new(Rewriting), false);
    agent.followup(user("  original   prompt "));
    until(&mut rx, is_turn_end).await;

    let log = agent.snapshot_events();
    assert_eq!(
        shape(&log),
        [
            "turn/start",
            "user/message hook context",
            "user/message rewritten",
            "session/title",
            "step/start",
            "assistant/chunk block-start",
            "assistant/chunk reasoning-delta",
            "assistant/chunk block-end",
            "assistant/chunk block-start",
            // "hel" and "lo" were ready at once: one delta (a fast stream logs few chunks).
            "assistant/chunk text-delta",
            "assistant/chunk block-end",
            "assistant/chunk usage",
            "assistant/chunk finish",
            "assistant/message hello",
            "step/end",
            "turn/end",
        ]
    );
    // dsh's line shapes: a message trigger with the prompt's source, steps from 1, bare
    // UUID message ids, chunks in dsh's vocabulary.
    let EventData::TurnStart { trigger, .. } = &log[0].data else {
        panic!("turn/start expected")
    };
    assert_eq!(
        trigger,
        &json!({"kind": "message", "source": {"kind": "user"}})
    );
    let EventData::StepStart { step, .. } = &log[4].data else {
        panic!("step/start expected")
    };
    assert_eq!(*step, 1);
    let id = &log[2].message().unwrap().id;
    assert!(uuid::Uuid::parse_str(id).is_ok() && id.len() == 36, "{id}");
    let chunks: Vec<&Value> = log
        .iter()
        .filter_map(|e| match &e.data {
            EventData::AssistantChunk { chunk, step, .. } => {
                assert_eq!(*step, 1);
                Some(chunk)
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        chunks[4],
        &json!({"type": "text-delta", "index": 1, "text": "hello"})
    );
    assert_eq!(
        chunks[5],
        &json!({"type": "block-end", "index": 1, "block": {"type": "text", "text": "hello"}})
    );
    assert_eq!(
        chunks[6],
        &json!({"type": "usage", "usage": {"inputTokens": 7, "outputTokens": 3}})
    );
    let EventData::SessionTitle(title) = &log[3].data else {
        panic!("title expected")
    };
    assert_eq!(
        (
            title.title.as_str(),
            title.message_seqs.clone(),
            title.source.kind.as_str()
        ),
        ("rewritten", vec![2], "fallback")
    );
    let EventData::AssistantMessage { message, usage, .. } = &log[13].data else {
        panic!()
    };
    assert_eq!(
        serde_json::to_value(message).unwrap()["source"],
        json!({"kind": "model", "provider": "scripted", "model": "test-1"})
    );
    assert_eq!(usage, &Some(json!({"inputTokens": 7, "outputTokens": 3})));
    let EventData::TurnEnd { reason, .. } = &log[15].data else {
        panic!()
    };
    assert_eq!(reason.kind, "completed");
    // The model saw the context right before the prompt.
    assert_eq!(
        texts(&provider.requests()[0]),
        ["hook context", "rewritten"]
    );
    // Everything acknowledged is on disk.
    assert_eq!(files_on_disk(&fx.root).lines().count(), log.len() + 1);
}

#[tokio::test]
async fn blocking_and_failing_hooks_log_nothing_of_the_prompt_and_discard_it_once() {
    for (hook, reason) in [
        (
            Arc::new(Blocking) as Arc<dyn PromptSubmitHook>,
            "policy says no",
        ),
        (Arc::new(Failing), "hook crashed"),
    ] {
        let fx = fixture();
        let (provider, _called) = Scripted::new(vec![]);
        let (agent, mut rx) = fx.spawn("s1", provider.clone());
        let _guard = agent.add_prompt_submit_hook(hook, false);
        let msg = user("secret prompt");
        let id = msg.id.clone();
        // Idle dispatch with a context: the one-shot hook is outermost, the blocker inner.
        assert_eq!(
            dispatch(&agent, msg, Some(context("snapshot"))),
            DispatchPath::FollowupWithContext
        );
        let seen = until(&mut rx, |e| matches!(e, AgentEvent::Discarded { .. })).await;
        assert_eq!(discarded_events(&seen), [vec![id.clone()]]);

        let log = agent.snapshot_events();
        assert_eq!(shape(&log), Vec::<String>::new(), "nothing is logged");
        let d = discard_notices(&seen);
        assert_eq!(d.len(), 1);
        assert!(d[0].contains(reason), "{d:?}");
        assert!(provider.requests().is_empty());
        assert_eq!(agent.status(), AgentStatus::Idle);
        // The one-shot hook is gone with its blocked message; the blocker stays.
        assert_eq!(agent.prompt_submit_hooks(), 1);
        assert!(!files_on_disk(&fx.root).contains("secret prompt"));
        assert!(!files_on_disk(&fx.root).contains("snapshot"));
    }
}

#[tokio::test]
async fn dropping_the_guard_detaches_the_hook() {
    let fx = fixture();
    let (provider, _called) = Scripted::new(vec![]);
    let (agent, mut rx) = fx.spawn("s1", provider);
    let guard = agent.add_prompt_submit_hook(Arc::new(Blocking), true);
    drop(guard);
    assert_eq!(agent.prompt_submit_hooks(), 0);
    agent.followup(user("hi"));
    let seen = until(&mut rx, is_turn_end).await;
    assert!(discard_notices(&seen).is_empty());
    assert!(shape(&agent.snapshot_events()).contains(&"user/message hi".to_owned()));
}

#[tokio::test]
async fn one_shot_context_hook_is_used_once_for_its_message_then_gone() {
    let fx = fixture();
    let (provider, _called) = Scripted::new(vec![]);
    let (agent, mut rx) = fx.spawn("s1", provider.clone());
    let first = user("with context");
    let first_id = first.id.clone();
    assert_eq!(
        dispatch(&agent, first, Some(context("snapshot A"))),
        DispatchPath::FollowupWithContext
    );
    assert_eq!(agent.prompt_submit_hooks(), 1);
    until(&mut rx, is_turn_end).await;
    assert_eq!(agent.prompt_submit_hooks(), 0);
    // Same id again (a retry): no context any more.
    let mut again = user("again");
    again.id = first_id;
    assert_eq!(dispatch(&agent, again, None), DispatchPath::Followup);
    until(&mut rx, is_turn_end).await;

    assert_eq!(
        shape_no_chunks(&agent.snapshot_events()),
        [
            "turn/start",
            "user/message snapshot A",
            "user/message with context",
            "session/title",
            "step/start",
            "assistant/message ok",
            "step/end",
            "turn/end",
            "turn/start",
            "user/message again",
            "step/start",
            "assistant/message ok",
            "step/end",
            "turn/end",
        ]
    );
    assert_eq!(
        texts(&provider.requests()[1]),
        ["snapshot A", "with context", "ok", "again"]
    );
}

#[tokio::test]
async fn one_shot_hook_detaches_when_its_message_is_discarded() {
    let fx = fixture();
    // The first turn answers; the compaction after it hangs, keeping the agent busy with
    // its window closed, so the next dispatch queues behind it.
    let (provider, mut called) = Scripted::new(vec![
        Script::Reply(ok_events("first")),
        Script::Hang(vec![]),
    ]);
    let (agent, mut rx) = fx.spawn("s1", provider);
    agent.followup(user("first"));
    until(&mut rx, is_turn_end).await;
    agent.compact();
    called.recv().await.unwrap();
    called.recv().await.unwrap();
    let msg = user("queued with context");
    let id = msg.id.clone();
    assert!(!agent.window_open());
    assert_eq!(
        dispatch(&agent, msg, Some(context("snapshot"))),
        DispatchPath::FollowupWithContext
    );
    assert_eq!(agent.prompt_submit_hooks(), 1);
    agent.cancel();
    let seen = until(&mut rx, |e| matches!(e, AgentEvent::Discarded { .. })).await;
    assert_eq!(discarded_events(&seen), [vec![id]]);
    assert_eq!(agent.prompt_submit_hooks(), 0);
    assert!(!files_on_disk(&fx.root).contains("queued with context"));
    // The compaction it waited behind was aborted and left the surface alone; its turn
    // ended aborted (before the discard was reported).
    assert!(seen.iter().any(is_turn_end));
    let log = agent.snapshot_events();
    let end = log
        .iter()
        .rev()
        .find(|e| e.kind() == "compaction/end")
        .unwrap();
    let EventData::Other { data, .. } = &end.data else {
        panic!()
    };
    assert!(
        data["error"]
            .as_str()
            .unwrap()
            .starts_with("AGENT_CANCELLED: "),
        "{data}"
    );
    let EventData::TurnEnd { reason, .. } = &log.last().unwrap().data else {
        panic!()
    };
    assert_eq!(reason.kind, "aborted");
    assert!(!shape(&log).iter().any(|s| s.contains("compacted-summary")));
    assert_dsh_valid(&log);
}

/// Never answers: admission hangs until cancelled.
struct Stalling;
impl PromptSubmitHook for Stalling {
    fn on_prompt_submit(&self, _ctx: PromptSubmit, _next: Next) -> HookFuture {
        Box::pin(futures_util::future::pending())
    }
}

#[tokio::test]
async fn cancel_during_admission_discards_the_prompt_without_logging_it() {
    let fx = fixture();
    let (provider, _called) = Scripted::new(vec![]);
    let (agent, mut rx) = fx.spawn("s1", provider.clone());
    let _guard = agent.add_prompt_submit_hook(Arc::new(Stalling), false);
    let msg = user("stuck in admission");
    let id = msg.id.clone();
    agent.followup(msg);
    until(&mut rx, |e| {
        matches!(e, AgentEvent::Status(AgentStatus::Running))
    })
    .await;
    assert!(agent.window_open());
    agent.cancel();
    let seen = until(&mut rx, |e| matches!(e, AgentEvent::Discarded { .. })).await;
    assert_eq!(discarded_events(&seen), [vec![id.clone()]]);
    assert_eq!(discard_notices(&seen).len(), 1);
    assert_eq!(shape(&agent.snapshot_events()), Vec::<String>::new());
    assert_eq!(agent.status(), AgentStatus::Idle);
    assert!(provider.requests().is_empty());
}

// ---------------------------------------------------------------------------------------
// Steering, injection, cancel

#[tokio::test]
async fn inject_and_steer_during_a_turn_land_together_at_the_next_step_boundary() {
    let fx = fixture();
    let (gate_tx, gate_rx) = oneshot::channel();
    let (provider, mut called) = Scripted::new(vec![
        Script::Gated(
            vec![StreamEvent::Text("part ".into())],
            gate_rx,
            ok_events("one"),
        ),
        Script::Reply(ok_events("two")),
    ]);
    let (agent, mut rx) = fx.spawn("s1", provider.clone());
    agent.followup(user("start"));
    called.recv().await.unwrap();
    assert!(agent.window_open());
    assert_eq!(agent.status(), AgentStatus::Running);
    let path = dispatch(&agent, user("and also"), Some(context("snapshot")));
    assert_eq!(path, DispatchPath::Steered);
    let seen = until(&mut rx, |e| matches!(e, AgentEvent::Staged { count: 2 })).await;
    assert!(!seen.is_empty());
    gate_tx.send(()).unwrap();
    until(&mut rx, is_turn_end).await;

    let log = agent.snapshot_events();
    assert_eq!(
        shape_no_chunks(&log),
        [
            "turn/start",
            "user/message start",
            "session/title",
            "step/start",
            "assistant/message part one",
            "step/end",
            "user/message snapshot",
            "steering/message and also",
            "step/start",
            "assistant/message two",
            "step/end",
            "turn/end",
        ]
    );
    assert_eq!(
        texts(&provider.requests()[1]),
        ["start", "part one", "snapshot", "and also"]
    );
    assert!(!agent.window_open());
}

#[tokio::test]
async fn inject_while_idle_appends_at_once_without_a_turn() {
    let fx = fixture();
    let (provider, _called) = Scripted::new(vec![]);
    let (agent, mut rx) = fx.spawn("s1", provider.clone());
    agent.inject(context("background"));
    until(&mut rx, is_kind("user/message")).await;
    assert_eq!(shape(&agent.snapshot_events()), ["user/message background"]);
    assert!(provider.requests().is_empty());
}

#[tokio::test]
async fn cancel_aborts_the_turn_and_discards_queued_and_staged_with_one_event() {
    let fx = fixture();
    let (provider, mut called) =
        Scripted::new(vec![Script::Hang(vec![StreamEvent::Text("par".into())])]);
    let (agent, mut rx) = fx.spawn("s1", provider.clone());
    agent.followup(user("long task"));
    called.recv().await.unwrap();
    let staged = user("steer me");
    let queued = user("later");
    let (staged_id, queued_id) = (staged.id.clone(), queued.id.clone());
    agent.steer(staged);
    // Closed-window path is impossible now; a plain followup queues behind the turn.
    agent.followup(queued);
    agent.cancel();
    let seen = until(&mut rx, |e| matches!(e, AgentEvent::Discarded { .. })).await;
    assert_eq!(
        discarded_events(&seen),
        [vec![queued_id.clone(), staged_id.clone()]]
    );
    assert!(seen.contains(&AgentEvent::Status(AgentStatus::Idle)));

    let log = agent.snapshot_events();
    assert_eq!(
        shape(&log),
        [
            "turn/start",
            "user/message long task",
            "session/title",
            "step/start",
            "assistant/chunk block-start",
            "assistant/chunk text-delta",
            "step/end",
            "turn/end",
        ]
    );
    let EventData::TurnEnd { reason, .. } = &log[7].data else {
        panic!()
    };
    assert_eq!(reason.kind, "aborted");
    assert!(
        reason.extra.is_empty(),
        "both dsh versions read {{kind}} alone"
    );
    assert_eq!(
        discard_notices(&seen),
        ["discarded 2 queued messages (cancelled); Up brings back what you typed"]
    );
    assert_dsh_valid(&log);
    assert_eq!(provider.requests().len(), 1);
    assert_eq!(agent.status(), AgentStatus::Idle);
    assert!(files_on_disk(&fx.root).contains("turn/end"));
}

#[tokio::test]
async fn provider_error_ends_the_turn_with_its_code_and_keeps_the_message() {
    let fx = fixture();
    let (provider, _called) = Scripted::new(vec![Script::Fail(test_llm_error())]);
    let (agent, mut rx) = fx.spawn("s1", provider);
    agent.followup(user("hello"));
    let seen = until(&mut rx, is_turn_end).await;
    let code = test_llm_error().code().to_string();
    assert!(
        seen.iter()
            .any(|e| matches!(e, AgentEvent::Error { code: c, .. } if *c == code)),
        "{seen:?}"
    );
    let log = agent.snapshot_events();
    let last = log.last().unwrap();
    let EventData::TurnEnd { reason, .. } = &last.data else {
        panic!()
    };
    assert_eq!(reason.kind, "error");
    // The newest release's declared shape: {kind, error: {code, message}}.
    assert_eq!(reason.extra["error"]["code"], json!(code));
    assert_eq!(reason.failure().0, Some(code.as_str()));
    assert!(shape(&log).contains(&"user/message hello".to_owned()));
    assert_dsh_valid(&log);
}

#[tokio::test]
async fn the_log_is_durable_before_the_model_is_called() {
    let fx = fixture();
    let root = fx.root.clone();
    let seen_on_disk = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen_on_disk);
    let (provider, _called) = Scripted::with_hook(
        vec![],
        Box::new(move |req: &ChatRequest| {
            let disk = files_on_disk(&root);
            let last = req.messages.last().unwrap();
            record
                .lock()
                .unwrap()
                .push((disk.contains(&last.id), disk.contains("step/start")));
        }),
    );
    let (agent, mut rx) = fx.spawn("s1", provider);
    agent.followup(user("first"));
    until(&mut rx, is_turn_end).await;
    agent.followup(user("second"));
    until(&mut rx, is_turn_end).await;
    assert_eq!(*seen_on_disk.lock().unwrap(), [(true, true), (true, true)]);
}

// ---------------------------------------------------------------------------------------
// Titles and compaction

#[tokio::test]
async fn only_the_first_direct_message_gets_a_fallback_title_and_set_title_is_a_user_title() {
    let fx = fixture();
    let (provider, _called) = Scripted::new(vec![]);
    let (agent, mut rx) = fx.spawn("s1", provider);
    agent.inject(context("not a direct message"));
    agent.followup(user("\u{1b}[31mfirst\u{1b}[0m   question here"));
    until(&mut rx, is_turn_end).await;
    agent.followup(user("second question"));
    until(&mut rx, is_turn_end).await;
    agent.set_title("  Renamed\tby hand ");
    until(&mut rx, is_kind("session/title")).await;
    let titles: Vec<(String, String)> = agent
        .snapshot_events()
        .iter()
        .filter_map(|e| match &e.data {
            EventData::SessionTitle(t) => Some((t.title.clone(), t.source.kind.to_string())),
            _ => None,
        })
        .collect();
    assert_eq!(
        titles,
        [
            ("first question here".into(), "fallback".into()),
            ("Renamed by hand".into(), "user".into())
        ]
    );
    // The rename cites no message and sits in a turn of its own.
    let log = agent.snapshot_events();
    let n = log.len();
    assert_eq!(
        shape(&log[n - 3..]),
        ["turn/start", "session/title", "turn/end"]
    );
    assert_dsh_valid(&log);
}

#[tokio::test]
async fn compaction_replaces_the_whole_surface_with_a_checkpoint() {
    let fx = fixture();
    let (provider, _called) = Scripted::new(vec![
        Script::Reply(ok_events("answer one")),
        Script::Reply(ok_events("  the summary  ")),
        Script::Reply(ok_events("answer two")),
    ]);
    let (agent, mut rx) = fx.spawn("s1", provider.clone());
    agent.followup(user("question one"));
    until(&mut rx, is_turn_end).await;
    agent.compact();
    // `/compact` runs in a turn of its own.
    until(&mut rx, is_kind("compaction/end")).await;
    until(&mut rx, is_turn_end).await;
    agent.followup(user("question two"));
    until(&mut rx, is_turn_end).await;

    let log = agent.snapshot_events();
    let compact: Vec<&Event> = log
        .iter()
        .filter(|e| e.kind().starts_with("compaction/") || e.seq > 6 && e.kind() == "user/message")
        .collect();
    assert_eq!(
        shape(&compact.iter().map(|e| (*e).clone()).collect::<Vec<_>>())[..4],
        [
            "compaction/start",
            "compaction/summary",
            "user/message <compacted-summary>\nthe summary\n</compacted-summary>",
            "compaction/end",
        ]
    );
    assert_dsh_valid(&log);
    let checkpoint = compact[2];
    assert!(
        checkpoint
            .message()
            .unwrap()
            .source
            .as_ref()
            .unwrap()
            .is_compact_checkpoint()
    );
    // Replaces the first to the last surface event of the time (the prompt and the reply).
    let user_seq = log.iter().find(|e| e.kind() == "user/message").unwrap().seq;
    let reply_seq = log
        .iter()
        .find(|e| e.kind() == "assistant/message")
        .unwrap()
        .seq;
    assert_eq!(
        checkpoint.surface_op,
        Some(dsh_store::SurfaceOp::Replace {
            start: user_seq,
            end: reply_seq
        })
    );
    // The summarizer saw the surface; the next turn sees checkpoint + later messages only.
    let reqs = provider.requests();
    assert_eq!(texts(&reqs[1])[..2], ["question one", "answer one"]);
    assert_eq!(
        texts(&reqs[2]),
        [
            "<compacted-summary>\nthe summary\n</compacted-summary>",
            "question two"
        ]
    );
    let folded = dsh_store::fold::fold_surface(&log).unwrap();
    assert_eq!(folded.len(), 3);
}

#[tokio::test]
async fn compacting_an_empty_session_reports_an_error_and_writes_nothing() {
    let fx = fixture();
    let (provider, _called) = Scripted::new(vec![]);
    let (agent, mut rx) = fx.spawn("s1", provider);
    agent.compact();
    let seen = until(&mut rx, |e| matches!(e, AgentEvent::Error { .. })).await;
    assert!(matches!(
        seen.last(),
        Some(AgentEvent::Error { code, .. }) if *code == "AGENT_NOTHING_TO_COMPACT"
    ));
    assert!(agent.snapshot_events().is_empty());
}

#[tokio::test]
async fn the_loop_stops_and_releases_the_session_when_the_last_handle_drops() {
    let fx = fixture();
    let (provider, _called) = Scripted::new(vec![]);
    let (agent, mut rx) = fx.spawn("s1", provider);
    agent.followup(user("hi"));
    drop(agent);
    // The queued turn still runs to its end, then the channel closes.
    let mut kinds = Vec::new();
    while let Some(ev) = tokio::time::timeout(PATIENCE, rx.recv()).await.unwrap() {
        if let AgentEvent::Appended(e) = ev {
            kinds.push(e.kind().to_owned());
        }
    }
    assert_eq!(kinds.last().map(String::as_str), Some("turn/end"));
    // Writer released: the session can be opened again.
    assert!(fx.store.open_writer("s1", None).is_ok());
}

#[tokio::test]
async fn a_resumed_session_continues_its_turns_surface_and_title() {
    let fx = fixture();
    let (provider, _called) = Scripted::new(vec![]);
    let (agent, mut rx) = fx.spawn("s1", provider.clone());
    agent.followup(user("before restart"));
    until(&mut rx, is_turn_end).await;
    drop(agent);
    while tokio::time::timeout(PATIENCE, rx.recv())
        .await
        .unwrap()
        .is_some()
    {}

    let writer = fx.store.open_writer("s1", None).unwrap();
    let (agent, mut rx) = Agent::spawn(writer, provider.clone());
    agent.followup(user("after restart"));
    until(&mut rx, is_turn_end).await;
    let log = agent.snapshot_events();
    let turns: Vec<u64> = log
        .iter()
        .filter_map(|e| match e.data {
            EventData::TurnStart { turn, .. } => Some(turn),
            _ => None,
        })
        .collect();
    assert_eq!(turns, [1, 2]);
    let titles = log.iter().filter(|e| e.kind() == "session/title").count();
    assert_eq!(titles, 1);
    assert_eq!(
        texts(&provider.requests()[1]),
        ["before restart", "ok", "after restart"]
    );
}

// ---------------------------------------------------------------------------------------
// Context window (issue 14)

#[tokio::test]
async fn a_surface_over_the_context_window_is_sent_as_its_newest_messages_with_a_warning() {
    let fx = fixture();
    // The automatic compaction's summary fails: the request is trimmed instead.
    let (provider, _calls) = Scripted::new(vec![Script::Fail(test_llm_error())]);
    let limited: Arc<dyn Provider> = Arc::new(
        dsh_refs::llm::configured::Configured::new(provider.clone()).with_context_tokens(2048),
    );
    // 40 messages of 300 bytes (about 104 tokens each) on the surface.
    let header = SessionHeader::new("big", now_ms(), Some("/work/project".into()));
    let mut writer = fx.store.open_writer("big", Some(header)).unwrap();
    let batch = (0..40)
        .map(|i| {
            dsh_store::NewEvent::appended(EventData::UserMessage(user(&format!(
                "{i:03} {}",
                "y".repeat(296)
            ))))
        })
        .collect();
    writer.append(batch).unwrap();
    let (agent, mut rx) = Agent::spawn(writer, limited);
    agent.followup(user("the newest prompt"));
    let seen = until(&mut rx, is_turn_end).await;
    let warnings: Vec<(&str, String)> = seen
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Warning { code, message } => Some((*code, message.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert_eq!(warnings[0].0, "AGENT_COMPACTION_FAILED");
    assert!(
        warnings[0].1.contains("LLM_UNAUTHORIZED"),
        "{}",
        warnings[0].1
    );
    let (code, message) = warnings[1].clone();
    assert_eq!(code, "AGENT_CONTEXT_TRIMMED");
    assert!(message.contains("2048 tokens"), "{message}");
    assert_eq!(provider.requests().len(), 2);
    let sent = &provider.requests()[1];
    // Budget 2048 - 256 = 1792 tokens: the prompt (10) and the 17 newest older ones (104 each).
    assert_eq!(sent.len(), 18, "{:?}", texts(sent));
    assert_eq!(texts(sent).last().unwrap(), "the newest prompt");
    assert!(texts(sent)[0].starts_with("023 "), "{:?}", texts(sent)[0]);
    assert!(message.contains("the 23 oldest messages"), "{message}");
    // The log itself keeps everything.
    assert_eq!(
        agent
            .snapshot_events()
            .iter()
            .filter(|e| e.kind() == "user/message")
            .count(),
        41
    );
}

/// 40 user messages of 300 bytes (104 estimated tokens each) in a new session `id`.
fn forty_messages(fx: &Fixture, id: &str) -> dsh_store::SessionWriter {
    let header = SessionHeader::new(id, now_ms(), Some("/work/project".into()));
    let mut writer = fx.store.open_writer(id, Some(header)).unwrap();
    let batch = (0..40)
        .map(|i| {
            dsh_store::NewEvent::appended(EventData::UserMessage(user(&format!(
                "{i:03} {}",
                "y".repeat(296)
            ))))
        })
        .collect();
    writer.append(batch).unwrap();
    writer
}

fn limited(provider: Arc<Scripted>, tokens: u64) -> Arc<dyn Provider> {
    Arc::new(dsh_refs::llm::configured::Configured::new(provider).with_context_tokens(tokens))
}

#[tokio::test]
async fn a_surface_over_the_context_window_is_compacted_before_the_first_step() {
    let fx = fixture();
    let (provider, _calls) = Scripted::new(vec![Script::Reply(ok_events("short summary"))]);
    let writer = forty_messages(&fx, "auto");
    let (agent, mut rx) = Agent::spawn(writer, limited(provider.clone(), 2048));
    agent.followup(user("the newest prompt"));
    let seen = until(&mut rx, is_turn_end).await;
    assert!(
        !seen.iter().any(|e| matches!(e, AgentEvent::Warning { .. })),
        "{seen:?}"
    );
    let requests = provider.requests();
    assert_eq!(requests.len(), 2);
    // The summary request is a bounded window of what came before the turn.
    let summary = &requests[0];
    assert!(dsh_refs::llm::is_summarize_request(&ChatRequest::new(
        summary.clone()
    )));
    assert_eq!(summary.len(), 17, "{:?}", texts(summary));
    assert!(texts(summary)[15].starts_with("039 "));
    assert_eq!(
        texts(&requests[1]),
        [
            "<compacted-summary>\nshort summary\n</compacted-summary>",
            "the newest prompt"
        ]
    );
    let log = agent.snapshot_events();
    let kinds: Vec<&str> = log
        .iter()
        .skip(40)
        .map(Event::kind)
        .filter(|k| *k != "session/title")
        .collect();
    assert_eq!(
        kinds[..7],
        [
            "turn/start",
            "user/message",
            "compaction/start",
            "compaction/summary",
            "user/message",
            "compaction/end",
            "step/start"
        ]
    );
    // The checkpoint shadows all forty messages and cites every one of them, after the
    // start and summary events.
    let checkpoint = log
        .iter()
        .find(|e| matches!(e.surface_op, Some(dsh_store::SurfaceOp::Replace { .. })))
        .unwrap();
    let sources = checkpoint.source_event_seqs.clone().unwrap();
    assert_eq!(sources.len(), 42);
    assert_eq!(sources[2..], (0..40).collect::<Vec<u64>>()[..]);
    assert_dsh_valid(&log);
    // The next turn sends the checkpoint, the compacted turn and the new prompt.
    agent.followup(user("and then"));
    until(&mut rx, is_turn_end).await;
    assert_eq!(
        texts(&provider.requests()[2]),
        [
            "<compacted-summary>\nshort summary\n</compacted-summary>",
            "the newest prompt",
            "ok",
            "and then"
        ]
    );
}

#[tokio::test]
async fn older_messages_are_read_again_from_the_log_when_a_replace_shortens_the_window() {
    let fx = fixture();
    let mut writer = forty_messages(&fx, "partial");
    // A replace of messages 20..=39 by one short message (as a partial compaction would):
    // the kept tail (the newest ~17) is gone, the window must reach back to 0..=19.
    writer
        .append(vec![dsh_store::NewEvent {
            data: EventData::UserMessage(user("short")),
            surface_op: Some(dsh_store::SurfaceOp::Replace { start: 20, end: 39 }),
            source_event_seqs: Some((20..40).collect()),
        }])
        .unwrap();
    drop(writer);
    let writer = fx.store.open_writer("partial", None).unwrap();
    let (provider, _calls) = Scripted::new(vec![Script::Fail(test_llm_error())]);
    let (agent, mut rx) = Agent::spawn(writer, limited(provider.clone(), 2048));
    agent.followup(user("the newest prompt"));
    until(&mut rx, is_turn_end).await;
    let sent = texts(&provider.requests()[1]);
    // 1792 tokens: the prompt (10), "short" (6) and the 17 newest of 0..=19 (104 each).
    assert_eq!(sent.len(), 19, "{sent:?}");
    assert!(sent[0].starts_with("003 "), "{}", sent[0]);
    assert!(sent[16].starts_with("019 "), "{}", sent[16]);
    assert_eq!(sent[17..], ["short", "the newest prompt"]);
}

#[tokio::test]
async fn a_surface_that_fits_is_sent_whole_without_a_warning() {
    let fx = fixture();
    let (provider, _calls) = Scripted::new(vec![]);
    let (agent, mut rx) = fx.spawn("small", provider.clone());
    agent.followup(user("hello"));
    let seen = until(&mut rx, is_turn_end).await;
    assert!(!seen.iter().any(|e| matches!(e, AgentEvent::Warning { .. })));
    assert_eq!(texts(&provider.requests()[0]), ["hello"]);
}

/// A new session's store-wide encoding check runs off the open and the log's lock: over a
/// store holding both encodings the agent reports the refusal before anything is sent,
/// and nothing is ever published.
#[tokio::test]
async fn a_store_with_both_encodings_is_reported_before_the_first_send() {
    let fx = fixture();
    for (session, name) in [("p", "session.jsonl"), ("z", "session.jsonl.zstd")] {
        let dir = fx.root.join("--work-project--").join(session);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(name), b"x").unwrap();
    }
    let (provider, _calls) = Scripted::new(vec![]);
    let (agent, mut rx) = fx.spawn("s-new", provider);
    let seen = until(&mut rx, |ev| matches!(ev, AgentEvent::Error { .. })).await;
    let Some(AgentEvent::Error { code, message }) = seen.last() else {
        unreachable!()
    };
    assert_eq!(*code, "AGENT_LOG_WRITE_FAILED");
    assert!(message.contains("both plain and zstd"), "{message}");
    assert!(
        seen.iter().all(|ev| !matches!(ev, AgentEvent::Appended(_))),
        "{seen:?}"
    );
    drop(agent);
    assert!(!fx.store.exists("s-new"), "nothing was published");
}

// ---------------------------------------------------------------------------------------
// dsh's rules: golden records, and random conversations through the real writer

/// `log` as JSON lines with what varies from run to run made stable: times dropped, message
/// ids and compaction ids numbered in order of appearance.
fn normalized(log: &[Event]) -> String {
    let mut ids: Vec<String> = Vec::new();
    let mut name = |id: &str, what: &str| {
        let n = ids.iter().position(|i| i == id).unwrap_or_else(|| {
            ids.push(id.to_owned());
            ids.len() - 1
        });
        Value::String(format!("<{what} {n}>"))
    };
    let mut out = String::new();
    for e in log {
        let mut v = serde_json::to_value(e).unwrap();
        v.as_object_mut().unwrap().shift_remove("time");
        for path in ["/data/message", "/data"] {
            if let Some(message) = v.pointer_mut(path)
                && message.get("role").is_some()
                && let Some(id) = message.get("id").and_then(Value::as_str).map(str::to_owned)
            {
                message["id"] = name(&id, "message");
            }
        }
        let data = &mut v["data"];
        if let Some(id) = data
            .get("compactionId")
            .and_then(Value::as_str)
            .map(str::to_owned)
        {
            data["compactionId"] = name(&id, "compaction");
        }
        if let Some(id) = data["source"]
            .get("compactionId")
            .and_then(Value::as_str)
            .map(str::to_owned)
        {
            data["source"]["compactionId"] = name(&id, "compaction");
        }
        out.push_str(&serde_json::to_string(&v).unwrap());
        out.push('\n');
    }
    out
}

/// Compare `text` with the golden file `name` (`tests/fixtures/golden/`); with
/// `DSH_REFS_UPDATE_GOLDEN=1` the file is written instead.
fn golden(name: &str, text: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/golden")
        .join(name);
    if std::env::var_os("DSH_REFS_UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
    }
    let want = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text, want, "golden file {}", path.display());
}

/// The records of titles and compactions, byte for byte (docs/session-store.md: titles,
/// compaction): a fallback title with mentions, a user title in a turn of its own, `/compact`
/// in a turn of its own, a failed `/compact`, and an automatic compaction inside the turn
/// that needed it. `DSH_REFS_KEEP_LOG=DIR` keeps the store (to run dsh's readers on it).
#[tokio::test]
async fn titles_and_compactions_are_recorded_as_dsh_declares_them() {
    let fx = fixture();
    let (provider, mut called) = Scripted::new(vec![
        Script::Reply(ok_events("answer one")),
        Script::Reply(ok_events("answer two")),
        Script::Reply(ok_events("the summary")),
        Script::Fail(test_llm_error()),
        Script::Reply(ok_events("answer three")),
        Script::Reply(ok_events("summary of everything so far")),
        Script::Reply(ok_events("answer four")),
    ]);
    let (agent, mut rx) = Agent::spawn(
        {
            let header = SessionHeader::new("golden", 1, Some("/work/project".into()));
            fx.store.open_writer("golden", Some(header)).unwrap()
        },
        limited(provider.clone(), 1024),
    );
    agent.followup(user("@A and @B vs @C compare these three sessions please"));
    until(&mut rx, is_turn_end).await;
    agent.set_title("  Renamed \u{1b}[1mby\u{1b}[0m hand ");
    until(&mut rx, is_turn_end).await;
    agent.followup(user("second question"));
    until(&mut rx, is_turn_end).await;
    agent.compact();
    until(&mut rx, is_turn_end).await;
    agent.compact();
    until(&mut rx, is_turn_end).await;
    agent.followup(user(&format!("a long question {}", "y".repeat(1500))));
    until(&mut rx, is_turn_end).await;
    // Over the 1024-token window: compacted before the turn's first step.
    agent.followup(user(&format!("another long one {}", "z".repeat(1500))));
    until(&mut rx, is_turn_end).await;
    assert_eq!(provider.requests().len(), 7);
    while called.try_recv().is_ok() {}
    let log = agent.snapshot_events();
    assert_dsh_valid(&log);
    if let Some(dir) = std::env::var_os("DSH_REFS_KEEP_LOG") {
        let from = fx.store.locate("golden").unwrap().unwrap().path;
        let to = Path::new(&dir).join("--work-project--").join("golden");
        std::fs::create_dir_all(&to).unwrap();
        std::fs::copy(from, to.join("session.jsonl")).unwrap();
    }
    golden(
        "titles_and_compactions.jsonl",
        &normalized(&log)
            .lines()
            .filter(|l| !l.contains("\"assistant/chunk\""))
            .fold(String::new(), |mut out, l| {
                out.push_str(l);
                out.push('\n');
                out
            }),
    );
}

/// One thing a user does to a session.
#[derive(Debug, Clone)]
enum Act {
    /// A prompt, `big` enough to outgrow the window in a few turns.
    Prompt { big: bool },
    /// `/compact` while idle.
    Compact,
    /// `/compact` whose summary request fails.
    FailedCompact,
    /// `/title`.
    Title,
    /// A context injected while idle.
    Inject,
    /// Something done while a reply streams.
    MidTurn(MidTurn),
}

#[derive(Debug, Clone, Copy)]
enum MidTurn {
    Compact,
    Steer,
    Cancel,
}

fn act() -> impl proptest::strategy::Strategy<Value = Act> {
    use proptest::prelude::*;
    prop_oneof![
        4 => any::<bool>().prop_map(|big| Act::Prompt { big }),
        2 => Just(Act::Compact),
        1 => Just(Act::FailedCompact),
        1 => Just(Act::Title),
        1 => Just(Act::Inject),
        1 => Just(Act::MidTurn(MidTurn::Compact)),
        1 => Just(Act::MidTurn(MidTurn::Steer)),
        1 => Just(Act::MidTurn(MidTurn::Cancel)),
    ]
}

/// Wait until `n` more turns have ended (or, for a `/compact` with nothing to compact, its
/// error arrived in place of its turn).
async fn turns_end(rx: &mut mpsc::UnboundedReceiver<AgentEvent>, n: usize) {
    let mut left = n;
    while left > 0 {
        until(rx, |e| {
            is_turn_end(e)
                || matches!(e, AgentEvent::Error { code, .. } if *code == "AGENT_NOTHING_TO_COMPACT")
        })
        .await;
        left -= 1;
    }
}

/// Run `acts` on a new session with a `context_tokens` window; return the log.
async fn live(acts: &[Act], context_tokens: u64) -> Vec<Event> {
    let fx = fixture();
    let (provider, mut called) = Scripted::new(vec![]);
    let header = SessionHeader::new("p", 1, Some("/work/project".into()));
    let writer = fx.store.open_writer("p", Some(header)).unwrap();
    let (agent, mut rx) = Agent::spawn(writer, limited(provider.clone(), context_tokens));
    let text =
        |big: bool, n: usize| format!("prompt {n} {}", "w ".repeat(if big { 700 } else { 5 }));
    for (n, a) in acts.iter().enumerate() {
        match a {
            Act::Prompt { big } => {
                agent.followup(user(&text(*big, n)));
                turns_end(&mut rx, 1).await;
            }
            Act::Compact => {
                agent.compact();
                turns_end(&mut rx, 1).await;
            }
            Act::FailedCompact => {
                provider.push(Script::Fail(test_llm_error()));
                agent.compact();
                turns_end(&mut rx, 1).await;
            }
            Act::Title => {
                agent.set_title(&format!("title {n}"));
                turns_end(&mut rx, 1).await;
            }
            Act::Inject => {
                agent.inject(context(&format!("context {n}")));
                until(&mut rx, is_kind("user/message")).await;
            }
            Act::MidTurn(what) => {
                while called.try_recv().is_ok() {}
                let (gate, wait) = oneshot::channel();
                provider.push(Script::Gated(
                    vec![StreamEvent::Text("par".into())],
                    wait,
                    vec![StreamEvent::Text("tial".into())],
                ));
                agent.followup(user(&text(false, n)));
                called.recv().await.unwrap();
                let turns = match what {
                    MidTurn::Compact => {
                        agent.compact();
                        2
                    }
                    MidTurn::Steer => {
                        agent.steer(user(&format!("steer {n}")));
                        1
                    }
                    MidTurn::Cancel => {
                        agent.cancel();
                        1
                    }
                };
                let _ = gate.send(());
                turns_end(&mut rx, turns).await;
            }
        }
    }
    let log = agent.snapshot_events();
    drop(agent);
    while rx.recv().await.is_some() {}
    log
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig {
        cases: 24,
        failure_persistence: None,
        ..proptest::prelude::ProptestConfig::default()
    })]

    /// Random conversations with compactions (several in a row, tiny windows, `/compact`
    /// idle and mid-turn, cancels, steering) through the real agent and writer: every log
    /// follows every rule of both dsh versions.
    #[test]
    fn every_log_the_agent_writes_follows_dsh_rules(
        acts in proptest::collection::vec(act(), 1..12),
        tiny in proptest::prelude::any::<bool>(),
    ) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let log = runtime.block_on(live(&acts, if tiny { 1024 } else { 4096 }));
        if std::env::var_os("DSH_REFS_SHOW_ACTS").is_some() {
            let kinds = |k: &str| log.iter().filter(|e| e.kind() == k).count();
            eprintln!(
                "{} acts, {} turns, {} compactions ({} failed), {} steering",
                acts.len(),
                kinds("turn/start"),
                kinds("compaction/start"),
                log.iter().filter(|e| e.kind() == "compaction/end" && matches!(&e.data, EventData::Other { data, .. } if data.get("error").is_some())).count(),
                kinds("steering/message"),
            );
        }
        assert_dsh_valid(&log);
    }
}

/// A span too long for one line of the log (`store.max_line_bytes`, here 8 KiB: 3 000 nodes
/// listed twice) is compacted in part: the newest nodes that fit, every line readable.
#[tokio::test]
async fn a_compaction_never_writes_a_line_the_reader_would_refuse() {
    let dir = tempfile::tempdir().unwrap();
    let limits = dsh_store::reader::Limits {
        max_line_bytes: 8 << 10,
        ..dsh_store::reader::Limits::default()
    };
    let store = SessionStore::new(dir.path().join("store")).with_limits(limits);
    let header = SessionHeader::new("huge", 1, Some("/work/project".into()));
    let mut writer = store.open_writer("huge", Some(header)).unwrap();
    let batch: Vec<dsh_store::NewEvent> = (0..3000)
        .map(|i| {
            dsh_store::NewEvent::appended(EventData::UserMessage(user(&format!(
                "{i:04} {}",
                "y".repeat(40)
            ))))
        })
        .collect();
    writer.append(batch).unwrap();
    let (provider, _calls) = Scripted::new(vec![Script::Reply(ok_events("short summary"))]);
    let (agent, mut rx) = Agent::spawn(writer, limited(provider.clone(), 2048));
    agent.followup(user("the newest prompt"));
    until(&mut rx, is_turn_end).await;
    let log = agent.snapshot_events();
    assert_dsh_valid(&log);
    let checkpoint = log
        .iter()
        .find(|e| matches!(e.surface_op, Some(dsh_store::SurfaceOp::Replace { .. })))
        .expect("compacted");
    let Some(dsh_store::SurfaceOp::Replace { start, end }) = checkpoint.surface_op else {
        unreachable!()
    };
    let checkpoint = checkpoint.clone();
    assert!(start > 0 && end == 2999, "{start}..{end}");
    drop(agent);
    while rx.recv().await.is_some() {}
    // Every line is within the limit, and the log reads back.
    let path = store.locate("huge").unwrap().unwrap().path;
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.lines().all(|l| l.len() < 8 << 10));
    let surface = dsh_store::SessionQuery::read_surface(&store, "huge").unwrap();
    // The older nodes stay before the checkpoint; the prompt and the reply follow it.
    assert_eq!(surface.events.len(), start as usize + 3);
    assert_eq!(surface.events[start as usize].seq, checkpoint.seq);
}
