//! Message lines measured without being decoded (docs/performance.md: streaming prepare):
//! a `user/message` or `assistant/message` line is validated over its raw bytes and only
//! what projection and retention need is kept — who wrote it and the size of its joined
//! text — so the texts of the many messages retention drops are never built.
//!
//! Like `message_line`, it only answers when the typed decoder would accept the line and
//! give an event with exactly these facts; anything else returns `None` and the line is
//! decoded the exact way. A table test and a damaged-line proptest compare the two.

use super::event::SurfaceOp;
use super::json_scan::{Scan, TextMeasure};

/// Where a user message came from, as projection tells sources apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceClass {
    /// No `source` (or `null`).
    Absent,
    /// `{kind: "user"}` (extra keys ignored).
    User,
    /// The compact checkpoint marker `{kind: "plugin", plugin: "compact"}`.
    CompactCheckpoint,
    /// Any other source.
    Other,
}

/// Which message event a line holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SizedKind {
    /// `user/message`, with its source.
    User(SourceClass),
    /// `assistant/message`.
    Assistant,
}

/// What a streaming reader knows of a message event whose texts were not decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SizedMessage {
    pub seq: u64,
    pub kind: SizedKind,
    /// Number of `text` content blocks.
    pub text_blocks: usize,
    /// The `text` blocks joined with `\n`, measured (as `Message::joined_text`).
    pub joined_text: TextMeasure,
    pub surface_op: SurfaceOp,
}

const USER_PREFIX: &[u8] = br#"{"type":"user/message","#;
const ASSISTANT_PREFIX: &[u8] = br#"{"type":"assistant/message","#;

/// Whether `body` starts like a line [`measure`] may answer for.
pub(crate) fn is_message_line(body: &[u8]) -> bool {
    body.starts_with(USER_PREFIX) || body.starts_with(ASSISTANT_PREFIX)
}

/// Stores a known key's value once; a second one is left to the exact decoder (which
/// refuses it).
fn once<T>(slot: &mut Option<T>, value: Option<T>) -> Option<()> {
    if slot.is_some() {
        return None;
    }
    *slot = Some(value?);
    Some(())
}

/// The measure of a message line (UTF-8, no lone surrogates) whose seq must be `next_seq`,
/// or `None` when the exact decoder must decide.
pub(crate) fn measure(body: &[u8], next_seq: u64) -> Option<SizedMessage> {
    let assistant = if body.starts_with(USER_PREFIX) {
        false
    } else if body.starts_with(ASSISTANT_PREFIX) {
        true
    } else {
        return None;
    };
    let mut scan = Scan::new(body);
    let (mut kind, mut seq, mut time, mut seq0, mut time0) = (None, None, None, None, None);
    let (mut data, mut op, mut sources) = (None, None, None);
    scan.object(|s, key| match key {
        b"type" => once(&mut kind, s.plain_string()),
        b"seq" => once(&mut seq, s.u64()),
        b"time" => once(&mut time, s.i64()),
        b"seq0" => once(&mut seq0, optional(s, Scan::u64)),
        b"time0" => once(&mut time0, optional(s, Scan::i64)),
        b"data" => once(
            &mut data,
            if assistant {
                assistant_data(s)
            } else {
                message(s, true)
            },
        ),
        b"surfaceOp" => once(&mut op, s.plain_string()),
        b"sourceEventSeqs" => once(
            &mut sources,
            optional(s, |s| s.array(|s| s.u64().map(drop))),
        ),
        _ => s.skip_value(),
    })?;
    scan.finish()?;
    let expected: &[u8] = if assistant {
        b"assistant/message"
    } else {
        b"user/message"
    };
    let (seq, _time, data) = (seq?, time?, data?);
    if kind? != expected || seq != next_seq || op? != b"append" {
        return None;
    }
    Some(SizedMessage {
        seq,
        kind: if assistant {
            SizedKind::Assistant
        } else {
            SizedKind::User(data.source)
        },
        text_blocks: data.text_blocks,
        joined_text: data.joined,
        surface_op: SurfaceOp::Append,
    })
}

/// A field's value of the type wanted, or some other JSON value.
enum Field<T> {
    Is(T),
    Other,
}

impl<T> Field<T> {
    fn get(self) -> Option<T> {
        match self {
            Field::Is(v) => Some(v),
            Field::Other => None,
        }
    }
}

/// `null` (as [`Field::Other`]) or a value read by `read`.
fn optional<'a, T>(
    s: &mut Scan<'a>,
    read: impl FnOnce(&mut Scan<'a>) -> Option<T>,
) -> Option<Field<T>> {
    if s.null() {
        Some(Field::Other)
    } else {
        read(s).map(Field::Is)
    }
}

