//! Pins and frecency (docs/references.md: frecency and pins): a small usage book of the
//! sessions you referenced or resumed, kept in the app's data dir (never in a store), and
//! the order it gives candidates within a cwd group: pinned first, then by frecency score,
//! then by last activity (the listing order, kept by a stable sort).
//!
//! The book is bounded: at most [`MAX_SESSIONS`] sessions, each with its last [`MAX_USES`]
//! uses; the least recently used unpinned sessions go first. Its file is written whole to a
//! temporary file beside it and renamed over it, so a reader never sees half a book; a file
//! that does not parse reads as an empty book (the usage is advisory).

use std::collections::HashMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::candidates::Candidate;

/// Most sessions remembered.
pub const MAX_SESSIONS: usize = 1000;
/// Most uses remembered per session.
pub const MAX_USES: usize = 10;
/// Largest usage file read (a bigger one is treated as damaged).
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

const HOUR_MS: u64 = 3_600_000;
const DAY_MS: u64 = 24 * HOUR_MS;

/// What one use was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UseKind {
    Referenced,
    Resumed,
}

/// One session's usage.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionUsage {
    /// When it was pinned (ms since the epoch), if it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinned_at: Option<u64>,
    /// The newest uses, oldest first (ms since the epoch).
    #[serde(default)]
    pub uses: Vec<u64>,
}

/// The usage book: per session id, its pin and uses.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageBook {
    #[serde(default)]
    pub version: u32,
    #[serde(default)]
    pub sessions: HashMap<String, SessionUsage>,
}

/// The weight of one use `age_ms` old: 100 within 4 hours, 70 within a day, 50 within a
/// week, 30 within 30 days, 10 after.
pub fn use_weight(age_ms: u64) -> u32 {
    match age_ms {
        a if a < 4 * HOUR_MS => 100,
        a if a < DAY_MS => 70,
        a if a < 7 * DAY_MS => 50,
        a if a < 30 * DAY_MS => 30,
        _ => 10,
    }
}

impl UsageBook {
    /// Read the book at `path`; a missing, oversized or damaged file is an empty book.
    pub fn load(path: &Path) -> UsageBook {
        // A regular file only, opened without following a link or blocking on a FIFO.
        let mut book: UsageBook = dsh_store::own_file::read_capped(path, MAX_FILE_BYTES)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default();
        book.bound();
        book
    }

