//! Laying out a conversation the way dsh logs one (docs/session-store.md: the rule book):
//! for code that writes a session from a list of messages (tests, demo stores, imports)
//! rather than by running turns. Every user message outside a turn opens one; every
//! assistant message is one step of the open turn, and so is every tool result (the reply
//! asking for its call, the call, the result); a title or any other log-only record outside
//! a turn gets a turn of its own; the last turn is closed.

use serde_json::json;

use crate::event::{EventData, TurnEndReason};
use crate::kinds::TurnEndKind;
use crate::writer::NewEvent;

/// Where a layout stands.
#[derive(Debug, Clone, Copy)]
struct Cursor {
    next_turn: u64,
    open_turn: Option<u64>,
    /// Steps taken in the open turn.
    steps: u64,
}

impl Cursor {
    fn open(&mut self, out: &mut Vec<NewEvent>, trigger: serde_json::Value) -> u64 {
        let turn = self.next_turn;
        out.push(NewEvent::plain(EventData::TurnStart {
            turn,
            trigger,
            extra: serde_json::Map::new(),
        }));
        self.open_turn = Some(turn);
        self.next_turn = turn.saturating_add(1);
        self.steps = 0;
        turn
    }

    fn close(&mut self, out: &mut Vec<NewEvent>) {
        if let Some(turn) = self.open_turn.take() {
            out.push(NewEvent::plain(EventData::TurnEnd {
                turn,
                reason: TurnEndReason::of(TurnEndKind::Completed),
                extra: serde_json::Map::new(),
            }));
        }
    }
}

/// A tool result as dsh records one: a user-role message whose one `tool-result` block
/// answers call `call_id`.
pub fn tool_result_message(call_id: &str, text: &str) -> crate::event::Message {
    crate::event::Message::new(
        crate::event::Role::User,
        vec![crate::event::ContentBlock::Other(
            json!({
                "type": "tool-result",
                "toolCallId": call_id,
                "content": [{"type": "text", "text": text}],
            })
            .as_object()
            .cloned()
            .unwrap_or_default(),
        )],
        crate::event::Source::tool(call_id),
    )
}

/// A compaction as this project records one (docs/session-store.md: compaction), inside
/// the open turn `turn`, for a batch appended when the log's next seq is `next`: it
/// replaces the surface nodes `shadowed` (in surface order) with a checkpoint holding
/// `summary`. Empty when `shadowed` is.
pub fn compaction(next: u64, turn: u64, shadowed: &[u64], summary: &str) -> Vec<NewEvent> {
    let (Some(&first), Some(&last)) = (shadowed.first(), shadowed.last()) else {
        return Vec::new();
    };
    let id = crate::event::new_message_id();
    let mut sources = vec![next, next + 1];
    sources.extend(shadowed);
    let other = |kind: &str, data: serde_json::Value| {
        NewEvent::plain(EventData::Other {
            kind: kind.to_owned(),
            data,
        })
    };
    vec![
        other(
            crate::event::kind::COMPACTION_START,
            json!({"compactionId": id, "turn": turn}),
        ),
        other(
            crate::event::kind::COMPACTION_SUMMARY,
            json!({
                "compactionId": id,
                "summary": [{"type": "text", "text": summary}],
                "shadowedRange": {"start": first, "end": last},
                "shadowedSeqs": shadowed,
                "shadowedTokenCount": 0,
                "provider": "offline",
                "model": "offline",
            }),
        ),
        NewEvent {
            data: EventData::UserMessage(crate::event::Message::new(
                crate::event::Role::User,
                vec![crate::event::ContentBlock::text(summary)],
                crate::event::Source(
                    json!({"kind": "plugin", "plugin": "compact", "compactionId": id}),
                ),
            )),
            surface_op: Some(crate::event::SurfaceOp::Replace {
                start: first,
                end: last,
            }),
            source_event_seqs: Some(sources),
        },
        other(
            crate::event::kind::COMPACTION_END,
            json!({"compactionId": id, "turn": turn}),
        ),
    ]
}

