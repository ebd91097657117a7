//! Display width of text in terminal cells, as the widget measures it: CJK and emoji take
//! two cells, combining marks and control characters none.

use unicode_width::UnicodeWidthChar;

/// Display width of `text` in terminal cells.
pub fn display_width(text: &str) -> usize {
    text.chars().map(|c| c.width().unwrap_or(0)).sum()
}
