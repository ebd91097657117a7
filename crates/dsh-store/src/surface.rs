//! One session's current surface, the answer of `read_surface` (docs/session-store.md:
//! session query). A leaf beside the read contract, so the surface scan that builds it
//! does not depend on the contract that uses the scan.

use super::event::{Event, SessionHeader};

/// One session's current surface (docs/session-store.md (session query) `read_surface`).
#[derive(Debug, Clone, PartialEq)]
pub struct Surface {
    pub session: SessionHeader,
    /// Seq of the last event of any type in the log; `None` for an empty log.
    pub captured_through_seq: Option<u64>,
    /// Current surface events in folded (model) order.
    pub events: Vec<Event>,
}
