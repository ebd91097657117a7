//! Drawing session rows for both pickers (the `@` popup and `/resume`): a label line with
//! the query's matches highlighted and a dim `✓` on sessions already mentioned, a dim
//! detail line `<id> · <cwd> · <created>`, and section titles.

use std::collections::{HashMap, HashSet};

use fuzzy_matcher::FuzzyMatcher;
use fuzzy_matcher::skim::SkimMatcherV2;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthStr;

pub use super::session_items::{DisplayZone, format_created};
use dsh_foreign::Origin;
use dsh_reference::Candidate;
use dsh_reference::closest::FuzzyQuery;
use ratatui_mention::ItemSnippet;
use ratatui_mention::sections::{Placed, SectionKind, SectionedList};
use ratatui_mention::snippet::snippet_line;
use ratatui_mention::untrusted::visible_controls_line;
use ratatui_mention::wrap::{truncate_start_to_width, truncate_to_width};

/// Lines one session row takes.
pub const ROW_HEIGHT: u16 = 2;

/// What the rows of a list are drawn with.
#[derive(Debug, Clone, Copy)]
pub struct RowContext<'a> {
    pub query: &'a str,
    pub zone: DisplayZone,
    /// Sessions already mentioned in the draft (marked `✓`).
    pub mentioned: &'a HashSet<String>,
    /// The session open in the app (marked `(open)` in `/resume`).
    pub current: Option<&'a str>,
    /// The section of conversation hits and each hit's matching line (drawn in place of
    /// the detail line).
    pub snippets: Option<(usize, &'a HashMap<String, ItemSnippet>)>,
    /// Where the foreign rows come from (their badge); a row not in it is a dsh session.
    pub origins: &'a HashMap<String, Origin>,
}

/// Draws the layout of `list` into `area`: section titles and two-line rows.
pub fn render_list(
    list: &SectionedList<Candidate>,
    area: Rect,
    buf: &mut Buffer,
    ctx: &RowContext<'_>,
) {
    let matcher = SkimMatcherV2::default().ignore_case();
    let fuzzy = FuzzyQuery::new(ctx.query);
    for placed in list.layout(area.height) {
        match placed {
            Placed::Title { section, y } => {
                let Some(s) = list.sections().get(section) else {
                    continue;
                };
                let title = s.title.as_deref().unwrap_or_default();
                let line = Line::styled(
                    format!("  {title}"),
                    Style::new().fg(Color::Cyan).add_modifier(Modifier::ITALIC),
                );
                buf.set_line(area.x, area.y + y, &line, area.width);
            }
            Placed::Row { at, y, selected } => {
                let Some(section) = list.sections().get(at.section) else {
                    continue;
                };
                let Some(row) = section.rows.get(at.row) else {
                    continue;
                };
                let label = visible_controls_line(&row.label).into_owned();
                let hits = if ctx.query.is_empty() {
                    Vec::new()
                } else if section.kind == SectionKind::Exact {
                    matcher
                        .fuzzy_indices(&label, ctx.query)
                        .map(|(_, indices)| indices)
                        .unwrap_or_default()
                } else {
                    fuzzy.indices(&label)
                };
                let mentioned = ctx.mentioned.contains(&row.session_id);
                let open = ctx.current == Some(row.session_id.as_str());
                let badge = ctx
                    .origins
                    .get(&row.session_id)
                    .and_then(Origin::badge)
                    .map(|b| visible_controls_line(b).into_owned());
                let marks = RowMarks {
                    selected,
                    mentioned,
                    open,
                    badge,
                };
                let line = label_line(&label, &hits, &marks, area.width);
                buf.set_line(area.x, area.y + y, &line, area.width);
                if y + 1 < area.height {
                    let snippet = ctx
                        .snippets
                        .filter(|(index, _)| *index == at.section)
                        .and_then(|(_, by_id)| by_id.get(&row.session_id));
                    let second = match snippet {
                        Some(snippet) => {
                            let dim = Style::new().fg(Color::DarkGray);
                            let hit = dim.fg(Color::Yellow).add_modifier(Modifier::UNDERLINED);
                            snippet_line(snippet, area.width, dim, hit)
                        }
                        None => detail_line(row, ctx.zone, area.width),
                    };
                    buf.set_line(area.x, area.y + y + 1, &second, area.width);
                }
            }
        }
    }
}

/// What decorates one row besides its label.
#[derive(Debug, Clone)]
struct RowMarks {
    selected: bool,
    mentioned: bool,
    open: bool,
    /// Origin badge of another tool's (read-only) session: `claude`, `codex`.
    badge: Option<String>,
}

