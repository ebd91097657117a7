//! The agent's single handle on its session log: appends (durable or buffered) run on a
//! blocking thread, and every appended event is announced on the agent's event channel
//! in seq order. What a request needs is kept as a bounded tail of the surface; anything
//! older is read again from the log on demand, never held.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;

use super::context_window::input_budget;
use super::error::AgentError;
use super::handle::AgentEvent;
use super::surface_tail::{SurfaceTail, TailEntry};
use crate::llm::Provider;
use dsh_store::event::{EventData, TitleData, TitleSource, TitleSourceKind};
use dsh_store::{Event, Message, SurfaceOp};
use dsh_store::{NewEvent, SessionWriter};

/// Surface events read again per pass when the tail must reach further back (doubling).
const REFILL_FIRST: usize = 256;

/// Reads the whole log, in seq order, into the callback it is given.
pub type LogReader<'a> = &'a mut dyn FnMut(&mut dyn FnMut(Event)) -> Result<(), AgentError>;

/// Shared access to the writer; only the agent loop appends.
pub(crate) struct AgentLog {
    state: Arc<Mutex<LogState>>,
    events: UnboundedSender<AgentEvent>,
}

/// The writer plus facts kept up to date on every append, so a step costs O(window)
/// rather than a rescan of the whole log.
struct LogState {
    writer: SessionWriter,
    facts: LogFacts,
}

/// What the agent keeps of a session's log besides the writer: gathered in one pass while
/// the log is opened ([`dsh_store::SessionStore::open_writer_observing`]) or read back from
/// the writer, then kept up to date on every append.
#[derive(Debug)]
pub struct LogFacts {
    /// Why the log could not be read back, if it could not (requests then fail).
    load_error: Option<String>,
    has_title: bool,
    tail: SurfaceTail,
}

impl LogFacts {
    /// Empty facts keeping a surface tail of `provider`'s input budget.
    pub fn for_provider(provider: &dyn Provider) -> Self {
        Self::for_context_tokens(provider.context_tokens())
    }

    /// Empty facts keeping a surface tail of the input budget of a `context_tokens` window.
    pub fn for_context_tokens(context_tokens: u64) -> Self {
        LogFacts {
            load_error: None,
            has_title: false,
            tail: SurfaceTail::new(input_budget(context_tokens)),
        }
    }

    /// Follow one event of the log (in seq order).
    pub fn observe(&mut self, e: &Event) {
        self.tail.observe(e);
        if matches!(e.data, EventData::SessionTitle(_)) {
            self.has_title = true;
        }
    }

    /// The estimated tokens of the window the next request of a provider with
    /// `context_tokens` would send (docs/references.md: the budget plan).
    pub fn window_tokens(&self, context_tokens: u64) -> u64 {
        self.tail.window_tokens(input_budget(context_tokens))
    }

    /// After the whole log was observed: drop a checkpoint the surface lost meanwhile.
    fn settle(&mut self, writer: &SessionWriter) {
        let surface = writer.surface();
        self.tail
            .drop_checkpoint_unless(|seq| surface.contains(&seq));
    }
}

/// A bounded part of the surface for one request.
#[derive(Debug)]
pub(crate) struct Window {
    /// Seqs and messages in model order: the latest checkpoint (when there is one), then
    /// the newest messages that fit.
    pub(crate) messages: Vec<(u64, Message)>,
    /// Surface events left out (older than the window).
    pub(crate) left_out: usize,
}

impl AgentLog {
    /// Facts read back from `writer`'s log (one streaming pass; a failure is kept and
    /// fails every request).
    pub(crate) fn new(
        writer: SessionWriter,
        provider: &dyn Provider,
        events: UnboundedSender<AgentEvent>,
    ) -> Self {
        let mut facts = LogFacts::for_provider(provider);
        let read = writer.read_log(&mut |e| {
            facts.observe(&e);
            Ok(())
        });
        if let Err(e) = read {
            facts = LogFacts::for_provider(provider);
            facts.load_error = Some(e.to_string());
        }
        Self::with_facts(writer, facts, events)
    }

