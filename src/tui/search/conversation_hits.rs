//! The "in conversations" section of both pickers (docs/tui-app.md): sessions whose
//! conversation holds the query, from the full-text index, searched off the UI thread with
//! one cancellable search per picker; the section's title carries the index's progress
//! while it is still being built.

use std::collections::HashSet;
use std::sync::Arc;

use dsh_foreign::Origin;
use dsh_reference::{Candidate, parse_text};
use dsh_search::{Cancel, ErrorCode, Progress, SearchHit, SessionIndex};
use ratatui_mention::{ItemSnippet, MentionItem, Section};

use crate::tui::chrome::status_line::grouped_count;
use crate::tui::composer::draft_limits::DraftLimits;
use crate::tui::composer::session_items::{DisplayZone, session_item};
use crate::tui::event::{AppEvent, AppEventSender};
use crate::tui::request_slot::{Policy, RequestSlot};

/// The section's title.
pub const CONVERSATIONS_TITLE: &str = "in conversations";
/// Sessions one search returns at most.
pub const HITS_LIMIT: usize = 20;

/// Which picker a search answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HitsTarget {
    /// The `@` popup (the open session is left out: it cannot reference itself).
    Popup,
    /// The `/resume` picker.
    Picker,
}

/// One session found in conversations: its row and the line that matched.
#[derive(Debug, Clone, PartialEq)]
pub struct ConversationHit {
    pub candidate: Candidate,
    pub snippet: Option<ItemSnippet>,
    /// The tool the session comes from: a foreign hit carries its badge like a listed row.
    pub origin: Origin,
    /// The seq of the message that matched in its session, for an excerpt mention of that
    /// exchange (none when the hit came without a matching message).
    pub seq: Option<u64>,
}

/// The answer to one search.
#[derive(Debug, Clone, PartialEq)]
pub enum HitsAnswer {
    /// The best [`HITS_LIMIT`] hits; `more` when other sessions match too.
    Found {
        hits: Vec<ConversationHit>,
        more: bool,
    },
    /// The query is not one the index can search (an unbalanced quote while typing): no
    /// section.
    Unsearchable,
    Failed(String),
}

/// The section title: `in conversations`, with `· index building 3 400 / 10 000` while an
/// update runs, `· index opening…` before the index is open.
pub fn section_title(opened: bool, progress: Option<Progress>) -> String {
    match (opened, progress) {
        (false, _) => format!("{CONVERSATIONS_TITLE} · index opening…"),
        (true, Some(p)) => format!(
            "{CONVERSATIONS_TITLE} · index building {} / {}",
            grouped_count(p.done),
            grouped_count(p.total)
        ),
        (true, None) => CONVERSATIONS_TITLE.to_string(),
    }
}

/// The section title with hits shown: `title`, and when other sessions match too, that only
/// the best are shown (a longer query narrows them).
pub fn hits_title(title: &str, more: bool) -> String {
    if more {
        format!("{title} · best {HITS_LIMIT}, type more to narrow")
    } else {
        title.to_owned()
    }
}

/// Who wrote a hit's matching message (`user`, `assistant`): the lead of its snippet.
pub fn snippet_role(snippet: &ItemSnippet) -> &str {
    snippet.lead.strip_suffix(": ").unwrap_or(&snippet.lead)
}

/// `hits` as rows, without the session `exclude` (the one open, for the `@` popup).
pub fn to_rows(hits: Vec<SearchHit>, exclude: Option<&str>) -> Vec<ConversationHit> {
    hits.into_iter()
        .filter(|h| exclude != Some(h.session_id.as_str()))
        .map(|h| {
            let first = h.snippets.into_iter().next();
            // Any tool's session: its excerpt URI carries its (namespaced) id.
            let seq = first.as_ref().map(|s| s.seq);
            let snippet = first.map(|s| ItemSnippet {
                lead: format!("{}: ", s.role.as_str()),
                text: s.text,
                highlights: s.highlights,
            });
            ConversationHit {
                candidate: Candidate {
                    session_id: h.session_id,
                    label: h.label,
                    cwd: h.cwd,
                    created_at: h.created_at,
                },
                snippet,
                origin: h.origin,
                seq,
            }
        })
        .collect()
}

/// `hits` as `@` popup rows: the canonical mention of each session (its label redacted when
/// `redact_labels`), its matching line in place of the detail line, and a `✓` on sessions
/// `draft` already mentions.
pub fn popup_rows(
    hits: &[ConversationHit],
    draft: &str,
    zone: DisplayZone,
    redact_labels: bool,
) -> Vec<MentionItem> {
    let mentioned: HashSet<String> = parse_text(draft)
        .map(|p| p.references.into_iter().map(|r| r.session_id).collect())
        .unwrap_or_default();
    hits.iter()
        .map(|h| {
            let item = session_item(&h.candidate, &h.origin, zone, redact_labels)
                .with_mark(mentioned.contains(&h.candidate.session_id));
            match &h.snippet {
                Some(snippet) => item.with_snippet(snippet.clone()),
                None => item,
            }
        })
        .collect()
}

