//! The offline provider (docs/llm-providers.md): the embedded default model. Deterministic and without
//! network, it answers from what it received — the user's last message and a one-line
//! account of every referenced session — so the whole flow works and tests offline.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::fmt::Write as _;
use std::time::Duration;

use futures_util::stream::{self, BoxStream, StreamExt};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::error::LlmError;
use super::offline_recall::{OfflineCall, recall_call, recall_lines};
use super::provider::{
    ChatRequest, Provider, StreamEvent, ToolCallDelta, Usage, is_summarize_request,
};
use super::text_only_images::images_as_text;
use dsh_store::{Message, Role};

/// The provider name.
pub const OFFLINE_NAME: &str = "offline";
/// The model name it reports.
pub const OFFLINE_MODEL: &str = "offline-echo";

/// Longest excerpt of any untrusted text quoted in a reply, in chars.
const EXCERPT_CHARS: usize = 60;
/// How many recent messages a compaction summary lists.
const SUMMARY_ITEMS: usize = 12;
/// Words per streamed text chunk.
const WORDS_PER_CHUNK: usize = 4;

/// The offline model. `chunk_delay` spaces the chunks out so a terminal shows them arrive.
#[derive(Debug, Clone, Default)]
pub struct OfflineProvider {
    chunk_delay: Duration,
}

impl OfflineProvider {
    /// Chunks are delivered as fast as they are polled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Wait `delay` between chunks (cancellable), for an interactive feel.
    #[must_use]
    pub fn with_chunk_delay(mut self, delay: Duration) -> Self {
        self.chunk_delay = delay;
        self
    }
}

impl Provider for OfflineProvider {
    fn name(&self) -> &str {
        OFFLINE_NAME
    }

    /// Always [`OFFLINE_MODEL`]: it has no other (`/model NAME` changes nothing, and says so).
    fn model(&self) -> &str {
        OFFLINE_MODEL
    }

    fn stream(
        &self,
        request: ChatRequest,
        cancel: CancellationToken,
    ) -> BoxStream<'static, Result<StreamEvent, LlmError>> {
        // A text-only model: images as their placeholder lines, as the wire gets them.
        let reply = match images_as_text(&request.messages) {
            Cow::Borrowed(_) => offline_reply(&request),
            Cow::Owned(messages) => {
                offline_reply(&ChatRequest::new(messages).with_tools(request.tools.clone()))
            }
        };
        let state = Playback {
            events: reply.into_events(),
            cancel,
            delay: self.chunk_delay,
            started: false,
            finished: false,
        };
        stream::unfold(state, |mut st| async move {
            let item = st.next().await?;
            Some((item, st))
        })
        .boxed()
    }
}

/// Replays precomputed events (the delay only between them), honouring cancellation first.
struct Playback {
    events: VecDeque<StreamEvent>,
    cancel: CancellationToken,
    delay: Duration,
    started: bool,
    finished: bool,
}

impl Playback {
    async fn next(&mut self) -> Option<Result<StreamEvent, LlmError>> {
        if self.finished {
            return None;
        }
        let first = !self.started;
        self.started = true;
        let cancelled = if self.delay.is_zero() || first {
            tokio::task::yield_now().await;
            self.cancel.is_cancelled()
        } else {
            tokio::select! {
                biased;
                () = self.cancel.cancelled() => true,
                () = tokio::time::sleep(self.delay) => false,
            }
        };
        if cancelled {
            self.finished = true;
            return Some(Err(LlmError::Cancelled));
        }
        if let Some(ev) = self.events.pop_front() {
            Some(Ok(ev))
        } else {
            self.finished = true;
            None
        }
    }
}

/// The complete offline answer to one request, before chunking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OfflineReply {
    pub reasoning: String,
    pub text: String,
    /// Tool calls the reply makes (docs/llm-providers.md: offline provider, recall).
    pub calls: Vec<OfflineCall>,
    pub usage: Usage,
}

impl OfflineReply {
    /// Reasoning first, then the text in several chunks, then each call (its id and name
    /// with the first half of its arguments, then the rest), then usage.
    fn into_events(self) -> VecDeque<StreamEvent> {
        let mut events = VecDeque::new();
        if !self.reasoning.is_empty() {
            events.push_back(StreamEvent::Reasoning(self.reasoning));
        }
        events.extend(text_chunks(&self.text).into_iter().map(StreamEvent::Text));
        for (index, call) in self.calls.into_iter().enumerate() {
            let mut half = call.arguments.len() / 2;
            while !call.arguments.is_char_boundary(half) {
                half -= 1;
            }
            let (head, tail) = call.arguments.split_at(half);
            events.push_back(StreamEvent::ToolCall(ToolCallDelta {
                index: index as u64,
                id: Some(call.id),
                name: Some(call.name),
                arguments: head.to_owned(),
            }));
            events.push_back(StreamEvent::ToolCall(ToolCallDelta {
                index: index as u64,
                id: None,
                name: None,
                arguments: tail.to_owned(),
            }));
        }
        events.push_back(StreamEvent::Usage(self.usage));
        events
    }
}

