//! Soft wrapping of styled lines by display width (CJK and emoji take two cells, combining
//! marks none). Breaks after spaces when it can, inside a word only when it must.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

/// Display width of `text` in terminal cells.
pub fn display_width(text: &str) -> usize {
    text.chars().map(char_width).sum()
}

fn char_width(c: char) -> usize {
    c.width().unwrap_or(0)
}

/// Wrap one styled line into lines at most `width` cells wide (a single character wider
/// than `width` still gets its own line). An empty line stays one empty line.
pub fn wrap_line(line: &Line<'_>, width: u16) -> Vec<Line<'static>> {
    wrap_line_hanging(line, width, 0)
}

/// Wraps one styled line into lines at most `width` cells wide, breaking after spaces when
/// it can; continuation rows are indented by `hang` spaces (list items).
pub fn wrap_line_hanging(line: &Line<'_>, width: u16, hang: u16) -> Vec<Line<'static>> {
    let first_width = usize::from(width.max(1));
    let hang = if hang >= width { 0 } else { usize::from(hang) };
    let mut width = first_width;
    let chars: Vec<(char, Style)> = line
        .spans
        .iter()
        .flat_map(|span| span.content.chars().map(move |c| (c, span.style)))
        .collect();
    let mut rows: Vec<Vec<(char, Style)>> = Vec::new();
    let mut current: Vec<(char, Style)> = Vec::new();
    let mut current_width = 0usize;
    // Index in `current` just after the last space, where a soft break may happen.
    let mut break_at: Option<usize> = None;
    for (c, style) in chars {
        let w = char_width(c);
        if c == ' ' && current.is_empty() && !rows.is_empty() {
            // No leading spaces on a continuation row.
            continue;
        }
        if current_width + w > width && !current.is_empty() && w > 0 {
            if c == ' ' {
                trim_trailing_spaces(&mut current);
                rows.push(std::mem::take(&mut current));
                current_width = 0;
                break_at = None;
                width = first_width - hang;
                continue;
            }
            match break_at {
                Some(at) if at < current.len() => {
                    let rest = current.split_off(at);
                    trim_trailing_spaces(&mut current);
                    rows.push(std::mem::replace(&mut current, rest));
                }
                _ => {
                    trim_trailing_spaces(&mut current);
                    rows.push(std::mem::take(&mut current));
                }
            }
            width = first_width - hang;
            current_width = current.iter().map(|(c, _)| char_width(*c)).sum();
            break_at = None;
        }
        current.push((c, style));
        current_width += w;
        if c == ' ' {
            break_at = Some(current.len());
        }
    }
    rows.push(current);
    rows.into_iter()
        .enumerate()
        .map(|(i, row)| {
            let mut spans = group_spans(row);
            if i > 0 && hang > 0 {
                spans.insert(0, Span::raw(" ".repeat(hang)));
            }
            Line::from(spans).style(line.style)
        })
        .collect()
}

/// Wrap every line of `lines`.
pub fn wrap_lines(lines: &[Line<'_>], width: u16) -> Vec<Line<'static>> {
    lines.iter().flat_map(|l| wrap_line(l, width)).collect()
}

fn trim_trailing_spaces(row: &mut Vec<(char, Style)>) {
    while row.last().is_some_and(|(c, _)| *c == ' ') {
        row.pop();
    }
}

fn group_spans(row: Vec<(char, Style)>) -> Vec<Span<'static>> {
    let mut spans: Vec<Span<'static>> = Vec::new();
    let mut text = String::new();
    let mut style: Option<Style> = None;
    for (c, s) in row {
        if style.is_some_and(|cur| cur != s) {
            spans.push(Span::styled(
                std::mem::take(&mut text),
                style.unwrap_or_default(),
            ));
        }
        style = Some(s);
        text.push(c);
    }
    if let Some(s) = style {
        spans.push(Span::styled(text, s));
    }
    spans
}

/// Cut `text` to at most `width` cells, ending in `…` when something was cut.
pub fn truncate_to_width(text: &str, width: usize) -> String {
    if display_width(text) <= width {
        return text.to_owned();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = char_width(c);
        if used + w + 1 > width {
            break;
        }
        out.push(c);
        used += w;
    }
    if width > 0 {
        out.push('…');
    }
    out
}

/// `text` cut to at most `cells` columns keeping its end, starting with `…` when cut.
pub fn truncate_start_to_width(text: &str, cells: usize) -> String {
    if display_width(text) <= cells {
        return text.to_string();
    }
    let mut kept = Vec::new();
    let mut used = 0;
    for c in text.chars().rev() {
        let w = char_width(c);
        if used + w + 1 > cells {
            break;
        }
        used += w;
        kept.push(c);
    }
    let mut out = String::with_capacity(text.len());
    if cells > 0 {
        out.push('…');
    }
    out.extend(kept.into_iter().rev());
    out
}

/// `text` cut to at most `cells` columns keeping both ends, `…` in place of the middle
/// when cut (the end gets the odd cell).
pub fn truncate_middle_to_width(text: &str, cells: usize) -> String {
    if display_width(text) <= cells {
        return text.to_string();
    }
    let room = cells.saturating_sub(1);
    let head = truncate_to_width(text, room / 2 + 1);
    let head = head.strip_suffix('…').unwrap_or(&head);
    let tail = truncate_start_to_width(text, room - display_width(head) + 1);
    let tail = tail.strip_prefix('…').unwrap_or(&tail);
    if cells == 0 {
        return String::new();
    }
    format!("{head}…{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn plain(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(std::string::ToString::to_string).collect()
    }

    #[test]
    fn wraps_by_display_width() {
        let cases: &[(&str, u16, &[&str])] = &[
            ("hello world", 20, &["hello world"]),
            ("hello world", 5, &["hello", "world"]),
            ("hello world", 8, &["hello", "world"]),
            ("abcdefghij", 4, &["abcd", "efgh", "ij"]),
            ("漢字漢字漢", 4, &["漢字", "漢字", "漢"]),
            ("漢字漢字漢", 5, &["漢字", "漢字", "漢"]),
            ("a😀b😀", 3, &["a😀", "b😀"]),
            (
                "e\u{301}e\u{301}e\u{301}",
                2,
                &["e\u{301}e\u{301}", "e\u{301}"],
            ),
            ("", 10, &[""]),
            ("漢", 1, &["漢"]),
            ("one two  three", 7, &["one two", "three"]),
        ];
        for (input, width, want) in cases {
            let got = wrap_line(&Line::from(*input), *width);
            assert_eq!(plain(&got), *want, "{input:?} at {width}");
            for l in &got {
                let w = display_width(&l.to_string());
                assert!(w <= usize::from(*width) || l.to_string().chars().count() == 1);
            }
        }
    }

    #[test]
    fn keeps_span_styles_across_breaks() {
        let bold = Style::new().bold();
        let line = Line::from(vec![Span::raw("ab "), Span::styled("cd ef", bold)]);
        let got = wrap_line(&line, 5);
        assert_eq!(
            got,
            vec![
                Line::from(vec![Span::raw("ab "), Span::styled("cd", bold)]),
                Line::from(vec![Span::styled("ef", bold)]),
            ]
        );
    }

    #[test]
    fn hanging_indent_for_continuation_rows() {
        let got = wrap_line_hanging(&Line::from("• one two three four"), 9, 2);
        assert_eq!(plain(&got), vec!["• one two", "  three", "  four"]);
        // A hang as wide as the line is ignored rather than looping.
        let got = wrap_line_hanging(&Line::from("abc"), 2, 2);
        assert_eq!(plain(&got), vec!["ab", "c"]);
    }

    #[test]
    fn truncates_with_ellipsis() {
        assert_eq!(truncate_to_width("hello", 10), "hello");
        assert_eq!(truncate_to_width("hello world", 6), "hello…");
        assert_eq!(truncate_to_width("漢字漢字", 5), "漢字…");
    }
}
