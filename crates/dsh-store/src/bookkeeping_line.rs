//! Turn and step boundary lines (`turn/start`, `step/start`, `step/end`, `turn/end`)
//! checked without being decoded (docs/performance.md: streaming prepare): they are most of
//! a log's lines, are never on the surface, and a streaming surface read needs only their
//! seq — but they must be valid, so they are validated over their raw bytes.
//!
//! It only answers when the exact decoder would accept the line as a non-surface event of
//! seq `next_seq`; anything else (an unusual shape included) returns `None` and the line is
//! decoded the exact way. A table test and a damaged-line proptest compare the two.

use super::json_scan::Scan;

/// The line shapes answered here, by their leading bytes, and which `data` fields each
/// requires beyond `turn`.
const KINDS: [(&[u8], Required); 4] = [
    (br#"{"type":"turn/start","#, Required::Trigger),
    (br#"{"type":"step/start","#, Required::Step),
    (br#"{"type":"step/end","#, Required::Step),
    (br#"{"type":"turn/end","#, Required::Reason),
];

/// What a boundary event's `data` holds besides `turn`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Required {
    /// `turn/start`: `trigger` may be any value, or missing.
    Trigger,
    /// `step/*`: `step`, a non-negative integer.
    Step,
    /// `turn/end`: `reason`, an object with a string `kind`.
    Reason,
}

/// Stores a known key's value once; a second one is left to the exact decoder.
fn once<T>(slot: &mut Option<T>, value: Option<T>) -> Option<()> {
    if slot.is_some() {
        return None;
    }
    *slot = Some(value?);
    Some(())
}

/// Whether `body` starts like a line [`check`] may answer for.
pub(crate) fn is_boundary_line(body: &[u8]) -> bool {
    KINDS.iter().any(|(prefix, _)| body.starts_with(prefix))
}

/// The seq of a valid boundary line (UTF-8, no lone surrogates) whose seq must be
/// `next_seq`, or `None` when the exact decoder must decide.
pub(crate) fn check(body: &[u8], next_seq: u64) -> Option<u64> {
    let &(prefix, required) = KINDS.iter().find(|(prefix, _)| body.starts_with(prefix))?;
    let mut scan = Scan::new(body);
    let (mut kind, mut seq, mut time, mut seq0, mut time0) = (None, None, None, None, None);
    let (mut data, mut sources) = (None, None);
    scan.object(|s, key| match key {
        b"type" => once(&mut kind, s.plain_string()),
        b"seq" => once(&mut seq, s.u64()),
        b"time" => once(&mut time, s.i64()),
        b"seq0" => once(&mut seq0, nullable(s, |s| s.u64().map(drop))),
        b"time0" => once(&mut time0, nullable(s, |s| s.i64().map(drop))),
        b"data" => once(&mut data, boundary_data(s, required)),
        b"sourceEventSeqs" => once(
            &mut sources,
            nullable(s, |s| s.array(|s| s.u64().map(drop))),
        ),
        // `surfaceOp` (it would put the event on the surface) and anything unusual.
        b"surfaceOp" => None,
        _ => s.skip_value(),
    })?;
    scan.finish()?;
    // The prefix is `{"type":"KIND",`: the kind is the quoted part.
    let expected = prefix.get(9..prefix.len() - 2)?;
    let (seq, _time) = (seq?, time?);
    (kind? == expected && data.is_some() && seq == next_seq).then_some(seq)
}

/// `null` or a value checked by `check`.
fn nullable<'a>(s: &mut Scan<'a>, check: impl FnOnce(&mut Scan<'a>) -> Option<()>) -> Option<()> {
    if s.null() { Some(()) } else { check(s) }
}

/// The `data` object of a boundary event.
fn boundary_data(s: &mut Scan<'_>, required: Required) -> Option<()> {
    let (mut turn, mut step, mut reason, mut trigger) = (None, None, None, None);
    s.object(|s, key| match key {
        b"turn" => once(&mut turn, s.u64()),
        b"step" if required == Required::Step => once(&mut step, s.u64()),
        b"reason" if required == Required::Reason => once(&mut reason, turn_end_reason(s)),
        b"trigger" if required == Required::Trigger => once(&mut trigger, s.skip_value()),
        _ => s.skip_value(),
    })?;
    turn?;
    match required {
        Required::Trigger => Some(()),
        Required::Step => step.map(drop),
        Required::Reason => reason,
    }
}

/// A `turn/end` reason: `{kind: "...", ...}` (any kind string is accepted).
fn turn_end_reason(s: &mut Scan<'_>) -> Option<()> {
    let mut kind = None;
    s.object(|s, key| match key {
        b"kind" => once(&mut kind, s.plain_string().map(drop)),
        _ => s.skip_value(),
    })?;
    kind
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reader::{Limits, decode_exact};

    const LINES: [&str; 4] = [
        r#"{"type":"turn/start","seq":3,"time":9,"data":{"turn":1,"trigger":{"kind":"user"}}}"#,
        r#"{"type":"step/start","seq":3,"time":9,"data":{"turn":1,"step":0}}"#,
        r#"{"type":"step/end","seq":3,"time":9,"data":{"turn":1,"step":0,"usage":{"in":[1,2]}}}"#,
        r#"{"type":"turn/end","seq":3,"time":9,"data":{"turn":1,"reason":{"kind":"completed","message":"x"}}}"#,
    ];

    /// Whenever the check answers, the exact decoder accepts the line as one non-surface
    /// event of that seq.
    fn agrees(line: &[u8]) -> bool {
        let answer = simdutf8::basic::from_utf8(line)
            .ok()
            .and_then(|t| check(t.as_bytes(), 3));
        if let Some(seq) = answer {
            let events = decode_exact(line, 3, &Limits::default()).unwrap_or_else(|e| {
                panic!(
                    "checked, but the exact decoder says {e}: {}",
                    String::from_utf8_lossy(line)
                )
            });
            assert_eq!(events.len(), 1);
            let event = events.first().unwrap();
            assert_eq!((event.seq, event.surface_op), (seq, None));
        }
        answer.is_some()
    }

    #[test]
    fn answers_only_what_the_exact_decoder_answers() {
        let [start, step_start, step_end, end] = LINES;
        let cases: Vec<(String, bool)> = vec![
            (start.into(), true),
            (step_start.into(), true),
            (step_end.into(), true),
            (end.into(), true),
            (start.replace(r#","trigger":{"kind":"user"}"#, ""), true),
            (
                end.replace(r#""kind":"completed""#, r#""kind":"something-new""#),
                true,
            ),
            (
                step_start.replace(r#""seq":3,"#, r#""seq":3,"x":[null],"seq0":null,"#),
                true,
            ),
            (
                step_start.replace(r#""step":0"#, r#""step":0,"sourceEventSeqs":[1]"#),
                true,
            ),
            (format!("{step_start} "), true),
            // Refused, or left to the exact decoder.
            (step_start.replace(r#","step":0"#, ""), false),
            (step_start.replace(r#""step":0"#, r#""step":-1"#), false),
            (step_start.replace(r#""step":0"#, r#""step":0.5"#), false),
            (step_start.replace(r#""turn":1"#, r#""turn":"1""#), false),
            (step_start.replace(r#""turn":1,"#, ""), false),
            (
                step_start.replace(r#""turn":1,"#, r#""turn":1,"turn":2,"#),
                false,
            ),
            (step_start.replace(r#""seq":3"#, r#""seq":4"#), false),
            (
                step_start.replace(r#""seq":3,"#, r#""seq":3,"seq":3,"#),
                false,
            ),
            (step_start.replace(r#""time":9,"#, ""), false),
            (
                step_start.replace(r#","data":{"turn":1,"step":0}"#, ""),
                false,
            ),
            (step_start.replace(r#"{"turn":1,"step":0}"#, "[1,0]"), false),
            (
                step_start
                    .replace(r#""step":0"#, r#""step":0},"surfaceOp":"append""#)
                    .replace("}}", "}"),
                false,
            ),
            (end.replace(r#""kind":"completed","#, ""), false),
            (end.replace(r#""kind":"completed""#, r#""kind":7"#), false),
            (
                end.replace(r#","reason":{"kind":"completed","message":"x"}"#, ""),
                false,
            ),
            (format!("{step_start}x"), false),
            (step_start[..step_start.len() - 1].to_owned(), false),
            (step_start.replace("step/start", "step/other"), false),
        ];
        for (line, answers) in cases {
            assert_eq!(agrees(line.as_bytes()), answers, "{line}");
        }
    }

    proptest::proptest! {
        /// Any byte of a boundary line changed, or the line cut: the check never disagrees.
        #[test]
        fn damaged_boundary_lines_never_disagree(which in 0usize..4, at in 0usize..200, byte in proptest::num::u8::ANY, cut: bool) {
            let mut line = LINES[which].as_bytes().to_vec();
            let at = at % line.len();
            if cut {
                line.truncate(at);
            } else if let Some(b) = line.get_mut(at) {
                *b = byte;
            }
            agrees(&line);
        }
    }
}
