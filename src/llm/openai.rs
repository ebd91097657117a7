//! The OpenAI-compatible streaming provider (docs/llm-providers.md): `POST {base_url}/chat/completions`
//! with `stream: true` (body: `openai_body`), parsed as server-sent events (`delta.content`,
//! `delta.reasoning_content`, `delta.tool_calls`, `usage`). Bounded retries with exponential backoff and jitter
//! on 429, 5xx and connection failures before any content arrived; a timeout for connecting,
//! for the response and between chunks; prompt cancellation; the API key never leaves the
//! `Authorization` header (not in `Debug`, logs or error messages).

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures_util::stream::{self, BoxStream, StreamExt};
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue, RETRY_AFTER};
use reqwest::{StatusCode, Url};
use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::error::LlmError;
use super::openai_body::request_body;
use super::provider::{ChatRequest, Provider, StreamEvent, ToolCallDelta, Usage};
use super::sse::{DEFAULT_MAX_LINE_BYTES, SseItem, SseParser};
use term_text::visible_controls_line;

/// The provider name.
pub const OPENAI_NAME: &str = "openai";
/// Longest server text quoted in an error message, in chars.
const QUOTE_CHARS: usize = 300;
/// Most bytes of an error body read.
const ERROR_BODY_BYTES: usize = 16 * 1024;

/// A secret API key. `Debug` never shows it and there is no `Display`.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// A key from `value`; `None` when it is empty or only whitespace.
    pub fn new(value: impl Into<String>) -> Option<Self> {
        let value = value.into();
        let trimmed = value.trim();
        if trimmed.is_empty() {
            None
        } else {
            Some(ApiKey(trimmed.to_owned()))
        }
    }

    /// The key held by environment variable `var`, if set and non-empty.
    pub fn from_env(var: &str) -> Option<Self> {
        std::env::var(var).ok().and_then(Self::new)
    }

    fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// Retry pacing: the n-th retry waits about `initial * 2^(n-1)`, at most `max`, scaled by a
/// random factor in [0.5, 1) so clients do not retry in lockstep. A `Retry-After` header
/// replaces the computed delay (still capped at `max`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    pub initial: Duration,
    pub max: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            initial: Duration::from_millis(500),
            max: Duration::from_secs(20),
        }
    }
}

impl Backoff {
    /// The delay before retry number `retry` (1-based), jittered by `jitter` in [0, 1).
    fn delay(&self, retry: u32, retry_after: Option<Duration>, jitter: f64) -> Duration {
        if let Some(after) = retry_after {
            return after.min(self.max);
        }
        let factor = 2u32.saturating_pow(retry.saturating_sub(1));
        let full = self.initial.saturating_mul(factor).min(self.max);
        full.mul_f64(0.5 + jitter.clamp(0.0, 1.0) / 2.0)
    }
}

/// Settings of the OpenAI-compatible provider (the CLI maps its `[model]` section here).
#[derive(Debug, Clone, PartialEq)]
pub struct OpenAiConfig {
    /// API root, e.g. `https://api.deepseek.com` or `https://api.openai.com/v1`; requests
    /// go to `{base_url}/chat/completions` (a trailing `/` is ignored, and a URL already
    /// ending in `/chat/completions` is used as is).
    pub base_url: String,
    pub model: String,
    /// Sent as `Authorization: Bearer …`; `None` sends no header (local servers).
    pub api_key: Option<ApiKey>,
    /// Limit for connecting, for the response headers, and for each gap between chunks.
    pub timeout: Duration,
    /// Retries after the first attempt (so at most `max_retries + 1` requests).
    pub max_retries: u32,
    pub backoff: Backoff,
    /// Longest accepted event-stream line.
    pub max_line_bytes: usize,
}

impl OpenAiConfig {
    /// A configuration with the default timeout (120 s), 3 retries and default backoff.
    pub fn new(
        base_url: impl Into<String>,
        model: impl Into<String>,
        api_key: Option<ApiKey>,
    ) -> Self {
        OpenAiConfig {
            base_url: base_url.into(),
            model: model.into(),
            api_key,
            timeout: Duration::from_secs(120),
            max_retries: 3,
            backoff: Backoff::default(),
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
        }
    }
}

