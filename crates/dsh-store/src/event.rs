//! The session event model of docs/session-store.md (events): events, messages, content blocks and sources.
//!
//! Known payloads are typed; everything the project does not understand (unknown event
//! types, unknown block types, extra keys) is kept as JSON so a read-then-write keeps it.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

pub use super::kinds::{TitleSourceKind, TurnEndKind};

/// Event type names the project reads and writes.
pub mod kind {
    pub const TURN_START: &str = "turn/start";
    pub const TURN_END: &str = "turn/end";
    pub const STEP_START: &str = "step/start";
    pub const STEP_END: &str = "step/end";
    pub const USER_MESSAGE: &str = "user/message";
    pub const STEERING_MESSAGE: &str = "steering/message";
    pub const ASSISTANT_CHUNK: &str = "assistant/chunk";
    pub const ASSISTANT_MESSAGE: &str = "assistant/message";
    pub const TOOL_CALL: &str = "tool/call";
    pub const TOOL_RESULT: &str = "tool/result";
    pub const SESSION_TITLE: &str = "session/title";
    /// Compaction bookkeeping in the newest dsh release's vocabulary (what this project
    /// writes; docs/session-store.md: compaction).
    pub const COMPACTION_START: &str = "compaction/start";
    pub const COMPACTION_SUMMARY: &str = "compaction/summary";
    pub const COMPACTION_END: &str = "compaction/end";
    /// dsh's shadow price of a model-free replacement (read only).
    pub const COMPACTION_PRUNE: &str = "compaction/prune";
    /// Compaction bookkeeping of dsh at the followed commit and of earlier versions of this
    /// project (read only: the newest release refuses these types).
    pub const COMPACT_START: &str = "compact/start";
    pub const COMPACT_SUMMARY: &str = "compact/summary";
    pub const COMPACT_END: &str = "compact/end";
    /// dsh's end of a constructor seed (resume, fork); read only.
    pub const SESSION_END_SEED: &str = "session/end-seed";
    /// Written by earlier versions of this project when a queued prompt or staged steering
    /// message was dropped; no dsh version declares it, so it is read but never written.
    pub const MESSAGE_DISCARDED: &str = "message/discarded";
}

/// The role of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
    Tool,
    System,
}

/// One content block. `text` and `reasoning` blocks are typed; every other block type
/// (tool calls, tool results, images, future kinds) is kept verbatim and ignored by projection.
#[derive(Debug, Clone, PartialEq)]
pub enum ContentBlock {
    Text {
        text: String,
        extra: Map<String, Value>,
    },
    Reasoning {
        text: String,
        extra: Map<String, Value>,
    },
    Other(Map<String, Value>),
}

impl ContentBlock {
    /// A plain text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text {
            text: text.into(),
            extra: Map::new(),
        }
    }

    /// A reasoning block.
    pub fn reasoning(text: impl Into<String>) -> Self {
        ContentBlock::Reasoning {
            text: text.into(),
            extra: Map::new(),
        }
    }

    /// The text of a `text` block, if this is one.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            ContentBlock::Text { text, .. } => Some(text),
            ContentBlock::Reasoning { .. } | ContentBlock::Other(_) => None,
        }
    }
}

impl Serialize for ContentBlock {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let map = match self {
            ContentBlock::Text { text, extra } => typed_block("text", text, extra),
            ContentBlock::Reasoning { text, extra } => typed_block("reasoning", text, extra),
            ContentBlock::Other(map) => map.clone(),
        };
        map.serialize(s)
    }
}

fn typed_block(kind: &str, text: &str, extra: &Map<String, Value>) -> Map<String, Value> {
    let mut map = Map::new();
    map.insert("type".into(), Value::String(kind.into()));
    map.insert("text".into(), Value::String(text.into()));
    for (k, v) in extra {
        map.insert(k.clone(), v.clone());
    }
    map
}

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut map = Map::<String, Value>::deserialize(d)?;
        let kind = map.get("type").and_then(Value::as_str).map(str::to_owned);
        let text_is_string = matches!(map.get("text"), Some(Value::String(_)));
        match kind.as_deref() {
            Some(k @ ("text" | "reasoning")) if text_is_string => {
                map.remove("type");
                let Some(Value::String(text)) = map.remove("text") else {
                    return Err(D::Error::custom("text block without text"));
                };
                Ok(if k == "text" {
                    ContentBlock::Text { text, extra: map }
                } else {
                    ContentBlock::Reasoning { text, extra: map }
                })
            }
            Some(_) => Ok(ContentBlock::Other(map)),
            None => Err(D::Error::custom("content block without a string `type`")),
        }
    }
}

