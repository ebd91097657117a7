//! The agent's inbox (docs/agent.md): queued work, staged steering/injections and the next-step
//! acceptance window, as one plain state machine guarded by a single lock in the agent.
//!
//! Every operation that must be atomic with respect to the window (steer, inject,
//! inject-then-steer, closing the window before `turn/end`) is one method here.

use std::collections::VecDeque;

use tokio_util::sync::CancellationToken;

use dsh_store::Message;

/// Whether the agent is running a turn (or compaction) or waiting for work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentStatus {
    Idle,
    Running,
}

/// How a message was delivered (docs/composer.md (submit, step 5)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DispatchPath {
    /// Staged into the running turn's next step boundary.
    Steered,
    /// Queued as a prompt of its own turn.
    Followup,
    /// Queued as a prompt whose context is logged right before it on admission.
    FollowupWithContext,
}

/// A prompt waiting for its turn; `contexts` ride its admission (logged right before it).
#[derive(Debug, Clone, PartialEq)]
pub struct QueuedPrompt {
    pub message: Message,
    pub contexts: Vec<Message>,
}

/// Work the loop does in FIFO order.
#[derive(Debug, Clone, PartialEq)]
pub enum Work {
    /// One turn.
    Prompt(QueuedPrompt),
    /// Append a context `user/message` without a turn.
    Inject(Message),
    /// Append a manual `session/title`.
    SetTitle(String),
    /// Summarize and replace the surface.
    Compact,
}

/// A message waiting for the running turn's next step boundary.
#[derive(Debug, Clone, PartialEq)]
pub enum Staged {
    /// Logged as `user/message`.
    Context(Message),
    /// Logged as `steering/message`.
    Steering(Message),
}

impl Staged {
    fn message(&self) -> &Message {
        match self {
            Staged::Context(m) | Staged::Steering(m) => m,
        }
    }
}

/// Message ids dropped by [`Inbox::cancel`], to be logged as one discard event.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Discards {
    pub message_ids: Vec<String>,
}

/// The inbox state. All methods are non-blocking and never fail.
#[derive(Debug)]
pub struct Inbox {
    queue: VecDeque<Work>,
    staged: Vec<Staged>,
    window_open: bool,
    status: AgentStatus,
    /// The prompt being admitted (hook chain running), not yet logged.
    admitting: Option<String>,
    /// Cancels the current turn or compaction.
    current: Option<CancellationToken>,
    /// Ids discarded by `cancel` that the loop has not logged yet.
    pending_discards: Vec<String>,
}

impl Default for Inbox {
    fn default() -> Self {
        Inbox {
            queue: VecDeque::new(),
            staged: Vec::new(),
            window_open: false,
            status: AgentStatus::Idle,
            admitting: None,
            current: None,
            pending_discards: Vec::new(),
        }
    }
}

impl Inbox {
    pub fn status(&self) -> AgentStatus {
        self.status
    }

    pub fn window_open(&self) -> bool {
        self.window_open
    }

    /// Staged steering/context messages waiting for the next step boundary.
    pub fn staged_count(&self) -> usize {
        self.staged.len()
    }

    /// Prompts waiting for a turn of their own.
    pub fn queued_prompts(&self) -> usize {
        self.queue
            .iter()
            .filter(|w| matches!(w, Work::Prompt(_)))
            .count()
    }

    /// Queue a prompt (one turn).
    pub fn followup(&mut self, message: Message) {
        self.queue.push_back(Work::Prompt(QueuedPrompt {
            message,
            contexts: Vec::new(),
        }));
    }

    /// Stage for the next step boundary if the window is open, else queue as a followup.
    pub fn steer(&mut self, message: Message) -> DispatchPath {
        if self.window_open {
            self.staged.push(Staged::Steering(message));
            DispatchPath::Steered
        } else {
            self.followup(message);
            DispatchPath::Followup
        }
    }

    /// Stage a context if the window is open (true), else queue it for immediate
    /// appending without a turn (false).
    pub fn inject(&mut self, context: Message) -> bool {
        if self.window_open {
            self.staged.push(Staged::Context(context));
            true
        } else {
            self.queue.push_back(Work::Inject(context));
            false
        }
    }

    /// Context then direct message, atomically: adjacent in the staging FIFO when the window
    /// is open, else one followup whose admission logs the context right before it.
    pub fn inject_and_steer(&mut self, context: Message, message: Message) -> DispatchPath {
        self.inject_all_and_steer(vec![context], message)
    }

