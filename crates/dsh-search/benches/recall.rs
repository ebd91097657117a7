//! Recall within one referenced session (docs/performance.md, recall): a 100 000-message
//! session (50 000 exchanges of about 300-byte messages, drawn from the search fixture's
//! vocabulary), its index built once; then, warm, a search for a word said only in its first
//! message and one for two common words — from the index, and, for comparison, by reading
//! the log.
#![allow(clippy::unwrap_used, clippy::panic)] // a failure should stop the measurement

#[path = "support/search_fixture.rs"]
mod search_fixture;

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use dsh_search::recall::{RecallQuery, recall, recall_from_log};
use dsh_search::{Cancel, IndexOptions, SessionIndex};
use dsh_store::SessionStore;

/// Messages of the referenced session.
const MESSAGES: usize = 100_000;

fn bench(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("store");
    let vocab = search_fixture::vocabulary();
    let mut rng = fastrand::Rng::with_seed(37);
    let mut log = search_fixture::Log::create(&root, "long", "/w", 1);
    log.user("we named the uplink protocol zeppelin after the airship");
    log.assistant("zeppelin it is");
    for _ in 1..MESSAGES / 2 {
        log.user(&search_fixture::text(&mut rng, &vocab, 300));
        log.assistant(&search_fixture::text(&mut rng, &vocab, 300));
    }
    drop(log);
    let store = SessionStore::new(&root);
    let index = SessionIndex::open(
        &root,
        &IndexOptions {
            index_dir: Some(tmp.path().join("index")),
        },
    )
    .unwrap();
    index.refresh(&Cancel::new(), &mut |_| {}).unwrap();
    let path = store.locate("long").unwrap().unwrap().path;
    let common = format!("{} {}", vocab[60], vocab[61]);
    // Warm: the first answers (and the page cache) are not measured.
    for query in ["zeppelin", common.as_str()] {
        let found = recall(Some((&index, &path)), &store, "long", query, 5).unwrap();
        assert!(found.from_index && !found.exchanges.is_empty(), "{query}");
    }
    let mut group = c.benchmark_group("recall");
    group.sample_size(30);
    group.measurement_time(Duration::from_secs(10));
    group.bench_function("index_rare_word_100k", |b| {
        b.iter(|| black_box(recall(Some((&index, &path)), &store, "long", "zeppelin", 5).unwrap()));
    });
    group.bench_function("index_two_common_words_100k", |b| {
        b.iter(|| black_box(recall(Some((&index, &path)), &store, "long", &common, 5).unwrap()));
    });
    group.sample_size(10);
    group.bench_function("log_rare_word_100k", |b| {
        b.iter(|| {
            let mut q = RecallQuery::new("zeppelin").unwrap();
            black_box(recall_from_log(&store, "long", &mut q, 5).unwrap())
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
