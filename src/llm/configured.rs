//! A provider with configured bounds (`[model] context_tokens`, `max_reply_bytes`,
//! `max_turn_secs`): every call goes to the wrapped provider unchanged; only
//! [`Provider::context_tokens`] and [`Provider::reply_limits`] answer from the config, and
//! a model switch (`/model NAME`) keeps them.

use std::sync::Arc;

use futures_util::stream::BoxStream;
use tokio_util::sync::CancellationToken;

use super::error::LlmError;
use super::provider::{ChatRequest, Provider, ReplyLimits, StreamEvent};

/// `inner` with its context window and reply bounds overridden where set.
#[derive(Clone)]
pub struct Configured {
    inner: Arc<dyn Provider>,
    context_tokens: Option<u64>,
    reply_limits: Option<ReplyLimits>,
}

impl Configured {
    /// `inner` as it is.
    pub fn new(inner: Arc<dyn Provider>) -> Self {
        Configured {
            inner,
            context_tokens: None,
            reply_limits: None,
        }
    }

    /// With a context window of `tokens`.
    #[must_use]
    pub fn with_context_tokens(mut self, tokens: u64) -> Self {
        self.context_tokens = Some(tokens);
        self
    }

    /// With reply bounds `limits`.
    #[must_use]
    pub fn with_reply_limits(mut self, limits: ReplyLimits) -> Self {
        self.reply_limits = Some(limits);
        self
    }
}

impl Provider for Configured {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn model(&self) -> &str {
        self.inner.model()
    }

    fn context_tokens(&self) -> u64 {
        self.context_tokens
            .unwrap_or_else(|| self.inner.context_tokens())
    }

    fn reply_limits(&self) -> ReplyLimits {
        self.reply_limits
            .unwrap_or_else(|| self.inner.reply_limits())
    }

    fn stream(
        &self,
        request: ChatRequest,
        cancel: CancellationToken,
    ) -> BoxStream<'static, Result<StreamEvent, LlmError>> {
        self.inner.stream(request, cancel)
    }

    fn with_model(&self, model: &str) -> Option<Arc<dyn Provider>> {
        let inner = self.inner.with_model(model)?;
        Some(Arc::new(Configured {
            inner,
            ..self.clone()
        }))
    }

    fn known_models(&self) -> Vec<String> {
        self.inner.known_models()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::OfflineProvider;
    use std::time::Duration;

    #[test]
    fn the_configured_bounds_survive_a_model_switch() {
        let limits = ReplyLimits {
            max_reply_bytes: 1234,
            max_turn: Duration::from_secs(7),
        };
        let p = Configured::new(Arc::new(OfflineProvider::new()))
            .with_context_tokens(4096)
            .with_reply_limits(limits);
        assert_eq!((p.context_tokens(), p.reply_limits()), (4096, limits));
        if let Some(switched) = p.with_model("other") {
            assert_eq!(
                (switched.context_tokens(), switched.reply_limits()),
                (4096, limits)
            );
        }
        let plain = Configured::new(Arc::new(OfflineProvider::new()));
        assert_eq!(plain.reply_limits(), ReplyLimits::default());
    }
}
