//! The session-reference service (docs/references.md: candidates, prepare): candidate listing and `prepare`, over a
//! blocking [`SessionQuery`] run off the async runtime and raced against a cancel token.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::budget_plan::BudgetPlan;
use super::candidate_view::{CandidateView, ViewCache};
use super::candidates::{
    Candidate, ClosestMatch, Scope, Selection, closest_by, select_candidates, select_closest,
    select_counted,
};
use super::config::ReferenceConfig;
use super::error::{ErrorCode, ReferenceError};
use super::estimate::{EstimateCache, ReferenceEstimate};
use super::excerpt_read::read_excerpt;
use super::excerpt_uri::{ExcerptRange, format_excerpt_mention};
use super::file_context::{AttachedFile, read_file, resolve_file, resolve_file_mentions};
use super::file_mention::FileMention;
use super::listing_order::{ListingOrder, SessionDetails};
use super::parse::Mentioned;
use super::parse::Reference;
use super::query_words::ListingQuery;
use super::redact::redact_label_if;
use super::retention::RetainedSource;
use super::source_read::read_source_redacting;
use super::staleness::StalenessCache;
use dsh_store::{ContentBlock, Message, SessionQuery};

/// How old a cached title may be in a candidate listing: the popup asks again on every
/// keystroke, and re-checking 10 000 logs each time would cost a `stat` apiece (docs/performance.md).
const TITLE_MAX_AGE: Duration = Duration::from_secs(1);

/// Most closest matches offered when the exact filter finds nothing.
pub const CLOSEST_LIMIT: usize = 20;

/// "The agent" of docs/references.md: the session doing the referencing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentRef {
    pub session_id: String,
    pub cwd: Option<String>,
}

/// The result of [`SessionReferences::prepare`]: the copied content and, when the message
/// references other sessions, the snapshot context to log right before it.
#[derive(Debug, Clone, PartialEq)]
pub struct Prepared {
    pub content: Vec<ContentBlock>,
    pub context: Option<Message>,
    /// The `<referenced-files>` context, logged after `context` (docs/references.md: file
    /// references), when the text mentions files.
    pub file_context: Option<Message>,
    /// The budget plan of the sessions, when prepared with a room (docs/references.md:
    /// the budget plan).
    pub plan: Option<BudgetPlan>,
}

/// Which sessions a paged listing covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListingScope {
    /// The `@` popup: every session but the agent's, ranked by the agent's cwd.
    Agent(AgentRef),
    /// Every session, newest first.
    All,
    /// The `/resume` picker: every session (none left out) in the `@` popup's groups
    /// around this cwd — its sessions first, then those without a cwd, then the others.
    Project(Option<String>),
}

impl ListingScope {
    /// The candidate selection's scope for this listing.
    fn scope(&self) -> Scope<'_> {
        match self {
            ListingScope::Agent(agent) => Scope::agent(&agent.session_id, agent.cwd.as_deref()),
            ListingScope::All => Scope::all(),
            ListingScope::Project(cwd) => Scope::project(cwd.as_deref()),
        }
    }
}

/// The closest fuzzy matches of `query` in `view` when it has no exact match (`total`),
/// else none.
fn closest_in(
    view: &CandidateView,
    scope: Scope<'_>,
    query: &str,
    total: usize,
    cancelled: impl Fn() -> bool,
) -> Vec<ClosestMatch> {
    if total != 0 {
        return Vec::new();
    }
    closest_by(
        view.sessions(),
        scope,
        query,
        CLOSEST_LIMIT,
        |position, _| view.title_at(position),
        cancelled,
    )
}

/// One page of a listing: the first exact matches, how many there are in all, and — only
/// when there is none — the closest fuzzy matches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CandidatePage {
    pub rows: Vec<Candidate>,
    pub total: usize,
    pub closest: Vec<ClosestMatch>,
}

