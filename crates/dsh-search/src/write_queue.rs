//! A byte budget for documents handed to the tantivy writer but not yet indexed. The writer
//! queues up to 10 000 documents internally and indexes slower than logs are read, so
//! without it a first build would hold most of the store's text in that queue.

use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use tantivy::TantivyDocument;
use tantivy::schema::document::Document;

/// How long a wait for room may see no document indexed before it gives up waiting (the
/// writer's threads stopped: adding the document then reports their error).
const STALL: Duration = Duration::from_secs(10);

#[derive(Debug, Default)]
struct Shared {
    in_flight: Mutex<usize>,
    freed: Condvar,
}

/// Bytes of documents in the writer's queue, at most `limit` (one document larger than the
/// limit still goes through, alone).
#[derive(Debug, Clone)]
pub struct QueueBudget {
    shared: Arc<Shared>,
    limit: usize,
}

impl QueueBudget {
    pub fn new(limit: usize) -> Self {
        QueueBudget {
            shared: Arc::default(),
            limit,
        }
    }

    /// Wait until `bytes` more fit (or nothing is queued), then count them until the
    /// returned document is dropped by the writer. `stop` is checked while waiting.
    pub fn admit(&self, doc: TantivyDocument, bytes: usize, stop: &dyn Fn() -> bool) -> Queued {
        let mut used = self
            .shared
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        while *used > 0 && used.saturating_add(bytes) > self.limit && !stop() {
            let (next, waited) = self
                .shared
                .freed
                .wait_timeout(used, STALL)
                .unwrap_or_else(PoisonError::into_inner);
            used = next;
            if waited.timed_out() {
                break;
            }
        }
        *used = used.saturating_add(bytes);
        Queued {
            doc,
            _ticket: Ticket {
                shared: Arc::clone(&self.shared),
                bytes,
            },
        }
    }

    /// Bytes counted right now.
    #[cfg(test)]
    pub fn in_flight(&self) -> usize {
        *self
            .shared
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// Gives its bytes back when the document is dropped (indexed or discarded).
#[derive(Debug)]
struct Ticket {
    shared: Arc<Shared>,
    bytes: usize,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut used = self
            .shared
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        *used = used.saturating_sub(self.bytes);
        self.shared.freed.notify_all();
    }
}

/// A document counted against a [`QueueBudget`] while the writer holds it.
#[derive(Debug)]
pub struct Queued {
    doc: TantivyDocument,
    _ticket: Ticket,
}

impl Document for Queued {
    type Value<'a> = <TantivyDocument as Document>::Value<'a>;
    type FieldsValuesIter<'a> = <TantivyDocument as Document>::FieldsValuesIter<'a>;

    fn iter_fields_and_values(&self) -> Self::FieldsValuesIter<'_> {
        self.doc.iter_fields_and_values()
    }
}

/// Roughly what a document costs in memory while queued: its text and bytes values.
pub fn doc_bytes(doc: &TantivyDocument) -> usize {
    use tantivy::schema::Value as _;
    let mut bytes = 64;
    for (_, value) in doc.field_values() {
        bytes += 16 + value.as_str().map_or(0, str::len) + value.as_bytes().map_or(0, <[u8]>::len);
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_is_given_back_when_the_document_is_dropped() {
        let budget = QueueBudget::new(100);
        let a = budget.admit(TantivyDocument::new(), 60, &|| false);
        assert_eq!(budget.in_flight(), 60);
        let waiter = {
            let budget = budget.clone();
            std::thread::spawn(move || budget.admit(TantivyDocument::new(), 60, &|| false))
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(!waiter.is_finished(), "the second document waits for room");
        assert_eq!(budget.in_flight(), 60);
        drop(a);
        let b = waiter.join().unwrap();
        assert_eq!(budget.in_flight(), 60);
        drop(b);
        assert_eq!(budget.in_flight(), 0);
    }

    #[test]
    fn an_oversized_document_goes_alone_and_stop_ends_a_wait() {
        let budget = QueueBudget::new(10);
        let big = budget.admit(TantivyDocument::new(), 1000, &|| false);
        assert_eq!(budget.in_flight(), 1000);
        // Something is queued and this one does not fit: only `stop` lets it through.
        let stopped = budget.admit(TantivyDocument::new(), 5, &|| true);
        assert_eq!(budget.in_flight(), 1005);
        drop((big, stopped));
        assert_eq!(budget.in_flight(), 0);
    }
}
