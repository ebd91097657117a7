//! The event envelope `{type, seq, time, data, surfaceOp?, sourceEventSeqs?}`: which keys and
//! values each version accepts.
//!
//! - 6816e8a3d5 refuses any other key and a `time` that is not a non-negative safe integer.
//! - 0.1.0-rc.8 also allows `ignorable` (which must then be `true`) and any safe-integer
//!   `time`.
//!
//! `Event` keeps only what the project uses, so the envelope's facts come from the line
//! itself ([`Envelope::of_line`]) when a log is checked, and from the event when the writer
//! serializes it ([`Envelope::of_event`]: our serializer writes the six keys and nothing else).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;

use super::{Rule, Versions, Violation};
use crate::event::Event;

/// The largest integer JavaScript holds exactly (`Number.MAX_SAFE_INTEGER`).
pub(super) const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// What a line's envelope holds besides what [`Event`] keeps.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Envelope {
    /// Keys other than `type`, `seq`, `time`, `data`, `surfaceOp`, `sourceEventSeqs`.
    pub extra_keys: Vec<String>,
    /// The value of `ignorable`, when the line has one.
    pub ignorable: Option<Value>,
    /// Whether the line has a `data` key.
    pub has_data: bool,
}

impl Envelope {
    /// The envelope of an event as this project serializes it (and of an event expanded
    /// from a packed row): the six keys, nothing else.
    pub fn of_event(_event: &Event) -> Self {
        Self::plain()
    }

    /// The six keys, nothing else.
    pub fn plain() -> Self {
        Envelope {
            extra_keys: Vec::new(),
            ignorable: None,
            has_data: true,
        }
    }

    /// The envelope of one event line (without its `\n`). A packed row, or a line that is
    /// not a JSON object, gives the plain envelope (the reader judges those lines).
    pub fn of_line(body: &[u8]) -> Self {
        #[derive(Deserialize)]
        struct Raw {
            #[serde(rename = "type")]
            _kind: Option<IgnoredAny>,
            #[serde(rename = "seq")]
            _seq: Option<IgnoredAny>,
            #[serde(rename = "time")]
            _time: Option<IgnoredAny>,
            #[serde(default)]
            data: Option<IgnoredAny>,
            #[serde(rename = "surfaceOp")]
            _surface_op: Option<IgnoredAny>,
            #[serde(rename = "sourceEventSeqs")]
            _sources: Option<IgnoredAny>,
            #[serde(rename = "seq0")]
            seq0: Option<IgnoredAny>,
            #[serde(default)]
            ignorable: Option<Value>,
            #[serde(flatten)]
            rest: BTreeMap<String, Value>,
        }
        match serde_json::from_slice::<Raw>(body) {
            Ok(raw) if raw.seq0.is_none() => {
                let mut extra_keys: Vec<String> = raw.rest.into_keys().collect();
                if raw.ignorable.is_some() {
                    extra_keys.push("ignorable".to_owned());
                }
                extra_keys.sort();
                Envelope {
                    extra_keys,
                    ignorable: raw.ignorable,
                    has_data: raw.data.is_some(),
                }
            }
            Ok(_) | Err(_) => Envelope::plain(),
        }
    }

    /// Whether the event is marked `ignorable: true`.
    pub fn is_ignorable(&self) -> bool {
        self.ignorable == Some(Value::Bool(true))
    }
}

/// The envelope rules of both versions.
pub(super) fn check(event: &Event, envelope: &Envelope, out: &mut Vec<Violation>) {
    let seq = event.seq;
    let followed_extra: Vec<&str> = envelope.extra_keys.iter().map(String::as_str).collect();
    if !followed_extra.is_empty() {
        out.push(Violation::new(
            Rule::Envelope,
            Versions::FOLLOWED,
            seq,
            format!(
                "envelope key(s) {} are not allowed",
                followed_extra.join(", ")
            ),
        ));
    }
    let release_extra: Vec<&str> = followed_extra
        .iter()
        .copied()
        .filter(|k| *k != "ignorable")
        .collect();
    if !release_extra.is_empty() {
        out.push(Violation::new(
            Rule::Envelope,
            Versions::RELEASE,
            seq,
            format!(
                "envelope key(s) {} are not allowed",
                release_extra.join(", ")
            ),
        ));
    }
    if let Some(v) = &envelope.ignorable
        && *v != Value::Bool(true)
    {
        out.push(Violation::new(
            Rule::Envelope,
            Versions::RELEASE,
            seq,
            format!("ignorable must be true when present, got {v}"),
        ));
    }
    if !envelope.has_data {
        out.push(Violation::new(
            Rule::Envelope,
            Versions::BOTH,
            seq,
            "the event has no data",
        ));
    }
    if event.time < 0 {
        out.push(Violation::new(
            Rule::Envelope,
            Versions::FOLLOWED,
            seq,
            format!("time {} is negative", event.time),
        ));
    }
    if !(-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(&event.time) {
        out.push(Violation::new(
            Rule::Envelope,
            Versions::BOTH,
            seq,
            format!("time {} is not a safe integer", event.time),
        ));
    }
    if i64::try_from(seq).map_or(true, |s| s > MAX_SAFE_INTEGER) {
        out.push(Violation::new(
            Rule::Envelope,
            Versions::BOTH,
            seq,
            "seq is not a safe integer",
        ));
    }
}
