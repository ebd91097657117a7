//! The copies of OpenCode's database we read from (docs/foreign-sources.md, OpenCode) are
//! bounded and cleaned: a database over the size cap is left out with a warning, no copy
//! takes all copies past their total bound, a copy whose process is gone (its lock free) is
//! removed by the next process at once, a live one never, and nothing we did not create is
//! deleted (issue 34: three processes killed mid-copy left 2.1 GB in the cache).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod support;

use std::fs;
use std::path::{Path, PathBuf};

use dsh_foreign::{CopyLimits, ForeignSource, Origin, SourceConfig};
use dsh_store::SessionQuery;
use support::{copy_tree, fixtures};

const MAIN: &str = "opencode:ses_0a1b2c3d4e5fOpenCodeMain1";
const OLD: &str = "opencode:ses_09f9e8d7c6b5OpenCodeOld1";
/// Only in the database (MAIN and OLD are in the JSON storage too).
const COMPACTED: &str = "opencode:ses_0a1b2c3d4e5fOpenCodeComp2";

struct Setup {
    _tmp: tempfile::TempDir,
    data: PathBuf,
    cache: PathBuf,
}

impl Setup {
    fn new() -> Setup {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("opencode");
        copy_tree(&fixtures().join("opencode"), &data);
        let cache = tmp.path().join("cache");
        Setup {
            _tmp: tmp,
            data,
            cache,
        }
    }

    /// Where every process's copies go (beside the listing cache file).
    fn copies(&self) -> PathBuf {
        self.cache.join("foreign/opencode-copies")
    }

    fn source(&self, copy_limits: CopyLimits) -> ForeignSource {
        ForeignSource::new(SourceConfig {
            origin: Origin::OpenCode,
            root: self.data.clone(),
            max_line_bytes: dsh_foreign::jsonl::DEFAULT_MAX_LINE_BYTES,
            clean_title: support::clean,
            index_file: Some(self.cache.join("foreign/opencode-x.json")),
            copy_limits,
        })
    }

    fn db_len(&self) -> u64 {
        fs::metadata(self.data.join("opencode.db")).unwrap().len()
    }
}

fn ids(src: &ForeignSource) -> Vec<String> {
    src.list_sessions()
        .unwrap()
        .iter()
        .map(|h| h.id.clone())
        .collect()
}

/// Every path under `dir`, relative, sorted.
fn paths(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            out.push(path.strip_prefix(dir).unwrap().display().to_string());
            if fs::symlink_metadata(&path).unwrap().is_dir() {
                stack.push(path);
            }
        }
    }
    out.sort();
    out
}

/// A `copy-*` directory as a process leaves it: a (partial) copy of `len` bytes (sparse)
/// and its lock file, just made (a free lock is a dead process's however young); plus
/// anything in `also`.
fn left_copy(copies: &Path, name: &str, len: u64, also: &[&str]) -> PathBuf {
    let dir = copies.join(name);
    fs::create_dir_all(&dir).unwrap();
    let copy = fs::File::create(dir.join("opencode-1.db")).unwrap();
    copy.set_len(len).unwrap();
    for file in also {
        fs::write(dir.join(file), b"not ours").unwrap();
    }
    fs::File::create(dir.join("lock")).unwrap();
    dir
}

