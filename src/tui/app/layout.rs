//! Where everything goes in a frame, computed once from the frame's area with ratatui's
//! `Layout`: header on top, hint line at the bottom, the composer (with the status line
//! right above it and the popup above that) rising from the hint line, and the transcript
//! in the rows left, one blank row off the popup when there is room.

use ratatui::layout::{Constraint, Layout, Rect};

use ratatui_mention::{MentionInput, MentionInputState};

/// Below this many columns or rows the app shows only "window too small".
pub const MIN_WIDTH: u16 = 30;
pub const MIN_HEIGHT: u16 = 7;

/// The composer keeps its border, one text row and the status row.
const MIN_PANE: u16 = 4;
/// Rows the transcript keeps at least (when the screen has them).
const MIN_TRANSCRIPT: u16 = 3;

/// The frame's areas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScreenLayout {
    pub header: Rect,
    pub transcript: Rect,
    /// The area the composer widget may use; it takes `pane` at its bottom.
    pub widget: Rect,
    /// The rows the composer, status line and popup take.
    pub pane: Rect,
    /// The status line: the row the widget leaves between popup and composer.
    pub status: Rect,
    pub hint: Rect,
}

impl ScreenLayout {
    /// Everything between the header and the hint line (an overlay such as `/resume`).
    pub fn overlay(&self) -> Rect {
        Rect {
            height: self.hint.y.saturating_sub(self.transcript.y),
            ..self.transcript
        }
    }

    /// The layout of `area` with the composer drawn by `input` over `state`; `None` when
    /// the area is too small for the app.
    pub fn compute(
        area: Rect,
        input: &MentionInput<'_>,
        state: &MentionInputState,
    ) -> Option<Self> {
        if area.height < MIN_HEIGHT || area.width < MIN_WIDTH {
            return None;
        }
        let [header, body, hint] = Layout::vertical([
            Constraint::Length(1),
            Constraint::Fill(1),
            Constraint::Length(1),
        ])
        .areas(area);
        // The transcript keeps a few rows (and its blank row) above the most the composer
        // and its popup may take.
        let available = body.height.saturating_sub(1);
        // With a popup open, the transcript keeps only rows the popup does not want.
        let wanted = if state.popup_active() {
            let probe = Rect {
                height: available,
                ..body
            };
            input.layout(state, probe).height().max(MIN_PANE)
        } else {
            MIN_PANE
        };
        let keep = available.saturating_sub(wanted).min(MIN_TRANSCRIPT);
        let most = available
            .saturating_sub(keep)
            .max(MIN_PANE)
            .min(body.height);
        let [_, widget] =
            Layout::vertical([Constraint::Fill(1), Constraint::Length(most)]).areas(body);
        let placed = input.layout(state, widget);
        let [upper, pane] = Layout::vertical([
            Constraint::Fill(1),
            Constraint::Length(placed.height().max(MIN_PANE.min(most))),
        ])
        .areas(body);
        // One blank row keeps a full transcript off what is below it (when there is room).
        let blank = u16::from(upper.height > 3);
        let [transcript, _] =
            Layout::vertical([Constraint::Fill(1), Constraint::Length(blank)]).areas(upper);
        Some(ScreenLayout {
            header,
            transcript,
            widget,
            pane,
            status: placed.gap,
            hint,
        })
    }
}
