//! Issue 33 item 7: Qwen Code and GitHub Copilot CLI sessions (fixtures in the tools'
//! formats, provenance in tests/fixtures/qwen and tests/fixtures/copilot): listing with the
//! recorded branch and the tool's title, only the person's words and the replies on the
//! surface, compaction as a checkpoint, and nothing written under the roots.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod support;

use dsh_foreign::line_items::{DecodeLine, LineItem, LineItems};
use dsh_foreign::surface_events::ItemKind;
use dsh_foreign::{Origin, copilot, qwen};
use dsh_store::SessionQuery;
use pretty_assertions::assert_eq;
use support::{copy_tree, fixtures, items, pairs, scan_matches_whole_read, source, tree};

const QWEN: &str = "qwen:3c9f0a9e-5b1d-4c2e-9f00-000000000001";
const COPILOT: &str = "copilot:8d2f6a10-7c3b-4e59-9a51-000000000001";
const COPILOT_OLD: &str = "copilot:5b7e1c20-1111-4a2b-8c3d-000000000002";

#[test]
fn qwen_code_sessions_are_read() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join(".qwen");
    copy_tree(&fixtures().join("qwen"), &home);
    let before = tree(&home);
    let src = source(Origin::Qwen, &home);
    let list = src.list_sessions().unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].id, QWEN);
    assert_eq!(list[0].cwd.as_deref(), Some("/home/dev/shop"));
    assert_eq!(list[0].created_at, 1_772_442_000_000);
    assert_eq!(list[0].branch.as_deref(), Some("feature/payments-retry"));
    assert_eq!(
        src.read_title(QWEN).unwrap().as_deref(),
        Some("Payments retry with backoff"),
        "the title Qwen Code generated"
    );
    let surface = src.read_surface(QWEN).unwrap();
    assert_eq!(
        items(&surface.events),
        pairs(&[
            (
                "checkpoint",
                "<state_snapshot>\n<overall_goal>Retry with backoff in the payments client</overall_goal>\n</state_snapshot>"
            ),
            (
                "user",
                "Now cover it with a test, including 结账 amounts and \u{1b}[31mred\u{1b}[0m escapes"
            ),
            ("assistant", "Added tests/payments_retry.test.ts."),
        ])
    );
    let all = serde_json::to_string(&surface.events).unwrap();
    for hidden in [
        "SECRET-THOUGHT",
        "TOOL-OUTPUT",
        "/help",
        "TORN-TAIL",
        "Got it",
        "/stats",
    ] {
        assert!(!all.contains(hidden), "{hidden} leaked");
    }
    let mut seen = support::Seen::default();
    src.scan_surface(QWEN, &mut seen).unwrap();
    assert_eq!(seen.removed, [0, 1, 2], "the compressed history left");
    scan_matches_whole_read(&src, QWEN);
    assert_eq!(tree(&home), before, "reading changed the Qwen Code home");
}

#[test]
fn github_copilot_cli_sessions_are_read() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join(".copilot");
    copy_tree(&fixtures().join("copilot"), &home);
    let before = tree(&home);
    let src = source(Origin::Copilot, &home);
    let list = src.list_sessions().unwrap();
    let ids: Vec<(&str, Option<&str>, Option<&str>)> = list
        .iter()
        .map(|h| (h.id.as_str(), h.cwd.as_deref(), h.branch.as_deref()))
        .collect();
    assert_eq!(
        ids,
        [
            (COPILOT, Some("/home/dev/api"), Some("fix/rate-limit")),
            (COPILOT_OLD, None, None),
        ]
    );
    assert_eq!(
        src.read_title(COPILOT).unwrap().as_deref(),
        Some("Why does the rate limiter let bursts through"),
        "the first request (cut by this test's 8-word cleaner)"
    );
    let surface = src.read_surface(COPILOT).unwrap();
    assert_eq!(
        items(&surface.events),
        pairs(&[
            (
                "checkpoint",
                "Summary: bursts after deploy come from a full bucket at start."
            ),
            ("user", "Persist the bucket level across restarts"),
            (
                "assistant",
                "Done: the level is saved to Redis on shutdown."
            ),
        ])
    );
    let all = serde_json::to_string(&surface.events).unwrap();
    for hidden in [
        "DELTA-ONLY",
        "SECRET-REASONING",
        "TOOL-OUTPUT",
        "SUBAGENT-TEXT",
        "INJECTED-REMINDER",
        "current_datetime",
    ] {
        assert!(!all.contains(hidden), "{hidden} leaked");
    }
    assert_eq!(
        items(&src.read_surface(COPILOT_OLD).unwrap().events),
        pairs(&[
            ("user", "List the TODOs in this repo"),
            ("assistant", "There are three TODOs, all in cache.go."),
        ])
    );
    for id in [COPILOT, COPILOT_OLD] {
        scan_matches_whole_read(&src, id);
    }
    assert_eq!(tree(&home), before, "reading changed the Copilot home");
}

