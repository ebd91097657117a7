//! The submit path shared by `send` and the TUI (docs/composer.md (submit, steps 1–4)): parse mentions,
//! then prepare the snapshot context through the reference service.

use tokio_util::sync::CancellationToken;

use dsh_reference::{AgentRef, ErrorCode, ReferenceError, SessionReferences, parse_text};
use dsh_store::{ContentBlock, Message, Role, Source};

/// A message ready for [`super::dispatch`]: the readable direct message and its snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct Submission {
    /// Source `user`, content = the readable text (mentions shown as `@label`).
    pub message: Message,
    /// The session-reference context, when the text referenced other sessions.
    pub context: Option<Message>,
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

/// Parse `text`; without references the readable text is the message; with references but
/// no service it is an error; else `prepare` runs (cancellable through `cancel`).
pub async fn prepare_submission(
    refs: Option<&SessionReferences>,
    agent: &AgentRef,
    text: &str,
    cancel: &CancellationToken,
) -> Result<Submission, SubmitError> {
    let parsed = parse_text(text)?;
    let content = vec![ContentBlock::text(parsed.text)];
    if parsed.references.is_empty() {
        return Ok(Submission {
            message: Message::new(Role::User, content, Source::user()),
            context: None,
        });
    }
    let refs = refs.ok_or(SubmitError::NoReferenceService)?;
    let prepared = refs
        .prepare(agent, &content, &parsed.references, cancel)
        .await?;
    Ok(Submission {
        message: Message::new(Role::User, prepared.content, Source::user()),
        context: prepared.context,
    })
}
