//! The `prompt-submit` hook chain (docs/agent.md): middleware run when a queued prompt is claimed.
//!
//! Each hook gets the prompt and a [`Next`] that runs the inner chain; it may rewrite the
//! content, add contexts, or block. Registration returns a [`HookGuard`] that detaches the
//! hook on drop. A hook that errors blocks the prompt.

use std::sync::{Arc, Mutex, Weak};

use futures_util::FutureExt;
use futures_util::future::BoxFuture;

use dsh_store::{ContentBlock, Message};

/// What a hook sees: the claimed prompt and the contexts that will be logged before it.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptSubmit {
    pub session_id: String,
    pub message: Message,
    /// Logged as `user/message` events, in order, before the prompt.
    pub additional_contexts: Vec<Message>,
}

/// A hook chain's verdict on a prompt.
#[derive(Debug, Clone, PartialEq)]
pub enum Admission {
    /// Run the turn. `content` replaces the prompt's content when `Some`.
    Allow {
        content: Option<Vec<ContentBlock>>,
        additional_contexts: Vec<Message>,
    },
    /// Log nothing of the prompt or its contexts; the prompt is discarded.
    Block { reason: String },
}

/// A hook failed; the prompt is blocked with this message as the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("prompt-submit hook failed: {message}")]
pub struct HookError {
    pub message: String,
}

impl HookError {
    pub fn new(message: impl Into<String>) -> Self {
        HookError {
            message: message.into(),
        }
    }
}

/// The future a hook returns.
pub type HookFuture = BoxFuture<'static, Result<Admission, HookError>>;

/// One `prompt-submit` middleware.
pub trait PromptSubmitHook: Send + Sync {
    /// Decide on `ctx`, usually by calling `next.run(ctx)` and adjusting its verdict.
    fn on_prompt_submit(&self, ctx: PromptSubmit, next: Next) -> HookFuture;

    /// Called (outside any agent lock) when the agent discards these messages unadmitted.
    fn on_discarded(&self, _message_ids: &[String]) {}
}

/// The rest of the chain, inner to the hook holding it.
pub struct Next {
    inner: Vec<Arc<dyn PromptSubmitHook>>,
}

impl Next {
    /// Run the inner chain. The innermost step allows the prompt as it now stands.
    pub fn run(mut self, ctx: PromptSubmit) -> HookFuture {
        if self.inner.is_empty() {
            return Box::pin(async move {
                Ok(Admission::Allow {
                    content: Some(ctx.message.content),
                    additional_contexts: ctx.additional_contexts,
                })
            });
        }
        let hook = self.inner.remove(0);
        hook.on_prompt_submit(ctx, self)
    }
}

/// The registered hooks, outermost first.
#[derive(Default)]
pub struct HookRegistry {
    state: Mutex<RegistryState>,
}

#[derive(Default)]
struct RegistryState {
    next_id: u64,
    hooks: Vec<(u64, Arc<dyn PromptSubmitHook>)>,
}

impl HookRegistry {
    /// Register `hook`; `prepend` makes it the outermost, else it becomes the innermost.
    pub fn add(self: &Arc<Self>, hook: Arc<dyn PromptSubmitHook>, prepend: bool) -> HookGuard {
        let mut state = lock(&self.state);
        let id = state.next_id;
        state.next_id += 1;
        if prepend {
            state.hooks.insert(0, (id, hook));
        } else {
            state.hooks.push((id, hook));
        }
        HookGuard {
            registry: Arc::downgrade(self),
            id,
        }
    }

    /// How many hooks are registered.
    pub fn len(&self) -> usize {
        lock(&self.state).hooks.len()
    }

    /// Whether no hook is registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn snapshot(&self) -> Vec<Arc<dyn PromptSubmitHook>> {
        lock(&self.state)
            .hooks
            .iter()
            .map(|(_, h)| Arc::clone(h))
            .collect()
    }

    /// Run the chain as registered right now; a hook error (or panic) becomes `Block`.
    pub async fn admit(&self, ctx: PromptSubmit) -> Admission {
        let chain = Next {
            inner: self.snapshot(),
        };
        // A panicking hook must not take the agent loop down with it.
        let run = std::panic::AssertUnwindSafe(async move { chain.run(ctx).await });
        match run.catch_unwind().await {
            Ok(Ok(admission)) => admission,
            Ok(Err(e)) => Admission::Block {
                reason: e.to_string(),
            },
            Err(_) => Admission::Block {
                reason: HookError::new("a hook panicked").to_string(),
            },
        }
    }

    /// Tell every hook that these messages were discarded.
    pub fn notify_discarded(&self, message_ids: &[String]) {
        for hook in self.snapshot() {
            hook.on_discarded(message_ids);
        }
    }

    fn remove(&self, id: u64) {
        // Take the hook out under the lock but drop it after, so a hook whose drop
        // touches the registry cannot deadlock.
        let removed = {
            let mut state = lock(&self.state);
            state
                .hooks
                .iter()
                .position(|(i, _)| *i == id)
                .map(|pos| state.hooks.remove(pos))
        };
        drop(removed);
    }
}

/// Keeps a hook registered; dropping it detaches the hook.
#[must_use = "dropping the guard detaches the hook at once"]
pub struct HookGuard {
    registry: Weak<HookRegistry>,
    id: u64,
}

