//! Network faults for the OpenAI-compatible provider (issue 7 item 6) not already covered by
//! `tests/openai_provider.rs`: TCP resets (before the response and mid-stream), a mixed
//! 502/503/504 storm, an SSE line cut off by the end of the body, invalid UTF-8 in a line,
//! an event whose `data:` lines add up past the limit, and a peer that does not speak HTTP.
//! A scripted server on 127.0.0.1 plays one reply per accepted connection. Last, real turns
//! through the agent: after provider failures every user message stays in the log.
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

use dsh_refs::agent::{Agent, AgentEvent};
use dsh_refs::llm::openai::{ApiKey, Backoff, OpenAiConfig, OpenAiProvider};
use dsh_refs::llm::{ChatRequest, LlmError, Provider, StreamEvent};
use dsh_store::{Event, EventData, Message, SessionHeader, SessionQuery, SessionStore};
use futures_util::StreamExt;
use pretty_assertions::assert_eq;
use serde_json::json;
use tokio_util::sync::CancellationToken;

mod common;
use common::scripted_http::{self, Options, Server, Step, chunk, delta, end, stream_head};

/// A 5xx-style error reply with a JSON body naming the code.
fn status(code: u16) -> Vec<Step> {
    let body = format!(r#"{{"error":{{"message":"upstream {code}"}}}}"#);
    scripted_http::status(code, &body, &[])
}

/// A server playing `replies` (then closing any further connection), with a short gap after
/// every write so consecutive writes arrive as separate segments.
async fn start(replies: Vec<Vec<Step>>) -> Server {
    let options = Options {
        fallback: Vec::new(),
        write_gap: Duration::from_millis(2),
    };
    Server::start_with(replies, options).await
}

fn good_stream(text: &str) -> Vec<Step> {
    let finish = json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
    vec![
        stream_head(),
        chunk(delta(text).as_bytes()),
        chunk(format!("data: {finish}\n\ndata: [DONE]\n\n").as_bytes()),
        end(),
    ]
}

fn config(server: &Server, max_retries: u32) -> OpenAiConfig {
    let mut c = OpenAiConfig::new(&server.base_url, "deepseek-chat", ApiKey::new("sk-x"));
    c.timeout = Duration::from_secs(10);
    c.max_retries = max_retries;
    c.backoff = Backoff {
        initial: Duration::from_millis(5),
        max: Duration::from_millis(20),
    };
    c.max_line_bytes = 1024;
    c
}

/// One call to the end: the events before the first error, and that error.
async fn run(config: OpenAiConfig) -> (Vec<StreamEvent>, Option<LlmError>) {
    let provider = OpenAiProvider::new(config).unwrap();
    let request = ChatRequest::new(vec![Message::user_text("hello?")]);
    let mut stream = provider.stream(request, CancellationToken::new());
    let mut events = Vec::new();
    let outcome = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(item) = stream.next().await {
            match item {
                Ok(ev) => events.push(ev),
                Err(e) => {
                    assert!(stream.next().await.is_none(), "nothing after an error");
                    return Some(e);
                }
            }
        }
        None
    })
    .await
    .expect("the provider must finish, not hang");
    (events, outcome)
}

fn text(s: &str) -> StreamEvent {
    StreamEvent::Text(s.into())
}

#[tokio::test]
async fn resets_before_the_response_are_retried_within_the_budget() {
    let server = start(vec![
        vec![Step::ResetAtOnce],
        vec![Step::Reset],
        good_stream("ok"),
    ])
    .await;
    let (events, err) = run(config(&server, 2)).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(events, vec![text("ok")]);
    assert_eq!(server.connections(), 3);
}

#[tokio::test]
async fn a_reset_storm_ends_in_a_network_error_after_the_budget() {
    let server = start(vec![vec![Step::Reset]; 6]).await;
    let (events, err) = run(config(&server, 2)).await;
    let err = err.unwrap();
    assert_eq!(events, vec![]);
    assert_eq!(err.code(), "LLM_NETWORK", "{err}");
    assert_eq!(server.connections(), 3, "max_retries = 2 → 3 attempts");
}

