//! Event builders for writing test sessions through `SessionWriter`.

use dsh_store::event::{TitleData, TitleSource, TurnEndReason};
use dsh_store::{ContentBlock, EventData, Message, NewEvent, Role, Source};
use serde_json::{Map, json};

/// A message typed by a person.
pub fn user(text: &str) -> NewEvent {
    NewEvent::appended(EventData::UserMessage(Message::user_text(text)))
}

/// An assistant reply in turn 1 (step 1: write it between [`step_start`] and [`step_end`],
/// or lay it out with `dsh_store::layout::in_turns`).
pub fn assistant(text: &str) -> NewEvent {
    assistant_with_reasoning(1, text, None)
}

/// An assistant reply in `turn` (step 1).
pub fn assistant_in_turn(turn: u64, text: &str) -> NewEvent {
    assistant_with_reasoning(turn, text, None)
}

/// Step 1 of `turn` opens.
pub fn step_start(turn: u64) -> NewEvent {
    NewEvent::plain(EventData::StepStart {
        turn,
        step: 1,
        extra: Map::new(),
    })
}

/// Step 1 of `turn` closes.
pub fn step_end(turn: u64) -> NewEvent {
    NewEvent::plain(EventData::StepEnd {
        turn,
        step: 1,
        extra: Map::new(),
    })
}

/// A whole turn `n`: the question, one step with the answer.
pub fn exchange(n: u64, question: &str, answer: &str) -> Vec<NewEvent> {
    vec![
        turn_start(n),
        user(question),
        step_start(n),
        assistant_in_turn(n, answer),
        step_end(n),
        turn_end_of(n),
    ]
}

/// A user title in a turn `n` of its own (dsh at the followed commit wants every title
/// inside a turn).
pub fn title_turn(n: u64, text: &str) -> Vec<NewEvent> {
    vec![turn_start(n), title(text), turn_end_of(n)]
}

/// An assistant reply in `turn` whose content starts with a reasoning block.
pub fn assistant_with_reasoning(turn: u64, text: &str, reasoning: Option<&str>) -> NewEvent {
    let mut content = Vec::new();
    if let Some(r) = reasoning {
        content.push(ContentBlock::reasoning(r));
    }
    content.push(ContentBlock::text(text));
    NewEvent::appended(EventData::AssistantMessage {
        turn,
        step: 1,
        message: Message::new(Role::Assistant, content, Source::model("offline", "m")),
        usage: None,
        extra: Map::new(),
    })
}

pub fn turn_start(turn: u64) -> NewEvent {
    NewEvent::plain(EventData::TurnStart {
        turn,
        trigger: json!({"kind": "user"}),
        extra: Map::new(),
    })
}

/// A completed end of turn 1.
pub fn turn_end() -> NewEvent {
    turn_end_of(1)
}

/// A completed end of `turn`.
pub fn turn_end_of(turn: u64) -> NewEvent {
    NewEvent::plain(EventData::TurnEnd {
        turn,
        reason: TurnEndReason {
            kind: "completed".into(),
            extra: Map::new(),
        },
        extra: Map::new(),
    })
}

/// A user title (a rename: it cites no message).
pub fn title(text: &str) -> NewEvent {
    NewEvent::plain(EventData::SessionTitle(TitleData {
        title: text.into(),
        message_seqs: vec![],
        source: TitleSource {
            kind: "user".into(),
            extra: Map::new(),
        },
        extra: Map::new(),
    }))
}