impl HookGuard {
    /// Detach now (same as dropping).
    pub fn detach(self) {}
}

impl Drop for HookGuard {
    fn drop(&mut self) {
        if let Some(registry) = self.registry.upgrade() {
            registry.remove(self.id);
        }
    }
}

impl std::fmt::Debug for HookGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookGuard")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// A poisoned lock only means another thread panicked mid-update of plain data; keep going.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_store::Message;
    use pretty_assertions::assert_eq;

    /// Records its name on the way in and appends a context named after it on Allow.
    struct Tagging {
        name: &'static str,
        trace: Arc<Mutex<Vec<String>>>,
    }

    impl PromptSubmitHook for Tagging {
        fn on_prompt_submit(&self, ctx: PromptSubmit, next: Next) -> HookFuture {
            let name = self.name;
            let trace = Arc::clone(&self.trace);
            Box::pin(async move {
                lock(&trace).push(format!("in:{name}"));
                let verdict = next.run(ctx).await?;
                lock(&trace).push(format!("out:{name}"));
                Ok(match verdict {
                    Admission::Allow {
                        content,
                        mut additional_contexts,
                    } => {
                        additional_contexts.push(Message::user_text(name));
                        Admission::Allow {
                            content,
                            additional_contexts,
                        }
                    }
                    block @ Admission::Block { .. } => block,
                })
            })
        }
    }

    struct Failing;
    impl PromptSubmitHook for Failing {
        fn on_prompt_submit(&self, _ctx: PromptSubmit, _next: Next) -> HookFuture {
            Box::pin(async { Err(HookError::new("boom")) })
        }
    }

    struct Blocking;
    impl PromptSubmitHook for Blocking {
        fn on_prompt_submit(&self, _ctx: PromptSubmit, _next: Next) -> HookFuture {
            Box::pin(async {
                Ok(Admission::Block {
                    reason: "no".into(),
                })
            })
        }
    }

    struct Panicking;
    impl PromptSubmitHook for Panicking {
        fn on_prompt_submit(&self, _ctx: PromptSubmit, _next: Next) -> HookFuture {
            panic!("hook bug")
        }
    }

    #[test]
    fn a_panicking_hook_blocks_instead_of_unwinding() {
        let reg = Arc::new(HookRegistry::default());
        let _p = reg.add(Arc::new(Panicking), false);
        assert_eq!(
            block_on(reg.admit(prompt())),
            Admission::Block {
                reason: "prompt-submit hook failed: a hook panicked".into()
            }
        );
    }

    fn prompt() -> PromptSubmit {
        PromptSubmit {
            session_id: "s".into(),
            message: Message::user_text("hi"),
            additional_contexts: vec![],
        }
    }

    fn context_texts(a: &Admission) -> Vec<String> {
        match a {
            Admission::Allow {
                additional_contexts,
                ..
            } => additional_contexts
                .iter()
                .map(Message::joined_text)
                .collect(),
            Admission::Block { reason } => vec![format!("blocked: {reason}")],
        }
    }

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn empty_chain_allows_unchanged() {
        let reg = Arc::new(HookRegistry::default());
        let p = prompt();
        let want = Admission::Allow {
            content: Some(p.message.content.clone()),
            additional_contexts: vec![],
        };
        assert_eq!(block_on(reg.admit(p)), want);
    }

    #[test]
    fn prepend_makes_a_hook_outermost() {
        let reg = Arc::new(HookRegistry::default());
        let trace = Arc::new(Mutex::new(Vec::new()));
        let hook = |name| {
            Arc::new(Tagging {
                name,
                trace: Arc::clone(&trace),
            }) as Arc<dyn PromptSubmitHook>
        };
        let _a = reg.add(hook("a"), false);
        let _b = reg.add(hook("b"), false);
        let _c = reg.add(hook("c"), true);
        let verdict = block_on(reg.admit(prompt()));
        assert_eq!(
            *lock(&trace),
            ["in:c", "in:a", "in:b", "out:b", "out:a", "out:c"]
        );
        // Inner hooks add first; the outermost hook's context lands last (next to the prompt).
        assert_eq!(context_texts(&verdict), ["b", "a", "c"]);
    }

    #[test]
    fn dropping_the_guard_detaches() {
        let reg = Arc::new(HookRegistry::default());
        let guard = reg.add(Arc::new(Blocking), false);
        assert_eq!(
            context_texts(&block_on(reg.admit(prompt()))),
            ["blocked: no"]
        );
        drop(guard);
        assert!(reg.is_empty());
        assert_eq!(
            context_texts(&block_on(reg.admit(prompt()))),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_failing_hook_blocks_and_inner_hooks_do_not_run() {
        let reg = Arc::new(HookRegistry::default());
        let trace = Arc::new(Mutex::new(Vec::new()));
        let _f = reg.add(Arc::new(Failing), false);
        let _t = reg.add(
            Arc::new(Tagging {
                name: "inner",
                trace: Arc::clone(&trace),
            }),
            false,
        );
        let verdict = block_on(reg.admit(prompt()));
        assert_eq!(
            verdict,
            Admission::Block {
                reason: "prompt-submit hook failed: boom".into()
            }
        );
        assert!(lock(&trace).is_empty());
    }
}
