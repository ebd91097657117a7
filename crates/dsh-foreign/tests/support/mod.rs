//! What the foreign-source tests share: fixture copies, whole-tree snapshots (bytes, mtime,
//! mode) for "nothing written" checks, and the visible items of a surface.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use dsh_foreign::{ForeignSource, Origin, SourceConfig};
use dsh_store::{Event, EventData, SurfaceVisitor};

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// A stand-in for the app's fallback title: whitespace collapsed, 8 words.
pub fn clean(text: &str) -> Option<String> {
    let t: Vec<&str> = text.split_whitespace().take(8).collect();
    (!t.is_empty()).then(|| t.join(" "))
}

pub fn source_at(origin: Origin, root: &Path, max_line_bytes: u64) -> ForeignSource {
    ForeignSource::new(SourceConfig {
        root: SourceConfig::logs_dir(&origin, root),
        origin,
        max_line_bytes,
        clean_title: clean,
        index_file: None,
        copy_limits: dsh_foreign::CopyLimits::default(),
    })
}

pub fn source(origin: Origin, root: &Path) -> ForeignSource {
    source_at(origin, root, dsh_foreign::jsonl::DEFAULT_MAX_LINE_BYTES)
}

/// Copy a fixture tree (files and directories only).
pub fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Every path under `root` (links not followed) with its bytes (empty for a directory, the
/// target for a link), mtime and mode.
pub fn tree(root: &Path) -> BTreeMap<PathBuf, (Vec<u8>, std::time::SystemTime, u32)> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_owned()];
    while let Some(path) = stack.pop() {
        let meta = fs::symlink_metadata(&path).unwrap();
        let bytes = if meta.is_dir() {
            for entry in fs::read_dir(&path).unwrap() {
                stack.push(entry.unwrap().path());
            }
            Vec::new()
        } else if meta.file_type().is_symlink() {
            fs::read_link(&path)
                .unwrap()
                .to_string_lossy()
                .into_owned()
                .into_bytes()
        } else {
            fs::read(&path).unwrap()
        };
        out.insert(
            path,
            (bytes, meta.modified().unwrap(), meta.permissions().mode()),
        );
    }
    out
}

/// `(role, text)` of every surface item; `checkpoint` for a compaction summary.
pub fn items(events: &[Event]) -> Vec<(String, String)> {
    events
        .iter()
        .filter_map(|e| match &e.data {
            EventData::UserMessage(m) => {
                let role = if m
                    .source
                    .as_ref()
                    .is_some_and(dsh_store::Source::is_compact_checkpoint)
                {
                    "checkpoint"
                } else {
                    "user"
                };
                Some((role.to_owned(), m.joined_text()))
            }
            EventData::AssistantMessage { message, .. } => {
                Some(("assistant".to_owned(), message.joined_text()))
            }
            _ => None,
        })
        .collect()
}

pub fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect()
}

/// Records what a streaming scan shows.
#[derive(Default)]
pub struct Seen {
    pub visited: Vec<u64>,
    pub removed: Vec<u64>,
}

impl SurfaceVisitor for Seen {
    fn visit(&mut self, event: &Event, removed: &[u64]) {
        self.visited.push(event.seq);
        self.removed.extend_from_slice(removed);
    }
}

/// A streaming scan of `id` shows exactly the whole read's surface, and its kept items
/// read again equal the whole read's.
pub fn scan_matches_whole_read(src: &ForeignSource, id: &str) {
    use dsh_store::SessionQuery;
    let whole = src.read_surface(id).unwrap();
    let mut seen = Seen::default();
    let mut scan = src.scan_surface(id, &mut seen).unwrap();
    let seqs: Vec<u64> = whole.events.iter().map(|e| e.seq).collect();
    assert_eq!(scan.surface_seqs(), seqs, "{id}");
    assert_eq!(
        scan.captured_through_seq, whole.captured_through_seq,
        "{id}"
    );
    let visible: Vec<u64> = seen
        .visited
        .iter()
        .copied()
        .filter(|s| !seen.removed.contains(s))
        .collect();
    assert_eq!(visible, seqs, "{id}");
    let last_two: Vec<u64> = seqs.iter().rev().take(2).rev().copied().collect();
    let again = scan.reread(&last_two).unwrap();
    assert_eq!(
        again,
        whole.events[whole.events.len().saturating_sub(2)..].to_vec(),
        "{id}"
    );
    assert!(scan.reread(&[9999]).is_err());
}