/// The items `decode` finds in one line.
fn decoded(decode: DecodeLine, line: &str) -> LineItems {
    decode(line.as_bytes(), 7).unwrap().0
}

#[test]
fn qwen_code_records_by_the_table() {
    let items = |line: &str| decoded(qwen::decode_line, line);
    let user = r#"{"uuid":"u","type":"user","message":{"role":"user","parts":[{"text":"fix the login"}]},"timestamp":"2026-01-01T00:00:00Z"}"#;
    assert_eq!(
        items(user),
        LineItems::Append(vec![LineItem::new(ItemKind::User, "fix the login".into())])
    );
    let reply = r#"{"type":"assistant","message":{"role":"model","parts":[{"text":"think","thought":true},{"text":"Done."},{"functionCall":{"name":"x","args":{}}}]}}"#;
    assert_eq!(
        items(reply),
        LineItems::Append(vec![LineItem::new(ItemKind::Assistant, "Done.".into())])
    );
    for hidden in [
        r#"{"type":"tool_result","message":{"role":"user","parts":[{"functionResponse":{"name":"x","response":{}}}]}}"#,
        r#"{"type":"system","subtype":"slash_command","systemPayload":{"rawCommand":"/docs"}}"#,
        r#"{"type":"user","message":{"role":"user","parts":[{"text":"/help"}]}}"#,
        r#"{"type":"user","message":{"role":"user","parts":[{"text":"<session_context>\nThis is Qwen"}]}}"#,
        r#"{"type":"user","subtype":"at_command","message":{"role":"user","parts":[{"text":"FILE"}]}}"#,
        r#"{"type":"system","subtype":"ui_telemetry"}"#,
    ] {
        assert_eq!(items(hidden), LineItems::None, "{hidden}");
    }
    let compressed = r#"{"type":"system","subtype":"chat_compression","systemPayload":{"compressedHistory":[{"role":"user","parts":[{"text":"<state_snapshot>goal</state_snapshot>"}]},{"role":"model","parts":[{"text":"Got it. Thanks for the additional context!"}]},{"role":"user","parts":[{"text":"next step"}]}]}}"#;
    assert_eq!(
        items(compressed),
        LineItems::Replace(vec![
            LineItem::new(
                ItemKind::Checkpoint,
                "<state_snapshot>goal</state_snapshot>".into()
            ),
            LineItem::new(ItemKind::User, "next step".into()),
        ])
    );
    assert_eq!(
        qwen::custom_title(Some(
            &serde_json::json!({"customTitle": " Fix login ", "titleSource": "manual"})
        )),
        Some(("Fix login".to_owned(), false))
    );
    assert_eq!(
        qwen::custom_title(Some(
            &serde_json::json!({"customTitle": "Doc summary", "titleSource": "auto"})
        )),
        Some(("Doc summary".to_owned(), true))
    );
}

#[test]
fn copilot_cli_events_by_the_table() {
    let items = |line: &str| decoded(copilot::decode_line, line);
    assert_eq!(
        items(
            r#"{"type":"user.message","data":{"content":"Please implement the login page.","transformedContent":"<current_datetime>x</current_datetime>\nPlease implement the login page."},"id":"e2","timestamp":"2026-01-15T10:00:01.000Z"}"#
        ),
        LineItems::Append(vec![LineItem::new(
            ItemKind::User,
            "Please implement the login page.".into()
        )])
    );
    assert_eq!(
        items(
            r#"{"type":"assistant.message","data":{"messageId":"m","content":"Done.","reasoningText":"THINK","toolRequests":[{"toolCallId":"t","name":"read"}]}}"#
        ),
        LineItems::Append(vec![LineItem::new(ItemKind::Assistant, "Done.".into())])
    );
    assert_eq!(
        items(
            r#"{"type":"session.compaction_complete","data":{"success":true,"summaryContent":"compact summary"}}"#
        ),
        LineItems::Replace(vec![LineItem::new(
            ItemKind::Checkpoint,
            "compact summary".into()
        )])
    );
    for hidden in [
        r#"{"type":"assistant.message","data":{"content":""}}"#,
        r#"{"type":"assistant.message","agentId":"sub","data":{"content":"SUBAGENT"}}"#,
        r#"{"type":"assistant.message_delta","ephemeral":true,"data":{"deltaContent":"x"}}"#,
        r#"{"type":"tool.execution_complete","data":{"toolCallId":"t","success":true,"result":{"content":"TOOL"}}}"#,
        r#"{"type":"session.compaction_complete","data":{"success":false,"error":"rate limited"}}"#,
        r#"{"type":"session.start","data":{"sessionId":"s"}}"#,
    ] {
        assert_eq!(items(hidden), LineItems::None, "{hidden}");
    }
    assert_eq!(
        copilot::id_of_path(std::path::Path::new(
            "/h/.copilot/session-state/abc/events.jsonl"
        ))
        .as_deref(),
        Some("abc")
    );
    assert_eq!(
        copilot::id_of_path(std::path::Path::new("/h/.copilot/session-state/abc.jsonl")).as_deref(),
        Some("abc")
    );
}
