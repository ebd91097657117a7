//! A listing's sessions with their titles, folded once so that every keystroke's filter is a
//! single substring search over one buffer (docs/performance.md: candidate listing).
//!
//! The view answers exactly like the lazy selection in [`candidates`](super::candidates): a
//! session matches when its id, cwd or latest title contains the query case-insensitively
//! (`to_lowercase` of each field), ranked by [`Scope`] in listing order — or, within each
//! group, by last activity ([`ListingOrder::LastActivity`]) when the view was built with the
//! sessions' summaries. A picker's query ([`QueryMatch::Words`]) matches word by word, the
//! cwd only by its trailing segments, and is ranked by [`MatchTier`] first.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use memchr::memmem;

use super::candidates::{Candidate, Scope, Selection};
use super::listing_order::{ListingOrder, SessionDetails, TopByActivity};
use super::query_words::{
    ListingQuery, MatchTier, QueryMatch, names_cwd_tail, query_words, tier_of, tier_query,
    trim_slashes,
};
use super::untitled_label::untitled_label;
use dsh_store::{QueryError, SessionHeader, SessionQuery, SessionSummary};

/// A session's title as the view saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum TitleState {
    Titled(Arc<str>),
    Untitled,
    /// The log vanished after the listing: not offered.
    Missing,
    /// The log cannot be read: offered under its id, never matched by a title.
    Unreadable,
}

/// Separates the fields of one session in the folded text; a query holding it is matched
/// field by field instead.
const SEPARATOR: u8 = 0;

/// Every session of one listing with its title, and their folded text.
#[derive(Debug)]
pub struct CandidateView {
    sessions: Arc<Vec<SessionHeader>>,
    titles: Vec<TitleState>,
    /// `id \0 title \0 cwd \0` of every session, lowercased, in listing order.
    folded: Vec<u8>,
    /// Where each session's text starts in `folded`, and its end as the last entry.
    starts: Vec<usize>,
    /// Per session, where its title and its cwd start in `folded`.
    field_starts: Vec<(usize, usize)>,
    /// Per session, its activity (empty for a view built from titles alone).
    details: Vec<SessionDetails>,
    /// By position, for each untitled session with a first prompt (a view built from
    /// summaries): the label the pickers list it by ([`untitled_label`]) and its folded
    /// form, which their word matching searches too.
    labels: BTreeMap<usize, (String, Vec<u8>)>,
    /// When the titles were read.
    built: Instant,
    /// How long reading them took.
    cost: Duration,
}

/// Append `text` lowercased (exactly `str::to_lowercase`, ASCII without a copy).
fn push_folded(out: &mut Vec<u8>, text: &str) {
    if text.is_ascii() {
        out.extend(text.bytes().map(|b| b.to_ascii_lowercase()));
    } else {
        out.extend_from_slice(text.to_lowercase().as_bytes());
    }
}

impl CandidateView {
    /// Read every title of `sessions` through `read_title` and fold the texts; `None` when
    /// `cancelled` fires first.
    pub fn build(
        sessions: Arc<Vec<SessionHeader>>,
        mut read_title: impl FnMut(&str) -> Result<Option<Arc<str>>, QueryError>,
        cancelled: impl Fn() -> bool,
    ) -> Option<Self> {
        Self::build_from(
            sessions,
            false,
            |id| match read_title(id) {
                Ok(Some(t)) => (TitleState::Titled(t), None, None),
                Ok(None) => (TitleState::Untitled, None, None),
                Err(QueryError::NotFound { .. }) => (TitleState::Missing, None, None),
                Err(_) => (TitleState::Unreadable, None, None),
            },
            cancelled,
        )
    }

    /// Read every session's summary (title and activity) through `read_summary` and fold
    /// the texts, so the view can also order by last activity and tell each row's details;
    /// `None` when `cancelled` fires first. A damaged log is matched by the title it had
    /// before the damage (offered under its id when it had none). An untitled session with
    /// a first prompt gets its picker label, secrets redacted when `redact_labels`.
    pub fn build_summarized(
        sessions: Arc<Vec<SessionHeader>>,
        mut read_summary: impl FnMut(&str) -> Result<SessionSummary, QueryError>,
        redact_labels: bool,
        cancelled: impl Fn() -> bool,
    ) -> Option<Self> {
        Self::build_from(
            sessions,
            redact_labels,
            |id| match read_summary(id) {
                Ok(summary) => {
                    let details = SessionDetails::of(&summary);
                    let title = match summary.title {
                        Some(t) => TitleState::Titled(t),
                        None if summary.damage.is_some() => TitleState::Unreadable,
                        None => TitleState::Untitled,
                    };
                    (title, Some(details), summary.first_prompt)
                }
                Err(QueryError::NotFound { .. }) => {
                    (TitleState::Missing, Some(SessionDetails::default()), None)
                }
                Err(_) => (
                    TitleState::Unreadable,
                    Some(SessionDetails::default()),
                    None,
                ),
            },
            cancelled,
        )
    }

