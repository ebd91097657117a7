//! The header line: app name, the session's title (or its id) and its working directory —
//! at narrow widths the directory is cut in the middle, keeping the project's name (its last
//! part).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use unicode_width::UnicodeWidthChar;

use crate::tui::text_width::display_width;
use term_text::truncate_to_width;
use term_text::visible_controls_line;

/// Cells the title keeps at least when the project's name wants the rest.
const TITLE_LEAST: usize = 6;

/// What stands for the cut part of a directory.
const CUT: char = '…';

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
        // The title gets priority; the cwd takes what is left, but at least room for the
        // project's name (leaving the title a few cells) or a third of the line; `rest` is
        // the line without the app's name and the two separators.
        let rest = width.saturating_sub(display_width(app) + 4);
        let project = display_width(project_name(&cwd)) + 1;
        let least = project.min(rest.saturating_sub(TITLE_LEAST)).max(rest / 3);
        let cwd_room = rest.saturating_sub(display_width(&name)).max(least);
        let cwd = cut_path(&cwd, cwd_room);
        let name_room = rest.saturating_sub(display_width(&cwd));
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

/// The last part of `path` (the project's name); the whole of it when it has no `/`.
fn project_name(path: &str) -> &str {
    let trimmed = path.trim_end_matches('/');
    match trimmed.rsplit_once('/') {
        Some((_, last)) if !last.is_empty() => last,
        _ => path,
    }
}

/// The longest start of `text` within `cells` columns.
fn head(text: &str, cells: usize) -> String {
    let mut used = 0;
    text.chars()
        .take_while(|c| {
            used += c.width().unwrap_or(0);
            used <= cells
        })
        .collect()
}

/// The longest end of `text` within `cells` columns.
fn tail(text: &str, cells: usize) -> String {
    let mut used = 0;
    let mut kept: Vec<char> = text
        .chars()
        .rev()
        .take_while(|c| {
            used += c.width().unwrap_or(0);
            used <= cells
        })
        .collect();
    kept.reverse();
    kept.into_iter().collect()
}

/// `path` within `cells` columns, cut in the middle so its project's name stays:
/// `/home/ana/…/dsh-refs`, then `…dsh-refs`, then the name itself cut in the middle
/// (`dsh…efs`).
fn cut_path(path: &str, cells: usize) -> String {
    if display_width(path) <= cells {
        return path.to_owned();
    }
    if cells == 0 {
        return String::new();
    }
    let name = project_name(path);
    let name_width = display_width(name);
    let with_slash = name_width + 1;
    if cells > with_slash {
        let start = head(path, cells - with_slash - 1);
        return format!("{start}{CUT}/{name}");
    }
    if cells > name_width {
        return format!("{CUT}{name}");
    }
    let room = cells - 1;
    let start = head(name, room / 2);
    let end = tail(name, room - display_width(&start));
    format!("{start}{CUT}{end}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_path_is_cut_in_the_middle_keeping_the_projects_name() {
        let path = "/home/ana/src/dsh-refs";
        let cases = [
            (40, "/home/ana/src/dsh-refs"),
            (22, "/home/ana/src/dsh-refs"),
            (21, "/home/ana/s…/dsh-refs"),
            (11, "/…/dsh-refs"),
            (10, "…/dsh-refs"),
            (9, "…dsh-refs"),
            (8, "dsh…refs"),
            (5, "ds…fs"),
            (1, "…"),
            (0, ""),
        ];
        for (cells, want) in cases {
            let got = cut_path(path, cells);
            assert_eq!(got, want, "{cells}");
            assert!(display_width(&got) <= cells, "{cells}: {got}");
        }
        // Wide characters count as two cells.
        assert_eq!(cut_path("/home/漢字/項目", 8), "/h…/項目");
        assert_eq!(cut_path("(no cwd)", 5), "(n…d)");
        assert_eq!(project_name("/w/app/"), "app");
    }

    #[test]
    fn the_header_keeps_the_projects_name_at_narrow_widths() {
        for (width, project) in [
            (30u16, "bill…rvice"),
            (40, "…billing-service"),
            (60, "…billing-service"),
            (100, "/home/ana/work/cu…/billing-service"),
            (120, "/home/ana/work/customers/billing-service"),
        ] {
            let area = Rect::new(0, 0, width, 1);
            let mut buf = Buffer::empty(area);
            Header {
                session_id: "s-1",
                title: Some("Why does login fail after the upgrade of the service"),
                cwd: Some("/home/ana/work/customers/billing-service"),
            }
            .render(area, &mut buf);
            let row: String = (0..width)
                .map(|x| buf[(x, 0)].symbol().to_owned())
                .collect();
            assert!(row.contains(&format!(" · {project}")), "{width}: {row}");
            assert!(row.contains(" Why"), "{width}: {row}");
        }
    }
}