#[tokio::test]
async fn a_reset_mid_stream_keeps_what_arrived_and_is_not_retried() {
    let server = start(vec![
        vec![
            stream_head(),
            chunk(delta("partial").as_bytes()),
            Step::Reset,
        ],
        good_stream("again"),
    ])
    .await;
    let (events, err) = run(config(&server, 2)).await;
    assert_eq!(events, vec![text("partial")]);
    let err = err.unwrap();
    assert_eq!(err.code(), "LLM_BAD_STREAM", "{err}");
    assert!(err.to_string().contains("reset"), "{err}");
    assert_eq!(server.connections(), 1, "content was streamed: no retry");
}

#[tokio::test]
async fn a_mixed_gateway_storm_recovers_or_gives_up_cleanly() {
    let server = start(vec![
        status(502),
        status(503),
        status(504),
        good_stream("ok"),
    ])
    .await;
    let (events, err) = run(config(&server, 3)).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(events, vec![text("ok")]);
    assert_eq!(server.connections(), 4);

    let server = start(vec![status(503), status(502), status(504), status(500)]).await;
    let (events, err) = run(config(&server, 2)).await;
    let err = err.unwrap();
    assert_eq!(events, vec![]);
    assert_eq!(err.code(), "LLM_SERVER");
    assert!(err.to_string().contains("upstream 504"), "{err}");
    assert_eq!(server.connections(), 3);
}

