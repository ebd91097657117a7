//! Pins and frecency as the app keeps them (docs/references.md: frecency and pins): the
//! usage book (`usage.json` in the data dir, never in a store) held in memory for the
//! pickers' order, changed by Alt+. (pin), by sending a message that references sessions and
//! by resuming one; each change is applied in memory at once and written back off the UI
//! thread — the file read again first, so what `dsh-refs send` noted meanwhile stays.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use dsh_reference::frecency::{UsageBook, UseKind};

/// The app's usage book. Cheap to clone; clones share it.
#[derive(Debug, Clone, Default)]
pub struct Usage {
    /// Where it is kept; `None`: this run only (no data dir).
    path: Option<PathBuf>,
    book: Arc<Mutex<UsageBook>>,
    /// Held while the file is read, changed and written (one writer at a time).
    writing: Arc<Mutex<()>>,
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
        let pinned = self.lock().toggle_pin(session_id, now_ms);
        let id = session_id.to_owned();
        self.write_back(move |book| {
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
        change(&mut self.lock());
        self.write_back(change);
    }

    /// Applies `change` to the file's book and writes it, off the UI thread (inline
    /// without a runtime); memory takes the result. A failure is only logged: the book is
    /// advisory.
    fn write_back(&self, change: impl FnOnce(&mut UsageBook) + Send + 'static) {
        let Some(path) = self.path.clone() else {
            return;
        };
        let (book, writing) = (Arc::clone(&self.book), Arc::clone(&self.writing));
        let write = move || {
            let _writing = writing.lock().unwrap_or_else(PoisonError::into_inner);
            let mut on_disk = UsageBook::load(&path);
            change(&mut on_disk);
            if let Err(e) = on_disk.save(&path) {
                tracing::warn!("cannot write the usage book {}: {e}", path.display());
                return;
            }
            *book.lock().unwrap_or_else(PoisonError::into_inner) = on_disk;
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
}