/// Where a message came from (`{kind, ...}`), kept as JSON so unknown kinds and extra
/// keys survive a round trip.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Source(pub Value);

impl Source {
    /// Typed by a person.
    pub fn user() -> Self {
        Source(serde_json::json!({"kind": "user"}))
    }
    /// Generated by a component (plugin).
    pub fn plugin(plugin: &str) -> Self {
        Source(serde_json::json!({"kind": "plugin", "plugin": plugin}))
    }
    /// The compact checkpoint marker `{kind:"plugin", plugin:"compact"}`.
    pub fn compact_checkpoint() -> Self {
        Self::plugin("compact")
    }
    /// Produced by a model.
    pub fn model(provider: &str, model: &str) -> Self {
        Source(serde_json::json!({"kind": "model", "provider": provider, "model": model}))
    }
    /// Produced by a tool call.
    pub fn tool(call_id: &str) -> Self {
        Source(serde_json::json!({"kind": "tool", "callId": call_id}))
    }
    /// The provenance of a session-reference context.
    pub fn session_reference(references: Value) -> Self {
        let mut source = Map::new();
        source.insert("kind".into(), "session-reference".into());
        source.insert("version".into(), 1.into());
        source.insert("references".into(), references);
        Source(Value::Object(source))
    }
    /// The `kind` field, if it is a string.
    pub fn kind(&self) -> Option<&str> {
        self.0.get("kind").and_then(Value::as_str)
    }
    /// `{kind:"user"}` (extra keys ignored).
    pub fn is_user(&self) -> bool {
        self.kind() == Some("user")
    }
    /// The compact checkpoint marker (extra keys ignored).
    pub fn is_compact_checkpoint(&self) -> bool {
        self.kind() == Some("plugin")
            && self.0.get("plugin").and_then(Value::as_str) == Some("compact")
    }
    /// A session-reference context.
    pub fn is_session_reference(&self) -> bool {
        self.kind() == Some("session-reference")
    }
}

/// A chat message `{id, role, content, source}` plus any extra keys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub id: String,
    pub role: Role,
    pub content: Vec<ContentBlock>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Source>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Message {
    /// A message with a fresh random id.
    pub fn new(role: Role, content: Vec<ContentBlock>, source: Source) -> Self {
        Message {
            id: new_message_id(),
            role,
            content,
            source: Some(source),
            extra: Map::new(),
        }
    }
    /// A user-typed text message with a fresh id.
    pub fn user_text(text: impl Into<String>) -> Self {
        Self::new(Role::User, vec![ContentBlock::text(text)], Source::user())
    }
    /// The message's `text` blocks joined with `\n` (docs/references.md: projection).
    pub fn joined_text(&self) -> String {
        let mut out = String::new();
        let mut first = true;
        for t in self.content.iter().filter_map(ContentBlock::as_text) {
            if !first {
                out.push('\n');
            }
            out.push_str(t);
            first = false;
        }
        out
    }
    /// Whether the source is `{kind:"user"}`.
    pub fn is_direct_user(&self) -> bool {
        self.source.as_ref().is_some_and(Source::is_user)
    }
}

/// A fresh message id: a bare UUID v4, as dsh writes them.
pub fn new_message_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// How a surface event changes the folded surface (docs/session-store.md: surface folding).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SurfaceOp {
    /// `"append"`: push this event's seq.
    Append,
    /// `{op:"replace", start, end}`: replace the inclusive span with this event's seq.
    Replace { start: u64, end: u64 },
}

impl Serialize for SurfaceOp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            SurfaceOp::Append => s.serialize_str("append"),
            SurfaceOp::Replace { start, end } => {
                serde_json::json!({"op": "replace", "start": start, "end": end}).serialize(s)
            }
        }
    }
}

impl<'de> Deserialize<'de> for SurfaceOp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        match &v {
            Value::String(s) if s == "append" => Ok(SurfaceOp::Append),
            Value::Object(m) if m.get("op").and_then(Value::as_str) == Some("replace") => {
                let start = m.get("start").and_then(Value::as_u64);
                let end = m.get("end").and_then(Value::as_u64);
                match (start, end) {
                    (Some(start), Some(end)) => Ok(SurfaceOp::Replace { start, end }),
                    _ => Err(D::Error::custom(
                        "replace surfaceOp needs integer start and end",
                    )),
                }
            }
            _ => Err(D::Error::custom(format!("unknown surfaceOp {v}"))),
        }
    }
}

