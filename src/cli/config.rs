//! The configuration file (`config.toml`, docs/cli.md). Every key is optional; unknown keys and
//! invalid values are reported with the file, the key and the reason.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use dsh_store::encoding::Compression;

use crate::llm::ProviderChoice;

/// `[references]`: raw values, validated by the reference service at construction.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ReferencesSection {
    pub max_references: Option<i64>,
    pub candidate_limit: Option<i64>,
    pub max_reference_bytes: Option<i64>,
    pub redact_secrets: Option<bool>,
    pub excerpt_context: Option<i64>,
    pub max_files: Option<i64>,
    pub max_file_bytes: Option<i64>,
    /// The references' share of what the model's context window has left, in (0, 1]
    /// (docs/references.md: the budget plan).
    pub share: Option<f64>,
}

/// `[model]`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ModelSection {
    pub provider: ProviderChoice,
    pub base_url: String,
    pub model: String,
    pub api_key_env: String,
    pub timeout_secs: u64,
    pub max_retries: u32,
    /// The model's context window in tokens (default: the provider's own).
    pub context_tokens: Option<u64>,
    /// Most UTF-8 bytes of text plus reasoning one reply may stream; the stream is cut
    /// there (`LLM_REPLY_TOO_LARGE`). Unset: 4 MiB, or less when `store.max_line_bytes`
    /// is too small for that ([`Config::parse`] fills it in).
    pub max_reply_bytes: Option<u64>,
    /// How long one turn's model calls may take in all; the stream is cut then
    /// (`LLM_TURN_DEADLINE`). `timeout_secs` bounds each wait for the next chunk.
    pub max_turn_secs: u64,
}

impl Default for ModelSection {
    fn default() -> Self {
        ModelSection {
            provider: ProviderChoice::Auto,
            base_url: "https://api.deepseek.com".into(),
            model: "deepseek-chat".into(),
            api_key_env: "DEEPSEEK_API_KEY".into(),
            timeout_secs: 120,
            max_retries: 3,
            context_tokens: None,
            max_reply_bytes: None,
            max_turn_secs: crate::llm::provider::DEFAULT_MAX_TURN.as_secs(),
        }
    }
}

/// `[tui]`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct TuiSection {
    /// Show model reasoning expanded (otherwise collapsed to one dim line).
    pub show_reasoning: bool,
    /// How many submitted messages the composer history keeps.
    pub history_size: usize,
}

impl Default for TuiSection {
    fn default() -> Self {
        TuiSection {
            show_reasoning: false,
            history_size: 200,
        }
    }
}

/// `[store]`: the encoding written and the reading limits of the session store.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct StoreSection {
    /// Encoding of the logs written: `auto` (what the store already uses), `none`, `zstd`.
    pub compression: Compression,
    /// Longest log line read (bytes); a longer one is damage (corruption or torn tail).
    pub max_line_bytes: u64,
}

impl Default for StoreSection {
    fn default() -> Self {
        StoreSection {
            compression: Compression::Auto,
            max_line_bytes: dsh_store::reader::DEFAULT_MAX_LINE_BYTES,
        }
    }
}

impl StoreSection {
    /// The store's reading limits from this section.
    pub fn limits(&self) -> dsh_store::reader::Limits {
        dsh_store::reader::Limits {
            max_line_bytes: self.max_line_bytes,
            ..dsh_store::reader::Limits::default()
        }
    }
}

/// One foreign source's setting: a path (its logs or the tool's home), or `false` for off.
/// Absent or `true`: the tool's default directory, used when it exists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceSetting {
    Default,
    Off,
    Path(PathBuf),
}

