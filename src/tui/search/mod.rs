//! Full-text search of conversations: the index kept up to date in the background, and the
//! "in conversations" section both pickers show from it.

pub mod conversation_hits;
pub mod indexing;
