//! `dsh-refs send --session ID [--cwd DIR] TEXT` (docs/cli.md): one non-interactive turn through
//! the same submit path as the TUI (parse → prepare → dispatch), streaming the reply.
//!
//! Exit status 0 when the turn completes; 1 with `CODE: message` on stderr for a reference
//! error (nothing is written to the target log), a provider error or a store error
//! (mapped in one place, [`super::error`]).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::sync::mpsc::UnboundedReceiver;
use tokio_util::sync::CancellationToken;

use crate::agent::{Agent, AgentEvent, dispatch, prepare_submission};
use dsh_reference::AgentRef;
use dsh_store::event::now_ms;
use dsh_store::{EventData, SessionHeader};
use ratatui_mention::untrusted::visible_controls;

use super::provider_setup::provider_for;
use super::reference_service::{block_on, open_service};
use super::{CliError, Context, SendArgs};

/// Run the subcommand.
pub fn run(ctx: &Context, args: &SendArgs) -> Result<(), CliError> {
    if args.text.trim().is_empty() {
        return Err(CliError::Usage(
            "send: TEXT is empty; nothing to send".to_owned(),
        ));
    }
    let (store, refs) = open_service(ctx)?;
    let cwd = absolute_cwd(args.cwd.as_deref())?;
    let provider = provider_for(&ctx.config.model, Duration::ZERO)?;
    let header = SessionHeader::new(&args.session, now_ms(), Some(cwd));
    let writer = store
        .open_writer(&args.session, Some(header))
        .map_err(|source| CliError::OpenSession {
            id: args.session.clone(),
            source,
        })?;
    let agent_ref = AgentRef {
        session_id: args.session.clone(),
        cwd: writer.header().cwd.clone(),
    };
    let text = args.text.clone();
    block_on(|cancel| async move {
        // On an error the writer is dropped unused: nothing reaches the target log.
        let submission = prepare_submission(Some(&refs), &agent_ref, &text, &cancel).await?;
        let (agent, events) = Agent::spawn(writer, provider);
        let message_id = submission.message.id.clone();
        dispatch(&agent, submission.message, submission.context);
        follow_turn(agent, events, &message_id, &cancel).await
    })?
}

/// `--cwd` (made absolute against the process directory) or the process directory.
fn absolute_cwd(dir: Option<&Path>) -> Result<String, CliError> {
    let here = std::env::current_dir()
        .map_err(|e| CliError::io("cannot read the current directory", e))?;
    let path: PathBuf = match dir {
        Some(d) if d.is_absolute() => d.to_path_buf(),
        Some(d) => here.join(d),
        None => here,
    };
    Ok(path.to_string_lossy().into_owned())
}

/// Stream the reply text to stdout until our turn ends; Ctrl+C cancels the turn. Waits for
/// the agent loop to stop so the log is fully synced before returning.
async fn follow_turn(
    agent: Agent,
    mut events: UnboundedReceiver<AgentEvent>,
    message_id: &str,
    cancel: &CancellationToken,
) -> Result<(), CliError> {
    let mut stdout = std::io::stdout();
    let mut ends_with_newline = true;
    let mut error: Option<(&'static str, String)> = None;
    let mut cancelled = false;
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
                EventData::AssistantChunk { chunk, .. }
                    if chunk.get("type").and_then(|t| t.as_str()) == Some("text") =>
                {
                    if let Some(text) = chunk.get("text").and_then(|t| t.as_str()) {
                        let shown = visible_controls(text);
                        if !shown.is_empty() {
                            ends_with_newline = shown.ends_with('\n');
                        }
                        stdout
                            .write_all(shown.as_bytes())
                            .and_then(|()| stdout.flush())
                            .map_err(CliError::Output)?;
                    }
                }
                EventData::TurnEnd { reason, .. } => {
                    break match reason.kind.as_str() {
                        "completed" => Ok(()),
                        "aborted" => Err(CliError::Turn {
                            code: "AGENT_CANCELLED",
                            message: "the turn was cancelled".into(),
                        }),
                        _ => {
                            let (code, message) = error
                                .take()
                                .unwrap_or_else(|| ("AGENT_TURN_FAILED", "the turn failed".into()));
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
            AgentEvent::Error { code, message } => error = Some((code, message)),
            AgentEvent::Discarded { .. } | AgentEvent::Status(_) | AgentEvent::Staged { .. } => {}
        }
    };
    if !ends_with_newline {
        let _ = stdout.write_all(b"\n").and_then(|()| stdout.flush());
    }
    // Let the loop finish its queue and release the writer; its channel then closes.
    drop(agent);
    while events.recv().await.is_some() {}
    outcome
}
