//! Staleness (docs/references.md: staleness): how many conversation messages a referenced
//! session has gained since a snapshot captured it through `capturedThroughSeq`.
//!
//! The answer is remembered per session and captured seq together with the log's stamp, so
//! asking again while the log is unchanged costs one `stat`; only a grown log is scanned
//! again (a streaming scan that measures messages without decoding their text).

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, PoisonError};

use super::error::ReferenceError;
use super::projected_scan::{ProjectedScan, SeenProjected};
use dsh_store::SessionQuery;
use dsh_store::listing::Stamp;

/// Answers remembered at once; all are forgotten when there are more.
const CACHE_ENTRIES: usize = 512;

/// Collects the projected messages newer than a seq that are still on the surface.
struct NewerMessages {
    since: Option<u64>,
    seen: HashSet<u64>,
}

impl SeenProjected for NewerMessages {
    fn saw(&mut self, seq: u64, projects: bool, removed: &[u64]) {
        for r in removed {
            self.seen.remove(r);
        }
        if projects && self.since.is_none_or(|s| seq > s) {
            self.seen.insert(seq);
        }
    }
}

/// How many conversation messages (as a snapshot would project them) session `id` holds
/// with a seq above `since` (all of them for `None`). Blocking.
pub fn newer_messages(
    store: &dyn SessionQuery,
    id: &str,
    since: Option<u64>,
) -> Result<usize, ReferenceError> {
    let mut visitor = NewerMessages {
        since,
        seen: HashSet::new(),
    };
    let scan = store
        .scan_surface(id, &mut ProjectedScan(&mut visitor))
        .map_err(|e| ReferenceError::read_failed(id, e))?;
    let on = scan.on_surface();
    Ok(visitor.seen.iter().filter(|&&s| on(s)).count())
}

/// Answers by (session id, captured seq): the stamp they were counted at and the count.
type Entries = HashMap<(String, Option<u64>), (Stamp, usize)>;

/// Remembered answers of [`newer_messages`], each valid for the log stamp it was counted at.
#[derive(Debug, Default)]
pub struct StalenessCache {
    entries: Mutex<Entries>,
}

impl StalenessCache {
    /// [`newer_messages`], from the cache while the log's stamp is unchanged. A store that
    /// cannot stamp logs is scanned each time.
    pub fn newer_messages(
        &self,
        store: &dyn SessionQuery,
        id: &str,
        since: Option<u64>,
    ) -> Result<usize, ReferenceError> {
        let stamp = store
            .log_stamp(id)
            .map_err(|e| ReferenceError::read_failed(id, e))?;
        let key = (id.to_owned(), since);
        if let Some(stamp) = &stamp
            && let Some((cached, n)) = self.lock().get(&key)
            && cached == stamp
        {
            return Ok(*n);
        }
        let n = newer_messages(store, id, since)?;
        if let Some(stamp) = stamp {
            let mut entries = self.lock();
            if entries.len() >= CACHE_ENTRIES {
                entries.clear();
            }
            entries.insert(key, (stamp, n));
        }
        Ok(n)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
