//! The app's submit path (docs/composer.md, submit): a submitted draft is a command or a
//! message (decided by [`classify_draft`] alone); a message is parsed once, prepared off the
//! UI thread and dispatched; on failure or cancel the user's text goes back.

use tokio_util::sync::CancellationToken;

use super::app_event::{AppEvent, AppEventSender};
use super::chat_view::ChatView;
use super::transcript::NoticeKind;
use crate::agent::Agent;
use crate::agent::dispatch::dispatch;
use crate::agent::submit::{Submission, SubmitError, parse_submission};
use dsh_reference::{AgentRef, ErrorCode, SessionReferences};
use ratatui_mention::MentionInputState;

/// What a submitted draft is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DraftKind {
    /// A slash command line.
    Command,
    /// A message for the model.
    Message,
}

/// The one rule deciding "command or text": a draft whose first non-whitespace char is
/// `/` is a command line.
pub fn classify_draft(draft: &str) -> DraftKind {
    if draft.trim_start().starts_with('/') {
        DraftKind::Command
    } else {
        DraftKind::Message
    }
}

/// What [`SubmitFlow::submit`] did with a draft.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Submitted {
    /// Nothing: blank, or an earlier submission is still being prepared.
    Ignored,
    /// A command line for the app to run.
    Command(String),
    /// Refused with a notice (bad mention, no reference service); the draft stays.
    Refused,
    /// Preparation started; its answer arrives as [`AppEvent::Prepared`].
    Started,
}

/// What the flow works on: the composer, the transcript (notices), the agent and the
/// reference service of the open session.
pub struct SubmitContext<'a> {
    pub input: &'a mut MentionInputState,
    pub chat: &'a mut ChatView,
    pub agent: &'a Agent,
    pub refs: Option<&'a SessionReferences>,
    pub agent_ref: AgentRef,
    pub tx: &'a AppEventSender,
}

/// A submission whose references are being prepared.
#[derive(Debug)]
struct PendingPrepare {
    id: u64,
    /// The exact text the user submitted; given back on failure or cancel.
    original: String,
    cancel: CancellationToken,
    /// Whether the text mentions sessions (then the status says `preparing references…`).
    has_references: bool,
}

/// Parse → prepare → dispatch for the app, at most one submission at a time.
#[derive(Debug, Default)]
pub struct SubmitFlow {
    preparing: Option<PendingPrepare>,
    next_prepare_id: u64,
    /// Dispatched messages not yet seen in the log: `(message id, submitted text)`. If the
    /// agent goes idle with one still here, its write failed and the text is given back.
    unlogged: Vec<(String, String)>,
}

impl SubmitFlow {
    /// Whether a submission is being prepared (Enter submits nothing meanwhile).
    pub fn is_preparing(&self) -> bool {
        self.preparing.is_some()
    }

    /// Whether the submission being prepared mentions sessions.
    pub fn is_preparing_references(&self) -> bool {
        self.preparing.as_ref().is_some_and(|p| p.has_references)
    }

    /// Enter on `text`: a command goes back to the app; a message is parsed (once) and
    /// prepared off the UI thread.
    pub fn submit(&mut self, text: String, cx: SubmitContext<'_>) -> Submitted {
        if self.preparing.is_some() || text.trim().is_empty() {
            return Submitted::Ignored;
        }
        if classify_draft(&text) == DraftKind::Command {
            return Submitted::Command(text);
        }
        let parsed = match parse_submission(cx.refs, &text) {
            Ok(parsed) => parsed,
            Err(e) => {
                cx.chat.push_notice(NoticeKind::Error, refusal_notice(&e));
                return Submitted::Refused;
            }
        };
        self.next_prepare_id += 1;
        let id = self.next_prepare_id;
        let cancel = CancellationToken::new();
        self.preparing = Some(PendingPrepare {
            id,
            original: text,
            cancel: cancel.clone(),
            has_references: parsed.has_references(),
        });
        let tx = cx.tx.clone();
        let agent = cx.agent_ref;
        tokio::spawn(async move {
            let result = parsed.prepare(&agent, &cancel).await;
            tx.send(AppEvent::Prepared {
                prepare_id: id,
                result,
            });
        });
        Submitted::Started
    }

