//! What the `candidates` and `prepare` subcommands share: building the reference service
//! from `[references]`, resolving the target session, running async work with Ctrl+C as a
//! cancel, and reporting session-reference errors (docs/cli.md).

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::cli::json_escape::escape_json_controls;
use dsh_reference::{AgentRef, ReferenceConfig, ReferenceError, SessionReferences};
use dsh_store::reader::read_header;
use dsh_store::{SessionQuery, SessionStore};
use ratatui_mention::untrusted::visible_controls_line;

use super::Context;
use super::config::ReferencesSection;
use super::foreign_sources::open_sources;
use dsh_foreign::SessionSources;

/// Validated reference settings from the config file (absent keys take the defaults).
pub fn reference_config(section: &ReferencesSection) -> Result<ReferenceConfig, ReferenceError> {
    let defaults = ReferenceConfig::default();
    let or = |v: Option<i64>, d: usize| v.unwrap_or(i64::try_from(d).unwrap_or(i64::MAX));
    ReferenceConfig::new(
        or(section.max_references, defaults.max_references),
        or(section.candidate_limit, defaults.candidate_limit),
        or(section.max_reference_bytes, defaults.max_reference_bytes),
    )
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
pub fn block_on<T, F>(work: impl FnOnce(CancellationToken) -> F) -> Result<T, String>
where
    F: std::future::Future<Output = T>,
{
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
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

/// Report a session-reference error: `{"error":{"code","message"}}` on stdout with `--json`,
/// else `dsh-refs: CODE: message` on stderr. Exit status 1 either way.
pub fn report_error(err: &ReferenceError, as_json: bool) -> Result<ExitCode, String> {
    if as_json {
        let body = json!({"error": {"code": err.code.as_str(), "message": err.message}});
        let text = serde_json::to_string_pretty(&body).map_err(|e| e.to_string())?;
        write_stdout(&format!("{}\n", escape_json_controls(&text)))?;
    } else {
        eprintln!(
            "dsh-refs: {}: {}",
            err.code,
            visible_controls_line(&err.message)
        );
    }
    Ok(ExitCode::from(1))
}

/// Write all of `text` to stdout.
pub fn write_stdout(text: &str) -> Result<(), String> {
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .map_err(|e| format!("cannot write output: {e}"))
}

/// `createdAt` (Unix ms) as local time, or the raw number when out of range.
pub fn local_time(ms: i64) -> String {
    use chrono::TimeZone;
    match chrono::Local.timestamp_millis_opt(ms) {
        chrono::LocalResult::Single(t) | chrono::LocalResult::Ambiguous(t, _) => {
            t.format("%Y-%m-%d %H:%M").to_string()
        }
        chrono::LocalResult::None => ms.to_string(),
    }
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
            candidate_limit: None,
            max_reference_bytes: Some(100),
        };
        let c = reference_config(&custom).unwrap();
        assert_eq!(
            (c.max_references, c.candidate_limit, c.max_reference_bytes),
            (2, 50, 100)
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
