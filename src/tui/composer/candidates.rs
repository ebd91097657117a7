//! The `@` popup's rows: each query of the widget is listed off the UI thread through one
//! request slot (a newer query cancels the older listing), answered in phases — a head
//! start from the first page remembered from the last run (its rows checked to still have a
//! log), then the checked answer — and the empty query's answer is remembered for the next
//! run. An Enter or Tab that waits for an answer (docs/composer.md) waits for it, up to the
//! widget's `answer_wait` (the widget's own timer).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use super::chip_hints::ChipHints;
use super::draft_limits::DraftLimits;
use super::file_section::FileCandidates;
use super::listed_page::{ListedPage, RowUsage, matches_words, now_ms, rank_by_usage};
use super::remembered_page::{self, RememberedPage, RememberedPages};
use super::session_items::{OriginOf, results_page};
use super::usage::Usage;
use crate::tui::event::{AppEvent, AppEventSender};
use crate::tui::request_slot::{Policy, RequestSlot};
use crate::tui::transcript::NoticeKind;
use crate::tui::transcript::chat_view::ChatView;
use dsh_reference::{
    AgentRef, ErrorCode, ListingOrder, ListingScope, ReferenceError, SessionReferences,
};
use dsh_store::SessionStore;
use ratatui_mention::{MentionInputState, Outcome};
use tokio_util::sync::CancellationToken;

/// Which answer of a query this is.
#[derive(Debug)]
pub enum CandidatesPhase {
    /// A head start for the empty query: the first page remembered from the last run, its
    /// rows still having a log; the checked answer follows.
    Remembered(ListedPage),
    /// The checked answer after a head start: it replaces those rows.
    Checked(Result<ListedPage, ReferenceError>),
    /// The only answer.
    Answered(Result<ListedPage, ReferenceError>),
    /// The sessions, before the file section is ranked (the checked answer with it
    /// follows).
    Sessions(ListedPage),
}

/// An answer to the `@` popup's query `query_id` (`query` as asked), of listing `ticket`.
#[derive(Debug)]
pub struct CandidatesEvent {
    pub ticket: u64,
    pub query_id: u64,
    pub query: String,
    pub phase: CandidatesPhase,
}

/// The `@` popup's empty-query first page as last answered (loaded at start, kept up to
/// date), where it is kept, whether a listing has answered in this run, and the id of the
/// newest empty query (its answer is remembered).
#[derive(Debug, Default)]
pub struct FirstPage {
    pub remembered: Arc<Mutex<Option<RememberedPages>>>,
    pub path: Option<PathBuf>,
    listing_answered: bool,
    empty_query_id: Option<u64>,
}

/// What a listing is run with.
pub struct ListingContext<'a> {
    pub refs: Option<&'a SessionReferences>,
    pub store: &'a SessionStore,
    pub agent: AgentRef,
    pub tx: &'a AppEventSender,
}

/// What an answer is shown with.
pub struct AnswerContext<'a> {
    pub input: &'a mut MentionInputState,
    pub chips: &'a mut ChipHints,
    pub chat: &'a mut ChatView,
    pub origin_of: &'a OriginOf<'a>,
    pub refs: Option<&'a SessionReferences>,
    pub agent: AgentRef,
}

/// The listing of the `@` popup's queries.
#[derive(Debug)]
pub struct Candidates {
    slot: RequestSlot<u64>,
    pub first_page: FirstPage,
    /// What rows show beside a session (git branches, pins and uses), shared with
    /// `/resume`.
    pub sources: RowSources,
    /// The paths of the agent's cwd (the file section).
    pub files: FileCandidates,
}

impl Default for Candidates {
    fn default() -> Self {
        Candidates {
            slot: RequestSlot::new(Policy::Replace),
            first_page: FirstPage::default(),
            sources: RowSources::default(),
            files: FileCandidates::default(),
        }
    }
}

