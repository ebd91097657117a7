//! `/compact` and automatic compaction (docs/agent.md: compaction): the provider summarizes a
//! bounded window of the surface, and a checkpoint `user/message` with the compact marker
//! source replaces the surface (all of it, or all before the turn that triggered it).
//!
//! The record is the newest dsh release's (`compaction/start|summary|end` with a
//! `compactionId`), inside the turn that owns it, so both dsh versions read it
//! (docs/session-store.md: compaction): the checkpoint follows its summary and lists, in its
//! `sourceEventSeqs`, the start and summary events and every surface node it shadows.

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

/// The checkpoint's source: the compact marker, naming its compaction.
fn checkpoint_source(compaction_id: &str) -> Source {
    Source(json!({"kind": "plugin", "plugin": "compact", "compactionId": compaction_id}))
}

/// Summarize and replace the surface except its newest `keep_newest` events (a turn's own
/// opening messages, which the summary must not swallow), inside turn `turn` (the turn that
/// needed it, or the one `/compact` opened). The summary request is a bounded window of that
/// span (latest checkpoint plus the newest messages that fit the model); the checkpoint
/// shadows the whole span. On failure or cancel `compaction/end` records why and the surface
/// is left as it was.
pub(crate) async fn compact(
    shared: &Shared,
    token: &CancellationToken,
    turn: u64,
    keep_newest: usize,
) -> Result<(), AgentError> {
    let shadowed = shared.log.surface_before(keep_newest);
    let (Some(&first), Some(&last)) = (shadowed.first(), shadowed.last()) else {
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
    let messages = window.messages.into_iter().map(|(_, m)| m).collect();
    let shadowed_tokens = shared.log.estimated_tokens(&shadowed)?;

    let id = uuid::Uuid::new_v4().to_string();
    let start = plain(other(
        kind::COMPACTION_START,
        json!({"compactionId": id, "turn": turn}),
    ));
    let logged = shared.log.append(vec![start], true).await?;
    let start_seq = logged.first().map_or(0, |e| e.seq);

    let summary = match stream_reply(shared, summarize_request(messages), token, None).await {
        Ok(reply) if !reply.text().trim().is_empty() => reply.text().trim().to_owned(),
        Ok(_) => return abandon(shared, &id, turn, AgentError::EmptySummary).await,
        Err(e) => return abandon(shared, &id, turn, e).await,
    };
    let provider = shared.provider();
    let summary_seq = shared.log.next_seq();
    let mut sources = Vec::with_capacity(shadowed.len() + 2);
    sources.extend([start_seq, summary_seq]);
    sources.extend(&shadowed);
    let checkpoint = Message::new(
        Role::User,
        vec![ContentBlock::text(checkpoint_text(&summary))],
        checkpoint_source(&id),
    );
    let batch = vec![
        plain(other(
            kind::COMPACTION_SUMMARY,
            json!({
                "compactionId": id,
                "summary": [{"type": "text", "text": summary}],
                "shadowedRange": {"start": first, "end": last},
                "shadowedSeqs": shadowed,
                "shadowedTokenCount": shadowed_tokens,
                "provider": provider.name(),
                "model": provider.model(),
            }),
        )),
        NewEvent {
            data: EventData::UserMessage(checkpoint),
            surface_op: Some(SurfaceOp::Replace {
                start: first,
                end: last,
            }),
            source_event_seqs: Some(sources),
        },
        plain(other(
            kind::COMPACTION_END,
            json!({"compactionId": id, "turn": turn}),
        )),
    ];
    shared.log.append(batch, true).await?;
    Ok(())
}

/// Close the bookkeeping of a failed or cancelled compaction (`error: "CODE: message"`) and
/// pass the error on.
async fn abandon(shared: &Shared, id: &str, turn: u64, e: AgentError) -> Result<(), AgentError> {
    let end = plain(other(
        kind::COMPACTION_END,
        json!({"compactionId": id, "turn": turn, "error": format!("{}: {e}", e.code())}),
    ));
    shared.log.append(vec![end], true).await?;
    Err(e)
}