impl<'de> Deserialize<'de> for SourceSetting {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = SourceSetting;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a directory path, true (the default directory) or false (off)")
            }
            fn visit_bool<E: serde::de::Error>(self, on: bool) -> Result<SourceSetting, E> {
                Ok(if on {
                    SourceSetting::Default
                } else {
                    SourceSetting::Off
                })
            }
            fn visit_str<E: serde::de::Error>(self, path: &str) -> Result<SourceSetting, E> {
                if path.is_empty() {
                    return Err(E::custom(
                        "the path is empty (use false to turn the source off)",
                    ));
                }
                Ok(SourceSetting::Path(PathBuf::from(path)))
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// `[sources]`: other agents' session logs, read-only (docs/foreign-sources.md).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SourcesSection {
    /// Claude Code (`~/.claude/projects`).
    pub claude_code: SourceSetting,
    /// Codex CLI (`$CODEX_HOME/sessions`, default `~/.codex/sessions`).
    pub codex: SourceSetting,
    /// Gemini CLI (its home, default `~/.gemini`).
    pub gemini: SourceSetting,
    /// OpenCode (its data dir, default `$XDG_DATA_HOME/opencode` or
    /// `~/.local/share/opencode`).
    pub opencode: SourceSetting,
    /// Qwen Code (its home, default `$QWEN_RUNTIME_DIR` or `~/.qwen`; its `projects`
    /// directory is read).
    pub qwen_code: SourceSetting,
    /// GitHub Copilot CLI (its home, default `~/.copilot`; its `session-state` directory is
    /// read).
    pub copilot: SourceSetting,
    /// The largest OpenCode database (with its WAL) copied to be read, MiB.
    pub opencode_max_copy_mib: u64,
    /// What the copies of OpenCode's database of every dsh-refs process may take together,
    /// MiB.
    pub opencode_max_copies_mib: u64,
}

impl SourcesSection {
    /// The bounds of OpenCode's database copies.
    pub fn copy_limits(&self) -> dsh_foreign::CopyLimits {
        dsh_foreign::CopyLimits {
            max_copy_bytes: self.opencode_max_copy_mib.saturating_mul(1 << 20),
            max_total_bytes: self.opencode_max_copies_mib.saturating_mul(1 << 20),
        }
    }
}

impl Default for SourcesSection {
    fn default() -> Self {
        SourcesSection {
            claude_code: SourceSetting::Default,
            codex: SourceSetting::Default,
            gemini: SourceSetting::Default,
            opencode: SourceSetting::Default,
            qwen_code: SourceSetting::Default,
            copilot: SourceSetting::Default,
            opencode_max_copy_mib: 1024,
            opencode_max_copies_mib: 3072,
        }
    }
}

/// `[search]`: the full-text session index (docs/search.md).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SearchSection {
    /// Keep a full-text index of the store and offer `search`.
    pub enabled: bool,
    /// Where the index lives (default: the platform cache dir, one per store root).
    pub index_dir: Option<PathBuf>,
}

impl Default for SearchSection {
    fn default() -> Self {
        SearchSection {
            enabled: true,
            index_dir: None,
        }
    }
}

/// The whole file.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub references: ReferencesSection,
    pub model: ModelSection,
    pub tui: TuiSection,
    pub store: StoreSection,
    pub sources: SourcesSection,
    pub search: SearchSection,
}

/// The most a UTF-8 text can grow when written as a JSON string: a control character
/// (one byte) becomes a six-byte `\u00XX` escape.
pub const ESCAPE_GROWTH: u64 = 6;

/// Room kept in a log line for everything besides the reply's text and the model's name:
/// the event envelope, the message's id, role, provider, usage, block keys (about 400
/// bytes in practice).
pub const LINE_ENVELOPE_BYTES: u64 = 2048;

/// The longest log line a reply of `max_reply_bytes` from a model named with
/// `model_name` bytes can take: its text and reasoning all escaped in one
/// `assistant/message` (a `block-end` chunk holds one block, never more).
pub fn reply_line_bytes(max_reply_bytes: u64, model_name: u64) -> u64 {
    max_reply_bytes
        .saturating_add(model_name)
        .saturating_mul(ESCAPE_GROWTH)
        .saturating_add(LINE_ENVELOPE_BYTES)
}

/// The largest `max_reply_bytes` whose lines fit `max_line_bytes` (0: none does).
pub fn max_reply_for_line(max_line_bytes: u64, model_name: u64) -> u64 {
    (max_line_bytes.saturating_sub(LINE_ENVELOPE_BYTES) / ESCAPE_GROWTH).saturating_sub(model_name)
}

/// A configuration file that could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: {source}", path = path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {message}", path = path.display())]
    Invalid { path: PathBuf, message: String },
}

