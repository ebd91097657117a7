//! The `@file` section's cost per keystroke (docs/performance.md): ranking a 50 000-file
//! repository for each prefix of a typed query, from a fresh ranker (the first key after
//! the popup opens) and narrowing from the previous key (typing on); and one walk of such a
//! tree on disk (off the UI thread, once per popup opening in a new cwd).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // bench code

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use dsh_file_search::{EntryKind, FileRanker, PathEntry, walk};

/// A repository-shaped list of `n` files: nested crate/package folders, source and test
/// trees, assorted extensions (deterministic).
fn repository(n: usize) -> Vec<PathEntry> {
    let tops = [
        "crates", "packages", "src", "docs", "tests", "examples", "vendor", "tools",
    ];
    let mids = [
        "core", "ui", "store", "search", "net", "cli", "tui", "agent", "llm", "util",
    ];
    let leaves = [
        "mod", "lib", "main", "parse", "render", "state", "event", "error", "config", "index",
    ];
    let exts = ["rs", "ts", "md", "json", "toml", "tsx", "py", "snap"];
    let mut out = Vec::with_capacity(n + n / 10);
    let mut i = 0usize;
    while out.len() < n {
        let top = tops[i % tops.len()];
        let mid = mids[(i / 7) % mids.len()];
        let pkg = format!("{mid}-{}", i / 97 % 53);
        let leaf = leaves[(i / 3) % leaves.len()];
        let ext = exts[(i / 11) % exts.len()];
        let deep = if i.is_multiple_of(5) {
            "/internal/detail"
        } else {
            ""
        };
        if i.is_multiple_of(50) {
            out.push(PathEntry::new(
                format!("{top}/{pkg}/src{deep}"),
                EntryKind::Directory,
            ));
        }
        out.push(PathEntry::new(
            format!("{top}/{pkg}/src{deep}/{leaf}_{i}.{ext}"),
            EntryKind::File,
        ));
        i += 1;
    }
    out
}

fn keystrokes(c: &mut Criterion) {
    let entries = repository(50_000);
    let query = "src/parse";
    let prefixes: Vec<&str> = (1..=query.len()).map(|n| &query[..n]).collect();
    c.bench_function(
        "rank 50k files, one key from a fresh ranker (worst key of src/parse)",
        |b| {
            b.iter(|| {
                let mut worst = 0;
                for q in &prefixes {
                    let mut ranker = FileRanker::new();
                    worst = worst.max(black_box(ranker.rank(&entries, q, 50)).len());
                }
                worst
            });
        },
    );
    c.bench_function("rank 50k files, first key 's' (fresh)", |b| {
        b.iter(|| FileRanker::new().rank(&entries, black_box("s"), 50));
    });
    c.bench_function(
        "rank 50k files, typing src/parse key by key (narrowing, 9 keys)",
        |b| {
            b.iter(|| {
                let mut ranker = FileRanker::new();
                for q in &prefixes {
                    black_box(ranker.rank(&entries, q, 50));
                }
            });
        },
    );
    let dir = tempfile::tempdir().unwrap();
    for e in &entries {
        let path = dir.path().join(&e.path);
        if e.kind == EntryKind::Directory {
            std::fs::create_dir_all(&path).unwrap();
        } else {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, "x").unwrap();
        }
    }
    let mut group = c.benchmark_group("walk");
    group.sample_size(10);
    group.bench_function("walk a 50k-file tree", |b| {
        b.iter(|| {
            walk(dir.path(), dsh_file_search::MAX_ENTRIES, &|| false)
                .entries
                .len()
        });
    });
    group.finish();
}

criterion_group!(benches, keystrokes);
criterion_main!(benches);
