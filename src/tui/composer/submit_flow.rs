//! The app's submit path (docs/composer.md, submit): a submitted draft is a command or a
//! message (decided by [`classify_draft`] alone); a message is parsed once, prepared off the
//! UI thread and dispatched; on failure or cancel the user's text goes back.

use tokio_util::sync::CancellationToken;

use crate::agent::Agent;
use crate::agent::dispatch::dispatch_contexts;
use crate::agent::submit::{Submission, SubmitError, parse_submission};
use crate::tui::commands::find_command;
use crate::tui::event::{AppEvent, AppEventSender};
use crate::tui::transcript::NoticeKind;
use crate::tui::transcript::chat_view::ChatView;
use dsh_reference::frecency::UseKind;
use dsh_reference::{AgentRef, ErrorCode, SessionReferences};
use ratatui_mention::MentionInputState;

/// What Enter on a draft means (docs/composer.md: commands or text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DraftIntent {
    /// The first word is a known command: run the draft as a command line.
    Command(String),
    /// Shaped like a command (`/` + letters, digits or `-`) but unknown: ask before sending.
    UnknownCommand(String),
    /// Send this text as a message.
    Text(String),
}

/// The one rule deciding "command or text": only the first word of the first line counts,
/// with no leading whitespace. A known command (any case) runs; `/` + letters, digits or
/// `-` that is no command asks first; anything else is text, sent as typed, except that a
/// leading `//` sends one slash (`//help` sends `/help`).
pub fn classify_draft(draft: &str) -> DraftIntent {
    if let Some(rest) = draft.strip_prefix("//") {
        return DraftIntent::Text(format!("/{rest}"));
    }
    let first_word = draft.split(char::is_whitespace).next().unwrap_or_default();
    let Some(name) = first_word.strip_prefix('/') else {
        return DraftIntent::Text(draft.to_owned());
    };
    if find_command(name).is_some() {
        return DraftIntent::Command(draft.to_owned());
    }
    let shaped = !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '-');
    if shaped {
        DraftIntent::UnknownCommand(first_word.to_owned())
    } else {
        DraftIntent::Text(draft.to_owned())
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
    /// Where the sessions a sent message references are noted (frecency).
    pub usage: &'a super::usage::Usage,
}

/// A submission whose references are being prepared.
#[derive(Debug)]
struct PendingPrepare {
    id: u64,
    /// The draft exactly as typed; given back on failure or cancel, recorded in history.
    original: String,
    cancel: CancellationToken,
    /// Whether the text mentions sessions (then the status says `preparing references…`).
    has_references: bool,
    /// When Enter was pressed (ms since the epoch): the input history orders by it.
    typed_at_ms: u64,
}

/// Parse → prepare → dispatch for the app, at most one submission at a time.
#[derive(Debug, Default)]
pub struct SubmitFlow {
    preparing: Option<PendingPrepare>,
    next_prepare_id: u64,
    /// The draft of an unknown `/command` already warned about: Enter again sends it.
    unknown_command: Option<String>,
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

