//! llm layer (docs/llm-providers.md): the provider contract, the offline model and the OpenAI-compatible
//! streaming provider.

pub mod configured;
pub mod error;
pub mod factory;
pub mod offline;
pub mod offline_recall;
pub mod openai;
pub mod openai_body;
pub mod provider;
pub mod sse;
pub mod text_only_images;

pub use error::LlmError;
pub use factory::{ModelSettings, ProviderChoice, ProviderConfig, build_provider};
pub use offline::OfflineProvider;
pub use openai::{ApiKey, OpenAiConfig, OpenAiProvider};
pub use provider::{
    ChatRequest, Provider, ReplyLimits, StreamEvent, ToolCallDelta, ToolSpec, Usage,
    is_summarize_request, summarize_request,
};
