//! The agent loop (docs/agent.md): claims work in FIFO order and runs each prompt as a turn of
//! one or more steps, logging exactly as the spec lays out.
//!
//! Log order of a turn: `turn/start`, the admitted contexts (`user/message`), the prompt
//! (`user/message`), then per step: staged messages, `step/start`, chunks,
//! `assistant/message`, `step/end`; finally `turn/end`. The log is fsynced before every
//! provider call and after every turn.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use futures_util::{FutureExt, StreamExt};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::compaction::compact;
use super::context_window::input_budget;
use super::error::AgentError;
use super::handle::{AgentEvent, Shared};
use super::hooks::{Admission, PromptSubmit};
use super::inbox::{AgentStatus, QueuedPrompt, Staged, Work};
use super::reply_blocks::ReplyBlocks;
use super::session_log::{appended, plain, title_event};
use super::title::fallback_title;
use super::tools::{MAX_TOOL_STEPS, TurnTools, run_call};
use crate::llm::{ChatRequest, LlmError, StreamEvent, ToolCallDelta, Usage};
use dsh_store::chunk::{self, BlockType};
use dsh_store::event::{EventData, TitleSourceKind, TurnEndKind, TurnEndReason};
use dsh_store::tool_round::{self, ToolCallBlock};
use dsh_store::{ContentBlock, Event, Message, NewEvent, Role, Source};

/// Run until the last handle is gone and no work is left.
pub(crate) async fn run(shared: Arc<Shared>) {
    reopen(&shared).await;
    loop {
        flush_discards(&shared);
        let claimed = shared.inbox().claim();
        if let Some((work, token)) = claimed {
            run_work(&shared, work, token).await;
        } else {
            if shared.closed.load(Ordering::SeqCst) {
                break;
            }
            shared.wake.notified().await;
        }
    }
}

async fn run_work(shared: &Shared, work: Work, token: CancellationToken) {
    match work {
        Work::Prompt(prompt) => {
            shared.log.send(AgentEvent::Status(AgentStatus::Running));
            run_turn(shared, prompt, token).await;
            finish(shared);
        }
        Work::Compact => {
            shared.log.send(AgentEvent::Status(AgentStatus::Running));
            match manual_compact(shared, &token).await {
                Ok(()) | Err(AgentError::Cancelled) => {}
                Err(e) => report(shared, &e),
            }
            finish(shared);
        }
        Work::Inject(ctx) => {
            if let Err(e) = shared
                .log
                .append(vec![appended(EventData::UserMessage(ctx))], true)
                .await
            {
                report(shared, &e);
            }
        }
        Work::SetTitle(title) => {
            if let Err(e) = write_user_title(shared, &title).await {
                report(shared, &e);
            }
        }
    }
}

/// Before anything else on a log that was already written: say when an earlier version
/// wrote it against dsh's rules, and close what a crash left open (an open compaction, step
/// and turn), as dsh does when it loads such a log.
async fn reopen(shared: &Shared) {
    let inherited = shared.log.inherited();
    if let Some(message) = super::log_notice::inherited_notice(&shared.session_id, &inherited) {
        shared.log.send(AgentEvent::Warning {
            code: super::log_notice::CODE,
            message,
        });
    }
    let closers = shared.log.interrupted_closers();
    if !closers.is_empty()
        && let Err(e) = shared.log.append(closers, true).await
    {
        report(shared, &e);
    }
}

fn finish(shared: &Shared) {
    shared.inbox().finish();
    shared.log.send(AgentEvent::Status(AgentStatus::Idle));
}

pub(crate) fn report(shared: &Shared, e: &AgentError) {
    shared.log.send(AgentEvent::Error {
        code: e.code(),
        message: e.to_string(),
    });
}

/// Report everything `cancel` dropped since the last flush, as one discard.
fn flush_discards(shared: &Shared) {
    let discards = shared.inbox().take_pending_discards();
    if discards.message_ids.is_empty() {
        return;
    }
    discard(shared, discards.message_ids, "cancelled");
}

