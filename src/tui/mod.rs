//! Terminal app layer (docs/tui-app.md): the event loop and terminal lifecycle, transcript, status,
//! commands, the submit flow, and the `@` composer (the `ratatui-mention` widget fed with
//! sessions).

pub mod app;
pub mod app_event;
pub mod app_keys;
pub mod chat_view;
pub mod commands;
pub mod conversation_hits;
pub mod error;
pub mod header;
pub mod history_file;
pub mod markdown;
pub mod remembered_page;
pub mod search_indexing;
pub mod session_items;
pub mod session_picker;
pub mod session_preview;
pub mod session_rows;
pub mod status_line;
pub mod submit_flow;
pub mod terminal;
pub mod transcript;
pub mod transcript_render;
#[cfg(test)]
mod transcript_snapshots;

#[cfg(test)]
mod mention_agreement_tests;
#[cfg(test)]
mod picker_snapshots;
