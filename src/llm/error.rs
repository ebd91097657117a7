//! The llm layer's error type: one variant per failure a user can act on, each with a
//! stable code (`LLM_…`) that the agent logs and the CLI prints.

use std::time::Duration;

/// Why a model call failed. Messages never contain the API key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LlmError {
    /// The provider configuration cannot be used (bad base URL, client setup failure).
    #[error("invalid model configuration: {message}")]
    InvalidConfig { message: String },
    /// HTTP 401/403: the key is missing, wrong or lacks access.
    #[error("the model server rejected the API key (HTTP {status}): {message}")]
    Unauthorized { status: u16, message: String },
    /// HTTP 404, or a body saying the model does not exist.
    #[error("model `{model}` not found (HTTP {status}; check `model` and `base_url`): {message}")]
    ModelNotFound {
        model: String,
        status: u16,
        message: String,
    },
    /// Connection refused, DNS failure, TLS failure, connection reset before a reply.
    #[error("cannot reach the model server: {message}")]
    Network { message: String },
    /// No response (or no further chunk) within the configured timeout.
    #[error("the model server did not answer within {} s ({phase})", timeout.as_secs_f64())]
    Timeout {
        phase: &'static str,
        timeout: Duration,
    },
    /// HTTP 429 after the retry budget was spent.
    #[error("rate limited by the model server (HTTP 429) after {attempts} attempt(s): {message}")]
    RateLimited { attempts: u32, message: String },
    /// HTTP 5xx after the retry budget was spent, or an error object inside the stream.
    #[error("model server error (HTTP {status}) after {attempts} attempt(s): {message}")]
    Server {
        status: u16,
        attempts: u32,
        message: String,
    },
    /// Any other rejected request (HTTP 4xx).
    #[error("the model server rejected the request (HTTP {status}): {message}")]
    BadRequest { status: u16, message: String },
    /// The reply stream was malformed or ended early.
    #[error("bad reply stream from the model server: {message}")]
    BadStream { message: String },
    /// The caller cancelled the request.
    #[error("model request cancelled")]
    Cancelled,
    /// The reply reached `[model] max_reply_bytes`: the stream was cut there.
    #[error(
        "the reply reached {limit} bytes of text and reasoning ([model] max_reply_bytes) and \
         was cut there; the part received is kept"
    )]
    ReplyTooLarge { limit: u64 },
    /// The turn reached `[model] max_turn_secs`: the stream was cut there.
    #[error(
        "the turn took {secs} s ([model] max_turn_secs) and the reply was cut there; the part \
         received is kept"
    )]
    TurnDeadline { secs: u64 },
}

impl LlmError {
    /// The stable code of this error (e.g. `LLM_UNAUTHORIZED`).
    pub fn code(&self) -> &'static str {
        match self {
            LlmError::InvalidConfig { .. } => "LLM_INVALID_CONFIG",
            LlmError::Unauthorized { .. } => "LLM_UNAUTHORIZED",
            LlmError::ModelNotFound { .. } => "LLM_MODEL_NOT_FOUND",
            LlmError::Network { .. } => "LLM_NETWORK",
            LlmError::Timeout { .. } => "LLM_TIMEOUT",
            LlmError::RateLimited { .. } => "LLM_RATE_LIMITED",
            LlmError::Server { .. } => "LLM_SERVER",
            LlmError::BadRequest { .. } => "LLM_BAD_REQUEST",
            LlmError::BadStream { .. } => "LLM_BAD_STREAM",
            LlmError::Cancelled => "LLM_CANCELLED",
            LlmError::ReplyTooLarge { .. } => "LLM_REPLY_TOO_LARGE",
            LlmError::TurnDeadline { .. } => "LLM_TURN_DEADLINE",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_stable() {
        let cases = [
            (
                LlmError::InvalidConfig {
                    message: "x".into(),
                },
                "LLM_INVALID_CONFIG",
            ),
            (
                LlmError::Unauthorized {
                    status: 401,
                    message: "x".into(),
                },
                "LLM_UNAUTHORIZED",
            ),
            (
                LlmError::ModelNotFound {
                    model: "m".into(),
                    status: 404,
                    message: "x".into(),
                },
                "LLM_MODEL_NOT_FOUND",
            ),
            (
                LlmError::Network {
                    message: "x".into(),
                },
                "LLM_NETWORK",
            ),
            (
                LlmError::Timeout {
                    phase: "connect",
                    timeout: Duration::from_secs(1),
                },
                "LLM_TIMEOUT",
            ),
            (
                LlmError::RateLimited {
                    attempts: 1,
                    message: "x".into(),
                },
                "LLM_RATE_LIMITED",
            ),
            (
                LlmError::Server {
                    status: 500,
                    attempts: 1,
                    message: "x".into(),
                },
                "LLM_SERVER",
            ),
            (
                LlmError::BadRequest {
                    status: 400,
                    message: "x".into(),
                },
                "LLM_BAD_REQUEST",
            ),
            (
                LlmError::BadStream {
                    message: "x".into(),
                },
                "LLM_BAD_STREAM",
            ),
            (LlmError::Cancelled, "LLM_CANCELLED"),
            (LlmError::ReplyTooLarge { limit: 1 }, "LLM_REPLY_TOO_LARGE"),
            (LlmError::TurnDeadline { secs: 1 }, "LLM_TURN_DEADLINE"),
        ];
        for (err, code) in cases {
            assert_eq!(err.code(), code, "{err}");
        }
    }
}
