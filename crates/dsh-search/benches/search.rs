//! Full-text search benchmarks (docs/performance.md, full-text search): a warm two-word
//! query, and the update after one session grew by 100 messages.
//!
//! The store is `DSH_SEARCH_BENCH_STORE` with its index in `DSH_SEARCH_BENCH_INDEX` when set
//! (the 10 000-session fixture of `examples/search_probe.rs`, built once); otherwise a
//! 1 000-session fixture generated in a temporary directory.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // bench code: a failure should stop it
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_precision_loss,
    clippy::cast_possible_wrap,
    clippy::needless_pass_by_value
)] // measurement code: sizes and ranks are small

#[path = "support/search_fixture.rs"]
mod search_fixture;

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{Criterion, criterion_group, criterion_main};
use dsh_search::{Cancel, IndexOptions, SessionIndex};

fn bench(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let bench_store = std::env::var_os("DSH_SEARCH_BENCH_STORE");
    let bench_index = std::env::var_os("DSH_SEARCH_BENCH_INDEX");
    let (store, index_dir) = if let (Some(s), Some(i)) = (bench_store, bench_index) {
        (PathBuf::from(s), PathBuf::from(i))
    } else {
        let store = tmp.path().join("store");
        search_fixture::write_store(&store, 1000, 50, 1000);
        (store, tmp.path().join("index"))
    };
    let index = SessionIndex::open(
        &store,
        &IndexOptions {
            index_dir: Some(index_dir),
        },
    )
    .unwrap();
    index.refresh(&Cancel::new(), &mut |_| {}).unwrap();
    let vocab = search_fixture::vocabulary();
    let mut rng = fastrand::Rng::with_seed(3);
    c.bench_function("search/warm_two_words", |b| {
        b.iter(|| {
            let q = format!(
                "{} {}",
                vocab[rng.usize(50..2000)],
                vocab[rng.usize(50..2000)]
            );
            black_box(index.search(&q, 10).unwrap())
        });
    });
    c.bench_function("search/typing_prefix", |b| {
        b.iter(|| {
            let word = &vocab[rng.usize(50..2000)];
            let q = &word[..word.len().min(3)];
            black_box(index.search(q, 10).unwrap())
        });
    });
    let path = dsh_store::paths::session_dir(&store, Some("/work/project3"), "sess-00003")
        .unwrap()
        .join("session.jsonl");
    let round = std::cell::Cell::new(0u64);
    c.bench_function("search/update_after_100_messages", |b| {
        b.iter_batched(
            || {
                let lines = std::fs::read_to_string(&path).unwrap().lines().count() as u64;
                let mut log = search_fixture::Log::reopen(&path, lines - 1);
                round.set(round.get() + 1);
                for i in 0..100 {
                    log.user(&format!("benchgrowth{} message {i}", round.get()));
                }
            },
            |()| {
                index.refresh(&Cancel::new(), &mut |_| {}).unwrap();
                let q = format!("benchgrowth{}", round.get());
                assert_eq!(index.search(&q, 2).unwrap().len(), 1);
            },
            criterion::BatchSize::PerIteration,
        );
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench
}
criterion_main!(benches);
