//! tui layer: the terminal app (SPEC §6).

pub mod key_map;
pub mod mention_token;
pub mod paste;