#[tokio::test]
async fn a_line_cut_off_by_the_end_of_the_body_is_a_bad_stream() {
    let server = start(vec![vec![
        stream_head(),
        chunk(delta("first").as_bytes()),
        chunk(br#"data: {"choices":[{"index":0,"delta":{"content":"sec"#),
        end(),
    ]])
    .await;
    let (events, err) = run(config(&server, 2)).await;
    assert_eq!(events, vec![text("first")]);
    assert_eq!(err.unwrap().code(), "LLM_BAD_STREAM");
    assert_eq!(server.connections(), 1);
}

#[tokio::test]
async fn invalid_utf8_in_a_line_is_a_bad_stream() {
    let mut line = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"".to_vec();
    line.extend_from_slice(b"\xff\xfe\"}}]}\n\n");
    let server = start(vec![vec![stream_head(), chunk(&line), end()]]).await;
    let (events, err) = run(config(&server, 2)).await;
    assert_eq!(events, vec![]);
    assert_eq!(err.unwrap().code(), "LLM_BAD_STREAM");
}

#[tokio::test]
async fn an_event_of_many_short_data_lines_is_bounded_too() {
    // Each line is short, but together they exceed the 1024-byte limit.
    let line = format!("data: {}\n", "y".repeat(100));
    let server = start(vec![vec![
        stream_head(),
        chunk(line.repeat(20).as_bytes()),
        chunk(b"\n"),
        end(),
    ]])
    .await;
    let (events, err) = run(config(&server, 2)).await;
    assert_eq!(events, vec![]);
    let err = err.unwrap();
    assert_eq!(err.code(), "LLM_BAD_STREAM");
    assert!(err.to_string().contains("1024"), "{err}");
}

#[tokio::test]
async fn a_peer_that_does_not_speak_http_is_a_clear_error() {
    let garbage = || vec![Step::Write(b"SSH-2.0-OpenSSH_9.6\r\n\x00\x01\x02".to_vec())];
    let server = start(vec![garbage(), garbage(), garbage()]).await;
    let (events, err) = run(config(&server, 2)).await;
    assert_eq!(events, vec![]);
    let err = err.unwrap();
    assert_eq!(err.code(), "LLM_NETWORK", "{err}");
    assert!(err.to_string().contains("invalid HTTP"), "{err}");
    assert_eq!(
        server.connections(),
        3,
        "retried within the budget, then given up"
    );
}

#[tokio::test]
async fn a_bad_chunk_size_mid_body_is_a_clear_error() {
    let server = start(vec![vec![
        stream_head(),
        chunk(delta("ok").as_bytes()),
        Step::Write(b"zz\r\nnot a chunk\r\n".to_vec()),
    ]])
    .await;
    let (events, err) = run(config(&server, 2)).await;
    assert_eq!(events, vec![text("ok")]);
    let err = err.unwrap();
    assert_eq!(err.code(), "LLM_BAD_STREAM", "{err}");
    assert_eq!(server.connections(), 1);
}

// ---------------------------------------------------------------------------------------
// A real turn: the agent over the OpenAI provider, with the log on disk.

/// Events until the next `turn/end` (returned last); errors reported on the way.
async fn until_turn_end(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<AgentEvent>,
) -> (Vec<Event>, Vec<String>) {
    let (mut appended, mut errors) = (Vec::new(), Vec::new());
    loop {
        let ev = tokio::time::timeout(Duration::from_secs(30), rx.recv())
            .await
            .expect("agent event in time")
            .expect("agent channel open");
        match ev {
            AgentEvent::Appended(e) => {
                let end = matches!(e.data, EventData::TurnEnd { .. });
                appended.push(e);
                if end {
                    return (appended, errors);
                }
            }
            AgentEvent::Error { code, .. } => errors.push(code.to_owned()),
            AgentEvent::Status(_)
            | AgentEvent::Staged { .. }
            | AgentEvent::Discarded { .. }
            | AgentEvent::Warning { .. } => {}
        }
    }
}

fn turn_end_kind(events: &[Event]) -> String {
    match events.last().map(|e| &e.data) {
        Some(EventData::TurnEnd { reason, .. }) => reason.kind.to_string(),
        other => panic!("turn/end expected, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_failures_in_real_turns_keep_the_user_messages_and_the_session_recovers() {
    let server = start(vec![
        // Turn 1: a 503 storm beyond the retry budget.
        status(503),
        status(503),
        status(503),
        // Turn 2: a reset after part of the reply streamed.
        vec![
            stream_head(),
            chunk(delta("half a rep").as_bytes()),
            Step::Reset,
        ],
        // Turn 3: the server is back.
        good_stream("recovered"),
    ])
    .await;
    let tmp = tempfile::tempdir().unwrap();
    let store = SessionStore::new(tmp.path());
    let writer = store
        .open_writer("net", Some(SessionHeader::new("net", 1, None)))
        .unwrap();
    let provider = Arc::new(OpenAiProvider::new(config(&server, 2)).unwrap());
    let (agent, mut rx) = Agent::spawn(writer, provider);

    agent.followup(Message::user_text("first question"));
    let (events, errors) = until_turn_end(&mut rx).await;
    assert_eq!(turn_end_kind(&events), "error");
    assert_eq!(errors, vec!["LLM_SERVER".to_owned()]);

    agent.followup(Message::user_text("second question"));
    let (events, errors) = until_turn_end(&mut rx).await;
    assert_eq!(turn_end_kind(&events), "error");
    assert_eq!(errors, vec!["LLM_BAD_STREAM".to_owned()]);

    agent.followup(Message::user_text("third question"));
    let (events, errors) = until_turn_end(&mut rx).await;
    assert_eq!(turn_end_kind(&events), "completed");
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(server.connections(), 5);

    // Release the writer, then read what is on disk.
    drop(agent);
    while tokio::time::timeout(Duration::from_secs(30), rx.recv())
        .await
        .expect("loop stops")
        .is_some()
    {}
    let surface = store.read_surface("net").unwrap();
    let texts: Vec<String> = surface
        .events
        .iter()
        .filter(|e| e.message().is_some_and(Message::is_direct_user))
        .map(|e| e.message().unwrap().joined_text())
        .collect();
    assert_eq!(
        texts,
        ["first question", "second question", "third question"],
        "every user message stays in the log"
    );
    let last = surface.events.last().unwrap().message().unwrap();
    assert_eq!(last.joined_text(), "recovered");
}
