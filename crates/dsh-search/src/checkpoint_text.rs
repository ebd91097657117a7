//! The words of a compaction summary without the framing around them: dsh (and this app)
//! write a checkpoint as an optional preamble, then `<compacted-summary>`, the summary and
//! `</compacted-summary>` (docs/search.md: what is indexed). The index and the snippets hold
//! the summary itself, so a query for "summary" does not match every compacted session and
//! a snippet never shows the tags.

const OPEN: &str = "<compacted-summary>";
const CLOSE: &str = "</compacted-summary>";

/// The summary inside `text`'s `<compacted-summary>` framing (trimmed); `text` itself when
/// it has none.
pub fn summary_of(text: &str) -> &str {
    let Some(start) = text.find(OPEN).map(|i| i + OPEN.len()) else {
        return text;
    };
    let rest = text.get(start..).unwrap_or_default();
    let inner = match rest.rfind(CLOSE) {
        Some(end) => rest.get(..end).unwrap_or_default(),
        None => rest,
    };
    let trimmed = inner.trim();
    if trimmed.is_empty() { text } else { trimmed }
}

#[cfg(test)]
mod tests {
    use super::summary_of;

    #[test]
    fn framing_is_removed() {
        for (text, want) in [
            ("<compacted-summary>\nsum\n</compacted-summary>", "sum"),
            (
                "Continue from this checkpoint.\n\n<compacted-summary>\nA\nB\n</compacted-summary>",
                "A\nB",
            ),
            ("no framing here", "no framing here"),
            ("<compacted-summary>\nunclosed", "unclosed"),
            (
                "<compacted-summary></compacted-summary>",
                "<compacted-summary></compacted-summary>",
            ),
            (
                "<compacted-summary>\nquoted </compacted-summary> inside\n</compacted-summary>",
                "quoted </compacted-summary> inside",
            ),
        ] {
            assert_eq!(summary_of(text), want, "{text:?}");
        }
    }
}
