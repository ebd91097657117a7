//! Choosing and building the provider from model settings. The CLI maps its `[model]`
//! config section to [`ModelSettings`] (the llm layer never reads the CLI's types).

use std::sync::Arc;
use std::time::Duration;

use super::error::LlmError;
use super::offline::OfflineProvider;
use super::openai::{ApiKey, OpenAiConfig, OpenAiProvider};
use super::provider::Provider;

/// Which provider the user asked for (`[model] provider` in the config file).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderChoice {
    /// `openai` when an API key is available, else `offline` (the default).
    #[default]
    Auto,
    /// Deterministic, no network (the embedded model).
    Offline,
    /// OpenAI-compatible chat completions over HTTP.
    OpenAi,
}

/// The `[model]` settings, with the key already read from `api_key_env`.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelSettings {
    pub choice: ProviderChoice,
    pub base_url: String,
    pub model: String,
    /// Name of the environment variable the key came from (for error messages).
    pub api_key_env: String,
    pub api_key: Option<ApiKey>,
    pub timeout: Duration,
    pub max_retries: u32,
    /// Pause between offline chunks (an interactive feel in the TUI; zero for scripts).
    pub offline_chunk_delay: Duration,
}

/// A fully resolved provider configuration.
#[derive(Debug, Clone, PartialEq)]
pub enum ProviderConfig {
    Offline { chunk_delay: Duration },
    OpenAi(OpenAiConfig),
}

impl ModelSettings {
    /// Resolve the choice: `auto` picks `openai` only with a key; an explicit `openai`
    /// without a key is an error naming the variable to set.
    pub fn resolve(self) -> Result<ProviderConfig, LlmError> {
        let use_openai = match self.choice {
            ProviderChoice::Offline => false,
            ProviderChoice::Auto => self.api_key.is_some(),
            ProviderChoice::OpenAi => {
                if self.api_key.is_none() {
                    return Err(LlmError::InvalidConfig {
                        message: format!(
                            "provider \"openai\" needs an API key in the environment variable {}",
                            self.api_key_env
                        ),
                    });
                }
                true
            }
        };
        if !use_openai {
            return Ok(ProviderConfig::Offline {
                chunk_delay: self.offline_chunk_delay,
            });
        }
        let mut config = OpenAiConfig::new(self.base_url, self.model, self.api_key);
        config.timeout = self.timeout;
        config.max_retries = self.max_retries;
        Ok(ProviderConfig::OpenAi(config))
    }
}

/// Build the provider a configuration describes (no network is touched).
pub fn build_provider(config: ProviderConfig) -> Result<Arc<dyn Provider>, LlmError> {
    Ok(match config {
        ProviderConfig::Offline { chunk_delay } => {
            Arc::new(OfflineProvider::new().with_chunk_delay(chunk_delay))
        }
        ProviderConfig::OpenAi(config) => Arc::new(OpenAiProvider::new(config)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(choice: ProviderChoice, key: Option<&str>) -> ModelSettings {
        ModelSettings {
            choice,
            base_url: "https://api.deepseek.com".into(),
            model: "deepseek-chat".into(),
            api_key_env: "DEEPSEEK_API_KEY".into(),
            api_key: key.and_then(ApiKey::new),
            timeout: Duration::from_secs(7),
            max_retries: 1,
            offline_chunk_delay: Duration::ZERO,
        }
    }

    #[test]
    fn choice_and_key_pick_the_provider() {
        let cases = [
            (ProviderChoice::Auto, None, Ok("offline")),
            (ProviderChoice::Auto, Some(""), Ok("offline")),
            (ProviderChoice::Auto, Some("k"), Ok("openai")),
            (ProviderChoice::Offline, Some("k"), Ok("offline")),
            (ProviderChoice::OpenAi, Some("k"), Ok("openai")),
            (ProviderChoice::OpenAi, None, Err("LLM_INVALID_CONFIG")),
        ];
        for (choice, key, want) in cases {
            let got = settings(choice, key)
                .resolve()
                .and_then(build_provider)
                .map(|p| p.name().to_owned())
                .map_err(|e| e.code());
            assert_eq!(got.as_deref().map_err(|e| *e), want, "{choice:?} {key:?}");
        }
    }

    #[test]
    fn openai_settings_carry_over() {
        let Ok(ProviderConfig::OpenAi(c)) = settings(ProviderChoice::Auto, Some("k")).resolve()
        else {
            panic!("expected openai");
        };
        assert_eq!(
            (
                c.base_url.as_str(),
                c.model.as_str(),
                c.timeout,
                c.max_retries
            ),
            (
                "https://api.deepseek.com",
                "deepseek-chat",
                Duration::from_secs(7),
                1
            )
        );
        assert_eq!(c.api_key, ApiKey::new("k"));
    }

    #[test]
    fn missing_key_error_names_the_variable() {
        let err = settings(ProviderChoice::OpenAi, None)
            .resolve()
            .unwrap_err();
        assert!(err.to_string().contains("DEEPSEEK_API_KEY"), "{err}");
    }

    #[test]
    fn a_bad_base_url_fails_at_build_time() {
        let mut s = settings(ProviderChoice::OpenAi, Some("k"));
        s.base_url = "not a url".into();
        let err = s.resolve().and_then(build_provider).err().map(|e| e.code());
        assert_eq!(err, Some("LLM_INVALID_CONFIG"));
    }
}
