//! tui layer: the terminal app (SPEC §6).

pub mod bottom_pane;
pub mod composer;
pub mod input_history;
pub mod key_map;
pub mod mention_popup;
pub mod mention_token;
pub mod paste;

#[cfg(test)]
mod bottom_pane_snapshots;