/// `events` laid out in turns and steps, the first new turn numbered `next_turn` (1 for a
/// new session; the writer's `rules().next_turn()` for a log that has turns). Turn and step
/// numbers of assistant messages are rewritten to the ones they land in. Explicit turn and
/// step events are kept and followed.
pub fn in_turns(next_turn: u64, events: impl IntoIterator<Item = NewEvent>) -> Vec<NewEvent> {
    let mut out = Vec::new();
    let mut at = Cursor {
        next_turn,
        open_turn: None,
        steps: 0,
    };
    for mut event in events {
        match &mut event.data {
            EventData::TurnStart { turn, .. } => {
                at.close(&mut out);
                at.open_turn = Some(*turn);
                at.next_turn = turn.saturating_add(1);
                at.steps = 0;
            }
            EventData::TurnEnd { .. } => at.open_turn = None,
            EventData::StepStart { .. } | EventData::StepEnd { .. } => {}
            EventData::UserMessage(m) | EventData::SteeringMessage { message: m, .. } => {
                if at.steps > 0 {
                    at.close(&mut out);
                }
                if at.open_turn.is_none() {
                    let source = m
                        .source
                        .clone()
                        .map_or_else(|| json!({"kind": "user"}), |s| s.0);
                    at.open(&mut out, json!({"kind": "message", "source": source}));
                }
            }
            EventData::AssistantMessage { turn, step, .. }
            | EventData::ToolResult { turn, step, .. } => {
                let open = match at.open_turn {
                    Some(t) => t,
                    None => at.open(
                        &mut out,
                        json!({"kind": "message", "source": {"kind": "user"}}),
                    ),
                };
                at.steps += 1;
                *turn = open;
                *step = at.steps;
                out.push(NewEvent::plain(EventData::StepStart {
                    turn: open,
                    step: at.steps,
                    extra: serde_json::Map::new(),
                }));
                // A tool result answers a call its step's reply asked for (dsh's tool round:
                // the asking reply, the call, the result).
                if let EventData::ToolResult { message, .. } = &event.data {
                    let call = crate::tool_round::ToolCallBlock {
                        id: message
                            .source
                            .as_ref()
                            .and_then(|s| s.0.get("callId"))
                            .and_then(serde_json::Value::as_str)
                            .unwrap_or_default()
                            .to_owned(),
                        name: "tool".to_owned(),
                        arguments: "{}".to_owned(),
                    };
                    out.push(NewEvent::appended(EventData::AssistantMessage {
                        turn: open,
                        step: at.steps,
                        message: crate::event::Message::new(
                            crate::event::Role::Assistant,
                            vec![crate::tool_round::tool_call_block(
                                &call.id,
                                &call.name,
                                &call.arguments,
                            )],
                            crate::event::Source::model("layout", "layout"),
                        ),
                        usage: None,
                        extra: serde_json::Map::new(),
                    }));
                    out.push(NewEvent::plain(crate::tool_round::tool_call_data(
                        open, at.steps, &call,
                    )));
                }
                out.push(event);
                out.push(NewEvent::plain(EventData::StepEnd {
                    turn: open,
                    step: at.steps,
                    extra: serde_json::Map::new(),
                }));
                continue;
            }
            EventData::SessionTitle(_)
            | EventData::AssistantChunk { .. }
            | EventData::Other { .. } => {
                if at.open_turn.is_none() {
                    at.open(&mut out, json!({"kind": "session-title"}));
                    out.push(event);
                    at.close(&mut out);
                    continue;
                }
            }
        }
        out.push(event);
    }
    at.close(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{ContentBlock, Message, Role, Source};
    use crate::rule_book::{Envelope, Mode, RuleBook};
    use crate::{Event, SessionHeader, SessionStore};

    fn assistant(text: &str) -> NewEvent {
        NewEvent::appended(EventData::AssistantMessage {
            turn: 0,
            step: 0,
            message: Message::new(
                Role::Assistant,
                vec![ContentBlock::text(text)],
                Source::model("offline", "m"),
            ),
            usage: None,
            extra: serde_json::Map::new(),
        })
    }

    fn title(text: &str) -> NewEvent {
        NewEvent::plain(EventData::SessionTitle(crate::event::TitleData {
            title: text.into(),
            message_seqs: vec![],
            source: crate::event::TitleSource {
                kind: crate::kinds::TitleSourceKind::User,
                extra: serde_json::Map::new(),
            },
            extra: serde_json::Map::new(),
        }))
    }

    #[test]
    fn a_conversation_laid_out_in_turns_follows_every_rule() {
        let tmp = tempfile::tempdir().unwrap();
        let store = SessionStore::new(tmp.path());
        let mut w = store
            .open_writer("s", Some(SessionHeader::new("s", 1, None)))
            .unwrap();
        let events = in_turns(
            1,
            [
                title("first"),
                NewEvent::appended(EventData::UserMessage(Message::user_text("q1"))),
                assistant("a1"),
                assistant("a1 again"),
                NewEvent::appended(EventData::UserMessage(Message::user_text("q2"))),
                NewEvent::appended(EventData::UserMessage(Message::user_text("q2 more"))),
                assistant("a2"),
                title("renamed"),
            ],
        );
        let written: Vec<Event> = w.append(events).unwrap();
        let kinds: Vec<&str> = written.iter().map(Event::kind).collect();
        assert_eq!(
            kinds,
            [
                "turn/start",
                "session/title",
                "turn/end",
                "turn/start",
                "user/message",
                "step/start",
                "assistant/message",
                "step/end",
                "step/start",
                "assistant/message",
                "step/end",
                "turn/end",
                "turn/start",
                "user/message",
                "user/message",
                "step/start",
                "assistant/message",
                "step/end",
                "session/title",
                "turn/end",
            ]
        );
        // The book a fresh fold builds over the written log agrees.
        let mut book = RuleBook::new();
        for e in &written {
            assert_eq!(book.admit(e, &Envelope::of_event(e), Mode::Scan), vec![]);
        }
        // A laid-out batch appended later continues the numbering.
        let next = in_turns(
            w.rules().next_turn(),
            [NewEvent::appended(EventData::UserMessage(
                Message::user_text("q3"),
            ))],
        );
        w.append(next).unwrap();
    }
}
