//! Path candidates for `@file` mentions (docs/references.md: file references): a bounded,
//! `.gitignore`-aware walk of a working directory and a path-aware fuzzy ranking with the
//! positions that matched. No dsh policy and no async runtime: the host runs the walk off its
//! UI thread and ranks on each keystroke.

pub mod rank;
pub mod walk;

pub use rank::{FileRanker, RankedPath};
pub use walk::{EXCLUDED_DIRECTORIES, EntryKind, FileIndex, MAX_ENTRIES, PathEntry, walk};
