//! The [`Agent`] handle (docs/agent.md): a cloneable front for one session's loop, which runs
//! on a tokio task and owns the session writer.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::Notify;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

use super::error::AgentError;
use super::hooks::{HookGuard, HookRegistry, PromptSubmitHook};
use super::inbox::{AgentStatus, DispatchPath, Inbox, Work};
use super::session_log::{AgentLog, LogFacts};
use super::tools::ToolBox;
use crate::llm::Provider;
use dsh_store::SessionWriter;
use dsh_store::{Event, Message};

/// What the agent reports to its owner (TUI, `send`).
// Events move once through a channel; boxing `Appended` would only add an allocation per
// streamed chunk and change the agreed contract.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum AgentEvent {
    /// An event was written to the session log (in seq order).
    Appended(Event),
    /// Idle / running changed.
    Status(AgentStatus),
    /// How many steering/context messages wait for the next step boundary.
    Staged { count: usize },
    /// These messages were dropped without being logged (blocked or cancelled).
    Discarded { message_ids: Vec<String> },
    /// A turn, compaction or title write failed.
    Error { code: &'static str, message: String },
    /// Something the user should know that did not fail the turn (e.g. the request was
    /// trimmed to the model's context window).
    Warning { code: &'static str, message: String },
}

/// State shared by the handles and the loop.
pub(crate) struct Shared {
    pub(crate) session_id: String,
    pub(crate) cwd: Option<String>,
    pub(crate) inbox: Mutex<Inbox>,
    pub(crate) hooks: Arc<HookRegistry>,
    pub(crate) wake: Notify,
    /// Set when the last handle is dropped: the loop drains its queue and stops.
    pub(crate) closed: AtomicBool,
    pub(crate) log: AgentLog,
    providers: Mutex<ProviderSlot>,
    /// When the running turn's model calls must have ended (`[model] max_turn_secs`).
    turn_deadline: Mutex<Option<tokio::time::Instant>>,
    /// The tools turns may offer (docs/agent.md: tools).
    tools: Mutex<Option<Arc<dyn ToolBox>>>,
}

/// The provider turns use, and the one `/model` chose for the next turn.
struct ProviderSlot {
    current: Arc<dyn Provider>,
    next: Option<Arc<dyn Provider>>,
}

impl Shared {
    pub(crate) fn inbox(&self) -> MutexGuard<'_, Inbox> {
        self.inbox.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn providers(&self) -> MutexGuard<'_, ProviderSlot> {
        self.providers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The provider of the running turn (stable for the whole turn).
    pub(crate) fn provider(&self) -> Arc<dyn Provider> {
        Arc::clone(&self.providers().current)
    }

    /// At a turn's start (after its admission): the clock of `[model] max_turn_secs` starts.
    pub(crate) fn start_turn_clock(&self) {
        let max = self.provider().reply_limits().max_turn;
        let deadline = tokio::time::Instant::now()
            .checked_add(max)
            .unwrap_or_else(far_future);
        *self
            .turn_deadline
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(deadline);
    }

    /// When the running turn's model calls must end (from now, when no turn started one).
    pub(crate) fn turn_deadline(&self) -> tokio::time::Instant {
        let started = *self
            .turn_deadline
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        started.unwrap_or_else(|| {
            tokio::time::Instant::now()
                .checked_add(self.provider().reply_limits().max_turn)
                .unwrap_or_else(far_future)
        })
    }

    /// The tools turns may offer, if any were given.
    pub(crate) fn tools(&self) -> Option<Arc<dyn ToolBox>> {
        self.tools
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// At a turn's start: a model chosen with [`Agent::switch_model`] takes effect.
    pub(crate) fn start_turn_provider(&self) {
        let mut slot = self.providers();
        if let Some(next) = slot.next.take() {
            slot.current = next;
        }
    }
}

/// A deadline no turn reaches (about 30 years ahead), for a configured span that overflows.
fn far_future() -> tokio::time::Instant {
    tokio::time::Instant::now() + std::time::Duration::from_secs(86_400 * 365 * 30)
}

/// Dropped with the last [`Agent`] clone; tells the loop to stop once idle.
struct Lifetime {
    shared: Arc<Shared>,
}

impl Drop for Lifetime {
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::SeqCst);
        self.shared.wake.notify_one();
    }
}

