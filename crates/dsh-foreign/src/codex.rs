//! Codex CLI rollouts (`<sessions>/YYYY/MM/DD/rollout-*.jsonl`): lines `{timestamp, type,
//! payload}` of type `session_meta` (id, cwd, timestamp), `response_item` (messages, tool
//! calls and outputs, reasoning), `event_msg`, `turn_context` and `compacted`.
//!
//! Rollouts written before `session_meta` existed (Codex CLI up to mid 2025) start with a
//! bare `{id, timestamp, instructions}` line, then hold `{record_type: "state"}` lines and
//! bare items (`{type: "message", role, content}`, …) without a `timestamp`; they are read
//! the same way, their cwd taken from the first `<environment_context>` message.
//!
//! The visible conversation is the `user` and `assistant` `message` items' text, minus the
//! context Codex injects as user messages (`<environment_context>`, `<user_instructions>`,
//! AGENTS.md instructions, skills, shell-command and abort notes, sub-agent notifications,
//! hook prompts: codex-rs's contextual user fragments). A request sent from an IDE carries
//! the IDE's context first (`# Context from my IDE setup: … ## My request for Codex:
//! <request>`): only the request is the person's, as codex-rs takes it for its own titles
//! and pickers. What the person typed is also in `event_msg` / `user_message`;
//! some rollouts hold it only there, so that is read too, and a request found in both (the
//! usual case, one right after the other) is shown once. A `compacted` record replaces
//! everything before it with its summary, which becomes a checkpoint.

use std::path::Path;

use serde::Deserialize;

use dsh_store::QueryError;

use super::jsonl::{LineAt, parse_timed, scan_listing};
pub use super::line_items::{LineItem, LineItems};
use super::log_meta::{LogMeta, TitleCleaner};
use super::surface_events::{ItemKind, parse_time_ms};

/// One rollout line: `{timestamp, type, payload}`, or a bare legacy line (the first
/// `{id, timestamp, instructions}` line, a `record_type` state line, a bare item).
#[derive(Debug, Deserialize)]
struct Line {
    timestamp: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    payload: Option<Payload>,
    /// Legacy first line: the session id.
    id: Option<String>,
    /// Legacy `{record_type: "state"}` lines.
    record_type: Option<String>,
    /// Legacy bare `message` item.
    role: Option<String>,
    content: Option<Vec<Block>>,
    /// Legacy first line: the git state.
    git: Option<Git>,
}

/// The payload fields any line type may use.
#[derive(Debug, Deserialize)]
struct Payload {
    #[serde(rename = "type")]
    kind: Option<String>,
    id: Option<String>,
    cwd: Option<String>,
    timestamp: Option<String>,
    role: Option<String>,
    content: Option<Vec<Block>>,
    /// `compacted`: the summary; `event_msg` / `user_message`: what the person typed.
    message: Option<String>,
    /// `event_msg` / `user_message` of older versions: `plain` for typed text, else the
    /// kind of context injected.
    #[serde(rename = "kind")]
    message_kind: Option<String>,
    /// `compacted` (remote compaction): the history that replaces the old one.
    replacement_history: Option<Vec<Payload>>,
    /// `session_meta`: the git state the session started in.
    git: Option<Git>,
}

