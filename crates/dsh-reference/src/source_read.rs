//! Reading one referenced source for `prepare` (docs/references.md (prepare, steps 3–4)) without holding its log:
//! a streaming surface scan keeps only the sizes of the projected items retention can still
//! keep ([`RetentionWindow`]), step 1 is planned on those sizes, and only the items it keeps
//! are read again for their text.

use std::collections::{HashMap, HashSet, VecDeque};

use super::error::ReferenceError;
use super::kept_lines::{KEPT_LINE_BYTES, KeptLines};
use super::projection::{ConversationItem, project_event, project_sized};
use super::redact::{Redactions, redact as redact_text};
use super::retention::{
    DroppedPrefix, ItemSize, RetainedSource, SourceHeader, finish_retention, plan_drops_after,
};
use dsh_store::{
    Event, EventAt, QueryError, SessionQuery, SizedMessage, SurfaceOrder, SurfaceVisitor,
};

/// Sizes of every projected item of a surface being scanned, by seq (memory grows with the
/// surface: for tests and small sources); items a replace took off are forgotten at once.
#[derive(Debug, Default)]
pub struct ProjectedSizes {
    sizes: HashMap<u64, ItemSize>,
}

impl SurfaceVisitor for ProjectedSizes {
    fn visit(&mut self, event: &Event, removed: &[u64]) {
        for seq in removed {
            self.sizes.remove(seq);
        }
        if let Some(item) = project_event(event) {
            self.sizes.insert(event.seq, ItemSize::of(&item));
        }
    }

    fn takes_sized(&self) -> bool {
        true
    }

    fn visit_sized(
        &mut self,
        message: &SizedMessage,
        removed: &[u64],
        _: EventAt,
        _: Option<&dyn SurfaceOrder>,
    ) {
        for seq in removed {
            self.sizes.remove(seq);
        }
        if let Some((role, checkpoint)) = project_sized(message) {
            let size = ItemSize::of_measure(role, checkpoint, &message.joined_text);
            self.sizes.insert(message.seq, size);
        }
    }
}

impl ProjectedSizes {
    /// The projected items of `surface` (folded order): their seqs and sizes.
    pub fn in_order(&self, surface: &[u64]) -> (Vec<u64>, Vec<ItemSize>) {
        surface
            .iter()
            .filter_map(|seq| self.sizes.get(seq).map(|size| (*seq, *size)))
            .unzip()
    }
}

/// One projected item a [`RetentionWindow`] still holds: its seq, where its line is, its
/// sizes.
#[derive(Debug, Clone, Copy)]
struct Tracked {
    seq: u64,
    at: EventAt,
    size: ItemSize,
}

/// What retention can still keep of a surface being scanned, in memory bounded by the
/// budget (docs/performance.md: streaming prepare): every checkpoint, and the newest
/// droppable items as long as the droppable items newer than one of them fit the budget.
/// An older droppable item is then certain to be dropped by step 1 (the total stays above
/// the budget while it is present) and is only counted ([`DroppedPrefix`]).
///
/// A replace can take newer items off the surface, after which a counted item might fit
/// again, or remove some counted items whose sizes are gone: the window then reports itself
/// [`inexact`](Self::inexact) and the caller repeats the scan with the final order known
/// ([`SurfaceScan::rescan`]), where nothing is removed any more.
#[derive(Debug)]
pub struct RetentionWindow {
    budget: usize,
    /// Checkpoints and droppable items not counted away, in surface order.
    tracked: VecDeque<Tracked>,
    /// Σ (serialized + 1) over the tracked droppable items.
    sum: usize,
    /// Number of checkpoints at the front of `tracked`.
    lead: usize,
    /// The counted items still on the surface.
    dropped: DroppedPrefix,
    /// Bit per seq: counted away.
    dropped_bits: Vec<u64>,
    inexact: bool,
    /// The lines of held items the scan handed over ([`SurfaceVisitor::keep_line`]).
    kept: KeptLines,
    /// The item the event being visited added to `tracked`, while it is there.
    last_held: Option<u64>,
}

impl RetentionWindow {
    /// An empty window for `budget` bytes.
    pub fn new(budget: usize) -> Self {
        Self::with_line_cap(budget, KEPT_LINE_BYTES)
    }

