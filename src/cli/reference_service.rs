//! What the `candidates` and `prepare` subcommands share: building the reference service
//! from `[references]`, resolving the target session, running async work with Ctrl+C as a
//! cancel (docs/cli.md).

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use dsh_reference::{AgentRef, ReferenceConfig, ReferenceError, SessionReferences};
use dsh_store::reader::read_header;
use dsh_store::{SessionQuery, SessionStore};

use super::config::ReferencesSection;
use super::foreign_sources::open_sources;
use super::{CliError, Context};
use dsh_foreign::SessionSources;

/// Validated reference settings from the config file (absent keys take the defaults).
pub fn reference_config(section: &ReferencesSection) -> Result<ReferenceConfig, ReferenceError> {
    let defaults = ReferenceConfig::default();
    let or = |v: Option<i64>, d: usize| v.unwrap_or(i64::try_from(d).unwrap_or(i64::MAX));
    ReferenceConfig::new(
        or(section.max_references, defaults.max_references),
        or(section.candidate_limit, defaults.candidate_limit),
        or(section.max_reference_bytes, defaults.max_reference_bytes),
    )?
    .with_redaction(section.redact_secrets.unwrap_or(defaults.redact_secrets))
    .with_excerpt_context(or(section.excerpt_context, defaults.excerpt_context))?
    .with_file_limits(
        or(section.max_files, defaults.max_files),
        or(section.max_file_bytes, defaults.max_file_bytes),
    )?
    .with_share(section.share.unwrap_or(defaults.share()))
}

/// The dsh store, every session source (the store and the foreign ones), and the reference
/// service over all of them.
pub struct Service {
    pub store: SessionStore,
    pub sources: Arc<SessionSources>,
    pub refs: SessionReferences,
}

/// The store, the sources and the reference service over them.
pub fn open_service(ctx: &Context) -> Result<Service, ReferenceError> {
    let config = reference_config(&ctx.config.references)?;
    let store = SessionStore::with_persisted_index(&ctx.store_root)
        .with_limits(ctx.config.store.limits())
        .with_compression(ctx.config.store.compression);
    let sources = open_sources(ctx, &store);
    let query: Arc<dyn SessionQuery> = Arc::clone(&sources) as Arc<dyn SessionQuery>;
    Ok(Service {
        store,
        sources,
        refs: SessionReferences::new(query, config),
    })
}

/// The target session as "the agent": its header's cwd when it exists (in the store, else
/// among the listed foreign sessions), else the process's current directory.
pub fn target_agent(service: &Service, id: &str) -> AgentRef {
    let header_cwd = match service.store.locate(id) {
        Ok(Some(loc)) => read_header(&loc.path, loc.format).ok().map(|h| h.cwd),
        Ok(None) | Err(_) => service
            .sources
            .list_sessions()
            .ok()
            .and_then(|list| list.iter().find(|h| h.id == id).map(|h| h.cwd.clone())),
    };
    let cwd = match header_cwd {
        Some(cwd) => cwd,
        None => std::env::current_dir()
            .ok()
            .map(|d| d.to_string_lossy().into_owned()),
    };
    AgentRef {
        session_id: id.to_owned(),
        cwd,
    }
}

/// Run `work` to completion on a small runtime; Ctrl+C cancels it through the token.
pub fn block_on<T, F>(work: impl FnOnce(CancellationToken) -> F) -> Result<T, CliError>
where
    F: std::future::Future<Output = T>,
{
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::io("cannot start the async runtime", e))?;
    let cancel = CancellationToken::new();
    let on_interrupt = cancel.clone();
    Ok(runtime.block_on(async move {
        let watcher = tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                on_interrupt.cancel();
            }
        });
        let out = work(cancel).await;
        watcher.abort();
        out
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_reference::ErrorCode;

    #[test]
    fn config_section_defaults_and_validation() {
        let empty = ReferencesSection::default();
        assert_eq!(
            reference_config(&empty).unwrap(),
            ReferenceConfig::default()
        );
        let custom = ReferencesSection {
            max_references: Some(2),
            max_reference_bytes: Some(100),
            redact_secrets: Some(false),
            excerpt_context: Some(4),
            max_files: Some(5),
            max_file_bytes: Some(1000),
            ..ReferencesSection::default()
        };
        let c = reference_config(&custom).unwrap();
        assert_eq!(
            (c.max_references, c.candidate_limit, c.max_reference_bytes),
            (2, 50, 100)
        );
        assert!(!c.redact_secrets);
        assert_eq!(
            (c.excerpt_context, c.max_files, c.max_file_bytes),
            (4, 5, 1000)
        );
        for share in [0.0, -1.0, 1.01] {
            let bad = ReferencesSection {
                share: Some(share),
                ..ReferencesSection::default()
            };
            assert_eq!(
                reference_config(&bad).unwrap_err().code,
                ErrorCode::InvalidConfig,
                "{share}"
            );
        }
        let quarter = ReferencesSection {
            share: Some(0.25),
            ..ReferencesSection::default()
        };
        assert_eq!(
            reference_config(&quarter).unwrap().share_millionths,
            250_000
        );
        let bad_files = ReferencesSection {
            max_file_bytes: Some(10),
            ..ReferencesSection::default()
        };
        assert!(
            reference_config(&bad_files)
                .unwrap_err()
                .message
                .contains("max_file_bytes")
        );
        let bad = ReferencesSection {
            max_references: Some(4),
            ..ReferencesSection::default()
        };
        let err = reference_config(&bad).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidConfig);
        assert!(err.message.contains("max_references"));
    }
}
