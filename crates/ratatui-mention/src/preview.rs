//! Where a popup's preview pane goes and how it is drawn: on the right when the screen is
//! wide, below the list when it is narrow but tall, hidden otherwise or when the user turned
//! it off. The host supplies the lines for the selected item.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Clear, Widget};

use crate::item::ItemPreview;
use crate::results::{ResultRow, ResultsList};
use term_text::wrap_lines;

/// Narrowest screen that puts the preview on the right.
pub const RIGHT_MIN_WIDTH: u16 = 100;
/// Fewest rows of the area a widget is drawn in that put the preview below the list when it
/// is too narrow for the right (unless the widget is told otherwise).
pub const BELOW_MIN_HEIGHT: u16 = 24;
/// Lines a preview below the list takes (border included).
pub const BELOW_HEIGHT: u16 = 12;
/// Fewest lines a popup with a preview on the right takes (border included).
pub const RIGHT_MIN_HEIGHT: u16 = 12;

/// Where a popup's preview of the selected row goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Placement {
    /// Beside the list, on the right (wide areas).
    Right,
    /// Under the list (narrow but tall areas).
    Below,
    /// Not shown (small areas, turned off, or nothing selected).
    #[default]
    Hidden,
}

/// The placement in a `width`×`height` area, if the user has the preview `enabled`: right
/// from [`RIGHT_MIN_WIDTH`] columns, else below from `below_min_height` rows.
pub fn placement(enabled: bool, width: u16, height: u16, below_min_height: u16) -> Placement {
    if !enabled {
        Placement::Hidden
    } else if width >= RIGHT_MIN_WIDTH {
        Placement::Right
    } else if height >= below_min_height {
        Placement::Below
    } else {
        Placement::Hidden
    }
}

/// What a list's preview is doing: whether the host has it at all, whether the user wants
/// it, where the last frame could put it (which decides whether the host is asked for
/// content at all), and the host's content for the selected row.
#[derive(Debug, Clone)]
pub(crate) struct PreviewState {
    /// The host turned the preview on.
    available: bool,
    /// The user has not hidden it.
    enabled: bool,
    /// Width, height and below-threshold of the area of the last render.
    last_area: Option<(u16, u16, u16)>,
    shown: Option<ItemPreview>,
}

impl PreviewState {
    /// A preview the host turned on (`available`) or off.
    pub(crate) fn new(available: bool) -> Self {
        PreviewState {
            available,
            enabled: true,
            last_area: None,
            shown: None,
        }
    }

    /// The key of `results`' selected row when a visible preview needs the host's content
    /// for it (asked once per selection).
    pub(crate) fn want<T: ResultRow>(&mut self, results: &mut ResultsList<T>) -> Option<String> {
        let (width, height, below) = self.last_area?;
        if placement(self.enabled(), width, height, below) == Placement::Hidden {
            return None;
        }
        let key = results.want_preview()?;
        self.shown = None;
        Some(key)
    }

    /// Takes the host's content; one for a row no longer asked about is dropped.
    pub(crate) fn set<T: ResultRow>(&mut self, results: &ResultsList<T>, preview: ItemPreview) {
        if results.preview_asked() == Some(preview.key.as_str()) {
            self.shown = Some(preview);
        }
    }

    /// The content on show.
    pub(crate) fn shown(&self) -> Option<&ItemPreview> {
        self.shown.as_ref()
    }

    /// Forgets the content (the list was cleared).
    pub(crate) fn clear(&mut self) {
        self.shown = None;
    }

    /// Shows or hides the preview (the user's key); false when the host has none.
    pub(crate) fn toggle(&mut self) -> bool {
        self.enabled = !self.enabled;
        self.available
    }

    /// Whether the preview is on and the user wants it.
    pub(crate) fn enabled(&self) -> bool {
        self.available && self.enabled
    }

