//! Ordering a listing's groups by last activity (docs/references.md: candidates), and what a
//! picker shows beside a row: when the session was last active and how many messages it
//! holds.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use dsh_store::SessionSummary;

/// How sessions are ordered within each group of a listing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum ListingOrder {
    /// dsh's order: newest `createdAt` first (the `candidates` contract).
    #[default]
    Created,
    /// Most recently active first (the log's last event; a session without one by its
    /// creation time), equal times in dsh's order: what `/resume` and the `@` popup show.
    LastActivity,
}

/// What a picker shows beside a session's row.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SessionDetails {
    /// When the session was last active (Unix milliseconds); `None` when nothing happened
    /// in it yet or its source cannot tell (show its creation time then).
    pub last_active_ms: Option<i64>,
    /// Conversation messages, when its source counts them (dsh sessions).
    pub messages: Option<u64>,
}

impl SessionDetails {
    /// The details a summary gives.
    pub fn of(summary: &SessionSummary) -> Self {
        SessionDetails {
            last_active_ms: summary.last_active_ms,
            messages: summary.messages,
        }
    }
}

/// The `limit` most recently active positions of one group, by (time, earliest position):
/// a bounded heap, so a group of 100 000 matches costs `limit` entries.
#[derive(Debug)]
pub(crate) struct TopByActivity {
    limit: usize,
    /// Min-heap of the best so far: the worst kept is on top.
    heap: BinaryHeap<Reverse<(i64, Reverse<usize>)>>,
}

impl TopByActivity {
    pub(crate) fn new(limit: usize) -> Self {
        TopByActivity {
            limit,
            heap: BinaryHeap::with_capacity(limit.min(1024) + 1),
        }
    }

    /// A match at listing `position`, last active at `at`.
    pub(crate) fn offer(&mut self, at: i64, position: usize) {
        if self.limit == 0 {
            return;
        }
        let key = (at, Reverse(position));
        if self.heap.len() == self.limit {
            match self.heap.peek() {
                Some(Reverse(worst)) if key > *worst => {
                    self.heap.pop();
                }
                _ => return,
            }
        }
        self.heap.push(Reverse(key));
    }

    /// The kept positions, most recently active first (equal times in listing order).
    pub(crate) fn into_positions(self) -> Vec<usize> {
        let mut keys: Vec<(i64, Reverse<usize>)> =
            self.heap.into_iter().map(|Reverse(k)| k).collect();
        keys.sort_unstable_by(|a, b| b.cmp(a));
        keys.into_iter().map(|(_, Reverse(p))| p).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_most_recent_in_order_with_ties_by_position() {
        let times = [5, 9, 1, 9, 7, 3, 9];
        for limit in 0..=8 {
            let mut top = TopByActivity::new(limit);
            for (position, at) in times.iter().enumerate() {
                top.offer(*at, position);
            }
            let mut want: Vec<usize> = (0..times.len()).collect();
            want.sort_by_key(|&p| (Reverse(times[p]), p));
            want.truncate(limit);
            assert_eq!(top.into_positions(), want, "limit {limit}");
        }
    }
}
