//! Issue 34 item 3: the memory one log line costs does not depend on its shape. A line of
//! any shape — millions of tiny members, deep nesting, escapes, a packed row over its
//! member cap — is read by every reader (the event scan, `check`'s, the streaming surface
//! scan) within 8× its bytes plus a constant, measured by a counting allocator (each
//! allocation counted as the heap chunk it takes: at least 32 bytes, rounded up to 16).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::cast_precision_loss)] // bytes as a ratio for display

use std::io::Cursor;
use std::path::{Path, PathBuf};

use dsh_store::SessionStore;
use dsh_store::reader::{self, Limits, LogFormat};

/// Set in the re-executed child: the store to read and the reader to run.
const CHILD_STORE: &str = "LINE_MEMORY_CHILD_STORE";
const CHILD_READER: &str = "LINE_MEMORY_CHILD_READER";
const READERS: [&str; 3] = ["scan", "check", "listing+surface"];
/// The constant of the bound: what a line of any shape costs at most beyond 8× its bytes.
const CONSTANT: usize = 16 << 20;

/// A `VmRSS`/`VmHWM` figure of this process, in bytes.
fn status_bytes(key: &str) -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with(key)).unwrap();
    let kib: usize = line
        .trim_start_matches(key)
        .trim_start_matches(':')
        .trim()
        .trim_end_matches(" kB")
        .parse()
        .unwrap();
    kib * 1024
}

/// In the child: run `reader` on the store's one session and print how far the peak
/// resident set rose above what was resident before.
fn child(root: &Path, reader: &str) {
    let path = root.join("_no-cwd").join("s").join("session.jsonl");
    let log = if reader == "scan" {
        std::fs::read(&path).unwrap()
    } else {
        Vec::new()
    };
    let before = status_bytes("VmRSS");
    match reader {
        "scan" => {
            let _ = reader::scan(Path::new("log"), Cursor::new(&log), &mut |e, _| {
                drop(e);
                Ok(())
            });
        }
        "check" => {
            let _ = dsh_store::log_check::check_log(&path, LogFormat::Plain, &Limits::default());
        }
        _ => {
            let store = SessionStore::new(root);
            let _ = dsh_store::SessionQuery::list_sessions(&store);
            let _ = dsh_store::SessionQuery::read_summary(&store, "s");
            let _ = dsh_store::SessionQuery::read_surface(&store, "s");
        }
    }
    let peak = status_bytes("VmHWM").saturating_sub(before);
    println!("PEAK {peak}");
}

/// The peak a child running `reader` on the store at `root` reached above its start.
fn peak_of(root: &Path, reader: &str) -> usize {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "one_line_of_any_shape_costs_at_most_eight_times_its_bytes",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_STORE, root)
        .env(CHILD_READER, reader)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.split("PEAK ").nth(1))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| {
            panic!(
                "{reader}: no figure ({}): {text}\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            )
        })
}

const HEADER: &str = r#"{"type":"session","version":0,"id":"s","createdAt":1,"delegationDepth":0}"#;
const TURN: &str =
    r#"{"type":"turn/start","seq":0,"time":1,"data":{"turn":1,"trigger":{"kind":"user"}}}"#;

/// `n` copies of `item` joined by commas.
fn repeat(item: &str, n: usize) -> String {
    let mut out = String::with_capacity((item.len() + 1) * n);
    for i in 0..n {
        if i > 0 {
            out.push(',');
        }
        out.push_str(item);
    }
    out
}

/// How many shapes [`shape`] makes.
const SHAPES: usize = 17;

