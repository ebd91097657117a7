//! The draft being written: canonical text, a caret that only ever rests between units (a
//! grapheme cluster, a whole chip or a whole fold), undo and a yank buffer. Every edit
//! happens at unit boundaries, so no key can land inside a mention or a collapsed paste, or
//! split a cluster.

use std::ops::Range;

pub use crate::fold::{Fold, FoldKind};
use crate::grammar::{Found, Grammar};
use crate::grapheme::{is_boundary, next_boundary, prev_boundary};
use crate::mention::Mention;
use crate::undo_stack::{Snapshot, UndoStack};

/// What a unit is, for word motion: a chip is a word of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum UnitClass {
    Space,
    Word,
    Chip,
}

/// Edits that extend the previous undo step instead of starting one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Coalesce {
    Typing,
    Backspace,
    Delete,
}

/// Draft text with a unit-aligned caret (byte offset), chips, undo and yank.
#[derive(Debug, Clone)]
pub struct Draft {
    /// Which parts are finished mentions (chips): what the host's syntaxes find.
    grammar: Grammar,
    text: String,
    caret: usize,
    /// Byte ranges of the chips in `text`, leftmost first (recomputed after every edit);
    /// none inside or across a fold.
    chips: Vec<Range<usize>>,
    /// The chips' mentions and what they show, in the same order.
    found: Vec<Found>,
    /// Collapsed runs, leftmost first (shifted by every edit, dropped when edited away).
    folds: Vec<Fold>,
    /// Chips and folds together, leftmost first: the units the caret steps over whole.
    atoms: Vec<Range<usize>>,
    undo: UndoStack,
    /// The last edit's kind and the caret after it, while the next may extend it.
    last_edit: Option<(Coalesce, usize)>,
    yank: String,
    /// Bumped by every change of text or caret.
    revision: u64,
    /// Bumped by every change of the text (the key of the layout cache).
    text_revision: u64,
    /// The last edit would have changed a chip beside it and was not made.
    refused: bool,
}

impl Default for Draft {
    fn default() -> Self {
        Self::new(crate::MentionConfig::default().grammar())
    }
}

impl Draft {
    /// An empty draft whose chips are the mentions `grammar` finds.
    pub fn new(grammar: Grammar) -> Self {
        Self {
            grammar,
            text: String::new(),
            caret: 0,
            chips: Vec::new(),
            found: Vec::new(),
            folds: Vec::new(),
            atoms: Vec::new(),
            undo: UndoStack::default(),
            last_edit: None,
            yank: String::new(),
            revision: 0,
            text_revision: 0,
            refused: false,
        }
    }

    /// The canonical text (mentions as their syntax writes them).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The caret as a byte offset into [`Draft::text`]; always between two units.
    pub fn caret(&self) -> usize {
        self.caret
    }

    /// Byte ranges of the chips, leftmost first.
    #[cfg(test)]
    pub fn chips(&self) -> &[Range<usize>] {
        &self.chips
    }

    /// The chips' mentions and what they show, leftmost first.
    pub fn found(&self) -> &[Found] {
        &self.found
    }

    /// The triggers and syntaxes of the draft's mentions.
    pub fn grammar(&self) -> &Grammar {
        &self.grammar
    }

    /// The collapsed runs, leftmost first.
    pub fn folds(&self) -> &[Fold] {
        &self.folds
    }

    /// The fold the caret sits on: one ending right before it, else one starting right after.
    pub fn fold_at_caret(&self) -> Option<&Fold> {
        self.folds
            .iter()
            .find(|f| f.range.end == self.caret)
            .or_else(|| self.folds.iter().find(|f| f.range.start == self.caret))
    }

    /// Changes whenever the text or the caret does.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// Changes whenever the text or its folds do (a caret move keeps it).
    pub fn text_revision(&self) -> u64 {
        self.text_revision
    }

    /// Whether the draft holds no text.
    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// The text the last kill (Ctrl+W/U/K, Alt+D) removed.
    #[cfg(test)]
    pub fn yank_text(&self) -> &str {
        &self.yank
    }

    /// The chip the caret sits on: one ending right before it, else one starting right after.
    pub fn chip_at_caret(&self) -> Option<&Mention> {
        self.found
            .iter()
            .find(|c| c.range.end == self.caret)
            .or_else(|| self.found.iter().find(|c| c.range.start == self.caret))
            .map(|c| &c.mention)
    }