/// `turn/end` reason `{kind, ...}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnEndReason {
    pub kind: TurnEndKind,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl TurnEndReason {
    /// A reason that is only its kind (`completed`, `aborted`, `interrupted`, ...).
    pub fn of(kind: TurnEndKind) -> Self {
        TurnEndReason {
            kind,
            extra: Map::new(),
        }
    }

    /// A failed turn in the shape the newest dsh release declares:
    /// `{kind:"error", error:{code, message}}`.
    pub fn error(code: &str, message: &str) -> Self {
        let mut extra = Map::new();
        extra.insert(
            "error".into(),
            serde_json::json!({"code": code, "message": message}),
        );
        TurnEndReason {
            kind: TurnEndKind::Error,
            extra,
        }
    }

    /// The code and message of a failed turn, in any shape written so far: dsh's
    /// `{error:{code, message}}` or `{failure:{code, message}}`, and the older
    /// `{code, message}` of this project and of dsh.
    pub fn failure(&self) -> (Option<&str>, Option<&str>) {
        let nested = self
            .extra
            .get("error")
            .or_else(|| self.extra.get("failure"))
            .filter(|v| v.is_object());
        let from = |key: &str| {
            nested
                .and_then(|n| n.get(key))
                .or_else(|| self.extra.get(key))
                .and_then(Value::as_str)
        };
        (from("code"), from("message"))
    }
}

/// `session/title` payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TitleData {
    pub title: String,
    #[serde(rename = "messageSeqs", default)]
    pub message_seqs: Vec<u64>,
    pub source: TitleSource,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Where a title came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TitleSource {
    pub kind: TitleSourceKind,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Typed payload of an event; `Other` keeps unknown or untyped payloads verbatim.
#[derive(Debug, Clone, PartialEq)]
pub enum EventData {
    TurnStart {
        turn: u64,
        trigger: Value,
        extra: Map<String, Value>,
    },
    TurnEnd {
        turn: u64,
        reason: TurnEndReason,
        extra: Map<String, Value>,
    },
    StepStart {
        turn: u64,
        step: u64,
        extra: Map<String, Value>,
    },
    StepEnd {
        turn: u64,
        step: u64,
        extra: Map<String, Value>,
    },
    UserMessage(Message),
    SteeringMessage {
        turn: u64,
        message: Message,
        extra: Map<String, Value>,
    },
    AssistantChunk {
        turn: u64,
        step: u64,
        chunk: Value,
        extra: Map<String, Value>,
    },
    AssistantMessage {
        turn: u64,
        step: u64,
        message: Message,
        usage: Option<Value>,
        extra: Map<String, Value>,
    },
    ToolResult {
        turn: u64,
        step: u64,
        message: Message,
        extra: Map<String, Value>,
    },
    SessionTitle(TitleData),
    /// Any other type (`tool/call`, `compact/*`, unknown types): kept as JSON.
    Other {
        kind: String,
        data: Value,
    },
}

/// One log event `{type, seq, time, data, surfaceOp?, sourceEventSeqs?}`.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub seq: u64,
    /// Unix milliseconds.
    pub time: i64,
    pub data: EventData,
    pub surface_op: Option<SurfaceOp>,
    pub source_event_seqs: Option<Vec<u64>>,
}

impl Event {
    /// The event's `type` string.
    pub fn kind(&self) -> &str {
        match &self.data {
            EventData::TurnStart { .. } => kind::TURN_START,
            EventData::TurnEnd { .. } => kind::TURN_END,
            EventData::StepStart { .. } => kind::STEP_START,
            EventData::StepEnd { .. } => kind::STEP_END,
            EventData::UserMessage(_) => kind::USER_MESSAGE,
            EventData::SteeringMessage { .. } => kind::STEERING_MESSAGE,
            EventData::AssistantChunk { .. } => kind::ASSISTANT_CHUNK,
            EventData::AssistantMessage { .. } => kind::ASSISTANT_MESSAGE,
            EventData::ToolResult { .. } => kind::TOOL_RESULT,
            EventData::SessionTitle(_) => kind::SESSION_TITLE,
            EventData::Other { kind, .. } => kind,
        }
    }

