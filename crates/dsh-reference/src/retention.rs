//! Retention (docs/references.md: retention): fit one source object into `max_reference_bytes` of tag-safe JSON
//! by dropping the oldest droppable messages, then cutting the longest ones from the middle.
//!
//! Linear in the source size: every item's serialized size is computed once and the total
//! kept as a running sum; a cut probes sizes arithmetically and escapes only its result.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::error::{ErrorCode, ReferenceError};
use super::excerpt_window::ExcerptWindow;
use super::json_text::{
    Escaping, decimal_len, escaped_len, item_len, source_fixed_len, tag_safe_len,
};
use super::projection::{ConversationItem, TurnRole};
use super::redact::Redactions;
pub use super::source_data::{ConversationTurn, SourceData};
use dsh_store::TextMeasure;

/// The fixed fields of a source object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceHeader {
    pub session_id: String,
    pub label: String,
    pub cwd: Option<String>,
    pub captured_through_seq: Option<u64>,
}

/// What retention did to one source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RetentionStats {
    pub compacted: bool,
    pub original_messages: usize,
    pub retained_messages: usize,
    pub omitted_messages: usize,
    pub omitted_bytes: u64,
    pub truncated: bool,
}

/// A source that fits its budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetainedSource {
    pub data: SourceData,
    pub stats: RetentionStats,
    /// UTF-8 length of the tag-safe JSON of `data`.
    pub serialized_bytes: usize,
    /// Secrets redacted in the kept messages (none when redaction is off).
    pub redactions: Redactions,
    /// For an excerpt reference: where its window lies in the session.
    pub excerpt: Option<ExcerptWindow>,
    /// The least this source can be sent in (docs/references.md: the budget plan): its
    /// fixed fields, every checkpoint and its newest user/assistant exchange as retained
    /// here; at most `serialized_bytes`.
    pub minimum_bytes: usize,
    /// The budget the plan retained it with, when lower than `max_reference_bytes`.
    pub planned_bytes: Option<usize>,
}

const NOTICE_HEAD: &str = "\n[… omitted ";
const NOTICE_TAIL: &str = " UTF-8 bytes …]";

/// Size facts of one projected item: everything step 1 needs, so a streaming reader can
/// plan the drops before it holds any text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ItemSize {
    pub role: TurnRole,
    pub checkpoint: bool,
    /// UTF-8 bytes of the text.
    pub text_len: usize,
    /// Serialized `{role, text}` object (no comma).
    pub serialized: usize,
}

impl ItemSize {
    /// The sizes of `item`.
    pub fn of(item: &ConversationItem<'_>) -> Self {
        ItemSize {
            role: item.role,
            checkpoint: item.checkpoint,
            text_len: item.text.len(),
            serialized: item_len(
                item.role.as_str(),
                escaped_len(&item.text, Escaping::TagSafe),
            ),
        }
    }

    /// The sizes of an item whose text was only measured (a streaming read); the same as
    /// [`of`](Self::of) on the decoded text.
    pub fn of_measure(role: TurnRole, checkpoint: bool, text: &TextMeasure) -> Self {
        ItemSize {
            role,
            checkpoint,
            text_len: text.bytes,
            serialized: item_len(role.as_str(), tag_safe_len(text)),
        }
    }

    /// Serialized size with the text cut to nothing: what step 2 can reduce it to at best.
    fn floor(&self) -> usize {
        item_len(self.role.as_str(), 0)
    }
}

/// The outcome of step 1: which items stay and what dropping the others cost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DropPlan {
    /// Indices (into the planned items, ascending) of the items that stay.
    pub kept: Vec<usize>,
    /// Serialized size of the object holding only the kept items.
    total: usize,
    compacted: bool,
    original_messages: usize,
    omitted_messages: usize,
    omitted_bytes: u64,
}

/// Step 1 (docs/references.md: retention) on sizes alone: drop the oldest items that are neither checkpoints nor
/// the newest while the object is too big. Fails with `BUDGET_EXCEEDED` right away when even
/// the kept items cut to nothing cannot fit, since step 2 could then only fail the same way.
pub fn plan_drops(
    header: &SourceHeader,
    sizes: &[ItemSize],
    budget: usize,
) -> Result<DropPlan, ReferenceError> {
    plan_drops_after(header, DroppedPrefix::default(), sizes, budget)
}

/// Droppable items older than every planned one that step 1 is known to drop anyway: a
/// streaming reader forgets them as it goes (see [`plan_drops_after`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DroppedPrefix {
    /// How many.
    pub messages: usize,
    /// UTF-8 bytes of their texts.
    pub text_bytes: u64,
}

