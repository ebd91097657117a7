//! Soft-wrapped layout of a draft: rows of placed units (clusters, tabs, chips, escaped
//! controls) at a width, the caret's cell and the offset under a cell. Breaks after blanks
//! when it can (or as [`Breaks`] says); a chip is never split (one wider than the line is
//! cut with `…`).

use std::ops::Range;

use unicode_segmentation::UnicodeSegmentation;

use crate::grapheme::{grapheme_width, text_width};
use term_text::{is_control, visible_controls_line};

/// Cells between tab stops.
pub const TAB_WIDTH: usize = 4;

/// How a placed unit is drawn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Glyph {
    /// A grapheme cluster drawn as itself.
    Text,
    /// A tab, drawn as spaces up to the next stop.
    Tab,
    /// A line break (no cells).
    Newline,
    /// A control character, drawn escaped (`\x1B`).
    Control(String),
    /// A mention, drawn as `@label` (cut with `…` to fit).
    Chip(String),
    /// A collapsed run, drawn as its placeholder (cut with `…` to fit).
    Fold(String),
}

/// One unit placed on a row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placed {
    /// Its bytes in the draft text.
    pub range: Range<usize>,
    /// First cell, from the row's left edge.
    pub x: usize,
    pub width: usize,
    pub glyph: Glyph,
}

/// One screen row of the draft.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Row {
    pub units: Vec<Placed>,
    /// Where the row starts in the text (a row may be empty).
    pub start: usize,
}

impl Row {
    /// Cells the row's units take.
    pub fn width(&self) -> usize {
        self.units.last().map_or(0, |u| u.x + u.width)
    }
}

/// Where rows may break (the composer breaks at words; a textarea's wrap mode picks).
#[cfg_attr(not(feature = "textarea"), allow(dead_code))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Breaks {
    /// After a blank, else between any two units (a word wider than the line is split).
    Words,
    /// After a blank only: a word wider than the line runs past its edge.
    WordsOnly,
    /// Between any two units.
    Units,
    /// Only at line breaks.
    Never,
}

/// The draft's rows at one width.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DraftLayout {
    pub rows: Vec<Row>,
    width: usize,
    text_len: usize,
}

/// A unit before placement.
struct Unit {
    range: Range<usize>,
    glyph: Glyph,
    /// Display width (tabs: 0 here, they depend on the column).
    width: usize,
    blank: bool,
}

fn units(text: &str, atoms: &[(Range<usize>, Glyph)]) -> Vec<Unit> {
    let mut out = Vec::new();
    let mut pos = 0;
    let push_gap = |out: &mut Vec<Unit>, start: usize, gap: &str| {
        for (i, g) in gap.grapheme_indices(true) {
            let range = start + i..start + i + g.len();
            let unit = if g == "\n" || g == "\r\n" {
                Unit {
                    range,
                    glyph: Glyph::Newline,
                    width: 0,
                    blank: true,
                }
            } else if g == "\t" {
                Unit {
                    range,
                    glyph: Glyph::Tab,
                    width: 0,
                    blank: true,
                }
            } else if g.chars().any(is_control) {
                let shown = visible_controls_line(g).into_owned();
                let width = text_width(&shown);
                Unit {
                    range,
                    glyph: Glyph::Control(shown),
                    width,
                    blank: false,
                }
            } else {
                let blank = g.starts_with(char::is_whitespace);
                Unit {
                    range,
                    glyph: Glyph::Text,
                    width: grapheme_width(g),
                    blank,
                }
            };
            out.push(unit);
        }
    };
    for (atom, glyph) in atoms {
        if atom.start < pos {
            continue;
        }
        if let Some(gap) = text.get(pos..atom.start) {
            push_gap(&mut out, pos, gap);
        }
        let width = match glyph {
            Glyph::Chip(shown) | Glyph::Fold(shown) => text_width(shown),
            _ => 0,
        };
        out.push(Unit {
            range: atom.clone(),
            glyph: glyph.clone(),
            width,
            blank: false,
        });
        pos = atom.end;
    }
    if let Some(gap) = text.get(pos..) {
        push_gap(&mut out, pos, gap);
    }
    out
}

impl DraftLayout {
    /// Lays `text` out in rows of `width` cells, each of `atoms` (leftmost first, a chip or
    /// a fold) one unit drawn as its glyph.
    pub fn with_atoms(text: &str, atoms: &[(Range<usize>, Glyph)], width: u16) -> Self {
        Self::with_breaks(text, atoms, usize::from(width), Breaks::Words)
    }

