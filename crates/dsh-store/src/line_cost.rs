//! What decoding one log line may cost in memory, known before it is decoded
//! (docs/session-store.md: damage). A line is decoded into `serde_json` values (80 bytes
//! each with `preserve_order`, held in vectors that may be twice as long as they need, plus
//! the first allocation of every non-empty array or object and a heap chunk per string): a
//! line of tiny members, empty containers or deep nesting costs 40–150 times its bytes, far
//! more than a line of text. [`fits`] estimates that cost from the bytes alone — a linear
//! scan that allocates nothing — and a line whose estimate is over its budget is not decoded
//! but read as a placeholder, like a line longer than `store.max_line_bytes`. So one line
//! never costs more than [`DECODE_FACTOR`] times its bytes plus [`DECODE_CONSTANT`] to
//! decode, whatever it holds.
//!
//! The estimate is an upper bound of what the decoders take (checked against the real
//! binary's peak resident set in `tests/line_memory.rs`): every JSON value counts
//! [`VALUE`] bytes, every non-empty array or object [`CONTAINER`] more, every string its
//! bytes (escapes counted as written, never less than they decode to) plus [`STRING`];
//! an entry of the top-level `sourceEventSeqs`, decoded into a plain integer, [`SEQ`].

/// A JSON value in the container holding it: an 80-byte `serde_json::Value` in a vector
/// that may have room for twice as many.
const VALUE: u64 = 160;
/// The first allocation of a non-empty array or object (room for four values).
const CONTAINER: u64 = 320;
/// The heap chunk a string's bytes take beyond their length.
const STRING: u64 = 32;
/// The most any one byte adds to the estimate (a `[` opening a non-empty array).
const MAX_PER_BYTE: u64 = VALUE + CONTAINER;
/// An entry of the top-level `sourceEventSeqs`, decoded straight into a vector of
/// integers (8 bytes, twice while it grows), not into values.
const SEQ: u64 = 16;
const SOURCE_SEQS: &[u8] = b"sourceEventSeqs";

/// Decoding a line may cost this many times its bytes...
pub const DECODE_FACTOR: u64 = 5;
/// ...plus this much.
pub const DECODE_CONSTANT: u64 = 16 << 20;

/// Most seqs one line of ours lists inside its `data` (a compaction's `shadowedSeqs`, each
/// decoded into a value): a line listing this many still fits its decoding budget.
pub const MAX_LISTED_SEQS: usize = 100_000;

/// Whether decoding `body` (one line without its `\n`) stays within its budget.
pub fn fits(body: &[u8]) -> bool {
    let len = body.len() as u64;
    let budget = len
        .saturating_mul(DECODE_FACTOR)
        .saturating_add(DECODE_CONSTANT);
    // A line this short fits whatever it holds: no scan.
    len.saturating_mul(MAX_PER_BYTE) <= budget || estimate_within(body, budget)
}

/// Whether the estimate of `body` stays within `budget` (the scan stops once it is over).
fn estimate_within(body: &[u8], budget: u64) -> bool {
    // The top-level value.
    let mut cost = VALUE;
    let mut at = 0;
    // After `[` or `{`: whether the container turned out non-empty is still open.
    let mut opened = false;
    let mut depth: u32 = 0;
    // The top-level `sourceEventSeqs` (decoded straight into integers): its key was the
    // last string at depth 1 / its value is being read.
    let mut seqs_key = false;
    let mut in_seqs = false;
    while let Some(&byte) = body.get(at) {
        if opened && !matches!(byte, b' ' | b'\t' | b'\r' | b'\n') {
            opened = false;
            if !matches!(byte, b']' | b'}') {
                // Its first value (later ones follow a `,` or `:`) and its allocation.
                cost += VALUE + CONTAINER;
            }
        }
        match byte {
            b'"' => {
                let end = string_end(body, at + 1);
                cost += STRING + (end - at) as u64;
                seqs_key = depth == 1 && body.get(at + 1..end) == Some(SOURCE_SEQS);
                at = end;
            }
            b'[' | b'{' => {
                opened = true;
                depth += 1;
                in_seqs |= depth == 2 && seqs_key && byte == b'[';
            }
            b']' | b'}' => {
                depth = depth.saturating_sub(1);
                in_seqs &= depth >= 2;
            }
            b',' if in_seqs && depth == 2 => cost += SEQ,
            // Every value after the first of an array, every key after the first of an
            // object, and every member's value.
            b',' | b':' => cost += VALUE,
            _ => {}
        }
        if cost > budget {
            return false;
        }
        at += 1;
    }
    true
}

