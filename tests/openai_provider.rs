//! The OpenAI-compatible provider against a scripted HTTP/1.1 server on 127.0.0.1.
//! Each accepted connection plays the next scripted reply; every request is recorded.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a failure should stop the test
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    clippy::needless_pass_by_value,
    clippy::similar_names
)] // test code: small known values, helpers that take values for brevity

use std::time::Duration;

use dsh_refs::llm::openai::{ApiKey, Backoff, OpenAiConfig, OpenAiProvider};
use dsh_refs::llm::{ChatRequest, LlmError, Provider, StreamEvent, Usage};
use dsh_store::{ContentBlock, Message, Role, Source};
use futures_util::StreamExt;
use pretty_assertions::assert_eq;
use serde_json::json;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

mod common;
use common::scripted_http::{Server, Step, chunk, delta, end, status, stream_head};

const KEY: &str = "sk-test-4f1c9a";

fn reasoning(text: &str) -> String {
    format!(
        "data: {}\n\n",
        json!({"choices": [{"index": 0, "delta": {"reasoning_content": text, "content": null}}]})
    )
}

fn finish_and_usage() -> String {
    format!(
        "data: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        json!({"choices": [], "usage": {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16}})
    )
}

/// A well-formed streamed reply: reasoning, "Hello world", usage.
fn good_stream() -> Vec<Step> {
    vec![
        stream_head(),
        chunk(b": keep-alive\n\n"),
        chunk(reasoning("Thinking").as_bytes()),
        chunk(delta("Hello").as_bytes()),
        chunk(delta(" world").as_bytes()),
        chunk(finish_and_usage().as_bytes()),
        end(),
    ]
}

fn good_events() -> Vec<StreamEvent> {
    vec![
        StreamEvent::Reasoning("Thinking".into()),
        StreamEvent::Text("Hello".into()),
        StreamEvent::Text(" world".into()),
        StreamEvent::Usage(Usage {
            input_tokens: 11,
            output_tokens: 5,
        }),
    ]
}

fn config(server: &Server) -> OpenAiConfig {
    let mut c = OpenAiConfig::new(&server.base_url, "deepseek-chat", ApiKey::new(KEY));
    c.timeout = Duration::from_secs(10);
    c.max_retries = 2;
    c.backoff = Backoff {
        initial: Duration::from_millis(5),
        max: Duration::from_millis(20),
    };
    c
}

fn request() -> ChatRequest {
    ChatRequest::new(vec![
        Message::user_text("hello?"),
        Message::new(
            Role::Assistant,
            vec![ContentBlock::reasoning("hidden"), ContentBlock::text("hi")],
            Source::model("openai", "deepseek-chat"),
        ),
        Message::user_text("how are you"),
    ])
}

/// Run one call to the end: the events before the first error, and that error.
async fn run(config: OpenAiConfig) -> (Vec<StreamEvent>, Option<LlmError>) {
    run_with(config, CancellationToken::new()).await
}

async fn run_with(
    config: OpenAiConfig,
    cancel: CancellationToken,
) -> (Vec<StreamEvent>, Option<LlmError>) {
    let provider = OpenAiProvider::new(config).unwrap();
    let mut stream = provider.stream(request(), cancel);
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(ev) => events.push(ev),
            Err(e) => {
                assert!(stream.next().await.is_none(), "nothing after an error");
                return (events, Some(e));
            }
        }
    }
    (events, None)
}

fn assert_no_key(err: &LlmError) {
    assert!(!err.to_string().contains(KEY), "{err}");
    assert!(!format!("{err:?}").contains(KEY), "{err:?}");
}

#[tokio::test]
async fn streams_reasoning_text_and_usage_and_sends_the_right_request() {
    let server = Server::start(vec![good_stream()]).await;
    let (events, err) = run(config(&server)).await;
    assert_eq!(err, None);
    assert_eq!(events, good_events());

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let req = &requests[0];
    assert!(
        req.head
            .starts_with("POST /v1/chat/completions HTTP/1.1\r\n"),
        "{}",
        req.head
    );
    assert_eq!(req.header("authorization"), Some(format!("Bearer {KEY}")));
    assert_eq!(
        req.header("content-type").as_deref(),
        Some("application/json")
    );
    assert_eq!(
        req.json(),
        json!({
            "model": "deepseek-chat",
            "messages": [
                {"role": "user", "content": "hello?"},
                {"role": "assistant", "content": "hi"},
                {"role": "user", "content": "how are you"},
            ],
            "stream": true,
            "stream_options": {"include_usage": true},
        })
    );
}

