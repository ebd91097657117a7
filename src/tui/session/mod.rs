//! The open session: its agent (and the generation that tells its events from an older
//! session's), where it runs, and what the agent is doing; and switching to another one —
//! `/new` and `/resume` open a session for writing off the UI thread through one request
//! slot, so only the newest switch asked for takes effect.

pub mod read_only;
pub mod resolve;
pub mod transcript_load;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc::UnboundedReceiver;
use tokio::time::Instant;

use crate::agent::{Agent, AgentEvent, AgentStatus, LogFacts};
use crate::llm::Provider;
use crate::tui::event::{AppEvent, AppEventSender};
use crate::tui::request_slot::{Policy, RequestSlot};
use dsh_reference::AgentRef;
use dsh_store::{QueryError, SessionHeader, SessionQuery, SessionStore, SessionWriter, StoreError};
use resolve::ResumeTarget;

/// How many sessions left in this run are remembered (opening one again waits for its lock).
const LEFT_REMEMBERED: usize = 16;

/// How long opening a session this app had open waits for a lock held by its agent winding
/// down (a session busy in another window is not waited for: it opens read-only at once).
const OPEN_BUSY_RETRIES: u32 = 20;
const OPEN_BUSY_PAUSE: Duration = Duration::from_millis(50);

/// The session the app writes to, and its agent.
pub struct OpenSession {
    pub agent: Agent,
    /// Bumped on every switch; agent events of older sessions are dropped.
    pub generation: u64,
    pub id: String,
    pub cwd: Option<String>,
    pub status: AgentStatus,
    /// Messages waiting for the running turn.
    pub queued: usize,
    /// When the running turn started (the status line's timer).
    pub turn_started: Option<Instant>,
}

impl OpenSession {
    /// The agent on `writer`'s session (with the `facts` gathered while opening it, when
    /// given), its events forwarded to the bus as generation `generation`.
    pub fn start(
        (writer, facts): (SessionWriter, Option<LogFacts>),
        provider: &Arc<dyn Provider>,
        generation: u64,
        tx: &AppEventSender,
    ) -> OpenSession {
        let id = writer.header().id.clone();
        let cwd = writer.header().cwd.clone();
        let (agent, agent_rx) = match facts {
            Some(facts) => Agent::spawn_with_facts(writer, facts, Arc::clone(provider)),
            None => Agent::spawn(writer, Arc::clone(provider)),
        };
        forward_agent_events(agent_rx, generation, tx.clone());
        OpenSession {
            agent,
            generation,
            id,
            cwd,
            status: AgentStatus::Idle,
            queued: 0,
            turn_started: None,
        }
    }

    /// Whether an agent event of session generation `generation` is this session's (an
    /// older session's is dropped).
    pub fn is_current(&self, generation: u64) -> bool {
        generation == self.generation
    }

    /// The agent's status changed: idle clears the queue and the turn's timer, running
    /// starts the timer (once per turn).
    pub fn set_status(&mut self, status: AgentStatus) {
        self.status = status;
        match status {
            AgentStatus::Idle => {
                self.queued = 0;
                self.turn_started = None;
            }
            AgentStatus::Running => {
                self.turn_started.get_or_insert_with(Instant::now);
            }
        }
    }

    /// Who references sessions from here (the reference rules' agent).
    pub fn agent_ref(&self) -> AgentRef {
        AgentRef {
            session_id: self.id.clone(),
            cwd: self.cwd.clone(),
        }
    }
}

fn forward_agent_events(
    mut agent_rx: UnboundedReceiver<AgentEvent>,
    generation: u64,
    tx: AppEventSender,
) {
    tokio::spawn(async move {
        while let Some(event) = agent_rx.recv().await {
            tx.send(AppEvent::Agent { generation, event });
        }
    });
}

/// What opening a session answered.
#[derive(Debug)]
pub enum SessionEvent {
    /// Session `id` was opened for writing (or could not be), for switch `ticket`.
    Opened {
        ticket: u64,
        id: String,
        /// The writer and what the agent keeps of the log, gathered while opening it (boxed:
        /// a writer is large beside the other answers).
        result: Box<Result<(SessionWriter, Box<LogFacts>), StoreError>>,
    },
    /// `/resume X` was resolved (see [`resolve`](resolve::resolve)), for switch `ticket`.
    Resolved {
        ticket: u64,
        wanted: String,
        result: Result<ResumeTarget, QueryError>,
    },
}

