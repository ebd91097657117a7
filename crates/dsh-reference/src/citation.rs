//! Citations of referenced messages in an answer (docs/references.md: citations):
//! `[ref K #SEQ]`, K the reference's 1-based place in the message that carried it, SEQ the
//! log seq of the cited message (as a recall result gave it).

use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;

/// One citation found in a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Citation {
    /// Where it is in the text (bytes).
    pub range: Range<usize>,
    /// The reference's 1-based place.
    pub reference: usize,
    pub seq: u64,
}

/// The citation of message `seq` of reference `reference`.
pub fn citation(reference: usize, seq: u64) -> String {
    format!("[ref {reference} #{seq}]")
}

static PATTERN: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"\[ref ([1-9][0-9]{0,2}) #([0-9]{1,19})\]").ok());

/// Every citation in `text`, in order. A number too large to be a place or a seq is text.
pub fn find_citations(text: &str) -> Vec<Citation> {
    let Some(pattern) = PATTERN.as_ref() else {
        return Vec::new();
    };
    pattern
        .captures_iter(text)
        .filter_map(|c| {
            let whole = c.get(0)?;
            Some(Citation {
                range: whole.range(),
                reference: c.get(1)?.as_str().parse().ok()?,
                seq: c.get(2)?.as_str().parse().ok()?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn citations_are_found_with_their_place_and_seq() {
        let text = "It was Kafka [ref 1 #12], then Redis [ref 2 #4071].";
        let found = find_citations(text);
        assert_eq!(
            found,
            vec![
                Citation {
                    range: 13..24,
                    reference: 1,
                    seq: 12
                },
                Citation {
                    range: 37..50,
                    reference: 2,
                    seq: 4071
                },
            ]
        );
        assert_eq!(&text[found[0].range.clone()], citation(1, 12));
        for not in [
            "[ref 0 #1]",
            "[ref 1 #]",
            "[ref 1 # 2]",
            "[ref1 #2]",
            "[ref 1 #99999999999999999999]",
            "(ref 1 #2)",
        ] {
            assert_eq!(find_citations(not), vec![], "{not}");
        }
    }
}