#[tokio::test]
async fn no_key_means_no_authorization_header() {
    let server = Server::start(vec![good_stream()]).await;
    let mut c = config(&server);
    c.api_key = None;
    let (events, err) = run(c).await;
    assert_eq!((events, err), (good_events(), None));
    assert_eq!(server.requests()[0].header("authorization"), None);
}

#[tokio::test]
async fn sse_lines_split_across_tcp_writes_are_reassembled() {
    let text = delta("漢字 and more");
    let bytes = text.as_bytes();
    // Cut inside the JSON, inside a multi-byte char (漢 starts after `"content":"`), and
    // between the CR and LF of a CRLF line end.
    let cut_char = text.find('漢').unwrap() + 1;
    let crlf = b"data: {\"choices\":[{\"delta\":{\"content\":\"!\"}}]}\r\n\r\n";
    let server = Server::start(vec![vec![
        stream_head(),
        chunk(&bytes[..5]),
        Step::Pause(Duration::from_millis(20)),
        chunk(&bytes[5..cut_char]),
        Step::Pause(Duration::from_millis(20)),
        chunk(&bytes[cut_char..]),
        chunk(&crlf[..crlf.len() - 3]),
        Step::Pause(Duration::from_millis(20)),
        chunk(&crlf[crlf.len() - 3..]),
        chunk(finish_and_usage().as_bytes()),
        end(),
    ]])
    .await;
    let (events, err) = run(config(&server)).await;
    assert_eq!(err, None);
    assert_eq!(
        events,
        vec![
            StreamEvent::Text("漢字 and more".into()),
            StreamEvent::Text("!".into()),
            StreamEvent::Usage(Usage {
                input_tokens: 11,
                output_tokens: 5
            }),
        ]
    );
}

#[tokio::test]
async fn unauthorized_is_not_retried_and_never_shows_the_key() {
    let body = json!({"error": {"message": format!("Authentication Fails, your api key: {KEY} is invalid")}});
    let server = Server::start(vec![status(401, &body.to_string(), &[]), good_stream()]).await;
    let (events, err) = run(config(&server)).await;
    let err = err.unwrap();
    assert_eq!(events, vec![]);
    assert_eq!(err.code(), "LLM_UNAUTHORIZED");
    assert!(err.to_string().contains("Authentication Fails"), "{err}");
    assert_no_key(&err);
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn unknown_model_is_reported_as_such() {
    let not_found = status(
        404,
        r#"{"error":{"message":"The model `nope` does not exist"}}"#,
        &[],
    );
    let deepseek = status(
        400,
        r#"{"error":{"message":"Model Not Exist","type":"invalid_request_error"}}"#,
        &[],
    );
    for reply in [not_found, deepseek] {
        let server = Server::start(vec![reply, good_stream()]).await;
        let (_, err) = run(config(&server)).await;
        let err = err.unwrap();
        assert_eq!(err.code(), "LLM_MODEL_NOT_FOUND", "{err}");
        assert!(err.to_string().contains("deepseek-chat"), "{err}");
        assert_eq!(server.requests().len(), 1);
    }
}

#[tokio::test]
async fn rate_limit_then_success_is_retried() {
    let server = Server::start(vec![
        status(
            429,
            r#"{"error":{"message":"slow down"}}"#,
            &[("retry-after", "0")],
        ),
        good_stream(),
    ])
    .await;
    let (events, err) = run(config(&server)).await;
    assert_eq!((events, err), (good_events(), None));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[0].body, requests[1].body,
        "the retry resends the same body"
    );
}