/// Drop messages that were never logged: nothing is written (no dsh version declares a
/// record of it); the owner is told, with a notice.
fn discard(shared: &Shared, message_ids: Vec<String>, reason: &str) {
    let count = message_ids.len();
    let plural = if count == 1 { "" } else { "s" };
    shared.log.send(AgentEvent::Warning {
        code: "AGENT_MESSAGE_DISCARDED",
        message: format!(
            "discarded {count} queued message{plural} ({reason}); Up brings back what you typed"
        ),
    });
    shared.hooks.notify_discarded(&message_ids);
    shared.log.send(AgentEvent::Discarded { message_ids });
}

/// Admit the prompt through the hook chain, then run its turn.
async fn run_turn(shared: &Shared, prompt: QueuedPrompt, token: CancellationToken) {
    shared.start_turn_provider();
    let QueuedPrompt {
        mut message,
        contexts,
    } = prompt;
    let ctx = PromptSubmit {
        session_id: shared.session_id.clone(),
        message: message.clone(),
        additional_contexts: contexts,
    };
    let admission = tokio::select! {
        biased;
        () = token.cancelled() => None,
        a = shared.hooks.admit(ctx) => Some(a),
    };
    shared.inbox().admitted();
    // Cancelled while admitting: `cancel` already recorded the prompt as discarded.
    let Some(admission) = admission.filter(|_| !token.is_cancelled()) else {
        shared.inbox().close_window_requeue_staged();
        return;
    };
    let additional_contexts = match admission {
        Admission::Allow {
            content,
            additional_contexts,
        } => {
            if let Some(content) = content {
                message.content = content;
            }
            additional_contexts
        }
        Admission::Block { reason } => {
            shared.inbox().close_window_requeue_staged();
            discard(shared, vec![message.id], &reason);
            return;
        }
    };

    let turn = shared.log.next_turn();
    let reason = match run_steps(shared, turn, message, additional_contexts, &token).await {
        Ok(reason) => reason,
        Err(e) => {
            shared.inbox().close_window_requeue_staged();
            if matches!(e, AgentError::Cancelled) {
                TurnEndReason::of(TurnEndKind::Aborted)
            } else {
                report(shared, &e);
                TurnEndReason::error(e.code(), &e.to_string())
            }
        }
    };
    let end = plain(EventData::TurnEnd {
        turn,
        reason,
        extra: serde_json::Map::new(),
    });
    let ended = shared.log.append(vec![end], true).await;
    if let Err(e) = ended {
        report(shared, &e);
    }
}

/// Log the turn's opening and run steps until nothing is staged. Returns the `turn/end`
/// reason for a completed turn; cancellation and failures come back as errors.
async fn run_steps(
    shared: &Shared,
    turn: u64,
    message: Message,
    contexts: Vec<Message>,
    token: &CancellationToken,
) -> Result<TurnEndReason, AgentError> {
    // dsh's trigger shape: the turn was started by a message, with that message's source.
    shared.start_turn_clock();
    let trigger =
        json!({"kind": "message", "source": message.source.clone().unwrap_or_else(Source::user)});
    let mut opening = vec![plain(EventData::TurnStart {
        turn,
        trigger,
        extra: serde_json::Map::new(),
    })];
    opening.extend(
        contexts
            .into_iter()
            .map(|c| appended(EventData::UserMessage(c))),
    );
    opening.push(appended(EventData::UserMessage(message)));
    let logged = shared.log.append(opening, true).await?;
    let mut tools = TurnTools::default();
    tools.observe(&logged);
    write_fallback_title(shared, &logged).await?;
    let own = logged.iter().filter(|e| e.surface_op.is_some()).count();
    compact_if_over_window(shared, turn, own, token).await?;

    // Steps count from 1, as dsh numbers them.
    let mut step: u64 = 1;
    loop {
        let staged = shared.inbox().take_staged();
        if !staged.is_empty() {
            shared.log.send(AgentEvent::Staged { count: 0 });
            let batch = staged
                .into_iter()
                .map(|s| match s {
                    Staged::Context(c) => appended(EventData::UserMessage(c)),
                    Staged::Steering(m) => appended(EventData::SteeringMessage {
                        turn,
                        message: m,
                        extra: serde_json::Map::new(),
                    }),
                })
                .collect();
            let logged = shared.log.append(batch, false).await?;
            tools.observe(&logged);
            write_fallback_title(shared, &logged).await?;
        }
        let called = run_step(shared, turn, step, &mut tools, token).await?;
        // A step that called tools is followed by one that reads their results — while the
        // turn may still call tools: a model that goes on calling after the last step that
        // offered any (its calls answered as unknown tools) has its turn ended.
        let reads_results = called && step <= MAX_TOOL_STEPS;
        if !reads_results && shared.inbox().close_window_if_drained() {
            return Ok(TurnEndReason::of(TurnEndKind::Completed));
        }
        step = step.saturating_add(1);
    }
}