/// `› [badge] <label>` with the chars at `hits` highlighted, `✓` when already mentioned and
/// `(open)` for the session open in the app.
fn label_line(label: &str, hits: &[usize], marks: &RowMarks, width: u16) -> Line<'static> {
    let RowMarks {
        selected,
        mentioned,
        open,
        ref badge,
    } = *marks;
    let base = if selected {
        Style::new().add_modifier(Modifier::BOLD)
    } else {
        Style::new()
    };
    let hit = base.fg(Color::Yellow).add_modifier(Modifier::UNDERLINED);
    let dim = Style::new().fg(Color::DarkGray);
    let marker = if selected {
        Span::styled(
            "› ",
            Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
        )
    } else {
        Span::raw("  ")
    };
    let mut spans = vec![marker];
    let badge = badge
        .as_ref()
        .map(|b| format!("[{b}] "))
        .unwrap_or_default();
    let badge_cells = badge.width();
    if !badge.is_empty() {
        spans.push(Span::styled(badge, Style::new().fg(Color::Magenta)));
    }
    let mut suffix = String::new();
    if mentioned {
        suffix.push_str(" ✓");
    }
    if open {
        suffix.push_str(" (open)");
    }
    let room = usize::from(width).saturating_sub(2 + badge_cells + suffix.width());
    let label = truncate_to_width(label, room);
    let mut run = String::new();
    let mut run_hit = false;
    for (index, c) in label.chars().enumerate() {
        let is_hit = hits.contains(&index) && c != '…';
        if is_hit != run_hit && !run.is_empty() {
            spans.push(Span::styled(
                std::mem::take(&mut run),
                if run_hit { hit } else { base },
            ));
        }
        run_hit = is_hit;
        run.push(c);
    }
    if !run.is_empty() {
        spans.push(Span::styled(run, if run_hit { hit } else { base }));
    }
    if !suffix.is_empty() {
        spans.push(Span::styled(suffix, dim));
    }
    Line::from(spans)
}

/// Dim `<id> · <cwd or (no cwd)> · <created, local time>`; when too wide, the id keeps
/// its start and the cwd its end so the time stays visible.
pub fn detail_line(row: &Candidate, zone: DisplayZone, width: u16) -> Line<'static> {
    let id = visible_controls_line(&row.session_id).into_owned();
    let cwd = row.cwd.as_deref().map_or_else(
        || "(no cwd)".to_string(),
        |c| visible_controls_line(c).into_owned(),
    );
    let time = format_created(row.created_at, zone);
    let room = usize::from(width).saturating_sub(DETAIL_INDENT.len());
    let rest = room.saturating_sub(time.width() + 2 * SEPARATOR.width());
    let (id_room, cwd_room) = share(rest, id.width(), cwd.width());
    let id = truncate_to_width(&id, id_room.max(MIN_PART_CELLS));
    let cwd = truncate_start_to_width(&cwd, cwd_room.max(MIN_PART_CELLS));
    let text = format!("{DETAIL_INDENT}{id}{SEPARATOR}{cwd}{SEPARATOR}{time}");
    Line::styled(text, Style::new().fg(Color::DarkGray))
}

const DETAIL_INDENT: &str = "    ";
const SEPARATOR: &str = " · ";
/// Fewest cells an id or cwd is cut down to.
const MIN_PART_CELLS: usize = 8;

/// Splits `room` cells between two parts that want `a` and `b`: a part that fits in half
/// keeps its width and the other gets the rest; otherwise half each.
fn share(room: usize, a: usize, b: usize) -> (usize, usize) {
    let half = room / 2;
    if a + b <= room {
        (a, b)
    } else if a <= half {
        (a, room - a)
    } else if b <= half {
        (room - b, b)
    } else {
        (half, room - half)
    }
}

/// The bottom-border count: `3/106` on an exact match, `2/20 closest` elsewhere,
/// `no exact match` when nothing matches exactly.
pub fn position_label(list: &SectionedList<Candidate>) -> Option<String> {
    let exact_total = list.sections().first().map_or(0, |s| s.total);
    match list.selected() {
        Some(sel) => {
            let section = list.sections().get(sel.section)?;
            let total = section.total;
            Some(match &section.title {
                Some(title) if sel.section > 0 => format!("{}/{total} {title}", sel.row + 1),
                _ => format!("{}/{total}", sel.row + 1),
            })
        }
        None if exact_total == 0 && !list.is_empty() => Some("no exact match".to_string()),
        None if exact_total > 0 => Some(format!("–/{exact_total}")),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn room_is_shared_between_id_and_cwd() {
        let cases = [
            ((40, 10, 10), (10, 10)),
            ((40, 5, 50), (5, 35)),
            ((40, 50, 5), (35, 5)),
            ((40, 30, 30), (20, 20)),
            ((41, 30, 30), (20, 21)),
            ((0, 3, 3), (0, 0)),
        ];
        for ((room, a, b), want) in cases {
            assert_eq!(share(room, a, b), want, "{room} {a} {b}");
        }
    }
}
