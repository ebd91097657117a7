//! Images for a text-only model (docs/llm-providers.md: images). A session dsh wrote may
//! hold `image` blocks — in a user message, or inside a tool result's content — and this
//! client sends a model text only (the image itself lives in dsh's attachment store, never
//! in the log). As dsh does for a text-only model, every image becomes a text line in its
//! place, so the model knows one was there: the transcript's placeholder (name, format,
//! size) and that the image was not sent.

use std::borrow::Cow;

use serde_json::Value;

use dsh_store::image_block::image_placeholder;
use dsh_store::{ContentBlock, Message};

/// What follows an image's placeholder in the line the model is given.
pub const NOT_SENT: &str = "(not sent: this client sends the model text only)";

/// Most nesting of `tool-result` blocks looked into (the transcript's bound).
const MAX_NESTING: usize = 4;

/// The line the model is given for an `image` block:
/// `[image header.png · PNG 1280×800 · 48 KiB] (not sent: …)`. `None` for other blocks.
pub fn image_line(block: &ContentBlock) -> Option<String> {
    image_placeholder(block).map(|placeholder| format!("{placeholder} {NOT_SENT}"))
}

/// `messages` with every `image` block — in tool-result content too — replaced by a text
/// block holding its [`image_line`]. Borrowed as they are when none holds an image (the
/// usual case: nothing is copied).
pub fn images_as_text(messages: &[Message]) -> Cow<'_, [Message]> {
    if !messages
        .iter()
        .any(|m| m.content.iter().any(|b| holds_image(b, 0)))
    {
        return Cow::Borrowed(messages);
    }
    Cow::Owned(
        messages
            .iter()
            .map(|m| {
                let mut m = m.clone();
                for block in &mut m.content {
                    replace_images(block, 0);
                }
                m
            })
            .collect(),
    )
}

/// The content array of a `tool-result` block within the nesting bound.
fn result_content(block: &ContentBlock, depth: usize) -> Option<&Vec<Value>> {
    let ContentBlock::Other(map) = block else {
        return None;
    };
    if depth >= MAX_NESTING || map.get("type").and_then(Value::as_str) != Some("tool-result") {
        return None;
    }
    map.get("content").and_then(Value::as_array)
}

/// Whether an item of a tool result's content may hold an image (is one, or nests one).
fn may_hold_image(item: &Value) -> bool {
    matches!(
        item.get("type").and_then(Value::as_str),
        Some("image" | "tool-result")
    )
}

fn holds_image(block: &ContentBlock, depth: usize) -> bool {
    if image_placeholder(block).is_some() {
        return true;
    }
    result_content(block, depth).is_some_and(|items| {
        items
            .iter()
            .filter(|item| may_hold_image(item))
            .any(|item| {
                serde_json::from_value::<ContentBlock>(item.clone())
                    .is_ok_and(|inner| holds_image(&inner, depth + 1))
            })
    })
}

fn replace_images(block: &mut ContentBlock, depth: usize) {
    if let Some(line) = image_line(block) {
        *block = ContentBlock::text(line);
        return;
    }
    if result_content(block, depth).is_none() {
        return;
    }
    let ContentBlock::Other(map) = block else {
        return;
    };
    let Some(Value::Array(items)) = map.get_mut("content") else {
        return;
    };
    for item in items.iter_mut().filter(|item| may_hold_image(item)) {
        let Ok(mut inner) = serde_json::from_value::<ContentBlock>(item.clone()) else {
            continue;
        };
        replace_images(&mut inner, depth + 1);
        if let Ok(value) = serde_json::to_value(&inner) {
            *item = value;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_store::tool_round::ToolResultBlock;
    use dsh_store::{Role, Source};
    use serde_json::json;

    fn block(v: Value) -> ContentBlock {
        serde_json::from_value(v).unwrap()
    }

    fn image(name: &str) -> Value {
        json!({"type": "image", "attachment": {"attachmentId": "sha256:11", "mediaType": "image/png",
            "bytes": 48213, "width": 1280, "height": 800, "name": name}})
    }

    #[test]
    fn messages_without_images_are_borrowed_as_they_are() {
        let messages = vec![
            Message::user_text("q"),
            Message::new(
                Role::User,
                vec![block(
                    json!({"type": "tool-result", "toolCallId": "c", "content": [{"type": "text", "text": "out"}]}),
                )],
                Source::tool("c"),
            ),
        ];
        assert!(matches!(images_as_text(&messages), Cow::Borrowed(_)));
    }

    #[test]
    fn every_image_becomes_its_line_in_place_in_messages_and_tool_results() {
        let user = Message::new(
            Role::User,
            vec![
                ContentBlock::text("why is it cut off?"),
                block(image("header.png")),
                ContentBlock::text("see above"),
            ],
            Source::user(),
        );
        let result = Message::new(
            Role::User,
            vec![block(
                json!({"type": "tool-result", "toolCallId": "c", "isError": false,
                "content": [{"type": "text", "text": "docs/after.png"}, image("after.png")]}),
            )],
            Source::tool("c"),
        );
        let projected = images_as_text(&[user, Message::user_text("plain"), result]).into_owned();
        assert_eq!(
            projected[0].joined_text(),
            format!(
                "why is it cut off?\n[image header.png · PNG 1280×800 · 48 KiB] {NOT_SENT}\nsee above"
            )
        );
        assert_eq!(projected[1].joined_text(), "plain");
        let result = ToolResultBlock::of(&projected[2]).unwrap();
        assert_eq!(
            result.text,
            format!("docs/after.png\n[image after.png · PNG 1280×800 · 48 KiB] {NOT_SENT}")
        );
        assert_eq!(result.call_id, "c");
    }

    #[test]
    fn images_nested_past_the_bound_stay_out() {
        let mut nested = image("deep.png");
        for _ in 0..=MAX_NESTING {
            nested = json!({"type": "tool-result", "toolCallId": "c", "content": [nested]});
        }
        let m = Message::new(Role::User, vec![block(nested)], Source::tool("c"));
        assert!(matches!(
            images_as_text(std::slice::from_ref(&m)),
            Cow::Borrowed(_)
        ));
    }
}