    /// [`inject_and_steer`](Self::inject_and_steer) for several contexts (a session snapshot
    /// then a file context), kept in order and adjacent to the message.
    pub fn inject_all_and_steer(
        &mut self,
        contexts: Vec<Message>,
        message: Message,
    ) -> DispatchPath {
        if self.window_open {
            self.staged
                .extend(contexts.into_iter().map(Staged::Context));
            self.staged.push(Staged::Steering(message));
            DispatchPath::Steered
        } else {
            self.queue
                .push_back(Work::Prompt(QueuedPrompt { message, contexts }));
            DispatchPath::FollowupWithContext
        }
    }

    /// Queue work that needs the log but no turn (title, compaction).
    pub fn push_work(&mut self, work: Work) {
        self.queue.push_back(work);
    }

    /// Take the next piece of work. Claiming a prompt opens the window; a prompt or
    /// compaction makes the agent Running and gets a fresh cancel token.
    pub fn claim(&mut self) -> Option<(Work, CancellationToken)> {
        let work = self.queue.pop_front()?;
        let token = CancellationToken::new();
        match &work {
            Work::Prompt(p) => {
                self.window_open = true;
                self.admitting = Some(p.message.id.clone());
                self.status = AgentStatus::Running;
                self.current = Some(token.clone());
            }
            Work::Compact => {
                self.status = AgentStatus::Running;
                self.current = Some(token.clone());
            }
            Work::Inject(_) | Work::SetTitle(_) => {}
        }
        Some((work, token))
    }

    /// The claimed prompt passed (or failed) admission; it is no longer cancellable as
    /// an unlogged message.
    pub fn admitted(&mut self) {
        self.admitting = None;
    }

    /// Everything staged so far, in FIFO order.
    pub fn take_staged(&mut self) -> Vec<Staged> {
        std::mem::take(&mut self.staged)
    }

    /// At the end of a step: close the window if nothing is staged (the turn may end),
    /// else keep it open so the caller runs another step.
    pub fn close_window_if_drained(&mut self) -> bool {
        if self.staged.is_empty() {
            self.window_open = false;
            true
        } else {
            false
        }
    }

    /// The turn ends early (blocked, failed): close the window and requeue whatever was
    /// staged at the front of the queue, in order, so nothing typed is lost.
    pub fn close_window_requeue_staged(&mut self) {
        self.window_open = false;
        for staged in std::mem::take(&mut self.staged).into_iter().rev() {
            let work = match staged {
                Staged::Context(c) => Work::Inject(c),
                Staged::Steering(m) => Work::Prompt(QueuedPrompt {
                    message: m,
                    contexts: Vec::new(),
                }),
            };
            self.queue.push_front(work);
        }
    }

    /// The turn or compaction is over.
    pub fn finish(&mut self) {
        self.window_open = false;
        self.admitting = None;
        self.current = None;
        self.status = AgentStatus::Idle;
    }

    /// Abort the running turn or compaction and drop every queued prompt, staged message
    /// and the prompt under admission. Returns whether anything was running or dropped.
    pub fn cancel(&mut self) -> bool {
        let mut dropped = Vec::new();
        if let Some(id) = self.admitting.take() {
            dropped.push(id);
        }
        let mut kept = VecDeque::with_capacity(self.queue.len());
        for work in self.queue.drain(..) {
            match work {
                Work::Prompt(p) => dropped.push(p.message.id),
                other @ (Work::Inject(_) | Work::SetTitle(_) | Work::Compact) => {
                    kept.push_back(other);
                }
            }
        }
        self.queue = kept;
        dropped.extend(self.staged.drain(..).map(|s| s.message().id.clone()));
        let was_running = match self.current.take() {
            Some(token) => {
                token.cancel();
                true
            }
            None => false,
        };
        let any = was_running || !dropped.is_empty();
        self.pending_discards.extend(dropped);
        any
    }

