//! `list_candidates` over 10 000 sessions, or over the store named by
//! `DSH_CANDIDATES_BENCH_STORE` (e.g. 100 000 sessions from `prepare_big many DIR 100000`;
//! docs/performance.md: warm ≤ 2 ms). Cold = a fresh store handle (empty in-memory caches)
//! per call; the OS page cache stays warm.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a failure should stop the test
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    clippy::needless_pass_by_value,
    clippy::similar_names
)] // test code: small known values, helpers that take values for brevity

#[path = "support/fixtures.rs"]
mod fixtures;

use std::sync::Arc;
use std::time::Duration;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use dsh_reference::{AgentRef, ListingOrder, ListingScope, ReferenceConfig, SessionReferences};
use dsh_store::SessionStore;
use tokio_util::sync::CancellationToken;

fn list_candidates(c: &mut Criterion) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (root, name) = if let Some(store) = std::env::var_os("DSH_CANDIDATES_BENCH_STORE") {
        (std::path::PathBuf::from(store), "list_candidates_store")
    } else {
        fixtures::write_many_sessions(tmp.path(), 10_000);
        // Directory mtimes younger than 2 s are not trusted by the listing (same-tick
        // changes would not show); a warm store is one nobody changed in the last moments.
        std::thread::sleep(std::time::Duration::from_millis(2_100));
        (tmp.path().to_owned(), "list_candidates_10k")
    };
    // The index lives in a cache directory of the bench's own.
    let cache = tmp.path().join("cache");
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let service = |root: &std::path::Path| {
        SessionReferences::new(
            Arc::new(SessionStore::with_options(
                root,
                Some(cache.clone()),
                true,
                dsh_store::reader::Limits::default(),
            )),
            ReferenceConfig::default(),
        )
    };
    let agent = AgentRef {
        session_id: "sess-00001".into(),
        cwd: Some("/home/dev/project-1".into()),
    };
    let cancel = CancellationToken::new();
    // A first handle writes the index the others start from.
    drop(
        runtime
            .block_on(service(&root).list_candidates(&agent, "topic", None, &cancel))
            .expect("list"),
    );
    // Matches titles only ("topic 42…"), so every session's title is consulted.
    let query = "topic 42";
    let warm = service(&root);
    let first = runtime
        .block_on(warm.list_candidates(&agent, query, None, &cancel))
        .expect("list");
    assert!(!first.is_empty());
    let mut group = c.benchmark_group(name);
    group.bench_function("warm_title_query", |b| {
        b.iter(|| {
            runtime
                .block_on(warm.list_candidates(&agent, query, None, &cancel))
                .expect("list")
        });
    });
    group.bench_function("warm_empty_query", |b| {
        b.iter(|| {
            runtime
                .block_on(warm.list_candidates(&agent, "", None, &cancel))
                .expect("list")
        });
    });
    // What `/resume` and the `@` popup ask (issue 27): the page ordered by last activity,
    // every session's summary in the folded view.
    let scope = ListingScope::Agent(agent.clone());
    let ordered = |query: &str| {
        runtime
            .block_on(warm.list_page_ordered(
                &scope,
                query,
                None,
                ListingOrder::LastActivity,
                &cancel,
            ))
            .expect("list")
    };
    assert!(!ordered("").page.rows.is_empty());
    group.bench_function("warm_ordered_empty_query", |b| b.iter(|| ordered("")));
    group.bench_function("warm_ordered_title_query", |b| b.iter(|| ordered(query)));
    group.bench_function("cold_title_query", |b| {
        b.iter_batched(
            || service(&root),
            |fresh| {
                runtime
                    .block_on(fresh.list_candidates(&agent, query, None, &cancel))
                    .expect("list")
            },
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(Duration::from_secs(8)).warm_up_time(Duration::from_secs(1));
    targets = list_candidates
}
criterion_main!(benches);