/// A page of a listing with what a picker shows beside each row
/// ([`SessionReferences::list_page_ordered`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DetailedPage {
    pub page: CandidatePage,
    /// For every session of `page.rows` and `page.closest`, by id: when it was last active
    /// and how many messages it holds, as far as its source tells.
    pub details: HashMap<String, SessionDetails>,
    /// For the sessions of the page that recorded one, by id: the git branch the session was
    /// recorded on (`SessionHeader::branch`; untrusted text). Never the branch its working
    /// directory is on now.
    pub branches: HashMap<String, String>,
}

/// The session-reference service. Cheap to clone; all clones share the query and caches.
#[derive(Clone)]
pub struct SessionReferences {
    pub(crate) query: Arc<dyn SessionQuery>,
    pub(crate) config: ReferenceConfig,
    estimates: Arc<EstimateCache>,
    /// Titles of the latest listing, folded for filtering (rebuilt as they age).
    views: Arc<ViewCache>,
    /// Newer-message counts of referenced sessions, by log stamp.
    staleness: Arc<StalenessCache>,
}

impl std::fmt::Debug for SessionReferences {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionReferences")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// One distinct reference after normalization: a whole session or an excerpt of one.
#[derive(Clone)]
pub(crate) struct Normalized {
    pub(crate) session_id: String,
    pub(crate) label: String,
    excerpt: Option<ExcerptRange>,
}

/// What a paged listing runs with off the async runtime: its row limit, the store, the
/// views, the scope, the query and the cancellation token.
struct ListingJob(
    usize,
    Arc<dyn SessionQuery>,
    Arc<ViewCache>,
    ListingScope,
    String,
    CancellationToken,
);

impl SessionReferences {
    /// The parts of a paged listing, its limit checked.
    fn listing_job(
        &self,
        scope: &ListingScope,
        query: &str,
        limit: Option<usize>,
        cancel: &CancellationToken,
    ) -> Result<ListingJob, ReferenceError> {
        Ok(ListingJob(
            self.page_limit(limit)?,
            Arc::clone(&self.query),
            Arc::clone(&self.views),
            scope.clone(),
            query.to_owned(),
            cancel.clone(),
        ))
    }

    /// A page's row limit: `candidate_limit` when not given; `0` is invalid.
    fn page_limit(&self, limit: Option<usize>) -> Result<usize, ReferenceError> {
        match limit {
            None => Ok(self.config.candidate_limit),
            Some(0) => Err(ReferenceError::invalid_reference(
                "candidate limit must be a positive integer (got 0)",
            )),
            Some(n) => Ok(n),
        }
    }

    /// A service over `query` with validated `config`.
    pub fn new(query: Arc<dyn SessionQuery>, config: ReferenceConfig) -> Self {
        SessionReferences {
            query,
            config,
            estimates: Arc::new(EstimateCache::default()),
            views: Arc::new(ViewCache::new(config.redact_secrets)),
            staleness: Arc::new(StalenessCache::default()),
        }
    }

    /// The mention of one exchange of `session_id` — the message `seq` and
    /// `excerpt_context` messages each side — labelled `label` (docs/references.md: excerpt
    /// references): what a conversation hit inserts.
    pub fn excerpt_mention(&self, session_id: &str, seq: u64, label: &str) -> String {
        let side = u32::try_from(self.config.excerpt_context).unwrap_or(u32::MAX);
        format_excerpt_mention(
            &ExcerptRange {
                session_id: session_id.to_owned(),
                seq,
                before: side,
                after: side,
            },
            label,
        )
    }

    /// What attaching the file `path` (as mentioned) from `cwd` would send now: the same
    /// resolution, refusals, redaction and cut as `prepare` (the popup's preview and cost).
    pub async fn estimate_file(
        &self,
        cwd: &str,
        path: &str,
        cancel: &CancellationToken,
    ) -> Result<AttachedFile, ReferenceError> {
        let config = self.config;
        let (cwd, path) = (cwd.to_owned(), path.to_owned());
        run_blocking(cancel, move || {
            let file =
                resolve_file(std::path::Path::new(&cwd), &path).map_err(|r| r.into_error(&path))?;
            read_file(&file, config.max_file_bytes, config.redact_secrets)
                .map_err(|r| r.into_error(&file.path))
        })
        .await?
    }

