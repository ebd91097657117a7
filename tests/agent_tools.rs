//! Tools in the agent (issue 37 item 3), against a provider that plays tool calls and a
//! tool box under the test's control: the round is logged as dsh logs one, every log
//! passes `check`, bad calls are error results, a cancel during a call closes the round,
//! a crash inside a round is closed on reopen, steering waits for the step boundary, and a
//! turn's tool steps are bounded.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a failure should stop the test

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use futures_util::{FutureExt, StreamExt, stream};
use pretty_assertions::assert_eq;
use serde_json::{Map, Value, json};
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

use dsh_refs::agent::tools::{MAX_TOOL_STEPS, ToolBox, ToolOutcome, TurnTools};
use dsh_refs::agent::{Agent, AgentEvent, dispatch};
use dsh_refs::llm::{ChatRequest, LlmError, Provider, StreamEvent, ToolCallDelta, ToolSpec};
use dsh_store::event::now_ms;
use dsh_store::tool_round::{ToolCallBlock, ToolResultBlock, tool_call_block, tool_call_data};
use dsh_store::{
    ContentBlock, Event, EventData, Message, NewEvent, Role, SessionHeader, SessionStore, Source,
};

/// What the model does in one call: its stream items.
type Turn = Vec<StreamEvent>;

/// A model that plays `turns` in order (then says "done"), recording each request.
struct Player {
    turns: Mutex<VecDeque<Turn>>,
    seen: Mutex<Vec<ChatRequest>>,
}

impl Player {
    fn new(turns: Vec<Turn>) -> Arc<Player> {
        Arc::new(Player {
            turns: Mutex::new(turns.into()),
            seen: Mutex::new(Vec::new()),
        })
    }

    fn seen(&self) -> Vec<ChatRequest> {
        self.seen.lock().unwrap().clone()
    }
}

impl Provider for Player {
    fn name(&self) -> &'static str {
        "player"
    }
    fn model(&self) -> &'static str {
        "p-1"
    }
    fn stream(
        &self,
        request: ChatRequest,
        _cancel: CancellationToken,
    ) -> BoxStream<'static, Result<StreamEvent, LlmError>> {
        self.seen.lock().unwrap().push(request);
        let turn = self
            .turns
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_else(|| vec![StreamEvent::Text("done".into())]);
        stream::iter(turn.into_iter().map(Ok)).boxed()
    }
}

/// A call streamed in two pieces (id and name on the first).
fn call(index: u64, id: &str, name: &str, arguments: &str) -> Vec<StreamEvent> {
    let half = arguments.len() / 2;
    vec![
        StreamEvent::ToolCall(ToolCallDelta {
            index,
            id: Some(id.into()),
            name: Some(name.into()),
            arguments: arguments[..half].into(),
        }),
        StreamEvent::ToolCall(ToolCallDelta {
            index,
            id: None,
            name: None,
            arguments: arguments[half..].into(),
        }),
    ]
}

/// A tool box offering `lookup` while the turn has references; each call answers with its
/// arguments, or waits for `release` when `hold` is set.
struct Lookup {
    calls: Mutex<Vec<(Map<String, Value>, usize)>>,
    hold: bool,
    started: Arc<Notify>,
}

impl Lookup {
    fn new(hold: bool) -> Arc<Lookup> {
        Arc::new(Lookup {
            calls: Mutex::new(Vec::new()),
            hold,
            started: Arc::new(Notify::new()),
        })
    }
}

impl ToolBox for Lookup {
    fn offered(&self, turn: &TurnTools) -> Vec<ToolSpec> {
        if turn.references.is_empty() {
            return Vec::new();
        }
        vec![ToolSpec {
            name: "lookup".into(),
            description: "look it up".into(),
            parameters: json!({"type": "object"}),
        }]
    }

    fn run(
        &self,
        _: &str,
        args: Map<String, Value>,
        state: &TurnTools,
        stop: CancellationToken,
    ) -> BoxFuture<'static, ToolOutcome> {
        self.calls.lock().unwrap().push((args.clone(), state.calls));
        let (hold, started) = (self.hold, Arc::clone(&self.started));
        async move {
            started.notify_one();
            if hold {
                stop.cancelled().await;
            }
            ToolOutcome::ok(format!("found {}", Value::Object(args)))
        }
        .boxed()
    }
}