/// What a message object holds for projection.
struct MessageFacts {
    source: SourceClass,
    text_blocks: usize,
    joined: TextMeasure,
}

/// `data` of an `assistant/message`: `{turn, step, message, usage?, ...}`.
fn assistant_data(s: &mut Scan<'_>) -> Option<MessageFacts> {
    let (mut turn, mut step, mut msg, mut usage) = (None, None, None, None);
    s.object(|s, key| match key {
        b"turn" => once(&mut turn, s.u64()),
        b"step" => once(&mut step, s.u64()),
        b"message" => once(&mut msg, message(s, false)),
        b"usage" => once(&mut usage, s.skip_value()),
        _ => s.skip_value(),
    })?;
    turn?;
    step?;
    msg
}

/// A message object `{id, role, content, source?, ...}`; its source is classified only
/// for a user message (`classify`), else just checked to be JSON.
fn message(s: &mut Scan<'_>, classify: bool) -> Option<MessageFacts> {
    let (mut id, mut role, mut content, mut source) = (None, None, None, None);
    s.object(|s, key| match key {
        b"id" => once(&mut id, s.skip_string()),
        b"role" => once(
            &mut role,
            s.plain_string()
                .filter(|r| matches!(*r, b"user" | b"assistant" | b"tool" | b"system")),
        ),
        b"content" => once(&mut content, content_blocks(s)),
        b"source" => once(
            &mut source,
            if classify {
                source_class(s)
            } else {
                s.skip_value().map(|()| SourceClass::Other)
            },
        ),
        _ => s.skip_value(),
    })?;
    id?;
    role?;
    let (text_blocks, joined) = content?;
    Some(MessageFacts {
        source: source.unwrap_or(SourceClass::Absent),
        text_blocks,
        joined,
    })
}

/// A `content` array: the number of `text` blocks and their texts joined with `\n`.
fn content_blocks(s: &mut Scan<'_>) -> Option<(usize, TextMeasure)> {
    let mut count = 0usize;
    let mut joined = TextMeasure::default();
    s.array(|s| {
        let (mut kind, mut text) = (None, None);
        s.object(|s, key| match key {
            b"type" => once(&mut kind, string_or_other(s)),
            b"text" => once(&mut text, measured_or_other(s)),
            _ => s.skip_value(),
        })?;
        // A block needs a string `type` (else the exact decoder refuses it).
        let kind = kind?.get()?;
        if kind == b"text"
            && let Some(Field::Is(m)) = text
        {
            if count > 0 {
                joined.add(&TextMeasure::of("\n"));
            }
            joined.add(&m);
            count += 1;
        }
        Some(())
    })?;
    Some((count, joined))
}

/// A string's raw bytes if it is one without escapes, [`Field::Other`] for a non-string.
fn string_or_other<'a>(s: &mut Scan<'a>) -> Option<Field<&'a [u8]>> {
    if s.peek()? == b'"' {
        s.plain_string().map(Field::Is)
    } else {
        s.skip_value().map(|()| Field::Other)
    }
}

/// A string's measure, [`Field::Other`] for a non-string.
fn measured_or_other(s: &mut Scan<'_>) -> Option<Field<TextMeasure>> {
    if s.peek()? == b'"' {
        let mut m = TextMeasure::default();
        s.measured_string(&mut m).map(|()| Field::Is(m))
    } else {
        s.skip_value().map(|()| Field::Other)
    }
}

