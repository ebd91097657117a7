//! Gemini CLI sessions (docs/foreign-sources.md, Gemini CLI), under its home `~/.gemini`
//! (`$GEMINI_CLI_HOME/.gemini` when set):
//!
//! - automatic chats, `tmp/<project>/chats/session-<time>-<id8>.jsonl` (JSON lines, from
//!   spring 2026) or `.json` (one document, from Gemini CLI 0.3); a chat migrated from
//!   `.json` to `.jsonl` keeps both files and is read from the `.jsonl`; sub-agent chats
//!   (`kind: "subagent"`, or in a directory below `chats/`) are not sessions;
//! - saved chats, `tmp/<project>/checkpoint-<tag>.json` (`/chat save <tag>`).
//!
//! `<project>` is a project's hash or registry name ([`projects`]).

pub mod chat_jsonl;
pub mod documents;
pub mod projects;
pub mod records;

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use dsh_store::{QueryError, SessionHeader, SurfaceScan, SurfaceVisitor};

use crate::log_meta::{LogMeta, TitleCleaner};

/// What a file under a project directory is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FileKind {
    ChatLines,
    ChatDocument,
    SavedChat,
}

fn file_kind(name: &str) -> Option<FileKind> {
    if let Some(rest) = name.strip_prefix("session-") {
        if rest.strip_suffix(".jsonl").is_some_and(|s| !s.is_empty()) {
            return Some(FileKind::ChatLines);
        }
        if rest.strip_suffix(".json").is_some_and(|s| !s.is_empty()) {
            return Some(FileKind::ChatDocument);
        }
        return None;
    }
    name.strip_prefix("checkpoint-")
        .and_then(|r| r.strip_suffix(".json"))
        .filter(|s| !s.is_empty())
        .map(|_| FileKind::SavedChat)
}

fn kind_of(path: &Path) -> Option<FileKind> {
    file_kind(path.file_name()?.to_str()?)
}

/// Whether a file name is a session of Gemini CLI.
pub fn is_log_name(name: &str) -> bool {
    file_kind(name).is_some()
}

/// Whether `name` is a `.json` chat superseded by its `.jsonl` migration in `names`.
pub fn is_superseded(name: &str, has: &dyn Fn(&str) -> bool) -> bool {
    file_kind(name) == Some(FileKind::ChatDocument) && has(&format!("{name}l"))
}

/// Real subdirectories of `dir` (links are not followed), sorted.
fn real_subdirs(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            out.push(entry.path());
        }
    }
    out.sort();
    Ok(out)
}

/// The project directories under the home `root` (`tmp/*`).
pub fn project_dirs(root: &Path) -> Vec<PathBuf> {
    real_subdirs(&root.join("tmp")).unwrap_or_default()
}

/// The directories holding sessions: each project directory (saved chats) and its
/// `chats` directory.
pub fn leaf_dirs(root: &Path) -> io::Result<Vec<PathBuf>> {
    let tmp = root.join("tmp");
    let meta = fs::symlink_metadata(&tmp)?;
    if !meta.is_dir() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for project in real_subdirs(&tmp)? {
        let chats = project.join("chats");
        if fs::symlink_metadata(&chats).is_ok_and(|m| m.is_dir()) {
            out.push(chats);
        }
        out.push(project);
    }
    Ok(out)
}

/// The listing facts of the session at `path`.
pub fn scan_meta(
    path: &Path,
    prior: LogMeta,
    max_line_bytes: u64,
    clean: TitleCleaner,
) -> Result<LogMeta, QueryError> {
    match kind_of(path) {
        Some(FileKind::ChatLines) => chat_jsonl::scan_meta(path, prior, max_line_bytes, clean),
        Some(FileKind::ChatDocument) => {
            documents::scan_meta(path, documents::Kind::Chat, max_line_bytes, clean)
        }
        Some(FileKind::SavedChat) => {
            documents::scan_meta(path, documents::Kind::Saved, max_line_bytes, clean)
        }
        None => Ok(LogMeta::default()),
    }
}

/// Stream the surface of the session at `path`.
pub fn scan(
    path: &Path,
    header: SessionHeader,
    max_line_bytes: u64,
    visitor: &mut dyn SurfaceVisitor,
) -> Result<SurfaceScan, QueryError> {
    match kind_of(path) {
        Some(FileKind::ChatLines) => chat_jsonl::scan(path, header, max_line_bytes, visitor),
        Some(FileKind::ChatDocument) => {
            documents::scan(path, documents::Kind::Chat, header, max_line_bytes, visitor)
        }
        Some(FileKind::SavedChat) => documents::scan(
            path,
            documents::Kind::Saved,
            header,
            max_line_bytes,
            visitor,
        ),
        None => Err(QueryError::NotFound {
            id: header.id.clone(),
        }),
    }
}

/// The name of the project directory a session file is in.
pub fn project_dir_name(path: &Path) -> Option<&str> {
    let parent = path.parent()?;
    let dir = if parent.file_name().is_some_and(|n| n == "chats") {
        parent.parent()?
    } else {
        parent
    };
    dir.file_name()?.to_str()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for (name, want) in [
            (
                "session-2026-05-01T10-00-1a2b3c4d.jsonl",
                Some(FileKind::ChatLines),
            ),
            (
                "session-2025-09-01T10-00-1a2b3c4d.json",
                Some(FileKind::ChatDocument),
            ),
            ("checkpoint-release.json", Some(FileKind::SavedChat)),
            ("checkpoint-.json", None),
            ("session-.jsonl", None),
            ("logs.json", None),
            ("session-x.json.tmp-12", None),
            ("shell_history", None),
        ] {
            assert_eq!(file_kind(name), want, "{name}");
        }
        let has = |n: &str| n == "session-a.jsonl";
        assert!(is_superseded("session-a.json", &has));
        assert!(!is_superseded("session-b.json", &has));
        assert!(!is_superseded("session-a.jsonl", &has));
        assert_eq!(
            project_dir_name(Path::new("/h/tmp/shop/chats/session-a.jsonl")),
            Some("shop")
        );
        assert_eq!(
            project_dir_name(Path::new("/h/tmp/shop/checkpoint-a.json")),
            Some("shop")
        );
    }
}