/// `{base_url}/chat/completions`, tolerating a trailing `/` and a full endpoint URL.
pub fn completions_url(base_url: &str) -> Result<Url, LlmError> {
    let invalid = |reason: String| LlmError::InvalidConfig {
        message: format!("base_url {base_url:?} {reason}"),
    };
    let base =
        Url::parse(base_url.trim()).map_err(|e| invalid(format!("is not a valid URL: {e}")))?;
    if !matches!(base.scheme(), "http" | "https") {
        return Err(invalid("must use http or https".into()));
    }
    if base.host_str().is_none_or(str::is_empty) {
        return Err(invalid("has no host".into()));
    }
    let trimmed = base_url.trim().trim_end_matches('/');
    let joined = if trimmed.ends_with("/chat/completions") {
        trimmed.to_owned()
    } else {
        format!("{trimmed}/chat/completions")
    };
    Url::parse(&joined).map_err(|e| invalid(format!("is not a valid URL: {e}")))
}

/// The OpenAI-compatible chat-completions provider.
#[derive(Debug, Clone)]
pub struct OpenAiProvider {
    config: Arc<OpenAiConfig>,
    url: Url,
    client: reqwest::Client,
}

impl OpenAiProvider {
    /// Check the configuration and build the HTTP client (no request is made).
    pub fn new(config: OpenAiConfig) -> Result<Self, LlmError> {
        let url = completions_url(&config.base_url)?;
        if let Some(key) = &config.api_key
            && HeaderValue::from_str(&format!("Bearer {}", key.expose())).is_err()
        {
            return Err(LlmError::InvalidConfig {
                message: "the API key contains characters that cannot be sent in an HTTP header"
                    .into(),
            });
        }
        let client = reqwest::Client::builder()
            .connect_timeout(config.timeout)
            .user_agent(concat!("dsh-refs/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| LlmError::InvalidConfig {
                message: format!("cannot build the HTTP client: {e}"),
            })?;
        Ok(OpenAiProvider {
            config: Arc::new(config),
            url,
            client,
        })
    }

    /// The endpoint requests go to.
    pub fn url(&self) -> &Url {
        &self.url
    }
}

impl Provider for OpenAiProvider {
    fn name(&self) -> &str {
        OPENAI_NAME
    }

    fn model(&self) -> &str {
        &self.config.model
    }

    fn with_model(&self, model: &str) -> Option<Arc<dyn Provider>> {
        let mut config = (*self.config).clone();
        model.clone_into(&mut config.model);
        Some(Arc::new(OpenAiProvider {
            config: Arc::new(config),
            url: self.url.clone(),
            client: self.client.clone(),
        }))
    }

    fn known_models(&self) -> Vec<String> {
        let mut models = vec![self.config.model.clone()];
        // DeepSeek's public endpoint serves these two; other servers name their own.
        if self.url.host_str() == Some("api.deepseek.com") {
            for m in ["deepseek-chat", "deepseek-reasoner"] {
                if !models.iter().any(|x| x == m) {
                    models.push(m.to_owned());
                }
            }
        }
        models
    }

    fn stream(
        &self,
        request: ChatRequest,
        cancel: CancellationToken,
    ) -> BoxStream<'static, Result<StreamEvent, LlmError>> {
        let body = request_body(&self.config.model, &request.messages, &request.tools);
        let call = Call {
            client: self.client.clone(),
            url: self.url.clone(),
            config: Arc::clone(&self.config),
            body,
            cancel,
            attempts: 0,
            phase: Phase::Connect,
            pending: VecDeque::new(),
        };
        stream::unfold(call, |mut call| async move {
            let item = call.next_item().await?;
            Some((item, call))
        })
        .boxed()
    }
}

/// One chunk of a streamed completion (only the fields used).
#[derive(Debug, Deserialize)]
struct ApiChunk {
    #[serde(default)]
    choices: Option<Vec<ApiChoice>>,
    #[serde(default)]
    usage: Option<ApiUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct ApiChoice {
    #[serde(default)]
    delta: Option<ApiDelta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct ApiDelta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ApiToolCall>>,
}

/// A piece of a streamed tool call: its place among the reply's calls, and on its first
/// piece its id and function name.
#[derive(Debug, Deserialize)]
struct ApiToolCall {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<ApiFunction>,
}

#[derive(Debug, Deserialize)]
struct ApiFunction {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Debug, Deserialize)]
struct ApiUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
}

