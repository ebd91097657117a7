//! GitHub Copilot CLI sessions (docs/foreign-sources.md, GitHub Copilot CLI): each session
//! is a directory `~/.copilot/session-state/<session id>/` holding `events.jsonl` (and a
//! `workspace.yaml` not read here); releases before the directories wrote
//! `~/.copilot/session-state/<session id>.jsonl`. Each line is an event `{type, data, id,
//! timestamp, parentId, agentId?, ephemeral?}`:
//!
//! - `session.start` `{sessionId, startTime, selectedModel, context: {cwd, gitRoot?,
//!   repository?, branch?}}`: the session's id, start, cwd and branch;
//! - `user.message` `{content, transformedContent?, attachments?}`: what the person typed is
//!   `content` (`transformedContent` is what Copilot sent after adding its own context);
//! - `assistant.message` `{messageId, content, toolRequests?, reasoningText?}`: a reply's text
//!   is `content` (reasoning and tool requests left out);
//! - `session.compaction_complete` `{success, summaryContent?, …}`: a successful compaction's
//!   summary replaces the conversation before it and becomes its checkpoint;
//! - tool executions, deltas, sub-agent events (`agentId`), ephemeral events and every other
//!   type: nothing to show.

use serde::Deserialize;

use dsh_store::QueryError;

use super::jsonl::{LineAt, parse_timed, scan_listing};
use super::line_items::{LineItem, LineItems};
use super::log_meta::{LogMeta, TitleCleaner};
use super::surface_events::{ItemKind, parse_time_ms};

/// One event line.
#[derive(Debug, Deserialize)]
struct Event {
    #[serde(rename = "type")]
    kind: Option<String>,
    data: Option<Data>,
    timestamp: Option<String>,
    /// Set on a sub-agent's events.
    #[serde(rename = "agentId")]
    agent_id: Option<String>,
    ephemeral: Option<bool>,
}

/// The `data` fields read here, of any event type.
#[derive(Debug, Deserialize)]
struct Data {
    #[serde(rename = "sessionId")]
    session_id: Option<String>,
    #[serde(rename = "startTime")]
    start_time: Option<String>,
    context: Option<Context>,
    content: Option<String>,
    success: Option<bool>,
    #[serde(rename = "summaryContent")]
    summary_content: Option<String>,
}

/// `session.start`'s `context`.
#[derive(Debug, Deserialize)]
struct Context {
    cwd: Option<String>,
    branch: Option<String>,
}

impl Event {
    /// The main conversation's event (not a sub-agent's, not ephemeral) of `kind`.
    fn main(&self, kind: &str) -> bool {
        self.kind.as_deref() == Some(kind)
            && self.agent_id.is_none()
            && self.ephemeral != Some(true)
    }
}

/// Decode one line's visible items and its time (`default_time` when the event has none);
/// `Err` (the reason) when the line is not JSON at all.
pub fn decode_line(body: &[u8], default_time: i64) -> Result<(LineItems, i64), String> {
    let Some((event, time)) = parse_timed::<Event>(body, default_time, |r| r.timestamp.as_deref())?
    else {
        return Ok((LineItems::None, default_time));
    };
    let text = |kind| {
        let text = event.data.as_ref()?.content.clone()?;
        (!text.trim().is_empty()).then(|| LineItem::new(kind, text))
    };
    let items = if event.main("user.message") {
        text(ItemKind::User).map(|i| LineItems::Append(vec![i]))
    } else if event.main("assistant.message") {
        text(ItemKind::Assistant).map(|i| LineItems::Append(vec![i]))
    } else if event.main("session.compaction_complete") {
        event
            .data
            .as_ref()
            .filter(|d| d.success != Some(false))
            .and_then(|d| d.summary_content.clone())
            .filter(|s| !s.trim().is_empty())
            .map(|s| LineItems::Replace(vec![LineItem::new(ItemKind::Checkpoint, s)]))
    } else {
        None
    };
    Ok((items.unwrap_or(LineItems::None), time))
}

/// The session id a path stands for: the directory of an `events.jsonl`, else the file's
/// stem.
pub fn id_of_path(path: &std::path::Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    let id = if name == "events.jsonl" {
        path.parent()?.file_name()?.to_str()?
    } else {
        path.file_stem()?.to_str()?
    };
    (!id.is_empty()).then(|| id.to_owned())
}

/// Continue (or start) the listing scan of `path`: id, start, cwd and branch from
/// `session.start`, the first request.
pub fn scan_meta(
    path: &std::path::Path,
    meta: LogMeta,
    max_line_bytes: u64,
    clean: TitleCleaner,
) -> Result<LogMeta, QueryError> {
    let see = &mut |meta: &mut LogMeta, _: LineAt, event: Event| {
        let time = event.timestamp.as_deref().and_then(parse_time_ms);
        if event.main("session.start")
            && let Some(data) = &event.data
        {
            if let Some(id) = data.session_id.as_deref().filter(|s| !s.is_empty()) {
                meta.native_id = Some(id.to_owned());
            }
            meta.created_at = data.start_time.as_deref().and_then(parse_time_ms).or(time);
            if let Some(context) = &data.context {
                meta.cwd = context.cwd.clone().filter(|c| !c.is_empty());
                meta.branch = context.branch.clone().filter(|b| !b.trim().is_empty());
            }
        } else if meta.created_at.is_none() {
            meta.created_at = time;
        }
        if !meta.first_user_seen
            && event.main("user.message")
            && let Some(text) = event.data.as_ref().and_then(|d| d.content.as_deref())
            && !text.trim().is_empty()
        {
            meta.see_user_text(text, clean);
        }
        true
    };
    let tool = ("GitHub Copilot CLI", id_of_path(path));
    scan_listing(path, meta, max_line_bytes, tool, see)
}
