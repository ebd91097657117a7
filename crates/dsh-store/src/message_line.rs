//! A faster decode of the two line shapes that carry most of a log's bytes, `user/message`
//! and `assistant/message` (docs/performance.md: streaming prepare): deserialized straight into
//! the typed event, without a `serde_json::Value` tree for the line and its `data` first.
//!
//! It only ever answers when it is sure to give what the exact decoder gives: any line it
//! does not fully accept (another shape, a duplicate key, a failed check) returns `None`, and
//! the caller decodes it the exact way, which then also words the error.

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use super::event::{ContentBlock, Event, EventData, Message, Role, Source, SurfaceOp};

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

/// `data` of an `assistant/message` event, read key by key (serde's `flatten` would buffer
/// the whole message, texts included, and copy it once more).
struct AssistantData {
    turn: u64,
    step: u64,
    message: Message,
    /// Present (even `null`) → `Some`, as the exact decoder keeps it.
    usage: Option<Value>,
    extra: Map<String, Value>,
}

/// A [`Message`] read key by key, without `flatten`'s buffering: the same fields, types,
/// duplicate-field errors and extra keys (in order, a repeated extra key keeping its first
/// place and last value) as its derived decoder.
struct FastMessage(Message);

/// Stores a known field's value, refusing a second one as the derived decoders do.
fn set_once<T, E: de::Error>(slot: &mut Option<T>, value: T, name: &'static str) -> Result<(), E> {
    if slot.is_some() {
        return Err(E::duplicate_field(name));
    }
    *slot = Some(value);
    Ok(())
}

impl<'de> Deserialize<'de> for FastMessage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = FastMessage;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a message object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<FastMessage, A::Error> {
                let (mut id, mut role, mut content) = (None, None, None);
                let mut source: Option<Option<Source>> = None;
                let mut extra = Map::new();
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "id" => set_once(&mut id, map.next_value::<String>()?, "id")?,
                        "role" => set_once(&mut role, map.next_value::<Role>()?, "role")?,
                        "content" => set_once(
                            &mut content,
                            map.next_value::<Vec<ContentBlock>>()?,
                            "content",
                        )?,
                        "source" => set_once(&mut source, map.next_value()?, "source")?,
                        _ => {
                            let value: Value = map.next_value()?;
                            extra.insert(key, value);
                        }
                    }
                }
                Ok(FastMessage(Message {
                    id: id.ok_or_else(|| de::Error::missing_field("id"))?,
                    role: role.ok_or_else(|| de::Error::missing_field("role"))?,
                    content: content.ok_or_else(|| de::Error::missing_field("content"))?,
                    source: source.flatten(),
                    extra,
                }))
            }
        }
        d.deserialize_map(V)
    }
}

impl<'de> Deserialize<'de> for AssistantData {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = AssistantData;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("assistant message data")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<AssistantData, A::Error> {
                let (mut turn, mut step, mut message, mut usage) = (None, None, None, None);
                let mut extra = Map::new();
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "turn" => set_once(&mut turn, map.next_value::<u64>()?, "turn")?,
                        "step" => set_once(&mut step, map.next_value::<u64>()?, "step")?,
                        "message" => {
                            let value = map.next_value::<FastMessage>()?.0;
                            set_once(&mut message, value, "message")?;
                        }
                        "usage" => set_once(&mut usage, map.next_value::<Value>()?, "usage")?,
                        _ => {
                            let value: Value = map.next_value()?;
                            extra.insert(key, value);
                        }
                    }
                }
                Ok(AssistantData {
                    turn: turn.ok_or_else(|| de::Error::missing_field("turn"))?,
                    step: step.ok_or_else(|| de::Error::missing_field("step"))?,
                    message: message.ok_or_else(|| de::Error::missing_field("message"))?,
                    usage,
                    extra,
                })
            }
        }
        d.deserialize_map(V)
    }
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
        let line: Line<FastMessage> = serde_json::from_str(text).ok()?;
        let data = EventData::UserMessage(line.data.0);
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
            (
                ASSISTANT.replace(r#""id":"a","#, r#""id":"a","x":1,"y":[2],"x":3,"#),
                true,
            ),
            (USER.replace(r#","source":{"kind":"user"}"#, ""), true),
            (
                USER.replace(r#""source":{"kind":"user"}"#, r#""source":null"#),
                true,
            ),
            (
                USER.replace(r#""id":"m""#, r#""\u0069d":"m""#),
                true,
            ),
            // Rejected or decided by the exact decoder.
            (USER.replace(r#""seq":3,"#, r#""seq":3,"seq":3,"#), false),
            (USER.replace(r#""id":"m","#, r#""id":"m","id":"n","#), false),
            (
                USER.replace(r#","source":{"kind":"user"}"#, r#","source":null,"source":null"#),
                false,
            ),
            (USER.replace(r#""id":"m","#, ""), false),
            (USER.replace(r#""id":"m""#, r#""id":7"#), false),
            (
                ASSISTANT.replace(r#""usage":{"in":1}"#, r#""usage":1,"usage":2"#),
                false,
            ),
            (ASSISTANT.replace(r#""step":0,"#, ""), false),
            (
                USER.replace(
                    r#""data":{"id":"m","role":"user","content":[{"type":"text","text":"hé \"q\" \\ <b>"}],"source":{"kind":"user"}}"#,
                    r#""data":["m","user",[]]"#,
                ),
                false,
            ),
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
