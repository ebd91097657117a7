//! Citations of referenced messages in an answer (docs/references.md: citations):
//! `[ref K #SEQ]`, K the reference's 1-based place in the message that carried it, SEQ the
//! log seq of the cited message (as a recall result gave it).

use std::ops::Range;

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

/// Every citation in `text`, in order. A number too large to be a place or a seq is text.
pub fn find_citations(text: &str) -> Vec<Citation> {
    const HEAD: &str = "[ref ";
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = text.get(from..).and_then(|rest| rest.find(HEAD)) {
        let start = from + at;
        from = start + HEAD.len();
        if let Some((reference, seq, end)) = parse_after(text, from) {
            out.push(Citation {
                range: start..end,
                reference,
                seq,
            });
            from = end;
        }
    }
    out
}

/// `K #SEQ]` at `at` (K 1 to 999 without a leading zero, SEQ 1 to 19 digits): the place,
/// the seq and where the citation ends.
fn parse_after(text: &str, at: usize) -> Option<(usize, u64, usize)> {
    let rest = text.get(at..)?;
    let digits = |s: &str| s.bytes().take_while(u8::is_ascii_digit).count();
    let k = digits(rest);
    if !(1..=3).contains(&k) || rest.starts_with('0') {
        return None;
    }
    let after_k = rest.get(k..)?.strip_prefix(" #")?;
    let n = digits(after_k);
    if !(1..=19).contains(&n) || !after_k.get(n..)?.starts_with(']') {
        return None;
    }
    let reference = rest.get(..k)?.parse().ok()?;
    let seq = after_k.get(..n)?.parse().ok()?;
    Some((reference, seq, at + k + 2 + n + 1))
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
