//! Terminal app layer (docs/tui-app.md), one folder per part: the app (event loop, routing,
//! layout), the composer (the `ratatui-mention` widget fed with sessions, the submit flow),
//! the `/resume` picker, conversation search, previews, the open session (and one shown
//! read-only), the transcript and the chrome around them. Beside the parts: the one event
//! bus ([`event`]) they send on and the slash command table ([`commands`]) — no part imports
//! the app, which reaches down into them. Each background concern runs through one
//! [`request_slot`].

pub mod app;
pub mod chrome;
pub mod commands;
pub mod composer;
pub mod error;
pub mod event;
pub mod picker;
pub mod preview;
pub mod request_slot;
pub mod search;
pub mod session;
pub mod terminal;
pub mod text_width;
pub mod transcript;
