//! Reading the open session's log into the transcript off the UI thread (a long session
//! would hold up the UI), with its own typed messages for Up history; and, as the user
//! scrolls back, windows of the log's older events (a windowed read: bounded, from the
//! nearest checkpoint of the log's index, never from the start). One load and one window
//! at a time, each through its request slot: switching sessions makes older ones stale.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::agent::Agent;
use crate::tui::event::{AppEvent, AppEventSender};
use crate::tui::request_slot::{Policy, RequestSlot};
use crate::tui::transcript::Transcript;
use crate::tui::transcript::chat_view::ChatView;
use dsh_foreign::SessionSources;
use dsh_reference::SessionReferences;
use dsh_store::{SessionStore, WindowEnd, WindowLimits};

/// A session's conversation as read from its log for the transcript.
#[derive(Debug)]
pub struct LoadedTranscript {
    /// The kept cells (the newest, bounded) and what the header shows.
    pub transcript: Transcript,
    /// The session's own typed messages with the time each was logged (ms since the
    /// epoch), oldest first (the newest `history_size`): Up history, merged by time.
    pub typed: Vec<(String, i64)>,
    /// Seq of the last event read; `Appended` events up to it are already in `transcript`.
    pub through_seq: Option<u64>,
    /// Why the log could not be read to the end (code, message), if it could not.
    pub error: Option<(&'static str, String)>,
}

/// What a transcript load answered.
#[derive(Debug)]
pub enum TranscriptEvent {
    /// The log of load `ticket` was read.
    Loaded {
        ticket: u64,
        loaded: Box<LoadedTranscript>,
    },
    /// The window of older events of read `ticket`: its cells and the seq it starts at
    /// (`0`: the log's start), or why it could not be read.
    Older {
        ticket: u64,
        read: Result<(Box<Transcript>, u64), String>,
    },
    /// The window of the events from a seq on, of read `ticket`: its cells and the seq it
    /// ends before, or why it could not be read.
    Newer {
        ticket: u64,
        read: Result<(Box<Transcript>, u64), String>,
    },
    /// How many messages the cards' sources gained since their snapshots, of check
    /// `ticket`: `(session, captured through seq, newer messages)` (sources that could not
    /// be read are left out).
    Stale {
        ticket: u64,
        answers: Vec<(String, Option<u64>, usize)>,
    },
}

/// What an answered read leaves the app to do.
#[derive(Debug)]
pub enum TranscriptDone {
    /// Nothing more: a stale answer, or the sources' newer messages shown on the cards.
    Nothing,
    /// The session's log was read: show it.
    Loaded { loaded: Box<LoadedTranscript> },
    /// A window of older or newer events is on show (its cards may be stale).
    WindowShown,
}

/// The load of the open session's transcript.
#[derive(Debug)]
pub struct TranscriptLoader {
    slot: RequestSlot<()>,
    /// The window of older events being read.
    older: RequestSlot<u64>,
    /// The window of newer events being read (scrolling down after older ones).
    forward: RequestSlot<u64>,
    /// The staleness check of the cards' sources running.
    newer: RequestSlot<()>,
    /// `Appended` events up to this seq are already in the loaded transcript.
    loaded_through: Option<u64>,
    /// The running load reads the open session again (its typed messages are in Up
    /// history already).
    again: bool,
}

impl Default for TranscriptLoader {
    fn default() -> Self {
        TranscriptLoader {
            slot: RequestSlot::new(Policy::Replace),
            older: RequestSlot::new(Policy::Replace),
            forward: RequestSlot::new(Policy::Replace),
            newer: RequestSlot::new(Policy::Replace),
            loaded_through: None,
            again: false,
        }
    }
}

impl TranscriptLoader {
    /// Reads `agent`'s log on a blocking thread, keeping the newest `history_size` typed
    /// messages; the answer arrives as [`TranscriptEvent::Loaded`].
    pub fn start(&mut self, agent: &Agent, history_size: usize, tx: &AppEventSender) {
        let Some(ticket) = self.slot.request(()) else {
            return;
        };
        // A window read or a check for the transcript being replaced is stale.
        self.older.cancel();
        self.forward.cancel();
        self.newer.cancel();
        self.again = false;
        self.loaded_through = None;
        let (agent, tx) = (agent.clone(), tx.clone());
        let read = move || {
            let mut transcript = Transcript::default();
            let mut typed = VecDeque::new();
            let mut through_seq = None;
            agent.with_log_held(|read_log| {
                let read = read_log(&mut |event| {
                    through_seq = Some(event.seq);
                    transcript.apply(&event);
                    if let dsh_store::EventData::UserMessage(message) = &event.data
                        && message.is_direct_user()
                        && history_size > 0
                    {
                        if typed.len() == history_size {
                            typed.pop_front();
                        }
                        typed.push_back((message.joined_text(), event.time));
                    }
                });
                // Sent while the log is still held: any later append's event comes after.
                let loaded = LoadedTranscript {
                    transcript,
                    typed: typed.into(),
                    through_seq,
                    error: read.err().map(|e| (e.code(), e.to_string())),
                };
                tx.send(AppEvent::Transcript(TranscriptEvent::Loaded {
                    ticket: ticket.id,
                    loaded: Box::new(loaded),
                }));
            });
        };
        off_ui_thread(read);
    }

