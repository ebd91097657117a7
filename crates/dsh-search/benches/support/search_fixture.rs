//! A synthetic store for the search benchmarks: many sessions of conversation made of a
//! Zipf-like vocabulary (so postings look like real text), some CJK, tool output that is not
//! indexed, and known marker words to query.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, dead_code)] // fixture code: a failure should stop it
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_precision_loss,
    clippy::cast_possible_wrap,
    clippy::needless_pass_by_value
)] // measurement code: sizes and ranks are small

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use serde_json::json;

/// Distinct words in the vocabulary.
const VOCABULARY: usize = 40_000;
const SYLLABLES: [&str; 24] = [
    "ka", "fu", "re", "dis", "mo", "lan", "te", "ri", "so", "ven", "pa", "gor", "li", "nu", "xe",
    "bra", "to", "shi", "el", "qua", "mir", "do", "zen", "ult",
];
const CJK: [&str; 8] = [
    "结账",
    "页面",
    "简体",
    "中文",
    "本地化",
    "测试",
    "部署",
    "缓存",
];

/// The vocabulary, most frequent first.
pub fn vocabulary() -> Vec<String> {
    (0..VOCABULARY)
        .map(|mut i| {
            let mut w = String::new();
            loop {
                w.push_str(SYLLABLES[i % SYLLABLES.len()]);
                i /= SYLLABLES.len();
                if i == 0 {
                    break;
                }
            }
            w
        })
        .collect()
}

/// About `len` bytes of text: words drawn log-uniformly by rank (frequent words often).
pub fn text(rng: &mut fastrand::Rng, vocab: &[String], len: usize) -> String {
    let mut out = String::with_capacity(len + 32);
    while out.len() < len {
        if rng.u16(..400) == 0 {
            out.push_str(CJK[rng.usize(..CJK.len())]);
        } else {
            let rank = (vocab.len() as f64).powf(rng.f64()) as usize;
            out.push_str(&vocab[rank.saturating_sub(1).min(vocab.len() - 1)]);
        }
        out.push(if rng.u8(..25) == 0 { '\n' } else { ' ' });
    }
    out
}

/// Write `count` sessions of `messages` messages of about `msg_len` bytes each under
/// `root`; returns the bytes of projected text written.
pub fn write_store(root: &Path, count: usize, messages: usize, msg_len: usize) -> u64 {
    let vocab = vocabulary();
    let mut rng = fastrand::Rng::with_seed(7);
    let mut text_bytes = 0u64;
    for i in 0..count {
        let id = format!("sess-{i:05}");
        let cwd = format!("/work/project{}", i % 40);
        let created = 1_700_000_000_000i64 + i as i64 * 60_000;
        let mut log = Log::create(root, &id, &cwd, created);
        for m in 0..messages {
            let body = text(&mut rng, &vocab, msg_len);
            text_bytes += body.len() as u64;
            if m % 2 == 0 {
                log.user(&body);
            } else {
                log.tool(&text(&mut rng, &vocab, msg_len / 2));
                log.assistant(&body);
            }
        }
        log.title(&format!("Fix the build {}", i % 50));
    }
    text_bytes
}

/// A fixture log being written.
pub struct Log {
    pub path: PathBuf,
    out: BufWriter<File>,
    seq: u64,
    time: i64,
}

impl Log {
    pub fn create(root: &Path, id: &str, cwd: &str, created_at: i64) -> Log {
        let dir = dsh_store::paths::session_dir(root, Some(cwd), id).unwrap();
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("session.jsonl");
        let mut out = BufWriter::with_capacity(1 << 18, File::create(&path).unwrap());
        let header = json!({"type": "session", "version": 0, "id": id, "createdAt": created_at, "cwd": cwd, "delegationDepth": 0});
        writeln!(out, "{header}").unwrap();
        Log {
            path,
            out,
            seq: 0,
            time: created_at,
        }
    }

    /// Continue an existing fixture log (append mode), whose next seq is `seq`.
    pub fn reopen(path: &Path, seq: u64) -> Log {
        let file = fs::OpenOptions::new().append(true).open(path).unwrap();
        Log {
            path: path.to_owned(),
            out: BufWriter::new(file),
            seq,
            time: 1_800_000_000_000,
        }
    }

    fn line(&mut self, kind: &str, data: serde_json::Value, append: bool) {
        self.time += 1000;
        let mut line = json!({"type": kind, "seq": self.seq, "time": self.time, "data": data});
        if append {
            line["surfaceOp"] = json!("append");
        }
        writeln!(self.out, "{line}").unwrap();
        self.seq += 1;
    }

    pub fn user(&mut self, text: &str) {
        let data = json!({"id": format!("u{}", self.seq), "role": "user", "content": [{"type": "text", "text": text}], "source": {"kind": "user"}});
        self.line("user/message", data, true);
    }

    pub fn assistant(&mut self, text: &str) {
        let message = json!({"id": format!("a{}", self.seq), "role": "assistant", "content": [{"type": "text", "text": text}]});
        self.line(
            "assistant/message",
            json!({"turn": 1, "step": 0, "message": message}),
            true,
        );
    }

    pub fn tool(&mut self, text: &str) {
        let message = json!({"id": format!("t{}", self.seq), "role": "tool", "content": [{"type": "text", "text": text}], "source": {"kind": "tool", "callId": "c"}});
        self.line(
            "tool/result",
            json!({"turn": 1, "step": 0, "message": message}),
            true,
        );
    }

    pub fn title(&mut self, title: &str) {
        self.line(
            "session/title",
            json!({"title": title, "messageSeqs": [], "source": {"kind": "user"}}),
            false,
        );
    }

    pub fn seq(&self) -> u64 {
        self.seq
    }
}

impl Drop for Log {
    fn drop(&mut self) {
        let _ = self.out.flush();
    }
}
