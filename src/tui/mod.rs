//! Terminal app layer (docs/tui-app.md): the event loop and terminal lifecycle, transcript, status,
//! commands, and the bottom pane (composer + `@` popup).

pub mod app;
pub mod app_event;
pub mod app_keys;
pub mod bottom_pane;
pub mod chat_view;
pub mod commands;
pub mod error;
pub mod header;
pub mod history_file;
pub mod markdown;
pub mod mention_popup;
pub mod session_picker;
pub mod status_line;
pub mod terminal;
pub mod transcript;

// Moved to the widget crate; re-exported so the app's paths stay as they were.
pub use ratatui_mention::{composer, input_history, key_map, mention_token, paste, wrap};

#[cfg(test)]
mod bottom_pane_snapshots;
#[cfg(test)]
mod mention_agreement_tests;