    /// Reads the window of session `id`'s events before seq `before` on a blocking thread
    /// (at most [`WindowLimits::default`]: 400 events, 4 MiB of log lines, whole turns)
    /// into transcript cells; the answer arrives as [`TranscriptEvent::Older`].
    pub fn read_older(
        &mut self,
        store: &SessionStore,
        id: &str,
        before: u64,
        sessions: Option<Arc<SessionSources>>,
        tx: &AppEventSender,
    ) {
        let Some(ticket) = self.older.request(before) else {
            return;
        };
        let (store, id, tx) = (store.clone(), id.to_owned(), tx.clone());
        let read = move || {
            let read = store
                .read_window(&id, WindowEnd::BeforeSeq(before), WindowLimits::default())
                .map_err(|e| e.to_string())
                .map(|window| (window_cells(&window.events, sessions), window.start_seq));
            tx.send(AppEvent::Transcript(TranscriptEvent::Older {
                ticket: ticket.id,
                read,
            }));
        };
        off_ui_thread(read);
    }

    /// Checks off the UI thread how many messages each of `asks`' sessions gained since the
    /// seq a snapshot captured it through (one `stat` per unchanged log: the reference
    /// layer keeps the counts by log stamp); the answer arrives as
    /// [`TranscriptEvent::Stale`]. A newer check cancels the running one.
    pub fn check_newer(
        &mut self,
        refs: SessionReferences,
        asks: Vec<(String, Option<u64>)>,
        tx: &AppEventSender,
    ) {
        if asks.is_empty() {
            return;
        }
        let Some(ticket) = self.newer.request(()) else {
            return;
        };
        let tx = tx.clone();
        tokio::spawn(async move {
            let mut answers = Vec::new();
            for (id, seq) in asks {
                if ticket.cancel.is_cancelled() {
                    return;
                }
                match refs.newer_messages(&id, seq, &ticket.cancel).await {
                    Ok(n) => answers.push((id, seq, n)),
                    Err(e) => {
                        tracing::debug!(session = %id, error = %e.message, "staleness not checked");
                    }
                }
            }
            tx.send(AppEvent::Transcript(TranscriptEvent::Stale {
                ticket: ticket.id,
                answers,
            }));
        });
    }

    /// Whether the transcript, a window of it or a staleness check is being read.
    pub fn is_reading(&self) -> bool {
        self.is_loading()
            || self.older.running().is_some()
            || self.forward.running().is_some()
            || self.newer.running().is_some()
    }

    /// Whether a staleness check runs.
    pub fn is_checking_newer(&self) -> bool {
        self.newer.running().is_some()
    }

    /// The staleness check `ticket` answered: whether it is current.
    pub fn finish_newer(&mut self, ticket: u64) -> bool {
        self.newer.finish(ticket).0.is_some()
    }

