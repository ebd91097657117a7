//! The full-text index kept up to date in the background while the app runs
//! (docs/search.md): opened and refreshed on a thread of its own, never on the UI thread;
//! progress reaches the app as coalesced events on the bus, shown in the status line.
//! After the first update the thread sleeps; every [`RECHECK_EVERY`], or sooner when asked
//! ([`SearchIndexing::recheck`], e.g. when the `@` popup queries), it compares the store's
//! log stamps with the last update and indexes what other processes wrote.

use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use dsh_foreign::ForeignSource;
use dsh_search::{Cancel, IndexOptions, Progress, RefreshOutcome, SessionIndex};

use crate::tui::event::{AppEvent, AppEventSender};

/// Least time between two progress events (bursts collapse into one).
const PROGRESS_EVERY: Duration = Duration::from_millis(100);
/// How often an idle app looks for other processes' writes (one listing of the store).
pub const RECHECK_EVERY: Duration = Duration::from_secs(30);
/// Least time between two change checks asked for by [`SearchIndexing::recheck`].
const RECHECK_AT_MOST_EVERY: Duration = Duration::from_secs(2);
/// A later update shows progress only once it has run this long.
const QUIET_UPDATE: Duration = Duration::from_millis(500);

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

/// The full-text index kept up to date in the background, if enabled, and how far a
/// running update is.
#[derive(Debug, Default)]
pub struct Search {
    pub indexing: Option<SearchIndexing>,
    /// The running update's progress (none once it is done).
    pub progress: Option<Progress>,
}

/// What an indexing report leaves the app to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IndexingDone {
    /// The update moved on: section titles follow its progress.
    Progressed,
    /// Something the user should know.
    Notice(String),
    /// The update finished (the pickers search the complete index), or failed (`error`).
    Finished { error: Option<String> },
}

impl Search {
    /// A report of the indexing thread: the progress it keeps, and what is left to do.
    pub fn on_event(&mut self, event: IndexingEvent) -> IndexingDone {
        match event {
            IndexingEvent::Progress(p) => {
                self.progress = (p.done < p.total).then_some(p);
                IndexingDone::Progressed
            }
            IndexingEvent::Notice(notice) => IndexingDone::Notice(notice),
            IndexingEvent::Finished(result) => {
                self.progress = None;
                IndexingDone::Finished {
                    error: result.err(),
                }
            }
        }
    }
}

/// The background indexing of one store; dropping it cancels a running update.
#[derive(Debug)]
pub struct SearchIndexing {
    cancel: Cancel,
    index: Arc<OnceLock<Arc<SessionIndex>>>,
    wake: Arc<Wake>,
}

/// Wakes the sleeping indexing thread: a change check was asked for, or it should stop.
#[derive(Debug, Default)]
struct Wake {
    asked: Mutex<bool>,
    cv: Condvar,
}

impl Wake {
    fn ask(&self) {
        *self.asked.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.cv.notify_all();
    }

    /// Sleep until `deadline`, or until asked (not before `earliest`), or cancelled.
    fn sleep(&self, earliest: Instant, deadline: Instant, cancel: &Cancel) {
        let mut asked = self.asked.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            let now = Instant::now();
            if cancel.is_cancelled() || now >= deadline || (*asked && now >= earliest) {
                *asked = false;
                return;
            }
            let until = if *asked { earliest } else { deadline };
            asked = self
                .cv
                .wait_timeout(asked, until.saturating_duration_since(now))
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

impl SearchIndexing {
    /// Open the index of `store_root` and bring it up to date on a new thread.
    /// Sessions of the `foreign` sources are indexed too.
    pub fn start(
        store: dsh_store::SessionStore,
        options: IndexOptions,
        foreign: Vec<ForeignSource>,
        tx: AppEventSender,
    ) -> SearchIndexing {
        let cancel = Cancel::new();
        let index = Arc::new(OnceLock::new());
        let wake = Arc::new(Wake::default());
        let (thread_cancel, slot, thread_wake) =
            (cancel.clone(), Arc::clone(&index), Arc::clone(&wake));
        let spawned = std::thread::Builder::new()
            .name("search-index".into())
            .spawn(move || {
                let Some(index) = open(store, &options, foreign, &slot, &tx) else {
                    return;
                };
                keep_up(&index, &thread_cancel, &thread_wake, &tx, RECHECK_EVERY);
            });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "search indexing thread not started");
        }
        SearchIndexing {
            cancel,
            index,
            wake,
        }
    }

