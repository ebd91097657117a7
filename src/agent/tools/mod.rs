//! Tools in the agent (docs/agent.md: tools): what a turn offers the model, and how one call
//! it makes is run. A [`ToolBox`] is given to the agent ([`crate::agent::Agent::set_tools`]);
//! the turn loop offers its tools in every step of a turn whose message carries session
//! references (at most [`MAX_TOOL_STEPS`] steps that call tools), logs each call and its
//! result as dsh does (`turn_loop`), and hands each call here.
//!
//! Whatever the model sends, a call ends in a result, never a crash: arguments that are not
//! a JSON object, or longer than [`MAX_ARGUMENT_BYTES`], and a tool that is not offered are
//! error results naming what was wrong.

pub mod recall;

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::llm::ToolSpec;
use dsh_reference::ReferenceEntry;
use dsh_store::{Event, EventData, Message};

/// Steps of one turn that may call tools; the step after them is offered none, so the
/// model answers with what it has.
pub const MAX_TOOL_STEPS: u64 = 8;

/// The longest arguments text a call may have (bytes); longer is an error result.
pub const MAX_ARGUMENT_BYTES: usize = 16 * 1024;

/// Code of a call whose arguments are not a JSON object or are too long.
pub const TOOL_BAD_ARGUMENTS: &str = "TOOL_BAD_ARGUMENTS";
/// Code of a call to a tool this turn does not offer.
pub const TOOL_UNKNOWN: &str = "TOOL_UNKNOWN";
/// Code of a call cancelled while it ran.
pub const TOOL_CANCELLED: &str = "TOOL_CANCELLED";

/// One session a turn's message references, in the message's order (the model names it by
/// its 1-based place: `ref`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnReference {
    pub session_id: String,
    pub label: String,
}

/// What a turn's tools know: the references of its message and the calls made so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TurnTools {
    /// The references of the turn's newest message that carries any.
    pub references: Vec<TurnReference>,
    /// Calls run in this turn so far (every tool).
    pub calls: usize,
}

impl TurnTools {
    /// Take the references of a session-reference context among `logged` (the newest one
    /// wins: a steered message with references replaces the turn's).
    pub fn observe(&mut self, logged: &[Event]) {
        for e in logged {
            let EventData::UserMessage(m) = &e.data else {
                continue;
            };
            if let Some(refs) = references_of(m) {
                self.references = refs;
            }
        }
    }
}

/// The references a session-reference context message carries, in their place's order.
fn references_of(m: &Message) -> Option<Vec<TurnReference>> {
    let source = m.source.as_ref().filter(|s| s.is_session_reference())?;
    let mut entries = ReferenceEntry::decode_all(source);
    entries.sort_by_key(|e| e.input_index);
    let refs: Vec<TurnReference> = entries
        .into_iter()
        .map(|e| TurnReference {
            session_id: e.session_id,
            label: e.label,
        })
        .collect();
    (!refs.is_empty()).then_some(refs)
}

/// What running one call gave: the text the model reads, whether it is an error, and the
/// error's stable code (dsh's error info on the result).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutcome {
    pub text: String,
    pub is_error: bool,
    pub code: Option<&'static str>,
}

impl ToolOutcome {
    /// A result the model reads as found.
    pub fn ok(text: impl Into<String>) -> Self {
        ToolOutcome {
            text: text.into(),
            is_error: false,
            code: None,
        }
    }

    /// An error result: `CODE: message` for the model, the code for the log.
    pub fn error(code: &'static str, message: &str) -> Self {
        ToolOutcome {
            text: format!("{code}: {message}"),
            is_error: true,
            code: Some(code),
        }
    }
}

/// The tools an agent can offer.
pub trait ToolBox: Send + Sync {
    /// The tools offered in a turn that knows `turn` (none when it has no references).
    fn offered(&self, turn: &TurnTools) -> Vec<ToolSpec>;

    /// Run the call of tool `name` with the parsed `arguments`; `turn.calls` counts the
    /// calls before this one. Cancelling `cancel` ends it promptly.
    fn run(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        turn: &TurnTools,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, ToolOutcome>;
}

/// Run one call the model made in a step that `offered` these tools: its arguments checked,
/// then the tool.
pub async fn run_call(
    tools: Option<&Arc<dyn ToolBox>>,
    offered: &[ToolSpec],
    turn: &TurnTools,
    name: &str,
    arguments: &str,
    cancel: &CancellationToken,
) -> ToolOutcome {
    let Some(tools) = tools.filter(|_| offered.iter().any(|t| t.name == name)) else {
        let names: Vec<&str> = offered.iter().map(|t| t.name.as_str()).collect();
        return ToolOutcome::error(
            TOOL_UNKNOWN,
            &format!(
                "there is no tool {:?} in this turn (offered: {})",
                crate::llm::offline::excerpt(name),
                if names.is_empty() {
                    "none".to_owned()
                } else {
                    names.join(", ")
                }
            ),
        );
    };
    let arguments = match parse_arguments(arguments) {
        Ok(a) => a,
        Err(why) => return ToolOutcome::error(TOOL_BAD_ARGUMENTS, &why),
    };
    let run = tools.run(name, arguments, turn, cancel.clone());
    tokio::select! {
        biased;
        () = cancel.cancelled() => ToolOutcome::error(TOOL_CANCELLED, "the call was cancelled"),
        outcome = run => outcome,
    }
}

/// A call's arguments: a JSON object of at most [`MAX_ARGUMENT_BYTES`] (empty text is `{}`).
pub fn parse_arguments(text: &str) -> Result<Map<String, Value>, String> {
    if text.len() > MAX_ARGUMENT_BYTES {
        return Err(format!(
            "the arguments are {} bytes; at most {MAX_ARGUMENT_BYTES} are accepted",
            text.len()
        ));
    }
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err("the arguments must be a JSON object".to_owned()),
        Err(e) => Err(format!("the arguments are not valid JSON ({e})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn arguments_are_an_object_of_bounded_size() {
        let long = format!("{{\"q\":\"{}\"}}", "x".repeat(MAX_ARGUMENT_BYTES));
        let cases: Vec<(&str, Result<usize, &str>)> = vec![
            ("", Ok(0)),
            ("  ", Ok(0)),
            (r#"{"ref":1,"query":"kafka"}"#, Ok(2)),
            ("[1]", Err("must be a JSON object")),
            ("{\"ref\":1", Err("not valid JSON")),
            ("null", Err("must be a JSON object")),
            (&long, Err("at most 16384")),
        ];
        for (text, want) in cases {
            match (parse_arguments(text), want) {
                (Ok(map), Ok(n)) => assert_eq!(map.len(), n, "{text}"),
                (Err(why), Err(part)) => assert!(why.contains(part), "{text}: {why}"),
                (got, want) => panic!("{text}: {got:?} vs {want:?}"),
            }
        }
    }
}
