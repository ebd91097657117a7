//! A folded surface in a few bits per event (docs/performance.md: streaming prepare): the
//! same rules as [`SurfaceFolder`](crate::fold::SurfaceFolder), but stored as one "on the
//! surface" bit per seq plus a list of seq ranges in surface order, so a long log costs an
//! eighth of a byte per event instead of a seq per surface item.
//!
//! Each range `first..=last` stands for the seqs in it whose bit is set, in seq order. The
//! ranges never overlap, so every seq on the surface belongs to exactly one of them. An
//! append extends the last range; a replace splits at most two ranges and inserts its own
//! seq as a range of one, so the list grows with the number of replaces, not of events.

use super::event::{Event, SurfaceOp};
use super::fold::FoldError;

/// One range of surface seqs (those of `first..=last` whose bit is set), in seq order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Range {
    first: u64,
    last: u64,
}

/// Where a folded event landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placed {
    /// Not a surface event.
    Not,
    /// Appended at the end.
    End,
    /// A replace: it took the place of the span it removed.
    Span,
}

/// The current surface of a log being scanned, compactly (see the module doc).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompactSurface {
    /// Bit `s` is set while seq `s` is on the surface.
    live: Vec<u64>,
    ranges: Vec<Range>,
    /// The largest seq ever placed on the surface.
    max_placed: Option<u64>,
    len: usize,
}

impl CompactSurface {
    /// An empty surface.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of events on the surface.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the surface is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether `seq` is on the surface.
    pub fn contains(&self, seq: u64) -> bool {
        let word = usize::try_from(seq / 64)
            .ok()
            .and_then(|w| self.live.get(w));
        word.is_some_and(|w| w >> (seq % 64) & 1 == 1)
    }

    fn set(&mut self, seq: u64, on: bool) {
        let Ok(word) = usize::try_from(seq / 64) else {
            return;
        };
        if self.live.len() <= word {
            if !on {
                return;
            }
            self.live.resize(word + 1, 0);
        }
        if let Some(w) = self.live.get_mut(word) {
            if on {
                *w |= 1 << (seq % 64);
            } else {
                *w &= !(1 << (seq % 64));
            }
        }
    }

    /// The index of the range holding the surface seq `seq`.
    fn range_of(&self, seq: u64) -> Option<usize> {
        if !self.contains(seq) {
            return None;
        }
        self.ranges
            .iter()
            .rposition(|r| r.first <= seq && seq <= r.last)
    }

    /// Call `f` for every surface seq in `first..=last`, ascending.
    fn for_each_in(&self, first: u64, last: u64, f: &mut dyn FnMut(u64)) {
        let mut seq = first;
        while seq <= last {
            let Some(&word) = usize::try_from(seq / 64)
                .ok()
                .and_then(|w| self.live.get(w))
            else {
                return;
            };
            let mut bits = word >> (seq % 64);
            if bits == 0 {
                seq = (seq / 64 + 1) * 64;
                continue;
            }
            while bits != 0 {
                let at = seq + u64::from(bits.trailing_zeros());
                if at > last {
                    return;
                }
                f(at);
                bits &= bits - 1;
            }
            seq = (seq / 64 + 1) * 64;
        }
    }

    /// Fold one event by the rules of docs/session-store.md (surface folding), appending the
    /// seqs a replace removed (in surface order) to `removed`.
    pub fn push(&mut self, event: &Event, removed: &mut Vec<u64>) -> Result<Placed, FoldError> {
        self.push_op(event.seq, event.surface_op, removed)
    }

    /// [`push`](Self::push) for an event known only by its seq and surface op.
    pub fn push_op(
        &mut self,
        seq: u64,
        surface_op: Option<SurfaceOp>,
        removed: &mut Vec<u64>,
    ) -> Result<Placed, FoldError> {
        match surface_op {
            None => Ok(Placed::Not),
            Some(SurfaceOp::Append) => {
                let extend = self.max_placed.is_some()
                    && self.ranges.last().map(|r| r.last) == self.max_placed;
                match self.ranges.last_mut() {
                    Some(last) if extend => last.last = seq,
                    _ => self.ranges.push(Range {
                        first: seq,
                        last: seq,
                    }),
                }
                self.place(seq);
                Ok(Placed::End)
            }
            Some(SurfaceOp::Replace { start, end }) => {
                let missing = |which, wanted| FoldError::NotOnSurface {
                    seq,
                    which,
                    missing: wanted,
                };
                let from = self.range_of(start).ok_or(missing("start", start))?;
                let to = self.range_of(end).ok_or(missing("end", end))?;
                if from > to || (from == to && start > end) {
                    return Err(FoldError::StartAfterEnd { seq, start, end });
                }
                let (Some(&a), Some(&b)) = (self.ranges.get(from), self.ranges.get(to)) else {
                    return Err(missing("start", start));
                };
                let before = removed.len();
                if from == to {
                    self.for_each_in(start, end, &mut |s| removed.push(s));
                } else {
                    self.for_each_in(start, a.last, &mut |s| removed.push(s));
                    for r in self.ranges.get(from + 1..to).unwrap_or_default() {
                        self.for_each_in(r.first, r.last, &mut |s| removed.push(s));
                    }
                    self.for_each_in(b.first, end, &mut |s| removed.push(s));
                }
                for s in removed.get(before..).unwrap_or_default() {
                    self.set(*s, false);
                }
                self.len -= removed.len() - before;
                let mut middle = Vec::with_capacity(3);
                if start > a.first {
                    middle.push(Range {
                        first: a.first,
                        last: start - 1,
                    });
                }
                middle.push(Range {
                    first: seq,
                    last: seq,
                });
                if end < b.last {
                    middle.push(Range {
                        first: end + 1,
                        last: b.last,
                    });
                }
                self.ranges.splice(from..=to, middle);
                self.place(seq);
                Ok(Placed::Span)
            }
        }
    }

