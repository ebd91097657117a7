//! Issue 24, "every agent's history read right": one fixture per case of how Claude Code and
//! Codex CLI logs were misread, written here record by record (shapes from the tools' public
//! source and format notes; every value invented), each read through the foreign sources.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a failure should stop the test
#![allow(clippy::needless_pass_by_value)] // record builders take `json!` values as written

use std::fs;
use std::path::{Path, PathBuf};

use dsh_foreign::{ForeignSource, Origin, SourceConfig};
use dsh_store::{Event, EventData, QueryError, SessionQuery};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// A stand-in for the app's fallback title: whitespace collapsed, 8 words.
fn clean(text: &str) -> Option<String> {
    let t: Vec<&str> = text.split_whitespace().take(8).collect();
    (!t.is_empty()).then(|| t.join(" "))
}

fn source(origin: Origin, root: &Path) -> ForeignSource {
    ForeignSource::new(SourceConfig {
        root: root.to_owned(),
        origin,
        max_line_bytes: dsh_foreign::jsonl::DEFAULT_MAX_LINE_BYTES,
        clean_title: clean,
        index_file: None,
        copy_limits: dsh_foreign::CopyLimits::default(),
    })
}

fn write_jsonl(path: &Path, records: &[Value]) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let lines: Vec<String> = records.iter().map(ToString::to_string).collect();
    let text = lines.join("\n") + "\n";
    fs::write(path, text).unwrap();
}

/// `(role, text)` of every surface item (`checkpoint` for a compaction summary).
fn items(events: &[Event]) -> Vec<(String, String)> {
    events
        .iter()
        .filter_map(|e| match &e.data {
            EventData::UserMessage(m) => {
                let role = if m
                    .source
                    .as_ref()
                    .is_some_and(dsh_store::Source::is_compact_checkpoint)
                {
                    "checkpoint"
                } else {
                    "user"
                };
                Some((role.to_owned(), m.joined_text()))
            }
            EventData::AssistantMessage { message, .. } => {
                Some(("assistant".to_owned(), message.joined_text()))
            }
            _ => None,
        })
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect()
}

const SID: &str = "7a1c0000-0000-4000-8000-00000000000a";

/// A Claude Code record of session [`SID`] in `/home/dev/app`.
fn claude(kind: &str, uuid: &str, parent: Option<&str>, sec: u32, content: Value) -> Value {
    json!({"parentUuid": parent, "isSidechain": false, "userType": "external",
           "cwd": "/home/dev/app", "sessionId": SID, "version": "2.0.30", "type": kind,
           "message": {"role": kind, "content": content}, "uuid": uuid,
           "timestamp": format!("2025-11-02T10:00:{sec:02}.000Z")})
}

fn claude_log(root: &Path, records: &[Value]) -> (ForeignSource, String) {
    let projects = root.join("projects");
    write_jsonl(
        &projects.join(format!("-home-dev-app/{SID}.jsonl")),
        records,
    );
    (
        source(Origin::ClaudeCode, &projects),
        format!("claude-code:{SID}"),
    )
}

fn text(t: &str) -> Value {
    json!({"type": "text", "text": t})
}

/// Item 1: a `summary` whose `leafUuid` is not a record of this log describes another
/// session; it is never this session's title. A summary whose leaf is here still is (even
/// written before its leaf).
#[test]
fn item1_a_summary_of_another_session_is_not_the_title() {
    let tmp = tempfile::tempdir().unwrap();
    let records = [
        json!({"type": "summary", "summary": "Empty Repo Setup: CLAUDE.md Foundation", "leafUuid": "0000-other-session-leaf"}),
        json!({"type": "summary", "summary": "Cleared conversation history", "leafUuid": "1111-other-session-leaf"}),
        claude(
            "user",
            "u1",
            None,
            1,
            json!("Wire the payment webhook to the order service"),
        ),
        claude(
            "assistant",
            "a1",
            Some("u1"),
            2,
            json!([text("Added the webhook handler.")]),
        ),
    ];
    let (src, id) = claude_log(tmp.path(), &records);
    src.list_sessions().unwrap();
    assert_eq!(
        src.read_title(&id).unwrap().as_deref(),
        Some("Wire the payment webhook to the order service")
    );
    // A summary whose leaf is in the log is its title, wherever it is written.
    let mut with_own =
        vec![json!({"type": "summary", "summary": "Payment webhook wiring", "leafUuid": "a1"})];
    with_own.extend(records);
    let tmp2 = tempfile::tempdir().unwrap();
    let (src, id) = claude_log(tmp2.path(), &with_own);
    src.list_sessions().unwrap();
    assert_eq!(
        src.read_title(&id).unwrap().as_deref(),
        Some("Payment webhook wiring")
    );
}