    /// Esc / Ctrl+C / a session switch during preparation: stop it now and give the text
    /// back. Returns false when nothing was being prepared.
    pub fn cancel(&mut self, cx: &mut SubmitContext<'_>) -> bool {
        let Some(pending) = self.preparing.take() else {
            return false;
        };
        pending.cancel.cancel();
        give_back(cx.input, cx.chat, &pending.original);
        cx.chat.push_notice(
            NoticeKind::Info,
            format!(
                "{}: preparing references was cancelled; your message is back in the composer",
                ErrorCode::Cancelled.as_str()
            ),
        );
        true
    }

    /// Stops preparation without giving anything back (the app is exiting).
    pub fn abort(&mut self) {
        if let Some(pending) = self.preparing.take() {
            pending.cancel.cancel();
        }
    }

    /// The answer to preparation `prepare_id`: dispatch it, or give the text back with the
    /// error. Answers of cancelled or superseded preparations are dropped.
    pub fn on_prepared(
        &mut self,
        prepare_id: u64,
        result: Result<Submission, SubmitError>,
        cx: &mut SubmitContext<'_>,
    ) {
        if self.preparing.as_ref().is_none_or(|p| p.id != prepare_id) {
            return;
        }
        let Some(pending) = self.preparing.take() else {
            return;
        };
        match result {
            Ok(submission) => {
                cx.input.push_history(&pending.original);
                cx.input.clear_if_unchanged(&pending.original);
                cx.chat.scroll_to_bottom();
                self.unlogged
                    .push((submission.message.id.clone(), pending.original.clone()));
                dispatch(cx.agent, submission.message, submission.context);
            }
            Err(e) => {
                give_back(cx.input, cx.chat, &pending.original);
                cx.chat.push_notice(
                    NoticeKind::Error,
                    format!(
                        "{}: {} (your message is still in the composer)",
                        e.code(),
                        error_chain(&e)
                    ),
                );
            }
        }
    }
}

impl SubmitFlow {
    /// A message reached the log: it no longer needs giving back.
    pub fn on_logged(&mut self, message_id: &str) {
        self.unlogged.retain(|(id, _)| id != message_id);
    }

    /// Messages the agent dropped on purpose (cancel, a blocking hook).
    pub fn on_discarded(&mut self, message_ids: &[String]) {
        self.unlogged.retain(|(id, _)| !message_ids.contains(id));
    }

    /// The agent is idle for good (nothing queued): every dispatched message it never logged
    /// (a write failed) goes back to the composer, with a notice.
    pub fn give_back_unlogged(&mut self, input: &mut MentionInputState, chat: &mut ChatView) {
        if self.unlogged.is_empty() {
            return;
        }
        for (_, original) in std::mem::take(&mut self.unlogged) {
            give_back(input, chat, &original);
        }
        chat.push_notice(
            NoticeKind::Error,
            "your message could not be written to the session log; it is back in the composer",
        );
    }

    /// The session was left: its unlogged messages are not given back.
    pub fn forget_unlogged(&mut self) {
        self.unlogged.clear();
    }
}

/// The notice for a draft refused before preparation; the draft was never taken away.
fn refusal_notice(error: &SubmitError) -> String {
    match error {
        SubmitError::Reference(e) => format!(
            "{}: {} (your message is still in the composer)",
            e.code.as_str(),
            e.message
        ),
        SubmitError::NoReferenceService => "this message mentions sessions, but no session \
            store is mounted for references; remove the mention to send it (your message is \
            still in the composer)"
            .to_string(),
    }
}

/// Makes sure the user's original text is not lost after a failed submission.
fn give_back(input: &mut MentionInputState, chat: &mut ChatView, original: &str) {
    let draft = input.draft();
    if draft == original {
        return;
    }
    if draft.trim().is_empty() {
        input.restore_draft(original);
    } else {
        // The user typed something new meanwhile: keep it, and keep the original in history.
        input.push_history(original);
        chat.push_notice(
            NoticeKind::Info,
            "your unsent message is in the input history (Up)",
        );
    }
}

/// An error's message followed by each underlying cause not already part of it.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut out = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = cause.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_or_text_is_decided_by_the_first_non_blank_char() {
        let cases = [
            ("/help", DraftKind::Command),
            ("  /title x", DraftKind::Command),
            ("\n/new", DraftKind::Command),
            ("\u{3000}/new", DraftKind::Command),
            ("hello /help", DraftKind::Message),
            ("@[a](dsh-session:ImEi) /x", DraftKind::Message),
            ("//", DraftKind::Command),
            ("", DraftKind::Message),
        ];
        for (draft, want) in cases {
            assert_eq!(classify_draft(draft), want, "{draft:?}");
        }
    }
}
