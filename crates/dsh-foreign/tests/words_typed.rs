//! Issue 33 items 2–4: the words people typed, titles as each tool shows them, the branch a
//! session was recorded on — on a real Codex IDE rollout (tests/fixtures/real, provenance in
//! its README) and on records written here in the tools' shapes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod support;

use std::fs;
use std::path::Path;

use dsh_foreign::{ForeignSource, Origin, SourceConfig};
use dsh_store::SessionQuery;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use support::{copy_tree, fixtures, items, pairs, scan_matches_whole_read, tree};

const IDE_ROLLOUT: &str = "codex:019d9353-333c-7c41-a909-26f5c6221a5a";

/// The app's title rule for another tool's first request: the whole request on one line.
fn whole(text: &str) -> Option<String> {
    let t: Vec<&str> = text.split_whitespace().collect();
    (!t.is_empty()).then(|| t.join(" "))
}

fn source(origin: Origin, configured: &Path) -> ForeignSource {
    ForeignSource::new(SourceConfig {
        root: SourceConfig::logs_dir(&origin, configured),
        origin,
        max_line_bytes: dsh_foreign::jsonl::DEFAULT_MAX_LINE_BYTES,
        clean_title: whole,
        index_file: None,
        copy_limits: dsh_foreign::CopyLimits::default(),
    })
}

fn write_lines(path: &Path, records: &[Value]) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let lines: Vec<String> = records.iter().map(ToString::to_string).collect();
    fs::write(path, lines.join("\n") + "\n").unwrap();
}

#[test]
fn a_codex_ide_session_shows_the_request_its_title_and_its_branch() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join(".codex");
    copy_tree(&fixtures().join("real/codex"), &home);
    let before = tree(&home);
    let src = source(Origin::Codex, &home);
    let list = src.list_sessions().unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].id, IDE_ROLLOUT);
    assert_eq!(list[0].cwd.as_deref(), Some("/Users/user/git/wakatime-cli"));
    assert_eq!(
        list[0].branch.as_deref(),
        Some("master"),
        "session_meta.git.branch"
    );
    assert_eq!(
        src.read_title(IDE_ROLLOUT).unwrap().as_deref(),
        Some("remove scrolling horizontally"),
        "the request, as Codex's own pickers show it"
    );
    let surface = src.read_surface(IDE_ROLLOUT).unwrap();
    let shown = items(&surface.events);
    assert_eq!(
        shown
            .iter()
            .filter(|(role, _)| role == "user")
            .collect::<Vec<_>>(),
        [
            &(
                "user".to_owned(),
                "remove scrolling horizontally".to_owned()
            ),
            &("user".to_owned(), "keep going\n".to_owned()),
        ],
        "the IDE's context is not the person's words; the event copy is shown once"
    );
    assert_eq!(
        shown.last().unwrap(),
        &(
            "assistant".to_owned(),
            "I applied a more targeted fix.\n\nIn [wakatime-cli/templates/index.html](/Users/user/git/wakatime-cli/templates/index.html), the header is now wrapped in `#header`. In [wakatime-cli/static/css/index.less](/Users/user/git/wakatime-cli/static/css/index.less), I added header overrides.".to_owned()
        )
    );
    let all = serde_json::to_string(&surface.events).unwrap();
    for hidden in [
        "Context from my IDE",
        "Active file",
        "Open tabs",
        "Chunk ID",
    ] {
        assert!(!all.contains(hidden), "{hidden} shown");
    }
    scan_matches_whole_read(&src, IDE_ROLLOUT);
    assert_eq!(tree(&home), before);
}

#[test]
fn codex_context_fragments_are_not_the_persons_words() {
    let tmp = tempfile::tempdir().unwrap();
    let rollout = tmp
        .path()
        .join("sessions/2026/05/01/rollout-2026-05-01T10-00-00-0199ffff-0000-7000-8000-000000000001.jsonl");
    let user = |text: &str| {
        json!({"timestamp": "2026-05-01T10:00:01.000Z", "type": "response_item",
               "payload": {"type": "message", "role": "user",
                           "content": [{"type": "input_text", "text": text}]}})
    };
    let reply = |text: &str| {
        json!({"timestamp": "2026-05-01T10:00:02.000Z", "type": "response_item",
               "payload": {"type": "message", "role": "assistant",
                           "content": [{"type": "output_text", "text": text}]}})
    };
    write_lines(
        &rollout,
        &[
            json!({"timestamp": "2026-05-01T10:00:00.000Z", "type": "session_meta",
                   "payload": {"id": "0199ffff-0000-7000-8000-000000000001", "cwd": "/w",
                               "git": {"branch": ""}}}),
            user("<skill>\n<name>deploy</name>\nSKILL BODY\n</skill>"),
            user("<turn_aborted>\nThe user interrupted the previous turn.\n</turn_aborted>"),
            user("<SUBAGENT_NOTIFICATION>{\"agent\":\"a\"}</SUBAGENT_NOTIFICATION>"),
            user("<hook_prompt hook_run_id=\"h1\">HOOK TEXT</hook_prompt>"),
            user("# Context from my IDE setup:\n\n## Active file: a.rs\n"),
            user(
                "# Files mentioned by the user:\n\n## shot.png: /tmp/shot.png\n\n## My request for Codex:\nWrite a migration for the orders table and document the VPC peering setup\n",
            ),
            reply("Done."),
        ],
    );
    let src = source(Origin::Codex, tmp.path());
    let id = "codex:0199ffff-0000-7000-8000-000000000001";
    assert_eq!(
        items(&src.read_surface(id).unwrap().events),
        pairs(&[
            (
                "user",
                "Write a migration for the orders table and document the VPC peering setup"
            ),
            ("assistant", "Done."),
        ])
    );
    assert_eq!(
        src.read_title(id).unwrap().as_deref(),
        Some("Write a migration for the orders table and document the VPC peering setup"),
        "the whole request, not five words of it"
    );
    assert_eq!(
        src.list_sessions().unwrap()[0].branch,
        None,
        "an empty branch is none"
    );
}

