//! Path candidates from a working directory (docs/references.md: file references): a
//! `.gitignore`-aware walk with the `ignore` crate, bounded in entries, that never follows a
//! link and skips `.git` and `node_modules`. Blocking: run it off the UI thread.

use std::path::{Path, PathBuf};

use ignore::WalkBuilder;

/// Most entries one walk keeps.
pub const MAX_ENTRIES: usize = 200_000;
/// Directory names never walked or offered.
pub const EXCLUDED_DIRECTORIES: [&str; 2] = [".git", "node_modules"];

/// A file or a directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EntryKind {
    Directory,
    File,
}

/// One path below the root: relative, `/`-separated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathEntry {
    pub path: String,
    pub kind: EntryKind,
    /// A segment of the path starts with `.` (offered only when a query asks for one).
    pub hidden: bool,
}

impl PathEntry {
    /// The entry for `path` (relative, `/`-separated) of `kind`.
    pub fn new(path: String, kind: EntryKind) -> Self {
        let hidden = path.split('/').any(|s| s.starts_with('.'));
        PathEntry { path, kind, hidden }
    }
}

/// What a walk found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileIndex {
    pub root: PathBuf,
    /// In walk order: breadth by directory, names sorted.
    pub entries: Vec<PathEntry>,
    /// The walk stopped at the entry limit.
    pub truncated: bool,
    /// The walk was cancelled before it finished.
    pub cancelled: bool,
}

/// Walk `root`, keeping at most `max_entries` files and directories; `cancelled` is asked
/// between entries. Unreadable subtrees are skipped (completion is advisory).
pub fn walk(root: &Path, max_entries: usize, cancelled: &dyn Fn() -> bool) -> FileIndex {
    let mut index = FileIndex {
        root: root.to_path_buf(),
        ..FileIndex::default()
    };
    let walker = WalkBuilder::new(root)
        .hidden(false)
        .follow_links(false)
        .require_git(false)
        .git_global(true)
        .git_ignore(true)
        .git_exclude(true)
        .parents(true)
        .sort_by_file_name(std::cmp::Ord::cmp)
        .filter_entry(|e| {
            !(e.depth() > 0
                && e.file_type().is_some_and(|t| t.is_dir())
                && EXCLUDED_DIRECTORIES
                    .iter()
                    .any(|x| e.file_name() == std::ffi::OsStr::new(x)))
        })
        .build();
    for entry in walker {
        if cancelled() {
            index.cancelled = true;
            break;
        }
        let Ok(entry) = entry else {
            continue;
        };
        if entry.depth() == 0 {
            continue;
        }
        let kind = match entry.file_type() {
            Some(t) if t.is_dir() => EntryKind::Directory,
            Some(t) if t.is_file() => EntryKind::File,
            // Links, FIFOs, sockets and devices are not offered.
            _ => continue,
        };
        let Ok(relative) = entry.path().strip_prefix(root) else {
            continue;
        };
        let path = relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        if index.entries.len() >= max_entries {
            index.truncated = true;
            break;
        }
        index.entries.push(PathEntry::new(path, kind));
    }
    index
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn paths(index: &FileIndex) -> Vec<&str> {
        index.entries.iter().map(|e| e.path.as_str()).collect()
    }

    #[test]
    fn honours_gitignore_skips_git_and_node_modules_and_links() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for d in [
            ".git/objects",
            "node_modules/x",
            "src/deep",
            "target",
            "docs",
        ] {
            fs::create_dir_all(root.join(d)).unwrap();
        }
        for f in [
            ".gitignore",
            ".env",
            "src/main.rs",
            "src/deep/a.rs",
            "target/out.bin",
            "docs/x.log",
            "docs/keep.md",
            "node_modules/x/i.js",
            ".git/HEAD",
        ] {
            fs::write(root.join(f), "x").unwrap();
        }
        fs::write(root.join(".gitignore"), "target/\n*.log\n").unwrap();
        std::os::unix::fs::symlink("src/main.rs", root.join("link.rs")).unwrap();
        let index = walk(root, MAX_ENTRIES, &|| false);
        let mut got = paths(&index);
        got.sort_unstable();
        assert_eq!(
            got,
            [
                ".env",
                ".gitignore",
                "docs",
                "docs/keep.md",
                "src",
                "src/deep",
                "src/deep/a.rs",
                "src/main.rs"
            ]
        );
        assert!(!index.truncated && !index.cancelled);
        let kinds: Vec<EntryKind> = index
            .entries
            .iter()
            .filter(|e| e.path == "src" || e.path == "src/main.rs")
            .map(|e| e.kind)
            .collect();
        assert!(kinds.contains(&EntryKind::Directory) && kinds.contains(&EntryKind::File));
    }

    #[test]
    fn stops_at_the_limit_and_on_cancel() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..30 {
            fs::write(dir.path().join(format!("f{i:02}")), "x").unwrap();
        }
        let index = walk(dir.path(), 10, &|| false);
        assert_eq!(index.entries.len(), 10);
        assert!(index.truncated);
        let index = walk(dir.path(), MAX_ENTRIES, &|| true);
        assert!(index.cancelled && index.entries.is_empty());
    }
}