    /// Enter on `draft`: a command goes back to the app; an unknown `/command` is sent only
    /// on a second Enter; a message is parsed (once) and prepared off the UI thread.
    pub fn submit(&mut self, draft: String, cx: SubmitContext<'_>) -> Submitted {
        if self.preparing.is_some() || draft.trim().is_empty() {
            return Submitted::Ignored;
        }
        let text = match classify_draft(&draft) {
            DraftIntent::Command(line) => {
                self.unknown_command = None;
                return Submitted::Command(line);
            }
            DraftIntent::UnknownCommand(word)
                if self.unknown_command.as_deref() != Some(draft.as_str()) =>
            {
                cx.chat.push_notice(
                    NoticeKind::Info,
                    format!("unknown command {word} · Enter again sends it as text"),
                );
                self.unknown_command = Some(draft);
                return Submitted::Refused;
            }
            DraftIntent::UnknownCommand(_) => draft.clone(),
            DraftIntent::Text(text) => text,
        };
        self.unknown_command = None;
        let parsed = match parse_submission(cx.refs, &text) {
            Ok(parsed) => parsed,
            Err(e) => {
                cx.chat.push_error(e.code(), refusal_message(&e));
                return Submitted::Refused;
            }
        };
        self.next_prepare_id += 1;
        let id = self.next_prepare_id;
        let cancel = CancellationToken::new();
        // The references share what the model's window has left (the budget plan).
        let room = cx.agent.plan_room(&draft);
        self.preparing = Some(PendingPrepare {
            id,
            original: draft,
            cancel: cancel.clone(),
            has_references: parsed.has_references(),
            typed_at_ms: u64::try_from(super::listed_page::now_ms()).unwrap_or(0),
        });
        let tx = cx.tx.clone();
        let agent = cx.agent_ref;
        tokio::spawn(async move {
            let result = parsed.prepare_in(&agent, Some(room), &cancel).await;
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

    /// Forgets an unknown command warned about (the draft was cleared).
    pub fn forget_unknown_command(&mut self) {
        self.unknown_command = None;
    }

    /// The answer to preparation `prepare_id`: dispatch it, or give the text back with the
    /// error. Answers of cancelled or superseded preparations are dropped. Returns the
    /// draft as typed and when Enter was pressed, when it was sent (the app takes it from the
    /// composer: input history, the draft cleared if unchanged).
    pub fn on_prepared(
        &mut self,
        prepare_id: u64,
        result: Result<Submission, SubmitError>,
        cx: &mut SubmitContext<'_>,
    ) -> Option<(String, u64)> {
        if self.preparing.as_ref().is_none_or(|p| p.id != prepare_id) {
            return None;
        }
        let pending = self.preparing.take()?;
        match result {
            Ok(submission) => {
                cx.chat.scroll_to_bottom();
                self.unlogged
                    .push((submission.message.id.clone(), pending.original.clone()));
                let contexts = submission.contexts();
                let referenced: Vec<String> = contexts
                    .iter()
                    .flat_map(crate::cli::usage::referenced_ids)
                    .collect();
                let now = u64::try_from(super::listed_page::now_ms()).unwrap_or(0);
                cx.usage.record(&referenced, UseKind::Referenced, now);
                dispatch_contexts(cx.agent, submission.message, contexts);
                Some((pending.original, pending.typed_at_ms))
            }
            Err(e) => {
                give_back(cx.input, cx.chat, &pending.original);
                cx.chat.push_error(
                    e.code(),
                    format!(
                        "{} (your message is still in the composer)",
                        error_chain(&e)
                    ),
                );
                None
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
fn refusal_message(error: &SubmitError) -> String {
    match error {
        SubmitError::Reference(e) => {
            format!("{} (your message is still in the composer)", e.message)
        }
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
    use crate::tui::commands::COMMANDS;
    use pretty_assertions::assert_eq;

    #[test]
    fn command_or_text_table() {
        let command = |s: &str| DraftIntent::Command(s.to_owned());
        let text = |s: &str| DraftIntent::Text(s.to_owned());
        let unknown = |s: &str| DraftIntent::UnknownCommand(s.to_owned());
        let cases = [
            ("/help", command("/help")),
            ("/HELP", command("/HELP")),
            ("/Title New name", command("/Title New name")),
            ("/resume s-1\nmore", command("/resume s-1\nmore")),
            ("/quit", command("/quit")),
            ("/?", command("/?")),
            ("/etc/hosts is broken", text("/etc/hosts is broken")),
            ("/etc/x", text("/etc/x")),
            (" /help", text(" /help")),
            ("\t/help", text("\t/help")),
            ("\n/new", text("\n/new")),
            ("\u{3000}/new", text("\u{3000}/new")),
            ("//help me", text("/help me")),
            ("//etc/hosts", text("/etc/hosts")),
            ("//", text("/")),
            ("/", text("/")),
            ("/ space", text("/ space")),
            ("/hepl", unknown("/hepl")),
            ("/hepl please", unknown("/hepl")),
            ("/new-thing", unknown("/new-thing")),
            ("/v2", unknown("/v2")),
            ("/über", unknown("/über")),
            ("/a.b", text("/a.b")),
            ("hello /help", text("hello /help")),
            (
                "@[a](dsh-session:ImEi) /x",
                text("@[a](dsh-session:ImEi) /x"),
            ),
            ("line one\n/help", text("line one\n/help")),
            ("/var/log/syslog: error", text("/var/log/syslog: error")),
            ("", text("")),
        ];
        for (draft, want) in cases {
            assert_eq!(classify_draft(draft), want, "{draft:?}");
        }
    }

    #[test]
    fn every_command_in_the_table_classifies_as_one() {
        for spec in COMMANDS {
            let line = spec.usage().replace("[ID]", "").replace("TEXT", "x");
            assert_eq!(classify_draft(&line), DraftIntent::Command(line.clone()));
            for alias in spec.aliases {
                let line = format!("/{alias}");
                assert_eq!(classify_draft(&line), DraftIntent::Command(line.clone()));
            }
        }
    }
}