/// `session_meta.git` (and the legacy first line's `git`): `{commit_hash, branch,
/// repository_url}`.
#[derive(Debug, Deserialize)]
struct Git {
    branch: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Block {
    #[serde(rename = "type")]
    kind: Option<String>,
    text: Option<String>,
}

/// Where a request sent from an IDE begins, after the IDE's context (codex-rs's
/// `USER_MESSAGE_BEGIN`).
const USER_MESSAGE_BEGIN: &str = "## My request for Codex:";

/// Openings of what Codex sends as a user message but the person did not type (codex-rs's
/// contextual user fragments, older versions' too; tags matched in any case).
const INJECTED_OPENINGS: &[&str] = &[
    "<environment_context>",
    "<user_instructions>",
    "<permissions instructions>",
    "<user_shell_command>",
    "<skill>",
    "<turn_aborted>",
    "<subagents>",
    "<subagent_notification>",
    "<hook_prompt",
    "# AGENTS.md instructions",
    "# Context from my IDE setup:",
];

/// The person's words in a user message's text: the request after an IDE's context when
/// there is one (the text after the first `## My request for Codex:`, trimmed, as codex-rs
/// takes it); `None` for context Codex injects on its own (an IDE context without a request
/// too).
pub fn typed_request(text: &str) -> Option<&str> {
    if let Some(at) = text.find(USER_MESSAGE_BEGIN) {
        let request = text.get(at + USER_MESSAGE_BEGIN.len()..)?.trim();
        return (!request.is_empty()).then_some(request);
    }
    let t = text.trim_start();
    let injected = INJECTED_OPENINGS.iter().any(|open| {
        t.get(..open.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(open))
    });
    (!injected && !t.trim_end().is_empty()).then_some(text)
}

/// The visible item of a `message` with `role` and `content`.
fn message_item(
    kind: Option<&str>,
    role: Option<&str>,
    content: Option<Vec<Block>>,
) -> Option<LineItem> {
    if kind != Some("message") {
        return None;
    }
    let (kind, block_type) = match role {
        Some("user") => (ItemKind::User, "input_text"),
        Some("assistant") => (ItemKind::Assistant, "output_text"),
        _ => return None,
    };
    let texts: Vec<String> = content?
        .into_iter()
        .filter(|b| b.kind.as_deref() == Some(block_type))
        .filter_map(|b| b.text)
        .collect();
    let text = texts.join("\n");
    if text.trim().is_empty() {
        return None;
    }
    if kind == ItemKind::User {
        return typed_request(&text).map(|t| LineItem::new(kind, t.to_owned()));
    }
    Some(LineItem::new(kind, text))
}

fn payload_item(p: Payload) -> Option<LineItem> {
    message_item(p.kind.as_deref(), p.role.as_deref(), p.content)
}

/// What the person typed, from an `event_msg` payload of type `user_message`.
fn event_request(p: Payload) -> Option<LineItem> {
    if p.kind.as_deref() != Some("user_message") {
        return None;
    }
    if p.message_kind.as_deref().is_some_and(|k| k != "plain") {
        return None;
    }
    let text = p.message?;
    Some(LineItem {
        kind: ItemKind::User,
        text: typed_request(&text)?.to_owned(),
        from_event: true,
    })
}

/// Decode one line's visible items and its time (Unix ms, `default_time` when the line has
/// none, as legacy lines do); `Err` (the reason) when the line is not JSON at all.
pub fn decode_line(body: &[u8], default_time: i64) -> Result<(LineItems, i64), String> {
    let Some((line, time)) = parse_timed::<Line>(body, default_time, |r| r.timestamp.as_deref())?
    else {
        return Ok((LineItems::None, default_time));
    };
    let Some(payload) = line.payload else {
        // A legacy bare item.
        let items = match message_item(line.kind.as_deref(), line.role.as_deref(), line.content) {
            Some(item) if line.record_type.is_none() => LineItems::Append(vec![item]),
            _ => LineItems::None,
        };
        return Ok((items, time));
    };
    let items = match line.kind.as_deref() {
        Some("response_item") => match payload_item(payload) {
            Some(item) => LineItems::Append(vec![item]),
            None => LineItems::None,
        },
        Some("event_msg") => match event_request(payload) {
            Some(item) => LineItems::Append(vec![item]),
            None => LineItems::None,
        },
        Some("compacted") => {
            LineItems::Replace(match payload.message.filter(|m| !m.trim().is_empty()) {
                Some(summary) => vec![LineItem::new(ItemKind::Checkpoint, summary)],
                // A remote compaction may carry only the history that replaces the old one.
                None => payload
                    .replacement_history
                    .unwrap_or_default()
                    .into_iter()
                    .filter_map(payload_item)
                    .collect(),
            })
        }
        _ => LineItems::None,
    };
    Ok((items, time))
}

/// Shows a request once when a rollout holds it twice (as a `response_item` message and as
/// an `event_msg`, one after the other): tells, item by item, whether it is new. The copy is
/// the other kind's request since the last reply — the one with the same text if there is
/// one, else the oldest (an IDE or a client may record the two with slightly different
/// words; the `response_item` is what the model was sent).
#[derive(Debug, Default)]
pub struct RequestDedup {
    /// Requests since the last reply not yet paired: (taken from an event, hash of the text).
    recent: Vec<(bool, u64)>,
}

impl RequestDedup {
    /// Whether `item` is shown: not when it is the copy of a request of the other kind since
    /// the last reply.
    pub fn keep(&mut self, item: &LineItem) -> bool {
        if item.kind != ItemKind::User {
            self.recent.clear();
            return true;
        }
        let hash = text_hash(&item.text);
        let other = |&(event, _): &(bool, u64)| event != item.from_event;
        let copy_of = self
            .recent
            .iter()
            .position(|r| other(r) && r.1 == hash)
            .or_else(|| self.recent.iter().position(other));
        if let Some(i) = copy_of {
            self.recent.remove(i);
            return false;
        }
        self.recent.push((item.from_event, hash));
        // A turn has one request and its copy; a long run of requests keeps the newest.
        if self.recent.len() > 64 {
            self.recent.remove(0);
        }
        true
    }
}

/// FNV-1a of a text (no key needed: a collision only hides a repeated request).
fn text_hash(text: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.as_bytes() {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// The branch a rollout recorded (`git.branch`), when it names one.
fn branch_of(git: Option<Git>) -> Option<String> {
    git?.branch.filter(|b| !b.trim().is_empty())
}

/// The `<cwd>` an `<environment_context>` message names.
fn context_cwd(text: &str) -> Option<String> {
    let start = text.find("<cwd>")? + "<cwd>".len();
    let len = text.get(start..)?.find("</cwd>")?;
    let cwd = text.get(start..start + len)?.trim();
    (!cwd.is_empty()).then(|| cwd.to_owned())
}

/// Continue (or start) the listing scan of `path` from `meta.resume`: the `session_meta`
/// line (or the legacy first line) and the first typed request; the rest of the file is
/// not read.
pub fn scan_meta(
    path: &Path,
    meta: LogMeta,
    max_line_bytes: u64,
    clean: TitleCleaner,
) -> Result<LogMeta, QueryError> {
    let see = &mut |meta: &mut LogMeta, at: LineAt, line: Line| {
        see_line(meta, at.offset == 0, line, clean);
        !(meta.first_user_seen && meta.native_id.is_some())
    };
    scan_listing(path, meta, max_line_bytes, ("Codex CLI", None), see)
}

/// What one rollout line tells the listing (`first`: it is the file's first line).
fn see_line(meta: &mut LogMeta, first: bool, line: Line, clean: TitleCleaner) {
    let Some(payload) = line.payload else {
        // The legacy layout: a first `{id, timestamp, instructions}` line, bare items.
        if first && line.kind.is_none() && line.record_type.is_none() {
            meta.native_id = line.id.filter(|id| !id.is_empty());
            meta.created_at = line.timestamp.as_deref().and_then(parse_time_ms);
            meta.branch = branch_of(line.git);
            return;
        }
        if line.record_type.is_some() {
            return;
        }
        let text_of = |content: &Option<Vec<Block>>| -> Option<String> {
            let texts: Vec<&str> = content
                .as_ref()?
                .iter()
                .filter(|b| b.kind.as_deref() == Some("input_text"))
                .filter_map(|b| b.text.as_deref())
                .collect();
            Some(texts.join("\n"))
        };
        if meta.cwd.is_none()
            && line.role.as_deref() == Some("user")
            && let Some(text) = text_of(&line.content)
            && text.trim_start().starts_with("<environment_context>")
        {
            meta.cwd = context_cwd(&text);
        }
        if !meta.first_user_seen
            && let Some(item) =
                message_item(line.kind.as_deref(), line.role.as_deref(), line.content)
            && item.kind == ItemKind::User
        {
            meta.see_user_text(&item.text, clean);
        }
        return;
    };
    match line.kind.as_deref() {
        Some("session_meta") if meta.native_id.is_none() => {
            meta.native_id = payload.id.filter(|id| !id.is_empty());
            meta.cwd = payload.cwd.filter(|c| !c.is_empty());
            meta.branch = branch_of(payload.git);
            meta.created_at = payload
                .timestamp
                .as_deref()
                .or(line.timestamp.as_deref())
                .and_then(parse_time_ms);
        }
        Some("response_item") if !meta.first_user_seen => {
            if let Some(item) = payload_item(payload)
                && item.kind == ItemKind::User
            {
                meta.see_user_text(&item.text, clean);
            }
        }
        Some("event_msg") if !meta.first_user_seen => {
            if let Some(item) = event_request(payload) {
                meta.see_user_text(&item.text, clean);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(line: &str) -> LineItems {
        decode_line(line.as_bytes(), 7).unwrap().0
    }

    fn item(kind: ItemKind, text: &str) -> LineItem {
        LineItem::new(kind, text.into())
    }

    #[test]
    fn line_table() {
        let user = r#"{"timestamp":"2025-01-01T00:00:00Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"fix it"}]}}"#;
        assert_eq!(
            items(user),
            LineItems::Append(vec![item(ItemKind::User, "fix it")])
        );
        let env = r#"{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>\n<cwd>/x</cwd>"}]}}"#;
        assert_eq!(items(env), LineItems::None);
        let dev = r#"{"type":"response_item","payload":{"type":"message","role":"developer","content":[{"type":"input_text","text":"rules"}]}}"#;
        assert_eq!(items(dev), LineItems::None);
        let reply = r#"{"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"a"},{"type":"output_text","text":"b"}]}}"#;
        assert_eq!(
            items(reply),
            LineItems::Append(vec![item(ItemKind::Assistant, "a\nb")])
        );
        for hidden in [
            r#"{"type":"response_item","payload":{"type":"reasoning","summary":[{"type":"summary_text","text":"think"}]}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{}","call_id":"c"}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":"x"}}"#,
            r#"{"type":"event_msg","payload":{"type":"user_message","message":"<environment_context>x","kind":"plain"}}"#,
            r#"{"type":"event_msg","payload":{"type":"user_message","message":"rules","kind":"user_instructions"}}"#,
            r#"{"type":"event_msg","payload":{"type":"agent_message","message":"a"}}"#,
            r#"{"record_type":"state","previous_response_id":"r"}"#,
            r#"{"type":"turn_context","payload":{"cwd":"/x","model":"m"}}"#,
            r#"{"type":"future","payload":{"what":1}}"#,
            r"[1,2]",
        ] {
            assert_eq!(items(hidden), LineItems::None, "{hidden}");
        }
        let compacted = r#"{"type":"compacted","payload":{"message":"summary so far"}}"#;
        assert_eq!(
            items(compacted),
            LineItems::Replace(vec![item(ItemKind::Checkpoint, "summary so far")])
        );
        let event = r#"{"type":"event_msg","payload":{"type":"user_message","message":"fix it"}}"#;
        assert_eq!(
            items(event),
            LineItems::Append(vec![LineItem {
                kind: ItemKind::User,
                text: "fix it".into(),
                from_event: true
            }])
        );
        let legacy =
            r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"old"}]}"#;
        assert_eq!(
            decode_line(legacy.as_bytes(), 7).unwrap(),
            (LineItems::Append(vec![item(ItemKind::User, "old")]), 7)
        );
    }

    #[test]
    fn a_request_in_both_places_is_shown_once() {
        let user = |text: &str, from_event| LineItem {
            kind: ItemKind::User,
            text: text.into(),
            from_event,
        };
        let reply = item(ItemKind::Assistant, "ok");
        let mut dedup = RequestDedup::default();
        let shown: Vec<bool> = [
            user("a", false),
            user("a", true),
            reply.clone(),
            user("b", true),
            user("b", false),
            reply.clone(),
            user("c", true),
            reply.clone(),
            user("d", false),
            user("d", false),
            user("d", true),
            reply.clone(),
            // A copy with other words (an IDE's client recorded it so) is still the copy.
            user("remove scrolling", false),
            user("remove the scrolling", true),
        ]
        .iter()
        .map(|i| dedup.keep(i))
        .collect();
        assert_eq!(
            shown,
            [
                true, false, true, true, false, true, true, true, true, true, false, true, true,
                false
            ]
        );
        assert_eq!(
            context_cwd("<environment_context>\n  <cwd>/x y</cwd>\n"),
            Some("/x y".into())
        );
    }
}