impl Candidates {
    /// Lists `query` for the popup's query `query_id` (`limit`: more rows of the answered
    /// one) off the UI thread, cancelling the previous listing; `draft` (caret at char
    /// `caret`) is what the rows' limits count. Without a reference service `@` offers
    /// nothing: the empty answer is returned at once.
    pub fn query(
        &mut self,
        cx: &ListingContext<'_>,
        query_id: u64,
        query: String,
        limit: Option<usize>,
        (draft, caret): (String, usize),
    ) -> Option<ListedPage> {
        let Some(refs) = cx.refs.cloned() else {
            self.slot.cancel();
            return Some(ListedPage::default());
        };
        let ticket = self.slot.request(query_id)?;
        let empty = query.is_empty() && limit.is_none();
        self.first_page.empty_query_id = empty.then_some(query_id);
        // Before any checked listing answered, the empty query is answered at once from the
        // page remembered from the last run (its rows verified to still have a log), then
        // again when the listing is in.
        let head_start = (empty && !self.first_page.listing_answered)
            .then(|| {
                let pages = self
                    .first_page
                    .remembered
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                pages
                    .as_ref()
                    .and_then(|p| p.best_for(cx.agent.cwd.as_deref()))
                    .cloned()
            })
            .flatten();
        let agent = cx.agent.clone();
        let scope = ListingScope::Agent(agent.clone());
        let (tx, store, cancel) = (cx.tx.clone(), cx.store.clone(), ticket.cancel);
        let sources = self.sources.clone();
        let redact = refs.config().redact_secrets;
        let asked = query.clone();
        let files = self.files.clone();
        let config = refs.config();
        let mut limits = DraftLimits::of_sessions(&draft, config.max_references, config.max_files);
        let send = move |phase| {
            tx.send(AppEvent::Candidates(CandidatesEvent {
                ticket: ticket.id,
                query_id,
                query: query.clone(),
                phase,
            }));
        };
        tokio::spawn(async move {
            let mut answered = false;
            if let Some(page) = head_start {
                let own = agent.session_id.clone();
                let (book, scope) = (sources.usage.book(), scope.clone());
                let limits = limits.clone();
                let verified = tokio::task::spawn_blocking(move || {
                    let now = now_ms();
                    let mut page = page.verified(&store, &own, now, redact);
                    let now = u64::try_from(now).unwrap_or(0);
                    rank_by_usage(&mut page.page.rows, &book, &scope, "", now);
                    page.usage = RowUsage::of(&page.page, &book);
                    page.limits = limits;
                    page
                })
                .await;
                if let Ok(page) = verified
                    && !page.page.rows.is_empty()
                    && !cancel.is_cancelled()
                {
                    send(CandidatesPhase::Remembered(page));
                    answered = true;
                }
            }
            let mut result = list_ordered(&refs, &scope, &asked, limit, &sources, &cancel).await;
            if let Err(e) = &result
                && e.code == ErrorCode::Cancelled
            {
                return;
            }
            if let Ok(listed) = &mut result {
                listed.limits = limits.clone();
            }
            // The file section, for a query in a cwd that is a directory (the empty query
            // walks it ahead): the sessions are shown first, the rows with files replace
            // them once ranked.
            if let (Ok(listed), Some(cwd)) = (&mut result, agent.cwd.clone())
                && Path::new(&cwd).is_dir()
            {
                let (token, query) = (cancel.clone(), asked.clone());
                if query.is_empty() {
                    // Not cancelled with this listing: the next keys' listings wait
                    // for this walk (bounded) instead of starting their own.
                    drop(tokio::task::spawn_blocking(move || {
                        files.rows(Path::new(&cwd), "", &|| false)
                    }));
                } else {
                    send(CandidatesPhase::Sessions(listed.clone()));
                    let found = tokio::task::spawn_blocking(move || {
                        let dir = Path::new(&cwd);
                        let rows = files.rows(dir, &query, &|| token.is_cancelled());
                        let first = files.path_shaped(dir, &query);
                        limits.count_files(dir, &draft, caret);
                        (rows, first, limits)
                    })
                    .await;
                    if cancel.is_cancelled() {
                        return;
                    }
                    if let Ok((rows, first, limits)) = found {
                        listed.files = rows;
                        listed.files_first = first;
                        listed.limits = limits;
                    }
                    answered = true;
                }
            }
            send(if answered {
                CandidatesPhase::Checked(result)
            } else {
                CandidatesPhase::Answered(result)
            });
        });
        None
    }

