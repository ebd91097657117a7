//! Surface folding (docs/session-store.md: surface folding): which events make up the conversation the model sees.
//!
//! `append` pushes an event's seq; `replace {start, end}` swaps the inclusive span for the
//! event's own seq. A log that breaks these rules is corrupt; the error names the seq.

use std::collections::HashMap;

use super::event::{Event, SurfaceOp};

/// Why a log cannot be folded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FoldError {
    #[error("event seq {seq}: replace start {start} is after end {end}")]
    StartAfterEnd { seq: u64, start: u64, end: u64 },
    #[error("event seq {seq}: replace {which} {missing} is not on the surface")]
    NotOnSurface {
        seq: u64,
        which: &'static str,
        missing: u64,
    },
    #[error("event at index {index} has seq {seq} (seq must equal its index)")]
    SeqNotIndex { index: usize, seq: u64 },
}

impl FoldError {
    /// The seq of the offending event.
    pub fn seq(&self) -> u64 {
        match self {
            FoldError::StartAfterEnd { seq, .. }
            | FoldError::NotOnSurface { seq, .. }
            | FoldError::SeqNotIndex { seq, .. } => *seq,
        }
    }
}

/// Incremental folder: feed events in seq order, read the current surface at any time.
#[derive(Debug, Clone, Default)]
pub struct SurfaceFolder {
    surface: Vec<u64>,
}

impl SurfaceFolder {
    /// An empty surface.
    pub fn new() -> Self {
        Self::default()
    }

    /// Apply one event (no-op unless it carries a `surfaceOp`).
    pub fn push(&mut self, event: &Event) -> Result<(), FoldError> {
        self.push_collecting(event, &mut Vec::new())
    }

    /// Like [`push`](Self::push), also appending the seqs a replace removed to `removed`
    /// (so a streaming reader can drop the events it no longer needs).
    pub fn push_collecting(
        &mut self,
        event: &Event,
        removed: &mut Vec<u64>,
    ) -> Result<(), FoldError> {
        let seq = event.seq;
        match event.surface_op {
            None => Ok(()),
            Some(SurfaceOp::Append) => {
                self.surface.push(seq);
                Ok(())
            }
            Some(SurfaceOp::Replace { start, end }) => {
                let find = |which: &'static str, wanted: u64| {
                    self.surface
                        .iter()
                        .rposition(|&s| s == wanted)
                        .ok_or(FoldError::NotOnSurface {
                            seq,
                            which,
                            missing: wanted,
                        })
                };
                let from = find("start", start)?;
                let to = find("end", end)?;
                // Seqs on the surface are not sorted once a replacement sits before older
                // events, so "start not after end" is decided by position, not by seq.
                if from > to {
                    return Err(FoldError::StartAfterEnd { seq, start, end });
                }
                removed.extend(self.surface.splice(from..=to, [seq]));
                Ok(())
            }
        }
    }

    /// Current surface seqs in model order.
    pub fn surface(&self) -> &[u64] {
        &self.surface
    }
}

/// Fold a whole log (`events[i].seq == i`): indices of the current surface events, in order.
pub fn fold_surface(events: &[Event]) -> Result<Vec<usize>, FoldError> {
    let mut folder = SurfaceFolder::new();
    for (index, event) in events.iter().enumerate() {
        if u64::try_from(index).ok() != Some(event.seq) {
            return Err(FoldError::SeqNotIndex {
                index,
                seq: event.seq,
            });
        }
        folder.push(event)?;
    }
    // Every seq on the surface is the index of an event we saw.
    Ok(folder
        .surface()
        .iter()
        .filter_map(|&s| usize::try_from(s).ok())
        .collect())
}

/// A folder for streaming readers that also keeps one value per event still on the
/// surface (the event itself, or where its line is), dropping values a replace removed.
#[derive(Debug)]
pub struct KeepingFolder<T> {
    folder: SurfaceFolder,
    kept: HashMap<u64, T>,
    removed: Vec<u64>,
}

impl<T> Default for KeepingFolder<T> {
    fn default() -> Self {
        KeepingFolder {
            folder: SurfaceFolder::new(),
            kept: HashMap::new(),
            removed: Vec::new(),
        }
    }
}

impl<T> KeepingFolder<T> {
    /// Fold one event. Returns whether it is a surface event (then [`keep`](Self::keep) its
    /// value); the values of the events it replaced are already dropped.
    pub fn fold(&mut self, event: &Event) -> Result<bool, FoldError> {
        if event.surface_op.is_none() {
            return Ok(false);
        }
        self.removed.clear();
        self.folder.push_collecting(event, &mut self.removed)?;
        for seq in &self.removed {
            self.kept.remove(seq);
        }
        Ok(true)
    }