    // ----- edits ------------------------------------------------------------------------

    /// Replaces the whole text (one undo step); the caret goes to the end.
    pub fn set_text(&mut self, text: &str) {
        self.edit(0..self.text.len(), text, None);
    }

    /// Replaces the whole text and collapses `folds` of it (ranges that are not whole units
    /// of `text`, or overlap an earlier one, are left open).
    pub fn set_text_folded(&mut self, text: &str, folds: &[Fold]) {
        self.set_text(text);
        if self.refused || folds.is_empty() {
            return;
        }
        let mut kept: Vec<Fold> = Vec::new();
        for fold in folds {
            let r = &fold.range;
            let whole = r.start < r.end
                && self.text.get(r.clone()).is_some()
                && kept.last().is_none_or(|k| k.range.end <= r.start)
                && !self.chips.iter().any(|c| {
                    c.start < r.end && r.start < c.end && !(r.start <= c.start && c.end <= r.end)
                });
            if whole {
                kept.push(fold.clone());
            }
        }
        self.folds = kept;
        self.rescan();
    }

    /// Inserts `text` at the caret collapsed as one fold of `kind` (one undo step).
    pub fn insert_folded(&mut self, text: &str, kind: FoldKind) {
        if text.is_empty() {
            return;
        }
        let at = self.caret;
        self.edit_folding(at..at, text, None, Some(kind));
    }

    /// Opens the fold at the caret (see [`Draft::fold_at_caret`]) for editing: its text stays,
    /// shown in full from now on; undo collapses it again. False when there is none.
    pub fn expand_fold_at_caret(&mut self) -> bool {
        let Some(fold) = self.fold_at_caret().cloned() else {
            return false;
        };
        self.undo.push(Snapshot {
            text: self.text.clone(),
            caret: self.caret,
            folds: self.folds.clone(),
        });
        self.folds.retain(|f| *f != fold);
        self.rescan();
        self.last_edit = None;
        self.revision += 1;
        self.text_revision += 1;
        true
    }

    /// Inserts `text` at the caret. Typing single non-blank clusters in a row is one undo step.
    pub fn insert(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        let typing = next_boundary(text, 0) == text.len() && !text.starts_with(char::is_whitespace);
        let at = self.caret;
        self.edit(at..at, text, typing.then_some(Coalesce::Typing));
    }

    /// Replaces `range` (widened to whole chips and clusters) with `text`, as one undo step;
    /// the caret goes after the inserted text.
    pub fn replace(&mut self, range: Range<usize>, text: &str) {
        let range = self.widen(range);
        self.edit(range, text, None);
    }

    /// Backspace: removes the unit before the caret (a chip as a whole).
    pub fn delete_backward(&mut self) -> bool {
        let Some(unit) = self.prev_unit(self.caret) else {
            return false;
        };
        let coalesce = (!self.is_atom(&unit)).then_some(Coalesce::Backspace);
        self.edit(unit, "", coalesce);
        true
    }

    /// Delete: removes the unit after the caret (a chip as a whole).
    pub fn delete_forward(&mut self) -> bool {
        let Some(unit) = self.next_unit(self.caret) else {
            return false;
        };
        let coalesce = (!self.is_atom(&unit)).then_some(Coalesce::Delete);
        self.edit(unit, "", coalesce);
        true
    }

    /// Ctrl+W / Alt+Backspace: kills the word before the caret into the yank buffer.
    pub fn delete_word_backward(&mut self) -> bool {
        let start = self.word_left(self.caret);
        self.kill(start..self.caret)
    }

    /// Alt+D: kills the word after the caret.
    pub fn delete_word_forward(&mut self) -> bool {
        let end = self.word_right(self.caret);
        self.kill(self.caret..end)
    }

    /// Ctrl+U: kills to the line start; at a line start, joins with the line above.
    pub fn kill_to_line_start(&mut self) -> bool {
        let start = self.line_start(self.caret);
        if start == self.caret {
            return self.delete_backward();
        }
        self.kill(start..self.caret)
    }

