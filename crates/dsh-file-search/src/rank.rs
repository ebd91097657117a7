//! A path-aware fuzzy ranking of a [`FileIndex`](crate::FileIndex) for one query
//! (docs/references.md: file references), with the positions that matched.
//!
//! Scores come from `nucleo-matcher` configured for paths (a match right after `/` counts
//! as a word start). Ties go to directories, then shorter paths, then byte order. Paths
//! with a segment starting with `.` are offered only when the query asks for one (starts
//! with `.` or holds `/.`). A query ending in `/` lists that directory's own entries.
//! Narrowing: when a query extends the previous one, only the previous matches are scored.

use nucleo_matcher::pattern::{Atom, AtomKind, CaseMatching, Normalization};
use nucleo_matcher::{Config, Matcher, Utf32Str};

use crate::walk::{EntryKind, PathEntry};

/// One ranked path: its index in the entries, its score, and the byte offsets of the
/// characters that matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankedPath {
    pub index: usize,
    pub score: u32,
    pub positions: Vec<usize>,
}

/// The ranker: matcher state and the last query's matches, reused between keystrokes.
pub struct FileRanker {
    matcher: Matcher,
    chars: Vec<char>,
    indices: Vec<u32>,
    /// The last query and the indices of every entry it matched (for narrowing).
    last: Option<(String, Vec<usize>)>,
    /// How many entries the index had when `last` was computed.
    last_len: usize,
}

impl Default for FileRanker {
    fn default() -> Self {
        FileRanker {
            matcher: Matcher::new(Config::DEFAULT.match_paths()),
            chars: Vec::new(),
            indices: Vec::new(),
            last: None,
            last_len: 0,
        }
    }
}

impl std::fmt::Debug for FileRanker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileRanker").finish_non_exhaustive()
    }
}

/// Whether `query` asks for paths with a segment starting with `.`.
fn allows_dots(query: &str) -> bool {
    query.starts_with('.') || query.contains("/.")
}

/// Whether `entry` may be offered for a query (dot-paths only when `dots` says it asks).
fn visible(entry: &PathEntry, dots: bool) -> bool {
    dots || !entry.hidden
}

impl FileRanker {
    /// A ranker with no history.
    pub fn new() -> Self {
        Self::default()
    }

    /// Forget the last query (call when the index changes).
    pub fn reset(&mut self) {
        self.last = None;
    }

    /// The best `limit` entries for `query`, best first.
    pub fn rank(&mut self, entries: &[PathEntry], query: &str, limit: usize) -> Vec<RankedPath> {
        let query = query.replace('\\', "/");
        if query.is_empty() || query.ends_with('/') {
            self.last = None;
            return list_directory(entries, &query, limit);
        }
        let atom = Atom::new(
            &query,
            CaseMatching::Smart,
            Normalization::Smart,
            AtomKind::Fuzzy,
            false,
        );
        // Every match of a longer query is a match of its prefix (a case-sensitive match is
        // also a case-insensitive one), as long as the same paths are visible.
        let narrowed = match self.last.take() {
            Some((previous, matched))
                if self.last_len == entries.len()
                    && query.starts_with(previous.as_str())
                    && allows_dots(&previous) == allows_dots(&query) =>
            {
                Some(matched)
            }
            _ => None,
        };
        let candidates: Box<dyn Iterator<Item = usize>> = match narrowed {
            Some(list) => Box::new(list.into_iter()),
            None => Box::new(0..entries.len()),
        };
        let dots = allows_dots(&query);
        let mut scored: Vec<(u32, usize)> = Vec::new();
        for i in candidates {
            let Some(entry) = entries.get(i) else {
                continue;
            };
            if !visible(entry, dots) {
                continue;
            }
            let haystack = Utf32Str::new(&entry.path, &mut self.chars);
            if let Some(score) = atom.score(haystack, &mut self.matcher) {
                scored.push((u32::from(score), i));
            }
        }
        self.last = Some((query.clone(), scored.iter().map(|s| s.1).collect()));
        self.last_len = entries.len();
        let order = |a: &(u32, usize), b: &(u32, usize)| {
            let (ea, eb) = (entries.get(a.1), entries.get(b.1));
            b.0.cmp(&a.0)
                .then_with(|| ea.map(|e| e.kind).cmp(&eb.map(|e| e.kind)))
                .then_with(|| ea.map(|e| e.path.len()).cmp(&eb.map(|e| e.path.len())))
                .then_with(|| ea.map(|e| &e.path).cmp(&eb.map(|e| &e.path)))
        };
        if scored.len() > limit && limit > 0 {
            scored.select_nth_unstable_by(limit - 1, order);
            scored.truncate(limit);
        }
        scored.sort_unstable_by(order);
        scored.truncate(limit);
        scored
            .into_iter()
            .filter_map(|(score, index)| {
                let entry = entries.get(index)?;
                self.indices.clear();
                let haystack = Utf32Str::new(&entry.path, &mut self.chars);
                atom.indices(haystack, &mut self.matcher, &mut self.indices);
                Some(RankedPath {
                    index,
                    score,
                    positions: byte_offsets(&entry.path, &self.indices),
                })
            })
            .collect()
    }
}