/// The tools step `step` offers: those of the turn's tool box while the turn has
/// references and steps that call tools are left.
fn offered_tools(shared: &Shared, step: u64, tools: &TurnTools) -> Vec<crate::llm::ToolSpec> {
    if step > MAX_TOOL_STEPS {
        return Vec::new();
    }
    shared.tools().map(|t| t.offered(tools)).unwrap_or_default()
}

/// Run the calls of a step's reply in order, logging each `tool/call` and its `tool/result`
/// as dsh does. On cancel the running call's result says so and every call not yet started
/// is answered `TOOL_NOT_STARTED`, so the step still holds a result for each call; the
/// cancel is then returned.
async fn run_tool_round(
    shared: &Shared,
    (turn, step): (u64, u64),
    calls: &[ToolCallBlock],
    offered: &[crate::llm::ToolSpec],
    tools: &mut TurnTools,
    token: &CancellationToken,
) -> Result<(), AgentError> {
    let toolbox = shared.tools();
    for (i, call) in calls.iter().enumerate() {
        if token.is_cancelled() {
            let rest = calls
                .get(i..)
                .unwrap_or_default()
                .iter()
                .map(|c| {
                    NewEvent::tool_result(tool_round::not_started_data(turn, step, &c.id), None)
                })
                .collect();
            shared.log.append(rest, true).await?;
            return Err(AgentError::Cancelled);
        }
        let logged = shared
            .log
            .append(
                vec![plain(tool_round::tool_call_data(turn, step, call))],
                true,
            )
            .await?;
        let call_seq = logged.first().map(|e| e.seq);
        let outcome = run_call(
            toolbox.as_ref(),
            offered,
            tools,
            &call.name,
            &call.arguments,
            token,
        )
        .await;
        tools.calls = tools.calls.saturating_add(1);
        let message = tool_round::tool_result_message(&call.id, &outcome.text, outcome.is_error);
        let error = outcome.code.map(|code| (error_name(code), code));
        let result = NewEvent::tool_result(
            tool_round::tool_result_data(turn, step, message, error),
            call_seq,
        );
        shared.log.append(vec![result], true).await?;
    }
    if token.is_cancelled() {
        return Err(AgentError::Cancelled);
    }
    Ok(())
}

/// dsh's error-info `name` for one of our codes.
fn error_name(code: &str) -> &'static str {
    match code {
        crate::agent::tools::TOOL_CANCELLED => "AbortError",
        crate::agent::tools::TOOL_BAD_ARGUMENTS => "ToolArgumentsError",
        crate::agent::tools::TOOL_UNKNOWN => "ToolNotFoundError",
        _ => "ToolError",
    }
}

