//! Dispatch of a prepared submission (docs/composer.md (submit, step 5)), shared by `send` and the TUI.
//!
//! Decided from the agent's state at that moment: window open → the atomic context +
//! steering operation; idle without context → followup; idle with context → followup plus
//! a prepended one-shot `prompt-submit` hook that adds the context on admission.

use std::sync::{Arc, Mutex, PoisonError};

use super::handle::Agent;
use super::hooks::{Admission, HookFuture, HookGuard, Next, PromptSubmit, PromptSubmitHook};
use super::inbox::DispatchPath;
use dsh_store::Message;

/// Deliver `message` (and its snapshot `context`, if any) to `agent`.
pub fn dispatch(agent: &Agent, message: Message, context: Option<Message>) -> DispatchPath {
    dispatch_contexts(agent, message, context.into_iter().collect())
}

/// Deliver `message` with its `contexts` (the session snapshot, then the file context), which
/// the log holds in this order right before it.
pub fn dispatch_contexts(agent: &Agent, message: Message, contexts: Vec<Message>) -> DispatchPath {
    match contexts {
        contexts if contexts.is_empty() => agent.steer_path(message),
        contexts if agent.window_open() => agent.inject_all_and_steer(contexts, message),
        contexts => {
            let hook = Arc::new(OneShotContext {
                message_id: message.id.clone(),
                contexts: Mutex::new(contexts),
                guard: Mutex::new(None),
            });
            let guard = agent.add_prompt_submit_hook(hook.clone(), true);
            *hook.guard.lock().unwrap_or_else(PoisonError::into_inner) = Some(guard);
            agent.followup(message);
            DispatchPath::FollowupWithContext
        }
    }
}

/// Adds its contexts to exactly one prompt's admission, then detaches itself. Also detaches
/// when that prompt is discarded before admission.
struct OneShotContext {
    message_id: String,
    contexts: Mutex<Vec<Message>>,
    /// Its own registration; dropping it detaches the hook.
    guard: Mutex<Option<HookGuard>>,
}

impl OneShotContext {
    fn detach(&self) {
        let guard = self
            .guard
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        drop(guard);
    }
}

impl PromptSubmitHook for OneShotContext {
    fn on_prompt_submit(&self, ctx: PromptSubmit, next: Next) -> HookFuture {
        if ctx.message.id != self.message_id {
            return next.run(ctx);
        }
        let contexts =
            std::mem::take(&mut *self.contexts.lock().unwrap_or_else(PoisonError::into_inner));
        // Used once: gone from the chain whatever the verdict.
        self.detach();
        Box::pin(async move {
            let verdict = next.run(ctx).await?;
            Ok(match (verdict, contexts) {
                (verdict, contexts) if contexts.is_empty() => verdict,
                (
                    Admission::Allow {
                        content,
                        mut additional_contexts,
                    },
                    contexts,
                ) => {
                    // Last, so they sit right before the prompt in the log.
                    additional_contexts.extend(contexts);
                    Admission::Allow {
                        content,
                        additional_contexts,
                    }
                }
                (verdict, _) => verdict,
            })
        })
    }

    fn on_discarded(&self, message_ids: &[String]) {
        if message_ids.contains(&self.message_id) {
            self.detach();
        }
    }
}
