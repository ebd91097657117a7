//! A faster decode of the two line shapes that carry most of a log's bytes, `user/message`
//! and `assistant/message` (docs/performance.md: streaming prepare): deserialized straight into
//! the typed event, without a `serde_json::Value` tree for the line and its `data` first.
//!
//! It only ever answers when it is sure to give what the exact decoder gives: any line it
//! does not fully accept (another shape, a duplicate key, a failed check) returns `None`, and
//! the caller decodes it the exact way, which then also words the error.

use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use super::event::{Event, EventData, Message, SurfaceOp};

/// The top-level fields of a line, with the same types as the exact decoder's record (so a
/// field it would reject is rejected here too), `data` typed by `D`.
#[derive(Deserialize)]
struct Line<D> {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    seq: Option<u64>,
    #[serde(default)]
    time: Option<i64>,
    #[serde(default)]
    #[allow(dead_code)] // checked for its type only, as the exact decoder does
    seq0: Option<u64>,
    #[serde(default)]
    #[allow(dead_code)] // checked for its type only, as the exact decoder does
    time0: Option<i64>,
    data: D,
    #[serde(rename = "surfaceOp", default)]
    surface_op: Option<SurfaceOp>,
    #[serde(rename = "sourceEventSeqs", default)]
    source_event_seqs: Option<Vec<u64>>,
}

/// `data` of an `assistant/message` event.
#[derive(Deserialize)]
struct AssistantData {
    turn: u64,
    step: u64,
    message: Message,
    /// Present (even `null`) → `Some`, as the exact decoder keeps it.
    #[serde(default, deserialize_with = "present")]
    usage: Option<Value>,
    #[serde(flatten)]
    extra: Map<String, Value>,
}

fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

const USER_PREFIX: &[u8] = br#"{"type":"user/message","#;
const ASSISTANT_PREFIX: &[u8] = br#"{"type":"assistant/message","#;

/// The event of a message line (already repaired of lone surrogates) whose seq must be
/// `next_seq`, or `None` when the exact decoder must decide.
pub(crate) fn decode(body: &[u8], next_seq: u64) -> Option<Event> {
    if !body.starts_with(USER_PREFIX) && !body.starts_with(ASSISTANT_PREFIX) {
        return None;
    }
    // One UTF-8 check of the whole line, then a parse that does not check each string
    // piece again (the same bytes are accepted: invalid UTF-8 outside a string is a
    // syntax error either way).
    let text = simdutf8::basic::from_utf8(body).ok()?;
    if body.starts_with(USER_PREFIX) {
        let line: Line<Message> = serde_json::from_str(text).ok()?;
        let data = EventData::UserMessage(line.data);
        finish(
            &line.kind,
            line.seq,
            line.time,
            line.surface_op,
            line.source_event_seqs,
            data,
            next_seq,
        )
    } else if body.starts_with(ASSISTANT_PREFIX) {
        let line: Line<AssistantData> = serde_json::from_str(text).ok()?;
        let d = line.data;
        let data = EventData::AssistantMessage {
            turn: d.turn,
            step: d.step,
            message: d.message,
            usage: d.usage,
            extra: d.extra,
        };
        finish(
            &line.kind,
            line.seq,
            line.time,
            line.surface_op,
            line.source_event_seqs,
            data,
            next_seq,
        )
    } else {
        None
    }
}

/// The checks of the exact decoder for a non-packed surface event; `None` if one fails.
fn finish(
    kind: &str,
    seq: Option<u64>,
    time: Option<i64>,
    surface_op: Option<SurfaceOp>,
    source_event_seqs: Option<Vec<u64>>,
    data: EventData,
    next_seq: u64,
) -> Option<Event> {
    let (seq, time) = (seq?, time?);
    if seq != next_seq || surface_op.is_none() {
        return None;
    }
    let event = Event {
        seq,
        time,
        data,
        surface_op,
        source_event_seqs,
    };
    (event.kind() == kind).then_some(event)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reader::{Limits, decode_exact};

    const USER: &str = r#"{"type":"user/message","seq":3,"time":9,"data":{"id":"m","role":"user","content":[{"type":"text","text":"hé \"q\" \\ <b>"}],"source":{"kind":"user"}},"surfaceOp":"append"}"#;
    const ASSISTANT: &str = r#"{"type":"assistant/message","seq":3,"time":9,"data":{"turn":1,"step":0,"message":{"id":"a","role":"assistant","content":[{"type":"text","text":"ok"},{"type":"reasoning","text":"r"}],"source":{"kind":"model"}},"usage":{"in":1}},"surfaceOp":"append"}"#;

    /// Whenever the fast path answers, the exact decoder gives the same event.
    fn agrees(line: &[u8]) -> bool {
        let fast = decode(line, 3);
        let exact = decode_exact(line, 3, &Limits::default());
        if let Some(event) = &fast {
            assert_eq!(
                exact.as_ref().ok(),
                Some(&vec![event.clone()]),
                "{}",
                String::from_utf8_lossy(line)
            );
        }
        fast.is_some()
    }

    #[test]
    fn answers_only_what_the_exact_decoder_answers() {
        // (line, whether the fast path should answer)
        let cases: Vec<(String, bool)> = vec![
            (USER.into(), true),
            (ASSISTANT.into(), true),
            (ASSISTANT.replace(r#","usage":{"in":1}"#, ""), true),
            (
                ASSISTANT.replace(r#""usage":{"in":1}"#, r#""usage":null"#),
                true,
            ),
            (
                ASSISTANT.replace(r#""turn":1,"#, r#""turn":1,"x":[1,2.5,{"y":null}],"#),
                true,
            ),
            (
                USER.replace(r#""id":"m","#, r#""id":"m","extra":1,"extra":2,"#),
                true,
            ),
            (USER.replace(r#""seq":3,"#, r#""seq":3,"seq0":7,"#), true),
            // Rejected or decided by the exact decoder.
            (USER.replace(r#""seq":3,"#, r#""seq":3,"seq":3,"#), false),
            (USER.replace(r#""id":"m","#, r#""id":"m","id":"n","#), false),
            (
                ASSISTANT.replace(r#""turn":1,"#, r#""turn":1,"turn":2,"#),
                false,
            ),
            (ASSISTANT.replace(r#""turn":1"#, r#""turn":1.0"#), false),
            (ASSISTANT.replace(r#""turn":1"#, r#""turn":-1"#), false),
            (USER.replace(r#""seq":3,"#, r#""seq":3,"seq0":"x","#), false),
            (USER.replace(r#""seq":3"#, r#""seq":4"#), false),
            (USER.replace(r#","surfaceOp":"append""#, ""), false),
            (USER.replace(r#""time":9,"#, ""), false),
            (USER.replace(r#""role":"user""#, r#""role":"robot""#), false),
            (USER.replace(r#""data":{"#, r#""data":{"data":0,"#), true),
            (USER.replace("user/message", "user/other"), false),
            (
                USER.replace(r#"{"type":"user/message","#, r#"{ "type":"user/message","#),
                false,
            ),
        ];
        for (line, answers) in cases {
            assert_eq!(agrees(line.as_bytes()), answers, "{line}");
        }
    }

    proptest::proptest! {
        /// Any byte of a message line changed: the fast path never disagrees.
        #[test]
        fn damaged_message_lines_never_disagree(at in 0usize..400, byte in proptest::num::u8::ANY, assistant: bool) {
            let mut line = if assistant { ASSISTANT } else { USER }.as_bytes().to_vec();
            let len = line.len();
            if let Some(b) = line.get_mut(at % len) {
                *b = byte;
            }
            agrees(&line);
        }
    }
}