    /// How many conversation messages session `session_id` has gained since a snapshot
    /// captured it through `captured_through_seq` (docs/references.md: staleness): one
    /// `stat` while its log is unchanged, a measuring scan when it grew.
    pub async fn newer_messages(
        &self,
        session_id: &str,
        captured_through_seq: Option<u64>,
        cancel: &CancellationToken,
    ) -> Result<usize, ReferenceError> {
        let store = Arc::clone(&self.query);
        let cache = Arc::clone(&self.staleness);
        let id = session_id.to_owned();
        run_blocking(cancel, move || {
            cache.newer_messages(store.as_ref(), &id, captured_through_seq)
        })
        .await?
    }

    /// The validated configuration.
    pub fn config(&self) -> &ReferenceConfig {
        &self.config
    }

    /// Sessions other than the agent's, filtered by `query` (id, cwd or latest title,
    /// case-insensitive) and ranked: same cwd, no cwd, other cwds; `list_sessions` order
    /// within a group. `limit` defaults to `candidate_limit`; `limit <= 0` is invalid.
    pub async fn list_candidates(
        &self,
        agent: &AgentRef,
        query: &str,
        limit: Option<i64>,
        cancel: &CancellationToken,
    ) -> Result<Vec<Candidate>, ReferenceError> {
        let limit = match limit {
            None => self.config.candidate_limit,
            Some(n) => usize::try_from(n).ok().filter(|&n| n > 0).ok_or_else(|| {
                ReferenceError::invalid_reference(format!(
                    "candidate limit must be a positive integer (got {n})"
                ))
            })?,
        };
        let store = Arc::clone(&self.query);
        let views = Arc::clone(&self.views);
        let agent = agent.clone();
        let query = query.to_owned();
        let token = cancel.clone();
        run_blocking(cancel, move || {
            let sessions = store.list_sessions().map_err(ReferenceError::list_failed)?;
            // A filter consults every title: answered from the folded view. Without one,
            // only the shown rows' titles are read.
            if !query.is_empty() {
                let scope = Scope::agent(&agent.session_id, agent.cwd.as_deref());
                let cancelled = || token.is_cancelled();
                return Ok(views
                    .view(&store, &sessions, TITLE_MAX_AGE, cancelled)
                    .map(|view| view.select(scope, &query, limit, false, cancelled).rows)
                    .unwrap_or_default());
            }
            let mut selected = Vec::new();
            store.with_recent_titles(TITLE_MAX_AGE, &mut |read_title| {
                selected = select_candidates(
                    &sessions,
                    &agent.session_id,
                    agent.cwd.as_deref(),
                    &query,
                    limit,
                    read_title,
                    || token.is_cancelled(),
                );
            });
            Ok(selected)
        })
        .await?
    }

    /// List the sessions and read every session's summary (title, last activity, message
    /// count) into the folded view, so the first `@` or `/resume` listing
    /// ([`list_page_ordered`], and `list_page` from the same view) answers from memory (the
    /// app runs this in the background at start).
    ///
    /// [`list_page_ordered`]: Self::list_page_ordered
    pub async fn warm_ordered_listing(
        &self,
        cancel: &CancellationToken,
    ) -> Result<(), ReferenceError> {
        let store = Arc::clone(&self.query);
        let views = Arc::clone(&self.views);
        let token = cancel.clone();
        run_blocking(cancel, move || {
            let sessions = store.list_sessions().map_err(ReferenceError::list_failed)?;
            views.summarized_view(&store, &sessions, TITLE_MAX_AGE, || token.is_cancelled());
            Ok(())
        })
        .await?
    }

