//! Light markdown for assistant replies: paragraphs, headings, bullet and numbered lists,
//! fenced code blocks, inline `code` and **bold**. Anything else is shown as written.
//! Input must already be sanitized (control characters made visible).

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

/// Render `text` as styled lines (not yet wrapped), on top of `base`.
pub fn render_markdown(text: &str, base: Style) -> Vec<Line<'static>> {
    render_markdown_hanging(text, base)
        .into_iter()
        .map(|(line, _)| line)
        .collect()
}

/// [`render_markdown`] with, per line, the hanging indent its wrapped rows should get
/// (the width of a list item's marker, else 0).
pub fn render_markdown_hanging(text: &str, base: Style) -> Vec<(Line<'static>, u16)> {
    let code_style = base.fg(Color::Cyan);
    let mut out: Vec<(Line<'static>, u16)> = Vec::new();
    let mut in_fence = false;
    let mut previous_blank = false;
    for raw in text.split('\n') {
        let trimmed = raw.trim_start();
        if trimmed.starts_with("```") {
            in_fence = !in_fence;
            if in_fence {
                let lang = trimmed.trim_start_matches('`').trim();
                if !lang.is_empty() {
                    out.push((
                        Line::from(Span::styled(
                            format!("  {lang}"),
                            base.add_modifier(Modifier::DIM),
                        )),
                        0,
                    ));
                }
            }
            previous_blank = false;
            continue;
        }
        if in_fence {
            out.push((Line::from(Span::styled(format!("  {raw}"), code_style)), 2));
            continue;
        }
        if trimmed.is_empty() {
            if !previous_blank && !out.is_empty() {
                out.push((Line::default(), 0));
            }
            previous_blank = true;
            continue;
        }
        previous_blank = false;
        let indent = raw.strip_suffix(trimmed).unwrap_or("");
        if let Some(heading) = heading_text(trimmed) {
            let bold = base.add_modifier(Modifier::BOLD);
            out.push((Line::from(inline(heading, bold)), 0));
        } else if let Some(item) = bullet_item(trimmed) {
            let marker = format!("{indent}• ");
            let hang = hang_width(&marker);
            let mut spans = vec![Span::styled(marker, base)];
            spans.extend(inline(item, base));
            out.push((Line::from(spans), hang));
        } else if let Some((number, item)) = numbered_item(trimmed) {
            let marker = format!("{indent}{number}. ");
            let hang = hang_width(&marker);
            let mut spans = vec![Span::styled(marker, base)];
            spans.extend(inline(item, base));
            out.push((Line::from(spans), hang));
        } else {
            out.push((Line::from(inline(raw, base)), 0));
        }
    }
    while out.last().is_some_and(|(l, _)| l.spans.is_empty()) {
        out.pop();
    }
    out
}

fn hang_width(marker: &str) -> u16 {
    u16::try_from(crate::tui::text_width::display_width(marker)).unwrap_or(0)
}

fn heading_text(line: &str) -> Option<&str> {
    let rest = line.trim_start_matches('#');
    let hashes = line.len() - rest.len();
    if (1..=6).contains(&hashes) {
        rest.strip_prefix(' ')
    } else {
        None
    }
}

fn bullet_item(line: &str) -> Option<&str> {
    ["- ", "* ", "+ "]
        .iter()
        .find_map(|marker| line.strip_prefix(marker))
}

fn numbered_item(line: &str) -> Option<(&str, &str)> {
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    if digits == 0 || digits > 9 {
        return None;
    }
    let (number, rest) = line.split_at(digits);
    rest.strip_prefix(". ")
        .or_else(|| rest.strip_prefix(") "))
        .map(|item| (number, item))
}

/// Inline `code` and **bold**; unmatched markers are kept literally.
fn inline(text: &str, base: Style) -> Vec<Span<'static>> {
    let code_style = base.fg(Color::Cyan);
    let bold_style = base.add_modifier(Modifier::BOLD);
    let mut spans = Vec::new();
    let mut plain = String::new();
    let mut rest = text;
    while !rest.is_empty() {
        if let Some((code, tail)) = rest.strip_prefix('`').and_then(|a| a.split_once('`')) {
            flush(&mut spans, &mut plain, base);
            spans.push(Span::styled(code.to_owned(), code_style));
            rest = tail;
            continue;
        }
        if let Some((bold, tail)) = rest
            .strip_prefix("**")
            .and_then(|a| a.split_once("**"))
            .filter(|(b, _)| !b.is_empty())
        {
            flush(&mut spans, &mut plain, base);
            spans.push(Span::styled(bold.to_owned(), bold_style));
            rest = tail;
            continue;
        }
        let mut chars = rest.chars();
        if let Some(c) = chars.next() {
            plain.push(c);
        }
        rest = chars.as_str();
    }
    flush(&mut spans, &mut plain, base);
    spans
}

fn flush(spans: &mut Vec<Span<'static>>, plain: &mut String, style: Style) {
    if !plain.is_empty() {
        spans.push(Span::styled(std::mem::take(plain), style));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn plain(text: &str) -> Vec<String> {
        render_markdown(text, Style::default())
            .iter()
            .map(std::string::ToString::to_string)
            .collect()
    }

    #[test]
    fn structure_is_rendered() {
        let cases: &[(&str, &[&str])] = &[
            ("one\ntwo", &["one", "two"]),
            ("para\n\n\n\nnext\n\n", &["para", "", "next"]),
            ("- a\n* b\n  + c", &["• a", "• b", "  • c"]),
            ("1. a\n10) b\n1.5 x", &["1. a", "10. b", "1.5 x"]),
            (
                "# Title\n###### six\n####### seven",
                &["Title", "six", "####### seven"],
            ),
            (
                "```rust\nlet x = 1;\n\n```\nafter",
                &["  rust", "  let x = 1;", "  ", "after"],
            ),
            (
                "```\nunclosed\n- not a list",
                &["  unclosed", "  - not a list"],
            ),
            (
                "use `a` and **b** but `open and **shut",
                &["use a and b but `open and **shut"],
            ),
            ("****", &["****"]),
        ];
        for (input, want) in cases {
            assert_eq!(plain(input), *want, "{input:?}");
        }
    }

    #[test]
    fn inline_styles_are_applied() {
        let base = Style::default();
        let lines = render_markdown("x `c` **b**", base);
        assert_eq!(
            lines,
            vec![Line::from(vec![
                Span::styled("x ", base),
                Span::styled("c", base.fg(Color::Cyan)),
                Span::styled(" ", base),
                Span::styled("b", base.add_modifier(Modifier::BOLD)),
            ])]
        );
    }
}
