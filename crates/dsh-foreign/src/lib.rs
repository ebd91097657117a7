//! Other agents' sessions as read-only dsh session sources (docs/foreign-sources.md):
//! Claude Code, Codex CLI, Gemini CLI, OpenCode, Qwen Code and GitHub Copilot CLI sessions
//! read as folded surfaces of dsh
//! events, so the reference layer's projection, retention, tag-safe JSON and untrusted
//! framing apply unchanged, and [`SessionSources`], one query over the dsh store and every
//! foreign source.
//!
//! Nothing in this crate writes to a foreign tool's directory; the only files it writes are
//! its listing caches and its copies of OpenCode's database, in the platform cache dir.

pub mod claude_code;
pub mod claude_user_text;
pub mod codex;
pub mod composite;
pub mod copilot;
pub mod gemini;
pub mod item_surface;
pub mod json_span;
pub mod jsonl;
pub mod line_items;
pub mod log_files;
pub mod log_meta;
pub mod open_file;
pub mod opencode;
pub mod origin;
pub mod qwen;
pub mod source;
pub mod source_index;
pub mod surface_events;
pub mod surface_read;

pub use composite::SessionSources;
pub use log_meta::TitleCleaner;
pub use origin::Origin;
pub use source::{CopyLimits, ForeignSource, SourceConfig};
