//! The memo behind [`SessionQuery::read_title_recent`](crate::SessionQuery::read_title_recent)
//! and [`SessionQuery::with_recent_summaries`](crate::SessionQuery::with_recent_summaries):
//! each session's title (or summary) with when it was last revalidated, so an interactive
//! listing that asks for every one on each keystroke reads a log at most once per `max_age`.
//! One type for every source (the dsh store, the foreign sources).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::activity::SessionSummary;
use super::query::{QueryError, SummaryLookup, TitleLookup};

/// A lookup of values by session id, handed to a listing.
pub type Lookup<'a, V> = dyn FnMut(&str) -> Result<V, QueryError> + 'a;

/// How a memo reads a value it does not hold (fresh enough).
pub type Read<'a, V> = dyn Fn(&str) -> Result<V, QueryError> + 'a;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Values by session id, each with the instant it was read.
#[derive(Debug)]
pub struct RecentMemo<V> {
    memo: Mutex<HashMap<String, (V, Instant)>>,
}

impl<V> Default for RecentMemo<V> {
    fn default() -> Self {
        RecentMemo {
            memo: Mutex::new(HashMap::new()),
        }
    }
}

/// The memo's answer for `id` if it was revalidated less than `max_age` before `now`, else
/// `read`'s answer, remembered as of the moment the read started.
fn answer<V: Clone>(
    memo: &mut HashMap<String, (V, Instant)>,
    id: &str,
    now: Instant,
    max_age: Duration,
    read: impl FnOnce(&str) -> Result<V, QueryError>,
) -> Result<V, QueryError> {
    if let Some((value, checked)) = memo.get(id)
        && now.saturating_duration_since(*checked) < max_age
    {
        return Ok(value.clone());
    }
    let checked = Instant::now();
    let value = read(id)?;
    memo.insert(id.to_owned(), (value.clone(), checked));
    Ok(value)
}

impl<V: Clone> RecentMemo<V> {
    /// An empty memo.
    pub fn new() -> Self {
        Self::default()
    }

    /// The value of `id`: remembered if revalidated less than `max_age` ago, else `read`'s,
    /// remembered. An error is passed on and not remembered. `read` runs without the memo
    /// locked.
    pub fn get(
        &self,
        id: &str,
        max_age: Duration,
        read: impl FnOnce(&str) -> Result<V, QueryError>,
    ) -> Result<V, QueryError> {
        if let Some((value, checked)) = lock(&self.memo).get(id)
            && checked.elapsed() < max_age
        {
            return Ok(value.clone());
        }
        let checked = Instant::now();
        let value = read(id)?;
        lock(&self.memo).insert(id.to_owned(), (value.clone(), checked));
        Ok(value)
    }

    /// Call `f` with a lookup answering like [`get`](Self::get) for many ids in a row: the
    /// memo is locked and the clock read once for the whole listing, so `read` must not use
    /// this memo itself.
    pub fn with_values(
        &self,
        max_age: Duration,
        read: &Read<'_, V>,
        f: &mut dyn FnMut(&mut Lookup<'_, V>),
    ) {
        let now = Instant::now();
        let mut memo = lock(&self.memo);
        f(&mut |id: &str| answer(&mut memo, id, now, max_age, read));
    }
}

/// Titles by session id, each with the instant it was read.
#[derive(Debug, Default)]
pub struct RecentTitles {
    memo: RecentMemo<Option<Arc<str>>>,
}

impl RecentTitles {
    /// An empty memo.
    pub fn new() -> Self {
        Self::default()
    }

    /// The title of `id`: remembered if revalidated less than `max_age` ago, else `read`
    /// (the source's `read_title`), remembered. An error is passed on and not remembered.
    /// `read` runs without the memo locked.
    pub fn get(
        &self,
        id: &str,
        max_age: Duration,
        read: impl FnOnce(&str) -> Result<Option<String>, QueryError>,
    ) -> Result<Option<Arc<str>>, QueryError> {
        self.memo
            .get(id, max_age, |id| Ok(read(id)?.map(Arc::from)))
    }

    /// Like [`get`](Self::get) with a read that already answers shared titles.
    pub fn get_shared(
        &self,
        id: &str,
        max_age: Duration,
        read: impl FnOnce(&str) -> Result<Option<Arc<str>>, QueryError>,
    ) -> Result<Option<Arc<str>>, QueryError> {
        self.memo.get(id, max_age, read)
    }

