//! Agent layer (docs/agent.md): inbox, `prompt-submit` admission, steering, injection, the
//! turn/step loop, titles and compaction.

pub mod compaction;
mod context_window;
pub mod dispatch;
pub mod error;
mod handle;
pub mod hooks;
pub mod inbox;
pub mod log_notice;
pub mod plan_room;
mod reply_blocks;
mod session_log;
pub mod submit;
mod surface_tail;
pub mod title;
pub mod tools;
mod turn_loop;

pub use dispatch::{dispatch, dispatch_contexts};
pub use error::AgentError;
pub use handle::{Agent, AgentEvent};
pub use hooks::{
    Admission, HookError, HookFuture, HookGuard, Next, PromptSubmit, PromptSubmitHook,
};
pub use inbox::{AgentStatus, DispatchPath};
pub use session_log::LogFacts;
pub use submit::{
    ParsedSubmission, Submission, SubmitError, parse_submission, prepare_submission,
    prepare_submission_in,
};
