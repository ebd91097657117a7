//! Reading an excerpt reference (docs/references.md: excerpt references): the window of the
//! projected conversation around one message, retained by the same rules as a whole source.
//!
//! One streaming scan notes which surface events project to a conversation item (a bit per
//! seq) and follows the matched message through replaces: when a compaction takes it off
//! the surface, the checkpoint that replaced it stands for it. The window's events are then
//! read again, projected, redacted when asked, and retained.

use super::error::ReferenceError;
use super::excerpt_uri::ExcerptRange;
pub use super::excerpt_window::ExcerptWindow;
use super::projected_scan::{ProjectedScan, SeenProjected};
use super::projection::{ConversationItem, project_event};
use super::redact::Redactions;
use super::retention::{RetainedSource, SourceHeader, retain_source};
use super::source_read::redact_items;
use dsh_store::SessionQuery;

/// The visitor of an excerpt scan: which seqs project, and what stands for the match.
#[derive(Debug)]
struct ExcerptScan {
    anchor: u64,
    /// The seq standing for the anchor, once it has been seen.
    standing: Option<u64>,
    /// The anchor was seen but the event standing for it was taken off without a
    /// projected replacement.
    lost: bool,
    projected: Vec<u64>,
}

impl ExcerptScan {
    fn new(anchor: u64) -> Self {
        ExcerptScan {
            anchor,
            standing: None,
            lost: false,
            projected: Vec::new(),
        }
    }

    fn mark(&mut self, seq: u64) {
        let Ok(word) = usize::try_from(seq / 64) else {
            return;
        };
        if self.projected.len() <= word {
            self.projected.resize(word + 1, 0);
        }
        if let Some(w) = self.projected.get_mut(word) {
            *w |= 1 << (seq % 64);
        }
    }

    fn is_projected(&self, seq: u64) -> bool {
        usize::try_from(seq / 64)
            .ok()
            .and_then(|w| self.projected.get(w))
            .is_some_and(|w| w >> (seq % 64) & 1 == 1)
    }
}

impl SeenProjected for ExcerptScan {
    fn saw(&mut self, seq: u64, projects: bool, removed: &[u64]) {
        let replaced = self.standing.is_some_and(|s| removed.contains(&s));
        if projects {
            self.mark(seq);
        }
        if seq == self.anchor {
            self.standing = projects.then_some(seq);
        } else if replaced {
            self.standing = projects.then_some(seq);
            self.lost = !projects;
        }
    }
}

/// Read the excerpt `range` of its session as `label`, within `budget` bytes, redacting
/// secrets when `redact` is set; the result's `excerpt` says where the window lies. Errors: `READ_FAILED`, `INVALID_REFERENCE` (the message is
/// not, or no longer, part of the conversation) or `BUDGET_EXCEEDED`.
pub fn read_excerpt(
    store: &dyn SessionQuery,
    range: &ExcerptRange,
    label: String,
    budget: usize,
    redact: bool,
) -> Result<RetainedSource, ReferenceError> {
    let id = range.session_id.as_str();
    let mut visitor = ExcerptScan::new(range.seq);
    let mut scan = store
        .scan_surface(id, &mut ProjectedScan(&mut visitor))
        .map_err(|e| ReferenceError::read_failed(id, e))?;
    let projected: Vec<u64> = scan
        .surface_seqs()
        .into_iter()
        .filter(|&s| visitor.is_projected(s))
        .collect();
    let gone = || {
        let why = if visitor.lost {
            "no longer part of its conversation"
        } else {
            "not a message of its conversation"
        };
        ReferenceError::invalid_reference(format!(
            "excerpt of session {id:?}: message {} is {why}",
            range.seq
        ))
    };
    let standing = visitor.standing.ok_or_else(gone)?;
    let index = projected
        .iter()
        .position(|&s| s == standing)
        .ok_or_else(gone)?;
    let first = index.saturating_sub(range.before as usize);
    let last = index
        .saturating_add(range.after as usize)
        .min(projected.len().saturating_sub(1));
    let seqs = projected.get(first..=last).unwrap_or_default().to_vec();
    let events = scan
        .reread(&seqs)
        .map_err(|e| ReferenceError::read_failed(id, e))?;
    let items: Vec<ConversationItem<'_>> = events.iter().filter_map(project_event).collect();
    if items.len() != seqs.len() {
        return Err(ReferenceError::read_failed(
            id,
            dsh_store::QueryError::Corrupt {
                path: std::path::PathBuf::new(),
                line: 0,
                reason: "a message of the excerpt changed while being read".into(),
            },
        ));
    }
    let (items, redactions) = if redact {
        redact_items(items)
    } else {
        (items, Redactions::default())
    };
    let header = SourceHeader {
        session_id: range.session_id.clone(),
        label,
        cwd: scan.session.cwd.clone(),
        captured_through_seq: scan.captured_through_seq,
    };
    let mut retained = retain_source(header, items, budget)?;
    retained.redactions = redactions;
    let window = ExcerptWindow {
        seq: range.seq,
        before: range.before,
        after: range.after,
        match_seq: standing,
        first_seq: seqs.first().copied().unwrap_or(standing),
        last_seq: seqs.last().copied().unwrap_or(standing),
        first: first + 1,
        last: last + 1,
        of: projected.len(),
    };
    retained.excerpt = Some(window);
    Ok(retained)
}
