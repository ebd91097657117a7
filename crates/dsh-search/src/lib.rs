//! Full-text search over a dsh session store (docs/search.md).
//!
//! One tantivy index per store root, in the platform cache dir (never inside the store).
//! Each session is one document: its id, cwd, latest title, and its whole projected
//! conversation — the same projection the reference layer sends to a model (direct user
//! messages, steering, assistant text, compact checkpoints; compaction honoured), before any
//! retention budget. Tool traffic, reasoning, plugin messages and earlier reference contexts
//! are not indexed.
//!
//! # Use
//! ```no_run
//! use dsh_search::{Cancel, IndexOptions, SessionIndex};
//! # fn main() -> Result<(), dsh_search::SearchError> {
//! let index = SessionIndex::open("/path/to/store".as_ref(), &IndexOptions::default())?;
//! // Off the UI thread: bring the index up to date (incremental; progress per session).
//! let cancel = Cancel::new();
//! index.refresh(&cancel, &mut |p| eprintln!("indexing {} / {}", p.done, p.total))?;
//! // Per keystroke: a few milliseconds warm.
//! for hit in index.search("kafka redis", 10)? {
//!     println!("{} {}", hit.session_id, hit.label);
//!     for s in &hit.snippets {
//!         println!("  {} #{}: {}", s.role.as_str(), s.number, s.text);
//!     }
//! }
//! # Ok(()) }
//! ```
//! [`SessionIndex`] is `Send + Sync`: one thread may refresh while others search (searches
//! see each commit; a long first build commits every 2000 sessions). [`SessionIndex::status`]
//! says whether an update runs and how far it is. [`Cancel`] stops a refresh or a search.
//!
//! # Query language
//! Words separated by spaces must all occur in the session (conversation, id, cwd or
//! title); `"a quoted phrase"` must occur as a phrase within one message; the last word,
//! unless followed by a space, also matches as a prefix (`kaf` finds `Kafka`). Latin text
//! matches regardless of case and accents; CJK text by any two or more consecutive
//! characters. An unbalanced quote is [`SearchError::InvalidQuery`]. Ranking is BM25
//! with a boost for recently active sessions; words of the query said next to each other,
//! in the query's order (as a phrase, or within a few words), add to a session's score.
//!
//! # Exactness
//! Every hit is checked against the store before it is returned: a session whose log is
//! gone is dropped; one whose log changed since it was indexed is read again and must
//! still match. Several processes may share an index: one writer at a time (a second
//! [`SessionIndex::refresh`] returns with `busy`), readers never blocked. A damaged index,
//! or one of another format, is rebuilt with a notice in [`IndexStatus::notice`].

pub mod cache_location;
mod checkpoint_text;
mod engine;
pub mod error;
mod file_check;
mod foreign_logs;
mod index_update;
mod log_state;
mod long_sessions;
mod merge_plan;
mod query_plan;
pub mod query_syntax;
pub mod recall;
mod schema;
mod session_doc;
mod session_index;
pub mod session_text;
pub mod snippets;
mod store_logs;
pub mod text_analysis;
mod write_queue;

pub use dsh_foreign::Origin;
pub use error::{ErrorCode, SearchError};
pub use index_update::RefreshOutcome;
pub use session_index::{Cancel, IndexOptions, IndexStatus, Progress, SearchHit, SessionIndex};
pub use snippets::{Snippet, SnippetRole};
