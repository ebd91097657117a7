//! The header line: app name, the session's title (or its id) and its working directory.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use crate::tui::text_width::display_width;
use term_text::truncate_to_width;
use term_text::visible_controls_line;

/// The header widget.
#[derive(Debug, Clone)]
pub struct Header<'a> {
    pub session_id: &'a str,
    pub title: Option<&'a str>,
    pub cwd: Option<&'a str>,
}

impl Widget for Header<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        if area.is_empty() {
            return;
        }
        let width = usize::from(area.width);
        let app = " dsh-refs ";
        let name = visible_controls_line(self.title.unwrap_or(self.session_id)).into_owned();
        let cwd = self.cwd.map_or_else(
            || "(no cwd)".to_owned(),
            |c| visible_controls_line(c).into_owned(),
        );
        // The title gets priority; the cwd takes what is left (at least a few cells).
        let rest = width.saturating_sub(display_width(app) + 3);
        let cwd_room = rest.saturating_sub(display_width(&name) + 3).max(rest / 3);
        let cwd = truncate_to_width(&cwd, cwd_room);
        let name_room = rest.saturating_sub(display_width(&cwd) + 3);
        let name = truncate_to_width(&name, name_room);
        let line = Line::from(vec![
            Span::styled(
                app,
                Style::new()
                    .fg(Color::Black)
                    .bg(Color::Cyan)
                    .add_modifier(Modifier::BOLD),
            ),
            Span::raw(" "),
            Span::styled(name, Style::new().add_modifier(Modifier::BOLD)),
            Span::styled(" · ", Style::new().add_modifier(Modifier::DIM)),
            Span::styled(cwd, Style::new().add_modifier(Modifier::DIM)),
        ]);
        line.render(area, buf);
    }
}
