//! Which foreign sources a run reads (docs/foreign-sources.md): `[sources]` in the config,
//! the tools' default directories when they exist, `--no-foreign-sources`; and the composite
//! query over them and the dsh store.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use dsh_foreign::source_index::index_path;
use dsh_foreign::{ForeignSource, Origin, SessionSources, SourceConfig};
use dsh_store::{SessionQuery, SessionStore};

use super::Context;
use super::config::SourceSetting;
use crate::agent::title::plain_fallback_title;

/// The tool's default home directory: `~/.claude`; `$CODEX_HOME`, else `~/.codex`.
fn default_home(origin: &Origin) -> Option<PathBuf> {
    let home = || directories::BaseDirs::new().map(|d| d.home_dir().to_path_buf());
    match origin {
        Origin::ClaudeCode => home().map(|h| h.join(".claude")),
        Origin::Codex => match std::env::var_os("CODEX_HOME") {
            Some(dir) if !dir.is_empty() => Some(PathBuf::from(dir)),
            _ => home().map(|h| h.join(".codex")),
        },
        Origin::Dsh | Origin::Other(_) => None,
    }
}

/// The logs directory a setting names: off → none; default → the tool's directory when it
/// exists; a path → that path (a missing one lists nothing).
pub fn logs_dir(origin: &Origin, setting: &SourceSetting) -> Option<PathBuf> {
    let configured = match setting {
        SourceSetting::Off => return None,
        SourceSetting::Path(path) => path.clone(),
        SourceSetting::Default => default_home(origin).filter(|d| d.is_dir())?,
    };
    Some(SourceConfig::logs_dir(origin, &configured))
}

/// Where a source's listing cache is kept: the platform cache dir, never the tool's dir.
fn index_file(origin: &Origin, logs: &Path) -> Option<PathBuf> {
    let dirs = directories::ProjectDirs::from("", "", "dsh-refs")?;
    Some(index_path(&dirs.cache_dir().join("foreign"), origin, logs))
}

/// The foreign sources this run reads, with the dsh store's line limit `max_line_bytes`
/// (`store.max_line_bytes`), so a foreign log is bounded exactly like a dsh log.
pub fn foreign_sources(ctx: &Context, max_line_bytes: u64) -> Vec<ForeignSource> {
    if !ctx.foreign_sources {
        return Vec::new();
    }
    let settings = [
        (Origin::ClaudeCode, &ctx.config.sources.claude_code),
        (Origin::Codex, &ctx.config.sources.codex),
    ];
    settings
        .into_iter()
        .filter_map(|(origin, setting)| {
            let root = logs_dir(&origin, setting)?;
            Some(ForeignSource::new(SourceConfig {
                index_file: index_file(&origin, &root),
                origin,
                root,
                max_line_bytes,
                clean_title: plain_fallback_title,
            }))
        })
        .collect()
}

/// The dsh store and this run's foreign sources as one query.
pub fn open_sources(ctx: &Context, store: &SessionStore) -> Arc<SessionSources> {
    let dsh: Arc<dyn SessionQuery> = Arc::new(store.clone());
    let foreign = foreign_sources(ctx, store.limits().max_line_bytes);
    Arc::new(SessionSources::new(dsh, foreign))
}

/// The refusal for writing to (resuming, sending to) a foreign session, if `id` is one.
pub fn read_only_refusal(sources: &SessionSources, id: &str) -> Option<String> {
    sources.origin(id).read_only_refusal()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_pick_directories() {
        let tmp = tempfile::tempdir().unwrap();
        assert_eq!(logs_dir(&Origin::Codex, &SourceSetting::Off), None);
        let home = tmp.path().join("codex-home");
        std::fs::create_dir_all(home.join("sessions")).unwrap();
        assert_eq!(
            logs_dir(&Origin::Codex, &SourceSetting::Path(home.clone())),
            Some(home.join("sessions"))
        );
        let direct = tmp.path().join("projects-only");
        assert_eq!(
            logs_dir(&Origin::ClaudeCode, &SourceSetting::Path(direct.clone())),
            Some(direct)
        );
    }
}