/// Line `index` of every shape, about `bytes` long, as the event after `turn/start`
/// (seq 1): its name and the line.
fn shape(index: usize, bytes: usize) -> (&'static str, String) {
    let n = |item: &str| bytes / (item.len() + 1);
    let other = |data: String| format!(r#"{{"type":"x/unknown","seq":1,"time":1,"data":{data}}}"#);
    let packed = |m: usize| {
        format!(
            r#"{{"type":"text-chunks","seq0":1,"time0":1,"data":{{"turn":1,"step":0,"index":0,"dt":[{}],"texts":[{}]}}}}"#,
            repeat("0", m.saturating_sub(1)),
            repeat(r#""a""#, m)
        )
    };
    let message = |content: String| {
        format!(
            r#"{{"type":"user/message","seq":1,"time":1,"data":{{"id":"m","role":"user","content":[{content}],"source":{{"kind":"user"}}}},"surfaceOp":"append"}}"#
        )
    };
    let seqs = |n: usize| {
        (0..n)
            .map(|i| (1_000_000 + i).to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    let array = |item: &str| other(format!("[{}]", repeat(item, n(item))));
    match index {
        0 => ("packed row over the member cap", packed(n(r#""a",0"#))),
        1 => (
            "packed row under the member cap",
            packed(n(r#""a",0"#).min(60_000)),
        ),
        2 => ("numbers", array("0")),
        3 => ("empty strings", array(r#""""#)),
        4 => ("one-letter strings", array(r#""a""#)),
        5 => ("empty objects", array("{}")),
        6 => ("empty arrays", array("[]")),
        7 => {
            let keys: Vec<String> = (0..n(r#""k1000000":0"#))
                .map(|i| format!(r#""k{i}":0"#))
                .collect();
            ("keys", other(format!("{{{}}}", keys.join(","))))
        }
        8 => {
            let unit = format!("{}{}", "[".repeat(100), "]".repeat(100));
            ("nesting 100 deep", array(&unit))
        }
        9 => (
            "escapes",
            other(format!(r#""{}""#, "\\u0041".repeat(bytes / 6))),
        ),
        10 => (
            "lone surrogates",
            other(format!(r#""{}""#, "\\ud800".repeat(bytes / 6))),
        ),
        11 => (
            "message of tiny blocks",
            message(repeat(
                r#"{"type":"text","text":"a"}"#,
                n(r#"{"type":"text","text":"a"}"#),
            )),
        ),
        12 => {
            let call = r#"{"type":"tool-call","id":"t","name":"n","args":{}}"#;
            ("message of tool calls", message(repeat(call, n(call))))
        }
        13 => (
            "compaction seqs",
            format!(
                r#"{{"type":"compaction/summary","seq":1,"time":1,"data":{{"compactionId":"c","shadowedSeqs":[{}]}}}}"#,
                seqs(bytes / 8)
            ),
        ),
        14 => (
            "checkpoint source seqs",
            format!(
                r#"{{"type":"user/message","seq":1,"time":1,"data":{{"id":"m","role":"user","content":[{{"type":"text","text":"summary"}}],"source":{{"kind":"plugin","plugin":"compact"}}}},"surfaceOp":{{"op":"replace","start":0,"end":0}},"sourceEventSeqs":[{}]}}"#,
                seqs(bytes / 8)
            ),
        ),
        15 => (
            "source seqs of zeros",
            format!(
                r#"{{"type":"x/unknown","seq":1,"time":1,"data":{{}},"sourceEventSeqs":[{}]}}"#,
                repeat("0", n("0"))
            ),
        ),
        _ => (
            "top-level extra",
            format!(
                r#"{{"type":"x/unknown","seq":1,"time":1,"data":{{}},"extra":[{}]}}"#,
                repeat("0", n("0"))
            ),
        ),
    }
}

fn log_of(line: &str) -> String {
    format!("{HEADER}\n{TURN}\n{line}\n")
}

/// Every reader of one line, measured on `bytes`-long lines of every shape.
fn measure(bytes: usize) -> Vec<(&'static str, &'static str, usize, usize)> {
    let dir = tempfile::tempdir().unwrap();
    let root: PathBuf = dir.path().to_owned();
    let mut out = Vec::new();
    for index in 0..SHAPES {
        let (shape, line) = shape(index, bytes);
        let path = root.join("_no-cwd").join("s").join("session.jsonl");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, log_of(&line)).unwrap();
        for reader in READERS {
            out.push((shape, reader, line.len(), peak_of(&root, reader)));
        }
    }
    out
}

/// Every reader on each shape at the largest size still decoded (the line just within its
/// decoding budget, `dsh_store::line_cost`): the costliest lines that are decoded at all.
fn measure_just_within_budget() -> Vec<(&'static str, &'static str, usize, usize)> {
    let dir = tempfile::tempdir().unwrap();
    let root: PathBuf = dir.path().to_owned();
    let mut out = Vec::new();
    for index in 0..SHAPES {
        let shape_at = |bytes: usize| shape(index, bytes);
        // The largest size (to within 1/32) whose line fits.
        let (mut fits, mut over) = (1usize << 10, 4usize << 20);
        if dsh_store::line_cost::fits(shape_at(over).1.as_bytes()) {
            continue;
        }
        while over - fits > fits / 32 {
            let mid = fits + (over - fits) / 2;
            if dsh_store::line_cost::fits(shape_at(mid).1.as_bytes()) {
                fits = mid;
            } else {
                over = mid;
            }
        }
        let (shape, line) = shape_at(fits);
        let path = root.join("_no-cwd").join("s").join("session.jsonl");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, log_of(&line)).unwrap();
        for reader in READERS {
            let peak = peak_of(&root, reader);
            out.push((shape, reader, line.len(), peak));
        }
    }
    out
}

#[test]
fn one_line_of_any_shape_costs_at_most_eight_times_its_bytes() {
    if let (Some(root), Ok(reader)) = (std::env::var_os(CHILD_STORE), std::env::var(CHILD_READER)) {
        child(Path::new(&root), &reader);
        return;
    }
    let mut over = Vec::new();
    let mut measured = measure(2 << 20);
    measured.extend(measure_just_within_budget());
    for (shape, reader, len, peak) in measured {
        eprintln!(
            "{shape:32} {reader:16} {len:>9} B line: peak {peak:>11} B = {:.1}×",
            peak as f64 / len as f64
        );
        if peak > 8 * len + CONSTANT {
            over.push(format!("{shape} ({reader}): {peak} B for a {len} B line"));
        }
    }
    assert!(over.is_empty(), "over 8× + 16 MiB:\n{}", over.join("\n"));
}