    /// Lists `query` again for the popup's query `query_id`, whose rows are on show: the
    /// answer replaces them, the selected row kept (a pin changed the order).
    pub fn refresh(&mut self, cx: &ListingContext<'_>, query_id: u64, query: String) {
        let Some(refs) = cx.refs.cloned() else {
            return;
        };
        let Some(ticket) = self.slot.request(query_id) else {
            return;
        };
        let scope = ListingScope::Agent(cx.agent.clone());
        let (tx, sources) = (cx.tx.clone(), self.sources.clone());
        tokio::spawn(async move {
            let result = list_ordered(&refs, &scope, &query, None, &sources, &ticket.cancel).await;
            if matches!(&result, Err(e) if e.code == ErrorCode::Cancelled) {
                return;
            }
            tx.send(AppEvent::Candidates(CandidatesEvent {
                ticket: ticket.id,
                query_id,
                query,
                phase: CandidatesPhase::Checked(result),
            }));
        });
    }

    /// Shows an answer in the popup; returns what an Enter or Tab that waited for it did
    /// (and the inputs held meanwhile).
    pub fn on_event(&mut self, event: CandidatesEvent, cx: AnswerContext<'_>) -> Vec<Outcome> {
        let CandidatesEvent {
            ticket,
            query_id,
            query,
            phase,
        } = event;
        let done = match &phase {
            CandidatesPhase::Remembered(_) | CandidatesPhase::Sessions(_) => false,
            CandidatesPhase::Checked(_) | CandidatesPhase::Answered(_) => true,
        };
        let current = if done {
            self.slot.finish(ticket).0.is_some()
        } else {
            self.slot.is_current(ticket)
        };
        if !current {
            return Vec::new();
        }
        let AnswerContext {
            input,
            chips,
            chat,
            origin_of,
            refs,
            agent,
        } = cx;
        match phase {
            CandidatesPhase::Remembered(page) => {
                let page = results_page(&page, &query, &input.draft(), origin_of);
                input.set_page(query_id, page)
            }
            // The sessions show at once; an Enter waits for the files too (they may come
            // first).
            CandidatesPhase::Sessions(page) => {
                chips.remember(&page.page.rows);
                self.remember_first_page(query_id, &page, refs, &agent);
                let page = results_page(&page, &query, &input.draft(), origin_of);
                input.set_partial_page(query_id, page);
                Vec::new()
            }
            // The whole answer after its first part, else a fresher one after a head start.
            CandidatesPhase::Checked(Ok(page)) => {
                chips.remember(&page.page.rows);
                self.remember_first_page(query_id, &page, refs, &agent);
                let page = results_page(&page, &query, &input.draft(), origin_of);
                if unanswered(input, query_id) {
                    input.set_page(query_id, page)
                } else {
                    input.refresh_page(query_id, page);
                    Vec::new()
                }
            }
            CandidatesPhase::Checked(Err(e)) if unanswered(input, query_id) => {
                input.set_failed(query_id, format!("{}: {}", e.code.as_str(), e.message))
            }
            CandidatesPhase::Checked(Err(e)) => {
                chat.push_notice(
                    NoticeKind::Error,
                    format!(
                        "could not list sessions: {}: {}",
                        e.code.as_str(),
                        e.message
                    ),
                );
                Vec::new()
            }
            CandidatesPhase::Answered(Ok(page)) => {
                chips.remember(&page.page.rows);
                self.remember_first_page(query_id, &page, refs, &agent);
                let page = results_page(&page, &query, &input.draft(), origin_of);
                input.set_page(query_id, page)
            }
            CandidatesPhase::Answered(Err(e)) => {
                input.set_failed(query_id, format!("{}: {}", e.code.as_str(), e.message))
            }
        }
    }

    /// Cancels the running listing (the session is being left).
    pub fn cancel(&mut self) {
        self.slot.cancel();
    }