/// Where a call is.
enum Phase {
    /// (Re)connect, with retries.
    Connect,
    /// Reading the event stream of a 2xx response.
    Streaming(Box<Body>),
    Finished,
}

struct Body {
    response: reqwest::Response,
    parser: SseParser,
    /// Whether any event has been produced (after that, nothing is retried).
    produced: bool,
    /// Whether a `finish_reason` arrived (a close without `[DONE]` is then tolerated).
    finish_seen: bool,
}

/// A failed attempt: the error, and whether another attempt may fix it.
struct Failure {
    error: LlmError,
    retryable: bool,
    retry_after: Option<Duration>,
}

impl Failure {
    fn fatal(error: LlmError) -> Self {
        Failure {
            error,
            retryable: false,
            retry_after: None,
        }
    }
    fn retryable(error: LlmError, retry_after: Option<Duration>) -> Self {
        Failure {
            error,
            retryable: true,
            retry_after,
        }
    }
}

/// One model call in progress.
struct Call {
    client: reqwest::Client,
    url: Url,
    config: Arc<OpenAiConfig>,
    body: Vec<u8>,
    cancel: CancellationToken,
    /// Requests sent so far.
    attempts: u32,
    phase: Phase,
    pending: VecDeque<StreamEvent>,
}

impl Call {
    async fn next_item(&mut self) -> Option<Result<StreamEvent, LlmError>> {
        loop {
            if self.cancel.is_cancelled() && !matches!(self.phase, Phase::Finished) {
                return Some(Err(self.finish(LlmError::Cancelled)));
            }
            if let Some(ev) = self.pending.pop_front() {
                return Some(Ok(ev));
            }
            match &mut self.phase {
                Phase::Finished => return None,
                Phase::Connect => match self.connect().await {
                    Ok(response) => {
                        self.phase = Phase::Streaming(Box::new(Body {
                            response,
                            parser: SseParser::new(self.config.max_line_bytes),
                            produced: false,
                            finish_seen: false,
                        }));
                    }
                    Err(e) => return Some(Err(self.finish(e))),
                },
                Phase::Streaming(_) => {
                    if let Err(failure) = self.read_chunk().await {
                        let may_retry = matches!(&self.phase, Phase::Streaming(b) if !b.produced);
                        if failure.retryable
                            && may_retry
                            && self.attempts <= self.config.max_retries
                        {
                            if let Err(e) = self.pause_before_retry(None).await {
                                return Some(Err(self.finish(e)));
                            }
                            self.phase = Phase::Connect;
                        } else {
                            return Some(Err(self.finish(failure.error)));
                        }
                    }
                }
            }
        }
    }

    fn finish(&mut self, error: LlmError) -> LlmError {
        self.phase = Phase::Finished;
        self.pending.clear();
        error
    }

    /// Read one body chunk and queue the events it completes.
    async fn read_chunk(&mut self) -> Result<(), Failure> {
        let timeout = self.config.timeout;
        let Phase::Streaming(body) = &mut self.phase else {
            return Ok(());
        };
        let read = tokio::select! {
            biased;
            () = self.cancel.cancelled() => return Err(Failure::fatal(LlmError::Cancelled)),
            r = tokio::time::timeout(timeout, body.response.chunk()) => r,
        };
        let chunk = match read {
            Err(_) => {
                return Err(Failure::fatal(LlmError::Timeout {
                    phase: "waiting for the next part of the reply",
                    timeout,
                }));
            }
            Ok(Err(e)) => {
                return Err(Failure::retryable(
                    LlmError::BadStream {
                        message: format!(
                            "the connection broke mid-stream: {}",
                            error_chain(&e, self.config.api_key.as_ref())
                        ),
                    },
                    None,
                ));
            }
            Ok(Ok(None)) => {
                if body.finish_seen && !body.parser.has_partial() {
                    self.phase = Phase::Finished;
                    return Ok(());
                }
                return Err(Failure::retryable(
                    LlmError::BadStream {
                        message: "the connection closed before the reply was complete".into(),
                    },
                    None,
                ));
            }
            Ok(Ok(Some(bytes))) => bytes,
        };
        let items = body.parser.push(&chunk).map_err(|e| {
            Failure::fatal(LlmError::BadStream {
                message: e.to_string(),
            })
        })?;
        let key = self.config.api_key.as_ref();
        let mut done = false;
        for item in items {
            match item {
                SseItem::Done => {
                    done = true;
                    break;
                }
                SseItem::Event { event, data } => {
                    let events = parse_chunk(event.as_deref(), &data, self.attempts, key)
                        .map_err(Failure::fatal)?;
                    let (events, finished) = events;
                    body.finish_seen |= finished;
                    body.produced |= !events.is_empty();
                    self.pending.extend(events);
                }
            }
        }
        if done {
            self.phase = Phase::Finished;
        }
        Ok(())
    }