    fn place(&mut self, seq: u64) {
        self.set(seq, true);
        self.len += 1;
        self.max_placed = Some(self.max_placed.map_or(seq, |m| m.max(seq)));
    }

    /// Whether surface seq `a` comes before surface seq `b` (false if either is not on it).
    pub fn precedes(&self, a: u64, b: u64) -> bool {
        match (self.range_of(a), self.range_of(b)) {
            (Some(ra), Some(rb)) => (ra, a) < (rb, b),
            _ => false,
        }
    }

    /// The surface seqs in model order.
    pub fn seqs(&self) -> Vec<u64> {
        let mut out = Vec::with_capacity(self.len);
        for r in &self.ranges {
            self.for_each_in(r.first, r.last, &mut |s| out.push(s));
        }
        out
    }

    /// A position lookup for many queries on a surface that no longer changes.
    pub fn positions(&self) -> SurfacePositions<'_> {
        let mut by_first: Vec<(u64, u64, usize)> = self
            .ranges
            .iter()
            .enumerate()
            .map(|(i, r)| (r.first, r.last, i))
            .collect();
        by_first.sort_unstable();
        SurfacePositions {
            surface: self,
            by_first,
        }
    }
}

/// Positions on a fixed [`CompactSurface`] in `O(log ranges)` per query.
#[derive(Debug)]
pub struct SurfacePositions<'a> {
    surface: &'a CompactSurface,
    by_first: Vec<(u64, u64, usize)>,
}

impl SurfacePositions<'_> {
    /// `(range index, seq)`: ordered like the surface; `None` when `seq` is not on it.
    pub fn position(&self, seq: u64) -> Option<(usize, u64)> {
        if !self.surface.contains(seq) {
            return None;
        }
        let after = self.by_first.partition_point(|&(first, _, _)| first <= seq);
        let &(first, last, index) = self.by_first.get(after.checked_sub(1)?)?;
        (first <= seq && seq <= last).then_some((index, seq))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::EventData;
    use crate::fold::SurfaceFolder;

    fn ev(seq: u64, op: Option<SurfaceOp>) -> Event {
        Event {
            seq,
            time: 0,
            data: EventData::Other {
                kind: "x/y".into(),
                data: serde_json::Value::Null,
            },
            surface_op: op,
            source_event_seqs: None,
        }
    }

    proptest::proptest! {
        /// Random appends, gaps and replaces (valid and invalid) fold exactly like the plain
        /// folder: same surface, same removed seqs, same errors.
        #[test]
        fn folds_like_the_plain_folder(ops in proptest::collection::vec((0u8..30, 0usize..400, 0usize..400), 1..300)) {
            let mut plain = SurfaceFolder::new();
            let mut compact = CompactSurface::new();
            let mut seq = 0u64;
            for (kind, a, b) in ops {
                seq += 1 + (a % 3) as u64; // ascending, with gaps
                let op = match kind % 10 {
                    0..=2 => None,
                    7 | 8 if !plain.surface().is_empty() => {
                        // A valid span (by position).
                        let s = plain.surface();
                        let (i, j) = (a % s.len(), b % s.len());
                        Some(SurfaceOp::Replace { start: s[i.min(j)], end: s[i.max(j)] })
                    }
                    9 if kind == 29 => {
                        // Possibly invalid: reversed, or naming a seq not on the surface.
                        let s = plain.surface();
                        let pick = |i: usize| s.get(i % (s.len() + 1)).copied().unwrap_or(seq + 5000);
                        Some(SurfaceOp::Replace { start: pick(a), end: pick(b) })
                    }
                    _ => Some(SurfaceOp::Append),
                };
                let event = ev(seq, op);
                let (mut r1, mut r2) = (Vec::new(), Vec::new());
                let want = plain.push_collecting(&event, &mut r1);
                let got = compact.push(&event, &mut r2);
                proptest::prop_assert_eq!(want.clone().err(), got.clone().err());
                if want.is_err() {
                    break;
                }
                proptest::prop_assert_eq!(&r1, &r2);
                let seqs = compact.seqs();
                proptest::prop_assert_eq!(plain.surface(), seqs.as_slice());
                proptest::prop_assert_eq!(compact.len(), plain.surface().len());
                let s = plain.surface();
                let positions = compact.positions();
                for (i, x) in s.iter().enumerate() {
                    proptest::prop_assert!(compact.contains(*x));
                    for (j, y) in s.iter().enumerate() {
                        proptest::prop_assert_eq!(compact.precedes(*x, *y), i < j);
                        proptest::prop_assert_eq!(positions.position(*x) < positions.position(*y), i < j);
                    }
                }
            }
        }
    }
}
