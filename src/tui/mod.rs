//! Terminal app layer (docs/tui-app.md), one folder per part: the app (event loop, routing,
//! layout), the composer (the `ratatui-mention` widget fed with sessions, the submit flow),
//! the `/resume` picker, conversation search, previews, the open session, the transcript
//! and the chrome around them. Each background concern runs through one [`request_slot`].

pub mod app;
pub mod chrome;
pub mod composer;
pub mod error;
pub mod picker;
pub mod preview;
pub mod request_slot;
pub mod search;
pub mod session;
pub mod terminal;
pub mod text_width;
pub mod transcript;
