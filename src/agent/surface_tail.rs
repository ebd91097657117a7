//! The newest part of the folded surface, kept in memory so a request is built without
//! reading the log (docs/agent.md: context window): a suffix of the surface holding at least
//! the token budget when the surface has that much, plus the latest compaction checkpoint.
//! Memory follows the model's context window, not the session's length.

use std::collections::VecDeque;

use super::context_window::estimate_tokens;
use dsh_store::{Event, Message, SurfaceOp};

/// One surface event of the tail.
#[derive(Debug, Clone)]
pub(crate) struct TailEntry {
    pub(crate) seq: u64,
    /// `None` for a surface event that carries no message (sent as nothing).
    pub(crate) message: Option<Message>,
    pub(crate) tokens: u64,
}

impl TailEntry {
    pub(crate) fn new(seq: u64, message: Option<Message>) -> Self {
        let tokens = message.as_ref().map_or(0, estimate_tokens);
        TailEntry {
            seq,
            message,
            tokens,
        }
    }

    fn is_checkpoint(&self) -> bool {
        self.message
            .as_ref()
            .and_then(|m| m.source.as_ref())
            .is_some_and(dsh_store::Source::is_compact_checkpoint)
    }
}

/// A suffix of the surface (always: every surface change keeps it one) and the newest
/// checkpoint older than it.
#[derive(Debug, Default)]
pub(crate) struct SurfaceTail {
    /// Oldest entries are dropped while the rest still hold at least this many tokens.
    cap: u64,
    entries: VecDeque<TailEntry>,
    tokens: u64,
    /// The newest compaction checkpoint that left the tail's front, while on the surface.
    checkpoint: Option<TailEntry>,
}

impl SurfaceTail {
    /// An empty tail that keeps at least `cap` tokens.
    pub(crate) fn new(cap: u64) -> Self {
        SurfaceTail {
            cap,
            ..SurfaceTail::default()
        }
    }

    /// Follow one logged event (in seq order); events off the surface change nothing.
    pub(crate) fn observe(&mut self, event: &Event) {
        match event.surface_op {
            None => {}
            Some(SurfaceOp::Append) => {
                self.push_back(TailEntry::new(event.seq, event.message().cloned()));
                self.evict();
            }
            Some(SurfaceOp::Replace { start, end }) => self.replace(event, start, end),
        }
    }

    /// A replace swaps the span `start..=end` (by surface position) for `event`. Whatever
    /// part of the span lies in the tail goes; the new event joins the tail only when the
    /// span ends inside it (else it sits before the tail's front, and the tail stays a
    /// suffix without it).
    fn replace(&mut self, event: &Event, start: u64, end: u64) {
        let entry = TailEntry::new(event.seq, event.message().cloned());
        if self
            .checkpoint
            .as_ref()
            .is_some_and(|c| c.seq == start || c.seq == end)
        {
            self.checkpoint = None;
        }
        let Some(to) = self.entries.iter().rposition(|e| e.seq == end) else {
            if entry.is_checkpoint() {
                self.checkpoint = Some(entry);
            }
            return;
        };
        let from = self
            .entries
            .iter()
            .take(to + 1)
            .rposition(|e| e.seq == start)
            .unwrap_or(0);
        let removed: Vec<TailEntry> = self.entries.drain(from..=to).collect();
        self.tokens -= removed.iter().map(|e| e.tokens).sum::<u64>();
        self.tokens += entry.tokens;
        self.entries.insert(from, entry);
        self.evict();
    }

    fn push_back(&mut self, entry: TailEntry) {
        self.tokens += entry.tokens;
        self.entries.push_back(entry);
    }

    /// Drop the oldest entries the cap no longer needs (keeping the newest checkpoint).
    fn evict(&mut self) {
        while let Some(front) = self.entries.front() {
            if self.entries.len() <= 1 || self.tokens - front.tokens < self.cap {
                break;
            }
            let Some(front) = self.entries.pop_front() else {
                break;
            };
            self.tokens -= front.tokens;
            if front.is_checkpoint() {
                self.checkpoint = Some(front);
            }
        }
    }

    /// Keep at least `cap` tokens from now on (a larger context window).
    pub(crate) fn raise_cap(&mut self, cap: u64) {
        self.cap = self.cap.max(cap);
    }

    /// Entries in surface order.
    pub(crate) fn entries(&self) -> impl DoubleEndedIterator<Item = &TailEntry> {
        self.entries.iter()
    }

    /// How many surface events the tail holds.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Estimated tokens of the tail's messages.
    pub(crate) fn tokens(&self) -> u64 {
        self.tokens
    }

