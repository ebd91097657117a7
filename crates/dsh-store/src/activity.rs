//! What a listing shows of a session besides its header (docs/session-store.md: session
//! query): when its log was last active, how many messages it holds, its latest title as far
//! as the log could be read, and the damage that stopped the read, if any.

use std::cmp::Ordering;
use std::sync::Arc;

use super::event::{Event, EventData, SessionHeader};
use super::id_order::compare_ids;

/// When a log was last active and how many conversation messages it holds, as far as it was
/// read (a log damaged part-way counts up to the damage).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Activity {
    /// `time` of the last readable event (Unix milliseconds); `None` while the log holds
    /// no event (only its header).
    pub last_event_ms: Option<i64>,
    /// Conversation messages: what a person typed (`user/message` with a user source, and
    /// `steering/message`) and the model's replies (`assistant/message`). Contexts,
    /// checkpoints, tool results and chunks are not counted; a compaction does not lower it
    /// (the log keeps what it replaced).
    pub messages: u64,
}

impl Activity {
    /// Count `event` in (events come in seq order).
    pub fn see(&mut self, event: &Event) {
        self.last_event_ms = Some(event.time);
        let counted = match &event.data {
            EventData::UserMessage(message) => message.is_direct_user(),
            EventData::SteeringMessage { .. } | EventData::AssistantMessage { .. } => true,
            _ => false,
        };
        if counted {
            self.messages = self.messages.saturating_add(1);
        }
    }

    /// The time a listing orders by: the last event's, else the session's creation.
    pub fn last_active(&self, created_at: i64) -> i64 {
        self.last_event_ms.unwrap_or(created_at)
    }
}

/// The time a listing orders a session by: when it was last active (`last_active_ms`, as
/// [`SessionSummary::last_active_ms`] gives it), else its creation.
pub fn last_active(header: &SessionHeader, last_active_ms: Option<i64>) -> i64 {
    last_active_ms.unwrap_or(header.created_at)
}

/// Most recently active first (see [`last_active`]); equal times in the listing's own order
/// (newest `createdAt`, then the id as dsh orders them), so a listing without activity keeps
/// its order.
pub fn most_recent_first(
    a: (&SessionHeader, Option<i64>),
    b: (&SessionHeader, Option<i64>),
) -> Ordering {
    last_active(b.0, b.1)
        .cmp(&last_active(a.0, a.1))
        .then_with(|| b.0.created_at.cmp(&a.0.created_at))
        .then_with(|| compare_ids(&a.0.id, &b.0.id))
}

/// What a listing shows of one session besides its header
/// ([`SessionQuery::read_summary`](crate::SessionQuery::read_summary)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionSummary {
    /// The latest title as far as the log could be read: a log damaged after its title
    /// keeps that title here (`read_title` reports the damage instead).
    pub title: Option<Arc<str>>,
    /// When the session was last active (Unix milliseconds): a dsh log's last event; a
    /// foreign session's last change as its tool records it. `None`: no event yet, or the
    /// source cannot tell (a listing then orders it by its creation time).
    pub last_active_ms: Option<i64>,
    /// Conversation messages ([`Activity::messages`]), when the source counts them cheaply
    /// (dsh logs; not the foreign sources).
    pub messages: Option<u64>,
    /// Why the log could not be read to its end (the corruption error's message), if so.
    pub damage: Option<Arc<str>>,
    /// While the session has no title: the start of the first message a person typed in it
    /// (at most 512 bytes of its text), what a listing shows it by; `None` once it has a
    /// title, or when the source does not tell.
    pub first_prompt: Option<Arc<str>>,
}

impl SessionSummary {
    /// The summary of a dsh log with this title and activity.
    pub fn of_log(title: Option<Arc<str>>, activity: &Activity) -> Self {
        SessionSummary {
            title,
            last_active_ms: activity.last_event_ms,
            messages: Some(activity.messages),
            damage: None,
            first_prompt: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Message, Role, Source};
    use serde_json::Map;

    fn event(seq: u64, time: i64, data: EventData) -> Event {
        Event {
            seq,
            time,
            data,
            surface_op: None,
            source_event_seqs: None,
        }
    }

    #[test]
    fn counts_conversation_messages_and_keeps_the_last_time() {
        let user = |source: Source| {
            EventData::UserMessage(Message::new(
                Role::User,
                vec![crate::ContentBlock::text("hi")],
                source,
            ))
        };
        let reply = EventData::AssistantMessage {
            turn: 1,
            step: 0,
            message: Message::new(
                Role::Assistant,
                vec![crate::ContentBlock::text("ok")],
                Source::model("p", "m"),
            ),
            usage: None,
            extra: Map::new(),
        };
        let mut a = Activity::default();
        assert_eq!(a.last_active(7), 7, "no event: the creation time");
        let cases = [
            (user(Source::user()), 1),
            (user(Source::compact_checkpoint()), 1),
            (user(Source::session_reference(serde_json::json!([]))), 1),
            (reply, 2),
            (
                EventData::Other {
                    kind: "tool/call".into(),
                    data: serde_json::json!({}),
                },
                2,
            ),
        ];
        for (n, (data, want)) in cases.into_iter().enumerate() {
            let n = u8::try_from(n).unwrap();
            a.see(&event(n.into(), 100 + i64::from(n), data));
            assert_eq!(a.messages, want, "after event {n}");
        }
        assert_eq!(a.last_event_ms, Some(104));
        assert_eq!(a.last_active(7), 104);
    }

    #[test]
    fn most_recent_first_falls_back_to_creation_order() {
        let h = |id: &str, created| SessionHeader::new(id, created, None);
        let (a, b, c) = (h("a", 1), h("b", 2), h("c", 2));
        let mut rows = [(&a, Some(50)), (&b, None), (&c, None)];
        rows.sort_by(|x, y| most_recent_first(*x, *y));
        let ids: Vec<&str> = rows.iter().map(|(h, _)| h.id.as_str()).collect();
        assert_eq!(
            ids,
            ["a", "b", "c"],
            "active last, then newest created, then id"
        );
    }
}
