//! A surface visitor for scans that only need to know which events project to a
//! conversation item (docs/references.md: excerpt references, staleness): it measures
//! messages without decoding their text and hands each event's seq, whether it projects, and
//! the seqs its replace took off to a [`SeenProjected`].

use super::projection::{project_event, project_sized};
use dsh_store::{Event, EventAt, SizedMessage, SurfaceOrder, SurfaceVisitor};

/// What a projected-only scan tells its owner, event by event, in log order.
pub trait SeenProjected {
    /// Surface event `seq` joined (`projects`: it is a conversation item), taking `removed`
    /// off the surface.
    fn saw(&mut self, seq: u64, projects: bool, removed: &[u64]);
}

/// The [`SurfaceVisitor`] of a projected-only scan over `T`.
pub struct ProjectedScan<'a, T>(pub &'a mut T);

impl<T: SeenProjected> SurfaceVisitor for ProjectedScan<'_, T> {
    fn visit(&mut self, event: &Event, removed: &[u64]) {
        self.0
            .saw(event.seq, project_event(event).is_some(), removed);
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
        self.0
            .saw(message.seq, project_sized(message).is_some(), removed);
    }
}
