//! A tool round written through the store's writer (docs/session-store.md: tool rounds):
//! dsh's shapes pass the rule book, a step that leaves a call unanswered is refused, and a
//! log a crash left inside a tool round is closed on reopen as dsh's repair closes it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a failure should stop the test

use dsh_store::event::TurnEndReason;
use dsh_store::kinds::TurnEndKind;
use dsh_store::tool_round::{
    TOOL_NOT_STARTED, TOOL_OUTCOME_UNKNOWN, ToolCallBlock, ToolResultBlock, tool_call_block,
    tool_call_data, tool_result_data, tool_result_message,
};
use dsh_store::{
    ContentBlock, EventData, Message, NewEvent, Role, SessionHeader, SessionStore, Source,
    StoreError,
};
use serde_json::{Map, Value, json};

fn calls() -> Vec<ToolCallBlock> {
    ["c1", "c2"]
        .iter()
        .map(|id| ToolCallBlock {
            id: (*id).to_owned(),
            name: "search_references".into(),
            arguments: r#"{"ref":1,"query":"kafka"}"#.into(),
        })
        .collect()
}

/// Turn 1 opened, step 1 asking for `c1` and `c2`, `c1`'s call logged.
fn open_round(turn: u64) -> Vec<NewEvent> {
    let asking = Message::new(
        Role::Assistant,
        calls()
            .iter()
            .map(|c| tool_call_block(&c.id, &c.name, &c.arguments))
            .collect(),
        Source::model("offline", "offline-echo"),
    );
    vec![
        NewEvent::plain(EventData::TurnStart {
            turn,
            trigger: json!({"kind": "message", "source": {"kind": "user"}}),
            extra: Map::new(),
        }),
        NewEvent::appended(EventData::UserMessage(Message::user_text("recall: kafka"))),
        NewEvent::plain(EventData::StepStart {
            turn,
            step: 1,
            extra: Map::new(),
        }),
        NewEvent::appended(EventData::AssistantMessage {
            turn,
            step: 1,
            message: asking,
            usage: None,
            extra: Map::new(),
        }),
        NewEvent::plain(tool_call_data(turn, 1, &calls()[0])),
    ]
}

#[test]
fn a_crash_inside_a_tool_round_is_closed_as_dsh_closes_it() {
    let tmp = tempfile::tempdir().unwrap();
    let store = SessionStore::new(tmp.path());
    let header = SessionHeader::new("s", 1, Some("/w".into()));
    let mut w = store.open_writer("s", Some(header)).unwrap();
    let written = w.append(open_round(1)).unwrap();
    let call_seq = written.last().unwrap().seq;
    drop(w);

    let mut w = store.open_writer("s", None).unwrap();
    let closers = w.interrupted_closers();
    let appended = w.append(closers).unwrap();
    let kinds: Vec<&str> = appended.iter().map(dsh_store::Event::kind).collect();
    assert_eq!(
        kinds,
        ["tool/result", "tool/result", "step/end", "turn/end"]
    );
    // The call recorded as started: outcome unknown, citing its tool/call.
    let first = &appended[0];
    assert_eq!(first.source_event_seqs, Some(vec![call_seq]));
    let EventData::ToolResult { message, extra, .. } = &first.data else {
        panic!("{first:?}")
    };
    assert_eq!(extra["error"]["code"], json!(TOOL_OUTCOME_UNKNOWN));
    let r = ToolResultBlock::of(message).unwrap();
    assert_eq!((r.call_id.as_str(), r.is_error), ("c1", true));
    assert_eq!(
        message.source.as_ref().unwrap().0,
        json!({"kind": "tool", "callId": "c1"})
    );
    // The call never started: not started, citing nothing.
    let EventData::ToolResult { extra, message, .. } = &appended[1].data else {
        panic!()
    };
    assert_eq!(extra["error"]["code"], json!(TOOL_NOT_STARTED));
    assert_eq!(appended[1].source_event_seqs, None);
    assert_eq!(ToolResultBlock::of(message).unwrap().call_id, "c2");
    let EventData::TurnEnd { reason, .. } = &appended[3].data else {
        panic!()
    };
    assert_eq!(reason.kind, TurnEndKind::Interrupted);
    drop(w);
    // The closed log breaks no rule, and reopening closes nothing more.
    let report = store.check_session("s").unwrap();
    assert!(report.findings.is_empty(), "{:?}", report.findings);
    let w = store.open_writer("s", None).unwrap();
    assert!(w.interrupted_closers().is_empty());
}

#[test]
fn a_step_that_leaves_a_call_unanswered_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let store = SessionStore::new(tmp.path());
    let header = SessionHeader::new("s", 1, Some("/w".into()));
    let mut w = store.open_writer("s", Some(header)).unwrap();
    let mut batch = open_round(1);
    batch.push(NewEvent::tool_result(
        tool_result_data(1, 1, tool_result_message("c1", "found", false), None),
        Some(3),
    ));
    batch.push(NewEvent::plain(EventData::StepEnd {
        turn: 1,
        step: 1,
        extra: Map::new(),
    }));
    match w.append(batch) {
        Err(StoreError::RuleBroken { .. }) => {}
        other => panic!("{other:?}"),
    }
    // Answering the second call as never started makes the same step acceptable.
    let mut batch = open_round(1);
    batch.push(NewEvent::tool_result(
        tool_result_data(1, 1, tool_result_message("c1", "found", false), None),
        Some(4),
    ));
    batch.push(NewEvent::tool_result(
        dsh_store::tool_round::not_started_data(1, 1, "c2"),
        None,
    ));
    batch.push(NewEvent::plain(EventData::StepEnd {
        turn: 1,
        step: 1,
        extra: Map::new(),
    }));
    batch.push(NewEvent::plain(EventData::TurnEnd {
        turn: 1,
        reason: TurnEndReason::of(TurnEndKind::Completed),
        extra: Map::new(),
    }));
    w.append(batch).unwrap();
    // What a reader gets back from the result blocks.
    let events = w.read_all_events().unwrap();
    let calls_back: Vec<ToolCallBlock> = events
        .iter()
        .filter_map(|e| match &e.data {
            EventData::AssistantMessage { message, .. } => Some(message),
            _ => None,
        })
        .flat_map(|m| m.content.iter().filter_map(ToolCallBlock::of))
        .collect();
    assert_eq!(calls_back, calls());
    let texts: Vec<Value> = events
        .iter()
        .filter_map(|e| e.message())
        .filter(|m| {
            m.content
                .iter()
                .any(|b| matches!(b, ContentBlock::Other(_)))
        })
        .filter_map(ToolResultBlock::of)
        .map(|r| json!([r.call_id, r.is_error]))
        .collect();
    assert_eq!(texts, vec![json!(["c1", false]), json!(["c2", true])]);
}
