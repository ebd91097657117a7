//! The one event bus of the app. Background tasks only ever send [`AppEvent`]s; the event
//! loop owns all state and decides what happens. Each controller has its own sub-enum.

use tokio::sync::mpsc;

use crate::agent::AgentEvent;
use crate::agent::submit::{Submission, SubmitError};
use crate::tui::composer::candidates::CandidatesEvent;
use crate::tui::composer::chip_hints::ChipEvent;
use crate::tui::picker::PickerEvent;
use crate::tui::preview::PreviewEvent;
use crate::tui::search::conversation_hits::HitsEvent;
use crate::tui::search::indexing::IndexingEvent;
use crate::tui::session::SessionEvent;
use crate::tui::session::read_only::ReadOnlyEvent;
use crate::tui::session::transcript_load::TranscriptEvent;

/// Everything that can happen to the app besides terminal input.
#[derive(Debug)]
pub enum AppEvent {
    /// Something changed; draw a frame (bursts collapse into one draw).
    Redraw,
    /// Leave the app (e.g. on SIGTERM), cancelling what runs.
    Quit,
    /// An event from the agent of session generation `generation` (stale ones are dropped).
    Agent { generation: u64, event: AgentEvent },
    /// The `@` popup's listing answered (in one of its phases).
    Candidates(CandidatesEvent),
    /// The `/resume` picker's listing answered.
    Picker(PickerEvent),
    /// A conversation search of the `@` popup or the picker answered.
    Hits(HitsEvent),
    /// A preview's size estimate is in.
    Preview(PreviewEvent),
    /// The preview of a file row of the `@` popup is ready.
    FilePreview(ratatui_mention::ItemPreview),
    /// A session for `/new` or `/resume` was opened for writing (or could not be).
    Session(SessionEvent),
    /// The open session's log was read into a transcript.
    Transcript(TranscriptEvent),
    /// What a chip in the composer refers to was looked up.
    Chip(ChipEvent),
    /// `prepare_submission` finished for submission `prepare_id`.
    Prepared {
        prepare_id: u64,
        result: Result<Submission, SubmitError>,
    },
    /// The background full-text indexing made progress, finished, or has a notice.
    SearchIndexing(IndexingEvent),
    /// Another tool's session opened read-only was read.
    ReadOnly(ReadOnlyEvent),
}

/// A cheap, cloneable handle for sending [`AppEvent`]s. Sending never blocks and never
/// fails loudly: once the app has quit, events are simply dropped.
#[derive(Debug, Clone)]
pub struct AppEventSender {
    tx: mpsc::UnboundedSender<AppEvent>,
}

impl AppEventSender {
    /// A sender and the receiver the event loop reads.
    pub fn channel() -> (AppEventSender, mpsc::UnboundedReceiver<AppEvent>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (AppEventSender { tx }, rx)
    }

    /// Send one event.
    pub fn send(&self, event: AppEvent) {
        // A closed channel means the app is shutting down; nothing is waiting for this.
        let _ = self.tx.send(event);
    }

    /// Ask for a frame.
    pub fn request_redraw(&self) {
        self.send(AppEvent::Redraw);
    }
}
