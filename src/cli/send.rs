//! `dsh-refs send --session ID [--cwd DIR] [--json] TEXT` (docs/cli.md): one non-interactive turn through
//! the same submit path as the TUI (parse → prepare → dispatch), streaming the reply.
//!
//! Exit status 0 when the turn completes; 1 with `CODE: message` on stderr for a reference
//! error (nothing is written to the target log), a provider error or a store error
//! (mapped in one place, [`super::error`]).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::json;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio_util::sync::CancellationToken;

use crate::agent::tools::ToolBox;
use crate::agent::tools::recall::{IndexSource, RecallTool};
use crate::agent::{
    Agent, AgentEvent, AgentStatus, LogFacts, dispatch_contexts, prepare_submission_in,
};
use dsh_reference::AgentRef;
use dsh_reference::frecency::UseKind;
use dsh_search::{IndexOptions, SessionIndex};
use dsh_store::SessionQuery;
use dsh_store::chunk::{TextDelta, text_delta};
use dsh_store::event::{TurnEndKind, now_ms};
use dsh_store::tool_round::ToolResultBlock;
use dsh_store::{EventData, SessionHeader};
use term_text::{visible_controls, visible_controls_line};

use super::foreign_sources::read_only_refusal;
use super::json_escape::escape_json_controls;
use super::provider_setup::provider_for;
use super::reference_service::{Service, block_on, open_service};
use super::{CliError, Context, SendArgs};

/// Run the subcommand.
pub fn run(ctx: &Context, args: &SendArgs) -> Result<(), CliError> {
    if args.text.trim().is_empty() {
        return Err(CliError::Usage(
            "send: TEXT is empty; nothing to send".to_owned(),
        ));
    }
    let cwd = absolute_cwd(args.cwd.as_deref())?;
    let service = open_service(ctx)?;
    if !service.store.exists(&args.session)
        && let Some(reason) = read_only_refusal(&service.sources, &args.session)
    {
        return Err(CliError::ReadOnlySession {
            id: args.session.clone(),
            reason,
        });
    }
    let recall = recall_tool(ctx, &service);
    let (store, refs) = (service.store, service.refs);
    let provider = provider_for(&ctx.config.model, Duration::ZERO)?;
    // Used only when the session is created: it records the branch the cwd is on now.
    let header =
        dsh_reference::record_branch(SessionHeader::new(&args.session, now_ms(), Some(cwd)));
    // What the agent keeps of the log is gathered while it is opened: one pass.
    let mut facts = LogFacts::for_provider(provider.as_ref());
    let mut writer = store
        .open_writer_observing(&args.session, Some(header), &mut |e| facts.observe(e))
        .map_err(|source| CliError::OpenSession {
            id: args.session.clone(),
            source,
        })?;
    // A store this session cannot be written to is refused before the model is asked.
    writer
        .check_encoding()
        .map_err(|source| CliError::OpenSession {
            id: args.session.clone(),
            source,
        })?;
    let agent_ref = AgentRef {
        session_id: args.session.clone(),
        cwd: writer.header().cwd.clone(),
    };
    let text = args.text.clone();
    let room = facts.plan_room(provider.context_tokens(), &text);
    let json_lines = args.json;
    block_on(|cancel| async move {
        // On an error the writer is dropped unused: nothing reaches the target log.
        let submission =
            prepare_submission_in(Some(&refs), &agent_ref, &text, Some(room), &cancel).await?;
        let (agent, events) = Agent::spawn_with_facts(writer, facts, provider);
        agent.set_tools(recall);
        let message_id = submission.message.id.clone();
        let referenced = submission
            .context
            .as_ref()
            .map(super::usage::referenced_ids)
            .unwrap_or_default();
        let contexts = submission.contexts();
        dispatch_contexts(&agent, submission.message, contexts);
        let outcome = follow_turn(agent, events, &message_id, json_lines, &cancel).await;
        if outcome.is_ok() {
            super::usage::record_uses(&referenced, UseKind::Referenced);
        }
        outcome
    })?
}

/// The search over a turn's referenced sessions (docs/agent.md: tools), answering from the
/// search index when one was already built for this store (it is opened at the first
/// search, never built or updated here: a log it does not hold as it is is read instead).
fn recall_tool(ctx: &Context, service: &Service) -> Arc<dyn ToolBox> {
    let query: Arc<dyn SessionQuery> = Arc::clone(&service.sources) as Arc<dyn SessionQuery>;
    let redact = service.refs.config().redact_secrets;
    let root = ctx.store_root.clone();
    let dir = ctx
        .config
        .search
        .index_dir
        .clone()
        .or_else(|| dsh_search::cache_location::default_index_dir(&root));
    let opened: Arc<OnceLock<Option<Arc<SessionIndex>>>> = Arc::new(OnceLock::new());
    let index: IndexSource = Arc::new(move || {
        opened
            .get_or_init(|| {
                let dir = dir.clone().filter(|d| d.is_dir())?;
                let options = IndexOptions {
                    index_dir: Some(dir),
                };
                SessionIndex::open(&root, &options).ok().map(Arc::new)
            })
            .clone()
    });
    Arc::new(RecallTool::new(query, service.store.clone(), redact).with_index(index))
}