    /// An empty window for `budget` bytes that keeps at most `line_cap` bytes of the lines
    /// of its held items.
    pub fn with_line_cap(budget: usize, line_cap: usize) -> Self {
        RetentionWindow {
            budget,
            tracked: VecDeque::new(),
            sum: 0,
            lead: 0,
            dropped: DroppedPrefix::default(),
            dropped_bits: Vec::new(),
            inexact: false,
            kept: KeptLines::new(line_cap),
            last_held: None,
        }
    }

    /// Whether a replace made the window unsure (see the type's doc).
    pub fn inexact(&self) -> bool {
        self.inexact
    }

    /// Number of items held (checkpoints and droppable items not counted away).
    pub fn held(&self) -> usize {
        self.tracked.len()
    }

    /// Whether every held and every counted item passes `on_surface`.
    pub fn all_seen_on(&self, on_surface: &dyn Fn(u64) -> bool) -> bool {
        self.tracked.iter().all(|t| on_surface(t.seq))
            && self.dropped_bits.iter().enumerate().all(|(w, &word)| {
                let mut bits = word;
                while bits != 0 {
                    if !on_surface(w as u64 * 64 + u64::from(bits.trailing_zeros())) {
                        return false;
                    }
                    bits &= bits - 1;
                }
                true
            })
    }

    /// The counted items, and the held ones in surface order: `(seq, where, sizes, kept
    /// line)`.
    pub fn finish(mut self) -> (DroppedPrefix, Vec<HeldItem>) {
        let held = self
            .tracked
            .iter()
            .map(|t| HeldItem {
                seq: t.seq,
                at: t.at,
                size: t.size,
                line: self.kept.take(t.seq),
            })
            .collect();
        (self.dropped, held)
    }

    fn is_dropped(&self, seq: u64) -> bool {
        let word = usize::try_from(seq / 64)
            .ok()
            .and_then(|w| self.dropped_bits.get(w));
        word.is_some_and(|w| w >> (seq % 64) & 1 == 1)
    }

    fn count_dropped(&mut self, t: Tracked) {
        self.kept.forget(t.seq);
        if self.last_held == Some(t.seq) {
            self.last_held = None;
        }
        self.dropped.messages += 1;
        self.dropped.text_bytes += t.size.text_len as u64;
        let Ok(word) = usize::try_from(t.seq / 64) else {
            self.inexact = true;
            return;
        };
        if self.dropped_bits.len() <= word {
            self.dropped_bits.resize(word + 1, 0);
        }
        if let Some(w) = self.dropped_bits.get_mut(word) {
            *w |= 1 << (t.seq % 64);
        }
    }

    fn clear_dropped(&mut self, seq: u64) {
        let word = usize::try_from(seq / 64)
            .ok()
            .and_then(|w| self.dropped_bits.get_mut(w));
        if let Some(w) = word {
            *w &= !(1 << (seq % 64));
        }
    }

    fn recount_lead(&mut self) {
        self.lead = self
            .tracked
            .iter()
            .position(|t| !t.size.checkpoint)
            .unwrap_or(self.tracked.len());
    }

    /// Take the seqs a replace removed off the window.
    fn remove(&mut self, removed: &[u64]) {
        let held: HashSet<u64> = self.tracked.iter().map(|t| t.seq).collect();
        let mut hits = HashSet::new();
        let mut dropped_gone = 0usize;
        for &seq in removed {
            if held.contains(&seq) {
                hits.insert(seq);
            } else if self.is_dropped(seq) {
                dropped_gone += 1;
                self.clear_dropped(seq);
            }
        }
        if !hits.is_empty() {
            for &seq in &hits {
                self.kept.forget(seq);
            }
            self.tracked.retain(|t| !hits.contains(&t.seq));
            self.sum = self
                .tracked
                .iter()
                .filter(|t| !t.size.checkpoint)
                .map(|t| t.size.serialized + 1)
                .sum();
            self.recount_lead();
        }
        if dropped_gone > 0 {
            self.dropped.messages = self.dropped.messages.saturating_sub(dropped_gone);
            if self.dropped.messages == 0 {
                self.dropped.text_bytes = 0;
            } else {
                // Which of them went, and their sizes, is not known.
                self.inexact = true;
            }
        }
        if self.dropped.messages > 0 && self.sum <= self.budget {
            // A counted item might fit again.
            self.inexact = true;
        }
    }

