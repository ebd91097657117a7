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

/// `~` and `~/…` at the start of a configured path stand for the home directory (as in a
/// shell); any other path is taken as written.
pub fn expand_home(path: &Path) -> PathBuf {
    let home = || directories::BaseDirs::new().map(|d| d.home_dir().to_path_buf());
    let text = path.to_string_lossy();
    if text == "~" {
        return home().unwrap_or_else(|| path.to_owned());
    }
    match (text.strip_prefix("~/"), home()) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => path.to_owned(),
    }
}

/// The logs directory a setting names: off → none; default → the tool's directory when it
/// exists; a path (`~` expanded) → that path (a missing one lists nothing, and
/// [`configured_path_problem`] says so).
pub fn logs_dir(origin: &Origin, setting: &SourceSetting) -> Option<PathBuf> {
    let configured = match setting {
        SourceSetting::Off => return None,
        SourceSetting::Path(path) => expand_home(path),
        SourceSetting::Default => default_home(origin).filter(|d| d.is_dir())?,
    };
    Some(SourceConfig::logs_dir(origin, &configured))
}

/// Every foreign source's `[sources]` key and setting, in listing order.
pub fn settings(ctx: &Context) -> [(Origin, &'static str, &SourceSetting); 6] {
    let s = &ctx.config.sources;
    [
        (Origin::ClaudeCode, "claude_code", &s.claude_code),
        (Origin::Codex, "codex", &s.codex),
        (Origin::Gemini, "gemini", &s.gemini),
        (Origin::OpenCode, "opencode", &s.opencode),
        (Origin::Qwen, "qwen_code", &s.qwen_code),
        (Origin::Copilot, "copilot", &s.copilot),
    ]
}

/// Why a path the config names for a source gives no sessions: it does not exist, is not a
/// directory, or cannot be read (`None` when it can be read, or nothing was configured).
pub fn configured_path_problem(key: &str, setting: &SourceSetting) -> Option<String> {
    let SourceSetting::Path(path) = setting else {
        return None;
    };
    let expanded = expand_home(path);
    let why = match std::fs::metadata(&expanded) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => "does not exist".to_owned(),
        Err(e) => format!("cannot be read: {e}"),
        Ok(m) if !m.is_dir() => "is not a directory".to_owned(),
        Ok(_) => match std::fs::read_dir(&expanded) {
            Ok(_) => return None,
            Err(e) => format!("cannot be read: {e}"),
        },
    };
    Some(format!(
        "[sources] {key} = {:?}: {} {why}; no sessions are read from it",
        path.display().to_string(),
        expanded.display()
    ))
}

/// One warning per configured source path that gives no sessions (none with
/// `--no-foreign-sources`): the CLI prints them on stderr, the app shows them as a notice.
pub fn source_warnings(ctx: &Context) -> Vec<String> {
    if !ctx.foreign_sources {
        return Vec::new();
    }
    settings(ctx)
        .into_iter()
        .filter_map(|(_, key, setting)| configured_path_problem(key, setting))
        .collect()
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
    settings(ctx)
        .into_iter()
        .filter_map(|(origin, _, setting)| {
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

/// Print [`source_warnings`] on stderr, once per run of a command that reads sources.
pub fn warn_about_sources(ctx: &Context) {
    for warning in source_warnings(ctx) {
        eprintln!(
            "dsh-refs: warning: {}",
            term_text::visible_controls_line(&warning)
        );
    }
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
    fn a_tilde_is_the_home_and_a_configured_path_that_lists_nothing_is_named() {
        let home = directories::BaseDirs::new()
            .unwrap()
            .home_dir()
            .to_path_buf();
        assert_eq!(expand_home(Path::new("~")), home);
        assert_eq!(expand_home(Path::new("~/.claude")), home.join(".claude"));
        assert_eq!(expand_home(Path::new("/x/~/y")), PathBuf::from("/x/~/y"));
        assert_eq!(
            expand_home(Path::new("~other/x")),
            PathBuf::from("~other/x")
        );
        let tmp = tempfile::tempdir().unwrap();
        let missing = SourceSetting::Path(tmp.path().join("nope"));
        let problem = configured_path_problem("codex", &missing).unwrap();
        assert!(
            problem.starts_with("[sources] codex = ") && problem.contains("does not exist"),
            "{problem}"
        );
        let file = tmp.path().join("file");
        std::fs::write(&file, "x").unwrap();
        assert!(
            configured_path_problem("gemini", &SourceSetting::Path(file))
                .unwrap()
                .contains("is not a directory")
        );
        assert_eq!(
            configured_path_problem("codex", &SourceSetting::Path(tmp.path().to_owned())),
            None
        );
        assert_eq!(
            configured_path_problem("codex", &SourceSetting::Default),
            None
        );
        assert_eq!(configured_path_problem("codex", &SourceSetting::Off), None);
    }

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
