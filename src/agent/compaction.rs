//! `/compact` (docs/agent.md): the provider summarizes the current surface, and a checkpoint
//! `user/message` with the compact marker source replaces the whole surface.

use serde_json::json;
use tokio_util::sync::CancellationToken;

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

/// Summarize and replace the surface. On failure or cancel `compact/end` records why and
/// the surface is left as it was.
pub(crate) async fn compact(shared: &Shared, token: &CancellationToken) -> Result<(), AgentError> {
    let surface = shared.log.surface()?;
    let (Some((first, _)), Some((last, _))) = (surface.first(), surface.last()) else {
        return Err(AgentError::NothingToCompact);
    };
    let (first, last) = (*first, *last);
    let seqs: Vec<u64> = surface.iter().map(|(s, _)| *s).collect();
    let messages = surface.into_iter().map(|(_, m)| m).collect();

    let start = plain(other(kind::COMPACT_START, json!({"reason": "manual"})));
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
