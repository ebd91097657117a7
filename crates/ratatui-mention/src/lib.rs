//! A ratatui composer with `@` mention autocomplete, for any host: a multi-line editor
//! whose finished mentions are atomic, a popup the host fills with rows in answer to a
//! query, input history, paste normalisation, and display sanitizing of untrusted text.
//! Nothing here knows where rows come from, and nothing runs on its own: the host keeps a
//! [`MentionInputState`], feeds it crossterm events, matches the [`Outcome`] and draws a
//! [`MentionInput`].
//!
//! ```
//! use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
//! use ratatui::{Terminal, backend::TestBackend};
//! use ratatui_mention::{MentionInput, MentionInputState, MentionItem, Outcome};
//!
//! let mut state = MentionInputState::default();
//! let key = |c| Event::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
//! state.handle_event(&key('h'));
//! state.handle_event(&key(' '));
//! // `@` opens the popup and asks the host for rows.
//! let Outcome::Query { id, .. } = state.handle_event(&key('@')) else { unreachable!() };
//! let waited = state.set_results(id, vec![MentionItem::new("42", "Alice", "@[Alice](user:42)")]);
//! assert!(waited.is_empty(), "no Enter was waiting for this answer");
//! let enter = Event::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
//! assert!(matches!(state.handle_event(&enter), Outcome::Inserted { .. }));
//! assert_eq!(state.handle_event(&enter), Outcome::Submit("h @[Alice](user:42) ".into()));
//!
//! let mut terminal = Terminal::new(TestBackend::new(40, 3)).unwrap();
//! terminal.draw(|frame| {
//!     frame.render_stateful_widget(MentionInput, frame.area(), &mut state);
//!     if let Some(at) = state.cursor_position() {
//!         frame.set_cursor_position(at);
//!     }
//! }).unwrap();
//! ```

pub mod chip;
pub mod composer;
pub mod config;
pub mod draft;
pub mod draft_layout;
pub mod grapheme;
pub mod input_history;
pub mod item;
pub mod js_chars;
pub mod key_map;
pub mod mention_popup;
pub mod mention_token;
pub mod paste;
pub mod preview;
pub mod sections;
pub mod slash_commands;
pub mod snippet;
pub mod state;
pub mod undo_stack;
pub mod untrusted;
pub mod widget;
pub mod wrap;

#[cfg(test)]
mod render_snapshots;

/// The README's example, compiled and run as a doc-test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctest;

pub use config::{MentionConfig, MentionStyles, PopupLabels};
pub use item::{DetailPart, Keep, MentionItem};
pub use key_map::{Action, Binding, KeyMap};
pub use mention_popup::{ItemPreview, MentionPopup, OfferedRows, QueryId, ResultsPage};
pub use slash_commands::CommandEntry;
pub use snippet::ItemSnippet;
pub use state::{ActivePopup, MentionInputState, Outcome};
pub use widget::MentionInput;
