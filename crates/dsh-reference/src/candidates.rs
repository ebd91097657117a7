//! Candidate selection for the `@` popup (docs/references.md: candidates): filter other sessions by a
//! case-insensitive substring of id, cwd or latest title, then group by cwd and cut to a limit.

use super::closest::FuzzyQuery;
use dsh_store::{QueryError, SessionHeader};

/// A session that may be referenced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub session_id: String,
    /// Latest title, or the id when the session has none.
    pub label: String,
    pub cwd: Option<String>,
    /// Unix milliseconds.
    pub created_at: i64,
}

/// Rank group of a session relative to the agent's cwd: same cwd, then no cwd, then others.
fn group(agent_cwd: Option<&str>, cwd: Option<&str>) -> usize {
    match cwd {
        Some(c) if agent_cwd == Some(c) => 0,
        None => 1,
        Some(_) => 2,
    }
}

/// The only non-ASCII chars whose lowercase form contains ASCII (KELVIN SIGN → `k`,
/// CAPITAL I WITH DOT ABOVE → `i̇`); a unit test checks every char.
const LOWERCASE_TO_ASCII: [char; 2] = ['\u{130}', '\u{212A}'];

/// Case-insensitive substring test; `needle` is already lowercase.
fn contains_folded(haystack: &str, needle: &str) -> bool {
    // An ASCII needle can only match ASCII text of the lowercased haystack, which (but for
    // the two chars above) comes from its ASCII chars unchanged in order: compare bytes.
    if needle.is_ascii() && (haystack.is_ascii() || !haystack.contains(LOWERCASE_TO_ASCII)) {
        let (h, n) = (haystack.as_bytes(), needle.as_bytes());
        let Some((&first, rest)) = n.split_first() else {
            return true;
        };
        // Only positions whose first byte matches are compared further.
        return h.windows(n.len()).any(|w| {
            w.split_first().is_some_and(|(&a, tail)| {
                a.to_ascii_lowercase() == first
                    && tail
                        .iter()
                        .zip(rest)
                        .all(|(a, b)| a.to_ascii_lowercase() == *b)
            })
        });
    }
    haystack.to_lowercase().contains(needle)
}

/// A matching session and its title once read (`None` = not read yet).
type Matched<'a, T> = (&'a SessionHeader, Option<Option<T>>);

/// Which sessions a listing covers and how it ranks them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scope<'a> {
    /// A session left out (the agent's own, for the `@` popup).
    pub exclude: Option<&'a str>,
    /// `Some(cwd)`: rank same cwd, then no cwd, then others (the `@` popup, `/resume`);
    /// `None`: keep `list_sessions` order (newest first).
    pub rank_by_cwd: Option<Option<&'a str>>,
}

impl<'a> Scope<'a> {
    /// The `@` popup's scope for the agent session `agent_id` in `agent_cwd`.
    pub fn agent(agent_id: &'a str, agent_cwd: Option<&'a str>) -> Self {
        Scope {
            exclude: Some(agent_id),
            rank_by_cwd: Some(agent_cwd),
        }
    }

    /// Every session, none left out, ranked around `cwd` as the `@` popup ranks (the
    /// `/resume` picker).
    pub fn project(cwd: Option<&'a str>) -> Self {
        Scope {
            exclude: None,
            rank_by_cwd: Some(cwd),
        }
    }

    /// Every session, newest first.
    pub fn all() -> Self {
        Scope {
            exclude: None,
            rank_by_cwd: None,
        }
    }

    /// The rank group of a session with `cwd`: 0 is shown first.
    pub(crate) fn rank(&self, cwd: Option<&str>) -> usize {
        match self.rank_by_cwd {
            Some(agent_cwd) => group(agent_cwd, cwd),
            None => 0,
        }
    }
}

/// Candidates of one listing: the first `limit` exact matches and how many there are.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    pub rows: Vec<Candidate>,
    /// Every exact match, not only the rows returned.
    pub total: usize,
}

/// Select up to `limit` candidates from `sessions` (in `list_sessions` order) for the agent
/// session `agent_id` with cwd `agent_cwd`. `read_title` is called lazily, only for sessions
/// whose match or label needs it; a session it reports missing is skipped. `cancelled` is
/// polled between sessions so abandoned work stops early.
pub fn select_candidates<T: AsRef<str>>(
    sessions: &[SessionHeader],
    agent_id: &str,
    agent_cwd: Option<&str>,
    query: &str,
    limit: usize,
    read_title: impl FnMut(&str) -> Result<Option<T>, QueryError>,
    cancelled: impl Fn() -> bool,
) -> Vec<Candidate> {
    let scope = Scope::agent(agent_id, agent_cwd);
    select(sessions, scope, query, limit, false, read_title, cancelled).rows
}