/// Compute the deterministic answer to `request` (a reply, or a summary for compaction).
pub fn offline_reply(request: &ChatRequest) -> OfflineReply {
    let mut calls = Vec::new();
    let (reasoning, text) = if is_summarize_request(request) {
        let history = request
            .messages
            .split_last()
            .map_or(&[][..], |(_, rest)| rest);
        (
            format!("Summarizing {} messages.", history.len()),
            summary_text(history),
        )
    } else if let Some(call) = recall_call(request) {
        let reasoning = format!(
            "Searching the first referenced session for {}.",
            excerpt(&call.arguments)
        );
        calls.push(call);
        (reasoning, String::new())
    } else {
        answer_text(&request.messages)
    };
    let input_bytes: usize = request
        .messages
        .iter()
        .flat_map(|m| m.content.iter())
        .filter_map(|b| match b {
            dsh_store::ContentBlock::Text { text, .. }
            | dsh_store::ContentBlock::Reasoning { text, .. } => Some(text.len()),
            dsh_store::ContentBlock::Other(_) => None,
        })
        .sum();
    let usage = Usage {
        input_tokens: approx_tokens(input_bytes),
        output_tokens: approx_tokens(text.len() + reasoning.len()),
    };
    OfflineReply {
        reasoning,
        text,
        calls,
        usage,
    }
}

/// Roughly one token per four bytes, rounded up.
fn approx_tokens(bytes: usize) -> u64 {
    u64::try_from(bytes.div_ceil(4)).unwrap_or(u64::MAX)
}

/// One referenced session as a context message describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReferencedSession {
    pub session_id: Option<String>,
    pub label: Option<String>,
    pub messages: Option<u64>,
    pub truncated: Option<bool>,
}