    /// Reads the window of session `id`'s events from seq `from` on (at most
    /// [`WindowLimits::default`]'s events and bytes; fewer events when their lines are
    /// larger, never a gap) on a blocking thread into transcript cells; the answer arrives
    /// as [`TranscriptEvent::Newer`] with the seq the window ends before (`from` when the
    /// log has nothing after it).
    pub fn read_newer(
        &mut self,
        store: &SessionStore,
        id: &str,
        from: u64,
        sessions: Option<Arc<SessionSources>>,
        tx: &AppEventSender,
    ) {
        let Some(ticket) = self.forward.request(from) else {
            return;
        };
        let (store, id, tx) = (store.clone(), id.to_owned(), tx.clone());
        let read = move || {
            let defaults = WindowLimits::default();
            let mut count = defaults.max_events;
            // `read_window` reads backwards: the window before `from + count`, shrunk until
            // its byte bound no longer cuts its front.
            let read = loop {
                let limits = WindowLimits {
                    max_events: count,
                    whole_turns: false,
                    ..defaults
                };
                let end = from.saturating_add(u64::try_from(count).unwrap_or(u64::MAX));
                match store.read_window(&id, WindowEnd::BeforeSeq(end), limits) {
                    Ok(window)
                        if window.start_seq > from && !window.events.is_empty() && count > 1 =>
                    {
                        count /= 2;
                    }
                    other => break other,
                }
            };
            let read = read.map_err(|e| e.to_string()).map(|window| {
                let events = window.events.as_slice();
                let start = events.partition_point(|e| e.seq < from);
                let cells = window_cells(events.get(start..).unwrap_or_default(), sessions);
                (cells, window.end_seq.max(from))
            });
            tx.send(AppEvent::Transcript(TranscriptEvent::Newer {
                ticket: ticket.id,
                read,
            }));
        };
        off_ui_thread(read);
    }

    /// The forward read `ticket` answered: whether it is current.
    pub fn finish_newer_window(&mut self, ticket: u64) -> bool {
        self.forward.finish(ticket).0.is_some()
    }

    /// The window read `ticket` answered: whether it is current (else it is stale).
    pub fn finish_older(&mut self, ticket: u64) -> bool {
        self.older.finish(ticket).0.is_some()
    }

    /// Marks the load just started as a second read of the same session.
    pub fn mark_again(&mut self) {
        self.again = self.is_loading();
    }

    /// Whether the load that answered read the same session again (then its typed messages
    /// are not added to Up history a second time).
    pub fn take_again(&mut self) -> bool {
        std::mem::take(&mut self.again)
    }

    /// Whether the open session's transcript is still being read.
    pub fn is_loading(&self) -> bool {
        self.slot.running().is_some()
    }

    /// Whether the load `ticket` answered is current (else it is stale). Records how far
    /// the loaded transcript goes.
    pub fn finish(&mut self, ticket: u64, through_seq: Option<u64>) -> bool {
        if self.slot.finish(ticket).0.is_none() {
            return false;
        }
        self.loaded_through = through_seq;
        true
    }

    /// A read answered: a window goes into `chat`, as do the sources' newer messages; a
    /// stale answer is dropped.
    pub fn on_event(&mut self, event: TranscriptEvent, chat: &mut ChatView) -> TranscriptDone {
        match event {
            TranscriptEvent::Loaded { ticket, loaded } => {
                if self.finish(ticket, loaded.through_seq) {
                    TranscriptDone::Loaded { loaded }
                } else {
                    TranscriptDone::Nothing
                }
            }
            TranscriptEvent::Older { ticket, read } => {
                if !self.finish_older(ticket) {
                    return TranscriptDone::Nothing;
                }
                chat.older_read(read.map(|(cells, start)| (*cells, start)));
                TranscriptDone::WindowShown
            }
            TranscriptEvent::Newer { ticket, read } => {
                if !self.finish_newer_window(ticket) {
                    return TranscriptDone::Nothing;
                }
                chat.newer_read(read.map(|(cells, end)| (*cells, end)));
                TranscriptDone::WindowShown
            }
            TranscriptEvent::Stale { ticket, answers } => {
                if self.finish_newer(ticket) {
                    chat.set_newer(&answers);
                }
                TranscriptDone::Nothing
            }
        }
    }

    /// Whether an `Appended` event of seq `seq` is already shown (read by the load, or the
    /// load still runs and will show it).
    pub fn has_event(&self, seq: u64) -> bool {
        self.is_loading() || self.loaded_through.is_some_and(|through| seq <= through)
    }
}

/// Runs `read` on a blocking thread (outside a runtime, never in the app, right here).
fn off_ui_thread(read: impl FnOnce() + Send + 'static) {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => drop(handle.spawn_blocking(read)),
        Err(_) => read(),
    }
}

/// Transcript cells of a window of the log's `events` (origins of referenced sessions from
/// `sessions`).
fn window_cells(
    events: &[dsh_store::Event],
    sessions: Option<Arc<SessionSources>>,
) -> Box<Transcript> {
    let mut cells = Transcript::default();
    if let Some(sessions) = sessions {
        cells.set_sessions(sessions);
    }
    for event in events {
        cells.apply(event);
    }
    Box::new(cells)
}