/// Like [`select_candidates`] over any [`Scope`], also counting every match (which reads
/// the title of every session the id and cwd do not match already).
pub fn select_counted<T: AsRef<str>>(
    sessions: &[SessionHeader],
    scope: Scope<'_>,
    query: &str,
    limit: usize,
    read_title: impl FnMut(&str) -> Result<Option<T>, QueryError>,
    cancelled: impl Fn() -> bool,
) -> Selection {
    select(sessions, scope, query, limit, true, read_title, cancelled)
}

fn select<T: AsRef<str>>(
    sessions: &[SessionHeader],
    scope: Scope<'_>,
    query: &str,
    limit: usize,
    count_all: bool,
    mut read_title: impl FnMut(&str) -> Result<Option<T>, QueryError>,
    cancelled: impl Fn() -> bool,
) -> Selection {
    let needle = query.to_lowercase();
    let mut groups: [Vec<Matched<'_, T>>; 3] = Default::default();
    let mut total: usize = 0;
    for header in sessions {
        if cancelled() {
            return Selection::default();
        }
        if scope.exclude == Some(header.id.as_str()) {
            continue;
        }
        let g = scope.rank(header.cwd.as_deref());
        // Sessions in this group or a better one already fill the limit: only counting
        // is left to do, or nothing at all.
        let full = groups.iter().take(g + 1).map(Vec::len).sum::<usize>() >= limit;
        if full && !count_all {
            // Once the best group is full, no later session can be shown.
            if groups[0].len() >= limit {
                break;
            }
            continue;
        }
        let cheap_match = needle.is_empty()
            || contains_folded(&header.id, &needle)
            || header
                .cwd
                .as_deref()
                .is_some_and(|c| contains_folded(c, &needle));
        let title = if cheap_match {
            None
        } else {
            match read_title(&header.id) {
                Ok(Some(t)) if contains_folded(t.as_ref(), &needle) => Some(Some(t)),
                Ok(_) | Err(_) => continue,
            }
        };
        total += 1;
        if full {
            continue;
        }
        if let Some(bucket) = groups.get_mut(g) {
            bucket.push((header, title));
        }
    }
    let mut rows = Vec::with_capacity(limit.min(64));
    for (header, title) in groups.into_iter().flatten() {
        if rows.len() == limit {
            break;
        }
        let title = match title {
            Some(t) => t,
            None => match read_title(&header.id) {
                Ok(t) => t,
                Err(QueryError::NotFound { .. }) => {
                    total = total.saturating_sub(1);
                    continue;
                }
                // A damaged log still shows up, labelled by its id.
                Err(_) => None,
            },
        };
        rows.push(Candidate {
            session_id: header.id.clone(),
            label: title.map_or_else(|| header.id.clone(), |t| t.as_ref().to_owned()),
            cwd: header.cwd.clone(),
            created_at: header.created_at,
        });
    }
    Selection { rows, total }
}

/// A session the exact filter missed but the fuzzy score offers, best first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClosestMatch {
    pub candidate: Candidate,
    pub score: i64,
}

/// Up to `limit` sessions of `scope` ranked by [`FuzzyQuery`] score over label, id and the
/// cwd's last segment (ties keep `list_sessions` order). Reads every title; a session reported missing is
/// skipped, a damaged one is scored by its id.
pub fn select_closest<T: AsRef<str>>(
    sessions: &[SessionHeader],
    scope: Scope<'_>,
    query: &str,
    limit: usize,
    mut read_title: impl FnMut(&str) -> Result<Option<T>, QueryError>,
    cancelled: impl Fn() -> bool,
) -> Vec<ClosestMatch> {
    closest_by(
        sessions,
        scope,
        query,
        limit,
        |_, id| read_title(id),
        cancelled,
    )
}

/// The last segment of `cwd` (`billing` of `/home/ana/billing/`).
fn cwd_name(cwd: &str) -> &str {
    let trimmed = cwd.trim_end_matches('/');
    trimmed.rsplit('/').next().unwrap_or(trimmed)
}