    /// Send the request until it succeeds, fails for good, or the retry budget is spent.
    async fn connect(&mut self) -> Result<reqwest::Response, LlmError> {
        loop {
            self.attempts += 1;
            match self.send_once().await {
                Ok(response) => return Ok(response),
                Err(f) if f.retryable && self.attempts <= self.config.max_retries => {
                    tracing::debug!(
                        attempt = self.attempts,
                        code = f.error.code(),
                        "model request failed; retrying"
                    );
                    self.pause_before_retry(f.retry_after).await?;
                }
                Err(f) => return Err(f.error),
            }
        }
    }

    async fn pause_before_retry(&self, retry_after: Option<Duration>) -> Result<(), LlmError> {
        let delay = self
            .config
            .backoff
            .delay(self.attempts, retry_after, fastrand::f64());
        tokio::select! {
            biased;
            () = self.cancel.cancelled() => Err(LlmError::Cancelled),
            () = tokio::time::sleep(delay) => Ok(()),
        }
    }

    async fn send_once(&self) -> Result<reqwest::Response, Failure> {
        let key = self.config.api_key.as_ref();
        let mut request = self
            .client
            .post(self.url.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "text/event-stream")
            .body(self.body.clone());
        if let Some(key) = key {
            let mut value =
                HeaderValue::from_str(&format!("Bearer {}", key.expose())).map_err(|_| {
                    Failure::fatal(LlmError::InvalidConfig {
                        message: "the API key cannot be sent in an HTTP header".into(),
                    })
                })?;
            value.set_sensitive(true);
            request = request.header(AUTHORIZATION, value);
        }
        let timeout = self.config.timeout;
        let sent = tokio::select! {
            biased;
            () = self.cancel.cancelled() => return Err(Failure::fatal(LlmError::Cancelled)),
            r = tokio::time::timeout(timeout, request.send()) => r,
        };
        let response = match sent {
            Err(_) => {
                return Err(Failure::retryable(
                    LlmError::Timeout {
                        phase: "waiting for the response",
                        timeout,
                    },
                    None,
                ));
            }
            Ok(Err(e)) if e.is_timeout() => {
                return Err(Failure::retryable(
                    LlmError::Timeout {
                        phase: "connecting",
                        timeout,
                    },
                    None,
                ));
            }
            Ok(Err(e)) => {
                return Err(Failure::retryable(
                    LlmError::Network {
                        message: error_chain(&e, key),
                    },
                    None,
                ));
            }
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        if status.is_success() {
            let json = response
                .headers()
                .get(CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|ct| ct.trim_start().starts_with("application/json"));
            if json {
                let body = self.read_error_body(response).await?;
                return Err(Failure::fatal(LlmError::BadStream {
                    message: format!(
                        "expected an event stream but the server sent JSON: {}",
                        quote(&body, key)
                    ),
                }));
            }
            return Ok(response);
        }
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        let body = self.read_error_body(response).await?;
        Err(classify_status(
            status,
            &body,
            &self.config.model,
            self.attempts,
            retry_after,
            key,
        ))
    }

    /// Up to [`ERROR_BODY_BYTES`] of a response body, within the timeout; never fails.
    async fn read_error_body(&self, mut response: reqwest::Response) -> Result<String, Failure> {
        let mut bytes = Vec::new();
        let read = async {
            while bytes.len() < ERROR_BODY_BYTES {
                match response.chunk().await {
                    Ok(Some(chunk)) => bytes.extend_from_slice(&chunk),
                    Ok(None) | Err(_) => break,
                }
            }
        };
        tokio::select! {
            biased;
            () = self.cancel.cancelled() => return Err(Failure::fatal(LlmError::Cancelled)),
            _ = tokio::time::timeout(self.config.timeout, read) => {}
        }
        bytes.truncate(ERROR_BODY_BYTES);
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }
}

/// Map a non-2xx response to an error and whether a retry may help.
fn classify_status(
    status: StatusCode,
    body: &str,
    model: &str,
    attempts: u32,
    retry_after: Option<Duration>,
    key: Option<&ApiKey>,
) -> Failure {
    let code = status.as_u16();
    let message = quote(&error_message(body), key);
    let lower = body.to_lowercase();
    let says_no_model = lower.contains("model")
        && [
            "not exist",
            "not found",
            "model_not_found",
            "unknown model",
            "no such model",
        ]
        .iter()
        .any(|p| lower.contains(p));
    match code {
        401 | 403 => Failure::fatal(LlmError::Unauthorized {
            status: code,
            message,
        }),
        404 | 400 | 422 if code == 404 || says_no_model => {
            Failure::fatal(LlmError::ModelNotFound {
                model: quote(model, key),
                status: code,
                message,
            })
        }
        429 => Failure::retryable(LlmError::RateLimited { attempts, message }, retry_after),
        408 | 500..=599 => Failure::retryable(
            LlmError::Server {
                status: code,
                attempts,
                message,
            },
            retry_after,
        ),
        _ => Failure::fatal(LlmError::BadRequest {
            status: code,
            message,
        }),
    }
}

/// The human message of an error body: `error.message`, `error` or `message` of a JSON
/// body, else the body itself.
fn error_message(body: &str) -> String {
    let Ok(v) = serde_json::from_str::<Value>(body) else {
        return body.trim().to_owned();
    };
    let found = v
        .get("error")
        .and_then(|e| e.get("message").or(Some(e)))
        .or_else(|| v.get("message"))
        .and_then(Value::as_str);
    found.map_or_else(|| body.trim().to_owned(), str::to_owned)
}

/// Turn one SSE event into stream events; `true` when it carried a `finish_reason`.
fn parse_chunk(
    event: Option<&str>,
    data: &str,
    attempts: u32,
    key: Option<&ApiKey>,
) -> Result<(Vec<StreamEvent>, bool), LlmError> {
    let chunk: ApiChunk = serde_json::from_str(data).map_err(|e| LlmError::BadStream {
        message: format!("unreadable chunk ({e}): {}", quote(data, key)),
    })?;
    if event == Some("error") || chunk.error.is_some() {
        let message = match &chunk.error {
            Some(err) => error_message(&err.to_string()),
            None => data.to_owned(),
        };
        return Err(LlmError::Server {
            status: 200,
            attempts,
            message: quote(&message, key),
        });
    }
    let mut events = Vec::new();
    let mut finished = false;
    if let Some(choice) = chunk.choices.as_ref().and_then(|c| c.first()) {
        if let Some(delta) = &choice.delta {
            if let Some(r) = delta.reasoning_content.as_ref().filter(|r| !r.is_empty()) {
                events.push(StreamEvent::Reasoning(r.clone()));
            }
            if let Some(t) = delta.content.as_ref().filter(|t| !t.is_empty()) {
                events.push(StreamEvent::Text(t.clone()));
            }
            for (position, call) in delta.tool_calls.iter().flatten().enumerate() {
                let function = call.function.as_ref();
                events.push(StreamEvent::ToolCall(ToolCallDelta {
                    index: call.index.unwrap_or(position as u64),
                    id: call.id.clone().filter(|id| !id.is_empty()),
                    name: function
                        .and_then(|f| f.name.clone())
                        .filter(|n| !n.is_empty()),
                    arguments: function
                        .and_then(|f| f.arguments.clone())
                        .unwrap_or_default(),
                }));
            }
        }
        finished = choice.finish_reason.is_some();
    }
    if let Some(u) = chunk.usage {
        events.push(StreamEvent::Usage(Usage {
            input_tokens: u.prompt_tokens.unwrap_or(0),
            output_tokens: u.completion_tokens.unwrap_or(0),
        }));
    }
    Ok((events, finished))
}

/// `Retry-After` in seconds (the HTTP-date form is ignored: backoff applies instead).
fn parse_retry_after(value: &str) -> Option<Duration> {
    let secs: f64 = value.trim().parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(3600.0)))
}