    fn insert(&mut self, t: Tracked, order: Option<&dyn SurfaceOrder>) {
        let index = match order {
            Some(order)
                if !self
                    .tracked
                    .back()
                    .is_none_or(|last| order.precedes(last.seq, t.seq)) =>
            {
                self.tracked
                    .partition_point(|x| order.precedes(x.seq, t.seq))
            }
            _ => self.tracked.len(),
        };
        if t.size.checkpoint {
            if index <= self.lead {
                self.lead += 1;
            }
            self.tracked.insert(index, t);
            self.last_held = Some(t.seq);
            return;
        }
        if index <= self.lead && self.dropped.messages > 0 {
            // Older than every held droppable item, whose sizes already exceed the budget.
            self.count_dropped(t);
            return;
        }
        self.tracked.insert(index, t);
        self.last_held = Some(t.seq);
        self.sum += t.size.serialized + 1;
        self.lead = self.lead.min(index);
        while let Some(&oldest) = self.tracked.get(self.lead) {
            if self.sum - (oldest.size.serialized + 1) <= self.budget {
                break;
            }
            self.tracked.remove(self.lead);
            self.sum -= oldest.size.serialized + 1;
            self.count_dropped(oldest);
            while self
                .tracked
                .get(self.lead)
                .is_some_and(|x| x.size.checkpoint)
            {
                self.lead += 1;
            }
        }
    }
}

impl SurfaceVisitor for RetentionWindow {
    fn visit(&mut self, event: &Event, removed: &[u64]) {
        self.visit_at(event, removed, EventAt::default(), None);
    }

    fn visit_at(
        &mut self,
        event: &Event,
        removed: &[u64],
        at: EventAt,
        order: Option<&dyn SurfaceOrder>,
    ) {
        self.last_held = None;
        if !removed.is_empty() {
            self.remove(removed);
        }
        if let Some(item) = project_event(event) {
            let size = ItemSize::of(&item);
            self.insert(
                Tracked {
                    seq: event.seq,
                    at,
                    size,
                },
                order,
            );
        }
    }

    fn takes_sized(&self) -> bool {
        true
    }

    fn visit_sized(
        &mut self,
        message: &SizedMessage,
        removed: &[u64],
        at: EventAt,
        order: Option<&dyn SurfaceOrder>,
    ) {
        self.last_held = None;
        if !removed.is_empty() {
            self.remove(removed);
        }
        if let Some((role, checkpoint)) = project_sized(message) {
            let size = ItemSize::of_measure(role, checkpoint, &message.joined_text);
            self.insert(
                Tracked {
                    seq: message.seq,
                    at,
                    size,
                },
                order,
            );
        }
    }

    fn keeps_lines(&self) -> bool {
        true
    }

    fn keep_line(&mut self, seq: u64, line: &[u8]) {
        if self.last_held == Some(seq) {
            self.kept.keep(seq, line);
        }
    }
}

/// An item a finished [`RetentionWindow`] held: its seq, where its line is, its sizes, and
/// its line if the scan handed it over and it fitted the cap.
#[derive(Debug)]
pub struct HeldItem {
    pub seq: u64,
    pub at: EventAt,
    pub size: ItemSize,
    pub line: Option<Vec<u8>>,
}

/// How the items `prepare` kept of a source were read: decoded from lines kept during the
/// scan, or read again from the log.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LineUse {
    pub from_scan: usize,
    pub read_again: usize,
}

/// Read, project and retain the source `session_id` under `label` within `budget` bytes.
/// Errors: `READ_FAILED` (with the store's cause) or `BUDGET_EXCEEDED`.
pub fn read_source(
    store: &dyn SessionQuery,
    session_id: String,
    label: String,
    budget: usize,
) -> Result<RetainedSource, ReferenceError> {
    read_source_with_line_cap(store, session_id, label, budget, KEPT_LINE_BYTES).map(|r| r.0)
}

