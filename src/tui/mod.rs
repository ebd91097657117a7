//! Terminal app layer (docs/tui-app.md): the event loop and terminal lifecycle, transcript, status,
//! commands, and the bottom pane (composer + `@` popup).

pub mod app;
pub mod app_event;
pub mod app_keys;
pub mod bottom_pane;
pub mod chat_view;
pub mod commands;
pub mod composer;
pub mod error;
pub mod header;
pub mod input_history;
pub mod key_map;
pub mod markdown;
pub mod mention_popup;
pub mod mention_token;
pub mod paste;
pub mod search_indexing;
pub mod session_picker;
pub mod status_line;
pub mod terminal;
pub mod transcript;
pub mod wrap;

#[cfg(test)]
mod bottom_pane_snapshots;
