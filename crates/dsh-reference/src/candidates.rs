//! Candidate selection for the `@` popup (docs/references.md: candidates): filter other sessions by a
//! case-insensitive substring of id, cwd or latest title, then group by cwd and cut to a limit.

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
    mut read_title: impl FnMut(&str) -> Result<Option<T>, QueryError>,
    cancelled: impl Fn() -> bool,
) -> Vec<Candidate> {
    let needle = query.to_lowercase();
    let mut groups: [Vec<Matched<'_, T>>; 3] = Default::default();
    for header in sessions {
        if cancelled() {
            return Vec::new();
        }
        if header.id == agent_id {
            continue;
        }
        let g = group(agent_cwd, header.cwd.as_deref());
        // Sessions in this group or a better one already fill the limit: skip the work.
        if groups.iter().take(g + 1).map(Vec::len).sum::<usize>() >= limit {
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
        if let Some(bucket) = groups.get_mut(g) {
            bucket.push((header, title));
        }
    }
    let mut out = Vec::with_capacity(limit.min(64));
    for (header, title) in groups.into_iter().flatten().take(limit) {
        let title = match title {
            Some(t) => t,
            None => match read_title(&header.id) {
                Ok(t) => t,
                Err(QueryError::NotFound { .. }) => continue,
                // A damaged log still shows up, labelled by its id.
                Err(_) => None,
            },
        };
        out.push(Candidate {
            session_id: header.id.clone(),
            label: title.map_or_else(|| header.id.clone(), |t| t.as_ref().to_owned()),
            cwd: header.cwd.clone(),
            created_at: header.created_at,
        });
    }
    out
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