/// One step: the request, the reply, and the tool round when the reply calls tools.
/// Returns whether it called tools (the turn then goes on with another step).
async fn run_step(
    shared: &Shared,
    turn: u64,
    step: u64,
    tools: &mut TurnTools,
    token: &CancellationToken,
) -> Result<bool, AgentError> {
    let step_start = plain(EventData::StepStart {
        turn,
        step,
        extra: serde_json::Map::new(),
    });
    shared.log.append(vec![step_start], false).await?;
    let context_tokens = shared.provider().context_tokens();
    let window = shared.log.window(input_budget(context_tokens), 0)?;
    let left_out = window.left_out;
    let messages = window.messages.into_iter().map(|(_, m)| m).collect();
    if left_out > 0 {
        shared.log.send(AgentEvent::Warning {
            code: "AGENT_CONTEXT_TRIMMED",
            message: format!(
                "the session no longer fits the model's context window ({context_tokens} \
                 tokens): the {left_out} oldest messages were left out of this request \
                 (/compact summarizes them)"
            ),
        });
    }
    // Everything acknowledged so far is on disk before the model sees it.
    shared.log.sync().await?;
    let offered = offered_tools(shared, step, tools);
    let request = ChatRequest::new(messages).with_tools(offered.clone());
    let reply = stream_reply(shared, request, token, Some((turn, step))).await;
    let mut reply = match reply {
        Ok(reply) => reply,
        Err(e) => {
            let step_end = plain(EventData::StepEnd {
                turn,
                step,
                extra: serde_json::Map::new(),
            });
            shared.log.append(vec![step_end], false).await?;
            return Err(e);
        }
    };
    let provider = shared.provider();
    let usage = reply
        .usage
        .map(|u| json!({"inputTokens": u.input_tokens, "outputTokens": u.output_tokens}));
    // A reply cut at a bound is kept as what was received, marked as dsh marks a reply
    // it cut (`interrupted: true`); the turn then ends with the bound's error.
    let cut = reply.cut.take();
    let mut extra = serde_json::Map::new();
    if cut.is_some() {
        extra.insert("interrupted".into(), Value::Bool(true));
    }
    let calls = reply.blocks.calls();
    let message = Message::new(
        Role::Assistant,
        reply.content(),
        Source::model(provider.name(), provider.model()),
    );
    let step_end = plain(EventData::StepEnd {
        turn,
        step,
        extra: serde_json::Map::new(),
    });
    let assistant = appended(EventData::AssistantMessage {
        turn,
        step,
        message,
        usage,
        extra,
    });
    if calls.is_empty() {
        shared.log.append(vec![assistant, step_end], false).await?;
        return match cut {
            Some(e) => Err(AgentError::Llm(e)),
            None => Ok(false),
        };
    }
    shared.log.append(vec![assistant], true).await?;
    let round = run_tool_round(shared, (turn, step), &calls, &offered, tools, token).await;
    shared.log.append(vec![step_end], false).await?;
    round.map(|()| true)
}

/// Before a turn's first step: when the surface (with the turn's `own` opening messages)
/// no longer fits the model's context window, compact everything before the turn through
/// the `/compact` path. A compaction that cannot be done (nothing before the turn, or the
/// summary fails) is a warning: the step then trims the request. A failed log write or a
/// cancel ends the turn.
async fn compact_if_over_window(
    shared: &Shared,
    turn: u64,
    own: usize,
    token: &CancellationToken,
) -> Result<(), AgentError> {
    let context_tokens = shared.provider().context_tokens();
    if shared.log.window(input_budget(context_tokens), 0)?.left_out == 0 {
        return Ok(());
    }
    if shared.log.surface_before(own).is_empty() {
        return Ok(());
    }
    match compact(shared, token, turn, own).await {
        Ok(()) => Ok(()),
        Err(e @ (AgentError::Cancelled | AgentError::Store(_))) => Err(e),
        Err(e) => {
            shared.log.send(AgentEvent::Warning {
                code: "AGENT_COMPACTION_FAILED",
                message: format!(
                    "the session no longer fits the model's context window \
                     ({context_tokens} tokens) and automatic compaction failed: {}: {e}",
                    e.code()
                ),
            });
            Ok(())
        }
    }
}

