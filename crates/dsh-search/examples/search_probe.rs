//! Time and memory probe for the full-text index (docs/performance.md, full-text search).
//!
//! - `search_probe gen STORE [SESSIONS] [MESSAGES] [BYTES]`: write the fixture store
//!   (default 10 000 sessions × 50 messages × 1 000 bytes ≈ 500 MB of indexed text).
//! - `search_probe build STORE INDEX`: build (or update) the index; prints time and sizes.
//!   Run under `/usr/bin/time -v` for the peak RSS.
//! - `search_probe query STORE INDEX [RUNS]`: warm two-word queries, p50/p90.
//! - `search_probe grow STORE INDEX`: append 100 messages to one session, then time the
//!   update and the next query that must see them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // probe code: a failure should stop it
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_precision_loss,
    clippy::cast_possible_wrap,
    clippy::needless_pass_by_value
)] // measurement code: sizes and ranks are small

#[path = "../benches/support/search_fixture.rs"]
mod search_fixture;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use dsh_search::{Cancel, IndexOptions, SessionIndex};

fn open(store: &Path, index: &Path) -> SessionIndex {
    SessionIndex::open(
        store,
        &IndexOptions {
            index_dir: Some(index.to_owned()),
        },
    )
    .unwrap()
}

fn dir_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .map(|e| {
            let p = e.path();
            if p.is_dir() {
                dir_bytes(&p)
            } else {
                e.metadata().map_or(0, |m| m.len())
            }
        })
        .sum()
}

