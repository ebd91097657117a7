//! `dsh-refs send --session ID [--cwd DIR] TEXT` (docs/cli.md): one non-interactive turn through
//! the same submit path as the TUI (parse → prepare → dispatch), streaming the reply.
//!
//! Exit status 0 when the turn completes; 1 with `CODE: message` on stderr for a reference
//! error (nothing is written to the target log), a provider error or a store error.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use tokio::sync::mpsc::UnboundedReceiver;
use tokio_util::sync::CancellationToken;

use crate::agent::{Agent, AgentEvent, AgentStatus, dispatch, prepare_submission};
use dsh_reference::AgentRef;
use dsh_store::chunk::{TextDelta, text_delta};
use dsh_store::event::{TurnEndKind, now_ms};
use dsh_store::{EventData, SessionHeader};
use ratatui_mention::untrusted::{visible_controls, visible_controls_line};

use super::foreign_sources::read_only_refusal;
use super::provider_setup::provider_for;
use super::reference_service::{block_on, open_service, report_error};
use super::{Context, SendArgs};

/// How the turn ended, as far as `send` is concerned.
#[derive(Debug, PartialEq)]
enum Outcome {
    Completed,
    Failed { code: String, message: String },
}

/// Run the subcommand.
pub fn run(ctx: &Context, args: &SendArgs) -> Result<ExitCode, String> {
    if args.text.trim().is_empty() {
        eprintln!("dsh-refs: send: TEXT is empty; nothing to send");
        return Ok(ExitCode::from(2));
    }
    let service = match open_service(ctx) {
        Ok(service) => service,
        Err(e) => return report_error(&e, false),
    };
    if !service.store.exists(&args.session)
        && let Some(refusal) = read_only_refusal(&service.sources, &args.session)
    {
        return Ok(fail("SESSION_OPEN_FAILED", &refusal));
    }
    let (store, refs) = (service.store, service.refs);
    let cwd = absolute_cwd(args.cwd.as_deref())?;
    let provider = match provider_for(&ctx.config.model, Duration::ZERO) {
        Ok(p) => p,
        Err(e) => return Ok(fail(e.code(), &e.to_string())),
    };
    let header = SessionHeader::new(&args.session, now_ms(), Some(cwd));
    let writer = match store.open_writer(&args.session, Some(header)) {
        Ok(w) => w,
        Err(e) => return Ok(fail("SESSION_OPEN_FAILED", &e.to_string())),
    };
    let agent_ref = AgentRef {
        session_id: args.session.clone(),
        cwd: writer.header().cwd.clone(),
    };
    let text = args.text.clone();
    block_on(|cancel| async move {
        let submission = match prepare_submission(Some(&refs), &agent_ref, &text, &cancel).await {
            Ok(s) => s,
            // The writer is dropped unused: nothing reaches the target log.
            Err(e) => return Ok(fail(e.code(), &e.to_string())),
        };
        let (agent, events) = Agent::spawn(writer, provider);
        let message_id = submission.message.id.clone();
        dispatch(&agent, submission.message, submission.context);
        let outcome = follow_turn(agent, events, &message_id, &cancel).await?;
        Ok(match outcome {
            Outcome::Completed => ExitCode::SUCCESS,
            Outcome::Failed { code, message } => fail(&code, &message),
        })
    })?
}

/// Print `CODE: message` to stderr; exit status 1.
fn fail(code: &str, message: &str) -> ExitCode {
    eprintln!("dsh-refs: {code}: {}", visible_controls_line(message));
    ExitCode::from(1)
}

/// `--cwd` (made absolute against the process directory) or the process directory.
fn absolute_cwd(dir: Option<&Path>) -> Result<String, String> {
    let here =
        std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?;
    let path: PathBuf = match dir {
        Some(d) if d.is_absolute() => d.to_path_buf(),
        Some(d) => here.join(d),
        None => here,
    };
    Ok(path.to_string_lossy().into_owned())
}

/// Stream the reply text to stdout until our turn ends; Ctrl+C cancels the turn. Waits for
/// the agent loop to stop so the log is fully synced before returning.
///
/// The turn's end is the agent going idle again, not the `turn/end` event: when a write
/// fails, `turn/end` may never reach the log, and waiting for it would hang forever.
async fn follow_turn(
    agent: Agent,
    mut events: UnboundedReceiver<AgentEvent>,
    message_id: &str,
    cancel: &CancellationToken,
) -> Result<Outcome, String> {
    let mut stdout = std::io::stdout();
    let mut ends_with_newline = true;
    let mut error: Option<(String, String)> = None;
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
            break Outcome::Failed {
                code: "AGENT_STOPPED".into(),
                message: "the agent stopped before the turn ended".into(),
            };
        };
        match event {
            AgentEvent::Appended(e) => match &e.data {
                EventData::AssistantChunk { chunk, .. } => {
                    if let Some(TextDelta {
                        reasoning: false,
                        text,
                    }) = text_delta(chunk)
                    {
                        let shown = visible_controls(text);
                        if !shown.is_empty() {
                            ends_with_newline = shown.ends_with('\n');
                        }
                        stdout
                            .write_all(shown.as_bytes())
                            .and_then(|()| stdout.flush())
                            .map_err(|e| format!("cannot write output: {e}"))?;
                    }
                }
                EventData::TurnEnd { reason, .. } => {
                    break match reason.kind {
                        TurnEndKind::Completed => Outcome::Completed,
                        TurnEndKind::Aborted => Outcome::Failed {
                            code: "AGENT_CANCELLED".into(),
                            message: "the turn was cancelled".into(),
                        },
                        _ => {
                            let (code, message) = error.take().unwrap_or_else(|| {
                                ("AGENT_TURN_FAILED".into(), "the turn failed".into())
                            });
                            Outcome::Failed { code, message }
                        }
                    };
                }
                _ => {}
            },
            AgentEvent::Discarded { message_ids }
                if message_ids.iter().any(|id| id == message_id) =>
            {
                break Outcome::Failed {
                    code: "AGENT_MESSAGE_DISCARDED".into(),
                    message: "the message was discarded before its turn".into(),
                };
            }
            AgentEvent::Error { code, message } => {
                error.get_or_insert((code, message));
            }
            AgentEvent::Warning { code, message } => {
                eprintln!(
                    "dsh-refs: warning: {code}: {}",
                    visible_controls_line(&message)
                );
            }
            AgentEvent::Status(AgentStatus::Running) => running = true,
            AgentEvent::Status(AgentStatus::Idle) if running => {
                // Idle without a logged `turn/end`: a write failed; report the first error.
                let (code, message) = error.take().unwrap_or_else(|| {
                    (
                        "AGENT_TURN_NOT_LOGGED".into(),
                        "the turn ended without its end being written to the log".into(),
                    )
                });
                break Outcome::Failed { code, message };
            }
            AgentEvent::Discarded { .. } | AgentEvent::Status(_) | AgentEvent::Staged { .. } => {}
        }
    };
    if !ends_with_newline {
        let _ = stdout.write_all(b"\n").and_then(|()| stdout.flush());
    }
    // Let the loop finish its queue and release the writer; its channel then closes.
    drop(agent);
    while events.recv().await.is_some() {}
    Ok(outcome)
}