/// Item 2: `<task-notification>` (a background task finished) and the other wrappers the
/// harness writes as user records are not what the person typed: not in the title, not on
/// the surface.
#[test]
fn item2_harness_wrappers_are_not_the_users_words() {
    let tmp = tempfile::tempdir().unwrap();
    let notification = "<task-notification>\n<task-id>b27a792</task-id>\n<status>completed</status>\n<summary>Background command \"cargo build\" completed (exit code 0)</summary>\n</task-notification>\nRead the output file to retrieve the result: /tmp/claude/tasks/b27a792.output";
    let records = [
        claude("user", "n0", None, 1, json!(notification)),
        claude(
            "user",
            "u1",
            Some("n0"),
            2,
            json!([
                text(
                    "<system-reminder>\nThe TodoWrite tool hasn't been used recently.\n</system-reminder>"
                ),
                text("Why does the build take 4 minutes?")
            ]),
        ),
        claude(
            "assistant",
            "a1",
            Some("u1"),
            3,
            json!([text("Mostly the bundled C library.")]),
        ),
        claude("user", "n1", Some("a1"), 4, json!(notification)),
        claude(
            "assistant",
            "a2",
            Some("n1"),
            5,
            json!([text("The background build finished.")]),
        ),
    ];
    let (src, id) = claude_log(tmp.path(), &records);
    src.list_sessions().unwrap();
    assert_eq!(
        src.read_title(&id).unwrap().as_deref(),
        Some("Why does the build take 4 minutes?")
    );
    let surface = src.read_surface(&id).unwrap();
    assert_eq!(
        items(&surface.events),
        pairs(&[
            ("user", "Why does the build take 4 minutes?"),
            ("assistant", "Mostly the bundled C library."),
            ("assistant", "The background build finished."),
        ])
    );
}

/// Item 3: a session opened with a slash command keeps the request: the command with its
/// arguments is the person's words; a prompt command without arguments (`/init`) too; a
/// built-in local command (`/clear`) is not a request.
#[test]
fn item3_a_slash_command_with_arguments_is_the_request() {
    let tmp = tempfile::tempdir().unwrap();
    let records = [
        claude(
            "user",
            "c0",
            None,
            1,
            json!(
                "<command-name>/clear</command-name>\n<command-message>clear</command-message>\n<command-args></command-args>"
            ),
        ),
        claude(
            "user",
            "o0",
            Some("c0"),
            2,
            json!("<local-command-stdout></local-command-stdout>"),
        ),
        claude(
            "user",
            "c1",
            Some("o0"),
            3,
            json!(
                "<command-message>orchestrator is running…</command-message>\n<command-name>/orchestrator</command-name>\n<command-args>@CLAUDE.md を最新の状態に更新して</command-args>"
            ),
        ),
        claude(
            "assistant",
            "a1",
            Some("c1"),
            4,
            json!([text("CLAUDE.md を更新しました。")]),
        ),
        claude(
            "user",
            "c2",
            Some("a1"),
            5,
            json!(
                "<command-name>/init</command-name>\n<command-message>init is analyzing your codebase…</command-message>\n<command-args></command-args>"
            ),
        ),
        claude(
            "assistant",
            "a2",
            Some("c2"),
            6,
            json!([text("Created CLAUDE.md.")]),
        ),
    ];
    let (src, id) = claude_log(tmp.path(), &records);
    src.list_sessions().unwrap();
    assert_eq!(
        src.read_title(&id).unwrap().as_deref(),
        Some("/orchestrator @CLAUDE.md を最新の状態に更新して")
    );
    let surface = src.read_surface(&id).unwrap();
    assert_eq!(
        items(&surface.events),
        pairs(&[
            ("user", "/orchestrator @CLAUDE.md を最新の状態に更新して"),
            ("assistant", "CLAUDE.md を更新しました。"),
            ("user", "/init"),
            ("assistant", "Created CLAUDE.md."),
        ])
    );
    // A session that is only `/init` is titled by it.
    let tmp2 = tempfile::tempdir().unwrap();
    let (src, id) = claude_log(tmp2.path(), &records[4..]);
    src.list_sessions().unwrap();
    assert_eq!(src.read_title(&id).unwrap().as_deref(), Some("/init"));
}

