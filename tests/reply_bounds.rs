//! Replies are bounded (issue 23 items 2 and 4, docs/llm-providers.md: reply bounds): a
//! reply stops at `[model] max_reply_bytes` or at the turn's `max_turn_secs`, keeps what
//! arrived as its `assistant/message` (`interrupted: true`), ends the turn with the error in
//! dsh's `turn/end` shape, and leaves the session usable; Esc (cancel) stops a stream of any
//! size; a fast stream is logged as few chunks.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a failure should stop the test

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::{self, BoxStream};
use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use dsh_refs::agent::{Agent, AgentEvent};
use dsh_refs::llm::configured::Configured;
use dsh_refs::llm::{ChatRequest, LlmError, Provider, ReplyLimits, StreamEvent};
use dsh_store::event::{EventData, TurnEndKind, now_ms};
use dsh_store::{Event, Message, SessionHeader, SessionQuery, SessionStore};

/// How one call streams.
#[derive(Clone)]
enum Flow {
    /// These events, then the end.
    Reply(Vec<StreamEvent>),
    /// The first events, then `piece` again and again, always ready.
    Endless(Vec<StreamEvent>, StreamEvent),
    /// `piece` every `every`, forever.
    Trickle(StreamEvent, Duration),
}

/// Streams the flows in order (then "ok"), counting the items it handed out.
struct Flows {
    flows: Mutex<Vec<Flow>>,
    handed: Arc<std::sync::atomic::AtomicU64>,
}

impl Flows {
    fn new(flows: Vec<Flow>) -> Arc<Flows> {
        Arc::new(Flows {
            flows: Mutex::new(flows.into_iter().rev().collect()),
            handed: Arc::default(),
        })
    }
}

impl Provider for Flows {
    fn name(&self) -> &'static str {
        "flows"
    }
    fn model(&self) -> &'static str {
        "f-1"
    }
    fn stream(
        &self,
        _request: ChatRequest,
        _cancel: CancellationToken,
    ) -> BoxStream<'static, Result<StreamEvent, LlmError>> {
        let flow = self
            .flows
            .lock()
            .unwrap()
            .pop()
            .unwrap_or_else(|| Flow::Reply(vec![StreamEvent::Text("ok".into())]));
        let handed = Arc::clone(&self.handed);
        let count = move |e: StreamEvent| {
            handed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Ok(e)
        };
        match flow {
            Flow::Reply(events) => stream::iter(events).map(count).boxed(),
            Flow::Endless(first, piece) => stream::iter(first)
                .chain(stream::repeat(piece))
                .map(count)
                .boxed(),
            Flow::Trickle(piece, every) => stream::unfold((), move |()| {
                let piece = piece.clone();
                async move {
                    tokio::time::sleep(every).await;
                    Some((piece, ()))
                }
            })
            .map(count)
            .boxed(),
        }
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

fn bounded(provider: Arc<Flows>, max_reply_bytes: u64, max_turn: Duration) -> Arc<dyn Provider> {
    Arc::new(Configured::new(provider).with_reply_limits(ReplyLimits {
        max_reply_bytes,
        max_turn,
    }))
}

fn spawn(
    fx: &Fixture,
    id: &str,
    provider: Arc<dyn Provider>,
) -> (Agent, mpsc::UnboundedReceiver<AgentEvent>) {
    let header = SessionHeader::new(id, now_ms(), None);
    let writer = fx.store.open_writer(id, Some(header)).unwrap();
    Agent::spawn(writer, provider)
}

/// Events until the turn's end (a hang guard of 60 s of real time, never reached).
async fn turn(rx: &mut mpsc::UnboundedReceiver<AgentEvent>) -> Vec<AgentEvent> {
    let mut seen = Vec::new();
    loop {
        let ev = tokio::time::timeout(Duration::from_secs(3600), rx.recv())
            .await
            .expect("the turn ends")
            .expect("agent channel open");
        let end = matches!(
            &ev,
            AgentEvent::Appended(Event {
                data: EventData::TurnEnd { .. },
                ..
            })
        );
        seen.push(ev);
        if end {
            return seen;
        }
    }
}

fn errors(seen: &[AgentEvent]) -> Vec<&'static str> {
    seen.iter()
        .filter_map(|e| match e {
            AgentEvent::Error { code, .. } => Some(*code),
            _ => None,
        })
        .collect()
}