    /// Write the book to `path`: a temporary file created new beside it (never through a
    /// link or file already there), then renamed over it.
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let dir = path.parent().unwrap_or_else(|| Path::new("."));
        std::fs::create_dir_all(dir)?;
        let bytes = serde_json::to_vec(&UsageBook {
            version: 1,
            sessions: self.sessions.clone(),
        })
        .map_err(std::io::Error::other)?;
        dsh_store::own_file::write_replacing(path, &bytes)
    }

    /// Note one use of `session_id` at `now_ms`.
    pub fn record(&mut self, session_id: &str, _kind: UseKind, now_ms: u64) {
        let usage = self.sessions.entry(session_id.to_owned()).or_default();
        usage.uses.push(now_ms);
        self.bound();
    }

    /// Pin or unpin `session_id`; returns whether it is pinned now.
    pub fn toggle_pin(&mut self, session_id: &str, now_ms: u64) -> bool {
        let usage = self.sessions.entry(session_id.to_owned()).or_default();
        usage.pinned_at = match usage.pinned_at {
            Some(_) => None,
            None => Some(now_ms),
        };
        let pinned = usage.pinned_at.is_some();
        if !pinned && usage.uses.is_empty() {
            self.sessions.remove(session_id);
        }
        self.bound();
        pinned
    }

    /// Whether `session_id` is pinned.
    pub fn is_pinned(&self, session_id: &str) -> bool {
        self.sessions
            .get(session_id)
            .is_some_and(|u| u.pinned_at.is_some())
    }

    /// The frecency score of `session_id` at `now_ms`: the sum of its uses' weights.
    pub fn score(&self, session_id: &str, now_ms: u64) -> u32 {
        self.sessions.get(session_id).map_or(0, |u| {
            u.uses
                .iter()
                .map(|&t| use_weight(now_ms.saturating_sub(t)))
                .sum()
        })
    }

    /// Keep the newest [`MAX_USES`] uses per session and at most [`MAX_SESSIONS`]
    /// sessions (pinned ones first, then the most recently used).
    fn bound(&mut self) {
        for usage in self.sessions.values_mut() {
            usage.uses.sort_unstable();
            let extra = usage.uses.len().saturating_sub(MAX_USES);
            usage.uses.drain(..extra);
        }
        if self.sessions.len() <= MAX_SESSIONS {
            return;
        }
        let mut order: Vec<(bool, u64, String)> = self
            .sessions
            .iter()
            .map(|(id, u)| {
                let last = u.uses.last().copied().or(u.pinned_at).unwrap_or(0);
                (u.pinned_at.is_some(), last, id.clone())
            })
            .collect();
        order.sort_unstable_by(|a, b| b.cmp(a));
        for (_, _, id) in order.into_iter().skip(MAX_SESSIONS) {
            self.sessions.remove(&id);
        }
    }

    /// Reorder `candidates` (already grouped by cwd — same cwd as `agent_cwd`, none, other
    /// — and in last-activity order within a group): within each group pinned sessions
    /// first (newest pin first), then by score, then as they were.
    pub fn order(&self, candidates: &mut [Candidate], agent_cwd: Option<&str>, now_ms: u64) {
        let group = |c: &Candidate| match (c.cwd.as_deref(), agent_cwd) {
            (Some(a), Some(b)) if a == b => 0u8,
            (None, _) => 1,
            _ => 2,
        };
        candidates.sort_by_cached_key(|c| {
            let usage = self.sessions.get(&c.session_id);
            let pin = usage.and_then(|u| u.pinned_at);
            (
                group(c),
                pin.is_none(),
                std::cmp::Reverse(pin.unwrap_or(0)),
                std::cmp::Reverse(self.score(&c.session_id, now_ms)),
            )
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(id: &str, cwd: Option<&str>) -> Candidate {
        Candidate {
            session_id: id.into(),
            label: id.into(),
            cwd: cwd.map(str::to_owned),
            created_at: 0,
        }
    }

    const NOW: u64 = 100 * DAY_MS;

    #[test]
    fn weights_by_age() {
        let cases = [
            (0, 100),
            (4 * HOUR_MS - 1, 100),
            (4 * HOUR_MS, 70),
            (DAY_MS, 50),
            (7 * DAY_MS, 30),
            (30 * DAY_MS, 10),
        ];
        for (age, w) in cases {
            assert_eq!(use_weight(age), w, "{age}");
        }
    }

    #[test]
    fn pins_then_frecency_then_last_activity_within_each_group() {
        let mut book = UsageBook::default();
        // b: used twice a week ago (2 × 30 = 60); c: once an hour ago (100); e: pinned.
        book.record("b", UseKind::Referenced, NOW - 8 * DAY_MS);
        book.record("b", UseKind::Resumed, NOW - 9 * DAY_MS);
        book.record("c", UseKind::Referenced, NOW - HOUR_MS);
        assert!(book.toggle_pin("e", NOW - DAY_MS));
        book.record("x", UseKind::Referenced, NOW);
        let mut list = vec![
            cand("a", Some("/w")),
            cand("b", Some("/w")),
            cand("c", Some("/w")),
            cand("e", Some("/w")),
            cand("n1", None),
            cand("x", None),
            cand("o1", Some("/other")),
            cand("o2", Some("/other")),
        ];
        book.order(&mut list, Some("/w"), NOW);
        let ids: Vec<&str> = list.iter().map(|c| c.session_id.as_str()).collect();
        assert_eq!(ids, ["e", "c", "b", "a", "x", "n1", "o1", "o2"]);
        assert!(!book.toggle_pin("e", NOW));
        assert!(!book.is_pinned("e") && !book.sessions.contains_key("e"));
    }

    #[test]
    fn the_book_is_bounded_and_survives_a_damaged_file() {
        let mut book = UsageBook::default();
        for i in 0..(MAX_SESSIONS as u64 + 50) {
            book.record(&format!("s{i}"), UseKind::Referenced, i);
        }
        book.toggle_pin("s0", 0);
        for t in 0..25 {
            book.record("s1", UseKind::Referenced, 10_000 + t);
        }
        assert_eq!(book.sessions.len(), MAX_SESSIONS);
        assert!(book.is_pinned("s0"), "a pinned session stays");
        assert_eq!(book.sessions["s1"].uses.len(), MAX_USES);
        assert!(
            !book.sessions.contains_key("s2"),
            "the least recently used goes"
        );

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("usage.json");
        book.save(&path).unwrap();
        assert_eq!(UsageBook::load(&path).sessions, book.sessions);
        std::fs::write(&path, b"{not json").unwrap();
        assert_eq!(UsageBook::load(&path), UsageBook::default());
        assert_eq!(
            UsageBook::load(&dir.path().join("missing")),
            UsageBook::default()
        );
    }
}