    /// Ctrl+K: kills to the line end; at a line end, joins with the line below.
    pub fn kill_to_line_end(&mut self) -> bool {
        let end = self.line_end(self.caret);
        if end == self.caret {
            return self.delete_forward();
        }
        self.kill(self.caret..end)
    }

    /// Ctrl+Y: inserts the last killed text at the caret.
    pub fn yank(&mut self) -> bool {
        if self.yank.is_empty() {
            return false;
        }
        let text = self.yank.clone();
        let at = self.caret;
        self.edit(at..at, &text, None);
        true
    }

    /// Ctrl+Z: back to the text and caret before the last edit step.
    pub fn undo(&mut self) -> bool {
        let Some(snapshot) = self.undo.pop() else {
            return false;
        };
        self.text = snapshot.text;
        self.folds = snapshot.folds;
        self.rescan();
        self.caret = snapshot.caret.min(self.text.len());
        self.snap_caret();
        self.last_edit = None;
        self.revision += 1;
        self.text_revision += 1;
        true
    }

    fn kill(&mut self, range: Range<usize>) -> bool {
        if range.is_empty() {
            return false;
        }
        self.yank = self.text.get(range.clone()).unwrap_or_default().to_string();
        self.edit(range, "", None);
        true
    }

    fn edit(&mut self, range: Range<usize>, insert: &str, coalesce: Option<Coalesce>) {
        self.edit_folding(range, insert, coalesce, None);
    }

    /// The one place the text changes: snapshot for undo, replace, shift the folds (a new
    /// one over `insert` when `fold` says so), re-scan chips, snap caret.
    fn edit_folding(
        &mut self,
        range: Range<usize>,
        insert: &str,
        coalesce: Option<Coalesce>,
        fold: Option<FoldKind>,
    ) {
        let start = range.start.min(self.text.len());
        let end = range.end.clamp(start, self.text.len());
        let mut text = self.text.clone();
        text.replace_range(start..end, insert);
        let shift = |at: usize| at - (end - start) + insert.len();
        // Folds outside the edit move with it; one it touches is gone (edits are whole
        // units, so that is one it replaced).
        let mut folds: Vec<Fold> = self
            .folds
            .iter()
            .filter(|f| f.range.end <= start || f.range.start >= end)
            .map(|f| {
                if f.range.start >= end {
                    Fold {
                        range: shift(f.range.start)..shift(f.range.end),
                        kind: f.kind,
                    }
                } else {
                    f.clone()
                }
            })
            .collect();
        if let Some(kind) = fold {
            folds.push(Fold {
                range: start..start + insert.len(),
                kind,
            });
            folds.sort_by_key(|f| f.range.start);
        }
        let found = chips_outside(self.grammar.find(&text), &folds);
        let chips: Vec<Range<usize>> = found.iter().map(|f| f.range.clone()).collect();
        // An edit next to a chip must not change it (`@[` typed right before one would
        // make the grammar read one longer mention): such an edit is refused.
        self.refused = !self.keeps_other_chips(start..end, insert.len(), &text, &chips);
        if self.refused {
            return;
        }
        let extends = coalesce.is_some() && self.last_edit == coalesce.map(|k| (k, self.caret));
        if !extends {
            self.undo.push(Snapshot {
                text: std::mem::take(&mut self.text),
                caret: self.caret,
                folds: std::mem::take(&mut self.folds),
            });
        }
        self.text = text;
        self.chips = chips;
        self.found = found;
        self.folds = folds;
        self.atoms = atoms_of(&self.chips, &self.folds);
        self.caret = start + insert.len();
        self.snap_caret();
        self.last_edit = coalesce.map(|k| (k, self.caret));
        self.revision += 1;
        self.text_revision += 1;
    }

    /// Whether every chip outside the replaced `range` is still a chip with the same text
    /// after the edit (shifted by the length change).
    fn keeps_other_chips(
        &self,
        range: Range<usize>,
        inserted: usize,
        text: &str,
        chips: &[Range<usize>],
    ) -> bool {
        let shift = |at: usize| at - (range.end - range.start) + inserted;
        self.chips
            .iter()
            .filter(|c| c.end <= range.start || c.start >= range.end)
            .all(|c| {
                let moved = if c.start >= range.end {
                    shift(c.start)..shift(c.end)
                } else {
                    c.clone()
                };
                chips.contains(&moved) && text.get(moved.clone()) == self.text.get(c.clone())
            })
    }

