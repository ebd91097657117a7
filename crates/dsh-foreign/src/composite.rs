//! Every session source behind one [`SessionQuery`]: the dsh store plus the read-only foreign
//! sources. Listing merges them newest first in the store's order; reads are routed by id.
//!
//! Foreign ids are namespaced (`claude-code:<sessionId>`, `codex:<id>`, `gemini:<id>`,
//! `opencode:<id>`). If the dsh store holds
//! a session with exactly such an id, the dsh session wins and the foreign one is hidden.
//! A foreign source that cannot be listed is left out with a warning; the dsh store's errors
//! are the listing's errors.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use dsh_store::listing::{Stamp, newest_first};
use dsh_store::query::{SummaryLookup, TitleLookup};
use dsh_store::{
    QueryError, SessionHeader, SessionQuery, SessionSummary, Surface, SurfaceScan, SurfaceVisitor,
};

use super::origin::Origin;
use super::source::ForeignSource;

/// The dsh store and the foreign sources as one query.
pub struct SessionSources {
    dsh: Arc<dyn SessionQuery>,
    foreign: Vec<ForeignSource>,
    merged: Mutex<Merged>,
}

impl std::fmt::Debug for SessionSources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionSources")
            .field("foreign", &self.foreign)
            .finish_non_exhaustive()
    }
}

/// The last merged listing, reused while no source's listing changed.
#[derive(Default)]
struct Merged {
    inputs: Vec<Arc<Vec<SessionHeader>>>,
    list: Option<Arc<Vec<SessionHeader>>>,
    /// Listed foreign sessions and their origin (dsh sessions are absent); shared so a
    /// title listing per keystroke does not copy it.
    origins: Arc<HashMap<String, Origin>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl SessionSources {
    /// The dsh store `dsh` and the enabled foreign sources (at most one per origin is used).
    pub fn new(dsh: Arc<dyn SessionQuery>, foreign: Vec<ForeignSource>) -> Self {
        SessionSources {
            dsh,
            foreign,
            merged: Mutex::new(Merged::default()),
        }
    }

    /// The foreign sources in use.
    pub fn foreign(&self) -> &[ForeignSource] {
        &self.foreign
    }

    /// Where a session comes from: the origin of the source that listed it. An id without a
    /// foreign namespace can only be a dsh session; a namespaced one not listed yet is looked
    /// up the way a read is routed (the dsh store first, then the namespace's source). An id
    /// no source has is a dsh id (a session not written yet).
    pub fn origin(&self, id: &str) -> Origin {
        if let Some(origin) = lock(&self.merged).origins.get(id) {
            return origin.clone();
        }
        let Some(source) = Origin::split_id(id).and_then(|(o, _)| self.source_for(&o)) else {
            return Origin::Dsh;
        };
        match self.dsh.log_stamp(id) {
            Err(QueryError::NotFound { .. }) if source.log_stamp(id).is_ok() => {
                source.origin().clone()
            }
            _ => Origin::Dsh,
        }
    }

    fn source_for(&self, origin: &Origin) -> Option<&ForeignSource> {
        self.foreign.iter().find(|s| s.origin() == origin)
    }

    /// Which source answers for `id`: a listed foreign session's source; else the dsh store,
    /// falling back to the namespace's source when the store does not have it.
    fn route<T>(
        &self,
        id: &str,
        read: impl Fn(&dyn SessionQuery) -> Result<T, QueryError>,
    ) -> Result<T, QueryError> {
        let listed = lock(&self.merged).origins.get(id).cloned();
        if let Some(source) = listed.and_then(|o| self.source_for(&o)) {
            return read(source);
        }
        match read(self.dsh.as_ref()) {
            Err(QueryError::NotFound { .. }) => {
                match Origin::split_id(id).and_then(|(o, _)| self.source_for(&o)) {
                    Some(source) => read(source),
                    None => Err(QueryError::NotFound { id: id.to_owned() }),
                }
            }
            other => other,
        }
    }
}

impl SessionQuery for SessionSources {
    fn list_sessions(&self) -> Result<Arc<Vec<SessionHeader>>, QueryError> {
        let list_one = |source: &ForeignSource| match source.list_sessions() {
            Ok(list) => list,
            Err(e) => {
                tracing::warn!(origin = %source.origin(), error = %e, "foreign sessions not listed");
                Arc::new(Vec::new())
            }
        };
        let mut inputs = vec![self.dsh.list_sessions()?];
        for source in &self.foreign {
            inputs.push(list_one(source));
        }
        // A source that records only a hash of its sessions' cwd (Gemini CLI) learns the
        // working directories of every other session (and this process's), and is listed
        // again if that told it something new.
        if self.foreign.iter().any(ForeignSource::wants_dirs) {
            let here = std::env::current_dir()
                .ok()
                .and_then(|d| d.to_str().map(str::to_owned));
            for (i, source) in self.foreign.iter().enumerate() {
                if !source.wants_dirs() {
                    continue;
                }
                let others = inputs
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| *j != i + 1)
                    .flat_map(|(_, list)| list.iter())
                    .filter_map(|h| h.cwd.as_deref());
                let mut dirs = others.chain(here.as_deref());
                if source.learn_dirs(&mut dirs)
                    && let Some(slot) = inputs.get_mut(i + 1)
                {
                    *slot = list_one(source);
                }
            }
        }
        let mut merged = lock(&self.merged);
        if let Some(list) = &merged.list
            && merged.inputs.len() == inputs.len()
            && merged
                .inputs
                .iter()
                .zip(&inputs)
                .all(|(a, b)| Arc::ptr_eq(a, b))
        {
            return Ok(Arc::clone(list));
        }
        // With nothing foreign listed the store's own listing is the answer as it is (it is
        // already in this order): shared, not copied.
        if inputs.iter().skip(1).all(|l| l.is_empty())
            && let Some(dsh) = inputs.first()
        {
            let list = Arc::clone(dsh);
            *merged = Merged {
                inputs,
                list: Some(Arc::clone(&list)),
                origins: Arc::new(HashMap::new()),
            };
            return Ok(list);
        }
        let mut iter = inputs.iter();
        let dsh = iter.next().map(|l| l.as_slice()).unwrap_or_default();
        let dsh_ids: HashSet<&str> = dsh.iter().map(|h| h.id.as_str()).collect();
        let mut all: Vec<SessionHeader> = dsh.to_vec();
        let mut origins = HashMap::new();
        for (list, source) in iter.zip(&self.foreign) {
            for header in list.iter() {
                if dsh_ids.contains(header.id.as_str()) || origins.contains_key(&header.id) {
                    continue;
                }
                origins.insert(header.id.clone(), source.origin().clone());
                all.push(header.clone());
            }
        }
        all.sort_by(newest_first);
        let list = Arc::new(all);
        *merged = Merged {
            inputs,
            list: Some(Arc::clone(&list)),
            origins: Arc::new(origins),
        };
        Ok(list)
    }