/// A reqwest error with its causes, e.g. `error sending request …: tcp connect error: …`.
fn error_chain(error: &reqwest::Error, key: Option<&ApiKey>) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(s) = source {
        let part = s.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = s.source();
    }
    redact(&text, key)
}

/// Untrusted server text made fit for an error message: key removed, controls visible,
/// at most [`QUOTE_CHARS`] chars.
fn quote(text: &str, key: Option<&ApiKey>) -> String {
    let clean = redact(text.trim(), key);
    let visible = visible_controls_line(&clean);
    let mut out: String = visible.chars().take(QUOTE_CHARS).collect();
    if visible.chars().nth(QUOTE_CHARS).is_some() {
        out.push('…');
    }
    out
}

/// `text` with every occurrence of the key replaced by `<redacted>`.
fn redact(text: &str, key: Option<&ApiKey>) -> String {
    match key {
        Some(k) if !k.expose().is_empty() => text.replace(k.expose(), "<redacted>"),
        Some(_) | None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn completions_url_joins_sensibly() {
        let cases = [
            (
                "https://api.deepseek.com",
                "https://api.deepseek.com/chat/completions",
            ),
            (
                "https://api.deepseek.com/",
                "https://api.deepseek.com/chat/completions",
            ),
            (
                "https://api.openai.com/v1",
                "https://api.openai.com/v1/chat/completions",
            ),
            (
                "https://api.openai.com/v1/",
                "https://api.openai.com/v1/chat/completions",
            ),
            (
                "http://127.0.0.1:8080/v1//",
                "http://127.0.0.1:8080/v1/chat/completions",
            ),
            (
                "http://h/v1/chat/completions/",
                "http://h/v1/chat/completions",
            ),
            (" https://h ", "https://h/chat/completions"),
        ];
        for (base, want) in cases {
            assert_eq!(completions_url(base).unwrap().as_str(), want, "{base}");
        }
        for bad in ["", "api.deepseek.com", "ftp://h", "http://"] {
            assert_eq!(
                completions_url(bad).map_err(|e| e.code()),
                Err("LLM_INVALID_CONFIG"),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn backoff_grows_caps_and_jitters() {
        let b = Backoff {
            initial: Duration::from_millis(100),
            max: Duration::from_secs(1),
        };
        let cases = [
            (1, None, 0.0, 50),
            (1, None, 0.999_999, 99),
            (2, None, 0.0, 100),
            (3, None, 0.0, 200),
            (5, None, 0.0, 500),
            (30, None, 0.0, 500),
            (40, None, 0.5, 750),
            (1, Some(Duration::from_millis(300)), 0.0, 300),
            (1, Some(Duration::from_secs(60)), 0.0, 1000),
            (1, Some(Duration::ZERO), 0.0, 0),
        ];
        for (retry, after, jitter, want_ms) in cases {
            assert_eq!(
                b.delay(retry, after, jitter).as_millis(),
                want_ms,
                "retry {retry} after {after:?} jitter {jitter}"
            );
        }
    }

    #[test]
    fn retry_after_seconds() {
        let cases = [
            ("0", Some(Duration::ZERO)),
            ("2", Some(Duration::from_secs(2))),
            (" 1.5 ", Some(Duration::from_millis(1500))),
            ("-1", None),
            ("NaN", None),
            ("inf", None),
            ("Wed, 21 Oct 2015 07:28:00 GMT", None),
            ("99999", Some(Duration::from_secs(3600))),
        ];
        for (value, want) in cases {
            assert_eq!(parse_retry_after(value), want, "{value:?}");
        }
    }

    #[test]
    fn statuses_map_to_codes_and_retry_policy() {
        let cases = [
            (401, "{}", "LLM_UNAUTHORIZED", false),
            (403, "forbidden", "LLM_UNAUTHORIZED", false),
            (404, "", "LLM_MODEL_NOT_FOUND", false),
            (
                400,
                r#"{"error":{"message":"Model Not Exist"}}"#,
                "LLM_MODEL_NOT_FOUND",
                false,
            ),
            (
                400,
                r#"{"error":{"code":"model_not_found"}}"#,
                "LLM_MODEL_NOT_FOUND",
                false,
            ),
            (
                400,
                r#"{"error":{"message":"bad json"}}"#,
                "LLM_BAD_REQUEST",
                false,
            ),
            (422, "unprocessable", "LLM_BAD_REQUEST", false),
            (408, "", "LLM_SERVER", true),
            (429, "slow down", "LLM_RATE_LIMITED", true),
            (500, "boom", "LLM_SERVER", true),
            (503, "busy", "LLM_SERVER", true),
        ];
        for (status, body, code, retryable) in cases {
            let f = classify_status(
                StatusCode::from_u16(status).unwrap(),
                body,
                "m",
                1,
                None,
                None,
            );
            assert_eq!(
                (f.error.code(), f.retryable),
                (code, retryable),
                "{status} {body}"
            );
        }
    }

    #[test]
    fn error_messages_come_from_the_body() {
        let cases = [
            (r#"{"error":{"message":"bad key"}}"#, "bad key"),
            (r#"{"error":"plain"}"#, "plain"),
            (r#"{"message":"top"}"#, "top"),
            (r#"{"detail":1}"#, r#"{"detail":1}"#),
            ("  not json \n", "not json"),
        ];
        for (body, want) in cases {
            assert_eq!(error_message(body), want, "{body}");
        }
    }

    #[test]
    fn chunks_parse_to_events() {
        type Want = Result<(Vec<StreamEvent>, bool), &'static str>;
        let cases: Vec<(Option<&str>, &str, Want)> = vec![
            (
                None,
                r#"{"choices":[{"delta":{"role":"assistant","content":""}}]}"#,
                Ok((vec![], false)),
            ),
            (
                None,
                r#"{"choices":[{"delta":{"reasoning_content":"think","content":null}}],"usage":null}"#,
                Ok((vec![StreamEvent::Reasoning("think".into())], false)),
            ),
            (
                None,
                r#"{"choices":[{"delta":{"content":"Hi"},"finish_reason":null}]}"#,
                Ok((vec![StreamEvent::Text("Hi".into())], false)),
            ),
            (
                None,
                r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#,
                Ok((vec![], true)),
            ),
            (
                None,
                r#"{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}}"#,
                Ok((
                    vec![StreamEvent::Usage(Usage {
                        input_tokens: 7,
                        output_tokens: 3,
                    })],
                    false,
                )),
            ),
            (None, r#"{"id":"x"}"#, Ok((vec![], false))),
            (
                None,
                r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"search_references","arguments":""}}]}}]}"#,
                Ok((
                    vec![StreamEvent::ToolCall(ToolCallDelta {
                        index: 0,
                        id: Some("call_1".into()),
                        name: Some("search_references".into()),
                        arguments: String::new(),
                    })],
                    false,
                )),
            ),
            (
                None,
                r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"ref\""}}]},"finish_reason":"tool_calls"}]}"#,
                Ok((
                    vec![StreamEvent::ToolCall(ToolCallDelta {
                        index: 1,
                        id: None,
                        name: None,
                        arguments: "{\"ref\"".into(),
                    })],
                    true,
                )),
            ),
            (
                None,
                r#"{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":3}}]}}]}"#,
                Err("LLM_BAD_STREAM"),
            ),
            (None, "not json", Err("LLM_BAD_STREAM")),
            (None, r#"{"choices":"nope"}"#, Err("LLM_BAD_STREAM")),
            (
                None,
                r#"{"error":{"message":"overloaded"}}"#,
                Err("LLM_SERVER"),
            ),
            (Some("error"), r#"{"message":"x"}"#, Err("LLM_SERVER")),
        ];
        for (event, data, want) in cases {
            let got = parse_chunk(event, data, 1, None).map_err(|e| e.code());
            assert_eq!(got, want, "{data}");
        }
    }

    #[test]
    fn the_key_never_shows() {
        let key = ApiKey::new("sk-very-secret").unwrap();
        let config = OpenAiConfig::new("https://h", "m", Some(key.clone()));
        assert!(!format!("{config:?}").contains("sk-very-secret"));
        let provider = OpenAiProvider::new(config).unwrap();
        assert!(!format!("{provider:?}").contains("sk-very-secret"));
        assert_eq!(
            quote("echo sk-very-secret\u{1b}[2J", Some(&key)),
            "echo <redacted>\\x1B[2J"
        );
        assert_eq!(ApiKey::new("  "), None);
        assert_eq!(ApiKey::new(" k "), ApiKey::new("k"));
    }

    #[test]
    fn a_key_that_cannot_be_a_header_is_a_config_error() {
        let config = OpenAiConfig::new("https://h", "m", ApiKey::new("bad\nkey"));
        let err = OpenAiProvider::new(config).unwrap_err();
        assert_eq!(err.code(), "LLM_INVALID_CONFIG");
        assert!(!err.to_string().contains("bad\nkey"));
    }
}
