//! Peak memory of the real binary on hostile logs (issue 14, docs/reliability.md).
//!
//! `hostile_rss gen DIR [MESSAGES]` writes one store per threat below DIR: a small zstd bomb
//! (one 2 GiB line without a newline), a zstd log with a 5 000 000-member packed row, a plain
//! log with a 20 000-member packed row, a plain log with one 256 MiB line, a session of
//! MESSAGES tiny user messages (default 500 000), and one of MESSAGES tiny non-surface events.
//! Names after MESSAGES generate only those stores.
//! `hostile_rss run DIR BIN` runs `sessions`, `candidates`, `prepare` (and `send` on the big
//! sessions) of the release binary BIN on each store found under `/usr/bin/time` and prints
//! every child's exit status, peak RSS (the kernel's maximum resident set size), wall and CPU
//! (user + system) seconds and a short stderr.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a measuring tool: a failure should stop it
#![allow(clippy::cast_precision_loss)] // KiB to MiB for display

use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;

fn header(id: &str) -> String {
    json!({"type": "session", "version": 0, "id": id, "createdAt": 1, "delegationDepth": 0})
        .to_string()
        + "\n"
}

fn turn_start(seq: u64) -> String {
    json!({"type": "turn/start", "seq": seq, "time": 1, "data": {"turn": 1, "trigger": {"kind": "user"}}}).to_string() + "\n"
}

fn session_dir(store: &Path, id: &str) -> PathBuf {
    let dir = store.join("_no-cwd").join(id);
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// A victim session the `prepare` runs mention (alongside the hostile one).
fn write_plain_victim(store: &Path) {
    let dir = session_dir(store, "plain");
    let msg = json!({"type": "user/message", "seq": 1, "time": 1, "data": {"id": "u", "role": "user", "content": [{"type": "text", "text": "hello"}], "source": {"kind": "user"}}, "surfaceOp": "append"});
    fs::write(
        dir.join("session.jsonl"),
        format!("{}{}{msg}\n", header("plain"), turn_start(0)),
    )
    .unwrap();
}

fn zstd_writer(path: &Path) -> zstd::stream::write::Encoder<'static, BufWriter<fs::File>> {
    zstd::stream::write::Encoder::new(BufWriter::new(fs::File::create(path).unwrap()), 3).unwrap()
}

fn gen_bomb(store: &Path) {
    let dir = session_dir(store, "hostile");
    let mut enc = zstd_writer(&dir.join("session.jsonl.zstd"));
    enc.write_all(header("hostile").as_bytes()).unwrap();
    enc.write_all(turn_start(0).as_bytes()).unwrap();
    let block = vec![b'z'; 1 << 20];
    for _ in 0..2048 {
        enc.write_all(&block).unwrap();
    }
    enc.finish().unwrap().flush().unwrap();
}

