//! Where the listing's match lies in a session's label, for highlighting what matched: the
//! listing takes a session when its title (its label), id or cwd contains the query
//! case-insensitively (`str::to_lowercase` of both, as [`crate::candidates`] compares).

use std::ops::Range;

/// Byte ranges of `label` whose lowercase form is the lowercase `query`, every
/// non-overlapping occurrence, leftmost first; none for an empty query or a session matched
/// by its id or cwd only.
pub fn label_match_ranges(label: &str, query: &str) -> Vec<Range<usize>> {
    let needle = query.to_lowercase();
    if needle.is_empty() {
        return Vec::new();
    }
    let lowered = label.to_lowercase();
    // Byte offset in `label` of the char each byte of `lowered` comes from (a char's
    // lowercase form may be longer or shorter than the char; `to_lowercase` of the whole
    // string differs from the chars' only in a final sigma, which keeps its length).
    let mut origin = Vec::with_capacity(lowered.len() + 1);
    for (at, c) in label.char_indices() {
        let len: usize = c.to_lowercase().map(char::len_utf8).sum();
        origin.extend(std::iter::repeat_n(at, len));
    }
    if origin.len() != lowered.len() {
        return Vec::new();
    }
    let end_of = |lowered_end: usize| {
        // The label char holding the match's last byte ends the range.
        origin.get(lowered_end - 1).and_then(|&start| {
            label
                .get(start..)?
                .chars()
                .next()
                .map(|c| start + c.len_utf8())
        })
    };
    let mut ranges = Vec::new();
    let mut from = 0;
    while let Some(found) = lowered.get(from..).and_then(|rest| rest.find(&needle)) {
        let start = from + found;
        let end = start + needle.len();
        if let (Some(&label_start), Some(label_end)) = (origin.get(start), end_of(end)) {
            ranges.push(label_start..label_end);
        }
        from = end;
    }
    ranges
}

#[cfg(test)]
#[allow(clippy::single_range_in_vec_init)] // expected ranges are lists
mod tests {
    use super::*;

    #[test]
    fn ranges_follow_the_listings_case_folding() {
        let cases: &[(&str, &str, &[Range<usize>])] = &[
            ("Fix overflow", "fo", &[]),
            ("Fix overflow", "ov", &[4..6]),
            ("Kafka vs KAFKA", "kafka", &[0..5, 9..14]),
            ("İstanbul trip", "i̇st", &[0..4]),
            ("会话 记录", "记", &[7..10]),
            ("ΣΟΦΟΣ", "σοφος", &[0..10]),
            ("anything", "", &[]),
            ("abc", "abcd", &[]),
        ];
        for (label, query, want) in cases {
            let got = label_match_ranges(label, query);
            assert_eq!(got, *want, "{label:?} {query:?}");
            for r in &got {
                assert!(label.get(r.clone()).is_some());
            }
        }
    }
}
