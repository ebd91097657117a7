//! Session layer (SPEC §2): event model, surface folding, the dsh-compatible JSONL store
//! and the read-side session query.

pub mod event;
pub mod query;
pub mod untrusted;

pub use event::{ContentBlock, Event, EventData, Message, Role, SessionHeader, Source, SurfaceOp};
pub use query::{QueryError, SessionQuery, Surface};
