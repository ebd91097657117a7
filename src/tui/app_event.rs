//! The one event bus of the app. Background tasks (candidate queries, `prepare`, agent
//! event forwarding, session listing) only ever send [`AppEvent`]s; the event loop owns
//! all state and decides what happens.

use tokio::sync::mpsc;

use std::sync::Arc;

use super::conversation_hits::{HitsAnswer, HitsTarget};
use super::search_indexing::IndexingEvent;
use super::session_preview::PreviewRequest;
use super::transcript::Transcript;
use crate::agent::AgentEvent;
use crate::agent::LogFacts;
use crate::agent::submit::{Submission, SubmitError};
use dsh_reference::{CandidatePage, ReferenceError, ReferenceEstimate};
use dsh_store::{SessionWriter, StoreError};

/// Everything that can happen to the app besides terminal input.
#[derive(Debug)]
pub enum AppEvent {
    /// Something changed; draw a frame (bursts collapse into one draw).
    Redraw,
    /// Leave the app (e.g. on SIGTERM), cancelling what runs.
    Quit,
    /// An event from the agent of session generation `generation` (stale ones are dropped).
    Agent { generation: u64, event: AgentEvent },
    /// Candidates for the `@` popup query `query_id`.
    Candidates {
        query_id: u64,
        result: Result<CandidatePage, ReferenceError>,
    },
    /// A head start for the `@` popup's empty query `query_id`: the first page remembered
    /// from the last run, its rows still having a log; the checked answer follows.
    CandidatesRemembered { query_id: u64, page: CandidatePage },
    /// The checked answer to the `@` popup query `query_id`, which was first answered from
    /// the remembered first page: it replaces those rows.
    CandidatesChecked {
        query_id: u64,
        result: Result<CandidatePage, ReferenceError>,
    },
    /// The size estimate for a preview.
    Estimated {
        request: PreviewRequest,
        result: Result<Arc<ReferenceEstimate>, ReferenceError>,
    },
    /// `prepare_submission` finished for submission `prepare_id`.
    Prepared {
        prepare_id: u64,
        result: Result<Submission, SubmitError>,
    },
    /// The working directory of a session a chip names (for the hint line), looked up
    /// because no listing had shown it.
    ChipCwd {
        session_id: String,
        cwd: Option<String>,
    },
    /// Rows for the `/resume` picker's listing `query_id`.
    SessionsListed {
        query_id: u64,
        result: Result<CandidatePage, ReferenceError>,
    },
    /// A session for `/new` or `/resume` was opened for writing (or could not be).
    SessionOpened {
        id: String,
        /// The writer and what the agent keeps of the log, gathered while opening it.
        result: Result<(SessionWriter, Box<LogFacts>), StoreError>,
    },
    /// Sessions whose conversation holds the query `query_id` of the `@` popup or the
    /// `/resume` picker (stale ones are dropped by the picker).
    ConversationHits {
        target: HitsTarget,
        query_id: u64,
        answer: HitsAnswer,
    },
    /// The background full-text indexing made progress, finished, or has a notice.
    SearchIndexing(IndexingEvent),
    /// The open session's log, read into a transcript off the UI thread (session
    /// generation `generation`; stale ones are dropped).
    TranscriptLoaded {
        generation: u64,
        loaded: Box<LoadedTranscript>,
    },
}

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
