//! Reading one referenced source for `prepare` (docs/references.md (prepare, steps 3–4)) without holding its log:
//! a streaming surface scan records only the sizes of projected items, retention step 1 is
//! planned on those sizes, and only the items it keeps are read again for their text.

use std::collections::HashMap;

use super::error::ReferenceError;
use super::projection::project_event;
use super::retention::{ItemSize, RetainedSource, SourceHeader, finish_retention, plan_drops};
use dsh_store::{Event, QueryError, SessionQuery, SurfaceVisitor};

/// Sizes of the projected items of a surface being scanned, by seq; items a replace took off
/// the surface are forgotten at once.
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

/// Read, project and retain the source `session_id` under `label` within `budget` bytes.
/// Errors: `READ_FAILED` (with the store's cause) or `BUDGET_EXCEEDED`.
pub fn read_source(
    store: &dyn SessionQuery,
    session_id: String,
    label: String,
    budget: usize,
) -> Result<RetainedSource, ReferenceError> {
    let mut sizes = ProjectedSizes::default();
    let mut scan = store
        .scan_surface(&session_id, &mut sizes)
        .map_err(|e| ReferenceError::read_failed(&session_id, e))?;
    let (seqs, item_sizes) = sizes.in_order(&scan.surface);
    drop(sizes);
    let header = SourceHeader {
        session_id,
        label,
        cwd: scan.session.cwd.clone(),
        captured_through_seq: scan.captured_through_seq,
    };
    let plan = plan_drops(&header, &item_sizes, budget)?;
    let kept_seqs: Vec<u64> = plan
        .kept
        .iter()
        .filter_map(|&i| seqs.get(i).copied())
        .collect();
    let events = scan
        .reread(&kept_seqs)
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
    finish_retention(header, &plan, items, budget)
}