    /// The estimated tokens of the window a request of at most `budget` tokens would hold:
    /// the newest entries that fit, and the checkpoint older than the tail (the tail holds at
    /// least its cap, so a tail that was read with this budget answers without the log).
    pub(crate) fn window_tokens(&self, budget: u64) -> u64 {
        let pinned = self.checkpoint.as_ref().map_or(0, |c| c.tokens);
        let mut used = pinned;
        for (i, entry) in self.entries.iter().rev().enumerate() {
            let next = used.saturating_add(entry.tokens);
            if next > budget && i > 0 {
                break;
            }
            used = next;
        }
        used
    }

    /// The newest checkpoint older than the tail, if still on the surface.
    pub(crate) fn checkpoint(&self) -> Option<&TailEntry> {
        self.checkpoint.as_ref()
    }

    /// Forget a checkpoint the surface no longer holds.
    pub(crate) fn drop_checkpoint_unless(&mut self, on_surface: impl Fn(u64) -> bool) {
        if self.checkpoint.as_ref().is_some_and(|c| !on_surface(c.seq)) {
            self.checkpoint = None;
        }
    }

    /// Put older surface events (read again from the log, oldest first) before the front.
    pub(crate) fn prepend(&mut self, older: Vec<TailEntry>) {
        for entry in older.into_iter().rev() {
            self.tokens += entry.tokens;
            if self.checkpoint.as_ref().is_some_and(|c| c.seq == entry.seq) {
                self.checkpoint = None;
            }
            self.entries.push_front(entry);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_store::{ContentBlock, EventData, Role, Source};

    fn user(seq: u64, text: &str) -> Event {
        Event {
            seq,
            time: 0,
            data: EventData::UserMessage(Message::user_text(text)),
            surface_op: Some(SurfaceOp::Append),
            source_event_seqs: None,
        }
    }

    fn checkpoint(seq: u64, start: u64, end: u64) -> Event {
        Event {
            seq,
            time: 0,
            data: EventData::UserMessage(Message::new(
                Role::User,
                vec![ContentBlock::text("summary")],
                Source::compact_checkpoint(),
            )),
            surface_op: Some(SurfaceOp::Replace { start, end }),
            source_event_seqs: None,
        }
    }

    fn seqs(tail: &SurfaceTail) -> Vec<u64> {
        tail.entries().map(|e| e.seq).collect()
    }

    /// 30 bytes: 10 + 4 = 14 tokens.
    const T: &str = "abcdefghijabcdefghijabcdefghij";

    #[test]
    fn appends_keep_just_enough_newest_messages_for_the_cap() {
        let mut tail = SurfaceTail::new(28);
        for seq in 0..10 {
            tail.observe(&user(seq, T));
        }
        assert_eq!(seqs(&tail), vec![8, 9]);
        assert_eq!(tail.tokens(), 28);
        tail.raise_cap(40);
        tail.observe(&user(10, T));
        assert_eq!(seqs(&tail), vec![8, 9, 10]);
    }

    #[test]
    fn a_whole_surface_replace_leaves_the_checkpoint_alone_and_it_is_kept_when_evicted() {
        let mut tail = SurfaceTail::new(28);
        for seq in 0..5 {
            tail.observe(&user(seq, T));
        }
        tail.observe(&checkpoint(5, 0, 4));
        assert_eq!(seqs(&tail), vec![5]);
        for seq in 6..10 {
            tail.observe(&user(seq, T));
        }
        assert_eq!(seqs(&tail), vec![8, 9]);
        assert_eq!(tail.checkpoint().map(|c| c.seq), Some(5));
        // A later compaction replaces it.
        tail.observe(&checkpoint(10, 5, 9));
        assert_eq!(seqs(&tail), vec![10]);
        assert!(tail.checkpoint().is_none());
    }

    #[test]
    fn replaces_before_or_across_the_front_keep_a_suffix() {
        // Surface 0..6, tail [4, 5]; replace 0..=1 sits before the tail.
        let mut tail = SurfaceTail::new(28);
        for seq in 0..6 {
            tail.observe(&user(seq, T));
        }
        assert_eq!(seqs(&tail), vec![4, 5]);
        let mut e = user(6, T);
        e.surface_op = Some(SurfaceOp::Replace { start: 0, end: 1 });
        tail.observe(&e);
        assert_eq!(seqs(&tail), vec![4, 5]);
        // Replace 2..=4 ends inside the tail: 4 goes, 7 takes its place at the front.
        let mut e = user(7, "x");
        e.surface_op = Some(SurfaceOp::Replace { start: 2, end: 4 });
        tail.observe(&e);
        assert_eq!(seqs(&tail), vec![7, 5]);
        assert_eq!(tail.tokens(), 14 + 5);
        // Inside the tail.
        let mut e = user(8, T);
        e.surface_op = Some(SurfaceOp::Replace { start: 5, end: 5 });
        tail.observe(&e);
        assert_eq!(seqs(&tail), vec![7, 8]);
    }
}
