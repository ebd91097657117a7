//! A streamed surface for foreign sessions that are not read line by line like Claude Code
//! and Codex logs (Gemini CLI chats, OpenCode sessions): each visible item is shown to the
//! visitor once, only where to find it again is kept (a line and an index, a message id),
//! and the items retention keeps are read again through an [`ItemSource`].
//!
//! Items are numbered 0, 1, 2, … in the order they are found; `capturedThroughSeq` is the
//! last number given.

use std::collections::HashMap;
use std::path::PathBuf;

use dsh_store::{Event, EventReread, QueryError, SessionHeader, SurfaceScan, SurfaceVisitor};

/// Reads items of one scanned session again by where the scan found them.
pub trait ItemSource: Send + std::fmt::Debug {
    /// Where an item is.
    type At: Copy + Send + std::fmt::Debug;

    /// The events of `wanted` (seq, where), in that order; the seq given is the event's.
    fn read(&mut self, wanted: &[(u64, Self::At)]) -> Result<Vec<Event>, QueryError>;
}

/// Collects a session's surface while its items are shown to a visitor.
pub struct SurfaceBuilder<'v, A> {
    visitor: &'v mut dyn SurfaceVisitor,
    surface: Vec<u64>,
    at: HashMap<u64, A>,
    next_seq: u64,
    removed: Vec<u64>,
}

impl<'v, A: Copy> SurfaceBuilder<'v, A> {
    pub fn new(visitor: &'v mut dyn SurfaceVisitor) -> Self {
        SurfaceBuilder {
            visitor,
            surface: Vec::new(),
            at: HashMap::new(),
            next_seq: 0,
            removed: Vec::new(),
        }
    }

    /// The number the next item gets.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Number of items on the surface.
    pub fn len(&self) -> usize {
        self.surface.len()
    }

    /// Whether the surface is empty.
    pub fn is_empty(&self) -> bool {
        self.surface.is_empty()
    }

    /// The item `event` (numbered [`next_seq`](Self::next_seq)) joins the surface at its end.
    pub fn push(&mut self, event: &Event, at: A) {
        self.next_seq = event.seq + 1;
        self.surface.push(event.seq);
        self.at.insert(event.seq, at);
        self.visitor.visit(event, &self.removed);
        self.removed.clear();
    }

    /// Take the items `seqs` off the surface (the visitor is told with the next item).
    pub fn remove(&mut self, seqs: &[u64]) {
        if seqs.is_empty() {
            return;
        }
        let gone: std::collections::HashSet<u64> = seqs.iter().copied().collect();
        self.surface.retain(|s| !gone.contains(s));
        for seq in seqs {
            if self.at.remove(seq).is_some() {
                self.removed.push(*seq);
            }
        }
    }

    /// Take every item off the surface.
    pub fn clear(&mut self) {
        let all = std::mem::take(&mut self.surface);
        for seq in &all {
            self.at.remove(seq);
        }
        self.removed.extend(all);
    }

    /// The scan, reading kept items again through `source`.
    pub fn finish<S: ItemSource<At = A> + 'static>(
        self,
        header: SessionHeader,
        path: PathBuf,
        source: S,
    ) -> SurfaceScan
    where
        A: Send + std::fmt::Debug + 'static,
    {
        SurfaceScan::from_reread(
            header,
            self.next_seq.checked_sub(1),
            self.surface,
            Box::new(Reread {
                path,
                at: self.at,
                source,
            }),
        )
    }
}

/// [`EventReread`] over an [`ItemSource`].
#[derive(Debug)]
struct Reread<S: ItemSource> {
    path: PathBuf,
    at: HashMap<u64, S::At>,
    source: S,
}

impl<S: ItemSource> EventReread for Reread<S> {
    fn reread(&mut self, seqs: &[u64]) -> Result<Vec<Event>, QueryError> {
        let wanted: Vec<(u64, S::At)> = seqs
            .iter()
            .map(|&seq| {
                self.at.get(&seq).map(|&at| (seq, at)).ok_or_else(|| {
                    changed(
                        &self.path,
                        &format!("item {seq} is not on the scanned surface"),
                    )
                })
            })
            .collect::<Result<_, _>>()?;
        self.source.read(&wanted)
    }
}

/// The error of an item that is no longer where the scan found it.
pub fn changed(path: &std::path::Path, why: &str) -> QueryError {
    QueryError::Corrupt {
        path: path.to_owned(),
        line: 0,
        reason: format!("log changed while being read: {why}"),
    }
}