/// What a provider stream produced.
#[derive(Debug, Default)]
pub(crate) struct Reply {
    pub(crate) blocks: ReplyBlocks,
    pub(crate) usage: Option<Usage>,
    /// Why the stream was cut before its end (`[model] max_reply_bytes`,
    /// `max_turn_secs`); the blocks hold what was received until then.
    pub(crate) cut: Option<LlmError>,
}

impl Reply {
    /// The reply's text (reasoning left out).
    pub(crate) fn text(&self) -> String {
        self.blocks.text()
    }

    /// The assistant message's content.
    fn content(self) -> Vec<ContentBlock> {
        self.blocks.content()
    }
}

/// Stream items taken at once when they are already there, and the text they may add up
/// to: a fast stream becomes few, larger chunk events instead of one per network delta.
const COALESCE_ITEMS: usize = 4096;
const COALESCE_BYTES: usize = 256 * 1024;

/// How a batch of stream items ended.
enum Outcome {
    /// More may come.
    Open,
    /// The stream ended normally.
    End,
    /// The provider failed.
    Failed(LlmError),
    /// A bound was reached: the stream is cut.
    Cut(LlmError),
}

/// Stream one provider reply. With `chunks = Some((turn, step))` the stream is logged as
/// `assistant/chunk` events (buffered) in dsh's chunk vocabulary: blocks with their deltas,
/// then `usage` and `finish`. Cancellation wins promptly over a stalled or flooding stream.
///
/// The reply is bounded (docs/llm-providers.md: reply bounds): at `max_reply_bytes` of text
/// plus reasoning, or at the turn's deadline (`max_turn_secs`), the stream is dropped, the
/// open block ends with what arrived, a `finish` chunk records the error, and the reply comes
/// back with [`Reply::cut`] set. Nothing more than the capped reply is held.
pub(crate) async fn stream_reply(
    shared: &Shared,
    request: ChatRequest,
    token: &CancellationToken,
    chunks: Option<(u64, u64)>,
) -> Result<Reply, AgentError> {
    let provider = shared.provider();
    let limits = provider.reply_limits();
    let deadline = shared.turn_deadline();
    let stream_token = token.child_token();
    let mut stream = provider.stream(request, stream_token.clone());
    let mut reply = Reply::default();
    let mut used: u64 = 0;
    loop {
        let first = tokio::select! {
            biased;
            () = token.cancelled() => return Err(AgentError::Cancelled),
            () = tokio::time::sleep_until(deadline) => None,
            next = stream.next() => Some(next),
        };
        let mut deltas: Vec<Piece> = Vec::new();
        let mut outcome = match first {
            None => Outcome::Cut(LlmError::TurnDeadline {
                secs: limits.max_turn.as_secs(),
            }),
            Some(item) => take(item, &mut deltas, &mut reply),
        };
        // Whatever else is already there joins this batch.
        let mut items = 1;
        let mut bytes: usize = deltas.iter().map(Piece::len).sum();
        while matches!(outcome, Outcome::Open) && items < COALESCE_ITEMS && bytes < COALESCE_BYTES {
            let Some(item) = stream.next().now_or_never() else {
                break;
            };
            items += 1;
            outcome = take(item, &mut deltas, &mut reply);
            bytes = deltas.iter().map(Piece::len).sum();
        }
        let mut logged = Vec::new();
        for piece in deltas {
            let room = limits.max_reply_bytes.saturating_sub(used);
            let too_large = || {
                Outcome::Cut(LlmError::ReplyTooLarge {
                    limit: limits.max_reply_bytes,
                })
            };
            match piece {
                Piece::Prose(kind, mut text) => {
                    if text.len() as u64 > room {
                        text.truncate(char_floor(
                            &text,
                            usize::try_from(room).unwrap_or(usize::MAX),
                        ));
                        outcome = too_large();
                    }
                    if !text.is_empty() {
                        used += text.len() as u64;
                        logged.extend(reply.blocks.push(kind, &text));
                    }
                }
                // A call's arguments count like text; one that would pass the bound is not
                // kept (a cut reply keeps no call).
                Piece::Call(call) => {
                    if call.arguments.len() as u64 > room {
                        outcome = too_large();
                    } else {
                        used += call.arguments.len() as u64;
                        logged.extend(reply.blocks.push_call(&call, new_call_id));
                    }
                }
            }
            if matches!(outcome, Outcome::Cut(_)) {
                break;
            }
        }
        match outcome {
            Outcome::Open => log_chunks(shared, chunks, logged).await?,
            Outcome::End => {
                logged.extend(reply.blocks.close());
                if let Some(u) = reply.usage {
                    logged.push(chunk::usage(u.input_tokens, u.output_tokens));
                }
                logged.push(if reply.blocks.calls().is_empty() {
                    chunk::finish_stop()
                } else {
                    chunk::finish_tool_calls()
                });
                log_chunks(shared, chunks, logged).await?;
                return Ok(reply);
            }
            Outcome::Failed(e) => {
                log_chunks(shared, chunks, logged).await?;
                if token.is_cancelled() {
                    return Err(AgentError::Cancelled);
                }
                return Err(AgentError::Llm(e));
            }
            Outcome::Cut(e) => {
                // Stop the provider's request at once; nothing more is read.
                stream_token.cancel();
                drop(stream);
                logged.extend(reply.blocks.close_cut());
                logged.push(chunk::finish_error(e.code(), &e.to_string()));
                log_chunks(shared, chunks, logged).await?;
                reply.cut = Some(e);
                return Ok(reply);
            }
        }
    }
}