#[tokio::test]
async fn server_error_storm_gives_up_after_the_retry_budget() {
    let boom = || status(500, r#"{"error":{"message":"internal boom"}}"#, &[]);
    let server = Server::start(vec![boom(), boom(), boom(), boom(), good_stream()]).await;
    let (events, err) = run(config(&server)).await;
    let err = err.unwrap();
    assert_eq!(events, vec![]);
    assert_eq!(err.code(), "LLM_SERVER");
    assert!(err.to_string().contains("after 3 attempt(s)"), "{err}");
    assert!(err.to_string().contains("internal boom"), "{err}");
    assert_eq!(server.requests().len(), 3, "max_retries = 2 → 3 requests");
}

#[tokio::test]
async fn rate_limit_storm_is_reported_as_rate_limited() {
    let slow = || status(429, "{}", &[("retry-after", "0.001")]);
    let server = Server::start(vec![slow(), slow()]).await;
    let mut c = config(&server);
    c.max_retries = 1;
    let (_, err) = run(c).await;
    assert_eq!(err.unwrap().code(), "LLM_RATE_LIMITED");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn disconnect_mid_stream_is_a_bad_stream_and_not_retried() {
    let server = Server::start(vec![
        vec![stream_head(), chunk(delta("partial").as_bytes())],
        good_stream(),
    ])
    .await;
    let (events, err) = run(config(&server)).await;
    assert_eq!(events, vec![StreamEvent::Text("partial".into())]);
    let err = err.unwrap();
    assert_eq!(err.code(), "LLM_BAD_STREAM", "{err}");
    assert_eq!(server.requests().len(), 1, "content was streamed: no retry");
}

#[tokio::test]
async fn clean_close_without_done_or_finish_is_a_bad_stream() {
    // A body that ends properly (terminating chunk) but never finished the reply.
    let server = Server::start(vec![vec![
        stream_head(),
        chunk(delta("half").as_bytes()),
        end(),
    ]])
    .await;
    let (events, err) = run(config(&server)).await;
    assert_eq!(events, vec![StreamEvent::Text("half".into())]);
    assert_eq!(err.unwrap().code(), "LLM_BAD_STREAM");
}

#[tokio::test]
async fn disconnect_before_any_content_is_retried() {
    let server = Server::start(vec![vec![stream_head()], good_stream()]).await;
    let (events, err) = run(config(&server)).await;
    assert_eq!((events, err), (good_events(), None));
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn malformed_chunk_is_a_bad_stream() {
    let server = Server::start(vec![vec![
        stream_head(),
        chunk(delta("ok").as_bytes()),
        chunk(b"data: {not json\n\n"),
        end(),
    ]])
    .await;
    let (events, err) = run(config(&server)).await;
    assert_eq!(events, vec![StreamEvent::Text("ok".into())]);
    assert_eq!(err.unwrap().code(), "LLM_BAD_STREAM");
}

#[tokio::test]
async fn oversized_line_is_a_bad_stream() {
    let mut line = b"data: ".to_vec();
    line.extend(std::iter::repeat_n(b'x', 4096));
    let server = Server::start(vec![vec![
        stream_head(),
        chunk(&line[..2000]),
        chunk(&line[2000..]),
        chunk(b"\n\n"),
        end(),
    ]])
    .await;
    let mut c = config(&server);
    c.max_line_bytes = 1024;
    let (events, err) = run(c).await;
    assert_eq!(events, vec![]);
    let err = err.unwrap();
    assert_eq!(err.code(), "LLM_BAD_STREAM");
    assert!(err.to_string().contains("1024"), "{err}");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn json_instead_of_an_event_stream_is_a_bad_stream() {
    let server = Server::start(vec![status(200, r#"{"choices":[]}"#, &[])]).await;
    let (_, err) = run(config(&server)).await;
    assert_eq!(err.unwrap().code(), "LLM_BAD_STREAM");
}

#[tokio::test]
async fn error_event_inside_the_stream_is_a_server_error() {
    let server = Server::start(vec![vec![
        stream_head(),
        chunk(b"data: {\"error\":{\"message\":\"overloaded\"}}\n\n"),
        end(),
    ]])
    .await;
    let (_, err) = run(config(&server)).await;
    let err = err.unwrap();
    assert_eq!(err.code(), "LLM_SERVER");
    assert!(err.to_string().contains("overloaded"), "{err}");
}

#[tokio::test]
async fn slow_server_is_cancelled_promptly() {
    let server = Server::start(vec![vec![
        stream_head(),
        chunk(delta("first").as_bytes()),
        Step::Pause(Duration::from_secs(120)),
    ]])
    .await;
    let mut c = config(&server);
    c.timeout = Duration::from_secs(120);
    let cancel = CancellationToken::new();
    let provider = OpenAiProvider::new(c).unwrap();
    let mut stream = provider.stream(request(), cancel.clone());
    assert_eq!(
        stream.next().await,
        Some(Ok(StreamEvent::Text("first".into())))
    );
    let canceller = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(30)).await;
        canceller.cancel();
    });
    // The server stays silent for two minutes; only the cancel can end this wait.
    let next = tokio::time::timeout(Duration::from_secs(30), stream.next()).await;
    assert_eq!(next, Ok(Some(Err(LlmError::Cancelled))));
    assert_eq!(stream.next().await, None);
}

#[tokio::test]
async fn cancel_while_waiting_for_the_response_and_during_backoff() {
    // Waiting for headers that never come.
    let server = Server::start(vec![vec![Step::Pause(Duration::from_secs(120))]]).await;
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(30)).await;
        canceller.cancel();
    });
    let mut c = config(&server);
    c.timeout = Duration::from_secs(120);
    let result = tokio::time::timeout(Duration::from_secs(30), run_with(c, cancel)).await;
    assert_eq!(result.map(|(_, e)| e), Ok(Some(LlmError::Cancelled)));

    // Sleeping before a retry that the server asked for in a minute.
    let server = Server::start(vec![status(503, "{}", &[("retry-after", "60")])]).await;
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(30)).await;
        canceller.cancel();
    });
    let mut c = config(&server);
    c.backoff.max = Duration::from_secs(120);
    let result = tokio::time::timeout(Duration::from_secs(30), run_with(c, cancel)).await;
    assert_eq!(result.map(|(_, e)| e), Ok(Some(LlmError::Cancelled)));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn cancelled_before_polling_sends_nothing() {
    let server = Server::start(vec![good_stream()]).await;
    let cancel = CancellationToken::new();
    cancel.cancel();
    let (events, err) = run_with(config(&server), cancel).await;
    assert_eq!((events, err), (vec![], Some(LlmError::Cancelled)));
    assert_eq!(server.requests().len(), 0);
}

