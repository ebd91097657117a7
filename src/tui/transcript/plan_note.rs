//! The budget plan on a reference card's row (docs/references.md: the budget plan): when the
//! plan lowered a source's budget below `max_reference_bytes`, the budget it was retained
//! with and what the source costs the model (its estimated tokens); a row whose source kept
//! its maximum reads as it always did.

use std::fmt::Write as _;

use dsh_reference::budget_plan::message_tokens;
use dsh_reference::{ReferenceEntry, SnapshotSource};

/// ` · budget lowered to N KiB[ · ≈T tokens]` for one card row (empty when not lowered).
pub fn plan_note(entry: &ReferenceEntry, source: Option<&SnapshotSource>) -> String {
    let mut note = String::new();
    let Some(budget) = entry
        .extra
        .get("budgetBytes")
        .and_then(serde_json::Value::as_u64)
    else {
        return note;
    };
    // KiB with one decimal: an f64 shows any budget a config allows well enough.
    #[allow(clippy::cast_precision_loss)]
    let kib = budget as f64 / 1024.0;
    let _ = write!(note, " · budget lowered to {kib:.1} KiB");
    if let Some(source) = source.filter(|s| s.serialized_bytes > 0) {
        let tokens = message_tokens(source.serialized_bytes as u64);
        let _ = write!(note, " · ≈{tokens} tokens");
    }
    note
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_row_says_its_tokens_and_a_lowered_budget() {
        let mut entry = ReferenceEntry::default();
        let source = SnapshotSource {
            session_id: "s".into(),
            label: "S".into(),
            cwd: None,
            conversation: Vec::new(),
            serialized_bytes: 3000,
        };
        assert_eq!(plan_note(&entry, Some(&source)), "");
        entry.extra.insert("budgetBytes".into(), 21_504.into());
        assert_eq!(
            plan_note(&entry, Some(&source)),
            " · budget lowered to 21.0 KiB · ≈1004 tokens"
        );
        assert_eq!(plan_note(&entry, None), " · budget lowered to 21.0 KiB");
    }
}