    /// Ask for a change check soon (at most one every two seconds): what other processes
    /// wrote to the store gets indexed. Cheap; never blocks.
    pub fn recheck(&self) {
        self.wake.ask();
    }

    /// The index once it is open (searchable while it is being updated).
    pub fn index(&self) -> Option<Arc<SessionIndex>> {
        self.index.get().cloned()
    }

    /// A getter of the index once it is open, to keep beside this (the recall tool asks it
    /// at each call).
    pub fn index_source(&self) -> impl Fn() -> Option<Arc<SessionIndex>> + Send + Sync + use<> {
        let slot = Arc::clone(&self.index);
        move || slot.get().cloned()
    }

    /// Stop a running update (what is done stays committed).
    pub fn cancel(&self) {
        self.cancel.cancel();
    }
}

impl Drop for SearchIndexing {
    fn drop(&mut self) {
        self.cancel.cancel();
        self.wake.ask();
    }
}

/// Open the index and make it searchable; `None` (with a notice sent) when it cannot be.
fn open(
    store: dsh_store::SessionStore,
    options: &IndexOptions,
    foreign: Vec<ForeignSource>,
    slot: &OnceLock<Arc<SessionIndex>>,
    tx: &AppEventSender,
) -> Option<Arc<SessionIndex>> {
    let send = |event| tx.send(AppEvent::SearchIndexing(event));
    let root = store.root().to_owned();
    let index = match SessionIndex::open(&root, options) {
        // Hits are checked against the app's own store (its warm listing).
        Ok(index) => Arc::new(index.with_foreign_sources(foreign).with_store(store)),
        Err(e) => {
            send(IndexingEvent::Notice(format!(
                "full-text search unavailable: {e}"
            )));
            return None;
        }
    };
    if let Some(notice) = index.status().notice {
        send(IndexingEvent::Notice(notice));
    }
    let _ = slot.set(Arc::clone(&index));
    Some(index)
}

/// The first update, then a change check whenever woken or every `recheck_every`, until
/// cancelled. A check that finds nothing changed sends nothing.
fn keep_up(
    index: &SessionIndex,
    cancel: &Cancel,
    wake: &Wake,
    tx: &AppEventSender,
    recheck_every: Duration,
) {
    let send = |event| tx.send(AppEvent::SearchIndexing(event));
    let result = index.refresh(cancel, &mut progress_sender(tx, Duration::ZERO));
    send(IndexingEvent::Finished(result.map_err(|e| e.to_string())));
    let mut checked = Instant::now();
    loop {
        wake.sleep(
            checked + RECHECK_AT_MOST_EVERY.min(recheck_every),
            checked + recheck_every,
            cancel,
        );
        if cancel.is_cancelled() {
            return;
        }
        checked = Instant::now();
        match index.refresh_if_changed(cancel, &mut progress_sender(tx, QUIET_UPDATE)) {
            Ok(None) => {}
            Ok(Some(outcome)) => send(IndexingEvent::Finished(Ok(outcome))),
            Err(e) => send(IndexingEvent::Finished(Err(e.to_string()))),
        }
    }
}

/// Progress as coalesced events, none before the update has run for `quiet`.
fn progress_sender(tx: &AppEventSender, quiet: Duration) -> impl FnMut(Progress) + '_ {
    let started = Instant::now();
    let mut last: Option<Instant> = None;
    move |p: Progress| {
        if started.elapsed() < quiet
            || (p.done < p.total && last.is_some_and(|t| t.elapsed() < PROGRESS_EVERY))
        {
            return;
        }
        last = Some(Instant::now());
        tx.send(AppEvent::SearchIndexing(IndexingEvent::Progress(p)));
    }
}
