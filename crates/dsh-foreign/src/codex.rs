//! Codex CLI rollouts (`<sessions>/YYYY/MM/DD/rollout-*.jsonl`): lines `{timestamp, type,
//! payload}` of type `session_meta` (id, cwd, timestamp), `response_item` (messages, tool
//! calls and outputs, reasoning), `event_msg`, `turn_context` and `compacted`.
//!
//! The visible conversation is the `user` and `assistant` `message` items' text, minus the
//! context Codex injects as user messages (`<environment_context>`, `<user_instructions>`,
//! AGENTS.md instructions). A `compacted` record replaces everything before it with its
//! summary, which becomes a checkpoint.

use std::io::{BufReader, Seek, SeekFrom};
use std::path::Path;

use serde::Deserialize;

use dsh_store::QueryError;

use super::jsonl::{JsonlLines, Parsed, parse_line};
use super::log_meta::{LogMeta, TitleCleaner};
use super::open_file::open_regular;
use super::surface_events::{ItemKind, parse_time_ms};

/// One rollout line.
#[derive(Debug, Deserialize)]
struct Line {
    timestamp: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    payload: Option<Payload>,
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
    /// `compacted`: the summary.
    message: Option<String>,
    /// `compacted` (remote compaction): the history that replaces the old one.
    replacement_history: Option<Vec<Payload>>,
}

#[derive(Debug, Deserialize)]
struct Block {
    #[serde(rename = "type")]
    kind: Option<String>,
    text: Option<String>,
}

/// What one line contributes to the surface.
#[derive(Debug, PartialEq, Eq)]
pub enum LineItems {
    /// Nothing visible.
    None,
    /// Items appended to the surface.
    Append(Vec<(ItemKind, String)>),
    /// A compaction: the surface so far is replaced by these items.
    Replace(Vec<(ItemKind, String)>),
}

/// Context Codex sends as a user message but the person did not type.
fn is_injected_user_text(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with("<environment_context>")
        || t.starts_with("<user_instructions>")
        || t.starts_with("<permissions instructions>")
        || t.starts_with("<user_shell_command>")
        || t.starts_with("# AGENTS.md instructions")
}

/// The visible item of a `message` payload.
fn message_item(p: Payload) -> Option<(ItemKind, String)> {
    if p.kind.as_deref() != Some("message") {
        return None;
    }
    let (kind, block_type) = match p.role.as_deref() {
        Some("user") => (ItemKind::User, "input_text"),
        Some("assistant") => (ItemKind::Assistant, "output_text"),
        _ => return None,
    };
    let texts: Vec<String> = p
        .content?
        .into_iter()
        .filter(|b| b.kind.as_deref() == Some(block_type))
        .filter_map(|b| b.text)
        .collect();
    let text = texts.join("\n");
    if text.is_empty() || (kind == ItemKind::User && is_injected_user_text(&text)) {
        return None;
    }
    Some((kind, text))
}

/// Decode one line's visible items and its time (Unix ms, 0 when absent); `Err` (the
/// reason) when the line is not JSON at all.
pub fn decode_line(body: &[u8]) -> Result<(LineItems, i64), String> {
    let line = match parse_line::<Line>(body) {
        Parsed::Record(l) => l,
        Parsed::Other => return Ok((LineItems::None, 0)),
        Parsed::NotJson(reason) => return Err(reason),
    };
    let time = line
        .timestamp
        .as_deref()
        .and_then(parse_time_ms)
        .unwrap_or(0);
    let Some(payload) = line.payload else {
        return Ok((LineItems::None, time));
    };
    let items = match line.kind.as_deref() {
        Some("response_item") => match message_item(payload) {
            Some(item) => LineItems::Append(vec![item]),
            None => LineItems::None,
        },
        Some("compacted") => {
            LineItems::Replace(match payload.message.filter(|m| !m.trim().is_empty()) {
                Some(summary) => vec![(ItemKind::Checkpoint, summary)],
                // A remote compaction may carry only the history that replaces the old one.
                None => payload
                    .replacement_history
                    .unwrap_or_default()
                    .into_iter()
                    .filter_map(message_item)
                    .collect(),
            })
        }
        _ => LineItems::None,
    };
    Ok((items, time))
}