/// Why Alt+E inserts no excerpt of a hit without a matching message.
pub const NO_EXCERPT: &str = "no matching message to excerpt";

/// The `@` popup's hit rows (`section`, made from `hits` in order) with what Alt+E does on
/// each — `· Alt+E excerpt`, or why it cannot — and blocked over the draft's `limits`.
pub fn with_popup_keys(
    section: Section,
    hits: &[ConversationHit],
    limits: &DraftLimits,
) -> Section {
    let rows = section
        .rows
        .into_iter()
        .zip(hits)
        .map(
            |(row, hit)| match (hit.seq, limits.session_blocked(&hit.candidate.session_id)) {
                (_, Some(reason)) => row.with_blocked(reason),
                (Some(_), None) => row.with_note("· Alt+E excerpt"),
                (None, None) => row.with_note(format!("· Alt+E: {NO_EXCERPT}")),
            },
        )
        .collect();
    Section { rows, ..section }
}

/// One search to run: which picker and query it answers, and what to leave out.
#[derive(Debug, Clone)]
pub struct HitsQuery {
    pub target: HitsTarget,
    pub query_id: u64,
    pub query: String,
    pub exclude: Option<String>,
}

/// What a conversation search answered.
#[derive(Debug)]
pub enum HitsEvent {
    /// Sessions whose conversation holds the query `query_id` of `target`, for search
    /// `ticket` (a superseded search's answer is dropped).
    Found {
        target: HitsTarget,
        ticket: u64,
        query_id: u64,
        answer: HitsAnswer,
    },
}

/// The conversation searches of both pickers, one request slot each: a newer query cancels
/// the older search.
#[derive(Debug)]
pub struct ConversationHits {
    /// The hits on show in the `@` popup (Alt+E inserts an excerpt of the selected one).
    pub popup_shown: Vec<ConversationHit>,
    popup: RequestSlot<u64, Cancel>,
    picker: RequestSlot<u64, Cancel>,
    /// A picker asked for hits before the index was open: search once it is.
    awaiting_index: bool,
}

impl Default for ConversationHits {
    fn default() -> Self {
        ConversationHits {
            popup_shown: Vec::new(),
            popup: RequestSlot::new(Policy::Replace),
            picker: RequestSlot::new(Policy::Replace),
            awaiting_index: false,
        }
    }
}

/// A current search's answer, as its picker's section shows it.
#[derive(Debug, Clone)]
pub struct FoundHits {
    pub target: HitsTarget,
    pub query_id: u64,
    pub title: String,
    pub hits: Vec<ConversationHit>,
}

/// What to show in a picker's hits section at once (no search needed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShowNow {
    pub title: String,
}

impl ConversationHits {
    fn slot(&mut self, target: HitsTarget) -> &mut RequestSlot<u64, Cancel> {
        match target {
            HitsTarget::Popup => &mut self.popup,
            HitsTarget::Picker => &mut self.picker,
        }
    }

    /// Searches `index` for `q` off the UI thread, cancelling `q.target`'s previous search.
    /// Without an index there is no section (`None`); an empty query removes it and an
    /// index not open yet says so (`Some` title to show now, with no rows).
    pub fn search(
        &mut self,
        index: Option<Option<Arc<SessionIndex>>>,
        q: HitsQuery,
        tx: &AppEventSender,
    ) -> Option<ShowNow> {
        self.slot(q.target).cancel();
        // No full-text search configured: no section at all.
        let index = index?;
        // Untrimmed: a trailing space ends the last word (no prefix match).
        let (Some(index), false) = (index, q.query.trim().is_empty()) else {
            let title = if q.query.trim().is_empty() {
                String::new()
            } else {
                self.awaiting_index = true;
                section_title(false, None)
            };
            return Some(ShowNow { title });
        };
        if let Some(ticket) = self.slot(q.target).request(q.query_id) {
            spawn_search(index, ticket.id, ticket.cancel, q, tx.clone());
        }
        None
    }

    /// Whether the answer of search `ticket` of `target` is its newest search's.
    pub fn accept(&mut self, target: HitsTarget, ticket: u64) -> bool {
        self.slot(target).finish(ticket).0.is_some()
    }

    /// A search answered: its section (titled by how far the index is, `progress` while
    /// an update runs), or `None` when a newer search superseded it.
    pub fn on_event(&mut self, event: HitsEvent, progress: Option<Progress>) -> Option<FoundHits> {
        let HitsEvent::Found {
            target,
            ticket,
            query_id,
            answer,
        } = event;
        if !self.accept(target, ticket) {
            return None;
        }
        let building = section_title(true, progress);
        let (title, hits) = section_for(answer, &building, progress.is_some());
        Some(FoundHits {
            target,
            query_id,
            title,
            hits,
        })
    }

    /// Cancels `target`'s running search (its picker closed).
    pub fn cancel(&mut self, target: HitsTarget) {
        self.slot(target).cancel();
    }

