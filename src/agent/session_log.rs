//! The agent's single handle on its session log: appends (durable or buffered) run on a
//! blocking thread, and every appended event is announced on the agent's event channel
//! in seq order.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedSender;

use super::error::AgentError;
use super::handle::AgentEvent;
use dsh_store::event::{EventData, TitleData, TitleSource, TitleSourceKind};
use dsh_store::{Event, Message, SurfaceOp};
use dsh_store::{FoldError, SurfaceFolder};
use dsh_store::{NewEvent, SessionWriter};

/// Shared access to the writer; only the agent loop appends.
pub(crate) struct AgentLog {
    state: Arc<Mutex<LogState>>,
    events: UnboundedSender<AgentEvent>,
}

/// The writer plus facts kept up to date on every append, so a step costs O(surface)
/// rather than a rescan of the whole log.
struct LogState {
    writer: SessionWriter,
    facts: Facts,
}

impl LogState {
    fn new(writer: SessionWriter) -> Self {
        let mut facts = Facts {
            folder: Ok(SurfaceFolder::new()),
            has_title: false,
            last_turn: None,
        };
        // Observed in place: the loaded log is never copied.
        facts.observe(writer.events());
        LogState { writer, facts }
    }
}

/// What [`LogState`] keeps up to date besides the writer.
struct Facts {
    /// The folded surface, or the fold error of the log as loaded/appended.
    folder: Result<SurfaceFolder, FoldError>,
    has_title: bool,
    last_turn: Option<u64>,
}

impl Facts {
    fn observe(&mut self, appended: &[Event]) {
        for e in appended {
            if let Ok(folder) = &mut self.folder
                && let Err(err) = folder.push(e)
            {
                self.folder = Err(err);
            }
            match e.data {
                EventData::SessionTitle(_) => self.has_title = true,
                EventData::TurnStart { turn, .. } => {
                    self.last_turn = Some(self.last_turn.map_or(turn, |t| t.max(turn)));
                }
                _ => {}
            }
        }
    }
}

impl AgentLog {
    pub(crate) fn new(writer: SessionWriter, events: UnboundedSender<AgentEvent>) -> Self {
        AgentLog {
            state: Arc::new(Mutex::new(LogState::new(writer))),
            events,
        }
    }

    fn lock(&self) -> MutexGuard<'_, LogState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn send(&self, event: AgentEvent) {
        // A dropped receiver only means nobody is listening any more.
        let _ = self.events.send(event);
    }

    /// Append a batch; `durable` fsyncs before returning.
    pub(crate) async fn append(
        &self,
        batch: Vec<NewEvent>,
        durable: bool,
    ) -> Result<Vec<Event>, AgentError> {
        let state = Arc::clone(&self.state);
        let events = self.events.clone();
        tokio::task::spawn_blocking(move || {
            let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
            let appended = if durable {
                state.writer.append(batch)?
            } else {
                state.writer.append_buffered(batch)?
            };
            state.facts.observe(&appended);
            for e in &appended {
                let _ = events.send(AgentEvent::Appended(e.clone()));
            }
            Ok(appended)
        })
        .await
        .map_err(|e| AgentError::Task(e.to_string()))?
    }

    /// Flush and fsync everything buffered.
    pub(crate) async fn sync(&self) -> Result<(), AgentError> {
        let state = Arc::clone(&self.state);
        tokio::task::spawn_blocking(move || {
            state
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .writer
                .sync()
                .map_err(AgentError::from)
        })
        .await
        .map_err(|e| AgentError::Task(e.to_string()))?
    }

    /// The whole log so far.
    pub(crate) fn snapshot(&self) -> Vec<Event> {
        self.lock().writer.events().to_vec()
    }

    pub(crate) fn session_id(&self) -> String {
        self.lock().writer.header().id.clone()
    }

    pub(crate) fn cwd(&self) -> Option<String> {
        self.lock().writer.header().cwd.clone()
    }

    /// The folded surface: seqs and messages in model order.
    pub(crate) fn surface(&self) -> Result<Vec<(u64, Message)>, AgentError> {
        let state = self.lock();
        let folder = state
            .facts
            .folder
            .as_ref()
            .map_err(|e| AgentError::Fold(e.clone()))?;
        let events = state.writer.events();
        Ok(folder
            .surface()
            .iter()
            .filter_map(|&seq| usize::try_from(seq).ok().and_then(|i| events.get(i)))
            .filter_map(|e| e.message().map(|m| (e.seq, m.clone())))
            .collect())
    }

    /// The newest surface messages that fit `budget` tokens (at least one), in model order,
    /// and how many older ones were left out. Only the kept messages are copied.
    pub(crate) fn surface_window(&self, budget: u64) -> Result<(Vec<Message>, usize), AgentError> {
        let state = self.lock();
        let folder = state
            .facts
            .folder
            .as_ref()
            .map_err(|e| AgentError::Fold(e.clone()))?;
        let events = state.writer.events();
        let message_at = |seq: &u64| {
            usize::try_from(*seq)
                .ok()
                .and_then(|i| events.get(i))
                .and_then(Event::message)
        };
        let total = folder.surface().iter().filter_map(message_at).count();
        let keep = super::context_window::fitting_count(
            folder.surface().iter().rev().filter_map(message_at),
            budget,
        );
        let mut kept: Vec<Message> = folder
            .surface()
            .iter()
            .rev()
            .filter_map(message_at)
            .take(keep)
            .cloned()
            .collect();
        kept.reverse();
        Ok((kept, total - keep))
    }

    /// Whether any `session/title` was ever written.
    pub(crate) fn has_title(&self) -> bool {
        self.lock().facts.has_title
    }

    /// The number for the next turn: one past the highest logged.
    pub(crate) fn next_turn(&self) -> u64 {
        self.lock()
            .facts
            .last_turn
            .map_or(1, |t| t.saturating_add(1))
    }
}

/// A non-surface event.
pub(crate) fn plain(data: EventData) -> NewEvent {
    NewEvent {
        data,
        surface_op: None,
        source_event_seqs: None,
    }
}

/// A surface event appended to the surface.
pub(crate) fn appended(data: EventData) -> NewEvent {
    NewEvent {
        data,
        surface_op: Some(SurfaceOp::Append),
        source_event_seqs: None,
    }
}

/// An event the project writes with a JSON payload (`compact/*`, `message/discarded`).
pub(crate) fn other(kind: &str, data: Value) -> EventData {
    EventData::Other {
        kind: kind.to_owned(),
        data,
    }
}

/// `session/title` from `source` kind (`fallback` / `manual`).
pub(crate) fn title_event(
    title: String,
    message_seqs: Vec<u64>,
    source: TitleSourceKind,
) -> NewEvent {
    plain(EventData::SessionTitle(TitleData {
        title,
        message_seqs,
        source: TitleSource {
            kind: source,
            extra: serde_json::Map::new(),
        },
        extra: serde_json::Map::new(),
    }))
}

/// `message/discarded` naming the dropped messages.
pub(crate) fn discard_event(message_ids: &[String], reason: &str) -> NewEvent {
    plain(other(
        dsh_store::event::kind::MESSAGE_DISCARDED,
        json!({"messageIds": message_ids, "reason": reason}),
    ))
}