/// One stream item into the batch: a delta joins `deltas` (merged with the one before
/// when of the same kind), usage is kept, the end or a failure ends the batch.
fn take(
    item: Option<Result<StreamEvent, LlmError>>,
    deltas: &mut Vec<Piece>,
    reply: &mut Reply,
) -> Outcome {
    let (kind, text) = match item {
        None => return Outcome::End,
        Some(Err(e)) => return Outcome::Failed(e),
        Some(Ok(StreamEvent::Usage(u))) => {
            reply.usage = Some(u);
            return Outcome::Open;
        }
        Some(Ok(StreamEvent::ToolCall(call))) => {
            match deltas.last_mut() {
                Some(Piece::Call(last)) if last.index == call.index => {
                    last.arguments.push_str(&call.arguments);
                    if last.id.is_none() {
                        last.id = call.id;
                    }
                    if last.name.is_none() {
                        last.name = call.name;
                    }
                }
                _ => deltas.push(Piece::Call(call)),
            }
            return Outcome::Open;
        }
        Some(Ok(StreamEvent::Text(t))) => (BlockType::Text, t),
        Some(Ok(StreamEvent::Reasoning(t))) => (BlockType::Reasoning, t),
    };
    if text.is_empty() {
        return Outcome::Open;
    }
    match deltas.last_mut() {
        Some(Piece::Prose(k, joined)) if *k == kind => joined.push_str(&text),
        _ => deltas.push(Piece::Prose(kind, text)),
    }
    Outcome::Open
}

/// Stream items of one batch, merged: prose of one kind, or pieces of one tool call.
enum Piece {
    Prose(BlockType, String),
    Call(ToolCallDelta),
}

impl Piece {
    fn len(&self) -> usize {
        match self {
            Piece::Prose(_, t) => t.len(),
            Piece::Call(c) => c.arguments.len(),
        }
    }
}