    /// Keep the value of the surface event `seq` just folded.
    pub fn keep(&mut self, seq: u64, value: T) {
        self.kept.insert(seq, value);
    }

    /// The seqs the last folded event replaced.
    pub fn removed(&self) -> &[u64] {
        &self.removed
    }

    /// The surface seqs and the values kept for them.
    pub fn finish(self) -> (Vec<u64>, HashMap<u64, T>) {
        (self.folder.surface, self.kept)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::EventData;
    use pretty_assertions::assert_eq;

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

    fn app(seq: u64) -> Event {
        ev(seq, Some(SurfaceOp::Append))
    }

    fn rep(seq: u64, start: u64, end: u64) -> Event {
        ev(seq, Some(SurfaceOp::Replace { start, end }))
    }

    #[test]
    fn folding_table() {
        let cases: Vec<(&str, Vec<Event>, Vec<usize>)> = vec![
            ("empty", vec![], vec![]),
            ("append", vec![app(0), ev(1, None), app(2)], vec![0, 2]),
            (
                "replace in the middle",
                vec![app(0), app(1), app(2), app(3), rep(4, 1, 2)],
                vec![0, 4, 3],
            ),
            (
                "replace of a replacement",
                vec![app(0), app(1), rep(2, 0, 0), app(3), rep(4, 2, 3)],
                vec![4],
            ),
            (
                "replace single",
                vec![app(0), app(1), rep(2, 1, 1)],
                vec![0, 2],
            ),
            (
                "replace a span that starts with a replacement placed before older events",
                vec![app(0), app(1), app(2), rep(3, 0, 0), rep(4, 3, 2)],
                vec![4],
            ),
            (
                "replace everything then append",
                vec![app(0), app(1), rep(2, 0, 1), app(3)],
                vec![2, 3],
            ),
        ];
        for (name, events, want) in cases {
            assert_eq!(fold_surface(&events).unwrap(), want, "{name}");
        }
    }

    #[test]
    fn invalid_ranges_name_the_seq() {
        let cases: Vec<(&str, Vec<Event>, FoldError)> = vec![
            (
                "start after end",
                vec![app(0), app(1), rep(2, 1, 0)],
                FoldError::StartAfterEnd {
                    seq: 2,
                    start: 1,
                    end: 0,
                },
            ),
            (
                "start not on surface",
                vec![app(0), ev(1, None), app(2), rep(3, 1, 2)],
                FoldError::NotOnSurface {
                    seq: 3,
                    which: "start",
                    missing: 1,
                },
            ),
            (
                "start placed after end on the surface",
                vec![app(0), app(1), rep(2, 0, 0), rep(3, 1, 2)],
                FoldError::StartAfterEnd {
                    seq: 3,
                    start: 1,
                    end: 2,
                },
            ),
            (
                "start missing",
                vec![app(0), ev(1, None), rep(2, 1, 1)],
                FoldError::NotOnSurface {
                    seq: 2,
                    which: "start",
                    missing: 1,
                },
            ),
            (
                "end missing",
                vec![app(0), app(1), rep(2, 0, 7)],
                FoldError::NotOnSurface {
                    seq: 2,
                    which: "end",
                    missing: 7,
                },
            ),
            (
                "replaced seq is gone",
                vec![app(0), app(1), rep(2, 0, 1), rep(3, 0, 2)],
                FoldError::NotOnSurface {
                    seq: 3,
                    which: "start",
                    missing: 0,
                },
            ),
            (
                "seq not index",
                vec![app(0), app(2)],
                FoldError::SeqNotIndex { index: 1, seq: 2 },
            ),
        ];
        for (name, events, want) in cases {
            let err = fold_surface(&events).unwrap_err();
            assert_eq!(err, want, "{name}");
            assert!(
                err.to_string().contains(&format!("{}", want.seq())),
                "{name}"
            );
        }
    }

    #[test]
    fn incremental_matches_whole_fold_and_reports_removed() {
        let events = vec![app(0), app(1), app(2), rep(3, 1, 2), app(4)];
        let mut folder = SurfaceFolder::new();
        let mut removed = Vec::new();
        for e in &events {
            folder.push_collecting(e, &mut removed).unwrap();
        }
        assert_eq!(folder.surface(), &[0, 3, 4]);
        assert_eq!(removed, vec![1, 2]);
        let whole: Vec<u64> = fold_surface(&events)
            .unwrap()
            .into_iter()
            .map(|i| i as u64)
            .collect();
        assert_eq!(whole, folder.surface());
    }
}
