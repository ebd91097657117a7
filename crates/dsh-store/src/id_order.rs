//! Session ids ordered the way dsh orders equal-`createdAt` sessions: JavaScript's
//! `a.localeCompare(b)`, which is ICU root collation at tertiary strength.
//!
//! Strings the collator calls equal (canonically equivalent spellings) fall back to
//! code-point order, so the listing order stays total and deterministic.

use std::cmp::Ordering;
use std::sync::OnceLock;

use icu_collator::options::CollatorOptions;
use icu_collator::{Collator, CollatorBorrowed, CollatorPreferences};

/// The root collator, built once from the compiled-in data; `None` only if that data is
/// unusable, in which case ids compare by code point.
fn collator() -> Option<&'static CollatorBorrowed<'static>> {
    static COLLATOR: OnceLock<Option<CollatorBorrowed<'static>>> = OnceLock::new();
    COLLATOR
        .get_or_init(|| {
            Collator::try_new(CollatorPreferences::default(), CollatorOptions::default()).ok()
        })
        .as_ref()
}

/// Compare two session ids like dsh's `a.localeCompare(b)` (ties by code point).
pub fn compare_ids(a: &str, b: &str) -> Ordering {
    let collated = collator().map_or(Ordering::Equal, |c| c.compare(a, b));
    collated.then_with(|| a.cmp(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn ties_sort_like_javascript_locale_compare() {
        // The order dsh (Node, ICU root) gives; code-point order would be
        // `Zeta-tie, _tie, alpha-tie, beta-tie, beta_tie, Ärger-tie`.
        let want = [
            "_tie",
            "alpha-tie",
            "Ärger-tie",
            "beta_tie",
            "beta-tie",
            "Zeta-tie",
        ];
        let mut ids = want.map(str::to_owned).to_vec();
        ids.reverse();
        ids.sort_by(|a, b| compare_ids(a, b));
        assert_eq!(ids, want);
    }

    #[test]
    fn collation_ties_fall_back_to_code_points() {
        // "é" precomposed and decomposed are canonically equivalent.
        let (composed, decomposed) = ("caf\u{e9}", "cafe\u{301}");
        assert_eq!(compare_ids(composed, decomposed), composed.cmp(decomposed));
        assert_eq!(compare_ids("a", "a"), Ordering::Equal);
        assert_eq!(compare_ids("a", "B"), Ordering::Less);
        assert_eq!(compare_ids("a", "A"), Ordering::Less);
    }
}