/// [`select_closest`] with the title looked up by listing position and id.
pub(crate) fn closest_by<T: AsRef<str>>(
    sessions: &[SessionHeader],
    scope: Scope<'_>,
    query: &str,
    limit: usize,
    mut read_title: impl FnMut(usize, &str) -> Result<Option<T>, QueryError>,
    cancelled: impl Fn() -> bool,
) -> Vec<ClosestMatch> {
    let fuzzy = FuzzyQuery::new(query);
    if fuzzy.is_empty() || limit == 0 {
        return Vec::new();
    }
    // (score, position) of the best so far, kept sorted best first.
    let mut best: Vec<(i64, usize, String)> = Vec::with_capacity(limit + 1);
    for (position, header) in sessions.iter().enumerate() {
        if cancelled() {
            return Vec::new();
        }
        if scope.exclude == Some(header.id.as_str()) {
            continue;
        }
        let title = match read_title(position, &header.id) {
            Ok(t) => t,
            Err(QueryError::NotFound { .. }) => continue,
            Err(_) => None,
        };
        let label = title.as_ref().map_or(header.id.as_str(), AsRef::as_ref);
        // The cwd by its own name only: a fuzzy match anywhere in a long path is noise.
        let cwd = header.cwd.as_deref().map_or("", cwd_name);
        let Some(points) = fuzzy.score(&[label, &header.id, cwd]) else {
            continue;
        };
        if best.len() == limit && best.last().is_some_and(|(s, _, _)| *s >= points) {
            continue;
        }
        let at = best.partition_point(|(s, _, _)| *s >= points);
        best.insert(at, (points, position, label.to_owned()));
        best.truncate(limit);
    }
    best.into_iter()
        .filter_map(|(score, position, label)| {
            let header = sessions.get(position)?;
            Some(ClosestMatch {
                candidate: Candidate {
                    session_id: header.id.clone(),
                    label,
                    cwd: header.cwd.clone(),
                    created_at: header.created_at,
                },
                score,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn h(id: &str, cwd: Option<&str>, created_at: i64) -> SessionHeader {
        SessionHeader::new(id, created_at, cwd.map(str::to_owned))
    }

    fn ids(c: &[Candidate]) -> Vec<&str> {
        c.iter().map(|c| c.session_id.as_str()).collect()
    }

    #[test]
    fn groups_filters_and_limits() {
        let sessions = vec![
            h("s6", Some("/other"), 6),
            h("s5", None, 5),
            h("me", Some("/repo"), 4),
            h("s3", Some("/repo"), 3),
            h("s2", Some("/Repo-X"), 2),
            h("s1", Some("/repo"), 1),
        ];
        let titles: HashMap<&str, &str> = [("s6", "Fix the Build"), ("s1", "build cache")].into();
        let read = |id: &str| Ok(titles.get(id).map(std::string::ToString::to_string));
        let all = select_candidates(&sessions, "me", Some("/repo"), "", 50, read, || false);
        assert_eq!(ids(&all), ["s3", "s1", "s5", "s6", "s2"]);
        assert_eq!(all[1].label, "build cache");
        assert_eq!(all[0].label, "s3");
        let build = select_candidates(&sessions, "me", Some("/repo"), "BUILD", 50, read, || false);
        assert_eq!(ids(&build), ["s1", "s6"]);
        let repo = select_candidates(&sessions, "me", Some("/repo"), "repo", 2, read, || false);
        assert_eq!(ids(&repo), ["s3", "s1"]);
        let none = select_candidates(&sessions, "me", Some("/repo"), "zzz", 50, read, || false);
        assert!(none.is_empty());
        let cancelled = select_candidates(&sessions, "me", None, "", 50, read, || true);
        assert!(cancelled.is_empty());
    }

    #[test]
    fn counted_selection_counts_past_the_limit() {
        let sessions: Vec<SessionHeader> = (0..30)
            .map(|i| {
                h(
                    &format!("s{i:02}"),
                    Some(if i % 3 == 0 { "/repo" } else { "/x" }),
                    100 - i,
                )
            })
            .collect();
        let titles: HashMap<String, String> = (0..30)
            .map(|i| {
                (
                    format!("s{i:02}"),
                    format!("topic {}", if i % 2 == 0 { "even" } else { "odd" }),
                )
            })
            .collect();
        let read = |id: &str| Ok(titles.get(id).cloned());
        let scope = Scope::agent("s00", Some("/repo"));
        let all = select_counted(&sessions, scope, "", 5, read, || false);
        assert_eq!(all.total, 29, "everyone but the agent");
        assert_eq!(
            ids(&all.rows),
            ["s03", "s06", "s09", "s12", "s15"],
            "same cwd first"
        );
        let even = select_counted(&sessions, scope, "EVEN", 3, read, || false);
        assert_eq!(even.total, 14);
        assert_eq!(ids(&even.rows), ["s06", "s12", "s18"]);
        let newest = select_counted(&sessions, Scope::all(), "odd", 2, read, || false);
        assert_eq!(newest.total, 15);
        assert_eq!(
            ids(&newest.rows),
            ["s01", "s03"],
            "list order, no cwd ranking"
        );
        let big = select_counted(&sessions, Scope::all(), "", 1000, read, || false);
        assert_eq!((big.total, big.rows.len()), (30, 30));
        let cancelled = select_counted(&sessions, Scope::all(), "", 5, read, || true);
        assert_eq!(cancelled, Selection::default());
        // The uncounted listing agrees on the rows.
        let rows = select_candidates(&sessions, "s00", Some("/repo"), "EVEN", 3, read, || false);
        assert_eq!(rows, even.rows);
    }

    #[test]
    fn a_session_gone_while_labelled_is_not_counted() {
        let sessions = vec![h("a", None, 2), h("gone", None, 1)];
        let read = |id: &str| -> Result<Option<String>, QueryError> {
            if id == "gone" {
                Err(QueryError::NotFound { id: id.into() })
            } else {
                Ok(None)
            }
        };
        let sel = select_counted(&sessions, Scope::all(), "", 10, read, || false);
        assert_eq!((ids(&sel.rows), sel.total), (vec!["a"], 1));
    }

    #[test]
    fn closest_matches_rank_by_fuzzy_score() {
        let sessions = vec![
            h("s2", Some("/home/ana/atlas"), 4),
            h("s1", Some("/home/ana/bus"), 3),
            h("me", Some("/home/ana/atlas"), 2),
            h("s3", None, 1),
        ];
        let titles: HashMap<&str, &str> = [
            ("s1", "Kafka vs Redis for the event bus"),
            ("s2", "sky of dark"),
            ("me", "Kafka"),
            ("s3", "Unrelated"),
        ]
        .into();
        let read = |id: &str| Ok(titles.get(id).map(std::string::ToString::to_string));
        let scope = Scope::agent("me", Some("/home/ana/atlas"));
        let exact = select_counted(&sessions, scope, "kfk", 10, read, || false);
        assert_eq!(exact.total, 0, "no substring match");
        let closest = select_closest(&sessions, scope, "kfk", 10, read, || false);
        let got: Vec<&str> = closest
            .iter()
            .map(|c| c.candidate.session_id.as_str())
            .collect();
        assert_eq!(
            got,
            ["s1", "s2"],
            "best first (not list order), the agent left out"
        );
        assert_eq!(
            closest[0].candidate.label,
            "Kafka vs Redis for the event bus"
        );
        assert!(closest[0].score > closest[1].score);
        let joined = select_closest(&sessions, scope, "kafka-redis", 10, read, || false);
        assert_eq!(joined.len(), 1);
        let by_cwd = select_closest(&sessions, scope, "atls", 10, read, || false);
        assert_eq!(
            by_cwd.first().map(|c| c.candidate.session_id.as_str()),
            Some("s2")
        );
        assert!(
            select_closest(&sessions, scope, "hmn", 10, read, || false).is_empty(),
            "letters over the cwd's path (home, ana) match nothing: only its name counts"
        );
        assert!(select_closest(&sessions, scope, "kfk", 1, read, || false).len() == 1);
        assert!(select_closest(&sessions, scope, "", 10, read, || false).is_empty());
        assert!(select_closest(&sessions, scope, "kfk", 10, read, || true).is_empty());
    }

    #[test]
    fn only_two_non_ascii_chars_lowercase_to_ascii() {
        let found: Vec<char> = (0x80..=0x0010_FFFF)
            .filter_map(char::from_u32)
            .filter(|c| c.to_lowercase().any(|l| l.is_ascii()))
            .collect();
        assert_eq!(found, LOWERCASE_TO_ASCII);
    }

    #[test]
    fn ascii_needles_in_unicode_text_match_like_lowercasing() {
        let hays = [
            "naïve Topic",
            "Über TOPIC x",
            "\u{212A}elvin",
            "İstanbul",
            "a\u{130}b",
            "漢字topic",
        ];
        for hay in hays {
            for needle in ["topic", "kelvin", "i", "ib", "c x", "字t", "ve t"] {
                assert_eq!(
                    contains_folded(hay, needle),
                    hay.to_lowercase().contains(needle),
                    "{hay:?} / {needle:?}"
                );
            }
        }
    }

    #[test]
    fn folding_is_unicode_aware() {
        assert!(contains_folded("Ünïcode Σession", "ünïcode σe"));
        assert!(contains_folded("ABC", "bc"));
        assert!(!contains_folded("ABC", "cb"));
        assert!(contains_folded("x", ""));
    }
}
