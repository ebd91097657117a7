//! Synthetic session stores for the benchmarks and the memory probe: one very long session
//! and many small ones, written as dsh-compatible JSONL directly (fast, deterministic).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a failure should stop the test
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    clippy::needless_pass_by_value,
    clippy::similar_names
)] // test code: small known values, helpers that take values for brevity
#![allow(dead_code)]

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use dsh_store::paths;
use serde_json::json;

/// Words the generated text is made of (some need JSON or tag-safe escaping).
const WORDS: [&str; 16] = [
    "the",
    "agent",
    "reads",
    "session",
    "logs",
    "and",
    "\"quotes\"",
    "<tags>",
    "über",
    "naïve",
    "refactor",
    "tests",
    "pass",
    "\\path",
    "cargo",
    "漢字",
];

/// Deterministic text of about `len` bytes, with a newline now and then.
pub fn text(rng: &mut fastrand::Rng, len: usize) -> String {
    let mut out = String::with_capacity(len + 16);
    while out.len() < len {
        let w = WORDS[rng.usize(..WORDS.len())];
        out.push_str(w);
        out.push(if rng.u8(..20) == 0 { '\n' } else { ' ' });
    }
    out
}

fn session_dir(root: &Path, cwd: Option<&str>, id: &str) -> PathBuf {
    paths::session_dir(root, cwd, id).expect("valid fixture id")
}

/// Appends events as JSONL lines, numbering seqs.
struct LogWriter {
    out: BufWriter<File>,
    seq: u64,
}

impl LogWriter {
    fn create(root: &Path, id: &str, cwd: Option<&str>, created_at: i64) -> Self {
        let dir = session_dir(root, cwd, id);
        fs::create_dir_all(&dir).expect("create session dir");
        let file = File::create(dir.join("session.jsonl")).expect("create log");
        let mut out = BufWriter::with_capacity(1 << 20, file);
        let mut header =
            json!({"type": "session", "version": 0, "id": id, "createdAt": created_at});
        if let Some(cwd) = cwd {
            header["cwd"] = json!(cwd);
        }
        header["delegationDepth"] = json!(0);
        writeln!(out, "{header}").expect("write header");
        LogWriter { out, seq: 0 }
    }

    /// Write one event; returns its seq.
    fn event(&mut self, kind: &str, data: serde_json::Value, op: Option<serde_json::Value>) -> u64 {
        let seq = self.seq;
        let mut line = json!({"type": kind, "seq": seq, "time": 1_700_000_000_000_i64 + seq as i64, "data": data});
        if let Some(op) = op {
            line["surfaceOp"] = op;
        }
        writeln!(self.out, "{line}").expect("write event");
        self.seq += 1;
        seq
    }

    fn finish(mut self) {
        self.out.flush().expect("flush log");
    }
}

fn message(id: u64, role: &str, text: &str, source: serde_json::Value) -> serde_json::Value {
    json!({"id": format!("m-{id}"), "role": role, "content": [{"type": "text", "text": text}], "source": source})
}

/// One turn: a user message and an assistant reply of about `len` bytes each.
fn turn(log: &mut LogWriter, rng: &mut fastrand::Rng, turn: u64, len: usize) -> (u64, u64) {
    log.event(
        "turn/start",
        json!({"turn": turn, "trigger": {"kind": "user"}}),
        None,
    );
    let user = log.event(
        "user/message",
        message(log.seq, "user", &text(rng, len), json!({"kind": "user"})),
        Some(json!("append")),
    );
    log.event("step/start", json!({"turn": turn, "step": 0}), None);
    let reply = log.event(
        "assistant/message",
        json!({"turn": turn, "step": 0, "message": message(log.seq, "assistant", &text(rng, len), json!({"kind": "model", "provider": "offline", "model": "echo"}))}),
        Some(json!("append")),
    );
    log.event("step/end", json!({"turn": turn, "step": 0}), None);
    log.event(
        "turn/end",
        json!({"turn": turn, "reason": {"kind": "completed"}}),
        None,
    );
    (user, reply)
}

/// A session of `messages` messages (~`len` bytes of text each, half user, half assistant),
/// compacted once at the half-way point: the first half is replaced by a checkpoint.
/// Returns the log path.
pub fn write_long_session(root: &Path, id: &str, messages: u64, len: usize) -> PathBuf {
    let mut rng = fastrand::Rng::with_seed(7);
    let cwd = Some("/work/big");
    let mut log = LogWriter::create(root, id, cwd, 1_700_000_000_000);
    let turns = messages / 2;
    let mut first = None;
    for t in 0..turns {
        let (user, last) = turn(&mut log, &mut rng, t + 1, len);
        first.get_or_insert(user);
        if t + 1 == turns / 2 {
            log.event("compact/start", json!({"reason": "threshold"}), None);
            log.event(
                "user/message",
                message(
                    log.seq,
                    "user",
                    &text(&mut rng, 4 * len),
                    json!({"kind": "plugin", "plugin": "compact"}),
                ),
                Some(json!({"op": "replace", "start": first.unwrap_or(0), "end": last})),
            );
            log.event("compact/end", json!({}), None);
        }
    }
    log.event(
        "session/title",
        json!({"title": "Long benchmark session", "messageSeqs": [0], "source": {"kind": "manual"}}),
        None,
    );
    let path = session_dir(root, cwd, id).join("session.jsonl");
    log.finish();
    path
}

/// `count` small sessions over 20 project directories (one in 20 without cwd), each with a
/// titled turn. Titles are `topic N` so a query can match a title only.
pub fn write_many_sessions(root: &Path, count: u64) {
    let mut rng = fastrand::Rng::with_seed(11);
    for i in 0..count {
        let id = format!("sess-{i:05}");
        let cwd = (i % 20 != 0).then(|| format!("/home/dev/project-{}", i % 20));
        let mut log = LogWriter::create(root, &id, cwd.as_deref(), 1_700_000_000_000 + i as i64);
        turn(&mut log, &mut rng, 1, 300);
        log.event(
            "session/title",
            json!({"title": format!("topic {i} {}", WORDS[(i % 16) as usize]), "messageSeqs": [1], "source": {"kind": "fallback"}}),
            None,
        );
        turn(&mut log, &mut rng, 2, 300);
        log.finish();
    }
}
