//! Fixture generator for the foreign-source measurements (docs/performance.md).
//!
//! `foreign_big many DIR [COUNT]` writes COUNT Claude Code sessions (`DIR/claude/projects`, 50
//! project dirs) and COUNT Codex rollouts (`DIR/codex/sessions/YYYY/MM/DD`), default 5 000
//! each, plus `DIR/config.toml` pointing at them.
//! `foreign_big big DIR [MB [TEXT]]` writes one Claude Code log, one Codex rollout and one dsh
//! log of about MB megabytes each (default 100) with the same messages of TEXT bytes (default
//! 600), plus `DIR/config.toml`.
//! Then time `dsh-refs --store DIR/store --config DIR/config.toml …` (commands printed).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a failure should stop the test

#[path = "../benches/support/fixtures.rs"]
mod fixtures;

use std::fs;
use std::io::{BufWriter, Write};
use std::path::Path;

use serde_json::json;

fn uuid(n: usize) -> String {
    format!("5f1c2d3e-0000-4000-8000-{n:012}")
}

fn iso(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .unwrap()
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

/// A Claude Code log of `turns` exchanges (user, thinking, text, tool call, tool result,
/// text), with a summary record first.
fn write_claude(path: &Path, sid: &str, cwd: &str, start_ms: i64, turns: usize, text_bytes: usize) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut out = BufWriter::new(fs::File::create(path).unwrap());
    let filler = "lorem ipsum dolor ".repeat(text_bytes / 18 + 1);
    let filler = &filler[..text_bytes];
    writeln!(out, "{}", json!({"type": "summary", "summary": format!("topic {} summary", start_ms % 1000), "leafUuid": "x"})).unwrap();
    let mut parent: Option<String> = None;
    let mut n = 0usize;
    let mut rec = |out: &mut BufWriter<fs::File>,
                   kind: &str,
                   content: serde_json::Value,
                   parent: &mut Option<String>| {
        n += 1;
        let uuid = format!("{sid}-{n}");
        let line = json!({
            "parentUuid": parent, "isSidechain": false, "userType": "external", "cwd": cwd,
            "sessionId": sid, "version": "1.0.0", "type": kind,
            "message": {"role": kind, "content": content}, "uuid": uuid,
            "timestamp": iso(start_ms + i64::try_from(n).unwrap() * 1000),
        });
        writeln!(out, "{line}").unwrap();
        *parent = Some(uuid);
    };
    for t in 0..turns {
        rec(
            &mut out,
            "user",
            json!(format!("question {t}: {filler}")),
            &mut parent,
        );
        rec(
            &mut out,
            "assistant",
            json!([{"type": "thinking", "thinking": filler, "signature": "s"}]),
            &mut parent,
        );
        rec(
            &mut out,
            "assistant",
            json!([{"type": "text", "text": format!("answer {t}: {filler}")}]),
            &mut parent,
        );
        rec(
            &mut out,
            "assistant",
            json!([{"type": "tool_use", "id": format!("toolu_{t}"), "name": "Read", "input": {"file_path": "/x"}}]),
            &mut parent,
        );
        rec(
            &mut out,
            "user",
            json!([{"type": "tool_result", "tool_use_id": format!("toolu_{t}"), "content": filler}]),
            &mut parent,
        );
        rec(
            &mut out,
            "assistant",
            json!([{"type": "text", "text": format!("done {t}: {filler}")}]),
            &mut parent,
        );
    }
    out.flush().unwrap();
}

/// A Codex rollout of `turns` exchanges (user, reasoning, call, output, reply).
fn write_codex(path: &Path, id: &str, cwd: &str, start_ms: i64, turns: usize, text_bytes: usize) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut out = BufWriter::new(fs::File::create(path).unwrap());
    let filler = "lorem ipsum dolor ".repeat(text_bytes / 18 + 1);
    let filler = &filler[..text_bytes];
    let line = |out: &mut BufWriter<fs::File>, n: usize, kind: &str, payload: serde_json::Value| {
        writeln!(
            out,
            "{}",
            json!({"timestamp": iso(start_ms + i64::try_from(n).unwrap() * 1000), "type": kind, "payload": payload})
        )
        .unwrap();
    };
    line(
        &mut out,
        0,
        "session_meta",
        json!({"id": id, "timestamp": iso(start_ms), "cwd": cwd, "cli_version": "0.50.0", "source": "cli"}),
    );
    line(
        &mut out,
        0,
        "response_item",
        json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context>\n<cwd>/x</cwd>\n</environment_context>"}]}),
    );
    for t in 0..turns {
        let m = |s: &str| json!([{"type": if s == "user" { "input_text" } else { "output_text" }, "text": format!("{s} {t}: {filler}")}]);
        line(
            &mut out,
            t,
            "response_item",
            json!({"type": "message", "role": "user", "content": m("user")}),
        );
        line(
            &mut out,
            t,
            "response_item",
            json!({"type": "reasoning", "summary": [{"type": "summary_text", "text": filler}]}),
        );
        line(
            &mut out,
            t,
            "response_item",
            json!({"type": "function_call", "name": "shell", "arguments": "{}", "call_id": format!("c{t}")}),
        );
        line(
            &mut out,
            t,
            "response_item",
            json!({"type": "function_call_output", "call_id": format!("c{t}"), "output": filler}),
        );
        line(
            &mut out,
            t,
            "response_item",
            json!({"type": "message", "role": "assistant", "content": m("assistant")}),
        );
    }
    out.flush().unwrap();
}