    /// [`Self::with_atoms`], breaking rows only where `breaks` allows.
    pub fn with_breaks(
        text: &str,
        atoms: &[(Range<usize>, Glyph)],
        width: usize,
        breaks: Breaks,
    ) -> Self {
        let width = match breaks {
            Breaks::Never => usize::MAX,
            _ => width.max(1),
        };
        let words = matches!(breaks, Breaks::Words | Breaks::WordsOnly);
        let units = units(text, atoms);
        let mut rows = Vec::new();
        let mut row = Row::default();
        let mut x = 0;
        // Index into `units` just after the last blank on this row: where a soft break goes.
        let mut break_at: Option<usize> = None;
        let mut row_first = 0;
        let mut k = 0;
        while let Some(unit) = units.get(k) {
            let mut w = match unit.glyph {
                Glyph::Tab => TAB_WIDTH - x % TAB_WIDTH,
                _ => unit.width,
            };
            let overflow = x.saturating_add(w) > width && w > 0;
            if overflow && unit.blank && words {
                // A blank at the edge hangs there with no width; the break goes after it.
                row.units.push(Placed {
                    range: unit.range.clone(),
                    x,
                    width: 0,
                    glyph: unit.glyph.clone(),
                });
                k += 1;
                break_at = Some(k);
                continue;
            }
            let word_break = break_at.filter(|&b| words && b > row_first && b < k);
            if overflow
                && !row.units.is_empty()
                && (word_break.is_some() || breaks != Breaks::WordsOnly)
            {
                if let Some(b) = word_break {
                    row.units.truncate(b - row_first);
                    k = b;
                }
                let start = units.get(k).map_or(text.len(), |u| u.range.start);
                rows.push(std::mem::replace(
                    &mut row,
                    Row {
                        units: Vec::new(),
                        start,
                    },
                ));
                x = 0;
                break_at = None;
                row_first = k;
                continue;
            }
            let mut glyph = unit.glyph.clone();
            if w > width {
                match &unit.glyph {
                    Glyph::Chip(shown) => glyph = Glyph::Chip(cut_to_width(shown, width)),
                    Glyph::Fold(shown) => glyph = Glyph::Fold(cut_to_width(shown, width)),
                    _ => {}
                }
                if matches!(glyph, Glyph::Chip(_) | Glyph::Fold(_)) {
                    w = width;
                }
            }
            row.units.push(Placed {
                range: unit.range.clone(),
                x,
                width: w,
                glyph,
            });
            x += w;
            k += 1;
            if unit.glyph == Glyph::Newline {
                rows.push(std::mem::replace(
                    &mut row,
                    Row {
                        units: Vec::new(),
                        start: unit.range.end,
                    },
                ));
                x = 0;
                break_at = None;
                row_first = k;
            } else if unit.blank {
                break_at = Some(k);
            }
        }
        // A full last row: the caret after it belongs on a fresh row.
        let full = x >= width;
        rows.push(row);
        if full {
            rows.push(Row {
                units: Vec::new(),
                start: text.len(),
            });
        }
        Self {
            rows,
            width,
            text_len: text.len(),
        }
    }

    /// The `(row, column)` of the caret at byte offset `caret`.
    pub fn caret(&self, caret: usize) -> (usize, usize) {
        for (r, row) in self.rows.iter().enumerate() {
            if let Some(unit) = row.units.iter().find(|u| u.range.start == caret) {
                return (r, unit.x);
            }
        }
        let last = self.rows.len().saturating_sub(1);
        let x = self.rows.last().map_or(0, Row::width);
        if caret >= self.text_len {
            return (last, x.min(self.width));
        }
        // Not a unit start (callers keep the caret on one): the row it falls in.
        let r = self
            .rows
            .iter()
            .rposition(|row| row.start <= caret)
            .unwrap_or(0);
        (r, self.rows.get(r).map_or(0, Row::width))
    }

    /// The unit boundary on row `row` closest to column `x` (for Up/Down).
    pub fn offset_at(&self, row: usize, x: usize) -> usize {
        let Some(r) = self.rows.get(row) else {
            return self.text_len;
        };
        let is_last = row + 1 == self.rows.len();
        let mut best = r.start;
        let mut best_dx = x;
        for unit in &r.units {
            if unit.glyph == Glyph::Newline {
                break;
            }
            let dx = unit.x.abs_diff(x);
            if dx < best_dx {
                best = unit.range.start;
                best_dx = dx;
            }
            let after = unit.x + unit.width;
            if after.abs_diff(x) < best_dx {
                // The end of a soft-wrapped row is the next row's start: stay on this row.
                let soft_end = !is_last && r.units.last() == Some(unit);
                if !soft_end {
                    best = unit.range.end;
                    best_dx = after.abs_diff(x);
                }
            }
        }
        best
    }
}

/// `shown` cut to `width` cells, the last one a `…`.
fn cut_to_width(shown: &str, width: usize) -> String {
    let mut out = String::new();
    let mut used = 0;
    for g in shown.graphemes(true) {
        let w = grapheme_width(g);
        if used + w + 1 > width {
            break;
        }
        out.push_str(g);
        used += w;
    }
    out.push('…');
    out
}

#[cfg(test)]
#[path = "draft_layout_tests.rs"]
mod tests;
