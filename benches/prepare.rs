//! `prepare` of one 100 000-message (~100 MB) source (docs/performance.md: ≤ 1.5 s). The fixture is
//! written once per run into a temporary store.
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

use criterion::{Criterion, criterion_group, criterion_main};
use dsh_reference::{AgentRef, Reference, ReferenceConfig, SessionReferences};
use dsh_store::{ContentBlock, SessionStore};
use tokio_util::sync::CancellationToken;

fn prepare_100k(c: &mut Criterion) {
    let tmp = tempfile::tempdir().expect("tempdir");
    fixtures::write_long_session(tmp.path(), "big", 100_000, 600);
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let refs = SessionReferences::new(
        Arc::new(SessionStore::new(tmp.path())),
        ReferenceConfig::default(),
    );
    let agent = AgentRef {
        session_id: "me".into(),
        cwd: None,
    };
    let mention = [Reference {
        session_id: "big".into(),
        label: None,
    }];
    let content = [ContentBlock::text("see @big")];
    c.bench_function("prepare_100k", |b| {
        b.iter(|| {
            runtime
                .block_on(refs.prepare(&agent, &content, &mention, &CancellationToken::new()))
                .expect("prepare")
        });
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).measurement_time(Duration::from_secs(12)).warm_up_time(Duration::from_secs(2));
    targets = prepare_100k
}
criterion_main!(benches);