#[test]
fn claude_code_records_its_newest_branch_and_ide_notes_are_not_typed() {
    let tmp = tempfile::tempdir().unwrap();
    let sid = "7a1c0000-0000-4000-8000-0000000000b1";
    let rec = |uuid: &str, parent: Option<&str>, kind: &str, branch: &str, content: Value| {
        json!({"parentUuid": parent, "isSidechain": false, "userType": "external",
               "cwd": "/home/dev/app", "sessionId": sid, "version": "2.0.30",
               "gitBranch": branch, "type": kind, "uuid": uuid,
               "message": {"role": kind, "content": content},
               "timestamp": "2025-11-02T10:00:00.000Z"})
    };
    write_lines(
        &tmp.path()
            .join(format!("projects/-home-dev-app/{sid}.jsonl")),
        &[
            rec(
                "u1",
                None,
                "user",
                "main",
                json!([
                    {"type": "text", "text": "<ide_opened_file>The user opened the file /home/dev/app/src/a.rs in the IDE. This may or may not be related to the current task.</ide_opened_file>"},
                    {"type": "text", "text": "Explain why the retry loop in the payment client never backs off"}
                ]),
            ),
            rec(
                "a1",
                Some("u1"),
                "assistant",
                "main",
                json!([{"type": "text", "text": "It resets the delay."}]),
            ),
            rec(
                "u2",
                Some("a1"),
                "user",
                "feature/backoff",
                json!([
                    {"type": "text", "text": "<ide_selection>The user selected the lines 3 to 9 from /home/dev/app/src/a.rs:\nfn retry() {}\n</ide_selection>"},
                    {"type": "text", "text": "Fix it"}
                ]),
            ),
            rec(
                "a2",
                Some("u2"),
                "assistant",
                "",
                json!([{"type": "text", "text": "Fixed."}]),
            ),
        ],
    );
    let src = source(Origin::ClaudeCode, &tmp.path().join("projects"));
    let list = src.list_sessions().unwrap();
    assert_eq!(
        list[0].branch.as_deref(),
        Some("feature/backoff"),
        "the newest branch recorded (an empty one is none)"
    );
    let id = format!("claude-code:{sid}");
    assert_eq!(
        src.read_title(&id).unwrap().as_deref(),
        Some("Explain why the retry loop in the payment client never backs off")
    );
    assert_eq!(
        items(&src.read_surface(&id).unwrap().events),
        pairs(&[
            (
                "user",
                "Explain why the retry loop in the payment client never backs off"
            ),
            ("assistant", "It resets the delay."),
            ("user", "Fix it"),
            ("assistant", "Fixed."),
        ])
    );
}

/// Gemini CLI before its JSON-lines chats recorded every request it sent as a `user`
/// message, tool results too, as the text `partListUnionToString` makes of the parts:
/// `[Function Response: <tool>]` and the tool's output (the shape of its
/// `geminiChat.ts` `recordMessage` call; no public repository holds such a chat that we
/// found, so the record is written here).
#[test]
fn a_gemini_function_response_recorded_as_user_is_tool_output() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join(".gemini");
    let chats = home.join("tmp/0a0b/chats");
    fs::create_dir_all(&chats).unwrap();
    let doc = json!({
        "sessionId": "5f5f0000-0000-4000-8000-0000000000f1",
        "projectHash": "0a0b",
        "startTime": "2025-09-22T00:06:24.324Z",
        "lastUpdated": "2025-09-22T00:14:02.367Z",
        "messages": [
            {"id": "m1", "timestamp": "2025-09-22T00:06:24.324Z", "type": "user",
             "content": "Summarize @docs/ARCHITECTURE.md and list its open questions"},
            {"id": "m2", "timestamp": "2025-09-22T00:06:25.000Z", "type": "user",
             "content": "[Function Response: read_many_files]--- docs/ARCHITECTURE.md ---\n\n# Architecture\nFILE-CONTENTS the cache is keyed by tenant\n"},
            {"id": "m3", "timestamp": "2025-09-22T00:06:30.000Z", "type": "gemini",
             "content": "The document describes a tenant-keyed cache. Open questions: eviction."},
            {"id": "m4", "timestamp": "2025-09-22T00:07:00.000Z", "type": "user",
             "content": "[Function Response: run_shell_command]Command: ls\nOutput: a b"}
        ]
    });
    fs::write(
        chats.join("session-2025-09-22T00-06-5f5f0000.json"),
        serde_json::to_string_pretty(&doc).unwrap(),
    )
    .unwrap();
    let src = source(Origin::Gemini, &home);
    let id = "gemini:5f5f0000-0000-4000-8000-0000000000f1";
    assert_eq!(src.list_sessions().unwrap()[0].id, id);
    let surface = src.read_surface(id).unwrap();
    assert_eq!(
        items(&surface.events),
        pairs(&[
            (
                "user",
                "Summarize @docs/ARCHITECTURE.md and list its open questions"
            ),
            (
                "assistant",
                "The document describes a tenant-keyed cache. Open questions: eviction."
            ),
        ])
    );
    assert!(
        !serde_json::to_string(&surface.events)
            .unwrap()
            .contains("FILE-CONTENTS")
    );
    assert_eq!(
        src.list_sessions().unwrap()[0].branch,
        None,
        "Gemini CLI records none"
    );
}