/// Opens sessions for `/new` and `/resume`, one switch at a time (a newer one makes an
/// older one's answer stale), and knows where `/new` opens.
#[derive(Debug)]
pub struct SessionSwitcher {
    slot: RequestSlot<String>,
    /// The directory `/new` opens in: the process's (the app's first session's, unless it
    /// was resumed), never the cwd of a session resumed since.
    pub home_cwd: Option<String>,
    /// Sessions this app left (newest last): their agents may still hold their locks.
    left: Vec<String>,
}

impl Default for SessionSwitcher {
    fn default() -> Self {
        SessionSwitcher {
            slot: RequestSlot::new(Policy::Replace),
            home_cwd: None,
            left: Vec::new(),
        }
    }
}

impl SessionSwitcher {
    /// Session `id` was left: opening it again waits a moment for its agent to let its
    /// lock go.
    pub fn left(&mut self, id: &str) {
        self.left.retain(|l| l != id);
        self.left.push(id.to_owned());
        if self.left.len() > LEFT_REMEMBERED {
            self.left.remove(0);
        }
    }

    /// Resolves `/resume wanted` off the UI thread (the titles of every session are
    /// compared); the answer comes as [`SessionEvent::Resolved`].
    pub fn resolve(
        &mut self,
        wanted: String,
        sessions: Arc<dyn SessionQuery>,
        tx: &AppEventSender,
    ) {
        let Some(ticket) = self.slot.request(wanted.clone()) else {
            return;
        };
        let tx = tx.clone();
        tokio::task::spawn_blocking(move || {
            let result = resolve::resolve(sessions.as_ref(), &wanted);
            tx.send(AppEvent::Session(SessionEvent::Resolved {
                ticket: ticket.id,
                wanted,
                result,
            }));
        });
    }

    /// Opens session `id` for writing off the UI thread (creating it with `create`): a long
    /// log takes a while to load, and a session just left stays locked until its agent
    /// loop has wound down (one held by another window is [`StoreError::Busy`] at once).
    pub fn open(
        &mut self,
        id: String,
        create: Option<SessionHeader>,
        store: &SessionStore,
        provider: &Arc<dyn Provider>,
        tx: &AppEventSender,
    ) {
        let Some(ticket) = self.slot.request(id.clone()) else {
            return;
        };
        let (store, tx, provider) = (store.clone(), tx.clone(), Arc::clone(provider));
        let patience = if self.left.contains(&id) {
            OPEN_BUSY_RETRIES
        } else {
            0
        };
        tokio::task::spawn_blocking(move || {
            // A session created here records the branch its cwd is on now.
            let create = create.map(dsh_reference::record_branch);
            let mut retries = 0;
            let result = loop {
                // What the agent keeps of the log is gathered here, in the same pass, so
                // the UI thread never reads the log for it.
                let mut facts = LogFacts::for_provider(provider.as_ref());
                match store.open_writer_observing(&id, create.clone(), &mut |e| facts.observe(e)) {
                    Err(StoreError::Busy { .. }) if retries < patience => {
                        retries += 1;
                        std::thread::sleep(OPEN_BUSY_PAUSE);
                    }
                    other => break other.map(|writer| (writer, Box::new(facts))),
                }
            };
            tx.send(AppEvent::Session(SessionEvent::Opened {
                ticket: ticket.id,
                id,
                result: Box::new(result),
            }));
        });
    }

    /// Whether the answer for `ticket` is the newest switch's (an older one is dropped).
    pub fn accept(&mut self, ticket: u64) -> bool {
        self.slot.finish(ticket).0.is_some()
    }

    /// An answer of a switch: `Some` when it is the newest switch's (an older one is
    /// dropped).
    pub fn on_event(&mut self, event: SessionEvent) -> Option<SessionEvent> {
        let ticket = match &event {
            SessionEvent::Opened { ticket, .. } | SessionEvent::Resolved { ticket, .. } => *ticket,
        };
        self.accept(ticket).then_some(event)
    }

    /// Whether a switch (an open or a `/resume X` resolution) is under way.
    pub fn is_pending(&self) -> bool {
        self.slot.running().is_some()
    }
}
