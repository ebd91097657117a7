//! Turn and step structure (dsh's session invariant, the same in both versions but for
//! which events must sit inside a turn).
//!
//! Turns are numbered 1, 2, …, one open at a time; steps of a turn 1, 2, …, one open at a
//! time; chunks, assistant messages and tool calls belong to the open step; a tool result
//! answers a call of its step. 6816e8a3d5 also wants every event other than a user message
//! inside a turn (titles and compaction events included); 0.1.0-rc.8 only `todo/write`,
//! `request/header` and `request/context`.
//!
//! A log an earlier version wrote may break these rules; the book then follows what the
//! log says (the next turn is the one after the last that ended), so only new events are
//! judged against their own log.

use std::collections::HashSet;

use serde_json::Value;

use super::{Rule, Versions, Violation};
use crate::event::{ContentBlock, Event, EventData, SurfaceOp, kind};

/// dsh's code for a tool call the harness closed because it never started.
const TOOL_NOT_STARTED: &str = "TOOL_NOT_STARTED";

#[derive(Debug, Clone)]
pub(super) struct TurnRules {
    open_turn: Option<u64>,
    open_step: Option<u64>,
    next_turn: u64,
    next_step: u64,
    pending_calls: HashSet<String>,
}

impl Default for TurnRules {
    fn default() -> Self {
        TurnRules {
            open_turn: None,
            open_step: None,
            next_turn: 1,
            next_step: 1,
            pending_calls: HashSet::new(),
        }
    }
}

fn show(n: Option<u64>) -> String {
    n.map_or_else(|| "none".to_owned(), |n| n.to_string())
}

impl TurnRules {
    pub(super) fn open_turn(&self) -> Option<u64> {
        self.open_turn
    }

    pub(super) fn open_step(&self) -> Option<u64> {
        self.open_step
    }

    pub(super) fn next_turn(&self) -> u64 {
        self.next_turn
    }

    fn require_step(&self, what: &str, turn: u64, step: u64, seq: u64, out: &mut Vec<Violation>) {
        if self.open_turn != Some(turn) || self.open_step != Some(step) {
            out.push(Violation::new(
                Rule::TurnStructure,
                Versions::BOTH,
                seq,
                format!(
                    "{what} names turn {turn}/step {step} but open is turn {}/step {}",
                    show(self.open_turn),
                    show(self.open_step)
                ),
            ));
        }
    }

    pub(super) fn admit(&mut self, event: &Event, out: &mut Vec<Violation>) {
        let seq = event.seq;
        let fail = |out: &mut Vec<Violation>, versions: Versions, why: String| {
            out.push(Violation::new(Rule::TurnStructure, versions, seq, why));
        };
        match &event.data {
            EventData::TurnStart { turn, .. } => {
                if let Some(open) = self.open_turn {
                    fail(
                        out,
                        Versions::BOTH,
                        format!("turn/start {turn} while turn {open} is still open"),
                    );
                }
                if *turn != self.next_turn {
                    fail(
                        out,
                        Versions::BOTH,
                        format!("turn/start expected turn {}, got {turn}", self.next_turn),
                    );
                }
                self.open_turn = Some(*turn);
                self.open_step = None;
                self.next_step = 1;
                self.pending_calls.clear();
            }
            EventData::TurnEnd { turn, .. } => {
                if self.open_turn != Some(*turn) {
                    fail(
                        out,
                        Versions::BOTH,
                        format!(
                            "turn/end {turn} does not match open turn {}",
                            show(self.open_turn)
                        ),
                    );
                }
                if let Some(step) = self.open_step {
                    fail(
                        out,
                        Versions::BOTH,
                        format!("turn/end {turn} while step {step} is still open"),
                    );
                }
                self.open_turn = None;
                self.open_step = None;
                self.next_turn = turn.saturating_add(1);
                self.pending_calls.clear();
            }
            EventData::StepStart { turn, step, .. } => {
                if self.open_turn != Some(*turn) {
                    fail(
                        out,
                        Versions::BOTH,
                        format!(
                            "step/start in turn {turn} but open turn is {}",
                            show(self.open_turn)
                        ),
                    );
                }
                if let Some(open) = self.open_step {
                    fail(
                        out,
                        Versions::BOTH,
                        format!("step/start {step} while step {open} is still open"),
                    );
                }
                if *step != self.next_step {
                    fail(
                        out,
                        Versions::BOTH,
                        format!(
                            "step/start expected step {} in turn {turn}, got {step}",
                            self.next_step
                        ),
                    );
                }
                self.open_step = Some(*step);
            }
            EventData::StepEnd { turn, step, .. } => {
                self.require_step("step/end", *turn, *step, seq, out);
                self.pending_calls.clear();
                self.open_step = None;
                self.next_step = step.saturating_add(1);
            }
            EventData::AssistantChunk { turn, step, .. } => {
                self.require_step("assistant/chunk", *turn, *step, seq, out);
            }
            EventData::AssistantMessage { turn, step, .. } => {
                self.require_step("assistant/message", *turn, *step, seq, out);
            }
            EventData::ToolResult {
                turn,
                step,
                message,
                extra,
            } => {
                if event.surface_op != Some(SurfaceOp::Append) {
                    if self.open_turn.is_none() {
                        fail(
                            out,
                            Versions::BOTH,
                            "tool/result surface replacement appended outside any open turn"
                                .to_owned(),
                        );
                    }
                    return;
                }
                self.require_step("tool/result", *turn, *step, seq, out);
                let call_id = crate::tool_round::answered_call(message);
                let is_error = matches!(
                    message.content.first(),
                    Some(ContentBlock::Other(b)) if b.get("isError") == Some(&Value::Bool(true))
                );
                let not_started = is_error
                    && extra
                        .get("error")
                        .and_then(|e| e.get("code"))
                        .and_then(Value::as_str)
                        == Some(TOOL_NOT_STARTED);
                if !self.pending_calls.remove(call_id) && !not_started {
                    fail(
                        out,
                        Versions::BOTH,
                        format!("tool/result for {call_id} with no prior tool/call in this step"),
                    );
                }
            }
            EventData::Other { kind: k, data } if k == kind::TOOL_CALL => {
                let turn = data.get("turn").and_then(Value::as_u64).unwrap_or(u64::MAX);
                let step = data.get("step").and_then(Value::as_u64).unwrap_or(u64::MAX);
                self.require_step("tool/call", turn, step, seq, out);
                if let Some(id) = data.get("callId").and_then(Value::as_str) {
                    self.pending_calls.insert(id.to_owned());
                }
            }
            EventData::UserMessage(_) => {}
            _ => {
                if self.open_turn.is_none() {
                    let k = event.kind();
                    let release_needs_turn =
                        matches!(k, "todo/write" | "request/header" | "request/context");
                    let versions = if release_needs_turn {
                        Versions::BOTH
                    } else {
                        Versions::FOLLOWED
                    };
                    fail(out, versions, format!("{k} appended outside any open turn"));
                }
            }
        }
    }
}