/// `--cwd` (made absolute against the process directory) or the process directory. A
/// `--cwd` that names no directory is a usage error (a typo would be recorded in the new
/// session's header for good).
fn absolute_cwd(dir: Option<&Path>) -> Result<String, CliError> {
    let here = std::env::current_dir()
        .map_err(|e| CliError::io("cannot read the current directory", e))?;
    let path: PathBuf = match dir {
        Some(d) if d.is_absolute() => d.to_path_buf(),
        Some(d) => here.join(d),
        None => here,
    };
    if dir.is_some() {
        match std::fs::metadata(&path) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => {
                return Err(CliError::Usage(format!(
                    "send: --cwd {}: not a directory",
                    path.display()
                )));
            }
            Err(e) => {
                return Err(CliError::Usage(format!(
                    "send: --cwd {}: {}",
                    path.display(),
                    if e.kind() == std::io::ErrorKind::NotFound {
                        "no such directory".to_owned()
                    } else {
                        e.to_string()
                    }
                )));
            }
        }
    }
    Ok(path.to_string_lossy().into_owned())
}

/// Where the reply goes: plain text or JSON lines on stdout. A reader that closes the pipe
/// stops the output, never the turn; another write failure is reported once it has ended.
struct ReplyOutput {
    json: bool,
    stdout: std::io::Stdout,
    ends_with_newline: bool,
    /// Set when stdout failed; nothing more is written.
    failed: Option<std::io::Error>,
}

impl ReplyOutput {
    fn new(json: bool) -> Self {
        ReplyOutput {
            json,
            stdout: std::io::stdout(),
            ends_with_newline: true,
            failed: None,
        }
    }

    fn write(&mut self, bytes: &[u8]) {
        if self.failed.is_some() {
            return;
        }
        if let Err(e) = self
            .stdout
            .write_all(bytes)
            .and_then(|()| self.stdout.flush())
        {
            self.failed = Some(e);
        }
    }

    fn line(&mut self, value: &serde_json::Value) {
        let Ok(text) = serde_json::to_string(value) else {
            return;
        };
        let mut line = escape_json_controls(&text).into_owned();
        line.push('\n');
        self.write(line.as_bytes());
    }

    /// One streamed delta: text goes out as text (controls visible) or a JSON line;
    /// reasoning only as a JSON line.
    fn delta(&mut self, kind: &str, text: &str) {
        match (self.json, kind) {
            (true, "text" | "reasoning") => {
                self.line(&json!({"type": kind, "text": text}));
            }
            (false, "text") => {
                let shown = visible_controls(text);
                if !shown.is_empty() {
                    self.ends_with_newline = shown.ends_with('\n');
                }
                self.write(shown.as_bytes());
            }
            _ => {}
        }
    }

    /// A tool call the model made: `{"type":"tool-call","callId","name","arguments"}` with
    /// `--json` (the arguments as the model sent them, a JSON text); nothing in text mode.
    fn tool_call(&mut self, data: &serde_json::Value) {
        if !self.json {
            return;
        }
        let text = |k: &str| data.get(k).cloned().unwrap_or(serde_json::Value::Null);
        self.line(&json!({
            "type": "tool-call",
            "callId": text("callId"),
            "name": text("name"),
            "arguments": text("arguments"),
        }));
    }

    /// A tool result: `{"type":"tool-result","callId","text","isError"}` with `--json`
    /// (the exact text the model received); nothing in text mode.
    fn tool_result(&mut self, result: &ToolResultBlock) {
        if !self.json {
            return;
        }
        self.line(&json!({
            "type": "tool-result",
            "callId": result.call_id,
            "text": result.text,
            "isError": result.is_error,
        }));
    }

    /// The end of the reply: a newline after text, or the final `done` line. Errors are
    /// reported by the caller through [`CliError`] (one place decides their shape).
    fn finish(&mut self, outcome: &Result<(), CliError>, usage: Option<Usage>) {
        if self.json {
            if outcome.is_ok() {
                let usage = usage.map_or(
                    serde_json::Value::Null,
                    |u| json!({"inputTokens": u.input, "outputTokens": u.output}),
                );
                self.line(&json!({"type": "done", "usage": usage}));
            }
        } else if !self.ends_with_newline {
            self.write(b"\n");
        }
    }

    /// The write failure to report, if any: a closed pipe is not one.
    fn into_error(self) -> Option<CliError> {
        self.failed
            .filter(|e| e.kind() != std::io::ErrorKind::BrokenPipe)
            .map(CliError::Output)
    }
}

