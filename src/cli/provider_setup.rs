//! Mapping the `[model]` config section to a model provider (docs/llm-providers.md: docs/cli.md): `auto` is
//! `openai` when the key variable is set, else `offline`; the key is read from the
//! environment variable named by `api_key_env` and never printed.

use std::sync::Arc;
use std::time::Duration;

use crate::llm::configured::Configured;
use crate::llm::{ApiKey, LlmError, ModelSettings, Provider, ReplyLimits};

use super::config::ModelSection;

/// Pause between offline chunks in the TUI, so a reply visibly streams.
pub const INTERACTIVE_OFFLINE_CHUNK_DELAY: Duration = Duration::from_millis(25);

/// The llm layer's settings for `section`, reading the key through `env`.
pub fn model_settings(
    section: &ModelSection,
    env: impl Fn(&str) -> Option<String>,
    offline_chunk_delay: Duration,
) -> ModelSettings {
    ModelSettings {
        choice: section.provider,
        base_url: section.base_url.clone(),
        model: section.model.clone(),
        api_key_env: section.api_key_env.clone(),
        api_key: env(&section.api_key_env).and_then(ApiKey::new),
        timeout: Duration::from_secs(section.timeout_secs),
        max_retries: section.max_retries,
        offline_chunk_delay,
    }
}

/// Build the provider for `section` with the process environment and `offline_chunk_delay`.
pub fn provider_for(
    section: &ModelSection,
    offline_chunk_delay: Duration,
) -> Result<Arc<dyn Provider>, LlmError> {
    let settings = model_settings(
        section,
        |name| std::env::var(name).ok(),
        offline_chunk_delay,
    );
    let provider = crate::llm::build_provider(settings.resolve()?)?;
    let mut configured = Configured::new(provider).with_reply_limits(reply_limits(section));
    if let Some(tokens) = section.context_tokens {
        configured = configured.with_context_tokens(tokens);
    }
    Ok(Arc::new(configured))
}

/// The provider for the chat app: as [`provider_for`], except that a provider that needs
/// an API key which is not set (`provider = "openai"` without its variable) is replaced by
/// the offline model, with a notice naming the variable to set — the app still opens, to
/// browse, resume and reference sessions.
pub fn provider_for_app(
    section: &ModelSection,
    offline_chunk_delay: Duration,
) -> Result<(Arc<dyn Provider>, Option<String>), LlmError> {
    let keyless = section.provider == crate::llm::ProviderChoice::OpenAi
        && std::env::var(&section.api_key_env)
            .ok()
            .and_then(ApiKey::new)
            .is_none();
    if !keyless {
        return provider_for(section, offline_chunk_delay).map(|p| (p, None));
    }
    let offline = ModelSection {
        provider: crate::llm::ProviderChoice::Offline,
        ..section.clone()
    };
    let notice = format!(
        "no API key: {var} is not set, so this run uses the offline model instead of {model} \
         at {url}; set {var} and start again to use it",
        var = section.api_key_env,
        model = section.model,
        url = section.base_url,
    );
    provider_for(&offline, offline_chunk_delay).map(|p| (p, Some(notice)))
}

/// The reply bounds of `section` (`max_reply_bytes`, `max_turn_secs`).
pub fn reply_limits(section: &ModelSection) -> ReplyLimits {
    ReplyLimits {
        max_reply_bytes: section
            .max_reply_bytes
            .unwrap_or(crate::llm::provider::DEFAULT_MAX_REPLY_BYTES),
        max_turn: Duration::from_secs(section.max_turn_secs),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ProviderChoice;

    fn section(provider: ProviderChoice) -> ModelSection {
        ModelSection {
            provider,
            api_key_env: "TEST_KEY_VAR".into(),
            ..ModelSection::default()
        }
    }

    #[test]
    fn config_maps_to_the_provider_it_names() {
        let cases = [
            (ProviderChoice::Auto, None, Ok("offline")),
            (ProviderChoice::Auto, Some("  "), Ok("offline")),
            (ProviderChoice::Auto, Some("sk-1"), Ok("openai")),
            (ProviderChoice::Offline, Some("sk-1"), Ok("offline")),
            (ProviderChoice::OpenAi, Some("sk-1"), Ok("openai")),
            (ProviderChoice::OpenAi, None, Err("LLM_INVALID_CONFIG")),
        ];
        for (kind, key, want) in cases {
            let settings = model_settings(
                &section(kind),
                |name| {
                    (name == "TEST_KEY_VAR")
                        .then(|| key.map(str::to_owned))
                        .flatten()
                },
                Duration::ZERO,
            );
            let got: Result<String, &str> = settings
                .resolve()
                .and_then(crate::llm::build_provider)
                .map(|p| p.name().to_owned())
                .map_err(|e| e.code());
            assert_eq!(got.as_deref().map_err(|e| *e), want, "{kind:?} {key:?}");
        }
    }

    #[test]
    fn settings_carry_the_section_values() {
        let mut s = section(ProviderChoice::OpenAi);
        s.timeout_secs = 9;
        s.max_retries = 2;
        s.model = "m".into();
        let got = model_settings(&s, |_| Some("k".into()), Duration::from_millis(3));
        assert_eq!(
            (
                got.timeout,
                got.max_retries,
                got.model.as_str(),
                got.api_key_env.as_str()
            ),
            (Duration::from_secs(9), 2, "m", "TEST_KEY_VAR")
        );
        assert_eq!(got.offline_chunk_delay, Duration::from_millis(3));
        assert!(got.api_key.is_some());
    }
}
