//! The `@` popup's file section (docs/composer.md: files; docs/references.md: file
//! references): paths of the session's working directory — walked off the UI thread with
//! `dsh_file_search::walk` (`.gitignore`-aware, `.git` and `node_modules` skipped, at most
//! 200 000 entries), walked again when the popup is used in another directory — ranked per
//! query by the path-aware `FileRanker`, shown as rows under their own title with the
//! matched characters highlighted. A file row inserts `@path`; a directory row `@dir/` (a
//! quoted one `@"my dir/`, its quote left open), and the popup stays open on the
//! directory's entries. A query shaped like a path lists the files first
//! ([`path_shaped`]). The preview tells what a mention of
//! the file would attach (`SessionReferences::estimate_file`: size, cut, redactions) or why
//! it would be refused.

use std::ops::Range;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use ratatui::text::Line;

use super::draft_limits::DraftLimits;
use crate::tui::chrome::status_line::grouped_count;

use dsh_file_search::{EntryKind, FileIndex, FileRanker, MAX_ENTRIES, walk};
use dsh_reference::file_mention::format_file_mention;
use dsh_reference::{ReferenceError, kib};
use ratatui_mention::{DetailPart, ItemPreview, Keep, MentionItem, Section};

/// The section's title.
pub const FILES_TITLE: &str = "files";
/// Rows the section shows at most.
pub const FILE_ROWS: usize = 8;
/// What a file row's key starts with (session ids never do: they are not paths).
pub const FILE_KEY: &str = "file:";
/// What a directory row's key starts with.
pub const DIR_KEY: &str = "dir:";

/// One path offered: relative to the cwd, a directory or not, the byte ranges of the path
/// the query matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRow {
    pub path: String,
    pub directory: bool,
    pub matched: Vec<Range<usize>>,
}

impl FileRow {
    /// The popup row: the path (matches highlighted) over `file` / `directory · Enter or
    /// Tab lists it`, inserting its `@path` mention — a directory's without its closing
    /// quote, and the popup goes on with its entries; `None` for a path the mention grammar
    /// cannot carry (a `"` or a control character).
    pub fn item(&self) -> Option<MentionItem> {
        let mut text = format_file_mention(&self.path, self.directory, false)?;
        let (key, kind, detail) = if self.directory {
            // `@"my dir/` stays the token being typed: its entries come next.
            if text.ends_with("/\"") {
                text.pop();
            }
            (DIR_KEY, "[dir]", "directory · Enter or Tab lists it")
        } else {
            (FILE_KEY, "[file]", "file · its text goes with the message")
        };
        Some(
            MentionItem::plain(format!("{key}{}", self.path), &self.path, text)
                .with_kind(kind)
                .with_detail(vec![DetailPart::new(detail, Keep::Start)])
                .with_match_ranges(self.matched.clone())
                .with_continue(self.directory),
        )
    }
}

/// The rows as the popup's section (`None` when there are none), file rows over the
/// draft's `limits` blocked.
pub fn section(rows: &[FileRow], limits: &DraftLimits) -> Option<Section> {
    let rows: Vec<MentionItem> = rows
        .iter()
        .filter_map(|row| {
            let item = row.item()?;
            let blocked = (!row.directory)
                .then(|| limits.file_blocked(&row.path))
                .flatten();
            Some(match blocked {
                Some(reason) => item.with_blocked(reason),
                None => item,
            })
        })
        .collect();
    (!rows.is_empty()).then(|| Section {
        title: FILES_TITLE.to_owned(),
        rows,
    })
}

/// The walked paths of one directory and the ranker, kept between queries. Cheap to clone;
/// clones share them. Call [`rows`](Self::rows) off the UI thread.
#[derive(Clone, Default)]
pub struct FileCandidates {
    walked: Arc<Mutex<Option<Arc<FileIndex>>>>,
    ranker: Arc<Mutex<FileRanker>>,
}

