//! The "in conversations" section of both pickers (docs/tui-app.md): sessions whose
//! conversation holds the query, from the full-text index, searched off the UI thread with
//! one cancellable search per picker; the section's title carries the index's progress
//! while it is still being built.

use std::sync::Arc;

use std::collections::HashSet;

use dsh_foreign::Origin;
use dsh_reference::{Candidate, parse_text};
use dsh_search::{Cancel, ErrorCode, Progress, SearchHit, SessionIndex};
use ratatui_mention::ItemSnippet;
use ratatui_mention::MentionItem;

use super::app_event::{AppEvent, AppEventSender};
use super::session_items::{DisplayZone, session_item};
use super::status_line::grouped_count;

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

/// `hits` as rows, without the session `exclude` (the one open, for the `@` popup).
pub fn to_rows(hits: Vec<SearchHit>, exclude: Option<&str>) -> Vec<ConversationHit> {
    hits.into_iter()
        .filter(|h| exclude != Some(h.session_id.as_str()))
        .map(|h| {
            let snippet = h.snippets.into_iter().next().map(|s| ItemSnippet {
                role: s.role.as_str().to_string(),
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
            }
        })
        .collect()
}

/// `hits` as `@` popup rows: the canonical mention of each session, its matching line in
/// place of the detail line, and a `✓` on sessions `draft` already mentions.
pub fn popup_rows(hits: &[ConversationHit], draft: &str, zone: DisplayZone) -> Vec<MentionItem> {
    let mentioned: HashSet<String> = parse_text(draft)
        .map(|p| p.references.into_iter().map(|r| r.session_id).collect())
        .unwrap_or_default();
    hits.iter()
        .map(|h| {
            let item = session_item(&h.candidate, &h.origin, zone)
                .with_mark(mentioned.contains(&h.candidate.session_id));
            match &h.snippet {
                Some(snippet) => item.with_snippet(snippet.clone()),
                None => item,
            }
        })
        .collect()
}

/// One search to run: which picker and query it answers, and what to leave out.
#[derive(Debug, Clone)]
pub struct HitsQuery {
    pub target: HitsTarget,
    pub query_id: u64,
    pub query: String,
    pub exclude: Option<String>,
}

/// Searches `index` for `q` on a blocking thread and sends the answer as
/// [`AppEvent::ConversationHits`]; a cancelled search sends nothing. Returns its cancel
/// token.
pub fn spawn_search(index: Arc<SessionIndex>, q: HitsQuery, tx: AppEventSender) -> Cancel {
    let cancel = Cancel::new();
    let token = cancel.clone();
    tokio::task::spawn_blocking(move || {
        if token.is_cancelled() {
            return;
        }
        let answer = match index.search_cancellable(&q.query, HITS_LIMIT + 1, &token) {
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
        if token.is_cancelled() {
            return;
        }
        tx.send(AppEvent::ConversationHits {
            target: q.target,
            query_id: q.query_id,
            answer,
        });
    });
    cancel
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
        let items = popup_rows(&rows, "", zone);
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
