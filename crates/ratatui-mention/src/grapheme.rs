//! Extended grapheme clusters: the caret's smallest step and the unit whose display width the
//! terminal uses. Widths are measured like ratatui's buffer does (whole cluster, so skin
//! tones, ZWJ families and VS16 sequences count two cells, not the sum of their chars).
//! Boundaries are found with a cursor that looks only as far back as the rules need, so a
//! step costs the same at the end of a long draft as at its start.

use ratatui::buffer::CellWidth;
use unicode_segmentation::{GraphemeCursor, UnicodeSegmentation};

use term_text::is_control;

/// Cells the terminal gives the grapheme cluster `g` (0 for a lone combining mark).
pub fn grapheme_width(g: &str) -> usize {
    if g.chars().any(is_control) {
        // Never measured by the buffer: controls are shown escaped (see the layout).
        return 0;
    }
    usize::from(g.cell_width())
}

/// Byte offset of the grapheme boundary before `pos` in `text` (0 stays 0).
pub fn prev_boundary(text: &str, pos: usize) -> usize {
    let pos = pos.min(text.len());
    let mut cursor = GraphemeCursor::new(pos, text.len(), true);
    // The whole text is the chunk, so no pre-context is ever asked for.
    cursor.prev_boundary(text, 0).ok().flatten().unwrap_or(0)
}

/// Byte offset of the grapheme boundary after `pos` in `text` (the end stays the end).
pub fn next_boundary(text: &str, pos: usize) -> usize {
    let pos = pos.min(text.len());
    let mut cursor = GraphemeCursor::new(pos, text.len(), true);
    cursor
        .next_boundary(text, 0)
        .ok()
        .flatten()
        .unwrap_or(text.len())
}

/// Whether `pos` falls on a grapheme boundary of `text`.
pub fn is_boundary(text: &str, pos: usize) -> bool {
    if pos == 0 || pos == text.len() {
        return true;
    }
    if pos > text.len() || !text.is_char_boundary(pos) {
        return false;
    }
    let mut cursor = GraphemeCursor::new(pos, text.len(), true);
    cursor.is_boundary(text, 0).unwrap_or(false)
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
            ("🇩🇪🇫🇷🇮".into(), vec![0, 8, 16, 20]),
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

    #[test]
    fn boundaries_agree_with_the_segmenter_on_mixed_text() {
        let text = "a👍🏽 e\u{301}🇩🇪🇫🇷🇮 漢\u{200d}x👨\u{200d}👩\u{200d}👧\r\n❤\u{fe0f}";
        let mut want: Vec<usize> = text.grapheme_indices(true).map(|(i, _)| i).collect();
        want.push(text.len());
        let got: Vec<usize> = (0..=text.len()).filter(|&p| is_boundary(text, p)).collect();
        assert_eq!(got, want);
    }
}