/// An id for a call whose provider sent none before its first piece.
fn new_call_id() -> String {
    format!(
        "call_{}",
        dsh_store::event::new_message_id().replace('-', "")
    )
}

/// The largest char boundary of `text` at or below `at`.
fn char_floor(text: &str, at: usize) -> usize {
    let mut end = at.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    end
}

/// Log stream chunks of step `(turn, step)` as buffered `assistant/chunk` events (nothing
/// when the reply is not logged).
async fn log_chunks(
    shared: &Shared,
    at: Option<(u64, u64)>,
    chunks: Vec<Value>,
) -> Result<(), AgentError> {
    let Some((turn, step)) = at else {
        return Ok(());
    };
    if chunks.is_empty() {
        return Ok(());
    }
    let batch = chunks
        .into_iter()
        .map(|chunk| {
            plain(EventData::AssistantChunk {
                turn,
                step,
                chunk,
                extra: serde_json::Map::new(),
            })
        })
        .collect();
    shared.log.append(batch, false).await?;
    Ok(())
}

/// After the session's first direct user message whose text has something to show, write
/// its fallback title (docs/session-store.md: titles).
async fn write_fallback_title(shared: &Shared, logged: &[Event]) -> Result<(), AgentError> {
    if shared.log.has_title() {
        return Ok(());
    }
    let titled = logged.iter().find_map(|e| {
        let m = e.message()?;
        let direct = m.is_direct_user()
            && matches!(
                e.data,
                EventData::UserMessage(_) | EventData::SteeringMessage { .. }
            );
        direct.then(|| fallback_title(&m.joined_text()).map(|t| (e.seq, t)))?
    });
    if let Some((seq, title)) = titled {
        shared
            .log
            .append(
                vec![title_event(title, vec![seq], TitleSourceKind::Fallback)],
                false,
            )
            .await?;
    }
    Ok(())
}

/// The opening of a turn that only carries a log-only record (a user title, a `/compact`):
/// dsh at the followed commit wants every such record inside a turn.
fn own_turn_start(turn: u64, trigger: &str) -> NewEvent {
    plain(EventData::TurnStart {
        turn,
        trigger: json!({"kind": trigger}),
        extra: serde_json::Map::new(),
    })
}

fn turn_end(turn: u64, reason: TurnEndReason) -> NewEvent {
    plain(EventData::TurnEnd {
        turn,
        reason,
        extra: serde_json::Map::new(),
    })
}

/// `/title TEXT`: a `user` title (it pins the title), citing no message, in a turn of its own.
async fn write_user_title(shared: &Shared, title: &str) -> Result<(), AgentError> {
    let clean = super::title::clean_title(title).ok_or(AgentError::EmptyTitle)?;
    let turn = shared.log.next_turn();
    shared
        .log
        .append(
            vec![
                own_turn_start(turn, "session-title"),
                title_event(clean, Vec::new(), TitleSourceKind::User),
                turn_end(turn, TurnEndReason::of(TurnEndKind::Completed)),
            ],
            true,
        )
        .await?;
    Ok(())
}

/// `/compact`: the whole surface, in a turn of its own that ends as the compaction did.
async fn manual_compact(shared: &Shared, token: &CancellationToken) -> Result<(), AgentError> {
    if shared.log.surface_before(0).is_empty() {
        return Err(AgentError::NothingToCompact);
    }
    let turn = shared.log.next_turn();
    shared.start_turn_clock();
    shared
        .log
        .append(vec![own_turn_start(turn, "compaction")], true)
        .await?;
    let result = compact(shared, token, turn, 0).await;
    let reason = match &result {
        Ok(()) => TurnEndReason::of(TurnEndKind::Completed),
        Err(AgentError::Cancelled) => TurnEndReason::of(TurnEndKind::Aborted),
        Err(e) => TurnEndReason::error(e.code(), &e.to_string()),
    };
    shared
        .log
        .append(vec![turn_end(turn, reason)], true)
        .await?;
    result
}
