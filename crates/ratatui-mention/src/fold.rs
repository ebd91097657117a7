//! A run of the draft shown as one placeholder unit (a large paste, the middle of a long
//! recalled text): what it covers and what it shows. A leaf, so the draft and its undo
//! stack both use it.

use std::ops::Range;

/// Why a run of the draft is collapsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FoldKind {
    /// A large paste (`[pasted 3 000 lines]`).
    Pasted,
    /// The middle lines of a long text recalled without its pastes known (`[2 998 lines]`).
    Long,
}

/// A run of the draft's text shown as one placeholder unit: the text stays in the draft (it
/// is submitted, kept in history and copied in full) until the fold is opened for editing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fold {
    /// Its bytes in the draft text.
    pub range: Range<usize>,
    pub kind: FoldKind,
}

impl Fold {
    /// What the fold shows for `text` (its own bytes): `[pasted 3 000 lines]`, `[pasted
    /// 12 000 chars]` for a long single line, `[2 998 lines]` for recalled lines.
    pub fn label(&self, text: &str) -> String {
        // A final line break ends the last line; it does not start another (`seq 3000`
        // pasted is 3 000 lines).
        let lines = text.strip_suffix('\n').unwrap_or(text).split('\n').count();
        let (count, unit) = if lines > 1 {
            (lines, "lines")
        } else {
            (text.chars().count(), "chars")
        };
        match self.kind {
            FoldKind::Pasted => format!("[pasted {} {unit}]", grouped(count)),
            FoldKind::Long => format!("[{} {unit}]", grouped(count)),
        }
    }
}

/// `n` with its thousands set apart by spaces (`3 000`).
fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(d);
    }
    out
}