/// [`plan_drops`] over the items `sizes` that follow `prefix`: the result is what planning
/// all items would give, provided step 1 drops every item of `prefix` (each is a droppable
/// item older than all droppable items of `sizes`, whose droppable items newer than it
/// already exceed the budget), since those are dropped first and dropping one removes its
/// serialized size and one comma from the total.
pub fn plan_drops_after(
    header: &SourceHeader,
    prefix: DroppedPrefix,
    sizes: &[ItemSize],
    budget: usize,
) -> Result<DropPlan, ReferenceError> {
    let fixed = source_fixed_len(
        &header.session_id,
        &header.label,
        header.cwd.as_deref(),
        header.captured_through_seq,
    );
    let mut total =
        fixed + sizes.iter().map(|s| s.serialized).sum::<usize>() + sizes.len().saturating_sub(1);
    let mut dropped = vec![false; sizes.len()];
    let mut omitted_messages = prefix.messages;
    let mut omitted_bytes: u64 = prefix.text_bytes;
    let newest = sizes.len().saturating_sub(1);
    let mut next = 0;
    while total > budget {
        while next < newest && sizes.get(next).is_some_and(|s| s.checkpoint) {
            next += 1;
        }
        let Some(size) = sizes.get(next).filter(|_| next < newest) else {
            break;
        };
        if let Some(d) = dropped.get_mut(next) {
            *d = true;
        }
        // At least the newest item remains, so one separating comma goes with it.
        total -= size.serialized + 1;
        omitted_messages += 1;
        omitted_bytes += size.text_len as u64;
        next += 1;
    }
    let kept: Vec<usize> = (0..sizes.len())
        .filter(|&i| !dropped.get(i).copied().unwrap_or(true))
        .collect();
    if total > budget {
        let floor = fixed
            + kept
                .iter()
                .filter_map(|&i| sizes.get(i))
                .map(ItemSize::floor)
                .sum::<usize>()
            + kept.len().saturating_sub(1);
        if floor > budget {
            return Err(budget_exceeded(header, budget));
        }
    }
    Ok(DropPlan {
        kept,
        total,
        compacted: sizes.iter().any(|s| s.checkpoint),
        original_messages: prefix.messages + sizes.len(),
        omitted_messages,
        omitted_bytes,
    })
}

impl DropPlan {
    /// The same plan with the kept items' texts changed (redaction, docs/references.md:
    /// secret redaction): its total recomputed from `kept`, the items it keeps in order.
    /// What step 1 dropped stays dropped.
    #[must_use]
    pub fn resized(&self, header: &SourceHeader, kept: &[ConversationItem<'_>]) -> DropPlan {
        let fixed = source_fixed_len(
            &header.session_id,
            &header.label,
            header.cwd.as_deref(),
            header.captured_through_seq,
        );
        let total = fixed
            + kept
                .iter()
                .map(|item| ItemSize::of(item).serialized)
                .sum::<usize>()
            + kept.len().saturating_sub(1);
        DropPlan {
            total,
            ..self.clone()
        }
    }
}

/// Per-item bookkeeping while cutting.
struct Slot<'a> {
    item: ConversationItem<'a>,
    /// The cut text, once the item has been cut.
    cut: Option<String>,
    /// Bytes of the original text still present.
    kept: usize,
    /// Serialized size of the item with its current text (no comma).
    serialized: usize,
}

impl Slot<'_> {
    fn current(&self) -> &str {
        self.cut.as_deref().unwrap_or(&self.item.text)
    }
}

/// Fit `items` (projected, model order) under `header` into `budget` bytes.
/// Fails with `BUDGET_EXCEEDED` when even the undroppable items cut to nothing do not fit.
pub fn retain_source(
    header: SourceHeader,
    items: Vec<ConversationItem<'_>>,
    budget: usize,
) -> Result<RetainedSource, ReferenceError> {
    let sizes: Vec<ItemSize> = items.iter().map(ItemSize::of).collect();
    let plan = plan_drops(&header, &sizes, budget)?;
    let mut keep = plan.kept.iter().copied().peekable();
    let kept = items
        .into_iter()
        .enumerate()
        .filter(|(i, _)| keep.next_if_eq(i).is_some())
        .map(|(_, item)| item)
        .collect();
    finish_retention(header, &plan, kept, budget)
}

