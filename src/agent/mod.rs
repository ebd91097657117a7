//! Agent layer (SPEC §4): inbox, `prompt-submit` admission, steering, injection, the
//! turn/step loop, titles and compaction.

pub mod hooks;
pub mod inbox;
pub mod title;
