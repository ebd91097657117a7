//! Secret redaction's cost by input size (docs/performance.md: redaction): the attack file of
//! issue 34 (`-----BEGIN PRIVATE KEY-----` lines with no END: 7.5 s at 16 000 lines and 27.5 s
//! at 32 000 before the rules were made linear), ordinary source text, and text dense with
//! secrets. Criterion reports each size's time and throughput; the slope — how time grows
//! with size, 1.0 for linear — is printed at the end from the bytes the regex engine read
//! and from the time of one run per size.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // bench code
#![allow(clippy::cast_precision_loss)] // sizes and times of a bench

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use dsh_reference::redact::{find_secrets_counted, redact};

/// The attack file: `lines` BEGIN lines and no END.
fn begin_lines(lines: usize) -> String {
    "-----BEGIN PRIVATE KEY-----\n".repeat(lines)
}

/// About `bytes` of ordinary Rust-like source and prose, no secret in it.
fn plain(bytes: usize) -> String {
    let unit = "fn parse_header(line: &str) -> Option<(String, usize)> {\n    \
                let (name, value) = line.split_once(':')?;\n    \
                // The password field is read from the environment, never from here.\n    \
                Some((name.trim().to_owned(), value.trim().len()))\n}\n\
                The session talked about Kafka consumer lag and a retry policy for 429s.\n";
    unit.repeat(bytes / unit.len() + 1)
}

/// About `bytes` of `.env` lines and headers, every second line a secret.
fn dense(bytes: usize) -> String {
    let unit = format!(
        "DB_PASSWORD=hunter2-{}\nLOG_LEVEL=debug\nAuthorization: Bearer {}\n\
         url = \"postgres://app:p@ss/w0rd@db:5432/app\"\n",
        "x9Z".repeat(4),
        "q8Zr2kLm".repeat(4)
    );
    unit.repeat(bytes / unit.len() + 1)
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("redact");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(4));
    for lines in [4_000, 16_000, 32_000] {
        let text = begin_lines(lines);
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_function(format!("begin_lines_without_end/{lines}"), |b| {
            b.iter(|| redact(black_box(&text)));
        });
    }
    for kib in [256, 1024] {
        for (name, text) in [("plain", plain(kib * 1024)), ("dense", dense(kib * 1024))] {
            group.throughput(Throughput::Bytes(text.len() as u64));
            group.bench_function(format!("{name}/{kib}KiB"), |b| {
                b.iter(|| redact(black_box(&text)));
            });
        }
    }
    group.finish();
}

/// How time and engine bytes grow from `small` to `large` lines: the log-log slope.
fn slope(small: usize, large: usize) {
    let measure = |lines: usize| {
        let text = begin_lines(lines);
        let started = Instant::now();
        let (found, cost) = find_secrets_counted(&text);
        (
            started.elapsed(),
            cost.engine_bytes,
            found.len(),
            text.len(),
        )
    };
    let _warm = measure(small);
    let (t1, b1, f1, n1) = measure(small);
    let (t2, b2, f2, n2) = measure(large);
    let size = (n2 as f64 / n1 as f64).ln();
    println!(
        "slope (BEGIN lines, {small} → {large}): time {:.2}, engine bytes {:.2} (1.00 is linear); \
         {small} lines: {:.3} s, {b1} engine bytes, {f1} found; {large} lines: {:.3} s, {b2} \
         engine bytes, {f2} found",
        (t2.as_secs_f64() / t1.as_secs_f64()).ln() / size,
        (b2 as f64 / b1 as f64).ln() / size,
        t1.as_secs_f64(),
        t2.as_secs_f64(),
    );
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    bench(&mut criterion);
    criterion.final_summary();
    slope(32_000, 300_000);
}