/// The entries directly inside `directory` (`""` for the root; else ending in `/`):
/// directories first, then by name.
fn list_directory(entries: &[PathEntry], directory: &str, limit: usize) -> Vec<RankedPath> {
    let mut found: Vec<usize> = entries
        .iter()
        .enumerate()
        .filter(|(_, e)| {
            e.path
                .strip_prefix(directory)
                .is_some_and(|rest| !rest.is_empty() && !rest.contains('/'))
                && visible(e, allows_dots(directory))
        })
        .map(|(i, _)| i)
        .collect();
    found.sort_by(|&a, &b| {
        let (ea, eb) = (entries.get(a), entries.get(b));
        ea.map(|e| e.kind)
            .cmp(&eb.map(|e| e.kind))
            .then_with(|| ea.map(|e| &e.path).cmp(&eb.map(|e| &e.path)))
    });
    found.truncate(limit);
    found
        .into_iter()
        .map(|index| RankedPath {
            index,
            score: 0,
            positions: Vec::new(),
        })
        .collect()
}

/// Char indices (sorted, deduplicated) as byte offsets into `text`.
fn byte_offsets(text: &str, char_indices: &[u32]) -> Vec<usize> {
    let mut wanted: Vec<u32> = char_indices.to_vec();
    wanted.sort_unstable();
    wanted.dedup();
    let mut out = Vec::with_capacity(wanted.len());
    let mut next = wanted.iter().peekable();
    for (ci, (byte, _)) in text.char_indices().enumerate() {
        let Some(&&w) = next.peek() else {
            break;
        };
        if u32::try_from(ci).is_ok_and(|ci| ci == w) {
            out.push(byte);
            next.next();
        }
    }
    out
}

/// Whether the entry is a directory (completion stays open below it).
pub fn is_directory(entry: &PathEntry) -> bool {
    entry.kind == EntryKind::Directory
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(list: &[(&str, EntryKind)]) -> Vec<PathEntry> {
        list.iter()
            .map(|(p, k)| PathEntry::new((*p).into(), *k))
            .collect()
    }

    fn ranked<'a>(ranker: &mut FileRanker, e: &'a [PathEntry], q: &str) -> Vec<&'a str> {
        ranker
            .rank(e, q, 10)
            .into_iter()
            .map(|r| e[r.index].path.as_str())
            .collect()
    }

    #[test]
    fn path_aware_order_and_positions() {
        use EntryKind::{Directory as D, File as F};
        let e = entries(&[
            ("src", D),
            ("src/main.rs", F),
            ("src/tui/mod.rs", F),
            ("docs/maintenance.md", F),
            ("crates/dsh-store/src/main_loop.rs", F),
            ("README.md", F),
            (".github/main.yml", F),
            ("漢字/主.rs", F),
        ]);
        let mut ranker = FileRanker::new();
        let got = ranked(&mut ranker, &e, "main");
        assert_eq!(got[0], "src/main.rs", "{got:?}");
        assert!(!got.contains(&".github/main.yml"));
        assert!(ranked(&mut ranker, &e, ".gi").contains(&".github/main.yml"));
        let best = &ranker.rank(&e, "srcmain", 1)[0];
        assert_eq!(e[best.index].path, "src/main.rs");
        assert_eq!(best.positions, vec![0, 1, 2, 4, 5, 6, 7]);
        let cjk = &ranker.rank(&e, "主", 1)[0];
        assert_eq!(e[cjk.index].path, "漢字/主.rs");
        assert_eq!(cjk.positions, vec!["漢字/".len()]);
        assert!(ranked(&mut ranker, &e, "zzz").is_empty());
    }

    #[test]
    fn directory_listing_and_narrowing_agree_with_a_fresh_rank() {
        use EntryKind::{Directory as D, File as F};
        let e = entries(&[
            ("src", D),
            ("src/b.rs", F),
            ("src/a", D),
            ("src/a/x.rs", F),
            ("src/.hidden", F),
            ("top.rs", F),
        ]);
        let mut ranker = FileRanker::new();
        assert_eq!(ranked(&mut ranker, &e, ""), ["src", "top.rs"]);
        assert_eq!(ranked(&mut ranker, &e, "src/"), ["src/a", "src/b.rs"]);
        for q in ["s", "sr", "src", "srcx", "SRC"] {
            let narrowed = ranked(&mut ranker, &e, q);
            let fresh = ranked(&mut FileRanker::new(), &e, q);
            assert_eq!(narrowed, fresh, "{q}");
        }
    }
}
