//! Composer input history: Up/Down browse earlier submissions; the draft being written when
//! browsing started is kept aside and comes back past the newest entry, so nothing is lost.

use std::collections::VecDeque;

/// Submitted texts, oldest first, in canonical form (mentions stay `@[label](uri)`).
#[derive(Debug, Clone, Default)]
pub struct InputHistory {
    entries: VecDeque<String>,
    max: usize,
    /// Index of the entry shown while browsing, and the draft set aside when browsing began.
    browsing: Option<(usize, String)>,
}

impl InputHistory {
    /// An empty history keeping at most `max` entries.
    pub fn new(max: usize) -> Self {
        Self {
            entries: VecDeque::new(),
            max,
            browsing: None,
        }
    }

    /// Records `text` as newest unless it is blank or repeats the newest; ends browsing.
    pub fn push(&mut self, text: &str) {
        self.browsing = None;
        if text.trim().is_empty() || self.max == 0 {
            return;
        }
        if self.entries.back().is_some_and(|last| last == text) {
            return;
        }
        self.entries.push_back(text.to_string());
        while self.entries.len() > self.max {
            self.entries.pop_front();
        }
    }

    /// The older entry to show instead of `draft`, or `None` when there is none or `draft`
    /// is an edited recall (browsing on would discard the edit).
    pub fn older(&mut self, draft: &str) -> Option<String> {
        let index = match &self.browsing {
            None => self.entries.len().checked_sub(1)?,
            Some((i, _)) if self.entries.get(*i).is_some_and(|e| e == draft) => i.checked_sub(1)?,
            Some(_) => return None,
        };
        let entry = self.entries.get(index)?.clone();
        let stash = match self.browsing.take() {
            Some((_, stash)) => stash,
            None => draft.to_string(),
        };
        self.browsing = Some((index, stash));
        Some(entry)
    }

    /// The newer entry (or, past the newest, the set-aside draft) to show instead of `draft`;
    /// `None` when not browsing or `draft` is an edited recall.
    pub fn newer(&mut self, draft: &str) -> Option<String> {
        let (index, stash) = self.browsing.take()?;
        if self.entries.get(index).is_none_or(|e| e != draft) {
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

    /// The entries, oldest first.
    pub fn entries(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(String::as_str)
    }

    /// Forgets every entry (and any browsing).
    pub fn clear(&mut self) {
        self.entries.clear();
        self.browsing = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn browse_and_return_to_draft() {
        let mut h = InputHistory::new(10);
        h.push("one");
        h.push("two");
        assert_eq!(h.older("draft"), Some("two".into()));
        assert_eq!(h.older("two"), Some("one".into()));
        assert_eq!(h.older("one"), None, "oldest reached");
        assert_eq!(h.newer("one"), Some("two".into()));
        assert_eq!(h.newer("two"), Some("draft".into()));
        assert_eq!(h.newer("draft"), None, "browsing ended");
    }

    #[test]
    fn edited_recall_is_not_discarded() {
        let mut h = InputHistory::new(10);
        h.push("one");
        h.push("two");
        assert_eq!(h.older(""), Some("two".into()));
        assert_eq!(h.older("two edited"), None);
        assert_eq!(h.newer("two edited"), None);
    }

    #[test]
    fn push_skips_blank_and_repeats_and_caps() {
        let mut h = InputHistory::new(2);
        for t in ["a", "a", "  ", "b", "c"] {
            h.push(t);
        }
        assert_eq!(h.entries, ["b", "c"]);
        let mut empty = InputHistory::new(0);
        empty.push("x");
        assert_eq!(empty.older(""), None);
    }

    #[test]
    fn canonical_text_is_kept() {
        let mut h = InputHistory::new(5);
        let text = "see @[A \\] b](dsh-session:ImEi)\nline two";
        h.push(text);
        assert_eq!(h.older(""), Some(text.to_string()));
    }
}
