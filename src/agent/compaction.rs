//! `/compact` and automatic compaction (docs/agent.md): the provider summarizes a bounded
//! window of the surface, and a checkpoint `user/message` with the compact marker source
//! replaces the surface (all of it, or all before the turn that triggered it).

use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::context_window::{estimate_tokens, input_budget};
use super::error::AgentError;
use super::handle::Shared;
use super::session_log::{other, plain};
use super::turn_loop::stream_reply;
use crate::llm::summarize_request;
use dsh_store::NewEvent;
use dsh_store::event::{EventData, kind};
use dsh_store::{ContentBlock, Message, Role, Source, SurfaceOp};

/// The checkpoint text: the summary wrapped in `<compacted-summary>` tags.
pub fn checkpoint_text(summary: &str) -> String {
    format!("<compacted-summary>\n{summary}\n</compacted-summary>")
}

/// Why a compaction runs: asked for (`/compact`), or a turn whose surface no longer fits
/// the model's context window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CompactReason {
    Manual,
    Auto,
}

impl CompactReason {
    fn as_str(self) -> &'static str {
        match self {
            CompactReason::Manual => "manual",
            CompactReason::Auto => "auto",
        }
    }
}

/// Summarize and replace the surface except its newest `keep_newest` events (a turn's own
/// opening messages, which the summary must not swallow). The summary request is a bounded
/// window of that span (latest checkpoint plus the newest messages that fit the model);
/// `sourceEventSeqs` names the messages it summarized. On failure or cancel `compact/end`
/// records why and the surface is left as it was.
pub(crate) async fn compact(
    shared: &Shared,
    token: &CancellationToken,
    reason: CompactReason,
    keep_newest: usize,
) -> Result<(), AgentError> {
    let Some((first, last)) = shared.log.span_before(keep_newest) else {
        return Err(AgentError::NothingToCompact);
    };
    // The instruction alone is what an empty summary request holds.
    let instruction: u64 = summarize_request(Vec::new())
        .messages
        .iter()
        .map(estimate_tokens)
        .sum();
    let budget = input_budget(shared.provider().context_tokens()).saturating_sub(instruction);
    let window = shared.log.window(budget, keep_newest)?;
    let seqs: Vec<u64> = window.messages.iter().map(|(s, _)| *s).collect();
    let messages = window.messages.into_iter().map(|(_, m)| m).collect();

    let start = plain(other(
        kind::COMPACT_START,
        json!({"reason": reason.as_str()}),
    ));
    shared.log.append(vec![start], true).await?;

    let summary = match stream_reply(shared, summarize_request(messages), token, None).await {
        Ok(reply) if !reply.text().trim().is_empty() => reply.text().trim().to_owned(),
        Ok(_) => return abandon(shared, AgentError::EmptySummary).await,
        Err(e) => return abandon(shared, e).await,
    };
    let checkpoint = Message::new(
        Role::User,
        vec![ContentBlock::text(checkpoint_text(&summary))],
        Source::compact_checkpoint(),
    );
    let batch = vec![
        plain(other(kind::COMPACT_SUMMARY, json!({"summary": summary}))),
        NewEvent {
            data: EventData::UserMessage(checkpoint),
            surface_op: Some(SurfaceOp::Replace {
                start: first,
                end: last,
            }),
            source_event_seqs: Some(seqs),
        },
        plain(other(kind::COMPACT_END, json!({}))),
    ];
    shared.log.append(batch, true).await?;
    Ok(())
}

/// Close the bookkeeping of a failed compaction and pass the error on.
async fn abandon(shared: &Shared, e: AgentError) -> Result<(), AgentError> {
    let reason = if matches!(e, AgentError::Cancelled) {
        json!({"reason": {"kind": "aborted"}})
    } else {
        json!({"reason": {"kind": "error", "code": e.code(), "message": e.to_string()}})
    };
    shared
        .log
        .append(vec![plain(other(kind::COMPACT_END, reason))], true)
        .await?;
    Err(e)
}