/// Step 2 (docs/references.md: retention) and the stats: `kept` are the items `plan` kept, in order, with their
/// original text. Cuts the longest item (first on ties) until the object fits.
pub fn finish_retention(
    header: SourceHeader,
    plan: &DropPlan,
    kept: Vec<ConversationItem<'_>>,
    budget: usize,
) -> Result<RetainedSource, ReferenceError> {
    let mut total = plan.total;
    let mut slots: Vec<Slot<'_>> = kept
        .into_iter()
        .map(|item| {
            let serialized = ItemSize::of(&item).serialized;
            Slot {
                kept: item.text.len(),
                item,
                cut: None,
                serialized,
            }
        })
        .collect();

    if total > budget {
        let mut longest: BinaryHeap<(usize, Reverse<usize>)> = slots
            .iter()
            .enumerate()
            .map(|(i, s)| (s.current().len(), Reverse(i)))
            .collect();
        while total > budget {
            let overflow = total - budget;
            let index = loop {
                match longest.pop() {
                    None => return Err(budget_exceeded(&header, budget)),
                    Some((len, Reverse(i))) => {
                        if slots.get(i).is_some_and(|s| s.current().len() == len) {
                            break i;
                        }
                    }
                }
            };
            let Some(slot) = slots.get_mut(index) else {
                return Err(budget_exceeded(&header, budget));
            };
            let current_len = slot.current().len();
            if current_len == 0 {
                return Err(budget_exceeded(&header, budget));
            }
            let target = current_len.saturating_sub(overflow);
            let (text, kept) = cut_to_fit(&slot.item.text, target);
            if text == slot.current() {
                return Err(budget_exceeded(&header, budget));
            }
            let serialized = item_len(
                slot.item.role.as_str(),
                escaped_len(&text, Escaping::TagSafe),
            );
            total = total - slot.serialized + serialized;
            slot.serialized = serialized;
            slot.kept = kept;
            longest.push((text.len(), Reverse(index)));
            slot.cut = Some(text);
        }
    }

    let minimum_bytes = minimum(&header, &slots).min(total);
    let mut omitted_bytes = plan.omitted_bytes;
    let mut any_cut = false;
    let conversation: Vec<ConversationTurn> = slots
        .into_iter()
        .map(|s| {
            let cut_bytes = s.item.text.len() - s.kept;
            if s.cut.is_some() {
                any_cut = true;
                omitted_bytes += cut_bytes as u64;
            }
            ConversationTurn {
                role: s.item.role,
                text: s.cut.unwrap_or_else(|| s.item.text.into_owned()),
            }
        })
        .collect();
    let stats = RetentionStats {
        compacted: plan.compacted,
        original_messages: plan.original_messages,
        retained_messages: conversation.len(),
        omitted_messages: plan.omitted_messages,
        omitted_bytes,
        truncated: plan.omitted_messages > 0 || any_cut,
    };
    Ok(RetainedSource {
        data: SourceData {
            session_id: header.session_id,
            label: header.label,
            cwd: header.cwd,
            captured_through_seq: header.captured_through_seq,
            conversation,
        },
        stats,
        serialized_bytes: total,
        redactions: Redactions::default(),
        excerpt: None,
        minimum_bytes,
        planned_bytes: None,
    })
}

