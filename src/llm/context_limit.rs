//! A provider with a configured context window (`model.context_tokens`): every call goes to
//! the wrapped provider unchanged; only [`Provider::context_tokens`] answers differently.

use std::sync::Arc;

use futures_util::stream::BoxStream;
use tokio_util::sync::CancellationToken;

use super::error::LlmError;
use super::provider::{ChatRequest, Provider, StreamEvent};

/// `inner` with its context window overridden.
pub struct WithContextTokens {
    inner: Arc<dyn Provider>,
    tokens: u64,
}

impl WithContextTokens {
    pub fn new(inner: Arc<dyn Provider>, tokens: u64) -> Self {
        WithContextTokens { inner, tokens }
    }
}

impl Provider for WithContextTokens {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn model(&self) -> &str {
        self.inner.model()
    }

    fn context_tokens(&self) -> u64 {
        self.tokens
    }

    fn stream(
        &self,
        request: ChatRequest,
        cancel: CancellationToken,
    ) -> BoxStream<'static, Result<StreamEvent, LlmError>> {
        self.inner.stream(request, cancel)
    }
}