fn dsh_valid(log: &[Event]) {
    let mut book = dsh_store::RuleBook::new();
    let mut broken = Vec::new();
    for e in log {
        broken.extend(book.admit(
            e,
            &dsh_store::Envelope::of_event(e),
            dsh_store::Mode::Append,
        ));
    }
    broken.extend(book.finish());
    assert!(broken.is_empty(), "{broken:#?}");
}

/// The last `assistant/message` of `log`: its text, reasoning and whether it is marked
/// interrupted.
fn last_reply(log: &[Event]) -> (String, String, bool) {
    let e = log
        .iter()
        .rev()
        .find(|e| e.kind() == "assistant/message")
        .unwrap();
    let EventData::AssistantMessage { message, extra, .. } = &e.data else {
        panic!("{e:?}")
    };
    let text = message.joined_text();
    let reasoning: String = message
        .content
        .iter()
        .filter_map(|b| match b {
            dsh_store::ContentBlock::Reasoning { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    (
        text,
        reasoning,
        extra.get("interrupted") == Some(&json!(true)),
    )
}

fn turn_end(log: &[Event]) -> serde_json::Value {
    let e = log.iter().rev().find(|e| e.kind() == "turn/end").unwrap();
    serde_json::to_value(e).unwrap()["data"]["reason"].clone()
}

#[tokio::test]
async fn a_reply_over_max_reply_bytes_is_cut_kept_and_ends_the_turn_with_its_error() {
    // Before: an endless or oversized reply was held and logged whole (17-21 MB lines that
    // locked the session out), and `send` reported success.
    let fx = fixture();
    let flows = Flows::new(vec![Flow::Endless(
        vec![StreamEvent::Reasoning("r".repeat(3000))],
        StreamEvent::Text("éa".into()),
    )]);
    let (agent, mut rx) = spawn(
        &fx,
        "big",
        bounded(flows.clone(), 10_000, Duration::from_secs(600)),
    );
    agent.followup(Message::user_text("write forever"));
    let seen = turn(&mut rx).await;
    assert_eq!(errors(&seen), ["LLM_REPLY_TOO_LARGE"]);
    let log = agent.snapshot_events();
    let (text, reasoning, interrupted) = last_reply(&log);
    assert!(interrupted);
    assert_eq!(reasoning.len(), 3000);
    // Cut at a character boundary at most at the limit: 7000 bytes of "éa" pieces (3 bytes)
    // end in the middle of an "é".
    assert_eq!(text.len() + reasoning.len(), 9_999);
    assert!(text.starts_with("éaéa") && text.ends_with("éa"));
    let reason = turn_end(&log);
    assert_eq!(reason["kind"], "error");
    assert_eq!(reason["error"]["code"], "LLM_REPLY_TOO_LARGE");
    assert!(
        reason["error"]["message"]
            .as_str()
            .unwrap()
            .contains("10000 bytes"),
        "{reason}"
    );
    // The chunk stream ends with the open block's end and an error finish.
    let chunks: Vec<&serde_json::Value> = log
        .iter()
        .filter_map(|e| match &e.data {
            EventData::AssistantChunk { chunk, .. } => Some(chunk),
            _ => None,
        })
        .collect();
    let last_two: Vec<&str> = chunks[chunks.len() - 2..]
        .iter()
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    assert_eq!(last_two, ["block-end", "finish"]);
    assert_eq!(
        chunks.last().unwrap()["reason"]["failure"]["code"],
        "LLM_REPLY_TOO_LARGE"
    );
    // Items that were ready at once became few chunk events.
    assert!(chunks.len() < 20, "{} chunks", chunks.len());
    dsh_valid(&log);
    // The session stays usable: the next turn completes, the log reopens and checks clean.
    agent.followup(Message::user_text("and now briefly"));
    let seen = turn(&mut rx).await;
    assert!(errors(&seen).is_empty());
    assert_eq!(turn_end(&agent.snapshot_events())["kind"], "completed");
    drop(agent);
    while rx.recv().await.is_some() {}
    let report = fx.store.check_session("big").unwrap();
    assert!(report.findings.is_empty(), "{:?}", report.findings);
    assert_eq!(report.not_loaded.lines, 0);
    let surface = fx.store.read_surface("big").unwrap();
    assert_eq!(surface.events.len(), 4);
    assert!(fx.root.exists());
}

#[tokio::test(start_paused = true)]
async fn a_turn_past_max_turn_secs_is_cut_at_its_deadline() {
    // Before: `timeout_secs` bounded each gap only, so one byte every 2 s kept a turn going
    // forever. The clock is tokio's paused clock: no real time passes.
    let fx = fixture();
    let flows = Flows::new(vec![Flow::Trickle(
        StreamEvent::Text("x".into()),
        Duration::from_secs(2),
    )]);
    let (agent, mut rx) = spawn(
        &fx,
        "slow",
        bounded(flows, 1 << 20, Duration::from_secs(61)),
    );
    let started = tokio::time::Instant::now();
    agent.followup(Message::user_text("take your time"));
    let seen = turn(&mut rx).await;
    assert_eq!(errors(&seen), ["LLM_TURN_DEADLINE"]);
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(61) && waited < Duration::from_secs(63),
        "{waited:?}"
    );
    let log = agent.snapshot_events();
    let (text, _, interrupted) = last_reply(&log);
    assert!(interrupted);
    assert_eq!(text, "x".repeat(30));
    let reason = turn_end(&log);
    assert_eq!(reason["error"]["code"], "LLM_TURN_DEADLINE");
    dsh_valid(&log);
}

#[tokio::test]
async fn cancel_stops_an_endless_stream_at_any_size() {
    // Before: Esc at 4 GB did not stop an endless stream. Here the bound is far away (1 TiB):
    // only the cancel can end the turn.
    let fx = fixture();
    let flows = Flows::new(vec![Flow::Endless(
        vec![],
        StreamEvent::Text("z".repeat(1024)),
    )]);
    let (agent, mut rx) = spawn(
        &fx,
        "flood",
        bounded(flows.clone(), 1 << 40, Duration::from_secs(600)),
    );
    agent.followup(Message::user_text("flood"));
    // Wait until a few MiB streamed, then cancel.
    loop {
        let ev = tokio::time::timeout(Duration::from_secs(60), rx.recv())
            .await
            .unwrap()
            .unwrap();
        if flows.handed.load(std::sync::atomic::Ordering::Relaxed) > 4096 {
            break;
        }
        drop(ev);
    }
    agent.cancel();
    let seen = turn(&mut rx).await;
    assert!(errors(&seen).is_empty(), "{:?}", errors(&seen));
    let log = agent.snapshot_events();
    assert_eq!(turn_end(&log)["kind"], "aborted");
    assert!(matches!(
        &log.last().unwrap().data,
        EventData::TurnEnd { reason, .. } if reason.kind == TurnEndKind::Aborted
    ));
}

#[tokio::test]
async fn a_summary_cut_at_its_bound_abandons_the_compaction() {
    let fx = fixture();
    let flows = Flows::new(vec![
        Flow::Reply(vec![StreamEvent::Text("an answer".into())]),
        Flow::Endless(vec![], StreamEvent::Text("summary ".into())),
    ]);
    let (agent, mut rx) = spawn(&fx, "sum", bounded(flows, 4096, Duration::from_secs(600)));
    agent.followup(Message::user_text("a question"));
    turn(&mut rx).await;
    let before = fx.store.read_surface("sum").unwrap().events;
    agent.compact();
    let mut seen = turn(&mut rx).await;
    // The error is reported once the compaction's turn has ended.
    while errors(&seen).is_empty() {
        seen.push(rx.recv().await.unwrap());
    }
    assert_eq!(errors(&seen), ["LLM_REPLY_TOO_LARGE"]);
    let log = agent.snapshot_events();
    let end = log
        .iter()
        .rev()
        .find(|e| e.kind() == "compaction/end")
        .unwrap();
    let data = serde_json::to_value(end).unwrap()["data"].clone();
    assert!(
        data["error"]
            .as_str()
            .unwrap()
            .starts_with("LLM_REPLY_TOO_LARGE"),
        "{data}"
    );
    assert_eq!(turn_end(&log)["error"]["code"], "LLM_REPLY_TOO_LARGE");
    assert_eq!(fx.store.read_surface("sum").unwrap().events, before);
    dsh_valid(&log);
}