fn write_config(dir: &Path) {
    fs::write(
        dir.join("config.toml"),
        format!(
            "[sources]\nclaude_code = {:?}\ncodex = {:?}\n",
            dir.join("claude").display().to_string(),
            dir.join("codex").display().to_string()
        ),
    )
    .unwrap();
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(mode), Some(dir)) = (args.get(1), args.get(2)) else {
        return Err("usage: foreign_big many DIR [COUNT] | big DIR [MB [TEXT]]".into());
    };
    let dir = Path::new(dir);
    let base_ms = 1_750_000_000_000i64;
    match mode.as_str() {
        "many" => {
            let count: usize = args.get(3).map(|c| c.parse()).transpose()?.unwrap_or(5000);
            for i in 0..count {
                let cwd = format!("/home/dev/project-{}", i % 50);
                let project = format!("-home-dev-project-{}", i % 50);
                let sid = uuid(i);
                write_claude(
                    &dir.join("claude/projects")
                        .join(project)
                        .join(format!("{sid}.jsonl")),
                    &sid,
                    &cwd,
                    base_ms + i64::try_from(i).unwrap() * 60_000,
                    3,
                    200,
                );
                let day = i % 28 + 1;
                let id = format!("0199a1b2-c3d4-7e5f-8a9b-{i:012}");
                let path = dir.join(format!("codex/sessions/2025/{:02}/{day:02}/rollout-2025-01-{day:02}T00-00-00-{id}.jsonl", i % 12 + 1));
                write_codex(
                    &path,
                    &id,
                    &cwd,
                    base_ms + i64::try_from(i).unwrap() * 60_000 + 30_000,
                    3,
                    200,
                );
            }
            fs::create_dir_all(dir.join("store"))?;
            write_config(dir);
            println!(
                "wrote {count} Claude Code sessions and {count} Codex rollouts under {}",
                dir.display()
            );
        }
        "big" => {
            let mb: usize = args.get(3).map(|c| c.parse()).transpose()?.unwrap_or(100);
            // Bytes of text per record: smaller means more records per megabyte (the Claude
            // Code link index grows with the record count).
            let text: usize = args.get(4).map(|c| c.parse()).transpose()?.unwrap_or(600);
            // Each turn of either format is about 6 records of ~text bytes plus envelopes.
            let turns = mb * 1_000_000 / (6 * text + 2000);
            write_claude(
                &dir.join(
                    "claude/projects/-home-dev-big/5f1c2d3e-0000-4000-8000-00000000b1b1.jsonl",
                ),
                "5f1c2d3e-0000-4000-8000-00000000b1b1",
                "/home/dev/big",
                base_ms,
                turns,
                text,
            );
            write_codex(&dir.join("codex/sessions/2025/06/15/rollout-2025-06-15T00-00-00-0199a1b2-c3d4-7e5f-8a9b-00000000b1b1.jsonl"), "0199a1b2-c3d4-7e5f-8a9b-00000000b1b1", "/home/dev/big", base_ms, turns * 17 / 10, text);
            let claude_len =
                fs::metadata(dir.join(
                    "claude/projects/-home-dev-big/5f1c2d3e-0000-4000-8000-00000000b1b1.jsonl",
                ))?
                .len();
            // A dsh log of about the same size: bytes per message measured on a sample.
            let sample_root = dir.join("sample-store");
            let sample = fixtures::write_long_session(&sample_root, "sample", 200, text);
            let per_message = (fs::metadata(&sample)?.len() / 200).max(1);
            fs::remove_dir_all(&sample_root)?;
            let messages = claude_len / per_message;
            let path =
                fixtures::write_long_session(&dir.join("store"), "big-session", messages, text);
            write_config(dir);
            println!(
                "claude {claude_len} bytes; dsh {} bytes ({})",
                fs::metadata(&path)?.len(),
                path.display()
            );
        }
        other => return Err(format!("unknown mode {other:?}").into()),
    }
    Ok(())
}
