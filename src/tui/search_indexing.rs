//! The full-text index kept up to date in the background while the app runs
//! (docs/search.md): opened and refreshed on a thread of its own, never on the UI thread;
//! progress reaches the app as coalesced events on the bus, shown in the status line.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use dsh_search::{Cancel, IndexOptions, Progress, RefreshOutcome, SessionIndex};

use super::app_event::{AppEvent, AppEventSender};

/// Least time between two progress events (bursts collapse into one).
const PROGRESS_EVERY: Duration = Duration::from_millis(100);

/// What the indexing thread reports.
#[derive(Debug)]
pub enum IndexingEvent {
    /// `done` of `total` sessions are indexed.
    Progress(Progress),
    /// Something the user should know (index rebuilt, kept in memory, cannot be opened).
    Notice(String),
    /// The update finished (or failed).
    Finished(Result<RefreshOutcome, String>),
}

/// The background indexing of one store; dropping it cancels a running update.
#[derive(Debug)]
pub struct SearchIndexing {
    cancel: Cancel,
    index: Arc<OnceLock<Arc<SessionIndex>>>,
}

impl SearchIndexing {
    /// Open the index of `store_root` and bring it up to date on a new thread.
    pub fn start(store_root: PathBuf, options: IndexOptions, tx: AppEventSender) -> SearchIndexing {
        let cancel = Cancel::new();
        let index = Arc::new(OnceLock::new());
        let (thread_cancel, slot) = (cancel.clone(), Arc::clone(&index));
        let spawned = std::thread::Builder::new()
            .name("search-index".into())
            .spawn(move || run(&store_root, &options, &thread_cancel, &slot, &tx));
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "search indexing thread not started");
        }
        SearchIndexing { cancel, index }
    }

    /// The index once it is open (searchable while it is being updated).
    pub fn index(&self) -> Option<Arc<SessionIndex>> {
        self.index.get().cloned()
    }

    /// Stop a running update (what is done stays committed).
    pub fn cancel(&self) {
        self.cancel.cancel();
    }
}

impl Drop for SearchIndexing {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

fn run(
    root: &std::path::Path,
    options: &IndexOptions,
    cancel: &Cancel,
    slot: &OnceLock<Arc<SessionIndex>>,
    tx: &AppEventSender,
) {
    let send = |event| tx.send(AppEvent::SearchIndexing(event));
    let index = match SessionIndex::open(root, options) {
        Ok(index) => Arc::new(index),
        Err(e) => {
            send(IndexingEvent::Notice(format!(
                "full-text search unavailable: {e}"
            )));
            return;
        }
    };
    if let Some(notice) = index.status().notice {
        send(IndexingEvent::Notice(notice));
    }
    let _ = slot.set(Arc::clone(&index));
    let mut last: Option<Instant> = None;
    let result = index.refresh(cancel, &mut |p| {
        if p.done < p.total && last.is_some_and(|t| t.elapsed() < PROGRESS_EVERY) {
            return;
        }
        last = Some(Instant::now());
        send(IndexingEvent::Progress(p));
    });
    send(IndexingEvent::Finished(result.map_err(|e| e.to_string())));
}