    fn list_sessions_unchecked(&self) -> Result<Arc<Vec<SessionHeader>>, QueryError> {
        // Without foreign sources the store's early answer is the answer; with them, the
        // merged listing (foreign sources have no first check to wait for).
        if self.foreign.is_empty() {
            return self.dsh.list_sessions_unchecked();
        }
        self.list_sessions()
    }

    fn read_title(&self, id: &str) -> Result<Option<String>, QueryError> {
        self.route(id, |q| q.read_title(id))
    }

    fn read_title_recent(
        &self,
        id: &str,
        max_age: Duration,
    ) -> Result<Option<Arc<str>>, QueryError> {
        self.route(id, |q| q.read_title_recent(id, max_age))
    }

    fn with_recent_titles(&self, max_age: Duration, f: &mut dyn FnMut(&mut TitleLookup<'_>)) {
        let origins = Arc::clone(&lock(&self.merged).origins);
        self.dsh.with_recent_titles(max_age, &mut |dsh_lookup| {
            f(
                &mut |id: &str| match origins.get(id).and_then(|o| self.source_for(o)) {
                    Some(source) => source.read_title_recent(id, max_age),
                    None => dsh_lookup(id),
                },
            );
        });
    }

    fn read_summary(&self, id: &str) -> Result<SessionSummary, QueryError> {
        self.route(id, |q| q.read_summary(id))
    }

    fn read_summary_recent(
        &self,
        id: &str,
        max_age: Duration,
    ) -> Result<SessionSummary, QueryError> {
        self.route(id, |q| q.read_summary_recent(id, max_age))
    }

    fn with_recent_summaries(&self, max_age: Duration, f: &mut dyn FnMut(&mut SummaryLookup<'_>)) {
        let origins = Arc::clone(&lock(&self.merged).origins);
        self.dsh.with_recent_summaries(max_age, &mut |dsh_lookup| {
            f(
                &mut |id: &str| match origins.get(id).and_then(|o| self.source_for(o)) {
                    Some(source) => source.read_summary_recent(id, max_age),
                    None => dsh_lookup(id),
                },
            );
        });
    }

    fn log_stamp(&self, id: &str) -> Result<Option<Stamp>, QueryError> {
        self.route(id, |q| q.log_stamp(id))
    }

    fn read_surface(&self, id: &str) -> Result<Surface, QueryError> {
        self.route(id, |q| q.read_surface(id))
    }

    fn scan_surface(
        &self,
        id: &str,
        visitor: &mut dyn SurfaceVisitor,
    ) -> Result<SurfaceScan, QueryError> {
        // A visitor can only be lent once, so the route is decided before reading.
        let listed = lock(&self.merged).origins.get(id).cloned();
        if let Some(source) = listed.and_then(|o| self.source_for(&o)) {
            return source.scan_surface(id, visitor);
        }
        let namespaced = Origin::split_id(id).and_then(|(o, _)| self.source_for(&o));
        match namespaced {
            Some(source) => match self.dsh.read_title(id) {
                Err(QueryError::NotFound { .. }) => source.scan_surface(id, visitor),
                _ => self.dsh.scan_surface(id, visitor),
            },
            None => self.dsh.scan_surface(id, visitor),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store answering one fixed listing.
    struct Fixed(Arc<Vec<SessionHeader>>);

    impl SessionQuery for Fixed {
        fn list_sessions(&self) -> Result<Arc<Vec<SessionHeader>>, QueryError> {
            Ok(Arc::clone(&self.0))
        }
        fn read_title(&self, id: &str) -> Result<Option<String>, QueryError> {
            Err(QueryError::NotFound { id: id.to_owned() })
        }
        fn read_surface(&self, id: &str) -> Result<Surface, QueryError> {
            Err(QueryError::NotFound { id: id.to_owned() })
        }
    }

    #[test]
    fn without_foreign_sessions_the_store_listing_is_shared_not_copied() {
        let dsh = Arc::new(vec![
            SessionHeader::new("b", 2, None),
            SessionHeader::new("a", 1, Some("/p".into())),
        ]);
        let sources = SessionSources::new(Arc::new(Fixed(Arc::clone(&dsh))), Vec::new());
        let list = sources.list_sessions().unwrap();
        assert!(Arc::ptr_eq(&list, &dsh));
        assert!(Arc::ptr_eq(&sources.list_sessions().unwrap(), &dsh));
        assert_eq!(sources.origin("a"), Origin::Dsh);
    }
}