/// Token usage summed over the turn's steps (the provider's exact counts).
#[derive(Debug, Clone, Copy, Default)]
struct Usage {
    input: u64,
    output: u64,
}

impl Usage {
    fn add(total: &mut Option<Usage>, usage: &serde_json::Value) {
        let get = |k: &str| {
            usage
                .get(k)
                .and_then(serde_json::Value::as_u64)
                .unwrap_or(0)
        };
        let t = total.get_or_insert_with(Usage::default);
        t.input += get("inputTokens");
        t.output += get("outputTokens");
    }
}

/// Stream the reply to stdout until our turn ends; Ctrl+C cancels the turn. Waits for the
/// agent loop to stop so the log is fully synced before returning.
///
/// The turn's end is the agent going idle again, not the `turn/end` event: when a write
/// fails, `turn/end` may never reach the log, and waiting for it would hang forever.
async fn follow_turn(
    agent: Agent,
    mut events: UnboundedReceiver<AgentEvent>,
    message_id: &str,
    json_lines: bool,
    cancel: &CancellationToken,
) -> Result<(), CliError> {
    let mut out = ReplyOutput::new(json_lines);
    let mut usage: Option<Usage> = None;
    let mut error: Option<(&'static str, String)> = None;
    let mut cancelled = false;
    let mut running = false;
    let outcome = loop {
        let event = tokio::select! {
            biased;
            () = cancel.cancelled(), if !cancelled => {
                cancelled = true;
                agent.cancel();
                continue;
            }
            event = events.recv() => event,
        };
        let Some(event) = event else {
            break Err(CliError::Turn {
                code: "AGENT_STOPPED",
                message: "the agent stopped before the turn ended".into(),
            });
        };
        match event {
            AgentEvent::Appended(e) => match &e.data {
                EventData::AssistantChunk { chunk, .. } => {
                    if let Some(TextDelta { reasoning, text }) = text_delta(chunk) {
                        out.delta(if reasoning { "reasoning" } else { "text" }, text);
                    }
                }
                EventData::AssistantMessage { usage: Some(u), .. } => Usage::add(&mut usage, u),
                EventData::Other { kind, data } if kind == dsh_store::event::kind::TOOL_CALL => {
                    out.tool_call(data);
                }
                EventData::ToolResult { message, .. } => {
                    if let Some(result) = ToolResultBlock::of(message) {
                        out.tool_result(&result);
                    }
                }
                // Before the agent runs this message, a reopened log may get the end of a
                // turn a crash left open (docs/agent.md: opening a session): not this turn.
                EventData::TurnEnd { .. } if !running => {}
                EventData::TurnEnd { reason, .. } => {
                    break match reason.kind {
                        TurnEndKind::Completed => Ok(()),
                        TurnEndKind::Aborted => Err(CliError::Turn {
                            code: "AGENT_CANCELLED",
                            message: "the turn was cancelled".into(),
                        }),
                        _ => {
                            let (code, message) = error.take().unwrap_or_else(|| {
                                let (_, message) = reason.failure();
                                (
                                    "AGENT_TURN_FAILED",
                                    message.unwrap_or("the turn failed").to_owned(),
                                )
                            });
                            Err(CliError::Turn { code, message })
                        }
                    };
                }
                _ => {}
            },
            AgentEvent::Discarded { message_ids }
                if message_ids.iter().any(|id| id == message_id) =>
            {
                break Err(CliError::Turn {
                    code: "AGENT_MESSAGE_DISCARDED",
                    message: "the message was discarded before its turn".into(),
                });
            }
            AgentEvent::Error { code, message } => {
                error.get_or_insert((code, message));
            }
            // A discard of this message is its error (below); no second line for it.
            AgentEvent::Warning {
                code: "AGENT_MESSAGE_DISCARDED",
                ..
            } => {}
            AgentEvent::Warning { code, message } => {
                eprintln!(
                    "dsh-refs: warning: {code}: {}",
                    visible_controls_line(&message)
                );
            }
            AgentEvent::Status(AgentStatus::Running) => running = true,
            AgentEvent::Status(AgentStatus::Idle) if running => {
                // Idle without a logged `turn/end`: a write failed; report the first error.
                let (code, message) = error.take().unwrap_or((
                    "AGENT_TURN_NOT_LOGGED",
                    "the turn ended without its end being written to the log".into(),
                ));
                break Err(CliError::Turn { code, message });
            }
            AgentEvent::Discarded { .. } | AgentEvent::Status(_) | AgentEvent::Staged { .. } => {}
        }
    };
    out.finish(&outcome, usage);
    // Let the loop finish its queue and release the writer; its channel then closes.
    drop(agent);
    while events.recv().await.is_some() {}
    outcome?;
    out.into_error().map_or(Ok(()), Err)
}