impl Config {
    /// Parse `text` (from `path`, named in errors) and check value ranges.
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let invalid = |message: String| ConfigError::Invalid {
            path: path.to_owned(),
            message,
        };
        let mut config: Config =
            toml::from_str(text).map_err(|e| invalid(toml_message(text, &e)))?;
        if config.model.timeout_secs == 0 {
            return Err(invalid(
                "key `model.timeout_secs`: must be at least 1".into(),
            ));
        }
        if config.model.max_retries > 10 {
            return Err(invalid(
                "key `model.max_retries`: must be at most 10".into(),
            ));
        }
        if config.model.context_tokens.is_some_and(|t| t < 1024) {
            return Err(invalid(
                "key `model.context_tokens`: must be at least 1024".into(),
            ));
        }
        if config.store.max_line_bytes < 4096 {
            return Err(invalid(
                "key `store.max_line_bytes`: must be at least 4096".into(),
            ));
        }
        if config.model.max_turn_secs == 0 {
            return Err(invalid(
                "key `model.max_turn_secs`: must be at least 1".into(),
            ));
        }
        let model_name = config.model.model.len() as u64;
        let room = max_reply_for_line(config.store.max_line_bytes, model_name);
        match config.model.max_reply_bytes {
            Some(0) => {
                return Err(invalid(
                    "key `model.max_reply_bytes`: must be at least 1".into(),
                ));
            }
            Some(max) if max > room => {
                let longest = reply_line_bytes(max, model_name);
                return Err(invalid(format!(
                    "key `model.max_reply_bytes`: a reply of {max} bytes can take {longest} \
                     bytes in one log line (JSON escaping grows text up to {ESCAPE_GROWTH}x), \
                     more than store.max_line_bytes ({}): lower max_reply_bytes to at most \
                     {room} or raise store.max_line_bytes to at least {longest}",
                    config.store.max_line_bytes,
                )));
            }
            Some(_) => {}
            None => {
                config.model.max_reply_bytes =
                    Some(room.min(crate::llm::provider::DEFAULT_MAX_REPLY_BYTES));
            }
        }
        if config.model.api_key_env.is_empty() {
            return Err(invalid(
                "key `model.api_key_env`: must name an environment variable".into(),
            ));
        }
        if !(config.model.base_url.starts_with("http://")
            || config.model.base_url.starts_with("https://"))
        {
            return Err(invalid(
                "key `model.base_url`: must start with http:// or https://".into(),
            ));
        }
        if config.sources.opencode_max_copy_mib == 0
            || config.sources.opencode_max_copies_mib < config.sources.opencode_max_copy_mib
        {
            return Err(invalid(
                "keys `sources.opencode_max_copy_mib` and `opencode_max_copies_mib`: the first \
                 must be at least 1 and the second at least the first"
                    .into(),
            ));
        }
        if let Some(dir) = &config.search.index_dir
            && !dir.is_absolute()
        {
            return Err(invalid(
                "key `search.index_dir`: must be an absolute path".into(),
            ));
        }
        // `[references]` checked here too, so every command accepts or refuses a file alike
        // (it was checked only by the commands that build the reference service).
        if let Err(e) = super::reference_service::reference_config(&config.references) {
            return Err(invalid(e.message));
        }
        Ok(config)
    }

    /// Load `path`; a missing file at the *default* location means the embedded defaults.
    /// Only a regular file of at most [`MAX_CONFIG_BYTES`] is read (a FIFO or device is
    /// refused at once, never waited on).
    pub fn load(path: &Path, explicit: bool) -> Result<Config, ConfigError> {
        let read = |source| ConfigError::Read {
            path: path.to_owned(),
            source,
        };
        match crate::regular_file::read_capped(path, MAX_CONFIG_BYTES) {
            Ok(bytes) => {
                let text = String::from_utf8(bytes).map_err(|_| ConfigError::Invalid {
                    path: path.to_owned(),
                    message: "the file is not UTF-8 text".into(),
                })?;
                Config::parse(&text, path)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !explicit => {
                Ok(Config::default())
            }
            Err(source) => Err(read(source)),
        }
    }
}

