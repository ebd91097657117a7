//! The dsh surface events a foreign conversation item becomes, so projection, retention and
//! the snapshot context treat it exactly like a dsh message.

use serde_json::Map;

use dsh_store::{ContentBlock, Event, EventData, Message, Role, Source, SurfaceOp};

/// What one visible item of a foreign log is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemKind {
    /// Text the person typed.
    User,
    /// The assistant's reply text.
    Assistant,
    /// A compaction summary standing for everything before it.
    Checkpoint,
}

/// The surface event of one item: `seq` is the item's 0-based line in its file, `time` Unix ms.
pub fn item_event(kind: ItemKind, seq: u64, time: i64, id: String, text: String) -> Event {
    let content = vec![ContentBlock::text(text)];
    let message = |role, source| Message {
        id,
        role,
        content,
        source: Some(source),
        extra: Map::new(),
    };
    let data = match kind {
        ItemKind::User => EventData::UserMessage(message(Role::User, Source::user())),
        ItemKind::Checkpoint => {
            EventData::UserMessage(message(Role::User, Source::compact_checkpoint()))
        }
        ItemKind::Assistant => EventData::AssistantMessage {
            turn: 0,
            step: 0,
            message: message(Role::Assistant, Source::plugin("foreign")),
            usage: None,
            extra: Map::new(),
        },
    };
    Event {
        seq,
        time,
        data,
        surface_op: Some(SurfaceOp::Append),
        source_event_seqs: None,
    }
}

/// Unix milliseconds of an RFC 3339 timestamp (`2025-10-29T00:59:38.317Z`), if it is one.
pub fn parse_time_ms(text: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.timestamp_millis())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps() {
        assert_eq!(parse_time_ms("1970-01-01T00:00:01.5Z"), Some(1500));
        assert_eq!(
            parse_time_ms("2025-10-29T00:59:38.317Z"),
            Some(1_761_699_578_317)
        );
        assert_eq!(parse_time_ms("yesterday"), None);
    }

    #[test]
    fn kinds_map_to_dsh_sources() {
        let user = item_event(ItemKind::User, 3, 1, "u".into(), "hi".into());
        assert!(user.message().is_some_and(Message::is_direct_user));
        let cp = item_event(ItemKind::Checkpoint, 4, 1, "c".into(), "sum".into());
        assert!(
            cp.message()
                .and_then(|m| m.source.as_ref())
                .is_some_and(Source::is_compact_checkpoint)
        );
        let a = item_event(ItemKind::Assistant, 5, 1, "a".into(), "ok".into());
        assert_eq!(a.kind(), "assistant/message");
        assert_eq!(a.seq, 5);
    }
}