    /// Like [`list_page`](Self::list_page), with each group ordered by `order`, every
    /// row's details (last activity, message count), an untitled session labelled by the
    /// leading words of its first message ([`untitled_label`](crate::untitled_label), secrets
    /// redacted unless `redact_secrets` is off), and the query matched word by word
    /// ([`QueryMatch::Words`](crate::QueryMatch::Words): each word of `query` a
    /// case-insensitive substring of the session's title or id, or naming its cwd's
    /// trailing segments), ranked by [`MatchTier`](crate::MatchTier) first (an exact title
    /// or id, then one beginning with the query, then the rest): what `/resume` and the `@`
    /// popup show with [`ListingOrder::LastActivity`]. Every session's summary is read (from the
    /// store's caches: a log is read again only when it changed, and then only what was
    /// appended), so the first call on a cold store takes as long as a first title search;
    /// [`warm_ordered_listing`](Self::warm_ordered_listing) does it ahead of time.
    pub async fn list_page_ordered(
        &self,
        scope: &ListingScope,
        query: &str,
        limit: Option<usize>,
        order: ListingOrder,
        cancel: &CancellationToken,
    ) -> Result<DetailedPage, ReferenceError> {
        let job = self.listing_job(scope, query, limit, cancel)?;
        run_blocking(cancel, move || {
            let ListingJob(limit, store, views, scope, query, token) = job;
            let sessions = store.list_sessions().map_err(ReferenceError::list_failed)?;
            let scope = scope.scope();
            let cancelled = || token.is_cancelled();
            let Some(view) = views.summarized_view(&store, &sessions, TITLE_MAX_AGE, cancelled)
            else {
                return Ok(DetailedPage::default());
            };
            let (positions, total) = view.select_positions(
                scope,
                ListingQuery::words(&query),
                limit,
                true,
                order,
                cancelled,
            );
            let mut details = HashMap::with_capacity(positions.len());
            let mut branches = HashMap::new();
            let recorded_branch =
                |position: usize| view.sessions().get(position).and_then(|h| h.branch.clone());
            let mut rows = Vec::with_capacity(positions.len());
            for position in positions {
                if let Some(row) = view.listed_candidate_at(position) {
                    if let Some(d) = view.details_at(position) {
                        details.insert(row.session_id.clone(), d);
                    }
                    if let Some(branch) = recorded_branch(position) {
                        branches.insert(row.session_id.clone(), branch);
                    }
                    rows.push(row);
                }
            }
            let mut closest = closest_in(&view, scope, &query, total, cancelled);
            if !closest.is_empty() {
                for (position, header) in view.sessions().iter().enumerate() {
                    let Some(c) = closest
                        .iter_mut()
                        .find(|c| c.candidate.session_id == header.id)
                    else {
                        continue;
                    };
                    if let Some(listed) = view.listed_candidate_at(position) {
                        c.candidate.label = listed.label;
                    }
                    if let Some(d) = view.details_at(position) {
                        details.insert(header.id.clone(), d);
                    }
                    if let Some(branch) = &header.branch {
                        branches.insert(header.id.clone(), branch.clone());
                    }
                }
            }
            Ok(DetailedPage {
                page: CandidatePage {
                    rows,
                    total,
                    closest,
                },
                details,
                branches,
            })
        })
        .await?
    }