    /// Chips and atoms again after the text or the folds changed without an edit.
    fn rescan(&mut self) {
        self.found = chips_outside(self.grammar.find(&self.text), &self.folds);
        self.chips = self.found.iter().map(|f| f.range.clone()).collect();
        self.atoms = atoms_of(&self.chips, &self.folds);
    }

    /// Whether the last edit was refused because it would have changed a chip next to it.
    pub fn last_edit_refused(&self) -> bool {
        self.refused
    }

    // ----- caret ------------------------------------------------------------------------

    /// Moves the caret to `pos`, moved forward to the next unit boundary if it is not one.
    pub fn set_caret(&mut self, pos: usize) {
        self.refused = false;
        self.caret = pos.min(self.text.len());
        self.snap_caret();
        self.last_edit = None;
        self.revision += 1;
    }

    /// Left: one unit back. Returns whether the caret moved.
    pub fn move_left(&mut self) -> bool {
        let to = self.prev_unit(self.caret).map(|u| u.start);
        self.move_to(to)
    }

    /// Right: one unit on.
    pub fn move_right(&mut self) -> bool {
        let to = self.next_unit(self.caret).map(|u| u.end);
        self.move_to(to)
    }

    /// Alt+B / Ctrl+Left: to the start of the word (or chip) before the caret.
    pub fn move_word_left(&mut self) -> bool {
        let to = self.word_left(self.caret);
        self.move_to(Some(to))
    }

    /// Alt+F / Ctrl+Right: to the end of the word (or chip) after the caret.
    pub fn move_word_right(&mut self) -> bool {
        let to = self.word_right(self.caret);
        self.move_to(Some(to))
    }

    /// Home / Ctrl+A: to the start of the line.
    pub fn move_line_start(&mut self) -> bool {
        let to = self.line_start(self.caret);
        self.move_to(Some(to))
    }

    /// End / Ctrl+E: to the end of the line.
    pub fn move_line_end(&mut self) -> bool {
        let to = self.line_end(self.caret);
        self.move_to(Some(to))
    }

    fn move_to(&mut self, to: Option<usize>) -> bool {
        self.last_edit = None;
        self.refused = false;
        match to {
            Some(to) if to != self.caret => {
                self.caret = to;
                self.revision += 1;
                true
            }
            _ => false,
        }
    }

    /// A caret inside a chip or fold goes to its end; one inside a cluster to the cluster's end.
    fn snap_caret(&mut self) {
        if let Some(chip) = self
            .atoms
            .iter()
            .find(|c| c.start < self.caret && self.caret < c.end)
        {
            self.caret = chip.end;
            return;
        }
        let (start, end) = self.gap(self.caret);
        let gap = self.text.get(start..end).unwrap_or_default();
        let rel = self.caret - start;
        if !is_boundary(gap, rel) {
            let mut pos = 0;
            while pos < rel {
                pos = next_boundary(gap, pos);
            }
            self.caret = start + pos;
        }
    }

    // ----- units ------------------------------------------------------------------------

    fn is_atom(&self, unit: &Range<usize>) -> bool {
        self.atoms.iter().any(|c| c == unit)
    }

    /// The text between chips around `pos`: `(end of the chip before, start of the next)`.
    fn gap(&self, pos: usize) -> (usize, usize) {
        let start = self
            .atoms
            .iter()
            .filter(|c| c.end <= pos)
            .map(|c| c.end)
            .next_back()
            .unwrap_or(0);
        let end = self
            .atoms
            .iter()
            .find(|c| c.start >= pos)
            .map_or(self.text.len(), |c| c.start);
        (start, end)
    }

    /// The unit ending at `pos` (a chip or a grapheme cluster).
    fn prev_unit(&self, pos: usize) -> Option<Range<usize>> {
        if pos == 0 {
            return None;
        }
        if let Some(chip) = self.atoms.iter().find(|c| c.end == pos) {
            return Some(chip.clone());
        }
        let (start, end) = self.gap(pos);
        let gap = self.text.get(start..end)?;
        Some(start + prev_boundary(gap, pos - start)..pos)
    }