/// Item 4: Claude Code 2.x writes one record per content block; a text block that is only
/// whitespace is no message.
#[test]
fn item4_whitespace_only_assistant_records_are_not_messages() {
    let tmp = tempfile::tempdir().unwrap();
    let records = [
        claude("user", "u1", None, 1, json!("List the crates")),
        claude("assistant", "a1", Some("u1"), 2, json!([text("\n\n")])),
        claude(
            "assistant",
            "a2",
            Some("a1"),
            3,
            json!([{"type": "tool_use", "id": "toolu_9", "name": "Bash", "input": {"command": "ls crates"}}]),
        ),
        claude(
            "user",
            "r1",
            Some("a2"),
            4,
            json!([{"type": "tool_result", "tool_use_id": "toolu_9", "content": "a b"}]),
        ),
        claude("assistant", "a3", Some("r1"), 5, json!([text("  \n")])),
        claude(
            "assistant",
            "a4",
            Some("a3"),
            6,
            json!([text("Two crates: a and b.")]),
        ),
    ];
    let (src, id) = claude_log(tmp.path(), &records);
    src.list_sessions().unwrap();
    let surface = src.read_surface(&id).unwrap();
    assert_eq!(
        items(&surface.events),
        pairs(&[
            ("user", "List the crates"),
            ("assistant", "Two crates: a and b."),
        ])
    );
}

/// Item 5: the title order — a custom title (`/rename`, `claude --resume <name>`), then the
/// tool's own AI title, then a summary of this log, then the first request; the newest
/// record of each kind wins.
#[test]
fn item5_custom_and_ai_titles_come_first() {
    let base = vec![
        claude("user", "u1", None, 1, json!("Make the parser streaming")),
        claude("assistant", "a1", Some("u1"), 2, json!([text("Done.")])),
        json!({"type": "summary", "summary": "Streaming parser", "leafUuid": "a1"}),
    ];
    let ai = |t: &str| json!({"type": "ai-title", "aiTitle": t, "sessionId": SID});
    let custom = |t: &str| json!({"type": "custom-title", "customTitle": t, "sessionId": SID});
    let cases: Vec<(&str, Vec<Value>, &str)> = vec![
        ("summary only", vec![], "Streaming parser"),
        (
            "ai titles, newest wins",
            vec![ai("Parser rework"), ai("Streaming JSON parser")],
            "Streaming JSON parser",
        ),
        (
            "a custom title beats the ai title",
            vec![custom("parser-v2"), ai("Streaming JSON parser")],
            "parser-v2",
        ),
        (
            "renamed twice",
            vec![custom("parser-v2"), custom("parser-final")],
            "parser-final",
        ),
        (
            "another session's title record is ignored",
            vec![
                json!({"type": "custom-title", "customTitle": "not this one", "sessionId": "ffff0000-0000-4000-8000-000000000000"}),
            ],
            "Streaming parser",
        ),
    ];
    for (name, extra, want) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let mut records = base.clone();
        records.extend(extra);
        let (src, id) = claude_log(tmp.path(), &records);
        src.list_sessions().unwrap();
        assert_eq!(
            src.read_title(&id).unwrap().as_deref(),
            Some(want),
            "{name}"
        );
    }
}

/// Item 9: nothing below a foreign root is followed through a symbolic link (a log linked
/// in from elsewhere is not listed or read); the root itself may be a link.
#[cfg(unix)]
#[test]
fn item9_links_below_the_root_are_not_followed() {
    use std::os::unix::fs::symlink;
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().join("outside");
    let other = "9b2d0000-0000-4000-8000-00000000000b";
    write_jsonl(
        &outside.join(format!("{other}.jsonl")),
        &[claude("user", "x1", None, 1, json!("OUTSIDE-SECRET text"))],
    );
    let real = tmp.path().join("real-claude");
    let (_, id) = claude_log(&real, &[claude("user", "u1", None, 1, json!("inside"))]);
    let project = real.join("projects/-home-dev-app");
    symlink(
        outside.join(format!("{other}.jsonl")),
        project.join(format!("{other}.jsonl")),
    )
    .unwrap();
    symlink(&outside, real.join("projects/-linked-dir")).unwrap();
    // The configured root is itself a link: allowed.
    let root_link = tmp.path().join("claude-link");
    symlink(real.join("projects"), &root_link).unwrap();
    let src = source(Origin::ClaudeCode, &root_link);
    let list = src.list_sessions().unwrap();
    let ids: Vec<&str> = list.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(ids, [id.as_str()]);
    let linked = format!("claude-code:{other}");
    assert!(matches!(
        src.read_surface(&linked),
        Err(QueryError::NotFound { .. })
    ));
    assert_eq!(
        items(&src.read_surface(&id).unwrap().events),
        pairs(&[("user", "inside")])
    );
}

