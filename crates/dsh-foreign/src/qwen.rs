//! Qwen Code sessions (docs/foreign-sources.md, Qwen Code): Qwen Code, a Gemini CLI fork,
//! records each session as JSON lines in `~/.qwen/projects/<sanitized cwd>/chats/<session
//! id>.jsonl` (its `ChatRecordingService`; the projects directory moves with
//! `QWEN_RUNTIME_DIR`). Each line is a `ChatRecord`: `{uuid, parentUuid, sessionId,
//! timestamp, type: user|assistant|tool_result|system, subtype?, cwd, version, gitBranch?,
//! message?: {role, parts}, systemPayload?}`, `message` being the Gemini API `Content` sent
//! to or received from the model.
//!
//! - The person's words: a `user` record's text parts, by Gemini CLI's rules (the session
//!   context, `/` and `?` commands, `@path` contents and function responses are not
//!   theirs); a reply: an `assistant` record's text parts that are not thoughts.
//!   `tool_result` records and `system` records (slash commands, telemetry, notes, …) are
//!   left out.
//! - Compression: a `system` record of subtype `chat_compression` carries the history that
//!   replaces the conversation (`systemPayload.compressedHistory`, a `Content` list whose
//!   first request is the `<state_snapshot>` summary): the surface becomes that history,
//!   the summary its checkpoint.
//! - Title: the newest `custom_title` record's `customTitle` the person gave (`titleSource:
//!   manual`, `/rename`), else the newest Qwen Code generated (`auto`), else the first
//!   request. Branch: the newest `gitBranch` recorded.

use serde::Deserialize;
use serde_json::Value;

use dsh_store::QueryError;

use super::gemini::records::HistoryTurn;
use super::jsonl::{LineAt, parse_timed, scan_listing};
use super::line_items::{LineItem, LineItems};
use super::log_meta::{LogMeta, TitleCleaner, title_text};
use super::surface_events::{ItemKind, parse_time_ms};

/// A Qwen Code record's fields read here.
#[derive(Debug, Deserialize)]
struct Record {
    #[serde(rename = "sessionId")]
    session_id: Option<String>,
    timestamp: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    subtype: Option<String>,
    cwd: Option<String>,
    #[serde(rename = "gitBranch")]
    git_branch: Option<String>,
    message: Option<HistoryTurn>,
    #[serde(rename = "systemPayload")]
    system_payload: Option<Value>,
}

impl Record {
    /// The visible item of a `user` or `assistant` record (its `message` read as the Gemini
    /// `Content` it is).
    fn item(self) -> Option<LineItem> {
        let (kind, role) = match (self.kind.as_deref(), self.subtype.as_deref()) {
            (Some("user"), None | Some("mid_turn_user_message")) => (ItemKind::User, "user"),
            (Some("assistant"), None) => (ItemKind::Assistant, "model"),
            _ => return None,
        };
        let mut message = self.message?;
        message.role = Some(role.to_owned());
        let (shown, text) = message.item()?;
        // A request holding a `<state_snapshot>` is a compression's summary (as Gemini CLI
        // reads one).
        let fits = shown == kind || (kind == ItemKind::User && shown == ItemKind::Checkpoint);
        fits.then(|| LineItem::new(shown, text))
    }
}

/// The items that replace the surface at a compression, if `record` is one.
fn compression(record: &Record) -> Option<Vec<LineItem>> {
    if record.kind.as_deref() != Some("system")
        || record.subtype.as_deref() != Some("chat_compression")
    {
        return None;
    }
    let history = record.system_payload.as_ref()?.get("compressedHistory")?;
    let turns: Vec<HistoryTurn> = serde_json::from_value(history.clone()).ok()?;
    Some(
        turns
            .iter()
            .filter_map(HistoryTurn::item)
            .map(|(kind, text)| LineItem::new(kind, text))
            .collect(),
    )
}

/// Decode one line's visible items and its time (`default_time` when the record has
/// none); `Err` (the reason) when the line is not JSON at all.
pub fn decode_line(body: &[u8], default_time: i64) -> Result<(LineItems, i64), String> {
    let Some((record, time)) =
        parse_timed::<Record>(body, default_time, |r| r.timestamp.as_deref())?
    else {
        return Ok((LineItems::None, default_time));
    };
    if let Some(items) = compression(&record) {
        return Ok((LineItems::Replace(items), time));
    }
    Ok(match record.item() {
        Some(item) => (LineItems::Append(vec![item]), time),
        None => (LineItems::None, time),
    })
}

/// The title a `custom_title` record gives (`systemPayload.customTitle`) and whether Qwen
/// Code generated it (`titleSource: "auto"`) rather than the person (`"manual"`, `/rename`).
pub fn custom_title(payload: Option<&Value>) -> Option<(String, bool)> {
    let payload = payload?;
    let title = payload.get("customTitle")?.as_str().and_then(title_text)?;
    let auto = payload.get("titleSource").and_then(Value::as_str) == Some("auto");
    Some((title, auto))
}

/// Continue (or start) the listing scan of `path`: id, cwd and creation time from the first
/// records, the newest branch and title, the first request.
pub fn scan_meta(
    path: &std::path::Path,
    meta: LogMeta,
    max_line_bytes: u64,
    clean: TitleCleaner,
) -> Result<LogMeta, QueryError> {
    let see = &mut |meta: &mut LogMeta, _: LineAt, record: Record| {
        if let Some(id) = record.session_id.as_deref().filter(|s| !s.is_empty())
            && meta.created_at.is_none()
        {
            meta.native_id = Some(id.to_owned());
        }
        if meta.created_at.is_none() {
            meta.created_at = record.timestamp.as_deref().and_then(parse_time_ms);
        }
        if meta.cwd.is_none() {
            meta.cwd = record.cwd.clone().filter(|c| !c.is_empty());
        }
        if let Some(branch) = record.git_branch.clone().filter(|b| !b.trim().is_empty()) {
            meta.branch = Some(branch);
        }
        if record.kind.as_deref() == Some("system")
            && record.subtype.as_deref() == Some("custom_title")
            && let Some((title, auto)) = custom_title(record.system_payload.as_ref())
        {
            if auto {
                meta.ai_title = Some(title);
            } else {
                meta.custom_title = Some(title);
            }
        }
        if !meta.first_user_seen
            && let Some(item) = record.item()
            && item.kind == ItemKind::User
        {
            meta.see_user_text(&item.text, clean);
        }
        true
    };
    let file_id = path
        .file_stem()
        .and_then(|s| s.to_str())
        .filter(|s| !s.is_empty())
        .map(str::to_owned);
    scan_listing(path, meta, max_line_bytes, ("Qwen Code", file_id), see)
}
