//! The short-lived widget that draws a [`MentionInputState`], built each frame with its look
//! (block, styles, labels, placeholder, focus) like ratatui's own widgets: the composer at
//! the bottom of the area, the popup above it, and the caret recorded for the terminal
//! cursor. Where everything goes is computed once, by [`MentionInput::layout`].

use std::borrow::Cow;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::{Block, StatefulWidget, Widget};

use crate::config::{MentionStyles, PopupLabels};
use crate::preview::{self, Placement};
use crate::results_view::Look;
use crate::state::MentionInputState;

/// Draws the composer and its popup. The widget takes the rows it needs at the bottom of
/// the area it is given and leaves the rows above untouched: give it the area it may grow
/// into and lay out the rest of the screen from [`MentionInput::layout`] (or
/// [`MentionInput::desired_height`]) computed on the same area. After rendering, put the
/// terminal cursor at [`MentionInputState::cursor_position`].
///
/// ```
/// use ratatui::widgets::Block;
/// use ratatui_mention::{MentionInput, MentionStyles};
///
/// let input = MentionInput::new()
///     .block(Block::bordered())
///     .placeholder("Write a note · @ mentions a person")
///     .styles(MentionStyles::default());
/// # let _ = input;
/// ```
#[derive(Debug, Clone, Default)]
pub struct MentionInput<'a> {
    block: Option<Block<'a>>,
    styles: MentionStyles,
    labels: Cow<'a, PopupLabels>,
    placeholder: Cow<'a, str>,
    focused: Option<bool>,
    below_min_height: Option<u16>,
}

/// Where a [`MentionInput`] draws in an area: computed once per frame, from the area alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MentionLayout {
    /// The popup (and its preview); zero rows when none is open.
    pub popup: Rect,
    /// The rows left between the popup and the composer for the host (see
    /// [`crate::MentionConfig::with_gap_above_composer`]).
    pub gap: Rect,
    /// The composer, block included, at the bottom of the area.
    pub composer: Rect,
    /// Where the popup's preview goes.
    pub preview: Placement,
}

impl MentionLayout {
    /// Rows used at the bottom of the area: popup, gap and composer.
    pub fn height(&self) -> u16 {
        self.popup.height + self.gap.height + self.composer.height
    }
}

impl<'a> MentionInput<'a> {
    /// The widget with no block, default styles and labels, and no placeholder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Draws the composer inside `block` (e.g. `Block::bordered()`).
    #[must_use]
    pub fn block(mut self, block: Block<'a>) -> Self {
        self.block = Some(block);
        self
    }

    /// Draws with `styles`.
    #[must_use]
    pub fn styles(mut self, styles: MentionStyles) -> Self {
        self.styles = styles;
        self
    }

    /// Shows `labels` in the popup.
    #[must_use]
    pub fn labels(mut self, labels: impl Into<Cow<'a, PopupLabels>>) -> Self {
        self.labels = labels.into();
        self
    }

    /// Shows `placeholder` in an empty composer.
    #[must_use]
    pub fn placeholder(mut self, placeholder: impl Into<Cow<'a, str>>) -> Self {
        self.placeholder = placeholder.into();
        self
    }

    /// Whether the input has the focus (default yes): without it the popup is not drawn
    /// and there is no caret.
    #[must_use]
    pub fn focused(mut self, focused: bool) -> Self {
        self.focused = Some(focused);
        self
    }

    /// Below this many rows of area, a popup narrower than 100 columns has no preview
    /// (default 24).
    #[must_use]
    pub fn preview_below_min_height(mut self, rows: u16) -> Self {
        self.below_min_height = Some(rows);
        self
    }

    /// Rows the widget uses at the bottom of a `width`×`max_height` area.
    pub fn desired_height(&self, state: &MentionInputState, width: u16, max_height: u16) -> u16 {
        self.layout(state, Rect::new(0, 0, width, max_height))
            .height()
    }

    /// Where the popup, the gap and the composer go in `area` (bottom-aligned; the popup
    /// shrinks first when room is short).
    pub fn layout(&self, state: &MentionInputState, area: Rect) -> MentionLayout {
        let (frame_w, frame_h) = self.block_frame();
        let text_rows = state.composer_text_rows(area.width.saturating_sub(frame_w));
        let composer_h = text_rows.saturating_add(frame_h).min(area.height);
        let gap_h = state
            .config()
            .gap_above_composer
            .min(area.height - composer_h);
        let room = area.height - composer_h - gap_h;
        let preview = if self.is_focused() && state.has_selected_row() {
            preview::placement(
                state.preview_enabled(),
                area.width,
                area.height,
                self.below_min_height.unwrap_or(preview::BELOW_MIN_HEIGHT),
            )
        } else {
            Placement::Hidden
        };
        let popup_h = if self.is_focused() {
            state.popup_height(preview).min(room)
        } else {
            0
        };
        let bottom = area.bottom();
        let composer = Rect::new(area.x, bottom - composer_h, area.width, composer_h);
        let gap = Rect::new(area.x, composer.y - gap_h, area.width, gap_h);
        let popup = Rect::new(area.x, gap.y - popup_h, area.width, popup_h);
        MentionLayout {
            popup,
            gap,
            composer,
            // A popup squeezed below its frame's height is one line: no preview beside it.
            preview: if popup_h < crate::results_view::FRAMED_MIN_HEIGHT {
                Placement::Hidden
            } else {
                preview
            },
        }
    }

    fn is_focused(&self) -> bool {
        self.focused.unwrap_or(true)
    }

    /// Columns and rows the block takes around the text.
    fn block_frame(&self) -> (u16, u16) {
        let Some(block) = &self.block else {
            return (0, 0);
        };
        let probe = Rect::new(0, 0, 100, 100);
        let inner = block.inner(probe);
        (probe.width - inner.width, probe.height - inner.height)
    }
}

impl StatefulWidget for MentionInput<'_> {
    type State = MentionInputState;

    fn render(self, area: Rect, buf: &mut Buffer, state: &mut Self::State) {
        let layout = self.layout(state, area);
        state.remember_area(
            area,
            self.below_min_height.unwrap_or(preview::BELOW_MIN_HEIGHT),
        );
        let look = Look {
            styles: &self.styles,
            labels: &self.labels,
        };
        state.render_popup(layout.popup, layout.preview, buf, look);
        let inner = match &self.block {
            Some(block) => {
                let inner = block.inner(layout.composer);
                block.clone().render(layout.composer, buf);
                inner
            }
            None => layout.composer,
        };
        let cursor = state.render_composer(
            inner,
            buf,
            (&self.placeholder, self.styles.placeholder),
            (self.styles.mention, self.styles.pasted),
        );
        state.set_cursor(cursor.filter(|_| self.is_focused()));
    }
}