/// Continue (or start) the listing scan of `path` from `meta.resume`: the `session_meta`
/// line and the first typed user message; the rest of the file is not read.
pub fn scan_meta(
    path: &Path,
    mut meta: LogMeta,
    max_line_bytes: u64,
    clean: TitleCleaner,
) -> Result<LogMeta, QueryError> {
    let (offset, line) = meta.resume.unwrap_or((0, 1));
    if meta.resume.is_none() {
        meta = LogMeta::default();
    }
    let mut file = open_regular(path)?;
    file.seek(SeekFrom::Start(offset))
        .map_err(|e| io_err(path, e))?;
    let mut lines = JsonlLines::new(
        path,
        BufReader::with_capacity(64 * 1024, file),
        max_line_bytes,
        offset,
        line,
    );
    let mut damaged = false;
    while !(meta.first_user_seen && meta.native_id.is_some()) {
        let line = match lines.next_record::<Line>() {
            Err(e @ QueryError::Io { .. }) => return Err(e),
            Err(e) => {
                tracing::warn!(error = %e, "Codex rollout damaged; listed with what was read");
                damaged = true;
                break;
            }
            Ok(None) => break,
            Ok(Some((_, line))) => line,
        };
        let Some(payload) = line.payload else {
            continue;
        };
        match line.kind.as_deref() {
            Some("session_meta") if meta.native_id.is_none() => {
                meta.native_id = payload.id.filter(|id| !id.is_empty());
                meta.cwd = payload.cwd.filter(|c| !c.is_empty());
                meta.created_at = payload
                    .timestamp
                    .as_deref()
                    .or(line.timestamp.as_deref())
                    .and_then(parse_time_ms);
            }
            Some("response_item") if !meta.first_user_seen => {
                if let Some((ItemKind::User, text)) = message_item(payload) {
                    meta.see_user_text(&text, clean);
                }
            }
            _ => {}
        }
    }
    meta.resume = (!damaged).then(|| lines.resume_at());
    Ok(meta)
}

fn io_err(path: &Path, source: std::io::Error) -> QueryError {
    QueryError::Io {
        path: path.to_owned(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(line: &str) -> LineItems {
        decode_line(line.as_bytes()).unwrap().0
    }

    #[test]
    fn line_table() {
        let user = r#"{"timestamp":"2025-01-01T00:00:00Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"fix it"}]}}"#;
        assert_eq!(
            items(user),
            LineItems::Append(vec![(ItemKind::User, "fix it".into())])
        );
        let env = r#"{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>\n<cwd>/x</cwd>"}]}}"#;
        assert_eq!(items(env), LineItems::None);
        let dev = r#"{"type":"response_item","payload":{"type":"message","role":"developer","content":[{"type":"input_text","text":"rules"}]}}"#;
        assert_eq!(items(dev), LineItems::None);
        let reply = r#"{"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"a"},{"type":"output_text","text":"b"}]}}"#;
        assert_eq!(
            items(reply),
            LineItems::Append(vec![(ItemKind::Assistant, "a\nb".into())])
        );
        for hidden in [
            r#"{"type":"response_item","payload":{"type":"reasoning","summary":[{"type":"summary_text","text":"think"}]}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{}","call_id":"c"}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":"x"}}"#,
            r#"{"type":"event_msg","payload":{"type":"user_message","message":"fix it"}}"#,
            r#"{"type":"turn_context","payload":{"cwd":"/x","model":"m"}}"#,
            r#"{"type":"future","payload":{"what":1}}"#,
            r"[1,2]",
        ] {
            assert_eq!(items(hidden), LineItems::None, "{hidden}");
        }
        let compacted = r#"{"type":"compacted","payload":{"message":"summary so far"}}"#;
        assert_eq!(
            items(compacted),
            LineItems::Replace(vec![(ItemKind::Checkpoint, "summary so far".into())])
        );
    }
}