/// A user message's `source` (any JSON value), classified as projection does.
fn source_class(s: &mut Scan<'_>) -> Option<SourceClass> {
    if s.null() {
        return Some(SourceClass::Absent);
    }
    if s.peek()? != b'{' {
        return s.skip_value().map(|()| SourceClass::Other);
    }
    let (mut kind, mut plugin) = (None, None);
    s.object(|s, key| match key {
        b"kind" => once(&mut kind, string_or_other(s)),
        b"plugin" => once(&mut plugin, string_or_other(s)),
        _ => s.skip_value(),
    })?;
    Some(
        match (kind.and_then(Field::get), plugin.and_then(Field::get)) {
            (Some(b"user"), _) => SourceClass::User,
            (Some(b"plugin"), Some(b"compact")) => SourceClass::CompactCheckpoint,
            _ => SourceClass::Other,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Event, EventData};
    use crate::reader::{Limits, decode_exact};

    const USER: &str = r#"{"type":"user/message","seq":3,"time":9,"data":{"id":"m","role":"user","content":[{"type":"text","text":"hé \"q\" \\ <b>\n"},{"type":"reasoning","text":"r"},{"type":"text","text":"two"}],"source":{"kind":"user"}},"surfaceOp":"append"}"#;
    const ASSISTANT: &str = r#"{"type":"assistant/message","seq":3,"time":9,"data":{"turn":1,"step":0,"message":{"id":"a","role":"assistant","content":[{"type":"text","text":"ok"},{"type":"reasoning","text":"r"}],"source":{"kind":"model"}},"usage":{"in":1}},"surfaceOp":"append"}"#;

    /// The facts the exact decoder's event gives.
    fn facts_of(event: &Event) -> Option<SizedMessage> {
        let (kind, message) = match &event.data {
            EventData::UserMessage(m) => {
                let class = match &m.source {
                    None => SourceClass::Absent,
                    Some(s) if s.is_user() => SourceClass::User,
                    Some(s) if s.is_compact_checkpoint() => SourceClass::CompactCheckpoint,
                    Some(_) => SourceClass::Other,
                };
                (SizedKind::User(class), m)
            }
            EventData::AssistantMessage { message, .. } => (SizedKind::Assistant, message),
            _ => return None,
        };
        Some(SizedMessage {
            seq: event.seq,
            kind,
            text_blocks: message.content.iter().filter_map(|b| b.as_text()).count(),
            joined_text: TextMeasure::of(&message.joined_text()),
            surface_op: event.surface_op?,
        })
    }

    /// Whenever the measure answers, the exact decoder accepts the line with the same facts.
    fn agrees(line: &[u8]) -> bool {
        let text = simdutf8::basic::from_utf8(line).ok();
        let sized = text.and_then(|t| measure(t.as_bytes(), 3));
        let exact = decode_exact(line, 3, &Limits::default());
        if let Some(sized) = &sized {
            let events = exact.as_ref().unwrap_or_else(|e| {
                panic!(
                    "measured, but the exact decoder says {e}: {}",
                    String::from_utf8_lossy(line)
                )
            });
            assert_eq!(events.len(), 1);
            assert_eq!(
                events.first().and_then(facts_of).as_ref(),
                Some(sized),
                "{}",
                String::from_utf8_lossy(line)
            );
        }
        sized.is_some()
    }

    #[test]
    fn answers_only_what_the_exact_decoder_answers() {
        let cases: Vec<(String, bool)> = vec![
            (USER.into(), true),
            (ASSISTANT.into(), true),
            (ASSISTANT.replace(r#","usage":{"in":1}"#, ""), true),
            (
                ASSISTANT.replace(r#""usage":{"in":1}"#, r#""usage":null"#),
                true,
            ),
            (
                ASSISTANT.replace(
                    r#""turn":1,"#,
                    r#""turn":1,"x":[1,2.5,-3e-2,{"y":null},true,false,"s\u0041"],"#,
                ),
                true,
            ),
            (
                USER.replace(r#""id":"m","#, r#""id":"m","extra":1,"extra":2,"#),
                true,
            ),
            (
                USER.replace(r#""seq":3,"#, r#""seq":3,"seq0":7,"time0":null,"#),
                true,
            ),
            (USER.replace(r#","source":{"kind":"user"}"#, ""), true),
            (
                USER.replace(r#""source":{"kind":"user"}"#, r#""source":null"#),
                true,
            ),
            (
                USER.replace(r#""source":{"kind":"user"}"#, r#""source":7"#),
                true,
            ),
            (
                USER.replace(
                    r#""source":{"kind":"user"}"#,
                    r#""source":{"kind":"plugin","plugin":"compact","x":1}"#,
                ),
                true,
            ),
            (
                USER.replace(
                    r#""source":{"kind":"user"}"#,
                    r#""source":{"kind":"plugin"}"#,
                ),
                true,
            ),
            (
                USER.replace(r#""source":{"kind":"user"}"#, r#""source":{"kind":5}"#),
                true,
            ),
            (
                USER.replace(
                    r#""content":["#,
                    r#""content":[{"type":"image","url":"x"},"#,
                ),
                true,
            ),
            (
                USER.replace(r#""content":["#, r#""content":[{"type":"text","text":7},"#),
                true,
            ),
            (
                USER.replace(r#""content":["#, r#""content":[{"type":7,"text":"x"},"#)
                    .replace("zzz", ""),
                false,
            ),
            (
                USER.replace(r#"}],"source""#, r#"}] ,"source""#)
                    .replace(r#""role":"user""#, r#""role" : "user" "#),
                true,
            ),
            (format!("{USER}  "), true),
            (
                USER.replace(
                    r#""surfaceOp":"append""#,
                    r#""surfaceOp":"append","sourceEventSeqs":[1,2]"#,
                ),
                true,
            ),
            (USER.replace(r#""data":{"#, r#""data":{"data":0,"#), true),
            (
                USER.replace(r#"\"q\""#, r"\u0022q\u0022 \ud83d\ude00 \u003c"),
                true,
            ),
            // Decided by the exact decoder (refused, or a shape left to it).
            (USER.replace(r#""seq":3,"#, r#""seq":3,"seq":3,"#), false),
            (USER.replace(r#""id":"m","#, r#""id":"m","id":"n","#), false),
            (USER.replace(r#""id":"m","#, ""), false),
            (USER.replace(r#""id":"m""#, r#""id":7"#), false),
            (USER.replace(r#""id":"m""#, r#""\u0069d":"m""#), false),
            (
                ASSISTANT.replace(r#""usage":{"in":1}"#, r#""usage":1,"usage":2"#),
                false,
            ),
            (ASSISTANT.replace(r#""step":0,"#, ""), false),
            (ASSISTANT.replace(r#""turn":1"#, r#""turn":1.0"#), false),
            (ASSISTANT.replace(r#""turn":1"#, r#""turn":-1"#), false),
            (ASSISTANT.replace(r#""turn":1"#, r#""turn":01"#), false),
            (USER.replace(r#""seq":3,"#, r#""seq":3,"seq0":"x","#), false),
            (USER.replace(r#""seq":3"#, r#""seq":4"#), false),
            (USER.replace(r#","surfaceOp":"append""#, ""), false),
            (
                USER.replace(
                    r#""surfaceOp":"append""#,
                    r#""surfaceOp":{"op":"replace","start":0,"end":1}"#,
                ),
                false,
            ),
            (USER.replace(r#""time":9,"#, ""), false),
            (USER.replace(r#""role":"user""#, r#""role":"robot""#), false),
            (
                USER.replace(r#""content":["#, r#""content":[{"text":"x"},"#),
                false,
            ),
            (
                USER.replace(
                    r#""content":["#,
                    r#""content":[{"type":"text","type":"text","text":"x"},"#,
                ),
                false,
            ),
            (USER.replace(r#""content":["#, r#""content":[7,"#), false),
            (USER.replace(r#""hé"#, "\"h\u{1}"), false),
            (USER.replace(r#"\"q\""#, r"\x"), false),
            (USER.replace(r#"\"q\""#, r"\ud83d"), false),
            (format!("{USER}x"), false),
            (USER[..USER.len() - 1].to_owned(), false),
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

    #[test]
    fn a_big_fixture_line_is_measured() {
        // The shape `prepare_big` writes (and dsh writes): must take the fast path.
        let line = r#"{"type":"assistant/message","seq":3,"time":1700000000003,"data":{"turn":1,"step":0,"message":{"id":"m-3","role":"assistant","content":[{"type":"text","text":"agent\n\\path and <tags> naïve 漢字 \"quotes\""}],"source":{"kind":"model","provider":"p","model":"m"}},"usage":{"input":1,"output":2}},"surfaceOp":"append"}"#;
        assert!(agrees(line.as_bytes()));
    }

    proptest::proptest! {
        /// Any byte of a message line changed: the measure never disagrees.
        #[test]
        fn damaged_message_lines_never_disagree(at in 0usize..400, byte in proptest::num::u8::ANY, assistant: bool) {
            let mut line = if assistant { ASSISTANT } else { USER }.as_bytes().to_vec();
            let len = line.len();
            if let Some(b) = line.get_mut(at % len) {
                *b = byte;
            }
            agrees(&line);
        }

        /// A message line cut anywhere, or with a piece of JSON spliced in anywhere.
        #[test]
        fn cut_or_spliced_message_lines_never_disagree(
            at in 0usize..400,
            piece in proptest::sample::select(vec![
                "", "\"", "\\", "\\u", "\\ud83d", "\\u0041", "{", "}", "[", "]", ":", ",", "1",
                "-1", "1e999", "1.", "null", "true", " ", "\"type\":\"text\",", "\"text\":\"x\",",
                "\"source\":null,", "\"kind\":\"user\",", "\u{1}", "é", "<",
            ]),
            cut: bool,
            assistant: bool,
        ) {
            let base = if assistant { ASSISTANT } else { USER };
            let mut at = at % base.len();
            while !base.is_char_boundary(at) {
                at -= 1;
            }
            let line = if cut {
                base[..at].to_owned()
            } else {
                format!("{}{piece}{}", &base[..at], &base[at..])
            };
            agrees(line.as_bytes());
        }
    }
}