impl std::fmt::Debug for FileCandidates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileCandidates").finish_non_exhaustive()
    }
}

impl FileCandidates {
    /// The best [`FILE_ROWS`] paths of `cwd` for `query` (a query ending in `/` lists that
    /// directory); `cwd` is walked first when it is not the one walked last. Blocking.
    pub fn rows(&self, cwd: &Path, query: &str, cancelled: &dyn Fn() -> bool) -> Vec<FileRow> {
        // `@"my no` is a quoted path being typed: its quotes are not part of the path.
        let query = query.strip_prefix('"').unwrap_or(query);
        let query = query.strip_suffix('"').unwrap_or(query);
        let index = self.index_of(cwd, cancelled);
        let Some(index) = index else {
            return Vec::new();
        };
        let ranked = self
            .ranker
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .rank(&index.entries, query, FILE_ROWS);
        ranked
            .into_iter()
            .filter_map(|r| {
                let entry = index.entries.get(r.index)?;
                Some(FileRow {
                    matched: byte_ranges(&entry.path, &r.positions),
                    path: entry.path.clone(),
                    directory: entry.kind == EntryKind::Directory,
                })
            })
            .collect()
    }

    /// Whether `query` is shaped like a path in `cwd` ([`path_shaped`]), against the walk
    /// of it that [`rows`](Self::rows) made. Blocking.
    pub fn path_shaped(&self, cwd: &Path, query: &str) -> bool {
        let walked = self.walked.lock().unwrap_or_else(PoisonError::into_inner);
        let entries = walked
            .as_ref()
            .filter(|index| index.root == cwd)
            .map_or(&[][..], |index| index.entries.as_slice());
        path_shaped(query, entries.iter().map(|e| e.path.as_str()))
    }

    /// The walk of `cwd`: the last one when it is of `cwd` and complete, else a new one.
    fn index_of(&self, cwd: &Path, cancelled: &dyn Fn() -> bool) -> Option<Arc<FileIndex>> {
        let mut walked = self.walked.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(index) = walked.as_ref()
            && index.root == cwd
            && !index.cancelled
        {
            return Some(Arc::clone(index));
        }
        if !cwd.is_dir() {
            return None;
        }
        let index = Arc::new(walk(cwd, MAX_ENTRIES, cancelled));
        if index.cancelled {
            return None;
        }
        *self.ranker.lock().unwrap_or_else(PoisonError::into_inner) = FileRanker::default();
        *walked = Some(Arc::clone(&index));
        Some(index)
    }
}

/// Whether `query` (of a popup token, quotes aside) is shaped like a path: it holds a `/`
/// (`./`, `../` and `~/` do), or it begins the name of an entry of the working directory
/// whose name holds a `.` (`READ` for `README.md`, `.git` for `.gitignore`; any case).
/// `paths` are the walked paths, relative to the working directory.
pub fn path_shaped<'a>(query: &str, paths: impl IntoIterator<Item = &'a str>) -> bool {
    let query = query.strip_prefix('"').unwrap_or(query);
    if query.contains('/') {
        return true;
    }
    if query.is_empty() {
        return false;
    }
    let query = query.to_lowercase();
    paths.into_iter().any(|path| {
        !path.contains('/') && path.contains('.') && path.to_lowercase().starts_with(&query)
    })
}

/// Ranges of the chars of `text` starting at the byte offsets `positions`.
fn byte_ranges(text: &str, positions: &[usize]) -> Vec<Range<usize>> {
    positions
        .iter()
        .filter_map(|&at| {
            let c = text.get(at..)?.chars().next()?;
            Some(at..at + c.len_utf8())
        })
        .collect()
}