    /// The area the list was just drawn in, where a preview goes from `below_min_height`
    /// rows.
    pub(crate) fn remember_area(&mut self, width: u16, height: u16, below_min_height: u16) {
        self.last_area = Some((width, height, below_min_height));
    }
}

/// Splits a popup `area` into (list, preview) for `placement`.
pub fn split(area: Rect, placement: Placement) -> (Rect, Option<Rect>) {
    match placement {
        Placement::Hidden => (area, None),
        Placement::Right => {
            let list_width = area.width * 11 / 20;
            let list = Rect {
                width: list_width,
                ..area
            };
            let preview = Rect {
                x: area.x + list_width,
                width: area.width - list_width,
                ..area
            };
            (list, Some(preview))
        }
        Placement::Below => {
            // The full height when the list keeps a row (border + one line), else half.
            let preview_height = if area.height >= BELOW_HEIGHT + 3 {
                BELOW_HEIGHT
            } else {
                area.height / 2
            };
            let list = Rect {
                height: area.height - preview_height,
                ..area
            };
            let preview = Rect {
                y: area.y + list.height,
                height: preview_height,
                ..area
            };
            (list, Some(preview))
        }
    }
}

/// A bordered pane of host-supplied lines: `header` lines on top (one screen line each),
/// then `body` wrapped to the width; when the body does not fit, its last lines stay
/// visible (newest at the bottom).
#[derive(Debug, Clone)]
pub struct PreviewPane<'a> {
    pub title: &'a str,
    pub header: Vec<Line<'a>>,
    pub body: Vec<Line<'a>>,
    pub border: Style,
    pub title_style: Style,
}

impl Widget for PreviewPane<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        Clear.render(area, buf);
        let block = Block::bordered()
            .border_type(BorderType::Rounded)
            .border_style(self.border)
            .title(Span::styled(format!(" {} ", self.title), self.title_style));
        let inner = block.inner(area);
        block.render(area, buf);
        if inner.width == 0 || inner.height == 0 {
            return;
        }
        let mut y = inner.y;
        for line in self.header.iter().take(usize::from(inner.height)) {
            buf.set_line(inner.x, y, line, inner.width);
            y += 1;
        }
        let room = usize::from(inner.bottom() - y);
        let body = wrap_lines(&self.body, inner.width);
        let skip = body.len().saturating_sub(room);
        for line in body.iter().skip(skip) {
            buf.set_line(inner.x, y, line, inner.width);
            y += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placement_follows_the_screen_size() {
        assert_eq!(placement(true, 120, 20, 30), Placement::Right);
        assert_eq!(placement(true, 100, 15, 30), Placement::Right);
        assert_eq!(placement(true, 99, 30, 30), Placement::Below);
        assert_eq!(placement(true, 60, 29, 30), Placement::Hidden);
        assert_eq!(placement(true, 60, 24, BELOW_MIN_HEIGHT), Placement::Below);
        assert_eq!(placement(true, 60, 15, BELOW_MIN_HEIGHT), Placement::Hidden);
        assert_eq!(placement(false, 200, 60, 0), Placement::Hidden);
    }

    #[test]
    fn split_shares_the_area() {
        let area = Rect::new(0, 5, 120, 12);
        let (list, preview) = split(area, Placement::Right);
        assert_eq!(list, Rect::new(0, 5, 66, 12));
        assert_eq!(preview, Some(Rect::new(66, 5, 54, 12)));
        let (list, preview) = split(Rect::new(0, 0, 80, 20), Placement::Below);
        assert_eq!(list, Rect::new(0, 0, 80, 8));
        assert_eq!(preview, Some(Rect::new(0, 8, 80, 12)));
        let (list, preview) = split(Rect::new(0, 0, 80, 10), Placement::Below);
        assert_eq!(list, Rect::new(0, 0, 80, 5));
        assert_eq!(preview, Some(Rect::new(0, 5, 80, 5)));
        assert_eq!(split(area, Placement::Hidden), (area, None));
    }
}
