//! Composer input history: Up/Down browse earlier submissions; the draft being written when
//! browsing started is kept aside and comes back past the newest entry, so nothing is lost.
//! Entries keep their collapsed pastes; an entry whose pastes are not known (put there by
//! the host) has its middle lines collapsed when it is long.

use std::collections::VecDeque;

use crate::draft::{Fold, FoldKind};

/// A submitted text in canonical form (mentions stay `@[label](uri)`) and its folds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Entry {
    pub text: String,
    pub folds: Vec<Fold>,
}

impl Entry {
    /// `text` with `folds`.
    pub fn new(text: &str, folds: Vec<Fold>) -> Self {
        Entry {
            text: text.to_owned(),
            folds,
        }
    }
}

/// Submitted texts, oldest first.
#[derive(Debug, Clone, Default)]
pub struct InputHistory {
    entries: VecDeque<Entry>,
    max: usize,
    /// Entries of more lines than this, pushed without folds, collapse their middle lines.
    long_lines: usize,
    /// Index of the entry shown while browsing, and the draft set aside when browsing began.
    browsing: Option<(usize, Entry)>,
}

impl InputHistory {
    /// An empty history keeping at most `max` entries; entries of more than `long_lines`
    /// lines pushed without folds show their middle lines collapsed.
    pub fn new(max: usize, long_lines: usize) -> Self {
        Self {
            entries: VecDeque::new(),
            max,
            long_lines,
            browsing: None,
        }
    }

    /// Records `text` as newest unless it is blank or repeats the newest; ends browsing.
    /// `folds`: its collapsed pastes, when known.
    pub fn push(&mut self, text: &str, folds: Option<Vec<Fold>>) {
        self.browsing = None;
        if text.trim().is_empty() || self.max == 0 {
            return;
        }
        if self.entries.back().is_some_and(|last| last.text == text) {
            return;
        }
        let folds = folds.unwrap_or_else(|| long_text_folds(text, self.long_lines));
        self.entries.push_back(Entry::new(text, folds));
        while self.entries.len() > self.max {
            self.entries.pop_front();
        }
    }

    /// Whether `draft` is the entry shown while browsing, untouched.
    fn shows(&self, index: usize, draft: &str) -> bool {
        self.entries.get(index).is_some_and(|e| e.text == draft)
    }

    /// The older entry to show instead of `draft`, or `None` when there is none or `draft`
    /// is an edited recall (browsing on would discard the edit). A recalled entry cleared
    /// to nothing is no edit to keep: browsing goes on from it (at the oldest entry, that
    /// entry comes back).
    pub fn older(&mut self, draft: &Entry) -> Option<Entry> {
        let index = match &self.browsing {
            None => self.entries.len().checked_sub(1)?,
            Some((i, _)) if self.shows(*i, &draft.text) => i.checked_sub(1)?,
            Some((i, _)) if draft.text.is_empty() => i.saturating_sub(1),
            Some(_) => return None,
        };
        let entry = self.entries.get(index)?.clone();
        let stash = match self.browsing.take() {
            Some((_, stash)) => stash,
            None => draft.clone(),
        };
        self.browsing = Some((index, stash));
        Some(entry)
    }

    /// The newer entry (or, past the newest, the set-aside draft) to show instead of `draft`;
    /// `None` when not browsing or `draft` is an edited recall (one cleared to nothing is
    /// not).
    pub fn newer(&mut self, draft: &Entry) -> Option<Entry> {
        let (index, stash) = self.browsing.take()?;
        if !self.shows(index, &draft.text) && !draft.text.is_empty() {
            self.browsing = Some((index, stash));
            return None;
        }
        match self.entries.get(index + 1) {
            Some(entry) => {
                let entry = entry.clone();
                self.browsing = Some((index + 1, stash));
                Some(entry)
            }
            None => Some(stash),
        }
    }

    /// Whether an entry is being browsed and `draft` is it, untouched.
    pub fn is_recall(&self, draft: &str) -> bool {
        self.browsing
            .as_ref()
            .is_some_and(|(i, _)| self.shows(*i, draft))
    }

    /// The entries, oldest first.
    pub fn entries(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|e| e.text.as_str())
    }

    /// Forgets every entry (and any browsing).
    pub fn clear(&mut self) {
        self.entries.clear();
        self.browsing = None;
    }
}

