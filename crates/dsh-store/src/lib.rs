//! Session layer (docs/session-store.md): event model, surface folding, the dsh-compatible JSONL store
//! and the read-side session query.

pub mod activity;
mod bookkeeping_line;
pub mod cache;
pub mod chunk;
pub mod compact_surface;
mod create_lock;
pub mod dsh_compat;
pub mod encoding;
pub mod error;
pub mod event;
pub mod fold;
pub mod id_order;
pub mod image_block;
pub mod index_file;
mod json_scan;
pub mod kinds;
pub mod layout;
pub mod line_cost;
mod line_skim;
pub mod listing;
pub mod log_check;
pub mod log_digest;
pub mod log_index;
pub mod log_index_file;
pub mod log_window;
pub mod lone_surrogates;
mod message_line;
pub mod nofollow;
pub mod not_loaded;
pub mod own_file;
pub mod paths;
pub mod projection;
pub mod query;
pub mod query_error;
mod read_ahead;
pub mod reader;
pub mod recent_titles;
pub mod rule_book;
pub mod scanned_event;
pub mod sized_line;
pub mod stamp;
pub mod store;
pub mod surface;
pub mod surface_scan;
pub mod tool_round;
pub mod writer;
mod zstd_frame_walk;
mod zstd_stream;

pub use activity::{Activity, SessionSummary};
pub use error::StoreError;
pub use event::{ContentBlock, Event, EventData, Message, Role, SessionHeader, Source, SurfaceOp};
pub use fold::{FoldError, SurfaceFolder, fold_surface};
pub use json_scan::TextMeasure;
pub use log_window::{LogWindow, WindowEnd, WindowLimits};
pub use query::{QueryError, SessionQuery, Surface};
pub use recent_titles::{RecentSummaries, RecentTitles};
pub use rule_book::{
    DshVersion, Effect, Envelope, Findings, Mode, Rule, RuleBook, Versions, Violation,
};
pub use scanned_event::ScannedEvent;
pub use sized_line::{SizedKind, SizedMessage, SourceClass};
pub use store::SessionStore;
pub use surface_scan::{EventAt, EventReread, SurfaceOrder, SurfaceScan, SurfaceVisitor};
pub use writer::{DueEncodingCheck, NewEvent, SessionWriter};