/// The preview of file row `key` (`path` in the agent's cwd) once estimated: what a
/// mention would attach, or why it would be refused.
pub fn file_preview(
    key: &str,
    path: &str,
    estimate: Result<dsh_reference::file_context::AttachedFile, ReferenceError>,
) -> ItemPreview {
    let lines = match &estimate {
        Ok(file) => {
            let sent = file.text.len();
            let on_disk = usize::try_from(file.bytes).unwrap_or(usize::MAX);
            let mut first = if file.truncated() {
                format!("{} of {} KiB (cut)", kib(sent), kib(on_disk))
            } else {
                format!("{} KiB", kib(on_disk))
            };
            first.push_str(" · ≈");
            first.push_str(&grouped_count(sent / 4));
            first.push_str(" tokens");
            let redacted = file.redactions.total();
            if redacted > 0 {
                first.push_str(" · ");
                first.push_str(&redacted.to_string());
                first.push_str(" secrets redacted");
            }
            vec![Line::from(first)]
        }
        Err(e) => vec![Line::from(format!(
            "not attachable: {}: {}",
            e.code.as_str(),
            e.message
        ))],
    };
    let body = match estimate {
        Ok(file) => file
            .text
            .lines()
            // The head: the widget keeps the end of a body that does not fit.
            .take(12)
            .map(|l| Line::from(term_text::visible_controls_line(l).into_owned()))
            .collect(),
        Err(_) => Vec::new(),
    };
    let _ = path;
    ItemPreview {
        key: key.to_owned(),
        lines,
        body,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use std::fs;

    #[test]
    fn a_directory_is_walked_once_and_ranked_per_query() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        fs::create_dir_all(root.join("src/parse")).unwrap();
        fs::create_dir_all(root.join("node_modules/x")).unwrap();
        fs::write(root.join("src/parse/words.rs"), "fn words() {}").unwrap();
        fs::write(root.join("src/main.rs"), "fn main() {}").unwrap();
        fs::write(root.join("node_modules/x/index.js"), "").unwrap();
        fs::write(root.join(".gitignore"), "target/\n").unwrap();
        fs::create_dir_all(root.join("target")).unwrap();
        fs::write(root.join("target/out.rs"), "").unwrap();
        let files = FileCandidates::default();
        let rows = files.rows(root, "main", &|| false);
        assert_eq!(
            rows.first().map(|r| (r.path.as_str(), r.directory)),
            Some(("src/main.rs", false))
        );
        let first = rows.first().unwrap();
        let matched: String = first
            .matched
            .iter()
            .filter_map(|r| first.path.get(r.clone()))
            .collect();
        assert_eq!(matched, "main");
        // A directory lists its own entries; ignored and skipped paths never come.
        let listed: Vec<String> = files
            .rows(root, "src/", &|| false)
            .into_iter()
            .map(|r| r.path)
            .collect();
        assert!(listed.contains(&"src/parse".to_owned()), "{listed:?}");
        assert!(listed.contains(&"src/main.rs".to_owned()), "{listed:?}");
        for query in ["index", "out"] {
            let rows = files.rows(root, query, &|| false);
            assert!(
                rows.iter()
                    .all(|r| !r.path.contains("node_modules") && !r.path.starts_with("target")),
                "{query}: {rows:?}"
            );
        }
        // Walked once: a file added later shows only after a walk of another directory.
        fs::write(root.join("src/late.rs"), "").unwrap();
        assert!(files.rows(root, "late", &|| false).is_empty());
        let other = tempfile::tempdir().unwrap();
        assert!(files.rows(other.path(), "late", &|| false).is_empty());
        assert_eq!(files.rows(root, "late", &|| false).len(), 1);
        // A quoted path being typed ranks without its quotes.
        assert_eq!(
            files
                .rows(root, "\"src/ma", &|| false)
                .first()
                .map(|r| r.path.as_str()),
            Some("src/main.rs")
        );
        // A cancelled walk offers nothing and is not kept.
        let fresh = FileCandidates::default();
        assert!(fresh.rows(root, "main", &|| true).is_empty());
        assert_eq!(fresh.rows(root, "main", &|| false).len(), 1);
    }

    #[tokio::test]
    async fn the_preview_tells_what_a_mention_would_attach_or_why_not() {
        let tmp = tempfile::tempdir().unwrap();
        let key = format!("sk-ant-api03-{}", "aB3x".repeat(10));
        fs::write(
            tmp.path().join("notes.txt"),
            format!("line one\nkey {key}\n"),
        )
        .unwrap();
        fs::write(tmp.path().join("blob.bin"), [0u8, 1, 2, 0]).unwrap();
        let query: std::sync::Arc<dyn dsh_store::SessionQuery> =
            std::sync::Arc::new(dsh_store::SessionStore::new(tmp.path().join("store")));
        let refs =
            dsh_reference::SessionReferences::new(query, dsh_reference::ReferenceConfig::default());
        let cwd = tmp.path().to_str().unwrap();
        let cancel = tokio_util::sync::CancellationToken::new();
        let text = |p: &ItemPreview| -> String {
            p.lines
                .iter()
                .chain(&p.body)
                .map(|l| {
                    l.spans
                        .iter()
                        .map(|s| s.content.as_ref())
                        .collect::<String>()
                        + "\n"
                })
                .collect()
        };
        let ok = refs.estimate_file(cwd, "notes.txt", &cancel).await;
        let shown = text(&file_preview("file:notes.txt", "notes.txt", ok));
        assert!(shown.contains(" KiB · ≈"), "{shown}");
        assert!(shown.contains(" tokens · 1 secrets redacted"), "{shown}");
        assert!(shown.contains("line one"), "{shown}");
        assert!(!shown.contains("aB3x"), "{shown}");
        let binary = refs.estimate_file(cwd, "blob.bin", &cancel).await;
        let shown = text(&file_preview("file:blob.bin", "blob.bin", binary));
        assert!(
            shown.starts_with("not attachable: FILE_REFERENCE_REFUSED"),
            "{shown}"
        );
    }

    #[test]
    fn rows_insert_their_mentions_and_directories_end_in_a_slash() {
        let file = FileRow {
            path: "docs/my notes.md".into(),
            directory: false,
            matched: std::iter::once(0..1).collect(),
        };
        let item = file.item().unwrap();
        assert_eq!(
            crate::tui::composer::dsh_syntax::inserted(&item),
            "@\"docs/my notes.md\""
        );
        assert_eq!(item.key(), "file:docs/my notes.md");
        assert_eq!(item.kind(), "[file]");
        let dir = FileRow {
            path: "src".into(),
            directory: true,
            matched: Vec::new(),
        };
        let item = dir.item().unwrap();
        assert_eq!(crate::tui::composer::dsh_syntax::inserted(&item), "@src/");
        assert_eq!(item.key(), "dir:src");
        assert!(item.continues(), "its entries come next");
        let spaced = FileRow {
            path: "my notes".into(),
            directory: true,
            matched: Vec::new(),
        };
        assert_eq!(
            crate::tui::composer::dsh_syntax::inserted(&spaced.item().unwrap()),
            "@\"my notes/",
            "the quote stays open: the token goes on"
        );
        let quote = FileRow {
            path: "a\"b".into(),
            directory: false,
            matched: Vec::new(),
        };
        assert_eq!(quote.item(), None, "the grammar cannot carry it");
        let none = DraftLimits::default();
        assert_eq!(section(&[quote], &none), None);
        assert_eq!(section(&[file, dir], &none).map(|s| s.rows.len()), Some(2));
    }

    #[test]
    fn queries_shaped_like_paths() {
        let entries = ["README.md", "src", "src/main.rs", ".gitignore", "Makefile"];
        let cases = [
            ("src/", true),
            ("./x", true),
            ("../up", true),
            ("~/notes", true),
            ("\"docs/my", true),
            ("READ", true),
            ("readme.m", true),
            (".git", true),
            ("src", false),
            ("Make", false),
            ("main.rs", false),
            ("v1.2 release", false),
            ("", false),
        ];
        for (query, want) in cases {
            assert_eq!(path_shaped(query, entries), want, "{query:?}");
        }
    }
}
