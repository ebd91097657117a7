//! The submit path shared by `send` and the TUI (docs/composer.md (submit, steps 1–4)): parse mentions,
//! then prepare the snapshot context through the reference service.

use tokio_util::sync::CancellationToken;

use dsh_reference::budget_plan::PlanRoom;
use dsh_reference::file_mention::{FileMention, scan_file_mentions};
use dsh_reference::{
    AgentRef, ErrorCode, Mentioned, ReferenceError, SessionReferences, parse_message,
};
use dsh_store::{ContentBlock, Message, Role, Source};

/// A message ready for [`super::dispatch`]: the readable direct message and its snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct Submission {
    /// Source `user`, content = the readable text (mentions shown as `@label`).
    pub message: Message,
    /// The session-reference context, when the text referenced other sessions.
    pub context: Option<Message>,
    /// The `<referenced-files>` context, when the text mentioned files.
    pub file_context: Option<Message>,
}

impl Submission {
    /// The contexts to log right before the message, in order: sessions (their source
    /// declaring dsh's `form: "recall"`, `dsh_reference::prompt::logged_context`), then files.
    pub fn contexts(&self) -> Vec<Message> {
        self.context
            .iter()
            .map(dsh_reference::prompt::logged_context)
            .chain(self.file_context.iter().cloned())
            .collect()
    }
}

/// Why a submission could not be prepared; nothing was sent.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SubmitError {
    #[error("{0}")]
    Reference(#[from] ReferenceError),
    #[error(
        "session references are not available here, so the mentioned sessions cannot be attached"
    )]
    NoReferenceService,
}

impl SubmitError {
    /// Stable code: the reference layer's `SESSION_REFERENCE_…` code.
    pub fn code(&self) -> &'static str {
        self.error_code().as_str()
    }

    /// The reference layer's code enum (`Unavailable` when no service is mounted).
    pub fn error_code(&self) -> ErrorCode {
        match self {
            SubmitError::Reference(e) => e.code,
            SubmitError::NoReferenceService => ErrorCode::Unavailable,
        }
    }
}

/// A parsed text checked against the reference service: ready to prepare.
#[derive(Clone)]
pub enum ParsedSubmission {
    /// No mentions: the readable text is the whole message.
    Plain(Vec<ContentBlock>),
    /// Mentions (sessions, excerpts, files), and the service that will attach them.
    WithReferences {
        content: Vec<ContentBlock>,
        mentions: Vec<Mentioned>,
        files: Vec<FileMention>,
        refs: SessionReferences,
    },
}

impl ParsedSubmission {
    /// Whether the text mentions sessions (preparing them takes a while).
    pub fn has_references(&self) -> bool {
        matches!(self, ParsedSubmission::WithReferences { .. })
    }

    /// Attaches the referenced sessions' snapshots (cancellable through `cancel`), each
    /// within `max_reference_bytes` and no plan made.
    pub async fn prepare(
        self,
        agent: &AgentRef,
        cancel: &CancellationToken,
    ) -> Result<Submission, SubmitError> {
        self.prepare_in(agent, None, cancel).await
    }

    /// [`prepare`](Self::prepare) planning the snapshots into `room`, what the model's
    /// context window has left (docs/references.md: the budget plan).
    pub async fn prepare_in(
        self,
        agent: &AgentRef,
        room: Option<PlanRoom>,
        cancel: &CancellationToken,
    ) -> Result<Submission, SubmitError> {
        match self {
            ParsedSubmission::Plain(content) => Ok(Submission {
                message: Message::new(Role::User, content, Source::user()),
                context: None,
                file_context: None,
            }),
            ParsedSubmission::WithReferences {
                content,
                mentions,
                files,
                refs,
            } => {
                let prepared = refs
                    .prepare_planned(agent, &content, &mentions, &files, room, cancel)
                    .await?;
                Ok(Submission {
                    message: Message::new(Role::User, prepared.content, Source::user()),
                    context: prepared.context,
                    file_context: prepared.file_context,
                })
            }
        }
    }
}

/// Parses `text` once (mentions shown by their neutral labels: docs/references.md); session
/// mentions with no service to resolve them are an error here, the one place that checks.
/// File mentions (`@path`, `@"path"`) are looked at only with a service: without one they
/// stay text.
pub fn parse_submission(
    refs: Option<&SessionReferences>,
    text: &str,
) -> Result<ParsedSubmission, SubmitError> {
    let parsed = parse_message(text)?;
    let files = if refs.is_some() {
        scan_file_mentions(text, &parsed.spans)
    } else {
        Vec::new()
    };
    let content = vec![ContentBlock::text(parsed.text)];
    if parsed.mentions.is_empty() && files.is_empty() {
        return Ok(ParsedSubmission::Plain(content));
    }
    let refs = refs.ok_or(SubmitError::NoReferenceService)?;
    Ok(ParsedSubmission::WithReferences {
        content,
        mentions: parsed.mentions,
        files,
        refs: refs.clone(),
    })
}

/// [`parse_submission`] then [`ParsedSubmission::prepare`]: without references the readable
/// text is the message; with references but no service it is an error.
pub async fn prepare_submission(
    refs: Option<&SessionReferences>,
    agent: &AgentRef,
    text: &str,
    cancel: &CancellationToken,
) -> Result<Submission, SubmitError> {
    prepare_submission_in(refs, agent, text, None, cancel).await
}

/// [`prepare_submission`] planning the snapshots into `room` (docs/references.md: the budget
/// plan).
pub async fn prepare_submission_in(
    refs: Option<&SessionReferences>,
    agent: &AgentRef,
    text: &str,
    room: Option<PlanRoom>,
    cancel: &CancellationToken,
) -> Result<Submission, SubmitError> {
    parse_submission(refs, text)?
        .prepare_in(agent, room, cancel)
        .await
}