    /// Discards recorded by `cancel` and not yet logged.
    pub fn take_pending_discards(&mut self) -> Discards {
        Discards {
            message_ids: std::mem::take(&mut self.pending_discards),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn msg(text: &str) -> Message {
        let mut m = Message::user_text(text);
        m.id = text.to_owned();
        m
    }

    fn claim_prompt(inbox: &mut Inbox) -> (QueuedPrompt, CancellationToken) {
        match inbox.claim() {
            Some((Work::Prompt(p), t)) => (p, t),
            other => panic!("expected a prompt, got {other:?}"),
        }
    }

    fn staged_ids(staged: &[Staged]) -> Vec<(&'static str, String)> {
        staged
            .iter()
            .map(|s| match s {
                Staged::Context(m) => ("context", m.id.clone()),
                Staged::Steering(m) => ("steer", m.id.clone()),
            })
            .collect()
    }

    #[test]
    fn idle_steer_and_inject_do_not_stage() {
        let mut inbox = Inbox::default();
        assert_eq!(inbox.steer(msg("s")), DispatchPath::Followup);
        assert!(!inbox.inject(msg("c")));
        assert_eq!(inbox.staged_count(), 0);
        assert_eq!(inbox.queued_prompts(), 1);
        assert_eq!(inbox.status(), AgentStatus::Idle);
        // FIFO: the followup first, then the immediate inject.
        assert!(matches!(inbox.claim(), Some((Work::Prompt(_), _))));
        inbox.finish();
        assert!(matches!(inbox.claim(), Some((Work::Inject(_), _))));
        assert_eq!(inbox.status(), AgentStatus::Idle);
    }

    #[test]
    fn window_opens_on_claim_and_closes_only_when_drained() {
        let mut inbox = Inbox::default();
        inbox.followup(msg("p"));
        assert!(!inbox.window_open());
        let (p, _) = claim_prompt(&mut inbox);
        assert_eq!(p.message.id, "p");
        assert!(inbox.window_open());
        assert_eq!(inbox.status(), AgentStatus::Running);

        assert!(inbox.inject(msg("c1")));
        assert_eq!(
            inbox.inject_and_steer(msg("c2"), msg("s2")),
            DispatchPath::Steered
        );
        assert_eq!(inbox.steer(msg("s3")), DispatchPath::Steered);
        assert!(!inbox.close_window_if_drained());
        assert!(inbox.window_open());
        assert_eq!(
            staged_ids(&inbox.take_staged()),
            [
                ("context", "c1".into()),
                ("context", "c2".into()),
                ("steer", "s2".into()),
                ("steer", "s3".into())
            ]
        );
        assert!(inbox.close_window_if_drained());
        assert!(!inbox.window_open());
        // Window closed before turn/end: a steer now is a followup for the next turn.
        assert_eq!(
            inbox.inject_and_steer(msg("c4"), msg("s4")),
            DispatchPath::FollowupWithContext
        );
        inbox.finish();
        let (p, _) = claim_prompt(&mut inbox);
        assert_eq!(p.message.id, "s4");
        assert_eq!(p.contexts, vec![msg("c4")]);
    }

    #[test]
    fn cancel_drops_queued_staged_and_admitting_but_keeps_injects() {
        let mut inbox = Inbox::default();
        inbox.followup(msg("p1"));
        let (_, token) = claim_prompt(&mut inbox);
        inbox.steer(msg("s1"));
        inbox.followup(msg("p2"));
        inbox.push_work(Work::SetTitle("t".into()));
        assert!(inbox.cancel());
        assert!(token.is_cancelled());
        assert_eq!(
            inbox.take_pending_discards().message_ids,
            ["p1", "p2", "s1"]
        );
        assert_eq!(inbox.take_pending_discards(), Discards::default());
        assert_eq!(inbox.staged_count(), 0);
        assert_eq!(inbox.queued_prompts(), 0);
        inbox.finish();
        assert!(matches!(inbox.claim(), Some((Work::SetTitle(_), _))));
        // Nothing left: a second cancel is a no-op.
        assert!(!inbox.cancel());
    }

    #[test]
    fn admitted_prompt_is_not_discarded_by_cancel() {
        let mut inbox = Inbox::default();
        inbox.followup(msg("p1"));
        let (_, token) = claim_prompt(&mut inbox);
        inbox.admitted();
        assert!(inbox.cancel());
        assert!(token.is_cancelled());
        assert_eq!(inbox.take_pending_discards(), Discards::default());
    }

    #[test]
    fn early_end_requeues_staged_in_order() {
        let mut inbox = Inbox::default();
        inbox.followup(msg("p1"));
        inbox.followup(msg("p2"));
        claim_prompt(&mut inbox);
        inbox.inject_and_steer(msg("c"), msg("s"));
        inbox.close_window_requeue_staged();
        inbox.finish();
        assert!(matches!(inbox.claim(), Some((Work::Inject(m), _)) if m.id == "c"));
        assert!(matches!(inbox.claim(), Some((Work::Prompt(p), _)) if p.message.id == "s"));
        inbox.finish();
        assert!(matches!(inbox.claim(), Some((Work::Prompt(p), _)) if p.message.id == "p2"));
    }
}