/// A cloneable handle on one session's agent.
#[derive(Clone)]
pub struct Agent {
    pub(crate) shared: Arc<Shared>,
    _lifetime: Arc<Lifetime>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("session_id", &self.shared.session_id)
            .field("status", &self.status())
            .finish_non_exhaustive()
    }
}

impl Agent {
    /// Start the loop for `writer`'s session on the current tokio runtime. The loop stops
    /// (and releases the writer) after the last handle is dropped and its queue is done.
    /// The log is read back once (streaming) for what the loop keeps of it.
    pub fn spawn(
        writer: SessionWriter,
        provider: Arc<dyn Provider>,
    ) -> (Agent, UnboundedReceiver<AgentEvent>) {
        let (tx, rx) = unbounded_channel();
        let log = AgentLog::new(writer, provider.as_ref(), tx);
        Self::start(log, provider, rx)
    }

    /// [`spawn`](Self::spawn) with `facts` gathered while the writer was opened
    /// ([`dsh_store::SessionStore::open_writer_observing`]), sparing a second read.
    pub fn spawn_with_facts(
        writer: SessionWriter,
        facts: LogFacts,
        provider: Arc<dyn Provider>,
    ) -> (Agent, UnboundedReceiver<AgentEvent>) {
        let (tx, rx) = unbounded_channel();
        let log = AgentLog::with_facts(writer, facts, tx);
        Self::start(log, provider, rx)
    }

    fn start(
        log: AgentLog,
        provider: Arc<dyn Provider>,
        rx: UnboundedReceiver<AgentEvent>,
    ) -> (Agent, UnboundedReceiver<AgentEvent>) {
        let shared = Arc::new(Shared {
            session_id: log.session_id(),
            cwd: log.cwd(),
            inbox: Mutex::new(Inbox::default()),
            hooks: Arc::new(HookRegistry::default()),
            wake: Notify::new(),
            closed: AtomicBool::new(false),
            log,
            providers: Mutex::new(ProviderSlot {
                current: provider,
                next: None,
            }),
            turn_deadline: Mutex::new(None),
            tools: Mutex::new(None),
        });
        shared.log.check_encoding_soon();
        tokio::spawn(super::turn_loop::run(Arc::clone(&shared)));
        let agent = Agent {
            _lifetime: Arc::new(Lifetime {
                shared: Arc::clone(&shared),
            }),
            shared,
        };
        (agent, rx)
    }

    pub fn session_id(&self) -> &str {
        &self.shared.session_id
    }

    pub fn cwd(&self) -> Option<&str> {
        self.shared.cwd.as_deref()
    }

    pub fn status(&self) -> AgentStatus {
        self.shared.inbox().status()
    }

    /// Prompts queued and not yet started.
    pub fn queued_prompts(&self) -> usize {
        self.shared.inbox().queued_prompts()
    }

    /// Whether a steer now would join the running turn at its next step boundary.
    pub fn window_open(&self) -> bool {
        self.shared.inbox().window_open()
    }

    /// The provider's name and model (the one the next turn will use), for status lines.
    pub fn model(&self) -> (String, String) {
        let slot = self.shared.providers();
        let provider = slot.next.as_ref().unwrap_or(&slot.current);
        (provider.name().to_owned(), provider.model().to_owned())
    }

    /// Models the provider knows of (the configured one first), for `/model`.
    pub fn known_models(&self) -> Vec<String> {
        self.shared.providers().current.known_models()
    }

    /// Use `model` from the next turn on (a running turn keeps its model).
    pub fn switch_model(&self, model: &str) -> Result<(), AgentError> {
        let mut slot = self.shared.providers();
        let next = slot
            .current
            .with_model(model)
            .ok_or_else(|| AgentError::ModelFixed {
                provider: slot.current.name().to_owned(),
            })?;
        slot.next = Some(next);
        Ok(())
    }

    /// Offer `tools` from the next step on (docs/agent.md: tools): the search over a
    /// turn's referenced sessions, in the app and `send`.
    pub fn set_tools(&self, tools: Arc<dyn ToolBox>) {
        *self
            .shared
            .tools
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(tools);
    }