#[tokio::test]
async fn silent_server_times_out() {
    let server = Server::start(vec![vec![Step::Pause(Duration::from_secs(120))]]).await;
    let mut c = config(&server);
    c.timeout = Duration::from_millis(200);
    c.max_retries = 0;
    let (_, err) = run(c).await;
    let err = err.unwrap();
    assert_eq!(err.code(), "LLM_TIMEOUT");
    assert!(
        err.to_string().contains("waiting for the response"),
        "{err}"
    );
}

#[tokio::test]
async fn stall_between_chunks_times_out() {
    let server = Server::start(vec![vec![
        stream_head(),
        chunk(delta("first").as_bytes()),
        Step::Pause(Duration::from_secs(120)),
    ]])
    .await;
    let mut c = config(&server);
    c.timeout = Duration::from_millis(200);
    let (events, err) = run(c).await;
    assert_eq!(events, vec![StreamEvent::Text("first".into())]);
    let err = err.unwrap();
    assert_eq!(err.code(), "LLM_TIMEOUT");
    assert!(err.to_string().contains("next part"), "{err}");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn connection_refused_is_a_network_error() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let mut c = OpenAiConfig::new(format!("http://{addr}"), "m", ApiKey::new(KEY));
    c.max_retries = 1;
    c.backoff = Backoff {
        initial: Duration::from_millis(1),
        max: Duration::from_millis(5),
    };
    let (_, err) = run(c).await;
    let err = err.unwrap();
    assert_eq!(err.code(), "LLM_NETWORK", "{err}");
    assert_no_key(&err);
}

#[tokio::test]
async fn the_key_is_not_in_debug_output() {
    let c = OpenAiConfig::new("http://127.0.0.1:9", "m", ApiKey::new(KEY));
    assert!(!format!("{c:?}").contains(KEY));
    let provider = OpenAiProvider::new(c).unwrap();
    assert!(!format!("{provider:?}").contains(KEY));
    assert_eq!(provider.name(), "openai");
    assert_eq!(provider.model(), "m");
}
