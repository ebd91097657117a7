//! The widget's own fuzzy match of a query in a label, for highlighting when the source
//! says nothing about what it matched: `nucleo-matcher`, case-insensitive, over the label's
//! chars.

use nucleo_matcher::pattern::{Atom, AtomKind, CaseMatching, Normalization};
use nucleo_matcher::{Config, Matcher, Utf32Str};

/// Matcher state reused across the rows of one drawing.
pub(crate) struct Fuzzy {
    matcher: Matcher,
    chars: Vec<char>,
    indices: Vec<u32>,
}

impl Fuzzy {
    pub(crate) fn new() -> Self {
        Fuzzy {
            matcher: Matcher::new(Config::DEFAULT),
            chars: Vec::new(),
            indices: Vec::new(),
        }
    }

    /// The char indices of `text` that `pattern` matches (sorted), or `None` when it does
    /// not match.
    pub(crate) fn indices(&mut self, text: &str, pattern: &str) -> Option<Vec<usize>> {
        let atom = Atom::new(
            pattern,
            CaseMatching::Ignore,
            Normalization::Smart,
            AtomKind::Fuzzy,
            false,
        );
        self.chars.clear();
        self.chars.extend(text.chars());
        self.indices.clear();
        atom.indices(
            Utf32Str::Unicode(&self.chars),
            &mut self.matcher,
            &mut self.indices,
        )?;
        let mut out: Vec<usize> = self
            .indices
            .iter()
            .filter_map(|&i| usize::try_from(i).ok())
            .collect();
        out.sort_unstable();
        out.dedup();
        Some(out)
    }
}