    /// Queue a prompt; it becomes one turn.
    pub fn followup(&self, msg: Message) {
        self.shared.inbox().followup(msg);
        self.shared.wake.notify_one();
    }

    /// Stage for the running turn's next step boundary, else queue as a followup.
    pub fn steer(&self, msg: Message) {
        self.steer_path(msg);
    }

    /// [`Agent::steer`], reporting which path was taken.
    pub fn steer_path(&self, msg: Message) -> DispatchPath {
        let (path, staged) = {
            let mut inbox = self.shared.inbox();
            let path = inbox.steer(msg);
            (path, inbox.staged_count())
        };
        self.after_enqueue(path == DispatchPath::Steered, staged);
        path
    }

    /// Stage a context for the next step boundary, or append it at once when idle.
    pub fn inject(&self, ctx: Message) {
        let (was_staged, staged) = {
            let mut inbox = self.shared.inbox();
            let was_staged = inbox.inject(ctx);
            (was_staged, inbox.staged_count())
        };
        self.after_enqueue(was_staged, staged);
    }

    /// Context then direct message as one atomic operation (docs/agent.md).
    pub fn inject_and_steer(&self, ctx: Message, msg: Message) -> DispatchPath {
        self.inject_all_and_steer(vec![ctx], msg)
    }

    /// Several contexts in order, then the direct message, as one atomic operation.
    pub fn inject_all_and_steer(&self, contexts: Vec<Message>, msg: Message) -> DispatchPath {
        let (path, staged) = {
            let mut inbox = self.shared.inbox();
            let path = inbox.inject_all_and_steer(contexts, msg);
            (path, inbox.staged_count())
        };
        self.after_enqueue(path == DispatchPath::Steered, staged);
        path
    }

    fn after_enqueue(&self, staged_now: bool, count: usize) {
        if staged_now {
            self.shared.log.send(AgentEvent::Staged { count });
        }
        self.shared.wake.notify_one();
    }

    /// Register a `prompt-submit` hook; `prepend` makes it outermost. Drop the guard to detach.
    pub fn add_prompt_submit_hook(
        &self,
        hook: Arc<dyn PromptSubmitHook>,
        prepend: bool,
    ) -> HookGuard {
        self.shared.hooks.add(hook, prepend)
    }

    /// How many `prompt-submit` hooks are registered (diagnostics, tests).
    pub fn prompt_submit_hooks(&self) -> usize {
        self.shared.hooks.len()
    }

    /// Abort the running turn or compaction; discard queued prompts and staged messages.
    pub fn cancel(&self) {
        let any = self.shared.inbox().cancel();
        if any {
            self.shared.log.send(AgentEvent::Staged { count: 0 });
            self.shared.wake.notify_one();
        }
    }

    /// Write a manual title (after any queued work).
    pub fn set_title(&self, title: &str) {
        self.shared
            .inbox()
            .push_work(Work::SetTitle(title.to_owned()));
        self.shared.wake.notify_one();
    }

    /// Summarize and replace the surface (after any queued work).
    pub fn compact(&self) {
        self.shared.inbox().push_work(Work::Compact);
        self.shared.wake.notify_one();
    }

    /// Stream the log so far from disk, in seq order (initial render, resume): nothing of it
    /// is kept by the agent.
    pub fn for_each_logged_event(&self, on_event: &mut dyn FnMut(Event)) -> Result<(), AgentError> {
        self.shared.log.for_each_event(on_event)
    }

    /// Run `f` with the log held, giving it a reader of the whole log (as
    /// [`for_each_logged_event`](Self::for_each_logged_event)): nothing is appended until
    /// `f` returns, so what `f` sends comes before the `Appended` event of any later append.
    pub fn with_log_held<R>(&self, f: impl FnOnce(super::session_log::LogReader<'_>) -> R) -> R {
        self.shared.log.holding(f)
    }

    /// The whole log collected from [`for_each_logged_event`](Self::for_each_logged_event)
    /// (empty if it cannot be read): memory grows with the log, so for tests and short logs.
    pub fn snapshot_events(&self) -> Vec<Event> {
        let mut events = Vec::new();
        if let Err(e) = self.for_each_logged_event(&mut |e| events.push(e)) {
            tracing::warn!(error = %e, "session log not read back");
        }
        events
    }
}