    /// Whether the type is one of the four surface types (which require `surfaceOp`).
    pub fn is_surface_type(kind: &str) -> bool {
        matches!(
            kind,
            kind::USER_MESSAGE
                | kind::STEERING_MESSAGE
                | kind::ASSISTANT_MESSAGE
                | kind::TOOL_RESULT
        )
    }

    /// The message carried by a surface event, if any.
    pub fn message(&self) -> Option<&Message> {
        match &self.data {
            EventData::UserMessage(m) => Some(m),
            EventData::SteeringMessage { message, .. }
            | EventData::AssistantMessage { message, .. }
            | EventData::ToolResult { message, .. } => Some(message),
            _ => None,
        }
    }

    /// Build the JSON value of the `data` field.
    fn data_value(&self) -> Value {
        fn with(mut base: Map<String, Value>, extra: &Map<String, Value>) -> Value {
            for (k, v) in extra {
                base.insert(k.clone(), v.clone());
            }
            Value::Object(base)
        }
        fn obj(pairs: Vec<(&str, Value)>) -> Map<String, Value> {
            pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
        }
        let msg = |m: &Message| serde_json::to_value(m).unwrap_or(Value::Null);
        match &self.data {
            EventData::TurnStart {
                turn,
                trigger,
                extra,
            } => with(
                obj(vec![("turn", (*turn).into()), ("trigger", trigger.clone())]),
                extra,
            ),
            EventData::TurnEnd {
                turn,
                reason,
                extra,
            } => with(
                obj(vec![
                    ("turn", (*turn).into()),
                    (
                        "reason",
                        serde_json::to_value(reason).unwrap_or(Value::Null),
                    ),
                ]),
                extra,
            ),
            EventData::StepStart { turn, step, extra }
            | EventData::StepEnd { turn, step, extra } => with(
                obj(vec![("turn", (*turn).into()), ("step", (*step).into())]),
                extra,
            ),
            EventData::UserMessage(m) => msg(m),
            EventData::SteeringMessage {
                turn,
                message,
                extra,
            } => with(
                obj(vec![("turn", (*turn).into()), ("message", msg(message))]),
                extra,
            ),
            EventData::AssistantChunk {
                turn,
                step,
                chunk,
                extra,
            } => with(
                obj(vec![
                    ("turn", (*turn).into()),
                    ("step", (*step).into()),
                    ("chunk", chunk.clone()),
                ]),
                extra,
            ),
            EventData::AssistantMessage {
                turn,
                step,
                message,
                usage,
                extra,
            } => {
                let mut base = obj(vec![
                    ("turn", (*turn).into()),
                    ("step", (*step).into()),
                    ("message", msg(message)),
                ]);
                if let Some(u) = usage {
                    base.insert("usage".into(), u.clone());
                }
                with(base, extra)
            }
            EventData::ToolResult {
                turn,
                step,
                message,
                extra,
            } => with(
                obj(vec![
                    ("turn", (*turn).into()),
                    ("step", (*step).into()),
                    ("message", msg(message)),
                ]),
                extra,
            ),
            EventData::SessionTitle(t) => serde_json::to_value(t).unwrap_or(Value::Null),
            EventData::Other { data, .. } => data.clone(),
        }
    }

