//! A ratatui composer with `@` mention autocomplete: token detection, a multi-line editor
//! with atomic mentions and input history, a key map, paste normalisation, width-aware
//! wrapping and display sanitizing of untrusted text. Nothing here knows about sessions.

pub mod chip;
pub mod composer;
pub mod draft;
pub mod draft_layout;
pub mod grapheme;
pub mod input_history;
pub mod js_chars;
pub mod key_map;
pub mod mention_token;
pub mod paste;
pub mod undo_stack;
pub mod untrusted;
pub mod wrap;
