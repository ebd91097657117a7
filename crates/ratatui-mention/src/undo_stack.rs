//! Undo for the draft: whole-text snapshots taken before each edit group, bounded in count
//! and bytes so a long session of big pastes cannot grow memory without limit.

use std::collections::VecDeque;

use crate::fold::Fold;

/// Most snapshots kept.
const MAX_SNAPSHOTS: usize = 200;
/// Most bytes of snapshot text kept (the oldest go first).
const MAX_BYTES: usize = 8 * 1024 * 1024;

/// The draft as it was before an edit: its text, caret and folds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub text: String,
    pub caret: usize,
    pub folds: Vec<Fold>,
}

/// Snapshots, oldest first.
#[derive(Debug, Clone, Default)]
pub struct UndoStack {
    snapshots: VecDeque<Snapshot>,
    bytes: usize,
}

impl UndoStack {
    /// Remembers `snapshot` as the newest state to go back to.
    pub fn push(&mut self, snapshot: Snapshot) {
        self.bytes += snapshot.text.len();
        self.snapshots.push_back(snapshot);
        while self.snapshots.len() > MAX_SNAPSHOTS || self.bytes > MAX_BYTES {
            match self.snapshots.pop_front() {
                Some(old) => self.bytes -= old.text.len(),
                None => break,
            }
        }
    }

    /// The newest snapshot, removed.
    pub fn pop(&mut self) -> Option<Snapshot> {
        let snapshot = self.snapshots.pop_back()?;
        self.bytes -= snapshot.text.len();
        Some(snapshot)
    }

    /// How many snapshots are kept.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.snapshots.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(text: &str) -> Snapshot {
        Snapshot {
            text: text.to_string(),
            caret: 0,
            folds: Vec::new(),
        }
    }

    #[test]
    fn bounded_by_count_and_bytes() {
        let mut stack = UndoStack::default();
        for i in 0..MAX_SNAPSHOTS + 5 {
            stack.push(snap(&i.to_string()));
        }
        assert_eq!(stack.len(), MAX_SNAPSHOTS);
        assert_eq!(stack.pop(), Some(snap(&(MAX_SNAPSHOTS + 4).to_string())));
        let big = "x".repeat(MAX_BYTES / 2 + 1);
        stack.push(snap(&big));
        stack.push(snap(&big));
        assert_eq!(stack.len(), 1, "two halves do not fit");
        assert_eq!(stack.pop().map(|s| s.text.len()), Some(big.len()));
        assert!(stack.pop().is_none());
    }
}