    fn build_from(
        sessions: Arc<Vec<SessionHeader>>,
        redact_labels: bool,
        mut read: impl FnMut(&str) -> (TitleState, Option<SessionDetails>, Option<Arc<str>>),
        cancelled: impl Fn() -> bool,
    ) -> Option<Self> {
        let built = Instant::now();
        let mut titles = Vec::with_capacity(sessions.len());
        let mut details = Vec::new();
        let mut labels = BTreeMap::new();
        let mut folded = Vec::with_capacity(sessions.len() * 48);
        let mut starts = Vec::with_capacity(sessions.len() + 1);
        let mut field_starts = Vec::with_capacity(sessions.len());
        for (n, header) in sessions.iter().enumerate() {
            if n.is_multiple_of(1024) && cancelled() {
                return None;
            }
            let (title, detail, prompt) = read(&header.id);
            if let (TitleState::Untitled, Some(prompt)) = (&title, prompt)
                && let Some(label) = untitled_label(&prompt, redact_labels)
            {
                let mut label_folded = Vec::with_capacity(label.len());
                push_folded(&mut label_folded, &label);
                labels.insert(n, (label, label_folded));
            }
            if let Some(detail) = detail {
                if details.is_empty() {
                    details.reserve_exact(sessions.len());
                }
                details.push(detail);
            }
            starts.push(folded.len());
            push_folded(&mut folded, &header.id);
            folded.push(SEPARATOR);
            let title_start = folded.len();
            if let TitleState::Titled(t) = &title {
                push_folded(&mut folded, t);
            }
            folded.push(SEPARATOR);
            let cwd_start = folded.len();
            if let Some(cwd) = &header.cwd {
                push_folded(&mut folded, cwd);
            }
            folded.push(SEPARATOR);
            field_starts.push((title_start, cwd_start));
            titles.push(title);
        }
        starts.push(folded.len());
        // Details come for every session or for none.
        if details.len() != sessions.len() {
            details = Vec::new();
        }
        Some(CandidateView {
            sessions,
            titles,
            folded,
            starts,
            field_starts,
            details,
            labels,
            built,
            cost: built.elapsed(),
        })
    }

    /// Whether the view was built with the sessions' summaries (it can then order by last
    /// activity and tell [`details_at`](Self::details_at)).
    pub fn has_details(&self) -> bool {
        !self.details.is_empty() || self.sessions.is_empty()
    }

    /// The activity of the session at `position`, when the view was built with summaries.
    pub fn details_at(&self, position: usize) -> Option<SessionDetails> {
        self.details.get(position).copied()
    }

    /// The listing this view was built from.
    pub fn sessions(&self) -> &Arc<Vec<SessionHeader>> {
        &self.sessions
    }

    /// When its titles were read.
    pub fn built(&self) -> Instant {
        self.built
    }

    /// The latest title of the session at `position`, as read: `Ok(None)` for an untitled
    /// one, `Err` naming why it has none to offer (missing or unreadable).
    pub fn title_at(&self, position: usize) -> Result<Option<Arc<str>>, QueryError> {
        let id = || {
            self.sessions
                .get(position)
                .map_or_else(String::new, |h| h.id.clone())
        };
        match self.titles.get(position) {
            Some(TitleState::Titled(t)) => Ok(Some(Arc::clone(t))),
            Some(TitleState::Untitled) => Ok(None),
            Some(TitleState::Unreadable) => Err(QueryError::Io {
                path: std::path::PathBuf::from(id()),
                source: std::io::Error::other("unreadable session log"),
            }),
            Some(TitleState::Missing) | None => Err(QueryError::NotFound { id: id() }),
        }
    }

    /// The lowercased id, title and cwd of the session at `position`.
    fn fields(&self, position: usize) -> [&[u8]; 3] {
        let (Some(&start), Some(&end), Some(&(title, cwd))) = (
            self.starts.get(position),
            self.starts.get(position + 1),
            self.field_starts.get(position),
        ) else {
            return [&[]; 3];
        };
        let field = |from: usize, to: usize| {
            self.folded
                .get(from..to.saturating_sub(1).max(from))
                .unwrap_or_default()
        };
        [field(start, title), field(title, cwd), field(cwd, end)]
    }

    /// Positions of the sessions matching `needle` (already lowercased) in their id, title
    /// or cwd (`cwd_tail`: only naming the cwd's trailing segments), in order, handed to
    /// `visit` until it returns `false`.
    fn for_each_match(&self, needle: &str, cwd_tail: bool, mut visit: impl FnMut(usize) -> bool) {
        let count = self.sessions.len();
        if needle.is_empty() {
            for position in 0..count {
                if !visit(position) {
                    return;
                }
            }
            return;
        }
        if needle.as_bytes().contains(&SEPARATOR) {
            // Field by field: a separator in the query must not match between fields.
            for position in 0..count {
                if self.fields_contain(position, needle, cwd_tail) && !visit(position) {
                    return;
                }
            }
            return;
        }
        let finder = memmem::Finder::new(needle.as_bytes());
        // Naming the cwd's tail, `src/` names `…/src`: what is searched for is the word
        // without its trailing slashes, and each session found is checked whole.
        let searched = if cwd_tail {
            memmem::Finder::new(trim_slashes(needle.as_bytes()))
        } else {
            finder.clone()
        };
        let mut from = 0;
        let mut position = 0;
        while let Some(found) = self.folded.get(from..).and_then(|rest| searched.find(rest)) {
            let at = from + found;
            position = self.position_of(at, position);
            let matches = !cwd_tail || self.session_contains(position, needle, &finder);
            if matches && !visit(position) {
                return;
            }
            // The next match of interest is in a later session.
            match self.starts.get(position + 1) {
                Some(&next) => from = next,
                None => return,
            }
        }
    }

