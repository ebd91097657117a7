//! Where a row matched inside its content (a line of a document, a message): one line of
//! text after a lead the host chooses, with the ranges the host matched highlighted, drawn in
//! place of the row's detail line. The text is untrusted: its control characters are shown
//! as visible escapes.

use std::ops::Range;

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthStr;

use term_text::visible_controls_line;
use term_text::{truncate_start_to_width, truncate_to_width};

/// One line of content a row matched in, drawn as its detail line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemSnippet {
    /// Shown before the text, separator included (`README.md:12: `, `ada: `); may be empty.
    pub lead: String,
    /// The matching text (untrusted: shown with its controls made visible).
    pub text: String,
    /// Byte ranges of `text` that matched (ranges off char boundaries are ignored).
    pub highlights: Vec<Range<usize>>,
}

/// Indent of the snippet line, like a detail line's.
const INDENT: &str = "    ";
/// When the text does not fit and its first match would start further right than this
/// share of the room, the text is cut at the front so the match is on show.
const LEAD_SHARE: usize = 3;

/// `    <lead><text>` in `width` cells, the highlighted ranges in `hit` over `base`; a text
/// too long is cut at the end, and at the front (`…`) when its first match would otherwise
/// start far right.
pub fn snippet_line(snippet: &ItemSnippet, width: u16, base: Style, hit: Style) -> Line<'static> {
    let width = usize::from(width);
    let shown_lead = visible_controls_line(&snippet.lead);
    let lead = INDENT.width() + shown_lead.width();
    let room = width.saturating_sub(lead);
    let mut runs = runs(snippet);
    let before_hit: usize = runs
        .iter()
        .take_while(|(_, is_hit)| !is_hit)
        .map(|(text, _)| text.width())
        .sum();
    let has_hit = runs.iter().any(|(_, is_hit)| *is_hit);
    let fits = runs.iter().map(|(t, _)| t.width()).sum::<usize>() <= room;
    if has_hit && !fits && before_hit > room / LEAD_SHARE {
        // Keep about a quarter of the room before the first match.
        let keep = (room / 4).max(1);
        if let Some((first, _)) = runs.first_mut().filter(|(_, is_hit)| !is_hit) {
            *first = truncate_start_to_width(first, keep);
        }
    }
    let prefix = truncate_to_width(&format!("{INDENT}{shown_lead}"), width);
    let mut spans = vec![Span::styled(prefix, base)];
    let mut left = room;
    let total: usize = runs.iter().map(|(t, _)| t.width()).sum();
    let cut = total > room;
    for (text, is_hit) in runs {
        if left == 0 {
            break;
        }
        let w = text.width();
        let shown = if w < left || (w == left && !cut) {
            text
        } else {
            // The last run on show: cut, with room for the ellipsis.
            truncate_to_width(&format!("{text}…"), left)
        };
        left = left.saturating_sub(shown.width());
        spans.push(Span::styled(shown, if is_hit { hit } else { base }));
    }
    Line::from(spans)
}

/// The snippet's text as runs of (made-visible text, highlighted?).
fn runs(snippet: &ItemSnippet) -> Vec<(String, bool)> {
    let text = snippet.text.as_str();
    let mut ranges: Vec<Range<usize>> = snippet
        .highlights
        .iter()
        .filter(|r| {
            r.start < r.end
                && r.end <= text.len()
                && text.is_char_boundary(r.start)
                && text.is_char_boundary(r.end)
        })
        .cloned()
        .collect();
    ranges.sort_by_key(|r| r.start);
    let mut out: Vec<(String, bool)> = Vec::new();
    let mut at = 0;
    let mut push = |piece: &str, is_hit: bool| {
        if piece.is_empty() {
            return;
        }
        let shown = visible_controls_line(piece).into_owned();
        match out.last_mut() {
            Some((last, last_hit)) if *last_hit == is_hit => last.push_str(&shown),
            _ => out.push((shown, is_hit)),
        }
    };
    for r in ranges {
        let start = r.start.max(at);
        if start >= r.end {
            continue;
        }
        push(&text[at..start], false);
        push(&text[start..r.end], true);
        at = r.end;
    }
    push(&text[at..], false);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use ratatui::style::Modifier;

    fn snippet(text: &str, highlights: Vec<Range<usize>>) -> ItemSnippet {
        ItemSnippet {
            lead: "user: ".into(),
            text: text.into(),
            highlights,
        }
    }

    fn marked(line: &Line<'_>) -> String {
        line.spans
            .iter()
            .map(|s| {
                if s.style.add_modifier.contains(Modifier::BOLD) {
                    format!("[{}]", s.content)
                } else {
                    s.content.to_string()
                }
            })
            .collect()
    }

    const HIT: Style = Style::new().add_modifier(Modifier::BOLD);

    #[test]
    fn highlights_and_controls() {
        let s = snippet("we chose kafka\u{1b}[2J over redis", vec![9..14, 24..29]);
        let line = snippet_line(&s, 60, Style::new(), HIT);
        assert_eq!(
            marked(&line),
            r"    user: we chose [kafka]\x1B[2J over [redis]"
        );
        assert!(!line.to_string().contains('\u{1b}'));
        // A late match in a text that fits is shown whole.
        let s = snippet(
            "Why does login fail after the upgrade?",
            std::iter::once(30..37).collect(),
        );
        assert_eq!(
            marked(&snippet_line(&s, 60, Style::new(), HIT)),
            "    user: Why does login fail after the [upgrade]?"
        );
    }

    #[test]
    fn a_far_match_is_brought_into_view_and_the_end_is_cut() {
        let text = format!("{} kafka and more text after it", "x".repeat(80));
        let s = snippet(&text, std::iter::once(81..86).collect());
        let line = snippet_line(&s, 40, Style::new(), HIT);
        let shown = marked(&line);
        assert!(shown.starts_with("    user: …xxxxx [kafka]"), "{shown}");
        assert!(shown.ends_with('…'), "{shown}");
        assert_eq!(line.width(), 40);
    }

    #[test]
    fn bad_ranges_are_ignored_and_narrow_widths_hold() {
        let s = snippet("héllo wörld", vec![2..3, 7..100, 0..1]);
        assert_eq!(
            marked(&snippet_line(&s, 40, Style::new(), HIT)),
            "    user: [h]éllo wörld"
        );
        for width in 0..16 {
            assert!(snippet_line(&s, width, Style::new(), HIT).width() <= usize::from(width));
        }
    }
}