/// Largest config file read (a real one is a few KiB).
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Characters of the file (or of the parser's message) quoted in an error, at most.
pub const MAX_QUOTED_CHARS: usize = 200;

impl ConfigError {
    /// The message as lines for a terminal: the first names the file; the parser's message
    /// and a quote of the line it stopped at follow (each line still to be sanitised by the
    /// caller).
    pub fn lines(&self) -> Vec<String> {
        match self {
            ConfigError::Read { .. } => vec![self.to_string()],
            ConfigError::Invalid { path, message } => {
                let mut lines = message.lines();
                let first = format!("{}: {}", path.display(), lines.next().unwrap_or_default());
                std::iter::once(first)
                    .chain(lines.map(str::to_owned))
                    .collect()
            }
        }
    }
}

/// The parser's message for `error` in `text`, on several lines: where (line and column),
/// what (each line of the message cut to [`MAX_QUOTED_CHARS`]), and the line of the file
/// it stopped at (at most [`MAX_QUOTED_CHARS`] characters of it, around the column).
fn toml_message(text: &str, error: &toml::de::Error) -> String {
    let mut out = String::new();
    let span = error.span();
    if let Some(span) = &span {
        let (line, column) = line_and_column(text, span.start);
        let _ = write!(out, "invalid TOML at line {line}, column {column}:");
    } else {
        out.push_str("invalid TOML:");
    }
    for line in error.message().lines() {
        out.push_str("\n  ");
        out.push_str(&quoted(line, 0));
    }
    if let Some(span) = span {
        let (line, _) = line_and_column(text, span.start);
        let start = text
            .get(..span.start)
            .and_then(|b| b.rfind('\n'))
            .map_or(0, |i| i + 1);
        let end = text
            .get(span.start..)
            .and_then(|a| a.find('\n'))
            .map_or(text.len(), |i| span.start + i);
        if let Some(whole) = text.get(start..end) {
            let at = text.get(start..span.start).map_or(0, |b| b.chars().count());
            let _ = write!(out, "\n  {line} | {}", quoted(whole, at));
        }
    }
    out
}

/// 1-based line and column (in characters) of byte `at` of `text`.
fn line_and_column(text: &str, at: usize) -> (usize, usize) {
    let before = text.get(..at).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// At most [`MAX_QUOTED_CHARS`] characters of `text` around character `at`, with `…` where
/// it was cut.
fn quoted(text: &str, at: usize) -> String {
    let total = text.chars().count();
    if total <= MAX_QUOTED_CHARS {
        return text.to_owned();
    }
    let start = at
        .saturating_sub(MAX_QUOTED_CHARS / 2)
        .min(total - MAX_QUOTED_CHARS);
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    out.extend(text.chars().skip(start).take(MAX_QUOTED_CHARS));
    if start + MAX_QUOTED_CHARS < total {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn example_file_parses_to_defaults_where_silent() {
        let text = include_str!("../../config.example.toml");
        let config = Config::parse(text, Path::new("config.example.toml")).unwrap();
        // Parsing fills in the reply limit the store's lines allow (the default's here).
        let model = ModelSection {
            max_reply_bytes: Some(crate::llm::provider::DEFAULT_MAX_REPLY_BYTES),
            ..ModelSection::default()
        };
        assert_eq!(config.model, model);
        assert_eq!(config.references.max_references, Some(3));
        assert_eq!(config.search, SearchSection::default());
        assert!(config.search.enabled);
        assert_eq!(config.store, StoreSection::default());
        assert_eq!(config.sources, SourcesSection::default());
    }

    #[test]
    fn a_reply_limit_that_could_not_fit_one_log_line_is_refused() {
        // Issue 23 item 2: every line a reply can take must be one the reader loads.
        let p = Path::new("/x/config.toml");
        let name = "deepseek-chat".len() as u64;
        let defaults = Config::parse("", p).unwrap();
        assert_eq!(defaults.model.max_reply_bytes, Some(4 << 20));
        assert!(reply_line_bytes(4 << 20, name) <= defaults.store.max_line_bytes);
        let err = Config::parse("[model]\nmax_reply_bytes = 8388608\n", p)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("key `model.max_reply_bytes`")
                && err.contains("more than store.max_line_bytes (33554432)")
                && err.contains(&format!("at most {}", max_reply_for_line(32 << 20, name))),
            "{err}"
        );
        // A lowered line limit lowers the default reply limit with it (a config written
        // for an earlier version keeps working) but refuses an explicit one that cannot fit.
        let small_lines = "[store]\nmax_line_bytes = 1048576\n";
        let lowered = Config::parse(small_lines, p).unwrap();
        assert_eq!(
            lowered.model.max_reply_bytes,
            Some(max_reply_for_line(1 << 20, name))
        );
        let fits = format!(
            "{small_lines}[model]\nmax_reply_bytes = {}\n",
            max_reply_for_line(1 << 20, name)
        );
        assert!(Config::parse(&fits, p).is_ok());
        let over = format!(
            "{small_lines}[model]\nmax_reply_bytes = {}\n",
            max_reply_for_line(1 << 20, name) + 1
        );
        assert!(Config::parse(&over, p).is_err());
        // The model's name is in every reply line.
        let long_name = format!(
            "{small_lines}[model]\nmodel = \"{}\"\nmax_reply_bytes = {}\n",
            "m".repeat(1000),
            max_reply_for_line(1 << 20, name)
        );
        assert!(Config::parse(&long_name, p).is_err());
        let raised = "[store]\nmax_line_bytes = 67108864\n[model]\nmax_reply_bytes = 8388608\n";
        assert_eq!(
            Config::parse(raised, p).unwrap().model.max_reply_bytes,
            Some(8 << 20)
        );
        for bad in [
            "max_reply_bytes = 0",
            "max_turn_secs = 0",
            "max_turn_secs = -1",
        ] {
            let err = Config::parse(&format!("[model]\n{bad}\n"), p)
                .unwrap_err()
                .to_string();
            assert!(err.contains(bad.split(' ').next().unwrap()), "{err}");
        }
    }

    #[test]
    fn sources_take_a_path_true_or_false() {
        let p = Path::new("/x/config.toml");
        let config =
            Config::parse("[sources]\nclaude_code = \"/logs/cc\"\ncodex = false\n", p).unwrap();
        assert_eq!(
            config.sources.claude_code,
            SourceSetting::Path(PathBuf::from("/logs/cc"))
        );
        assert_eq!(config.sources.codex, SourceSetting::Off);
        let on = Config::parse("[sources]\ncodex = true\n", p).unwrap();
        assert_eq!(on.sources.codex, SourceSetting::Default);
        let new =
            Config::parse("[sources]\ngemini = \"/g/.gemini\"\nopencode = false\n", p).unwrap();
        assert_eq!(
            new.sources.gemini,
            SourceSetting::Path(PathBuf::from("/g/.gemini"))
        );
        assert_eq!(new.sources.opencode, SourceSetting::Off);
        assert_eq!(new.sources.claude_code, SourceSetting::Default);
    }

    #[test]
    fn errors_name_file_key_and_reason() {
        let p = Path::new("/x/config.toml");
        let cases = [
            ("[model]\nbogus = 1\n", "bogus"),
            (
                "[references]\nmax_references = \"three\"\n",
                "max_references",
            ),
            ("[model]\ntimeout_secs = 0\n", "model.timeout_secs"),
            ("[model]\nprovider = \"gpt\"\n", "provider"),
            ("[nope]\n", "nope"),
            ("[sources]\nclaude_code = 3\n", "claude_code"),
            ("[sources]\ncodex = \"\"\n", "codex"),
            ("[sources]\ngemini = 1\n", "gemini"),
            ("[sources]\nopencode = \"\"\n", "opencode"),
            ("[sources]\ncursor = false\n", "cursor"),
            (
                "[sources]\nopencode_max_copy_mib = 0\n",
                "sources.opencode_max_copy_mib",
            ),
            (
                "[sources]\nopencode_max_copy_mib = 4096\n",
                "opencode_max_copies_mib",
            ),
            ("[search]\nindex_dir = \"rel/dir\"\n", "search.index_dir"),
            ("[search]\nenabled = \"yes\"\n", "enabled"),
        ];
        for (text, key) in cases {
            let err = Config::parse(text, p).unwrap_err().to_string();
            assert!(err.starts_with("/x/config.toml"), "{err}");
            assert!(err.contains(key), "{err} should name {key}");
        }
    }
}