    /// Facts already gathered while `writer` was opened.
    pub(crate) fn with_facts(
        writer: SessionWriter,
        mut facts: LogFacts,
        events: UnboundedSender<AgentEvent>,
    ) -> Self {
        facts.settle(&writer);
        AgentLog {
            state: Arc::new(Mutex::new(LogState { writer, facts })),
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
            let LogState { writer, facts } = &mut *state;
            for e in &appended {
                facts.observe(e);
            }
            if appended
                .iter()
                .any(|e| matches!(e.surface_op, Some(SurfaceOp::Replace { .. })))
            {
                facts.settle(writer);
            }
            for e in &appended {
                let _ = events.send(AgentEvent::Appended(e.clone()));
            }
            Ok(appended)
        })
        .await
        .map_err(|e| AgentError::Task(e.to_string()))?
    }

    /// Run the writer's store-wide encoding check on a blocking thread, without holding the
    /// log (it visits every session directory), so a store this session cannot be written to
    /// is reported before anything is typed rather than at the first send.
    pub(crate) fn check_encoding_soon(&self) {
        let Some(due) = self.lock().writer.encoding_check_due() else {
            return;
        };
        let state = Arc::clone(&self.state);
        let events = self.events.clone();
        tokio::task::spawn_blocking(move || {
            let verdict = due.run();
            let settled = state
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .writer
                .settle_encoding(verdict);
            if let Err(e) = settled {
                let e = AgentError::from(e);
                let _ = events.send(AgentEvent::Error {
                    code: e.code(),
                    message: e.to_string(),
                });
            }
        });
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

    /// Stream the whole log so far from disk, in seq order (initial render, resume).
    pub(crate) fn for_each_event(&self, on_event: &mut dyn FnMut(Event)) -> Result<(), AgentError> {
        self.holding(|read| read(on_event))
    }

    /// Run `f` with the log held, giving it a reader of the whole log (as
    /// [`for_each_event`](Self::for_each_event)): nothing can be appended until `f` returns.
    pub(crate) fn holding<R>(&self, f: impl FnOnce(LogReader<'_>) -> R) -> R {
        let state = self.lock();
        f(&mut |on_event| {
            state
                .writer
                .read_log(&mut |e| {
                    on_event(e);
                    Ok(())
                })
                .map_err(AgentError::from)
        })
    }

    pub(crate) fn session_id(&self) -> String {
        self.lock().writer.header().id.clone()
    }

    pub(crate) fn cwd(&self) -> Option<String> {
        self.lock().writer.header().cwd.clone()
    }

    /// The surface without its newest `keep_newest` events, in surface order: the nodes a
    /// compaction shadows (empty when there are none).
    pub(crate) fn surface_before(&self, keep_newest: usize) -> Vec<u64> {
        let state = self.lock();
        let surface = state.writer.surface();
        let end = surface.len().saturating_sub(keep_newest);
        surface.get(..end).unwrap_or_default().to_vec()
    }

    /// The estimated tokens of the messages of surface events `seqs` (bytes / 3 + 4 per
    /// message, as the context window counts them): from the tail for the ones it holds,
    /// one streaming pass over the log for the rest.
    pub(crate) fn estimated_tokens(&self, seqs: &[u64]) -> Result<u64, AgentError> {
        let state = self.lock();
        let LogState { writer, facts } = &*state;
        let mut wanted: HashSet<u64> = seqs.iter().copied().collect();
        let mut total: u64 = 0;
        for entry in facts.tail.entries().chain(facts.tail.checkpoint()) {
            if wanted.remove(&entry.seq) {
                total = total.saturating_add(entry.tokens);
            }
        }
        if !wanted.is_empty() {
            writer.read_log(&mut |e| {
                if wanted.remove(&e.seq)
                    && let Some(m) = e.message()
                {
                    total = total.saturating_add(super::context_window::estimate_tokens(m));
                }
                Ok(())
            })?;
        }
        Ok(total)
    }

    /// The longest line the log may hold (`store.max_line_bytes`).
    pub(crate) fn max_line_bytes(&self) -> u64 {
        self.lock().writer.limits().max_line_bytes
    }

    /// The seq the next appended event gets (only the agent loop appends).
    pub(crate) fn next_seq(&self) -> u64 {
        self.lock().writer.next_seq()
    }

    /// The events that close what a crash left open (docs/agent.md: reopening a session).
    pub(crate) fn interrupted_closers(&self) -> Vec<NewEvent> {
        self.lock().writer.interrupted_closers()
    }

    /// What the log broke before it was opened here (an earlier version wrote it).
    pub(crate) fn inherited(&self) -> dsh_store::Findings {
        self.lock().writer.inherited().clone()
    }

    /// The window of the surface (without its newest `skip_newest` events) that fits
    /// `budget` tokens: the latest compaction checkpoint, then the newest messages that fit
    /// (at least one). Reads older events again from the log when the tail is too short.
    pub(crate) fn window(&self, budget: u64, skip_newest: usize) -> Result<Window, AgentError> {
        let mut state = self.lock();
        let LogState { writer, facts } = &mut *state;
        if let Some(e) = &facts.load_error {
            return Err(AgentError::LogRead(e.clone()));
        }
        facts.tail.raise_cap(budget);
        refill(writer, &mut facts.tail, budget, skip_newest)?;
        let surface_len = writer.surface().len();
        let tail = &facts.tail;
        let candidates: Vec<&TailEntry> = tail
            .entries()
            .take(tail.len().saturating_sub(skip_newest))
            .collect();
        let considered = surface_len.saturating_sub(skip_newest);
        // Pinned: the newest checkpoint among the candidates, else the one older than the tail.
        let pinned_at = candidates.iter().rposition(|e| is_checkpoint(e));
        let pinned = pinned_at
            .and_then(|i| candidates.get(i).copied())
            .or_else(|| tail.checkpoint());
        let mut used = pinned.map_or(0, |p| p.tokens);
        let mut chosen: Vec<usize> = Vec::new();
        for (i, entry) in candidates.iter().enumerate().rev() {
            if Some(i) == pinned_at {
                continue;
            }
            let next = used.saturating_add(entry.tokens);
            if next > budget && !chosen.is_empty() {
                break;
            }
            used = next;
            chosen.push(i);
        }
        chosen.extend(pinned_at);
        chosen.sort_unstable();
        let mut messages = Vec::with_capacity(chosen.len() + 1);
        if pinned_at.is_none()
            && let Some(p) = pinned
            && let Some(m) = &p.message
        {
            messages.push((p.seq, m.clone()));
        }
        let in_window = chosen.len() + usize::from(pinned_at.is_none() && pinned.is_some());
        messages.extend(
            chosen
                .iter()
                .filter_map(|&i| candidates.get(i))
                .filter_map(|e| e.message.clone().map(|m| (e.seq, m))),
        );
        Ok(Window {
            messages,
            left_out: considered.saturating_sub(in_window),
        })
    }

    /// The estimated tokens of the window the next request would send (from the tail).
    pub(crate) fn window_tokens(&self, context_tokens: u64) -> u64 {
        self.lock().facts.window_tokens(context_tokens)
    }

    /// Whether any `session/title` was ever written.
    pub(crate) fn has_title(&self) -> bool {
        self.lock().facts.has_title
    }

    /// The number for the next turn: the one dsh's rules expect (one past the last that
    /// ended; 1 for a new session).
    pub(crate) fn next_turn(&self) -> u64 {
        self.lock().writer.rules().next_turn()
    }
}

fn is_checkpoint(entry: &TailEntry) -> bool {
    entry
        .message
        .as_ref()
        .and_then(|m| m.source.as_ref())
        .is_some_and(dsh_store::Source::is_compact_checkpoint)
}

/// Read older surface events again until the tail (without its newest `skip` events)
/// holds `budget` tokens or the whole surface: one streaming pass per doubling chunk.
fn refill(
    writer: &SessionWriter,
    tail: &mut SurfaceTail,
    budget: u64,
    skip: usize,
) -> Result<(), AgentError> {
    let mut chunk = REFILL_FIRST;
    loop {
        let surface = writer.surface();
        let have = tail.len();
        let older = surface.len().saturating_sub(have);
        let skipped: u64 = tail.entries().rev().take(skip).map(|e| e.tokens).sum();
        if older == 0 || tail.tokens().saturating_sub(skipped) >= budget {
            return Ok(());
        }
        let from = older.saturating_sub(chunk);
        let wanted: Vec<u64> = surface.get(from..older).unwrap_or_default().to_vec();
        let set: HashSet<u64> = wanted.iter().copied().collect();
        let mut found: HashMap<u64, Option<Message>> = HashMap::with_capacity(wanted.len());
        writer.read_log(&mut |e| {
            if e.surface_op.is_some() && set.contains(&e.seq) {
                found.insert(e.seq, e.message().cloned());
            }
            Ok(())
        })?;
        let mut entries = Vec::with_capacity(wanted.len());
        for seq in wanted {
            let message = found.remove(&seq).ok_or_else(|| {
                AgentError::LogRead(format!("surface event {seq} is missing from the log"))
            })?;
            entries.push(TailEntry::new(seq, message));
        }
        tail.prepend(entries);
        chunk = chunk.saturating_mul(2);
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

/// An event the project writes with a JSON payload (`compaction/*`).
pub(crate) fn other(kind: &str, data: Value) -> EventData {
    EventData::Other {
        kind: kind.to_owned(),
        data,
    }
}

/// `session/title` from `source` kind (`fallback` citing the message it was derived from,
/// or `user` citing none).
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