    /// Up to `limit` exact matches of `query` in `scope` (like [`list_candidates`]), the
    /// number of all exact matches, and the closest fuzzy matches when there is none.
    /// `limit` defaults to `candidate_limit`; `0` is invalid.
    ///
    /// [`list_candidates`]: Self::list_candidates
    pub async fn list_page(
        &self,
        scope: &ListingScope,
        query: &str,
        limit: Option<usize>,
        cancel: &CancellationToken,
    ) -> Result<CandidatePage, ReferenceError> {
        let job = self.listing_job(scope, query, limit, cancel)?;
        run_blocking(cancel, move || {
            let ListingJob(limit, store, views, scope, query, token) = job;
            // The first page of an empty query (the `@` key) does not wait for the store's
            // first check of every log: it is shown from what the store knew before, and
            // only rows whose logs are still there are offered (their titles are read).
            let sessions = if query.is_empty() {
                store.list_sessions_unchecked()
            } else {
                store.list_sessions()
            }
            .map_err(ReferenceError::list_failed)?;
            let scope = scope.scope();
            if !query.is_empty() {
                let cancelled = || token.is_cancelled();
                let Some(view) = views.view(&store, &sessions, TITLE_MAX_AGE, cancelled) else {
                    return Ok(CandidatePage::default());
                };
                let Selection { rows, total } = view.select(scope, &query, limit, true, cancelled);
                let closest = closest_in(&view, scope, &query, total, cancelled);
                return Ok(CandidatePage {
                    rows,
                    total,
                    closest,
                });
            }
            let mut page = CandidatePage::default();
            store.with_recent_titles(TITLE_MAX_AGE, &mut |read_title| {
                let Selection { rows, total } =
                    select_counted(&sessions, scope, &query, limit, &mut *read_title, || {
                        token.is_cancelled()
                    });
                let closest = if total == 0 {
                    select_closest(&sessions, scope, &query, CLOSEST_LIMIT, read_title, || {
                        token.is_cancelled()
                    })
                } else {
                    Vec::new()
                };
                page = CandidatePage {
                    rows,
                    total,
                    closest,
                };
            });
            Ok(page)
        })
        .await?
    }

    /// What referencing `session_id` as `label` would cost now: the same reader and
    /// retention as [`prepare`](Self::prepare), cached until the session's log changes.
    pub async fn estimate(
        &self,
        session_id: &str,
        label: &str,
        cancel: &CancellationToken,
    ) -> Result<Arc<ReferenceEstimate>, ReferenceError> {
        let store = Arc::clone(&self.query);
        let cache = Arc::clone(&self.estimates);
        let budget = self.config.max_reference_bytes;
        let redact = self.config.redact_secrets;
        let (session_id, label) = (session_id.to_owned(), label.to_owned());
        run_blocking(cancel, move || {
            cache.get_or_compute(store.as_ref(), &session_id, &label, budget, redact)
        })
        .await?
    }

    /// Prepare a message that references other sessions: copy `content`, normalize
    /// `references`, read every distinct source once and in parallel, and build the bounded
    /// snapshot context. All or nothing; cancellation wins promptly.
    pub async fn prepare(
        &self,
        agent: &AgentRef,
        content: &[ContentBlock],
        references: &[Reference],
        cancel: &CancellationToken,
    ) -> Result<Prepared, ReferenceError> {
        let mentions: Vec<Mentioned> = references.iter().cloned().map(Mentioned::Session).collect();
        self.prepare_mentions(agent, content, &mentions, &[], cancel)
            .await
    }

    /// [`prepare`](Self::prepare) for every kind of mention: whole sessions and excerpts
    /// (one snapshot context, sources in first-mention order) and files (a second context,
    /// read from the agent's working directory). All or nothing; cancellation wins promptly.
    pub async fn prepare_mentions(
        &self,
        agent: &AgentRef,
        content: &[ContentBlock],
        mentions: &[Mentioned],
        files: &[FileMention],
        cancel: &CancellationToken,
    ) -> Result<Prepared, ReferenceError> {
        self.prepare_planned(agent, content, mentions, files, None, cancel)
            .await
    }