/// [`read_source`] with secrets in the kept messages redacted when `redact` is set
/// (docs/references.md: secret redaction): step 1 is planned on the messages as written, the
/// kept ones are redacted, and step 2 and every count use the redacted text.
pub fn read_source_redacting(
    store: &dyn SessionQuery,
    session_id: String,
    label: String,
    budget: usize,
    redact: bool,
) -> Result<RetainedSource, ReferenceError> {
    read_retained(store, session_id, label, budget, KEPT_LINE_BYTES, redact).map(|r| r.0)
}

/// [`read_source`] keeping at most `line_cap` bytes of lines during the scan, also telling
/// how the kept items were read (for tests and measurements).
pub fn read_source_with_line_cap(
    store: &dyn SessionQuery,
    session_id: String,
    label: String,
    budget: usize,
    line_cap: usize,
) -> Result<(RetainedSource, LineUse), ReferenceError> {
    read_retained(store, session_id, label, budget, line_cap, false)
}

fn read_retained(
    store: &dyn SessionQuery,
    session_id: String,
    label: String,
    budget: usize,
    line_cap: usize,
    redact: bool,
) -> Result<(RetainedSource, LineUse), ReferenceError> {
    let mut window = RetentionWindow::with_line_cap(budget, line_cap);
    let mut scan = store
        .scan_surface(&session_id, &mut window)
        .map_err(|e| ReferenceError::read_failed(&session_id, e))?;
    // A source that took items off its surface without telling the visitor (a foreign log's
    // compaction that leaves nothing) shows as held or counted items no longer on it.
    if window.inexact() || !window.all_seen_on(&*scan.on_surface()) {
        window = RetentionWindow::with_line_cap(budget, line_cap);
        scan.rescan(&mut window)
            .map_err(|e| ReferenceError::read_failed(&session_id, e))?;
    }
    let (dropped, held) = window.finish();
    let item_sizes: Vec<ItemSize> = held.iter().map(|h| h.size).collect();
    let header = SourceHeader {
        session_id,
        label,
        cwd: scan.session.cwd.clone(),
        captured_through_seq: scan.captured_through_seq,
    };
    let plan = plan_drops_after(&header, dropped, &item_sizes, budget)?;
    let wanted: Vec<(u64, EventAt, Option<&[u8]>)> = plan
        .kept
        .iter()
        .filter_map(|&i| held.get(i).map(|h| (h.seq, h.at, h.line.as_deref())))
        .collect();
    let from_scan = wanted.iter().filter(|w| w.2.is_some()).count();
    let used = LineUse {
        from_scan,
        read_again: wanted.len() - from_scan,
    };
    let events = scan
        .reread_kept(&wanted)
        .map_err(|e| ReferenceError::read_failed(&header.session_id, e))?;
    let mut items = Vec::with_capacity(events.len());
    for (event, &i) in events.iter().zip(&plan.kept) {
        let item =
            project_event(event).filter(|item| item_sizes.get(i) == Some(&ItemSize::of(item)));
        if let Some(item) = item {
            items.push(item);
        } else {
            let cause = QueryError::Corrupt {
                path: std::path::PathBuf::new(),
                line: 0,
                reason: format!("event {} changed while being read", event.seq),
            };
            return Err(ReferenceError::read_failed(&header.session_id, cause));
        }
    }
    if !redact {
        return finish_retention(header, &plan, items, budget).map(|r| (r, used));
    }
    let (items, redactions) = redact_items(items);
    let plan = plan.resized(&header, &items);
    let mut retained = finish_retention(header, &plan, items, budget)?;
    retained.redactions = redactions;
    Ok((retained, used))
}

/// Every item's text with its secrets redacted, and the counts.
pub fn redact_items(items: Vec<ConversationItem<'_>>) -> (Vec<ConversationItem<'_>>, Redactions) {
    let mut counts = Redactions::default();
    let items = items
        .into_iter()
        .map(|item| {
            let (text, found) = redact_text(&item.text);
            if found.total() == 0 {
                return item;
            }
            counts.add(&found);
            ConversationItem {
                text: std::borrow::Cow::Owned(text.into_owned()),
                ..item
            }
        })
        .collect();
    (items, counts)
}