const CX: &str = "5973b6c0-94b8-487b-a530-2aeb6098ae0e";

fn codex_src(root: &Path) -> ForeignSource {
    source(Origin::Codex, &root.join("sessions"))
}

fn codex_path(root: &Path, day: &str) -> PathBuf {
    root.join(format!(
        "sessions/2025/{day}/rollout-2025-{}T17-24-21-{CX}.jsonl",
        day.replace('/', "-")
    ))
}

/// Item 6: a rollout from before `session_meta` (a first line `{id, timestamp,
/// instructions}`, then `record_type: state` lines and bare items) is listed and read.
#[test]
fn item6_a_legacy_codex_rollout_is_listed_and_read() {
    let tmp = tempfile::tempdir().unwrap();
    let msg = |role: &str, block: &str, t: &str| json!({"type": "message", "role": role, "content": [{"type": block, "text": t}]});
    write_jsonl(
        &codex_path(tmp.path(), "05/07"),
        &[
            json!({"id": CX, "timestamp": "2025-05-07T17:24:21.123Z", "instructions": "LEGACY-INSTRUCTIONS be brief"}),
            json!({"record_type": "state"}),
            msg(
                "user",
                "input_text",
                "<environment_context>\n  <cwd>/home/dev/legacy</cwd>\n</environment_context>",
            ),
            msg("user", "input_text", "Port the CLI flags to clap 4"),
            json!({"record_type": "state", "previous_response_id": "resp_1"}),
            json!({"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c1"}),
            json!({"type": "function_call_output", "call_id": "c1", "output": "TOOL-OUTPUT"}),
            msg(
                "assistant",
                "output_text",
                "Ported: every flag is a derive field now.",
            ),
        ],
    );
    let src = codex_src(tmp.path());
    let list = src.list_sessions().unwrap();
    let id = format!("codex:{CX}");
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].id, id);
    assert_eq!(list[0].created_at, 1_746_638_661_123);
    assert_eq!(list[0].cwd.as_deref(), Some("/home/dev/legacy"));
    assert_eq!(
        src.read_title(&id).unwrap().as_deref(),
        Some("Port the CLI flags to clap 4")
    );
    assert_eq!(
        items(&src.read_surface(&id).unwrap().events),
        pairs(&[
            ("user", "Port the CLI flags to clap 4"),
            ("assistant", "Ported: every flag is a derive field now."),
        ])
    );
}

/// Item 6: a rollout whose user text is only in `event_msg` / `user_message` is titled by
/// it and shows it; a rollout with both shows each request once.
#[test]
fn item6_user_text_only_in_event_msg_is_the_request() {
    let tmp = tempfile::tempdir().unwrap();
    let line = |sec: u32, kind: &str, payload: Value| json!({"timestamp": format!("2025-11-03T09:00:{sec:02}.000Z"), "type": kind, "payload": payload});
    let reply = |t: &str| json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": t}]});
    let user = |t: &str| json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": t}]});
    write_jsonl(
        &codex_path(tmp.path(), "11/03"),
        &[
            line(
                0,
                "session_meta",
                json!({"id": CX, "timestamp": "2025-11-03T09:00:00.000Z", "cwd": "/home/dev/desk", "originator": "Codex Desktop"}),
            ),
            line(
                1,
                "event_msg",
                json!({"type": "user_message", "message": "Summarise the open PRs", "images": []}),
            ),
            line(2, "response_item", reply("Three PRs are open.")),
            line(3, "response_item", user("Which one is oldest?")),
            line(
                3,
                "event_msg",
                json!({"type": "user_message", "message": "Which one is oldest?", "kind": "plain"}),
            ),
            line(4, "response_item", reply("#12, from May.")),
            line(
                5,
                "event_msg",
                json!({"type": "user_message", "message": "Close it"}),
            ),
            line(5, "response_item", user("Close it")),
            line(6, "response_item", reply("Closed.")),
        ],
    );
    let src = codex_src(tmp.path());
    src.list_sessions().unwrap();
    let id = format!("codex:{CX}");
    assert_eq!(
        src.read_title(&id).unwrap().as_deref(),
        Some("Summarise the open PRs")
    );
    assert_eq!(
        items(&src.read_surface(&id).unwrap().events),
        pairs(&[
            ("user", "Summarise the open PRs"),
            ("assistant", "Three PRs are open."),
            ("user", "Which one is oldest?"),
            ("assistant", "#12, from May."),
            ("user", "Close it"),
            ("assistant", "Closed."),
        ])
    );
}
