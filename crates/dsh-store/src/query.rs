//! The read-side contract of the store (docs/session-store.md: session query), as the reference service consumes it.
//!
//! Methods are blocking; async callers run them on a blocking thread and race them against
//! a cancel token, so a storage backend that hangs can never hold a caller hostage.

use std::sync::Arc;
use std::time::Duration;

use super::activity::SessionSummary;
use super::event::SessionHeader;
pub use super::query_error::QueryError;
pub use super::stamp::Stamp;
pub use super::surface::Surface;
use super::surface_scan::{SurfaceScan, SurfaceVisitor};

/// A title lookup by session id (see [`SessionQuery::with_recent_titles`]).
pub type TitleLookup<'a> = dyn FnMut(&str) -> Result<Option<Arc<str>>, QueryError> + 'a;

/// A summary lookup by session id (see [`SessionQuery::with_recent_summaries`]).
pub type SummaryLookup<'a> = dyn FnMut(&str) -> Result<SessionSummary, QueryError> + 'a;

/// Read access to a session store (docs/session-store.md: session query).
pub trait SessionQuery: Send + Sync + 'static {
    /// Every session's header, newest first by `createdAt`, ties by id ascending (bytes).
    fn list_sessions(&self) -> Result<Arc<Vec<SessionHeader>>, QueryError>;
    /// Like [`list_sessions`](Self::list_sessions), but while another caller is checking
    /// every log for the first time, the listing known before that check (a store's
    /// persisted index, its directories listed again) instead of waiting for it: it may
    /// hold a header rewritten since or a session whose log is gone (reading its title
    /// then says not found). For a first answer on screen; everything else uses
    /// `list_sessions`. The default is `list_sessions`.
    fn list_sessions_unchecked(&self) -> Result<Arc<Vec<SessionHeader>>, QueryError> {
        self.list_sessions()
    }
    /// The latest `session/title`, or `None`. Missing session → [`QueryError::NotFound`].
    fn read_title(&self, id: &str) -> Result<Option<String>, QueryError>;
    /// Like [`read_title`](Self::read_title), but may answer from a cache revalidated less
    /// than `max_age` ago: for interactive listings that ask for every title on each
    /// keystroke, where a title a moment old is fine. The default always reads afresh.
    fn read_title_recent(
        &self,
        id: &str,
        max_age: Duration,
    ) -> Result<Option<Arc<str>>, QueryError> {
        let _ = max_age;
        Ok(self.read_title(id)?.map(Arc::from))
    }
    /// Call `f` with a lookup answering like [`read_title_recent`](Self::read_title_recent)
    /// for many ids in a row (a store can then lock and read the clock once per listing).
    fn with_recent_titles(&self, max_age: Duration, f: &mut dyn FnMut(&mut TitleLookup<'_>)) {
        f(&mut |id: &str| self.read_title_recent(id, max_age));
    }
    /// What a listing shows of a session besides its header: its latest title as far as
    /// its log could be read, its activity (last event, message count) when the source can
    /// tell, and the damage that stopped the read. A damaged log is `Ok` here, with
    /// `damage` and the title it had before the damage, where `read_title` is `Err`.
    /// Missing session → [`QueryError::NotFound`]. The default asks `read_title` and knows
    /// no activity.
    fn read_summary(&self, id: &str) -> Result<SessionSummary, QueryError> {
        match self.read_title(id) {
            Ok(title) => Ok(SessionSummary {
                title: title.map(Arc::from),
                ..SessionSummary::default()
            }),
            Err(e @ QueryError::Corrupt { .. }) => Ok(SessionSummary {
                damage: Some(e.to_string().into()),
                ..SessionSummary::default()
            }),
            Err(e) => Err(e),
        }
    }
    /// Like [`read_summary`](Self::read_summary), but may answer from a cache revalidated
    /// less than `max_age` ago (as [`read_title_recent`](Self::read_title_recent)). The
    /// default always reads afresh.
    fn read_summary_recent(
        &self,
        id: &str,
        max_age: Duration,
    ) -> Result<SessionSummary, QueryError> {
        let _ = max_age;
        self.read_summary(id)
    }
    /// Call `f` with a lookup answering like
    /// [`read_summary_recent`](Self::read_summary_recent) for many ids in a row (as
    /// [`with_recent_titles`](Self::with_recent_titles)): for interactive listings ordered
    /// by activity.
    fn with_recent_summaries(&self, max_age: Duration, f: &mut dyn FnMut(&mut SummaryLookup<'_>)) {
        f(&mut |id: &str| self.read_summary_recent(id, max_age));
    }
    /// Identity and length of a session's log, which change whenever the log does: the key
    /// for caches of data derived from it. `None` when the store cannot tell (then callers
    /// cache nothing). Missing session → [`QueryError::NotFound`].
    fn log_stamp(&self, id: &str) -> Result<Option<Stamp>, QueryError> {
        let _ = id;
        Ok(None)
    }
    /// The folded surface. Missing session → [`QueryError::NotFound`].
    fn read_surface(&self, id: &str) -> Result<Surface, QueryError>;
    /// The folded surface as a stream: each surface event is shown to `visitor` as it is
    /// folded and then let go; the result holds the final order and re-reads chosen events.
    /// Same errors as [`read_surface`](Self::read_surface). The default reads the whole
    /// surface first; a store over large logs overrides it to bound memory.
    fn scan_surface(
        &self,
        id: &str,
        visitor: &mut dyn SurfaceVisitor,
    ) -> Result<SurfaceScan, QueryError> {
        Ok(SurfaceScan::from_surface(self.read_surface(id)?, visitor))
    }
}
