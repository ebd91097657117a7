//! The short-lived widget that draws a [`MentionInputState`]: the popup above, the composer
//! at the bottom of the area, and the caret recorded for the terminal cursor.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::StatefulWidget;

use crate::state::MentionInputState;

/// Draws the composer and its popup; after rendering, place the terminal cursor at
/// [`MentionInputState::cursor_position`]. Give it [`MentionInputState::desired_height`]
/// rows (it shrinks the popup first when given fewer).
#[derive(Debug, Clone, Copy, Default)]
pub struct MentionInput;

impl StatefulWidget for MentionInput {
    type State = MentionInputState;

    fn render(self, area: Rect, buf: &mut Buffer, state: &mut Self::State) {
        state.render(area, buf);
    }
}