/// A session-reference context naming `sess-a` (what a message with one mention logs).
fn reference_context() -> Message {
    Message::new(
        Role::User,
        vec![ContentBlock::text(
            "## Referenced sessions\n\n<referenced-sessions>\n[]\n</referenced-sessions>",
        )],
        Source::session_reference(json!([{"sessionId": "sess-a", "label": "A", "inputIndex": 0}])),
    )
}

struct Setup {
    _dir: tempfile::TempDir,
    store: SessionStore,
    agent: Agent,
    events: mpsc::UnboundedReceiver<AgentEvent>,
}

fn setup(model: Arc<Player>, tools: Arc<dyn ToolBox>, prefix: Vec<NewEvent>) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path());
    let header = SessionHeader::new("target", now_ms(), Some("/w".into()));
    let mut writer = store.open_writer("target", Some(header)).unwrap();
    if !prefix.is_empty() {
        writer.append(prefix).unwrap();
    }
    let (agent, events) = Agent::spawn(writer, model);
    agent.set_tools(tools);
    Setup {
        _dir: dir,
        store,
        agent,
        events,
    }
}

/// Send "go" with a reference context (a message that carries a session reference).
fn go(agent: &Agent) {
    dispatch(agent, Message::user_text("go"), Some(reference_context()));
}

/// Events until the agent ends a turn; all of them, in order.
async fn until_turn_end(events: &mut mpsc::UnboundedReceiver<AgentEvent>) -> Vec<Event> {
    let mut out = Vec::new();
    loop {
        let next = tokio::time::timeout(Duration::from_secs(20), events.recv())
            .await
            .expect("the turn ends in time")
            .expect("the agent runs");
        if let AgentEvent::Appended(e) = next {
            let end = matches!(e.data, EventData::TurnEnd { .. });
            out.push(e);
            if end {
                return out;
            }
        }
    }
}

/// The log's events without chunks: type, and for results their call and error code.
fn kinds(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e.kind() != "assistant/chunk")
        .map(|e| match &e.data {
            EventData::ToolResult { message, extra, .. } => {
                let r = ToolResultBlock::of(message).unwrap();
                let code = extra
                    .get("error")
                    .and_then(|e| e.get("code"))
                    .and_then(Value::as_str)
                    .unwrap_or("ok");
                format!("tool/result {} {code}", r.call_id)
            }
            EventData::Other { kind, data } if kind == "tool/call" => {
                format!("tool/call {}", data["callId"].as_str().unwrap())
            }
            _ => e.kind().to_owned(),
        })
        .collect()
}

/// The turn ended as `kind`, and the log breaks no rule.
fn assert_ends(turn: &[Event], store: &SessionStore, kind: &dsh_store::event::TurnEndKind) {
    match turn.last().map(|e| &e.data) {
        Some(EventData::TurnEnd { reason, .. }) => assert_eq!(&reason.kind, kind),
        other => panic!("{other:?}"),
    }
    assert_checks(store);
}

fn assert_checks(store: &SessionStore) {
    let report = store.check_session("target").unwrap();
    assert!(report.findings.is_empty(), "{:?}", report.findings);
}