/// The index of the `"` closing the string whose contents start at `from` (the line's
/// length if it never closes).
fn string_end(body: &[u8], mut from: usize) -> usize {
    loop {
        let Some(rest) = body.get(from..) else {
            return body.len();
        };
        match memchr::memchr2(b'"', b'\\', rest) {
            None => return body.len(),
            Some(i) if rest.get(i) == Some(&b'"') => return from + i,
            // A backslash: the next byte is escaped.
            Some(i) => from += i + 2,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn estimate(body: &[u8]) -> u64 {
        (0..=u64::MAX.ilog2())
            .map(|b| 1u64 << b)
            .find(|&budget| estimate_within(body, budget))
            .unwrap_or(u64::MAX)
    }

    #[test]
    fn each_value_container_and_string_counts() {
        let cases: [(&str, u64); 9] = [
            ("{}", VALUE),
            ("[]", VALUE),
            ("[0]", 2 * VALUE + CONTAINER),
            ("[0,0]", 3 * VALUE + CONTAINER),
            ("[ ]", VALUE),
            ("[[]]", 2 * VALUE + CONTAINER),
            (r#"{"a":1}"#, 3 * VALUE + CONTAINER + STRING + 2),
            (r#"["a\"]"]"#, 2 * VALUE + CONTAINER + STRING + 5),
            (r#""[,:{""#, VALUE + STRING + 5),
        ];
        for (body, want) in cases {
            let got = estimate(body.as_bytes());
            // `estimate` finds the smallest power of two the cost fits in.
            assert!(got >= want && got < 2 * want, "{body}: {got} for {want}");
            assert!(estimate_within(body.as_bytes(), want), "{body}");
            assert!(!estimate_within(body.as_bytes(), want - 1), "{body}");
        }
    }

    #[test]
    fn text_fits_and_dense_members_do_not() {
        let n = 4 << 20;
        let text = format!(r#"{{"text":"{}"}}"#, "word ".repeat(n / 5));
        assert!(fits(text.as_bytes()));
        let escapes = format!(r#"{{"text":"{}"}}"#, "\\n".repeat(n / 2));
        assert!(fits(escapes.as_bytes()));
        let numbers = format!("[{}0]", "0,".repeat(n / 2));
        assert!(!fits(numbers.as_bytes()));
        let nested = format!("{}{}", "[".repeat(n / 2), "]".repeat(n / 2));
        assert!(!fits(nested.as_bytes()));
        // A checkpoint's long list of source seqs is decoded into integers: it fits; the
        // same list as values in its data does not.
        let seqs = (0..n / 8)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(",");
        let checkpoint = format!(r#"{{"data":{{"seqs":[1]}},"sourceEventSeqs":[{seqs}]}}"#);
        assert!(fits(checkpoint.as_bytes()));
        let listed = format!(r#"{{"data":{{"shadowedSeqs":[{seqs}]}}}}"#);
        assert!(!fits(listed.as_bytes()));
        let nested = format!(r#"{{"data":{{"sourceEventSeqs":[{seqs}]}}}}"#);
        assert!(!fits(nested.as_bytes()), "only the top-level list");
        // Short lines fit without a scan, whatever they hold.
        let short = format!("[{}0]", "0,".repeat(8_000));
        assert!(fits(short.as_bytes()));
    }

    #[test]
    fn a_line_listing_the_most_seqs_of_ours_fits() {
        let seqs: Vec<String> = (0..MAX_LISTED_SEQS)
            .map(|i| (4_000_000_000 + i).to_string())
            .collect();
        let line = format!(
            r#"{{"type":"compaction/summary","seq":1,"time":1,"data":{{"compactionId":"c","shadowedSeqs":[{}]}},"sourceEventSeqs":[{}]}}"#,
            seqs.join(","),
            seqs.join(",")
        );
        assert!(fits(line.as_bytes()));
        let few: Vec<&str> = seqs.iter().take(1000).map(String::as_str).collect();
        let short = format!(r#"{{"shadowedSeqs":[{}]}}"#, few.join(","));
        assert!(fits(short.as_bytes()));
    }

    #[test]
    fn an_unclosed_string_or_trailing_backslash_ends_the_scan() {
        assert!(estimate_within(br#"["abc"#, 1 << 20));
        assert!(estimate_within(br#"["abc\"#, 1 << 20));
        assert_eq!(string_end(br"ab\", 0), 3);
        assert_eq!(string_end(br#"a\"b"c"#, 0), 4);
    }
}
