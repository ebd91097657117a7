//! Extended grapheme clusters: the caret's smallest step and the unit whose display width the
//! terminal uses. Widths are measured like ratatui's buffer does (whole cluster, so skin
//! tones, ZWJ families and VS16 sequences count two cells, not the sum of their chars).

use ratatui::buffer::CellWidth;
use unicode_segmentation::UnicodeSegmentation;

use crate::untrusted::is_control;

/// Cells the terminal gives the grapheme cluster `g` (0 for a lone combining mark).
pub fn grapheme_width(g: &str) -> usize {
    if g.chars().any(is_control) {
        // Never measured by the buffer: controls are shown escaped (see the layout).
        return 0;
    }
    usize::from(g.cell_width())
}

/// Byte offset of the grapheme boundary before `pos` in `text` (0 stays 0). `pos` must be
/// a boundary; the scan starts at the beginning so regional-indicator pairs stay paired.
pub fn prev_boundary(text: &str, pos: usize) -> usize {
    let Some(head) = text.get(..pos) else {
        return 0;
    };
    head.grapheme_indices(true)
        .next_back()
        .map_or(0, |(start, _)| start)
}

/// Byte offset of the grapheme boundary after `pos` in `text` (the end stays the end).
pub fn next_boundary(text: &str, pos: usize) -> usize {
    let Some(tail) = text.get(pos..) else {
        return text.len();
    };
    tail.graphemes(true)
        .next()
        .map_or(text.len(), |g| pos + g.len())
}

/// Whether `pos` falls on a grapheme boundary of `text`.
pub fn is_boundary(text: &str, pos: usize) -> bool {
    if pos == 0 || pos == text.len() {
        return true;
    }
    if !text.is_char_boundary(pos) {
        return false;
    }
    text.get(..pos)
        .and_then(|head| head.grapheme_indices(true).next_back())
        .is_some_and(|(start, g)| start + g.len() == pos)
        && next_boundary(text, prev_boundary(text, pos)) == pos
}

/// Total display width of `text`, cluster by cluster.
pub fn text_width(text: &str) -> usize {
    text.graphemes(true).map(grapheme_width).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn widths_of_clusters() {
        let cases = [
            ("a", 1),
            ("漢", 2),
            ("e\u{301}", 1),
            ("👍", 2),
            ("👍🏽", 2),
            ("👨\u{200d}👩\u{200d}👧", 2),
            ("❤\u{fe0f}", 2),
            ("1\u{fe0f}\u{20e3}", 2),
            ("🇩🇪", 2),
            ("🏳\u{fe0f}\u{200d}🌈", 2),
            ("\u{301}", 0),
            ("\u{1b}", 0),
        ];
        for (g, want) in cases {
            assert_eq!(g.graphemes(true).count(), 1, "{g:?} is one cluster");
            assert_eq!(grapheme_width(g), want, "{g:?}");
        }
    }

    #[test]
    fn steps_over_whole_clusters() {
        // (text, boundaries left to right)
        let family = "👨\u{200d}👩\u{200d}👧";
        let cases: Vec<(String, Vec<usize>)> = vec![
            ("ab".into(), vec![0, 1, 2]),
            (
                format!("a{family}b"),
                vec![0, 1, 1 + family.len(), 2 + family.len()],
            ),
            ("👍🏽!".into(), vec![0, 8, 9]),
            ("e\u{301}x".into(), vec![0, 3, 4]),
            ("🇩🇪🇫🇷".into(), vec![0, 8, 16]),
            ("漢字".into(), vec![0, 3, 6]),
            ("a\r\nb".into(), vec![0, 1, 3, 4]),
            (String::new(), vec![0]),
        ];
        for (text, bounds) in cases {
            let mut forward = vec![0];
            let mut pos = 0;
            while pos < text.len() {
                pos = next_boundary(&text, pos);
                forward.push(pos);
            }
            assert_eq!(forward, bounds, "forward {text:?}");
            let mut backward = vec![text.len()];
            let mut pos = text.len();
            while pos > 0 {
                pos = prev_boundary(&text, pos);
                backward.push(pos);
            }
            backward.reverse();
            assert_eq!(backward, bounds, "backward {text:?}");
            for p in 0..=text.len() {
                assert_eq!(
                    is_boundary(&text, p),
                    bounds.contains(&p),
                    "{text:?} at {p}"
                );
            }
        }
    }
}