    /// Remembers the empty query's answer for the next run's first `@` (when it changed).
    fn remember_first_page(
        &mut self,
        query_id: u64,
        page: &ListedPage,
        refs: Option<&SessionReferences>,
        agent: &AgentRef,
    ) {
        if self.first_page.empty_query_id != Some(query_id) {
            return;
        }
        let first = !std::mem::replace(&mut self.first_page.listing_answered, true);
        let Some(path) = self.first_page.path.clone() else {
            return;
        };
        let slot = Arc::clone(&self.first_page.remembered);
        let upsert = {
            let slot = Arc::clone(&slot);
            move |page: RememberedPage| {
                let mut pages = slot.lock().unwrap_or_else(PoisonError::into_inner);
                pages
                    .get_or_insert_with(RememberedPages::default)
                    .upsert(page)
            }
        };
        if upsert(RememberedPage::of(page, agent.cwd.as_deref())) {
            let (path, slot) = (path.clone(), Arc::clone(&slot));
            tokio::task::spawn_blocking(move || remembered_page::save_latest(&path, &slot));
        }
        // Once a run, also the page for a directory not seen yet: the order an agent
        // without a directory gets.
        let (Some(refs), true, Some(_)) = (refs.cloned(), first, agent.cwd.as_ref()) else {
            return;
        };
        let generic = ListingScope::Agent(AgentRef {
            session_id: agent.session_id.clone(),
            cwd: None,
        });
        let sources = self.sources.clone();
        tokio::spawn(async move {
            let cancel = CancellationToken::new();
            let listed = list_ordered(&refs, &generic, "", None, &sources, &cancel).await;
            if let Ok(page) = listed
                && upsert(RememberedPage::of(&page, None))
            {
                let _ = tokio::task::spawn_blocking(move || {
                    remembered_page::save_latest(&path, &slot);
                })
                .await;
            }
        });
    }
}

/// Where the pickers' rows get what they show beside a session. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct RowSources {
    /// Pins and uses.
    pub usage: Usage,
}

/// Whether the popup's query `query_id` is open and not answered in full yet.
fn unanswered(input: &MentionInputState, query_id: u64) -> bool {
    input
        .results()
        .is_some_and(|r| r.query_id() == query_id && r.in_flight())
}

/// Pinned sessions looked up by id for one page when the listing's first rows miss them.
const MAX_PINNED_LOOKUPS: usize = 16;

/// `query` listed in `scope` as the pickers show it (docs/tui-app.md: rows): by how closely
/// the title or id is what was typed, each group by last activity, then reordered within
/// each tier and group by the usage book (pinned first, then frecency; a pinned
/// session matching the query is brought onto the page even when older than its rows), the
/// words of the query matched one by one, each row's details, pins and uses, and the git
/// branch each session was recorded on.
pub async fn list_ordered(
    refs: &SessionReferences,
    scope: &ListingScope,
    query: &str,
    limit: Option<usize>,
    sources: &RowSources,
    cancel: &CancellationToken,
) -> Result<ListedPage, ReferenceError> {
    let mut detailed = refs
        .list_page_ordered(scope, query, limit, ListingOrder::LastActivity, cancel)
        .await?;
    let book = sources.usage.book();
    let listed_at = now_ms();
    if detailed.page.total > 0 {
        let missing: Vec<String> = book
            .sessions
            .iter()
            .filter(|(id, u)| {
                u.pinned_at.is_some() && !detailed.page.rows.iter().any(|c| &c.session_id == *id)
            })
            .map(|(id, _)| id.clone())
            .take(MAX_PINNED_LOOKUPS)
            .collect();
        for id in missing {
            let Ok(found) = refs
                .list_page_ordered(scope, &id, Some(8), ListingOrder::LastActivity, cancel)
                .await
            else {
                continue;
            };
            let Some(row) = found.page.rows.into_iter().find(|c| c.session_id == id) else {
                continue;
            };
            if matches_words(&row, query) {
                if let Some(details) = found.details.get(&id) {
                    detailed.details.insert(id, *details);
                }
                detailed.page.rows.push(row);
            }
        }
    }
    let now = u64::try_from(listed_at).unwrap_or(0);
    rank_by_usage(&mut detailed.page.rows, &book, scope, query, now);
    let usage = RowUsage::of(&detailed.page, &book);
    let redact = refs.config().redact_secrets;
    let listed = ListedPage {
        usage,
        ..ListedPage::new(detailed, listed_at, redact)
    };
    if cancel.is_cancelled() {
        return Err(ReferenceError::cancelled());
    }
    Ok(listed)
}
