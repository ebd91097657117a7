//! dsh's `image` content blocks (dsh-llm 0.1.0-rc.8 and 0.1.1-rc.2: `{type:"image",
//! attachment: ImageAttachmentRef}`, the reference holding `attachmentId` (`sha256:…`),
//! `mediaType`, `bytes`, `width`, `height` and an optional display `name`). The image itself
//! lives in dsh's attachment store, never in the log, so this project shows a one-line
//! placeholder where a transcript would show it. A session-reference snapshot leaves images
//! out, as dsh's does (only `text` blocks are projected: docs/references.md: projection).
//! [`Message::display_text`] is what a transcript shows of a message, images and tool-result
//! contents included.

use serde_json::Value;

use crate::event::{ContentBlock, Message};

/// Longest display name kept (characters).
const MAX_NAME_CHARS: usize = 80;

/// The placeholder of an `image` block: `[image header.png · PNG 1280×800 · 47 KiB]`
/// (missing fields left out: `[image]` at least). `None` for any other block. The name is
/// the sender's text: controls and line breaks become spaces, and it is cut to 80 characters.
pub fn image_placeholder(block: &ContentBlock) -> Option<String> {
    let ContentBlock::Other(map) = block else {
        return None;
    };
    if map.get("type").and_then(Value::as_str) != Some("image") {
        return None;
    }
    let attachment = map.get("attachment");
    let field = |key: &str| attachment.and_then(|a| a.get(key));
    let mut parts = Vec::new();
    if let Some(name) = field("name").and_then(Value::as_str) {
        let name: String = name
            .chars()
            .take(MAX_NAME_CHARS)
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        let name = name.trim();
        if !name.is_empty() {
            parts.push(name.to_owned());
        }
    }
    let format = field("mediaType")
        .and_then(Value::as_str)
        .and_then(|m| m.strip_prefix("image/"))
        .filter(|f| !f.is_empty() && f.len() <= 16 && f.bytes().all(|b| b.is_ascii_alphanumeric()))
        .map(str::to_ascii_uppercase);
    let size = match (
        field("width").and_then(Value::as_u64),
        field("height").and_then(Value::as_u64),
    ) {
        (Some(w), Some(h)) => Some(format!("{w}×{h}")),
        _ => None,
    };
    match (format, size) {
        (Some(f), Some(s)) => parts.push(format!("{f} {s}")),
        (Some(x), None) | (None, Some(x)) => parts.push(x),
        (None, None) => {}
    }
    if let Some(bytes) = field("bytes").and_then(Value::as_u64) {
        parts.push(format!("{} KiB", bytes.div_ceil(1024)));
    }
    Some(if parts.is_empty() {
        "[image]".to_owned()
    } else {
        format!("[image {}]", parts.join(" · "))
    })
}

/// Most nesting of `tool-result` blocks looked into.
const MAX_NESTING: usize = 4;

impl Message {
    /// What a transcript shows of the message: its `text` blocks and a placeholder line per
    /// `image` block ([`image_placeholder`]), in order, joined with `\n` — looking into dsh's
    /// `tool-result` blocks (`{type:"tool-result", toolCallId, content:[…]}`, how a tool
    /// result carries its text and images). Not what a model or a snapshot is given
    /// ([`Message::joined_text`] is).
    pub fn display_text(&self) -> String {
        let mut parts = Vec::new();
        for block in &self.content {
            display_parts(block, 0, &mut parts);
        }
        parts.join("\n")
    }
}

fn display_parts(block: &ContentBlock, depth: usize, out: &mut Vec<String>) {
    match block {
        ContentBlock::Text { text, .. } => out.push(text.clone()),
        ContentBlock::Reasoning { .. } => {}
        ContentBlock::Other(map) => {
            if let Some(image) = image_placeholder(block) {
                out.push(image);
            } else if map.get("type").and_then(Value::as_str) == Some("tool-result")
                && depth < MAX_NESTING
                && let Some(Value::Array(inner)) = map.get("content")
            {
                for item in inner {
                    if let Ok(inner) = serde_json::from_value::<ContentBlock>(item.clone()) {
                        display_parts(&inner, depth + 1, out);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Role, Source};
    use serde_json::json;

    fn block(v: Value) -> ContentBlock {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn placeholders_of_image_blocks() {
        let cases = [
            (
                json!({"type": "image", "attachment": {"attachmentId": "sha256:11", "mediaType": "image/png",
                    "bytes": 48213, "width": 1280, "height": 800, "name": "header.png"}}),
                Some("[image header.png · PNG 1280×800 · 48 KiB]"),
            ),
            (
                json!({"type": "image", "attachment": {"mediaType": "image/webp", "bytes": 1, "width": 2, "height": 3}}),
                Some("[image WEBP 2×3 · 1 KiB]"),
            ),
            (
                json!({"type": "image", "attachment": {"name": "evil\u{1b}[2J\nname", "mediaType": "text/html"}}),
                Some("[image evil [2J name]"),
            ),
            (json!({"type": "image"}), Some("[image]")),
            (
                json!({"type": "image", "attachment": "odd"}),
                Some("[image]"),
            ),
            (json!({"type": "tool-call", "id": "c"}), None),
            (json!({"type": "text", "text": "hi"}), None),
        ];
        for (v, want) in cases {
            assert_eq!(image_placeholder(&block(v.clone())).as_deref(), want, "{v}");
        }
    }

    #[test]
    fn display_text_shows_images_in_place_and_the_model_text_does_not() {
        let m = Message::new(
            Role::User,
            vec![
                ContentBlock::text("why is it cut off?"),
                block(
                    json!({"type": "image", "attachment": {"mediaType": "image/png", "width": 4, "height": 5, "bytes": 2048}}),
                ),
            ],
            Source::user(),
        );
        assert_eq!(
            m.display_text(),
            "why is it cut off?\n[image PNG 4×5 · 2 KiB]"
        );
        assert_eq!(m.joined_text(), "why is it cut off?");
        let only = Message::new(
            Role::User,
            vec![block(json!({"type": "image"}))],
            Source::user(),
        );
        assert_eq!(only.display_text(), "[image]");
        assert_eq!(only.joined_text(), "");
        // Text alone reads exactly as joined_text (two empty blocks join to "\n").
        let texts = Message::new(
            Role::User,
            vec![ContentBlock::text(""), ContentBlock::text("")],
            Source::user(),
        );
        assert_eq!(texts.display_text(), texts.joined_text());
        // A dsh tool result: its text and image inside the tool-result block.
        let tool = Message::new(
            Role::User,
            vec![block(
                json!({"type": "tool-result", "toolCallId": "c1", "content": [
                    {"type": "text", "text": "docs/after.png"},
                    {"type": "image", "attachment": {"mediaType": "image/png", "width": 1, "height": 1, "bytes": 10}}
                ]}),
            )],
            Source::tool("c1"),
        );
        assert_eq!(
            tool.display_text(),
            "docs/after.png\n[image PNG 1×1 · 1 KiB]"
        );
        assert_eq!(tool.joined_text(), "");
    }
}