    /// Call `f` with a lookup answering like [`get`](Self::get) for many ids in a row: the
    /// memo is locked and the clock read once for the whole listing, so `read` must not use
    /// this memo itself.
    pub fn with_lookup(
        &self,
        max_age: Duration,
        read: &dyn Fn(&str) -> Result<Option<String>, QueryError>,
        f: &mut dyn FnMut(&mut TitleLookup<'_>),
    ) {
        let shared = |id: &str| Ok(read(id)?.map(Arc::from));
        self.memo
            .with_values(max_age, &shared, &mut |lookup| f(lookup));
    }

    /// [`with_lookup`](Self::with_lookup) with a read that already answers shared titles.
    pub fn with_shared_lookup(
        &self,
        max_age: Duration,
        read: &Read<'_, Option<Arc<str>>>,
        f: &mut dyn FnMut(&mut TitleLookup<'_>),
    ) {
        self.memo
            .with_values(max_age, read, &mut |lookup| f(lookup));
    }
}

/// Summaries by session id, each with the instant it was read (for
/// [`SessionQuery::with_recent_summaries`](crate::SessionQuery::with_recent_summaries)).
#[derive(Debug, Default)]
pub struct RecentSummaries {
    memo: RecentMemo<SessionSummary>,
}

impl RecentSummaries {
    /// An empty memo.
    pub fn new() -> Self {
        Self::default()
    }

    /// The summary of `id`: remembered if revalidated less than `max_age` ago, else
    /// `read`'s, remembered (see [`RecentMemo::get`]).
    pub fn get(
        &self,
        id: &str,
        max_age: Duration,
        read: impl FnOnce(&str) -> Result<SessionSummary, QueryError>,
    ) -> Result<SessionSummary, QueryError> {
        self.memo.get(id, max_age, read)
    }

    /// Call `f` with a lookup answering like [`get`](Self::get) for many ids in a row (see
    /// [`RecentMemo::with_values`]).
    pub fn with_lookup(
        &self,
        max_age: Duration,
        read: &Read<'_, SessionSummary>,
        f: &mut dyn FnMut(&mut SummaryLookup<'_>),
    ) {
        self.memo
            .with_values(max_age, read, &mut |lookup| f(lookup));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn a_title_is_read_again_only_after_max_age() {
        let memo = RecentTitles::new();
        let reads = Cell::new(0);
        let read = |id: &str| {
            reads.set(reads.get() + 1);
            Ok(Some(format!("title of {id}")))
        };
        let hour = Duration::from_secs(3600);
        assert_eq!(
            memo.get("a", hour, read).unwrap().as_deref(),
            Some("title of a")
        );
        assert_eq!(
            memo.get("a", hour, read).unwrap().as_deref(),
            Some("title of a")
        );
        assert_eq!(reads.get(), 1);
        memo.get("a", Duration::ZERO, read).unwrap();
        assert_eq!(reads.get(), 2);
        memo.with_lookup(hour, &read, &mut |lookup| {
            assert_eq!(lookup("a").unwrap().as_deref(), Some("title of a"));
            assert_eq!(lookup("b").unwrap().as_deref(), Some("title of b"));
            assert_eq!(lookup("b").unwrap().as_deref(), Some("title of b"));
        });
        assert_eq!(reads.get(), 3, "only b was read");
        memo.with_lookup(Duration::ZERO, &read, &mut |lookup| {
            lookup("a").unwrap();
        });
        assert_eq!(reads.get(), 4);
    }

    #[test]
    fn errors_are_passed_on_and_not_remembered() {
        let memo = RecentTitles::new();
        let hour = Duration::from_secs(3600);
        let missing = |id: &str| Err(QueryError::NotFound { id: id.to_owned() });
        assert!(matches!(
            memo.get("gone", hour, missing),
            Err(QueryError::NotFound { .. })
        ));
        let found = memo.get("gone", hour, |_| Ok(None)).unwrap();
        assert_eq!(found, None, "the error was not remembered");
        let again = memo.get("gone", hour, missing).unwrap();
        assert_eq!(again, None, "a title-less session is remembered");
    }
}
