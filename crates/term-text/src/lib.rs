//! Text for terminal cells, shared by the widget and the app: untrusted text with its control
//! and invisible formatting characters made visible ([`visible_controls`],
//! [`visible_controls_line`]), so nothing printed can move the cursor, restyle the terminal
//! or reorder what a reader sees; display width, truncation with an ellipsis at either end or
//! in the middle, and soft wrapping of styled [`ratatui::text::Line`]s (CJK and emoji take two
//! cells, combining marks none).
//!
//! ```
//! use term_text::{truncate_to_width, visible_controls_line};
//!
//! assert_eq!(visible_controls_line("title\u{1b}[2J"), r"title\x1B[2J");
//! assert_eq!(truncate_to_width("漢字漢字", 5), "漢字…");
//! ```

#![warn(missing_docs)]

mod visible;
mod wrap;

pub use visible::{
    is_control, is_invisible_format, needs_escape, visible_controls, visible_controls_line,
};
pub use wrap::{
    display_width, truncate_middle_to_width, truncate_start_to_width, truncate_to_width, wrap_line,
    wrap_line_hanging, wrap_lines,
};