/// The serialized size of `header`'s object holding only the checkpoints and the newest
/// exchange (the newest message a person typed and everything after it) of `slots`.
fn minimum(header: &SourceHeader, slots: &[Slot<'_>]) -> usize {
    let newest_user = slots
        .iter()
        .rposition(|s| s.item.role == TurnRole::User && !s.item.checkpoint)
        .unwrap_or(slots.len().saturating_sub(1));
    let kept: Vec<usize> = slots
        .iter()
        .enumerate()
        .filter(|(i, s)| s.item.checkpoint || *i >= newest_user)
        .map(|(_, s)| s.serialized)
        .collect();
    source_fixed_len(
        &header.session_id,
        &header.label,
        header.cwd.as_deref(),
        header.captured_through_seq,
    ) + kept.iter().sum::<usize>()
        + kept.len().saturating_sub(1)
}

fn budget_exceeded(header: &SourceHeader, budget: usize) -> ReferenceError {
    ReferenceError::new(
        ErrorCode::BudgetExceeded,
        format!(
            "referenced session {:?} does not fit in max_reference_bytes = {budget}, even with \
             every message cut",
            header.session_id
        ),
    )
}

/// Where a cut keeping about `retained` bytes splits `text`: `(head_end, tail_start)`, each
/// moved inward to a char boundary.
fn cut_points(text: &str, retained: usize) -> (usize, usize) {
    let len = text.len();
    let mut head_end = retained.div_ceil(2).min(len);
    while !text.is_char_boundary(head_end) {
        head_end -= 1;
    }
    let mut tail_start = len - (retained / 2).min(len);
    while !text.is_char_boundary(tail_start) {
        tail_start += 1;
    }
    (head_end, tail_start)
}

/// Length of the cut text for `retained`, without building it.
fn cut_len(text: &str, retained: usize) -> usize {
    let (head_end, tail_start) = cut_points(text, retained);
    if head_end >= tail_start {
        return text.len();
    }
    let kept = head_end + (text.len() - tail_start);
    kept + NOTICE_HEAD.len() + decimal_len((text.len() - kept) as u128) + NOTICE_TAIL.len()
}

/// Re-cut the original `text` to at most `target` bytes: the largest head + tail + notice
/// that fits, or `""` when none does. Returns the text and the original bytes it keeps.
pub fn cut_to_fit(text: &str, target: usize) -> (String, usize) {
    // cut_len is non-decreasing in `retained`, so binary search for the largest fit.
    let (mut lo, mut hi) = (0usize, target);
    let mut best = None;
    while lo <= hi {
        let mid = lo + (hi - lo) / 2;
        if cut_len(text, mid) <= target {
            best = Some(mid);
            lo = mid + 1;
        } else if mid == 0 {
            break;
        } else {
            hi = mid - 1;
        }
    }
    let Some(retained) = best else {
        return (String::new(), 0);
    };
    let (head_end, tail_start) = cut_points(text, retained);
    if head_end >= tail_start {
        return (text.to_owned(), text.len());
    }
    let head = text.get(..head_end).unwrap_or_default();
    let tail = text.get(tail_start..).unwrap_or_default();
    let omitted = text.len() - head.len() - tail.len();
    let mut out = String::with_capacity(target);
    out.push_str(head);
    out.push_str(tail);
    out.push_str(NOTICE_HEAD);
    out.push_str(&omitted.to_string());
    out.push_str(NOTICE_TAIL);
    (out, head.len() + tail.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json_text::source_json;
    use std::borrow::Cow;

    fn header() -> SourceHeader {
        SourceHeader {
            session_id: "s".into(),
            label: "L".into(),
            cwd: None,
            captured_through_seq: Some(3),
        }
    }

    fn item(text: &str, checkpoint: bool) -> ConversationItem<'static> {
        ConversationItem {
            role: TurnRole::User,
            text: Cow::Owned(text.to_owned()),
            checkpoint,
        }
    }

    #[test]
    fn cut_keeps_head_and_tail_on_char_boundaries() {
        let cases = [
            ("abcdefghij", 40, "abcdefghij", 10),
            (
                "abcdefghijklmnopqrstuvwxyz0123456789",
                33,
                "\n[… omitted 36 UTF-8 bytes …]",
                0,
            ),
            (
                "abcdefghijklmnopqrstuvwxyz0123456789",
                35,
                "a9\n[… omitted 34 UTF-8 bytes …]",
                2,
            ),
            ("abcdefghijklmnopqrstuvwxyz0123456789", 32, "", 0),
            (
                "漢字漢字漢字漢字漢字漢字漢字漢字",
                37,
                "漢\n[… omitted 45 UTF-8 bytes …]",
                3,
            ),
        ];
        for (text, target, want, kept) in cases {
            let (got, got_kept) = cut_to_fit(text, target);
            assert_eq!(got, want, "{text:?} @ {target}");
            assert_eq!(got_kept, kept);
            assert!(got.len() <= target.max(text.len()));
        }
    }

    #[test]
    fn fits_without_changes_when_under_budget() {
        let r = retain_source(header(), vec![item("a", false), item("b", false)], 1000).unwrap();
        assert_eq!(r.serialized_bytes, source_json(&r.data).len());
        assert!(!r.stats.truncated);
        assert_eq!(r.stats.retained_messages, 2);
    }

    #[test]
    fn drops_oldest_but_keeps_checkpoints_and_newest() {
        let items = vec![
            item("old one", false),
            item("checkpoint", true),
            item("middle", false),
            item("newest", false),
        ];
        let full = retain_source(header(), items.clone(), 10_000).unwrap();
        let budget = full.serialized_bytes - 1;
        let r = retain_source(header(), items, budget).unwrap();
        let texts: Vec<&str> = r
            .data
            .conversation
            .iter()
            .map(|t| t.text.as_str())
            .collect();
        assert_eq!(texts, ["checkpoint", "middle", "newest"]);
        assert_eq!(r.stats.omitted_messages, 1);
        assert_eq!(r.stats.omitted_bytes, 7);
        assert!(r.stats.compacted && r.stats.truncated);
        assert_eq!(r.serialized_bytes, source_json(&r.data).len());
    }

    #[test]
    fn fixed_fields_too_big_is_budget_exceeded() {
        let err = retain_source(header(), vec![item("x", false)], 20).unwrap_err();
        assert_eq!(err.code, ErrorCode::BudgetExceeded);
        let err = retain_source(header(), vec![], 5).unwrap_err();
        assert_eq!(err.code, ErrorCode::BudgetExceeded);
    }
}
