//! Pins and frecency as the app keeps them (docs/references.md: frecency and pins): the
//! usage book (`usage.json` in the data dir, never in a store) held in memory for the
//! pickers' order, changed by Alt+. (pin), by sending a message that references sessions and
//! by resuming one; each change is applied in memory at once and written back off the UI
//! thread — the file read again first, so what `dsh-refs send` noted meanwhile stays.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use dsh_reference::frecency::{UsageBook, UseKind};

/// The app's usage book. Cheap to clone; clones share it.
#[derive(Debug, Clone, Default)]
pub struct Usage {
    /// Where it is kept; `None`: this run only (no data dir).
    path: Option<PathBuf>,
    book: Arc<Mutex<UsageBook>>,
    /// Held while the file is read, changed and written (one writer at a time).
    writing: Arc<Mutex<()>>,
    /// Write-backs run in the order they were asked for.
    order: Arc<WriteOrder>,
}

/// The turns of the write-backs: each takes a ticket when asked for and runs when the
/// ones before it are done, so memory takes the file's book only from the newest — an
/// older one finishing late would undo a change made in memory since (a pin shown, then
/// gone, and a listing taken meanwhile ordered by the stale book).
#[derive(Debug, Default)]
struct WriteOrder {
    next: AtomicU64,
    done: Mutex<u64>,
    turn: Condvar,
}

impl Usage {
    /// The book kept at `path` (read by [`load`](Self::load)).
    pub fn at(path: Option<PathBuf>) -> Self {
        Usage {
            path,
            ..Usage::default()
        }
    }

    /// Reads the file into memory. Blocking: call it off the UI thread.
    pub fn load(&self) {
        let Some(path) = &self.path else {
            return;
        };
        let _writing = self.writing.lock().unwrap_or_else(PoisonError::into_inner);
        *self.lock() = UsageBook::load(path);
    }

    /// A copy of the book as it is now (for a listing).
    pub fn book(&self) -> UsageBook {
        self.lock().clone()
    }

    /// Pins `session_id`, or unpins it; returns whether it is pinned now.
    pub fn toggle_pin(&self, session_id: &str, now_ms: u64) -> bool {
        let (pinned, ticket) = self.in_memory(|book| book.toggle_pin(session_id, now_ms));
        let id = session_id.to_owned();
        self.write_back(ticket, move |book| {
            if book.is_pinned(&id) != pinned {
                book.toggle_pin(&id, now_ms);
            }
        });
        pinned
    }

    /// Notes one use of each of `ids`.
    pub fn record(&self, ids: &[String], kind: UseKind, now_ms: u64) {
        if ids.is_empty() {
            return;
        }
        let change = {
            let ids = ids.to_vec();
            move |book: &mut UsageBook| {
                for id in &ids {
                    book.record(id, kind, now_ms);
                }
            }
        };
        let ((), ticket) = self.in_memory(|book| change(book));
        self.write_back(ticket, change);
    }

    /// Applies `change` to the book in memory; returns what it answered and the ticket of
    /// the write-back that follows (taken under the same lock, see [`WriteOrder`]).
    fn in_memory<R>(&self, change: impl FnOnce(&mut UsageBook) -> R) -> (R, u64) {
        let mut book = self.lock();
        let answer = change(&mut book);
        (answer, self.order.next.fetch_add(1, Ordering::AcqRel))
    }

    /// Applies `change` to the file's book and writes it, off the UI thread (inline
    /// without a runtime), in `ticket`'s turn; memory takes the result when no change was
    /// made since. A failure is only logged: the book is advisory.
    fn write_back(&self, ticket: u64, change: impl FnOnce(&mut UsageBook) + Send + 'static) {
        let Some(path) = self.path.clone() else {
            return;
        };
        let (book, writing) = (Arc::clone(&self.book), Arc::clone(&self.writing));
        let order = Arc::clone(&self.order);
        let write = move || {
            let mut done = order.done.lock().unwrap_or_else(PoisonError::into_inner);
            while *done != ticket {
                done = order
                    .turn
                    .wait(done)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            {
                let _writing = writing.lock().unwrap_or_else(PoisonError::into_inner);
                let mut on_disk = UsageBook::load(&path);
                change(&mut on_disk);
                if let Err(e) = on_disk.save(&path) {
                    tracing::warn!("cannot write the usage book {}: {e}", path.display());
                } else {
                    // Memory already holds every change asked for since this one: only the
                    // newest write-back brings in what other processes noted.
                    let mut memory = book.lock().unwrap_or_else(PoisonError::into_inner);
                    if order.next.load(Ordering::Acquire) == ticket + 1 {
                        *memory = on_disk;
                    }
                }
            }
            *done += 1;
            order.turn.notify_all();
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn_blocking(write)),
            Err(_) => write(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, UsageBook> {
        self.book.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_show_at_once_and_are_written_over_what_another_process_noted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data").join("usage.json");
        // Another process (`send`) noted a use before this one started.
        let mut other = UsageBook::default();
        other.record("s-sent", UseKind::Referenced, 5);
        other.save(&path).unwrap();
        let usage = Usage::at(Some(path.clone()));
        usage.load();
        assert!(usage.book().score("s-sent", 5) > 0);
        // … and another one while it runs.
        let mut other = UsageBook::load(&path);
        other.record("s-later", UseKind::Referenced, 6);
        other.save(&path).unwrap();
        assert!(usage.toggle_pin("s-pin", 7));
        assert!(usage.book().is_pinned("s-pin"), "in memory at once");
        usage.record(&["s-used".to_owned()], UseKind::Resumed, 8);
        let on_disk = UsageBook::load(&path);
        assert!(on_disk.is_pinned("s-pin"));
        assert!(on_disk.score("s-used", 8) > 0);
        assert!(
            on_disk.score("s-later", 8) > 0,
            "kept what the other process wrote"
        );
        assert!(
            usage.book().score("s-later", 8) > 0,
            "memory took the file's book"
        );
        assert!(!usage.toggle_pin("s-pin", 9));
        assert!(!UsageBook::load(&path).is_pinned("s-pin"));
        // Without a data dir: this run only.
        let memory = Usage::at(None);
        memory.load();
        assert!(memory.toggle_pin("x", 1));
        assert!(memory.book().is_pinned("x"));
    }

    /// A write-back finishing late never undoes a change made in memory after it was asked
    /// for (a listing taken meanwhile would order by a stale pin; the app test
    /// `alt_dot_pins_and_uses_are_noted` failed about one run in six that way).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn memory_never_goes_back_to_an_older_write_back() {
        let dir = tempfile::tempdir().unwrap();
        let usage = Usage::at(Some(dir.path().join("usage.json")));
        let mut pinned = false;
        for round in 0..200u64 {
            usage.record(&["s-used".to_owned()], UseKind::Referenced, round);
            pinned = usage.toggle_pin("s-pin", round);
            for _ in 0..20 {
                assert_eq!(usage.book().is_pinned("s-pin"), pinned, "round {round}");
                tokio::task::yield_now().await;
            }
        }
        // Once every write-back is done, memory and file agree, uses included.
        for _ in 0..2000 {
            if UsageBook::load(&dir.path().join("usage.json")).is_pinned("s-pin") == pinned
                && usage.book().score("s-used", 199) > 0
            {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        assert_eq!(
            UsageBook::load(&dir.path().join("usage.json")).is_pinned("s-pin"),
            pinned
        );
    }
}