/// The fold of a long text whose pastes are not known: every line but the first and the
/// last, when it has more than `max_lines` lines (none otherwise).
pub fn long_text_folds(text: &str, max_lines: usize) -> Vec<Fold> {
    if max_lines == usize::MAX || text.split('\n').nth(max_lines).is_none() {
        return Vec::new();
    }
    let (Some(first), Some(last)) = (text.find('\n'), text.rfind('\n')) else {
        return Vec::new();
    };
    let range = first + 1..last;
    if range.is_empty() {
        return Vec::new();
    }
    vec![Fold {
        range,
        kind: FoldKind::Long,
    }]
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn e(text: &str) -> Entry {
        Entry::new(text, Vec::new())
    }

    fn text(entry: Option<Entry>) -> Option<String> {
        entry.map(|e| e.text)
    }

    fn history(entries: &[&str]) -> InputHistory {
        let mut h = InputHistory::new(10, usize::MAX);
        for entry in entries {
            h.push(entry, None);
        }
        h
    }

    #[test]
    fn browse_and_return_to_draft() {
        let mut h = history(&["one", "two"]);
        assert_eq!(text(h.older(&e("draft"))), Some("two".into()));
        assert_eq!(text(h.older(&e("two"))), Some("one".into()));
        assert_eq!(text(h.older(&e("one"))), None, "oldest reached");
        assert_eq!(text(h.newer(&e("one"))), Some("two".into()));
        assert_eq!(text(h.newer(&e("two"))), Some("draft".into()));
        assert_eq!(text(h.newer(&e("draft"))), None, "browsing ended");
    }

    #[test]
    fn edited_recall_is_not_discarded() {
        let mut h = history(&["one", "two"]);
        assert_eq!(text(h.older(&e(""))), Some("two".into()));
        assert_eq!(text(h.older(&e("two edited"))), None);
        assert_eq!(text(h.newer(&e("two edited"))), None);
    }

    /// Issue 27, minor 3: Up, Ctrl+U (or Backspace to nothing), Up did nothing.
    #[test]
    fn a_recall_cleared_to_nothing_browses_on() {
        let mut h = history(&["one", "two", "three"]);
        assert_eq!(text(h.older(&e("draft"))), Some("three".into()));
        assert_eq!(text(h.older(&e(""))), Some("two".into()), "cleared: on");
        assert_eq!(text(h.older(&e("two"))), Some("one".into()));
        assert_eq!(
            text(h.older(&e(""))),
            Some("one".into()),
            "at the oldest, the cleared entry comes back"
        );
        assert_eq!(text(h.newer(&e(""))), Some("two".into()), "Down too");
        assert_eq!(text(h.newer(&e("two"))), Some("three".into()));
        assert_eq!(
            text(h.newer(&e(""))),
            Some("draft".into()),
            "the draft set aside is kept"
        );
        // One entry, as after a restart with a short history file.
        let mut h = history(&["only"]);
        assert_eq!(text(h.older(&e(""))), Some("only".into()));
        assert_eq!(text(h.older(&e(""))), Some("only".into()));
    }

    #[test]
    fn push_skips_blank_and_repeats_and_caps() {
        let mut h = InputHistory::new(2, usize::MAX);
        for t in ["a", "a", "  ", "b", "c"] {
            h.push(t, None);
        }
        assert_eq!(h.entries().collect::<Vec<_>>(), ["b", "c"]);
        let mut empty = InputHistory::new(0, usize::MAX);
        empty.push("x", None);
        assert_eq!(empty.older(&e("")), None);
    }

    #[test]
    fn canonical_text_and_folds_are_kept() {
        let mut h = InputHistory::new(5, usize::MAX);
        let text = "see @[A \\] b](user:ImEi)\nline two";
        let folds = vec![Fold {
            range: 0..3,
            kind: FoldKind::Pasted,
        }];
        h.push(text, Some(folds.clone()));
        assert_eq!(h.older(&e("")), Some(Entry::new(text, folds)));
    }

    #[test]
    fn long_entries_without_known_pastes_collapse_their_middle_lines() {
        let long = (1..=12)
            .map(|i| format!("line {i}"))
            .collect::<Vec<_>>()
            .join("\n");
        let long = long.as_str();
        let mut h = InputHistory::new(5, 10);
        h.push(long, None);
        h.push("a\nb\nc", None);
        let short = h.older(&e("")).unwrap_or_default();
        assert_eq!(short.folds, [], "3 lines stay open");
        let entry = h.older(&short).unwrap_or_default();
        let fold = entry.folds.first().cloned().unwrap_or(Fold {
            range: 0..0,
            kind: FoldKind::Pasted,
        });
        assert_eq!(fold.kind, FoldKind::Long);
        assert_eq!(&long[..fold.range.start], "line 1\n");
        assert_eq!(&long[fold.range.end..], "\nline 12");
        assert_eq!(fold.label(&long[fold.range.clone()]), "[10 lines]");
        assert_eq!(long_text_folds("a\nb\nc", 2).len(), 1, "more than 2");
        assert_eq!(long_text_folds("a\nb", 1), [], "no middle line to fold");
    }
}