#[test]
fn a_copy_whose_process_is_gone_is_removed_at_once_and_a_live_one_is_kept() {
    let s = Setup::new();
    // Three processes killed mid-copy (their locks free, as the kernel leaves them), one
    // alive (its lock held, as a running process holds it), one holding a file of the
    // user's own.
    let dead: Vec<PathBuf> = (1..=3)
        .map(|i| left_copy(&s.copies(), &format!("copy-dead{i}"), 1 << 20, &[]))
        .collect();
    let live = left_copy(&s.copies(), "copy-live", 1 << 20, &[]);
    let held = fs::File::open(live.join("lock")).unwrap();
    held.lock().unwrap();
    let mixed = left_copy(&s.copies(), "copy-mixed", 1 << 20, &["notes.txt"]);

    let src = s.source(CopyLimits::default());
    assert!(ids(&src).contains(&COMPACTED.to_owned()));
    for dir in &dead {
        assert!(!dir.exists(), "{} was left behind", dir.display());
    }
    assert!(
        live.join("opencode-1.db").is_file() && live.join("lock").is_file(),
        "a live process's copy is kept"
    );
    assert_eq!(
        paths(&mixed),
        ["notes.txt"],
        "only our copy and lock are removed from a dead process's directory"
    );
    // Ours: one directory with our lock and our copy.
    let ours: Vec<String> = paths(&s.copies())
        .into_iter()
        .filter(|p| !p.starts_with("copy-live") && !p.starts_with("copy-mixed"))
        .collect();
    assert!(
        ours.iter().any(|p| p.ends_with("/lock"))
            && ours.iter().any(|p| p.ends_with("/opencode-1.db"))
            && ours.iter().filter(|p| !p.contains('/')).count() == 1,
        "{ours:?}"
    );
    // Our lock is held: another process (here, another source) leaves our copy alone.
    let other = s.source(CopyLimits::default());
    assert!(ids(&other).contains(&COMPACTED.to_owned()));
    for p in &ours {
        assert!(s.copies().join(p).exists(), "{p} of a live source removed");
    }
    // Dropped: its directory goes, lock included.
    drop(src);
    drop(other);
    assert_eq!(
        paths(&s.copies()),
        [
            "copy-live",
            "copy-live/lock",
            "copy-live/opencode-1.db",
            "copy-mixed",
            "copy-mixed/notes.txt"
        ]
    );
    drop(held);
}

#[test]
fn a_database_over_the_copy_cap_is_left_out_with_a_warning() {
    let s = Setup::new();
    let len = s.db_len();
    let src = s.source(CopyLimits {
        max_copy_bytes: len - 1,
        ..CopyLimits::default()
    });
    assert_eq!(ids(&src), [MAIN, OLD], "only the JSON storage is read");
    let warnings = src.listing_warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let w = &warnings[0];
    assert!(
        w.contains("opencode.db") && w.contains("opencode_max_copy_mib") && w.contains("left out"),
        "{w}"
    );
    assert!(
        !paths(&s.copies()).iter().any(|p| p.contains("opencode-")),
        "nothing copied: {:?}",
        paths(&s.copies())
    );
    // Within the cap: read.
    let src = s.source(CopyLimits {
        max_copy_bytes: len,
        ..CopyLimits::default()
    });
    assert!(ids(&src).contains(&COMPACTED.to_owned()));
    assert_eq!(src.listing_warnings(), Vec::<String>::new());
}

#[test]
fn no_copy_takes_the_copies_past_their_total() {
    let s = Setup::new();
    let len = s.db_len();
    // A running process's copy takes most of the room.
    let live = left_copy(&s.copies(), "copy-live", 3 * len + 1, &[]);
    let held = fs::File::open(live.join("lock")).unwrap();
    held.lock().unwrap();
    let limits = CopyLimits {
        max_copy_bytes: 2 * len,
        max_total_bytes: 4 * len,
    };
    let src = s.source(limits);
    assert_eq!(ids(&src), [MAIN, OLD]);
    let warnings = src.listing_warnings();
    assert!(
        warnings.len() == 1 && warnings[0].contains("opencode_max_copies_mib"),
        "{warnings:?}"
    );
    let copies: Vec<String> = paths(&s.copies())
        .into_iter()
        .filter(|p| p.contains("opencode-") && !p.starts_with("copy-live"))
        .collect();
    assert_eq!(
        copies,
        Vec::<String>::new(),
        "nothing copied past the total"
    );
    // The other process ends (its lock freed, its copy removed by the next copy): room.
    drop(held);
    assert!(ids(&src).contains(&COMPACTED.to_owned()));
    assert!(!live.exists());
    // With a copy of ours in hand, a change that finds no room keeps the last copy
    // answering references.
    let blocker = left_copy(&s.copies(), "copy-blocker", 3 * len + 1, &[]);
    let held = fs::File::open(blocker.join("lock")).unwrap();
    held.lock().unwrap();
    let conn = rusqlite::Connection::open(s.data.join("opencode.db")).unwrap();
    conn.execute(
        "UPDATE session SET title = 'renamed' WHERE id = 'ses_0a1b2c3d4e5fOpenCodeMain1'",
        [],
    )
    .unwrap();
    drop(conn);
    assert!(src.read_surface(MAIN).is_ok(), "the last copy answers");
    let warnings = src.listing_warnings();
    assert!(
        warnings.len() == 1 && warnings[0].contains("opencode_max_copies_mib"),
        "{warnings:?}"
    );
    assert!(
        ids(&src).contains(&COMPACTED.to_owned()),
        "as of the last copy"
    );
    drop(held);
}