    /// Parse an event's payload from its `type` and `data` (docs/session-store.md: events). Unknown types are
    /// kept as [`EventData::Other`]; a known type with a malformed payload is an error.
    pub fn parse_data(kind: &str, data: Value) -> Result<EventData, serde_json::Error> {
        Ok(match kind {
            kind::USER_MESSAGE => EventData::UserMessage(serde_json::from_value(data)?),
            kind::SESSION_TITLE => EventData::SessionTitle(serde_json::from_value(data)?),
            kind::TURN_START => {
                let mut p = Payload::of(data)?;
                EventData::TurnStart {
                    turn: p.u64("turn")?,
                    trigger: p.value("trigger"),
                    extra: p.rest(),
                }
            }
            kind::TURN_END => {
                let mut p = Payload::of(data)?;
                EventData::TurnEnd {
                    turn: p.u64("turn")?,
                    reason: p.take("reason")?,
                    extra: p.rest(),
                }
            }
            kind::STEP_START | kind::STEP_END => {
                let mut p = Payload::of(data)?;
                let (turn, step) = (p.u64("turn")?, p.u64("step")?);
                let extra = p.rest();
                if kind == kind::STEP_START {
                    EventData::StepStart { turn, step, extra }
                } else {
                    EventData::StepEnd { turn, step, extra }
                }
            }
            kind::STEERING_MESSAGE => {
                let mut p = Payload::of(data)?;
                EventData::SteeringMessage {
                    turn: p.u64("turn")?,
                    message: p.take("message")?,
                    extra: p.rest(),
                }
            }
            kind::ASSISTANT_CHUNK => {
                let mut p = Payload::of(data)?;
                EventData::AssistantChunk {
                    turn: p.u64("turn")?,
                    step: p.u64("step")?,
                    chunk: p.value("chunk"),
                    extra: p.rest(),
                }
            }
            kind::ASSISTANT_MESSAGE => {
                let mut p = Payload::of(data)?;
                EventData::AssistantMessage {
                    turn: p.u64("turn")?,
                    step: p.u64("step")?,
                    message: p.take("message")?,
                    usage: p.0.remove("usage"),
                    extra: p.rest(),
                }
            }
            kind::TOOL_RESULT => {
                let mut p = Payload::of(data)?;
                EventData::ToolResult {
                    turn: p.u64("turn")?,
                    step: p.u64("step")?,
                    message: p.take("message")?,
                    extra: p.rest(),
                }
            }
            other => EventData::Other {
                kind: other.to_owned(),
                data,
            },
        })
    }
}

/// The `data` object of an event being parsed: known fields are taken out one by one,
/// whatever is left is the event's `extra`.
struct Payload(Map<String, Value>);

impl Payload {
    fn of(data: Value) -> Result<Self, serde_json::Error> {
        match data {
            Value::Object(m) => Ok(Payload(m)),
            other => Err(serde_json::Error::custom(format!(
                "event data must be an object, got {other}"
            ))),
        }
    }

    /// A required non-negative integer field.
    fn u64(&mut self, key: &str) -> Result<u64, serde_json::Error> {
        match self.0.remove(key) {
            Some(v) => v.as_u64().ok_or_else(|| {
                serde_json::Error::custom(format!("`{key}` must be a non-negative integer"))
            }),
            None => Err(serde_json::Error::custom(format!("missing `{key}`"))),
        }
    }

    /// A required typed field.
    fn take<T: serde::de::DeserializeOwned>(&mut self, key: &str) -> Result<T, serde_json::Error> {
        match self.0.remove(key) {
            Some(v) => serde_json::from_value(v),
            None => Err(serde_json::Error::custom(format!("missing `{key}`"))),
        }
    }

    /// An optional untyped field (`null` when absent).
    fn value(&mut self, key: &str) -> Value {
        self.0.remove(key).unwrap_or(Value::Null)
    }

    /// Every field not taken.
    fn rest(self) -> Map<String, Value> {
        self.0
    }
}

impl Serialize for Event {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = Map::new();
        m.insert("type".into(), Value::String(self.kind().to_owned()));
        m.insert("seq".into(), self.seq.into());
        m.insert("time".into(), self.time.into());
        m.insert("data".into(), self.data_value());
        if let Some(op) = &self.surface_op {
            m.insert(
                "surfaceOp".into(),
                serde_json::to_value(op).map_err(serde::ser::Error::custom)?,
            );
        }
        if let Some(seqs) = &self.source_event_seqs {
            m.insert(
                "sourceEventSeqs".into(),
                serde_json::to_value(seqs).map_err(serde::ser::Error::custom)?,
            );
        }
        m.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Event {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Raw {
            #[serde(rename = "type")]
            kind: String,
            seq: u64,
            time: i64,
            #[serde(default)]
            data: Value,
            #[serde(rename = "surfaceOp", default)]
            surface_op: Option<SurfaceOp>,
            #[serde(rename = "sourceEventSeqs", default)]
            source_event_seqs: Option<Vec<u64>>,
        }
        let raw = Raw::deserialize(d)?;
        if Event::is_surface_type(&raw.kind) && raw.surface_op.is_none() {
            return Err(D::Error::custom(format!(
                "`{}` event {} has no surfaceOp",
                raw.kind, raw.seq
            )));
        }
        let data = Event::parse_data(&raw.kind, raw.data).map_err(D::Error::custom)?;
        Ok(Event {
            seq: raw.seq,
            time: raw.time,
            data,
            surface_op: raw.surface_op,
            source_event_seqs: raw.source_event_seqs,
        })
    }
}

