//! Projection (docs/references.md: projection): what a session contributes when it is
//! referenced or searched — its direct user messages, compact checkpoints and assistant
//! replies, as `{role, text}` items. It lives in the store crate so that both the
//! reference service (`dsh-reference`, which re-exports it) and the search index use it
//! without depending on each other.

use std::borrow::Cow;

use super::event::{ContentBlock, Event, EventData, Message};
use super::sized_line::{SizedKind, SizedMessage, SourceClass};

/// Role of a conversation item in a snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnRole {
    User,
    Assistant,
}

impl TurnRole {
    /// The JSON spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            TurnRole::User => "user",
            TurnRole::Assistant => "assistant",
        }
    }
}

/// One projected message; its text borrows from the surface where it can.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConversationItem<'a> {
    pub role: TurnRole,
    pub text: Cow<'a, str>,
    /// A compact checkpoint: never dropped by retention (docs/references.md: retention).
    pub checkpoint: bool,
}

/// Project the folded surface `events` (model order) into conversation items.
/// Tool traffic, reasoning, plugin messages and earlier reference contexts are left out.
pub fn project_surface(events: &[Event]) -> Vec<ConversationItem<'_>> {
    events.iter().filter_map(project_event).collect()
}

/// Project one surface event, if it contributes an item.
pub fn project_event(event: &Event) -> Option<ConversationItem<'_>> {
    let (role, message, checkpoint) = match &event.data {
        EventData::UserMessage(m) => {
            let source = m.source.as_ref()?;
            if source.is_compact_checkpoint() {
                (TurnRole::User, m, true)
            } else if source.is_user() {
                (TurnRole::User, m, false)
            } else {
                return None;
            }
        }
        EventData::SteeringMessage { message, .. } => {
            if !message.is_direct_user() {
                return None;
            }
            (TurnRole::User, message, false)
        }
        EventData::AssistantMessage { message, .. } => (TurnRole::Assistant, message, false),
        EventData::TurnStart { .. }
        | EventData::TurnEnd { .. }
        | EventData::StepStart { .. }
        | EventData::StepEnd { .. }
        | EventData::AssistantChunk { .. }
        | EventData::ToolResult { .. }
        | EventData::SessionTitle(_)
        | EventData::Other { .. } => return None,
    };
    let text = joined_text(message);
    if text.is_empty() {
        return None;
    }
    Some(ConversationItem {
        role,
        text,
        checkpoint,
    })
}

/// What [`project_event`] makes of a message known by its sizes only (a streaming read):
/// the item's role and whether it is a checkpoint, if it contributes one.
pub fn project_sized(message: &SizedMessage) -> Option<(TurnRole, bool)> {
    if message.joined_text.bytes == 0 {
        return None;
    }
    match message.kind {
        SizedKind::User(SourceClass::CompactCheckpoint) => Some((TurnRole::User, true)),
        SizedKind::User(SourceClass::User) => Some((TurnRole::User, false)),
        SizedKind::User(SourceClass::Absent | SourceClass::Other) => None,
        SizedKind::Assistant => Some((TurnRole::Assistant, false)),
    }
}

/// The `text` blocks joined with `\n`, borrowed when there is exactly one.
fn joined_text(message: &Message) -> Cow<'_, str> {
    let mut texts = message.content.iter().filter_map(ContentBlock::as_text);
    let Some(first) = texts.next() else {
        return Cow::Borrowed("");
    };
    let Some(second) = texts.next() else {
        return Cow::Borrowed(first);
    };
    let mut out = String::with_capacity(first.len() + second.len() + 1);
    out.push_str(first);
    out.push('\n');
    out.push_str(second);
    for t in texts {
        out.push('\n');
        out.push_str(t);
    }
    Cow::Owned(out)
}
