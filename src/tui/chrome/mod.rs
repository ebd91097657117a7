//! The chrome around the conversation: the header row and the status line.

pub mod header;
pub mod status_line;
