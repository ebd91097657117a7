//! Retention of 1 000 and 3 000 messages (the TypeScript reference is quadratic: about 2.7 s
//! and 22 s on this machine) and `parse_text` over 1 MB of text with mentions.
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

use std::borrow::Cow;
use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use dsh_reference::{
    ConversationItem, SourceHeader, TurnRole, format_mention, parse_text, retain_source,
};

fn items(count: usize) -> Vec<ConversationItem<'static>> {
    let mut rng = fastrand::Rng::with_seed(5);
    (0..count)
        .map(|i| ConversationItem {
            role: if i % 2 == 0 {
                TurnRole::User
            } else {
                TurnRole::Assistant
            },
            text: Cow::Owned(fixtures::text(&mut rng, 1000)),
            checkpoint: i == count / 3,
        })
        .collect()
}

fn header() -> SourceHeader {
    SourceHeader {
        session_id: "source".into(),
        label: "Source".into(),
        cwd: Some("/work".into()),
        captured_through_seq: Some(9_999),
    }
}

fn retention(c: &mut Criterion) {
    let mut group = c.benchmark_group("retention");
    for count in [1_000, 3_000] {
        let all = items(count);
        // Default budget (64 KiB) and a budget that forces cutting as well as dropping.
        for budget in [65_536, 4_096] {
            group.bench_function(format!("{count}_messages_budget_{budget}"), |b| {
                b.iter_batched(
                    || all.clone(),
                    |items| retain_source(header(), items, budget).expect("fits"),
                    BatchSize::LargeInput,
                );
            });
        }
    }
    group.finish();
}

fn parse_text_1mb(c: &mut Criterion) {
    let mut rng = fastrand::Rng::with_seed(9);
    let mut text = String::with_capacity(1 << 20);
    let mut n = 0;
    while text.len() < 1 << 20 {
        text.push_str(&fixtures::text(&mut rng, 400));
        text.push_str(&format_mention(&format!("session-{n}"), Some("a [label]")));
        text.push(' ');
        n += 1;
    }
    c.bench_function("parse_text_1mb", |b| {
        b.iter(|| parse_text(black_box(&text)).expect("parses"));
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(Duration::from_secs(4)).warm_up_time(Duration::from_secs(1));
    targets = retention, parse_text_1mb
}
criterion_main!(benches);
