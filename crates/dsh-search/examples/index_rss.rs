//! Peak memory of full-text indexing a very long session (issue 23, docs/performance.md).
//!
//! - `index_rss gen STORE [MB]`: write a store holding one session of about MB megabytes of
//!   conversation text (default 1 300: a log of about 1.36 GB), alternating user and
//!   assistant messages of 16 KiB, with marker words in its first, middle and last message,
//!   plus 20 small sessions.
//! - `index_rss build STORE INDEX`: build the index with a fresh `INDEX` directory, then run
//!   one search whose words sit in different parts of the long session; prints the outcome
//!   and this process's peak resident memory (`VmHWM`).
//! - `index_rss measure STORE [BIN]`: run `build` as a child under `/usr/bin/time` (the
//!   kernel's maximum resident set size of the child) on a fresh index, and with BIN (a
//!   release `dsh-refs`) also `BIN search` on a fresh cache dir; prints each child's peak
//!   RSS, wall time and exit status.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a measuring tool: a failure should stop it
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_precision_loss,
    clippy::cast_possible_wrap,
    clippy::needless_pass_by_value,
    dead_code
)] // measurement code: sizes are small

#[path = "../benches/support/search_fixture.rs"]
mod search_fixture;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use dsh_search::{Cancel, IndexOptions, SessionIndex};

/// Words that occur only once each in the long session: in its first, middle and last
/// message.
const MARKERS: [&str; 3] = ["firstmarkerword", "middlemarkerword", "lastmarkerword"];
/// Bytes of one message of the long session.
const MESSAGE: usize = 16 << 10;

fn generate(store: &Path, megabytes: usize) {
    let started = Instant::now();
    let vocab = search_fixture::vocabulary();
    let mut rng = fastrand::Rng::with_seed(23);
    let total = megabytes << 20;
    let messages = (total / MESSAGE).max(3);
    let mut log =
        search_fixture::Log::create(store, "long-session", "/work/long", 1_700_000_000_000);
    for m in 0..messages {
        let mut body = search_fixture::text(&mut rng, &vocab, MESSAGE);
        if m == 0 {
            body.push_str(MARKERS[0]);
        } else if m == messages / 2 {
            body.push_str(MARKERS[1]);
        } else if m + 1 == messages {
            body.push_str(MARKERS[2]);
        }
        if m % 2 == 0 {
            log.user(&body);
        } else {
            log.assistant(&body);
        }
    }
    log.title("The long session");
    drop(log);
    for i in 0..20 {
        let mut small = search_fixture::Log::create(
            store,
            &format!("small-{i:02}"),
            "/work/small",
            1_700_000_000_000 + i,
        );
        small.user(&search_fixture::text(&mut rng, &vocab, 2000));
        small.assistant(&search_fixture::text(&mut rng, &vocab, 2000));
    }
    println!(
        "wrote {messages} messages of {MESSAGE} bytes in the long session and 20 small ones in {:?}",
        started.elapsed()
    );
}

/// This process's peak resident set size, KiB.
fn vm_hwm() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn build(store: &Path, index_dir: &Path) {
    let started = Instant::now();
    let index = SessionIndex::open(
        store,
        &IndexOptions {
            index_dir: Some(index_dir.to_owned()),
        },
    )
    .unwrap();
    let outcome = index.refresh(&Cancel::new(), &mut |_| {}).unwrap();
    let built = started.elapsed();
    let hits = index.search(&MARKERS.join(" "), 5).unwrap();
    let ids: Vec<&str> = hits.iter().map(|h| h.session_id.as_str()).collect();
    println!(
        "{outcome:?}; built in {built:?}; search {:?} -> {ids:?}; peak RSS {} MiB",
        MARKERS.join(" "),
        vm_hwm() / 1024
    );
}

/// Run `cmd` under `/usr/bin/time`; prints its peak RSS, wall time, status and output tail.
fn timed(label: &str, cmd: &mut Command) {
    let out = Command::new("/usr/bin/time")
        .arg("-f")
        .arg("TIME %M KiB %e s")
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .envs(cmd.get_envs().filter_map(|(k, v)| v.map(|v| (k, v))))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let time = stderr
        .lines()
        .rev()
        .find(|l| l.starts_with("TIME "))
        .unwrap_or("TIME ? KiB ? s");
    let fields: Vec<&str> = time.split_whitespace().collect();
    let kib: f64 = fields.get(1).and_then(|v| v.parse().ok()).unwrap_or(0.0);
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!(
        "{label}: peak RSS {:.0} MiB, {} s, {}; {}",
        kib / 1024.0,
        fields.get(3).unwrap_or(&"?"),
        out.status,
        stdout
            .lines()
            .last()
            .unwrap_or("")
            .chars()
            .take(300)
            .collect::<String>()
    );
}

fn measure(store: &Path, bin: Option<&Path>) {
    let scratch = tempfile::tempdir().unwrap();
    let me = std::env::current_exe().unwrap();
    timed(
        "index_rss build",
        Command::new(&me)
            .arg("build")
            .arg(store)
            .arg(scratch.path().join("index")),
    );
    if let Some(bin) = bin {
        timed(
            "dsh-refs search (first build)",
            Command::new(bin)
                .arg("--store")
                .arg(store)
                .arg("--no-foreign-sources")
                .arg("search")
                .arg(MARKERS.join(" "))
                .env("XDG_CACHE_HOME", scratch.path().join("cache"))
                .env("XDG_CONFIG_HOME", scratch.path().join("config")),
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |i: usize| args.get(i).cloned();
    let mode = arg(1).expect("usage: index_rss gen|build|measure STORE ...");
    let store = PathBuf::from(arg(2).expect("STORE"));
    match mode.as_str() {
        "gen" => generate(&store, arg(3).map_or(1300, |v| v.parse().unwrap())),
        "build" => build(&store, Path::new(&arg(3).expect("INDEX"))),
        "measure" => measure(&store, arg(3).as_deref().map(Path::new)),
        other => panic!("unknown mode {other}"),
    }
}
