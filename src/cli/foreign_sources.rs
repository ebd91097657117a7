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
use crate::agent::title::one_line_title;

/// A directory an environment variable names, if it is set and not empty.
fn env_dir(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
}

/// The tool's default home directory: `~/.claude`; `$CODEX_HOME`, else `~/.codex`;
/// `$GEMINI_CLI_HOME/.gemini`, else `~/.gemini`; `$XDG_DATA_HOME/opencode`, else
/// `~/.local/share/opencode` (on every platform, as OpenCode itself does);
/// `$QWEN_RUNTIME_DIR`, else `~/.qwen`; `~/.copilot`.
fn default_home(origin: &Origin) -> Option<PathBuf> {
    let home = || directories::BaseDirs::new().map(|d| d.home_dir().to_path_buf());
    match origin {
        Origin::ClaudeCode => home().map(|h| h.join(".claude")),
        Origin::Codex => env_dir("CODEX_HOME").or_else(|| home().map(|h| h.join(".codex"))),
        Origin::Gemini => env_dir("GEMINI_CLI_HOME")
            .or_else(home)
            .map(|h| h.join(".gemini")),
        Origin::OpenCode => env_dir("XDG_DATA_HOME")
            .or_else(|| home().map(|h| h.join(".local/share")))
            .map(|d| d.join("opencode")),
        Origin::Qwen => env_dir("QWEN_RUNTIME_DIR").or_else(|| home().map(|h| h.join(".qwen"))),
        Origin::Copilot => home().map(|h| h.join(".copilot")),
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

/// Where a source's listing cache is kept (and, for OpenCode, its copies of the database,
/// next to it): the platform cache dir, never the tool's dir.
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
        (Origin::Gemini, &ctx.config.sources.gemini),
        (Origin::OpenCode, &ctx.config.sources.opencode),
        (Origin::Qwen, &ctx.config.sources.qwen_code),
        (Origin::Copilot, &ctx.config.sources.copilot),
    ];
    settings
        .into_iter()
        .filter_map(|(origin, setting)| {
            let root = logs_dir(&origin, setting)?;
            Some(ForeignSource::new(SourceConfig {
                index_file: index_file(&origin, &root),
                copy_limits: ctx.config.sources.copy_limits(),
                origin,
                root,
                max_line_bytes,
                clean_title: one_line_title,
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
        // Gemini CLI: its home, also when its `tmp` is named; OpenCode: its data dir, also
        // when its `storage` is named.
        let gemini = tmp.path().join(".gemini");
        std::fs::create_dir_all(gemini.join("tmp")).unwrap();
        for configured in [gemini.clone(), gemini.join("tmp")] {
            assert_eq!(
                logs_dir(&Origin::Gemini, &SourceSetting::Path(configured)),
                Some(gemini.clone())
            );
        }
        let opencode = tmp.path().join("opencode");
        std::fs::create_dir_all(opencode.join("storage")).unwrap();
        for configured in [opencode.clone(), opencode.join("storage")] {
            assert_eq!(
                logs_dir(&Origin::OpenCode, &SourceSetting::Path(configured)),
                Some(opencode.clone())
            );
        }
    }
}
