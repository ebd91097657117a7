//! The `@file` section's cost per keystroke (docs/performance.md): ranking a 50 000-file
//! repository for each prefix of a typed query, from a fresh ranker (the first key after
//! the popup opens) and narrowing from the previous key (typing on); and one walk of such a
//! tree on disk (off the UI thread, once per popup opening in a new cwd). Group `matcher`
//! measures the workspace's two fuzzy uses — this path ranking and the sessions' closest
//! matches (every query word against label, id and cwd) — with `nucleo-matcher` and with
//! `fuzzy-matcher` (skim), in the same run, and prints what each ranks first.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // bench code

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use dsh_file_search::{EntryKind, FileRanker, PathEntry, walk};
use fuzzy_matcher::FuzzyMatcher;
use fuzzy_matcher::skim::SkimMatcherV2;
use nucleo_matcher::pattern::{Atom, AtomKind, CaseMatching, Normalization};
use nucleo_matcher::{Config, Matcher, Utf32Str};

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

/// `n` sessions as the closest-match scoring sees them: label, id, the cwd's last segment
/// (English and CJK titles, deterministic).
fn sessions(n: usize) -> Vec<[String; 3]> {
    let subjects = [
        "Kafka vs Redis for the event bus",
        "fix the login redirect loop",
        "会话 引用 的 设计",
        "refactor search index cache",
        "why is the composer slow on paste",
        "release notes 0.4",
        "数据库 迁移 计划",
        "tmux capture of the resume picker",
    ];
    let cwds = ["atlas", "dsh-refs", "notes", "infra", "web", "項目"];
    (0..n)
        .map(|i| {
            [
                format!("{} #{i}", subjects[i % subjects.len()]),
                format!("s-{:08x}", i * 2_654_435_761 % 4_294_967_291),
                cwds[(i / 3) % cwds.len()].to_owned(),
            ]
        })
        .collect()
}

/// The query's words (split as the closest-match scorer splits them).
fn words(query: &str) -> Vec<&str> {
    query
        .split(|c: char| c.is_whitespace() || matches!(c, '-' | '_' | '/' | '.'))
        .filter(|w| !w.is_empty())
        .collect()
}

/// Summed best score of every word over the fields (skim), the closest-match rule.
fn skim_session(m: &SkimMatcherV2, words: &[&str], fields: &[String; 3]) -> Option<i64> {
    let mut total = 0i64;
    for w in words {
        total += fields.iter().filter_map(|f| m.fuzzy_match(f, w)).max()?;
    }
    Some(total)
}

/// The same rule with nucleo atoms.
fn nucleo_session(
    m: &mut Matcher,
    atoms: &[Atom],
    buf: &mut Vec<char>,
    fields: &[String; 3],
) -> Option<i64> {
    let mut total = 0i64;
    for atom in atoms {
        let mut best = None;
        for f in fields {
            let score = atom.score(Utf32Str::new(f, buf), m).map(i64::from);
            best = best.max(score);
        }
        total += best?;
    }
    Some(total)
}

/// The best `k` of `scored` (index, score), best first.
fn top(mut scored: Vec<(usize, i64)>, k: usize) -> Vec<usize> {
    scored.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    scored.into_iter().take(k).map(|s| s.0).collect()
}

fn matchers(c: &mut Criterion) {
    let entries = repository(50_000);
    let skim = SkimMatcherV2::default().ignore_case();
    let skim_paths = |query: &str| {
        let scored = entries
            .iter()
            .enumerate()
            .filter_map(|(i, e)| skim.fuzzy_match(&e.path, query).map(|s| (i, s)))
            .collect();
        top(scored, 50)
    };
    let small: Vec<PathEntry> = [
        "src/main.rs",
        "src/tui/mod.rs",
        "docs/maintenance.md",
        "crates/dsh-store/src/main_loop.rs",
        "README.md",
    ]
    .into_iter()
    .map(|p| PathEntry::new(p.into(), EntryKind::File))
    .collect();
    for query in ["main", "srcmain", "tuimod"] {
        let nucleo = FileRanker::new().rank(&small, query, 1);
        let skimmed = small
            .iter()
            .enumerate()
            .filter_map(|(i, e)| skim.fuzzy_match(&e.path, query).map(|s| (i, s)))
            .collect();
        eprintln!(
            "paths {query:?}: nucleo first {:?}, skim first {:?}",
            nucleo.first().map(|r| &small[r.index].path),
            top(skimmed, 1).first().map(|&i| &small[i].path)
        );
    }
    let mut group = c.benchmark_group("matcher");
    group.bench_function("paths 50k, query src/parse: nucleo (path config)", |b| {
        b.iter(|| FileRanker::new().rank(&entries, black_box("src/parse"), 50));
    });
    group.bench_function("paths 50k, query src/parse: skim", |b| {
        b.iter(|| skim_paths(black_box("src/parse")));
    });
    let sessions = sessions(20_000);
    let query = "kafka-redis";
    let words = words(query);
    let skim_sessions = || {
        let scored = sessions
            .iter()
            .enumerate()
            .filter_map(|(i, f)| skim_session(&skim, &words, f).map(|s| (i, s)))
            .collect();
        top(scored, 50)
    };
    let atoms: Vec<Atom> = words
        .iter()
        .map(|w| {
            Atom::new(
                w,
                CaseMatching::Ignore,
                Normalization::Smart,
                AtomKind::Fuzzy,
                false,
            )
        })
        .collect();
    let mut nucleo = Matcher::new(Config::DEFAULT);
    let mut buf = Vec::new();
    let mut nucleo_sessions = || {
        let scored = sessions
            .iter()
            .enumerate()
            .filter_map(|(i, f)| nucleo_session(&mut nucleo, &atoms, &mut buf, f).map(|s| (i, s)))
            .collect();
        top(scored, 50)
    };
    let (a, b) = (nucleo_sessions(), skim_sessions());
    eprintln!(
        "sessions {query:?}: nucleo {} matches first {:?}, skim {} first {:?}",
        a.len(),
        a.first().map(|&i| &sessions[i][0]),
        b.len(),
        b.first().map(|&i| &sessions[i][0])
    );
    group.bench_function("sessions 20k, query kafka-redis: nucleo", |b| {
        b.iter(&mut nucleo_sessions);
    });
    group.bench_function("sessions 20k, query kafka-redis: skim", |b| {
        b.iter(skim_sessions);
    });
    group.finish();
}

criterion_group!(benches, keystrokes, matchers);
criterion_main!(benches);
