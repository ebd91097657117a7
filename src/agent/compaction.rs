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
use dsh_store::event::{EventData, kind};
use dsh_store::{ContentBlock, Message, Role, Source, SurfaceOp};
use dsh_store::{NewEvent, StoreError};

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
    let span = shared.log.surface_before(keep_newest);
    if span.is_empty() {
        return Err(AgentError::NothingToCompact);
    }
    // The instruction alone is what an empty summary request holds.
    let instruction: u64 = summarize_request(Vec::new())
        .messages
        .iter()
        .map(estimate_tokens)
        .sum();
    let budget = input_budget(shared.provider().context_tokens()).saturating_sub(instruction);
    let window = shared.log.window(budget, keep_newest)?;
    let messages = window.messages.into_iter().map(|(_, m)| m).collect();

    let id = uuid::Uuid::new_v4().to_string();
    let start = plain(other(
        kind::COMPACTION_START,
        json!({"compactionId": id, "turn": turn}),
    ));
    let logged = shared.log.append(vec![start], true).await?;
    let start_seq = logged.first().map_or(0, |e| e.seq);

    let summary = match stream_reply(shared, summarize_request(messages), token, None).await {
        // A summary cut at a bound is not a summary of the span.
        Ok(reply) if reply.cut.is_some() => {
            let cut = reply.cut.map_or(AgentError::EmptySummary, AgentError::Llm);
            return abandon(shared, &id, turn, cut).await;
        }
        Ok(reply) if !reply.text().trim().is_empty() => reply.text().trim().to_owned(),
        Ok(_) => return abandon(shared, &id, turn, AgentError::EmptySummary).await,
        Err(e) => return abandon(shared, &id, turn, e).await,
    };
    // Every shadowed node is listed twice (the summary's shadowedSeqs, the checkpoint's
    // sourceEventSeqs): a span too long for one line keeps its newest part.
    let shadowed = fitting_tail(&span, &summary, shared.log.max_line_bytes());
    // And few enough to be read back (each is a value of the summary's data).
    let shadowed = shadowed
        .get(
            shadowed
                .len()
                .saturating_sub(dsh_store::line_cost::MAX_LISTED_SEQS)..,
        )
        .unwrap_or(shadowed);
    let (Some(&first), Some(&last)) = (shadowed.first(), shadowed.last()) else {
        return abandon(shared, &id, turn, AgentError::NothingToCompact).await;
    };
    let shadowed_tokens = match shared.log.estimated_tokens(shadowed) {
        Ok(tokens) => tokens,
        Err(e) => return abandon(shared, &id, turn, e).await,
    };
    let provider = shared.provider();
    let summary_seq = shared.log.next_seq();
    let mut sources = Vec::with_capacity(shadowed.len() + 2);
    sources.extend([start_seq, summary_seq]);
    sources.extend(shadowed);
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
    match shared.log.append(batch, true).await {
        Ok(_) => Ok(()),
        // Refused before anything was queued (a line too long, a broken rule): the
        // compaction ends as failed, so its turn can end.
        Err(
            e @ AgentError::Store(
                StoreError::LineTooLong { .. }
                | StoreError::LineTooDense { .. }
                | StoreError::RuleBroken { .. }
                | StoreError::InvalidEvent { .. },
            ),
        ) => abandon(shared, &id, turn, e).await,
        Err(e) => Err(e),
    }
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

/// Bytes of a compaction line besides its list of seqs: keys, ids, names (the summary text
/// is counted separately, escaped at worst 6 bytes per byte).
const LINE_OVERHEAD: u64 = 2 << 10;

/// The newest part of `span` whose seqs, with `summary`, fit one line of `max_line` bytes
/// (the whole span when it fits, at least its last node).
fn fitting_tail<'a>(span: &'a [u64], summary: &str, max_line: u64) -> &'a [u64] {
    let reserve = LINE_OVERHEAD.saturating_add((summary.len() as u64).saturating_mul(6));
    let room = max_line.saturating_sub(reserve);
    let mut used: u64 = 0;
    let mut from = span.len();
    for (i, seq) in span.iter().enumerate().rev() {
        // The seq's digits and its comma.
        let cost = u64::from(seq.checked_ilog10().unwrap_or(0)) + 2;
        if used.saturating_add(cost) > room && from < span.len() {
            break;
        }
        used = used.saturating_add(cost);
        from = i;
    }
    span.get(from..).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_span_too_long_for_one_line_keeps_its_newest_part() {
        let span: Vec<u64> = (0..1000).collect();
        assert_eq!(fitting_tail(&span, "s", 1 << 20), span.as_slice());
        // 3 616 bytes of room: 900 three-digit seqs (4 bytes each), then 5 two-digit ones (3).
        let kept = fitting_tail(&span, "", LINE_OVERHEAD + 3_616);
        assert_eq!(kept.len(), 905);
        assert_eq!(kept.last(), Some(&999));
        // A summary eats into the room (6 bytes per byte at worst).
        assert_eq!(
            fitting_tail(&span, &"x".repeat(100), LINE_OVERHEAD + 3_616).len(),
            754
        );
        // Never nothing.
        assert_eq!(fitting_tail(&span, "", 10), &[999]);
    }
}