#[tokio::test]
async fn a_tool_round_is_logged_as_dsh_logs_it_and_read_back_by_the_next_step() {
    let mut first = vec![StreamEvent::Text("Let me look.".into())];
    first.extend(call(0, "c1", "lookup", r#"{"q":"kafka"}"#));
    first.extend(call(1, "c2", "lookup", r#"{"q":"redis"}"#));
    let model = Player::new(vec![first, vec![StreamEvent::Text("It was kafka.".into())]]);
    let tools = Lookup::new(false);
    let mut s = setup(Arc::clone(&model), tools.clone(), Vec::new());
    dispatch(
        &s.agent,
        Message::user_text("what was it?"),
        Some(reference_context()),
    );
    let turn = until_turn_end(&mut s.events).await;
    assert_eq!(
        kinds(&turn),
        [
            "turn/start",
            "user/message",
            "user/message",
            "session/title",
            "step/start",
            "assistant/message",
            "tool/call c1",
            "tool/result c1 ok",
            "tool/call c2",
            "tool/result c2 ok",
            "step/end",
            "step/start",
            "assistant/message",
            "step/end",
            "turn/end",
        ]
    );
    // The asking message holds both calls; each result cites its call.
    let asked: Vec<ToolCallBlock> = turn
        .iter()
        .filter_map(Event::message)
        .flat_map(|m| m.content.iter().filter_map(ToolCallBlock::of))
        .collect();
    assert_eq!(asked.len(), 2);
    assert_eq!(asked[1].arguments, r#"{"q":"redis"}"#);
    for e in &turn {
        if let EventData::ToolResult { .. } = e.data {
            let cited = e.source_event_seqs.as_ref().unwrap()[0];
            assert!(
                turn.iter()
                    .any(|c| c.seq == cited && c.kind() == "tool/call")
            );
        }
    }
    // The tool saw the parsed arguments; the calls of the turn were counted.
    let calls = tools.calls.lock().unwrap().clone();
    assert_eq!(calls[0].0["q"], json!("kafka"));
    assert_eq!((calls[0].1, calls[1].1), (0, 1));
    // Step 1 offered the tool; step 2 read both results back.
    let seen = model.seen();
    assert_eq!(seen[0].tools.len(), 1);
    let results: Vec<String> = seen[1]
        .messages
        .iter()
        .filter_map(ToolResultBlock::of)
        .map(|r| r.text)
        .collect();
    assert_eq!(
        results,
        [r#"found {"q":"kafka"}"#, r#"found {"q":"redis"}"#]
    );
    assert_checks(&s.store);
}

#[tokio::test]
async fn a_turn_without_references_offers_no_tool() {
    let model = Player::new(vec![]);
    let mut s = setup(Arc::clone(&model), Lookup::new(false), Vec::new());
    dispatch(&s.agent, Message::user_text("hello"), None);
    until_turn_end(&mut s.events).await;
    assert!(model.seen()[0].tools.is_empty());
}

#[tokio::test]
async fn bad_calls_are_error_results_and_the_turn_goes_on() {
    let huge = format!(r#"{{"q":"{}"}}"#, "x".repeat(20_000));
    let mut first = call(0, "c1", "lookup", r#"{"q": "unfinished"#);
    first.extend(call(1, "c2", "lookup", &huge));
    first.extend(call(2, "c3", "rm_rf", "{}"));
    first.extend(call(3, "c4", "lookup", "[1, 2]"));
    let model = Player::new(vec![first]);
    let tools = Lookup::new(false);
    let mut s = setup(model, tools.clone(), Vec::new());
    go(&s.agent);
    let turn = until_turn_end(&mut s.events).await;
    let results: Vec<String> = kinds(&turn)
        .into_iter()
        .filter(|k| k.starts_with("tool/result"))
        .collect();
    assert_eq!(
        results,
        [
            "tool/result c1 TOOL_BAD_ARGUMENTS",
            "tool/result c2 TOOL_BAD_ARGUMENTS",
            "tool/result c3 TOOL_UNKNOWN",
            "tool/result c4 TOOL_BAD_ARGUMENTS",
        ]
    );
    assert!(tools.calls.lock().unwrap().is_empty());
    assert_ends(&turn, &s.store, &dsh_store::event::TurnEndKind::Completed);
}

#[tokio::test]
async fn a_cancel_during_a_call_closes_the_round_and_the_turn() {
    let mut first = call(0, "c1", "lookup", r#"{"q":"slow"}"#);
    first.extend(call(1, "c2", "lookup", r#"{"q":"never"}"#));
    let model = Player::new(vec![first]);
    let tools = Lookup::new(true);
    let mut s = setup(model, tools.clone(), Vec::new());
    go(&s.agent);
    tools.started.notified().await;
    s.agent.cancel();
    let turn = until_turn_end(&mut s.events).await;
    let tail: Vec<String> = kinds(&turn).into_iter().rev().take(5).collect();
    assert_eq!(
        tail,
        [
            "turn/end",
            "step/end",
            "tool/result c2 TOOL_NOT_STARTED",
            "tool/result c1 TOOL_CANCELLED",
            "tool/call c1",
        ]
    );
    assert_ends(&turn, &s.store, &dsh_store::event::TurnEndKind::Aborted);
}

#[tokio::test]
async fn a_crash_during_a_call_is_closed_on_reopen_as_dsh_closes_it() {
    let asking = Message::new(
        Role::Assistant,
        vec![tool_call_block("c1", "lookup", "{}")],
        Source::model("player", "p-1"),
    );
    let call_data = ToolCallBlock {
        id: "c1".into(),
        name: "lookup".into(),
        arguments: "{}".into(),
    };
    // The log as a SIGKILL while the tool ran leaves it: the call logged, no result.
    let prefix = vec![
        NewEvent::plain(EventData::TurnStart {
            turn: 1,
            trigger: json!({"kind": "message", "source": {"kind": "user"}}),
            extra: Map::new(),
        }),
        NewEvent::appended(EventData::UserMessage(Message::user_text("go"))),
        NewEvent::plain(EventData::StepStart {
            turn: 1,
            step: 1,
            extra: Map::new(),
        }),
        NewEvent::appended(EventData::AssistantMessage {
            turn: 1,
            step: 1,
            message: asking,
            usage: None,
            extra: Map::new(),
        }),
        NewEvent::plain(tool_call_data(1, 1, &call_data)),
    ];
    let mut s = setup(Player::new(vec![]), Lookup::new(false), prefix);
    let closed = until_turn_end(&mut s.events).await;
    assert_eq!(
        kinds(&closed),
        [
            "tool/result c1 TOOL_OUTCOME_UNKNOWN",
            "step/end",
            "turn/end"
        ]
    );
    // The session goes on: the next turn sends the closed round to the model.
    dispatch(&s.agent, Message::user_text("again"), None);
    until_turn_end(&mut s.events).await;
    assert_checks(&s.store);
}

#[tokio::test]
async fn steering_during_a_tool_round_lands_at_the_next_step() {
    let model = Player::new(vec![call(0, "c1", "lookup", r#"{"q":"x"}"#)]);
    let tools = Lookup::new(false);
    let mut s = setup(model, tools.clone(), Vec::new());
    go(&s.agent);
    tools.started.notified().await;
    s.agent.steer(Message::user_text("also check y"));
    let turn = until_turn_end(&mut s.events).await;
    let k = kinds(&turn);
    let steering = k.iter().position(|x| x == "steering/message").unwrap();
    assert_eq!(
        k[steering - 2..=steering + 1],
        [
            "tool/result c1 ok",
            "step/end",
            "steering/message",
            "step/start"
        ]
    );
    assert_checks(&s.store);
}

#[tokio::test]
async fn a_turn_calls_tools_in_a_bounded_number_of_steps() {
    let steps = usize::try_from(MAX_TOOL_STEPS).unwrap();
    let turns: Vec<Turn> = (0..steps + 3)
        .map(|i| call(0, &format!("c{i}"), "lookup", "{}"))
        .collect();
    let model = Player::new(turns);
    let mut s = setup(Arc::clone(&model), Lookup::new(false), Vec::new());
    go(&s.agent);
    let turn = until_turn_end(&mut s.events).await;
    let offered: Vec<usize> = model.seen().iter().map(|r| r.tools.len()).collect();
    assert_eq!(offered.len(), steps + 1);
    assert!(offered[..steps].iter().all(|&n| n == 1));
    assert_eq!(offered[steps], 0);
    // The step offered nothing still called: answered as an unknown tool, then one more
    // step without tools ends the turn.
    assert!(
        kinds(&turn)
            .iter()
            .any(|k| k == &format!("tool/result c{steps} TOOL_UNKNOWN")),
        "{:?}",
        kinds(&turn)
    );
    assert_checks(&s.store);
}
