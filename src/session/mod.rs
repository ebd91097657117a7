//! Session layer (SPEC §2): event model, surface folding, the dsh-compatible JSONL store
//! and the read-side session query.

pub mod dsh_compat;
pub mod error;
pub mod event;
pub mod fold;
pub mod listing;
pub mod paths;
pub mod query;
pub mod reader;
pub mod store;
pub mod untrusted;
pub mod writer;

pub use error::StoreError;
pub use event::{ContentBlock, Event, EventData, Message, Role, SessionHeader, Source, SurfaceOp};
pub use fold::{FoldError, SurfaceFolder, fold_surface};
pub use query::{QueryError, SessionQuery, Surface};
pub use store::SessionStore;
pub use writer::{NewEvent, SessionWriter};