fn packed_row(seq0: u64, members: usize) -> Vec<u8> {
    let mut row = format!(
        r#"{{"type":"text-chunks","seq0":{seq0},"time0":1,"data":{{"turn":1,"step":0,"index":0,"dt":["#
    )
    .into_bytes();
    for i in 0..members.saturating_sub(1) {
        row.extend_from_slice(if i == 0 { b"0" } else { b",0" });
    }
    row.extend_from_slice(br#"],"texts":["#);
    for i in 0..members {
        row.extend_from_slice(if i == 0 { br#""a""# } else { br#","a""# });
    }
    row.extend_from_slice(b"]}}\n");
    row
}

fn gen_packed_zstd(store: &Path, members: usize) {
    let dir = session_dir(store, "hostile");
    let mut enc = zstd_writer(&dir.join("session.jsonl.zstd"));
    enc.write_all(header("hostile").as_bytes()).unwrap();
    enc.write_all(turn_start(0).as_bytes()).unwrap();
    enc.write_all(&packed_row(1, members)).unwrap();
    enc.finish().unwrap().flush().unwrap();
}

fn gen_packed_plain(store: &Path, members: usize) {
    let dir = session_dir(store, "hostile");
    let mut text = format!("{}{}", header("hostile"), turn_start(0)).into_bytes();
    text.extend_from_slice(&packed_row(1, members));
    fs::write(dir.join("session.jsonl"), text).unwrap();
}

fn gen_long_line(store: &Path, bytes: usize) {
    let dir = session_dir(store, "hostile");
    let mut out = BufWriter::new(fs::File::create(dir.join("session.jsonl")).unwrap());
    out.write_all(header("hostile").as_bytes()).unwrap();
    out.write_all(turn_start(0).as_bytes()).unwrap();
    let block = vec![b'x'; 1 << 20];
    for _ in 0..bytes >> 20 {
        out.write_all(&block).unwrap();
    }
    out.write_all(b"\n").unwrap();
    out.flush().unwrap();
}

fn gen_many(store: &Path, messages: u64) {
    let dir = session_dir(store, "hostile");
    let mut out = BufWriter::new(fs::File::create(dir.join("session.jsonl")).unwrap());
    out.write_all(header("hostile").as_bytes()).unwrap();
    out.write_all(turn_start(0).as_bytes()).unwrap();
    for seq in 1..=messages {
        writeln!(
            out,
            r#"{{"type":"user/message","seq":{seq},"time":1,"data":{{"id":"u{seq}","role":"user","content":[{{"type":"text","text":"m{seq}"}}],"source":{{"kind":"user"}}}},"surfaceOp":"append"}}"#
        )
        .unwrap();
    }
    writeln!(
        out,
        r#"{{"type":"turn/end","seq":{},"time":1,"data":{{"turn":1,"reason":{{"kind":"completed"}}}}}}"#,
        messages + 1
    )
    .unwrap();
    out.flush().unwrap();
}

fn gen_noise(store: &Path, events: u64) {
    let dir = session_dir(store, "hostile");
    let mut out = BufWriter::new(fs::File::create(dir.join("session.jsonl")).unwrap());
    out.write_all(header("hostile").as_bytes()).unwrap();
    out.write_all(turn_start(0).as_bytes()).unwrap();
    for seq in 1..=events {
        writeln!(
            out,
            r#"{{"type":"x/noise","seq":{seq},"time":1,"data":{{"n":{seq}}}}}"#
        )
        .unwrap();
    }
    writeln!(
        out,
        r#"{{"type":"turn/end","seq":{},"time":1,"data":{{"turn":1,"reason":{{"kind":"completed"}}}}}}"#,
        events + 1
    )
    .unwrap();
    out.flush().unwrap();
}

const STORES: [&str; 6] = [
    "bomb",
    "packed-5m",
    "packed-20k",
    "line-256m",
    "many",
    "noise",
];

fn generate(dir: &Path, messages: u64, only: &[String]) {
    for name in STORES {
        if !only.is_empty() && !only.iter().any(|o| o == name) {
            continue;
        }
        let store = dir.join(name);
        let _ = fs::remove_dir_all(&store);
        write_plain_victim(&store);
        match name {
            "bomb" => gen_bomb(&store),
            "packed-5m" => gen_packed_zstd(&store, 5_000_000),
            "packed-20k" => gen_packed_plain(&store, 20_000),
            "line-256m" => gen_long_line(&store, 256 << 20),
            "noise" => gen_noise(&store, messages),
            _ => gen_many(&store, messages),
        }
        let bytes: u64 = walk(&store)
            .iter()
            .map(|p| fs::metadata(p).unwrap().len())
            .sum();
        println!("{name}: {bytes} bytes on disk");
    }
    fs::write(dir.join("config.toml"), "[model]\nprovider = \"offline\"\n").unwrap();
    fs::write(
        dir.join("config-1mib.toml"),
        "[model]\nprovider = \"offline\"\n[store]\nmax_line_bytes = 1048576\n",
    )
    .unwrap();
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// What `/usr/bin/time` reported of one child.
struct Measured {
    code: Option<i32>,
    rss_kib: u64,
    wall: f64,
    cpu: f64,
    first_err: String,
}

/// Run `bin args` under `/usr/bin/time`.
fn measure(bin: &Path, dir: &Path, args: &[&str]) -> Measured {
    let rss_file = dir.join("rss.txt");
    let out = Command::new("/usr/bin/time")
        .arg("-o")
        .arg(&rss_file)
        .args(["-f", "%M %e %U %S"])
        .arg(bin)
        .args(args)
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .output()
        .unwrap();
    let report = fs::read_to_string(&rss_file).unwrap_or_default();
    let fields: Vec<f64> = report
        .lines()
        .last()
        .unwrap_or("")
        .split_whitespace()
        .filter_map(|f| f.parse().ok())
        .collect();
    let field = |i: usize| fields.get(i).copied().unwrap_or(0.0);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let first: String = stderr
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(110)
        .collect();
    Measured {
        code: out.status.code(),
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // KiB from `time`
        rss_kib: field(0) as u64,
        wall: field(1),
        cpu: field(2) + field(3),
        first_err: first,
    }
}

fn run(dir: &Path, bin: &Path) {
    let mention = dsh_reference::format_mention("hostile", None);
    let prepare_text = format!("look at {mention}");
    println!("| store | command | exit | peak RSS (MiB) | wall s | CPU s | first stderr line |");
    println!("|---|---|---|---|---|---|---|");
    for name in STORES {
        let store = dir.join(name);
        if !store.exists() {
            continue;
        }
        let store_s = store.to_str().unwrap();
        let mut runs: Vec<(&str, Vec<String>)> = vec![
            ("sessions", vec!["sessions".into()]),
            (
                "candidates",
                vec!["candidates".into(), "--session".into(), "me".into()],
            ),
            (
                "prepare",
                vec![
                    "prepare".into(),
                    "--session".into(),
                    "me".into(),
                    prepare_text.clone(),
                ],
            ),
        ];
        if name == "line-256m" {
            runs.push((
                "sessions (max_line_bytes 1 MiB)",
                vec![
                    "--config".into(),
                    dir.join("config-1mib.toml").to_str().unwrap().into(),
                    "sessions".into(),
                ],
            ));
            runs.push((
                "prepare (max_line_bytes 1 MiB)",
                vec![
                    "--config".into(),
                    dir.join("config-1mib.toml").to_str().unwrap().into(),
                    "prepare".into(),
                    "--session".into(),
                    "me".into(),
                    prepare_text.clone(),
                ],
            ));
        }
        if name == "many" || name == "noise" {
            runs.push((
                "send",
                vec![
                    "--config".into(),
                    dir.join("config.toml").to_str().unwrap().into(),
                    "send".into(),
                    "--session".into(),
                    "hostile".into(),
                    "one more".into(),
                ],
            ));
        }
        for (label, args) in runs {
            let mut all = vec!["--store", store_s];
            all.extend(args.iter().map(String::as_str));
            let m = measure(bin, dir, &all);
            let code = m
                .code
                .map_or_else(|| "signal".to_owned(), |c| c.to_string());
            println!(
                "| {name} | {label} | {code} | {:.1} | {:.1} | {:.1} | {} |",
                m.rss_kib as f64 / 1024.0,
                m.wall,
                m.cpu,
                m.first_err.replace('|', "\\|")
            );
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match (args.get(1).map(String::as_str), args.get(2)) {
        (Some("gen"), Some(dir)) => {
            let messages = args.get(3).map_or(500_000, |n| n.parse().unwrap());
            generate(Path::new(dir), messages, args.get(4..).unwrap_or_default());
        }
        (Some("run"), Some(dir)) => {
            let bin = args.get(3).expect("BIN: the release dsh-refs binary");
            run(Path::new(dir), Path::new(bin));
        }
        _ => {
            eprintln!("usage: hostile_rss gen DIR [MESSAGES [STORE...]] | hostile_rss run DIR BIN");
            std::process::exit(2);
        }
    }
}
