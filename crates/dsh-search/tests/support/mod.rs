//! Session logs written line by line for the search tests.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::needless_pass_by_value,
    clippy::items_after_statements,
    clippy::cast_possible_wrap
)] // test helpers

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// A log being written: tracks the next seq.
pub struct Log {
    pub path: PathBuf,
    pub seq: u64,
}

pub fn msg(seq: u64, role: &str, source: Value, text: &str) -> Value {
    json!({"id": format!("m{seq}"), "role": role, "content": [{"type": "text", "text": text}], "source": source})
}

impl Log {
    /// A new session `id` with `cwd` under `root` (header only).
    pub fn create(root: &Path, id: &str, cwd: &str, created_at: i64) -> Log {
        let dir = dsh_store::paths::session_dir(root, Some(cwd), id).unwrap();
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("session.jsonl");
        let header = json!({"type": "session", "version": 0, "id": id, "createdAt": created_at, "cwd": cwd, "delegationDepth": 0});
        fs::write(&path, format!("{header}\n")).unwrap();
        Log { path, seq: 0 }
    }

    fn push(&mut self, kind: &str, data: Value, op: Option<Value>) -> u64 {
        let seq = self.seq;
        let mut line = json!({"type": kind, "seq": seq, "time": 1_700_000_000_000i64 + seq as i64, "data": data});
        if let Some(op) = op {
            line["surfaceOp"] = op;
        }
        // Append in place (same file), as a writer would.
        use std::io::Write;
        let mut f = fs::OpenOptions::new()
            .append(true)
            .open(&self.path)
            .unwrap();
        f.write_all(format!("{line}\n").as_bytes()).unwrap();
        self.seq += 1;
        seq
    }

    pub fn user(&mut self, text: &str) -> u64 {
        let seq = self.seq;
        self.push(
            "user/message",
            msg(seq, "user", json!({"kind": "user"}), text),
            Some(json!("append")),
        )
    }

    pub fn plugin(&mut self, text: &str) -> u64 {
        let seq = self.seq;
        self.push(
            "user/message",
            msg(
                seq,
                "user",
                json!({"kind": "plugin", "plugin": "goal"}),
                text,
            ),
            Some(json!("append")),
        )
    }

    pub fn reference_context(&mut self, text: &str) -> u64 {
        let seq = self.seq;
        self.push(
            "user/message",
            msg(
                seq,
                "user",
                json!({"kind": "session-reference", "version": 1, "references": []}),
                text,
            ),
            Some(json!("append")),
        )
    }

    pub fn steering(&mut self, text: &str) -> u64 {
        let seq = self.seq;
        self.push(
            "steering/message",
            json!({"turn": 1, "message": msg(seq, "user", json!({"kind": "user"}), text)}),
            Some(json!("append")),
        )
    }

    pub fn assistant(&mut self, text: &str, reasoning: &str) -> u64 {
        let seq = self.seq;
        let message = json!({"id": format!("m{seq}"), "role": "assistant", "content": [{"type": "reasoning", "text": reasoning}, {"type": "text", "text": text}]});
        self.push(
            "assistant/message",
            json!({"turn": 1, "step": 0, "message": message}),
            Some(json!("append")),
        )
    }

    pub fn tool_result(&mut self, text: &str) -> u64 {
        let seq = self.seq;
        self.push("tool/result", json!({"turn": 1, "step": 0, "message": msg(seq, "tool", json!({"kind": "tool", "callId": "c"}), text)}), Some(json!("append")))
    }

    /// A compact checkpoint replacing the surface span `start..=end`.
    pub fn compact(&mut self, start: u64, end: u64, summary: &str) -> u64 {
        let seq = self.seq;
        self.push(
            "user/message",
            msg(
                seq,
                "user",
                json!({"kind": "plugin", "plugin": "compact"}),
                summary,
            ),
            Some(json!({"op": "replace", "start": start, "end": end})),
        )
    }

    pub fn title(&mut self, title: &str) -> u64 {
        self.push(
            "session/title",
            json!({"title": title, "messageSeqs": [], "source": {"kind": "user"}}),
            None,
        )
    }
}
