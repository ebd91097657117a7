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
//! use ratatui_mention::{Mention, MentionInput, MentionInputState, MentionItem, Outcome};
//!
//! let mut state = MentionInputState::default();
//! let key = |c| Event::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
//! state.handle_event(&key('h'));
//! state.handle_event(&key(' '));
//! // `@` opens the popup and asks the host for rows.
//! let Outcome::Query { id, .. } = state.handle_event(&key('@')) else { unreachable!() };
//! let alice = Mention::new("Alice", "user:42");
//! let waited = state.set_results(id, vec![MentionItem::new("42", "Alice", &alice)]);
//! assert!(waited.is_empty(), "no Enter was waiting for this answer");
//! let enter = Event::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
//! assert!(matches!(state.handle_event(&enter), Outcome::Inserted { .. }));
//! assert_eq!(state.handle_event(&enter), Outcome::Submit("h @[Alice](user:42) ".into()));
//!
//! let mut terminal = Terminal::new(TestBackend::new(40, 3)).unwrap();
//! terminal.draw(|frame| {
//!     frame.render_stateful_widget(MentionInput::new(), frame.area(), &mut state);
//!     if let Some(at) = state.cursor_position() {
//!         frame.set_cursor_position(at);
//!     }
//! }).unwrap();
//! ```

#![warn(missing_docs)]

mod composer;
mod config;
mod draft;
mod draft_layout;
mod fold;
mod fuzzy;
mod grammar;
mod grapheme;
mod input_history;
mod item;
mod key_map;
mod link_syntax;
mod mention;
mod mention_token;
mod paste;
mod picker;
mod preview;
mod result_row;
mod results;
mod results_view;
mod sections;
mod slash_commands;
mod snippet;
mod state;
#[cfg(feature = "textarea")]
mod textarea;
#[cfg(feature = "textarea")]
mod textarea_view;
mod undo_stack;
mod uri_rule;
mod widget;

#[cfg(test)]
mod render_snapshots;

/// The README's example, compiled and run as a doc-test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctest;

pub use config::{MentionConfig, MentionStyles, PopupLabels, Trigger};
pub use item::{DetailPart, Insert, ItemPreview, Keep, MentionItem};
pub use key_map::{Action, Binding, KeyMap};
pub use link_syntax::LinkSyntax;
pub use mention::{Mention, MentionSpan, MentionSyntax};
pub use picker::{Picker, PickerOutcome, PickerView};
pub use preview::Placement;
pub use results::{
    EnterAction, MoreRequest, QueryId, ResultRow, ResultsList, ResultsPage, Section,
};
pub use slash_commands::CommandEntry;
pub use snippet::ItemSnippet;
pub use state::{MentionInputState, Outcome};
#[cfg(feature = "textarea")]
pub use textarea::{TextAreaMentions, TextAreaPopup};
#[cfg(feature = "textarea")]
pub use textarea_view::MentionTextArea;
pub use widget::{MentionInput, MentionLayout};