    /// First-mention order, later duplicates dropped (first label wins, missing label → id),
    /// self-reference refused, then the distinct count checked against `max_references`.
    pub(crate) fn normalize(
        &self,
        agent: &AgentRef,
        mentions: &[Mentioned],
    ) -> Result<Vec<Normalized>, ReferenceError> {
        let mut seen: std::collections::HashSet<(&str, Option<&ExcerptRange>)> =
            std::collections::HashSet::new();
        let mut out = Vec::new();
        for m in mentions {
            let (session_id, label, excerpt) = match m {
                Mentioned::Session(r) => (&r.session_id, &r.label, None),
                Mentioned::Excerpt(e) => (&e.range.session_id, &e.label, Some(&e.range)),
            };
            if !seen.insert((session_id.as_str(), excerpt)) {
                continue;
            }
            out.push(Normalized {
                session_id: session_id.clone(),
                label: label.clone().unwrap_or_else(|| session_id.clone()),
                excerpt: excerpt.cloned(),
            });
        }
        if out.iter().any(|n| n.session_id == agent.session_id) {
            return Err(ReferenceError::new(
                ErrorCode::SelfReference,
                format!(
                    "a message cannot reference its own session {:?}",
                    agent.session_id
                ),
            ));
        }
        if out.len() > self.config.max_references {
            return Err(ReferenceError::new(
                ErrorCode::TooMany,
                format!(
                    "a message may reference at most {} sessions; this one references {}",
                    self.config.max_references,
                    out.len()
                ),
            ));
        }
        Ok(out)
    }
}

/// Read one source (a whole session or an excerpt), project, redact when configured and
/// retain it (blocking; runs on a blocking thread).
pub(crate) fn read_and_retain(
    store: &dyn SessionQuery,
    source: Normalized,
    config: &ReferenceConfig,
    cancel: &CancellationToken,
) -> Result<RetainedSource, ReferenceError> {
    if cancel.is_cancelled() {
        return Err(ReferenceError::cancelled());
    }
    let (budget, redact) = (config.max_reference_bytes, config.redact_secrets);
    // A label is usually another session's title: it is sent too, so it is redacted too.
    let (label, in_label) = redact_label_if(redact, source.label);
    let mut retained = match &source.excerpt {
        None => read_source_redacting(store, source.session_id, label, budget, redact)?,
        Some(range) => read_excerpt(store, range, label, budget, redact)?,
    };
    retained.redactions.add(&in_label);
    if cancel.is_cancelled() {
        return Err(ReferenceError::cancelled());
    }
    Ok(retained)
}

/// Resolve the file mentions in `cwd`, check their number, and read each one (blocking).
pub(crate) fn read_files(
    cwd: Option<&str>,
    mentions: &[FileMention],
    config: &ReferenceConfig,
) -> Result<Vec<AttachedFile>, ReferenceError> {
    if mentions.is_empty() {
        return Ok(Vec::new());
    }
    // A working directory that is gone is no working directory.
    let cwd = cwd.filter(|c| std::path::Path::new(c).is_dir());
    let Some(cwd) = cwd else {
        return match mentions.iter().find(|m| m.quoted) {
            Some(m) => Err(ReferenceError::new(
                ErrorCode::FileRefused,
                format!(
                    "cannot attach file {:?}: this session has no working directory here",
                    m.path
                ),
            )),
            None => Ok(Vec::new()),
        };
    };
    let resolved = resolve_file_mentions(std::path::Path::new(cwd), mentions)?;
    if resolved.len() > config.max_files {
        return Err(ReferenceError::new(
            ErrorCode::TooManyFiles,
            format!(
                "a message may attach at most {} files; this one mentions {}",
                config.max_files,
                resolved.len()
            ),
        ));
    }
    resolved
        .iter()
        .map(|file| {
            read_file(file, config.max_file_bytes, config.redact_secrets)
                .map_err(|r| r.into_error(&file.path))
        })
        .collect()
}

/// Run blocking `work` on the blocking pool, returning `CANCELLED` as soon as `cancel`
/// fires even if the work never finishes.
async fn run_blocking<T: Send + 'static>(
    cancel: &CancellationToken,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ReferenceError> {
    if cancel.is_cancelled() {
        return Err(ReferenceError::cancelled());
    }
    let task = tokio::task::spawn_blocking(work);
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(ReferenceError::cancelled()),
        done = task => done.map_err(|e| ReferenceError::task_failed(&e)),
    }
}
