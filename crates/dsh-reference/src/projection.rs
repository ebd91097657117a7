//! Projection (docs/references.md: projection): what a referenced session contributes — its direct user
//! messages, compact checkpoints and assistant replies, as `{role, text}` items. The code
//! lives in the store crate ([`dsh_store::projection`]), which the search index shares.

pub use dsh_store::projection::{
    ConversationItem, TurnRole, project_event, project_sized, project_surface,
};

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_store::{ContentBlock, Event, EventData, Message, Role, Source, SurfaceOp};
    use serde_json::Map;
    use std::borrow::Cow;

    fn ev(data: EventData) -> Event {
        Event {
            seq: 0,
            time: 0,
            data,
            surface_op: Some(SurfaceOp::Append),
            source_event_seqs: None,
        }
    }

    fn msg(role: Role, source: Option<Source>, blocks: Vec<ContentBlock>) -> Message {
        Message {
            id: "m".into(),
            role,
            content: blocks,
            source,
            extra: Map::new(),
        }
    }

    fn item(role: TurnRole, text: &str, checkpoint: bool) -> ConversationItem<'static> {
        ConversationItem {
            role,
            text: Cow::Owned(text.into()),
            checkpoint,
        }
    }

    #[test]
    fn keeps_direct_messages_checkpoints_and_replies() {
        let t = ContentBlock::text;
        let events = vec![
            ev(EventData::UserMessage(msg(
                Role::User,
                Some(Source::user()),
                vec![t("hi")],
            ))),
            ev(EventData::UserMessage(msg(
                Role::User,
                Some(Source::plugin("goal")),
                vec![t("x")],
            ))),
            ev(EventData::UserMessage(msg(
                Role::User,
                Some(Source::compact_checkpoint()),
                vec![t("sum")],
            ))),
            ev(EventData::UserMessage(msg(
                Role::User,
                Some(Source::session_reference(serde_json::json!([]))),
                vec![t("ctx")],
            ))),
            ev(EventData::UserMessage(msg(
                Role::User,
                None,
                vec![t("no source")],
            ))),
            // A file context (docs/references.md: file references) stays out, as in dsh.
            ev(EventData::UserMessage(
                crate::file_context::file_context_message(&[]),
            )),
            ev(EventData::SteeringMessage {
                turn: 1,
                message: msg(Role::User, Some(Source::user()), vec![t("steer")]),
                extra: Map::new(),
            }),
            ev(EventData::SteeringMessage {
                turn: 1,
                message: msg(
                    Role::User,
                    Some(Source::compact_checkpoint()),
                    vec![t("s2")],
                ),
                extra: Map::new(),
            }),
            ev(EventData::AssistantMessage {
                turn: 1,
                step: 0,
                message: msg(
                    Role::Assistant,
                    None,
                    vec![ContentBlock::reasoning("think"), t("a"), t("b")],
                ),
                usage: None,
                extra: Map::new(),
            }),
            ev(EventData::AssistantMessage {
                turn: 1,
                step: 1,
                message: msg(Role::Assistant, None, vec![ContentBlock::reasoning("only")]),
                usage: None,
                extra: Map::new(),
            }),
            ev(EventData::ToolResult {
                turn: 1,
                step: 0,
                message: msg(Role::Tool, Some(Source::tool("c")), vec![t("out")]),
                extra: Map::new(),
            }),
        ];
        assert_eq!(
            project_surface(&events),
            vec![
                item(TurnRole::User, "hi", false),
                item(TurnRole::User, "sum", true),
                item(TurnRole::User, "steer", false),
                item(TurnRole::Assistant, "a\nb", false),
            ]
        );
    }
}