    /// The session whose text holds byte `at`, searching forward from `from` (galloping,
    /// since matches come in order).
    fn position_of(&self, at: usize, from: usize) -> usize {
        let count = self.sessions.len();
        let mut low = from;
        let mut step = 1;
        // Invariant: starts[low] <= at.
        while low + step < count && self.starts.get(low + step).is_some_and(|&s| s <= at) {
            low += step;
            step *= 2;
        }
        let high = (low + step).min(count);
        let within = self
            .starts
            .get(low..high)
            .map_or(1, |window| window.partition_point(|&s| s <= at));
        low + within.saturating_sub(1)
    }

    /// Positions of the sessions matching every one of `words` (lowercased, longest
    /// first), in order, handed to `visit` until it returns `false`: the sessions holding
    /// the first word, kept when their text holds each other word too.
    fn for_each_match_of_words(&self, words: &[String], mut visit: impl FnMut(usize) -> bool) {
        let Some((first, others)) = words.split_first() else {
            self.for_each_match("", true, visit);
            return;
        };
        let finders: Vec<(&str, memmem::Finder<'_>)> = others
            .iter()
            .map(|w| (w.as_str(), memmem::Finder::new(w.as_bytes())))
            .collect();
        self.for_each_match(first, true, |position| {
            let all = finders
                .iter()
                .all(|(word, finder)| self.session_contains(position, word, finder));
            !all || visit(position)
        });
    }

    /// Like [`for_each_match_of_words`](Self::for_each_match_of_words), an untitled
    /// session's picker label counting as one of its fields: a session matches when each
    /// word is in its id, cwd, title or label. Positions come in order.
    fn for_each_match_of_labelled_words(
        &self,
        words: &[String],
        mut visit: impl FnMut(usize) -> bool,
    ) {
        if self.labels.is_empty() || words.is_empty() {
            self.for_each_match_of_words(words, visit);
            return;
        }
        let finders: Vec<(&str, memmem::Finder<'_>)> = words
            .iter()
            .map(|w| (w.as_str(), memmem::Finder::new(w.as_bytes())))
            .collect();
        // The labelled sessions that only their label makes match (the others are found
        // by the fields), in order.
        let mut by_label = self.labels.iter().filter_map(|(&position, (_, folded))| {
            let mut label_needed = false;
            for (word, finder) in &finders {
                if self.session_contains(position, word, finder) {
                    continue;
                }
                finder.find(folded)?;
                label_needed = true;
            }
            label_needed.then_some(position)
        });
        let mut next = by_label.next();
        let mut going = true;
        self.for_each_match_of_words(words, |position| {
            while let Some(earlier) = next.filter(|&p| p < position) {
                if !visit(earlier) {
                    going = false;
                    return false;
                }
                next = by_label.next();
            }
            visit(position)
        });
        while going && let Some(position) = next {
            going = visit(position);
            next = by_label.next();
        }
    }

    /// Whether the session at `position` holds the word `needle` (lowercased) in its id or
    /// title, or names its cwd's trailing segments; `finder` searches for it.
    fn session_contains(&self, position: usize, needle: &str, finder: &memmem::Finder<'_>) -> bool {
        if needle.as_bytes().contains(&SEPARATOR) {
            return self.fields_contain(position, needle, true);
        }
        // Without a separator a match cannot span two fields.
        let (Some(&start), Some(&(_, cwd))) =
            (self.starts.get(position), self.field_starts.get(position))
        else {
            return false;
        };
        self.folded
            .get(start..cwd)
            .is_some_and(|text| finder.find(text).is_some())
            || names_cwd_tail(self.fields(position)[2], needle.as_bytes())
    }

    /// Whether any of the session's fields contains `needle` (`cwd_tail`: the cwd only by
    /// naming its trailing segments), checked separately (the folded text cannot tell a
    /// separator from the same byte inside a field).
    fn fields_contain(&self, position: usize, needle: &str, cwd_tail: bool) -> bool {
        let Some(header) = self.sessions.get(position) else {
            return false;
        };
        let title = match self.titles.get(position) {
            Some(TitleState::Titled(t)) => Some(t.as_ref()),
            _ => None,
        };
        let folded = |field: &str| {
            let mut folded = Vec::with_capacity(field.len());
            push_folded(&mut folded, field);
            folded
        };
        let in_cwd = header.cwd.as_deref().is_some_and(|cwd| {
            let cwd = folded(cwd);
            if cwd_tail {
                names_cwd_tail(&cwd, needle.as_bytes())
            } else {
                memmem::find(&cwd, needle.as_bytes()).is_some()
            }
        });
        in_cwd
            || [Some(header.id.as_str()), title]
                .into_iter()
                .flatten()
                .any(|field| memmem::find(&folded(field), needle.as_bytes()).is_some())
    }

    /// Up to `limit` matches of `query` in `scope`, ranked (same cwd, no cwd, others, each
    /// in listing order); `count_all` also counts every match past the limit. Answers
    /// exactly like [`select_counted`](super::candidates::select_counted) given the same
    /// titles.
    pub fn select(
        &self,
        scope: Scope<'_>,
        query: &str,
        limit: usize,
        count_all: bool,
        cancelled: impl Fn() -> bool,
    ) -> Selection {
        self.select_ordered(
            scope,
            ListingQuery::substring(query),
            limit,
            count_all,
            ListingOrder::Created,
            cancelled,
        )
    }

    /// Like [`select`](Self::select), matching `query` as it says and ordering each group
    /// by `order`: by last activity
    /// (most recent first, equal times in listing order) needs a view built with summaries
    /// ([`build_summarized`](Self::build_summarized)); without them it keeps listing order.
    /// Every match is visited then (the most recent one may come last in the listing).
    pub fn select_ordered(
        &self,
        scope: Scope<'_>,
        query: ListingQuery<'_>,
        limit: usize,
        count_all: bool,
        order: ListingOrder,
        cancelled: impl Fn() -> bool,
    ) -> Selection {
        let (positions, total) =
            self.select_positions(scope, query, limit, count_all, order, cancelled);
        Selection {
            rows: positions
                .into_iter()
                .filter_map(|p| self.candidate_at(p))
                .collect(),
            total,
        }
    }

    /// The row of the session at `position`: labelled by its title, else its id.
    pub fn candidate_at(&self, position: usize) -> Option<Candidate> {
        let header = self.sessions.get(position)?;
        let label = match self.titles.get(position) {
            Some(TitleState::Titled(t)) => t.as_ref().to_owned(),
            _ => header.id.clone(),
        };
        Some(Candidate {
            session_id: header.id.clone(),
            label,
            cwd: header.cwd.clone(),
            created_at: header.created_at,
        })
    }

    /// The row of the session at `position` as the pickers list it: like
    /// [`candidate_at`](Self::candidate_at), but an untitled session with a first prompt is
    /// labelled by its leading words ([`untitled_label`]).
    pub fn listed_candidate_at(&self, position: usize) -> Option<Candidate> {
        let mut row = self.candidate_at(position)?;
        if let Some((label, _)) = self.labels.get(&position) {
            row.label.clone_from(label);
        }
        Some(row)
    }

    /// [`select_ordered`](Self::select_ordered) as listing positions, and the total.
    pub fn select_positions(
        &self,
        scope: Scope<'_>,
        query: ListingQuery<'_>,
        limit: usize,
        count_all: bool,
        order: ListingOrder,
        cancelled: impl Fn() -> bool,
    ) -> (Vec<usize>, usize) {
        let by_activity = order == ListingOrder::LastActivity && !self.details.is_empty();
        // A picker's query ranks by tier first: rank = tier * 3 + group.
        let tiers = match query.matching {
            QueryMatch::Words => tier_query(query.text),
            QueryMatch::Substring => String::new(),
        };
        let mut tops: [TopByActivity; RANKS] = std::array::from_fn(|_| TopByActivity::new(limit));
        let mut groups: [Vec<usize>; RANKS] = Default::default();
        let mut total = 0usize;
        let mut interrupted = false;
        let mut seen = 0usize;
        let mut on_match = |position: usize| {
            seen += 1;
            if seen.is_multiple_of(4096) && cancelled() {
                interrupted = true;
                return false;
            }
            let Some(header) = self.sessions.get(position) else {
                return true;
            };
            if scope.exclude == Some(header.id.as_str())
                || matches!(self.titles.get(position), Some(TitleState::Missing))
            {
                return true;
            }
            let tier = if tiers.is_empty() {
                MatchTier::Exact
            } else {
                let [id, title, _] = self.fields(position);
                // An untitled session's label stands for its title.
                let title = match self.labels.get(&position) {
                    Some((_, label)) if title.is_empty() => label.as_slice(),
                    _ => title,
                };
                tier_of(tiers.as_bytes(), id, title)
            };
            let g = tier as usize * 3 + scope.rank(header.cwd.as_deref());
            total += 1;
            if by_activity {
                let at = self.details.get(position).map_or(header.created_at, |d| {
                    d.last_active_ms.unwrap_or(header.created_at)
                });
                if let Some(top) = tops.get_mut(g) {
                    top.offer(at, position);
                }
                return true;
            }
            let full = groups.iter().take(g + 1).map(Vec::len).sum::<usize>() >= limit;
            if !full && let Some(bucket) = groups.get_mut(g) {
                bucket.push(position);
            }
            // Once the best group is full no later session can be shown.
            count_all || groups[0].len() < limit
        };
        match query.matching {
            QueryMatch::Substring => {
                self.for_each_match(&query.text.to_lowercase(), false, &mut on_match);
            }
            QueryMatch::Words => {
                self.for_each_match_of_labelled_words(&query_words(query.text), &mut on_match);
            }
        }
        if interrupted || cancelled() {
            return (Vec::new(), 0);
        }
        if by_activity {
            groups = tops.map(TopByActivity::into_positions);
        }
        let positions = groups.into_iter().flatten().take(limit).collect();
        (positions, total)
    }
}

/// Ranks of a selection: three tiers of what was typed ([`MatchTier`]) times three groups of
/// the scope.
const RANKS: usize = 9;

/// How old a view may be and still answer while a fresh one is built in the background;
/// an older one is rebuilt before answering.
const STALE_LIMIT: Duration = Duration::from_secs(10);

/// A view is rebuilt no sooner than this many times the time its build took.
const REBUILD_SPACING: u32 = 10;

/// The newest [`CandidateView`] of a service, shared by its clones.
#[derive(Debug)]
pub struct ViewCache {
    /// Whether the picker labels of untitled sessions have their secrets redacted
    /// (`[references] redact_secrets`).
    redact_labels: bool,
    current: Mutex<Option<Arc<CandidateView>>>,
    /// A background rebuild is running.
    refreshing: AtomicBool,
    /// Views are built with summaries (once a caller asked for them; they serve callers
    /// that need only titles too).
    summarized: AtomicBool,
}

impl Default for ViewCache {
    fn default() -> Self {
        ViewCache::new(true)
    }
}

impl ViewCache {
    /// An empty cache whose views label untitled sessions with their secrets redacted when
    /// `redact_labels`.
    pub fn new(redact_labels: bool) -> Self {
        ViewCache {
            redact_labels,
            current: Mutex::new(None),
            refreshing: AtomicBool::new(false),
            summarized: AtomicBool::new(false),
        }
    }

    fn current(&self) -> Option<Arc<CandidateView>> {
        self.current
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    fn store(&self, view: &Arc<CandidateView>) {
        *self
            .current
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Arc::clone(view));
    }

    /// A view of `sessions` (the listing `query` just gave): the cached one while its titles
    /// are younger than `max_age`; one up to [`STALE_LIMIT`] old while a fresh one is built
    /// in the background (so a keystroke never waits for every log to be checked again);
    /// else one built now. `None` when cancelled.
    pub fn view(
        self: &Arc<Self>,
        query: &Arc<dyn SessionQuery>,
        sessions: &Arc<Vec<SessionHeader>>,
        max_age: Duration,
        cancelled: impl Fn() -> bool,
    ) -> Option<Arc<CandidateView>> {
        self.view_of(query, sessions, max_age, false, cancelled)
    }

    /// [`view`](Self::view) built with the sessions' summaries (activity, message counts):
    /// from now on every view of this cache is.
    pub fn summarized_view(
        self: &Arc<Self>,
        query: &Arc<dyn SessionQuery>,
        sessions: &Arc<Vec<SessionHeader>>,
        max_age: Duration,
        cancelled: impl Fn() -> bool,
    ) -> Option<Arc<CandidateView>> {
        self.summarized.store(true, Ordering::Release);
        self.view_of(query, sessions, max_age, true, cancelled)
    }

    fn view_of(
        self: &Arc<Self>,
        query: &Arc<dyn SessionQuery>,
        sessions: &Arc<Vec<SessionHeader>>,
        max_age: Duration,
        need_details: bool,
        cancelled: impl Fn() -> bool,
    ) -> Option<Arc<CandidateView>> {
        let summarized = self.summarized.load(Ordering::Acquire);
        if let Some(view) = self.current()
            && Arc::ptr_eq(view.sessions(), sessions)
            && (view.has_details() || !need_details)
        {
            let age = view.built().elapsed();
            // Rebuilt at most once per ten times its own cost, so a large store is never
            // re-read continuously.
            if age < max_age.max(view.cost * REBUILD_SPACING) {
                return Some(view);
            }
            if age < STALE_LIMIT && self.refresh_in_background(query, max_age) {
                return Some(view);
            }
        }
        let view = Arc::new(build_view(
            query.as_ref(),
            sessions,
            (max_age, self.redact_labels),
            summarized,
            cancelled,
        )?);
        self.store(&view);
        Some(view)
    }

    /// Start rebuilding the view off the caller's thread (at most one rebuild at a time);
    /// false when that is not possible here (no async runtime).
    fn refresh_in_background(
        self: &Arc<Self>,
        query: &Arc<dyn SessionQuery>,
        max_age: Duration,
    ) -> bool {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return false;
        };
        if self.refreshing.swap(true, Ordering::AcqRel) {
            return true;
        }
        let (cache, query) = (Arc::clone(self), Arc::clone(query));
        let summarized = self.summarized.load(Ordering::Acquire);
        let redact = self.redact_labels;
        runtime.spawn_blocking(move || {
            if let Ok(sessions) = query.list_sessions()
                && let Some(view) = build_view(
                    query.as_ref(),
                    &sessions,
                    (max_age, redact),
                    summarized,
                    || false,
                )
            {
                cache.store(&Arc::new(view));
            }
            cache.refreshing.store(false, Ordering::Release);
        });
        true
    }
}

/// A view of `sessions` with titles (and, `summarized`, activity and the labels of untitled
/// sessions, redacted when `redact`) at most `max_age` old.
/// They are looked up one by one (the store answers those its listing vouches for without a
/// syscall), so a popup's listing answered meanwhile — the first `@` while the app warms
/// this view up — is never held up by the store's memo for the whole build.
fn build_view(
    query: &dyn SessionQuery,
    sessions: &Arc<Vec<SessionHeader>>,
    (max_age, redact): (Duration, bool),
    summarized: bool,
    cancelled: impl Fn() -> bool,
) -> Option<CandidateView> {
    if summarized {
        return CandidateView::build_summarized(
            Arc::clone(sessions),
            |id| query.read_summary_recent(id, max_age),
            redact,
            cancelled,
        );
    }
    CandidateView::build(
        Arc::clone(sessions),
        |id| query.read_title_recent(id, max_age),
        cancelled,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::candidates::{select_candidates, select_counted};
    use proptest::prelude::*;
    use std::collections::HashMap;

    /// Titles as a store would answer: text, none, missing or damaged.
    #[derive(Debug, Clone)]
    enum Answer {
        Title(String),
        Untitled,
        Missing,
        Damaged,
    }

    fn read(answers: &HashMap<String, Answer>, id: &str) -> Result<Option<Arc<str>>, QueryError> {
        match answers.get(id) {
            Some(Answer::Title(t)) => Ok(Some(Arc::from(t.as_str()))),
            Some(Answer::Untitled) => Ok(None),
            Some(Answer::Missing) | None => Err(QueryError::NotFound { id: id.into() }),
            Some(Answer::Damaged) => Err(QueryError::Corrupt {
                path: id.into(),
                line: 2,
                reason: "bad".into(),
            }),
        }
    }

    /// Short strings from an alphabet with case, non-ASCII folding, NUL and the two chars
    /// whose lowercase holds ASCII.
    fn text() -> impl Strategy<Value = String> {
        proptest::collection::vec(
            prop_oneof![
                Just("a"),
                Just("B"),
                Just("ab"),
                Just("Ä"),
                Just("ä"),
                Just("\u{130}"),
                Just("\u{212A}"),
                Just("k"),
                Just("i\u{307}"),
                Just("Σ"),
                Just("σ"),
                Just("\0"),
                Just(" "),
                Just("/"),
            ],
            0..5,
        )
        .prop_map(|parts| parts.concat())
    }

    fn answer() -> impl Strategy<Value = Answer> {
        prop_oneof![
            4 => text().prop_map(Answer::Title),
            1 => Just(Answer::Untitled),
            1 => Just(Answer::Missing),
            1 => Just(Answer::Damaged),
        ]
    }

    fn sessions() -> impl Strategy<Value = Vec<(SessionHeader, Answer)>> {
        proptest::collection::vec(
            (
                text(),
                prop_oneof![
                    Just(None),
                    Just(Some("/r".to_owned())),
                    text().prop_map(Some)
                ],
                answer(),
            ),
            0..24,
        )
        .prop_map(|rows| {
            rows.into_iter()
                .enumerate()
                .map(|(n, (id, cwd, answer))| {
                    // Ids are unique in a listing.
                    let id = format!("{id}#{n}");
                    (
                        SessionHeader::new(id, 100 - i64::try_from(n).unwrap(), cwd),
                        answer,
                    )
                })
                .collect()
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        /// The folded view gives the same rows and totals as the lazy selection.
        #[test]
        fn the_view_answers_like_the_lazy_selection(
            rows in sessions(),
            query in text(),
            limit in 1usize..6,
            exclude_first in any::<bool>(),
            agent_cwd in prop_oneof![Just(None), Just(Some("/r".to_owned())), text().prop_map(Some)],
        ) {
            let answers: HashMap<String, Answer> =
                rows.iter().map(|(h, a)| (h.id.clone(), a.clone())).collect();
            let headers: Vec<SessionHeader> = rows.into_iter().map(|(h, _)| h).collect();
            let agent_id = if exclude_first {
                headers.first().map_or_else(|| "none".to_owned(), |h| h.id.clone())
            } else {
                "none".to_owned()
            };
            let view = CandidateView::build(
                Arc::new(headers.clone()),
                |id| read(&answers, id),
                || false,
            )
            .unwrap();
            // A session whose log vanished is not offered: the lazy selection over the
            // sessions still there is the reference.
            let present: Vec<SessionHeader> = headers
                .iter()
                .filter(|h| !matches!(answers.get(&h.id), Some(Answer::Missing)))
                .cloned()
                .collect();
            for scope in [Scope::agent(&agent_id, agent_cwd.as_deref()), Scope::all()] {
                let lazy = select_counted(&present, scope, &query, limit, |id| read(&answers, id), || false);
                let folded = view.select(scope, &query, limit, true, || false);
                prop_assert_eq!(folded, lazy);
            }
            let lazy_rows = select_candidates(
                &present, &agent_id, agent_cwd.as_deref(), &query, limit,
                |id| read(&answers, id), || false,
            );
            let scope = Scope::agent(&agent_id, agent_cwd.as_deref());
            prop_assert_eq!(view.select(scope, &query, limit, false, || false).rows, lazy_rows);
            // Word by word: a session matches when each word is in its id or title, or
            // names its cwd's trailing segments.
            let words = query_words(&query);
            let want: Vec<&str> = present
                .iter()
                .filter(|h| {
                    let title = match answers.get(&h.id) {
                        Some(Answer::Title(t)) => Some(t.as_str()),
                        _ => None,
                    };
                    let fields: Vec<String> = [Some(h.id.as_str()), title]
                        .into_iter()
                        .flatten()
                        .map(str::to_lowercase)
                        .collect();
                    let cwd = h.cwd.as_deref().map(str::to_lowercase);
                    words.iter().all(|w| {
                        fields.iter().any(|f| f.contains(w.as_str()))
                            || cwd.as_deref().is_some_and(|c| names_cwd_tail(c.as_bytes(), w.as_bytes()))
                    })
                })
                .map(|h| h.id.as_str())
                .collect();
            let got = view.select_ordered(
                Scope::all(), ListingQuery::words(&query), usize::MAX, true,
                ListingOrder::Created, || false,
            );
            let got: Vec<&str> = got.rows.iter().map(|c| c.session_id.as_str()).collect();
            prop_assert_eq!(got.len(), want.len());
            for id in want {
                prop_assert!(got.contains(&id), "{} missing for {:?}", id, query);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// A view built from summaries answers like one built from titles in dsh's order,
        /// and in activity order gives the same matches and total, each group ordered by
        /// last activity (its creation time when it has none), ties in listing order.
        #[test]
        fn the_activity_order_reorders_each_group(
            rows in sessions(),
            times in proptest::collection::vec(proptest::option::of(0i64..8), 24),
            query in text(),
            limit in 1usize..6,
            agent_cwd in prop_oneof![Just(None), Just(Some("/r".to_owned())), text().prop_map(Some)],
        ) {
            let answers: HashMap<String, Answer> =
                rows.iter().map(|(h, a)| (h.id.clone(), a.clone())).collect();
            let headers: Vec<SessionHeader> = rows.into_iter().map(|(h, _)| h).collect();
            let last: HashMap<String, Option<i64>> = headers
                .iter()
                .zip(&times)
                .map(|(h, t)| (h.id.clone(), t.map(|t| 90 + t)))
                .collect();
            // As a store answers: a damaged log is a summary with its damage.
            let summary = |id: &str| -> Result<SessionSummary, QueryError> {
                let (title, damage) = match read(&answers, id) {
                    Ok(title) => (title, None),
                    Err(e @ QueryError::Corrupt { .. }) => (None, Some(e.to_string().into())),
                    Err(e) => return Err(e),
                };
                Ok(SessionSummary {
                    title,
                    last_active_ms: last.get(id).copied().flatten(),
                    messages: Some(1),
                    damage,
                    first_prompt: None,
                })
            };
            let sessions = Arc::new(headers.clone());
            let titled = CandidateView::build(Arc::clone(&sessions), |id| read(&answers, id), || false).unwrap();
            let summed = CandidateView::build_summarized(Arc::clone(&sessions), summary, true, || false).unwrap();
            prop_assert!(summed.has_details());
            let scope = Scope::agent("none", agent_cwd.as_deref());
            let created = summed.select(scope, &query, limit, true, || false);
            // Damaged logs without a title are the only difference: both offer them by id.
            prop_assert_eq!(&created, &titled.select(scope, &query, limit, true, || false));
            let (positions, total) = summed.select_positions(scope, ListingQuery::substring(&query), usize::MAX, true, ListingOrder::Created, || false);
            prop_assert_eq!(total, created.total);
            let at = |p: usize| {
                let h = &headers[p];
                last.get(&h.id).copied().flatten().unwrap_or(h.created_at)
            };
            let mut want = positions;
            want.sort_by_key(|&p| (scope.rank(headers[p].cwd.as_deref()), std::cmp::Reverse(at(p)), p));
            want.truncate(limit);
            let (got, got_total) = summed.select_positions(scope, ListingQuery::substring(&query), limit, true, ListingOrder::LastActivity, || false);
            prop_assert_eq!(got, want);
            prop_assert_eq!(got_total, total);
        }
    }

    /// Issue 32 items 2 and 3: a picker's query lists an exact title first, then titles
    /// beginning with it, then the rest (each tier by last activity); its words match a
    /// cwd only by naming its trailing segments.
    #[test]
    fn a_pickers_query_ranks_by_what_was_typed_and_names_cwds_by_their_tail() {
        let rows = [
            ("s-newest", "@Deploy plan what now", "/w/other", 9),
            ("s-prefix", "Deploy plan B", "/w/other", 5),
            ("s-exact", "Deploy plan", "/w/other", 1),
            ("s-src-inside", "Refactor", "/home/ana/src/app", 8),
            ("s-src-tail", "Cleanup", "/home/ana/src", 2),
        ];
        let headers: Vec<SessionHeader> = rows
            .iter()
            .map(|(id, _, cwd, _)| SessionHeader::new(*id, 0, Some((*cwd).to_owned())))
            .collect();
        let summary = |id: &str| -> Result<SessionSummary, QueryError> {
            let (_, title, _, at) = rows.iter().find(|r| r.0 == id).unwrap();
            Ok(SessionSummary {
                title: Some(Arc::from(*title)),
                last_active_ms: Some(*at),
                messages: Some(1),
                damage: None,
                first_prompt: None,
            })
        };
        let view =
            CandidateView::build_summarized(Arc::new(headers), summary, true, || false).unwrap();
        let ids = |query: &str| -> Vec<String> {
            view.select_ordered(
                Scope::all(),
                ListingQuery::words(query),
                10,
                true,
                ListingOrder::LastActivity,
                || false,
            )
            .rows
            .into_iter()
            .map(|c| c.session_id)
            .collect()
        };
        assert_eq!(ids("deploy plan"), ["s-exact", "s-prefix", "s-newest"]);
        assert_eq!(ids("src/"), ["s-src-tail"], "never inside the cwd");
        assert_eq!(ids("ana/src"), ["s-src-tail"]);
        assert_eq!(ids("app"), ["s-src-inside"]);
        assert_eq!(ids("ana"), Vec::<String>::new());
        // dsh's contract is untouched: the whole query a substring of any field.
        let contract = view.select(Scope::all(), "src/", 10, true, || false);
        assert_eq!(contract.total, 1, "only the cwd holding `src/`");
    }

    #[test]
    fn matches_are_found_across_many_sessions_in_order() {
        let headers: Vec<SessionHeader> = (0..5000)
            .map(|i| SessionHeader::new(format!("s-{i}"), 5000 - i, None))
            .collect();
        let view = CandidateView::build(
            Arc::new(headers),
            |id| Ok(Some(Arc::from(format!("Topic {id}").as_str()))),
            || false,
        )
        .unwrap();
        let all = view.select(Scope::all(), "TOPIC S-4", 2000, true, || false);
        assert_eq!(all.total, 1111, "s-4, s-40..49, s-400..499, s-4000..4999");
        assert_eq!(
            all.rows.first().map(|c| c.label.as_str()),
            Some("Topic s-4")
        );
        assert_eq!(all.rows.get(1).map(|c| c.session_id.as_str()), Some("s-40"));
        // A query over a field boundary matches nothing.
        assert_eq!(
            view.select(Scope::all(), "s-4\0", 10, true, || false).total,
            0
        );
        assert_eq!(
            view.select(Scope::all(), "9\0\0topic", 10, true, || false)
                .total,
            0
        );
        // Cancelled work answers nothing.
        assert_eq!(
            view.select(Scope::all(), "topic", 10, true, || true),
            Selection::default()
        );
    }

    /// Issue 32 item 9: in the pickers' word matching an untitled session's label counts as
    /// one of its fields (and as its title in the tiers), and matches still come in listing
    /// order within a rank (a limited listing in dsh's order keeps the first ones).
    #[test]
    fn an_untitled_sessions_label_is_matched_by_words_in_order() {
        let headers: Vec<SessionHeader> = (0..6)
            .map(|i| SessionHeader::new(format!("s-{i}"), 100 - i, Some("/w".into())))
            .collect();
        // Even positions titled "deploy notes N", odd ones untitled "why does deploy N fail".
        let summary = |id: &str| -> Result<SessionSummary, QueryError> {
            let n: usize = id.trim_start_matches("s-").parse().unwrap_or(0);
            Ok(if n.is_multiple_of(2) {
                SessionSummary {
                    title: Some(Arc::from(format!("deploy notes {n}").as_str())),
                    ..SessionSummary::default()
                }
            } else {
                SessionSummary {
                    first_prompt: Some(Arc::from(format!("why does\ndeploy {n} fail").as_str())),
                    ..SessionSummary::default()
                }
            })
        };
        let view =
            CandidateView::build_summarized(Arc::new(headers), summary, true, || false).unwrap();
        let words = |q: &str, limit: usize| {
            view.select_positions(
                Scope::all(),
                ListingQuery::words(q),
                limit,
                true,
                ListingOrder::Created,
                || false,
            )
        };
        // Titles beginning with the query first (the tiers), then the labels holding it.
        assert_eq!(words("deploy", 10), (vec![0, 2, 4, 1, 3, 5], 6));
        assert_eq!(words("deploy", 3), (vec![0, 2, 4], 6));
        assert_eq!(words("fail deploy", 10), (vec![1, 3, 5], 3));
        // A label stands for the title in the tiers: the whole label first.
        assert_eq!(words("why does deploy 5 fail", 10), (vec![5], 1));
        assert_eq!(words("why does", 10), (vec![1, 3, 5], 3));
        // One word in the label, one in the id.
        assert_eq!(words("why s-3", 10), (vec![3], 1));
        assert_eq!(
            view.listed_candidate_at(3).map(|c| c.label),
            Some("why does deploy 3 fail".to_owned())
        );
        // The contract's row and filter keep the id and the title.
        assert_eq!(
            view.candidate_at(3).map(|c| c.label),
            Some("s-3".to_owned())
        );
        assert_eq!(
            view.select(Scope::all(), "why", 10, true, || false).total,
            0
        );
    }
}
