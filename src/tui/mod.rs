//! Terminal app layer (SPEC §6): the event loop, transcript, status, commands and the
//! terminal lifecycle.

pub mod app_keys;
pub mod chat_view;
pub mod commands;
pub mod error;
pub mod header;
pub mod markdown;
pub mod session_picker;
pub mod status_line;
pub mod terminal;
pub mod transcript;
pub mod wrap;
