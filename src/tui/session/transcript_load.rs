//! Reading the open session's log into the transcript off the UI thread (a long session
//! would hold up the UI), with its own typed messages for Up history. One load at a time,
//! through one request slot: switching sessions makes the older load stale.

use std::collections::VecDeque;

use crate::agent::Agent;
use crate::tui::app::event::{AppEvent, AppEventSender};
use crate::tui::request_slot::{Policy, RequestSlot};
use crate::tui::transcript::Transcript;

/// A session's conversation as read from its log for the transcript.
#[derive(Debug)]
pub struct LoadedTranscript {
    /// The kept cells (the newest, bounded) and what the header shows.
    pub transcript: Transcript,
    /// The session's own typed messages, oldest first (the newest `history_size`): Up history.
    pub typed: Vec<String>,
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
}

/// The load of the open session's transcript.
#[derive(Debug)]
pub struct TranscriptLoader {
    slot: RequestSlot<()>,
    /// Inputs sent while the load runs (they go after the session's own messages in Up
    /// history).
    sent_since: usize,
    /// `Appended` events up to this seq are already in the loaded transcript.
    loaded_through: Option<u64>,
}

impl Default for TranscriptLoader {
    fn default() -> Self {
        TranscriptLoader {
            slot: RequestSlot::new(Policy::Replace),
            sent_since: 0,
            loaded_through: None,
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
        self.sent_since = 0;
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
                        typed.push_back(message.joined_text());
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
        // Outside a runtime (never in the app) the read runs here.
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => drop(handle.spawn_blocking(read)),
            Err(_) => read(),
        }
    }

    /// Whether the open session's transcript is still being read.
    pub fn is_loading(&self) -> bool {
        self.slot.running().is_some()
    }

    /// An input was sent (counted while a load runs).
    pub fn note_sent(&mut self) {
        if self.is_loading() {
            self.sent_since += 1;
        }
    }

    /// The load `ticket` answered: how many inputs were sent meanwhile, or `None` when the
    /// answer is stale. Records how far the loaded transcript goes.
    pub fn finish(&mut self, ticket: u64, through_seq: Option<u64>) -> Option<usize> {
        self.slot.finish(ticket).0?;
        self.loaded_through = through_seq;
        Some(std::mem::take(&mut self.sent_since))
    }

    /// Whether an `Appended` event of seq `seq` is already shown (read by the load, or the
    /// load still runs and will show it).
    pub fn has_event(&self, seq: u64) -> bool {
        self.is_loading() || self.loaded_through.is_some_and(|through| seq <= through)
    }
}