    /// The unit starting at `pos`.
    fn next_unit(&self, pos: usize) -> Option<Range<usize>> {
        if pos >= self.text.len() {
            return None;
        }
        if let Some(chip) = self.atoms.iter().find(|c| c.start == pos) {
            return Some(chip.clone());
        }
        let (start, end) = self.gap(pos);
        let gap = self.text.get(start..end)?;
        Some(pos..start + next_boundary(gap, pos - start))
    }

    fn class(&self, unit: &Range<usize>) -> UnitClass {
        if self.is_atom(unit) {
            UnitClass::Chip
        } else if self
            .text
            .get(unit.clone())
            .is_some_and(|g| g.starts_with(char::is_whitespace))
        {
            UnitClass::Space
        } else {
            UnitClass::Word
        }
    }

    fn word_left(&self, mut pos: usize) -> usize {
        while let Some(u) = self
            .prev_unit(pos)
            .filter(|u| self.class(u) == UnitClass::Space)
        {
            pos = u.start;
        }
        if let Some(u) = self
            .prev_unit(pos)
            .filter(|u| self.class(u) == UnitClass::Chip)
        {
            return u.start;
        }
        while let Some(u) = self
            .prev_unit(pos)
            .filter(|u| self.class(u) == UnitClass::Word)
        {
            pos = u.start;
        }
        pos
    }

    fn word_right(&self, mut pos: usize) -> usize {
        while let Some(u) = self
            .next_unit(pos)
            .filter(|u| self.class(u) == UnitClass::Space)
        {
            pos = u.end;
        }
        if let Some(u) = self
            .next_unit(pos)
            .filter(|u| self.class(u) == UnitClass::Chip)
        {
            return u.end;
        }
        while let Some(u) = self
            .next_unit(pos)
            .filter(|u| self.class(u) == UnitClass::Word)
        {
            pos = u.end;
        }
        pos
    }

    /// Start of the line holding `pos` (a newline inside a chip's label is not a line break).
    fn line_start(&self, pos: usize) -> usize {
        let mut end = pos;
        loop {
            let Some(i) = self.text.get(..end).and_then(|head| head.rfind('\n')) else {
                return 0;
            };
            match self.atoms.iter().find(|c| c.start <= i && i < c.end) {
                Some(chip) => end = chip.start,
                None => return i + 1,
            }
        }
    }

    /// End of the line holding `pos` (before its newline).
    fn line_end(&self, pos: usize) -> usize {
        let mut from = pos;
        loop {
            let Some(i) = self.text.get(from..).and_then(|tail| tail.find('\n')) else {
                return self.text.len();
            };
            let i = from + i;
            match self.atoms.iter().find(|c| c.start <= i && i < c.end) {
                Some(chip) => from = chip.end,
                None => return i,
            }
        }
    }

    /// `range` widened so it neither cuts a chip nor a cluster.
    fn widen(&self, range: Range<usize>) -> Range<usize> {
        let mut start = range.start.min(self.text.len());
        let mut end = range.end.clamp(start, self.text.len());
        for chip in &self.atoms {
            if chip.start < start && start < chip.end {
                start = chip.start;
            }
            if chip.start < end && end < chip.end {
                end = chip.end;
            }
        }
        while !self.text.is_char_boundary(start) {
            start -= 1;
        }
        while !self.text.is_char_boundary(end) {
            end += 1;
        }
        start..end
    }
}

#[cfg(test)]
#[path = "draft_tests.rs"]
mod tests;

/// `chips` without those inside or across a fold (a fold shows its text as one unit).
fn chips_outside(chips: Vec<Found>, folds: &[Fold]) -> Vec<Found> {
    if folds.is_empty() {
        return chips;
    }
    chips
        .into_iter()
        .filter(|c| {
            !folds
                .iter()
                .any(|f| c.range.start < f.range.end && f.range.start < c.range.end)
        })
        .collect()
}

/// Chips and folds as one list of whole units, leftmost first.
fn atoms_of(chips: &[Range<usize>], folds: &[Fold]) -> Vec<Range<usize>> {
    let mut atoms: Vec<Range<usize>> = chips
        .iter()
        .cloned()
        .chain(folds.iter().map(|f| f.range.clone()))
        .collect();
    atoms.sort_by_key(|r| r.start);
    atoms
}