/// The referenced sessions of a session-reference context message: from its source
/// metadata, completed from the JSON between the `<referenced-sessions>` tags.
pub fn referenced_sessions(message: &Message) -> Vec<ReferencedSession> {
    let meta: Vec<Value> = message
        .source
        .as_ref()
        .and_then(|s| s.0.get("references"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let data = snapshot_data(&message.joined_text());
    let count = meta.len().max(data.len());
    (0..count)
        .map(|i| {
            let m = meta.get(i);
            let d = data.get(i);
            let str_field = |v: Option<&Value>, key: &str| {
                v.and_then(|v| v.get(key))
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            };
            ReferencedSession {
                session_id: str_field(m, "sessionId").or_else(|| str_field(d, "sessionId")),
                label: str_field(m, "label").or_else(|| str_field(d, "label")),
                messages: m
                    .and_then(|m| m.get("retainedMessages"))
                    .and_then(Value::as_u64)
                    .or_else(|| {
                        d.and_then(|d| d.get("conversation"))
                            .and_then(Value::as_array)
                            .and_then(|a| u64::try_from(a.len()).ok())
                    }),
                truncated: m.and_then(|m| m.get("truncated")).and_then(Value::as_bool),
            }
        })
        .collect()
}

/// The JSON array between `<referenced-sessions>` and `</referenced-sessions>`, if any.
fn snapshot_data(text: &str) -> Vec<Value> {
    const OPEN: &str = "<referenced-sessions>";
    const CLOSE: &str = "</referenced-sessions>";
    let Some(start) = text.find(OPEN).map(|i| i + OPEN.len()) else {
        return Vec::new();
    };
    let Some(body) = text.get(start..) else {
        return Vec::new();
    };
    let Some(end) = body.find(CLOSE) else {
        return Vec::new();
    };
    body.get(..end)
        .and_then(|json| serde_json::from_str::<Vec<Value>>(json.trim()).ok())
        .unwrap_or_default()
}

fn is_tool_result(m: &Message) -> bool {
    dsh_store::tool_round::ToolResultBlock::of(m).is_some()
}

fn is_reference_context(m: &Message) -> bool {
    m.role == Role::User
        && m.source
            .as_ref()
            .is_some_and(dsh_store::Source::is_session_reference)
}

/// The ordinary reply: acknowledge the last direct message and each referenced session
/// received since the model last spoke.
fn answer_text(messages: &[Message]) -> (String, String) {
    // Since the model last answered the user: a tool round after the user's message is
    // part of this answer.
    let user_at = messages
        .iter()
        .rposition(|m| m.role == Role::User && m.is_direct_user())
        .unwrap_or(messages.len());
    let since = messages
        .get(..user_at)
        .unwrap_or(messages)
        .iter()
        .rposition(|m| m.role == Role::Assistant)
        .map_or(0, |i| i + 1);
    let (earlier, recent) = messages.split_at(since.min(messages.len()));
    let earlier_contexts = earlier.iter().filter(|m| is_reference_context(m)).count();
    let recent_refs: Vec<ReferencedSession> = recent
        .iter()
        .filter(|m| is_reference_context(m))
        .flat_map(referenced_sessions)
        .collect();
    let last_user = messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User && !is_reference_context(m) && !is_tool_result(m));

    let mut text = String::from("Offline model (no network). ");
    match last_user {
        Some(m) => {
            let _ = write!(text, "You said: \"{}\".", excerpt(&m.joined_text()));
        }
        None => text.push_str("I received no message from you."),
    }
    if !recent_refs.is_empty() {
        let _ = write!(
            text,
            "\nReferenced sessions I received ({}):",
            recent_refs.len()
        );
        for r in &recent_refs {
            text.push('\n');
            text.push_str(&reference_line(r));
        }
    }
    text.push_str(&recall_lines(messages));
    if earlier_contexts > 0 {
        let _ = write!(
            text,
            "\nEarlier referenced-session contexts in this conversation: {earlier_contexts}."
        );
    }
    let _ = write!(
        text,
        "\nConversation so far: {} message{}.",
        messages.len(),
        plural(messages.len())
    );
    let reasoning = format!(
        "Reading {} message{} with {} new referenced session{}.",
        messages.len(),
        plural(messages.len()),
        recent_refs.len(),
        plural(recent_refs.len())
    );
    (reasoning, text)
}

fn reference_line(r: &ReferencedSession) -> String {
    let id = r.session_id.as_deref().map(excerpt);
    let label = r.label.as_deref().map(excerpt);
    let name = match (label, id) {
        (Some(l), Some(i)) if l != i => format!("{l} ({i})"),
        (Some(l), _) => l,
        (None, Some(i)) => i,
        (None, None) => "unnamed session".to_owned(),
    };
    let count = match r.messages {
        Some(n) => format!("{n} message{}", plural(usize::try_from(n).unwrap_or(2))),
        None => "unknown message count".to_owned(),
    };
    let truncated = match r.truncated {
        Some(true) => "truncated",
        Some(false) => "not truncated",
        None => "truncation unknown",
    };
    format!("- {name}: {count}, {truncated}")
}

/// The deterministic compaction summary of `history`.
fn summary_text(history: &[Message]) -> String {
    let mut lines = Vec::new();
    for m in history {
        if is_reference_context(m) {
            let names: Vec<String> = referenced_sessions(m)
                .iter()
                .map(|r| {
                    r.label
                        .as_deref()
                        .or(r.session_id.as_deref())
                        .map_or_else(|| "unnamed session".to_owned(), excerpt)
                })
                .collect();
            lines.push(format!("- referenced sessions: {}", names.join(", ")));
            continue;
        }
        let text = m.joined_text();
        if text.trim().is_empty() {
            continue;
        }
        let who = if m
            .source
            .as_ref()
            .is_some_and(dsh_store::Source::is_compact_checkpoint)
        {
            "earlier summary"
        } else {
            match m.role {
                Role::User => "user",
                Role::Assistant => "assistant",
                Role::Tool => "tool",
                Role::System => "system",
            }
        };
        lines.push(format!("- {who}: {}", excerpt(&text)));
    }
    let mut out = format!(
        "Summary of {} message{} (offline model):",
        history.len(),
        plural(history.len())
    );
    let skip = lines.len().saturating_sub(SUMMARY_ITEMS);
    if skip > 0 {
        let _ = write!(out, "\n- ({skip} earlier item{} omitted)", plural(skip));
    }
    for line in lines.iter().skip(skip) {
        out.push('\n');
        out.push_str(line);
    }
    out
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// A one-line, control-free excerpt of untrusted text: whitespace and control characters
/// collapse to single spaces; longer text is cut on a char boundary and ends in `…`.
pub fn excerpt(text: &str) -> String {
    let mut out = String::new();
    let mut chars = 0usize;
    let mut pending_space = false;
    for c in text.chars() {
        if c.is_whitespace() || c.is_control() {
            pending_space = !out.is_empty();
            continue;
        }
        if chars >= EXCERPT_CHARS {
            out.push('…');
            return out;
        }
        if pending_space {
            out.push(' ');
            chars += 1;
            pending_space = false;
        }
        out.push(c);
        chars += 1;
    }
    out
}

/// Split `text` into chunks of a few words, keeping every byte (newlines end a chunk).
fn text_chunks(text: &str) -> Vec<String> {
    let mut chunks = Vec::new();
    let mut current = String::new();
    let mut words = 0;
    for piece in text.split_inclusive([' ', '\n']) {
        current.push_str(piece);
        words += 1;
        if words >= WORDS_PER_CHUNK || piece.ends_with('\n') {
            chunks.push(std::mem::take(&mut current));
            words = 0;
        }
    }
    if !current.is_empty() {
        chunks.push(current);
    }
    chunks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::provider::summarize_request;
    use dsh_store::{ContentBlock, Source};
    use futures_util::StreamExt;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn context(refs: Value, data: &Value) -> Message {
        let text = format!(
            "## Referenced sessions\n\nwarning\n\n<referenced-sessions>\n{data}\n</referenced-sessions>"
        );
        Message::new(
            Role::User,
            vec![ContentBlock::text(text)],
            Source::session_reference(refs),
        )
    }

    fn two_ref_context() -> Message {
        context(
            json!([
                {"sessionId": "sess-a", "label": "A", "retainedMessages": 3, "truncated": false},
                {"sessionId": "sess-b", "label": "B", "retainedMessages": 5, "truncated": true},
            ]),
            &json!([
                {"sessionId": "sess-a", "label": "A", "conversation": [1, 2, 3]},
                {"sessionId": "sess-b", "label": "B", "conversation": [1]},
            ]),
        )
    }

    async fn collect(p: &OfflineProvider, req: ChatRequest) -> Vec<Result<StreamEvent, LlmError>> {
        p.stream(req, CancellationToken::new()).collect().await
    }

    #[tokio::test]
    async fn stream_is_deterministic_and_chunked() {
        let req = ChatRequest::new(vec![
            two_ref_context(),
            Message::user_text("what did @A decide?"),
        ]);
        let p = OfflineProvider::new();
        let first = collect(&p, req.clone()).await;
        let second = collect(&p, req.clone()).await;
        assert_eq!(first, second);
        let events: Vec<StreamEvent> = first.into_iter().map(Result::unwrap).collect();
        let reply = offline_reply(&req);
        assert_eq!(
            events.first(),
            Some(&StreamEvent::Reasoning(reply.reasoning.clone()))
        );
        assert_eq!(events.last(), Some(&StreamEvent::Usage(reply.usage)));
        let texts: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::Text(t) => Some(t.as_str()),
                StreamEvent::Reasoning(_) | StreamEvent::ToolCall(_) | StreamEvent::Usage(_) => {
                    None
                }
            })
            .collect();
        assert!(texts.len() > 3, "several chunks: {texts:?}");
        assert_eq!(texts.concat(), reply.text);
    }

    #[tokio::test]
    async fn an_image_only_message_is_answered_as_its_placeholder_line() {
        let image: dsh_store::ContentBlock = serde_json::from_value(serde_json::json!({
            "type": "image", "attachment": {"mediaType": "image/png", "width": 2, "height": 3}
        }))
        .unwrap();
        let req = ChatRequest::new(vec![Message::new(
            Role::User,
            vec![image],
            dsh_store::Source::user(),
        )]);
        let text: String = collect(&OfflineProvider::new(), req)
            .await
            .into_iter()
            .filter_map(|e| match e.unwrap() {
                StreamEvent::Text(t) => Some(t),
                _ => None,
            })
            .collect();
        assert!(text.contains("You said: \"[image PNG 2×3]"), "{text}");
    }

    #[test]
    fn reply_acknowledges_message_and_each_reference() {
        let req = ChatRequest::new(vec![
            two_ref_context(),
            Message::user_text("what did @A decide?"),
        ]);
        let reply = offline_reply(&req);
        assert_eq!(
            reply.text,
            "Offline model (no network). You said: \"what did @A decide?\".\n\
             Referenced sessions I received (2):\n\
             - A (sess-a): 3 messages, not truncated\n\
             - B (sess-b): 5 messages, truncated\n\
             Conversation so far: 2 messages."
        );
    }

    #[test]
    fn counts_come_from_the_snapshot_when_metadata_is_missing() {
        let msg = context(
            json!([]),
            &json!([{"sessionId": "s1", "label": "One", "conversation": [{"role":"user","text":"x"}, {"role":"assistant","text":"y"}]}]),
        );
        assert_eq!(
            referenced_sessions(&msg),
            vec![ReferencedSession {
                session_id: Some("s1".into()),
                label: Some("One".into()),
                messages: Some(2),
                truncated: None,
            }]
        );
        let reply = offline_reply(&ChatRequest::new(vec![msg, Message::user_text("hi")]));
        assert!(
            reply
                .text
                .contains("- One (s1): 2 messages, truncation unknown"),
            "{}",
            reply.text
        );
    }

    #[test]
    fn malformed_snapshot_text_is_not_an_error() {
        for text in [
            "<referenced-sessions>\nnot json\n</referenced-sessions>",
            "<referenced-sessions>[",
            "</referenced-sessions><referenced-sessions>",
            "",
        ] {
            let msg = Message::new(
                Role::User,
                vec![ContentBlock::text(text)],
                Source::session_reference(json!("not an array")),
            );
            assert_eq!(referenced_sessions(&msg), vec![], "{text:?}");
        }
    }

    #[test]
    fn earlier_contexts_are_counted_not_relisted() {
        let assistant = Message::new(
            Role::Assistant,
            vec![ContentBlock::text("ok")],
            Source::model("offline", OFFLINE_MODEL),
        );
        let req = ChatRequest::new(vec![
            two_ref_context(),
            Message::user_text("first"),
            assistant,
            Message::user_text("second"),
        ]);
        let text = offline_reply(&req).text;
        assert!(!text.contains("sess-a"), "{text}");
        assert!(text.contains("You said: \"second\""), "{text}");
        assert!(
            text.contains("Earlier referenced-session contexts in this conversation: 1."),
            "{text}"
        );
    }

    #[test]
    fn untrusted_text_is_quoted_as_a_short_clean_excerpt() {
        let long = "x".repeat(100);
        let cases = [
            ("plain", "plain".to_owned()),
            ("  a \n\t b  ", "a b".to_owned()),
            ("\u{1b}[2Jclear", "[2Jclear".to_owned()),
            ("bell\u{7}ring", "bell ring".to_owned()),
            ("漢字😀", "漢字😀".to_owned()),
            (long.as_str(), format!("{}…", "x".repeat(EXCERPT_CHARS))),
        ];
        for (input, want) in cases {
            assert_eq!(excerpt(input), want, "{input:?}");
        }
    }

    #[test]
    fn summary_requests_get_a_summary() {
        let assistant = Message::new(
            Role::Assistant,
            vec![
                ContentBlock::reasoning("hmm"),
                ContentBlock::text("Use serde."),
            ],
            Source::model("offline", OFFLINE_MODEL),
        );
        let req = summarize_request(vec![
            two_ref_context(),
            Message::user_text("How do I parse JSON?"),
            assistant,
        ]);
        let reply = offline_reply(&req);
        assert_eq!(
            reply.text,
            "Summary of 3 messages (offline model):\n\
             - referenced sessions: A, B\n\
             - user: How do I parse JSON?\n\
             - assistant: Use serde."
        );
    }

    #[test]
    fn usage_is_about_a_quarter_of_the_bytes() {
        let req = ChatRequest::new(vec![Message::user_text("12345678")]);
        let reply = offline_reply(&req);
        assert_eq!(reply.usage.input_tokens, 2);
        assert_eq!(
            reply.usage.output_tokens,
            approx_tokens(reply.text.len() + reply.reasoning.len())
        );
    }

    #[tokio::test]
    async fn cancelled_before_start_yields_only_cancelled() {
        let cancel = CancellationToken::new();
        cancel.cancel();
        let events: Vec<_> = OfflineProvider::new()
            .stream(ChatRequest::new(vec![Message::user_text("hi")]), cancel)
            .collect()
            .await;
        assert_eq!(events, vec![Err(LlmError::Cancelled)]);
    }

    #[tokio::test]
    async fn cancel_mid_stream_stops_promptly() {
        let cancel = CancellationToken::new();
        let mut stream = OfflineProvider::new()
            .with_chunk_delay(Duration::from_secs(60))
            .stream(
                ChatRequest::new(vec![Message::user_text("hi")]),
                cancel.clone(),
            );
        assert!(matches!(
            stream.next().await,
            Some(Ok(StreamEvent::Reasoning(_)))
        ));
        let canceller = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            canceller.cancel();
        });
        // The next chunk is a minute away; the cancel must end the wait instead.
        let next = tokio::time::timeout(Duration::from_secs(30), stream.next()).await;
        assert_eq!(next, Ok(Some(Err(LlmError::Cancelled))));
        assert_eq!(stream.next().await, None);
    }
}