/// Peak anonymous and file-backed resident memory of this process (KiB), sampled every
/// 50 ms from `/proc/self/status` (file-backed pages are the mapped index, reclaimable).
fn sample_memory() -> std::sync::Arc<std::sync::Mutex<(u64, u64)>> {
    let peak = std::sync::Arc::new(std::sync::Mutex::new((0u64, 0u64)));
    let out = std::sync::Arc::clone(&peak);
    std::thread::spawn(move || {
        loop {
            if let Ok(status) = std::fs::read_to_string("/proc/self/status") {
                let field = |name: &str| {
                    status
                        .lines()
                        .find(|l| l.starts_with(name))
                        .and_then(|l| l.split_whitespace().nth(1))
                        .and_then(|v| v.parse::<u64>().ok())
                        .unwrap_or(0)
                };
                let mut p = peak.lock().unwrap();
                p.0 = p.0.max(field("RssAnon:"));
                p.1 = p.1.max(field("RssFile:"));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    });
    out
}

/// CPU time (user + system) this process has used so far, every thread included, from
/// `/proc/self/stat` (clock ticks, assumed 100 per second: 10 ms resolution).
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which is in parentheses): utime is the 14th, stime the 15th.
    let after = stat.rsplit(')').next().unwrap_or("");
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |i: usize| args.get(i).cloned();
    let mode = arg(1).expect("usage: search_probe gen|build|query|grow STORE [INDEX]");
    let store = PathBuf::from(arg(2).expect("STORE"));
    match mode.as_str() {
        "gen" => {
            let n = |i: usize, d: usize| arg(i).map_or(d, |v| v.parse().unwrap());
            let started = Instant::now();
            let text = search_fixture::write_store(&store, n(3, 10_000), n(4, 50), n(5, 1000));
            println!(
                "wrote {} sessions, {text} bytes of indexed text, {} bytes on disk, in {:?}",
                n(3, 10_000),
                dir_bytes(&store),
                started.elapsed()
            );
        }
        "build" => {
            let index_dir = PathBuf::from(arg(3).expect("INDEX"));
            let memory = sample_memory();
            let started = Instant::now();
            let index = open(&store, &index_dir);
            let mut last = 0;
            let outcome = index
                .refresh(&Cancel::new(), &mut |p| {
                    if p.done >= last + 1000 || p.done == p.total {
                        last = p.done;
                        eprintln!(
                            "indexing {} / {} ({:?})",
                            p.done,
                            p.total,
                            started.elapsed()
                        );
                    }
                })
                .unwrap();
            let (anon, file) = *memory.lock().unwrap();
            println!(
                "{outcome:?} in {:?}; index {} bytes; peak RssAnon {} MiB, RssFile {} MiB",
                started.elapsed(),
                dir_bytes(&index_dir),
                anon / 1024,
                file / 1024
            );
        }
        "query" => {
            let index_dir = PathBuf::from(arg(3).expect("INDEX"));
            let runs: usize = arg(4).map_or(200, |v| v.parse().unwrap());
            let index = open(&store, &index_dir);
            let vocab = search_fixture::vocabulary();
            let mut rng = fastrand::Rng::with_seed(11);
            // Warm up.
            for _ in 0..20 {
                index.search("kafu dis", 10).unwrap();
            }
            let mut times = Vec::with_capacity(runs);
            let mut hits = 0;
            for _ in 0..runs {
                // Two mid-frequency words (ranks 50..2000).
                let a = &vocab[rng.usize(50..2000)];
                let b = &vocab[rng.usize(50..2000)];
                let q = format!("{a} {b}");
                let started = Instant::now();
                hits += index.search(&q, 10).unwrap().len();
                times.push(started.elapsed());
            }
            times.sort();
            println!(
                "{runs} two-word queries: p50 {:?} p90 {:?} max {:?} ({} hits on average)",
                percentile(&times, 0.5),
                percentile(&times, 0.9),
                times[times.len() - 1],
                hits / runs
            );
        }
        "grow" => {
            let index_dir = PathBuf::from(arg(3).expect("INDEX"));
            let index = open(&store, &index_dir);
            index.refresh(&Cancel::new(), &mut |_| {}).unwrap();
            let path = dsh_store::paths::session_dir(&store, Some("/work/project7"), "sess-00007")
                .unwrap()
                .join("session.jsonl");
            let grow = |marker: &str| {
                let text = std::fs::read_to_string(&path).unwrap();
                let next_seq = text.lines().count() as u64 - 1;
                let mut log = search_fixture::Log::reopen(&path, next_seq);
                for i in 0..100 {
                    log.user(&format!(
                        "{marker} message {i} about the new partition layout"
                    ));
                }
            };
            let check = |marker: &str| {
                let started = Instant::now();
                let hits = index.search(marker, 5).unwrap();
                assert_eq!(hits.len(), 1, "the grown session is found");
                started.elapsed()
            };
            // A full update (lists the store) after the growth.
            let marker = format!("grownmarker{}", std::process::id());
            grow(&marker);
            let started = Instant::now();
            let outcome = index.refresh(&Cancel::new(), &mut |_| {}).unwrap();
            let full = started.elapsed();
            println!(
                "full update: {full:?} ({outcome:?}), next query {:?}",
                check(&marker)
            );
            let started = Instant::now();
            let nothing = index.refresh(&Cancel::new(), &mut |_| {}).unwrap();
            println!(
                "full update with nothing to do: {:?} (unchanged {})",
                started.elapsed(),
                nothing.unchanged
            );
            // What an idle app pays per change check: one listing, no index access.
            let started = Instant::now();
            let checked = index
                .refresh_if_changed(&Cancel::new(), &mut |_| {})
                .unwrap();
            assert_eq!(checked, None, "nothing changed");
            println!("change check with nothing changed: {:?}", started.elapsed());
            // The update of just the session that grew (what the app does after a turn).
            let marker = format!("grownagain{}", std::process::id());
            grow(&marker);
            // Ten rounds (CPU time has a 10 ms resolution): grow, update just that session.
            let mut walls = Vec::new();
            let mut cpu_total = Duration::ZERO;
            for round in 0..10 {
                let marker = format!("grownagain{}x{round}", std::process::id());
                grow(&marker);
                let started = Instant::now();
                let cpu = cpu_time();
                let outcome = index.refresh_sessions(&["sess-00007"]).unwrap();
                walls.push(started.elapsed());
                cpu_total += cpu_time().saturating_sub(cpu);
                assert_eq!(outcome.appended, 1);
                check(&marker);
            }
            walls.sort();
            println!(
                "one-session update (10 rounds): median {:?} wall, min {:?}, {:?} CPU on average; next query {:?}",
                percentile(&walls, 0.5),
                walls[0],
                cpu_total / 10,
                check("grownagain")
            );
        }
        other => panic!("unknown mode {other}"),
    }
}