    /// The index opened since a search asked for it: whether the pickers should search
    /// again (once).
    pub fn take_awaiting_index(&mut self) -> bool {
        std::mem::take(&mut self.awaiting_index)
    }

    /// The ticket of `target`'s running search (tests answer it).
    pub fn running_ticket(&self, target: HitsTarget) -> Option<u64> {
        match target {
            HitsTarget::Popup => self.popup.running_ticket(),
            HitsTarget::Picker => self.picker.running_ticket(),
        }
    }

    /// The cancel handle of `target`'s running search (tests watch it).
    pub fn running(&self, target: HitsTarget) -> Option<&Cancel> {
        match target {
            HitsTarget::Popup => self.popup.running_cancel(),
            HitsTarget::Picker => self.picker.running_cancel(),
        }
    }
}

/// The section to show for `answer`: its title and rows (none when it should go), given
/// the index's title while it builds (`building`).
pub fn section_for(
    answer: HitsAnswer,
    building: &str,
    indexing: bool,
) -> (String, Vec<ConversationHit>) {
    match answer {
        // Nothing found: the section shows only while the index is still building.
        HitsAnswer::Found { hits, .. } if hits.is_empty() && !indexing => (String::new(), hits),
        HitsAnswer::Found { hits, more } => (hits_title(building, more), hits),
        HitsAnswer::Unsearchable => (String::new(), Vec::new()),
        HitsAnswer::Failed(message) => (
            format!(
                "{CONVERSATIONS_TITLE} · search failed: {}",
                term_text::visible_controls_line(&message)
            ),
            Vec::new(),
        ),
    }
}

/// `hits` as a picker's offered section under `title`.
pub fn offered(
    title: &str,
    hits: &[ConversationHit],
    draft: &str,
    zone: DisplayZone,
    redact_labels: bool,
) -> Section {
    Section {
        title: title.to_owned(),
        rows: popup_rows(hits, draft, zone, redact_labels),
    }
}

/// Searches `index` for `q` on a blocking thread and sends the answer as
/// [`HitsEvent::Found`]; a cancelled search sends nothing.
fn spawn_search(
    index: Arc<SessionIndex>,
    ticket: u64,
    cancel: Cancel,
    q: HitsQuery,
    tx: AppEventSender,
) {
    tokio::task::spawn_blocking(move || {
        if cancel.is_cancelled() {
            return;
        }
        let answer = match index.search_cancellable(&q.query, HITS_LIMIT + 1, &cancel) {
            Ok(hits) => {
                let mut rows = to_rows(hits, q.exclude.as_deref());
                let more = rows.len() > HITS_LIMIT;
                rows.truncate(HITS_LIMIT);
                HitsAnswer::Found { hits: rows, more }
            }
            Err(e) if e.code() == ErrorCode::Cancelled => return,
            Err(e) if e.code() == ErrorCode::InvalidQuery => HitsAnswer::Unsearchable,
            Err(e) => HitsAnswer::Failed(format!("{}: {e}", e.code().as_str())),
        };
        if cancel.is_cancelled() {
            return;
        }
        tx.send(AppEvent::Hits(HitsEvent::Found {
            target: q.target,
            ticket,
            query_id: q.query_id,
            answer,
        }));
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn hit(id: &str, origin: Origin) -> SearchHit {
        SearchHit {
            session_id: id.into(),
            label: format!("{id} label"),
            title: None,
            cwd: None,
            created_at: 0,
            score: 1.0,
            snippets: Vec::new(),
            origin,
        }
    }

    #[test]
    fn hits_keep_their_sources_badge_and_leave_out_the_open_session() {
        let hits = vec![
            hit("open", Origin::Dsh),
            hit("alpha", Origin::Dsh),
            hit("claude-code:c1", Origin::ClaudeCode),
            hit("codex:x1", Origin::Codex),
        ];
        let rows = to_rows(hits, Some("open"));
        let zone = DisplayZone::Fixed(chrono::FixedOffset::east_opt(0).unwrap());
        let items = popup_rows(&rows, "", zone, true);
        let kinds: Vec<(&str, &str)> = rows
            .iter()
            .zip(&items)
            .map(|(r, i)| (r.candidate.session_id.as_str(), i.kind()))
            .collect();
        assert_eq!(
            kinds,
            [
                ("alpha", ""),
                ("claude-code:c1", "[claude]"),
                ("codex:x1", "[codex]")
            ]
        );
    }

    #[test]
    fn a_title_says_when_only_the_best_hits_are_shown() {
        assert_eq!(hits_title("in conversations", false), "in conversations");
        assert_eq!(
            hits_title("in conversations", true),
            format!("in conversations · best {HITS_LIMIT}, type more to narrow")
        );
    }

    #[test]
    fn titles_say_how_far_the_index_is() {
        assert_eq!(section_title(true, None), "in conversations");
        assert_eq!(
            section_title(
                true,
                Some(Progress {
                    done: 3400,
                    total: 10_000
                })
            ),
            "in conversations · index building 3 400 / 10 000"
        );
        assert_eq!(
            section_title(false, None),
            "in conversations · index opening…"
        );
    }
}