/// The session header, line 0 of `session.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionHeader {
    /// Always `"session"`.
    #[serde(rename = "type")]
    pub kind: String,
    pub version: u64,
    pub id: String,
    /// Unix milliseconds.
    #[serde(rename = "createdAt")]
    pub created_at: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The git branch the session was recorded on, when its source recorded one: written
    /// as `gitBranch` into the header of a session this project creates (both dsh versions
    /// read a header with extra keys and ignore them: docs/session-store.md: the header),
    /// filled by foreign sources from their own records. Never the checkout's current branch.
    /// A `gitBranch` that is not a string reads as none (the header stays readable).
    #[serde(
        rename = "gitBranch",
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient_string"
    )]
    pub branch: Option<String>,
    #[serde(rename = "delegationDepth", default)]
    pub delegation_depth: u64,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A string, or none for any other JSON value.
fn lenient_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => Some(s),
        _ => None,
    })
}

impl SessionHeader {
    /// A version-0 header for a new session.
    pub fn new(id: impl Into<String>, created_at: i64, cwd: Option<String>) -> Self {
        SessionHeader {
            kind: "session".into(),
            version: 0,
            id: id.into(),
            created_at,
            cwd,
            branch: None,
            delegation_depth: 0,
            extra: Map::new(),
        }
    }

    /// The same header recording `branch` (a non-empty name; anything else records none).
    #[must_use]
    pub fn with_branch(mut self, branch: Option<String>) -> Self {
        self.branch = branch.filter(|b| !b.trim().is_empty());
        self
    }
}

/// Current Unix time in milliseconds.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn round_trip(line: &str) {
        let ev: Event = serde_json::from_str(line).unwrap();
        let back = serde_json::to_value(&ev).unwrap();
        let orig: Value = serde_json::from_str(line).unwrap();
        assert_eq!(back, orig, "round trip of {line}");
    }

    #[test]
    fn known_and_unknown_events_round_trip() {
        for line in [
            r#"{"type":"turn/start","seq":0,"time":1,"data":{"turn":1,"trigger":{"kind":"user"}}}"#,
            r#"{"type":"turn/end","seq":1,"time":1,"data":{"turn":1,"reason":{"kind":"completed"},"x":2}}"#,
            r#"{"type":"step/start","seq":2,"time":1,"data":{"turn":1,"step":0}}"#,
            r#"{"type":"user/message","seq":3,"time":1,"data":{"id":"u","role":"user","content":[{"type":"text","text":"hi"},{"type":"image","data":"x"}],"source":{"kind":"user"},"meta":1},"surfaceOp":"append"}"#,
            r#"{"type":"assistant/message","seq":4,"time":1,"data":{"turn":1,"step":0,"message":{"id":"a","role":"assistant","content":[{"type":"reasoning","text":"r"},{"type":"text","text":"t"}]},"usage":{"input":1}},"surfaceOp":{"op":"replace","start":3,"end":3},"sourceEventSeqs":[3]}"#,
            r#"{"type":"future/thing","seq":5,"time":1,"data":[1,2,{"a":null}]}"#,
            r#"{"type":"session/title","seq":6,"time":1,"data":{"title":"T","messageSeqs":[3],"source":{"kind":"fallback"}}}"#,
        ] {
            round_trip(line);
        }
    }

    #[test]
    fn surface_event_without_op_is_rejected() {
        let line = r#"{"type":"user/message","seq":0,"time":1,"data":{"id":"u","role":"user","content":[]}}"#;
        assert!(serde_json::from_str::<Event>(line).is_err());
    }

    #[test]
    fn checkpoint_marker_ignores_extra_keys() {
        let s = Source(serde_json::json!({"kind":"plugin","plugin":"compact","v":2}));
        assert!(s.is_compact_checkpoint());
        assert!(!Source::plugin("goal").is_compact_checkpoint());
    }

    #[test]
    fn joined_text_uses_only_text_blocks() {
        let m = Message {
            id: "x".into(),
            role: Role::User,
            content: vec![
                ContentBlock::text(""),
                ContentBlock::reasoning("r"),
                ContentBlock::text(""),
            ],
            source: None,
            extra: Map::new(),
        };
        assert_eq!(m.joined_text(), "\n");
    }
}
